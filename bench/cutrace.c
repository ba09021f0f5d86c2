/* cutrace.c - a trace of the CUDA driver calls and offload-plugin entry points of a
 * process, with their start times and durations, to compare two plugins' start-up.
 *
 * usage: LD_PRELOAD=/abs/path/cutrace.so CUTRACE_OUT=FILE ./program ...
 * build: cc -O2 -shared -fPIC -Wall -Wextra bench/cutrace.c -o cutrace.so -ldl -lpthread
 *
 * Preloaded, it interposes dlopen and dlsym. Every symbol looked up by dlsym in a
 * library whose name contains "libcuda" (both plugins dlopen libcuda.so.1 and look its
 * entry points up by name), every entry point handed out by cuGetProcAddress[_v2]
 * (looked up through it) and every GOMP_OFFLOAD_* function looked up in an offload
 * plugin is replaced by a trampoline that forwards the call and logs it. dlopen calls
 * are logged too (the plugin's own load). Arguments are forwarded as 12 integer
 * registers/stack words, which covers the driver and plugin entry points the plugins
 * call (integer and pointer arguments only, at most 11 of them).
 *
 * FILE (default stderr) gets one line per call:
 *   START_MS DURATION_MS tTHREAD NAME [details]
 * START_MS from the tracer's constructor (process start, before main); details for
 * the JIT link (every option and value of cuLinkCreate, input type/size/name/FNV-1a
 * hash of each cuLinkAddData, the cubin size of cuLinkComplete), module loads (the
 * image's first bytes: ELF or PTX), allocations, limits and launches. At exit, a
 * summary: per name the calls and total milliseconds, by total time. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef long (*fn12) (long, long, long, long, long, long, long, long, long, long, long, long);

enum kind { K_PLAIN, K_LINK_CREATE, K_LINK_ADD, K_LINK_COMPLETE, K_MODULE_LOAD, K_MODULE_LOAD_EX,
            K_MEM_ALLOC, K_HOST_ALLOC, K_SET_LIMIT, K_LAUNCH, K_GET_FUNCTION, K_GPA, K_GPA2,
            K_LINK_ADD_FILE };

struct slot {
  char name[96];
  fn12 real;
  enum kind kind;
  unsigned long calls;
  double total_ms;
};

#define NSLOTS 768
static struct slot slots[NSLOTS];
static int nslots;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static FILE *out;
static struct timespec t0;
static void *(*real_dlopen) (const char *, int);
static void *(*real_dlsym) (void *, const char *);
static void *cuda_handles[8];
static int ncuda_handles;
static void *plugin_handles[8];
static int nplugin_handles;

static double now_ms (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6;
}

static void resolve_real (void)
{
  if (real_dlsym)
    return;
  real_dlsym = (void *(*) (void *, const char *)) dlvsym (RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real_dlsym)
    real_dlsym = (void *(*) (void *, const char *)) dlvsym (RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  real_dlopen = (void *(*) (const char *, int)) dlvsym (RTLD_NEXT, "dlopen", "GLIBC_2.34");
  if (!real_dlopen)
    real_dlopen = (void *(*) (const char *, int)) dlvsym (RTLD_NEXT, "dlopen", "GLIBC_2.2.5");
}

__attribute__ ((constructor)) static void init (void)
{
  clock_gettime (CLOCK_MONOTONIC, &t0);
  resolve_real ();
  const char *f = getenv ("CUTRACE_OUT");
  out = f && *f ? fopen (f, "w") : NULL;
  if (!out)
    out = stderr;
  else
    setvbuf (out, NULL, _IOFBF, 1 << 20);
  fprintf (out, "# cutrace: pid %d; START_MS DURATION_MS THREAD NAME details\n", (int) getpid ());
}

static int cmp_total (const void *a, const void *b)
{
  double x = ((const struct slot *) a)->total_ms, y = ((const struct slot *) b)->total_ms;
  return x < y ? 1 : x > y ? -1 : 0;
}

__attribute__ ((destructor)) static void fini (void)
{
  pthread_mutex_lock (&lock);
  fprintf (out, "# summary at %.3f ms: name calls total_ms\n", now_ms ());
  static struct slot copy[NSLOTS];
  memcpy (copy, slots, sizeof slots);
  qsort (copy, nslots, sizeof copy[0], cmp_total);
  for (int i = 0; i < nslots; i++)
    if (copy[i].calls)
      fprintf (out, "S %-48s %8lu %10.3f\n", copy[i].name, copy[i].calls, copy[i].total_ms);
  fflush (out);
  pthread_mutex_unlock (&lock);
}

static uint64_t fnv1a (const void *p, size_t n)
{
  const unsigned char *b = p;
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

static void details (const struct slot *s, long *a, long ret, char *buf, size_t n)
{
  buf[0] = 0;
  switch (s->kind)
    {
    case K_LINK_CREATE:
      {
        unsigned nopt = (unsigned) a[0];
        int *opts = (int *) a[1];
        void **vals = (void **) a[2];
        size_t used = snprintf (buf, n, "nopt=%u", nopt);
        for (unsigned i = 0; i < nopt && opts && vals && used < n; i++)
          used += snprintf (buf + used, n - used, " %d=%#lx", opts[i], (unsigned long) vals[i]);
        break;
      }
    case K_LINK_ADD:
      {
        const char *name = (const char *) a[4];
        snprintf (buf, n, "type=%ld size=%lu name=%s nopt=%u fnv=%016llx", a[1],
                  (unsigned long) a[3], name ? name : "(null)", (unsigned) a[5],
                  a[2] ? (unsigned long long) fnv1a ((const void *) a[2], (size_t) a[3]) : 0ULL);
        break;
      }
    case K_LINK_ADD_FILE:
      snprintf (buf, n, "type=%ld path=%s", a[1], a[2] ? (const char *) a[2] : "(null)");
      break;
    case K_LINK_COMPLETE:
      if (ret == 0 && a[2])
        snprintf (buf, n, "cubin_size=%lu", (unsigned long) *(size_t *) a[2]);
      break;
    case K_MODULE_LOAD:
    case K_MODULE_LOAD_EX:
      {
        const unsigned char *img = (const unsigned char *) a[1];
        if (img)
          snprintf (buf, n, "image=%s%s", img[0] == 0x7f && img[1] == 'E' ? "ELF" : "text:",
                    img[0] == 0x7f ? "" : "(PTX?)");
        if (s->kind == K_MODULE_LOAD_EX)
          snprintf (buf + strlen (buf), n - strlen (buf), " nopt=%u", (unsigned) a[2]);
        break;
      }
    case K_MEM_ALLOC:
      snprintf (buf, n, "bytes=%lu", (unsigned long) a[1]);
      break;
    case K_HOST_ALLOC:
      snprintf (buf, n, "bytes=%lu flags=%#lx", (unsigned long) a[1], a[2]);
      break;
    case K_SET_LIMIT:
      snprintf (buf, n, "limit=%ld value=%lu", a[0], (unsigned long) a[1]);
      break;
    case K_LAUNCH:
      snprintf (buf, n, "grid=%ldx%ldx%ld block=%ldx%ldx%ld smem=%ld stream=%#lx", a[1], a[2],
                a[3], a[4], a[5], a[6], a[7], a[8]);
      break;
    case K_GET_FUNCTION:
      snprintf (buf, n, "%s", a[2] ? (const char *) a[2] : "");
      break;
    case K_GPA:
    case K_GPA2:
      snprintf (buf, n, "%s v%ld flags=%ld", a[0] ? (const char *) a[0] : "", a[2], a[3]);
      break;
    default:
      break;
    }
}

static void *wrap (const char *name, void *real);

static long call_slot (int i, long a0, long a1, long a2, long a3, long a4, long a5, long a6,
                       long a7, long a8, long a9, long a10, long a11)
{
  struct slot *s = &slots[i];
  long a[12] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11};
  double t = now_ms ();
  long r = s->real (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);
  double d = now_ms () - t;
  if ((s->kind == K_GPA || s->kind == K_GPA2) && (int) r == 0 && a1)
    {
      void **pfn = (void **) a1;
      int ok = s->kind == K_GPA || !a4 || *(int *) a4 == 0;
      if (ok && *pfn)
        {
          char nm[96];
          snprintf (nm, sizeof nm, "%s", (const char *) a0);
          *pfn = wrap (nm, *pfn);
        }
    }
  char buf[2048];
  details (s, a, r, buf, sizeof buf);
  pthread_mutex_lock (&lock);
  s->calls++;
  s->total_ms += d;
  if ((int) r && s->name[0] == 'c')
    fprintf (out, "%10.3f %9.3f t%ld %s ret=%d %s\n", t, d, (long) syscall (SYS_gettid), s->name,
             (int) r, buf);
  else
    fprintf (out, "%10.3f %9.3f t%ld %s %s\n", t, d, (long) syscall (SYS_gettid), s->name, buf);
  pthread_mutex_unlock (&lock);
  return r;
}

#define T(i)                                                                              \
  static long tramp##i (long a0, long a1, long a2, long a3, long a4, long a5, long a6,     \
                        long a7, long a8, long a9, long a10, long a11)                     \
  {                                                                                       \
    return call_slot (0##i, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11);               \
  }
#define T8(i) T (i##0) T (i##1) T (i##2) T (i##3) T (i##4) T (i##5) T (i##6) T (i##7)
#define T64(i) T8 (i##0) T8 (i##1) T8 (i##2) T8 (i##3) T8 (i##4) T8 (i##5) T8 (i##6) T8 (i##7)
/* Trampoline n is tramp<n in octal>: 0##i makes the pasted digits an octal literal. */
T64 (0) T64 (1) T64 (2) T64 (3) T64 (4) T64 (5) T64 (6) T64 (7) T64 (10) T64 (11) T64 (12)
T64 (13)
#undef T
#define T(i) tramp##i,
static fn12 tramps[NSLOTS] = {T64 (0) T64 (1) T64 (2) T64 (3) T64 (4) T64 (5) T64 (6) T64 (7)
                              T64 (10) T64 (11) T64 (12) T64 (13)};

