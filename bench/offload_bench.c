/* offload_bench.c - micro-benchmarks of an OpenMP offload plugin, run the same way with
 * GCC's stock plugin and ours (bench/device-run.sh alternates them).
 *
 * usage: offload_bench MODE [args]
 *   empty N            median time of N empty `omp target` regions (us)
 *   nowait N           N `target nowait map(tofrom:a[i:1])` + taskwait, issued from an
 *                      OpenMP worker thread; time per region (us), result checked
 *   nomap_worker       `target` without map clauses on an OpenMP worker thread (the
 *                      stock plugin aborts: "invalid device context")
 *   threads T MS K     T host threads each run K target regions that spin MS ms on the
 *                      GPU; prints regions/s and the speed-up over one thread
 *   alloc N BYTES      median omp_target_alloc + omp_target_free (us)
 *   alloc_cycles N     N alloc+free cycles of 1 KiB..4 MiB; device memory growth (MiB)
 *                      between cycle 1000 and cycle N
 *   bw BYTES           host->device and device->host omp_target_memcpy bandwidth
 *                      (GB/s) from malloc'd (pageable) and ompx_gnu_pinned_mem_alloc memory
 *   pinned_alloc N BYTES
 *                      median omp_alloc(BYTES, ompx_gnu_pinned_mem_alloc) + omp_free (us),
 *                      the first (cold) pair, and a mapped target region on one block
 *   pinned_alloc_mt T N BYTES
 *                      T OpenMP threads each do N pinned alloc+free pairs (4 blocks live
 *                      per thread, each filled with the thread's pattern and checked
 *                      before its free, so overlapping blocks are caught), then each
 *                      maps a fresh block into a target region; median per-pair time
 *                      over the threads (us) and pairs per second in all
 * Each result is a line "metric NAME VALUE UNIT"; a wrong result prints "ERROR ..." and
 * exits 1. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "median.h"
#include "gpu_probe.h"


static int mode_empty (int n)
{
  double *t = malloc (n * sizeof *t);
  for (int i = 0; i < n + 10; i++)
    {
      double t0 = omp_get_wtime ();
#pragma omp target
      ;
      if (i >= 10)
        t[i - 10] = omp_get_wtime () - t0;
    }
  printf ("metric empty_target %.2f us\n", median (t, n) * 1e6);
  free (t);
  return 0;
}

static int mode_nowait (int n)
{
  int *a = calloc (n, sizeof *a);
  double best[5];
  for (int rep = 0; rep < 5; rep++)
    {
      double t0 = omp_get_wtime ();
#pragma omp parallel num_threads(4)
#pragma omp single
      {
        for (int i = 0; i < n; i++)
          {
#pragma omp target nowait map(tofrom: a[i:1])
            a[i] += 1;
          }
#pragma omp taskwait
      }
      best[rep] = (omp_get_wtime () - t0) / n;
    }
  for (int i = 0; i < n; i++)
    if (a[i] != 5)
      {
        printf ("ERROR nowait: a[%d] = %d, want 5\n", i, a[i]);
        return 1;
      }
  printf ("metric nowait_per_region %.2f us\n", median (best, 5) * 1e6);
  free (a);
  return 0;
}

static int mode_nomap_worker (void)
{
  int ran = 0;
  /* Thread 1 of the team (never the initial thread) launches a region without map
     clauses, so nothing made the device context current on that thread before.  */
#pragma omp parallel num_threads(2) shared(ran)
  if (omp_get_thread_num () == 1)
    {
#pragma omp target
      ;
      ran = 1;
    }
  printf ("metric nomap_worker_ok %d bool\n", ran);
  return !ran;
}

static void spin_region (double ms)
{
#pragma omp target firstprivate(ms)
  {
    double t0 = omp_get_wtime ();
    while (omp_get_wtime () - t0 < ms * 1e-3)
      ;
  }
}

