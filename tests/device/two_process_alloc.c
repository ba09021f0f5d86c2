/* two_process_alloc.c - two processes on one GPU: what one frees, the other can have.
 * Built by tests/device/build.sh, run on the GPU by tests/device/run.sh with each plugin.
 *
 * For each case (X, Y) in percent of the device's total memory: process A allocates
 * X % with omp_target_alloc, writes part of it with a kernel, frees it and then stays
 * alive, idle, waiting on a pipe (as an MPI rank waits in a barrier); process B then
 * allocates Y % and checks that it is usable: a kernel writes a pattern into its first,
 * middle and last 64 MiB and a second kernel counts what differs.  A plugin that keeps
 * what A freed (a pool with no release, a cache without a bound) makes B fail.
 * Cases: 75 %/75 %, 50 %/75 %, 75 %/50 %.  The parent touches no device (CUDA must not
 * be initialised before fork): A and B are both its children.
 * Prints "ok: ..." / "FAIL: ..." per case and "OK two processes" at the end; exit 0
 * when every case passed, 1 otherwise, 2 when there is no device. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu_probe.h"

#define MIB ((size_t) 1 << 20)
#define GIB ((double) (1 << 30))
#define PART (64 * MIB)

/* Writes a pattern into [off, off+PART) of device block p (of n bytes) for each of the
   first, middle and last parts, then counts the words that differ.  */
static long check_block (char *p, size_t n, unsigned seed)
{
  int dev = omp_get_default_device ();
  size_t offs[3] = { 0, (n / 2) & ~(size_t) 4095, n - PART };
  long bad = 0;
  for (int k = 0; k < 3; k++)
    {
      unsigned *q = (unsigned *) (p + offs[k]);
      size_t m = PART / sizeof (unsigned);
      unsigned s = seed + k;
#pragma omp target teams distribute parallel for is_device_ptr(q) device(dev)
      for (size_t i = 0; i < m; i++)
	q[i] = (unsigned) i * 2654435761u ^ s;
      long b = 0;
#pragma omp target teams distribute parallel for is_device_ptr(q) reduction(+: b) map(tofrom: b) device(dev)
      for (size_t i = 0; i < m; i++)
	b += q[i] != ((unsigned) i * 2654435761u ^ s);
      bad += b;
    }
  return bad;
}

static size_t total_memory (void)
{
  size_t f = 0, t = 0;
  if (!on_gpu () || gpu_mem (&f, &t) != 0)
    return 0;
  return t;
}

static void say (int fd)
{
  char c = 1;
  if (write (fd, &c, 1) != 1)
    _exit (3);
}

static int hear (int fd)
{
  char c;
  return read (fd, &c, 1) == 1;
}

/* Process A: allocate, use, free X %, tell B, wait until B is done.  */
static int proc_a (int pct, int to_b, int from_b)
{
  size_t t = total_memory ();
  if (!t)
    {
      printf ("FAIL A: no offload device\n");
      say (to_b);
      return 2;
    }
  size_t n = (size_t) (t / 100.0 * pct) & ~(MIB - 1);
  char *p = omp_target_alloc (n, omp_get_default_device ());
  int rc = 0;
  if (!p)
    {
      printf ("FAIL A: omp_target_alloc(%.1f GiB) returned NULL\n", n / GIB);
      rc = 1;
    }
  else
    {
      long bad = check_block (p, n, 7);
      if (bad)
	{
	  printf ("FAIL A: %ld words wrong in its %.1f GiB\n", bad, n / GIB);
	  rc = 1;
	}
      omp_target_free (p, omp_get_default_device ());
    }
  fflush (stdout);
  say (to_b);
  /* Idle until B is done: no call into the runtime meanwhile.  */
  hear (from_b);
  return rc;
}

/* Process B: once A has freed, allocate Y % and check it.  */
static int proc_b (int pct, int from_a, int to_a, int xpct)
{
  if (!hear (from_a))
    return 1;
  size_t t = total_memory ();
  int rc = 0;
  if (!t)
    {
      printf ("FAIL B: no offload device\n");
      rc = 2;
    }
  else
    {
      size_t n = (size_t) (t / 100.0 * pct) & ~(MIB - 1);
      char *p = omp_target_alloc (n, omp_get_default_device ());
      if (!p)
	{
	  printf ("FAIL: X=%d%% Y=%d%%: B's omp_target_alloc(%.1f GiB) returned NULL while A"
		  " (freed %.1f GiB) is idle\n", xpct, pct, n / GIB, t / 100.0 * xpct / GIB);
	  rc = 1;
	}
      else
	{
	  long bad = check_block (p, n, 11);
	  printf ("%s X=%d%% Y=%d%%: B allocated %.1f GiB of %.1f GiB after A freed %.1f GiB"
		  " and idles; %ld words wrong\n", bad ? "FAIL:" : "ok:", xpct, pct, n / GIB,
		  t / GIB, t / 100.0 * xpct / GIB, bad);
	  rc = bad != 0;
	  omp_target_free (p, omp_get_default_device ());
	}
    }
  fflush (stdout);
  say (to_a);
  return rc;
}

static int run_case (int xpct, int ypct)
{
  int ab[2], ba[2];
  if (pipe (ab) || pipe (ba))
    return 1;
  fflush (stdout);
  pid_t a = fork ();
  if (a == 0)
    {
      alarm (240);
      int r = proc_a (xpct, ab[1], ba[0]);
      fflush (stdout);
      _exit (r);
    }
  pid_t b = fork ();
  if (b == 0)
    {
      alarm (240);
      int r = proc_b (ypct, ab[0], ba[1], xpct);
      fflush (stdout);
      _exit (r);
    }
  close (ab[0]); close (ab[1]); close (ba[0]); close (ba[1]);
  int sa = 0, sb = 0;
  waitpid (a, &sa, 0);
  waitpid (b, &sb, 0);
  int ra = WIFEXITED (sa) ? WEXITSTATUS (sa) : 128 + WTERMSIG (sa);
  int rb = WIFEXITED (sb) ? WEXITSTATUS (sb) : 128 + WTERMSIG (sb);
  if (ra == 2 || rb == 2)
    return 2;
  if (ra || rb)
    printf ("FAIL: X=%d%% Y=%d%%: A exit %d, B exit %d\n", xpct, ypct, ra, rb);
  return ra || rb;
}

int main (void)
{
  static const int cases[][2] = { { 75, 75 }, { 50, 75 }, { 75, 50 } };
  int fails = 0;
  for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++)
    {
      int r = run_case (cases[i][0], cases[i][1]);
      if (r == 2)
	return 2;
      fails += r;
    }
  printf ("%s two processes\n", fails ? "FAIL" : "OK");
  return fails != 0;
}
