/* stub_libhsa.c - stand-in libhsa-runtime64 for the gcn plugin's tests (gcn/tests/,
   tests/host_fallback.sh section 2c): exercises the plugin's HSA table, call sequences
   and GCC's gcn launch protocol (docs/gcn-launch.md) without AMD hardware.
   -DPARTIAL: only hsa_init (required entries missing).
   -DINIT_RESULT=N: what hsa_init returns (0 = success, 0x1000 = HSA_STATUS_ERROR).
   Otherwise every entry of gcn/src/hsa/runtime.rs's table exists (stub_names.h, generated
   from it, holds those this file does not define, each returning HSA_STATUS_ERROR) and
   hsa_iterate_agents finds no agent, unless
   -DONE_GPU=\"gfx90a\": one GPU agent of that name (base profile, STUB_HSA_CUS compute
   units, default 8) with a coarse-grained and a kernarg region; memory is host memory
   (allocate = malloc, copy = memmove), every block recorded with its region; executables
   remember the code object they were given and know a symbol when its name (with its
   NUL) occurs in the code object's bytes, kernel objects being records here;
   __gomp_additional_icvs, .offload_var_table (two fake variables: (&var_a, 20),
   (&var_b, 8)) and .offload_func_table (fake device function addresses 0xf000 + i) are
   served from buffers here.
   It plays the device: each queue has a thread that reads the AQL packets, checks them
   against the spec (header word, dimensions, work-group sizes, segment sizes, the
   kernarg block, output ring, heap, arena and stacks; each failed check prints
   "stub-hsa: BAD ..." to stderr and counts in stub_hsa_bad), then performs the script
   of STUB_HSA_SCRIPT for offload kernels (init/fini kernels just complete) and
   completes the signal. Script items, comma-separated, in order:
     print:N   N console lines "line <i>\n" through the ring (type 3), as newlib's write
               does: reserve, wait for the host once 1024 slots are pending, fill, publish
     text:W    the line W ('_' printed as ' ')
     long      one 300-byte message (two slots)
     types     one message of each value type 0, 1, 2 and one of the unknown type 9
     rev:N     N reverse-offload requests (type 4, fn 0xf000+i, mapnum i, devnum 0),
               each waiting until the host clears it
     store:I:V writes the int V at the device address in slot I of the kernel's
               argument block (tgt_vars, or OpenACC's devaddrs)
     step:I    the int at the device address in slot I becomes int*10+1 (order checks)
     exit:N | abort | signal:S | corrupt   the return value of exit(N), abort() (with its
               "GCN Kernel Aborted" message), a signal S, a corrupt value
     overflow  makes consumed run past next_output (the host's overflow message)
     sleep:MS  sleeps
     queue_error  calls the queue's error callback (HSA_STATUS_ERROR_EXCEPTION)
   Expectations: STUB_HSA_EXPECT_GRID=teams,threads (offload kernels' grid x and z),
   STUB_HSA_EXPECT_LDS=bytes (else computed from GOMP_GCN_LOWLAT_POOL / the team count,
   STUB_HSA_LOWLAT_HEAP default 48), GCN_HEAP_SIZE / GCN_TEAM_ARENA_SIZE / GCN_STACK_SIZE
   as the plugin reads them (plain decimal here); STUB_HSA_OPENACC (set): offload
   kernels are OpenACC launches (no team arena: arena_ptr 0, arena size 0).
   Properties: vendor "AMD", runtime version 1.4, coarse-grained region 16 GiB.
   Each packet also prints "stub-hsa: packet NAME grid=X,Y,Z wg=X,Y,Z lds=N" to stderr.
   This proves the plugin's call sequence, bookkeeping and host side of the protocol
   against a stand-in, NOT against a real HSA runtime or AMD GPU. Counters of live
   objects are exported as stub_hsa_live ([0] memory blocks, [1] code object readers,
   [2] executables, [3] signals, [4] queues). Constants are HSA 1.x's
   (bindgen/hsa/hsa.h). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
typedef int status;
typedef struct { uint64_t handle; } handle_t;
status hsa_init(void) { return INIT_RESULT; }
#ifndef PARTIAL
status hsa_status_string(status s, const char **text) { (void)s; *text = "stub error text"; return 0; }
#ifndef ONE_GPU
status hsa_iterate_agents(void *cb, void *data) { (void)cb; (void)data; return 0; }
#else
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
enum { ERROR = 0x1000, INVALID_ARGUMENT = 0x1001, INVALID_SYMBOL_NAME = 0x1013, EXCEPTION = 0x1016 };
/* Live objects: [0] memory blocks, [1] code object readers, [2] executables, [3] signals, [4] queues. */
int stub_hsa_live[5];
/* Failed packet checks; launches of offload kernels and of init/fini kernels. */
int stub_hsa_bad, stub_hsa_launches[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* One stdio call per line, so that the plugin's threads cannot split it. */
#define BAD(...) do { char bad_[512]; snprintf(bad_, sizeof bad_, __VA_ARGS__); fprintf(stderr, "stub-hsa: BAD %s\n", bad_); __atomic_add_fetch(&stub_hsa_bad, 1, __ATOMIC_SEQ_CST); } while (0)
static long env_long(const char *name, long dflt) { const char *v = getenv(name); return v && *v ? strtol(v, NULL, 0) : dflt; }
static unsigned cus(void) { return (unsigned)env_long("STUB_HSA_CUS", 8); }

status hsa_iterate_agents(status (*cb)(handle_t, void *), void *data) {
  return cb((handle_t){0xa9e7}, data);
}
status hsa_agent_get_info(handle_t agent, int attr, void *value) {
  if (agent.handle != 0xa9e7) return INVALID_ARGUMENT;
  switch (attr) {
  case 0: memset(value, 0, 64); strcpy(value, ONE_GPU); return 0; /* NAME */
  case 1: memset(value, 0, 64); strcpy(value, "AMD"); return 0;    /* VENDOR_NAME */
  case 4: *(int *)value = 0; return 0;                             /* PROFILE: base */
  case 14: *(uint32_t *)value = 1024; return 0;                    /* QUEUE_MAX_SIZE */
  case 17: *(int *)value = 1; return 0;                            /* DEVICE: GPU */
  case 0xA002: *(uint32_t *)value = cus(); return 0;               /* AMD: COMPUTE_UNIT_COUNT */
  default: return INVALID_ARGUMENT;
  }
}
status hsa_system_get_info(int attr, void *value) {
  if (attr == 0 || attr == 1) { *(uint16_t *)value = attr ? 4 : 1; return 0; } /* VERSION_MAJOR/MINOR: 1.4 */
  if (attr != 3) return INVALID_ARGUMENT;                          /* TIMESTAMP_FREQUENCY */
  *(uint64_t *)value = 1000000000;
  return 0;
}
enum { COARSE = 0xc0a, KERNARG = 0xa26 };
status hsa_agent_iterate_regions(handle_t agent, status (*cb)(handle_t, void *), void *data) {
  if (agent.handle != 0xa9e7) return INVALID_ARGUMENT;
  status s = cb((handle_t){KERNARG}, data);
  return s ? s : cb((handle_t){COARSE}, data);
}
status hsa_region_get_info(handle_t r, int attr, void *value) {
  switch (attr) {
  case 0: *(int *)value = 0; return 0;                                      /* SEGMENT: global */
  case 1: *(uint32_t *)value = r.handle == COARSE ? 4 : 1 | 2; return 0;    /* GLOBAL_FLAGS */
  case 2: *(size_t *)value = r.handle == COARSE ? (size_t)16 << 30 : 1 << 20; return 0; /* SIZE: 16 GiB coarse */
  case 5: *(bool *)value = true; return 0;                                  /* RUNTIME_ALLOC_ALLOWED */
  default: return INVALID_ARGUMENT;
  }
}
/* Every block, with its region and whether an agent was given access to it. */
struct block { char *p; size_t n; uint64_t region; bool assigned; };
static struct block blocks[4096];
static struct block *find_block(const void *p, size_t n) {
  for (int i = 0; i < 4096; i++)
    if (blocks[i].p && (const char *)p >= blocks[i].p && (const char *)p + n <= blocks[i].p + blocks[i].n)
      return &blocks[i];
  return NULL;
}
status hsa_memory_allocate(handle_t r, size_t n, void **p) {
  if ((r.handle != COARSE && r.handle != KERNARG) || !n) return INVALID_ARGUMENT;
  if (!(*p = malloc(n))) return 0x1009; /* OUT_OF_RESOURCES */
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 4096; i++)
    if (!blocks[i].p) { blocks[i] = (struct block){*p, n, r.handle, false}; break; }
  stub_hsa_live[0]++;
  pthread_mutex_unlock(&lock);
  return 0;
}
status hsa_memory_free(void *p) {
  pthread_mutex_lock(&lock);
  struct block *b = find_block(p, 1);
  if (!b || b->p != p) { pthread_mutex_unlock(&lock); return INVALID_ARGUMENT; }
  b->p = NULL;
  stub_hsa_live[0]--;
  pthread_mutex_unlock(&lock);
  free(p);
  return 0;
}
status hsa_memory_assign_agent(void *p, handle_t agent, int access) {
  pthread_mutex_lock(&lock);
  struct block *b = find_block(p, 1);
  status s = !b || b->p != p || agent.handle != 0xa9e7 || access != 3 ? INVALID_ARGUMENT : 0;
  if (!s) b->assigned = true;
  pthread_mutex_unlock(&lock);
  return s;
}
status hsa_memory_copy(void *dst, const void *src, size_t n) {
  if (!dst || !src) return INVALID_ARGUMENT;
  memmove(dst, src, n);
  return 0;
}
/* Signals: a value, a mutex and a condition variable. */
struct sig { _Atomic int64_t v; pthread_mutex_t m; pthread_cond_t c; };
#define SIG(h) ((struct sig *)(uintptr_t)(h).handle)
status hsa_signal_create(int64_t v, uint32_t n, const handle_t *consumers, handle_t *s) {
  (void)n; (void)consumers;
  struct sig *x = calloc(1, sizeof *x);
  atomic_init(&x->v, v);
  pthread_mutex_init(&x->m, NULL);
  pthread_cond_init(&x->c, NULL);
  s->handle = (uintptr_t)x;
  __atomic_add_fetch(&stub_hsa_live[3], 1, __ATOMIC_SEQ_CST);
  return 0;
}
status hsa_signal_destroy(handle_t s) {
  if (!s.handle) return INVALID_ARGUMENT;
  free(SIG(s));
  __atomic_sub_fetch(&stub_hsa_live[3], 1, __ATOMIC_SEQ_CST);
  return 0;
}
static void sig_set(handle_t s, int64_t v) {
  pthread_mutex_lock(&SIG(s)->m);
  atomic_store(&SIG(s)->v, v);
  pthread_cond_broadcast(&SIG(s)->c);
  pthread_mutex_unlock(&SIG(s)->m);
}
/* The return types below are not `status`; the macro keeps each definition's line
   starting with "status hsa_", which the tests read to know what this file defines. */
