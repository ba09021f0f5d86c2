/* signals.c - HSA signals: a value, a mutex and a condition variable. Waits block until
   the condition holds or the timeout (timestamp frequency 1 GHz: ns) passed, as
   HSA_WAIT_STATE_BLOCKED does. The plugin's waits and loads are traced ("wait" with
   the function, condition, compare value, timeout and wait state); a signal a packet
   named as its completion signal also knows its launch and output ring, so its
   destruction records how the host left the ring ("ring-after"). A wait's timeout is in
   timestamp ticks (system.c's frequency, STUB_HSA_TIMESTAMP_HZ). Queues' doorbells are
   waited on by the device thread through sig_wait, which is not traced. */
static unsigned next_signal_id = 1;

status hsa_signal_create(int64_t v, uint32_t n, const handle_t *consumers, handle_t *s) {
  (void)n; (void)consumers;
  struct sig *x = calloc(1, sizeof *x);
  if (!x) return OUT_OF_RESOURCES;
  atomic_init(&x->v, v);
  pthread_mutex_init(&x->m, NULL);
  pthread_cond_init(&x->c, NULL);
  x->id = __atomic_fetch_add(&next_signal_id, 1, __ATOMIC_SEQ_CST);
  s->handle = (uintptr_t)x;
  __atomic_add_fetch(&stub_hsa_live[3], 1, __ATOMIC_SEQ_CST);
  return 0;
}

static void ring_after(struct sig *x);

status hsa_signal_destroy(handle_t s) {
  if (!s.handle) return INVALID_ARGUMENT;
  struct sig *x = SIG(s);
  ring_after(x);
  free(x);
  __atomic_sub_fetch(&stub_hsa_live[3], 1, __ATOMIC_SEQ_CST);
  return 0;
}

static void sig_set(handle_t s, int64_t v) {
  pthread_mutex_lock(&SIG(s)->m);
  atomic_store(&SIG(s)->v, v);
  pthread_cond_broadcast(&SIG(s)->c);
  pthread_mutex_unlock(&SIG(s)->m);
}

static bool holds(int64_t v, int cond, int64_t c) {
  switch (cond) { case 0: return v == c; case 1: return v != c; case 2: return v < c; default: return v >= c; }
}

static int64_t sig_wait(handle_t s, int cond, int64_t c, uint64_t timeout) {
  struct sig *x = SIG(s);
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  uint64_t ns = t.tv_nsec + (timeout > 60000000000ull ? 60000000000ull : timeout);
  t.tv_sec += ns / 1000000000, t.tv_nsec = ns % 1000000000;
  pthread_mutex_lock(&x->m);
  while (!holds(atomic_load(&x->v), cond, c))
    if (pthread_cond_timedwait(&x->c, &x->m, &t)) break;
  int64_t v = atomic_load(&x->v);
  pthread_mutex_unlock(&x->m);
  return v;
}

/* The return types below are not `status`; the macro keeps each definition's line
   starting with "status hsa_" (the form's list of what it defines). */
#define status void
status hsa_signal_store_relaxed(handle_t s, int64_t v) { sig_set(s, v); }
status hsa_signal_store_release(handle_t s, int64_t v) { sig_set(s, v); }
#undef status
#define status int64_t
status hsa_signal_load_acquire(handle_t s) {
  trace("wait S=%u fn=load_acquire", SIG(s)->id);
  return atomic_load(&SIG(s)->v);
}
status hsa_signal_load_relaxed(handle_t s) {
  trace("wait S=%u fn=load_relaxed", SIG(s)->id);
  return atomic_load(&SIG(s)->v);
}
status hsa_signal_wait_acquire(handle_t s, int cond, int64_t c, uint64_t timeout, int state) {
  static const char *conds[] = {"EQ", "NE", "LT", "GTE"};
  trace("wait S=%u fn=wait_acquire cond=%s value=%lld timeout=%llu state=%s", SIG(s)->id,
        cond >= 0 && cond < 4 ? conds[cond] : "?", (long long)c, (unsigned long long)timeout,
        state == 0 ? "BLOCKED" : state == 1 ? "ACTIVE" : "?");
  if (state != 0) BAD("signal wait not BLOCKED (%d)", state);
  uint64_t hz = (uint64_t)env_long("STUB_HSA_TIMESTAMP_HZ", 1000000000);
  return sig_wait(s, cond, c, hz == 1000000000 ? timeout : (uint64_t)((double)timeout * 1e9 / (double)hz));
}
#undef status
