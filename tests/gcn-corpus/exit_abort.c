/* §4 how a kernel ends: exit(n) ends the program with n after the device's output,
   abort() with SIGABRT, another signal or a corrupt return value abort the host too,
   a queue error is fatal (and then, at exit, libgomp's _fini_array launch on the
   failed queue never completes: both plugins wait for it, so that run is stopped). */
// gcn: flags -fopenmp
// gcn: run normal STUB_HSA_SCRIPT=main._omp_fn.0=text:before
// gcn: run exit3 rc=3 STUB_HSA_SCRIPT=main._omp_fn.0=text:before,exit:3
// gcn: run exit0 STUB_HSA_SCRIPT=main._omp_fn.0=text:before,exit:0
// gcn: run abort rc=134 STUB_HSA_SCRIPT=main._omp_fn.0=text:before,abort
// gcn: run signal rc=134 STUB_HSA_SCRIPT=main._omp_fn.0=signal:11
// gcn: run corrupt rc=134 STUB_HSA_SCRIPT=main._omp_fn.0=corrupt
// gcn: run queue-error rc=124 timeout=4 STUB_HSA_SCRIPT=main._omp_fn.0=queue_error
// gcn: expect normal ^after$
// gcn: expect exit3 ^before$
// gcn: expect abort ^GCN Kernel Aborted$
#include <stdio.h>
#include <stdlib.h>

int
main (int argc, char **argv)
{
  int mode = argc > 1 ? atoi (argv[1]) : 0;
#pragma omp target map(to: mode)
  {
    printf ("before\n");
    if (mode == 1)
      exit (3);
    if (mode == 2)
      abort ();
  }
  printf ("after\n");
  return 0;
}
