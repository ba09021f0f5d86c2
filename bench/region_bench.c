/* region_bench.c - real OpenMP target-region shapes, run the same way with GCC's stock
 * plugin and ours (bench/device-run.sh, step `region`, alternates them): what a program
 * pays per region for its maps, updates and launches, not one operation alone.
 *
 * usage: region_bench [--allow-host] MODE [ARGS]
 *   map BYTES [N]     `target map(to: a[0:BYTES/8]) map(from: s)`: the kernel reads the
 *                     array's first and last element and writes their sum to s
 *                     -> region_to_<BYTES>B (us per region)
 *   tofrom [N]        `target map(tofrom: x)`, x += 1 -> region_tofrom_scalar (us)
 *   copy8 [N]         omp_target_memcpy of 8 bytes host->device and device->host
 *                     (the plugin's host2dev/dev2host alone) -> copy_h2d_8B, copy_d2h_8B
 *   update BYTES [N]  inside `target data map(alloc: a[0:BYTES/8])`: `target update to`
 *                     alone, `target update from` alone, and the cycle update to +
 *                     `target` (reads and writes the ends of a) + update from
 *                     -> update_to_<BYTES>B, update_from_<BYTES>B, update_cycle_<BYTES>B
 *   teams [N]         `target teams distribute parallel for map(tofrom: x[0:2^20])`
 *                     doubles, x[i] += 1 -> region_teams_tofrom_8MiB (us per region)
 *   jacobi SIZE [IT]  2-D Jacobi sweep over SIZE x SIZE doubles (default 1024) inside
 *                     `target data`, periodic in the row direction through the host: each
 *                     iteration `target update from` the first and last interior rows,
 *                     the host copies them into the opposite halo rows, `target update
 *                     to` the two halo rows, one sweep kernel (`teams distribute parallel
 *                     for collapse(2) reduction(max:)` with the convergence value
 *                     map(tofrom:)) and one copy-back kernel -> jacobi_<SIZE>_iter (us
 *                     per iteration); IT iterations per batch (default 10). The whole
 *                     run is replayed on the host and every iteration's convergence
 *                     value and the final grid compared
 *   threads T [N]     T host threads (default 8) each run N (default 500) regions of the
 *                     `map 4096` shape, each with its own arrays, after one thread alone
 *                     -> region_to_4096B_threads1_per_s, region_to_4096B_threads<T>_per_s
 *                     (regions per second over all threads) and
 *                     region_to_4096B_threads<T>_speedup (median of 5 rounds each)
 *   multi [U [N [K]]] the same work on one device and spread over all D visible devices
 *                     (D >= 2), one host thread per device: U work units (default 64,
 *                     rounded down to a multiple of D), each a region `target teams
 *                     distribute parallel for map(to: x[0:N]) map(from: y[0:N])` over
 *                     N 32-bit words (default 2^20) whose kernel runs K steps (default
 *                     20000) of y = y * A + C (A and C given at run time) per word; the
 *                     host checks every word of every unit against the closed form
 *                     (A^K, C (A^K - 1) / (A - 1) mod 2^32). One device: one thread runs
 *                     all U units on device 0; D devices: thread d runs U/D of them on
 *                     device d. Median of 5 rounds each (alternating), after one
 *                     warm-up unit per device -> multi_device_1dev_per_s,
 *                     multi_device_<D>dev_per_s (units per second) and
 *                     multi_device_speedup_<D> (the ratio, x); with fewer than 2 devices
 *                     a "#" line says so and no metric is printed
 *   --allow-host      go on when target regions run on the host (checks only: the
 *                     numbers are then host numbers)
 * N is the number of regions per batch (defaults per mode); the time per region is the
 * median over 20 batches after one warm-up batch. Each result is a line "metric NAME
 * VALUE UNIT". Every region's result is checked (the host poisons what the device must
 * write and compares it with what the data implies); a wrong one prints "ERROR ..." and
 * the program exits 1, as it does when regions do not run on the GPU (checked before
 * and after the mode) without --allow-host. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "median.h"
#include "gpu_probe.h"

#define BATCHES 20
#define POISON (-1.0e300)

/* Whether target regions run on a device. On the host fallback (--allow-host) the
   host's array is the device's, so the update modes cannot poison their copy. */
static int on_device;

/* The regions of the map/threads modes: s = a[0] + a[n-1], computed on the device. */
static double map_region (const double *a, size_t n)
{
  double s = POISON;
#pragma omp target map(to: a[0:n]) map(from: s)
  s = a[0] + a[n - 1];
  return s;
}

