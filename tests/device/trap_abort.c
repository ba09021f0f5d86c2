/* trap_abort.c - a target region that calls abort() (a kernel that traps).
 * Expected (trap_abort.expect): libgomp's fatal path, exit status 1, and a libgomp:
 * message naming the launch failure and its likely cause, as stock prints it; no hang,
 * no crash of the plugin itself. */
#include <stdio.h>
#include <stdlib.h>

int main (int argc, char **argv)
{
  int n = argc + 2;   /* 3, known only at run time */
  int r = 0;
  (void) argv;
#pragma omp target map(to: n) map(from: r)
  {
    if (n == 3)
      abort ();
    r = n;
  }
  printf ("FAIL the region returned (r=%d) instead of failing\n", r);
  return 0;
}
