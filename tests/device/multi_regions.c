/* multi_regions.c - every device of the machine runs and checks its own regions (needs
 * 2 or more devices; prints "SKIP ..." and exits 77 otherwise). Built by
 * tests/device/build.sh, run on the GPU by tests/device/run.sh with each plugin.
 *
 * For each device d, in turn from one host thread:
 *   1. `target device(d)`: the region is not on the host and omp_get_device_num () is d;
 *   2. a `target teams distribute parallel for device(d) map(tofrom:)` over an array;
 *   3. omp_target_alloc on d, omp_target_memcpy in, a kernel through is_device_ptr,
 *      omp_target_memcpy back, omp_target_free;
 *   4. after omp_set_default_device (d), a region with no device clause runs on d.
 * Then across devices:
 *   5. one host array mapped on every device at once (`target enter data device(d)`,
 *      different contents each): each device's kernel changes its own copy, each copy
 *      comes back through `target update from device(d)` as that device left it, and
 *      after `target exit data` it is present on none.
 * (omp_target_memcpy between two devices is not tried: libgomp refuses it, EINVAL,
 * before any plugin is asked.)
 * Every result is compared with the host's own computation. Prints "OK ..." or "FAIL
 * ..." lines (exit 1). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_probe.h"

#define N 65536

static int failures;

static void fail (const char *what, int dev, long item, long got, long want)
{
  failures++;
  if (failures < 20)
    printf ("FAIL %s on device %d (item %ld: got %ld, want %ld)\n", what, dev, item, got,
	    want);
}

static long pattern (int d, long i)
{
  return (long) d * 1000003 + i * 7 + 1;
}

int main (void)
{
  int nd = need_devices (2, "multi_regions");
  int host = omp_get_initial_device ();
  static long a[N], s[N];
  for (int d = 0; d < nd; d++)
    {
      /* 1. Where the region runs.  */
      int initial = -1, num = -1;
#pragma omp target device(d) map(from: initial, num)
      {
	initial = omp_is_initial_device ();
	num = omp_get_device_num ();
      }
      if (initial != 0)
	fail ("region ran on the host", d, 0, initial, 0);
      if (num != d)
	fail ("omp_get_device_num in the region", d, 0, num, d);
      /* 2. A mapped array.  */
      for (long i = 0; i < N; i++)
	a[i] = pattern (d, i);
#pragma omp target teams distribute parallel for device(d) map(tofrom: a)
      for (long i = 0; i < N; i++)
	a[i] = 3 * a[i] + d;
      for (long i = 0; i < N; i++)
	if (a[i] != 3 * pattern (d, i) + d)
	  {
	    fail ("mapped array after a teams kernel", d, i, a[i], 3 * pattern (d, i) + d);
	    break;
	  }
      /* 3. Device memory of d, through the API.  */
      long *p = omp_target_alloc (N * sizeof (long), d);
      if (!p)
	fail ("omp_target_alloc returned NULL", d, 0, 0, 1);
      else
	{
	  for (long i = 0; i < N; i++)
	    a[i] = pattern (d, i);
	  if (omp_target_memcpy (p, a, N * sizeof (long), 0, 0, d, host))
	    fail ("omp_target_memcpy to the device", d, 0, 1, 0);
#pragma omp target teams distribute parallel for device(d) is_device_ptr(p)
	  for (long i = 0; i < N; i++)
	    p[i] = p[i] * 5 - d;
	  memset (a, 0, sizeof a);
	  if (omp_target_memcpy (a, p, N * sizeof (long), 0, 0, host, d))
	    fail ("omp_target_memcpy to the host", d, 0, 1, 0);
	  for (long i = 0; i < N; i++)
	    if (a[i] != pattern (d, i) * 5 - d)
	      {
		fail ("omp_target_alloc'ed memory after a kernel", d, i, a[i],
		      pattern (d, i) * 5 - d);
		break;
	      }
	  omp_target_free (p, d);
	}
      /* 4. The default device.  */
      omp_set_default_device (d);
      num = -1;
      long x = d;
#pragma omp target map(from: num) map(tofrom: x)
      {
	num = omp_get_device_num ();
	x = x * 11 + 1;
      }
      if (num != d || x != d * 11 + 1)
	fail ("region after omp_set_default_device: device number", d, 0, num, d);
    }
  omp_set_default_device (0);
  /* 5. One host array, a copy on every device.  */
  for (int d = 0; d < nd; d++)
    {
      for (long i = 0; i < N; i++)
	s[i] = pattern (d, i);
#pragma omp target enter data device(d) map(to: s)
    }
  for (int d = 0; d < nd; d++)
    if (!omp_target_is_present (s, d))
      fail ("omp_target_is_present after enter data", d, 0, 0, 1);
  for (int d = 0; d < nd; d++)
    {
#pragma omp target teams distribute parallel for device(d)
      for (long i = 0; i < N; i++)
	s[i] = 2 * s[i] + d;
    }
  for (int d = 0; d < nd; d++)
    {
      memset (s, 0, sizeof s);
#pragma omp target update device(d) from(s)
      for (long i = 0; i < N; i++)
	if (s[i] != 2 * pattern (d, i) + d)
	  {
	    fail ("the device's own copy of a host array mapped on every device", d, i, s[i],
		  2 * pattern (d, i) + d);
	    break;
	  }
    }
  for (int d = 0; d < nd; d++)
    {
#pragma omp target exit data device(d) map(release: s)
    }
  for (int d = 0; d < nd; d++)
    if (omp_target_is_present (s, d))
      fail ("omp_target_is_present after exit data", d, 0, 1, 0);
  if (failures)
    {
      printf ("FAIL %d check(s) on %d devices\n", failures, nd);
      return 1;
    }
  printf ("OK %d devices each ran and checked its regions, maps, allocations, default "
	  "device and its own copy of a shared host array\n", nd);
  return 0;
}
