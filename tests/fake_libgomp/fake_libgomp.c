/* fake_libgomp.c - a stand-in libgomp.so.1 for testing the plugin's libgomp detection
 * without the real libraries of every GCC release.  tests/libgomp_versions.sh links it
 * with a version script that gives it the symbol-version nodes of one release (12, 13,
 * 14, 15, 16, an older one, or an invented newer one), so the plugin's dlvsym probes and
 * version-definition scan see exactly what that release would show.  The GOMP_PLUGIN_*
 * functions behave like libgomp's: messages go to stderr as "libgomp: ...", fatal exits. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void *GOMP_PLUGIN_malloc (size_t n) { void *p = malloc (n ? n : 1); if (!p) abort (); return p; }
void *GOMP_PLUGIN_malloc_cleared (size_t n) { void *p = calloc (1, n ? n : 1); if (!p) abort (); return p; }
void *GOMP_PLUGIN_realloc (void *p, size_t n) { return realloc (p, n); }
void GOMP_PLUGIN_debug (int kind, const char *fmt, ...)
{
  (void) kind;
  if (!getenv ("GOMP_DEBUG"))
    return;
  va_list ap;
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
}
static void report (const char *fmt, va_list ap)
{
  /* One stdio call per message, so that a message from another thread (a queue's
     error callback, say) cannot land between the prefix and the text.  */
  char msg[4096];
  vsnprintf (msg, sizeof msg, fmt, ap);
  fprintf (stderr, "libgomp: %s\n", msg);
}
void GOMP_PLUGIN_error (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  report (fmt, ap);
  va_end (ap);
}
void GOMP_PLUGIN_fatal (const char *fmt, ...)
{
  va_list ap;
  va_start (ap, fmt);
  report (fmt, ap);
  va_end (ap);
  exit (EXIT_FAILURE);
}
void GOMP_PLUGIN_target_task_completion (void *data) { (void) data; }
void GOMP_PLUGIN_target_rev (void) { abort (); }
/* Probe symbols, one per release's newest node, and one for an invented future node. */
void GOMP_alloc (void) {}
void GOMP_teams4 (void) {}
void GOMP_taskwait_depend_nowait (void) {}
void GOMP_add_alloc (void) {}
void omp_get_uid_from_device (void) {}
void omp_target_memset (void) {}
void GOMP_barrier_ext (void) {}
void GOMP_future_entry (void) {}
