/* stub_libcuda_2dev.c - a stand-in libcuda.so.1 with two devices and no GPU, for the
 * GPU-less tests of the nvptx plugin's device registry and memory paths
 * (nvptx/tests/two_devices.rs builds and loads it through GOMP_PLUGIN_RS_LIBCUDA).
 *
 * It is a stand-in for the registry and memory paths, not a GPU: no kernel runs. What
 * it implements, with the checks a real driver makes (a wrong call is refused with the
 * driver's error code and a line "stub libcuda: ..." on stderr, and counted):
 *   - cuInit, driver version 12.8, cuGetErrorString; cuDeviceGetCount = 2, or the
 *     devices CUDA_VISIBLE_DEVICES lists by index ("1" -> one device, physical 1;
 *     "1,0" -> both, swapped; "" -> cuInit says CUDA_ERROR_NO_DEVICE; parsing stops at
 *     the first bad or repeated entry, as CUDA's does);
 *   - H100-like attributes (sm_90, 132 SMs, 1.98 GHz, 227 KiB shared memory opt-in,
 *     memory pools unless built with -DNO_POOLS), name, 80 GB of total memory, a UUID
 *     per physical device (GPU-57a0d5c1-0000-4000-8000-00000000000N);
 *   - per-device primary contexts (retain/release counts; the last release destroys
 *     the context: its memory, streams, events, pools and page-locked host memory go,
 *     as with a real driver) and the calling thread's current context;
 *   - device memory: cuMemAlloc/cuMemFree from host memory (512-byte aligned, filled
 *     with 0xcd so an omitted copy shows), bookkept per device against 80 GB
 *     (cuMemGetInfo of the current context's device); memory pools
 *     (cuMemPoolCreate/AllocFromPoolAsync/FreeAsync/attributes/trim/destroy);
 *   - copies and memset (work is done at once, so every stream and event is always
 *     complete): the device side must lie inside one live device allocation or
 *     page-locked host allocation (unified addressing: any device's), the stream must
 *     belong to the current context;
 *   - page-locked host memory (cuMemHostAlloc/FreeHost/GetDevicePointer,
 *     cuMemHostRegister/Unregister) and cuPointerGetAttribute (memory type, context,
 *     device ordinal);
 *   - streams and events: create/destroy/record/wait/query/synchronize, handles checked;
 *     timing events (created without CU_EVENT_DISABLE_TIMING) read the process's
 *     virtual clock when recorded, and cuEventElapsedTime gives the difference: the
 *     clock stands still but for work that says how long it takes
 *     (stub_libcuda_advance, called by the launches of stub_libcuda_launch.c).
 * Every other entry of the plugin's driver table comes from stub_libcuda_rest.c (weak
 * definitions over the generated stub_names.h): it says "stub libcuda: NAME is not
 * implemented" and returns CUDA_ERROR_NOT_SUPPORTED (JIT link, modules, launches,
 * managed memory, 2-D/3-D copies...).
 *
 * For the tests, two functions of its own: stub_libcuda_stats (per-device counters)
 * and stub_libcuda_owner (which device an address belongs to).
 *
 * Build: cc -shared -fPIC -pthread -I<dir of stub_names.h> stub_libcuda_2dev.c
 *        stub_libcuda_rest.c -o libcuda.so.1   [-DNO_POOLS] */
#define _GNU_SOURCE
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;

enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_NOT_SUPPORTED = 801,
};

#define NDEV 2
/* 81559 MiB, an H100 80GB HBM3's cuDeviceTotalMem. */
#define TOTAL_MEM (81559ULL << 20)
#define DEV_ALIGN 512
#define POISON 0xcd

/* Counters of one device, as stub_libcuda_stats reports them. */
struct stub_libcuda_stats {
  int64_t ctx_refs;         /* primary-context references held */
  int64_t ctx_resets;       /* times the primary context was destroyed (last release) */
  int64_t live_allocs;      /* device allocations alive */
  int64_t live_bytes;       /* their bytes */
  int64_t total_allocs;     /* device allocations ever made */
  int64_t reset_freed;      /* allocations freed by the context's destruction */
  int64_t live_streams;
  int64_t live_events;
  int64_t live_pools;
  int64_t live_host_allocs; /* cuMemHostAlloc blocks made in the device's context */
  int64_t live_host_regs;   /* cuMemHostRegister ranges made in the device's context */
  int64_t copies;           /* copies and memsets queued in the device's context */
  int64_t foreign;          /* ... of which touched another device's memory */
  int64_t misuse;           /* calls refused (process-wide, the same for every device) */
};

