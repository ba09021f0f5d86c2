/* gcn_calls.c - drives our gcn plugin's entry points against the stand-in HSA runtime
 * (stub_libhsa.c built with -DONE_GPU="gfx90a"; run with HSA_RUNTIME_LIB naming it): device open, alloc, copies with data checks,
 * memset, is_accessible_ptr, free, load_image of real GCC 16 images (the descriptor
 * mkoffload emits, built here) and unload_image, plus bad calls that must answer with
 * libgomp's error convention (each also prints a "libgomp: ..." message, which
 * tests/host_fallback.sh checks). The stand-in serves memory from host memory and
 * executables from fake addresses: this checks the plugin's HSA call sequence and
 * bookkeeping, not behaviour on an AMD GPU.  Prints one line per check, "ok" or
 * "WRONG", and exits non-zero if any was wrong.
 * usage: gcn_calls PLUGIN STUB_LIBHSA VADD_GFX90A VADD_GFX908 VARS_GFX90A */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int wrong;
#define CHECK(what, cond) \
  do { int ok_ = (cond); printf ("%s: %s\n", ok_ ? "ok" : "WRONG", what); fflush (stdout); wrong += !ok_; } while (0)

/* libgomp/plugin/plugin-gcn.c's descriptor as mkoffload emits it (gcn/src/image/descriptor.rs). */
struct gcn_image { size_t size; void *image; };
struct kernel { const char *name; int oacc_dims[3]; int sgpr_count, vgpr_count; };
struct gcn_image_desc {
  const struct gcn_image *gcn_image; unsigned kernel_count; const struct kernel *kernel_infos;
  unsigned ind_func_count, global_variable_count;
};
struct addr_pair { uintptr_t start, end; };

static struct gcn_image slurp (const char *path)
{
  struct gcn_image g = {0, 0};
  FILE *f = fopen (path, "rb");
  if (!f) { perror (path); exit (2); }
  fseek (f, 0, SEEK_END); g.size = ftell (f); rewind (f);
  g.image = malloc (g.size);
  if (fread (g.image, 1, g.size, f) != g.size) exit (2);
  fclose (f);
  return g;
}

