/* acc_bench.c - micro-benchmarks of the OpenACC side of an offload plugin, run the same
 * way with GCC's stock plugin and ours (bench/device-run.sh alternates them).
 *
 * usage: acc_bench MODE N
 *   sync N      median time of N `acc parallel num_gangs(1) present(a)` (us)
 *   async N     N `acc parallel async(1) present(a)` enqueued back to back, then one
 *               wait: median over 20 batches of the enqueue time per launch (us), and
 *               the time per launch including the wait; the result is checked
 *   asyncdata N as async, with `copyin(b[0:16])` per launch (a mapping per region)
 * Each result is a line "metric NAME VALUE UNIT"; a wrong result prints "ERROR ..." and
 * exits 1. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include "median.h"

static double now (void)
{
  struct timeval tv;
  gettimeofday (&tv, NULL);
  return tv.tv_sec + 1e-6 * tv.tv_usec;
}


#define BATCHES 20

int main (int argc, char **argv)
{
  if (argc < 3)
    {
      fprintf (stderr, "usage: acc_bench sync|async|asyncdata N\n");
      return 2;
    }
  int n = atoi (argv[2]);
  if (n < 1)
    n = 1;
  static int a[1];
  static int b[16];
  a[0] = 0;
  for (int i = 0; i < 16; i++)
    b[i] = 1;
  if (acc_get_num_devices (acc_device_nvidia) < 1)
    {
      printf ("ERROR no NVIDIA device\n");
      return 1;
    }
  acc_init (acc_device_nvidia);
#pragma acc enter data copyin(a[0:1])
  double *t = malloc ((n > BATCHES ? n : BATCHES) * sizeof *t);
  double *tw = malloc (BATCHES * sizeof *tw);
  long expect = 0;
  if (argv[1][0] == 's')
    {
      for (int i = 0; i < n + 10; i++)
	{
	  double t0 = now ();
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) present(a[0:1])
	  a[0] += 1;
	  if (i >= 10)
	    t[i - 10] = now () - t0;
	}
      expect = n + 10;
      printf ("metric acc_sync_launch %.2f us\n", median (t, n) * 1e6);
    }
  else
    {
      int data = argv[1][5] == 'd';
      for (int k = 0; k < BATCHES + 1; k++)
	{
	  double t0 = now ();
	  for (int i = 0; i < n; i++)
	    {
	      if (data)
		{
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) present(a[0:1]) copyin(b[0:16]) async(1)
		  a[0] += b[i % 16];
		}
	      else
		{
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) present(a[0:1]) async(1)
		  a[0] += 1;
		}
	    }
	  double t1 = now ();
#pragma acc wait(1)
	  double t2 = now ();
	  if (k > 0)
	    {
	      t[k - 1] = (t1 - t0) / n;
	      tw[k - 1] = (t2 - t0) / n;
	    }
	}
      expect = (long) n * (BATCHES + 1);
      printf ("metric acc_%s_enqueue %.2f us\n", data ? "async_data" : "async",
	      median (t, BATCHES) * 1e6);
      printf ("metric acc_%s_per_launch %.2f us\n", data ? "async_data" : "async",
	      median (tw, BATCHES) * 1e6);
    }
#pragma acc exit data copyout(a[0:1])
  if (a[0] != expect)
    {
      printf ("ERROR a = %d, expected %ld\n", a[0], expect);
      return 1;
    }
  return 0;
}
