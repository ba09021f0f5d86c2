/* host_lock.c - GPU-less check of the plugin's own C API (gomp_nvptx_host_lock/unlock):
 * dlopen the plugin given as argv[1], look both functions up, and call them on a buffer.
 * Without a usable driver or device both must fail cleanly (nonzero, a "libgomp:"
 * message on stderr), never crash. Prints "lock=RC unlock=RC null=RC". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IONBF, 0);
  if (argc < 2)
    return 2;
  void *h = dlopen (argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!h)
    {
      printf ("dlopen: %s\n", dlerror ());
      return 1;
    }
  int (*lock) (void *, size_t, int) = (int (*) (void *, size_t, int)) dlsym (h, "gomp_nvptx_host_lock");
  int (*unlock) (void *, int) = (int (*) (void *, int)) dlsym (h, "gomp_nvptx_host_unlock");
  if (!lock || !unlock)
    {
      printf ("missing symbols\n");
      return 1;
    }
  char *buf = malloc (1 << 20);
  int l = lock (buf, 1 << 20, 0);
  int u = unlock (buf, 0);
  int n = lock (NULL, 0, 0);
  printf ("lock=%d unlock=%d null=%d\n", l, u, n);
  free (buf);
  return 0;
}