static enum kind kind_of (const char *n)
{
  if (!strncmp (n, "cuLinkCreate", 12))
    return K_LINK_CREATE;
  if (!strncmp (n, "cuLinkAddData", 13))
    return K_LINK_ADD;
  if (!strncmp (n, "cuLinkAddFile", 13))
    return K_LINK_ADD_FILE;
  if (!strncmp (n, "cuLinkComplete", 14))
    return K_LINK_COMPLETE;
  if (!strcmp (n, "cuModuleLoadData"))
    return K_MODULE_LOAD;
  if (!strcmp (n, "cuModuleLoadDataEx"))
    return K_MODULE_LOAD_EX;
  if (!strncmp (n, "cuMemAlloc", 10) && strncmp (n, "cuMemAllocFromPool", 18)
      && strncmp (n, "cuMemAllocHost", 14) && strncmp (n, "cuMemAllocManaged", 17))
    return K_MEM_ALLOC;
  if (!strcmp (n, "cuMemHostAlloc"))
    return K_HOST_ALLOC;
  if (!strcmp (n, "cuCtxSetLimit"))
    return K_SET_LIMIT;
  if (!strncmp (n, "cuLaunchKernel", 14) && strncmp (n, "cuLaunchKernelEx", 16))
    return K_LAUNCH;
  if (!strcmp (n, "cuModuleGetFunction"))
    return K_GET_FUNCTION;
  if (!strcmp (n, "cuGetProcAddress"))
    return K_GPA;
  if (!strcmp (n, "cuGetProcAddress_v2"))
    return K_GPA2;
  return K_PLAIN;
}

