/* multi_two_process.c - device memory freed on one device of several is available to a
 * second process on that device (needs 2 or more devices; prints "SKIP ..." and exits
 * 77 otherwise). Built by tests/device/build.sh, run on the GPU by tests/device/run.sh
 * with each plugin.
 *
 * Process A works on every device: on each device d it allocates 75 % of d's memory
 * with omp_target_alloc (d), writes and checks part of it with kernels on d, and frees
 * it; then it stays alive, idle, waiting on a pipe (as an MPI rank waits in a
 * barrier), its contexts on every device still open. Process B then does the same on
 * every device: 75 % of each, written by a kernel on that device (first, middle and
 * last 64 MiB) and counted back by a second kernel. A plugin that keeps what A freed on
 * some device (a pool with no release, a cache without a bound, memory freed through
 * the wrong device's context) makes B fail there. The parent touches no device (CUDA
 * must not be initialised before fork): a first child counts the devices, A and B are
 * the next two. Device totals come from libcuda (cuDeviceTotalMem_v2, gpu_probe.h).
 * Prints "ok: ..." / "FAIL ..." per device and "OK ..." at the end; exit 1 on a
 * failure. */
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
#define PCT 75

/* Writes a pattern into the first, middle and last PART bytes of block p (n bytes) on
   device dev, then counts the words that differ, both with kernels on dev.  */
static long check_block (char *p, size_t n, unsigned seed, int dev)
{
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

/* Allocates PCT % of every device in turn, checks and frees it; 0 if all went well.  */
static int use_all (int nd, const char *who, unsigned seed)
{
  int rc = 0;
  for (int d = 0; d < nd; d++)
    {
      size_t t = gpu_total_of (d);
      if (!t)
	{
	  printf ("FAIL %s: device %d's total memory cannot be read\n", who, d);
	  rc = 1;
	  continue;
	}
      size_t n = (size_t) (t / 100.0 * PCT) & ~(MIB - 1);
      char *p = omp_target_alloc (n, d);
      if (!p)
	{
	  printf ("FAIL %s: omp_target_alloc(%.1f GiB) on device %d of %.1f GiB returned NULL%s\n",
		  who, n / GIB, d, t / GIB, *who == 'B' ? " while A, which freed as much there, idles" : "");
	  rc = 1;
	  continue;
	}
      long bad = check_block (p, n, seed + d, d);
      omp_target_free (p, d);
      printf ("%s %s: %.1f GiB of %.1f GiB on device %d, %ld words wrong\n",
	      bad ? "FAIL" : "ok:", who, n / GIB, t / GIB, d, bad);
      rc |= bad != 0;
    }
  fflush (stdout);
  return rc;
}

static int status_of (int s)
{
  return WIFEXITED (s) ? WEXITSTATUS (s) : 128 + WTERMSIG (s);
}

int main (void)
{
  fflush (stdout);
  pid_t c = fork ();
  if (c == 0)
    {
      int n = omp_get_num_devices ();
      _exit (n > 100 ? 100 : n);
    }
  int s = 0;
  waitpid (c, &s, 0);
  int nd = status_of (s);
  if (nd < 2)
    {
      printf ("SKIP multi_two_process: %d offload device(s) visible, the test needs 2\n", nd);
      return TEST_SKIP;
    }
  int ab[2], ba[2];
  if (pipe (ab) || pipe (ba))
    return 1;
  pid_t a = fork ();
  if (a == 0)
    {
      alarm (240);
      int r = use_all (nd, "A", 7);
      say (ab[1]);
      hear (ba[0]);   /* idle until B is done: no call into the runtime meanwhile */
      _exit (r);
    }
  pid_t b = fork ();
  if (b == 0)
    {
      alarm (240);
      int r = hear (ab[0]) ? use_all (nd, "B", 11) : 1;
      say (ba[1]);
      _exit (r);
    }
  close (ab[0]); close (ab[1]); close (ba[0]); close (ba[1]);
  int sa = 0, sb = 0;
  waitpid (a, &sa, 0);
  waitpid (b, &sb, 0);
  int ra = status_of (sa), rb = status_of (sb);
  if (ra || rb)
    {
      printf ("FAIL two processes on %d devices: A exit %d, B exit %d\n", nd, ra, rb);
      return 1;
    }
  printf ("OK two processes on %d devices: B had %d %% of every device after A freed as "
	  "much there and idled\n", nd, PCT);
  return 0;
}
