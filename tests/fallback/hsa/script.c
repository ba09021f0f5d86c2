/* script.c - what the kernels "do": the stand-in runs no device code, so each launch
   plays a script on the device side of the protocol instead. STUB_HSA_SCRIPT is a list
   of parts separated by ';', each "[KERNEL[@N]=]ITEMS": the items for the N-th launch
   (counted from 1 in the order the device sees them) or every launch of KERNEL (its
   name without ".kd"), or, with no selector, for every offload kernel no part names
   (init/fini kernels play only a part that names them). ITEMS, comma-separated, in order:
     print:N   N console lines "line <i>\n" through the ring (type 3), as newlib's write
               does: reserve, wait for the host once 1024 slots are pending, fill, publish
     text:W    the line W ('_' printed as ' ')
     long      one 300-byte message (two slots)
     types     one message of each value type 0, 1, 2 and one of the unknown type 9
     rev:N     N reverse-offload requests (type 4, fn 0xf000+i, mapnum i, addresses
               0xa000+i, 0xb000+i, 0xc000+i, devnum 0), each waiting until the host
               clears it (values for a recording libgomp)
     revfn:K   one reverse-offload request for entry K of the kernel's image's
               .offload_func_table (no mappings; devnum from __gomp_additional_icvs),
               as device libgomp's GOMP_target_ext posts it; waits until the host clears it
     store:I:V writes the int V at the device address in slot I of the kernel's
               argument block (tgt_vars, or OpenACC's devaddrs)
     fill:I:N:V  writes the int V N times from the device address in slot I
     var:NAME:V  writes the int V at the kernel's image's variable NAME (a `declare
               target` variable the kernel writes directly)
     step:I    the int at the device address in slot I becomes int*10+1 (order checks)
     exit:N | abort | signal:S | corrupt   the return value of exit(N), abort() (with its
               "GCN Kernel Aborted" message), a signal S, a corrupt value
     overflow  makes consumed run past next_output (the host's overflow message)
     sleep:MS  sleeps
     queue_error  the queue fails: its error callback is called (HSA_STATUS_ERROR_EXCEPTION)
               from a runtime thread of its own, as a runtime's event thread does, and
               the packet never completes (the rest of the script is not played) */
struct launch_ctx { struct squeue *s; char *out; uint64_t vars; int image; const char *key; bool failed; };

static void *queue_error_thread(void *arg) {
  struct squeue *s = arg;
  s->cb(EXCEPTION, &s->q, s->data);
  return NULL;
}

/* The items for this launch of `kernel` (the n-th), copied into buf; NULL: none. */
static const char *script_for(const char *kernel, unsigned n, bool cdtor, char *buf, size_t size) {
  const char *env = getenv("STUB_HSA_SCRIPT");
  if (!env) return NULL;
  char all[8192];
  snprintf(all, sizeof all, "%s", env);
  const char *named = NULL, *numbered = NULL, *dflt = NULL;
  for (char *save, *part = strtok_r(all, ";", &save); part; part = strtok_r(NULL, ";", &save)) {
    char *eq = strchr(part, '=');
    if (!eq || memchr(part, ':', eq - part) || memchr(part, ',', eq - part)) { dflt = part; continue; }
    *eq = 0;
    char *at = strchr(part, '@');
    unsigned want = 0;
    if (at) *at = 0, want = (unsigned)atoi(at + 1);
    if (strcmp(part, kernel)) continue;
    if (want == n) numbered = eq + 1;
    else if (!want) named = eq + 1;
  }
  const char *r = numbered ? numbered : named ? named : cdtor ? NULL : dflt;
  if (!r) return NULL;
  snprintf(buf, size, "%s", r);
  return buf;
}

static int *slot_int(struct launch_ctx *c, long i) {
  if (!c->vars) { BAD("%s: no argument block", c->key); return NULL; }
  uint64_t p = ((uint64_t *)(uintptr_t)c->vars)[i];
  pthread_mutex_lock(&stub_lock);
  bool ok = find_block((void *)(uintptr_t)p, 4);
  pthread_mutex_unlock(&stub_lock);
  if (!ok) { BAD("%s: slot %ld of the argument block (%#llx) is no device address", c->key, i, (unsigned long long)p); return NULL; }
  return (int *)(uintptr_t)p;
}

static void rev_request(struct launch_ctx *c, const uint64_t v[6]) {
  char *sl = dev_slot(c->out);
  if (!sl) return;
  memcpy(sl + 136, v, 6 * sizeof *v);
  publish(sl, 4);
  while (atomic_load_explicit((_Atomic int *)sl, memory_order_acquire)) usleep(1);
}

