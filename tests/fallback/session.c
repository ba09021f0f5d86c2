/* session.c - OpenMP target regions whose launches tests/snapshot_gcc.sh follows through
 * libgomp 17's session protocol (docs/plugin-abi.md §12) on the two-device stand-in
 * libcuda (tests/fallback/stub_libcuda_2dev.c): regions on device 0 and device 1 (the
 * session must carry the right device number), one mapping two arrays and a scalar
 * (the kernel's table: device addresses), one mapping nothing but a firstprivate
 * scalar, one `nowait` (async_run with a session). The stand-in runs no kernel code, so
 * the values are wrong there; on the host (no device) and on a GPU they must be
 * right. Runs on the first two devices (one if there is one; the host if none).
 * Prints "session: N regions done" and "session: results right" or "session: results
 * wrong" (exit status 0 either way: the caller knows which to expect). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 256

int main (void)
{
  static double a[N], b[N];
  int n = N, regions = 0, right = 1, ndev = omp_get_num_devices ();
  int devs = ndev == 0 ? 1 : ndev < 2 ? ndev : 2;
  for (int i = 0; i < N; i++)
    a[i] = i;
  for (int d = 0; d < devs; d++)
    {
      double s = 0;
      for (int i = 0; i < N; i++)
        b[i] = 0;
#pragma omp target teams distribute parallel for device(d) map(to: a[0:N]) map(from: b[0:N]) map(tofrom: s) reduction(+: s)
      for (int i = 0; i < N; i++)
        {
          b[i] = 2 * a[i];
          s += a[i];
        }
      regions++;
#pragma omp target device(d) firstprivate(n)
      {
        if (n != N)
          abort ();
      }
      regions++;
#pragma omp target device(d) nowait map(to: a[0:N])
      {
        if (a[1] != 1)
          abort ();
      }
#pragma omp taskwait
      regions++;
      for (int i = 0; i < N; i++)
        if (b[i] != 2 * i)
          right = 0;
      if (s != (double) N * (N - 1) / 2)
        right = 0;
    }
  printf ("session: %d regions done\n", regions);
  printf ("session: results %s\n", right ? "right" : "wrong");
  return 0;
}
