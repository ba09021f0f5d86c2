/* multi_alloc_during_kernel.c - device memory is allocated, used and freed on one
 * device while a kernel runs on another (needs 2 or more devices; prints "SKIP ..."
 * and exits 77 otherwise). Built by tests/device/build.sh, run on the GPU by
 * tests/device/run.sh with each plugin under its timeout.
 *
 * For each device k (the kernel's) and a = k + 1 (the last: a = 0), two host threads:
 *   thread 0 runs a kernel on k that calls back to the host (reverse offload) once; the
 *     host handler says the kernel has started and then waits until thread 1 is done,
 *     so the kernel on k is running for as long as thread 1 works;
 *   thread 1 waits for that start, then on device a does C cycles of omp_target_alloc,
 *     omp_target_memcpy in, a kernel through is_device_ptr, omp_target_memcpy out and
 *     omp_target_free (sizes 4 KiB to 32 MiB), checking every byte that comes back,
 *     and lets the handler go.
 * The allocations on a therefore happen while k's kernel runs; a plugin that makes them
 * wait for that kernel (a lock shared by the devices, held while a kernel runs) would
 * never finish: the handler gives up after 25 s (a guard against a hang, not a timing
 * check) and the test fails, or the runner's timeout ends it. Prints "ok: ..." per
 * case and "OK ..." at the end, or "FAIL ..." lines (exit 1). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma omp requires reverse_offload
#include "gpu_probe.h"

#define C 200
#define GUARD_S 25.0

/* Host-only state, touched by the host handler and the host threads.  */
static int started, released, gave_up, handler_device;

/* Runs on the host, called by the kernel on device k through reverse offload.  */
static void handler (int dev)
{
  handler_device = dev;
  __atomic_store_n (&started, 1, __ATOMIC_RELEASE);
  double t0 = omp_get_wtime ();
  while (!__atomic_load_n (&released, __ATOMIC_ACQUIRE))
    if (omp_get_wtime () - t0 > GUARD_S)
      {
	gave_up = 1;
	break;
      }
}

static long alloc_cycles (int a)
{
  int host = omp_get_initial_device ();
  long bad = 0;
  for (int c = 0; c < C; c++)
    {
      size_t n = (size_t) 512 << (c % 14);   /* longs: 4 KiB .. 32 MiB */
      long *h = malloc (n * sizeof (long));
      for (size_t i = 0; i < n; i++)
	h[i] = (long) (i * 2654435761u) + c;
      long *p = omp_target_alloc (n * sizeof (long), a);
      if (!p)
	{
	  printf ("FAIL omp_target_alloc of %zu bytes on device %d (cycle %d)\n",
		  n * sizeof (long), a, c);
	  bad++;
	  free (h);
	  continue;
	}
      int rc = omp_target_memcpy (p, h, n * sizeof (long), 0, 0, a, host);
      long cc = c;
#pragma omp target teams distribute parallel for device(a) is_device_ptr(p)
      for (size_t i = 0; i < n; i++)
	p[i] = p[i] * 2 - cc;
      memset (h, 0, n * sizeof (long));
      rc |= omp_target_memcpy (h, p, n * sizeof (long), 0, 0, host, a);
      omp_target_free (p, a);
      for (size_t i = 0; i < n; i++)
	if (h[i] != ((long) (i * 2654435761u) + c) * 2 - c)
	  {
	    if (bad < 5)
	      printf ("FAIL device %d, cycle %d: element %zu is %ld, want %ld\n", a, c, i,
		      h[i], ((long) (i * 2654435761u) + c) * 2 - c);
	    bad++;
	    break;
	  }
      if (rc)
	{
	  printf ("FAIL omp_target_memcpy on device %d (cycle %d)\n", a, c);
	  bad++;
	}
      free (h);
    }
  return bad;
}

int main (void)
{
  int nd = need_devices (2, "multi_alloc_during_kernel");
  int failures = 0;
  for (int k = 0; k < nd; k++)
    {
      int a = (k + 1) % nd;
      started = released = gave_up = 0;
      handler_device = -1;
      long bad = 0;
      int kernel_dev = -1;
#pragma omp parallel num_threads(2)
      {
	if (omp_get_thread_num () == 0)
	  {
#pragma omp target device(k) map(from: kernel_dev)
	    {
	      int me = omp_get_device_num ();
	      kernel_dev = me;
#pragma omp target device(ancestor: 1) firstprivate(me)
	      handler (me);
	    }
	  }
	else
	  {
	    double t0 = omp_get_wtime ();
	    while (!__atomic_load_n (&started, __ATOMIC_ACQUIRE) && omp_get_wtime () - t0 < GUARD_S)
	      ;
	    if (!__atomic_load_n (&started, __ATOMIC_ACQUIRE))
	      {
		printf ("FAIL the kernel on device %d did not call its host handler in %.0f s\n",
			k, GUARD_S);
		bad++;
	      }
	    else
	      bad += alloc_cycles (a);
	    __atomic_store_n (&released, 1, __ATOMIC_RELEASE);
	  }
      }
      if (kernel_dev != k || handler_device != k)
	{
	  printf ("FAIL the kernel meant for device %d ran on %d (handler told %d)\n", k,
		  kernel_dev, handler_device);
	  failures++;
	}
      if (gave_up)
	{
	  printf ("FAIL %d cycles on device %d did not finish in %.0f s while device %d ran "
		  "a kernel\n", C, a, GUARD_S, k);
	  failures++;
	}
      if (bad)
	failures++;
      else if (!gave_up)
	printf ("ok: %d alloc/copy/kernel/free cycles on device %d while device %d ran a "
		"kernel\n", C, a, k);
    }
  if (failures)
    {
      printf ("FAIL %d of %d cases\n", failures, nd);
      return 1;
    }
  printf ("OK allocations on each device while its neighbour ran a kernel, %d devices\n", nd);
  return 0;
}
