/* kernel_bench.c - user-kernel benchmarks of an OpenMP offload plugin: the
 * speed of GCC-compiled kernels under the launch shape, JIT options and settings the
 * plugin picks.  bench/device-run.sh (step `kernels`) runs it with the stock plugin, ours
 * and ours with experiment knobs, alternating.
 *
 * usage: kernel_bench [-n EXP] [-r REPS] [-m N] [-b N] [-N LIST] [-T LIST] [--allow-host]
 *                     [KERNEL...]
 *   KERNEL   all (default), stream (= copy scale add triad dot), copy, scale, add, triad,
 *            dot, reduce, matmul, nbody, shapes; each STREAM kernel, reduce, matmul and
 *            nbody runs as `target teams distribute parallel for` and as `... for simd`
 *            (metric suffix _simd; GCC's nvptx code maps OpenMP threads to warps and simd
 *            to the 32 lanes of a warp, so the plain form uses one lane per warp)
 *   -n EXP   STREAM arrays of 2^EXP doubles (default 25), the reduction 2^(EXP+2)
 *   -r REPS  timed repetitions per kernel after 2 warm-up runs (default 20)
 *   -m N     matrix product of N x N doubles (default 1024)
 *   -b N     n-body with N bodies (default 16384)
 *   -N LIST  num_teams of the `shapes` triads (default 132,264,528,1056)
 *   -T LIST  thread_limit of the `shapes` triads (default 2,8,32,64,1024; GCC counts an
 *            OpenMP thread as one warp: thread_limit(8) asks for 8 warps = 256 threads)
 *   --allow-host  run even when target regions fall back to the host (the numbers then
 *            are host numbers: only the results' checks mean something)
 *
 * The arrays are mapped once (`target enter data`); each kernel is timed on the host
 * around its (synchronous) target region, the median over REPS is reported:
 *   metric kernel_<copy|scale|add|triad|dot>[_simd] GB/s   STREAM's byte counts (16, 16,
 *          24, 24, 16 bytes per element); c = a, c = q*a, c = a+b, c = a+q*b, sum a*b
 *   metric kernel_reduce[_simd] GB/s       sum of 2^(EXP+2) doubles, 8 bytes per element
 *   metric kernel_matmul[_simd] GFLOP/s    C = A*B, 2*N^3 flops (i,j parallel, k inner)
 *   metric kernel_nbody[_simd] GFLOP/s     accelerations of N bodies, 20 flops per pair
 *   metric kernel_triad_simd_nt<T>_tl<L> GB/s  the simd triad with num_teams(T)
 *          thread_limit(L)
 *   metric kernel_on_gpu 1|0 bool          whether target regions ran on the device
 * Before each kernel a line "# kernel NAME" (stdout unbuffered when GOMP_DEBUG is set,
 * so the plugin's launch lines on stderr follow the kernel they belong to) and after it
 * "# NAME: median M us, mean A us, min T us, R reps" (the mean counts every timed
 * launch alike: what a run of REPS launches costs). Every result is checked against the host (the inputs are
 * chosen so that the sums are exact in any order); a wrong one prints "ERROR ..." and
 * the program exits 1, as it does when regions run on the host without --allow-host. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "median.h"
#include "gpu_probe.h"

#define WARMUP 2
#define Q 3.0

static double *A, *B, *C, *R;   /* STREAM arrays (N), reduction input (NR) */
static size_t N, NR;
static double S;                /* result of dot/reduce */
static int REPS = 20;
static int NT, TL;              /* num_teams/thread_limit of the shape triad */
static double *MA, *MB, *MC;    /* matrices, MN x MN */
static int MN = 1024;
static double *PX, *PY, *PZ, *PM, *AX, *AY, *AZ;  /* n-body, NB bodies */
static int NB = 16384;
#define EPS2 1e-3

#include "kernels.h"

/* ---- the kernels: one function each, so each has its own name in the plugin's
   profile and launch lines (GCC names the region FUNCTION._omp_fn.K) ---- */

