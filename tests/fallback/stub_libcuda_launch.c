/* stub_libcuda_launch.c - kernel launches of the stand-in libcuda.so.1, built with
 * stub_libcuda_2dev.c (devices, contexts, memory, streams, timing events),
 * stub_libcuda_jit.c (modules: a function handle is its name's line in the module)
 * and stub_libcuda_rest.c, for the GPU-less tests of the launch-shape tuner
 * (nvptx/tests/autotune.rs).
 *
 * No kernel runs. A launch is logged (`stub_libcuda_launch_log`: "NAME TEAMS WARPS"
 * per launch, grid x and block y) and moves the virtual clock of timing events on by
 * the time its shape takes, so the plugin's events measure exactly what the test says:
 *
 * env STUB_LIBCUDA_KERNEL_NS="ITEM,ITEM...": how long a launch takes, in ns; ITEM is
 *   W=NS (blocks of W warps), *=NS (any other shape; default 0) or @K=NS (the K-th
 *   launch of the process, counted from 1, whatever its shape: noise).
 * env STUB_LIBCUDA_REGS=N: the registers per thread of every kernel (default 32; read
 *   by cuFuncGetAttribute in stub_libcuda_jit.c too).
 *
 * cuOccupancyMaxActiveBlocksPerMultiprocessor answers as an H100 would for that many
 * registers: 64 Ki registers (allocated per warp in units of 256), 64 warps and 32
 * blocks per SM. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;

enum { OK = 0, INVALID_VALUE = 1, INVALID_CONTEXT = 201, INVALID_HANDLE = 400 };

CUresult cuCtxGetCurrent (void **pctx);
void stub_libcuda_advance (uint64_t ns);

static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_text;
static size_t log_len;
static long launches;

/* STUB_LIBCUDA_REGS, as stub_libcuda_jit.c reads it. */
int stub_libcuda_regs (void)
{
  const char *v = getenv ("STUB_LIBCUDA_REGS");
  int r = v ? atoi (v) : 32;
  return r >= 1 && r <= 255 ? r : 32;
}

/* Registers one warp takes. */
static int regs_per_warp (void)
{
  return (stub_libcuda_regs () * 32 + 255) / 256 * 256;
}

/* The most threads per block the registers allow (at most 1024). */
int stub_libcuda_max_threads (void)
{
  int w = 65536 / regs_per_warp ();
  return w >= 32 ? 1024 : w * 32;
}

/* How long launch number `n` of blocks of `warps` warps takes. */
static uint64_t duration (long n, unsigned warps)
{
  const char *v = getenv ("STUB_LIBCUDA_KERNEL_NS");
  uint64_t any = 0, mine = 0, noise = 0;
  int have_mine = 0, have_noise = 0;
  for (const char *p = v; p && *p;)
    {
      const char *eq = strchr (p, '=');
      if (!eq)
        break;
      uint64_t ns = strtoull (eq + 1, NULL, 10);
      if (*p == '*')
        any = ns;
      else if (*p == '@' && atol (p + 1) == n)
        noise = ns, have_noise = 1;
      else if (*p != '@' && (unsigned) atoi (p) == warps)
        mine = ns, have_mine = 1;
      p = strchr (eq, ',');
      p = p ? p + 1 : NULL;
    }
  return have_noise ? noise : have_mine ? mine : any;
}

CUresult cuLaunchKernel (void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned smem, void *stream, void **params,
                         void **extra)
{
  (void) smem, (void) stream, (void) extra;
  void *c = NULL;
  if (cuCtxGetCurrent (&c) != OK || !c)
    return INVALID_CONTEXT;
  if (!f)
    return INVALID_HANDLE;
  if (!gx || !gy || !gz || !bx || !by || !bz || bx * by * bz > 1024 || !params)
    return INVALID_VALUE;
  const char *name = f;
  int n = (int) strcspn (name, "\n");
  char line[512];
  int w = snprintf (line, sizeof line, "%.*s %u %u\n", n, name, gx, by);
  pthread_mutex_lock (&launch_lock);
  long k = ++launches;
  log_text = realloc (log_text, log_len + w + 1);
  memcpy (log_text + log_len, line, w + 1);
  log_len += w;
  pthread_mutex_unlock (&launch_lock);
  stub_libcuda_advance (duration (k, by));
  return OK;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor (int *blocks, void *f, int threads,
                                                      size_t smem)
{
  (void) smem;
  if (!blocks || !f || threads <= 0 || threads > stub_libcuda_max_threads ())
    return INVALID_VALUE;
  int warps = (threads + 31) / 32;
  int b = 65536 / (regs_per_warp () * warps);
  if (b > 64 / warps)
    b = 64 / warps;
  if (b > 32)
    b = 32;
  *blocks = b;
  return OK;
}

/* Copies the launch log (NUL-terminated, cut to `cap`); returns its length. */
long stub_libcuda_launch_log (char *buf, size_t cap)
{
  pthread_mutex_lock (&launch_lock);
  long n = (long) log_len;
  if (buf && cap)
    {
      size_t m = log_len < cap - 1 ? log_len : cap - 1;
      if (m)
        memcpy (buf, log_text, m);
      buf[m] = 0;
    }
  pthread_mutex_unlock (&launch_lock);
  return n;
}
