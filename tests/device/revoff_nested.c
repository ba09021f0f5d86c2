/* revoff_nested.c - a reverse-offload host function that itself launches a target
 * region (with a map) on the device whose kernel is waiting for it, and requests
 * from several concurrently running kernels (`target nowait`): nothing deadlocks and
 * every result is right. Strictly, OpenMP forbids constructs inside an
 * ancestor region; a runtime should still not hang. Built by tests/device/build.sh,
 * run by tests/device/run.sh under a timeout. Prints "OK ..." or "FAIL ..." (exit 1). */
#include <omp.h>
#include <stdio.h>

#pragma omp requires reverse_offload
#include "gpu_probe.h"

#define K 20
#define KERNELS 4
#define PER 500
static int nested_ok[K];
static int calls[KERNELS];

/* Host only: launches a target region from the handler.  */
static void nested (int i)
{
  int x = i;
#pragma omp target map(tofrom: x)
  x = x * 3 + 1;
  nested_ok[i] = x == i * 3 + 1;
}

static void bump (int k)
{
  __atomic_fetch_add (&calls[k], 1, __ATOMIC_RELAXED);
}

int main (void)
{
  if (!on_gpu ())
    {
      printf ("FAIL not running on a GPU\n");
      return 1;
    }
#pragma omp target
  for (int i = 0; i < K; i++)
    {
#pragma omp target device(ancestor: 1) firstprivate(i)
      nested (i);
    }
  int bad = 0;
  for (int i = 0; i < K; i++)
    bad += !nested_ok[i];
  if (bad)
    {
      printf ("FAIL %d of %d nested target regions wrong\n", bad, K);
      return 1;
    }
#pragma omp parallel num_threads(1)
#pragma omp single
  {
    for (int k = 0; k < KERNELS; k++)
      {
#pragma omp target nowait firstprivate(k)
	for (int i = 0; i < PER; i++)
	  {
#pragma omp target device(ancestor: 1) firstprivate(k)
	    bump (k);
	  }
      }
#pragma omp taskwait
  }
  for (int k = 0; k < KERNELS; k++)
    if (calls[k] != PER)
      {
	printf ("FAIL kernel %d: %d host calls, want %d\n", k, calls[k], PER);
	return 1;
      }
  printf ("OK %d nested target regions from handlers, %d x %d requests from concurrent kernels\n",
	  K, KERNELS, PER);
  return 0;
}
