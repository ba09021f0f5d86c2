/* multi_threads.c - one host thread per device, all at once (needs 2 or more devices;
 * prints "SKIP ..." and exits 77 otherwise). Built by tests/device/build.sh, run on the
 * GPU by tests/device/run.sh with each plugin under its timeout.
 *
 * `omp parallel num_threads(N devices)`: thread t calls omp_set_default_device (t) (a
 * per-thread setting) and runs, with no device clause, R regions that map a small array
 * tofrom and report omp_get_device_num (), every 50th also a teams kernel over a 1 Mi
 * element array of its own kept in `target data`; then a `target data` round of
 * omp_target_alloc/memcpy/free on its device. Every region's device number and every
 * result are checked on the host. Prints "OK ..." or "FAIL ..." (exit 1); a hang is
 * caught by the runner's timeout. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_probe.h"

#define R 2000
#define SMALL 64
#define BIG (1L << 20)

static int failures;

static void fail (const char *what, int dev, long item, long got, long want)
{
#pragma omp atomic
  failures++;
  if (failures < 20)
#pragma omp critical
    printf ("FAIL %s on device %d (item %ld: got %ld, want %ld)\n", what, dev, item, got,
	    want);
}

int main (void)
{
  int nd = need_devices (2, "multi_threads");
  long regions = 0;
#pragma omp parallel num_threads(nd) reduction(+: regions)
  {
    int t = omp_get_thread_num ();
    int host = omp_get_initial_device ();
    if (t == 0 && omp_get_num_threads () != nd)
      fail ("threads in the team", -1, 0, omp_get_num_threads (), nd);
    omp_set_default_device (t);
    long a[SMALL];
    long *big = malloc (BIG * sizeof (long));
    for (long i = 0; i < BIG; i++)
      big[i] = i ^ t;
    long rounds = 0;
#pragma omp target data map(tofrom: big[0:BIG])
    for (long r = 0; r < R && !__atomic_load_n (&failures, __ATOMIC_RELAXED); r++)
      {
	for (int j = 0; j < SMALL; j++)
	  a[j] = r * 131 + j + ((long) t << 40);
	int num = -1;
#pragma omp target map(tofrom: a) map(from: num)
	{
	  num = omp_get_device_num ();
	  for (int j = 0; j < SMALL; j++)
	    a[j] = 2 * a[j] + 1;
	}
	regions++;
	if (num != t)
	  fail ("region of this thread ran on another device", t, r, num, t);
	for (int j = 0; j < SMALL; j++)
	  if (a[j] != 2 * (r * 131 + j + ((long) t << 40)) + 1)
	    {
	      fail ("small mapped array", t, r, a[j], 2 * (r * 131 + j + ((long) t << 40)) + 1);
	      break;
	    }
	if (r % 50 == 0)
	  {
#pragma omp target teams distribute parallel for
	    for (long i = 0; i < BIG; i++)
	      big[i] += i % 7 + t;
	    rounds++;
	    regions++;
	  }
      }
    for (long i = 0; i < BIG; i++)
      if (big[i] != (i ^ t) + rounds * (i % 7 + t))
	{
	  fail ("big array after its teams kernels", t, i, big[i], (i ^ t) + rounds * (i % 7 + t));
	  break;
	}
    /* The device API on this thread's device.  */
    for (int k = 0; k < 100; k++)
      {
	size_t n = (size_t) 1 << (k % 18);
	long *p = omp_target_alloc (n * sizeof (long), t);
	if (!p)
	  {
	    fail ("omp_target_alloc", t, k, 0, 1);
	    continue;
	  }
	for (size_t i = 0; i < n; i++)
	  big[i] = (long) (i * 3 + k) ^ t;
	omp_target_memcpy (p, big, n * sizeof (long), 0, 0, t, host);
	memset (big, 0, n * sizeof (long));
	omp_target_memcpy (big, p, n * sizeof (long), 0, 0, host, t);
	for (size_t i = 0; i < n; i++)
	  if (big[i] != ((long) (i * 3 + k) ^ t))
	    {
	      fail ("omp_target_memcpy round trip", t, k, big[i], (long) (i * 3 + k) ^ t);
	      break;
	    }
	omp_target_free (p, t);
      }
    free (big);
  }
  if (failures)
    {
      printf ("FAIL %d check(s), %d devices, one thread each\n", failures, nd);
      return 1;
    }
  printf ("OK %d devices, one host thread each at once: %ld regions, each on its "
	  "thread's device, all results right\n", nd, regions);
  return 0;
}