/* One batch of K map regions on array a of n doubles; 0 if a result was wrong. The
   array's ends change every region, so each result says the region saw fresh data. */
static int map_batch (double *a, size_t n, int k, long *seq)
{
  for (int i = 0; i < k; i++)
    {
      long v = ++*seq;
      a[0] = (double) v;
      a[n - 1] = (double) (2 * v + 1);
      double want = a[0] + a[n - 1];
      double s = map_region (a, n);
      if (s != want)
        {
          printf ("ERROR map: region %ld of %zu doubles gave %g, want %g\n", v, n, s, want);
          return 0;
        }
    }
  return 1;
}

static int mode_map (size_t bytes, int k)
{
  size_t n = bytes / sizeof (double);
  if (n < 1)
    n = 1;
  double *a = malloc (n * sizeof *a), t[BATCHES];
  for (size_t i = 0; i < n; i++)
    a[i] = (double) i;
  long seq = 0;
  for (int b = 0; b < BATCHES + 1; b++)
    {
      double t0 = omp_get_wtime ();
      if (!map_batch (a, n, k, &seq))
        return 1;
      if (b > 0)
        t[b - 1] = (omp_get_wtime () - t0) / k;
    }
  printf ("metric region_to_%zuB %.2f us\n", n * sizeof (double), median (t, BATCHES) * 1e6);
  free (a);
  return 0;
}

static int mode_tofrom (int k)
{
  double x = 0, t[BATCHES];
  long want = 0;
  for (int b = 0; b < BATCHES + 1; b++)
    {
      double t0 = omp_get_wtime ();
      for (int i = 0; i < k; i++)
        {
#pragma omp target map(tofrom: x)
          x += 1;
          if (x != (double) ++want)
            {
              printf ("ERROR tofrom: x = %g after %ld regions\n", x, want);
              return 1;
            }
        }
      if (b > 0)
        t[b - 1] = (omp_get_wtime () - t0) / k;
    }
  printf ("metric region_tofrom_scalar %.2f us\n", median (t, BATCHES) * 1e6);
  return 0;
}

static int mode_copy8 (int k)
{
  int dev = omp_get_default_device (), host = omp_get_initial_device ();
  double *d = omp_target_alloc (sizeof (double), dev), h, up[BATCHES], down[BATCHES];
  if (!d)
    {
      printf ("ERROR copy8: omp_target_alloc failed\n");
      return 1;
    }
  long seq = 0;
  for (int b = 0; b < BATCHES + 1; b++)
    {
      double t0 = omp_get_wtime ();
      for (int i = 0; i < k; i++)
        {
          h = (double) ++seq;
          omp_target_memcpy (d, &h, sizeof h, 0, 0, dev, host);
        }
      double t1 = omp_get_wtime ();
      for (int i = 0; i < k; i++)
        {
          h = POISON;
          omp_target_memcpy (&h, d, sizeof h, 0, 0, host, dev);
          if (h != (double) seq)
            {
              printf ("ERROR copy8: read back %g, want %ld\n", h, seq);
              return 1;
            }
        }
      double t2 = omp_get_wtime ();
      if (b > 0)
        {
          up[b - 1] = (t1 - t0) / k;
          down[b - 1] = (t2 - t1) / k;
        }
    }
  /* The last value must also be what a region on the device sees. */
  double seen = POISON;
#pragma omp target is_device_ptr(d) map(from: seen)
  seen = d[0];
  if (seen != (double) seq)
    {
      printf ("ERROR copy8: the device holds %g, want %ld\n", seen, seq);
      return 1;
    }
  omp_target_free (d, dev);
  printf ("metric copy_h2d_8B %.2f us\n", median (up, BATCHES) * 1e6);
  printf ("metric copy_d2h_8B %.2f us\n", median (down, BATCHES) * 1e6);
  return 0;
}

