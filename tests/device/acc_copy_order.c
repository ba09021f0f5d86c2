/* acc_copy_order.c - OpenACC: data moved to the device by synchronous copies is seen by
 * what follows them (docs/copy-ordering.md): synchronous and async(1) parallel
 * regions after `update device`, `acc_memcpy_to_device` then `acc_memcpy_from_device`,
 * and `copyin` of small arrays into back-to-back synchronous regions. Built by
 * tests/device/build.sh (-fopenacc), run on the GPU by tests/device/run.sh with each
 * plugin (both must pass). Prints "OK acc copy ordering" or "FAIL: ..." and exits 1. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 4096

static int failures;

static void fail (const char *what, long i, long got, long want)
{
  failures++;
  if (failures < 10)
    printf ("FAIL: %s (item %ld: got %ld, want %ld)\n", what, i, got, want);
}

int main (void)
{
  static long a[N], b[N];
  long *d = acc_malloc (N * sizeof (long));
  if (!d)
    {
      printf ("FAIL: acc_malloc\n");
      return 1;
    }
#pragma acc enter data create(a[0:N], b[0:N])
  for (int k = 0; k < 100; k++)
    {
      for (int i = 0; i < N; i++)
	a[i] = k * 10000L + i;
#pragma acc update device(a[0:N])
      if (k % 2)
	{
#pragma acc parallel loop present(a[0:N], b[0:N]) async(1)
	  for (int i = 0; i < N; i++)
	    b[i] = 2 * a[i] + 1;
#pragma acc wait(1)
	}
      else
	{
#pragma acc parallel loop present(a[0:N], b[0:N])
	  for (int i = 0; i < N; i++)
	    b[i] = 2 * a[i] + 1;
	}
#pragma acc update self(b[0:N])
      for (int i = 0; i < N; i++)
	if (b[i] != 2 * (k * 10000L + i) + 1)
	  {
	    fail ("parallel after update device", k * (long) N + i, b[i], 2 * (k * 10000L + i) + 1);
	    break;
	  }
      /* A round trip through memory the program allocated itself.  */
      acc_memcpy_to_device (d, a, (k % 16 + 1) * sizeof (long));
      memset (b, 0, sizeof b);
      acc_memcpy_from_device (b, d, (k % 16 + 1) * sizeof (long));
      for (int i = 0; i < k % 16 + 1; i++)
	if (b[i] != a[i])
	  {
	    fail ("acc_memcpy round trip", i, b[i], a[i]);
	    break;
	  }
    }
  /* Small copyin arrays into back-to-back regions, each with new values.  */
  long s[16], sum = 0;
  for (int k = 0; k < 200; k++)
    {
      long want = 0;
      for (int i = 0; i < 16; i++)
	want += s[i] = k * 16 + i;
#pragma acc parallel num_gangs(1) num_workers(1) vector_length(32) copyin(s) copyout(sum)
      {
	long t = 0;
	for (int i = 0; i < 16; i++)
	  t += s[i];
	sum = t;
      }
      if (sum != want)
	fail ("copyin into a synchronous region", k, sum, want);
    }
#pragma acc exit data delete(a[0:N], b[0:N])
  acc_free (d);
  if (failures)
    return 1;
  printf ("OK acc copy ordering\n");
  return 0;
}
