/* acc_kernel_bench.c - OpenACC compute kernels of the shapes real codes use, timed per
 * launch, run the same way with GCC's stock plugin and ours (bench/device-run.sh step
 * "acck" alternates them). Most kernels leave the gang count (and some the worker
 * count) to the runtime, which is what the plugin's launch-dimension choice decides.
 *
 * usage: acc_kernel_bench [--allow-host] [-n LAUNCHES] [KERNEL...]
 *   (no KERNEL: all of them, in this order)
 *   stencil        2-D 5-point stencil, `parallel loop collapse(2)` over 4096x4096
 *                  doubles reading 4 arrays
 *   upwind         upwind advection: `parallel loop gang` over rows, inner `loop vector`
 *                  over columns; each cell reads the neighbours the sign of its
 *                  velocity picks (data-dependent branches)
 *   upwind_worker  the same with rows in blocks of 8: `loop gang` over blocks, `loop
 *                  worker` over the block's rows, `loop vector` over columns
 *   redundant      a gang-redundant part (a 64-term sum every gang computes) before a
 *                  `loop gang vector` over 2^24 elements
 *   reduce_sum     `parallel loop reduction(+:s)` over 2^24 doubles
 *   reduce_max     `parallel loop reduction(max:m)` over 2^24 doubles
 *   kernels        a `kernels` region with one `loop independent` over 2^24 elements
 *                  (bench/build.sh compiles with --param=openacc-kernels=decompose:
 *                  GCC 16's default runs this loop on one thread, 1.5 s a launch)
 *   small          `parallel loop` over 1000 elements (far fewer than the GPU runs)
 *   explicit       `parallel loop gang worker vector num_gangs(1000) num_workers(4)
 *                  vector_length(64)` over 2^24 elements; the kernel records the gang, worker and vector counts
 *                  it ran with (__builtin_goacc_parlevel_size), which must be exactly those
 *   upwind_async   upwind with `async(1)`: batches of 20 launches back to back, then
 *                  `acc wait(1)`; the time per launch is a batch's time / 20
 * Each kernel: 2 untimed launches, then LAUNCHES (default 60) timed ones, each its own
 * synchronous region (upwind_async: LAUNCHES/20 batches); prints
 * "metric acc_kernel_<KERNEL> <median us per launch> us". The kernels are idempotent
 * and their inputs hold small integers, so every result is exact in any order of
 * summation; each kernel's output is checked on the host after its last launch (and
 * reductions after every launch). A wrong result prints "ERROR ..." and exits 1.
 *   --allow-host  run on the host device when there is no NVIDIA one (checks only)
 *   -n LAUNCHES   timed launches per kernel (at least 20)
 */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "median.h"

#define NX 4096
#define NY 4096
#define N1 (1 << 24)
#define NN ((size_t) NX * NY)
#define NSMALL 1000
#define BLOCK_ROWS 8
#define BATCH 20
#define EXPLICIT_GANGS 1000
#define EXPLICIT_WORKERS 4
#define EXPLICIT_VECTOR 64

static double now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double *a, *b, *c, *d, *u, *out, *coef;
static int launches = 60;

static int fail (const char *k, size_t i, double got, double want)
{
  printf ("ERROR %s: element %zu is %.17g, want %.17g\n", k, i, got, want);
  return 1;
}

/* Inputs: small integers, so sums and products stay exact. */
static void fill (void)
{
  for (size_t i = 0; i < (size_t) NX * NY; i++)
    {
      a[i] = (double) (i % 7);
      b[i] = (double) (i % 5);
      c[i] = (double) (i % 3);
      d[i] = (double) (i % 11);
      /* Velocities of both signs and zero, in an irregular pattern. */
      u[i] = (double) ((long) ((i * 2654435761u) >> 7) % 5 - 2);
    }
  for (int k = 0; k < 64; k++)
    coef[k] = (double) (k % 4);
}

static void k_stencil (void)
{
#pragma acc parallel loop collapse(2) present(a[0:NN], b[0:NN], c[0:NN], d[0:NN], out[0:NN])
  for (int i = 1; i < NY - 1; i++)
    for (int j = 1; j < NX - 1; j++)
      {
	size_t p = (size_t) i * NX + j;
	out[p] = a[p - NX] + a[p + NX] + b[p - 1] + b[p + 1] + 4.0 * c[p] - d[p];
      }
}

