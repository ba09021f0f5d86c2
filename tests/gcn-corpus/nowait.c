/* §5 async_run: target nowait regions, with and without dependences, completed by
   taskwait. */
// gcn: flags -fopenmp
// gcn: script main._omp_fn.0=text:first,store:0:1;main._omp_fn.1=store:0:2;main._omp_fn.2=sleep:5,store:0:3;main._omp_fn.3=step:0
// gcn: run base
// gcn: run teams GCN_NUM_TEAMS=4
// gcn: expect * ^a=1 b=2 c=31$
#include <stdio.h>

int
main (void)
{
  int a = 0, b = 0, c = 0;
#pragma omp target nowait map(tofrom: a)
  a = 1;
#pragma omp target teams nowait map(tofrom: b)
  b = 2;
#pragma omp target nowait map(tofrom: c) depend(out: c)
  c = 3;
#pragma omp target nowait map(tofrom: c) depend(inout: c)
  c = c * 10 + 1;
#pragma omp taskwait
  printf ("a=%d b=%d c=%d\n", a, b, c);
  return 0;
}
