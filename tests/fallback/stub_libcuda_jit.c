/* stub_libcuda_jit.c - the JIT link and modules of the stand-in libcuda.so.1, built
 * with stub_libcuda_2dev.c (devices, contexts, memory) and stub_libcuda_rest.c (the
 * rest) for the GPU-less tests of image loading and the linked-image cache
 * (nvptx/tests/link_cache.rs).
 *
 * The "JIT" links PTX text into a deterministic stand-in cubin: the names of the
 * `.entry` kernels of every input, in order, behind a magic line and followed by an
 * FNV-1a hash of the inputs' bytes:
 *     "STUBCUBIN1 <count>\n" then "<name>\n" per kernel, then "fnv <16 hex>\n", NUL.
 * cuModuleLoadData accepts only such a blob whose names and hash line are intact (so a
 * damaged cached cubin is refused with CUDA_ERROR_INVALID_IMAGE, as a real driver
 * refuses a damaged ELF); functions are looked up by name; globals do not exist.
 * Every call needs a current context (cuCtxGetCurrent of stub_libcuda_2dev.c).
 *
 * Counters for the tests: stub_libcuda_jit_stats (links created, inputs added, links
 * completed, modules loaded, modules alive, images refused; the CU_JIT_SPLIT_COMPILE
 * value of the last link created, 0 without it; links refused).
 *
 * env STUB_LIBCUDA_REFUSE_SPLIT=1: cuLinkCreate refuses CU_JIT_SPLIT_COMPILE with
 * CUDA_ERROR_INVALID_VALUE, as a driver that does not know the option would.
 *
 * env STUB_LIBCUDA_LINK_BARRIER=PATH:N: cuLinkComplete waits (up to 20 s) until N
 * processes have reached it (each creates PATH.<pid>), so that N processes finish
 * their links, and store their results, at the same time. */
#define _GNU_SOURCE
#include <dirent.h>
#include <libgen.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;

enum {
  OK = 0,
  INVALID_VALUE = 1,
  INVALID_CONTEXT = 201,
  INVALID_IMAGE = 200,
  INVALID_HANDLE = 400,
  NOT_FOUND = 500,
};

#define JIT_INPUT_PTX 1
#define MAGIC "STUBCUBIN1 "

CUresult cuCtxGetCurrent (void **pctx);

struct stub_libcuda_jit_stats {
  int64_t links;          /* cuLinkCreate */
  int64_t inputs;         /* cuLinkAddData */
  int64_t completes;      /* cuLinkComplete */
  int64_t loads;          /* cuModuleLoadData that succeeded */
  int64_t live_modules;
  int64_t refused_images; /* cuModuleLoadData of something not a stand-in cubin */
  int64_t split;          /* CU_JIT_SPLIT_COMPILE of the last link created, 0: none */
  int64_t refused_links;  /* cuLinkCreate refused (STUB_LIBCUDA_REFUSE_SPLIT) */
};

#define JIT_SPLIT_COMPILE 34

struct link {
  char *names;       /* "name\n" per kernel */
  size_t names_len;
  int count;
  uint64_t fnv;
  char *cubin;       /* after cuLinkComplete, freed with the link */
};

struct module {
  char *names;       /* "name\n" per kernel */
  int count;
};

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stub_libcuda_jit_stats jit;

static int have_ctx (void)
{
  void *c = NULL;
  return cuCtxGetCurrent (&c) == OK && c != NULL;
}

static uint64_t fnv1a (uint64_t h, const void *p, size_t n)
{
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 0x100000001b3ULL;
  return h;
}

static int ident (char c)
{
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'
         || c == '$' || c == '.';
}