LOOP_KERNEL (k_fill, teams distribute parallel for simd, N, -1.0, c[0:n])
LOOP_KERNEL (k_copy, teams distribute parallel for, N, a[i], a[0:n], c[0:n])
LOOP_KERNEL (k_copy_simd, teams distribute parallel for simd, N, a[i], a[0:n], c[0:n])
LOOP_KERNEL (k_scale, teams distribute parallel for, N, Q * a[i], a[0:n], c[0:n])
LOOP_KERNEL (k_scale_simd, teams distribute parallel for simd, N, Q * a[i], a[0:n], c[0:n])
LOOP_KERNEL (k_add, teams distribute parallel for, N, a[i] + b[i], a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_add_simd, teams distribute parallel for simd, N, a[i] + b[i],
             a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_triad, teams distribute parallel for, N, a[i] + Q * b[i],
             a[0:n], b[0:n], c[0:n])
LOOP_KERNEL (k_triad_simd, teams distribute parallel for simd, N, a[i] + Q * b[i],
             a[0:n], b[0:n], c[0:n])

static void k_triad_shape (void)
{
  double *c = C, *a = A, *b = B;
  size_t n = N;
  int nt = NT, tl = TL;
#pragma omp target teams distribute parallel for simd num_teams(nt) thread_limit(tl) \
  map(alloc: a[0:n], b[0:n], c[0:n])
  for (size_t i = 0; i < n; i++)
    c[i] = a[i] + Q * b[i];
}

static void k_dot (void)
{
  double *a = A, *b = B, s = 0;
  size_t n = N;
#pragma omp target teams distribute parallel for reduction(+: s) map(tofrom: s) \
  map(alloc: a[0:n], b[0:n])
  for (size_t i = 0; i < n; i++)
    s += a[i] * b[i];
  S = s;
}

static void k_dot_simd (void)
{
  double *a = A, *b = B, s = 0;
  size_t n = N;
#pragma omp target teams distribute parallel for simd reduction(+: s) map(tofrom: s) \
  map(alloc: a[0:n], b[0:n])
  for (size_t i = 0; i < n; i++)
    s += a[i] * b[i];
  S = s;
}

static void k_reduce (void)
{
  double *r = R, s = 0;
  size_t n = NR;
#pragma omp target teams distribute parallel for reduction(+: s) map(tofrom: s) \
  map(alloc: r[0:n])
  for (size_t i = 0; i < n; i++)
    s += r[i];
  S = s;
}

static void k_reduce_simd (void)
{
  double *r = R, s = 0;
  size_t n = NR;
#pragma omp target teams distribute parallel for simd reduction(+: s) map(tofrom: s) \
  map(alloc: r[0:n])
  for (size_t i = 0; i < n; i++)
    s += r[i];
  S = s;
}

static void k_matmul (void)
{
  double *a = MA, *b = MB, *c = MC;
  size_t n = MN, nn = n * n;
#pragma omp target teams distribute parallel for collapse(2) \
  map(alloc: a[0:nn], b[0:nn], c[0:nn])
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      {
        double s = 0;
        for (size_t k = 0; k < n; k++)
          s += a[i * n + k] * b[k * n + j];
        c[i * n + j] = s;
      }
}

static void k_matmul_simd (void)
{
  double *a = MA, *b = MB, *c = MC;
  size_t n = MN, nn = n * n;
#pragma omp target teams distribute parallel for simd collapse(2) \
  map(alloc: a[0:nn], b[0:nn], c[0:nn])
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      {
        double s = 0;
        for (size_t k = 0; k < n; k++)
          s += a[i * n + k] * b[k * n + j];
        c[i * n + j] = s;
      }
}

/* Acceleration of body i (without the gravitational constant); the same code on the
   device and for the host's check. */
#pragma omp begin declare target
static inline void accel (int i, int n, const double *x, const double *y, const double *z,
                          const double *m, double *ax, double *ay, double *az)
{
  double xi = x[i], yi = y[i], zi = z[i], sx = 0, sy = 0, sz = 0;
  for (int j = 0; j < n; j++)
    {
      double dx = x[j] - xi, dy = y[j] - yi, dz = z[j] - zi;
      double r2 = dx * dx + dy * dy + dz * dz + EPS2;
      double inv = 1.0 / sqrt (r2);
      double s = m[j] * inv * inv * inv;
      sx += dx * s;
      sy += dy * s;
      sz += dz * s;
    }
  *ax = sx;
  *ay = sy;
  *az = sz;
}
#pragma omp end declare target

