/* device.c - the device: one thread per queue takes each AQL packet once its header
   stops being INVALID and the doorbell reached its index, records what a GPU would see
   (the packet's every field, the kernarg block's fields, the output ring's initial
   state, the heap, the team arenas and stacks, the argument block's words, the host's
   writes into the image), checks it against docs/gcn-launch.md ("stub-hsa: BAD ..."
   to stderr, counted in stub_hsa_bad), plays the launch's script (script.c) and
   completes the signal by decrementing it, as a packet processor does. Launches are
   named "L<queue>.<packet index>". Expectations a test may add:
   STUB_HSA_EXPECT_GRID=teams,threads (offload kernels' grid x and z),
   STUB_HSA_EXPECT_LDS=bytes (else computed from GOMP_GCN_LOWLAT_POOL / the team count,
   STUB_HSA_LOWLAT_HEAP default 48), GCN_HEAP_SIZE / GCN_TEAM_ARENA_SIZE /
   GCN_STACK_SIZE as GCC's plugin reads them (the leading decimal number, 0: default), STUB_HSA_OPENACC (set):
   offload kernels are OpenACC launches (no team arena). STUB_HSA_NO_CHECKS (set): the
   comparison with another plugin is the check, so only the layout checks every plugin
   must pass run (the sizes the environment selects are then not checked here). */
struct packet {
  uint16_t header, setup, wg[3], reserved0; uint32_t grid[3], private_size, group_size;
  uint64_t kernel_object, kernarg_address, reserved2; handle_t completion;
};
/* A size from the environment as GCC's plugin reads it: the leading decimal number,
   0 (or none) meaning the default. */
static long long expect(const char *env, long long dflt) {
  const char *v = getenv(env);
  long long n = v ? strtoll(v, NULL, 10) : 0;
  return n ? n : dflt;
}

/* A word as the trace shows it: symbolic when it points into a block (or the slack
   past a kernarg block), else hex. */
static const char *word(uint64_t v, char buf[160]) {
  pthread_mutex_lock(&stub_lock);
  bool slack = v && find_slack((void *)(uintptr_t)v);
  pthread_mutex_unlock(&stub_lock);
  if (v && (slack || block_id((void *)(uintptr_t)v))) return sym(v, buf);
  snprintf(buf, 160, "%#llx", (unsigned long long)v);
  return buf;
}

/* Records and checks one packet of a kernel whose descriptor asks for `meta` bytes of
   group segment; returns the output ring (NULL if unusable). */
