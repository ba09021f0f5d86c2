/* stress.c - storms against one device, each result checked, and device
 * memory compared between a warm-up round and a second identical round (a leak or an
 * unbounded cache shows up as growth). Built by tests/device/build.sh, run on the GPU
 * by tests/device/run.sh with each plugin under its timeout.
 *
 *   1. 8 host threads x 10000 target regions with maps, each checking its data;
 *   2. a nowait storm: 8 threads x 2000 `target nowait` regions in dependence chains;
 *   3. an alloc/free storm: 8 threads x 5000 omp_target_alloc/free of mixed sizes,
 *      each block written and read back through omp_target_memcpy now and then.
 * Rounds 1-3 run twice; free device memory (cuMemGetInfo through libcuda, dlopen'ed) is
 * read after each round. Prints "OK ..." with the figures, or "FAIL ..." and exits 1. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_probe.h"

#define THREADS 8
#define REGIONS 10000
#define CHAIN 2000
#define ALLOCS 5000
#define N 64

static int failures;

static void fail (const char *what, long i)
{
#pragma omp atomic
  failures++;
  if (failures < 5)
    printf ("FAIL %s (item %ld)\n", what, i);
}

static void maps_storm (void)
{
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num ();
    int a[N];
    for (long i = 0; i < REGIONS; i++)
      {
	for (int j = 0; j < N; j++)
	  a[j] = (int) (i + j + t);
#pragma omp target map(tofrom: a)
	for (int j = 0; j < N; j++)
	  a[j] = 2 * a[j] + 1;
	for (int j = 0; j < N; j++)
	  if (a[j] != 2 * (int) (i + j + t) + 1)
	    {
	      fail ("mapped region result", i);
	      break;
	    }
      }
  }
}

static void nowait_storm (void)
{
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num ();
    long x = t;
#pragma omp target enter data map(to: x)
    for (int i = 0; i < CHAIN; i++)
      {
#pragma omp target nowait depend(inout: x) map(always, tofrom: x)
	x = x * 3 % 1000003 + 1;
      }
#pragma omp taskwait
#pragma omp target exit data map(from: x)
    long want = t;
    for (int i = 0; i < CHAIN; i++)
      want = want * 3 % 1000003 + 1;
    if (x != want)
      fail ("nowait chain result", t);
  }
}

static void alloc_storm (void)
{
  int dev = omp_get_default_device (), host = omp_get_initial_device ();
#pragma omp parallel num_threads(THREADS)
  {
    unsigned seed = 1234 + omp_get_thread_num ();
    char buf[4096], back[4096];
    for (long i = 0; i < ALLOCS; i++)
      {
	size_t sz = (size_t) 1 << (rand_r (&seed) % 24);   /* 1 B .. 8 MiB */
	char *p = omp_target_alloc (sz, dev);
	if (!p)
	  {
	    fail ("omp_target_alloc", i);
	    continue;
	  }
	if (i % 64 == 0)
	  {
	    size_t n = sz < sizeof buf ? sz : sizeof buf;
	    memset (buf, (int) i, n);
	    if (omp_target_memcpy (p, buf, n, 0, 0, dev, host)
		|| omp_target_memcpy (back, p, n, 0, 0, host, dev)
		|| memcmp (buf, back, n))
	      fail ("alloc round trip", i);
	  }
	omp_target_free (p, dev);
      }
  }
}

int main (void)
{
  if (!on_gpu () && !getenv ("STRESS_ALLOW_HOST"))   /* the knob checks this program */
    {
      printf ("FAIL not running on a GPU\n");
      return 1;
    }
  double start = free_mib ();   /* after the first region: context and image loaded */
  double level[2];
  double secs[2];
  for (int round = 0; round < 2; round++)
    {
      double t0 = omp_get_wtime ();
      maps_storm ();
      nowait_storm ();
      alloc_storm ();
      secs[round] = omp_get_wtime () - t0;
      level[round] = free_mib ();
    }
  if (failures)
    {
      printf ("FAIL %d wrong result(s)\n", failures);
      return 1;
    }
  double growth = level[0] < 0 || level[1] < 0 ? 0 : level[0] - level[1];
  if (growth > 64)
    {
      printf ("FAIL device memory: %.0f MiB free after round 1, %.0f after round 2\n",
	      level[0], level[1]);
      return 1;
    }
  printf ("OK %d threads x %d mapped regions, x %d nowait chained, x %d allocs, twice "
	  "(%.1f s, %.1f s); free device memory %.0f MiB at start, %.0f MiB after round 1, "
	  "%.0f MiB after round 2%s\n",
	  THREADS, REGIONS, CHAIN, ALLOCS, secs[0], secs[1], start, level[0], level[1],
	  level[0] < 0 ? " (cuMemGetInfo not readable)" : "");
  return 0;
}
