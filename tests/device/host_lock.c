/* host_lock.c - the plugin's own page-locking API (gomp_nvptx_host_lock/unlock) and the
 * pinned pool on the GPU. Built by tests/device/build.sh, run on the GPU by
 * tests/device/run.sh with each plugin. The stock plugin has no such API, so with it
 * only the pinned-allocator part runs, and it is expected to fail there: its
 * page_locked_host_alloc makes no context current, so pinned omp_alloc on an OpenMP
 * worker thread is fatal (spec section 8).
 *
 * Checks: a locked range is page-locked for the driver (cuPointerGetAttribute knows it)
 * and round-trips through omp_target_memcpy; a nested lock shares it; a range extending
 * it is refused; the last unlock really unregisters (the driver forgets it); unlocking
 * again is refused; a lock inside pinned-allocator memory shares the pool's range;
 * pinned blocks from several threads are distinct and usable in target regions.
 * Prints "OK ..." or "FAIL ..." (exit 1). */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_probe.h"

#define MIB (1024 * 1024)
static int failed;
#define CHECK(cond, what)                                                              \
  do                                                                                   \
    if (!(cond))                                                                       \
      {                                                                                \
        printf ("FAIL %s\n", what);                                                    \
        failed = 1;                                                                    \
      }                                                                                \
  while (0)

/* 1 if the CUDA driver knows p as host/device memory (page-locked), 0 if not, -1 if
   the query is unavailable. The plugin leaves its context current on this thread. */
static int driver_knows (void *p)
{
  static int (*get) (void *, int, unsigned long long);
  if (!get)
    {
      void *h = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
      if (h)
        *(void **) &get = dlsym (h, "cuPointerGetAttribute");
      if (!get)
        return -1;
    }
  int type = 0;
  return get (&type, 2 /* CU_POINTER_ATTRIBUTE_MEMORY_TYPE */, (unsigned long long) p) == 0;
}

static int round_trip (char *h, size_t bytes, int tag)
{
  int dev = omp_get_default_device (), host = omp_get_initial_device ();
  char *d = omp_target_alloc (bytes, dev);
  if (!d)
    return 0;
  for (size_t i = 0; i < bytes; i++)
    h[i] = (char) (i * 131 + tag);
  int ok = !omp_target_memcpy (d, h, bytes, 0, 0, dev, host);
  memset (h, 0, bytes);
  ok = ok && !omp_target_memcpy (h, d, bytes, 0, 0, host, dev);
  for (size_t i = 0; ok && i < bytes; i++)
    ok = h[i] == (char) (i * 131 + tag);
  omp_target_free (d, dev);
  return ok;
}

int main (void)
{
  if (!on_gpu ())
    {
      printf ("FAIL not running on a GPU\n");
      return 1;
    }

  /* Pinned allocator from several threads: distinct, writable, mappable blocks. */
  int bad = 0;
#pragma omp parallel num_threads(8) reduction(+: bad)
  {
    int me = omp_get_thread_num ();
    for (int i = 0; i < 50; i++)
      {
        size_t n = (size_t) 1024 << (i % 8);
        int *p = omp_alloc (n * sizeof (int), ompx_gnu_pinned_mem_alloc);
        if (!p)
          {
            bad++;
            continue;
          }
        for (size_t k = 0; k < n; k++)
          p[k] = me * 1000000 + (int) k;
#pragma omp target map(tofrom: p[0:n])
        for (size_t k = 0; k < n; k++)
          p[k] += 1;
        for (size_t k = 0; k < n; k++)
          if (p[k] != me * 1000000 + (int) k + 1)
            {
              bad++;
              break;
            }
        omp_free (p, ompx_gnu_pinned_mem_alloc);
      }
  }
  CHECK (bad == 0, "pinned blocks from 8 threads");

  int (*lock) (void *, size_t, int);
  int (*unlock) (void *, int);
  void *plugin = dlopen ("libgomp-plugin-nvptx.so.1", RTLD_LAZY | RTLD_NOLOAD);
  *(void **) &lock = plugin ? dlsym (plugin, "gomp_nvptx_host_lock") : NULL;
  *(void **) &unlock = plugin ? dlsym (plugin, "gomp_nvptx_host_unlock") : NULL;
  if (!lock || !unlock)
    {
      printf (failed ? "FAIL (pinned allocator)\n"
                     : "OK pinned allocator; no gomp_nvptx_host_lock in this plugin\n");
      return failed;
    }

  size_t bytes = 64 * MIB;
  char *buf = aligned_alloc (4096, bytes);
  CHECK (driver_knows (buf) == 0, "malloc'd memory is not known to the driver");
  CHECK (lock (buf, bytes, 0) == 0, "lock 64 MiB");
  CHECK (driver_knows (buf) == 1 && driver_knows (buf + bytes - 1) == 1,
         "locked range is page-locked for the driver");
  CHECK (lock (buf + 4096 + 10, 1000, 0) == 0, "nested lock shares");
  CHECK (lock (buf + bytes - MIB, 2 * MIB, 0) != 0, "lock extending the range is refused");
  CHECK (round_trip (buf, bytes, 1), "omp_target_memcpy round trip of locked memory");
  CHECK (unlock (buf + 4096 + 10, 0) == 0, "unlock the nested lock");
  CHECK (driver_knows (buf) == 1, "still locked while the outer lock holds");
  CHECK (unlock (buf, 0) == 0, "unlock the outer lock");
  CHECK (driver_knows (buf) == 0, "last unlock unregisters");
  CHECK (unlock (buf, 0) != 0, "unlocking again is refused");
  CHECK (round_trip (buf, bytes, 2), "round trip after unlocking (pageable again)");
  CHECK (lock (buf, bytes, 0) == 0 && unlock (buf, 0) == 0, "lock again after unlocking");
  free (buf);

  char *p = omp_alloc (MIB, ompx_gnu_pinned_mem_alloc);
  CHECK (p && lock (p + 100, 1000, 0) == 0, "lock inside pinned-allocator memory shares");
  CHECK (p && unlock (p + 100, 0) == 0, "unlock inside pinned-allocator memory");
  CHECK (p && driver_knows (p) == 1, "pinned-allocator memory stays page-locked");
  omp_free (p, ompx_gnu_pinned_mem_alloc);

  if (!failed)
    printf ("OK pinned allocator from 8 threads; lock/nested/refused/unlock/relock\n");
  return failed;
}