#define status void
status hsa_signal_store_relaxed(handle_t s, int64_t v) { sig_set(s, v); }
status hsa_signal_store_release(handle_t s, int64_t v) { sig_set(s, v); }
#undef status
#define status int64_t
status hsa_signal_load_acquire(handle_t s) { return atomic_load(&SIG(s)->v); }
static bool holds(int64_t v, int cond, int64_t c) {
  switch (cond) { case 0: return v == c; case 1: return v != c; case 2: return v < c; default: return v >= c; }
}
/* Blocks until the condition holds or `timeout` ns (timestamp frequency 1 GHz) passed. */
status hsa_signal_wait_acquire(handle_t s, int cond, int64_t c, uint64_t timeout, int state) {
  struct sig *x = SIG(s);
  if (state != 0) BAD("signal wait not BLOCKED (%d)", state);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  uint64_t ns = t.tv_nsec + (timeout > 60000000000ull ? 60000000000ull : timeout);
  t.tv_sec += ns / 1000000000, t.tv_nsec = ns % 1000000000;
  pthread_mutex_lock(&x->m);
  while (!holds(atomic_load(&x->v), cond, c))
    if (pthread_cond_timedwait(&x->c, &x->m, &t)) break;
  int64_t v = atomic_load(&x->v);
  pthread_mutex_unlock(&x->m);
  return v;
}
#undef status
struct reader { const char *code; size_t size; };
/* A kernel symbol: its object (the record's address) and name. */
struct ksym { char name[128]; bool live; };
struct exec { const char *code; size_t size; bool frozen; struct ksym *k[64]; };
status hsa_code_object_reader_create_from_memory(const void *code, size_t size, handle_t *r) {
  struct reader *x = malloc(sizeof *x);
  *x = (struct reader){code, size};
  r->handle = (uintptr_t)x;
  stub_hsa_live[1]++;
  return 0;
}
status hsa_code_object_reader_destroy(handle_t r) { free((void *)(uintptr_t)r.handle); stub_hsa_live[1]--; return 0; }
status hsa_executable_create_alt(int profile, int rounding, const char *options, handle_t *e) {
  (void)profile; (void)rounding; (void)options;
  e->handle = (uintptr_t)calloc(1, sizeof(struct exec));
  stub_hsa_live[2]++;
  return 0;
}
status hsa_executable_load_agent_code_object(handle_t e, handle_t agent, handle_t r, const char *o, void *loaded) {
  (void)o; (void)loaded;
  struct exec *x = (void *)(uintptr_t)e.handle;
  struct reader *y = (void *)(uintptr_t)r.handle;
  if (agent.handle != 0xa9e7 || x->frozen) return INVALID_ARGUMENT;
  x->code = y->code, x->size = y->size;
  return 0;
}
status hsa_executable_freeze(handle_t e, const char *o) { (void)o; ((struct exec *)(uintptr_t)e.handle)->frozen = true; return 0; }
status hsa_executable_validate(handle_t e, uint32_t *result) { *result = !((struct exec *)(uintptr_t)e.handle)->frozen; return 0; }
/* Kernel records stay allocated (marked dead) so a stale kernel object is recognised. */
status hsa_executable_destroy(handle_t e) {
  struct exec *x = (void *)(uintptr_t)e.handle;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < 64 && x->k[i]; i++) x->k[i]->live = false;
  pthread_mutex_unlock(&lock);
  free(x);
  stub_hsa_live[2]--;
  return 0;
}
static struct ksym *all_k[4096];
static struct ksym *find_kernel(uint64_t object) {
  pthread_mutex_lock(&lock);
  struct ksym *r = NULL;
  for (int i = 0; i < 4096 && all_k[i]; i++)
    if ((uintptr_t)all_k[i] == object && all_k[i]->live) r = all_k[i];
  pthread_mutex_unlock(&lock);
  return r;
}
/* Variables served from here. */
unsigned char stub_icvs[16], stub_var_a[20], stub_var_b[8];
static uint64_t var_table[4], func_table[64];
enum { SYM_ICVS = 2, SYM_VARS, SYM_FUNCS };
status hsa_executable_get_symbol_by_name(handle_t e, const char *name, const handle_t *agent, handle_t *sym) {
  struct exec *x = (void *)(uintptr_t)e.handle;
  (void)agent;
  if (!x->frozen) return INVALID_ARGUMENT;
  if (!strcmp(name, "__gomp_additional_icvs")) { sym->handle = SYM_ICVS; return 0; }
  if (!strcmp(name, ".offload_var_table")) { sym->handle = SYM_VARS; return 0; }
  if (!strcmp(name, ".offload_func_table")) { sym->handle = SYM_FUNCS; return 0; }
  if (!memmem(x->code, x->size, name, strlen(name) + 1) || strlen(name) < 4 || strlen(name) >= 128) return INVALID_SYMBOL_NAME;
  /* A kernel descriptor "<name>.kd": one record per executable and name. */
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < 63 && x->k[i] && strncmp(x->k[i]->name, name, strlen(name) - 3)) i++;
  if (!x->k[i]) {
    x->k[i] = calloc(1, sizeof(struct ksym));
    memcpy(x->k[i]->name, name, strlen(name) - 3); /* without ".kd" */
    x->k[i]->live = true;
    for (int j = 0; j < 4096; j++) if (!all_k[j]) { all_k[j] = x->k[i]; break; }
  }
  sym->handle = (uintptr_t)x->k[i];
  pthread_mutex_unlock(&lock);
  return 0;
}
status hsa_executable_symbol_get_info(handle_t sym, int attr, void *value) {
  var_table[0] = (uintptr_t)stub_var_a, var_table[1] = 20;
  var_table[2] = (uintptr_t)stub_var_b, var_table[3] = 8;
  for (int i = 0; i < 64; i++) func_table[i] = 0xf000 + i;
  switch (sym.handle < 256 ? sym.handle << 8 | (unsigned)attr : (unsigned)attr) {
  case 22: *(uint64_t *)value = sym.handle; return 0;              /* KERNEL_OBJECT */
  case SYM_ICVS << 8 | 21: *(uint64_t *)value = (uintptr_t)stub_icvs; return 0;
  case SYM_ICVS << 8 | 9: *(uint32_t *)value = 16; return 0;
  case SYM_VARS << 8 | 21: *(uint64_t *)value = (uintptr_t)var_table; return 0;
  case SYM_VARS << 8 | 9: *(uint32_t *)value = 0; return 0;
  case SYM_FUNCS << 8 | 21: *(uint64_t *)value = (uintptr_t)func_table; return 0;
  case SYM_FUNCS << 8 | 9: *(uint32_t *)value = 0; return 0;
  default: return INVALID_ARGUMENT;
  }
}