static void k_nbody (void)
{
  double *x = PX, *y = PY, *z = PZ, *m = PM, *ax = AX, *ay = AY, *az = AZ;
  int n = NB;
#pragma omp target teams distribute parallel for \
  map(alloc: x[0:n], y[0:n], z[0:n], m[0:n], ax[0:n], ay[0:n], az[0:n])
  for (int i = 0; i < n; i++)
    accel (i, n, x, y, z, m, &ax[i], &ay[i], &az[i]);
}

static void k_nbody_simd (void)
{
  double *x = PX, *y = PY, *z = PZ, *m = PM, *ax = AX, *ay = AY, *az = AZ;
  int n = NB;
#pragma omp target teams distribute parallel for simd \
  map(alloc: x[0:n], y[0:n], z[0:n], m[0:n], ax[0:n], ay[0:n], az[0:n])
  for (int i = 0; i < n; i++)
    accel (i, n, x, y, z, m, &ax[i], &ay[i], &az[i]);
}

/* ---- timing and checks ---- */

static int failures;

/* Runs BEFORE (if any) once, then FN WARMUP + REPS times; the median host time of FN
   in seconds.  */
static double timed (const char *name, void (*fn) (void), void (*before) (void))
{
  printf ("# kernel %s\n", name);
  if (before)
    before ();
  double *t = malloc (REPS * sizeof *t);
  for (int i = 0; i < WARMUP + REPS; i++)
    {
      double t0 = omp_get_wtime ();
      fn ();
      if (i >= WARMUP)
        t[i - WARMUP] = omp_get_wtime () - t0;
    }
  double sum = 0;
  for (int i = 0; i < REPS; i++)
    sum += t[i];
  double med = median (t, REPS);
  printf ("# %s: median %.1f us, mean %.1f us, min %.1f us, %d reps\n", name, med * 1e6,
          sum / REPS * 1e6, t[0] * 1e6, REPS);
  free (t);
  return med;
}

static double in_a (size_t i) { return (double) (i % 1024) * 0.25; }
static double in_b (size_t i) { return (double) (i % 1000) * 0.5; }
static double in_r (size_t i) { return (double) ((i * 7) % 4096) * 0.5; }

enum op { COPY, SCALE, ADD, TRIAD };

/* Checks every element of C (brought back from the device) against OP; 1 if right. */
static int check_c (const char *name, enum op op)
{
#pragma omp target update from(C[0:N])
  for (size_t i = 0; i < N; i++)
    {
      double a = in_a (i), b = in_b (i);
      double want = op == COPY ? a : op == SCALE ? Q * a : op == ADD ? a + b : a + Q * b;
      if (C[i] != want)
        {
          printf ("ERROR %s: c[%zu] = %.17g, want %.17g\n", name, i, C[i], want);
          failures++;
          return 0;
        }
    }
  return 1;
}

static int check_sum (const char *name, double want)
{
  if (S == want)
    return 1;
  printf ("ERROR %s: sum %.17g, want %.17g\n", name, S, want);
  failures++;
  return 0;
}

static void metric (const char *name, double value, const char *unit)
{
  printf ("metric kernel_%s %.2f %s\n", name, value, unit);
}

static void run_stream_op (const char *name, enum op op, void (*plain) (void),
                           void (*simd) (void), double bytes)
{
  char nm[64];
  for (int v = 0; v < 2; v++)
    {
      snprintf (nm, sizeof nm, "%s%s", name, v ? "_simd" : "");
      double t = timed (nm, v ? simd : plain, k_fill);
      if (check_c (nm, op))
        metric (nm, bytes * N / t / 1e9, "GB/s");
    }
}

static void run_dot (void)
{
  double want = 0;
  for (size_t i = 0; i < N; i++)
    want += in_a (i) * in_b (i);   /* multiples of 1/8 below 2^50: exact in any order */
  for (int v = 0; v < 2; v++)
    {
      const char *nm = v ? "dot_simd" : "dot";
      S = -1;
      double t = timed (nm, v ? k_dot_simd : k_dot, NULL);
      if (check_sum (nm, want))
        metric (nm, 16.0 * N / t / 1e9, "GB/s");
    }
}