static int mode_update (size_t bytes, int k)
{
  size_t n = bytes / sizeof (double);
  if (n < 2)
    n = 2;
  bytes = n * sizeof (double);
  double *a = malloc (bytes), to[BATCHES], from[BATCHES], cyc[BATCHES];
  for (size_t i = 0; i < n; i++)
    a[i] = 0;
  long seq = 0;
  int bad = 0;
#pragma omp target data map(alloc: a[0:n])
  {
    /* update to alone: the ends change every time; after each batch a region reads them
       back (untimed) and they must be the last values sent. */
    for (int b = 0; b < BATCHES + 1 && !bad; b++)
      {
        double t0 = omp_get_wtime ();
        for (int i = 0; i < k; i++)
          {
            ++seq;
            a[0] = (double) seq;
            a[n - 1] = (double) -seq;
#pragma omp target update to(a[0:n])
          }
        if (b > 0)
          to[b - 1] = (omp_get_wtime () - t0) / k;
        double e0 = POISON, e1 = POISON;
#pragma omp target map(from: e0, e1)
        {
          e0 = a[0];
          e1 = a[n - 1];
        }
        if (e0 != (double) seq || e1 != (double) -seq)
          {
            printf ("ERROR update to: the device holds %g, %g, want %ld, %ld\n", e0, e1, seq, -seq);
            bad = 1;
          }
      }
    /* update from alone: the device's array holds a pattern written by a region; the
       host poisons its copy before each update and checks the pattern came back. */
#pragma omp target
    for (size_t i = 0; i < n; i++)
      a[i] = (double) (i % 1000) + 0.5;
    for (int b = 0; b < BATCHES + 1 && !bad; b++)
      {
        double t0 = omp_get_wtime ();
        for (int i = 0; i < k && !bad; i++)
          {
            if (on_device)
              a[0] = a[n / 2] = a[n - 1] = POISON;
#pragma omp target update from(a[0:n])
            if (a[0] != 0.5 || a[n / 2] != (double) (n / 2 % 1000) + 0.5
                || a[n - 1] != (double) ((n - 1) % 1000) + 0.5)
              {
                printf ("ERROR update from: got %g %g %g\n", a[0], a[n / 2], a[n - 1]);
                bad = 1;
              }
          }
        if (b > 0)
          from[b - 1] = (omp_get_wtime () - t0) / k;
      }
    /* the cycle: send, the device transforms the ends, fetch and check. */
    for (int b = 0; b < BATCHES + 1 && !bad; b++)
      {
        double t0 = omp_get_wtime ();
        for (int i = 0; i < k && !bad; i++)
          {
            ++seq;
            a[0] = (double) seq;
            a[n - 1] = (double) (2 * seq);
#pragma omp target update to(a[0:n])
#pragma omp target
            {
              a[0] = a[0] + a[n - 1];
              a[n - 1] = -a[n - 1];
            }
            if (on_device)
              a[0] = a[n - 1] = POISON;
#pragma omp target update from(a[0:n])
            if (a[0] != (double) (3 * seq) || a[n - 1] != (double) (-2 * seq))
              {
                printf ("ERROR update cycle: got %g, %g, want %ld, %ld\n", a[0], a[n - 1],
                        3 * seq, -2 * seq);
                bad = 1;
              }
          }
        if (b > 0)
          cyc[b - 1] = (omp_get_wtime () - t0) / k;
      }
  }
  free (a);
  if (bad)
    return 1;
  printf ("metric update_to_%zuB %.2f us\n", bytes, median (to, BATCHES) * 1e6);
  printf ("metric update_from_%zuB %.2f us\n", bytes, median (from, BATCHES) * 1e6);
  printf ("metric update_cycle_%zuB %.2f us\n", bytes, median (cyc, BATCHES) * 1e6);
  return 0;
}

static int mode_teams (int k)
{
  const size_t n = (size_t) 1 << 20;
  double *x = malloc (n * sizeof *x), t[BATCHES];
  for (size_t i = 0; i < n; i++)
    x[i] = (double) (i % 4096);
  long regions = 0;
  for (int b = 0; b < BATCHES + 1; b++)
    {
      double t0 = omp_get_wtime ();
      for (int i = 0; i < k; i++)
        {
#pragma omp target teams distribute parallel for map(tofrom: x[0:n])
          for (size_t j = 0; j < n; j++)
            x[j] += 1.0;
          regions++;
          /* Spot checks per region (cheap); every element after the last batch. */
          if (x[0] != (double) regions || x[n - 1] != (double) ((n - 1) % 4096 + regions))
            {
              printf ("ERROR teams: x[0] = %g, x[n-1] = %g after %ld regions\n", x[0], x[n - 1],
                      regions);
              return 1;
            }
        }
      if (b > 0)
        t[b - 1] = (omp_get_wtime () - t0) / k;
    }
  for (size_t j = 0; j < n; j++)
    if (x[j] != (double) (j % 4096 + regions))
      {
        printf ("ERROR teams: x[%zu] = %g, want %ld\n", j, x[j], (long) (j % 4096 + regions));
        return 1;
      }
  printf ("metric region_teams_tofrom_8MiB %.2f us\n", median (t, BATCHES) * 1e6);
  free (x);
  return 0;
}