/* ---- Queues and the device ---- */
typedef struct {  /* hsa_queue_t */
  uint32_t type, features; void *base_address; handle_t doorbell_signal; uint32_t size, reserved1; uint64_t id;
} queue_t;
struct squeue {
  queue_t q; _Atomic uint64_t read, write; void (*cb)(status, queue_t *, void *); void *data;
  pthread_t th; _Atomic bool stop;
};
static void *device(void *);
status hsa_queue_create(handle_t agent, uint32_t size, int type, void (*cb)(status, queue_t *, void *), void *data,
                        uint32_t private_size, uint32_t group_size, queue_t **out) {
  if (agent.handle != 0xa9e7 || !size || (size & (size - 1)) || size > 1024) return INVALID_ARGUMENT;
  if (type != 0) BAD("queue type %d, want MULTI (0)", type);
  if (private_size != UINT32_MAX || group_size != UINT32_MAX) BAD("queue segment sizes %u/%u, want UINT32_MAX", private_size, group_size);
  struct squeue *s = calloc(1, sizeof *s);
  s->q.base_address = aligned_alloc(64, (size_t)size * 64);
  for (uint32_t i = 0; i < size; i++) *(uint16_t *)((char *)s->q.base_address + i * 64) = 1; /* INVALID */
  s->q.size = size, s->cb = cb, s->data = data;
  hsa_signal_create(-1, 0, NULL, &s->q.doorbell_signal);
  pthread_create(&s->th, NULL, device, s);
  __atomic_add_fetch(&stub_hsa_live[4], 1, __ATOMIC_SEQ_CST);
  *out = &s->q;
  return 0;
}
status hsa_queue_destroy(queue_t *q) {
  struct squeue *s = (struct squeue *)q;
  atomic_store(&s->stop, true);
  sig_set(q->doorbell_signal, INT64_MAX);
  pthread_join(s->th, NULL);
  hsa_signal_destroy(q->doorbell_signal);
  free(q->base_address);
  free(s);
  __atomic_sub_fetch(&stub_hsa_live[4], 1, __ATOMIC_SEQ_CST);
  return 0;
}
#define status uint64_t
status hsa_queue_load_read_index_acquire(const queue_t *q) { return atomic_load(&((struct squeue *)q)->read); }
status hsa_queue_load_read_index_relaxed(const queue_t *q) { return atomic_load(&((struct squeue *)q)->read); }
status hsa_queue_load_write_index_relaxed(const queue_t *q) { return atomic_load(&((struct squeue *)q)->write); }
status hsa_queue_add_write_index_release(const queue_t *q, uint64_t n) { return atomic_fetch_add(&((struct squeue *)q)->write, n); }
#undef status

