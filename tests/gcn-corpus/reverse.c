/* §5 reverse offload: the device asks the host to run a target region through the
   output ring (type 4); the host runs it and releases the slot. */
// gcn: flags -fopenmp
// gcn: script main._omp_fn.0=text:device_first,revfn:0,revfn:0,store:0:42
// gcn: run base
// gcn: expect * ^on the host$
// gcn: expect * ^device first$
// gcn: expect * ^x=42$
#include <stdio.h>
#pragma omp requires reverse_offload

int
main (void)
{
  int x = 0;
#pragma omp target map(tofrom: x)
  {
    printf ("device first\n");
#pragma omp target device(ancestor: 1)
    {
      printf ("on the host\n");
    }
    x = 42;
  }
  printf ("x=%d\n", x);
  return 0;
}