CUresult cuLinkCreate_v2 (unsigned nopt, int *opts, void **vals, void **state)
{
  if (!state || (nopt && (!opts || !vals)))
    return INVALID_VALUE;
  if (!have_ctx ())
    return INVALID_CONTEXT;
  int64_t split = 0;
  for (unsigned i = 0; i < nopt; i++)
    if (opts[i] == JIT_SPLIT_COMPILE)
      {
        const char *r = getenv ("STUB_LIBCUDA_REFUSE_SPLIT");
        if (r && strcmp (r, "1") == 0)
          {
            pthread_mutex_lock (&jit_lock);
            jit.refused_links++;
            pthread_mutex_unlock (&jit_lock);
            return INVALID_VALUE;
          }
        split = (int64_t) (uintptr_t) vals[i];
      }
  struct link *l = calloc (1, sizeof *l);
  l->fnv = 0xcbf29ce484222325ULL;
  l->names = strdup ("");
  *state = l;
  pthread_mutex_lock (&jit_lock);
  jit.links++;
  jit.split = split;
  pthread_mutex_unlock (&jit_lock);
  return OK;
}

CUresult cuLinkAddData_v2 (void *state, int type, void *data, size_t size, const char *name,
                           unsigned nopt, int *opts, void **vals)
{
  (void) name, (void) opts, (void) vals;
  struct link *l = state;
  if (!l || !data || size == 0 || type != JIT_INPUT_PTX || nopt)
    return INVALID_VALUE;
  const char *t = data;
  l->fnv = fnv1a (l->fnv, &size, sizeof size);
  l->fnv = fnv1a (l->fnv, t, size);
  for (const char *p = t; (p = memmem (p, size - (p - t), ".entry", 6)) != NULL; p += 6)
    {
      const char *q = p + 6;
      while (q < t + size && (*q == ' ' || *q == '\t'))
        q++;
      const char *e = q;
      while (e < t + size && ident (*e))
        e++;
      if (e == q)
        continue;
      l->names = realloc (l->names, l->names_len + (e - q) + 2);
      memcpy (l->names + l->names_len, q, e - q);
      l->names_len += e - q;
      l->names[l->names_len++] = '\n';
      l->names[l->names_len] = 0;
      l->count++;
    }
  pthread_mutex_lock (&jit_lock);
  jit.inputs++;
  pthread_mutex_unlock (&jit_lock);
  return OK;
}

/* STUB_LIBCUDA_LINK_BARRIER: see the header. */
static void barrier (void)
{
  const char *v = getenv ("STUB_LIBCUDA_LINK_BARRIER");
  const char *colon = v ? strrchr (v, ':') : NULL;
  if (!colon)
    return;
  int n = atoi (colon + 1);
  char path[4096];
  snprintf (path, sizeof path, "%.*s", (int) (colon - v), v);
  char mine[4200];
  snprintf (mine, sizeof mine, "%s.%d", path, (int) getpid ());
  FILE *f = fopen (mine, "w");
  if (f)
    fclose (f);
  char dir_buf[4096], base_buf[4096];
  snprintf (dir_buf, sizeof dir_buf, "%s", path);
  snprintf (base_buf, sizeof base_buf, "%s", path);
  const char *dir = dirname (dir_buf), *base = basename (base_buf);
  size_t blen = strlen (base);
  for (int waited = 0; waited < 20000; waited++)
    {
      int seen = 0;
      DIR *d = opendir (dir);
      struct dirent *e;
      while (d && (e = readdir (d)) != NULL)
        if (!strncmp (e->d_name, base, blen) && e->d_name[blen] == '.')
          seen++;
      if (d)
        closedir (d);
      if (seen >= n)
        return;
      struct timespec ms = {0, 1000000};
      nanosleep (&ms, NULL);
    }
  fprintf (stderr, "stub libcuda: link barrier %s: fewer than %d processes came\n", path, n);
}

CUresult cuLinkComplete (void *state, void **cubin, size_t *size)
{
  struct link *l = state;
  if (!l || !cubin || !size)
    return INVALID_VALUE;
  barrier ();
  free (l->cubin);
  size_t n = strlen (MAGIC) + 24 + l->names_len + 32;
  l->cubin = malloc (n);
  int w = snprintf (l->cubin, n, MAGIC "%d\n%sfnv %016llx\n", l->count, l->names,
                    (unsigned long long) l->fnv);
  *cubin = l->cubin;
  *size = (size_t) w + 1;
  pthread_mutex_lock (&jit_lock);
  jit.completes++;
  pthread_mutex_unlock (&jit_lock);
  return OK;
}