/* The output ring (docs/gcn-launch.md §2). */
enum { RING = 1024, SLOT = 264, OUT_NEXT = 4, OUT_QUEUE = 8, OUT_CONSUMED = 270344, OUT_SIZE = 270352 };
#define U32(p, off) ((_Atomic uint32_t *)((char *)(p) + (off)))
#define SLOTP(out, i) ((char *)(out) + OUT_QUEUE + (size_t)((i) % RING) * SLOT)
/* Reserves n slots as newlib's write does; -1: EFBIG. */
static long reserve(char *out, unsigned n) {
  uint32_t index = atomic_fetch_add(U32(out, OUT_NEXT), n);
  if (index + n < atomic_load(U32(out, OUT_CONSUMED))) return -1;
  return index;
}
static void wait_slot(char *out, uint32_t i) {
  while (i >= RING && !(atomic_load(U32(out, OUT_CONSUMED)) > i - RING)) usleep(1);
}
static void publish(char *slot, int type) {
  *(int *)(slot + 132) = type;
  atomic_store_explicit((_Atomic int *)slot, 1, memory_order_release);
}
static void dev_write(char *out, const char *text) {
  size_t count = strlen(text);
  unsigned n = (count + 1) / 256 + 1;
  long index = reserve(out, n);
  if (index < 0) return;
  for (unsigned j = 0; j < n; j++) {
    uint32_t i = index + j;
    wait_slot(out, i);
    char *slot = SLOTP(out, i);
    memset(slot + 4, 0, 128); memset(slot + 136, 0, 128);
    size_t off = j * 256, left = off < count ? count - off : 0;
    memcpy(slot + 4, text + off, left < 128 ? left : 128);
    if (left > 128) memcpy(slot + 136, text + off + 128, left - 128 < 128 ? left - 128 : 128);
    publish(slot, 3);
  }
}
static char *dev_slot(char *out) {
  long index = reserve(out, 1);
  if (index < 0) return NULL;
  wait_slot(out, index);
  return SLOTP(out, index);
}

