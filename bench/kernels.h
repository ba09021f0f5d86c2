/* kernels.h - the element-wise loop kernels the benchmark programs time, written once.
   Each use defines a function of its own, so each is a kernel of its own (GCC names the
   region FUNCTION._omp_fn.0) with its own line in the plugin's profile and launch
   lines, and its own launch shape under the tuner.  The including file defines the
   arrays A, B, C (double *) and the constant Q.  */
#ifndef BENCH_KERNELS_H
#define BENCH_KERNELS_H
#include <stddef.h>

#define BENCH_PRAGMA(...) _Pragma (#__VA_ARGS__)

/* static void FN (void): `c[i] = EXPR` for i < COUNT as one
   `#pragma omp target CONSTRUCT` region over the arrays already on the device (the
   sections after EXPR, mapped `alloc`); EXPR names them a, b and c, and reads Q.  */
#define LOOP_KERNEL(fn, construct, count, expr, ...)                            \
  static void fn (void)                                                         \
  {                                                                             \
    double *c = C, *a = A, *b = B;                                              \
    size_t n = (count);                                                         \
    (void) a, (void) b;                                                         \
    BENCH_PRAGMA (omp target construct map(alloc: __VA_ARGS__))                 \
    for (size_t i = 0; i < n; i++)                                              \
      c[i] = expr;                                                              \
  }

#endif