/* The Jacobi grid: SIZE x SIZE doubles, row-major. Columns 0 and SIZE-1 are fixed
   (1 and 0); rows 0 and SIZE-1 are halo rows that receive rows SIZE-2 and 1 (periodic),
   as an MPI code's halo exchange with its neighbours would. */
static void jacobi_init (double *u, double *v, int m)
{
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++)
      u[(size_t) i * m + j] = v[(size_t) i * m + j] = j == 0 ? 1.0 : 0.0;
}

static void halo_exchange (double *u, int m)
{
  memcpy (&u[0], &u[(size_t) (m - 2) * m], m * sizeof *u);
  memcpy (&u[(size_t) (m - 1) * m], &u[(size_t) m], m * sizeof *u);
}

/* One iteration on the host, the same arithmetic in the same order as the device's. */
static double jacobi_host_iter (double *u, double *v, int m)
{
  double diff = 0;
  halo_exchange (u, m);
  for (int i = 1; i < m - 1; i++)
    for (int j = 1; j < m - 1; j++)
      {
        size_t c = (size_t) i * m + j;
        v[c] = 0.25 * (u[c - m] + u[c + m] + u[c - 1] + u[c + 1]);
        double d = v[c] > u[c] ? v[c] - u[c] : u[c] - v[c];
        diff = d > diff ? d : diff;
      }
  for (int i = 1; i < m - 1; i++)
    for (int j = 1; j < m - 1; j++)
      u[(size_t) i * m + j] = v[(size_t) i * m + j];
  return diff;
}

static int mode_jacobi (int m, int iters)
{
  if (m < 4)
    m = 4;
  size_t nn = (size_t) m * m;
  int total = (BATCHES / 2 + 1) * iters;
  double *u = malloc (nn * sizeof *u), *v = malloc (nn * sizeof *v);
  double *diffs = malloc (total * sizeof *diffs), t[BATCHES / 2];
  jacobi_init (u, v, m);
  int it = 0;
#pragma omp target data map(tofrom: u[0:nn]) map(to: v[0:nn])
  for (int b = 0; b < BATCHES / 2 + 1; b++)
    {
      double t0 = omp_get_wtime ();
      for (int k = 0; k < iters; k++, it++)
        {
#pragma omp target update from(u[m:m], u[(size_t) (m - 2) * m:m])
          halo_exchange (u, m);
#pragma omp target update to(u[0:m], u[(size_t) (m - 1) * m:m])
          double diff = POISON;
#pragma omp target teams distribute parallel for collapse(2) reduction(max: diff) \
  map(tofrom: diff)
          for (int i = 1; i < m - 1; i++)
            for (int j = 1; j < m - 1; j++)
              {
                size_t c = (size_t) i * m + j;
                v[c] = 0.25 * (u[c - m] + u[c + m] + u[c - 1] + u[c + 1]);
                double d = v[c] > u[c] ? v[c] - u[c] : u[c] - v[c];
                diff = d > diff ? d : diff;
              }
#pragma omp target teams distribute parallel for collapse(2)
          for (int i = 1; i < m - 1; i++)
            for (int j = 1; j < m - 1; j++)
              u[(size_t) i * m + j] = v[(size_t) i * m + j];
          diffs[it] = diff;
        }
      if (b > 0)
        t[b - 1] = (omp_get_wtime () - t0) / iters;
    }
  /* The replay on the host; the device's grid came back at the end of target data. */
  double *hu = malloc (nn * sizeof *hu), *hv = malloc (nn * sizeof *hv);
  jacobi_init (hu, hv, m);
  for (int i = 0; i < total; i++)
    {
      double want = jacobi_host_iter (hu, hv, m);
      if (!(fabs (diffs[i] - want) <= 1e-12))
        {
          printf ("ERROR jacobi: iteration %d convergence value %.17g, want %.17g\n", i,
                  diffs[i], want);
          return 1;
        }
    }
  /* The whole grid: the halo rows are the last ones sent, the rest the device's. */
  for (size_t c = 0; c < nn; c++)
    if (!(fabs (u[c] - hu[c]) <= 1e-12))
      {
        printf ("ERROR jacobi: u[%zu][%zu] = %.17g, want %.17g\n", c / m, c % m, u[c], hu[c]);
        return 1;
      }
  printf ("# jacobi: %d iterations, last convergence value %.6g\n", total, diffs[total - 1]);
  printf ("metric jacobi_%d_iter %.2f us\n", m, median (t, BATCHES / 2) * 1e6);
  free (u), free (v), free (hu), free (hv), free (diffs);
  return 0;
}