struct packet {
  uint16_t header, setup, wg[3], reserved0; uint32_t grid[3], private_size, group_size;
  uint64_t kernel_object, kernarg_address, reserved2; handle_t completion;
};
static unsigned expect(const char *env, unsigned dflt) { return (unsigned)env_long(env, dflt); }

/* Checks one packet against the spec; returns the output ring (NULL if unusable). */
static char *check(struct packet *p, uint32_t word, const char *name, bool cdtor) {
  unsigned ndim = word >> 16, gx = p->grid[0], gz = p->grid[2];
  if ((word & 0xffff) != 0x1402) BAD("%s: header %#x, want 0x1402", name, word & 0xffff);
  if (ndim != 3) BAD("%s: %u dimensions, want 3", name, ndim);
  if (p->grid[1] != 64 || p->wg[0] != 1 || p->wg[1] != 64) BAD("%s: grid y %u, work-group %u,%u: want 64, 1,64", name, p->grid[1], p->wg[0], p->wg[1]);
  if (gz < 1 || gz > 16 || p->wg[2] != (gz < 16 ? gz : 16)) BAD("%s: grid z %u, work-group z %u", name, gz, p->wg[2]);
  if (gx < 1) BAD("%s: grid x 0", name);
  if (cdtor && (gx != 1 || gz != 1)) BAD("%s: init/fini grid %u,%u, want 1,1", name, gx, gz);
  const char *eg = getenv("STUB_HSA_EXPECT_GRID");
  unsigned tx, tz;
  if (!cdtor && eg && sscanf(eg, "%u,%u", &tx, &tz) == 2 && (tx != gx || tz != gz))
    BAD("%s: grid %u teams x %u threads, want %u x %u", name, gx, gz, tx, tz);
  if (p->private_size != 0) BAD("%s: private segment %u, want 0", name, p->private_size);
  unsigned lds, heap_off = expect("STUB_HSA_LOWLAT_HEAP", 48);
  const char *pool = getenv("GOMP_GCN_LOWLAT_POOL");
  if (getenv("STUB_HSA_EXPECT_LDS")) lds = expect("STUB_HSA_EXPECT_LDS", 0);
  else if (pool) { long v = atol(pool); lds = v < heap_off + 8 ? heap_off + 8 : v > 65536 ? 65536 : v; }
  else { unsigned tpc = gx / cus(), meta = cdtor ? 65536 : 0x600, t = tpc ? 65536 / tpc : 65536; lds = meta > t ? meta : t; }
  if (p->group_size != lds) BAD("%s: group segment %u, want %u", name, p->group_size, lds);
  if (!p->completion.handle || atomic_load(&SIG(p->completion)->v) != 1) BAD("%s: completion signal not 1", name);
  /* The kernarg block. */
  char *ka = (char *)(uintptr_t)p->kernarg_address;
  pthread_mutex_lock(&lock);
  struct block *kb = find_block(ka, 56);
  bool kok = kb && kb->region == KERNARG && !((uintptr_t)ka & 15);
  pthread_mutex_unlock(&lock);
  if (!kok) { BAD("%s: kernarg address %p is not a 16-aligned block of the kernarg region", name, ka); return NULL; }
  uint64_t *w = (uint64_t *)ka;
  if (cdtor && w[0]) BAD("%s: init/fini kernel argument %#llx, want NULL", name, (unsigned long long)w[0]);
  char *out = (char *)(uintptr_t)w[2];
  pthread_mutex_lock(&lock);
  struct block *ob = find_block(out, OUT_SIZE);
  pthread_mutex_unlock(&lock);
  if (!ob || ((uintptr_t)out & 7)) { BAD("%s: out_ptr %p is not an 8-aligned %d-byte block", name, out, OUT_SIZE); return NULL; }
  if (*U32(out, 0) != 0xcafe0000u || *U32(out, OUT_NEXT) || *U32(out, OUT_CONSUMED))
    BAD("%s: ring not initialised (return %#x, next %u, consumed %u)", name, *U32(out, 0), *U32(out, OUT_NEXT), *U32(out, OUT_CONSUMED));
  for (int i = 0; i < RING; i++)
    if (*(int *)SLOTP(out, i)) { BAD("%s: slot %d still written", name, i); break; }
  char *heap = (char *)(uintptr_t)w[3];
  pthread_mutex_lock(&lock);
  struct block *hb = find_block(heap, 8);
  unsigned long long want_heap = env_long("GCN_HEAP_SIZE", 100 << 20);
  if (!hb || hb->p != heap || hb->region != COARSE || !hb->assigned || hb->n != want_heap || *(uint64_t *)heap != hb->n)
    BAD("%s: heap %p: want a coarse-grained block of %llu bytes given to the agent, starting with its size", name, heap, want_heap);
  pthread_mutex_unlock(&lock);
  int arena = *(int *)(ka + 48), stack = *(int *)(ka + 52);
  int want_arena = cdtor || getenv("STUB_HSA_OPENACC") ? 0 : expect("GCN_TEAM_ARENA_SIZE", 65536), want_stack = expect("GCN_STACK_SIZE", 32768);
  if (arena != want_arena || stack != want_stack) BAD("%s: arena %d / stack %d per team/wavefront, want %d / %d", name, arena, stack, want_arena, want_stack);
  uint64_t ap = w[4], sp = w[5];
  if ((arena == 0) != (ap == 0)) BAD("%s: arena_ptr %#llx with arena size %d", name, (unsigned long long)ap, arena);
  if (ap && sp != ap + (uint64_t)arena * gx) BAD("%s: stacks at %#llx, want after the arenas (%#llx)", name, (unsigned long long)sp, (unsigned long long)(ap + (uint64_t)arena * gx));
  uint64_t base = ap ? ap : sp, total = (uint64_t)arena * gx + (uint64_t)gx * gz * stack;
  pthread_mutex_lock(&lock);
  struct block *eb = find_block((void *)(uintptr_t)base, total);
  if (!eb || eb->region != COARSE) BAD("%s: arenas + stacks [%#llx, +%llu) not inside one coarse-grained block", name, (unsigned long long)base, (unsigned long long)total);
  pthread_mutex_unlock(&lock);
  return out;
}

