/* memory.c - device memory: every block hsa_memory_allocate hands out (host memory,
   4096-aligned, filled with the byte 0xa5 so that a read of memory nobody wrote is
   deterministic and visible, up to the end of its last page: the slack past a block's
   end reads as poison too), with its region, whether an agent was given access, and
   a serial number the trace names it by ("B<id>"); loaded code objects are blocks too
   (image >= 0, named by their symbols). Copies are memmove; hsa_amd_memory_fill fills
   32-bit words; hsa_amd_memory_async_copy_rect copies a 3-D box at once and then
   completes its signal. */
enum { MAX_BLOCKS = 16384, POISON = 0xa5 };
static struct block blocks[MAX_BLOCKS];
static unsigned next_block_id = 1;

static struct block *find_block(const void *p, size_t n) {
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (blocks[i].p && (const char *)p >= blocks[i].p && (const char *)p + n <= blocks[i].p + blocks[i].n)
      return &blocks[i];
  return NULL;
}

static unsigned block_id(const void *p) {
  pthread_mutex_lock(&stub_lock);
  struct block *b = find_block(p, 1);
  unsigned id = b ? b->id : 0;
  pthread_mutex_unlock(&stub_lock);
  return id;
}

/* Registers [p, p+n) (under stub_lock); returns its id, 0 if the table is full. */
static unsigned add_block(char *p, size_t n, uint64_t region, int image) {
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (!blocks[i].p) {
      blocks[i] = (struct block){p, n, region, false, next_block_id++, image};
      return blocks[i].id;
    }
  return 0;
}

/* The kernarg block whose slack (past its end, up to the end of its last page: memory
   the block does not own) holds p; under stub_lock. GCC 17's own gcn plugin puts the
   launch's target-variable table there (docs/gcn-launch.md §1a). */
static struct block *find_slack(const void *p) {
  for (int i = 0; i < MAX_BLOCKS; i++)
    if (blocks[i].p && blocks[i].region == KERNARG && (const char *)p >= blocks[i].p + blocks[i].n &&
        (const char *)p < blocks[i].p + ((blocks[i].n + 4095) & ~(size_t)4095))
      return &blocks[i];
  return NULL;
}

static const char *sym(uint64_t a, char buf[160]) {
  if (!a) return strcpy(buf, "0");
  pthread_mutex_lock(&stub_lock);
  struct block *b = find_block((void *)(uintptr_t)a, 1);
  if (!b) b = find_slack((void *)(uintptr_t)a);
  struct block c = b ? *b : (struct block){0};
  pthread_mutex_unlock(&stub_lock);
  if (!b) return strcpy(buf, "host");
  uint64_t off = a - (uintptr_t)c.p, so;
  if (c.image >= 0) {
    const char *name = image_symbol_at(c.image, off, &so);
    if (name) snprintf(buf, 160, "I%d:%s+%#llx", c.image, name, (unsigned long long)so);
    else snprintf(buf, 160, "I%d+%#llx", c.image, (unsigned long long)off);
  } else
    snprintf(buf, 160, "B%u+%#llx", c.id, (unsigned long long)off);
  return buf;
}

static const char *region_name(uint64_t r) { return r == COARSE ? "coarse" : r == KERNARG ? "kernarg" : "?"; }

status hsa_memory_allocate(handle_t r, size_t n, void **p) {
  if ((r.handle != COARSE && r.handle != KERNARG) || !n) return INVALID_ARGUMENT;
  size_t whole = (n + 4095) & ~(size_t)4095;
  if (posix_memalign(p, 4096, whole)) return OUT_OF_RESOURCES;
  memset(*p, POISON, whole);
  pthread_mutex_lock(&stub_lock);
  unsigned id = add_block(*p, n, r.handle, -1);
  if (id) stub_hsa_live[0]++;
  pthread_mutex_unlock(&stub_lock);
  if (!id) { free(*p); *p = NULL; return OUT_OF_RESOURCES; }
  trace("alloc B=%u region=%s size=%zu", id, region_name(r.handle), n);
  return 0;
}