int main (int argc, char **argv)
{
  if (argc < 6 || !dlopen ("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL))
    return 2;
  void *p = dlopen (argv[1], RTLD_LAZY);
  if (!p)
    return 2;
#define SYM(type, name) __typeof__ (type) name = (__typeof__ (type)) dlsym (p, "GOMP_OFFLOAD_" #name); if (!name) return 2
  SYM (unsigned (*) (void), version);
  SYM (int (*) (unsigned), get_num_devices);
  SYM (bool (*) (int), init_device);
  SYM (bool (*) (int), fini_device);
  SYM (void *(*) (int, size_t), alloc);
  SYM (bool (*) (int, void *), free);
  SYM (bool (*) (int, void *, const void *, size_t), host2dev);
  SYM (bool (*) (int, void *, const void *, size_t), dev2host);
  SYM (bool (*) (int, void *, const void *, size_t), dev2dev);
  SYM (bool (*) (int, void *, int, size_t), memset);
  SYM (int (*) (int, const void *, size_t), is_accessible_ptr);
  SYM (int (*) (int, unsigned, const void *, struct addr_pair **, uint64_t **, uint64_t *), load_image);
  SYM (bool (*) (int, unsigned, const void *), unload_image);
  SYM (bool (*) (void *), can_run);
  CHECK ("version is libgomp 16's GOMP_VERSION", version () == 3);
  CHECK ("get_num_devices finds the stand-in's one GPU agent", get_num_devices (0) == 1);
  /* The stand-in is already loaded (by the plugin): its counters and variables. */
  void *stub = dlopen (argv[2], RTLD_LAZY | RTLD_NOLOAD);
  int *live = stub ? dlsym (stub, "stub_hsa_live") : NULL;
  /* Where the stand-in loaded a symbol of the last image that has it. */
  uint64_t (*loaded_at) (const char *) = stub ? (uint64_t (*) (const char *)) dlsym (stub, "stub_hsa_image_symbol") : NULL;
  if (!live || !loaded_at)
    return 2;

  /* Device open. */
  CHECK ("alloc before init_device is NULL", alloc (0, 64) == NULL);
  CHECK ("init_device 0", init_device (0));
  CHECK ("init_device 0 again is false (already open)", !init_device (0));
  CHECK ("init_device of a device that does not exist is false", !init_device (1));

  /* Memory. */
  enum { N = 4096 };
  unsigned char in[N], out[N];
  for (int i = 0; i < N; i++) in[i] = i * 7 + 1;
  unsigned char *d = alloc (0, N), *e = alloc (0, N), *z = alloc (0, 0);
  CHECK ("alloc 4096, 4096 and 0 bytes: three distinct blocks", d && e && z && d != e && z != d && z != e);
  CHECK ("the runtime holds three blocks", live[0] == 3);
  CHECK ("host2dev 4096 bytes", host2dev (0, d, in, N));
  for (int i = 0; i < N; i++) out[i] = 0; /* (memset and free here are the plugin's) */
  CHECK ("dev2host 4096 bytes", dev2host (0, out, d, N));
  CHECK ("round trip: the data came back", !memcmp (in, out, N));
  CHECK ("memset 1000 bytes at offset 100 to 0x5a", memset (0, d + 100, 0x15a, 1000));
  CHECK ("dev2dev 4096 bytes", dev2dev (0, e, d, N));
  CHECK ("dev2host of the copy", dev2host (0, out, e, N));
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= out[i] == (i >= 100 && i < 1100 ? 0x5a : in[i]);
  CHECK ("memset wrote exactly its bytes (low byte of the value), dev2dev copied all", ok);
  CHECK ("copies of 0 bytes succeed", host2dev (0, d, in, 0) && dev2host (0, out, d, 0) && memset (0, d, 0, 0));
  CHECK ("is_accessible_ptr of a device block is 1", is_accessible_ptr (0, d, N) == 1);
  CHECK ("is_accessible_ptr past the block's end is 0", is_accessible_ptr (0, d, N + 1) == 0);
  CHECK ("is_accessible_ptr of host memory on a base-profile agent is 0", is_accessible_ptr (0, in, 8) == 0);
  CHECK ("host2dev past a block's end is false", !host2dev (0, d + 8, in, N));
  CHECK ("dev2host into NULL is false", !dev2host (0, NULL, d, 8));
  CHECK ("memset of NULL is false", !memset (0, NULL, 0, 8));
  CHECK ("free of a block", free (0, d));
  CHECK ("double free is false", !free (0, d));
  CHECK ("free of an address inside a block is false", !free (0, e + 8));
  CHECK ("free of NULL is true", free (0, NULL));
  CHECK ("free of the 0-byte block", free (0, z));
  CHECK ("the runtime holds one block (the one left for fini_device)", live[0] == 1);
  CHECK ("alloc on a device that does not exist is NULL", alloc (5, 8) == NULL);
  CHECK ("free on a device that does not exist is false", !free (5, e));

  /* Images: the descriptor mkoffload emits for vadd.c and vars.c (tests/fixtures/gcn). */
  struct gcn_image v90a = slurp (argv[3]), v908 = slurp (argv[4]), vars = slurp (argv[5]);
  static const struct kernel vadd_k[] = { {"_init_array"}, {"_fini_array"}, {"main._omp_fn.0", {0}, 62, 48} };
  static const struct kernel vars_k[] = { {"_init_array"}, {"_fini_array"}, {"zfirst._omp_fn.0"}, {"main._omp_fn.0"} };
  static const struct kernel bad_k[] = { {"_init_array"}, {"nosuch._omp_fn.9"} };
  struct gcn_image_desc dv = {&v90a, 3, vadd_k, 0, 0}, d908 = {&v908, 3, vadd_k, 0, 0},
    dvars = {&vars, 4, vars_k, 0, 2}, dbad = {&v90a, 2, bad_k, 0, 0}, dind = {&v90a, 3, vadd_k, 1, 0};
  const unsigned ver = 0x30003; /* GOMP_VERSION_PACK (GOMP_VERSION, GOMP_VERSION_GCN) */
  struct addr_pair *t = NULL;
  uint64_t *rev = (uint64_t *) 1;
  int n = load_image (0, ver, &dv, &t, &rev, NULL);
  CHECK ("load_image of vadd (gfx90a): 1 kernel + ICV block = 2 entries", n == 2 && t);
  CHECK ("its kernel entry is a handle (start, start+1)", t && t[0].start && t[0].end == t[0].start + 1);
  uint64_t icvs = loaded_at ("__gomp_additional_icvs"), *ftable = (uint64_t *) (uintptr_t) loaded_at (".offload_func_table");
  CHECK ("its last entry is the ICV block (16 bytes)", t && icvs && t[1].start == icvs && t[1].end == t[1].start + 16);
  CHECK ("rev_fn_table is the loaded image's .offload_func_table", rev && ftable && ftable[0] && rev[0] == ftable[0]);
  if (rev != (uint64_t *) 1) ((void (*) (void *)) dlsym (RTLD_DEFAULT, "free")) (rev);
  CHECK ("one executable and one reader live", live[2] == 1 && live[1] == 1);
  void (*libc_free) (void *) = dlsym (RTLD_DEFAULT, "free");
  libc_free (t);
  t = NULL;
  CHECK ("load_image of the same image again is -1", load_image (0, ver, &dv, &t, NULL, NULL) == -1);
  n = load_image (0, ver, &dvars, &t, NULL, NULL);
  CHECK ("load_image of vars: 2 kernels + 2 variables + ICV block = 5 entries", n == 5 && t);
  CHECK ("its kernel handles differ", t && t[0].start != t[1].start && t[1].end == t[1].start + 1);
  uint64_t var_a = loaded_at ("va"), var_b = loaded_at ("vb");
  CHECK ("its variables come from .offload_var_table, in order",
         t && var_a && var_b && t[2].start == var_a && t[2].end == t[2].start + 20
         && t[3].start == var_b && t[3].end == t[3].start + 8);
  CHECK ("its last entry is (0, 0): the image has no ICV block", t && !t[4].start && !t[4].end);
  libc_free (t);
  t = NULL;
  CHECK ("load_image of a gfx908 image on the gfx90a device is -1", load_image (0, ver, &d908, &t, NULL, NULL) == -1);
  CHECK ("load_image naming a kernel the code object has no descriptor for (a reverse-offload stub) loads it",
         load_image (0, ver, &dbad, &t, NULL, NULL) == 2 && t);
  CHECK ("can_run of that kernel is false", t && !can_run ((void *) t[0].start));
  libc_free (t);
  t = NULL;
  CHECK ("unload_image of it", unload_image (0, ver, &dbad));
  CHECK ("load_image of an image with indirect functions is -1 (not implemented)", load_image (0, ver, &dind, &t, NULL, NULL) == -1);
  CHECK ("load_image of a newer device version is -1", load_image (0, 0x30004, &dv, &t, NULL, NULL) == -1);
  CHECK ("load_image on a device that does not exist is -1", load_image (3, ver, &dv, &t, NULL, NULL) == -1);
  CHECK ("failed loads left nothing behind: two executables, two readers", live[2] == 2 && live[1] == 2);
  CHECK ("can_run of an unknown kernel handle is false", !can_run ((void *) 1));
  CHECK ("unload_image of vadd", unload_image (0, ver, &dv));
  CHECK ("unload_image of vadd again is false", !unload_image (0, ver, &dv));
  CHECK ("one executable left", live[2] == 1 && live[1] == 1);

  /* Close: the vars image and the block left are released. */
  CHECK ("fini_device 0", fini_device (0));
  CHECK ("after fini_device nothing is live in the runtime", live[0] == 0 && live[1] == 0 && live[2] == 0);
  CHECK ("fini_device 0 again is true (closing a device that is not open is fine: the framework registry's one rule)", fini_device (0));
  CHECK ("alloc on the closed device is NULL", alloc (0, 8) == NULL);
  CHECK ("init_device 0 after fini_device", init_device (0) && fini_device (0));
  return wrong ? 1 : 0;
}