CUresult cuLinkDestroy (void *state)
{
  struct link *l = state;
  if (!l)
    return INVALID_HANDLE;
  free (l->names);
  free (l->cubin);
  free (l);
  return OK;
}

/* The names of an intact stand-in cubin (a malloc'd copy), or NULL. */
static char *parse_cubin (const char *img, int *count)
{
  if (strncmp (img, MAGIC, strlen (MAGIC)))
    return NULL;
  char *end;
  long n = strtol (img + strlen (MAGIC), &end, 10);
  if (*end != '\n' || n < 0)
    return NULL;
  const char *names = end + 1, *p = names;
  for (long i = 0; i < n; i++)
    {
      const char *nl = strchr (p, '\n');
      if (!nl || nl == p)
        return NULL;
      for (const char *c = p; c < nl; c++)
        if (!ident (*c))
          return NULL;
      p = nl + 1;
    }
  unsigned long long h;
  int used = 0;
  if (sscanf (p, "fnv %16llx\n%n", &h, &used) != 1 || used != 21 || p[used] != 0)
    return NULL;
  *count = (int) n;
  return strndup (names, p - names);
}

CUresult cuModuleLoadData (void **module, const void *image)
{
  if (!module || !image)
    return INVALID_VALUE;
  if (!have_ctx ())
    return INVALID_CONTEXT;
  int count = 0;
  char *names = parse_cubin (image, &count);
  if (!names)
    {
      fprintf (stderr, "stub libcuda: cuModuleLoadData: not a stand-in cubin\n");
      pthread_mutex_lock (&jit_lock);
      jit.refused_images++;
      pthread_mutex_unlock (&jit_lock);
      return INVALID_IMAGE;
    }
  struct module *m = calloc (1, sizeof *m);
  m->names = names;
  m->count = count;
  *module = m;
  pthread_mutex_lock (&jit_lock);
  jit.loads++;
  jit.live_modules++;
  pthread_mutex_unlock (&jit_lock);
  return OK;
}

CUresult cuModuleUnload (void *module)
{
  struct module *m = module;
  if (!m)
    return INVALID_HANDLE;
  free (m->names);
  free (m);
  pthread_mutex_lock (&jit_lock);
  jit.live_modules--;
  pthread_mutex_unlock (&jit_lock);
  return OK;
}

/* A function handle is the address of the name's line inside the module. */
CUresult cuModuleGetFunction (void **f, void *module, const char *name)
{
  struct module *m = module;
  if (!f || !m || !name)
    return INVALID_VALUE;
  size_t n = strlen (name);
  for (char *p = m->names; *p; p = strchr (p, '\n') + 1)
    if (!strncmp (p, name, n) && p[n] == '\n')
      {
        *f = p;
        return OK;
      }
  return NOT_FOUND;
}

CUresult cuModuleGetGlobal_v2 (unsigned long long *dptr, size_t *bytes, void *module,
                               const char *name)
{
  (void) dptr, (void) bytes;
  return module && name ? NOT_FOUND : INVALID_VALUE;
}

/* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK 1024, NUM_REGS 32, everything else 0. */
CUresult cuFuncGetAttribute (int *v, int attr, void *f)
{
  if (!v || !f)
    return INVALID_VALUE;
  *v = attr == 0 ? 1024 : attr == 4 ? 32 : 0;
  return OK;
}

CUresult cuFuncSetAttribute (void *f, int attr, int v)
{
  (void) attr, (void) v;
  return f ? OK : INVALID_VALUE;
}

int stub_libcuda_jit_stats (struct stub_libcuda_jit_stats *out)
{
  pthread_mutex_lock (&jit_lock);
  *out = jit;
  pthread_mutex_unlock (&jit_lock);
  return 0;
}
