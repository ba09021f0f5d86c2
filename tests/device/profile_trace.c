/* profile_trace.c - GOMP_NVPTX_INFO, GOMP_NVPTX_PROFILE and GOMP_NVPTX_TRACE
 * (profile_trace.env): a program with known kernels and copies.
 *   kernel_a: 3 launches (default geometry), kernel_b: 2 launches with num_teams(4)
 *   thread_limit(64) (4 teams; the threads per team are what the plugin
 *   chose: the table shows the launch as it was made), kernel_c: 1 launch with nowait (async_run),
 *   on_gpu (gpu_probe.h): 1 launch; one 8 MiB d2h copy (target data's 'from').
 * The plugin prints the profile table on stderr at exit and writes the trace file;
 * profile_trace.expect checks the table's counts. The trace is checked here, by an
 * atexit handler registered before the plugin's (so it runs after the plugin has
 * written the file): whole JSON object, 3 device spans of kernel_a, 2 of kernel_b, 1 of
 * kernel_c, host spans of load_image and run, copy spans. Prints "TRACE OK" or
 * "TRACE FAIL ...". Ours only: the stock plugin has none of these variables. */
#include "gpu_probe.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 20)
#define TRACE_FILE "/tmp/gomp_nvptx_profile_trace.json"

static int count (const char *s, const char *what)
{
  int n = 0;
  for (const char *p = s; (p = strstr (p, what)); p += strlen (what))
    n++;
  return n;
}

static void check_trace (void)
{
  FILE *f = fopen (TRACE_FILE, "r");
  if (!f)
    {
      printf ("TRACE FAIL no file %s\n", TRACE_FILE);
      return;
    }
  static char buf[16 << 20];
  size_t n = fread (buf, 1, sizeof buf - 1, f);
  fclose (f);
  buf[n] = 0;
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
    buf[--n] = 0;
  int a = count (buf, "\"name\":\"kernel_a._omp_fn."), b = count (buf, "\"name\":\"kernel_b._omp_fn."),
      c = count (buf, "\"name\":\"kernel_c._omp_fn.");
  const char *why = NULL;
  if (strncmp (buf, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 39) != 0 || n < 2
      || strcmp (buf + n - 2, "]}") != 0)
    why = "not a whole trace object";
  else if (a != 3 || b != 2 || c != 1)
    why = "kernel span counts differ";
  else if (!strstr (buf, "\"name\":\"load_image\"") || !strstr (buf, "\"name\":\"run\"")
	   || !strstr (buf, "\"name\":\"async_run\"") || !strstr (buf, "\"cat\":\"copy\"")
	   || !strstr (buf, "\"name\":\"GPU 0: "))
    why = "host spans or track names missing";
  if (why)
    printf ("TRACE FAIL %s (kernel_a %d, kernel_b %d, kernel_c %d spans; %zu bytes)\n", why, a, b, c, n);
  else
    printf ("TRACE OK kernel spans a=%d b=%d c=%d, %zu bytes\n", a, b, c, n);
  fflush (stdout);
}

static void kernel_a (double *x)
{
#pragma omp target teams distribute parallel for
  for (int i = 0; i < N; i++)
    x[i] += 1.0;
}

static void kernel_b (double *x)
{
#pragma omp target teams distribute parallel for num_teams(4) thread_limit(64)
  for (int i = 0; i < N; i++)
    x[i] *= 2.0;
}

static void kernel_c (double *x)
{
#pragma omp target teams distribute parallel for nowait
  for (int i = 0; i < N; i++)
    x[i] -= 1.0;
#pragma omp taskwait
}

int main (void)
{
  remove (TRACE_FILE);
  atexit (check_trace);
  if (!on_gpu ())
    {
      printf ("FAIL target regions did not run on the GPU\n");
      return 1;
    }
  double *x = malloc (N * sizeof *x);
  for (int i = 0; i < N; i++)
    x[i] = i;
#pragma omp target data map(alloc: x[0:N])
  {
#pragma omp target update to(x[0:N])
    for (int r = 0; r < 3; r++)
      kernel_a (x);
    for (int r = 0; r < 2; r++)
      kernel_b (x);
    kernel_c (x);
#pragma omp target update from(x[0:N])
  }
  /* ((i + 3) * 4) - 1 */
  for (int i = 0; i < N; i++)
    if (x[i] != (i + 3.0) * 4.0 - 1.0)
      {
	printf ("FAIL x[%d] = %g\n", i, x[i]);
	return 1;
      }
  printf ("OK results correct\n");
  fflush (stdout);
  free (x);
  return 0;
}
