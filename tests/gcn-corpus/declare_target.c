/* Images (§1, §2): declare target variables the host updates and the kernel writes,
   device memory from omp_target_alloc, and the image's ICVs: the host's writes into
   the loaded image show in the trace before each launch. */
// gcn: flags -fopenmp
// gcn: script main._omp_fn.0=var:counter:5,store:0:9;main._omp_fn.1=step:0
// gcn: run base
// gcn: run device-num OMP_DEFAULT_DEVICE=0 OMP_NUM_TEAMS=3
// gcn: expect * ^counter=5 table=11 y=9 buf=1$
#include <omp.h>
#include <stdio.h>

#pragma omp declare target
int counter = 1;
int table[4] = {10, 11, 12, 13};
#pragma omp end declare target

int
main (void)
{
  int y = 0, dev = omp_get_default_device ();
  int *buf = omp_target_alloc (16 * sizeof (int), dev);
  int one = 0;
  omp_target_memcpy (buf, &one, sizeof one, 0, 0, dev, omp_get_initial_device ());
  table[1] = 11;
#pragma omp target update to(table)
#pragma omp target map(from: y)
  {
    counter += 4;
    y = table[0] - 1;
  }
#pragma omp target is_device_ptr(buf)
  buf[0] = buf[0] * 10 + 1;
#pragma omp target update from(counter, table)
  omp_target_memcpy (&one, buf, sizeof one, 0, 0, omp_get_initial_device (), dev);
  omp_target_free (buf, dev);
  printf ("counter=%d table=%d y=%d buf=%d\n", counter, table[1], y, one);
  return 0;
}
