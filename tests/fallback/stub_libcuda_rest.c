/* stub_libcuda_rest.c - the entries of the plugin's driver table that
 * stub_libcuda_2dev.c does not implement: weak definitions over the generated
 * stub_names.h (one STUB(symbol) line per table symbol), so the stand-in's own
 * definitions win at link time. Each says so on stderr and returns
 * CUDA_ERROR_NOT_SUPPORTED (801). */
#include <stdio.h>
#define STUB(name)                                                      \
  __attribute__ ((weak)) int name (void)                                \
  {                                                                     \
    fputs ("stub libcuda: " #name " is not implemented\n", stderr);     \
    return 801;                                                         \
  }
#include "stub_names.h"
