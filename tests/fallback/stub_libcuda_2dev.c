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
 *     (cuMemPoolCreate/AllocFromPoolAsync/FreeAsync/attributes/trim/destroy) that keep
 *     what is freed to them, as a driver's pool does: the memory stays reserved
 *     (counted as used by cuMemGetInfo) and serves a later request of the same size
 *     until cuMemPoolTrimTo or the pool's destruction gives it back (the release
 *     threshold is recorded but not acted on at synchronisations: the plugin sets it
 *     to the maximum);
 *   - copies, memset and kernel launches queued on streams, in stream order: the
 *     device side must lie inside one live device allocation or page-locked host
 *     allocation (unified addressing: any device's), the stream must belong to the
 *     current context;
 *   - page-locked host memory (cuMemHostAlloc/FreeHost/GetDevicePointer,
 *     cuMemHostRegister/Unregister) and cuPointerGetAttribute (memory type, context,
 *     device ordinal);
 *   - streams and events: create/destroy/record/wait/query/synchronize, handles checked;
 *     timing events (created without CU_EVENT_DISABLE_TIMING) read a virtual clock
 *     when their record runs, and cuEventElapsedTime gives the difference once both
 *     have completed: the clock stands still but for launches, which move it on by
 *     the time the test says when they run (Launch times, below);
 *   - a JIT link that keeps the PTX text, modules whose functions are the PTX's
 *     `.entry` names, function attributes, the occupancy calculator, and kernels: three
 *     names do something (below), every other kernel does nothing.
 * Every other entry of the plugin's driver table comes from stub_libcuda_rest.c (weak
 * definitions over the generated stub_names.h): it says "stub libcuda: NAME is not
 * implemented" and returns CUDA_ERROR_NOT_SUPPORTED (managed memory, 2-D/3-D copies...).
 *
 * Stream order. Queued work runs only when something needs it to have run, so that
 * work the plugin failed to order is caught: cuStreamSynchronize runs the stream's
 * work, cuEventSynchronize the work before the event's record; cuStreamQuery and
 * cuEventQuery run it too (the device made progress), unless STUB_LIBCUDA_LAZY=1 is
 * set, when they answer CUDA_ERROR_NOT_READY while work is queued; with
 * STUB_LIBCUDA_EAGER=1 work runs as it is queued instead (a device that is never
 * behind: bench/cpu-count.sh counts the host's own work so, not its waiting). Work runs in stream
 * order, after the events its stream waits for (cuStreamWaitEvent), with CUDA's
 * legacy default stream rules: work on the legacy stream (stream NULL) waits for
 * everything queued before on blocking streams (flags 0) of the context, and work on
 * a blocking stream for everything queued before on the legacy stream. As CUDA's
 * "API synchronization behavior" documents: cuMemcpyHtoDAsync from pageable memory
 * reads the source during the call (the source may be reused when it returns), from
 * page-locked memory when the copy runs; cuMemcpyDtoHAsync to pageable memory returns
 * once the copy has run (with the stream's error, if any), to page-locked memory at
 * once. Device memory freed (cuMemFree, or cuMemFreeAsync when it runs) while work
 * queued before still uses it is a misuse: refused work is dropped with a complaint.
 * A failed operation (see stub_libcuda_fail_next_h2d) records its error on its
 * stream and on every stream that waits for it (implicitly or through an event): the
 * next cuStreamSynchronize (or pageable cuMemcpyDtoHAsync) there returns and clears
 * it, queries of events recorded after it return it.
 *
 * Kernels (their first parameter is an address A, except gomp_rs_copy's three):
 *   gomp_stub_snapshot  appends the 64 bytes at A to a log (stub_libcuda_kernel_log);
 *   gomp_stub_double    doubles the eight 64-bit words at A;
 *   gomp_rs_copy        copy(dst, src, n) of the plugin's copy kernel.
 * A kernel whose address is outside live device memory fails with "an illegal memory
 * access was encountered".
 *
 * env STUB_LIBCUDA_ARG0=1: every other kernel's first parameter is checked when it
 * runs (device or page-locked memory, or NULL; else an illegal address) and logged with
 * what its first word points to (check_arg0).
 *
 * Launch times and registers (the launch-shape tuner's tests, nvptx/tests/autotune.rs):
 *   env STUB_LIBCUDA_KERNEL_NS="ITEM,ITEM...": how long a launch takes on the virtual
 *     clock, in ns (and on the host's clock: the launch sleeps that long when it runs); ITEM is W=NS (blocks of W warps), gG=NS (grids of G blocks,
 *     before W), *=NS (any other shape; default 0) or @K=NS (the K-th launch of the
 *     process, counted from 1, whatever its shape: noise);
 *   env STUB_LIBCUDA_DRIVER_VERSION=N: what cuDriverGetVersion says (default 12080).
 * The costs of the two ways of waiting (the plugin's measured choice of waits,
 * nvptx/src/device/wait_choice.rs): env STUB_LIBCUDA_SYNC_NS=N makes every
 * cuStreamSynchronize take N ns more, STUB_LIBCUDA_WRITE_NS=N every
 * cuStreamWriteValue32_v2 (the host spins that long, outside the stand-in's lock).
 * env STUB_LIBCUDA_MMAP=1: device memory and page-locked host memory (cuMemAlloc and
 *   kin, cuMemHostAlloc) are mapped with mmap, one mapping each, as a real driver's
 *   are, instead of coming from the process's malloc heap: their allocations then do
 *   not move where the program's own malloc finds room (bench/cpu-count.sh sets it, so
 *   that instruction counts of libgomp's malloc do not depend on the plugin's
 *   page-locked and device allocations).
 *   env STUB_LIBCUDA_REGS=N: the registers per thread of every kernel (default 32).
 *     The function attributes and the occupancy calculator answer as an H100 would for
 *     that many: 64 Ki registers per SM allocated per warp in units of 256, 64 warps
 *     and 32 blocks per SM, 132 SMs (cuOccupancyMaxPotentialBlockSize: the largest
 *     block the registers and the block-size limit allow, and 132 times its resident
 *     blocks per SM).
 * Every launch is logged as "NAME TEAMS WARPS\n" (grid x, block y) when it is made
 * (stub_libcuda_launch_log).
 *
 * One JIT, two sources. The JIT link, modules and functions are this file's, unless
 * it is built with -DSTUB_SEPARATE_JIT: then they come from stub_libcuda_jit.c (a
 * checked stand-in cubin and link counters, for the linked-image cache's tests), and
 * the occupancy calculator and cuLaunchKernel here, which know only this file's
 * functions, refuse them: such a build loads images but launches nothing.
 *
 * For the tests, functions of its own: stub_libcuda_stats (per-device counters),
 * stub_libcuda_function_lookups (cuModuleGetFunction calls),
 * stub_libcuda_owner (which device an address belongs to), stub_libcuda_kernel_log,
 * stub_libcuda_pending (work queued and not yet run), stub_libcuda_value_writes (the
 * cuStreamWriteValue32_v2 writes that have run), stub_libcuda_fail_next_h2d and
 * stub_libcuda_launch_log.
 *
 * Build: cc -shared -fPIC -pthread -I<dir of stub_names.h> stub_libcuda_2dev.c
 *        stub_libcuda_rest.c -o libcuda.so.1   [-DNO_POOLS]
 *        [-DSTUB_SEPARATE_JIT, with stub_libcuda_jit.c] */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#ifndef STUB_CC_MAJOR
#define STUB_CC_MAJOR 9 /* an H100 */
#endif

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
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_ILLEGAL_ADDRESS = 700,
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
  int64_t pool_reserved;    /* bytes the device's pools hold, handed out or not */
  int64_t pool_used;        /* ... of which handed out */
  int64_t pool_trims;       /* cuMemPoolTrimTo calls */
  int64_t pool_released;    /* pool blocks given back to the device (trim, destroy) */
  int64_t frees;            /* cuMemFree calls that freed device memory */
  int64_t live_host_bytes;  /* bytes of the live cuMemHostAlloc blocks */
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
  int pooled;  /* DEV_MEM freed to its pool: reserved, not handed out */
};

enum hkind { STREAM, EVENT, POOL, LINK, MODULE, FUNC };

enum kernel { K_NONE, K_SNAPSHOT, K_DOUBLE, K_COPY };

struct op;

struct handle {
  struct handle *next;
  enum hkind kind;
  int dev;
  uint64_t threshold; /* POOL: release threshold */
  /* STREAM: the queue (positions 1..enq queued, 1..done run), flags, the first
     error not yet reported and its position; `legacy` for the legacy stream. */
  unsigned flags;
  int legacy;
  struct op *head, *tail;
  uint64_t enq, done;
  CUresult err;
  uint64_t err_pos;
  /* EVENT: the stream and position of its last record (NULL: complete); whether it
     has timing, and the virtual clock when that record ran (`stamped`). */
  struct handle *es;
  uint64_t epos;
  int timed, stamped;
  uint64_t at_ns;
  /* LINK: the PTX added; MODULE: its text; FUNC: its name. */
  char *text;
  size_t len;
  /* FUNC: its module and behaviour. */
  struct handle *mod;
  enum kernel kernel;
};

enum opkind { OP_NOP, OP_WAIT, OP_COPY, OP_MEMSET, OP_LAUNCH, OP_FREE, OP_WRITE32 };

/* One queued operation. Device ranges it touches: [lo1, hi1) and [lo2, hi2). */
struct op {
  struct op *next;
  enum opkind kind;
  uint64_t gseq;        /* process-wide queue order */
  int dropped;          /* refused when its memory was freed: does nothing */
  CUresult fail;        /* injected failure */
  void *dst;            /* COPY, MEMSET */
  const void *src;      /* COPY: read when the copy runs... */
  void *staged;         /* ...or this copy of a pageable source, made when queued */
  size_t n;
  int val;
  struct handle *func;  /* LAUNCH */
  uint64_t args[3];
  uint64_t ns;          /* LAUNCH: how long it takes on the virtual clock */
  struct handle *wait_s; /* WAIT: run that stream up to wait_pos first */
  uint64_t wait_pos;
  uintptr_t lo1, hi1, lo2, hi2;
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

static const char *const kinds[] = {"stream", "event", "memory pool", "link state", "module", "function"};
static struct handle legacy[NDEV]; /* each context's legacy default stream */
static uint64_t gseq;              /* operations queued so far, process-wide */
static int lazy;                   /* STUB_LIBCUDA_LAZY: queries do not run work */
static int eager;                  /* STUB_LIBCUDA_EAGER: work runs as it is queued */
static int use_mmap;               /* STUB_LIBCUDA_MMAP: memory from mmap, not malloc */
static int fail_next_h2d;          /* the next cuMemcpyHtoDAsync fails when it runs */
#define MAX_LOG 4096
static unsigned char kernel_log[MAX_LOG][64];
static int nlog;
static uint64_t vclock_ns;         /* the virtual clock of timing events */
static int64_t value_writes;       /* cuStreamWriteValue32_v2 writes run */
static long launches;              /* cuLaunchKernel calls that queued a launch */
static char *launch_text;          /* the launch log */
static size_t launch_len;

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

/* The stream work queued on `s` goes to (the context's legacy stream for NULL),
   checked as stream_ctx does; NULL with a complaint. Lock held. */
static struct handle *stream_of (const char *fn, void *s)
{
  struct ctx *c = stream_ctx (fn, s);
  if (!c)
    return NULL;
  return s ? (struct handle *) s : &legacy[c->dev];
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
  else if (kind == POOL)
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
  else if (h->kind == POOL)
    stats[h->dev].live_pools--;
  free (h->text);
  free (h);
}

/* The range containing [p, p+n) (n 0: containing p), of the given kinds. Lock held. */
static struct range *find_range (uintptr_t p, size_t n, unsigned kinds_mask)
{
  for (struct range *r = ranges; r; r = r->next)
    if ((kinds_mask & (1u << r->kind)) && !r->pooled && p >= r->start
        && p - r->start < r->size && n <= r->size - (p - r->start))
      return r;
  return NULL;
}

/* `size` bytes of device or page-locked memory aligned to `align` (at most a page):
   from the heap, or a mapping of its own under STUB_LIBCUDA_MMAP; NULL if none. */
static void *mem_alloc (size_t align, size_t size)
{
  void *p;
  if (use_mmap)
    {
      p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      return p == MAP_FAILED ? NULL : p;
    }
  return posix_memalign (&p, align, size) == 0 ? p : NULL;
}

/* Frees memory of mem_alloc (`size`: as allocated). */
static void mem_free (void *p, size_t size)
{
  if (use_mmap)
    munmap (p, size);
  else
    free (p);
}

static struct range *find_start (uintptr_t p, enum kind kind)
{
  for (struct range *r = ranges; r; r = r->next)
    if (r->kind == kind && r->start == p && !r->pooled)
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
    {
      stats[dev].live_host_allocs++;
      stats[dev].live_host_bytes += (int64_t) size;
    }
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
    {
      stats[r->dev].live_host_allocs--;
      stats[r->dev].live_host_bytes -= (int64_t) r->size;
    }
  else
    stats[r->dev].live_host_regs--;
  if (r->kind != HOST_REG)
    mem_free ((void *) r->start, r->size);
  free (r);
}

static void drop_users (const char *fn, uintptr_t lo, uintptr_t hi, uint64_t before);

/* Device memory of device `dev` (lock held). */
static CUresult dev_alloc (const char *fn, CUdeviceptr *dptr, size_t size, int dev, void *pool)
{
  if (!dptr || size == 0)
    {
      complain (fn, "no result pointer or size 0");
      return CUDA_ERROR_INVALID_VALUE;
    }
  if (pool)
    for (struct range *r = ranges; r; r = r->next)
      if (r->pool == pool && r->pooled && r->size == size)
        {
          r->pooled = 0;
          *dptr = (CUdeviceptr) r->start;
          return CUDA_SUCCESS;
        }
  if ((uint64_t) stats[dev].live_bytes + size > TOTAL_MEM)
    return CUDA_ERROR_OUT_OF_MEMORY;
  void *p = mem_alloc (DEV_ALIGN, size);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  memset (p, POISON, size);
  add_range ((uintptr_t) p, size, DEV_MEM, dev, pool);
  *dptr = (CUdeviceptr) (uintptr_t) p;
  return CUDA_SUCCESS;
}

/* A freed device allocation: memory from a pool stays reserved in it for reuse, other
   memory goes back to the device. */
static void release_range (struct range *r)
{
  if (r->pool)
    r->pooled = 1;
  else
    {
      stats[r->dev].frees++;
      drop_range (r);
    }
}

static CUresult dev_free (const char *fn, CUdeviceptr p)
{
  struct range *r = find_start ((uintptr_t) p, DEV_MEM);
  if (!r)
    {
      complain (fn, "%#llx does not start a device allocation", p);
      return CUDA_ERROR_INVALID_VALUE;
    }
  drop_users (fn, r->start, r->start + r->size, gseq + 1);
  release_range (r);
  return CUDA_SUCCESS;
}

/* Gives the device back the blocks `pool` keeps unused, while it reserves more than
   `keep` bytes (all of them when `keep` is 0; lock held). */
static void pool_release (void *pool, uint64_t keep)
{
  uint64_t reserved = 0;
  for (struct range *r = ranges; r; r = r->next)
    if (r->pool == pool)
      reserved += r->size;
  for (struct range *r = ranges, *next; r && reserved > keep; r = next)
    {
      next = r->next;
      if (r->pool == pool && r->pooled)
        {
          reserved -= r->size;
          stats[r->dev].pool_released++;
          drop_range (r);
        }
    }
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

/* ---- Stream order (lock held throughout) ---- */

static struct op *new_op (enum opkind kind)
{
  struct op *o = calloc (1, sizeof *o);
  if (!o)
    abort ();
  o->kind = kind;
  o->gseq = ++gseq;
  return o;
}

static void append (struct handle *s, struct op *o)
{
  if (s->tail)
    s->tail->next = o;
  else
    s->head = o;
  s->tail = o;
  s->enq++;
}

static void append_wait (struct handle *s, struct handle *t, uint64_t pos)
{
  struct op *w = new_op (OP_WAIT);
  w->wait_s = t;
  w->wait_pos = pos;
  append (s, w);
}

static void run_to (struct handle *s, uint64_t pos);

/* Queues `o` on `s`, after what CUDA's legacy-stream rules order it after (and runs
   it at once under STUB_LIBCUDA_EAGER). */
static void queue_op (struct handle *s, struct op *o)
{
  if (s->legacy)
    {
      for (struct handle *h = handles; h; h = h->next)
        if (h->kind == STREAM && h->dev == s->dev && h->flags == 0 && h->enq > h->done)
          append_wait (s, h, h->enq);
    }
  else if (s->flags == 0)
    {
      struct handle *l = &legacy[s->dev];
      if (l->enq > l->done)
        append_wait (s, l, l->enq);
    }
  append (s, o);
  if (eager)
    run_to (s, s->enq);
}

static void free_op (struct op *o)
{
  free (o->staged);
  free (o);
}

static int overlaps (uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t b)
{
  return lo < b && a < hi;
}

static void drop_users_on (struct handle *s, const char *fn, uintptr_t lo, uintptr_t hi,
                           uint64_t before)
{
  for (struct op *o = s->head; o; o = o->next)
    if (!o->dropped && o->gseq < before
        && (overlaps (o->lo1, o->hi1, lo, hi) || overlaps (o->lo2, o->hi2, lo, hi)))
      {
        complain (fn, "%#lx (+%zu) freed while work queued before it still uses it",
                  (unsigned long) lo, (size_t) (hi - lo));
        o->dropped = 1;
      }
}

/* Refuses (drops, with a complaint) the work queued before `before` that still uses
   device memory [lo, hi), which is being freed. */
static void drop_users (const char *fn, uintptr_t lo, uintptr_t hi, uint64_t before)
{
  for (struct handle *h = handles; h; h = h->next)
    if (h->kind == STREAM)
      drop_users_on (h, fn, lo, hi, before);
  for (int i = 0; i < NDEV; i++)
    drop_users_on (&legacy[i], fn, lo, hi, before);
}

static void fail_at (struct handle *s, CUresult code, uint64_t pos)
{
  if (!s->err)
    {
      s->err = code;
      s->err_pos = pos;
    }
}

static int live_dev (uintptr_t p, size_t n)
{
  return find_range (p, n, 1u << DEV_MEM) != NULL;
}

/* STUB_LIBCUDA_ARG0=1: what an ordinary kernel's first parameter (an OpenMP or OpenACC
   kernel's table of mapped-variable addresses) points to when the kernel runs, logged
   as "stub libcuda: arg0 NAME ADDRESS TABLE WORD0" with TABLE and WORD0 each "device N",
   "host" (page-locked), "null" or "unknown"; WORD0 is the table's first entry, read
   only when the table is device or page-locked memory. A table that is neither NULL
   nor device-accessible memory fails the kernel with an illegal address, as on a GPU
   without pageable memory access. */
static int arg0_check;

static const char *where (uintptr_t p, char *buf, size_t cap)
{
  struct range *r = find_range (p, 8, 1u << DEV_MEM | 1u << HOST_ALLOC | 1u << HOST_REG);
  if (!p)
    return "null";
  if (!r)
    return "unknown";
  if (r->kind != DEV_MEM)
    return "host";
  snprintf (buf, cap, "device %d", r->dev);
  return buf;
}

static void check_arg0 (struct handle *s, struct op *o, uint64_t pos)
{
  uintptr_t a = (uintptr_t) o->args[0];
  char b1[32], b2[32];
  const char *t = where (a, b1, sizeof b1);
  const char *w = "-";
  if (strcmp (t, "null") && strcmp (t, "unknown"))
    w = where ((uintptr_t) * (uint64_t *) a, b2, sizeof b2);
  fprintf (stderr, "stub libcuda: arg0 %s %#lx %s %s\n", o->func->text ? o->func->text : "?",
           (unsigned long) a, t, w);
  if (!strcmp (t, "unknown"))
    fail_at (s, CUDA_ERROR_ILLEGAL_ADDRESS, pos);
}

static void run_kernel (struct handle *s, struct op *o, uint64_t pos)
{
  uintptr_t a = (uintptr_t) o->args[0];
  switch (o->func->kernel)
    {
    case K_SNAPSHOT:
      if (!live_dev (a, 64))
        fail_at (s, CUDA_ERROR_ILLEGAL_ADDRESS, pos);
      else if (nlog < MAX_LOG)
        memcpy (kernel_log[nlog++], (void *) a, 64);
      break;
    case K_DOUBLE:
      if (!live_dev (a, 64))
        fail_at (s, CUDA_ERROR_ILLEGAL_ADDRESS, pos);
      else
        for (int i = 0; i < 8; i++)
          ((uint64_t *) a)[i] *= 2;
      break;
    case K_COPY:
      {
        unsigned m = 1u << DEV_MEM | 1u << HOST_ALLOC | 1u << HOST_REG;
        uintptr_t src = (uintptr_t) o->args[1];
        size_t n = (size_t) o->args[2];
        if (n && (!find_range (a, n, m) || !find_range (src, n, m)))
          fail_at (s, CUDA_ERROR_ILLEGAL_ADDRESS, pos);
        else if (n)
          memmove ((void *) a, (const void *) src, n);
      }
      break;
    default:
      if (o->func->kernel == K_NONE && arg0_check)
        check_arg0 (s, o, pos);
      break;
    }
}

static void run_op (struct handle *s, struct op *o, uint64_t pos)
{
  if (o->dropped)
    return;
  if (o->fail)
    {
      fail_at (s, o->fail, pos);
      return;
    }
  switch (o->kind)
    {
    case OP_COPY:
      memmove (o->dst, o->staged ? o->staged : o->src, o->n);
      break;
    case OP_MEMSET:
      memset (o->dst, o->val, o->n);
      break;
    case OP_WRITE32:
      __atomic_store_n ((uint32_t *) o->dst, (uint32_t) o->val, __ATOMIC_RELEASE);
      value_writes++;
      break;
    case OP_LAUNCH:
      vclock_ns += o->ns;
      if (o->ns)
        {
          /* As long on the host's clock: a synchronous launch waits at least that. */
          struct timespec ts = { (time_t) (o->ns / 1000000000u), (long) (o->ns % 1000000000u) };
          while (nanosleep (&ts, &ts) != 0 && errno == EINTR)
            ;
        }
      run_kernel (s, o, pos);
      break;
    case OP_NOP:
      /* An event's record: the events last recorded here read the clock. */
      for (struct handle *h = handles; h; h = h->next)
        if (h->kind == EVENT && h->es == s && h->epos == pos)
          {
            h->stamped = 1;
            h->at_ns = vclock_ns;
          }
      break;
    case OP_FREE:
      {
        struct range *r = find_start (o->lo1, DEV_MEM);
        if (r)
          {
            drop_users ("cuMemFreeAsync", r->start, r->start + r->size, o->gseq);
            release_range (r);
          }
      }
      break;
    default:
      break;
    }
}

/* Runs `s` up to position `pos`, after what its waits name. */
static void run_to (struct handle *s, uint64_t pos)
{
  while (s->done < pos && s->head)
    {
      struct op *o = s->head;
      struct handle *t = o->kind == OP_WAIT ? o->wait_s : NULL;
      if (t)
        run_to (t, o->wait_pos);
      s->head = o->next;
      if (!s->head)
        s->tail = NULL;
      s->done++;
      /* Work after a failed operation it waits for fails too (CUDA's errors of
         queued work are sticky). */
      if (t && t->err && t->err_pos <= o->wait_pos)
        fail_at (s, t->err, s->done);
      run_op (s, o, s->done);
      free_op (o);
    }
}

/* Forgets queued work of `s` without running it (its context is destroyed). */
static void discard (struct handle *s)
{
  for (struct op *o = s->head, *next; o; o = next)
    {
      next = o->next;
      free_op (o);
    }
  s->head = s->tail = NULL;
  s->done = s->enq;
  s->err = 0;
}

/* `s` goes away (all its work has run or was discarded): events recorded on it count
   as complete, waits for it as satisfied. */
static void retire_stream (struct handle *s)
{
  for (struct handle *h = handles; h; h = h->next)
    if (h->kind == EVENT && h->es == s)
      h->es = NULL;
    else if (h->kind == STREAM)
      for (struct op *o = h->head; o; o = o->next)
        if (o->wait_s == s)
          o->wait_s = NULL;
  for (int i = 0; i < NDEV; i++)
    for (struct op *o = legacy[i].head; o; o = o->next)
      if (o->wait_s == s)
        o->wait_s = NULL;
}

/* What an event's query reports once its work has run (or NOT_READY). */
static CUresult event_status (struct handle *e)
{
  struct handle *s = e->es;
  if (!s)
    return CUDA_SUCCESS;
  if (s->done < e->epos)
    return CUDA_ERROR_NOT_READY;
  if (s->err && s->err_pos <= e->epos)
    return s->err;
  return CUDA_SUCCESS;
}

static int pinned (const void *p, size_t n)
{
  return find_range ((uintptr_t) p, n, 1u << HOST_ALLOC | 1u << HOST_REG) != NULL;
}

/* The context's destruction (its last reference went; lock held): what was made in
   it goes, as with a real driver. */
static void destroy_ctx (struct ctx *c)
{
  for (struct handle *h = handles; h; h = h->next)
    if (h->kind == STREAM && h->dev == c->dev)
      {
        discard (h);
        retire_stream (h);
      }
  discard (&legacy[c->dev]);
  retire_stream (&legacy[c->dev]);
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
        {
          ctxs[i].dev = i;
          legacy[i].kind = STREAM;
          legacy[i].dev = i;
          legacy[i].legacy = 1;
        }
      arg0_check = getenv ("STUB_LIBCUDA_ARG0") != NULL;
      const char *l = getenv ("STUB_LIBCUDA_LAZY");
      lazy = l && *l == '1';
      const char *g = getenv ("STUB_LIBCUDA_EAGER");
      eager = g && *g == '1';
      const char *m = getenv ("STUB_LIBCUDA_MMAP");
      use_mmap = m && *m == '1';
      __atomic_store_n (&initialized, 1, __ATOMIC_RELEASE);
    }
  UNLOCK;
  return nvisible ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult cuDriverGetVersion (int *v)
{
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  const char *e = getenv ("STUB_LIBCUDA_DRIVER_VERSION");
  *v = e ? atoi (e) : 12080;
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
    {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered"},
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
    case 75: x = STUB_CC_MAJOR; break; /* COMPUTE_CAPABILITY_MAJOR (9 unless -DSTUB_CC_MAJOR=N) */
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
  if (r == CUDA_SUCCESS && !src)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    {
      struct handle *q = stream_of ("cuMemcpyHtoDAsync", s);
      struct op *o = new_op (OP_COPY);
      o->dst = (void *) (uintptr_t) dst;
      o->src = src;
      o->n = n;
      o->lo1 = (uintptr_t) dst;
      o->hi1 = (uintptr_t) dst + n;
      if (!pinned (src, n))
        {
          /* Pageable: read now, the source may be reused when the call returns. */
          o->staged = malloc (n ? n : 1);
          if (!o->staged)
            abort ();
          memcpy (o->staged, src, n);
        }
      if (fail_next_h2d)
        {
          o->fail = CUDA_ERROR_ILLEGAL_ADDRESS;
          fail_next_h2d = 0;
        }
      queue_op (q, o);
    }
  UNLOCK;
  return r;
}

CUresult cuMemcpyDtoHAsync_v2 (void *dst, CUdeviceptr src, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemcpyDtoHAsync", src, n, s, 1);
  if (r == CUDA_SUCCESS && !dst)
    r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS)
    {
      struct handle *q = stream_of ("cuMemcpyDtoHAsync", s);
      struct op *o = new_op (OP_COPY);
      o->dst = dst;
      o->src = (const void *) (uintptr_t) src;
      o->n = n;
      o->lo1 = (uintptr_t) src;
      o->hi1 = (uintptr_t) src + n;
      queue_op (q, o);
      if (!pinned (dst, n))
        {
          /* Pageable: the call returns once the copy has run. */
          run_to (q, q->enq);
          r = q->err;
          q->err = 0;
        }
    }
  UNLOCK;
  return r;
}

CUresult cuMemcpyDtoDAsync_v2 (CUdeviceptr dst, CUdeviceptr src, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemcpyDtoDAsync", dst, n, s, 1);
  if (r == CUDA_SUCCESS)
    r = dev_side ("cuMemcpyDtoDAsync", src, n, s, 0);
  if (r == CUDA_SUCCESS)
    {
      struct op *o = new_op (OP_COPY);
      o->dst = (void *) (uintptr_t) dst;
      o->src = (const void *) (uintptr_t) src;
      o->n = n;
      o->lo1 = (uintptr_t) dst;
      o->hi1 = (uintptr_t) dst + n;
      o->lo2 = (uintptr_t) src;
      o->hi2 = (uintptr_t) src + n;
      queue_op (stream_of ("cuMemcpyDtoDAsync", s), o);
    }
  UNLOCK;
  return r;
}

CUresult cuMemsetD8Async (CUdeviceptr p, unsigned char v, size_t n, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = dev_side ("cuMemsetD8Async", p, n, s, 1);
  if (r == CUDA_SUCCESS)
    {
      struct op *o = new_op (OP_MEMSET);
      o->dst = (void *) (uintptr_t) p;
      o->val = v;
      o->n = n;
      o->lo1 = (uintptr_t) p;
      o->hi1 = (uintptr_t) p + n;
      queue_op (stream_of ("cuMemsetD8Async", s), o);
    }
  UNLOCK;
  return r;
}

/* Spins for the nanoseconds environment variable `var` names (unset: none).  */
static void stub_delay (const char *var)
{
  const char *v = getenv (var);
  long ns = v ? atol (v) : 0;
  if (ns <= 0)
    return;
  struct timespec t0, t;
  clock_gettime (CLOCK_MONOTONIC, &t0);
  do
    clock_gettime (CLOCK_MONOTONIC, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < ns);
}

/* cuStreamWriteValue32_v2 into page-locked host memory (the only memory the plugin
   gives it): the word is written when the stream's work before it has run.  */
CUresult cuStreamWriteValue32_v2 (void *s, CUdeviceptr addr, unsigned value, unsigned flags)
{
  CHECK_INIT;
  stub_delay ("STUB_LIBCUDA_WRITE_NS");
  if (flags != 0 || (addr & 3))
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *q = stream_of ("cuStreamWriteValue32", s);
  CUresult r = q ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_INVALID_HANDLE;
  if (q && pinned ((const void *) (uintptr_t) addr, 4))
    {
      struct op *o = new_op (OP_WRITE32);
      o->dst = (void *) (uintptr_t) addr;
      o->val = (int) value;
      queue_op (q, o);
      r = CUDA_SUCCESS;
    }
  UNLOCK;
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
      void *p = mem_alloc (4096, size);
      r = CUDA_ERROR_OUT_OF_MEMORY;
      if (p)
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

/* ---- Streams and events (queued work runs when needed: see the header) ---- */

CUresult cuStreamCreate (void **ps, unsigned flags)
{
  CHECK_INIT;
  if (!ps || flags > 1)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuStreamCreate");
  struct handle *h = c ? new_handle (STREAM, c->dev) : NULL;
  if (h)
    h->flags = flags;
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

/* A stream's work completes after its destruction, as with CUDA. */
CUresult cuStreamDestroy_v2 (void *s)
{
  CHECK_INIT;
  LOCK;
  struct handle *p = need_handle ("cuStreamDestroy", s, STREAM);
  if (p)
    {
      run_to (p, p->enq);
      retire_stream (p);
      drop_handle (p);
    }
  UNLOCK;
  return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* The stream named `s` (NULL: the current context's legacy stream), or NULL with a
   complaint. Lock held. */
static struct handle *named_stream (const char *fn, void *s)
{
  if (s)
    return need_handle (fn, s, STREAM);
  struct ctx *c = need_ctx (fn);
  return c ? &legacy[c->dev] : NULL;
}

CUresult cuStreamSynchronize (void *s)
{
  CHECK_INIT;
  stub_delay ("STUB_LIBCUDA_SYNC_NS");
  LOCK;
  struct handle *q = named_stream ("cuStreamSynchronize", s);
  CUresult r = s ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
  if (q)
    {
      run_to (q, q->enq);
      r = q->err;
      q->err = 0;
    }
  UNLOCK;
  return r;
}

CUresult cuStreamQuery (void *s)
{
  CHECK_INIT;
  LOCK;
  struct handle *q = named_stream ("cuStreamQuery", s);
  CUresult r = s ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_INVALID_CONTEXT;
  if (q)
    {
      if (!lazy)
        run_to (q, q->enq);
      r = q->done < q->enq ? CUDA_ERROR_NOT_READY : q->err;
    }
  UNLOCK;
  return r;
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
  else
    {
      struct handle *q = s ? (struct handle *) s : &legacy[c->dev];
      if (record)
        {
          queue_op (q, new_op (OP_NOP));
          h->es = q;
          h->epos = q->enq;
          h->stamped = 0;
        }
      else if (h->es && h->es != q)
        {
          struct op *w = new_op (OP_WAIT);
          w->wait_s = h->es;
          w->wait_pos = h->epos;
          queue_op (q, w);
        }
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

static CUresult event_done (const char *fn, void *e, int wait)
{
  CHECK_INIT;
  LOCK;
  struct handle *h = need_handle (fn, e, EVENT);
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  if (h)
    {
      if (h->es && (wait || !lazy))
        run_to (h->es, h->epos);
      r = event_status (h);
    }
  UNLOCK;
  return r;
}

CUresult cuEventQuery (void *e)
{
  return event_done ("cuEventQuery", e, 0);
}

CUresult cuEventSynchronize (void *e)
{
  return event_done ("cuEventSynchronize", e, 1);
}

/* Milliseconds of virtual time between the records of two completed timing events
   (CUDA_ERROR_NOT_READY while either has work before it). */
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
  else if (event_status (a) == CUDA_ERROR_NOT_READY || event_status (b) == CUDA_ERROR_NOT_READY)
    r = CUDA_ERROR_NOT_READY;
  else if (!a->stamped || !b->stamped)
    r = CUDA_ERROR_INVALID_HANDLE; /* never recorded, or its work was discarded */
  else
    *ms = (float) ((double) (int64_t) (b->at_ns - a->at_ns) / 1e6);
  UNLOCK;
  return r;
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
      pool_release (pool, 0);
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
      uint64_t used = 0, reserved = 0;
      for (struct range *q = ranges; q; q = q->next)
        if (q->pool == pool)
          {
            reserved += q->size;
            used += q->pooled ? 0 : q->size;
          }
      if (attr == 4)
        *(uint64_t *) v = h->threshold;
      else if (attr == 5 || attr == 6) /* RESERVED_MEM_CURRENT/_HIGH */
        *(uint64_t *) v = reserved;
      else if (attr == 7 || attr == 8) /* USED_MEM_CURRENT/_HIGH */
        *(uint64_t *) v = used;
      else
        r = CUDA_ERROR_INVALID_VALUE;
    }
  UNLOCK;
  return r;
}

CUresult cuMemPoolTrimTo (void *pool, size_t keep)
{
  CHECK_INIT;
  LOCK;
  struct handle *h = need_handle ("cuMemPoolTrimTo", pool, POOL);
  int ok = h != NULL;
  if (h)
    {
      stats[h->dev].pool_trims++;
      pool_release (pool, keep);
    }
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

/* Queued: the memory is freed when the stream gets there. */
CUresult cuMemFreeAsync (CUdeviceptr p, void *s)
{
  CHECK_INIT;
  LOCK;
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  struct handle *q = stream_of ("cuMemFreeAsync", s);
  if (q)
    {
      r = CUDA_SUCCESS;
      if (!find_start ((uintptr_t) p, DEV_MEM))
        {
          complain ("cuMemFreeAsync", "%#llx does not start a device allocation", p);
          r = CUDA_ERROR_INVALID_VALUE;
        }
      else
        {
          struct op *o = new_op (OP_FREE);
          o->lo1 = (uintptr_t) p;
          o->hi1 = (uintptr_t) p + 1;
          queue_op (q, o);
        }
    }
  UNLOCK;
  return r;
}

/* ---- Registers and launch times (env, read at each use) ---- */

/* STUB_LIBCUDA_REGS: registers per thread of every kernel. */
static int kernel_regs (void)
{
  const char *v = getenv ("STUB_LIBCUDA_REGS");
  int r = v ? atoi (v) : 32;
  return r >= 1 && r <= 255 ? r : 32;
}

/* Registers one warp takes. */
static int regs_per_warp (void)
{
  return (kernel_regs () * 32 + 255) / 256 * 256;
}

/* The most threads per block the registers allow (at most 1024). */
static int max_threads (void)
{
  int w = 65536 / regs_per_warp ();
  return w >= 32 ? 1024 : w * 32;
}

/* How long launch number `n` (of the process) of `grid` blocks of `warps` warps takes. */
static uint64_t launch_ns (long n, unsigned grid, unsigned warps)
{
  const char *v = getenv ("STUB_LIBCUDA_KERNEL_NS");
  uint64_t any = 0, mine = 0, noise = 0, of_grid = 0;
  int have_mine = 0, have_noise = 0, have_grid = 0;
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
      else if (*p == 'g' && (unsigned) atol (p + 1) == grid)
        of_grid = ns, have_grid = 1;
      else if (*p != '@' && *p != 'g' && (unsigned) atoi (p) == warps)
        mine = ns, have_mine = 1;
      p = strchr (eq, ',');
      p = p ? p + 1 : NULL;
    }
  return have_noise ? noise : have_grid ? of_grid : have_mine ? mine : any;
}

/* ---- JIT link, modules, kernels ----
 * Built with -DSTUB_SEPARATE_JIT, these come from stub_libcuda_jit.c instead (see the
 * header: such a build launches nothing). */

#ifndef STUB_SEPARATE_JIT

CUresult cuLinkCreate_v2 (unsigned n, int *opts, void **vals, void **state)
{
  (void) n;
  (void) opts;
  (void) vals;
  CHECK_INIT;
  if (!state)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuLinkCreate");
  struct handle *h = c ? new_handle (LINK, c->dev) : NULL;
  UNLOCK;
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  *state = h;
  return h ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuLinkAddData_v2 (void *state, int type, void *data, size_t size, const char *name,
                           unsigned n, int *opts, void **vals)
{
  (void) type;
  (void) name;
  (void) n;
  (void) opts;
  (void) vals;
  CHECK_INIT;
  if (!data || size == 0)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuLinkAddData", state, LINK);
  CUresult r = h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  if (h)
    {
      size_t len = strnlen (data, size);
      char *t = realloc (h->text, h->len + len + 2);
      if (!t)
        abort ();
      memcpy (t + h->len, data, len);
      h->len += len;
      t[h->len++] = '\n';
      t[h->len] = 0;
      h->text = t;
    }
  UNLOCK;
  return r;
}

CUresult cuLinkComplete (void *state, void **cubin, size_t *size)
{
  CHECK_INIT;
  if (!cubin || !size)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuLinkComplete", state, LINK);
  if (h)
    {
      *cubin = h->text;
      *size = h->len + 1;
    }
  UNLOCK;
  return h && h->text ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuLinkDestroy (void *state)
{
  return drop ("cuLinkDestroy", state, LINK);
}

CUresult cuModuleLoadData (void **mod, const void *image)
{
  CHECK_INIT;
  if (!mod || !image)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct ctx *c = need_ctx ("cuModuleLoadData");
  struct handle *h = c ? new_handle (MODULE, c->dev) : NULL;
  if (h)
    {
      h->text = strdup (image);
      if (!h->text)
        abort ();
    }
  UNLOCK;
  if (!c)
    return CUDA_ERROR_INVALID_CONTEXT;
  *mod = h;
  return h ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* Queued launches of the module's kernels are refused (dropped, with a complaint). */
CUresult cuModuleUnload (void *mod)
{
  CHECK_INIT;
  LOCK;
  struct handle *m = need_handle ("cuModuleUnload", mod, MODULE);
  if (m)
    {
      for (struct handle *h = handles, *next; h; h = next)
        {
          next = h->next;
          if (h->kind != FUNC || h->mod != m)
            continue;
          for (struct handle *q = handles; q; q = q->next)
            if (q->kind == STREAM)
              for (struct op *o = q->head; o; o = o->next)
                if (o->kind == OP_LAUNCH && o->func == h && !o->dropped)
                  {
                    complain ("cuModuleUnload", "a launch of its kernel is still queued");
                    o->dropped = 1;
                  }
          for (int i = 0; i < NDEV; i++)
            for (struct op *o = legacy[i].head; o; o = o->next)
              if (o->kind == OP_LAUNCH && o->func == h && !o->dropped)
                {
                  complain ("cuModuleUnload", "a launch of its kernel is still queued");
                  o->dropped = 1;
                }
          drop_handle (h);
        }
      drop_handle (m);
    }
  UNLOCK;
  return m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static enum kernel kernel_of (const char *name)
{
  if (!strcmp (name, "gomp_stub_snapshot"))
    return K_SNAPSHOT;
  if (!strcmp (name, "gomp_stub_double"))
    return K_DOUBLE;
  if (!strcmp (name, "gomp_rs_copy"))
    return K_COPY;
  return K_NONE;
}

/* cuModuleGetFunction calls so far (stub_libcuda_function_lookups). */
static long function_lookups;

/* For the tests: how many times a function was looked up in a module. */
long stub_libcuda_function_lookups (void)
{
  return __atomic_load_n (&function_lookups, __ATOMIC_RELAXED);
}

CUresult cuModuleGetFunction (void **f, void *mod, const char *name)
{
  CHECK_INIT;
  if (!f || !name)
    return CUDA_ERROR_INVALID_VALUE;
  __atomic_fetch_add (&function_lookups, 1, __ATOMIC_RELAXED);
  LOCK;
  struct handle *m = need_handle ("cuModuleGetFunction", mod, MODULE);
  CUresult r = m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
  if (m)
    {
      /* ".entry NAME(" or ".entry NAME (", as GCC writes it. */
      char pat[300];
      int n = snprintf (pat, sizeof pat, ".entry %s", name);
      const char *at = m->text;
      while ((at = strstr (at, pat)) != NULL)
        {
          at += n;
          if (at[strspn (at, " ")] == '(')
            break;
        }
      if (at)
        {
          struct handle *h = new_handle (FUNC, m->dev);
          h->mod = m;
          h->kernel = kernel_of (name);
          h->text = strdup (name);
          if (!h->text)
            abort ();
          *f = h;
          r = CUDA_SUCCESS;
        }
    }
  UNLOCK;
  return r;
}

/* The images of the tests have no globals. */
CUresult cuModuleGetGlobal_v2 (CUdeviceptr *p, size_t *bytes, void *mod, const char *name)
{
  (void) p;
  (void) bytes;
  (void) name;
  CHECK_INIT;
  LOCK;
  struct handle *m = need_handle ("cuModuleGetGlobal", mod, MODULE);
  UNLOCK;
  return m ? CUDA_ERROR_NOT_FOUND : CUDA_ERROR_INVALID_HANDLE;
}

CUresult cuFuncGetAttribute (int *v, int attr, void *f)
{
  CHECK_INIT;
  if (!v)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuFuncGetAttribute", f, FUNC);
  UNLOCK;
  if (!h)
    return CUDA_ERROR_INVALID_HANDLE;
  /* MAX_THREADS_PER_BLOCK, NUM_REGS (STUB_LIBCUDA_REGS); the rest (shared, local
     sizes...) 0. */
  *v = attr == 0 ? max_threads () : attr == 4 ? kernel_regs () : 0;
  return CUDA_SUCCESS;
}

CUresult cuFuncSetAttribute (void *f, int attr, int v)
{
  (void) attr;
  (void) v;
  CHECK_INIT;
  LOCK;
  struct handle *h = need_handle ("cuFuncSetAttribute", f, FUNC);
  UNLOCK;
  return h ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

#endif /* STUB_SEPARATE_JIT */

/* Blocks of `block` threads resident on one SM, as an H100 for STUB_LIBCUDA_REGS
   registers (see the header). */
static int resident_per_sm (int block)
{
  int warps = (block + 31) / 32;
  int b = 65536 / (regs_per_warp () * warps);
  if (b > 64 / warps)
    b = 64 / warps;
  return b > 32 ? 32 : b;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor (int *n, void *f, int block, size_t smem)
{
  (void) smem;
  CHECK_INIT;
  if (!n || block <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuOccupancyMaxActiveBlocksPerMultiprocessor", f, FUNC);
  UNLOCK;
  if (!h)
    return CUDA_ERROR_INVALID_HANDLE;
  if (block > max_threads ())
    return CUDA_ERROR_INVALID_VALUE;
  *n = resident_per_sm (block);
  return CUDA_SUCCESS;
}

CUresult cuOccupancyMaxPotentialBlockSize (int *grid, int *block, void *f, void *cb,
                                           size_t smem, int limit)
{
  (void) cb;
  (void) smem;
  CHECK_INIT;
  if (!grid || !block)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  struct handle *h = need_handle ("cuOccupancyMaxPotentialBlockSize", f, FUNC);
  UNLOCK;
  if (!h)
    return CUDA_ERROR_INVALID_HANDLE;
  /* The largest block the registers and the limit allow (whole warps). */
  int b = max_threads ();
  if (limit > 0 && limit < b)
    b = limit < 32 ? 32 : limit / 32 * 32;
  *block = b;
  *grid = 132 * resident_per_sm (b);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernel (void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                         unsigned by, unsigned bz, unsigned smem, void *s, void **params,
                         void **extra)
{
  (void) smem;
  (void) extra;
  CHECK_INIT;
  if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t) bx * by * bz > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  LOCK;
  CUresult r = CUDA_ERROR_INVALID_HANDLE;
  struct handle *h = need_handle ("cuLaunchKernel", f, FUNC);
  struct handle *q = h ? stream_of ("cuLaunchKernel", s) : NULL;
  if (h && q)
    {
      struct op *o = new_op (OP_LAUNCH);
      o->func = h;
      int nargs = h->kernel == K_COPY ? 3 : h->kernel == K_NONE && !arg0_check ? 0 : 1;
      for (int i = 0; i < nargs && params; i++)
        o->args[i] = *(uint64_t *) params[i];
      if (h->kernel == K_SNAPSHOT || h->kernel == K_DOUBLE)
        {
          o->lo1 = (uintptr_t) o->args[0];
          o->hi1 = o->lo1 + 64;
        }
      o->ns = launch_ns (++launches, gx, by);
      char line[512];
      int w = snprintf (line, sizeof line, "%s %u %u\n", h->text ? h->text : "?", gx, by);
      if (w >= (int) sizeof line)
        w = (int) sizeof line - 1;
      launch_text = realloc (launch_text, launch_len + w + 1);
      if (!launch_text)
        abort ();
      memcpy (launch_text + launch_len, line, w + 1);
      launch_len += w;
      queue_op (q, o);
      r = CUDA_SUCCESS;
    }
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
  out->pool_reserved = out->pool_used = 0;
  for (struct range *r = ranges; r; r = r->next)
    if (r->kind == DEV_MEM && r->dev == dev && r->pool)
      {
        out->pool_reserved += (int64_t) r->size;
        out->pool_used += r->pooled ? 0 : (int64_t) r->size;
      }
  UNLOCK;
  return 0;
}

/* How many snapshots the kernel gomp_stub_snapshot has taken; copies snapshot `i`
   (64 bytes) into `out` when there is one. */
int stub_libcuda_kernel_log (int i, unsigned char *out)
{
  LOCK;
  int n = nlog;
  if (out && i >= 0 && i < n)
    memcpy (out, kernel_log[i], 64);
  UNLOCK;
  return n;
}

/* Copies, memsets, launches and frees queued and not yet run, on every stream. */
int64_t stub_libcuda_value_writes (void)
{
  LOCK;
  int64_t n = value_writes;
  UNLOCK;
  return n;
}

int64_t stub_libcuda_pending (void)
{
  int64_t n = 0;
  LOCK;
  for (struct handle *h = handles; h; h = h->next)
    if (h->kind == STREAM)
      for (struct op *o = h->head; o; o = o->next)
        n += o->kind != OP_NOP && o->kind != OP_WAIT;
  for (int i = 0; i < NDEV; i++)
    for (struct op *o = legacy[i].head; o; o = o->next)
      n += o->kind != OP_NOP && o->kind != OP_WAIT;
  UNLOCK;
  return n;
}

/* The next cuMemcpyHtoDAsync fails on the device (an illegal address) when it runs. */
void stub_libcuda_fail_next_h2d (void)
{
  LOCK;
  fail_next_h2d = 1;
  UNLOCK;
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

/* Copies the launch log (NUL-terminated, cut to `cap`) into `buf`; returns its whole
   length. */
long stub_libcuda_launch_log (char *buf, size_t cap)
{
  LOCK;
  long n = (long) launch_len;
  if (buf && cap)
    {
      size_t m = launch_len < cap - 1 ? launch_len : cap - 1;
      if (m)
        memcpy (buf, launch_text, m);
      buf[m] = 0;
    }
  UNLOCK;
  return n;
}
