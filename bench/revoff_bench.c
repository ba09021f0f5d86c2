/* revoff_bench.c - reverse offload (`target device(ancestor: 1)`) micro-benchmarks.
 * `requires reverse_offload` applies to the whole program, hence a file of its own.
 *
 * usage: revoff_bench [N [seq]]      (seq: the round trips only, e.g. for GOMP_DEBUG's
 *                                     split of host and device time per request)
 *   metric revoff_round_trip  mean time of N device->host->device calls (us), made by
 *          one kernel after another launch of it made 100 (the first launch of a kernel
 *          pays its code's loading and stacks: not the round trip; bench/cuda_floor.c's
 *          revoff rows warm up likewise)
 *   metric empty_target_revoff median empty `omp target` in such a program (us)
 *   metric revoff_concurrent_per_s  requests served per second when 4 kernels
 *          launched with `target nowait` each make N/4 requests at the same time
 * The host function counts its calls; a wrong count prints "ERROR" and exits 1. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "median.h"

#pragma omp requires reverse_offload
#include "gpu_probe.h"

static int host_calls;
static int kernel_calls[4];

/* Runs on the host only; the counter is never referenced inside a target region, so
   no implicit mapping copies it around.  */
static void
host_bump (void)
{
  host_calls++;
}

static void
host_bump_k (int k)
{
  __atomic_fetch_add (&kernel_calls[k], 1, __ATOMIC_RELAXED);
}


/* N round trips from one kernel (round_trips$_omp_fn$0, the kernel cuda_floor's
   revoff_gcc_real rows launch). */
static void
round_trips (int n)
{
#pragma omp target firstprivate(n)
  for (int i = 0; i < n; i++)
    {
#pragma omp target device(ancestor: 1)
      host_bump ();
    }
}

int main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 1000;
  double t0 = omp_get_wtime ();
  int dev = on_gpu ();
  printf ("metric first_target_region_revoff %.2f ms\n", (omp_get_wtime () - t0) * 1e3);
  if (!dev)
    {
      printf ("ERROR not running on a GPU\n");
      return 1;
    }
  round_trips (100);
  t0 = omp_get_wtime ();
  round_trips (n);
  double per = (omp_get_wtime () - t0) / n;
  if (host_calls != n + 100)
    {
      printf ("ERROR reverse offload: %d host calls, want %d\n", host_calls, n + 100);
      return 1;
    }
  printf ("metric revoff_round_trip %.2f us\n", per * 1e6);
  if (argc > 2 && !strcmp (argv[2], "seq"))
    return 0;
  int per_kernel = n / 4 > 0 ? n / 4 : 1;
  t0 = omp_get_wtime ();
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int k = 0; k < 4; k++)
      {
#pragma omp target nowait firstprivate(k, per_kernel)
	for (int i = 0; i < per_kernel; i++)
	  {
#pragma omp target device(ancestor: 1) firstprivate(k)
	    host_bump_k (k);
	  }
      }
#pragma omp taskwait
  }
  double dt = omp_get_wtime () - t0;
  for (int k = 0; k < 4; k++)
    if (kernel_calls[k] != per_kernel)
      {
	printf ("ERROR concurrent reverse offload: kernel %d made %d host calls, want %d\n",
		k, kernel_calls[k], per_kernel);
	return 1;
      }
  printf ("metric revoff_concurrent_per_s %.0f 1/s\n", 4 * per_kernel / dt);
  double t[1000];
  for (int i = 0; i < 1010; i++)
    {
      double s = omp_get_wtime ();
#pragma omp target
      ;
      if (i >= 10)
        t[i - 10] = omp_get_wtime () - s;
    }
  printf ("metric empty_target_revoff %.2f us\n", median (t, 1000) * 1e6);
  return 0;
}