static int mode_threads (int nthreads, double ms, int k)
{
  double t0 = omp_get_wtime ();
  for (int i = 0; i < k; i++)
    spin_region (ms);
  double one = k / (omp_get_wtime () - t0);
  t0 = omp_get_wtime ();
#pragma omp parallel num_threads(nthreads)
  for (int i = 0; i < k; i++)
    spin_region (ms);
  double many = nthreads * k / (omp_get_wtime () - t0);
  printf ("metric threads1_regions_per_s %.1f 1/s\n", one);
  printf ("metric threads%d_regions_per_s %.1f 1/s\n", nthreads, many);
  printf ("metric threads%d_speedup %.2f x\n", nthreads, many / one);
  return 0;
}

static int mode_alloc (int n, size_t bytes)
{
  int dev = omp_get_default_device ();
  double *t = malloc (n * sizeof *t);
  for (int i = 0; i < n + 10; i++)
    {
      double t0 = omp_get_wtime ();
      void *p = omp_target_alloc (bytes, dev);
      if (!p)
        {
          printf ("ERROR alloc: omp_target_alloc returned NULL\n");
          return 1;
        }
      omp_target_free (p, dev);
      if (i >= 10)
        t[i - 10] = omp_get_wtime () - t0;
    }
  printf ("metric alloc_free_%zuB %.2f us\n", bytes, median (t, n) * 1e6);
  free (t);
  return 0;
}


/* N cycles of omp_target_alloc + omp_target_free of sizes 1 KiB..4 MiB (varying),
   with a target region each 1000 cycles: device memory after the cycles minus after
   the first 1000 (a leak or unbounded cache shows up as a positive number). */
static int mode_alloc_cycles (int n)
{
  int dev = omp_get_default_device ();
  double before = 0;
  for (int i = 0; i < n; i++)
    {
      size_t bytes = (size_t) 1024 << (i % 13);
      void *p = omp_target_alloc (bytes, dev);
      if (!p)
        {
          printf ("ERROR alloc_cycles: omp_target_alloc(%zu) returned NULL at %d\n", bytes, i);
          return 1;
        }
      omp_target_free (p, dev);
      if (i % 1000 == 999)
        {
          if (!on_gpu ())
            {
              printf ("ERROR alloc_cycles: target region did not run on the device\n");
              return 1;
            }
          if (i == 999)
            before = free_mib ();
        }
    }
  double after = free_mib ();
  if (before < 0 || after < 0)
    {
      printf ("ERROR alloc_cycles: cuMemGetInfo unavailable\n");
      return 1;
    }
  printf ("metric alloc_cycles_growth_%d %.1f MiB\n", n, before - after);
  return 0;
}

static int bw_one (const char *kind, char *h, size_t bytes)
{
  int dev = omp_get_default_device (), host = omp_get_initial_device ();
  char *d = omp_target_alloc (bytes, dev);
  if (!d)
    {
      printf ("ERROR bw: no device memory\n");
      return 1;
    }
  memset (h, 7, bytes);
  /* Small copies take microseconds: the median of many, after one of each untimed. */
  int reps = bytes <= (1 << 20) ? 101 : 3;
  double up[101], down[101];
  omp_target_memcpy (d, h, bytes, 0, 0, dev, host);
  omp_target_memcpy (h, d, bytes, 0, 0, host, dev);
  for (int r = 0; r < reps; r++)
    {
      double t0 = omp_get_wtime ();
      omp_target_memcpy (d, h, bytes, 0, 0, dev, host);
      up[r] = bytes / (omp_get_wtime () - t0) / 1e9;
      h[0] = h[bytes - 1] = 0;
      t0 = omp_get_wtime ();
      omp_target_memcpy (h, d, bytes, 0, 0, host, dev);
      down[r] = bytes / (omp_get_wtime () - t0) / 1e9;
      if (h[0] != 7 || h[bytes - 1] != 7)
        {
          printf ("ERROR bw: data not copied back\n");
          return 1;
        }
    }
  /* Every byte, not just the ends: a pattern up, cleared, and back. */
  for (size_t i = 0; i < bytes; i++)
    h[i] = (char) (i * 131 % 251);
  omp_target_memcpy (d, h, bytes, 0, 0, dev, host);
  memset (h, 0, bytes);
  omp_target_memcpy (h, d, bytes, 0, 0, host, dev);
  for (size_t i = 0; i < bytes; i++)
    if (h[i] != (char) (i * 131 % 251))
      {
        printf ("ERROR bw: byte %zu of %zu wrong after a round trip\n", i, bytes);
        return 1;
      }
  printf ("metric h2d_%s_%zuB %.2f GB/s\n", kind, bytes, median (up, reps));
  printf ("metric d2h_%s_%zuB %.2f GB/s\n", kind, bytes, median (down, reps));
  omp_target_free (d, dev);
  return 0;
}

