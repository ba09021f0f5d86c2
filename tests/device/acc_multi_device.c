/* acc_multi_device.c - OpenACC on several devices: acc_set_device_num on each, with
 * async queues (needs 2 or more NVIDIA devices; prints "SKIP ..." and exits 77
 * otherwise). Built by tests/device/build.sh (-fopenacc), run on the GPU by
 * tests/device/run.sh with each plugin under its timeout.
 *
 *   1. For each device d: acc_set_device_num (d, acc_device_nvidia), then
 *      acc_get_device_num says d; `enter data create` of an array, `update device
 *      async(1)`, a `parallel loop async(1)`, `update self async(1)`, `wait(1)`; and on
 *      queue 2 after acc_wait_async (1, 2) a second kernel and copy back.
 *   2. Interleaved: for each device in turn, start a kernel and a copy back on queue 1
 *      and return at once (nothing waits); only then, device by device, acc_wait (1).
 *      Each device's queue 1 is its own: every device's array must hold its own result.
 *   3. Each device's present table is its own: an array created on device 0 alone is
 *      present there and not on the others (acc_is_present after acc_set_device_num).
 * Every result is compared with the host's own computation. Prints "OK ..." or "FAIL
 * ..." (exit 1). */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N (1L << 20)
#define MAXDEV 16
#define TEST_SKIP 77

static int failures;

static void fail (const char *what, int dev, long item, long got, long want)
{
  failures++;
  if (failures < 20)
    printf ("FAIL %s on device %d (item %ld: got %ld, want %ld)\n", what, dev, item, got,
	    want);
}

static long f (long v, long d)
{
  return v * 3 + d + 1;
}

static long g (long v, long d)
{
  return v ^ (d << 20);
}

int main (void)
{
  int nd = acc_get_num_devices (acc_device_nvidia);
  if (nd < 2)
    {
      printf ("SKIP acc_multi_device: %d NVIDIA device(s) visible, the test needs 2\n", nd);
      return TEST_SKIP;
    }
  if (nd > MAXDEV)
    nd = MAXDEV;
  static long *a[MAXDEV], *b[MAXDEV];
  for (int d = 0; d < nd; d++)
    {
      a[d] = malloc (N * sizeof (long));
      b[d] = malloc (N * sizeof (long));
    }
  /* 1. Each device in turn.  */
  for (int d = 0; d < nd; d++)
    {
      acc_set_device_num (d, acc_device_nvidia);
      if (acc_get_device_num (acc_device_nvidia) != d)
	fail ("acc_get_device_num after acc_set_device_num", d, 0,
	      acc_get_device_num (acc_device_nvidia), d);
      long *p = a[d], *q = b[d];
      long dd = d;
      for (long i = 0; i < N; i++)
	p[i] = i + 7 * dd;
#pragma acc enter data create(p[0:N], q[0:N])
#pragma acc update device(p[0:N]) async(1)
#pragma acc parallel loop present(p[0:N]) async(1)
      for (long i = 0; i < N; i++)
	p[i] = p[i] * 3 + dd + 1;
#pragma acc update self(p[0:N]) async(1)
      acc_wait_async (1, 2);
#pragma acc parallel loop present(p[0:N], q[0:N]) async(2)
      for (long i = 0; i < N; i++)
	q[i] = p[i] ^ (dd << 20);
#pragma acc update self(q[0:N]) async(2)
#pragma acc wait(1)
#pragma acc wait(2)
      for (long i = 0; i < N; i++)
	if (p[i] != f (i + 7 * dd, dd) || q[i] != g (f (i + 7 * dd, dd), dd))
	  {
	    fail ("queues 1 and 2", d, i, p[i] != f (i + 7 * dd, dd) ? p[i] : q[i],
		  p[i] != f (i + 7 * dd, dd) ? f (i + 7 * dd, dd) : g (f (i + 7 * dd, dd), dd));
	    break;
	  }
    }
  /* 2. Queue 1 of every device busy at once; the waits come after.  */
  for (int d = 0; d < nd; d++)
    {
      acc_set_device_num (d, acc_device_nvidia);
      long *p = a[d], *q = b[d];
      long dd = d;
#pragma acc parallel loop present(p[0:N], q[0:N]) async(1)
      for (long i = 0; i < N; i++)
	q[i] = p[i] * 5 - dd;
#pragma acc update self(q[0:N]) async(1)
    }
  for (int d = 0; d < nd; d++)
    {
      acc_set_device_num (d, acc_device_nvidia);
      acc_wait (1);
      long *p = a[d], *q = b[d];
      for (long i = 0; i < N; i++)
	if (q[i] != p[i] * 5 - d)
	  {
	    fail ("queue 1 of every device at once", d, i, q[i], p[i] * 5 - d);
	    break;
	  }
    }
  for (int d = 0; d < nd; d++)
    {
      acc_set_device_num (d, acc_device_nvidia);
      long *p = a[d], *q = b[d];
      if (!acc_is_present (q, N * sizeof (long)))
	fail ("array not present before exit data", d, 0, 0, 1);
#pragma acc exit data delete(p[0:N], q[0:N])
      if (acc_is_present (p, N * sizeof (long)))
	fail ("array still present after exit data", d, 0, 1, 0);
    }
  /* 3. Present tables per device.  */
  acc_set_device_num (0, acc_device_nvidia);
  long *p0 = a[0];
#pragma acc enter data copyin(p0[0:N])
  for (int d = 0; d < nd; d++)
    {
      acc_set_device_num (d, acc_device_nvidia);
      int present = acc_is_present (p0, N * sizeof (long)) != 0;
      if (present != (d == 0))
	fail ("acc_is_present of an array entered on device 0 alone", d, 0, present, d == 0);
    }
  acc_set_device_num (0, acc_device_nvidia);
#pragma acc exit data delete(p0[0:N])
  for (int d = 0; d < nd; d++)
    {
      free (a[d]);
      free (b[d]);
    }
  if (failures)
    {
      printf ("FAIL %d check(s), %d devices\n", failures, nd);
      return 1;
    }
  printf ("OK acc multi device: %d devices through acc_set_device_num, async queues 1 and 2 "
	  "on each, queue 1 of all at once, a present table each\n", nd);
  return 0;
}
