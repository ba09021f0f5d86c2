/* Many launches in a row: kernarg blocks, team arenas and stacks reused (§2), packet
   indexes of the synchronous queue. */
// gcn: flags -fopenmp
// gcn: script main._omp_fn.0=step:0
// gcn: run base
// gcn: expect * ^v=1111111111$
#include <stdio.h>

int
main (void)
{
  long v = 0;
  for (int i = 0; i < 10; i++)
    {
      int t = (int) (v % 1000000000);
#pragma omp target map(tofrom: t)
      t = t * 10 + 1;
      v = v * 10 + 1;
      (void) t;
    }
  printf ("v=%ld\n", v);
  return 0;
}
