/* nvtx_ranges.c - the plugin's NVTX ranges on a GPU, checked with the project's own
 * NVTX tool (tests/fixtures/nvtx/inject.c, built by tests/device/build.sh into
 * CARRY_DIR/nvtx/libnvtx-inject.so), as nvptx/tests/nvtx.rs checks them on the
 * stand-in libcuda. Built with -g (nvtx_ranges.cflags): the kernels' names carry
 * this file's lines.
 *
 * Before its first target region the program names the tool in NVTX_INJECTION64_PATH
 * (beside its own directory: ../nvtx/; the directory of argv[0], not of /proc/self/exe,
 * which is the dynamic loader when tests/device/run.sh starts the test through the
 * bundle's ld.so) and the tool's log in NVTX_FIXTURE_LOG; the
 * plugin reads both at its first use. Then: two target regions, a nowait region, a
 * target update both ways, an OpenACC-free reverse-offload call (`device(ancestor:
 * 1)`), and at the end it reads the log and checks the lines below, printing "NVTX OK"
 * or "NVTX FAIL: <what is missing>". Ours only: the stock plugin emits no NVTX
 * (its run fails the expect file; that is its expected verdict). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma omp requires reverse_offload

#define LOG "/tmp/gomp_nvtx_ranges.log"
#define N 4096

static int host_calls;

/* Host only: the reverse-offload call's work (a static of the host, as
   tests/device/revoff_nested.c does).  */
static void note_call (void)
{
  host_calls++;
}

static char *slurp (const char *path)
{
  FILE *f = fopen (path, "r");
  if (!f)
    return NULL;
  static char buf[1 << 20];
  size_t n = fread (buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  fclose (f);
  return buf;
}

static int want (const char *log, const char *line)
{
  if (log && strstr (log, line))
    return 1;
  printf ("NVTX FAIL: no line containing \"%s\"\n", line);
  return 0;
}

int main (int argc, char **argv)
{
  char exe[4096], tool[4200];
  if (argc < 1 || !realpath (argv[0], exe))
    return 2;
  *strrchr (exe, '/') = 0;
  snprintf (tool, sizeof tool, "%s/../nvtx/libnvtx-inject.so", exe);
  unlink (LOG);
  setenv ("NVTX_INJECTION64_PATH", tool, 1);
  setenv ("NVTX_FIXTURE_LOG", LOG, 1);

  static double a[N];
  double x = 1;
  for (int i = 0; i < N; i++)
    a[i] = i;
#pragma omp target map(tofrom: a)
  for (int i = 0; i < N; i++)
    a[i] *= 2;
#pragma omp target map(tofrom: x)
  x += 1;
#pragma omp target enter data map(to: a)
#pragma omp target nowait
  for (int i = 0; i < N; i++)
    a[i] += 1;
#pragma omp taskwait
#pragma omp target update from(a)
  a[0] = 42;
#pragma omp target update to(a)
#pragma omp target map(tofrom: x)
  {
#pragma omp target device(ancestor: 1)
    note_call ();
  }
#pragma omp target exit data map(delete: a)

  char *log = slurp (LOG);
  int ok = 1;
  /* Line numbers: of the constructs above (the kernels' smallest source line). */
  ok &= want (log, "init ok");
  ok &= want (log, "domain libgomp");
  ok &= want (log, "category 1 omp target");
  ok &= want (log, "push cat=8 payload=");
  ok &= want (log, "load image (");
  ok &= want (log, "push cat=1 payload=- main: omp target #0 (nvtx_ranges.c:");
  ok &= want (log, "push cat=1 payload=- main: omp target #1 (nvtx_ranges.c:");
  ok &= want (log, "push cat=2 payload=- main: omp target #2 (nvtx_ranges.c:");
  ok &= want (log, "start id=");
  ok &= want (log, " end id=");
  ok &= want (log, "push cat=7 payload=32768 h2d ");
  ok &= want (log, "push cat=7 payload=32768 d2h ");
  ok &= want (log, "push cat=9 payload=");
  ok &= want (log, "push cat=10 payload=");
  ok &= want (log, "reverse offload");
  ok &= want (log, "stream thread lane 0");
  ok &= want (log, "stream nowait stream 0");
  ok &= want (log, "thread libgomp nvptx: nvptx0-completion");
  ok &= want (log, "thread libgomp nvptx: nvptx0-reverse");
  if (log && strstr (log, "BAD"))
    {
      printf ("NVTX FAIL: the tool saw a call that breaks the ABI's rules\n");
      ok = 0;
    }
  printf ("results: a[0]=%g a[1]=%g x=%g host_calls=%d\n", a[0], a[1], x, host_calls);
  if (a[0] != 42 || a[1] != 3 || x != 2 || host_calls != 1)
    {
      printf ("NVTX FAIL: wrong results\n");
      ok = 0;
    }
  if (ok)
    printf ("NVTX OK\n");
  return ok ? 0 : 1;
}
