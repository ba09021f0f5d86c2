/* gcc_empty.c - one empty `omp target` region: bench/build.sh compiles it with gcc-16
 * and bench/gcc_ptx.py extracts its offload image's PTX, from which bench/cuda_floor.c
 * launches GCC's own kernel of an empty region through the bare driver. */
int main (void)
{
#pragma omp target
  ;
  return 0;
}
