/* saxpy.c - the project's main job: one OpenMP offload program, checked and timed.
 *
 *   y = a*x + y over n floats, as `target teams distribute parallel for` with map(to/from),
 *   run twice (cold: includes device init and PTX JIT; warm: the steady state).
 *
 * Prints where it ran (GPU or host fallback), which offload plugin file the process
 * loaded, the time of each run and whether every element is right; exits non-zero on
 * a wrong result.  Build: gcc -O2 -fopenmp -foffload=nvptx-none saxpy.c -o saxpy  */
#define _GNU_SOURCE
#include <link.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
report_plugin (struct dl_phdr_info *info, size_t size, void *data)
{
  (void) size;
  if (strstr (info->dlpi_name, "libgomp-plugin-"))
    {
      printf ("offload plugin: %s\n", info->dlpi_name);
      ++*(int *) data;
    }
  return 0;
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
  int plugins = 0;
  dl_iterate_phdr (report_plugin, &plugins);
  if (!plugins)
    printf ("offload plugin: none loaded\n");
  printf ("saxpy n=%ld ran on the %s (%d offload device(s)): cold %.3f ms, warm %.3f ms (%.1f GB/s)\n",
          n, on_device == 1 ? "GPU" : "host (fallback)", omp_get_num_devices (),
          cold * 1e3, warm * 1e3, 3.0 * n * sizeof (float) / warm / 1e9);
  printf ("%s: %ld of %ld elements wrong\n", bad ? "FAILED" : "OK", bad, n);
  free (x);
  free (y);
  return bad ? 1 : 0;
}
