/* §3 OpenACC async queues: launches and copies on two queues, waits between them.
   Queue 1's first kernel sleeps 300 ms on the stand-in and queue 2's 100 ms: whichever
   queue's worker launches first, the other launches while it runs (both plugins then
   hold two kernarg blocks), and queue 2's kernel has finished and given back its
   ephemeral block before queue 1's second launch (both then take the first one), unless
   a thread waits 100 ms for a core. With much shorter sleeps the block counts and
   choices would follow the thread timing on a loaded machine. */
// gcn: flags -fopenacc
// gcn: env STUB_HSA_OPENACC=1
// gcn: script main._omp_fn.0=sleep:300,store:0:1;main._omp_fn.1=sleep:100,store:0:2;main._omp_fn.2=step:0
// gcn: run base
// gcn: expect * ^a=1 b=2 c=11$
#include <openacc.h>
#include <stdio.h>

int
main (void)
{
  int a = 0, b = 0, c = 1;
#pragma acc parallel async(1) copy(a) num_gangs(2)
  a = 1;
#pragma acc parallel async(2) copy(b)
  b = 2;
#pragma acc wait(1)
#pragma acc data copy(c)
  {
#pragma acc parallel async(1) present(c)
    c = c * 10 + 1;
#pragma acc wait(1)
  }
#pragma acc wait
  printf ("a=%d b=%d c=%d\n", a, b, c);
  return 0;
}
