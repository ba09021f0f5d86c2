/* interop_nowait.c - `target nowait` ordered by an interop object's dependences.
 * Built by tests/device/build.sh, run on the GPU by tests/device/run.sh with each plugin.
 *
 * Each variant: the host sets A[i] = i; then
 *   #pragma omp interop init(targetsync: obj) depend(inout: A)
 *   #pragma omp target nowait depend(inout: A) map(tofrom: A[0:N])   (spins SPIN_S, then A[i] = 2*i+1)
 *   #pragma omp interop destroy(obj) [nowait] depend(out: A)
 *   [synchronisation]; the host reads A.
 * Variants (all run in sequence, or the one named by argv[1]):
 *   racy           destroy ... nowait, no synchronisation before the read.  libgomp 16's
 *                  GOMP_interop makes the destroy a deferred task (the object has a stream),
 *                  so nothing orders the read after the target task's copy-back: a data race
 *                  by the OpenMP rules.  Its outcome is printed as information only
 *                  ("INFO racy variant: host saw updated|stale|mixed values"); after a
 *                  taskwait the values must be updated (checked).
 *   taskwait       destroy ... nowait, then `#pragma omp taskwait` before the read.
 *   taskwait-dep   destroy ... nowait, then `#pragma omp taskwait depend(in: A)`.
 *   destroy-sync   destroy without nowait (an included task: libgomp waits for the
 *                  dependences of depend(out: A) before returning).
 *   no-targetsync  init(target: obj) (no targetsync, so no stream; GCC allows no depend
 *                  on that init), destroy ... nowait depend(out: A):
 *                  nowait has no effect (OpenMP 6.0), the destroy waits for its dependences.
 * A variant passes when the host saw every element updated ("ok: VARIANT: ...");
 * otherwise "FAIL: VARIANT: ..." and exit 1.  Exit 2 when there is no offload device. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1 << 14)
#define SPIN_S 0.05

static double A[N];

/* 2 = all updated, 1 = all stale, 0 = mixed.  */
static int look (void)
{
  int upd = 0, stale = 0;
  for (int i = 0; i < N; i++)
    {
      if (A[i] == 2.0 * i + 1.0)
	upd++;
      else if (A[i] == (double) i)
	stale++;
    }
  return upd == N ? 2 : stale == N ? 1 : 0;
}

static const char *word (int v)
{
  return v == 2 ? "updated" : v == 1 ? "stale" : "mixed";
}

static void reset (void)
{
  for (int i = 0; i < N; i++)
    A[i] = i;
}

/* The target task of every variant: long enough that a read racing with it shows.  */
static void launch (void)
{
#pragma omp target nowait depend(inout: A) map(tofrom: A[0:N])
  {
    double t0 = omp_get_wtime ();
    while (omp_get_wtime () - t0 < SPIN_S)
      ;
    for (int i = 0; i < N; i++)
      A[i] = 2.0 * A[i] + 1.0;
  }
}

static int report (const char *variant, int v, double ms)
{
  printf ("%s %s: host saw %s values (%.1f ms from the target construct to the read)\n",
	  v == 2 ? "ok:" : "FAIL:", variant, word (v), ms);
  return v == 2;
}

static int run (const char *variant)
{
  omp_interop_t obj = omp_interop_none;
  double t0;
  int v;
  reset ();
  if (!strcmp (variant, "no-targetsync"))
    {
#pragma omp interop init(target: obj)
      t0 = omp_get_wtime ();
      launch ();
#pragma omp interop destroy(obj) nowait depend(out: A)
      return report (variant, look (), 1e3 * (omp_get_wtime () - t0));
    }

#pragma omp interop init(targetsync: obj) depend(inout: A)
  if (obj == omp_interop_none)
    {
      printf ("FAIL: %s: interop init(targetsync) gave omp_interop_none\n", variant);
      return 0;
    }
  t0 = omp_get_wtime ();
  launch ();
  if (!strcmp (variant, "destroy-sync"))
    {
#pragma omp interop destroy(obj) depend(out: A)
      return report (variant, look (), 1e3 * (omp_get_wtime () - t0));
    }

#pragma omp interop destroy(obj) nowait depend(out: A)
  if (!strcmp (variant, "racy"))
    {
      v = look ();
      double ms = 1e3 * (omp_get_wtime () - t0);
      printf ("INFO racy variant: host saw %s values (%.1f ms from the target construct"
	      " to the read, no taskwait)\n", word (v), ms);
#pragma omp taskwait
      return report ("racy (after taskwait)", look (), 1e3 * (omp_get_wtime () - t0));
    }
  if (!strcmp (variant, "taskwait-dep"))
    {
#pragma omp taskwait depend(in: A)
    }
  else
    {
#pragma omp taskwait
    }
  return report (variant, look (), 1e3 * (omp_get_wtime () - t0));
}

int main (int argc, char **argv)
{
  static const char *const all[]
    = { "racy", "taskwait", "taskwait-dep", "destroy-sync", "no-targetsync" };
  int n = sizeof all / sizeof all[0], ok = 1, gpu = 0;
  if (omp_get_num_devices () < 1)
    {
      printf ("FAIL no offload device\n");
      return 2;
    }
#pragma omp target map(from: gpu)
  gpu = !omp_is_initial_device ();
  if (!gpu)
    {
      printf ("FAIL the target region fell back to the host\n");
      return 2;
    }
  for (int i = 0; i < n; i++)
    if (argc < 2 || !strcmp (argv[1], all[i]))
      ok &= run (all[i]);
#pragma omp taskwait
  printf ("%s interop/nowait variants\n", ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
