/* mpi_offload.c - MPI ranks sharing a GPU through OpenMP offload.
 *
 * Each rank computes its share of pi = integral of 4/(1+x^2) over [0,1] on the GPU; the
 * ranks sum their shares with MPI_Allreduce and pass them around a ring with
 * MPI_Sendrecv, and check both.  Then, in turns, one rank allocates most of the GPU's
 * memory (70 % of it less the small blocks the other ranks hold), fills and checks it
 * on the GPU and frees it, while the others hold their small blocks and wait in a
 * barrier.  That works only if memory a rank frees really goes back to the GPU: an
 * offload plugin that keeps freed memory for itself makes the next rank's allocation
 * fail.
 *
 * Ranks on the same node take GPUs round-robin (omp_set_default_device); with one GPU
 * they all share it.  Build and run (see README "Using it with MPI"):
 *   mpicc -fopenmp -foffload=nvptx-none -O2 mpi_offload.c -o mpi_offload -ldl
 *   mpirun -np 4 ./mpi_offload
 * Prints one line per rank and turn, and "OK ..." from rank 0; exits 1 on a failure. */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB ((size_t) 1 << 20)
#define GIB ((double) (1 << 30))
#define STEPS 200000000L /* integration steps, shared by all ranks */
#define SMALL (64 * MIB) /* what each rank holds on the GPU throughout */

/* The ranks' shares of the integral: rank r sums steps r, r+n, r+2n, ... */
static double share (int rank, int nranks, int on_gpu)
{
  double h = 1.0 / STEPS, s = 0;
#pragma omp target teams distribute parallel for reduction(+: s) map(tofrom: s) if(on_gpu)
  for (long i = rank; i < STEPS; i += nranks)
    {
      double x = (i + 0.5) * h;
      s += 4.0 / (1.0 + x * x);
    }
  return s * h;
}

/* The GPU's memory in bytes, from the CUDA driver (OpenMP has no query for it); 0 if
   unknown.  */
static size_t gpu_memory (int ordinal)
{
  int (*get) (int *, int), (*total) (size_t *, int);
  void *h = dlopen ("libcuda.so.1", RTLD_NOW);
  if (!h)
    return 0;
  *(void **) &get = dlsym (h, "cuDeviceGet");
  *(void **) &total = dlsym (h, "cuDeviceTotalMem_v2");
  int dev;
  size_t t = 0;
  if (!get || !total || get (&dev, ordinal) != 0 || total (&t, dev) != 0)
    return 0;
  return t;
}

/* Fills the n bytes at device address p with a pattern, then counts the words that
   differ from it, on the GPU.  */
static long fill_and_check (unsigned *p, size_t n, unsigned seed)
{
  size_t m = n / sizeof *p;
  long bad = 0;
#pragma omp target teams distribute parallel for is_device_ptr(p)
  for (size_t i = 0; i < m; i++)
    p[i] = (unsigned) i ^ seed;
#pragma omp target teams distribute parallel for is_device_ptr(p) reduction(+: bad) map(tofrom: bad)
  for (size_t i = 0; i < m; i++)
    bad += p[i] != ((unsigned) i ^ seed);
  return bad;
}

int main (int argc, char **argv)
{
  MPI_Init (&argc, &argv);
  int rank, nranks, local;
  MPI_Comm_rank (MPI_COMM_WORLD, &rank);
  MPI_Comm_size (MPI_COMM_WORLD, &nranks);
  MPI_Comm node;
  MPI_Comm_split_type (MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_rank (node, &local);
  int ndev = omp_get_num_devices ();
  if (ndev > 0)
    omp_set_default_device (local % ndev);
  int dev = omp_get_default_device (), ok = 1;

  /* 1. Real work on the GPU, results exchanged on the host.  */
  int gpu = 0;
#pragma omp target map(from: gpu)
  gpu = !omp_is_initial_device ();
  double mine = share (rank, nranks, 1), pi = 0, from_prev = 0;
  MPI_Allreduce (&mine, &pi, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  MPI_Sendrecv (&mine, 1, MPI_DOUBLE, next, 0, &from_prev, 1, MPI_DOUBLE, prev, 0,
		MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  double expect_prev = share (prev, nranks, 0); /* on the host */
  int good = fabs (pi - M_PI) < 1e-9 && fabs (from_prev - expect_prev) < 1e-9;
  printf ("rank %d: %s, device %d; share %.12f, pi %.12f, rank %d's share %s\n", rank,
	  gpu ? "on the GPU" : "on the host (no GPU)", dev, mine, pi, prev,
	  good ? "matches" : "DIFFERS");
  ok &= good;

  /* 2. In turns, one rank takes most of the GPU while the others hold small blocks.  */
  void *small = omp_target_alloc (SMALL, dev);
  ok &= small != NULL;
  size_t total = gpu ? gpu_memory (local % (ndev > 0 ? ndev : 1)) : 0;
  for (int turn = 0; turn < nranks && total; turn++)
    {
      MPI_Barrier (MPI_COMM_WORLD);
      if (rank == turn)
	{
	  size_t big = ((size_t) (total * 0.70) - (nranks - 1) * SMALL) & ~(MIB - 1);
	  unsigned *p = omp_target_alloc (big, dev);
	  long bad = p ? fill_and_check (p, big, rank) : -1;
	  printf ("rank %d: turn %d: %s %.1f GiB of the GPU's %.1f GiB%s\n", rank, turn,
		  p ? "allocated, filled and checked" : "FAILED to allocate", big / GIB,
		  total / GIB, bad > 0 ? " (WRONG values)" : "");
	  fflush (stdout);
	  ok &= bad == 0;
	  omp_target_free (p, dev);
	}
      MPI_Barrier (MPI_COMM_WORLD);
    }
  omp_target_free (small, dev);

  int all = 0;
  MPI_Allreduce (&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0)
    printf ("%s %d ranks: shares sum to pi, ring exchange, %s\n", all ? "OK" : "FAIL", nranks,
	    total ? "each rank had most of the GPU in its turn" : "no GPU: turns skipped");
  MPI_Comm_free (&node);
  MPI_Finalize ();
  return !all;
}
