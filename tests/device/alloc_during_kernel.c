/* alloc_during_kernel.c - device memory is allocated and freed while a kernel runs,
 * from a reverse-offload handler called by that kernel and from a second host thread,
 * and nothing deadlocks. Built by tests/device/build.sh, run on the GPU by
 * tests/device/run.sh with each plugin under a timeout.
 *
 * The kernel calls back to the host K times; each handler allocates, writes through
 * omp_target_memcpy and frees device memory. Meanwhile a second host thread does
 * alloc/copy/free cycles until the kernel is done. Prints "OK ..." or "FAIL ..."
 * (exit 1). A hang is caught by the runner's timeout. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma omp requires reverse_offload

#define K 20
static volatile int kernel_done;
/* Host-only state: never referenced inside a target region except through the
   host function below, so no mapping copies it around. */
static int handler_ok[K];
static int host_dev;

static int cycle (int dev, size_t bytes, int tag)
{
  char *h = malloc (bytes), *back = malloc (bytes);
  memset (h, tag, bytes);
  void *d = omp_target_alloc (bytes, dev);
  int ok = d != NULL
	   && !omp_target_memcpy (d, h, bytes, 0, 0, dev, omp_get_initial_device ())
	   && !omp_target_memcpy (back, d, bytes, 0, 0, omp_get_initial_device (), dev)
	   && !memcmp (h, back, bytes);
  omp_target_free (d, dev);
  free (h);
  free (back);
  return ok;
}

/* Runs on the host, called from the kernel through reverse offload. */
static void host_cycle (int i)
{
  handler_ok[i] = cycle (host_dev, (size_t) 4096 << (i % 8), i + 1);
}

int main (void)
{
  int dev = omp_get_default_device ();
  host_dev = dev;
  if (omp_get_num_devices () < 1)
    {
      printf ("FAIL no offload device\n");
      return 1;
    }
  int cycles = 0, bad = 0;
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num () == 0)
      {
#pragma omp target
	{
	  for (int i = 0; i < K; i++)
	    {
#pragma omp target device(ancestor: 1) firstprivate(i)
	      host_cycle (i);
	      /* Spin about 1 ms between requests so the kernel stays busy. */
	      double t0 = omp_get_wtime ();
	      while (omp_get_wtime () - t0 < 1e-3)
		;
	    }
	}
	__atomic_store_n (&kernel_done, 1, __ATOMIC_RELEASE);
      }
    else
      {
	while (!__atomic_load_n (&kernel_done, __ATOMIC_ACQUIRE))
	  {
	    if (!cycle (dev, (size_t) 1 << (12 + cycles % 10), cycles & 0x7f))
	      bad++;
	    cycles++;
	  }
      }
  }
  int handlers = 0;
  for (int i = 0; i < K; i++)
    handlers += handler_ok[i];
  if (handlers != K || bad)
    {
      printf ("FAIL %d of %d handler cycles ok, %d of %d thread cycles bad\n", handlers, K,
	      bad, cycles);
      return 1;
    }
  printf ("OK %d handler alloc/free cycles inside the kernel, %d on a second thread during it\n",
	  K, cycles);
  return 0;
}
