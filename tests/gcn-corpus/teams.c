/* §3 grid choice: target regions with and without teams, num_teams, thread_limit,
   parallel and simd, many teams, and the launch settings (OMP_* through libgomp's
   ICVs, GCN_* through the plugin; GCN_NUM_GANGS/WORKERS as fallbacks; the agent's
   compute-unit count). Each region stores its number, so the program sees each ran. */
// gcn: flags -fopenmp
// gcn: script r_target._omp_fn.0=store:0:1;r_teams._omp_fn.0=store:0:2;r_nt3._omp_fn.0=store:0:3;r_tl8._omp_fn.0=store:0:4;r_nt3tl4._omp_fn.0=store:0:5;r_many._omp_fn.0=store:0:6;r_huge._omp_fn.0=store:0:7;r_par._omp_fn.0=store:0:8;r_simd._omp_fn.0=store:0:9;r_dpf._omp_fn.0=fill:0:64:10
// gcn: run base
// gcn: run omp-env OMP_NUM_TEAMS=5 OMP_TEAMS_THREAD_LIMIT=4
// gcn: run omp-dev-env OMP_NUM_TEAMS_DEV_0=6 OMP_TEAMS_THREAD_LIMIT_ALL=2
// gcn: run gcn-env GCN_NUM_TEAMS=7 GCN_NUM_THREADS=3
// gcn: run gcn-many GCN_NUM_TEAMS=100 GCN_NUM_THREADS=40
// gcn: run gangs-env GCN_NUM_GANGS=9 GCN_NUM_WORKERS=2
// gcn: run cus STUB_HSA_CUS=3
// gcn: run cus-big STUB_HSA_CUS=120
// gcn: expect * ^results 1 2 3 4 5 6 7 8 9 10$
#include <omp.h>
#include <stdio.h>

static int v[10], a[64];

__attribute__((noinline)) void r_target (void) {
#pragma omp target map(from: v[0:1])
  v[0] = 1;
}
__attribute__((noinline)) void r_teams (void) {
#pragma omp target teams map(from: v[1:1])
  if (omp_get_team_num () == 0) v[1] = 2;
}
__attribute__((noinline)) void r_nt3 (void) {
#pragma omp target teams num_teams(3) map(from: v[2:1])
  if (omp_get_team_num () == 0) v[2] = 3;
}
__attribute__((noinline)) void r_tl8 (void) {
#pragma omp target teams thread_limit(8) map(from: v[3:1])
  if (omp_get_team_num () == 0) v[3] = 4;
}
__attribute__((noinline)) void r_nt3tl4 (void) {
#pragma omp target teams num_teams(3) thread_limit(4) map(from: v[4:1])
  if (omp_get_team_num () == 0) v[4] = 5;
}
__attribute__((noinline)) void r_many (void) {
#pragma omp target teams num_teams(100) map(from: v[5:1])
  if (omp_get_team_num () == 0) v[5] = 6;
}
__attribute__((noinline)) void r_huge (void) {
#pragma omp target teams num_teams(100000) thread_limit(1000) map(from: v[6:1])
  if (omp_get_team_num () == 0) v[6] = 7;
}
__attribute__((noinline)) void r_par (void) {
#pragma omp target parallel num_threads(4) map(from: v[7:1])
  if (omp_get_thread_num () == 0) v[7] = 8;
}
__attribute__((noinline)) void r_simd (void) {
#pragma omp target simd map(from: v[8:1])
  for (int i = 0; i < 1; i++) v[8] = 9;
}
__attribute__((noinline)) void r_dpf (void) {
#pragma omp target teams distribute parallel for simd map(from: a)
  for (int i = 0; i < 64; i++) a[i] = 10;
}

int
main (void)
{
  r_target (); r_teams (); r_nt3 (); r_tl8 (); r_nt3tl4 (); r_many (); r_huge (); r_par (); r_simd (); r_dpf ();
  int ok = 1;
  for (int i = 0; i < 64; i++) ok &= a[i] == 10;
  printf ("results %d %d %d %d %d %d %d %d %d %d\n", v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], ok ? 10 : -1);
  return 0;
}
