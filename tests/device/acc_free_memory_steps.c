/* acc_free_memory_steps.c - the OpenACC free-memory property, step by step, in both
 * directions.  Built with -fopenacc by tests/device/build.sh, run on the GPU by
 * tests/device/run.sh with each plugin.
 *
 * Blocks of several sizes are allocated one after the other with acc_malloc (small ones
 * the plugin serves from memory it already holds, large ones it allocates), then freed
 * in reverse order; acc_get_property (acc_property_free_memory) is read after every
 * step:
 *   after acc_malloc(n): it has dropped by at least n - SLACK;
 *   after acc_free(n):   it has risen by n within TOL.
 * SLACK is 0 with this plugin (gomp-plugin-rs: the property counts the memory the
 * plugin holds unused, so a block served from it counts too) and 2 MiB with the stock
 * plugin (the driver sub-allocates small blocks from 2 MiB pages, so cuMemGetInfo may
 * not move); TOL is 4 MiB (the driver's and the pool's granularity).  With this plugin
 * the driver's own free memory (cuMemGetInfo) must also stay the same across three
 * property queries: a query gives nothing back.
 * Prints one line per step ("ok:"/"FAIL:") and "OK free-memory steps"; exit 0 when every
 * check passed, 1 otherwise, 2 when there is no NVIDIA device. */
#include <dlfcn.h>
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>
#include "gpu_probe.h"

#define KIB ((size_t) 1 << 10)
#define MIB ((size_t) 1 << 20)
#define TOL ((long long) (4 * MIB))

static long long prop (void)
{
  return (long long) acc_get_property (0, acc_device_nvidia, acc_property_free_memory);
}

/* 1 when the loaded nvptx plugin is gomp-plugin-rs (it exports gomp_nvptx_host_lock).  */
static int plugin_is_ours (void)
{
  void *h = dlopen ("libgomp-plugin-nvptx.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h && dlsym (h, "gomp_nvptx_host_lock");
}

int main (void)
{
  if (acc_get_num_devices (acc_device_nvidia) < 1)
    {
      printf ("FAIL no NVIDIA device for OpenACC\n");
      return 2;
    }
  acc_set_device_num (0, acc_device_nvidia);
  acc_free (acc_malloc (MIB)); /* the context and the allocator are set up */
  int ours = plugin_is_ours ();
  long long slack = ours ? 0 : (long long) (2 * MIB);
  printf ("plugin: %s; slack after acc_malloc %lld bytes, tolerance after acc_free %lld\n",
	  ours ? "gomp-plugin-rs" : "stock", slack, TOL);
  static const size_t sizes[] = { 1000, 16 * KIB, 64 * KIB, 3 * MIB, 256 * MIB,
				  2048 * MIB, 1000, 200 * MIB };
  enum { N = sizeof sizes / sizeof sizes[0] };
  void *p[N];
  int ok = 1;
  long long before = prop ();
  for (int i = 0; i < N; i++)
    {
      long long b = prop ();
      p[i] = acc_malloc (sizes[i]);
      long long a = prop ();
      int pass = p[i] && b - a >= (long long) sizes[i] - slack;
      printf ("%s acc_malloc(%zu): property %lld -> %lld (dropped %lld)\n",
	      pass ? "ok:" : "FAIL:", sizes[i], b, a, b - a);
      ok &= pass;
    }
  if (ours)
    {
      long long d0 = free_bytes ();
      long long q = prop () + prop () + prop ();
      long long d1 = free_bytes ();
      int pass = d0 >= 0 && d0 == d1;
      printf ("%s three property queries (sum %lld): driver free memory %lld -> %lld\n",
	      pass ? "ok:" : "FAIL:", q, d0, d1);
      ok &= pass;
    }
  for (int i = N - 1; i >= 0; i--)
    {
      long long b = prop ();
      acc_free (p[i]);
      long long a = prop ();
      long long rise = a - b, want = (long long) sizes[i];
      int pass = rise >= want - TOL && rise <= want + TOL;
      printf ("%s acc_free(%zu): property %lld -> %lld (rose %lld)\n", pass ? "ok:" : "FAIL:",
	      sizes[i], b, a, rise);
      ok &= pass;
    }
  long long after = prop ();
  int pass = after >= before - TOL;
  printf ("%s all freed: property %lld at the start, %lld at the end\n", pass ? "ok:" : "FAIL:",
	  before, after);
  ok &= pass;
  printf ("%s free-memory steps\n", ok ? "OK" : "FAIL");
  return !ok;
}