static int mode_bw (size_t bytes)
{
  char *h = malloc (bytes);
  int rc = bw_one ("pageable", h, bytes);
  free (h);
  char *p = omp_alloc (bytes, ompx_gnu_pinned_mem_alloc);
  if (!p)
    {
      printf ("ERROR bw: ompx_gnu_pinned_mem_alloc failed\n");
      return 1;
    }
  rc |= bw_one ("pinned", p, bytes);
  omp_free (p, ompx_gnu_pinned_mem_alloc);
  return rc;
}

/* Fills the ends of p (at most 256 bytes each) with c; check_ends verifies them. */
static void fill_ends (unsigned char *p, size_t bytes, unsigned char c)
{
  size_t k = bytes < 256 ? bytes : 256;
  memset (p, c, k);
  memset (p + bytes - k, c, k);
}

static int check_ends (const unsigned char *p, size_t bytes, unsigned char c)
{
  size_t k = bytes < 256 ? bytes : 256;
  for (size_t i = 0; i < k; i++)
    if (p[i] != c || p[bytes - 1 - i] != c)
      return 0;
  return 1;
}

/* A target region increments every int of p (mapped tofrom); 1 if all came back +1. */
static int map_check (int *p, size_t n, int base)
{
  for (size_t i = 0; i < n; i++)
    p[i] = base + (int) i;
#pragma omp target map(tofrom: p[0:n])
  for (size_t i = 0; i < n; i++)
    p[i] += 1;
  for (size_t i = 0; i < n; i++)
    if (p[i] != base + (int) i + 1)
      return 0;
  return 1;
}

static int mode_pinned_alloc (int n, size_t bytes)
{
  double t0 = omp_get_wtime ();
  void *p = omp_alloc (bytes, ompx_gnu_pinned_mem_alloc);
  omp_free (p, ompx_gnu_pinned_mem_alloc);
  double first = omp_get_wtime () - t0;
  if (!p)
    {
      printf ("ERROR pinned_alloc: omp_alloc(%zu, ompx_gnu_pinned_mem_alloc) returned NULL\n", bytes);
      return 1;
    }
  double *t = malloc (n * sizeof *t);
  for (int i = 0; i < n + 10; i++)
    {
      t0 = omp_get_wtime ();
      p = omp_alloc (bytes, ompx_gnu_pinned_mem_alloc);
      if (!p)
        {
          printf ("ERROR pinned_alloc: NULL at iteration %d\n", i);
          return 1;
        }
      omp_free (p, ompx_gnu_pinned_mem_alloc);
      if (i >= 10)
        t[i - 10] = omp_get_wtime () - t0;
    }
  int *q = omp_alloc (bytes, ompx_gnu_pinned_mem_alloc);
  if (!q || !map_check (q, bytes / sizeof (int), 12345))
    {
      printf ("ERROR pinned_alloc: pinned block not usable by a target region\n");
      return 1;
    }
  omp_free (q, ompx_gnu_pinned_mem_alloc);
  printf ("metric pinned_alloc_first_%zuB %.2f us\n", bytes, first * 1e6);
  printf ("metric pinned_alloc_free_%zuB %.2f us\n", bytes, median (t, n) * 1e6);
  free (t);
  return 0;
}

