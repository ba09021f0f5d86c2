/* trap_oob.c - a target region that stores through a wild device pointer (an
 * out-of-bounds access). Expected (trap_oob.expect): exit status 1 with a libgomp:
 * message naming CUDA's illegal-address error; no hang, no crash of the plugin. */
#include <stdint.h>
#include <stdio.h>

int main (int argc, char **argv)
{
  uintptr_t bad = (uintptr_t) argc << 4;   /* 0x10: never a valid device address */
  (void) argv;
#pragma omp target map(to: bad)
  *(volatile int *) bad = 42;
  printf ("FAIL the region returned instead of failing\n");
  return 0;
}
