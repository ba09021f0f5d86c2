/* trace.c - the stand-in's record of what the device would see, one event per line, to
   the file STUB_HSA_TRACE names (appended; nothing is written when it is unset). Each
   line is flushed at once, so a program that aborts keeps its trace. Addresses are
   written symbolically (memory.c's sym): scripts/gcn-trace normalises and compares the
   traces of two plugins. Events (space-separated key=value after the event name):
     init | shutdown
     queue Q= size= type= callback= data= private= group=     queue-destroy Q=
     alloc B= region=kernarg|coarse size=      assign B= access=      free B=
     fill dst= value= count=    (hsa_amd_memory_fill)
     load I= size= mach= via=reader|deserialize                 define name= addr=
     launch L= Q= index= kernel= signal=S<id> + every packet and kernarg field
     arg L= where=none|kernarg|past-kernarg|elsewhere  (where the kernel argument lies)
     vars L= words=...    image L= at=... bytes=...    play L= item=...
     ring-after L= next= consumed= written=    wait S= fn= cond= value= timeout= state=
     signal S= init=       signal-destroy S=     bad TEXT */
static FILE *trace_file;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static bool trace_tried;

static bool tracing(void) {
  pthread_mutex_lock(&trace_lock);
  if (!trace_tried) {
    trace_tried = true;
    const char *path = getenv("STUB_HSA_TRACE");
    if (path && *path && !(trace_file = fopen(path, "a")))
      fprintf(stderr, "stub-hsa: cannot open the trace file %s\n", path);
  }
  bool on = trace_file != NULL;
  pthread_mutex_unlock(&trace_lock);
  return on;
}

static void trace(const char *fmt, ...) {
  if (!tracing()) return;
  char line[4096];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&trace_lock);
  fprintf(trace_file, "%s\n", line);
  fflush(trace_file);
  pthread_mutex_unlock(&trace_lock);
}
