/* multi_nowait.c - `target nowait` on every device, then one `taskwait` (needs 2 or
 * more devices; prints "SKIP ..." and exits 77 otherwise). Built by
 * tests/device/build.sh, run on the GPU by tests/device/run.sh with each plugin under
 * its timeout.
 *
 * From one thread of a `parallel` (in `single`, so the regions become deferred target
 * tasks the team runs): K `target teams distribute parallel for nowait device(d)`
 * regions per device d, each over an array of its own (map tofrom), each recording the
 * device number it ran on; and a chain that visits every device in turn through
 * `depend(inout:)` on one array (device 0, 1, ..., N-1, 0, ...), each link's kernel
 * using what the previous device left. One `taskwait` waits for all of it; then every
 * element, every device number and the chain's result are compared with the host's own
 * computation. Prints "OK ..." or "FAIL ..." (exit 1). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_probe.h"

#define K 4
#define M (1L << 18)
#define STEPS 64
#define MAXDEV 16

/* The work of one element: STEPS rounds of a 64-bit LCG mixed with the tag.  */
#pragma omp begin declare target
static long work (long x, long tag)
{
  unsigned long u = (unsigned long) x;
  for (int s = 0; s < STEPS; s++)
    u = u * 6364136223846793005ul + (unsigned long) tag;
  return (long) (u >> 1);
}
#pragma omp end declare target

int main (void)
{
  int nd = need_devices (2, "multi_nowait");
  if (nd > MAXDEV)
    nd = MAXDEV;
  static long *x[MAXDEV][K];
  static int where[MAXDEV][K];
  for (int d = 0; d < nd; d++)
    for (int k = 0; k < K; k++)
      {
	x[d][k] = malloc (M * sizeof (long));
	for (long i = 0; i < M; i++)
	  x[d][k][i] = i + 1000 * (d * K + k);
	where[d][k] = -1;
      }
  int links = 3 * nd;
  long *chain = malloc (M * sizeof (long));
  int *chain_where = malloc (links * sizeof (int));
  for (long i = 0; i < M; i++)
    chain[i] = i;
  for (int l = 0; l < links; l++)
    chain_where[l] = -1;
#pragma omp parallel
#pragma omp single
  {
    for (int d = 0; d < nd; d++)
      for (int k = 0; k < K; k++)
	{
	  long *p = x[d][k];
	  int *w = &where[d][k];
	  long tag = d * K + k + 1;
#pragma omp target teams distribute parallel for nowait device(d) map(tofrom: p[0:M]) map(from: w[0:1])
	  for (long i = 0; i < M; i++)
	    {
	      p[i] = work (p[i], tag);
	      if (i == 0)
		w[0] = omp_get_device_num ();
	    }
	}
    for (int l = 0; l < links; l++)
      {
	int d = l % nd;
	int *w = &chain_where[l];
#pragma omp target teams distribute parallel for nowait device(d) depend(inout: chain[0:M]) map(tofrom: chain[0:M]) map(from: w[0:1])
	for (long i = 0; i < M; i++)
	  {
	    chain[i] = work (chain[i], 100 + l);
	    if (i == 0)
	      w[0] = omp_get_device_num ();
	  }
      }
#pragma omp taskwait
  }
  int failures = 0;
  for (int d = 0; d < nd; d++)
    for (int k = 0; k < K; k++)
      {
	if (where[d][k] != d)
	  {
	    failures++;
	    printf ("FAIL region %d of device %d ran on device %d\n", k, d, where[d][k]);
	  }
	long tag = d * K + k + 1;
	for (long i = 0; i < M; i++)
	  if (x[d][k][i] != work (i + 1000 * (d * K + k), tag))
	    {
	      failures++;
	      printf ("FAIL region %d of device %d: element %ld is %ld, want %ld\n", k, d, i,
		      x[d][k][i], work (i + 1000 * (d * K + k), tag));
	      break;
	    }
	free (x[d][k]);
      }
  for (int l = 0; l < links; l++)
    if (chain_where[l] != l % nd)
      {
	failures++;
	printf ("FAIL chain link %d ran on device %d, want %d\n", l, chain_where[l], l % nd);
      }
  for (long i = 0; i < M; i++)
    {
      long want = i;
      for (int l = 0; l < links; l++)
	want = work (want, 100 + l);
      if (chain[i] != want)
	{
	  failures++;
	  printf ("FAIL chain across devices: element %ld is %ld, want %ld\n", i, chain[i], want);
	  break;
	}
    }
  if (failures)
    {
      printf ("FAIL %d check(s), %d devices\n", failures, nd);
      return 1;
    }
  printf ("OK %d devices: %d `target nowait` regions each and a %d-link chain across them "
	  "through depend, one taskwait, all results right\n", nd, K, links);
  return 0;
}
