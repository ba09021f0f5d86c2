/* §3 OpenACC: parallel with explicit gangs/workers/vector, with defaults, kernels,
   parallel loop; the GCN_NUM_GANGS/WORKERS overrides and the agent's compute units. */
// gcn: flags -fopenacc
// gcn: env STUB_HSA_OPENACC=1
// gcn: script main._omp_fn.0=store:0:1;main._omp_fn.1=store:0:2;main._omp_fn.2=store:0:3;main._omp_fn.3=fill:0:64:4;main._omp_fn.4=store:0:5
// gcn: run base
// gcn: run gangs GCN_NUM_GANGS=6 GCN_NUM_WORKERS=2
// gcn: run cus STUB_HSA_CUS=4
// gcn: expect * ^1 2 3 4 5$
#include <stdio.h>

int
main (void)
{
  int x = 0, y = 0, z = 0, w = 0, a[64];
#pragma acc parallel num_gangs(3) num_workers(5) vector_length(64) copy(x)
  x = 1;
#pragma acc parallel copy(y)
  y = 2;
#pragma acc parallel num_workers(4) copy(z)
  z = 3;
#pragma acc parallel loop gang worker vector copyout(a)
  for (int i = 0; i < 64; i++)
    a[i] = 4;
#pragma acc kernels copy(w)
  w = 5;
  int ok = 1;
  for (int i = 0; i < 64; i++)
    ok &= a[i] == 4;
  printf ("%d %d %d %d %d\n", x, y, z, ok ? 4 : -1, w);
  return 0;
}
