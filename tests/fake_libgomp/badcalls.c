/* badcalls.c - calls the plugin's entry points the wrong way (devices that do not
 * exist or were never initialised, NULL and garbage pointers, an image of a newer
 * device version) in a process without a GPU, and checks each answers with libgomp's
 * error convention (false / NULL / -1 / 0) instead of crashing.  Prints one line per
 * call, "ok" or "WRONG", and exits non-zero if any answer was wrong.  Each call is also
 * expected to print a "libgomp: ..." message, which tests/libgomp_versions.sh checks. */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

static int wrong;
#define CHECK(what, cond) \
  do { int ok_ = (cond); printf ("%s: %s\n", ok_ ? "ok" : "WRONG", what); wrong += !ok_; } while (0)

int main (int argc, char **argv)
{
  if (argc < 2 || !dlopen ("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL))
    return 2;
  void *p = dlopen (argv[1], RTLD_LAZY);
  if (!p)
    return 2;
#define SYM(type, name) __typeof__ (type) name = (__typeof__ (type)) dlsym (p, "GOMP_OFFLOAD_" #name); if (!name) return 2
  SYM (int (*) (unsigned), get_num_devices);
  SYM (bool (*) (int), init_device);
  SYM (bool (*) (int), fini_device);
  SYM (void *(*) (int, size_t), alloc);
  SYM (bool (*) (int, void *), free);
  SYM (bool (*) (int, void *, const void *, size_t), host2dev);
  SYM (bool (*) (int, void *, const void *, size_t), dev2host);
  SYM (bool (*) (int, void *, int, size_t), memset);
  SYM (int (*) (int, unsigned, const void *, void **, uint64_t **, uint64_t *), load_image);
  SYM (bool (*) (int, unsigned, const void *), unload_image);
  SYM (const char *(*) (int), get_uid);
  SYM (bool (*) (void **, size_t), page_locked_host_alloc);
  SYM (int (*) (int, const void *, size_t), is_accessible_ptr);
  char buf[64];
  void *table = 0;
  CHECK ("get_num_devices without libcuda is 0", get_num_devices (0) == 0);
  CHECK ("init_device of a missing device is false", !init_device (3));
  CHECK ("fini_device of a device never opened is true", fini_device (0));
  CHECK ("alloc on an unopened device is NULL", alloc (0, 64) == NULL);
  CHECK ("free on an unopened device is false", !free (0, buf));
  CHECK ("host2dev on an unopened device is false", !host2dev (0, buf, buf, 8));
  CHECK ("dev2host on an unopened device is false", !dev2host (0, buf, buf, 8));
  CHECK ("memset on an unopened device is false", !memset (0, buf, 0, 8));
  CHECK ("load_image of a newer device version is -1", load_image (0, 0x30002, buf, &table, 0, 0) == -1);
  CHECK ("load_image with no descriptor is -1", load_image (0, 0x30001, 0, &table, 0, 0) == -1);
  CHECK ("unload_image of an unknown image is false", !unload_image (0, 0x30001, buf));
  CHECK ("get_uid of a missing device is NULL", get_uid (7) == NULL);
  void *pinned = buf;
  CHECK ("page_locked_host_alloc without a device is false", !page_locked_host_alloc (&pinned, 4096));
  CHECK ("is_accessible_ptr on an unopened device is 0", is_accessible_ptr (0, buf, 8) == 0);
  return wrong ? 1 : 0;
}