static double want_stencil (size_t p)
{
  size_t i = p / NX, j = p % NX;
  if (i == 0 || i == NY - 1 || j == 0 || j == NX - 1)
    return -1.0;
  return a[p - NX] + a[p + NX] + b[p - 1] + b[p + 1] + 4.0 * c[p] - d[p];
}

/* The upwind update of cell p (row i, column j): the neighbours its velocity's sign
   picks. */
#define UPWIND(P, J)							\
  do									\
    {									\
      double v = u[P], r;						\
      if (v > 0)							\
	r = a[P] - v * (a[P] - a[(P) - 1]) + c[P];			\
      else if (v < 0)							\
	r = a[P] - v * (a[(P) + 1] - a[P]) - c[P];			\
      else								\
	r = a[P] + b[(P) - NX] - b[(P) + NX];				\
      out[P] = r;							\
    }									\
  while (0)

static double want_upwind (size_t p)
{
  size_t i = p / NX, j = p % NX;
  if (i == 0 || i == NY - 1 || j == 0 || j == NX - 1)
    return -1.0;
  double v = u[p];
  if (v > 0)
    return a[p] - v * (a[p] - a[p - 1]) + c[p];
  if (v < 0)
    return a[p] - v * (a[p + 1] - a[p]) - c[p];
  return a[p] + b[p - NX] - b[p + NX];
}

static void k_upwind (void)
{
#pragma acc parallel loop gang present(a[0:NN], b[0:NN], c[0:NN], u[0:NN], out[0:NN])
  for (int i = 1; i < NY - 1; i++)
    {
#pragma acc loop vector
      for (int j = 1; j < NX - 1; j++)
	{
	  size_t p = (size_t) i * NX + j;
	  UPWIND (p, j);
	}
    }
}

static void k_upwind_async (void)
{
#pragma acc parallel loop gang present(a[0:NN], b[0:NN], c[0:NN], u[0:NN], out[0:NN]) async(1)
  for (int i = 1; i < NY - 1; i++)
    {
#pragma acc loop vector
      for (int j = 1; j < NX - 1; j++)
	{
	  size_t p = (size_t) i * NX + j;
	  UPWIND (p, j);
	}
    }
}

static void k_upwind_worker (void)
{
#pragma acc parallel loop gang present(a[0:NN], b[0:NN], c[0:NN], u[0:NN], out[0:NN])
  for (int bi = 0; bi < NY / BLOCK_ROWS; bi++)
    {
#pragma acc loop worker
      for (int r = 0; r < BLOCK_ROWS; r++)
	{
	  int i = bi * BLOCK_ROWS + r;
	  if (i < 1 || i >= NY - 1)
	    continue;
#pragma acc loop vector
	  for (int j = 1; j < NX - 1; j++)
	    {
	      size_t p = (size_t) i * NX + j;
	      UPWIND (p, j);
	    }
	}
    }
}

static double want_redundant_scale (void)
{
  double s = 0;
  for (int k = 0; k < 64; k++)
    s += coef[k] * (double) (k + 1);
  return s;
}

static void k_redundant (void)
{
#pragma acc parallel present(a[0:NN], coef[0:64], out[0:NN])
  {
    /* Gang-redundant: every gang computes the same scale. */
    double s = 0;
    for (int k = 0; k < 64; k++)
      s += coef[k] * (double) (k + 1);
#pragma acc loop gang vector
    for (int i = 0; i < N1; i++)
      out[i] = a[i] * s + 1.0;
  }
}

static double k_reduce_sum (void)
{
  double s = 0;
#pragma acc parallel loop reduction(+:s) present(a[0:NN])
  for (int i = 0; i < N1; i++)
    s += a[i];
  return s;
}

static double k_reduce_max (void)
{
  double m = -1.0;
#pragma acc parallel loop reduction(max:m) present(d[0:NN])
  for (int i = 0; i < N1; i++)
    m = d[i] > m ? d[i] : m;
  return m;
}

static void k_kernels (void)
{
#pragma acc kernels present(a[0:NN], b[0:NN], out[0:NN])
  {
#pragma acc loop independent
    for (int i = 0; i < N1; i++)
      out[i] = 2.0 * a[i] + b[i];
  }
}

