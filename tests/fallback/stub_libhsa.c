/* stub_libhsa.c - stand-in libhsa-runtime64 for tests/host_fallback.sh: exercises the
   gcn plugin's HSA table failure paths without AMD hardware.
   -DPARTIAL: only hsa_init (required entries missing).
   -DINIT_RESULT=N: what hsa_init returns (0 = success, 0x1000 = HSA_STATUS_ERROR).
   Otherwise every entry of src/hsa/runtime.rs's table exists (stub_names.h, generated
   from it) and hsa_iterate_agents finds no agent. */
#include <stdint.h>
typedef int status;
status hsa_init(void) { return INIT_RESULT; }
#ifndef PARTIAL
status hsa_status_string(status s, const char **text) { (void)s; *text = "stub error text"; return 0; }
status hsa_iterate_agents(void *cb, void *data) { (void)cb; (void)data; return 0; }
#define STUB(name) status name(void) { return 0x1000; }
#include "stub_names.h"
#endif
