/* gpu_probe.h - two probes shared by the device tests (tests/device/) and the
 * benchmarks (bench/): whether target regions really run on the GPU, and how much
 * device memory the driver reports free.  Each build script copies this header next
 * to the sources it compiles.  A program that says `requires reverse_offload` (or any
 * other `requires`) includes it after that directive: it holds a target region. */
#ifndef GPU_PROBE_H
#define GPU_PROBE_H
#include <dlfcn.h>
#include <omp.h>
#include <stddef.h>

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

/* Free device memory as the driver reports it (gpu_mem), in MiB; -1 if it cannot be
   read.  */
static double __attribute__ ((unused)) free_mib (void)
{
  size_t f, t;
  if (gpu_mem (&f, &t) != 0)
    return -1;
  return f / 1048576.0;
}
#endif
