/* acc_free_memory.c - OpenACC free-memory property around acc_malloc/acc_free.
 * Built with -fopenacc by tests/device/build.sh (acc_* names), run on the GPU by
 * tests/device/run.sh with each plugin.
 *
 * For each case: read acc_get_property(0, acc_device_nvidia, acc_property_free_memory),
 * acc_malloc the blocks, read it again, acc_free them, read it a third time.  A program
 * that checks for leaks this way expects the value after the free to be at least the
 * bytes it freed larger than the value before the free (what the stock plugin answers:
 * it frees with cuMemFree and reports cuMemGetInfo).
 *   checked:  one 1 GiB block; 64 blocks of 2 MiB (sizes the plugin's block caches keep);
 *   INFO:     1024 blocks of 16 KiB (the small-block cache's sizes, carved from chunks by
 *             ours; with stock the driver's own sub-allocation decides), printed only.
 * Also checked: acc_property_memory (total) is the same at every step.
 * A checked case prints "ok: CASE ..." when after_free - after_alloc >= bytes - TOL,
 * else "FAIL: CASE ..." (exit 1).  Exit 2 when there is no NVIDIA device. */
#include <openacc.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB ((size_t) 1 << 20)
/* Allowed shortfall: the driver's 2 MiB granularity and its own bookkeeping.  */
#define TOL (4 * MIB)

static size_t total0;
static int total_ok = 1;

static size_t free_mem (void)
{
  size_t t = acc_get_property (0, acc_device_nvidia, acc_property_memory);
  if (t != total0)
    {
      printf ("FAIL: acc_property_memory changed: %zu -> %zu\n", total0, t);
      total_ok = 0;
    }
  return acc_get_property (0, acc_device_nvidia, acc_property_free_memory);
}

/* Returns 1 if the case passed (or is informational), 0 if it failed or could not run.  */
static int one_case (const char *name, size_t count, size_t bytes, int checked)
{
  void **p = calloc (count, sizeof *p);
  size_t before = free_mem ();
  for (size_t i = 0; i < count; i++)
    if (!(p[i] = acc_malloc (bytes)))
      {
	printf ("FAIL: %s: acc_malloc(%zu) number %zu returned NULL\n", name, bytes, i);
	for (size_t j = 0; j < i; j++)
	  acc_free (p[j]);
	free (p);
	return 0;
      }
  size_t after_alloc = free_mem ();
  for (size_t i = 0; i < count; i++)
    acc_free (p[i]);
  size_t after_free = free_mem ();
  free (p);
  size_t total = count * bytes;
  long long gained = (long long) after_free - (long long) after_alloc;
  int pass = gained >= (long long) (total - TOL);
  printf ("%s %s: free memory before %.1f MiB, after acc_malloc %.1f MiB, after acc_free"
	  " %.1f MiB: acc_free gave back %.1f of %.1f MiB (%+.1f MiB against before)\n",
	  !checked ? "INFO" : pass ? "ok:" : "FAIL:", name, before / (double) MIB,
	  after_alloc / (double) MIB, after_free / (double) MIB, gained / (double) MIB,
	  total / (double) MIB, ((double) after_free - (double) before) / MIB);
  return pass || !checked;
}

int main (void)
{
  if (acc_get_num_devices (acc_device_nvidia) < 1)
    {
      printf ("FAIL no NVIDIA device for OpenACC\n");
      return 2;
    }
  acc_set_device_num (0, acc_device_nvidia);
  total0 = acc_get_property (0, acc_device_nvidia, acc_property_memory);
  printf ("device 0: %s, acc_property_memory %.1f MiB\n",
	  acc_get_property_string (0, acc_device_nvidia, acc_property_name),
	  total0 / (double) MIB);
  /* Warm up: the context, the plugin's allocator.  */
  acc_free (acc_malloc (MIB));

  int ok = 1;
  ok &= one_case ("1 GiB block", 1, 1024 * MIB, 1);
  ok &= one_case ("64 x 2 MiB blocks", 64, 2 * MIB, 1);
  ok &= one_case ("1024 x 16 KiB blocks", 1024, 16 << 10, 0);
  /* The same 1 GiB case again, after the others: nothing accumulated.  */
  ok &= one_case ("1 GiB block again", 1, 1024 * MIB, 1);
  ok &= total_ok;
  printf ("%s acc free-memory property\n", ok ? "OK" : "FAIL");
  return ok ? 0 : 1;
}
