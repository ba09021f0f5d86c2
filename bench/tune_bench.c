/* tune_bench.c - what the per-kernel launch-shape tuner (GOMP_NVPTX_TUNE=autotune)
 * costs and changes, for bench/results/kernels-autotune.md: run it with the tuner on
 * (autotune=fresh: trials in this process), off (autotune=0) and under the stock plugin,
 * alternating, and compare.
 *
 * usage: tune_bench [-l LAUNCHES] [--allow-host]
 *   -l LAUNCHES  launches of each loop kernel and of the reduction (default 100)
 *
 * Each kernel is its own function (its own kernel, tuned on its own), a plain
 * `target teams distribute parallel for` (one lane per warp: the kind whose launch shape
 * matters most), launched without clauses on arrays mapped once:
 *   metric tune_loop_short us   total host time of LAUNCHES synchronous launches of a
 *                               triad over 2^16 doubles (a few us each: too short to
 *                               try other shapes; the tuner times it twice)
 *   metric tune_loop_mid us     the same over 2^21 doubles (0.1-0.3 ms each: tried)
 *   metric tune_once us         one launch of a triad over 2^21 doubles that runs once
 *   metric tune_reduce_distinct count  distinct results among LAUNCHES launches of a
 *                               sum reduction over 2^24 doubles whose sum is not exact
 *                               (rounding depends on the order)
 * and one line "reduce K HEXFLOAT" per launch of the reduction (%a: every bit), for
 * comparing results between configurations. Triad results are checked against the
 * host; a wrong one prints "ERROR ..." and the program exits 1, as it does when target
 * regions run on the host without --allow-host. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_probe.h"

#define Q 3.0
#define NS (1u << 16)
#define NM (1u << 21)
#define NR (1u << 24)

static double *A, *B, *C, *R;

static void k_short (void)
{
  double *a = A, *b = B, *c = C;
  size_t n = NS;
#pragma omp target teams distribute parallel for map(alloc: a[0:n], b[0:n], c[0:n])
  for (size_t i = 0; i < n; i++)
    c[i] = a[i] + Q * b[i];
}

static void k_mid (void)
{
  double *a = A, *b = B, *c = C;
  size_t n = NM;
#pragma omp target teams distribute parallel for map(alloc: a[0:n], b[0:n], c[0:n])
  for (size_t i = 0; i < n; i++)
    c[i] = a[i] + Q * b[i];
}

static void k_once (void)
{
  double *a = A, *b = B, *c = C;
  size_t n = NM;
#pragma omp target teams distribute parallel for map(alloc: a[0:n], b[0:n], c[0:n])
  for (size_t i = 0; i < n; i++)
    c[i] = b[i] + Q * a[i];
}

static double k_reduce (void)
{
  double *r = R, s = 0.0;
  size_t n = NR;
#pragma omp target teams distribute parallel for reduction(+: s) map(alloc: r[0:n])
  for (size_t i = 0; i < n; i++)
    s += r[i];
  return s;
}

/* Checks c = x + Q*y over n elements (copied back); exits on a mismatch. */
static void check (const char *what, size_t n, const double *x, const double *y)
{
  double *c = C;
#pragma omp target update from(c[0:n])
  for (size_t i = 0; i < n; i++)
    if (c[i] != x[i] + Q * y[i])
      {
        printf ("ERROR %s: c[%zu] = %g, expected %g\n", what, i, c[i], x[i] + Q * y[i]);
        exit (1);
      }
}

/* Total seconds of `launches` calls of `fn`. */
static double loop (void (*fn) (void), int launches)
{
  double t0 = omp_get_wtime ();
  for (int i = 0; i < launches; i++)
    fn ();
  return omp_get_wtime () - t0;
}

int main (int argc, char **argv)
{
  int launches = 100, allow_host = 0;
  for (int i = 1; i < argc; i++)
    if (!strcmp (argv[i], "-l") && i + 1 < argc)
      launches = atoi (argv[++i]);
    else if (!strcmp (argv[i], "--allow-host"))
      allow_host = 1;
    else
      {
        fprintf (stderr, "usage: tune_bench [-l LAUNCHES] [--allow-host]\n");
        return 2;
      }
  if (launches < 1)
    {
      fprintf (stderr, "tune_bench: -l needs a positive count\n");
      return 2;
    }
  int gpu = on_gpu ();
  printf ("metric tune_on_gpu %d bool\n", gpu);
  if (!gpu && !allow_host)
    {
      printf ("ERROR target regions run on the host (--allow-host to go on)\n");
      return 1;
    }
  A = malloc (NM * sizeof *A);
  B = malloc (NM * sizeof *B);
  C = malloc (NM * sizeof *C);
  R = malloc (NR * sizeof *R);
  if (!A || !B || !C || !R)
    return 1;
  for (size_t i = 0; i < NM; i++)
    A[i] = (double) (i % 1000), B[i] = (double) (i % 7), C[i] = -1.0;
  /* Terms of many magnitudes and both signs: the sum's rounding depends on the order. */
  for (size_t i = 0; i < NR; i++)
    R[i] = (i % 3 ? 1.0 : -0.7) / (1.0 + (double) (i % 100003)) + 1e-9 * (double) i;
  double *a = A, *b = B, *c = C, *r = R;
#pragma omp target enter data map(to: a[0:NM], b[0:NM], c[0:NM], r[0:NR])

  double t = loop (k_short, launches);
  check ("short", NS, A, B);
  printf ("metric tune_loop_short %.1f us\n", t * 1e6);
  t = loop (k_mid, launches);
  check ("mid", NM, A, B);
  printf ("metric tune_loop_mid %.1f us\n", t * 1e6);
  t = loop (k_once, 1);
  check ("once", NM, B, A);
  printf ("metric tune_once %.1f us\n", t * 1e6);

  double *sums = malloc (launches * sizeof *sums);
  int distinct = 0;
  for (int i = 0; i < launches; i++)
    {
      sums[i] = k_reduce ();
      printf ("reduce %d %a\n", i, sums[i]);
      int seen = 0;
      for (int j = 0; j < i && !seen; j++)
        seen = !memcmp (&sums[j], &sums[i], sizeof *sums);
      distinct += !seen;
    }
  printf ("metric tune_reduce_distinct %d count\n", distinct);
#pragma omp target exit data map(delete: a[0:NM], b[0:NM], c[0:NM], r[0:NR])
  free (sums);
  return 0;
}