static void run_reduce (void)
{
  R = malloc (NR * sizeof *R);
  double want = 0;
  for (size_t i = 0; i < NR; i++)
    want += R[i] = in_r (i);       /* multiples of 1/2 below 2^50: exact in any order */
  double *r = R;
  size_t n = NR;
#pragma omp target enter data map(to: r[0:n])
  for (int v = 0; v < 2; v++)
    {
      const char *nm = v ? "reduce_simd" : "reduce";
      S = -1;
      double t = timed (nm, v ? k_reduce_simd : k_reduce, NULL);
      if (check_sum (nm, want))
        metric (nm, 8.0 * NR / t / 1e9, "GB/s");
    }
#pragma omp target exit data map(delete: r[0:n])
  free (R);
}

static void run_shapes (const char *nts, const char *tls)
{
  char nm[64];
  for (const char *p = nts; *p; p += strcspn (p, ",") + (p[strcspn (p, ",")] == ','))
    for (const char *q = tls; *q; q += strcspn (q, ",") + (q[strcspn (q, ",")] == ','))
      {
        NT = atoi (p);
        TL = atoi (q);
        snprintf (nm, sizeof nm, "triad_simd_nt%d_tl%d", NT, TL);
        double t = timed (nm, k_triad_shape, k_fill);
        if (check_c (nm, TRIAD))
          metric (nm, 24.0 * N / t / 1e9, "GB/s");
      }
}

/* Small integers: the products and their sums are exact, whatever the order. */
static double in_ma (size_t i, size_t k) { return (double) ((i + 2 * k) % 7) - 3; }
static double in_mb (size_t k, size_t j) { return (double) ((3 * k + j) % 5) - 2; }

static void run_matmul (void)
{
  size_t n = MN, nn = n * n;
  MA = malloc (nn * sizeof *MA);
  MB = malloc (nn * sizeof *MB);
  MC = malloc (nn * sizeof *MC);
  for (size_t i = 0; i < n; i++)
    for (size_t j = 0; j < n; j++)
      {
        MA[i * n + j] = in_ma (i, j);
        MB[i * n + j] = in_mb (i, j);
      }
  double *a = MA, *b = MB, *c = MC, *want = malloc (n * sizeof *want);
#pragma omp target enter data map(to: a[0:nn], b[0:nn]) map(alloc: c[0:nn])
  for (int v = 0; v < 2; v++)
    {
      const char *nm = v ? "matmul_simd" : "matmul";
      double t = timed (nm, v ? k_matmul_simd : k_matmul, NULL);
#pragma omp target update from(c[0:nn])
      /* About 64 whole rows, the last one included. */
      size_t step = n > 64 ? n / 64 : 1;
      for (size_t i = 0; i < n; i = i == n - 1 ? n : (i + step < n ? i + step : n - 1))
        {
          for (size_t j = 0; j < n; j++)
            want[j] = 0;
          for (size_t k = 0; k < n; k++)
            for (size_t j = 0; j < n; j++)
              want[j] += a[i * n + k] * b[k * n + j];
          for (size_t j = 0; j < n; j++)
            if (c[i * n + j] != want[j])
              {
                printf ("ERROR %s: c[%zu][%zu] = %.17g, want %.17g\n", nm, i, j,
                        c[i * n + j], want[j]);
                failures++;
                goto next;
              }
        }
      metric (nm, 2.0 * n * n * n / t / 1e9, "GFLOP/s");
    next:
      memset (c, 0, nn * sizeof *c);
#pragma omp target update to(c[0:nn])
    }
#pragma omp target exit data map(delete: a[0:nn], b[0:nn], c[0:nn])
  free (want);
  free (MA);
  free (MB);
  free (MC);
}

