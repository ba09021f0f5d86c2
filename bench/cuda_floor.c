/* cuda_floor.c - the raw CUDA driver floor under the plugins' per-region costs: the
 * enqueue cost of the driver calls an offload region is made of, called directly
 * (libcuda loaded with dlopen; the kernel is a one-parameter empty PTX entry, so no
 * CUDA toolkit is needed). Run on the GPU machine by bench/device-run.sh.
 *
 * usage: cuda_floor [N [GCC_PTX]]     (env FLOOR_ONLY=revoff: the revoff_* rows only;
 *                                    FLOOR_ONLY=hostalloc: the hostalloc_* rows only;
 *                                    FLOOR_ONLY=gcc: the gcc_* rows only (GCC_PTX);
 *                                    FLOOR_ONLY=gccshape: GCC's empty kernel in several
 *                                    launch shapes, see gcc_shapes)
 *   N        calls per batch (default 500; median of 20 batches; the synchronous rows
 *            use N/5+1, those of 64 KiB and more N/25+1)
 *   GCC_PTX  the PTX objects of a gcc-16 program with one empty `omp target` region, each
 *            NUL-terminated, one after another (bench/gcc_ptx.py writes it from the
 *            binary; bench/build.sh: .carry/gcc_empty.ptx); without it the gcc_* rows
 *            are left out
 * Prints "metric floor_NAME VALUE us" lines, per call:
 *   hostalloc_<step>, hostfree_<step>
 *                        once per run, first thing after the module is loaded:
 *                        cuMemHostAlloc (PORTABLE | DEVICEMAP) of the process's first
 *                        4 KiB, of 4 KiB again after freeing it, then of 64 KiB, 1 MiB,
 *                        4 KiB and 1 MiB while the earlier blocks stay allocated
 *                        (cuMemFreeHost of the first: hostfree_first_4096B)
 *   launch_{nb,blk}      cuLaunchKernel on a non-blocking / blocking stream
 *   h2d8_{pageable,pinned}  cuMemcpyHtoDAsync of 8 bytes on a non-blocking stream
 *   write8               cuStreamWriteValue64_v2 (8 bytes by value), if present
 *   event_record         cuEventRecord
 *   acc_region_{nb,blk}  h2d8 pageable + event + launch + event (an async OpenACC
 *                        region's driver calls) on a non-blocking / blocking stream
 *   acc_region_w8_blk    the same with write8 in place of the h2d8
 *   sync_launch          launch + cuStreamSynchronize (a synchronous region's floor)
 *   h2d4k_async_sync     4 KiB pageable cuMemcpyHtoDAsync + cuStreamSynchronize
 *   h2d4k_pool_async_sync  the same into memory from the default stream-ordered pool
 *   h2d4k_bounce_sync    4 KiB memcpy into page-locked memory, cuMemcpyHtoDAsync from
 *                        it + cuStreamSynchronize (the plugin's small-copy path)
 *   h2d4k_sync[_ptds]    4 KiB pageable cuMemcpyHtoD_v2 (legacy stream) / _v2_ptds
 *                        (per-thread default stream)
 *   h2d8_sync, d2h8_sync, d2h4k_sync
 *                        cuMemcpyHtoD_v2 of 8 bytes, cuMemcpyDtoH_v2 of 8 bytes and of
 *                        4 KiB, pageable memory (synchronous, legacy stream)
 *   d2h8_pinned_sync     cuMemcpyDtoHAsync_v2 of 8 bytes into page-locked memory,
 *                        cuStreamSynchronize, then an 8-byte memcpy out of it
 *   seq_<B>B_legacy      a region's driver calls with a trivial kernel: cuMemcpyHtoD_v2
 *                        of B bytes, cuLaunchKernel on the legacy stream (stream 0),
 *                        cuMemcpyDtoH_v2 of 8 bytes (waits for the kernel); B = 8, 4096
 *   seq_<B>B_nb          the same on a non-blocking stream: cuMemcpyHtoDAsync_v2,
 *                        launch, cuMemcpyDtoHAsync_v2, one cuStreamSynchronize
 *   seq_<B>B_nbpin       the same with the download into page-locked memory, copied
 *                        out on the CPU after the synchronize
 *   gcc_empty_wall       GCC's own kernel of an empty `omp target` region (from GCC_PTX,
 *                        linked with cuLinkCreate/cuLinkAddData per object as the plugins
 *                        do) launched as the plugins launch it: 1 team x 8 warps (block
 *                        32x8), 8192 bytes of dynamic shared memory (the default
 *                        low-latency pool), parameters {tgt_vars, soft stacks, 128 KiB
 *                        per warp} through CU_LAUNCH_PARAM_BUFFER_POINTER, then
 *                        cuStreamSynchronize, on a non-blocking stream (host wall time)
 *   gcc_empty_event      the same launch's device time: cuEventRecord before and after,
 *                        cuEventElapsedTime (median of N)
 *   gcc_region_<B>B_{legacy,nb}
 *                        seq_<B>B_* with GCC's kernel in place of the trivial one: the
 *                        driver calls of a `target map(to: B bytes) map(from: scalar)`
 *                        region; B = 8, 4096, 65536, 1048576
 *   gcc_cycle_4096B_{legacy,nb}
 *                        the same with a 4 KiB download: `target update to` + region +
 *                        `target update from` of 4 KiB
 *   gcc_wait_<W>_<B>B    how a synchronous region waits (B = 8, 4096, 65536 bytes up,
 *                        8 down into page-locked memory, GCC's kernel, non-blocking
 *                        stream; W:)
 *                          2sync   cuStreamSynchronize after the launch, then the
 *                                  download and a second cuStreamSynchronize (a run
 *                                  that waits for its kernel, then a copy that waits)
 *                          1sync   the download queued before the one
 *                                  cuStreamSynchronize (= gcc_region_<B>B_nbpin)
 *                          event   as 1sync, waited by cuEventRecord +
 *                                  cuEventSynchronize (a CU_EVENT_DISABLE_TIMING event)
 *                          bsync   as event with a CU_EVENT_BLOCKING_SYNC event
 *                          flag    as 1sync, waited by cuStreamWriteValue32_v2 of a
 *                                  sequence number into mapped page-locked memory
 *                                  (CU_STREAM_WRITE_VALUE_DEFAULT) that the host polls
 *                                  (spinning, sched_yield after 1000 polls)
 *                          2flag   as 2sync with both waits by such a flag
 *   gcc_wait_<W>_empty   GCC's kernel alone, waited as W (sync = gcc_empty_wall, event,
 *                        bsync, flag)
 *   d2h8_flag            d2h8_pinned_sync waited by a flag as above
 *   revoff_flag          one device->host->device round trip through a mapped
 *                        page-locked word: the kernel stores a flag (st.release.sys),
 *                        a host thread spinning on it clears it, the kernel spins
 *                        (ld.acquire.sys) until it sees 0 (mean of 20000)
 *   revoff_protocol      the same with the rest of what GCC's device runtime does per
 *                        reverse-offload request (config/nvptx/target.c): a device-wide
 *                        spin lock around it and the five request fields written to the
 *                        mailbox before the flag (sm_70's release/acquire forms)
 *   revoff_gcc           the protocol as GCC 16's device runtime runs it in practice (its
 *                        default sm_52 build: membar.sys around the lock, before the
 *                        flag and in every round of the spin, which loads weakly); the
 *                        floor of revoff_round_trip with an unchanged device runtime
 *   revoff_gcc_vspin     as revoff_gcc with the spin's loads volatile and its per-round
 *                        membar.sys left out (the fence after the loop kept): the device
 *                        code as the nvptx plugin rewrites it (GOMP_NVPTX_TUNE=revspin)
 *   revoff_gcc_real      with env GCC_REV_PTX=FILE (revoff_bench's PTX objects, as
 *                        GCC_PTX; bench/build.sh: .carry/gcc_revoff.ptx): GCC's own
 *                        kernel (GCC_REV_ENTRY, default round_trips$_omp_fn$0, the
 *                        round-trip loop) making the requests, launched as the plugins launch it,
 *                        answered by the bare responder thread (no plugin, no libgomp)
 *   revoff_gcc_real_vspin  the same with GCC_REV_VSPIN_PTX=FILE, those objects with the
 *                        plugin's rewrite of the wait (.carry/gcc_revoff_vspin.ptx)
 *   revoff_gcc_real_acqrel  the same with GCC_REV_ACQREL_PTX=FILE, the whole request in
 *                        sm_70's scoped forms (revspin=acqrel; .carry/gcc_revoff_acqrel.ptx)
 *   revoff_gcc_real_acqrel_delay<NS>  with REV_DELAYS="NS ...": that row again with the
 *                        responder answering NS ns after it sees each request
 * A failing driver call prints "ERROR ..." and exits 1. */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "median.h"