struct ctx {
  int dev;  /* visible ordinal */
  int refs; /* > 0: the context exists */
};

enum kind { DEV_MEM, HOST_ALLOC, HOST_REG };

struct range {
  struct range *next;
  uintptr_t start;
  size_t size;
  enum kind kind;
  int dev;     /* the device (DEV_MEM) or the context's device (host memory) */
  void *pool;  /* DEV_MEM from a pool: the pool, until it is destroyed */
};

enum hkind { STREAM, EVENT, POOL };

struct handle {
  struct handle *next;
  enum hkind kind;
  int dev;
  uint64_t threshold; /* POOL: release threshold */
  int timed;          /* EVENT: created with timing */
  int recorded;       /* EVENT: recorded at least once */
  uint64_t at_ns;     /* EVENT: the virtual clock at the last record */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static int nvisible;
static int phys[NDEV];
static struct ctx ctxs[NDEV];
static struct stub_libcuda_stats stats[NDEV];
static int64_t misuse;
static struct range *ranges;
static struct handle *handles;
static __thread struct ctx *current;
static uint64_t vclock_ns; /* the virtual clock of timing events */

static const char *const kinds[] = {"stream", "event", "memory pool"};

/* Reports a refused call (lock held or not: only the counter needs it). */
static void complain (const char *fn, const char *fmt, ...)
{
  va_list ap;
  char msg[256];
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  fprintf (stderr, "stub libcuda: %s: %s\n", fn, msg);
  __atomic_add_fetch (&misuse, 1, __ATOMIC_RELAXED);
}

#define LOCK pthread_mutex_lock (&lock)
#define UNLOCK pthread_mutex_unlock (&lock)
#define CHECK_INIT \
  do { if (!__atomic_load_n (&initialized, __ATOMIC_ACQUIRE)) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

/* The current context if it exists, else NULL with a complaint (lock held). */
static struct ctx *need_ctx (const char *fn)
{
  if (!current)
    {
      complain (fn, "no current context");
      return NULL;
    }
  if (current->refs == 0)
    {
      complain (fn, "the current context (device %d) was destroyed", current->dev);
      return NULL;
    }
  return current;
}

static struct handle *find_handle (void *h, enum hkind kind)
{
  for (struct handle *p = handles; p; p = p->next)
    if ((void *) p == h && p->kind == kind)
      return p;
  return NULL;
}

/* A live handle of `kind`, else NULL with a complaint (lock held). */
static struct handle *need_handle (const char *fn, void *h, enum hkind kind)
{
  struct handle *p = find_handle (h, kind);
  if (!p)
    complain (fn, "%p is not a live %s", h, kinds[kind]);
  return p;
}

/* The context work queued on stream `s` runs in: the stream's, which must be the
   current one (NULL: the legacy stream of the current context). Lock held. */
static struct ctx *stream_ctx (const char *fn, void *s)
{
  struct ctx *c = need_ctx (fn);
  if (!c || !s)
    return c;
  struct handle *h = need_handle (fn, s, STREAM);
  if (!h)
    return NULL;
  if (h->dev != c->dev)
    {
      complain (fn, "stream %p of device %d used while device %d's context is current",
                s, h->dev, c->dev);
      return NULL;
    }
  return c;
}

static struct handle *new_handle (enum hkind kind, int dev)
{
  struct handle *h = calloc (1, sizeof *h);
  if (!h)
    return NULL;
  h->kind = kind;
  h->dev = dev;
  h->next = handles;
  handles = h;
  if (kind == STREAM)
    stats[dev].live_streams++;
  else if (kind == EVENT)
    stats[dev].live_events++;
  else
    stats[dev].live_pools++;
  return h;
}

static void drop_handle (struct handle *h)
{
  for (struct handle **p = &handles; *p; p = &(*p)->next)
    if (*p == h)
      {
        *p = h->next;
        break;
      }
  if (h->kind == STREAM)
    stats[h->dev].live_streams--;
  else if (h->kind == EVENT)
    stats[h->dev].live_events--;
  else
    stats[h->dev].live_pools--;
  free (h);
}

/* The range containing [p, p+n) (n 0: containing p), of the given kinds. Lock held. */
static struct range *find_range (uintptr_t p, size_t n, unsigned kinds_mask)
{
  for (struct range *r = ranges; r; r = r->next)
    if ((kinds_mask & (1u << r->kind)) && p >= r->start && p - r->start < r->size
        && n <= r->size - (p - r->start))
      return r;
  return NULL;
}

static struct range *find_start (uintptr_t p, enum kind kind)
{
  for (struct range *r = ranges; r; r = r->next)
    if (r->kind == kind && r->start == p)
      return r;
  return NULL;
}

static void add_range (uintptr_t p, size_t size, enum kind kind, int dev, void *pool)
{
  struct range *r = calloc (1, sizeof *r);
  if (!r)
    abort ();
  r->start = p;
  r->size = size;
  r->kind = kind;
  r->dev = dev;
  r->pool = pool;
  r->next = ranges;
  ranges = r;
  if (kind == DEV_MEM)
    {
      stats[dev].live_allocs++;
      stats[dev].live_bytes += (int64_t) size;
      stats[dev].total_allocs++;
    }
  else if (kind == HOST_ALLOC)
    stats[dev].live_host_allocs++;
  else
    stats[dev].live_host_regs++;
}

/* Forgets `r` and frees its memory (not a registration's). Lock held. */
static void drop_range (struct range *r)
{
  for (struct range **p = &ranges; *p; p = &(*p)->next)
    if (*p == r)
      {
        *p = r->next;
        break;
      }
  if (r->kind == DEV_MEM)
    {
      stats[r->dev].live_allocs--;
      stats[r->dev].live_bytes -= (int64_t) r->size;
    }
  else if (r->kind == HOST_ALLOC)
    stats[r->dev].live_host_allocs--;
  else
    stats[r->dev].live_host_regs--;
  if (r->kind != HOST_REG)
    free ((void *) r->start);
  free (r);
}

/* Device memory of device `dev` (lock held). */
static CUresult dev_alloc (const char *fn, CUdeviceptr *dptr, size_t size, int dev, void *pool)
{
  if (!dptr || size == 0)
    {
      complain (fn, "no result pointer or size 0");
      return CUDA_ERROR_INVALID_VALUE;
    }
  if ((uint64_t) stats[dev].live_bytes + size > TOTAL_MEM)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p;
  if (posix_memalign (&p, DEV_ALIGN, size) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memset (p, POISON, size);
  add_range ((uintptr_t) p, size, DEV_MEM, dev, pool);
  *dptr = (CUdeviceptr) (uintptr_t) p;
  return CUDA_SUCCESS;
}

static CUresult dev_free (const char *fn, CUdeviceptr p)
{
  struct range *r = find_start ((uintptr_t) p, DEV_MEM);
  if (!r)
    {
      complain (fn, "%#llx does not start a device allocation", p);
      return CUDA_ERROR_INVALID_VALUE;
    }
  drop_range (r);
  return CUDA_SUCCESS;
}

/* Checks the device side [p, p+n) of a copy or memset queued on `s` (lock held);
   counts it for the current context's device when `count`. */
static CUresult dev_side (const char *fn, CUdeviceptr p, size_t n, void *s, int count)
{
  struct ctx *c = stream_ctx (fn, s);
  if (!c)
    return s ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
  struct range *r = find_range ((uintptr_t) p, n, 1u << DEV_MEM | 1u << HOST_ALLOC);
  if (!r)
    {
      complain (fn, "%#llx + %zu is not inside device or page-locked memory", p, n);
      return CUDA_ERROR_INVALID_VALUE;
    }
  stats[c->dev].copies += count;
  if (r->kind == DEV_MEM && r->dev != c->dev)
    stats[c->dev].foreign++;
  return CUDA_SUCCESS;
}

/* The context's destruction (its last reference went; lock held): what was made in
   it goes, as with a real driver. */
static void destroy_ctx (struct ctx *c)
{
  for (struct range *r = ranges, *next; r; r = next)
    {
      next = r->next;
      if (r->dev == c->dev)
        {
          if (r->kind == DEV_MEM)
            stats[c->dev].reset_freed++;
          drop_range (r);
        }
    }
  for (struct handle *h = handles, *next; h; h = next)
    {
      next = h->next;
      if (h->dev == c->dev)
        drop_handle (h);
    }
  stats[c->dev].ctx_resets++;
}

/* ---- Initialisation, devices ---- */

static void parse_visible (void)
{
  const char *v = getenv ("CUDA_VISIBLE_DEVICES");
  if (!v)
    {
      nvisible = NDEV;
      for (int i = 0; i < NDEV; i++)
        phys[i] = i;
      return;
    }
  nvisible = 0;
  while (*v && nvisible < NDEV)
    {
      while (*v == ' ')
        v++;
      if (!isdigit ((unsigned char) *v))
        break;
      int n = 0;
      while (isdigit ((unsigned char) *v) && n < 1000)
        n = n * 10 + (*v++ - '0');
      while (*v == ' ')
        v++;
      if (*v && *v != ',')
        break;
      int dup = 0;
      for (int i = 0; i < nvisible; i++)
        dup |= phys[i] == n;
      if (n >= NDEV || dup)
        break;
      phys[nvisible++] = n;
      if (*v == ',')
        v++;
    }
}

CUresult cuInit (unsigned flags)
{
  if (flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  if (!initialized)
    {
      parse_visible ();
      for (int i = 0; i < NDEV; i++)
        ctxs[i].dev = i;
      __atomic_store_n (&initialized, 1, __ATOMIC_RELEASE);
    }
  UNLOCK;
  return nvisible ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion (int *v)
{
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  *v = 12080;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString (CUresult code, const char **s)
{
  static const struct { CUresult code; const char *text; } texts[] = {
    {CUDA_SUCCESS, "no error"},
    {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
    {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
    {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
    {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
     "part or all of the requested memory range is already mapped"},
    {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region"},
    {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
  };
  if (!s)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
    if (texts[i].code == code)
      {
        *s = texts[i].text;
        return CUDA_SUCCESS;
      }
  *s = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

CUresult cuDeviceGetCount (int *n)
{
  CHECK_INIT;
  if (!n)
    return CUDA_ERROR_INVALID_VALUE;
  *n = nvisible;
  return CUDA_SUCCESS;
}

static int valid_dev (CUdevice d)
{
  return d >= 0 && d < nvisible;
}

CUresult cuDeviceGet (CUdevice *d, int ord)
{
  CHECK_INIT;
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (ord))
    return CUDA_ERROR_INVALID_DEVICE;
  *d = ord;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute (int *v, int attr, CUdevice d)
{
  CHECK_INIT;
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (d))
    return CUDA_ERROR_INVALID_DEVICE;
  int x;
  switch (attr)
    {
    case 1: x = 1024; break;         /* MAX_THREADS_PER_BLOCK */
    case 2: case 3: x = 1024; break; /* MAX_BLOCK_DIM_X, _Y */
    case 4: x = 64; break;           /* MAX_BLOCK_DIM_Z */
    case 5: x = 2147483647; break;   /* MAX_GRID_DIM_X */
    case 6: case 7: x = 65535; break; /* MAX_GRID_DIM_Y, _Z */
    case 8: x = 49152; break;        /* MAX_SHARED_MEMORY_PER_BLOCK */
    case 10: x = 32; break;          /* WARP_SIZE */
    case 12: x = 65536; break;       /* MAX_REGISTERS_PER_BLOCK */
    case 13: x = 1980000; break;     /* CLOCK_RATE, kHz */
    case 16: x = 132; break;         /* MULTIPROCESSOR_COUNT */
    case 18: x = 0; break;           /* INTEGRATED */
    case 19: x = 1; break;           /* CAN_MAP_HOST_MEMORY */
    case 31: x = 1; break;           /* CONCURRENT_KERNELS */
    case 39: x = 2048; break;        /* MAX_THREADS_PER_MULTIPROCESSOR */
    case 40: x = 3; break;           /* ASYNC_ENGINE_COUNT */
    case 41: x = 1; break;           /* UNIFIED_ADDRESSING */
    case 75: x = 9; break;           /* COMPUTE_CAPABILITY_MAJOR */
    case 76: x = 0; break;           /* COMPUTE_CAPABILITY_MINOR */
    case 82: x = 65536; break;       /* MAX_REGISTERS_PER_MULTIPROCESSOR */
    case 83: x = 1; break;           /* MANAGED_MEMORY */
    case 88: x = 0; break;           /* PAGEABLE_MEMORY_ACCESS */
    case 97: x = 232448; break;      /* MAX_SHARED_MEMORY_PER_BLOCK_OPTIN */
#ifdef NO_POOLS
    case 115: x = 0; break;          /* MEMORY_POOLS_SUPPORTED */
#else
    case 115: x = 1; break;
#endif
    default: return CUDA_ERROR_INVALID_VALUE;
    }
  *v = x;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName (char *name, int len, CUdevice d)
{
  CHECK_INIT;
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (d))
    return CUDA_ERROR_INVALID_DEVICE;
  snprintf (name, (size_t) len, "NVIDIA H100 80GB HBM3 (libcuda stand-in, device %d)", phys[d]);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2 (size_t *bytes, CUdevice d)
{
  CHECK_INIT;
  if (!bytes)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (d))
    return CUDA_ERROR_INVALID_DEVICE;
  *bytes = TOTAL_MEM;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid_v2 (unsigned char *uuid, CUdevice d)
{
  static const unsigned char base[16] = {0x57, 0xa0, 0xd5, 0xc1, 0, 0, 0x40, 0, 0x80, 0};
  CHECK_INIT;
  if (!uuid)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (d))
    return CUDA_ERROR_INVALID_DEVICE;
  memcpy (uuid, base, 16);
  uuid[15] = (unsigned char) phys[d];
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetUuid (unsigned char *uuid, CUdevice d)
{
  return cuDeviceGetUuid_v2 (uuid, d);
}

/* ---- Contexts ---- */

CUresult cuDevicePrimaryCtxRetain (struct ctx **pctx, CUdevice d)
{
  CHECK_INIT;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (d))
    return CUDA_ERROR_INVALID_DEVICE;
  LOCK;
  ctxs[d].refs++;
  stats[d].ctx_refs = ctxs[d].refs;
  UNLOCK;
  *pctx = &ctxs[d];
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2 (CUdevice d)
{
  CHECK_INIT;
  if (!valid_dev (d))
    return CUDA_ERROR_INVALID_DEVICE;
  LOCK;
  CUresult r = CUDA_SUCCESS;
  if (ctxs[d].refs == 0)
    {
      complain ("cuDevicePrimaryCtxRelease", "device %d's primary context is not retained", d);
      r = CUDA_ERROR_INVALID_CONTEXT;
    }
  else if (--ctxs[d].refs == 0)
    destroy_ctx (&ctxs[d]);
  stats[d].ctx_refs = ctxs[d].refs;
  UNLOCK;
  return r;
}

static int known_ctx (struct ctx *c)
{
  return c >= ctxs && c < ctxs + nvisible;
}

CUresult cuCtxGetCurrent (struct ctx **pctx)
{
  CHECK_INIT;
  if (!pctx)
    return CUDA_ERROR_INVALID_VALUE;
  *pctx = current;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent (struct ctx *c)
{
  CHECK_INIT;
  if (c && !known_ctx (c))
    {
      complain ("cuCtxSetCurrent", "%p is not a context", (void *) c);
      return CUDA_ERROR_INVALID_CONTEXT;
    }
  current = c;
  return CUDA_SUCCESS;
}

/* No complaint: the plugin asks this to tell a stale current context. */
CUresult cuCtxGetDevice (CUdevice *d)
{
  CHECK_INIT;
  if (!d)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  int ok = current && current->refs > 0;
  UNLOCK;
  if (!ok)
    return CUDA_ERROR_INVALID_CONTEXT;
  *d = current->dev;
  return CUDA_SUCCESS;
}

CUresult cuCtxSetLimit (int limit, size_t value)
{
  (void) value;
  CHECK_INIT;
  LOCK;
  struct ctx *c = need_ctx ("cuCtxSetLimit");
  UNLOCK;
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  return limit >= 0 && limit <= 2 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* ---- Device memory ---- */

CUresult cuMemAlloc_v2 (CUdeviceptr *dptr, size_t size)
{
  CHECK_INIT;
  LOCK;
  struct ctx *c = need_ctx ("cuMemAlloc");
  CUresult r = c ? dev_alloc ("cuMemAlloc", dptr, size, c->dev, NULL)
                 : CUDA_ERROR_INVALID_CONTEXT;
  UNLOCK;
  return r;
}

CUresult cuMemFree_v2 (CUdeviceptr p)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_free ("cuMemFree", p);
  UNLOCK;
  return r;
}

CUresult cuMemGetInfo_v2 (size_t *free_bytes, size_t *total)
{
  CHECK_INIT;
  if (!free_bytes || !total)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuMemGetInfo");
  if (c)
    {
      *total = TOTAL_MEM;
      *free_bytes = TOTAL_MEM - (size_t) stats[c->dev].live_bytes;
    }
  UNLOCK;
  return c ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuMemcpyHtoDAsync_v2 (CUdeviceptr dst, const void *src, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemcpyHtoDAsync", dst, n, s, 1);
  UNLOCK;
  if (r == CUDA_SUCCESS && !src)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    memcpy ((void *) (uintptr_t) dst, src, n);
  return r;
}

CUresult cuMemcpyDtoHAsync_v2 (void *dst, CUdeviceptr src, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemcpyDtoHAsync", src, n, s, 1);
  UNLOCK;
  if (r == CUDA_SUCCESS && !dst)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    memcpy (dst, (const void *) (uintptr_t) src, n);
  return r;
}

CUresult cuMemcpyDtoDAsync_v2 (CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemcpyDtoDAsync", dst, n, s, 1);
  if (r == CUDA_SUCCESS)
    r = dev_side ("cuMemcpyDtoDAsync", src, n, s, 0);
  UNLOCK;
  if (r == CUDA_SUCCESS)
    memmove ((void *) (uintptr_t) dst, (const void *) (uintptr_t) src, n);
  return r;
}

CUresult cuMemsetD8Async (CUdeviceptr p, unsigned char v, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemsetD8Async", p, n, s, 1);
  UNLOCK;
  if (r == CUDA_SUCCESS)
    memset ((void *) (uintptr_t) p, v, n);
  return r;
}

/* ---- Page-locked host memory, pointer attributes ---- */

CUresult cuMemHostAlloc (void **pp, size_t size, unsigned flags)
{
  CHECK_INIT;
  if (!pp || size == 0 || (flags & ~7u))
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuMemHostAlloc");
  CUresult r = CUDA_ERROR_INVALID_CONTEXT;
  if (c)
    {
      void *p;
      r = CUDA_ERROR_OUT_OF_MEMORY;
      if (posix_memalign (&p, 4096, size) == 0)
        {
          add_range ((uintptr_t) p, size, HOST_ALLOC, c->dev, NULL);
          *pp = p;
          r = CUDA_SUCCESS;
        }
    }
  UNLOCK;
  return r;
}

CUresult cuMemFreeHost (void *p)
{
  CHECK_INIT;
  LOCK;
  struct range *r = find_start ((uintptr_t) p, HOST_ALLOC);
  if (r)
    drop_range (r);
  else
    complain ("cuMemFreeHost", "%p is not from cuMemHostAlloc", p);
  UNLOCK;
  return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemHostGetDevicePointer_v2 (CUdeviceptr *dptr, void *p, unsigned flags)
{
  CHECK_INIT;
  if (!dptr || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct range *r = find_range ((uintptr_t) p, 0, 1u << HOST_ALLOC | 1u << HOST_REG);
  UNLOCK;
  if (!r)
    return CUDA_ERROR_INVALID_VALUE;
  /* Unified addressing: the device sees the host address. */
  *dptr = (CUdeviceptr) (uintptr_t) p;
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2 (void *p, size_t size, unsigned flags)
{
  CHECK_INIT;
  if (!p || size == 0 || (flags & ~15u))
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuMemHostRegister");
  CUresult r = CUDA_ERROR_INVALID_CONTEXT;
  if (c)
    {
      uintptr_t s = (uintptr_t) p;
      r = CUDA_SUCCESS;
      for (struct range *q = ranges; q; q = q->next)
        if (q->kind != DEV_MEM && s < q->start + q->size && q->start < s + size)
          r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
      if (r == CUDA_SUCCESS)
        add_range (s, size, HOST_REG, c->dev, NULL);
    }
  UNLOCK;
  return r;
}

CUresult cuMemHostUnregister (void *p)
{
  CHECK_INIT;
  LOCK;
  struct range *r = find_start ((uintptr_t) p, HOST_REG);
  if (r)
    drop_range (r);
  UNLOCK;
  return r ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* No complaint for unknown addresses: the plugin asks this to tell pageable memory. */
CUresult cuPointerGetAttribute (void *data, int attr, CUdeviceptr p)
{
  CHECK_INIT;
  if (!data)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct range *r = find_range ((uintptr_t) p, 0, 1u << DEV_MEM | 1u << HOST_ALLOC | 1u << HOST_REG);
  struct range copy;
  if (r)
    copy = *r;
  UNLOCK;
  if (!r)
    return CUDA_ERROR_INVALID_VALUE;
  switch (attr)
    {
    case 1: /* CONTEXT */
      *(struct ctx **) data = &ctxs[copy.dev];
      return CUDA_SUCCESS;
    case 2: /* MEMORY_TYPE: DEVICE or HOST */
      *(int *) data = copy.kind == DEV_MEM ? 2 : 1;
      return CUDA_SUCCESS;
    case 9: /* DEVICE_ORDINAL */
      *(int *) data = copy.dev;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- Streams and events (work is done when queued: always complete) ---- */

CUresult cuStreamCreate (void **ps, unsigned flags)
{
  CHECK_INIT;
  if (!ps || flags > 1)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuStreamCreate");
  struct handle *h = c ? new_handle (STREAM, c->dev) : NULL;
  UNLOCK;
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!h)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *ps = h;
  return CUDA_SUCCESS;
}

static CUresult drop (const char *fn, void *h, enum hkind kind)
{
  CHECK_INIT;
  LOCK;
  struct handle *p = need_handle (fn, h, kind);
  if (p)
    drop_handle (p);
  UNLOCK;
  return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuStreamDestroy_v2 (void *s)
{
  return drop ("cuStreamDestroy", s, STREAM);
}

static CUresult stream_done (const char *fn, void *s)
{
  CHECK_INIT;
  LOCK;
  int ok = s ? need_handle (fn, s, STREAM) != NULL : need_ctx (fn) != NULL;
  UNLOCK;
  return ok ? CUDA_SUCCESS : s ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult cuStreamSynchronize (void *s)
{
  return stream_done ("cuStreamSynchronize", s);
}

CUresult cuStreamQuery (void *s)
{
  return stream_done ("cuStreamQuery", s);
}

CUresult cuEventCreate (void **pe, unsigned flags)
{
  CHECK_INIT;
  if (!pe || flags > 15)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuEventCreate");
  struct handle *h = c ? new_handle (EVENT, c->dev) : NULL;
  if (h)
    h->timed = !(flags & 2); /* CU_EVENT_DISABLE_TIMING */
  UNLOCK;
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!h)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pe = h;
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2 (void *e)
{
  return drop ("cuEventDestroy", e, EVENT);
}

/* Recording (`record`) or waiting for event `e` on stream `s`: the stream belongs to
   the current context, and so does a recorded event (a stream may wait for an event
   of another device). */
static CUresult event_on_stream (const char *fn, void *e, void *s, int record)
{
  CHECK_INIT;
  LOCK;
  CUresult r = CUDA_SUCCESS;
  struct ctx *c = stream_ctx (fn, s);
  struct handle *h = c ? need_handle (fn, e, EVENT) : NULL;
  if (!c)
    r = s ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
  else if (!h)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (record && h->dev != c->dev)
    {
      complain (fn, "event %p of device %d recorded in device %d's context", e, h->dev, c->dev);
      r = CUDA_ERROR_INVALID_HANDLE;
    }
  else if (record)
    {
      h->recorded = 1;
      h->at_ns = vclock_ns;
    }
  UNLOCK;
  return r;
}

CUresult cuEventRecord (void *e, void *s)
{
  return event_on_stream ("cuEventRecord", e, s, 1);
}

CUresult cuStreamWaitEvent (void *s, void *e, unsigned flags)
{
  if (flags > 1)
    return CUDA_ERROR_INVALID_VALUE;
  return event_on_stream ("cuStreamWaitEvent", e, s, 0);
}

static CUresult event_done (const char *fn, void *e)
{
  CHECK_INIT;
  LOCK;
  int ok = need_handle (fn, e, EVENT) != NULL;
  UNLOCK;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuEventQuery (void *e)
{
  return event_done ("cuEventQuery", e);
}

CUresult cuEventSynchronize (void *e)
{
  return event_done ("cuEventSynchronize", e);
}

/* Milliseconds of virtual time between two recorded timing events. */
CUresult cuEventElapsedTime (float *ms, void *start, void *end)
{
  CHECK_INIT;
  if (!ms)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *a = need_handle ("cuEventElapsedTime", start, EVENT);
  struct handle *b = a ? need_handle ("cuEventElapsedTime", end, EVENT) : NULL;
  CUresult r = CUDA_SUCCESS;
  if (!b)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (!a->timed || !b->timed)
    {
      complain ("cuEventElapsedTime", "event without timing");
      r = CUDA_ERROR_INVALID_HANDLE;
    }
  else if (!a->recorded || !b->recorded)
    r = CUDA_ERROR_INVALID_HANDLE;
  else
    *ms = (float) ((double) (int64_t) (b->at_ns - a->at_ns) / 1e6);
  UNLOCK;
  return r;
}

/* Moves the virtual clock of timing events on by `ns` (a kernel's run). */
void stub_libcuda_advance (uint64_t ns)
{
  LOCK;
  vclock_ns += ns;
  UNLOCK;
}

/* ---- Stream-ordered memory pools ---- */

struct pool_props {
  int allocType, handleTypes, locationType, locationId;
};

CUresult cuMemPoolCreate (void **pp, const struct pool_props *props)
{
  CHECK_INIT;
  if (!pp || !props || props->allocType != 1 || props->locationType != 1)
    return CUDA_ERROR_INVALID_VALUE;
  if (!valid_dev (props->locationId))
    return CUDA_ERROR_INVALID_DEVICE;
  LOCK;
  struct handle *h = new_handle (POOL, props->locationId);
  UNLOCK;
  if (!h)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *pp = h;
  return CUDA_SUCCESS;
}

/* Allocations still out keep their memory (the driver releases the pool after them). */
CUresult cuMemPoolDestroy (void *pool)
{
  CHECK_INIT;
  LOCK;
  struct handle *h = need_handle ("cuMemPoolDestroy", pool, POOL);
  if (h)
    {
      for (struct range *r = ranges; r; r = r->next)
        if (r->pool == pool)
          r->pool = NULL;
      drop_handle (h);
    }
  UNLOCK;
  return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuMemPoolSetAttribute (void *pool, int attr, void *v)
{
  CHECK_INIT;
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuMemPoolSetAttribute", pool, POOL);
  CUresult r = h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  if (h && attr == 4) /* RELEASE_THRESHOLD */
    h->threshold = *(uint64_t *) v;
  else if (h && (attr < 1 || attr > 8))
    r = CUDA_ERROR_INVALID_VALUE;
  UNLOCK;
  return r;
}

CUresult cuMemPoolGetAttribute (void *pool, int attr, void *v)
{
  CHECK_INIT;
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuMemPoolGetAttribute", pool, POOL);
  CUresult r = h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  if (h)
    {
      uint64_t used = 0;
      for (struct range *q = ranges; q; q = q->next)
        if (q->pool == pool)
          used += q->size;
      if (attr == 4)
        *(uint64_t *) v = h->threshold;
      else if (attr >= 5 && attr <= 8) /* RESERVED/USED_MEM_CURRENT/_HIGH */
        *(uint64_t *) v = used;
      else
        r = CUDA_ERROR_INVALID_VALUE;
    }
  UNLOCK;
  return r;
}

CUresult cuMemPoolTrimTo (void *pool, size_t keep)
{
  (void) keep;
  CHECK_INIT;
  LOCK;
  int ok = need_handle ("cuMemPoolTrimTo", pool, POOL) != NULL;
  UNLOCK;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuMemAllocFromPoolAsync (CUdeviceptr *dptr, size_t size, void *pool, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  struct handle *h = need_handle ("cuMemAllocFromPoolAsync", pool, POOL);
  struct ctx *c = h ? stream_ctx ("cuMemAllocFromPoolAsync", s) : NULL;
  if (h && c)
    r = dev_alloc ("cuMemAllocFromPoolAsync", dptr, size, h->dev, pool);
  UNLOCK;
  return r;
}

CUresult cuMemFreeAsync (CUdeviceptr p, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  if (stream_ctx ("cuMemFreeAsync", s))
    r = dev_free ("cuMemFreeAsync", p);
  UNLOCK;
  return r;
}

/* ---- For the tests ---- */

/* The counters of visible device `dev` into `out`; -1 for a device that is not. */
int stub_libcuda_stats (int dev, struct stub_libcuda_stats *out)
{
  if (!out || dev < 0 || dev >= NDEV || dev >= nvisible)
    return -1;
  LOCK;
  *out = stats[dev];
  out->misuse = __atomic_load_n (&misuse, __ATOMIC_RELAXED);
  UNLOCK;
  return 0;
}

/* The device whose memory holds `p`: its device allocation's device, or -1 for page-locked
   host memory, -2 for an address the stand-in does not know. */
int stub_libcuda_owner (CUdeviceptr p)
{
  LOCK;
  struct range *r = find_range ((uintptr_t) p, 0, 1u << DEV_MEM | 1u << HOST_ALLOC | 1u << HOST_REG);
  int d = !r ? -2 : r->kind == DEV_MEM ? r->dev : -1;
  UNLOCK;
  return d;
}
