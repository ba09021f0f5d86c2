/* ring.c - the device side of the output ring (docs/gcn-launch.md §2, §5), as GCC's
   device newlib `write` and device libgomp's reverse-offload request use it: reserve
   slots with an atomic add to next_output, wait for the host once a slot index reaches
   1024 past what it consumed, fill, publish with a release store of `written`. Also
   the record of how the host left the ring once it was done with the launch
   ("ring-after": return value, next_output, consumed, slots still marked written). */
enum { RING = 1024, SLOT = 264, OUT_NEXT = 4, OUT_QUEUE = 8, OUT_CONSUMED = 270344, OUT_SIZE = 270352 };
#define U32(p, off) ((_Atomic uint32_t *)((char *)(p) + (off)))
#define SLOTP(out, i) ((char *)(out) + OUT_QUEUE + (size_t)((i) % RING) * SLOT)

/* Reserves n slots as newlib's write does; -1: EFBIG. */
static long reserve(char *out, unsigned n) {
  uint32_t index = atomic_fetch_add(U32(out, OUT_NEXT), n);
  if (index + n < atomic_load(U32(out, OUT_CONSUMED))) return -1;
  return index;
}
static void wait_slot(char *out, uint32_t i) {
  while (i >= RING && !(atomic_load(U32(out, OUT_CONSUMED)) > i - RING)) usleep(1);
}
static void publish(char *slot, int type) {
  *(int *)(slot + 132) = type;
  atomic_store_explicit((_Atomic int *)slot, 1, memory_order_release);
}
static void dev_write(char *out, const char *text) {
  size_t count = strlen(text);
  unsigned n = (count + 1) / 256 + 1;
  long index = reserve(out, n);
  if (index < 0) return;
  for (unsigned j = 0; j < n; j++) {
    uint32_t i = index + j;
    wait_slot(out, i);
    char *slot = SLOTP(out, i);
    memset(slot + 4, 0, 128); memset(slot + 136, 0, 128);
    size_t off = j * 256, left = off < count ? count - off : 0;
    memcpy(slot + 4, text + off, left < 128 ? left : 128);
    if (left > 128) memcpy(slot + 136, text + off + 128, left - 128 < 128 ? left - 128 : 128);
    publish(slot, 3);
  }
}
static char *dev_slot(char *out) {
  long index = reserve(out, 1);
  if (index < 0) return NULL;
  wait_slot(out, index);
  return SLOTP(out, index);
}

/* Launches whose ring-after is still to be recorded: at the first of the completion
   signal's destruction, the free of the block holding the ring, or the next packet
   using that block (plugins differ in the order of these). Under stub_lock. */
static struct sig *pending[256];

static void ring_after_locked(struct sig *x) {
  bool live = x->ring && find_block(x->ring, OUT_SIZE);
  if (!live) { trace("ring-after L=%s freed", x->launch); x->launch[0] = 0; return; }
  unsigned written = 0;
  for (int i = 0; i < RING; i++) written += *(int *)SLOTP(x->ring, i) != 0;
  trace("ring-after L=%s return=%#x next=%u consumed=%u written=%u", x->launch, *U32(x->ring, 0),
        *U32(x->ring, OUT_NEXT), *U32(x->ring, OUT_CONSUMED), written);
  x->launch[0] = 0;
}

static void ring_after(struct sig *x) {
  pthread_mutex_lock(&stub_lock);
  for (int i = 0; i < 256; i++)
    if (pending[i] == x) pending[i] = NULL;
  if (x->launch[0]) ring_after_locked(x);
  pthread_mutex_unlock(&stub_lock);
}

/* Records the launches whose ring lies in [p, p+n) (a block about to be freed or reused). */
static void ring_after_block(const char *p, size_t n) {
  pthread_mutex_lock(&stub_lock);
  for (int i = 0; i < 256; i++)
    if (pending[i] && pending[i]->ring >= p && pending[i]->ring < p + n) {
      if (pending[i]->launch[0]) ring_after_locked(pending[i]);
      pending[i] = NULL;
    }
  pthread_mutex_unlock(&stub_lock);
}

static void ring_pending(struct sig *x) {
  pthread_mutex_lock(&stub_lock);
  for (int i = 0; i < 256; i++)
    if (!pending[i]) { pending[i] = x; break; }
  pthread_mutex_unlock(&stub_lock);
}
