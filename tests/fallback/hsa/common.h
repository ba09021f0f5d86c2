/* common.h - what every part of the stand-in HSA runtime (stub_libhsa.c, form ONE_GPU)
   shares: handle and status types, the counters the tests read, the failure report
   ("stub-hsa: BAD ..."), environment helpers, and the declarations of each part's
   functions the other parts call. Constants are HSA 1.x's (bindgen/hsa/hsa.h) and the
   AMD extension values the plugins pass. */
#include <elf.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int status;
typedef struct { uint64_t handle; } handle_t;
enum {
  ERROR = 0x1000, INVALID_ARGUMENT = 0x1001, INVALID_AGENT = 0x1004, INVALID_REGION = 0x1005,
  OUT_OF_RESOURCES = 0x1008, INCOMPATIBLE_ARGUMENTS = 0x100D, INVALID_CODE_OBJECT = 0x1010,
  INVALID_EXECUTABLE = 0x1011, FROZEN_EXECUTABLE = 0x1012, INVALID_SYMBOL_NAME = 0x1013,
  VARIABLE_ALREADY_DEFINED = 0x1014, EXCEPTION = 0x1016, INFO_BREAK = 0x1
};
/* The one agent, the regions (handles are these values). */
enum { AGENT = 0xa9e7, COARSE = 0xc0a, KERNARG = 0xa26 };

/* Live objects: [0] memory blocks, [1] code object readers, [2] executables, [3] signals, [4] queues. */
extern int stub_hsa_live[5];
/* Failed packet checks; launches of offload kernels and of init/fini kernels. */
extern int stub_hsa_bad, stub_hsa_launches[2];
extern pthread_mutex_t stub_lock;

/* One stdio call per line, so that the plugin's threads cannot split it; also traced. */
#define BAD(...) do { char bad_[512]; snprintf(bad_, sizeof bad_, __VA_ARGS__); fprintf(stderr, "stub-hsa: BAD %s\n", bad_); \
    trace("bad %s", bad_); __atomic_add_fetch(&stub_hsa_bad, 1, __ATOMIC_SEQ_CST); } while (0)
static long env_long(const char *name, long dflt) { const char *v = getenv(name); return v && *v ? strtol(v, NULL, 0) : dflt; }
static unsigned cus(void) { return (unsigned)env_long("STUB_HSA_CUS", 8); }

/* trace.c */
static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static bool tracing(void);

/* memory.c: blocks handed out by hsa_memory_allocate and images' loaded segments. */
struct block { char *p; size_t n; uint64_t region; bool assigned; unsigned id; int image; };
static struct block *find_block(const void *p, size_t n); /* under stub_lock */
static unsigned block_id(const void *p);                   /* 0: not a block */
static struct block *find_slack(const void *p);            /* under stub_lock */
/* An address as the trace names it: "0", "B<id>+0x<off>", "I<k>:<symbol>+0x<off>" or "host". */
static const char *sym(uint64_t a, char buf[160]);

/* loader.c */
static const char *image_symbol_at(int image, uint64_t off, uint64_t *sym_off);
static uint64_t image_symbol_address(int image, const char *name, uint64_t *size);
static const char *kernel_at(uint64_t object, int *image);
static void image_diff(int image, const char *launch);

/* signals.c */
struct sig { _Atomic int64_t v; pthread_mutex_t m; pthread_cond_t c; unsigned id; char launch[32]; char *ring; };
#define SIG(h) ((struct sig *)(uintptr_t)(h).handle)
static void sig_set(handle_t s, int64_t v);
static int64_t sig_wait(handle_t s, int cond, int64_t c, uint64_t timeout_ns);
