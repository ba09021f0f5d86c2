/* acc_async_copies.c - OpenACC async-queue copies (docs/copy-ordering.md, "OpenACC
 * async-queue copies"): for pageable arrays of 64 B, 32 KiB, 2 MiB and 64 MiB (each
 * path of the copy engine), `update device async(1)`, a kernel on queue 1, `update self
 * async(1)` and `wait(1)` see each other's data; a copy on queue 2 after
 * `acc_wait_async (1, 2)` sees queue 1's copy; the source of an async copy is reused
 * only after the wait and the device keeps what was copied; a round trip through
 * acc_memcpy_to_device_async / acc_memcpy_from_device_async on one queue. Built by
 * tests/device/build.sh (-fopenacc), run on the GPU by tests/device/run.sh with each
 * plugin (both must pass). Prints "OK acc async copies" or "FAIL: ..." and exits 1. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

static void fail (const char *what, size_t n, long i, long got, long want)
{
  failures++;
  if (failures < 10)
    printf ("FAIL: %s, %zu elements (item %ld: got %ld, want %ld)\n", what, n, i, got,
	    want);
}

/* The first item of a[0:n] that is not want(i), or -1.  */
#define FIRST_BAD(a, n, want)                                                       \
  ({                                                                                 \
    long bad_ = -1;                                                                  \
    for (size_t i = 0; i < (n); i++)                                                 \
      if ((a)[i] != (want))                                                          \
	{                                                                            \
	  bad_ = (long) i;                                                           \
	  break;                                                                     \
	}                                                                            \
    bad_;                                                                            \
  })

static void one_size (size_t n, int round)
{
  long *a = malloc (n * sizeof (long)), *b = malloc (n * sizeof (long));
  long *c = malloc (n * sizeof (long));
  if (!a || !b || !c)
    {
      printf ("FAIL: malloc of %zu elements\n", n);
      exit (1);
    }
  long base = round * 1000000L;
  for (size_t i = 0; i < n; i++)
    a[i] = base + (long) i;
#pragma acc enter data create(a[0:n], b[0:n], c[0:n])
  /* Copy, kernel and copy back on one queue.  */
#pragma acc update device(a[0:n]) async(1)
#pragma acc parallel loop present(a[0:n], b[0:n]) async(1)
  for (size_t i = 0; i < n; i++)
    b[i] = 2 * a[i] + 1;
  memset (b, 0, n * sizeof (long));
#pragma acc update self(b[0:n]) async(1)
#pragma acc wait(1)
  long bad = FIRST_BAD (b, n, 2 * (base + (long) i) + 1);
  if (bad >= 0)
    fail ("copy, kernel, copy back on queue 1", n, bad, b[bad],
	  2 * (base + bad) + 1);
  /* The source is the program's again after the wait: the device keeps the copy.  */
  for (size_t i = 0; i < n; i++)
    a[i] = -1;
#pragma acc parallel loop present(a[0:n], c[0:n]) async(1)
  for (size_t i = 0; i < n; i++)
    c[i] = a[i];
#pragma acc update self(c[0:n]) async(1)
#pragma acc wait(1)
  bad = FIRST_BAD (c, n, base + (long) i);
  if (bad >= 0)
    fail ("device data after the source was reused", n, bad, c[bad], base + bad);
  /* A copy on queue 1, then queue 2 waits for queue 1 and copies back.  */
  for (size_t i = 0; i < n; i++)
    a[i] = base + 7 * (long) i;
#pragma acc update device(a[0:n]) async(1)
  acc_wait_async (1, 2);
  memset (c, 0, n * sizeof (long));
#pragma acc parallel loop present(a[0:n], c[0:n]) async(2)
  for (size_t i = 0; i < n; i++)
    c[i] = a[i] + 3;
#pragma acc update self(c[0:n]) async(2)
#pragma acc wait(2)
  bad = FIRST_BAD (c, n, base + 7 * (long) i + 3);
  if (bad >= 0)
    fail ("queue 2 after acc_wait_async (1, 2)", n, bad, c[bad], base + 7 * bad + 3);
#pragma acc wait(1)
  /* acc_memcpy_*_async round trip through memory the program allocated itself.  */
  long *d = acc_malloc (n * sizeof (long));
  if (!d)
    {
      printf ("FAIL: acc_malloc of %zu elements\n", n);
      exit (1);
    }
  for (size_t i = 0; i < n; i++)
    a[i] = base - (long) i;
  memset (c, 0, n * sizeof (long));
  acc_memcpy_to_device_async (d, a, n * sizeof (long), 3);
  acc_memcpy_from_device_async (c, d, n * sizeof (long), 3);
  acc_wait (3);
  bad = FIRST_BAD (c, n, base - (long) i);
  if (bad >= 0)
    fail ("acc_memcpy async round trip", n, bad, c[bad], base - bad);
  acc_free (d);
#pragma acc exit data delete(a[0:n], b[0:n], c[0:n])
  free (a);
  free (b);
  free (c);
}

int main (void)
{
  /* The checks rely on device memory apart from the host's.  */
  if (acc_get_num_devices (acc_device_nvidia) == 0)
    {
      printf ("FAIL: no NVIDIA device (host fallback)\n");
      return 1;
    }
  /* In bytes: 64, 32 KiB, 2 MiB, 64 MiB.  */
  static const size_t sizes[] = { 8, 4096, 256 << 10, 8 << 20 };
  for (int round = 0; round < 3; round++)
    for (int k = 0; k < 4; k++)
      one_size (sizes[k], round * 4 + k);
  if (failures)
    return 1;
  printf ("OK acc async copies\n");
  return 0;
}