/* The slot of (name, real), made on first use; returns its trampoline, or `real` when
   the table is full. */
static void *wrap (const char *name, void *real)
{
  pthread_mutex_lock (&lock);
  for (int i = 0; i < nslots; i++)
    if (slots[i].real == (fn12) real && !strcmp (slots[i].name, name))
      {
        pthread_mutex_unlock (&lock);
        return (void *) tramps[i];
      }
  if (nslots == NSLOTS)
    {
      pthread_mutex_unlock (&lock);
      return real;
    }
  int i = nslots++;
  snprintf (slots[i].name, sizeof slots[i].name, "%s", name);
  slots[i].real = (fn12) real;
  slots[i].kind = kind_of (name);
  pthread_mutex_unlock (&lock);
  return (void *) tramps[i];
}

void *dlopen (const char *file, int mode)
{
  resolve_real ();
  double t = now_ms ();
  void *h = real_dlopen (file, mode);
  double d = now_ms () - t;
  if (h && file)
    {
      pthread_mutex_lock (&lock);
      if (strstr (file, "libcuda") && ncuda_handles < 8)
        cuda_handles[ncuda_handles++] = h;
      if (strstr (file, "libgomp-plugin") && nplugin_handles < 8)
        plugin_handles[nplugin_handles++] = h;
      pthread_mutex_unlock (&lock);
    }
  if (out)
    {
      pthread_mutex_lock (&lock);
      fprintf (out, "%10.3f %9.3f t%ld dlopen %s%s\n", t, d, (long) syscall (SYS_gettid),
               file ? file : "(null)", h ? "" : " FAILED");
      pthread_mutex_unlock (&lock);
    }
  return h;
}

static int in (void *h, void **list, int n)
{
  for (int i = 0; i < n; i++)
    if (list[i] == h)
      return 1;
  return 0;
}

void *dlsym (void *handle, const char *name)
{
  resolve_real ();
  void *p = real_dlsym (handle, name);
  if (!p)
    return p;
  pthread_mutex_lock (&lock);
  int cuda = in (handle, cuda_handles, ncuda_handles);
  int plugin = in (handle, plugin_handles, nplugin_handles);
  pthread_mutex_unlock (&lock);
  if ((cuda && !strncmp (name, "cu", 2)) || (plugin && !strncmp (name, "GOMP_OFFLOAD_", 13)))
    return wrap (name, p);
  return p;
}
