/* queues.c - AQL queues: a ring of 64-byte packets (all INVALID at creation), read and
   write indexes, a doorbell signal, and one device thread per queue (device.c) that
   consumes the packets in order. Queues are numbered in creation order ("Q" in the
   trace); their creation parameters are traced and checked (multi-producer type, no
   private or group segment limits: UINT32_MAX). */
typedef struct {  /* hsa_queue_t */
  uint32_t type, features; void *base_address; handle_t doorbell_signal; uint32_t size, reserved1; uint64_t id;
} queue_t;
struct squeue {
  queue_t q; _Atomic uint64_t read, write; void (*cb)(status, queue_t *, void *); void *data;
  pthread_t th; _Atomic bool stop; unsigned id;
};
static unsigned next_queue_id;
static void *device(void *);

status hsa_queue_create(handle_t agent, uint32_t size, int type, void (*cb)(status, queue_t *, void *), void *data,
                        uint32_t private_size, uint32_t group_size, queue_t **out) {
  if (agent.handle != AGENT || !size || (size & (size - 1)) || size > 1024) return INVALID_ARGUMENT;
  if (type != 0) BAD("queue type %d, want MULTI (0)", type);
  if (private_size != UINT32_MAX || group_size != UINT32_MAX) BAD("queue segment sizes %u/%u, want UINT32_MAX", private_size, group_size);
  struct squeue *s = calloc(1, sizeof *s);
  s->q.base_address = aligned_alloc(64, (size_t)size * 64);
  for (uint32_t i = 0; i < size; i++) *(uint16_t *)((char *)s->q.base_address + i * 64) = 1; /* INVALID */
  s->q.size = size, s->cb = cb, s->data = data;
  s->id = __atomic_fetch_add(&next_queue_id, 1, __ATOMIC_SEQ_CST);
  s->q.id = s->id;
  hsa_signal_create(-1, 0, NULL, &s->q.doorbell_signal);
  trace("queue Q=%u size=%u type=%d callback=%d data=%s private=%u group=%u", s->id, size, type, cb != NULL,
        data ? "set" : "0", private_size, group_size);
  pthread_create(&s->th, NULL, device, s);
  __atomic_add_fetch(&stub_hsa_live[4], 1, __ATOMIC_SEQ_CST);
  *out = &s->q;
  return 0;
}

status hsa_queue_destroy(queue_t *q) {
  struct squeue *s = (struct squeue *)q;
  atomic_store(&s->stop, true);
  sig_set(q->doorbell_signal, INT64_MAX);
  pthread_join(s->th, NULL);
  trace("queue-destroy Q=%u", s->id);
  hsa_signal_destroy(q->doorbell_signal);
  free(q->base_address);
  free(s);
  __atomic_sub_fetch(&stub_hsa_live[4], 1, __ATOMIC_SEQ_CST);
  return 0;
}

#define status uint64_t
status hsa_queue_load_read_index_acquire(const queue_t *q) { return atomic_load(&((struct squeue *)q)->read); }
status hsa_queue_load_read_index_relaxed(const queue_t *q) { return atomic_load(&((struct squeue *)q)->read); }
status hsa_queue_load_write_index_relaxed(const queue_t *q) { return atomic_load(&((struct squeue *)q)->write); }
status hsa_queue_add_write_index_release(const queue_t *q, uint64_t n) { return atomic_fetch_add(&((struct squeue *)q)->write, n); }
#undef status
