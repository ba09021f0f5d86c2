/* heap_size.c - GOMP_NVPTX_HEAP_SIZE sets the device malloc heap
 * (CU_LIMIT_MALLOC_HEAP_SIZE): tests/device/heap_size.env asks for 256m; after a
 * target region the context's limit (read with libcuda's cuCtxGetLimit, loaded with
 * dlopen; the plugin leaves its context current on this thread) must be at least that,
 * and a device malloc of 200 MiB must work. The stock plugin has no such setting and
 * fails the limit check. Prints "OK ..." or "FAIL ..." (exit 1). */
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define CU_LIMIT_MALLOC_HEAP_SIZE 2

int main (void)
{
  const size_t want = (size_t) 256 << 20, bytes = (size_t) 200 << 20;
  int ok = 0, on_dev = 0;
#pragma omp target map(from: ok, on_dev)
  {
    on_dev = !omp_is_initial_device ();
    char *p = malloc (bytes);
    if (p)
      {
	p[0] = 1;
	p[bytes - 1] = 2;
	ok = p[0] + p[bytes - 1] == 3;
	free (p);
      }
  }
  void *h = dlopen ("libcuda.so.1", RTLD_NOW);
  int (*get_limit) (size_t *, int) = h ? (int (*) (size_t *, int)) dlsym (h, "cuCtxGetLimit") : NULL;
  size_t heap = 0;
  if (!on_dev || !get_limit || get_limit (&heap, CU_LIMIT_MALLOC_HEAP_SIZE) != 0)
    {
      printf ("FAIL %s\n", on_dev ? "cannot read the heap limit" : "region did not run on the GPU");
      return 1;
    }
  if (heap < want || !ok)
    {
      printf ("FAIL heap limit %zu MiB (asked for %zu), device malloc of %zu MiB %s\n",
	      heap >> 20, want >> 20, bytes >> 20, ok ? "worked" : "failed");
      return 1;
    }
  printf ("OK heap limit %zu MiB, device malloc of %zu MiB worked\n", heap >> 20, bytes >> 20);
  return 0;
}