static char *check(const char *key, struct packet *p, uint32_t word0, const char *name, bool cdtor, unsigned meta) {
  unsigned ndim = word0 >> 16, gx = p->grid[0], gz = p->grid[2];
  bool env_checks = !getenv("STUB_HSA_NO_CHECKS");
  if ((word0 & 0xffff) != 0x1402) BAD("%s: header %#x, want 0x1402", name, word0 & 0xffff);
  if (ndim != 3) BAD("%s: %u dimensions, want 3", name, ndim);
  if (p->grid[1] != 64 || p->wg[0] != 1 || p->wg[1] != 64) BAD("%s: grid y %u, work-group %u,%u: want 64, 1,64", name, p->grid[1], p->wg[0], p->wg[1]);
  if (gz < 1 || gz > 16 || p->wg[2] != (gz < 16 ? gz : 16)) BAD("%s: grid z %u, work-group z %u", name, gz, p->wg[2]);
  if (gx < 1) BAD("%s: grid x 0", name);
  if (cdtor && (gx != 1 || gz != 1)) BAD("%s: init/fini grid %u,%u, want 1,1", name, gx, gz);
  const char *eg = getenv("STUB_HSA_EXPECT_GRID");
  unsigned tx, tz;
  if (!cdtor && eg && sscanf(eg, "%u,%u", &tx, &tz) == 2 && (tx != gx || tz != gz))
    BAD("%s: grid %u teams x %u threads, want %u x %u", name, gx, gz, tx, tz);
  if (p->private_size != 0) BAD("%s: private segment %u, want 0", name, p->private_size);
  unsigned lds, heap_off = (unsigned)expect("STUB_HSA_LOWLAT_HEAP", 48);
  const char *pool = getenv("GOMP_GCN_LOWLAT_POOL");
  if (getenv("STUB_HSA_EXPECT_LDS")) lds = (unsigned)expect("STUB_HSA_EXPECT_LDS", 0);
  else if (pool) { unsigned v = (unsigned)atoi(pool); lds = v < heap_off + 8 ? heap_off + 8 : v > 65536 ? 65536 : v; }
  else { unsigned tpc = gx / cus(), t = tpc ? 65536 / tpc : 65536; lds = meta > t ? meta : t; }
  if (env_checks && p->group_size != lds) BAD("%s: group segment %u, want %u", name, p->group_size, lds);
  if (!p->completion.handle || atomic_load(&SIG(p->completion)->v) != 1) BAD("%s: completion signal not 1", name);
  /* The kernarg block. */
  char *ka = (char *)(uintptr_t)p->kernarg_address, b1[160], b2[160], b3[160], b4[160], b5[160], b6[160];
  pthread_mutex_lock(&stub_lock);
  struct block *kb = find_block(ka, 56);
  struct block kc = kb ? *kb : (struct block){0};
  pthread_mutex_unlock(&stub_lock);
  if (!kb || kc.image >= 0) { BAD("%s: kernarg address %p is not a block of device memory", name, ka); return NULL; }
  trace("kernarg L=%s block=B%u region=%s size=%zu offset=%#llx align16=%d", key, kc.id, region_name(kc.region), kc.n,
        (unsigned long long)(ka - kc.p), !((uintptr_t)ka & 15));
  if (kc.region != KERNARG || ((uintptr_t)ka & 15)) BAD("%s: kernarg address %p is not a 16-aligned block of the kernarg region", name, ka);
  uint64_t *w = (uint64_t *)ka;
  int arena = *(int *)(ka + 48), stack = *(int *)(ka + 52);
  trace("ka L=%s dummy1=%s dummy2=%s out=%s heap=%s arena=%s stack=%s arena_size=%d stack_size=%d", key, word(w[0], b1),
        word(w[1], b2), word(w[2], b3), word(w[3], b4), word(w[4], b5), word(w[5], b6), arena, stack);
  if (cdtor && w[0]) BAD("%s: init/fini kernel argument %#llx, want NULL", name, (unsigned long long)w[0]);
  /* Where the argument block (the table) lies: none, inside this kernarg block (after
     its output ring: libgomp 17 wrote it where session_allocate_target_var_table
     said), in the slack past its end (memory the block does not own), or elsewhere (a
     block of libgomp's: GCC 12-16's way). */
  char *arg = (char *)(uintptr_t)w[0];
  const char *where = !w[0] ? "none" : arg >= ka && arg + 8 <= kc.p + kc.n ? "kernarg"
                    : arg >= kc.p + kc.n && arg < kc.p + ((kc.n + 4095) & ~(size_t)4095) ? "past-kernarg" : "elsewhere";
  trace("arg L=%s where=%s", key, where);
  char *out = (char *)(uintptr_t)w[2];
  pthread_mutex_lock(&stub_lock);
  struct block *ob = find_block(out, OUT_SIZE);
  pthread_mutex_unlock(&stub_lock);
  if (!ob || ((uintptr_t)out & 7)) { BAD("%s: out_ptr %p is not an 8-aligned %d-byte block", name, out, OUT_SIZE); return NULL; }
  unsigned written = 0;
  for (int i = 0; i < RING; i++) written += *(int *)SLOTP(out, i) != 0;
  trace("ring-init L=%s return=%#x next=%u consumed=%u written=%u", key, *U32(out, 0), *U32(out, OUT_NEXT), *U32(out, OUT_CONSUMED), written);
  if (*U32(out, 0) != 0xcafe0000u || *U32(out, OUT_NEXT) || *U32(out, OUT_CONSUMED))
    BAD("%s: ring not initialised (return %#x, next %u, consumed %u)", name, *U32(out, 0), *U32(out, OUT_NEXT), *U32(out, OUT_CONSUMED));
  if (written) BAD("%s: %u slot(s) still written", name, written);
  /* The heap. */
  char *heap = (char *)(uintptr_t)w[3];
  pthread_mutex_lock(&stub_lock);
  struct block *hb = find_block(heap, 1);
  struct block hc = hb ? *hb : (struct block){0};
  pthread_mutex_unlock(&stub_lock);
  unsigned long long want_heap = (unsigned long long)expect("GCN_HEAP_SIZE", 100 << 20);
  if (hb) {
    uint64_t word = 0;
    memcpy(&word, heap, hc.p + hc.n - heap < 8 ? (size_t)(hc.p + hc.n - heap) : 8);
    trace("heap L=%s block=B%u offset=%#llx word=%llu size=%zu region=%s assigned=%d", key, hc.id,
          (unsigned long long)(heap - hc.p), (unsigned long long)word, hc.n, region_name(hc.region), hc.assigned);
  }
  if (!hb || hc.p != heap || hc.n < 8 || hc.region != COARSE || !hc.assigned || *(uint64_t *)heap != hc.n ||
      (env_checks && hc.n != want_heap))
    BAD("%s: heap %p: want a coarse-grained block of %llu bytes given to the agent, starting with its size", name, heap, want_heap);
  /* Team arenas and stacks. */
  int want_arena = cdtor || getenv("STUB_HSA_OPENACC") ? 0 : (int)expect("GCN_TEAM_ARENA_SIZE", 65536),
      want_stack = (int)expect("GCN_STACK_SIZE", 32768);
  if (env_checks && (arena != want_arena || stack != want_stack)) BAD("%s: arena %d / stack %d per team/wavefront, want %d / %d", name, arena, stack, want_arena, want_stack);
  uint64_t ap = w[4], sp = w[5];
  if ((arena == 0) != (ap == 0)) BAD("%s: arena_ptr %#llx with arena size %d", name, (unsigned long long)ap, arena);
  if (ap && sp != ap + (uint64_t)arena * gx) BAD("%s: stacks at %#llx, want after the arenas (%#llx)", name, (unsigned long long)sp, (unsigned long long)(ap + (uint64_t)arena * gx));
  uint64_t base = ap ? ap : sp, total = (uint64_t)arena * gx + (uint64_t)gx * gz * stack;
  pthread_mutex_lock(&stub_lock);
  struct block *eb = find_block((void *)(uintptr_t)base, total);
  struct block ec = eb ? *eb : (struct block){0};
  pthread_mutex_unlock(&stub_lock);
  trace("eph L=%s need=%llu fits=%d block=B%u size=%zu region=%s assigned=%d", key, (unsigned long long)total, eb != NULL,
        ec.id, ec.n, region_name(ec.region), ec.assigned);
  if (!eb || ec.region != COARSE) BAD("%s: arenas + stacks [%#llx, +%llu) not inside one coarse-grained block", name, (unsigned long long)base, (unsigned long long)total);
  /* The argument block the kernel reads (tgt_vars / devaddrs): its words up to the end
     of its block (at most 32); for a table in kernarg memory, up to the first word
     nobody wrote (poison) or the end of the block's last page, whichever comes first. */
  bool in_kernarg = !strcmp(where, "kernarg") || !strcmp(where, "past-kernarg");
  if (w[0] && (in_kernarg || block_id((void *)(uintptr_t)w[0]))) {
    size_t n = 0;
    if (in_kernarg) {
      char *end = kc.p + ((kc.n + 4095) & ~(size_t)4095);
      while (n < 33 && arg + 8 * (n + 1) <= end && ((uint64_t *)(uintptr_t)w[0])[n] != 0xa5a5a5a5a5a5a5a5ull) n++;
    } else {
      pthread_mutex_lock(&stub_lock);
      struct block *ab = find_block((void *)(uintptr_t)w[0], 8);
      n = ab ? (size_t)(ab->p + ab->n - (char *)(uintptr_t)w[0]) / 8 : 0;
      pthread_mutex_unlock(&stub_lock);
    }
    char line[3000] = "", b[160];
    size_t len = 0;
    for (size_t i = 0; i < n && i < 32; i++)
      len += snprintf(line + len, sizeof line - len, "%s%s", i ? "," : "", word(((uint64_t *)(uintptr_t)w[0])[i], b));
    trace("vars L=%s words=%s%s", key, line, n > 32 ? ",..." : "");
  }
  return out;
}

