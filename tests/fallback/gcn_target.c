/* gcn_target.c - an offload program for tests/host_fallback.sh section 2c, built with
 * gcc-16 -fopenmp -foffload=amdgcn-amdhsa and run by real libgomp 16 through our gcn
 * plugin against the stand-in HSA runtime (tests/fallback/stub_libhsa.c), whose script
 * reproduces the target region's host-visible effects: the device's printf line
 * ("text:hello_from_the_device"), its store to x ("store:1:42": x is the second
 * entry of the target's argument block, after the firstprivate code) and, with
 * GCN_TARGET_EXIT=N, its exit status ("exit:N"). The stand-in executes no device code:
 * this checks what our plugin and libgomp do around it. */
#include <stdio.h>
#include <stdlib.h>

int main (void)
{
  const char *e = getenv ("GCN_TARGET_EXIT");
  int x = 0, code = e ? atoi (e) : -1;
#pragma omp target map(tofrom: x) firstprivate(code)
  {
    printf ("hello from the device\n");
    x = 42;
    if (code >= 0)
      exit (code);
  }
  printf ("x=%d\n", x);
  return 0;
}
