/* saxpy.c - the project's main job: one OpenMP offload program, checked and timed.
 *
 *   y = a*x + y over n floats, as `target teams distribute parallel for` with map(to/from),
 *   run twice (cold: includes device init and PTX JIT; warm: the steady state).
 *
 * Prints where it ran (GPU or host fallback), which offload plugin file the process
 * loaded, the time of each run and whether every element is right; exits non-zero on
 * a wrong result.  After a host fallback, one "why:" line says what the program can see
 * of the reason (libgomp tells a program only the device count; the plugin's own
 * account is in GOMP_DEBUG=1's output).  Build: gcc -O2 -fopenmp -foffload=nvptx-none saxpy.c -o saxpy  */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct loaded
{
  int plugins, cuda;
};

static int
report_plugin (struct dl_phdr_info *info, size_t size, void *data)
{
  struct loaded *l = data;
  (void) size;
  if (strstr (info->dlpi_name, "libgomp-plugin-"))
    {
      printf ("offload plugin: %s\n", info->dlpi_name);
      l->plugins++;
    }
  /* The CUDA driver, whatever its file is called: a loaded library defining cuInit.  */
  void *h = info->dlpi_name[0] ? dlopen (info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD) : NULL;
  if (h)
    {
      if (dlsym (h, "cuInit"))
        l->cuda++;
      dlclose (h);
    }
  return 0;
}

/* Why the region ran on the host, from what the process shows: the OMP_TARGET_OFFLOAD
   setting, the device count, and which libraries libgomp and the plugin loaded.  */
static const char *
fallback_reason (const struct loaded *l)
{
  const char *off = getenv ("OMP_TARGET_OFFLOAD");
  if (off && strcasecmp (off, "disabled") == 0)
    return "OMP_TARGET_OFFLOAD=disabled";
  if (!l->plugins)
    return "no offload plugin loaded (none on the library path, or the plugin refused this "
           "libgomp; GOMP_DEBUG=1 shows which)";
  if (omp_get_num_devices () == 0 && !l->cuda)
    return "no CUDA driver loaded (libcuda.so.1 not found: no NVIDIA driver installed, or "
           "set CUDA_LIBDIR / LD_LIBRARY_PATH to its directory)";
  if (omp_get_num_devices () == 0)
    return "the CUDA driver is loaded but offers no usable device (none present, or it "
           "failed to initialize; GOMP_DEBUG=1 shows the driver's error)";
  return "a device exists but this region did not run on it (GOMP_DEBUG=1 shows why)";
}

static double
saxpy (long n, float a, const float *x, float *y, int *on_device)
{
  double t0 = omp_get_wtime ();
#pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n]) \
  map(from: on_device[0:1])
  for (long i = 0; i < n; i++)
    {
      if (i == 0)
        on_device[0] = !omp_is_initial_device ();
      y[i] = a * x[i] + y[i];
    }
  return omp_get_wtime () - t0;
}

int
main (int argc, char **argv)
{
  long n = argc > 1 ? atol (argv[1]) : 1L << 24;
  const float a = 2.5f;
  float *x = malloc (n * sizeof *x), *y = malloc (n * sizeof *y);
  if (n <= 0 || !x || !y)
    return 2;
  for (long i = 0; i < n; i++)
    {
      x[i] = (float) (i % 1000) * 0.5f;
      y[i] = 1.0f;
    }
  int on_device = -1;
  double cold = saxpy (n, a, x, y, &on_device);
  double warm = saxpy (n, a, x, y, &on_device);
  long bad = 0;
  for (long i = 0; i < n; i++)
    {
      float want = 1.0f + 2.0f * a * x[i];
      if (fabsf (y[i] - want) > 1e-5f * fabsf (want) + 1e-6f)
        bad++;
    }
  struct loaded l = { 0, 0 };
  dl_iterate_phdr (report_plugin, &l);
  if (!l.plugins)
    printf ("offload plugin: none loaded\n");
  printf ("saxpy n=%ld ran on the %s (%d offload device(s)): cold %.3f ms, warm %.3f ms (%.1f GB/s)\n",
          n, on_device == 1 ? "GPU" : "host (fallback)", omp_get_num_devices (),
          cold * 1e3, warm * 1e3, 3.0 * n * sizeof (float) / warm / 1e9);
  if (on_device != 1)
    printf ("why: %s\n", fallback_reason (&l));
  printf ("%s: %ld of %ld elements wrong\n", bad ? "FAILED" : "OK", bad, n);
  free (x);
  free (y);
  return bad ? 1 : 0;
}