static unsigned launch_number(const char *kernel) {
  static struct { char name[128]; unsigned n; } seen[256];
  pthread_mutex_lock(&stub_lock);
  int i = 0;
  while (i < 255 && seen[i].name[0] && strcmp(seen[i].name, kernel)) i++;
  if (!seen[i].name[0]) snprintf(seen[i].name, sizeof seen[i].name, "%s", kernel);
  unsigned n = ++seen[i].n;
  pthread_mutex_unlock(&stub_lock);
  return n;
}

static void *device(void *arg) {
  struct squeue *s = arg;
  handle_t bell = s->q.doorbell_signal;
  for (;;) {
    uint64_t r = atomic_load(&s->read);
    char *slot = (char *)s->q.base_address + (r % s->q.size) * 64;
    uint32_t word0 = atomic_load_explicit((_Atomic uint32_t *)slot, memory_order_acquire);
    if ((word0 & 0xff) == 1) { /* INVALID: wait for the doorbell */
      if (atomic_load(&s->stop)) return NULL;
      sig_wait(bell, 3, (int64_t)r, 10000000);
      continue;
    }
    bool rung = sig_wait(bell, 3, (int64_t)r, 1000000000) >= (int64_t)r;
    if (!rung) BAD("packet %llu published but the doorbell was not rung with its index", (unsigned long long)r);
    struct packet p;
    memcpy(&p, slot, sizeof p);
    char key[32], kname[128] = "?", ob[160], kb[160];
    snprintf(key, sizeof key, "L%u.%llu", s->id, (unsigned long long)r);
    int image = -1;
    const char *kd = kernel_at(p.kernel_object, &image);
    if (kd) snprintf(kname, sizeof kname, "%.*s", (int)strlen(kd) - 3, kd);
    const char *name = kname;
    bool cdtor = kd && (!strcmp(name, "_init_array") || !strcmp(name, "_fini_array"));
    if (!kd) BAD("kernel object %#llx is no live kernel", (unsigned long long)p.kernel_object);
    fprintf(stderr, "stub-hsa: packet %s grid=%u,%u,%u wg=%u,%u,%u lds=%u\n", name, p.grid[0], p.grid[1], p.grid[2],
            p.wg[0], p.wg[1], p.wg[2], p.group_size);
    unsigned sig_id = p.completion.handle ? SIG(p.completion)->id : 0;
    trace("launch L=%s Q=%u index=%llu kernel=I%d:%s header=%#x setup=%u wg=%u,%u,%u reserved0=%u grid=%u,%u,%u "
          "private=%u group=%u object=%s kernarg=%s reserved2=%#llx signal=S%u signal_value=%lld doorbell=%s",
          key, s->id, (unsigned long long)r, image, name, word0 & 0xffff, word0 >> 16, p.wg[0], p.wg[1], p.wg[2], p.reserved0,
          p.grid[0], p.grid[1], p.grid[2], p.private_size, p.group_size, word(p.kernel_object, ob), word(p.kernarg_address, kb),
          (unsigned long long)p.reserved2, sig_id, p.completion.handle ? (long long)atomic_load(&SIG(p.completion)->v) : 0,
          rung ? "rung" : "late");
    __atomic_add_fetch(&stub_hsa_launches[cdtor], 1, __ATOMIC_SEQ_CST);
    /* The kernel descriptor's first word: its group segment size (the metadata's). */
    unsigned meta = kd ? *(uint32_t *)(uintptr_t)p.kernel_object : 0;
    ring_after_block((char *)(uintptr_t)p.kernarg_address, 56 + OUT_SIZE);
    char *out = check(key, &p, word0, name, cdtor, meta);
    if (p.completion.handle && out) {
      snprintf(SIG(p.completion)->launch, sizeof SIG(p.completion)->launch, "%s", key);
      SIG(p.completion)->ring = out;
      ring_pending(SIG(p.completion));
    }
    if (image >= 0) image_diff(image, key);
    char buf[8192];
    const char *script = kd ? script_for(name, launch_number(name), cdtor, buf, sizeof buf) : NULL;
    struct launch_ctx c = {s, out, out ? *(uint64_t *)(uintptr_t)p.kernarg_address : 0, image, key, false};
    if (out && script) play(&c, script);
    if (c.failed) { /* the queue failed: it processes nothing more */
      while (!atomic_load(&s->stop)) usleep(1000);
      return NULL;
    }
    *(uint16_t *)slot = 1;
    atomic_store(&s->read, r + 1);
    if (p.completion.handle) {
      pthread_mutex_lock(&SIG(p.completion)->m);
      atomic_fetch_sub(&SIG(p.completion)->v, 1);
      pthread_cond_broadcast(&SIG(p.completion)->c);
      pthread_mutex_unlock(&SIG(p.completion)->m);
    }
  }
}