static void run_nbody (void)
{
  int n = NB;
  double *x = PX = malloc (n * sizeof *x), *y = PY = malloc (n * sizeof *y),
         *z = PZ = malloc (n * sizeof *z), *m = PM = malloc (n * sizeof *m),
         *ax = AX = malloc (n * sizeof *ax), *ay = AY = malloc (n * sizeof *ay),
         *az = AZ = malloc (n * sizeof *az);
  unsigned long long s = 88172645463325252ULL;
  for (int i = 0; i < n; i++)
    {
      double r[4];
      for (int k = 0; k < 4; k++)
        {
          s ^= s << 13, s ^= s >> 7, s ^= s << 17;
          r[k] = (double) (s >> 11) / 9007199254740992.0;   /* [0, 1) */
        }
      x[i] = 2 * r[0] - 1, y[i] = 2 * r[1] - 1, z[i] = 2 * r[2] - 1, m[i] = 0.5 + r[3];
    }
#pragma omp target enter data map(to: x[0:n], y[0:n], z[0:n], m[0:n]) \
  map(alloc: ax[0:n], ay[0:n], az[0:n])
  for (int v = 0; v < 2; v++)
    {
      const char *nm = v ? "nbody_simd" : "nbody";
      double t = timed (nm, v ? k_nbody_simd : k_nbody, NULL);
#pragma omp target update from(ax[0:n], ay[0:n], az[0:n])
      /* About 64 bodies against the host; the order of the sum is the same, only
         contraction into FMAs may differ: relative to the sum of the magnitudes. */
      int step = n > 64 ? n / 64 : 1;
      for (int i = 0; i < n; i = i == n - 1 ? n : (i + step < n ? i + step : n - 1))
        {
          double w[3], mag = 0;
          accel (i, n, x, y, z, m, &w[0], &w[1], &w[2]);
          for (int j = 0; j < n; j++)
            {
              double dx = x[j] - x[i], dy = y[j] - y[i], dz = z[j] - z[i];
              double r2 = dx * dx + dy * dy + dz * dz + EPS2;
              mag += m[j] / r2;
            }
          double got[3] = { ax[i], ay[i], az[i] };
          for (int k = 0; k < 3; k++)
            if (!(fabs (got[k] - w[k]) <= 1e-9 * mag))
              {
                printf ("ERROR %s: body %d component %d = %.17g, want %.17g\n", nm, i, k,
                        got[k], w[k]);
                failures++;
                goto next;
              }
        }
      metric (nm, 20.0 * n * n / t / 1e9, "GFLOP/s");
    next:
      memset (ax, 0, n * sizeof *ax);
#pragma omp target update to(ax[0:n])
    }
#pragma omp target exit data map(delete: x[0:n], y[0:n], z[0:n], m[0:n], ax[0:n], ay[0:n], \
                                  az[0:n])
  free (x), free (y), free (z), free (m), free (ax), free (ay), free (az);
}

static void usage (FILE *f, const char *argv0)
{
  fprintf (f, "usage: %s [-n EXP] [-r REPS] [-m N] [-b N] [-N LIST] [-T LIST] [--allow-host]"
           " [KERNEL...]\n"
           "  KERNEL: all (default) stream copy scale add triad dot reduce matmul nbody shapes\n"
           "  -n EXP   STREAM arrays of 2^EXP doubles (default 25), reduction 2^(EXP+2)\n"
           "  -r REPS  timed repetitions per kernel after %d warm-up runs (default 20)\n"
           "  -m N     matrix product N x N (default 1024); -b N  n-body bodies (default 16384)\n"
           "  -N LIST  num_teams of the shapes (default 132,264,528,1056)\n"
           "  -T LIST  thread_limit of the shapes, in OpenMP threads = warps under GCC\n"
           "           (default 2,8,32,64,1024)\n"
           "  --allow-host  go on when target regions run on the host (checks only)\n"
           "Prints \"metric kernel_NAME VALUE GB/s|GFLOP/s\" lines; ERROR and exit 1 on a wrong"
           " result.\n", argv0, WARMUP);
}

static const char *const KERNELS[] = { "copy", "scale", "add", "triad", "dot", "reduce",
                                       "matmul", "nbody", "shapes" };
#define NK (sizeof KERNELS / sizeof *KERNELS)

