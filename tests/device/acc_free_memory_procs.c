/* acc_free_memory_procs.c - the OpenACC free-memory property around acc_malloc/acc_free
 * while other processes allocate and free on the same GPU (issue 54).
 * Built with -fopenacc by tests/device/build.sh, run on the GPU by tests/device/run.sh
 * (one process: every check must pass) and by the device step with 4 and 15.
 *
 * usage: acc_free_memory_procs [PROCS [CHECKS [NOISE]]]   (default 1, 1000, acc)
 * PROCS - 1 children are forked before any OpenACC call; each allocates and frees
 * blocks of 400 B to 8 MiB until the checker is done: with NOISE "acc" through
 * acc_malloc/acc_free (the plugin under test, with a small data region now and then),
 * with "driver" through libcuda's cuMemAlloc/cuMemFree in the device's primary context
 * (the same noise whichever plugin the checker runs).  The checker (the parent) then makes CHECKS checks, each:
 *   before = free-memory property; p = acc_malloc (400); mid = property; acc_free (p);
 *   after = property;
 *   alloc check: before - mid >= 400 (the property dropped by at least the bytes asked);
 *   free check:  after - mid >= 400 (acc_free gave them back).
 * The same two checks are counted on the driver's own cuMemGetInfo (what every plugin's
 * answer rests on) for comparison.  Another process's allocation between two readings
 * can break a check for any plugin; the device step compares the counts per 1000 with
 * the stock plugin's.
 * Prints "procs N checks C: property alloc-fail A free-fail F; driver alloc-fail A' free-fail F'"
 * and exits 0, except with PROCS = 1, where any property failure exits 1.  Exit 2 when
 * there is no NVIDIA device. */
#include <dlfcn.h>
#include <openacc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu_probe.h"

static long long prop (void)
{
  return (long long) acc_get_property (0, acc_device_nvidia, acc_property_free_memory);
}

/* libcuda's allocation entries for the "driver" noise (NULL until loaded).  */
static int (*cu_alloc) (unsigned long long *, size_t);
static int (*cu_free) (unsigned long long);

/* Makes the device's primary context current through libcuda; 0 on success.  */
static int driver_open (void)
{
  void *h = dlopen ("libcuda.so.1", RTLD_NOW);
  if (!h)
    return -1;
  int (*init) (unsigned) = (int (*) (unsigned)) dlsym (h, "cuInit");
  int (*get) (int *, int) = (int (*) (int *, int)) dlsym (h, "cuDeviceGet");
  int (*retain) (void **, int) = (int (*) (void **, int)) dlsym (h, "cuDevicePrimaryCtxRetain");
  int (*set) (void *) = (int (*) (void *)) dlsym (h, "cuCtxSetCurrent");
  *(void **) &cu_alloc = dlsym (h, "cuMemAlloc_v2");
  *(void **) &cu_free = dlsym (h, "cuMemFree_v2");
  int dev;
  void *ctx;
  if (!init || !get || !retain || !set || !cu_alloc || !cu_free || init (0) || get (&dev, 0)
      || retain (&ctx, dev) || set (ctx))
    return -1;
  return 0;
}

static void *noise_alloc (int driver, size_t n)
{
  if (!driver)
    return acc_malloc (n);
  unsigned long long p = 0;
  return cu_alloc (&p, n) == 0 ? (void *) (size_t) p : NULL;
}

static void noise_free (int driver, void *p)
{
  if (driver)
    cu_free ((unsigned long long) (size_t) p);
  else
    acc_free (p);
}

/* A noise process: allocate and free until the parent goes away (the pipe reads end
   of file) or 120 s have passed.  */
static void noise (int fd, unsigned seed, int driver)
{
  static const size_t sizes[] = { 400, 4096, 65536, 1 << 20, 3 << 20, 8 << 20 };
  enum { N = 16 };
  void *held[N] = { 0 };
  int x[256];
  if (driver ? driver_open () != 0 : (acc_init (acc_device_nvidia), 0))
    _exit (3);
  alarm (120);
  for (unsigned long i = 0;; i++)
    {
      if ((i & 63) == 0)
	{
	  char c;
	  fd_set s;
	  struct timeval tv = { 0, 0 };
	  FD_ZERO (&s);
	  FD_SET (fd, &s);
	  if (select (fd + 1, &s, NULL, NULL, &tv) > 0 && read (fd, &c, 1) <= 0)
	    break;
	  if (!driver)
	    {
#pragma acc parallel loop copy(x)
	      for (int k = 0; k < 256; k++)
		x[k] = k;
	    }
	}
      seed = seed * 1103515245u + 12345u;
      unsigned k = (seed >> 8) % N;
      if (held[k])
	{
	  noise_free (driver, held[k]);
	  held[k] = NULL;
	}
      else
	held[k] = noise_alloc (driver, sizes[(seed >> 16) % (sizeof sizes / sizeof *sizes)]);
    }
  for (int k = 0; k < N; k++)
    if (held[k])
      noise_free (driver, held[k]);
  _exit (0);
}

int main (int argc, char **argv)
{
  int procs = argc > 1 ? atoi (argv[1]) : 1;
  int checks = argc > 2 ? atoi (argv[2]) : 1000;
  const char *how = argc > 3 ? argv[3] : "acc";
  int driver = strcmp (how, "driver") == 0;
  if (procs < 1 || checks < 1 || (!driver && strcmp (how, "acc") != 0))
    {
      fprintf (stderr, "usage: %s [PROCS [CHECKS [acc|driver]]]\n", argv[0]);
      return 2;
    }
  int fds[2];
  if (pipe (fds) != 0)
    return 2;
  pid_t *kids = calloc (procs, sizeof *kids);
  for (int i = 1; i < procs; i++)
    if ((kids[i] = fork ()) == 0)
      {
	close (fds[1]);
	noise (fds[0], 7919u * i, driver);
      }
  close (fds[0]);
  if (acc_get_num_devices (acc_device_nvidia) < 1)
    {
      printf ("FAIL no NVIDIA device for OpenACC\n");
      return 2;
    }
  acc_set_device_num (0, acc_device_nvidia);
  acc_free (acc_malloc (1 << 20));
  /* Let the others start allocating.  */
  if (procs > 1)
    usleep (300000);
  int pa = 0, pf = 0, da = 0, df = 0;
  for (int i = 0; i < checks; i++)
    {
      long long b = prop (), db = free_bytes ();
      void *p = acc_malloc (400);
      long long m = prop (), dm = free_bytes ();
      acc_free (p);
      long long a = prop (), dA = free_bytes ();
      if (!p || b - m < 400)
	pa++;
      if (a - m < 400)
	pf++;
      if (db - dm < 400)
	da++;
      if (dA - dm < 400)
	df++;
      if (procs == 1 && (!p || b - m < 400 || a - m < 400) && pa + pf <= 5)
	printf ("FAIL check %d: property before %lld, after acc_malloc(400) %lld, after acc_free %lld\n",
		i, b, m, a);
    }
  close (fds[1]);
  for (int i = 1; i < procs; i++)
    waitpid (kids[i], NULL, 0);
  printf ("procs %d (%s noise) checks %d: property alloc-fail %d free-fail %d; driver alloc-fail %d free-fail %d\n",
	  procs, how, checks, pa, pf, da, df);
  if (procs == 1 && pa + pf > 0)
    return 1;
  printf ("OK free-memory property checks done\n");
  return 0;
}
