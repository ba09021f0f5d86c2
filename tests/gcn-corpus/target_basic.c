/* A target region with a mapped variable and a device printf: the basic launch
   (§1 kernarg block, §2 output ring, heap, arena, stacks, LDS; §3 no teams construct:
   one team), under each size setting of the plugin. */
// gcn: flags -fopenmp
// gcn: script main._omp_fn.0=text:hello_from_the_device,store:0:42
// gcn: run base
// gcn: run heap GCN_HEAP_SIZE=1048576
// gcn: run stack GCN_STACK_SIZE=65536
// gcn: run arena GCN_TEAM_ARENA_SIZE=131072
// gcn: run no-arena GCN_TEAM_ARENA_SIZE=0
// gcn: run lowlat GOMP_GCN_LOWLAT_POOL=4096
// gcn: run lowlat-small GOMP_GCN_LOWLAT_POOL=8
// gcn: run cus STUB_HSA_CUS=104
// gcn: run zero-heap GCN_HEAP_SIZE=0
// gcn: run zero-stack GCN_STACK_SIZE=0
// gcn: run zero-teams GCN_NUM_TEAMS=0 GCN_NUM_THREADS=0
// gcn: run zero-lowlat GOMP_GCN_LOWLAT_POOL=0
// gcn: run signed GCN_STACK_SIZE=+16384
// Values the stock plugin misreads (atoi/atol: the leading number) and ours refuses or
// reads with their unit: the comparison is the check (docs/gcn-launch.md §8 lists the
// differences); a 1-byte heap fails the stand-in's layout check in both.
// gcn: run invalid-heap-1m bad=ok STUB_HSA_NO_CHECKS=1 GCN_HEAP_SIZE=1m
// gcn: run invalid-stack-48k STUB_HSA_NO_CHECKS=1 GCN_STACK_SIZE=48k
// gcn: run invalid-arena-12x STUB_HSA_NO_CHECKS=1 GCN_TEAM_ARENA_SIZE=12x
// gcn: run invalid-lowlat-abc STUB_HSA_NO_CHECKS=1 GOMP_GCN_LOWLAT_POOL=abc
// gcn: run invalid-stack-8 STUB_HSA_NO_CHECKS=1 GCN_STACK_SIZE=8
// gcn: run invalid-arena-neg STUB_HSA_NO_CHECKS=1 GCN_TEAM_ARENA_SIZE=-1
// gcn: expect * ^hello from the device$
// gcn: expect * ^x=42$
#include <stdio.h>

int
main (void)
{
  int x = 0;
#pragma omp target map(tofrom: x)
  {
    printf ("hello from the device\n");
    x = 42;
  }
  printf ("x=%d\n", x);
  return 0;
}
