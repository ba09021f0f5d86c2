/* dims17.c - libgomp 17's device queries answered by the plugin (supported_teams_dim,
 * supported_threads_dim; OpenMP 6.1 omp_get_supported_{teams,threads}_dim) for every
 * device, then one target region per device. Built by tests/snapshot_gcc.sh with
 * Debian's gcc-snapshot; scripts/device/snapshot.sh compares its output with the stock
 * plugin's and ours on the GPU. Prints one "dev D: ..." line per device, then
 * "dims17: N device(s)". */
#include <omp.h>
#include <stdio.h>

int main (void)
{
  int n = omp_get_num_devices ();
  for (int d = 0; d < n; d++)
    {
      int ran = 0;
#pragma omp target device(d) map(from: ran)
      ran = !omp_is_initial_device ();
      printf ("dev %d: teams_dim0=%d teams_dim1=%d threads_dim0=%d threads_dim1=%d ran=%d\n", d,
              omp_get_supported_teams_dim (d, 0), omp_get_supported_teams_dim (d, 1),
              omp_get_supported_threads_dim (d, 0), omp_get_supported_threads_dim (d, 1), ran);
    }
  printf ("dims17: %d device(s)\n", n);
  return 0;
}