static void k_small (void)
{
#pragma acc parallel loop present(a[0:NN], b[0:NN], out[0:NN])
  for (int i = 0; i < NSMALL; i++)
    out[i] = a[i] * b[i] + 3.0;
}

static int dims_seen[3];

static void k_explicit (void)
{
  int g = EXPLICIT_GANGS;
  int *ds = dims_seen;
#pragma acc parallel loop gang worker vector num_gangs(g) \
  num_workers(EXPLICIT_WORKERS) vector_length(EXPLICIT_VECTOR) present(a[0:NN], out[0:NN]) \
  copyout(ds[0:3])
  for (int i = 0; i < N1; i++)
    {
      out[i] = a[i] + 5.0;
      if (i == 0)
	{
	  ds[0] = __builtin_goacc_parlevel_size (0);
	  ds[1] = __builtin_goacc_parlevel_size (1);
	  ds[2] = __builtin_goacc_parlevel_size (2);
	}
    }
}

/* Clears the output (on the device) so a kernel that wrote nothing is caught. */
static void poison_out (void)
{
  for (size_t i = 0; i < (size_t) NX * NY; i++)
    out[i] = -1.0;
#pragma acc update device(out[0:NX * NY])
}

static int check_out (const char *k, size_t n, double (*want) (size_t))
{
#pragma acc update self(out[0:NX * NY])
  for (size_t i = 0; i < n; i++)
    if (out[i] != want (i))
      return fail (k, i, out[i], want (i));
  return 0;
}

static double w_redundant (size_t i)
{
  return i < N1 ? a[i] * want_redundant_scale () + 1.0 : -1.0;
}
static double w_kernels (size_t i) { return i < N1 ? 2.0 * a[i] + b[i] : -1.0; }
static double w_small (size_t i) { return i < NSMALL ? a[i] * b[i] + 3.0 : -1.0; }
static double w_explicit (size_t i) { return i < N1 ? a[i] + 5.0 : -1.0; }

static double scale_cache;
static double w_redundant_fast (size_t i)
{
  return i < N1 ? a[i] * scale_cache + 1.0 : -1.0;
}

/* Times LAUNCHES launches of K (after 2 untimed) and prints the median. */
static double time_kernel (void (*k) (void))
{
  double *t = malloc (launches * sizeof *t);
  k ();
  k ();
  for (int r = 0; r < launches; r++)
    {
      double t0 = now ();
      k ();
      t[r] = now () - t0;
    }
  double m = median (t, launches);
  free (t);
  return m * 1e6;
}

