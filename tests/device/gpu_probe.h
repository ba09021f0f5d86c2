/* gpu_probe.h - probes shared by the device tests (tests/device/) and the
 * benchmarks (bench/): whether target regions really run on the GPU, how much
 * device memory the driver reports free (or a device has in all), and the skip
 * convention of the tests that need several devices.  Each build script copies this header next
 * to the sources it compiles.  A program that says `requires reverse_offload` (or any
 * other `requires`) includes it after that directive: it holds a target region. */
#ifndef GPU_PROBE_H
#define GPU_PROBE_H
#include <dlfcn.h>
#include <omp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* 1 if a target region runs on a device, 0 if it fell back to the host.  */
static int __attribute__ ((unused)) on_gpu (void)
{
  int d = 0;
#pragma omp target map(from: d)
  d = !omp_is_initial_device ();
  return d;
}

/* Free and total device memory as the driver reports them (libcuda's cuMemGetInfo_v2,
   loaded with dlopen, through the context the plugin left current on this thread), in
   bytes; returns 0 on success, -1 if they cannot be read.  */
static int __attribute__ ((unused)) gpu_mem (size_t *free_bytes, size_t *total_bytes)
{
  static int (*get) (size_t *, size_t *);
  if (!get)
    {
      void *h = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (!h)
	h = dlopen ("libcuda.so.1", RTLD_NOW);
      if (h)
	*(void **) &get = dlsym (h, "cuMemGetInfo_v2");
    }
  size_t f = 0, t = 0;
  if (!get || get (&f, &t) != 0)
    return -1;
  *free_bytes = f;
  *total_bytes = t;
  return 0;
}

/* Free device memory as the driver reports it (gpu_mem), in bytes; -1 if it cannot
   be read.  */
static long long __attribute__ ((unused)) free_bytes (void)
{
  size_t f, t;
  return gpu_mem (&f, &t) == 0 ? (long long) f : -1;
}

/* The same in MiB; -1 if it cannot be read.  */
static double __attribute__ ((unused)) free_mib (void)
{
  long long f = free_bytes ();
  return f < 0 ? -1 : f / 1048576.0;
}
/* The exit status of a test that cannot run on this machine (too few devices, ...):
   tests/device/run.sh counts a run as skipped, never as passed, when it exits with it
   and printed a line starting "SKIP".  */
#define TEST_SKIP 77

/* The number of offload devices, when it is at least WANT; otherwise prints
   "SKIP TEST: ..." with the count and exits with TEST_SKIP.  Initialises every device
   (omp_get_num_devices): not for a parent that forks before any device is touched.  */
static int __attribute__ ((unused)) need_devices (int want, const char *test)
{
  int n = omp_get_num_devices ();
  if (n < want)
    {
      printf ("SKIP %s: %d offload device(s) visible, the test needs %d\n", test, n, want);
      fflush (stdout);
      exit (TEST_SKIP);
    }
  return n;
}

/* Total memory of the device of CUDA ordinal ORD (libcuda's cuDeviceTotalMem_v2,
   loaded with dlopen; needs no context, only cuInit), in bytes; 0 if it cannot be read.
   The plugins number their devices in CUDA's order, so ORD is also the OpenMP device
   number.  */
static size_t __attribute__ ((unused)) gpu_total_of (int ord)
{
  void *h = dlopen ("libcuda.so.1", RTLD_NOW);
  int (*init) (unsigned), (*get) (int *, int), (*total) (size_t *, int);
  if (!h)
    return 0;
  *(void **) &init = dlsym (h, "cuInit");
  *(void **) &get = dlsym (h, "cuDeviceGet");
  *(void **) &total = dlsym (h, "cuDeviceTotalMem_v2");
  int dev;
  size_t t = 0;
  if (!init || !get || !total || init (0) != 0 || get (&dev, ord) != 0 || total (&t, dev) != 0)
    return 0;
  return t;
}
#endif
