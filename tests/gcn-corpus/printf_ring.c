/* §2 output ring: 3000 device lines (the ring wraps around its 1024 slots and the
   device waits for the host), a 300-byte message (two slots), one message of each
   value type the host knows and one it does not, then the overflow report. */
// gcn: flags -fopenmp
// gcn: script main._omp_fn.0=print:3000,long,types,text:device_done
// gcn: run base
// gcn: run overflow STUB_HSA_SCRIPT=main._omp_fn.0=overflow
// gcn: expect overflow ^GCN print buffer overflowed.$
// gcn: expect base ^line 2999$
// gcn: expect base ^device done$
// gcn: expect base ^ival=-42$
// gcn: expect * ^host done$
#include <stdio.h>

int
main (void)
{
#pragma omp target
  {
    for (int i = 0; i < 3000; i++)
      printf ("line %d\n", i);
    printf ("device done\n");
  }
  printf ("host done\n");
  return 0;
}
