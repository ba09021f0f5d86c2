/* oom.c - device memory exhaustion. omp_target_alloc beyond the device's
 * memory must return NULL (libgomp's convention, with the plugin's libgomp: message)
 * and leave the device usable; a mapping larger than the device then takes libgomp's
 * fatal path: exit status 1 and an out-of-memory message (oom.expect), no crash.
 * The big mapping is map(alloc:) of a host range that is never touched, so the host
 * needs no memory for it. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int check_usable (const char *when)
{
  int a[256], ok = 1;
  for (int i = 0; i < 256; i++)
    a[i] = i;
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 256; i++)
    a[i] = a[i] * 2 + 1;
  for (int i = 0; i < 256; i++)
    ok &= a[i] == i * 2 + 1;
  printf ("%s device usable %s\n", ok ? "ok:" : "FAIL:", when);
  return ok;
}

int main (void)
{
  int dev = omp_get_default_device ();
  if (omp_get_num_devices () < 1)
    {
      printf ("FAIL no device\n");
      return 2;
    }
  if (!check_usable ("at start"))
    return 2;
  size_t sizes[] = { (size_t) 1 << 62, (size_t) 1 << 40, (size_t) 200 << 30 };
  for (int i = 0; i < 3; i++)
    {
      void *p = omp_target_alloc (sizes[i], dev);
      printf ("%s omp_target_alloc(%zu GiB) = %p\n", p ? "FAIL:" : "ok:", sizes[i] >> 30, p);
      if (p)
	return 2;
      if (!check_usable ("after the failed allocation"))
	return 2;
    }
  /* Allocations that fit still work after the failures. */
  void *q = omp_target_alloc ((size_t) 1 << 30, dev);
  printf ("%s 1 GiB omp_target_alloc after the failures\n", q ? "ok:" : "FAIL:");
  if (!q)
    return 2;
  omp_target_free (q, dev);
  fflush (stdout);
  /* A mapping larger than the device: libgomp reports the failed allocation and exits. */
  size_t n = (size_t) 200 << 30;
  char *big = malloc (1);
  char *range = big;
#pragma omp target enter data map(alloc: range[0:n])
  printf ("FAIL the 200 GiB mapping succeeded\n");
  free (big);
  return 0;
}