static int run (const char *name)
{
  double us;
  if (!strcmp (name, "stencil"))
    {
      poison_out ();
      us = time_kernel (k_stencil);
      if (check_out (name, (size_t) NX * NY, want_stencil))
	return 1;
    }
  else if (!strcmp (name, "upwind"))
    {
      poison_out ();
      us = time_kernel (k_upwind);
      if (check_out (name, (size_t) NX * NY, want_upwind))
	return 1;
    }
  else if (!strcmp (name, "upwind_worker"))
    {
      poison_out ();
      us = time_kernel (k_upwind_worker);
      if (check_out (name, (size_t) NX * NY, want_upwind))
	return 1;
    }
  else if (!strcmp (name, "upwind_async"))
    {
      poison_out ();
      int batches = launches / BATCH;
      double *t = malloc (batches * sizeof *t);
      for (int r = 0; r < 2; r++)
	k_upwind_async ();
#pragma acc wait(1)
      for (int bt = 0; bt < batches; bt++)
	{
	  double t0 = now ();
	  for (int r = 0; r < BATCH; r++)
	    k_upwind_async ();
#pragma acc wait(1)
	  t[bt] = (now () - t0) / BATCH;
	}
      us = median (t, batches) * 1e6;
      free (t);
      if (check_out (name, (size_t) NX * NY, want_upwind))
	return 1;
    }
  else if (!strcmp (name, "redundant"))
    {
      poison_out ();
      us = time_kernel (k_redundant);
      scale_cache = want_redundant_scale ();
      (void) w_redundant;
      if (check_out (name, (size_t) NX * NY, w_redundant_fast))
	return 1;
    }
  else if (!strcmp (name, "reduce_sum") || !strcmp (name, "reduce_max"))
    {
      int is_sum = name[7] == 's';
      double want = 0;
      for (int i = 0; i < N1; i++)
	want = is_sum ? want + a[i] : (d[i] > want ? d[i] : want);
      double *t = malloc (launches * sizeof *t);
      for (int r = -2; r < launches; r++)
	{
	  double t0 = now ();
	  double got = is_sum ? k_reduce_sum () : k_reduce_max ();
	  double dt = now () - t0;
	  if (got != want)
	    {
	      printf ("ERROR %s: launch %d gave %.17g, want %.17g\n", name, r + 3, got, want);
	      return 1;
	    }
	  if (r >= 0)
	    t[r] = dt;
	}
      us = median (t, launches) * 1e6;
      free (t);
    }
  else if (!strcmp (name, "kernels"))
    {
      poison_out ();
      us = time_kernel (k_kernels);
      if (check_out (name, (size_t) NX * NY, w_kernels))
	return 1;
    }
  else if (!strcmp (name, "small"))
    {
      poison_out ();
      us = time_kernel (k_small);
      if (check_out (name, (size_t) NX * NY, w_small))
	return 1;
    }
  else if (!strcmp (name, "explicit"))
    {
      poison_out ();
      memset (dims_seen, 0, sizeof dims_seen);
      us = time_kernel (k_explicit);
      if (check_out (name, (size_t) NX * NY, w_explicit))
	return 1;
      int want[3] = { EXPLICIT_GANGS, EXPLICIT_WORKERS, EXPLICIT_VECTOR };
      if (acc_get_device_type () == acc_device_host)
	want[0] = want[1] = want[2] = 1;
      if (memcmp (dims_seen, want, sizeof want))
	{
	  printf ("ERROR explicit: ran with gangs=%d workers=%d vector=%d, want %d %d %d\n",
		  dims_seen[0], dims_seen[1], dims_seen[2], want[0], want[1], want[2]);
	  return 1;
	}
      printf ("# explicit: ran with gangs=%d workers=%d vector=%d\n", dims_seen[0],
	      dims_seen[1], dims_seen[2]);
    }
  else
    {
      printf ("ERROR unknown kernel '%s' (see the usage at the top of acc_kernel_bench.c)\n",
	      name);
      return 2;
    }
  printf ("metric acc_kernel_%s %.2f us\n", name, us);
  fflush (stdout);
  return 0;
}

int main (int argc, char **argv)
{
  static const char *all[] = { "stencil", "upwind", "upwind_worker", "redundant",
			       "reduce_sum", "reduce_max", "kernels", "small",
			       "explicit", "upwind_async" };
  int allow_host = 0, first = 1;
  while (first < argc && argv[first][0] == '-')
    {
      if (!strcmp (argv[first], "--allow-host"))
	allow_host = 1;
      else if (!strcmp (argv[first], "-n") && first + 1 < argc)
	launches = atoi (argv[++first]);
      else
	{
	  fprintf (stderr, "acc_kernel_bench: unknown option '%s'\n", argv[first]);
	  return 2;
	}
      first++;
    }
  if (launches < 20)
    {
      fprintf (stderr, "acc_kernel_bench: -n needs at least 20 launches\n");
      return 2;
    }
  if (!allow_host && acc_get_num_devices (acc_device_nvidia) < 1)
    {
      printf ("ERROR no NVIDIA device (--allow-host runs on the host)\n");
      return 1;
    }
  if (!allow_host)
    acc_set_device_type (acc_device_nvidia);
  size_t n = (size_t) NX * NY;
  a = malloc (n * sizeof *a);
  b = malloc (n * sizeof *b);
  c = malloc (n * sizeof *c);
  d = malloc (n * sizeof *d);
  u = malloc (n * sizeof *u);
  out = malloc (n * sizeof *out);
  coef = malloc (64 * sizeof *coef);
  if (!a || !b || !c || !d || !u || !out || !coef)
    {
      printf ("ERROR out of host memory\n");
      return 1;
    }
  fill ();
  int rc = 0;
#pragma acc data copyin(a[0:n], b[0:n], c[0:n], d[0:n], u[0:n], coef[0:64]) create(out[0:n])
  {
    if (first == argc)
      for (size_t k = 0; k < sizeof all / sizeof *all && !rc; k++)
	rc = run (all[k]);
    else
      for (int k = first; k < argc && !rc; k++)
	rc = run (argv[k]);
  }
  return rc;
}
