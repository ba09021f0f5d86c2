/* system.c - the runtime, the agent and its regions: hsa_shut_down, system, agent and
   region queries, and the AMD extensions a plugin asks about the system and host memory
   (SVM attributes, pointer info, page-locking). One GPU agent named ONE_GPU with
   STUB_HSA_CUS compute units (default 8), a timestamp frequency of STUB_HSA_TIMESTAMP_HZ
   (default 1 GHz; signal wait timeouts are in its ticks), base profile, and two global regions: a
   fine-grained kernarg region (host memory) and a 16 GiB coarse-grained one (device
   memory, here host memory too). Values are those of a discrete gfx9 GPU as HSA
   defines the attributes; unknown attributes answer HSA_STATUS_ERROR_INVALID_ARGUMENT
   (and are traced as "query", so a plugin's new question is seen). */

status hsa_shut_down(void) { trace("shutdown"); return 0; }

status hsa_system_get_info(int attr, void *value) {
  switch (attr) {
  case 0: *(uint16_t *)value = 1; return 0;                       /* VERSION_MAJOR */
  case 1: *(uint16_t *)value = 4; return 0;                       /* VERSION_MINOR */
  case 2: {                                                       /* TIMESTAMP (ns) */
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    *(uint64_t *)value = (uint64_t)t.tv_sec * 1000000000u + t.tv_nsec;
    return 0;
  }
  case 3: *(uint64_t *)value = (uint64_t)env_long("STUB_HSA_TIMESTAMP_HZ", 1000000000); return 0; /* TIMESTAMP_FREQUENCY */
  case 4: *(uint64_t *)value = UINT64_MAX; return 0;              /* SIGNAL_MAX_WAIT */
  case 5: *(int *)value = 0; return 0;                            /* ENDIANNESS: little */
  case 6: *(int *)value = 1; return 0;                            /* MACHINE_MODEL: large */
  case 7: memset(value, 0, 128); return 0;                        /* EXTENSIONS: none */
  case 0x201: case 0x202: *(bool *)value = false; return 0;       /* AMD: SVM_SUPPORTED, SVM_ACCESSIBLE_BY_DEFAULT */
  default: trace("query system attr=%#x", attr); return INVALID_ARGUMENT;
  }
}

status hsa_iterate_agents(status (*cb)(handle_t, void *), void *data) {
  return cb((handle_t){AGENT}, data);
}

status hsa_agent_get_info(handle_t agent, int attr, void *value) {
  if (agent.handle != AGENT) return INVALID_AGENT;
  switch (attr) {
  case 0: memset(value, 0, 64); strcpy(value, ONE_GPU); return 0; /* NAME */
  case 1: memset(value, 0, 64); strcpy(value, "AMD"); return 0;    /* VENDOR_NAME */
  case 2: *(int *)value = 1; return 0;                             /* FEATURE: kernel dispatch */
  case 3: *(int *)value = 1; return 0;                             /* MACHINE_MODEL: large */
  case 4: *(int *)value = 0; return 0;                             /* PROFILE: base */
  case 5: *(int *)value = 1; return 0;                             /* DEFAULT_FLOAT_ROUNDING_MODE: near */
  case 6: *(uint32_t *)value = 64; return 0;                       /* WAVEFRONT_SIZE */
  case 7: ((uint16_t *)value)[0] = ((uint16_t *)value)[1] = ((uint16_t *)value)[2] = 1024; return 0; /* WORKGROUP_MAX_DIM */
  case 8: *(uint32_t *)value = 1024; return 0;                     /* WORKGROUP_MAX_SIZE */
  case 9: ((uint32_t *)value)[0] = ((uint32_t *)value)[1] = ((uint32_t *)value)[2] = UINT32_MAX; return 0; /* GRID_MAX_DIM */
  case 10: *(uint32_t *)value = UINT32_MAX; return 0;              /* GRID_MAX_SIZE */
  case 11: *(uint32_t *)value = 32; return 0;                      /* FBARRIER_MAX_SIZE */
  case 12: *(uint32_t *)value = 128; return 0;                     /* QUEUES_MAX */
  case 13: *(uint32_t *)value = 64; return 0;                      /* QUEUE_MIN_SIZE */
  case 14: *(uint32_t *)value = 1024; return 0;                    /* QUEUE_MAX_SIZE */
  case 15: *(int *)value = 0; return 0;                            /* QUEUE_TYPE: multi */
  case 16: *(uint32_t *)value = 1; return 0;                       /* NODE */
  case 17: *(int *)value = 1; return 0;                            /* DEVICE: GPU */
  case 21: case 22: *(uint16_t *)value = 1; return 0;              /* VERSION_MAJOR/MINOR */
  case 0xA002: *(uint32_t *)value = cus(); return 0;               /* AMD: COMPUTE_UNIT_COUNT */
  default: trace("query agent attr=%#x", attr); return INVALID_ARGUMENT;
  }
}

