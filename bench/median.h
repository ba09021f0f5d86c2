/* median.h - the median the benchmark programs report (sorts V in place).  */
#ifndef BENCH_MEDIAN_H
#define BENCH_MEDIAN_H
#include <stdlib.h>

static int cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static double median (double *v, int n)
{
  qsort (v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
#endif
