/* region_cpu.c - the host CPU work of one target region, without a GPU: N regions of
 * one shape, run under callgrind (bench/cpu-count.sh) with the stand-in libcuda of
 * tests/fallback/stub_libcuda_2dev.c, whose calls return at once. Only the loop is
 * collected (CALLGRIND_TOGGLE_COLLECT), after a warm-up that opens the device and
 * loads the image. The stand-in runs no kernel, so results are not checked.
 *
 * usage: region_cpu map|tofrom|from|to|empty N
 *   map     `target map(to: a[0:512]) map(from: s)` (4 KiB up, 8 B down)
 *   tofrom  `target map(tofrom: x)` of one double
 *   from    `target update from(a[0:512])` inside `target data` (4 KiB down)
 *   to      `target update to(a[0:512])` inside `target data` (4 KiB up)
 *   empty   `target` with no map clause and an empty body (the launch and its wait) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "callgrind.h"

static double a[512];

static void map_region (void)
{
  double s = 0;
#pragma omp target map(to: a[0:512]) map(from: s)
  s = a[0] + a[511];
  a[1] = s;
}

static void empty_region (void)
{
#pragma omp target
  ;
}

static void tofrom_region (double *x)
{
#pragma omp target map(tofrom: x[0:1])
  x[0] += 1;
}

int main (int argc, char **argv)
{
  const char *mode = argc == 3 ? argv[1] : "";
  long n = argc == 3 ? atol (argv[2]) : 0;
  int from = !strcmp (mode, "from"), to = !strcmp (mode, "to");
  if (n <= 0 || !(from || to || !strcmp (mode, "map") || !strcmp (mode, "tofrom")
                  || !strcmp (mode, "empty")))
    {
      fprintf (stderr, "usage: region_cpu map|tofrom|from|to|empty N\n");
      return 2;
    }
  double x = 0;
  for (int i = 0; i < 3; i++)
    {
      map_region ();
      tofrom_region (&x);
    }
#pragma omp target data map(alloc: a[0:512])
  {
#pragma omp target update from(a[0:512])
#pragma omp target update to(a[0:512])
    if (from || to)
      {
        CALLGRIND_TOGGLE_COLLECT;
        for (long i = 0; i < n; i++)
          if (from)
            {
#pragma omp target update from(a[0:512])
            }
          else
            {
#pragma omp target update to(a[0:512])
            }
        CALLGRIND_TOGGLE_COLLECT;
      }
  }
  if (!(from || to))
    {
      CALLGRIND_TOGGLE_COLLECT;
      for (long i = 0; i < n; i++)
        if (mode[0] == 'm')
          map_region ();
        else if (mode[0] == 'e')
          empty_region ();
        else
          tofrom_region (&x);
      CALLGRIND_TOGGLE_COLLECT;
    }
  printf ("region_cpu %s %ld done\n", mode, n);
  return 0;
}
