/* acc_bench.c - micro-benchmarks of the OpenACC side of an offload plugin, run the same
 * way with GCC's stock plugin and ours (bench/device-run.sh alternates them).
 *
 * usage: acc_bench [--allow-host] MODE N
 *   sync N      median time of N `acc parallel num_gangs(1) present(a)` (us)
 *   async N     N `acc parallel async(1) present(a)` enqueued back to back, then one
 *               wait: median over 20 batches of the enqueue time per launch (us), and
 *               the time per launch including the wait; the result is checked
 *   asyncdata N as async, with `copyin(b[0:16])` per launch (a mapping per region)
 *   copy BYTES N        `acc parallel num_gangs(1) copyin(x[0:BYTES/8]) copyout(s[0:1])`,
 *               the kernel writes the sum of x's first and last element to s: median
 *               over 20 batches of N of the time per region -> acc_copy_<BYTES>B_sync
 *               (us); every result checked (x's ends change each region, s is poisoned)
 *   copy_async BYTES N  the same regions with async(1), N back to back, then `acc wait(1)`:
 *               acc_copy_<BYTES>B_async_enqueue and acc_copy_<BYTES>B_async_per_launch
 *               as for async; s checked after each wait (x changes between batches)
 *   async_bw BYTES      acc_memcpy_to_device_async and acc_memcpy_from_device_async of
 *               BYTES between malloc'd (pageable) memory and acc_malloc'd memory on
 *               queue 1, each followed by acc_wait(1) (the copy as a program relies on
 *               it): median GB/s over 3 copies each way (101 up to 1 MiB) after one of
 *               each untimed -> acc_async_h2d_pageable_<BYTES>B and
 *               acc_async_d2h_pageable_<BYTES>B, the OpenACC counterparts of
 *               offload_bench's `bw BYTES` rows h2d_pageable_<BYTES>B and
 *               d2h_pageable_<BYTES>B (omp_target_memcpy, the OpenMP path); every byte
 *               checked after a round trip
 *   --allow-host  run on the host device when there is no NVIDIA one (checks only)
 * Each result is a line "metric NAME VALUE UNIT"; a wrong result prints "ERROR ..." and
 * exits 1. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include "median.h"

static double now (void)
{
  struct timeval tv;
  gettimeofday (&tv, NULL);
  return tv.tv_sec + 1e-6 * tv.tv_usec;
}

/* A finer clock for the bandwidth mode (a small copy takes about a microsecond). */
static double now_fine (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define BATCHES 20
#define POISON (-1.0e300)

/* The copy modes: regions with a copyin of BYTES and a copyout of one double. */
static int mode_copy (size_t bytes, int n, int async)
{
  size_t ne = bytes / sizeof (double);
  if (ne < 1)
    ne = 1;
  bytes = ne * sizeof (double);
  double *x = calloc (ne, sizeof *x), s[1], t[BATCHES], tw[BATCHES];
  long seq = 0;
  for (int k = 0; k < BATCHES + 1; k++)
    {
      double t0 = now (), t1;
      if (!async)
	{
	  for (int i = 0; i < n; i++)
	    {
	      seq++;
	      x[0] = (double) seq;
	      x[ne - 1] = (double) (2 * seq + 1);
	      double want = x[0] + x[ne - 1];
	      s[0] = POISON;
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) copyin(x[0:ne]) copyout(s[0:1])
	      s[0] = x[0] + x[ne - 1];
	      if (s[0] != want)
		{
		  printf ("ERROR copy: region %ld gave %g, want %g\n", seq, s[0], want);
		  return 1;
		}
	    }
	  t1 = now ();
	}
      else
	{
	  /* The host must not write x while a queued copyin may still read it: the ends
	     change once per batch. */
	  seq++;
	  x[0] = (double) seq;
	  x[ne - 1] = (double) (2 * seq + 1);
	  double want = x[0] + x[ne - 1];
	  s[0] = POISON;
	  for (int i = 0; i < n; i++)
	    {
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) copyin(x[0:ne]) copyout(s[0:1]) async(1)
	      s[0] = x[0] + x[ne - 1];
	    }
	  t1 = now ();
#pragma acc wait(1)
	  if (s[0] != want)
	    {
	      printf ("ERROR copy_async: batch %ld gave %g, want %g\n", seq, s[0], want);
	      return 1;
	    }
	}
      double t2 = now ();
      if (k > 0)
	{
	  t[k - 1] = (t1 - t0) / n;
	  tw[k - 1] = (t2 - t0) / n;
	}
    }
  free (x);
  if (!async)
    printf ("metric acc_copy_%zuB_sync %.2f us\n", bytes, median (t, BATCHES) * 1e6);
  else
    {
      printf ("metric acc_copy_%zuB_async_enqueue %.2f us\n", bytes, median (t, BATCHES) * 1e6);
      printf ("metric acc_copy_%zuB_async_per_launch %.2f us\n", bytes,
	      median (tw, BATCHES) * 1e6);
    }
  return 0;
}