typedef int CUresult;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;

static CUresult (*cuInit) (unsigned);
static CUresult (*cuDeviceGet) (int *, int);
static CUresult (*cuDevicePrimaryCtxRetain) (CUcontext *, int);
static CUresult (*cuCtxSetCurrent) (CUcontext);
static CUresult (*cuModuleLoadData) (CUmodule *, const void *);
static CUresult (*cuModuleGetFunction) (CUfunction *, CUmodule, const char *);
static CUresult (*cuStreamCreate) (CUstream *, unsigned);
static CUresult (*cuStreamSynchronize) (CUstream);
static CUresult (*cuLaunchKernel) (CUfunction, unsigned, unsigned, unsigned, unsigned,
				   unsigned, unsigned, unsigned, CUstream, void **, void **);
static CUresult (*cuMemAlloc) (CUdeviceptr *, size_t);
static CUresult (*cuMemHostAlloc) (void **, size_t, unsigned);
static CUresult (*cuMemFreeHost) (void *);
static CUresult (*cuMemcpyHtoDAsync) (CUdeviceptr, const void *, size_t, CUstream);
static CUresult (*cuEventCreate) (CUevent *, unsigned);
static CUresult (*cuEventRecord) (CUevent, CUstream);
static CUresult (*cuMemcpyHtoD) (CUdeviceptr, const void *, size_t);
static CUresult (*cuMemcpyHtoD_ptds) (CUdeviceptr, const void *, size_t);
static CUresult (*cuMemAllocAsync) (CUdeviceptr *, size_t, CUstream);
static CUresult (*cuStreamWriteValue64) (CUstream, CUdeviceptr, unsigned long long, unsigned);
static CUresult (*cuStreamWriteValue32) (CUstream, CUdeviceptr, unsigned, unsigned);
static CUresult (*cuMemHostGetDevicePointer) (CUdeviceptr *, void *, unsigned);
static CUresult (*cuMemcpyDtoH) (void *, CUdeviceptr, size_t);
static CUresult (*cuMemcpyDtoHAsync) (void *, CUdeviceptr, size_t, CUstream);
static CUresult (*cuEventSynchronize) (CUevent);
static CUresult (*cuModuleGetGlobal) (CUdeviceptr *, size_t *, CUmodule, const char *);
static CUresult (*cuEventElapsedTime) (float *, CUevent, CUevent);
static CUresult (*cuLinkCreate) (unsigned, int *, void **, void **);
static CUresult (*cuLinkAddData) (void *, int, void *, size_t, const char *, unsigned,
				  int *, void **);
static CUresult (*cuLinkComplete) (void *, void **, size_t *);
static CUresult (*cuLinkDestroy) (void *);

static const char ptx[] =
  ".version 6.0\n.target sm_52\n.address_size 64\n"
  ".visible .entry k(.param .u64 p)\n{\n\tret;\n}\n";

/* The reverse-offload request protocol of GCC's nvptx device runtime, reduced to its
   memory operations: n requests; FULL != 0 adds the lock and the request fields.  */
static const char rev_ptx[] =
  ".version 7.0\n.target sm_70\n.address_size 64\n"
  ".global .align 4 .u32 lock;\n"
  ".visible .entry rev(.param .u64 mb, .param .u32 n, .param .u32 full)\n{\n"
  "\t.reg .u64 %a, %v, %f, %l;\n\t.reg .u32 %i, %n, %full, %old;\n\t.reg .pred %p, %q;\n"
  "\tld.param.u64 %a, [mb];\n\tld.param.u32 %n, [n];\n\tld.param.u32 %full, [full];\n"
  "\tsetp.ne.u32 %q, %full, 0;\n\tmov.u64 %l, lock;\n\tmov.u32 %i, 0;\n"
  "LOOP:\n"
  "\t@!%q bra FLAG;\n"
  "LOCK:\n\tatom.global.cas.b32 %old, [%l], 0, 1;\n\tsetp.ne.u32 %p, %old, 0;\n\t@%p bra LOCK;\n"
  "\tcvt.u64.u32 %v, %i;\n"
  "\tst.global.u64 [%a+8], %v;\n\tst.global.u64 [%a+16], %v;\n"
  "\tst.global.u64 [%a+24], %v;\n\tst.global.u64 [%a+32], %v;\n"
  "\tst.global.u32 [%a+40], %i;\n"
  "FLAG:\n\tadd.u32 %i, %i, 1;\n\tcvt.u64.u32 %v, %i;\n"
  "\tst.global.release.sys.u64 [%a], %v;\n"
  "SPIN:\n\tld.acquire.sys.global.u64 %f, [%a];\n\tsetp.ne.u64 %p, %f, 0;\n\t@%p bra SPIN;\n"
  "\t@%q atom.global.exch.b32 %old, [%l], 0;\n"
  "\tsetp.lt.u32 %p, %i, %n;\n\t@%p bra LOOP;\n\tret;\n}\n";