/* Runs the script on the device side of the ring. */
static void play(struct squeue *s, char *out, uint64_t vars, const char *script) {
  char buf[4096], text[512];
  snprintf(buf, sizeof buf, "%s", script ? script : "");
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long a = 0, b = 0;
    char *c = strchr(t, ':');
    if (c) a = strtol(c + 1, &c, 0);
    if (c && *c == ':') b = strtol(c + 1, NULL, 0);
    if (!strncmp(t, "print", 5))
      for (long i = 0; i < a; i++) { snprintf(text, sizeof text, "line %ld\n", i); dev_write(out, text); }
    else if (!strncmp(t, "text:", 5)) {
      snprintf(text, sizeof text, "%s\n", t + 5);
      for (char *q = text; *q; q++) if (*q == '_') *q = ' ';
      dev_write(out, text);
    } else if (!strcmp(t, "long")) {
      memset(text, 'x', 300); memcpy(text, "long:", 5); text[299] = '\n'; text[300] = 0; dev_write(out, text);
    } else if (!strcmp(t, "types")) {
      char *sl;
      if ((sl = dev_slot(out))) { strcpy(sl + 4, "ival="); *(int64_t *)(sl + 136) = -42; publish(sl, 0); }
      if ((sl = dev_slot(out))) { strcpy(sl + 4, "dval="); *(double *)(sl + 136) = 2.5; publish(sl, 1); }
      if ((sl = dev_slot(out))) { strcpy(sl + 4, "str="); strcpy(sl + 136, "abc"); publish(sl, 2); }
      if ((sl = dev_slot(out))) publish(sl, 9);
    } else if (!strncmp(t, "rev", 3))
      for (long i = 0; i < a; i++) {
        char *sl = dev_slot(out);
        if (!sl) break;
        uint64_t *v = (uint64_t *)(sl + 136);
        v[0] = 0xf000 + i, v[1] = i, v[2] = 0xa000 + i, v[3] = 0xb000 + i, v[4] = 0xc000 + i, v[5] = 0;
        publish(sl, 4);
        while (atomic_load_explicit((_Atomic int *)sl, memory_order_acquire)) usleep(1);
      }
    else if (!strncmp(t, "store", 5)) {
      if (!vars) BAD("store: no argument block");
      else *(int *)(uintptr_t)((uint64_t *)(uintptr_t)vars)[a] = (int)b;
    } else if (!strncmp(t, "step", 4)) {
      if (!vars) BAD("step: no argument block");
      else { int *x = (int *)(uintptr_t)((uint64_t *)(uintptr_t)vars)[a]; *x = *x * 10 + 1; }
    } else if (!strncmp(t, "exit", 4)) atomic_store(U32(out, 0), 0xffff0000u | (a & 0xff));
    else if (!strcmp(t, "abort")) { dev_write(out, "GCN Kernel Aborted\n"); atomic_store(U32(out, 0), 0xffff0000u | 6 << 8 | 134); }
    else if (!strncmp(t, "signal", 6)) atomic_store(U32(out, 0), 0xffff0000u | (a & 0xff) << 8);
    else if (!strcmp(t, "corrupt")) atomic_store(U32(out, 0), 0x12345678u);
    else if (!strcmp(t, "overflow")) atomic_store(U32(out, OUT_CONSUMED), atomic_load(U32(out, OUT_NEXT)) + 5);
    else if (!strncmp(t, "sleep", 5)) usleep(a * 1000);
    else if (!strcmp(t, "queue_error")) s->cb(EXCEPTION, &s->q, s->data);
    else BAD("unknown script item '%s'", t);
  }
}