/* For the tests (conformance/, gcn/tests/conformance.rs): whether [p, p+n) lies inside
   one live block of device memory (hsa_memory_allocate's, not a loaded code object). */
int stub_hsa_holds(const void *p, size_t n) {
  pthread_mutex_lock(&stub_lock);
  struct block *b = find_block(p, n);
  int r = b && b->image < 0;
  pthread_mutex_unlock(&stub_lock);
  return r;
}

static void ring_after_block(const char *p, size_t n);
status hsa_memory_free(void *p) {
  pthread_mutex_lock(&stub_lock);
  struct block *f = find_block(p, 1);
  size_t fn = f ? f->n : 0;
  pthread_mutex_unlock(&stub_lock);
  if (f) ring_after_block(p, fn);
  pthread_mutex_lock(&stub_lock);
  struct block *b = find_block(p, 1);
  if (!b || b->p != p || b->image >= 0) { pthread_mutex_unlock(&stub_lock); return INVALID_ARGUMENT; }
  unsigned id = b->id;
  b->p = NULL;
  stub_hsa_live[0]--;
  pthread_mutex_unlock(&stub_lock);
  trace("free B=%u", id);
  free(p);
  return 0;
}

status hsa_memory_assign_agent(void *p, handle_t agent, int access) {
  pthread_mutex_lock(&stub_lock);
  struct block *b = find_block(p, 1);
  status s = !b || b->p != p || agent.handle != AGENT || access != 3 ? INVALID_ARGUMENT : 0;
  unsigned id = b ? b->id : 0;
  if (!s) b->assigned = true;
  pthread_mutex_unlock(&stub_lock);
  if (!s) trace("assign B=%u access=%d", id, access);
  return s;
}

status hsa_memory_copy(void *dst, const void *src, size_t n) {
  if (!dst || !src) return INVALID_ARGUMENT;
  char a[160], b[160];
  trace("copy dst=%s src=%s n=%zu", sym((uintptr_t)dst, a), sym((uintptr_t)src, b), n);
  memmove(dst, src, n);
  return 0;
}

status hsa_amd_memory_fill(void *p, uint32_t value, size_t count) {
  pthread_mutex_lock(&stub_lock);
  bool ok = p && find_block(p, count * 4);
  pthread_mutex_unlock(&stub_lock);
  if (!ok) return INVALID_ARGUMENT;
  char a[160];
  trace("fill dst=%s value=%#x count=%zu", sym((uintptr_t)p, a), value, count);
  for (size_t i = 0; i < count; i++) memcpy((char *)p + 4 * i, &value, 4);
  return 0;
}

/* hsa_pitched_ptr_t {base, pitch, slice}; hsa_dim3_t {x (bytes), y, z}. */
struct pitched { char *base; size_t pitch, slice; };
struct dim3 { uint32_t x, y, z; };
status hsa_amd_memory_async_copy_rect(const struct pitched *dst, const struct dim3 *doff, const struct pitched *src,
                                      const struct dim3 *soff, const struct dim3 *range, handle_t agent, int dir,
                                      uint32_t ndep, const handle_t *deps, handle_t done) {
  (void)agent; (void)ndep; (void)deps;
  if (!dst || !src || !doff || !soff || !range) return INVALID_ARGUMENT;
  trace("copy-rect dir=%d range=%u,%u,%u", dir, range->x, range->y, range->z);
  for (uint32_t z = 0; z < range->z; z++)
    for (uint32_t y = 0; y < range->y; y++)
      memmove(dst->base + (doff->z + z) * dst->slice + (doff->y + y) * dst->pitch + doff->x,
              src->base + (soff->z + z) * src->slice + (soff->y + y) * src->pitch + soff->x, range->x);
  if (done.handle) sig_set(done, atomic_load(&SIG(done)->v) - 1);
  return 0;
}