status hsa_agent_iterate_regions(handle_t agent, status (*cb)(handle_t, void *), void *data) {
  if (agent.handle != AGENT) return INVALID_AGENT;
  status s = cb((handle_t){KERNARG}, data);
  if (s == INFO_BREAK) return 0;
  if (s) return s;
  s = cb((handle_t){COARSE}, data);
  return s == INFO_BREAK ? 0 : s;
}

status hsa_region_get_info(handle_t r, int attr, void *value) {
  if (r.handle != COARSE && r.handle != KERNARG) return INVALID_REGION;
  bool coarse = r.handle == COARSE;
  switch (attr) {
  case 0: *(int *)value = 0; return 0;                                    /* SEGMENT: global */
  case 1: *(uint32_t *)value = coarse ? 4 : 1 | 2; return 0;              /* GLOBAL_FLAGS: coarse / kernarg+fine */
  case 2: *(size_t *)value = coarse ? (size_t)16 << 30 : (size_t)1 << 30; return 0; /* SIZE */
  case 4: *(size_t *)value = coarse ? (size_t)16 << 30 : (size_t)1 << 30; return 0; /* ALLOC_MAX_SIZE */
  case 5: *(bool *)value = true; return 0;                                /* RUNTIME_ALLOC_ALLOWED */
  case 6: case 7: *(size_t *)value = 4096; return 0;                      /* RUNTIME_ALLOC_GRANULE / ALIGNMENT */
  default: trace("query region attr=%#x", attr); return INVALID_ARGUMENT;
  }
}

/* AMD extensions about host memory: SVM is not supported; page-locking hands back the
   host address (the device here reads host memory); pointer info knows the blocks. */
status hsa_amd_svm_attributes_get(void *p, size_t n, void *attrs, size_t count) {
  (void)p; (void)n; (void)attrs; (void)count;
  trace("query svm-get");
  return ERROR;
}
status hsa_amd_svm_attributes_set(void *p, size_t n, void *attrs, size_t count) {
  (void)p; (void)n; (void)attrs; (void)count;
  trace("query svm-set");
  return ERROR;
}
status hsa_amd_memory_lock(void *host, size_t n, handle_t *agents, int num, void **agent_ptr) {
  (void)agents; (void)num;
  if (!host || !n || !agent_ptr) return INVALID_ARGUMENT;
  *agent_ptr = host;
  trace("lock n=%zu", n);
  return 0;
}
status hsa_amd_memory_unlock(void *host) { (void)host; trace("unlock"); return 0; }
/* hsa_amd_pointer_info_t: size, type, agentBaseAddress, hostBaseAddress, sizeInBytes,
   userData, agentOwner, global_flags. Types: 0 unknown, 1 HSA allocation. */
struct pointer_info { uint32_t size; int type; void *agent_base, *host_base; size_t bytes; void *user; handle_t owner; uint32_t flags; };
status hsa_amd_pointer_info(const void *p, struct pointer_info *info, void *(*alloc)(size_t), uint32_t *num, handle_t **accessible) {
  if (!info) return INVALID_ARGUMENT;
  struct pointer_info r = {.size = info->size};
  pthread_mutex_lock(&stub_lock);
  struct block *b = find_block(p, 1);
  if (b && b->image < 0)
    r.type = 1, r.agent_base = r.host_base = b->p, r.bytes = b->n, r.owner.handle = AGENT,
    r.flags = b->region == COARSE ? 4 : 3;
  pthread_mutex_unlock(&stub_lock);
  memcpy(info, &r, info->size < sizeof r ? info->size : sizeof r);
  if (num) *num = r.type ? 1 : 0;
  if (accessible && alloc) {
    *accessible = r.type ? alloc(sizeof(handle_t)) : NULL;
    if (*accessible) (*accessible)->handle = AGENT;
  }
  return 0;
}