/* The same protocol as GCC 16's device runtime really runs it when built for sm_52 (its
   default multilib; config/nvptx/target.c's pre-sm_70 branch, as the PTX of a GCC 16
   binary shows it): the lock taken by atom.exch followed by membar.sys, the fields,
   membar.sys, the flag by st.volatile, then a spin of a weak load followed by membar.sys
   in every round, membar.sys and a plain store to release the lock.  VSPIN != 0: the
   spin loads with ld.volatile and has no fence inside the loop (the fence that releases
   the lock orders what follows): what the nvptx plugin rewrites the spin to.  */
static const char rev_gcc_ptx[] =
  ".version 7.0\n.target sm_70\n.address_size 64\n"
  ".global .align 4 .u32 glock;\n"
  ".global .align 8 .u64 gvar;\n"
  ".visible .entry revg(.param .u64 mb, .param .u32 n, .param .u32 vspin)\n{\n"
  "\t.reg .u64 %a, %v, %f, %l, %g;\n\t.reg .u32 %i, %n, %vs, %old;\n\t.reg .pred %p, %q;\n"
  "\tld.param.u64 %a, [mb];\n\tld.param.u32 %n, [n];\n\tld.param.u32 %vs, [vspin];\n"
  "\tsetp.ne.u32 %q, %vs, 0;\n\tmov.u64 %l, glock;\n\tmov.u64 %g, gvar;\n"
  "\tst.global.u64 [%g], %a;\n\tmov.u32 %i, 0;\n"
  "LOCK:\n\tatom.global.exch.b32 %old, [%l], 1;\n\tmembar.sys;\n"
  "\tsetp.ne.u32 %p, %old, 0;\n\t@%p bra LOCK;\n"
  "\tld.global.u64 %a, [%g];\n\tcvt.u64.u32 %v, %i;\n"
  "\tst.u64 [%a+8], %v;\n\tst.u64 [%a+16], %v;\n"
  "\tst.u64 [%a+24], %v;\n\tst.u64 [%a+32], %v;\n"
  "\tst.u32 [%a+40], %i;\n"
  "\tadd.u32 %i, %i, 1;\n\tcvt.u64.u32 %v, %i;\n"
  "\tmembar.sys;\n\tst.volatile.global.u64 [%a], %v;\n"
  "\t@%q bra VSPIN;\n"
  "SPIN:\n\tld.global.u64 %a, [%g];\n\tld.u64 %f, [%a];\n\tmembar.sys;\n"
  "\tsetp.ne.u64 %p, %f, 0;\n\t@%p bra SPIN;\n\tbra UNLOCK;\n"
  "VSPIN:\n\tld.global.u64 %a, [%g];\n\tld.volatile.u64 %f, [%a];\n"
  "\tsetp.ne.u64 %p, %f, 0;\n\t@%p bra VSPIN;\n"
  "UNLOCK:\n\tmembar.sys;\n\tmov.u32 %old, 0;\n\tst.global.u32 [%l], %old;\n"
  "\tsetp.lt.u32 %p, %i, %n;\n\t@%p bra LOCK;\n\tret;\n}\n";

