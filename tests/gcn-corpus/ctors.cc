/* Init/fini kernels (§3): a device global with a constructor and a destructor runs
   them in _init_array and _fini_array; their output goes through the ring too. */
// gcn: flags -fopenmp
// gcn: script _init_array=text:device_constructor;_fini_array=text:device_destructor;main._omp_fn.0=store:0:7
// gcn: run base
// gcn: expect * ^device constructor$
// gcn: expect * ^device destructor$
// gcn: expect * ^x=7$
#include <cstdio>

struct S
{
  int v;
  S () : v (7) { std::printf ("device constructor\n"); }
  ~S () { std::printf ("device destructor\n"); }
};
#pragma omp declare target
S s;
#pragma omp end declare target

int
main ()
{
  int x = 0;
#pragma omp target map(from: x)
  x = s.v;
  std::printf ("x=%d\n", x);
  return 0;
}
