/* nowait_task.c - `target nowait` in the task contexts of libgomp's own task-7.c and
 * task-8.c and two more, for tests/distro_gcc.sh, which builds it with each Debian
 * release's gcc and runs it with that release's libgomp through our plugin on the
 * two-device stand-in libcuda (tests/fallback/stub_libcuda_2dev.c):
 *   task:     an undeferred task outside any parallel region (task-8.c);
 *   final:    a task inside a final task, outside any parallel region (task-7.c);
 *   top:      the initial task, no task construct;
 *   parallel: a task of a parallel region.
 * libgomp 12 aborts on the first two ("free(): invalid pointer" in GOMP_target_ext)
 * when it takes its asynchronous path, which it does on the host and whenever the
 * plugin offers async_run. The stand-in runs no kernel code, so the regions change
 * nothing: what is checked is that each region is launched once on the device, the
 * host-side task state (omp_in_final) is right, and the program ends normally. Prints
 * "nowait_task: 4 regions done". */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static void region (int final)
{
  int v = 1;
  if (omp_in_final () != final)
    abort ();
#pragma omp target nowait firstprivate(v)
  v++;
  if (omp_in_final () != final)
    abort ();
#pragma omp taskwait
}

int main (void)
{
#pragma omp task
  region (0);
#pragma omp task final(1)
  {
#pragma omp task
    region (1);
  }
  region (0);
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp task
    region (0);
#pragma omp taskwait
  }
  printf ("nowait_task: 4 regions done\n");
  return 0;
}