static void *device(void *arg) {
  struct squeue *s = arg;
  handle_t bell = s->q.doorbell_signal;
  for (;;) {
    uint64_t r = atomic_load(&s->read);
    char *slot = (char *)s->q.base_address + (r % s->q.size) * 64;
    uint32_t word = atomic_load_explicit((_Atomic uint32_t *)slot, memory_order_acquire);
    if ((word & 0xff) == 1) { /* INVALID: wait for the doorbell */
      if (atomic_load(&s->stop)) return NULL;
      hsa_signal_wait_acquire(bell, 3, (int64_t)r, 10000000, 0);
      continue;
    }
    if (hsa_signal_wait_acquire(bell, 3, (int64_t)r, 1000000000, 0) < (int64_t)r)
      BAD("packet %llu published but the doorbell was not rung with its index", (unsigned long long)r);
    struct packet p;
    memcpy(&p, slot, sizeof p);
    struct ksym *k = find_kernel(p.kernel_object);
    const char *name = k ? k->name : "?";
    bool cdtor = k && (!strcmp(name, "_init_array") || !strcmp(name, "_fini_array"));
    if (!k) BAD("kernel object %#llx is no live kernel", (unsigned long long)p.kernel_object);
    fprintf(stderr, "stub-hsa: packet %s grid=%u,%u,%u wg=%u,%u,%u lds=%u\n", name, p.grid[0], p.grid[1], p.grid[2],
            p.wg[0], p.wg[1], p.wg[2], p.group_size);
    __atomic_add_fetch(&stub_hsa_launches[cdtor], 1, __ATOMIC_SEQ_CST);
    char *out = check(&p, word, name, cdtor);
    if (out && k && !cdtor) play(s, out, *(uint64_t *)(uintptr_t)p.kernarg_address, getenv("STUB_HSA_SCRIPT"));
    *(uint16_t *)slot = 1;
    atomic_store(&s->read, r + 1);
    if (p.completion.handle) {
      pthread_mutex_lock(&SIG(p.completion)->m);
      atomic_fetch_sub(&SIG(p.completion)->v, 1);
      pthread_cond_broadcast(&SIG(p.completion)->c);
      pthread_mutex_unlock(&SIG(p.completion)->m);
    }
  }
}
#endif
#define STUB(name) status name(void) { return 0x1000; }
#include "stub_names.h"
#endif
