/* omp_pool_reclaim.c - a large allocation needing memory that freed blocks left in the
 * plugin's caches still hold.  Built by tests/device/build.sh, run on the GPU
 * by tests/device/run.sh with each plugin.
 *
 * OpenMP has no free-memory query (GCC 16 neither), so what a program can observe is
 * whether an allocation succeeds.  The test fills most of the device with 256 MiB blocks
 * (omp_target_alloc), frees them all (a pooling plugin keeps them), then asks for ONE
 * block of a different size nearly as large as everything it freed: it must succeed,
 * i.e. a failing allocation must give back cached blocks and retry.  Then a 1 GiB
 * mapping and a target region must still work.  The driver's free memory
 * (cuMemGetInfo, gpu_probe.h) at each step is printed as information.
 * "ok: ..." / "FAIL: ..." lines, "OK ..." and exit 0 when everything passed, exit 1
 * otherwise, 2 when there is no device or the driver's free memory cannot be read. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_probe.h"

#define MIB ((size_t) 1 << 20)
#define BLOCK (256 * MIB)
/* Left to the driver, the plugin's stacks and libgomp's own blocks.  */
#define SPARE (2048 * MIB)

int main (void)
{
  int dev = omp_get_default_device (), host = omp_get_initial_device ();
  if (omp_get_num_devices () < 1 || !on_gpu ())
    {
      printf ("FAIL no offload device (or the target region fell back to the host)\n");
      return 2;
    }
  double f0 = free_mib ();
  if (f0 < 0)
    {
      printf ("FAIL cannot read the driver's free memory\n");
      return 2;
    }
  size_t want = f0 * MIB > SPARE + 4 * BLOCK ? (size_t) (f0 * MIB) - SPARE : 4 * BLOCK;
  size_t n = want / BLOCK, got = 0;
  void **p = calloc (n, sizeof *p);
  for (; got < n; got++)
    if (!(p[got] = omp_target_alloc (BLOCK, dev)))
      break;
  double f1 = free_mib ();
  for (size_t i = 0; i < got; i++)
    omp_target_free (p[i], dev);
  free (p);
  double f2 = free_mib ();
  printf ("INFO driver free memory: %.0f MiB at start, %.0f MiB holding %zu x 256 MiB,"
	  " %.0f MiB after freeing them\n", f0, f1, got, f2);
  int ok = 1;
  if (got < 4)
    {
      printf ("FAIL: only %zu blocks of 256 MiB could be allocated\n", got);
      return 1;
    }
  /* One block of a size none of the freed blocks has: 3 MiB less than what was freed.  */
  size_t big = got * BLOCK - 3 * MIB;
  void *q = omp_target_alloc (big, dev);
  printf ("%s one %zu MiB omp_target_alloc after freeing %zu MiB (driver free now %.0f MiB)\n",
	  q ? "ok:" : "FAIL:", big / MIB, got * BLOCK / MIB, free_mib ());
  ok &= q != NULL;
  if (q)
    {
      /* It is real memory: write its last byte and read it back.  */
      unsigned char c = 0x5a, back = 0;
      ok &= !omp_target_memcpy ((char *) q + big - 1, &c, 1, 0, 0, dev, host)
	    && !omp_target_memcpy (&back, (char *) q + big - 1, 1, 0, 0, host, dev)
	    && back == c;
      omp_target_free (q, dev);
    }
  /* The device still maps and runs.  */
  size_t m = 1024 * MIB / sizeof (int);
  int *h = malloc (m * sizeof (int)), bad = 0;
  for (size_t i = 0; i < m; i++)
    h[i] = (int) i;
#pragma omp target teams distribute parallel for map(tofrom: h[0:m])
  for (size_t i = 0; i < m; i++)
    h[i] = h[i] * 2 + 1;
  for (size_t i = 0; i < m; i++)
    bad += h[i] != (int) (i * 2 + 1);
  free (h);
  printf ("%s 1 GiB mapping and target region after the big allocation\n", bad ? "FAIL:" : "ok:");
  ok &= !bad;
  printf ("%s pool reclaim\n", ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