static int mode_pinned_alloc_mt (int nthreads, int n, size_t bytes)
{
  double *per = calloc (nthreads, sizeof *per);
  int bad = 0;
  double t0 = omp_get_wtime ();
#pragma omp parallel num_threads(nthreads) reduction(+: bad)
  {
    int me = omp_get_thread_num ();
    unsigned char pat = (unsigned char) (me + 1);
    unsigned char *live[4] = { 0 };
    double s = omp_get_wtime ();
    for (int i = 0; i < n && !bad; i++)
      {
        unsigned char **slot = &live[i % 4];
        if (*slot)
          {
            if (!check_ends (*slot, bytes, pat))
              bad++;
            omp_free (*slot, ompx_gnu_pinned_mem_alloc);
          }
        *slot = omp_alloc (bytes, ompx_gnu_pinned_mem_alloc);
        if (!*slot)
          bad++;
        else
          fill_ends (*slot, bytes, pat);
      }
    for (int k = 0; k < 4; k++)
      if (live[k])
        {
          if (!check_ends (live[k], bytes, pat))
            bad++;
          omp_free (live[k], ompx_gnu_pinned_mem_alloc);
        }
    per[me] = (omp_get_wtime () - s) / n;
    int *q = omp_alloc (bytes, ompx_gnu_pinned_mem_alloc);
    if (!q || !map_check (q, bytes / sizeof (int), 1000 * me))
      bad++;
    omp_free (q, ompx_gnu_pinned_mem_alloc);
  }
  double wall = omp_get_wtime () - t0;
  if (bad)
    {
      printf ("ERROR pinned_alloc_mt: %d failed, overlapping or unusable allocation(s)\n", bad);
      return 1;
    }
  printf ("metric pinned_alloc_mt%d_free_%zuB %.2f us\n", nthreads, bytes,
          median (per, nthreads) * 1e6);
  printf ("metric pinned_alloc_mt%d_pairs_per_s_%zuB %.0f 1/s\n", nthreads, bytes,
          (double) nthreads * n / wall);
  free (per);
  return 0;
}

int main (int argc, char **argv)
{
  if (argc < 2)
    {
      fprintf (stderr, "usage: %s empty|nowait|nomap_worker|threads|alloc|alloc_cycles|bw|"
               "pinned_alloc|pinned_alloc_mt ...\n", argv[0]);
      return 2;
    }
  const char *m = argv[1];
  double t0 = omp_get_wtime ();
  int dev = on_gpu ();
  printf ("metric first_target_region %.2f ms\n", (omp_get_wtime () - t0) * 1e3);
  if (!dev)
    {
      printf ("ERROR not running on a GPU\n");
      return 1;
    }
  if (!strcmp (m, "empty"))
    return mode_empty (argc > 2 ? atoi (argv[2]) : 1000);
  if (!strcmp (m, "nowait"))
    return mode_nowait (argc > 2 ? atoi (argv[2]) : 1000);
  if (!strcmp (m, "nomap_worker"))
    return mode_nomap_worker ();
  if (!strcmp (m, "threads"))
    return mode_threads (argc > 2 ? atoi (argv[2]) : 8, argc > 3 ? atof (argv[3]) : 1.0,
                         argc > 4 ? atoi (argv[4]) : 50);
  if (!strcmp (m, "alloc"))
    return mode_alloc (argc > 2 ? atoi (argv[2]) : 1000, argc > 3 ? strtoull (argv[3], 0, 0) : 1 << 20);
  if (!strcmp (m, "alloc_cycles"))
    return mode_alloc_cycles (argc > 2 ? atoi (argv[2]) : 100000);
  if (!strcmp (m, "pinned_alloc"))
    return mode_pinned_alloc (argc > 2 ? atoi (argv[2]) : 1000,
                              argc > 3 ? strtoull (argv[3], 0, 0) : 4096);
  if (!strcmp (m, "pinned_alloc_mt"))
    return mode_pinned_alloc_mt (argc > 2 ? atoi (argv[2]) : 8, argc > 3 ? atoi (argv[3]) : 1000,
                                 argc > 4 ? strtoull (argv[4], 0, 0) : 4096);
  if (!strcmp (m, "bw"))
    return mode_bw (argc > 2 ? strtoull (argv[2], 0, 0) : 1UL << 30);
  fprintf (stderr, "unknown mode %s\n", m);
  return 2;
}
