/* two_process_pinned.c - two processes and page-locked host memory: what one frees, the
 * other can have.  Built by tests/device/build.sh, run on the GPU by tests/device/run.sh
 * with each plugin.
 *
 * Process A allocates X GiB with omp_alloc (ompx_gnu_pinned_mem_alloc: page-locked,
 * through the plugin's page_locked_host_alloc): 1 GiB as 256 KiB blocks (the pinned
 * pool's small-block chunks) and the rest as 512 MiB blocks, touches every page, maps
 * a part into a target region, frees everything and stays alive, idle, waiting on a
 * pipe; process B then allocates Y GiB the same way and checks it (every page written
 * and read back, a 64 MiB part through a target region).  X = Y = PINNED_GIB (default
 * 24), at most 40 % of MemAvailable each; the test is skipped, with a line saying so,
 * when MemAvailable is below 8 GiB.  MemAvailable (/proc/meminfo) around A's frees is
 * printed as information.  The parent touches no device (CUDA must not be initialised
 * before fork).
 * Prints "ok: ..." / "FAIL: ..." and "OK two processes pinned"; exit 0 when it passed,
 * 77 (TEST_SKIP, after the SKIP line) when it was skipped, 1 otherwise, 2 when there is
 * no device. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu_probe.h"

#define KIB ((size_t) 1 << 10)
#define MIB ((size_t) 1 << 20)
#define GIB ((size_t) 1 << 30)
#define SMALL (256 * KIB)
#define LARGE (512 * MIB)

static double mem_available_gib (void)
{
  FILE *f = fopen ("/proc/meminfo", "r");
  char line[256];
  double kib = -1;
  while (f && fgets (line, sizeof line, f))
    if (sscanf (line, "MemAvailable: %lf kB", &kib) == 1)
      break;
  if (f)
    fclose (f);
  return kib < 0 ? -1 : kib / (1 << 20);
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

/* Allocates `gib` GiB of pinned blocks into *blocks (count in *n); 0 if one failed.  */
static int alloc_all (size_t gib, void ***blocks, size_t *n, unsigned char pat)
{
  size_t nsmall = GIB / SMALL, nlarge = (gib - 1) * (GIB / LARGE);
  void **b = calloc (nsmall + nlarge, sizeof *b);
  *blocks = b;
  *n = 0;
  for (size_t i = 0; i < nsmall + nlarge; i++)
    {
      size_t sz = i < nsmall ? SMALL : LARGE;
      b[i] = omp_alloc (sz, ompx_gnu_pinned_mem_alloc);
      if (!b[i])
	return 0;
      (*n)++;
      for (size_t o = 0; o < sz; o += 4096)
	((unsigned char *) b[i])[o] = pat;
    }
  return 1;
}

/* Every page of every block holds `pat`, and a 64 MiB part survives a target region
   that adds 1 to each word.  */
static long check_all (void **b, size_t n, unsigned char pat)
{
  long bad = 0;
  for (size_t i = 0; i < n; i++)
    {
      size_t sz = i < GIB / SMALL ? SMALL : LARGE;
      for (size_t o = 0; o < sz; o += 4096)
	bad += ((unsigned char *) b[i])[o] != pat;
    }
  unsigned *q = b[n - 1];
  size_t m = 64 * MIB / sizeof (unsigned);
  for (size_t i = 0; i < m; i++)
    q[i] = (unsigned) i;
#pragma omp target teams distribute parallel for map(tofrom: q[0:m])
  for (size_t i = 0; i < m; i++)
    q[i] += 1;
  for (size_t i = 0; i < m; i++)
    bad += q[i] != (unsigned) i + 1;
  return bad;
}

static void free_all (void **b, size_t n)
{
  for (size_t i = 0; i < n; i++)
    omp_free (b[i], ompx_gnu_pinned_mem_alloc);
  free (b);
}

static int proc_a (size_t gib, int to_b, int from_b)
{
  if (!on_gpu ())
    {
      printf ("FAIL A: no offload device\n");
      say (to_b);
      return 2;
    }
  void **b;
  size_t n;
  double m0 = mem_available_gib ();
  int ok = alloc_all (gib, &b, &n, 0xa5);
  long bad = ok ? check_all (b, n, 0xa5) : 0;
  double m1 = mem_available_gib ();
  free_all (b, n);
  double m2 = mem_available_gib ();
  printf ("INFO A: MemAvailable %.1f GiB before, %.1f GiB holding %zu GiB pinned, %.1f GiB"
	  " after freeing it\n", m0, m1, gib, m2);
  if (!ok)
    printf ("FAIL A: omp_alloc of pinned memory returned NULL after %zu blocks\n", n);
  if (bad)
    printf ("FAIL A: %ld wrong values\n", bad);
  fflush (stdout);
  say (to_b);
  hear (from_b);
  return !ok || bad;
}

static int proc_b (size_t gib, size_t xgib, int from_a, int to_a)
{
  if (!hear (from_a))
    return 1;
  int rc = 0;
  if (!on_gpu ())
    {
      printf ("FAIL B: no offload device\n");
      rc = 2;
    }
  else
    {
      void **b;
      size_t n;
      int ok = alloc_all (gib, &b, &n, 0x5a);
      long bad = ok ? check_all (b, n, 0x5a) : 0;
      if (!ok)
	printf ("FAIL: B's omp_alloc of pinned memory returned NULL after %zu blocks (%.1f GiB)"
		" while A (freed %zu GiB) is idle\n", n,
		(double) (n < GIB / SMALL ? n * SMALL : GIB + (n - GIB / SMALL) * LARGE) / GIB,
		xgib);
      else
	printf ("%s B allocated %zu GiB of pinned memory after A freed %zu GiB and idles;"
		" %ld wrong values\n", bad ? "FAIL:" : "ok:", gib, xgib, bad);
      rc = !ok || bad;
      free_all (b, n);
    }
  fflush (stdout);
  say (to_a);
  return rc;
}

int main (void)
{
  double avail = mem_available_gib ();
  const char *e = getenv ("PINNED_GIB");
  size_t gib = e ? strtoul (e, 0, 10) : 24;
  if (avail < 8)
    {
      printf ("SKIP two processes pinned: MemAvailable %.1f GiB is below 8 GiB\n", avail);
      return TEST_SKIP;
    }
  if (gib > avail * 0.4)
    gib = (size_t) (avail * 0.4);
  if (gib < 2)
    gib = 2;
  printf ("INFO MemAvailable %.1f GiB; X = Y = %zu GiB\n", avail, gib);
  int ab[2], ba[2];
  if (pipe (ab) || pipe (ba))
    return 1;
  fflush (stdout);
  pid_t a = fork ();
  if (a == 0)
    {
      alarm (240);
      int r = proc_a (gib, ab[1], ba[0]);
      fflush (stdout);
      _exit (r);
    }
  pid_t b = fork ();
  if (b == 0)
    {
      alarm (240);
      int r = proc_b (gib, gib, ab[0], ba[1]);
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
  printf ("%s two processes pinned (A exit %d, B exit %d)\n", ra || rb ? "FAIL" : "OK", ra, rb);
  return ra || rb;
}