/* The async_bw mode: OpenACC async-queue copies of a pageable buffer, in GB/s. */
static int mode_async_bw (size_t bytes)
{
  const int q = 1;
  if (bytes < 2)
    bytes = 2;
  unsigned char *h = malloc (bytes);
  void *d = acc_malloc (bytes);
  if (!h || !d)
    {
      printf ("ERROR async_bw: no memory for %zu bytes\n", bytes);
      return 1;
    }
  memset (h, 7, bytes);
  int reps = bytes <= (1 << 20) ? 101 : 3;
  double up[101], down[101];
  acc_memcpy_to_device_async (d, h, bytes, q);
  acc_wait (q);
  acc_memcpy_from_device_async (h, d, bytes, q);
  acc_wait (q);
  for (int r = 0; r < reps; r++)
    {
      double t0 = now_fine ();
      acc_memcpy_to_device_async (d, h, bytes, q);
      acc_wait (q);
      up[r] = bytes / (now_fine () - t0) / 1e9;
      h[0] = h[bytes - 1] = 0;
      t0 = now_fine ();
      acc_memcpy_from_device_async (h, d, bytes, q);
      acc_wait (q);
      down[r] = bytes / (now_fine () - t0) / 1e9;
      if (h[0] != 7 || h[bytes - 1] != 7)
	{
	  printf ("ERROR async_bw: data not copied back\n");
	  return 1;
	}
    }
  /* Every byte, not just the ends: a pattern up, cleared, and back. */
  for (size_t i = 0; i < bytes; i++)
    h[i] = (unsigned char) (i * 131 % 251);
  acc_memcpy_to_device_async (d, h, bytes, q);
  acc_wait (q);
  memset (h, 0, bytes);
  acc_memcpy_from_device_async (h, d, bytes, q);
  acc_wait (q);
  for (size_t i = 0; i < bytes; i++)
    if (h[i] != (unsigned char) (i * 131 % 251))
      {
	printf ("ERROR async_bw: byte %zu of %zu wrong after a round trip\n", i, bytes);
	return 1;
      }
  printf ("metric acc_async_h2d_pageable_%zuB %.2f GB/s\n", bytes, median (up, reps));
  printf ("metric acc_async_d2h_pageable_%zuB %.2f GB/s\n", bytes, median (down, reps));
  acc_free (d);
  free (h);
  return 0;
}

int main (int argc, char **argv)
{
  int allow_host = 0;
  if (argc > 1 && !strcmp (argv[1], "--allow-host"))
    {
      allow_host = 1;
      argv++, argc--;
    }
  int copy = argc > 1 && (!strcmp (argv[1], "copy") || !strcmp (argv[1], "copy_async"));
  int bw = argc > 1 && !strcmp (argv[1], "async_bw");
  if (argc < 3 || (copy && argc < 4))
    {
      fprintf (stderr, "usage: acc_bench [--allow-host] sync|async|asyncdata N | "
	       "copy|copy_async BYTES N | async_bw BYTES\n");
      return 2;
    }
  int n = atoi (argv[copy ? 3 : 2]);
  if (n < 1)
    n = 1;
  static int a[1];
  static int b[16];
  a[0] = 0;
  for (int i = 0; i < 16; i++)
    b[i] = 1;
  if (acc_get_num_devices (acc_device_nvidia) < 1 && !allow_host)
    {
      printf ("ERROR no NVIDIA device\n");
      return 1;
    }
  acc_init (acc_get_num_devices (acc_device_nvidia) < 1 ? acc_device_host : acc_device_nvidia);
  if (bw)
    return mode_async_bw (strtoull (argv[2], 0, 0));
  if (copy)
    return mode_copy (strtoull (argv[2], 0, 0), n, argv[1][4] == '_');
#pragma acc enter data copyin(a[0:1])
  double *t = malloc ((n > BATCHES ? n : BATCHES) * sizeof *t);
  double *tw = malloc (BATCHES * sizeof *tw);
  long expect = 0;
  if (argv[1][0] == 's')
    {
      for (int i = 0; i < n + 10; i++)
	{
	  double t0 = now ();
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) present(a[0:1])
	  a[0] += 1;
	  if (i >= 10)
	    t[i - 10] = now () - t0;
	}
      expect = n + 10;
      printf ("metric acc_sync_launch %.2f us\n", median (t, n) * 1e6);
    }
  else
    {
      int data = argv[1][5] == 'd';
      for (int k = 0; k < BATCHES + 1; k++)
	{
	  double t0 = now ();
	  for (int i = 0; i < n; i++)
	    {
	      if (data)
		{
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) present(a[0:1]) copyin(b[0:16]) async(1)
		  a[0] += b[i % 16];
		}
	      else
		{
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) present(a[0:1]) async(1)
		  a[0] += 1;
		}
	    }
	  double t1 = now ();
#pragma acc wait(1)
	  double t2 = now ();
	  if (k > 0)
	    {
	      t[k - 1] = (t1 - t0) / n;
	      tw[k - 1] = (t2 - t0) / n;
	    }
	}
      expect = (long) n * (BATCHES + 1);
      printf ("metric acc_%s_enqueue %.2f us\n", data ? "async_data" : "async",
	      median (t, BATCHES) * 1e6);
      printf ("metric acc_%s_per_launch %.2f us\n", data ? "async_data" : "async",
	      median (tw, BATCHES) * 1e6);
    }
#pragma acc exit data copyout(a[0:1])
  if (a[0] != expect)
    {
      printf ("ERROR a = %d, expected %ld\n", a[0], expect);
      return 1;
    }
  return 0;
}
