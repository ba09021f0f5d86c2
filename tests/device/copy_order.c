/* copy_order.c - host-to-device copies are seen by everything that follows them
 * (docs/copy-ordering.md). A plugin may return from a small host-to-device copy before
 * its DMA has ended; these checks fail if anything that can observe device memory is
 * not ordered after such a copy. Built by tests/device/build.sh, run on the GPU by
 * tests/device/run.sh with each plugin (both must pass).
 *
 *   threads     8 threads x 2000 regions `map(to: a[64]) map(from: sum)`, each with
 *               its own values, the sum checked;
 *   shared      8 threads; per round thread 0 updates a shared mapped array
 *               (`target update to`, 8 B .. 256 KiB), a barrier, then every thread
 *               reads it in a region (its own stream) and checks it;
 *   nowait      `target update to` of x, then `target nowait` regions reading it,
 *               taskwait, results checked (the async launch stream is not the thread's);
 *   bounce      200 updates of a 64 KiB array, each with new values, each followed by a
 *               region checking all of it (the bounce buffer must not be rewritten
 *               before its copy ran);
 *   pinned      an update from ompx_gnu_pinned_mem_alloc memory, the host buffer
 *               overwritten at once, a region reads the old values;
 *   roundtrip   `target update to` then `target update from` into the same host array
 *               after clearing it on the host, sizes 1 B .. 1 MiB;
 *   interop     `target update to`, then an interop object's targetsync stream (CUDA
 *               driver calls, libcuda loaded with dlopen) copies the mapped array back:
 *               the program's work on that stream sees the update.
 * Prints "ok: NAME" per check, then "OK copy ordering"; "FAIL: ..." and exit 1 on a
 * wrong value; exit 2 when there is no offload device. */
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_probe.h"

#define THREADS 8

static int failures;

static void fail (const char *what, long i, long got, long want)
{
#pragma omp atomic
  failures++;
  if (failures < 10)
    printf ("FAIL: %s (item %ld: got %ld, want %ld)\n", what, i, got, want);
}

static void check_threads (void)
{
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num ();
    int a[64];
    for (long i = 0; i < 2000; i++)
      {
	long want = 0, sum = 0;
	for (int j = 0; j < 64; j++)
	  {
	    a[j] = (int) (i * 3 + j + 1000 * t);
	    want += a[j];
	  }
#pragma omp target map(to: a) map(from: sum)
	{
	  long s = 0;
	  for (int j = 0; j < 64; j++)
	    s += a[j];
	  sum = s;
	}
	if (sum != want)
	  fail ("threads: region sum", i, sum, want);
      }
  }
  printf ("ok: threads\n");
}

#define SHARED_MAX (256 << 10)
static unsigned char shared_buf[SHARED_MAX];

static void check_shared (void)
{
  static const size_t sizes[] = {8, 4096, 16384, 65536, SHARED_MAX};
#pragma omp target enter data map(alloc: shared_buf)
  for (int k = 0; k < 5; k++)
    {
      size_t n = sizes[k];
#pragma omp parallel num_threads(THREADS)
      for (int round = 0; round < 50; round++)
	{
	  unsigned char v = (unsigned char) (round * 7 + k + 1);
#pragma omp master
	  {
	    memset (shared_buf, v, n);
#pragma omp target update to(shared_buf[0:n])
	  }
#pragma omp barrier
	  long bad = 0;
#pragma omp target map(from: bad)
	  {
	    long b = 0;
	    for (size_t j = 0; j < n; j++)
	      b += shared_buf[j] != v;
	    bad = b;
	  }
	  if (bad)
	    fail ("shared: bytes not updated", (long) n, bad, 0);
#pragma omp barrier
	}
    }
#pragma omp target exit data map(delete: shared_buf)
  printf ("ok: shared\n");
}

static void check_nowait (void)
{
  enum { R = 64 };
  static long x[R], y[R];
#pragma omp target enter data map(alloc: x, y)
  for (int round = 0; round < 100; round++)
    {
      for (int i = 0; i < R; i++)
	x[i] = round * 1000 + i;
#pragma omp target update to(x)
#pragma omp parallel num_threads(4)
#pragma omp single
      {
	for (int i = 0; i < R; i++)
	  {
#pragma omp target nowait map(alloc: x, y) firstprivate(i)
	    y[i] = 2 * x[i] + 1;
	  }
#pragma omp taskwait
      }
#pragma omp target update from(y)
      for (int i = 0; i < R; i++)
	if (y[i] != 2 * (round * 1000L + i) + 1)
	  fail ("nowait: region after update", round * R + i, y[i], 2 * (round * 1000L + i) + 1);
    }
#pragma omp target exit data map(delete: x, y)
  printf ("ok: nowait\n");
}

static void check_bounce (void)
{
  enum { M = 16384 };
  static int c[M];
#pragma omp target enter data map(alloc: c)
  for (int k = 0; k < 200; k++)
    {
      for (int j = 0; j < M; j++)
	c[j] = k * 7 + j;
#pragma omp target update to(c)
      long bad = 0;
#pragma omp target map(from: bad) firstprivate(k)
      {
	long b = 0;
	for (int j = 0; j < M; j++)
	  b += c[j] != k * 7 + j;
	bad = b;
      }
      if (bad)
	fail ("bounce: elements not updated", k, bad, 0);
    }
#pragma omp target exit data map(delete: c)
  printf ("ok: bounce\n");
}