#define ROUNDS 5

static int mode_threads (int nthreads, int k)
{
  const size_t n = 4096 / sizeof (double);
  double one[ROUNDS], many[ROUNDS];
  int bad = 0;
  double *a0 = calloc (n, sizeof *a0);
  long seq0 = 0;
  if (!map_batch (a0, n, 10, &seq0))
    return 1;
  for (int r = 0; r < ROUNDS && !bad; r++)
    {
      double t0 = omp_get_wtime ();
      if (!map_batch (a0, n, k, &seq0))
        return 1;
      one[r] = k / (omp_get_wtime () - t0);
      t0 = omp_get_wtime ();
#pragma omp parallel num_threads(nthreads) reduction(+: bad)
      {
        double *a = calloc (n, sizeof *a);
        /* Distinct values per thread, so a region that saw another thread's array
           gives a wrong sum. */
        long seq = (long) omp_get_thread_num () << 32;
        if (!map_batch (a, n, k, &seq))
          bad++;
        free (a);
      }
      many[r] = (double) nthreads * k / (omp_get_wtime () - t0);
    }
  free (a0);
  if (bad)
    return 1;
  double m1 = median (one, ROUNDS), mt = median (many, ROUNDS);
  printf ("metric region_to_4096B_threads1_per_s %.0f 1/s\n", m1);
  printf ("metric region_to_4096B_threads%d_per_s %.0f 1/s\n", nthreads, mt);
  printf ("metric region_to_4096B_threads%d_speedup %.2f x\n", nthreads, mt / m1);
  return 0;
}

/* The multi mode's unit: y[i] = K steps of y = y * A + C from x[i] on device DEV; then
   the host checks every word against the closed form (AK, CK); 0 if one was wrong.  */
static int multi_unit (int dev, unsigned *x, unsigned *y, size_t n, int k, unsigned a,
                       unsigned c, unsigned ak, unsigned ck, long seq)
{
  for (size_t i = 0; i < n; i++)
    {
      x[i] = (unsigned) (i * 2654435761u) ^ (unsigned) seq;
      y[i] = 0xdeadbeef;
    }
#pragma omp target teams distribute parallel for device(dev) map(to: x[0:n]) map(from: y[0:n])
  for (size_t i = 0; i < n; i++)
    {
      unsigned v = x[i];
      for (int s = 0; s < k; s++)
        v = v * a + c;
      y[i] = v;
    }
  for (size_t i = 0; i < n; i++)
    if (y[i] != x[i] * ak + ck)
      {
        printf ("ERROR multi: device %d, unit %ld, word %zu is %u, want %u\n", dev, seq, i,
                y[i], x[i] * ak + ck);
        return 0;
      }
  return 1;
}

static int mode_multi (int units, size_t n, int k)
{
  int nd = omp_get_num_devices ();
  if (nd < 2)
    {
      printf ("# multi: %d device(s) visible; the multi-device row needs 2 or more\n", nd);
      return 0;
    }
  if (nd > 64)
    nd = 64;
  if (units < nd)
    units = nd;
  units -= units % nd;
  /* Run-time constants, so no compiler folds the loop; the closed form of K steps.  */
  volatile unsigned av = 1664525u, cv = 1013904223u;
  unsigned a = av, c = cv, ak = 1, ck = 0;
  for (int s = 0; s < k; s++)
    {
      ak *= a;
      ck = ck * a + c;
    }
  unsigned *xs[64], *ys[64];
  for (int d = 0; d < nd; d++)
    {
      xs[d] = malloc (n * sizeof (unsigned));
      ys[d] = malloc (n * sizeof (unsigned));
    }
  int bad = 0;
  long seq = 0;
  /* Warm-up: each device's context and image, and a first unit, off the clock.  */
  for (int d = 0; d < nd && !bad; d++)
    {
      int where = -1;
#pragma omp target device(d) map(from: where)
      where = omp_is_initial_device () ? -1 : omp_get_device_num ();
      if (where != d && on_device)
        {
          printf ("ERROR multi: a region for device %d ran on %d\n", d, where);
          bad = 1;
        }
      bad |= !multi_unit (d, xs[d], ys[d], n, k, a, c, ak, ck, ++seq);
    }
  double one[ROUNDS], many[ROUNDS];
  for (int r = 0; r < ROUNDS && !bad; r++)
    {
      double t0 = omp_get_wtime ();
      for (int u = 0; u < units && !bad; u++)
        bad |= !multi_unit (0, xs[0], ys[0], n, k, a, c, ak, ck, ++seq);
      one[r] = units / (omp_get_wtime () - t0);
      long base = seq;
      seq += units;
      t0 = omp_get_wtime ();
#pragma omp parallel num_threads(nd) reduction(|: bad)
      {
        int d = omp_get_thread_num ();
        int per = units / nd;
        for (int u = 0; u < per && !bad; u++)
          bad |= !multi_unit (d, xs[d], ys[d], n, k, a, c, ak, ck, base + (long) d * per + u + 1);
      }
      many[r] = units / (omp_get_wtime () - t0);
    }
  for (int d = 0; d < nd; d++)
    {
      free (xs[d]);
      free (ys[d]);
    }
  if (bad)
    return 1;
  double m1 = median (one, ROUNDS), mn = median (many, ROUNDS);
  printf ("# multi: %d units of %zu words x %d steps, %d devices\n", units, n, k, nd);
  printf ("metric multi_device_1dev_per_s %.2f 1/s\n", m1);
  printf ("metric multi_device_%ddev_per_s %.2f 1/s\n", nd, mn);
  printf ("metric multi_device_speedup_%d %.3f x\n", nd, mn / m1);
  return 0;
}

