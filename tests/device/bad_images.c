/* bad_images.c - corrupt and incomplete offload images given to the plugin's
 * GOMP_OFFLOAD_load_image on a real device. Loads libgomp.so.1 (for the
 * GOMP_PLUGIN_* functions the plugin calls) and the plugin found on the library path,
 * opens device 0 and checks that each bad image is refused with libgomp's convention
 * (-1 and a libgomp: message), that a good image then loads and unloads, and that the
 * device still copies data correctly afterwards.  Prints "ok"/"WRONG" per call and
 * "OK ..." or "FAIL ..." last; exits 1 on any wrong answer. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct ptx_obj { const char *code; size_t size; };
struct fn_entry { const char *name; unsigned short dim[3]; };
struct tdata {                       /* the nvptx image descriptor (GCC 14+ layout) */
  const struct ptx_obj *ptx_objs; unsigned ptx_num;
  const char *const *var_names; unsigned var_num;
  const struct fn_entry *fn_names; unsigned fn_num;
  unsigned ind_fn_num;
};
struct addr_pair { uintptr_t start, end; };

static const char good_ptx[] =
  ".version 7.0\n.target sm_70\n.address_size 64\n"
  ".visible .global .align 4 .u32 counter;\n"
  ".visible .entry kern(.param .u64 p)\n{\n\tret;\n}\n";

static int wrong;
#define CHECK(what, cond) \
  do { int ok_ = (cond); printf ("%s: %s\n", ok_ ? "ok" : "WRONG", what); fflush (stdout); wrong += !ok_; } while (0)

int main (void)
{
  if (!dlopen ("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL))
    { printf ("FAIL cannot load libgomp.so.1: %s\n", dlerror ()); return 2; }
  void *p = dlopen ("libgomp-plugin-nvptx.so.1", RTLD_NOW);
  if (!p)
    { printf ("FAIL cannot load the plugin: %s\n", dlerror ()); return 2; }
#define SYM(type, name) __typeof__ (type) name = (__typeof__ (type)) dlsym (p, "GOMP_OFFLOAD_" #name); \
  if (!name) { printf ("FAIL no GOMP_OFFLOAD_" #name "\n"); return 2; }
  SYM (unsigned (*) (void), version);
  SYM (int (*) (unsigned), get_num_devices);
  SYM (bool (*) (int), init_device);
  SYM (bool (*) (int), fini_device);
  SYM (void *(*) (int, size_t), alloc);
  SYM (bool (*) (int, void *), free);
  SYM (bool (*) (int, void *, const void *, size_t), host2dev);
  SYM (bool (*) (int, void *, const void *, size_t), dev2host);
  SYM (int (*) (int, unsigned, const void *, struct addr_pair **, uint64_t **, uint64_t *), load_image);
  SYM (bool (*) (int, unsigned, const void *), unload_image);
  unsigned lib = version ();
  unsigned v = lib << 16 | 1;   /* GOMP_VERSION_PACK (libgomp's, NVIDIA_PTX) */
  if (get_num_devices (0) < 1 || !init_device (0))
    { printf ("FAIL no usable device 0\n"); return 2; }

  struct addr_pair *table = NULL;
  const struct fn_entry kern = { "kern", { 0, 0, 0 } }, missing_fn = { "no_such_kernel", { 0, 0, 0 } };
  const char *counter = "counter", *missing_var = "no_such_variable";
  struct ptx_obj good = { good_ptx, sizeof good_ptx };
  static const char garbage[] = "this is not PTX at all \x01\x02\x03";
  struct ptx_obj bad_text = { garbage, sizeof garbage };
  char truncated[sizeof good_ptx];
  memcpy (truncated, good_ptx, sizeof good_ptx / 2);
  truncated[sizeof good_ptx / 2] = 0;
  struct ptx_obj cut = { truncated, sizeof good_ptx / 2 + 1 };
  char unterminated[16];
  memset (unterminated, 'x', sizeof unterminated);
  struct ptx_obj no_nul = { unterminated, sizeof unterminated };

  struct tdata d_good = { &good, 1, &counter, 1, &kern, 1, 0 };
  struct tdata d;
  d = d_good;
  CHECK ("image of a newer device version is refused", load_image (0, lib << 16 | 9, &d, &table, NULL, NULL) == -1);
  CHECK ("NULL image data is refused", load_image (0, v, NULL, &table, NULL, NULL) == -1);
  d = d_good; d.ptx_objs = &bad_text;
  CHECK ("garbage PTX text is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  d = d_good; d.ptx_objs = &cut;
  CHECK ("truncated PTX text is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  d = d_good; d.ptx_objs = &no_nul;
  CHECK ("PTX object without its terminating NUL is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  d = d_good; d.ptx_num = 0;
  CHECK ("image with no PTX object is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  /* Kernels are looked up by the load (unless GOMP_NVPTX_TUNE=lazykernels=1, never
     for a program using reverse offload, whose load asks for the reverse-offload
     table): both refuse an image naming a kernel its PTX lacks. */
  uint64_t *rev = NULL;
  d = d_good; d.fn_names = &missing_fn;
  CHECK ("kernel missing from the PTX is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  CHECK ("kernel missing from the PTX is refused by a reverse-offload load",
         load_image (0, v, &d, &table, &rev, NULL) == -1);
  d = d_good; d.var_names = &missing_var;
  CHECK ("variable missing from the PTX is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  d = d_good; d.fn_num = 1u << 30;
  CHECK ("absurd kernel count is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);
  d = d_good; d.fn_names = NULL;
  CHECK ("NULL kernel table with a nonzero count is refused", load_image (0, v, &d, &table, NULL, NULL) == -1);

  table = NULL;
  int n = load_image (0, v, &d_good, &table, NULL, NULL);
  CHECK ("the good image loads after the bad ones", n >= 2 && table && table[0].start && table[1].start);
  if (n >= 2 && table)
    CHECK ("the variable's entry spans its 4 bytes", table[1].end - table[1].start == 4);
  CHECK ("the good image unloads", unload_image (0, v, &d_good));

  char buf[4096], back[4096];
  for (unsigned i = 0; i < sizeof buf; i++)
    buf[i] = (char) (i * 7 + 1);
  void *dp = alloc (0, sizeof buf);
  CHECK ("device memory still allocates", dp != NULL);
  CHECK ("and copies both ways", dp && host2dev (0, dp, buf, sizeof buf)
	 && dev2host (0, back, dp, sizeof buf) && !memcmp (buf, back, sizeof buf));
  CHECK ("and frees", dp && free (0, dp));
  CHECK ("the device closes", fini_device (0));
  printf (wrong ? "FAIL %d wrong answer(s)\n" : "OK every bad image refused, device still usable\n", wrong);
  return wrong != 0;
}
