/* stub_libhsa.c - stand-in libhsa-runtime64 for the gcn plugins' tests (gcn/tests/,
   tests/host_fallback.sh section 2c, tests/gcn_compare.sh): exercises a plugin's HSA
   table, call sequences and GCC's gcn launch protocol (docs/gcn-launch.md) without AMD
   hardware. Built in one of these forms:
   -DPARTIAL: only hsa_init (required entries missing).
   -DINIT_RESULT=N: what hsa_init returns (0 = success, 0x1000 = HSA_STATUS_ERROR).
   Otherwise every entry of gcn/src/hsa/table.rs's table exists (stub_names.h, generated
   from it, holds those this file does not define, each returning HSA_STATUS_ERROR) and
   hsa_iterate_agents finds no agent, unless
   -DONE_GPU=\"gfx90a\": one GPU agent of that name, a runtime complete enough that both
   our plugin and GCC's own libgomp-plugin-gcn.so.1 (14 and 16) load real programs and
   run their kernels on it: every entry point either resolves, the system, agent and
   region queries, device memory (host memory), code objects loaded like shared objects,
   executables and symbols of both HSA API generations, queues, signals, and a device
   thread per queue that reads each AQL packet, records and checks it and its kernarg
   block, plays the kernel's side from a script and completes the signal. One file per
   concept, in hsa/ (each file's head says what it does): common.h, trace.c (the record
   scripts/gcn-trace compares), system.c, memory.c, signals.c, loader.c, queues.c,
   ring.c, script.c (what a kernel "does"), device.c (what a GPU would see).
   This proves a plugin's call sequence, bookkeeping and host side of the protocol
   against a stand-in, NOT against a real HSA runtime or AMD GPU. Counters of live
   objects are exported as stub_hsa_live ([0] memory blocks, [1] code object readers,
   [2] executables, [3] signals, [4] queues), failed checks as stub_hsa_bad, launches
   as stub_hsa_launches ([0] offload kernels, [1] init/fini), and
   stub_hsa_image_symbol(name) answers where a symbol of the last image that has it
   was loaded. */
#define _GNU_SOURCE
#ifdef ONE_GPU
#include "hsa/common.h"
int stub_hsa_live[5], stub_hsa_bad, stub_hsa_launches[2];
pthread_mutex_t stub_lock = PTHREAD_MUTEX_INITIALIZER;
#include "hsa/trace.c"
status hsa_init(void) { trace("init"); return INIT_RESULT; }
status hsa_status_string(status s, const char **text) { (void)s; *text = "stub error text"; return 0; }
#include "hsa/memory.c"
#include "hsa/signals.c"
#include "hsa/loader.c"
#include "hsa/system.c"
#include "hsa/queues.c"
#include "hsa/ring.c"
#include "hsa/script.c"
#include "hsa/device.c"
#else
#include <stdint.h>
typedef int status;
typedef struct { uint64_t handle; } handle_t;
status hsa_init(void) { return INIT_RESULT; }
#ifndef PARTIAL
status hsa_status_string(status s, const char **text) { (void)s; *text = "stub error text"; return 0; }
status hsa_iterate_agents(void *cb, void *data) { (void)cb; (void)data; return 0; }
#define STUB(name) status name(void) { return 0x1000; }
#include "stub_names.h"
#endif
#endif