static void usage (FILE *f, const char *prog)
{
  fprintf (f, "usage: %s [--allow-host] MODE [ARGS]\n"
           "  map BYTES [N] | tofrom [N] | copy8 [N] | update BYTES [N] | teams [N] |\n"
           "  jacobi [SIZE [ITERS]] | threads [T [N]] | multi [UNITS [WORDS [STEPS]]]\n"
           "N regions per batch, median over %d batches; see the header of region_bench.c.\n",
           prog, BATCHES);
}

static int arg (int argc, char **argv, int i, int def)
{
  return argc > i ? atoi (argv[i]) : def;
}

int main (int argc, char **argv)
{
  int allow_host = 0;
  if (argc > 1 && (!strcmp (argv[1], "-h") || !strcmp (argv[1], "--help")))
    {
      usage (stdout, argv[0]);
      return 0;
    }
  if (argc > 1 && !strcmp (argv[1], "--allow-host"))
    {
      allow_host = 1;
      argv++, argc--;
    }
  if (argc < 2)
    {
      usage (stderr, argv[0]);
      return 2;
    }
  const char *m = argv[1];
  double t0 = omp_get_wtime ();
  int dev = on_device = on_gpu ();
  /* A comment, not a metric: the offload_bench row first_target_region is that
     program's alone. */
  printf ("# first target region %.2f ms\n", (omp_get_wtime () - t0) * 1e3);
  if (!dev && !allow_host)
    {
      printf ("ERROR not running on a GPU\n");
      return 1;
    }
  int rc;
  if (!strcmp (m, "map") && argc > 2)
    rc = mode_map (strtoull (argv[2], 0, 0), arg (argc, argv, 3, 100));
  else if (!strcmp (m, "tofrom"))
    rc = mode_tofrom (arg (argc, argv, 2, 100));
  else if (!strcmp (m, "copy8"))
    rc = mode_copy8 (arg (argc, argv, 2, 100));
  else if (!strcmp (m, "update") && argc > 2)
    rc = mode_update (strtoull (argv[2], 0, 0), arg (argc, argv, 3, 100));
  else if (!strcmp (m, "teams"))
    rc = mode_teams (arg (argc, argv, 2, 5));
  else if (!strcmp (m, "jacobi"))
    rc = mode_jacobi (arg (argc, argv, 2, 1024), arg (argc, argv, 3, 10));
  else if (!strcmp (m, "threads"))
    rc = mode_threads (arg (argc, argv, 2, 8), arg (argc, argv, 3, 500));
  else if (!strcmp (m, "multi"))
    rc = mode_multi (arg (argc, argv, 2, 64), argc > 3 ? strtoull (argv[3], 0, 0) : (size_t) 1 << 20,
                     arg (argc, argv, 4, 20000));
  else
    {
      fprintf (stderr, "region_bench: unknown mode or missing argument: %s\n", m);
      usage (stderr, argv[0]);
      return 2;
    }
  if (rc == 0 && dev && !on_gpu ())
    {
      printf ("ERROR regions no longer run on the GPU at the end of %s\n", m);
      return 1;
    }
  return rc;
}
