/* drive.c - loads libgomp.so.1 (the fake one, found through LD_LIBRARY_PATH) the way a
 * program does, then the plugin the way libgomp does (dlopen by path, RTLD_LAZY), and
 * prints what GOMP_OFFLOAD_version and GOMP_OFFLOAD_get_num_devices answer.
 * usage: drive PLUGIN [MASK]   MASK (default 0) is what get_num_devices finds in its
 * argument register: the requires mask (libgomp 13+), or a leftover (libgomp 12). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main (int argc, char **argv)
{
  if (argc < 2 || !dlopen ("libgomp.so.1", RTLD_NOW | RTLD_GLOBAL))
    {
      fprintf (stderr, "drive: %s\n", dlerror ());
      return 2;
    }
  void *plugin = dlopen (argv[1], RTLD_LAZY);
  if (!plugin)
    {
      fprintf (stderr, "drive: %s\n", dlerror ());
      return 2;
    }
  unsigned (*version) (void) = (unsigned (*) (void)) dlsym (plugin, "GOMP_OFFLOAD_version");
  int (*num) (unsigned) = (int (*) (unsigned)) dlsym (plugin, "GOMP_OFFLOAD_get_num_devices");
  if (!version || !num)
    return 2;
  printf ("version=%u\n", version ());
  printf ("devices=%d\n", num (argc > 2 ? (unsigned) strtoul (argv[2], NULL, 0) : 0));
  return 0;
}
