/* gcn_acc.c - an OpenACC program for tests/host_fallback.sh section 2c, built with
 * gcc-16 -fopenacc -foffload=amdgcn-amdhsa and run by real libgomp 16 through our gcn
 * plugin against the stand-in HSA runtime (tests/fallback/stub_libhsa.c), whose script
 * ("store:0:42": the first entry of the region's devaddrs block is x's, then y's)
 * reproduces the compute regions' host-visible effects: a synchronous parallel region
 * with given gangs and workers, then one on async queue 1 waited for with acc wait.
 * The stand-in executes no device code: this checks what our plugin and libgomp do
 * around it (OpenACC initialisation, thread data, the launch, the async queue). */
#include <stdio.h>

int main (void)
{
  int x = 0, y = 0;
#pragma acc parallel num_gangs(3) num_workers(5) copy(x)
  {
    x = 42;
  }
  printf ("x=%d\n", x);
#pragma acc parallel copy(y) async(1)
  {
    y = 42;
  }
#pragma acc wait(1)
  printf ("y=%d\n", y);
  return 0;
}