#define CHECK(call)                                                         \
  do {                                                                      \
    CUresult r_ = (call);                                                   \
    if (r_ != 0)                                                            \
      {                                                                     \
	printf ("ERROR %s = %d\n", #call, r_);                              \
	exit (1);                                                           \
      }                                                                     \
  } while (0)

static double now (void)
{
  struct timespec t;
  clock_gettime (CLOCK_MONOTONIC, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}


#define BATCHES 20
static CUfunction fn;
static CUdeviceptr dptr, pool_ptr;
static void *pageable, *pinned;
static CUevent ev;

static void launch (CUstream s)
{
  void *params[1] = { &dptr };
  CHECK (cuLaunchKernel (fn, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
}

/* GCC's kernel of an empty region and what the plugins pass it (docs/plugin-abi.md
   section 6.2/6.3): the tgt_vars block, the soft stacks (one 128 KiB block per warp of
   1 team x 8 warps) and the per-warp stack size, as one 24-byte parameter buffer. */
#define GCC_WARPS 8
#define GCC_STACK (128 * 1024)
#define GCC_LOWLAT 8192
/* The launch's shape (FLOOR_ONLY=gccshape varies it; the plugins' otherwise). */
static unsigned gcc_warps = GCC_WARPS, gcc_lowlat = GCC_LOWLAT;
static CUfunction gcc_fn;
static CUdeviceptr gcc_stacks;

static void launch_gcc (CUstream s)
{
  unsigned long long args[3] = { dptr, gcc_stacks, GCC_STACK };
  size_t size = sizeof args;
  void *extra[] = { (void *) 1 /* CU_LAUNCH_PARAM_BUFFER_POINTER */, args,
		    (void *) 2 /* CU_LAUNCH_PARAM_BUFFER_SIZE */, &size,
		    (void *) 0 /* CU_LAUNCH_PARAM_END */ };
  CHECK (cuLaunchKernel (gcc_fn, 1, 1, 1, 32, gcc_warps, 1, gcc_lowlat, s, NULL, extra));
}

/* The shape of the SEQ_* operations: bytes up, bytes down, which kernel. */
static size_t seq_up, seq_down;
static int seq_gcc;
static CUdeviceptr big_dptr;
static void *big_pageable, *down_buf;

enum op { LAUNCH, H2D_PAGEABLE, H2D_PINNED, WRITE8, EVENT, ACC_REGION, ACC_REGION_W8,
	  SYNC_LAUNCH, H2D4K_ASYNC_SYNC, H2D4K_SYNC, H2D4K_SYNC_PTDS, H2D4K_POOL_ASYNC_SYNC,
	  H2D4K_BOUNCE_SYNC, H2D8_SYNC, D2H8_SYNC, D2H4K_SYNC, D2H8_PINNED_SYNC, SEQ_LEGACY,
	  SEQ_NB, SEQ_NB_PINNED, GCC_SYNC_LAUNCH, WAIT_REGION, WAIT_EMPTY, D2H8_FLAG };

/* How WAIT_REGION / WAIT_EMPTY wait (see the header's gcc_wait_* rows).  */
enum wait { W_2SYNC, W_1SYNC, W_EVENT, W_BSYNC, W_FLAG, W_2FLAG };
static enum wait wait_how;
static CUevent ev_nt, ev_bs;
static volatile unsigned *flag_host;
static CUdeviceptr flag_dev;
static unsigned flag_seq;

/* Waits for everything queued on S so far, as W says.  */
static void wait_for (CUstream s, enum wait w)
{
  switch (w)
    {
    case W_2SYNC: case W_1SYNC: CHECK (cuStreamSynchronize (s)); break;
    case W_EVENT: CHECK (cuEventRecord (ev_nt, s)); CHECK (cuEventSynchronize (ev_nt)); break;
    case W_BSYNC: CHECK (cuEventRecord (ev_bs, s)); CHECK (cuEventSynchronize (ev_bs)); break;
    case W_FLAG: case W_2FLAG:
      {
	unsigned want = ++flag_seq;
	CHECK (cuStreamWriteValue32 (s, flag_dev, want, 0));
	double t0 = 0;
	for (unsigned i = 0; __atomic_load_n (flag_host, __ATOMIC_ACQUIRE) != want; i++)
	  if (i >= 1000)
	    {
	      sched_yield ();
	      if (i == 1000)
		t0 = now ();
	      else if ((i & 1023) == 0 && now () - t0 > 2.0)
		{
		  printf ("ERROR the flag never came (%u, want %u)\n", *flag_host, want);
		  exit (1);
		}
	    }
	break;
      }
    }
}

static void one (enum op op, CUstream s)
{
  switch (op)
    {
    case LAUNCH: launch (s); break;
    case H2D_PAGEABLE: CHECK (cuMemcpyHtoDAsync (dptr, pageable, 8, s)); break;
    case H2D_PINNED: CHECK (cuMemcpyHtoDAsync (dptr, pinned, 8, s)); break;
    case WRITE8: CHECK (cuStreamWriteValue64 (s, dptr, 42, 0)); break;
    case EVENT: CHECK (cuEventRecord (ev, s)); break;
    case ACC_REGION_W8:
      CHECK (cuStreamWriteValue64 (s, dptr, 42, 0));
      CHECK (cuEventRecord (ev, s));
      launch (s);
      CHECK (cuEventRecord (ev, s));
      break;
    case ACC_REGION:
      CHECK (cuMemcpyHtoDAsync (dptr, pageable, 8, s));
      CHECK (cuEventRecord (ev, s));
      launch (s);
      CHECK (cuEventRecord (ev, s));
      break;
    case SYNC_LAUNCH: launch (s); CHECK (cuStreamSynchronize (s)); break;
    case H2D4K_ASYNC_SYNC:
      CHECK (cuMemcpyHtoDAsync (dptr, pageable, 4096, s));
      CHECK (cuStreamSynchronize (s));
      break;
    case H2D4K_POOL_ASYNC_SYNC:
      CHECK (cuMemcpyHtoDAsync (pool_ptr, pageable, 4096, s));
      CHECK (cuStreamSynchronize (s));
      break;
    case H2D4K_BOUNCE_SYNC:
      memcpy (pinned, pageable, 4096);
      CHECK (cuMemcpyHtoDAsync (dptr, pinned, 4096, s));
      CHECK (cuStreamSynchronize (s));
      break;
    case H2D4K_SYNC: CHECK (cuMemcpyHtoD (dptr, pageable, 4096)); break;
    case H2D4K_SYNC_PTDS: CHECK (cuMemcpyHtoD_ptds (dptr, pageable, 4096)); break;
    case H2D8_SYNC: CHECK (cuMemcpyHtoD (dptr, pageable, 8)); break;
    case D2H8_SYNC: CHECK (cuMemcpyDtoH (down_buf, dptr, 8)); break;
    case D2H4K_SYNC: CHECK (cuMemcpyDtoH (down_buf, dptr, 4096)); break;
    case D2H8_PINNED_SYNC:
      CHECK (cuMemcpyDtoHAsync (pinned, dptr, 8, s));
      CHECK (cuStreamSynchronize (s));
      memcpy (down_buf, pinned, 8);
      break;
    case SEQ_LEGACY:
      CHECK (cuMemcpyHtoD (big_dptr, big_pageable, seq_up));
      if (seq_gcc)
	launch_gcc (NULL);
      else
	launch (NULL);
      CHECK (cuMemcpyDtoH (down_buf, dptr, seq_down));
      break;
    case SEQ_NB:
      CHECK (cuMemcpyHtoDAsync (big_dptr, big_pageable, seq_up, s));
      if (seq_gcc)
	launch_gcc (s);
      else
	launch (s);
      CHECK (cuMemcpyDtoHAsync (down_buf, dptr, seq_down, s));
      CHECK (cuStreamSynchronize (s));
      break;
    case SEQ_NB_PINNED:
      CHECK (cuMemcpyHtoDAsync (big_dptr, big_pageable, seq_up, s));
      if (seq_gcc)
	launch_gcc (s);
      else
	launch (s);
      CHECK (cuMemcpyDtoHAsync (pinned, dptr, seq_down, s));
      CHECK (cuStreamSynchronize (s));
      memcpy (down_buf, pinned, seq_down);
      break;
    case GCC_SYNC_LAUNCH: launch_gcc (s); CHECK (cuStreamSynchronize (s)); break;
    case WAIT_REGION:
      CHECK (cuMemcpyHtoDAsync (big_dptr, big_pageable, seq_up, s));
      launch_gcc (s);
      if (wait_how == W_2SYNC || wait_how == W_2FLAG)
	wait_for (s, wait_how);
      CHECK (cuMemcpyDtoHAsync (pinned, dptr, 8, s));
      wait_for (s, wait_how);
      memcpy (down_buf, pinned, 8);
      break;
    case WAIT_EMPTY: launch_gcc (s); wait_for (s, wait_how); break;
    case D2H8_FLAG:
      CHECK (cuMemcpyDtoHAsync (pinned, dptr, 8, s));
      wait_for (s, W_FLAG);
      memcpy (down_buf, pinned, 8);
      break;
    }
}

static void measure (const char *name, enum op op, CUstream s, int n)
{
  double t[BATCHES];
  for (int b = 0; b < BATCHES + 1; b++)
    {
      double t0 = now ();
      for (int i = 0; i < n; i++)
	one (op, s);
      double t1 = now ();
      CHECK (cuStreamSynchronize (s));
      if (b > 0)
	t[b - 1] = (t1 - t0) / n;
    }
  printf ("metric floor_%s %.2f us\n", name, median (t, BATCHES) * 1e6);
}

/* A region's copy sequence (bytes UP up, DOWN down) with the trivial kernel or GCC's,
   on the legacy stream and on the non-blocking stream NB. */
static void measure_seq (const char *prefix, size_t up, size_t down, int gcc, CUstream nb,
			 int n)
{
  char name[96];
  seq_up = up, seq_down = down, seq_gcc = gcc;
  int k = up >= 65536 ? n / 25 + 1 : n / 5 + 1;
  snprintf (name, sizeof name, "%s_%zuB_legacy", prefix, up);
  measure (name, SEQ_LEGACY, NULL, k);
  snprintf (name, sizeof name, "%s_%zuB_nb", prefix, up);
  measure (name, SEQ_NB, nb, k);
  snprintf (name, sizeof name, "%s_%zuB_nbpin", prefix, up);
  measure (name, SEQ_NB_PINNED, nb, k);
}

/* Links the PTX objects of FILE (each NUL-terminated) as the plugins do into *MOD, runs
   the image's constructor kernel, if it has one, once (on soft stacks at STACKS), and
   names in ENTRY (256 bytes) the first kernel (.entry) not of the runtime's own ("__").
   0 on success. */
static int link_gcc (const char *file, CUstream s, CUdeviceptr stacks, CUmodule *mod,
		     char *entry)
{
  FILE *f = fopen (file, "rb");
  if (!f)
    {
      printf ("ERROR cannot open %s\n", file);
      return 1;
    }
  size_t cap = 1 << 20, len = 0, r;
  char *buf = malloc (cap + 1);
  while ((r = fread (buf + len, 1, cap - len, f)) > 0)
    if ((len += r) == cap)
      buf = realloc (buf, (cap *= 2) + 1);
  fclose (f);
  buf[len] = 0;
  if (len == 0 || buf[len - 1] != 0)
    {
      printf ("ERROR %s: not NUL-terminated PTX objects\n", file);
      return 1;
    }
  static char elog[4096];
  int opts[2] = { 5 /* CU_JIT_ERROR_LOG_BUFFER */, 6 /* ..._SIZE_BYTES */ };
  void *vals[2] = { elog, (void *) (size_t) sizeof elog };
  void *link;
  CHECK (cuLinkCreate (2, opts, vals, &link));
  entry[0] = 0;
  int objs = 0;
  for (size_t off = 0; off < len; off += strlen (buf + off) + 1, objs++)
    {
      char *o = buf + off;
      if (cuLinkAddData (link, 1 /* CU_JIT_INPUT_PTX */, o, strlen (o) + 1, "gcc", 0, NULL,
			 NULL) != 0)
	{
	  printf ("ERROR cuLinkAddData of object %d: %s\n", objs, elog);
	  return 1;
	}
      for (char *e = strstr (o, ".visible .entry "); e && !entry[0];
	   e = strstr (e + 1, ".visible .entry "))
	{
	  char name[256];
	  if (sscanf (e + 16, "%255[^ (]", name) == 1 && strncmp (name, "__", 2) != 0)
	    strcpy (entry, name);
	}
    }
  void *cubin;
  size_t cubin_size;
  if (cuLinkComplete (link, &cubin, &cubin_size) != 0)
    {
      printf ("ERROR cuLinkComplete: %s\n", elog);
      return 1;
    }
  CHECK (cuModuleLoadData (mod, cubin));
  CHECK (cuLinkDestroy (link));
  free (buf);
  if (!entry[0])
    {
      printf ("ERROR %s: no OpenMP region kernel (.entry) in %d objects\n", file, objs);
      return 1;
    }
  CUfunction ctors;
  if (cuModuleGetFunction (&ctors, *mod, "__do_global_ctors__entry__mgomp") == 0)
    {
      /* This variant takes the top of a one-warp soft stack (stacks grow down). */
      unsigned long long top = stacks + GCC_STACK;
      void *p[1] = { &top };
      CHECK (cuLaunchKernel (ctors, 1, 1, 1, 1, 1, 1, 0, s, p, NULL));
    }
  else if (cuModuleGetFunction (&ctors, *mod, "__do_global_ctors__entry") == 0)
    CHECK (cuLaunchKernel (ctors, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
  CHECK (cuStreamSynchronize (s));
  printf ("# gcc image %s: %d PTX objects (%zu bytes linked), first kernel %s\n", file, objs,
	  cubin_size, entry);
  return 0;
}

/* GCC's kernel of an empty region (FILE, see link_gcc) as gcc_fn, on its soft stacks. */
static int load_gcc (const char *file, CUstream s)
{
  CUmodule mod;
  char entry[256];
  CHECK (cuMemAlloc (&gcc_stacks, (size_t) GCC_WARPS * GCC_STACK));
  if (link_gcc (file, s, gcc_stacks, &mod, entry))
    return 1;
  CHECK (cuModuleGetFunction (&gcc_fn, mod, entry));
  return 0;
}

/* Device time of a kernel LAUNCH makes on S: events around each launch, median of N. */
static void measure_event (const char *name, void (*launch_one) (CUstream), CUstream s,
			   int n)
{
  CUevent e0, e1;
  CHECK (cuEventCreate (&e0, 0));
  CHECK (cuEventCreate (&e1, 0));
  double *t = malloc (n * sizeof *t);
  for (int i = 0; i < n + 10; i++)
    {
      float ms;
      CHECK (cuEventRecord (e0, s));
      launch_one (s);
      CHECK (cuEventRecord (e1, s));
      CHECK (cuEventSynchronize (e1));
      CHECK (cuEventElapsedTime (&ms, e0, e1));
      if (i >= 10)
	t[i - 10] = ms * 1e-3;
    }
  printf ("metric floor_%s %.2f us\n", name, median (t, n) * 1e6);
  free (t);
}

/* FLOOR_ONLY=gccshape: what the shape of the launch costs GCC's kernel of an empty
   region (FILE; FILE17, from env GCC17_PTX: the same built by gcc-snapshot): device
   time (events) and wall time (launch + cuStreamSynchronize) for 1, 2, 4 and 8 warps,
   with and without the 8 KiB low-latency pool; beside them the trivial kernel's device
   time (floor_empty_event). Rows gcc[17]_shape_w<W>_s<S>_{event,wall}.  */
static int gcc_shapes (const char *file, const char *file17, CUstream s, int n)
{
  measure_event ("empty_event", launch, s, n);
  const char *files[2] = { file, file17 }, *tag[2] = { "gcc", "gcc17" };
  for (int f = 0; f < 2; f++)
    {
      if (!files[f] || !*files[f])
	continue;
      if (load_gcc (files[f], s))
	return 1;
      for (unsigned w = 1; w <= 8; w *= 2)
	for (unsigned sm = 0; sm <= 8192; sm += 8192)
	  {
	    char name[64];
	    gcc_warps = w, gcc_lowlat = sm;
	    snprintf (name, sizeof name, "%s_shape_w%u_s%u_event", tag[f], w, sm);
	    measure_event (name, launch_gcc, s, n);
	    snprintf (name, sizeof name, "%s_shape_w%u_s%u_wall", tag[f], w, sm);
	    measure (name, GCC_SYNC_LAUNCH, s, n / 5 + 1);
	  }
      gcc_warps = GCC_WARPS, gcc_lowlat = GCC_LOWLAT;
    }
  return 0;
}

static volatile unsigned long long *mailbox;
static volatile int responder_stop;
/* How long the responder waits after seeing a request before it answers (ns; 0: at
   once): what a host side that does work per request costs a round trip.  */
static volatile long responder_delay_ns;

/* The host side: clear every request as soon as it appears.  */
static void *responder (void *arg)
{
  (void) arg;
  while (!responder_stop)
    if (__atomic_load_n (mailbox, __ATOMIC_ACQUIRE) != 0)
      {
	if (responder_delay_ns)
	  {
	    double until = now () + responder_delay_ns * 1e-9;
	    while (now () < until)
	      ;
	  }
	__atomic_store_n (mailbox, 0, __ATOMIC_RELEASE);
      }
  return NULL;
}

/* Mean round trip of N requests (after 100 warm-up ones).  */
static void measure_rev (const char *name, CUmodule mod, CUstream s, int full)
{
  CUfunction rev;
  CUdeviceptr dmb;
  CHECK (cuModuleGetFunction (&rev, mod, strncmp (name, "revoff_gcc", 10) ? "rev" : "revg"));
  CHECK (cuMemHostGetDevicePointer (&dmb, (void *) mailbox, 0));
  unsigned n = 100;
  void *params[3] = { &dmb, &n, &full };
  CHECK (cuLaunchKernel (rev, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  CHECK (cuStreamSynchronize (s));
  n = 20000;
  double t0 = now ();
  CHECK (cuLaunchKernel (rev, 1, 1, 1, 1, 1, 1, 0, s, params, NULL));
  CHECK (cuStreamSynchronize (s));
  printf ("metric floor_%s %.2f us\n", name, (now () - t0) / n * 1e6);
}

/* The round trip of GCC's own device code: ENTRY of the program whose PTX objects FILE
   holds (revoff_bench's, whose round_trips$_omp_fn$0 loops over `target device(ancestor: 1)`
   N times, N read from its first target variable, a firstprivate int), launched as the
   plugins launch a region (1 team of 8 warps on soft stacks), its
   __gomp_rev_offload_var pointing at the mailbox the responder clears: the device code
   exactly as a program runs it, with no plugin and no libgomp on the host side.  */
static void measure_rev_real (const char *name, const char *file, const char *entry,
			      CUstream s)
{
  CUmodule mod;
  CUfunction k;
  CUdeviceptr stacks, vars, var, dmb;
  size_t var_size;
  char first[256];
  CHECK (cuMemAlloc (&stacks, (size_t) GCC_WARPS * GCC_STACK));
  if (link_gcc (file, s, stacks, &mod, first))
    exit (1);
  if (cuModuleGetFunction (&k, mod, entry) != 0)
    {
      printf ("ERROR %s: no kernel %s\n", file, entry);
      exit (1);
    }
  CHECK (cuModuleGetGlobal (&var, &var_size, mod, "__gomp_rev_offload_var"));
  CHECK (cuMemHostGetDevicePointer (&dmb, (void *) mailbox, 0));
  CHECK (cuMemcpyHtoD (var, &dmb, sizeof dmb));
  CHECK (cuMemAlloc (&vars, 8));
  double per = 0;
  for (int pass = 0; pass < 2; pass++)
    {
      unsigned long long n = pass ? 20000 : 100;
      CHECK (cuMemcpyHtoD (vars, &n, sizeof n));
      unsigned long long args[3] = { vars, stacks, GCC_STACK };
      size_t size = sizeof args;
      void *extra[] = { (void *) 1, args, (void *) 2, &size, (void *) 0 };
      double t0 = now ();
      CHECK (cuLaunchKernel (k, 1, 1, 1, 32, GCC_WARPS, 1, GCC_LOWLAT, s, NULL, extra));
      CHECK (cuStreamSynchronize (s));
      per = (now () - t0) / n;
    }
  printf ("metric floor_%s %.2f us\n", name, per * 1e6);
}

#define SYM(f)                                                              \
  do {                                                                      \
    *(void **) &f = dlsym (h, #f);                                          \
    if (!f)                                                                 \
      {                                                                     \
	printf ("ERROR no %s in libcuda\n", #f);                            \
	return 1;                                                           \
      }                                                                     \
  } while (0)

/* The page-locked allocations of a process that has just opened the device and loaded a
   module (where the plugin's first page-locked allocation happens), each timed once:
   which of them pays the driver's set-up, and whether a block kept alive or freed makes
   the next one cheap.  PORTABLE | DEVICEMAP, as the plugin's pinned pool asks.  */
static void hostalloc_sequence (void)
{
  static const struct { const char *name; size_t bytes; int free_before; } step[] = {
    { "first_4096B", 4096, 0 },          /* the process's first */
    { "after_free_4096B", 4096, 1 },     /* the first freed, nothing kept */
    { "kept_65536B", 65536, 0 },         /* the previous one kept alive */
    { "kept_1048576B", 1 << 20, 0 },
    { "kept_4096B", 4096, 0 },
    { "kept_1048576B_again", 1 << 20, 0 },
  };
  void *held[sizeof step / sizeof step[0]] = { 0 };
  for (size_t i = 0; i < sizeof step / sizeof step[0]; i++)
    {
      if (step[i].free_before && i > 0 && held[i - 1])
        {
          double t0 = now ();
          CUresult r = cuMemFreeHost (held[i - 1]);
          double t = now () - t0;
          held[i - 1] = NULL;
          if (r == 0)
            printf ("metric floor_hostfree_%s %.2f us\n", step[i - 1].name, t * 1e6);
        }
      double t0 = now ();
      CUresult r = cuMemHostAlloc (&held[i], step[i].bytes, 0x1 | 0x2);
      double t = now () - t0;
      if (r != 0)
        {
          printf ("ERROR cuMemHostAlloc(%zu) in the host-allocation sequence: %d\n", step[i].bytes, (int) r);
          held[i] = NULL;
          continue;
        }
      printf ("metric floor_hostalloc_%s %.2f us\n", step[i].name, t * 1e6);
    }
  for (size_t i = 0; i < sizeof step / sizeof step[0]; i++)
    if (held[i])
      cuMemFreeHost (held[i]);
}

int main (int argc, char **argv)
{
  int n = argc > 1 ? atoi (argv[1]) : 500;
  void *h = dlopen ("libcuda.so.1", RTLD_NOW);
  if (!h)
    {
      printf ("ERROR cannot load libcuda.so.1\n");
      return 1;
    }
  SYM (cuInit); SYM (cuDeviceGet); SYM (cuDevicePrimaryCtxRetain); SYM (cuCtxSetCurrent);
  SYM (cuModuleLoadData); SYM (cuModuleGetFunction); SYM (cuStreamCreate);
  SYM (cuStreamSynchronize); SYM (cuLaunchKernel); SYM (cuEventCreate); SYM (cuEventRecord);
  *(void **) &cuMemAlloc = dlsym (h, "cuMemAlloc_v2");
  *(void **) &cuMemcpyHtoDAsync = dlsym (h, "cuMemcpyHtoDAsync_v2");
  SYM (cuMemHostAlloc); SYM (cuMemFreeHost);
  *(void **) &cuMemHostGetDevicePointer = dlsym (h, "cuMemHostGetDevicePointer_v2");
  if (!cuMemHostGetDevicePointer)
    {
      printf ("ERROR no cuMemHostGetDevicePointer_v2\n");
      return 1;
    }
  *(void **) &cuStreamWriteValue64 = dlsym (h, "cuStreamWriteValue64_v2");
  *(void **) &cuStreamWriteValue32 = dlsym (h, "cuStreamWriteValue32_v2");
  *(void **) &cuMemcpyHtoD = dlsym (h, "cuMemcpyHtoD_v2");
  *(void **) &cuMemAllocAsync = dlsym (h, "cuMemAllocAsync");
  *(void **) &cuMemcpyHtoD_ptds = dlsym (h, "cuMemcpyHtoD_v2_ptds");
  *(void **) &cuMemcpyDtoH = dlsym (h, "cuMemcpyDtoH_v2");
  *(void **) &cuMemcpyDtoHAsync = dlsym (h, "cuMemcpyDtoHAsync_v2");
  *(void **) &cuLinkCreate = dlsym (h, "cuLinkCreate_v2");
  *(void **) &cuLinkAddData = dlsym (h, "cuLinkAddData_v2");
  *(void **) &cuModuleGetGlobal = dlsym (h, "cuModuleGetGlobal_v2");
  SYM (cuEventSynchronize); SYM (cuEventElapsedTime); SYM (cuLinkComplete); SYM (cuLinkDestroy);
  if (!cuMemcpyHtoD || !cuMemcpyDtoH || !cuMemcpyDtoHAsync || !cuLinkCreate || !cuLinkAddData
      || !cuModuleGetGlobal)
    {
      printf ("ERROR no cuMemcpyHtoD_v2/cuMemcpyDtoH_v2/cuMemcpyDtoHAsync_v2/cuLinkCreate_v2/"
	      "cuLinkAddData_v2/cuModuleGetGlobal_v2\n");
      return 1;
    }
  if (!cuMemAlloc || !cuMemcpyHtoDAsync)
    {
      printf ("ERROR no cuMemAlloc_v2/cuMemcpyHtoDAsync_v2\n");
      return 1;
    }
  int dev;
  CUcontext ctx;
  CUmodule mod;
  CUstream nb, blk;
  CHECK (cuInit (0));
  CHECK (cuDeviceGet (&dev, 0));
  CHECK (cuDevicePrimaryCtxRetain (&ctx, dev));
  CHECK (cuCtxSetCurrent (ctx));
  CHECK (cuModuleLoadData (&mod, ptx));
  CHECK (cuModuleGetFunction (&fn, mod, "k"));
  CHECK (cuStreamCreate (&nb, 1));
  CHECK (cuStreamCreate (&blk, 0));
  CHECK (cuMemAlloc (&dptr, 4096));
  hostalloc_sequence ();
  const char *only = getenv ("FLOOR_ONLY");
  if (only && !strcmp (only, "hostalloc"))
    return 0;
  CHECK (cuMemHostAlloc (&pinned, 4096, 0));
  CHECK (cuEventCreate (&ev, 2));
  pageable = calloc (1, 4096);
  if (only && !strcmp (only, "revoff"))
    goto revoff;
  if (only && !strcmp (only, "gcc"))
    goto gcc;
  if (only && !strcmp (only, "gccshape"))
    return gcc_shapes (argc > 2 ? argv[2] : NULL, getenv ("GCC17_PTX"), nb, n);
  measure ("launch_nb", LAUNCH, nb, n);
  measure ("launch_blk", LAUNCH, blk, n);
  measure ("h2d8_pageable", H2D_PAGEABLE, nb, n);
  measure ("h2d8_pinned", H2D_PINNED, nb, n);
  if (cuStreamWriteValue64)
    measure ("write8", WRITE8, nb, n);
  measure ("event_record", EVENT, nb, n);
  measure ("acc_region_nb", ACC_REGION, nb, n);
  measure ("acc_region_blk", ACC_REGION, blk, n);
  if (cuStreamWriteValue64)
    measure ("acc_region_w8_blk", ACC_REGION_W8, blk, n);
  measure ("sync_launch", SYNC_LAUNCH, nb, n / 5 + 1);
  measure ("h2d4k_async_sync", H2D4K_ASYNC_SYNC, nb, n / 5 + 1);
  if (cuMemAllocAsync && cuMemAllocAsync (&pool_ptr, 4096, nb) == 0
      && cuStreamSynchronize (nb) == 0)
    measure ("h2d4k_pool_async_sync", H2D4K_POOL_ASYNC_SYNC, nb, n / 5 + 1);
  measure ("h2d4k_bounce_sync", H2D4K_BOUNCE_SYNC, nb, n / 5 + 1);
  if (cuMemcpyHtoD)
    measure ("h2d4k_sync", H2D4K_SYNC, nb, n / 5 + 1);
  if (cuMemcpyHtoD_ptds)
    measure ("h2d4k_sync_ptds", H2D4K_SYNC_PTDS, nb, n / 5 + 1);

  /* Single synchronous copies and whole regions' copy sequences. */
gcc:
  CHECK (cuMemAlloc (&big_dptr, 1 << 20));
  big_pageable = calloc (1, 1 << 20);
  down_buf = calloc (1, 4096);
  if (only && !strcmp (only, "gcc"))
    goto gcc_rows;
  measure ("h2d8_sync", H2D8_SYNC, nb, n / 5 + 1);
  measure ("d2h8_sync", D2H8_SYNC, nb, n / 5 + 1);
  measure ("d2h8_pinned_sync", D2H8_PINNED_SYNC, nb, n / 5 + 1);
  measure ("d2h4k_sync", D2H4K_SYNC, nb, n / 5 + 1);
  measure_seq ("seq", 8, 8, 0, nb, n);
  measure_seq ("seq", 4096, 8, 0, nb, n);
gcc_rows:
  if (argc > 2)
    {
      if (load_gcc (argv[2], nb))
	return 1;
      measure ("gcc_empty_wall", GCC_SYNC_LAUNCH, nb, n / 5 + 1);
      measure_event ("gcc_empty_event", launch_gcc, nb, n);
      for (size_t b = 8; b <= 1 << 20; b *= b == 8 ? 512 : 16)
	measure_seq ("gcc_region", b, 8, 1, nb, n);
      measure_seq ("gcc_cycle", 4096, 4096, 1, nb, n);
      static const char *const wname[] = { "2sync", "1sync", "event", "bsync", "flag", "2flag" };
      int have_flag = cuStreamWriteValue32 != NULL;
      void *fh;
      CHECK (cuEventCreate (&ev_nt, 2));             /* DISABLE_TIMING */
      CHECK (cuEventCreate (&ev_bs, 2 | 1));         /* ... | BLOCKING_SYNC */
      CHECK (cuMemHostAlloc (&fh, 64, 0x1 | 0x2)); /* PORTABLE | DEVICEMAP */
      flag_host = fh;
      CHECK (cuMemHostGetDevicePointer (&flag_dev, fh, 0));
      if (have_flag
	  && cuStreamWriteValue32 (nb, flag_dev, 0, 0) == 0 && cuStreamSynchronize (nb) == 0)
	measure ("d2h8_flag", D2H8_FLAG, nb, n / 5 + 1);
      else
	have_flag = 0, printf ("# no cuStreamWriteValue32_v2: the flag rows are left out\n");
      for (int rep = 0; rep < 3; rep++)
	for (enum wait w = W_2SYNC; w <= W_2FLAG; w++)
	  {
	    char name[64];
	    if ((w == W_FLAG || w == W_2FLAG) && !have_flag)
	      continue;
	    wait_how = w;
	    if (rep == 0 && w != W_2SYNC && w != W_1SYNC && w != W_2FLAG)
	      {
		snprintf (name, sizeof name, "gcc_wait_%s_empty", wname[w]);
		measure (name, WAIT_EMPTY, nb, n / 5 + 1);
	      }
	    seq_up = rep == 0 ? 8 : rep == 1 ? 4096 : 65536;
	    snprintf (name, sizeof name, "gcc_wait_%s_%zuB", wname[w], seq_up);
	    measure (name, WAIT_REGION, nb, n / 5 + 1);
	  }
    }
  else
    printf ("# no GCC_PTX given: the gcc_* rows are left out\n");
  if (only && !strcmp (only, "gcc"))
    return 0;

revoff:;
  CUmodule rmod;
  void *mb;
  pthread_t th;
  CHECK (cuModuleLoadData (&rmod, rev_ptx));
  CHECK (cuMemHostAlloc (&mb, 64, 0x1 | 0x2)); /* PORTABLE | DEVICEMAP */
  mailbox = mb;
  *mailbox = 0;
  if (pthread_create (&th, NULL, responder, NULL))
    {
      printf ("ERROR pthread_create\n");
      return 1;
    }
  measure_rev ("revoff_flag", rmod, nb, 0);
  measure_rev ("revoff_protocol", rmod, nb, 1);
  CUmodule gmod;
  CHECK (cuModuleLoadData (&gmod, rev_gcc_ptx));
  measure_rev ("revoff_gcc", gmod, nb, 0);
  measure_rev ("revoff_gcc_vspin", gmod, nb, 1);
  static const char *const real[][2] = { { "GCC_REV_PTX", "revoff_gcc_real" },
					   { "GCC_REV_VSPIN_PTX", "revoff_gcc_real_vspin" },
					   { "GCC_REV_ACQREL_PTX", "revoff_gcc_real_acqrel" } };
  const char *entry = getenv ("GCC_REV_ENTRY");
  for (size_t i = 0; i < sizeof real / sizeof real[0]; i++)
    {
      const char *file = getenv (real[i][0]);
      if (file && *file)
	measure_rev_real (real[i][1], file, entry ? entry : "round_trips$_omp_fn$0", nb);
    }
  /* REV_DELAYS="50 100 ...": the scoped form's row again with the responder answering
     that many ns after it sees each request.  */
  const char *delays = getenv ("REV_DELAYS"), *acq = getenv ("GCC_REV_ACQREL_PTX");
  for (char *d = (char *) delays, *end; acq && *acq && d && *d; d = end)
    {
      long ns = strtol (d, &end, 10);
      if (end == d)
	break;
      char name[64];
      snprintf (name, sizeof name, "revoff_gcc_real_acqrel_delay%ld", ns);
      responder_delay_ns = ns;
      measure_rev_real (name, acq, entry ? entry : "round_trips$_omp_fn$0", nb);
    }
  responder_delay_ns = 0;
  responder_stop = 1;
  pthread_join (th, NULL);
  return 0;
}
