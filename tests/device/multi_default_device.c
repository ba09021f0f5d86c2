/* multi_default_device.c - OMP_DEFAULT_DEVICE picks the device of regions with no
 * device clause (needs 2 or more devices; prints "SKIP ..." and exits 77 otherwise).
 * Built by tests/device/build.sh, run on the GPU by tests/device/run.sh with each
 * plugin, with multi_default_device.env (OMP_DEFAULT_DEVICE=1).
 *
 * Checks that omp_get_default_device () is 1; that a region with no device clause runs
 * on device 1 (omp_get_device_num) and its mapped array comes back right; that
 * `device(0)` still runs on device 0; and that data mapped by `target enter data` with
 * no device clause is present on device 1 and not on device 0. Prints "OK ..." or
 * "FAIL ..." (exit 1). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_probe.h"

#define N 4096

int main (void)
{
  need_devices (2, "multi_default_device");
  int failures = 0;
  const char *e = getenv ("OMP_DEFAULT_DEVICE");
  if (!e || atoi (e) != 1)
    {
      printf ("FAIL OMP_DEFAULT_DEVICE is %s, the test wants 1 (multi_default_device.env)\n",
	      e ? e : "unset");
      return 1;
    }
  if (omp_get_default_device () != 1)
    {
      printf ("FAIL omp_get_default_device () is %d, want 1\n", omp_get_default_device ());
      failures++;
    }
  static long a[N];
  for (int i = 0; i < N; i++)
    a[i] = i * 5 + 3;
  int num = -1, num0 = -1;
#pragma omp target teams distribute parallel for map(tofrom: a) map(from: num)
  for (int i = 0; i < N; i++)
    {
      a[i] = a[i] * 2 + 1;
      if (i == 0)
	num = omp_get_device_num ();
    }
  if (num != 1)
    {
      printf ("FAIL a region with no device clause ran on device %d, want 1\n", num);
      failures++;
    }
  for (int i = 0; i < N; i++)
    if (a[i] != (i * 5 + 3) * 2 + 1)
      {
	printf ("FAIL element %d is %ld, want %d\n", i, a[i], (i * 5 + 3) * 2 + 1);
	failures++;
	break;
      }
#pragma omp target device(0) map(from: num0)
  num0 = omp_get_device_num ();
  if (num0 != 0)
    {
      printf ("FAIL a device(0) region ran on device %d\n", num0);
      failures++;
    }
#pragma omp target enter data map(to: a)
  if (!omp_target_is_present (a, 1) || omp_target_is_present (a, 0))
    {
      printf ("FAIL after enter data with no device clause: present on device 1: %d, on "
	      "device 0: %d (want 1, 0)\n", omp_target_is_present (a, 1),
	      omp_target_is_present (a, 0));
      failures++;
    }
#pragma omp target exit data map(release: a)
  if (failures)
    return 1;
  printf ("OK OMP_DEFAULT_DEVICE=1: regions and data with no device clause on device 1, "
	  "device(0) on device 0\n");
  return 0;
}