static void check_pinned (void)
{
  for (size_t n = 8; n <= (1 << 20); n *= 8)
    {
      unsigned char *p = omp_alloc (n, ompx_gnu_pinned_mem_alloc);
      if (!p)
	{
	  printf ("FAIL: pinned: omp_alloc of %zu bytes\n", n);
	  failures++;
	  return;
	}
      memset (p, 0x5a, n);
#pragma omp target enter data map(to: p[0:n])
      memset (p, 0xa5, n);
      long bad = 0;
#pragma omp target map(from: bad)
      {
	long b = 0;
	for (size_t j = 0; j < n; j++)
	  b += p[j] != 0x5a;
	bad = b;
      }
      if (bad)
	fail ("pinned: source rewritten after the copy reached the device", (long) n, bad, 0);
#pragma omp target exit data map(delete: p[0:n])
      omp_free (p, ompx_gnu_pinned_mem_alloc);
    }
  printf ("ok: pinned\n");
}

static void check_roundtrip (void)
{
  static unsigned char r[1 << 20];
#pragma omp target enter data map(alloc: r)
  for (size_t n = 1; n <= sizeof r; n *= 4)
    for (int k = 0; k < 20; k++)
      {
	unsigned char v = (unsigned char) (n + k + 1);
	memset (r, v, n);
#pragma omp target update to(r[0:n])
	memset (r, 0, n);
#pragma omp target update from(r[0:n])
	for (size_t j = 0; j < n; j++)
	  if (r[j] != v)
	    {
	      fail ("roundtrip: byte", (long) j, r[j], v);
	      break;
	    }
      }
#pragma omp target exit data map(delete: r)
  printf ("ok: roundtrip\n");
}

typedef int (*dtoh_fn) (void *, uint64_t, size_t, void *);
typedef int (*sync_fn) (void *);

static void check_interop (void)
{
  void *h = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    h = dlopen ("libcuda.so.1", RTLD_NOW);
  dtoh_fn dtoh = h ? (dtoh_fn) dlsym (h, "cuMemcpyDtoHAsync_v2") : NULL;
  sync_fn sync = h ? (sync_fn) dlsym (h, "cuStreamSynchronize") : NULL;
  if (!dtoh || !sync)
    {
      printf ("FAIL: interop: no libcuda\n");
      failures++;
      return;
    }
  enum { K = 1024 };
  static long a[K], back[K];
  int dev = omp_get_default_device ();
#pragma omp target enter data map(alloc: a)
  for (int round = 0; round < 50; round++)
    {
      for (int i = 0; i < K; i++)
	a[i] = round * 100000L + i;
#pragma omp target update to(a)
      omp_interop_t obj = omp_interop_none;
#pragma omp interop init(targetsync: obj) device(dev)
      int rc;
      void *stream = omp_get_interop_ptr (obj, omp_ipr_targetsync, &rc);
      void *da = omp_get_mapped_ptr (a, dev);
      if (!stream || !da)
	{
	  printf ("FAIL: interop: no stream (%d) or mapped pointer\n", rc);
	  failures++;
#pragma omp interop destroy(obj)
	  break;
	}
      memset (back, 0, sizeof back);
      int e1 = dtoh (back, (uint64_t) (uintptr_t) da, sizeof back, stream);
      int e2 = sync (stream);
      if (e1 || e2)
	fail ("interop: driver calls", round, e1 ? e1 : e2, 0);
      for (int i = 0; i < K; i++)
	if (back[i] != a[i])
	  {
	    fail ("interop: the stream saw stale data", i, back[i], a[i]);
	    break;
	  }
      /* An update while the object exists, read on its stream too.  */
      for (int i = 0; i < K; i++)
	a[i] = -a[i];
#pragma omp target update to(a)
      memset (back, 0, sizeof back);
      e1 = dtoh (back, (uint64_t) (uintptr_t) da, sizeof back, stream);
      e2 = sync (stream);
      if (e1 || e2)
	fail ("interop: driver calls", round, e1 ? e1 : e2, 0);
      for (int i = 0; i < K; i++)
	if (back[i] != a[i])
	  {
	    fail ("interop: update while the object exists", i, back[i], a[i]);
	    break;
	  }
#pragma omp interop destroy(obj)
    }
#pragma omp target exit data map(delete: a)
  printf ("ok: interop\n");
}

int main (void)
{
  if (!on_gpu ())
    {
      printf ("no offload device\n");
      return 2;
    }
  check_threads ();
  check_shared ();
  check_nowait ();
  check_bounce ();
  check_pinned ();
  check_roundtrip ();
  check_interop ();
  if (failures)
    {
      printf ("FAIL: %d wrong value(s)\n", failures);
      return 1;
    }
  printf ("OK copy ordering\n");
  return 0;
}
