/* team_icvs.c - the device's team ICVs size the launch: with
 * OMP_NUM_TEAMS_DEV=3000 and OMP_TEAMS_THREAD_LIMIT_DEV=16 (team_icvs.env), a `target
 * teams` region without clauses has 3000 teams (more than fit on the GPU at once) of 16
 * threads, as OpenMP says and as GCC's device runtime gives when the grid is at least
 * that large; a region with clauses keeps them. The stock plugin launches the blocks
 * that fit at once, so the device runtime can give no more teams than that (fails
 * here). Prints "OK ..." or "FAIL ..." (exit 1). */
#include <omp.h>
#include <stdio.h>
#include "gpu_probe.h"

int main (void)
{
  if (!on_gpu ())
    { printf ("FAIL not running on a GPU\n"); return 1; }
  int teams = 0, threads = 0, seen = 0, teams2 = 0, threads2 = 0;
#pragma omp target teams map(tofrom: teams, threads) reduction(+: seen)
  {
    if (omp_get_team_num () == 0)
      teams = omp_get_num_teams ();
#pragma omp parallel
    {
      if (omp_get_team_num () == 0 && omp_get_thread_num () == 0)
	threads = omp_get_num_threads ();
    }
    seen += 1;
  }
#pragma omp target teams num_teams(7) thread_limit(2) map(tofrom: teams2, threads2)
  {
    if (omp_get_team_num () == 0)
      teams2 = omp_get_num_teams ();
#pragma omp parallel
    {
      if (omp_get_team_num () == 0 && omp_get_thread_num () == 0)
	threads2 = omp_get_num_threads ();
    }
  }
  int ok = teams == 3000 && seen == 3000 && threads == 16 && teams2 == 7 && threads2 <= 2;
  printf ("%s teams %d (each counted: %d) threads %d; with clauses teams %d threads %d\n",
	  ok ? "OK" : "FAIL", teams, seen, threads, teams2, threads2);
  return !ok;
}
