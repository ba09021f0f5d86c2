/* stub_libcuda.c - stand-in libcuda.so.1 for GPU-less tests of the driver table.
 * Built twice by tests/host_fallback.sh:
 *   -DPARTIAL: exports only cuInit (the table must refuse it: a required entry is missing);
 *   default:   exports every versioned name the table binds (generated list, STUB_NAMES),
 *              no cuGetProcAddress_v2 (the dlsym fallback is used), and cuInit returns
 *              STUB_INIT_RESULT (100 = CUDA_ERROR_NO_DEVICE) or, when 0, a device count
 *              of 0.  Every other function returns 0. */
#define STUB(name) int name (void) { return 0; }
int cuInit (unsigned flags) { (void) flags; return STUB_INIT_RESULT; }
#ifndef PARTIAL
int cuDeviceGetCount (int *n) { *n = 0; return 0; }
int cuGetErrorString (int code, const char **s) { (void) code; *s = "stub error text"; return 0; }
#include "stub_names.h"
#endif
