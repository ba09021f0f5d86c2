/* env_garbage.c - offload work of every kind the plugin's settings shape (maps, a
 * nowait region, omp_target_alloc, a large copy that goes through staging, a reverse
 * offload), run with garbage in every environment variable the plugin reads
 * (env_garbage.env). Expected (env_garbage.expect): correct results, exit 0,
 * a libgomp: warning naming each variable, defaults used. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#pragma omp requires reverse_offload
#include "gpu_probe.h"

static int bad;

int main (void)
{
  int host_calls = 0;
  if (!on_gpu ())
    { printf ("FAIL not running on a GPU\n"); return 1; }
  int a[1024];
  for (int i = 0; i < 1024; i++)
    a[i] = i;
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 1024; i++)
    a[i] += 1;
#pragma omp target nowait map(tofrom: a) depend(inout: a)
  for (int i = 0; i < 1024; i++)
    a[i] *= 2;
#pragma omp taskwait
  for (int i = 0; i < 1024; i++)
    bad += a[i] != (i + 1) * 2;
  size_t n = 64 << 20;
  char *big = malloc (n);
  memset (big, 5, n);
#pragma omp target map(tofrom: big[0:n])
  for (size_t i = 0; i < n; i += 4096)
    big[i] += 1;
  for (size_t i = 0; i < n; i++)
    bad += big[i] != (i % 4096 ? 5 : 6);
  free (big);
  void *p = omp_target_alloc (1 << 20, omp_get_default_device ());
  bad += p == NULL;
  omp_target_free (p, omp_get_default_device ());
#pragma omp target map(tofrom: host_calls)
  {
#pragma omp target device(ancestor: 1) map(always, tofrom: host_calls)
    host_calls += 1;
  }
  bad += host_calls != 1;
  printf (bad ? "FAIL %d wrong result(s)\n" : "OK results correct under garbage settings\n", bad);
  return bad != 0;
}
