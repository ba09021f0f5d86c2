/* acc_native_handles.c - the CUDA handles OpenACC hands a program
 * (acc_get_current_cuda_device, acc_get_current_cuda_context, acc_get_cuda_stream) on
 * every NVIDIA device, read after other calls have run (a pointer into a returned
 * stack frame would hold something else by then).  Built with -fopenacc by
 * tests/device/build.sh, run on the GPU by tests/device/run.sh with each plugin.
 * For each device d: acc_set_device_num (d), a kernel, then *acc_get_current_cuda_device ()
 * must be the CUdevice the driver gives the current context (cuCtxGetDevice, looked up
 * with dlsym), and the context the current one (cuCtxGetCurrent); the device pointer
 * read again after more calls must still hold the same value.
 * Prints "ok: device D ..." per device, "FAIL: ..." and exit 1 on a mismatch; "SKIP"
 * and exit 77 when there is no NVIDIA device. */
#include <dlfcn.h>
#include <openacc.h>
#include <stdio.h>
#include <string.h>

typedef int (*get_device_fn) (int *);
typedef int (*get_current_fn) (void **);

static int clobber (int n)
{
  volatile char buf[4096];
  memset ((char *) buf, 0x5a, sizeof buf);
  return buf[n % sizeof buf] + n;
}

int main (void)
{
  int n = acc_get_num_devices (acc_device_nvidia);
  if (n == 0)
    {
      printf ("SKIP: no NVIDIA device\n");
      return 77;
    }
  void *cuda = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  get_device_fn ctx_device = cuda ? (get_device_fn) dlsym (cuda, "cuCtxGetDevice") : NULL;
  get_current_fn ctx_current = cuda ? (get_current_fn) dlsym (cuda, "cuCtxGetCurrent") : NULL;
  if (!ctx_device || !ctx_current)
    {
      printf ("FAIL: libcuda.so.1 not loaded by the plugin, or without cuCtxGetDevice\n");
      return 1;
    }
  int bad = 0;
  for (int d = 0; d < n; d++)
    {
      acc_set_device_num (d, acc_device_nvidia);
      int x = 0;
#pragma acc parallel copy(x)
      x = d + 1;
      const int *dev = acc_get_current_cuda_device ();
      void *ctx = acc_get_current_cuda_context ();
      int sink = clobber (d);
      int want = -1;
      void *cur = NULL;
      if (ctx_device (&want) != 0 || ctx_current (&cur) != 0)
        {
          printf ("FAIL: device %d: cuCtxGetDevice/cuCtxGetCurrent failed\n", d);
          bad = 1;
          continue;
        }
      int first = dev ? *dev : -1;
      sink += clobber (d + 7);
      int again = dev ? *dev : -1;
      if (x != d + 1 || !dev || first != want || again != want || ctx != cur)
        {
          printf ("FAIL: device %d: kernel %d, cuda device %p -> %d then %d (driver: %d),"
                  " context %p (current %p)\n", d, x, (const void *) dev, first, again,
                  want, ctx, cur);
          bad = 1;
        }
      else
        printf ("ok: device %d: CUdevice %d, context %p (%d)\n", d, want, ctx, sink & 1);
    }
  return bad;
}