int main (int argc, char **argv)
{
  int exp = 25, allow_host = 0, want[NK] = { 0 }, any = 0;
  const char *nts = "132,264,528,1056", *tls = "2,8,32,64,1024";
  for (int i = 1; i < argc; i++)
    {
      const char *a = argv[i];
      if (!strcmp (a, "-h") || !strcmp (a, "--help"))
        {
          usage (stdout, argv[0]);
          return 0;
        }
      if (!strcmp (a, "--allow-host"))
        allow_host = 1;
      else if (strlen (a) == 2 && a[0] == '-' && strchr ("nrmbNT", a[1]))
        {
          if (i + 1 >= argc)
            {
              fprintf (stderr, "%s: option %s needs a value\n", argv[0], a);
              return 2;
            }
          const char *v = argv[++i];
          switch (a[1])
            {
            case 'n': exp = atoi (v); break;
            case 'r': REPS = atoi (v); break;
            case 'm': MN = atoi (v); break;
            case 'b': NB = atoi (v); break;
            case 'N': nts = v; break;
            case 'T': tls = v; break;
            }
        }
      else if (a[0] == '-')
        {
          fprintf (stderr, "%s: unknown option '%s'\n", argv[0], a);
          usage (stderr, argv[0]);
          return 2;
        }
      else
        {
          int found = 0;
          for (size_t k = 0; k < NK; k++)
            if (!strcmp (a, "all") || !strcmp (a, KERNELS[k])
                || (!strcmp (a, "stream") && k < 5))
              want[k] = found = 1;
          if (!found)
            {
              fprintf (stderr, "%s: unknown kernel '%s'\n", argv[0], a);
              usage (stderr, argv[0]);
              return 2;
            }
          any = 1;
        }
    }
  if (exp < 4 || exp > 32 || REPS < 1 || MN < 1 || NB < 1)
    {
      fprintf (stderr, "%s: bad size or repetitions (see --help)\n", argv[0]);
      return 2;
    }
  if (!any)
    for (size_t k = 0; k < NK; k++)
      want[k] = 1;
  if (getenv ("GOMP_DEBUG"))
    setvbuf (stdout, NULL, _IONBF, 0);
  else
    setvbuf (stdout, NULL, _IOLBF, 0);

  int gpu = on_gpu ();
  printf ("metric kernel_on_gpu %d bool\n", gpu);
  if (!gpu)
    {
      if (!allow_host)
        {
          printf ("ERROR not running on a GPU (target regions fell back to the host)\n");
          return 1;
        }
      printf ("# host fallback: the numbers below are host numbers, not GPU results\n");
    }
  N = (size_t) 1 << exp;
  NR = N << 2;
  printf ("# STREAM 2^%d doubles (%.0f MiB per array), reduction 2^%d, matmul %d^3, "
          "n-body %d, %d reps after %d warm-up runs\n", exp, N * 8.0 / 1048576, exp + 2, MN,
          NB, REPS, WARMUP);

  if (want[0] || want[1] || want[2] || want[3] || want[4] || want[8])
    {
      A = malloc (N * sizeof *A);
      B = malloc (N * sizeof *B);
      C = malloc (N * sizeof *C);
      if (!A || !B || !C)
        {
          printf ("ERROR out of host memory\n");
          return 1;
        }
      for (size_t i = 0; i < N; i++)
        A[i] = in_a (i), B[i] = in_b (i), C[i] = 0;
      double *a = A, *b = B, *c = C;
      size_t n = N;
#pragma omp target enter data map(to: a[0:n], b[0:n], c[0:n])
      if (want[0])
        run_stream_op ("copy", COPY, k_copy, k_copy_simd, 16);
      if (want[1])
        run_stream_op ("scale", SCALE, k_scale, k_scale_simd, 16);
      if (want[2])
        run_stream_op ("add", ADD, k_add, k_add_simd, 24);
      if (want[3])
        run_stream_op ("triad", TRIAD, k_triad, k_triad_simd, 24);
      if (want[4])
        run_dot ();
      if (want[8])
        run_shapes (nts, tls);
#pragma omp target exit data map(delete: a[0:n], b[0:n], c[0:n])
      free (A), free (B), free (C);
    }
  if (want[5])
    run_reduce ();
  if (want[6])
    run_matmul ();
  if (want[7])
    run_nbody ();
  if (failures)
    {
      printf ("ERROR %d kernel result(s) wrong\n", failures);
      return 1;
    }
  return 0;
}