static void play(struct launch_ctx *c, const char *script) {
  char buf[8192], text[512];
  snprintf(buf, sizeof buf, "%s", script);
  for (char *save, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    long a = 0, b = 0, d = 0;
    char *p = strchr(t, ':');
    if (p) a = strtol(p + 1, &p, 0);
    if (p && *p == ':') b = strtol(p + 1, &p, 0);
    if (p && *p == ':') d = strtol(p + 1, NULL, 0);
    trace("play L=%s item=%s", c->key, t);
    char *out = c->out;
    if (!strncmp(t, "print", 5))
      for (long i = 0; i < a; i++) { snprintf(text, sizeof text, "line %ld\n", i); dev_write(out, text); }
    else if (!strncmp(t, "text:", 5)) {
      snprintf(text, sizeof text, "%s\n", t + 5);
      for (char *q = text; *q; q++) if (*q == '_') *q = ' ';
      dev_write(out, text);
    } else if (!strcmp(t, "long")) {
      memset(text, 'x', 300); memcpy(text, "long:", 5); text[299] = '\n'; text[300] = 0; dev_write(out, text);
    } else if (!strcmp(t, "types")) {
      char *sl;
      if ((sl = dev_slot(out))) { strcpy(sl + 4, "ival="); *(int64_t *)(sl + 136) = -42; publish(sl, 0); }
      if ((sl = dev_slot(out))) { strcpy(sl + 4, "dval="); *(double *)(sl + 136) = 2.5; publish(sl, 1); }
      if ((sl = dev_slot(out))) { strcpy(sl + 4, "str="); strcpy(sl + 136, "abc"); publish(sl, 2); }
      if ((sl = dev_slot(out))) publish(sl, 9);
    } else if (!strncmp(t, "revfn", 5)) {
      uint64_t size, table = image_symbol_address(c->image, ".offload_func_table", &size);
      uint64_t icvs = image_symbol_address(c->image, "__gomp_additional_icvs", NULL);
      if (!table) { BAD("%s: revfn: the image has no .offload_func_table", c->key); continue; }
      uint64_t v[6] = {((uint64_t *)(uintptr_t)table)[a], 0, 0, 0, 0, icvs ? (uint64_t)*(int *)(uintptr_t)icvs : 0};
      char fb[160];
      trace("rev L=%s fn=%s devnum=%llu", c->key, sym(v[0], fb), (unsigned long long)v[5]);
      rev_request(c, v);
      trace("rev-done L=%s", c->key);
    } else if (!strncmp(t, "rev", 3))
      for (long i = 0; i < a; i++) {
        uint64_t v[6] = {0xf000 + i, i, 0xa000 + i, 0xb000 + i, 0xc000 + i, 0};
        rev_request(c, v);
      }
    else if (!strncmp(t, "store", 5)) {
      int *x = slot_int(c, a);
      if (x) *x = (int)b;
    } else if (!strncmp(t, "fill", 4)) {
      int *x = slot_int(c, a);
      pthread_mutex_lock(&stub_lock);
      bool ok = x && find_block(x, (size_t)b * 4);
      pthread_mutex_unlock(&stub_lock);
      if (ok) for (long i = 0; i < b; i++) x[i] = (int)d;
      else if (x) BAD("%s: fill of %ld ints runs past the block", c->key, b);
    } else if (!strncmp(t, "var:", 4)) {
      char vname[256];
      snprintf(vname, sizeof vname, "%s", t + 4);
      char *colon = strrchr(vname, ':');
      if (colon) *colon = 0;
      uint64_t size, at = image_symbol_address(c->image, vname, &size);
      if (!at || size < 4 || !colon) BAD("%s: %s: no int variable %s in the image", c->key, t, vname);
      else *(int *)(uintptr_t)at = (int)strtol(colon + 1, NULL, 0);
    } else if (!strncmp(t, "step", 4)) {
      int *x = slot_int(c, a);
      if (x) *x = *x * 10 + 1;
    } else if (!strncmp(t, "exit", 4)) atomic_store(U32(out, 0), 0xffff0000u | (a & 0xff));
    else if (!strcmp(t, "abort")) { dev_write(out, "GCN Kernel Aborted\n"); atomic_store(U32(out, 0), 0xffff0000u | 6 << 8 | 134); }
    else if (!strncmp(t, "signal", 6)) atomic_store(U32(out, 0), 0xffff0000u | (a & 0xff) << 8);
    else if (!strcmp(t, "corrupt")) atomic_store(U32(out, 0), 0x12345678u);
    else if (!strcmp(t, "overflow")) atomic_store(U32(out, OUT_CONSUMED), atomic_load(U32(out, OUT_NEXT)) + 5);
    else if (!strncmp(t, "sleep", 5)) usleep(a * 1000);
    else if (!strcmp(t, "queue_error")) {
      pthread_t th;
      c->failed = true;
      if (!pthread_create(&th, NULL, queue_error_thread, c->s)) pthread_detach(th);
      return;
    }
    else BAD("unknown script item '%s'", t);
  }
}
