/* tune_bench.c - what the per-kernel launch-shape tuner (GOMP_NVPTX_TUNE=autotune)
 * costs and changes, for bench/results/kernels-autotune.md: run it with the tuner on
 * (autotune=fresh: trials in this process), off (autotune=0) and under the stock plugin,
 * alternating, and compare.
 *
 * usage: tune_bench [-l LAUNCHES] [-k LIST] [--allow-host]
 *   -l LAUNCHES  launches of each loop kernel and of the reduction (default 100)
 *   -k LIST      only these of tiny, tiny_simd, tiny_teams, short, mid, once, reduce
 *                (comma-separated; default all), e.g. -k tiny_teams: a loop alone
 *
 * Each kernel is its own function (its own kernel, tuned on its own), a plain
 * `target teams distribute parallel for` (one lane per warp: the kind whose launch shape
 * matters most), launched without clauses on arrays mapped once:
 *   metric tune_loop_tiny us    total host time of LAUNCHES synchronous launches of a
 *                               triad over 2^12 doubles
 *   metric tune_loop_tiny_simd us  the same, `... parallel for simd`
 *   metric tune_loop_tiny_teams us  the same, `target teams distribute` (no `parallel`:
 *                               one thread per team)
 *   metric tune_loop_short us   the same over 2^16 doubles
 *   metric tune_loop_mid us     the same over 2^21 doubles
 *   (GCC's plain kernels start a thread pool in every team, so a kernel's time grows
 *   with its teams whatever its size: whether a kernel is under the tuner's 0.1 ms, and
 *   only timed twice, or tried, shows in GOMP_DEBUG=1's `autotune:` lines)
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
#define NT (1u << 12)
#define NS (1u << 16)
#define NM (1u << 21)
#define NR (1u << 24)

static double *A, *B, *C, *R;

#include "kernels.h"

LOOP_KERNEL (k_tiny, teams distribute parallel for, NT, a[i] + Q * b[i],
             a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_tiny_simd, teams distribute parallel for simd, NT, a[i] + Q * b[i],
             a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_tiny_teams, teams distribute, NT, a[i] + Q * b[i], a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_short, teams distribute parallel for, NS, a[i] + Q * b[i],
             a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_mid, teams distribute parallel for, NM, a[i] + Q * b[i],
             a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_once, teams distribute parallel for, NM, b[i] + Q * a[i],
             a[0:n], b[0:n], c[0:n])

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

/* Sets c[0:n] to -1 on the device, so that a check sees what the next kernel wrote. */
static void poison (size_t n)
{
  double *c = C;
  for (size_t i = 0; i < n; i++)
    c[i] = -1.0;
#pragma omp target update to(c[0:n])
}

/* Whether NAME is in the comma-separated LIST (all names when LIST is NULL). */
static int chosen (const char *list, const char *name)
{
  if (!list)
    return 1;
  size_t n = strlen (name);
  for (const char *p = list; *p; p += strcspn (p, ",") + (p[strcspn (p, ",")] == ','))
    if (strcspn (p, ",") == n && !strncmp (p, name, n))
      return 1;
  return 0;
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
  const char *only = NULL;
  for (int i = 1; i < argc; i++)
    if (!strcmp (argv[i], "-l") && i + 1 < argc)
      launches = atoi (argv[++i]);
    else if (!strcmp (argv[i], "-k") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp (argv[i], "--allow-host"))
      allow_host = 1;
    else
      {
        fprintf (stderr, "usage: tune_bench [-l LAUNCHES] [-k LIST] [--allow-host]\n");
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

  static const struct
  {
    const char *name;
    void (*fn) (void);
    size_t n;
    int once;
  } loops[] = {
    { "tiny", k_tiny, NT, 0 },   { "tiny_simd", k_tiny_simd, NT, 0 },
    { "tiny_teams", k_tiny_teams, NT, 0 }, { "short", k_short, NS, 0 },
    { "mid", k_mid, NM, 0 },     { "once", k_once, NM, 1 },
  };
  for (size_t k = 0; k < sizeof loops / sizeof *loops; k++)
    {
      if (!chosen (only, loops[k].name))
        continue;
      poison (loops[k].n);
      double t = loop (loops[k].fn, loops[k].once ? 1 : launches);
      if (loops[k].once)
        check (loops[k].name, loops[k].n, B, A);
      else
        check (loops[k].name, loops[k].n, A, B);
      printf ("metric tune_%s%s %.1f us\n", loops[k].once ? "" : "loop_", loops[k].name,
              t * 1e6);
    }
  if (!chosen (only, "reduce"))
    return 0;

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
