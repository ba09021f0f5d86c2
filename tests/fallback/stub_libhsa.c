/* stub_libhsa.c - stand-in libhsa-runtime64 for tests/host_fallback.sh: exercises the
   gcn plugin's HSA table and call sequences without AMD hardware.
   -DPARTIAL: only hsa_init (required entries missing).
   -DINIT_RESULT=N: what hsa_init returns (0 = success, 0x1000 = HSA_STATUS_ERROR).
   Otherwise every entry of src/hsa/runtime.rs's table exists (stub_names.h, generated
   from it, holds those this file does not define, each returning HSA_STATUS_ERROR) and
   hsa_iterate_agents finds no agent, unless
   -DONE_GPU=\"gfx90a\": one GPU agent of that name (base profile) with a coarse-grained
   and a kernarg region; memory is host memory (allocate = malloc, copy = memmove);
   executables remember the code object they were given and know a symbol when its
   name (with its NUL) occurs in the code object's bytes, kernel objects being fake
   addresses; __gomp_additional_icvs and .offload_var_table are served from buffers
   here (the latter holds two fake variables: (&var_a, 20), (&var_b, 8)).
   This proves the plugin's call sequence and bookkeeping against a stand-in, NOT
   against a real HSA runtime or AMD GPU. Counters of live objects are exported as
   stub_hsa_live (the driver tests/fallback/gcn_calls.c reads them). Constants are
   HSA 1.x's (bindgen/hsa/hsa.h). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef int status;
typedef struct { uint64_t handle; } handle_t;
status hsa_init(void) { return INIT_RESULT; }
#ifndef PARTIAL
status hsa_status_string(status s, const char **text) { (void)s; *text = "stub error text"; return 0; }
#ifndef ONE_GPU
status hsa_iterate_agents(void *cb, void *data) { (void)cb; (void)data; return 0; }
#else
enum { ERROR = 0x1000, INVALID_ARGUMENT = 0x1001, INVALID_SYMBOL_NAME = 0x1013 };
/* Live objects: [0] memory blocks, [1] code object readers, [2] executables. */
int stub_hsa_live[3];
status hsa_iterate_agents(status (*cb)(handle_t, void *), void *data) {
  return cb((handle_t){0xa9e7}, data);
}
status hsa_agent_get_info(handle_t agent, int attr, void *value) {
  if (agent.handle != 0xa9e7) return INVALID_ARGUMENT;
  switch (attr) {
  case 0: memset(value, 0, 64); strcpy(value, ONE_GPU); return 0; /* NAME */
  case 4: *(int *)value = 0; return 0;                             /* PROFILE: base */
  case 17: *(int *)value = 1; return 0;                            /* DEVICE: GPU */
  default: return INVALID_ARGUMENT;
  }
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
  case 5: *(bool *)value = true; return 0;                                  /* RUNTIME_ALLOC_ALLOWED */
  default: return INVALID_ARGUMENT;
  }
}
status hsa_memory_allocate(handle_t r, size_t n, void **p) {
  if (r.handle != COARSE || !n) return INVALID_ARGUMENT;
  if (!(*p = malloc(n))) return 0x1009; /* OUT_OF_RESOURCES */
  stub_hsa_live[0]++;
  return 0;
}
status hsa_memory_free(void *p) { free(p); stub_hsa_live[0]--; return 0; }
status hsa_memory_copy(void *dst, const void *src, size_t n) {
  if (!dst || !src) return INVALID_ARGUMENT;
  memmove(dst, src, n);
  return 0;
}
struct reader { const char *code; size_t size; };
struct exec { const char *code; size_t size; bool frozen; };
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
status hsa_executable_destroy(handle_t e) { free((void *)(uintptr_t)e.handle); stub_hsa_live[2]--; return 0; }
/* Variables served from here. */
unsigned char stub_icvs[16], stub_var_a[20], stub_var_b[8];
static uint64_t var_table[4];
enum { SYM_KERNEL = 1, SYM_ICVS, SYM_VARS };
status hsa_executable_get_symbol_by_name(handle_t e, const char *name, const handle_t *agent, handle_t *sym) {
  struct exec *x = (void *)(uintptr_t)e.handle;
  (void)agent;
  if (!x->frozen) return INVALID_ARGUMENT;
  if (!strcmp(name, "__gomp_additional_icvs")) { sym->handle = SYM_ICVS; return 0; }
  if (!strcmp(name, ".offload_var_table")) { sym->handle = SYM_VARS; return 0; }
  const char *p = memmem(x->code, x->size, name, strlen(name) + 1);
  if (!p) return INVALID_SYMBOL_NAME;
  /* A kernel: the handle encodes where the name lies, the kernel object derives from it. */
  sym->handle = (uint64_t)(p - x->code) << 8 | SYM_KERNEL;
  return 0;
}
status hsa_executable_symbol_get_info(handle_t sym, int attr, void *value) {
  var_table[0] = (uintptr_t)stub_var_a, var_table[1] = 20;
  var_table[2] = (uintptr_t)stub_var_b, var_table[3] = 8;
  switch ((sym.handle & 0xff) << 8 | attr) {
  case SYM_KERNEL << 8 | 22: *(uint64_t *)value = 0x7e000000 + (sym.handle >> 8); return 0;
  case SYM_ICVS << 8 | 21: *(uint64_t *)value = (uintptr_t)stub_icvs; return 0;
  case SYM_ICVS << 8 | 9: *(uint32_t *)value = 16; return 0;
  case SYM_VARS << 8 | 21: *(uint64_t *)value = (uintptr_t)var_table; return 0;
  case SYM_VARS << 8 | 9: *(uint32_t *)value = 0; return 0;
  default: return INVALID_ARGUMENT;
  }
}
#endif
#define STUB(name) status name(void) { return 0x1000; }
#include "stub_names.h"
#endif
