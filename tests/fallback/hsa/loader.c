/* loader.c - code objects and executables. A code object (an AMDGPU ELF shared object,
   as GCC's mkoffload embeds it) is loaded the way a loader maps a shared object: its
   PT_LOAD segments are copied into one zeroed block of memory and its dynamic
   relocations (R_AMDGPU_RELATIVE64, R_AMDGPU_ABS64) applied, so that what a plugin
   reads back (.offload_var_table, .offload_func_table) holds real addresses of the
   loaded image. Symbols are the code object's defined global dynamic symbols: "<k>.kd"
   objects are kernels (kernel object = the descriptor's address; kernarg, group and
   private segment sizes and kernarg alignment from the code object's metadata notes,
   NT_AMDGPU_METADATA msgpack, as a runtime reports them, else from the descriptor's
   first words), other objects variables.
   Both API generations are served: code object readers + hsa_executable_create_alt +
   load_agent_code_object + get_symbol_by_name, and hsa_code_object_deserialize +
   hsa_executable_create + load_code_object + get_symbol + iterate_symbols. Images are
   numbered in load order ("I<k>" in the trace); each keeps a copy of its bytes as
   loaded, so the trace can show what the host wrote into them before a launch. An
   image whose ELF machine is not the agent's (generic targets excepted) is refused. */
enum { EM_AMDGPU_ = 224, R_ABS64 = 3, R_RELATIVE64 = 13, MAX_IMAGES = 64, MAX_SYMRECS = 8192 };
struct kmeta { char symbol[128]; uint32_t kernarg, align, group, private_; };
struct image {
  unsigned char *elf; size_t size;     /* the code object (a copy, owned) */
  struct kmeta meta[128]; int nmeta;   /* per kernel, from the metadata notes */
  char *base; size_t span;             /* its loaded segments */
  unsigned char *pristine;             /* the loaded bytes right after relocation */
  const Elf64_Sym *syms; size_t nsyms; const char *strs;
  bool live;
};
static struct image images[MAX_IMAGES];
static int nimages;
struct exec { bool frozen; int img[8]; int n; };
struct symrec { int image; unsigned idx; };
static struct symrec symrecs[MAX_SYMRECS];
static int nsymrecs;

/* The agent's ELF machine number (EF_AMDGPU_MACH). */
static unsigned agent_mach(void) {
  static const struct { const char *name; unsigned mach; } t[] = {
    {"fiji", 0x2b}, {"gfx803", 0x2b}, {"gfx900", 0x2c}, {"gfx906", 0x2f}, {"gfx908", 0x30},
    {"gfx90a", 0x3f}, {"gfx90c", 0x32}, {"gfx1030", 0x36}, {"gfx1036", 0x45}, {"gfx1100", 0x41},
    {"gfx1103", 0x44}, {"gfx942", 0x4c}, {"gfx950", 0x4f}};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
    if (!strcmp(t[i].name, ONE_GPU)) return t[i].mach;
  return 0;
}
static bool generic_mach(unsigned m) { return m >= 0x51 && m <= 0x5f; }

static const Elf64_Sym *find_elf_symbol(const struct image *im, const char *name) {
  for (size_t i = 1; i < im->nsyms; i++) {
    const Elf64_Sym *s = &im->syms[i];
    int bind = ELF64_ST_BIND(s->st_info);
    if (s->st_shndx != SHN_UNDEF && (bind == STB_GLOBAL || bind == STB_WEAK) && !strcmp(im->strs + s->st_name, name))
      return s;
  }
  return NULL;
}

static bool is_kernel_name(const char *n) { size_t l = strlen(n); return l > 3 && !strcmp(n + l - 3, ".kd"); }

/* ---- the metadata notes: a msgpack map; "amdhsa.kernels" is an array of maps ---- */
struct mp { const unsigned char *p, *end; };
static bool mp_need(struct mp *m, size_t n) { return (size_t)(m->end - m->p) >= n; }
static uint64_t mp_be(struct mp *m, int n) { uint64_t v = 0; for (int i = 0; i < n; i++) v = v << 8 | *m->p++; return v; }
/* The header of the next value: its kind ('u' integer, 's' string, 'm' map, 'a' array,
   'o' other, with its byte length in *n), its count or integer value in *v. */
static char mp_head(struct mp *m, uint64_t *v, size_t *n) {
  if (!mp_need(m, 1)) return 0;
  unsigned c = *m->p++;
  static const signed char w[] = {1, 2, 4, 8};
  *n = 0;
  if (c <= 0x7f) { *v = c; return 'u'; }
  if ((c & 0xf0) == 0x80) { *v = c & 15; return 'm'; }
  if ((c & 0xf0) == 0x90) { *v = c & 15; return 'a'; }
  if ((c & 0xe0) == 0xa0) { *v = c & 31; return 's'; }
  if (c >= 0xe0) { *v = 0; return 'o'; }
  if (c >= 0xcc && c <= 0xd3) { int k = w[(c - 0xcc) & 3]; if (!mp_need(m, k)) return 0; *v = mp_be(m, k); return c <= 0xcf ? 'u' : 'o'; }
  if (c >= 0xd9 && c <= 0xdb) { int k = w[c - 0xd9]; if (!mp_need(m, k)) return 0; *v = mp_be(m, k); return 's'; }
  if (c == 0xdc || c == 0xdd) { int k = c == 0xdc ? 2 : 4; if (!mp_need(m, k)) return 0; *v = mp_be(m, k); return 'a'; }
  if (c == 0xde || c == 0xdf) { int k = c == 0xde ? 2 : 4; if (!mp_need(m, k)) return 0; *v = mp_be(m, k); return 'm'; }
  if (c == 0xc0 || c == 0xc2 || c == 0xc3) { *v = 0; return 'o'; }
  if (c == 0xca || c == 0xcb) { *n = c == 0xca ? 4 : 8; *v = 0; return 'o'; }
  if (c >= 0xc4 && c <= 0xc6) { int k = w[c - 0xc4]; if (!mp_need(m, k)) return 0; *n = mp_be(m, k); *v = 0; return 'o'; }
  return 0;
}
static bool mp_skip(struct mp *m, int depth) {
  uint64_t v; size_t n;
  char k = mp_head(m, &v, &n);
  if (!k || depth > 16) return false;
  if (k == 's') n = v;
  if (n) { if (!mp_need(m, n)) return false; m->p += n; }
  if (k == 'a') for (uint64_t i = 0; i < v; i++) if (!mp_skip(m, depth + 1)) return false;
  if (k == 'm') for (uint64_t i = 0; i < 2 * v; i++) if (!mp_skip(m, depth + 1)) return false;
  return true;
}
static bool mp_key(struct mp *m, char *buf, size_t size) {
  uint64_t v; size_t n;
  if (mp_head(m, &v, &n) != 's' || !mp_need(m, v)) return false;
  snprintf(buf, size, "%.*s", (int)v, (const char *)m->p);
  m->p += v;
  return true;
}
static void read_kernel_meta(struct image *im, struct mp *m, uint64_t fields) {
  struct kmeta k = {0};
  for (uint64_t i = 0; i < fields; i++) {
    char key[64];
    if (!mp_key(m, key, sizeof key)) return;
    const unsigned char *at = m->p;
    uint64_t v; size_t n;
    char kind = mp_head(m, &v, &n);
    if (kind == 's' && !strcmp(key, ".symbol") && mp_need(m, v)) { snprintf(k.symbol, sizeof k.symbol, "%.*s", (int)v, (const char *)m->p); m->p += v; continue; }
    if (kind == 'u' && !strcmp(key, ".kernarg_segment_size")) { k.kernarg = (uint32_t)v; continue; }
    if (kind == 'u' && !strcmp(key, ".kernarg_segment_align")) { k.align = (uint32_t)v; continue; }
    if (kind == 'u' && !strcmp(key, ".group_segment_fixed_size")) { k.group = (uint32_t)v; continue; }
    if (kind == 'u' && !strcmp(key, ".private_segment_fixed_size")) { k.private_ = (uint32_t)v; continue; }
    m->p = at;
    if (!mp_skip(m, 0)) return;
  }
  if (k.symbol[0] && im->nmeta < 128) im->meta[im->nmeta++] = k;
}
static void read_metadata(struct image *im, const unsigned char *desc, size_t size) {
  struct mp m = {desc, desc + size};
  uint64_t v; size_t n;
  if (mp_head(&m, &v, &n) != 'm') return;
  for (uint64_t i = 0, top = v; i < top; i++) {
    char key[64];
    if (!mp_key(&m, key, sizeof key)) return;
    if (strcmp(key, "amdhsa.kernels")) { if (!mp_skip(&m, 0)) return; continue; }
    if (mp_head(&m, &v, &n) != 'a') return;
    for (uint64_t k = 0, count = v; k < count; k++) {
      if (mp_head(&m, &v, &n) != 'm') return;
      read_kernel_meta(im, &m, v);
    }
  }
}
static void read_notes(struct image *im) {
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)im->elf;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(im->elf + h->e_shoff);
  for (int i = 0; i < h->e_shnum; i++) {
    if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset + sh[i].sh_size > im->size) continue;
    const unsigned char *p = im->elf + sh[i].sh_offset, *end = p + sh[i].sh_size;
    while (end - p >= 12) {
      uint32_t namesz = ((const uint32_t *)p)[0], descsz = ((const uint32_t *)p)[1], type = ((const uint32_t *)p)[2];
      const unsigned char *name = p + 12, *desc = name + ((namesz + 3) & ~3u);
      if (desc + descsz > end) break;
      if (type == 32 && namesz == 7 && !memcmp(name, "AMDGPU", 7)) read_metadata(im, desc, descsz);
      p = desc + ((descsz + 3) & ~3u);
    }
  }
}
static const struct kmeta *kernel_meta(const struct image *im, const char *symbol) {
  for (int i = 0; i < im->nmeta; i++)
    if (!strcmp(im->meta[i].symbol, symbol)) return &im->meta[i];
  return NULL;
}

/* Traces the loaded image's tables that map offload functions and variables
   (sections .gnu.offload_funcs and .gnu.offload_vars, as relocated). */
static void trace_tables(int id) {
  const struct image *im = &images[id];
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)im->elf;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(im->elf + h->e_shoff);
  if (h->e_shstrndx >= h->e_shnum) return;
  const char *names = (const char *)im->elf + sh[h->e_shstrndx].sh_offset;
  for (int i = 0; i < h->e_shnum; i++) {
    const char *n = names + sh[i].sh_name;
    bool funcs = !strcmp(n, ".gnu.offload_funcs"), vars = !strcmp(n, ".gnu.offload_vars");
    if ((!funcs && !vars) || sh[i].sh_addr + sh[i].sh_size > im->span) continue;
    char line[3000] = "", b[160];
    size_t len = 0, count = sh[i].sh_size / 8;
    for (size_t k = 0; k < count && k < 64; k++) {
      uint64_t w = ((uint64_t *)(im->base + sh[i].sh_addr))[k];
      len += snprintf(line + len, sizeof line - len, "%s%s", k ? "," : "", vars && k % 2 ? (snprintf(b, 160, "%llu", (unsigned long long)w), b) : sym(w, b));
    }
    trace("table I=%d kind=%s entries=%s", id, funcs ? "funcs" : "vars", count ? line : "-");
  }
}

/* Loads `code` into a new image of executable `x`; returns a status. */
static status load_elf(struct exec *x, const void *code, size_t size, const char *via) {
  const Elf64_Ehdr *h = code;
  if (!code || size < sizeof *h || memcmp(h->e_ident, ELFMAG, SELFMAG) || h->e_ident[EI_CLASS] != ELFCLASS64 ||
      h->e_machine != EM_AMDGPU_ || h->e_phoff + (size_t)h->e_phnum * sizeof(Elf64_Phdr) > size ||
      h->e_shoff + (size_t)h->e_shnum * sizeof(Elf64_Shdr) > size) {
    trace("load-refused reason=not-an-amdgpu-elf via=%s", via);
    return INVALID_CODE_OBJECT;
  }
  unsigned mach = h->e_flags & 0xff;
  if (mach != agent_mach() && !generic_mach(mach)) {
    trace("load-refused reason=mach-%#x via=%s", mach, via);
    return INCOMPATIBLE_ARGUMENTS;
  }
  if (x->frozen) return FROZEN_EXECUTABLE;
  pthread_mutex_lock(&stub_lock);
  if (nimages == MAX_IMAGES || x->n == 8) { pthread_mutex_unlock(&stub_lock); return OUT_OF_RESOURCES; }
  int id = nimages++;
  struct image *im = &images[id];
  pthread_mutex_unlock(&stub_lock);
  im->elf = malloc(size);
  memcpy(im->elf, code, size);
  im->size = size;
  h = (const Elf64_Ehdr *)im->elf;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(im->elf + h->e_phoff);
  for (int i = 0; i < h->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_vaddr + ph[i].p_memsz > im->span) im->span = ph[i].p_vaddr + ph[i].p_memsz;
  im->span = (im->span + 4095) & ~(size_t)4095;
  if (posix_memalign((void **)&im->base, 4096, im->span ? im->span : 4096)) return OUT_OF_RESOURCES;
  memset(im->base, 0, im->span);
  for (int i = 0; i < h->e_phnum; i++)
    if (ph[i].p_type == PT_LOAD && ph[i].p_offset + ph[i].p_filesz <= size)
      memcpy(im->base + ph[i].p_vaddr, im->elf + ph[i].p_offset, ph[i].p_filesz);
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(im->elf + h->e_shoff);
  for (int i = 0; i < h->e_shnum; i++)
    if (sh[i].sh_type == SHT_DYNSYM && sh[i].sh_link < h->e_shnum) {
      im->syms = (const Elf64_Sym *)(im->elf + sh[i].sh_offset);
      im->nsyms = sh[i].sh_size / sizeof(Elf64_Sym);
      im->strs = (const char *)im->elf + sh[sh[i].sh_link].sh_offset;
    }
  for (int i = 0; i < h->e_shnum; i++) {
    if (sh[i].sh_type != SHT_RELA) continue;
    const Elf64_Rela *r = (const Elf64_Rela *)(im->elf + sh[i].sh_offset);
    for (size_t k = 0; k < sh[i].sh_size / sizeof *r; k++) {
      uint64_t *at = (uint64_t *)(im->base + r[k].r_offset);
      unsigned type = ELF64_R_TYPE(r[k].r_info), si = ELF64_R_SYM(r[k].r_info);
      if (r[k].r_offset + 8 > im->span) { BAD("relocation outside the image"); continue; }
      if (type == R_RELATIVE64) *at = (uintptr_t)im->base + r[k].r_addend;
      else if (type == R_ABS64 && si < im->nsyms && im->syms[si].st_shndx != SHN_UNDEF)
        *at = (uintptr_t)im->base + im->syms[si].st_value + r[k].r_addend;
      else BAD("image %d: unsupported relocation type %u (symbol %u)", id, type, si);
    }
  }
  read_notes(im);
  im->pristine = malloc(im->span);
  memcpy(im->pristine, im->base, im->span);
  pthread_mutex_lock(&stub_lock);
  add_block(im->base, im->span, 0, id);
  im->live = true;
  x->img[x->n++] = id;
  pthread_mutex_unlock(&stub_lock);
  trace("load I=%d size=%zu mach=%#x via=%s", id, size, mach, via);
  trace_tables(id);
  return 0;
}

/* ---- readers and code objects ---- */
struct reader { const void *code; size_t size; };
status hsa_code_object_reader_create_from_memory(const void *code, size_t size, handle_t *r) {
  struct reader *x = malloc(sizeof *x);
  *x = (struct reader){code, size};
  r->handle = (uintptr_t)x;
  __atomic_add_fetch(&stub_hsa_live[1], 1, __ATOMIC_SEQ_CST);
  return 0;
}
status hsa_code_object_reader_destroy(handle_t r) {
  free((void *)(uintptr_t)r.handle);
  __atomic_sub_fetch(&stub_hsa_live[1], 1, __ATOMIC_SEQ_CST);
  return 0;
}
/* A deserialized code object owns a copy of the bytes (never destroyed: the HSA 1.0
   API has hsa_code_object_destroy, which no plugin here calls). */
status hsa_code_object_deserialize(void *code, size_t size, const char *options, handle_t *co) {
  (void)options;
  if (!code || !size || !co) return INVALID_ARGUMENT;
  struct reader *x = malloc(sizeof *x);
  void *copy = malloc(size);
  memcpy(copy, code, size);
  *x = (struct reader){copy, size};
  co->handle = (uintptr_t)x;
  return 0;
}

/* ---- executables ---- */
static status new_exec(handle_t *e) {
  e->handle = (uintptr_t)calloc(1, sizeof(struct exec));
  __atomic_add_fetch(&stub_hsa_live[2], 1, __ATOMIC_SEQ_CST);
  return 0;
}
status hsa_executable_create_alt(int profile, int rounding, const char *options, handle_t *e) {
  (void)profile; (void)rounding; (void)options;
  return new_exec(e);
}
status hsa_executable_create(int profile, int state, const char *options, handle_t *e) {
  (void)profile; (void)options;
  if (state != 0) trace("exec-create state=%d", state);
  return new_exec(e);
}
status hsa_executable_load_agent_code_object(handle_t e, handle_t agent, handle_t r, const char *o, void *loaded) {
  (void)o; (void)loaded;
  struct reader *y = (void *)(uintptr_t)r.handle;
  if (agent.handle != AGENT || !y) return INVALID_ARGUMENT;
  return load_elf((void *)(uintptr_t)e.handle, y->code, y->size, "reader");
}
status hsa_executable_load_code_object(handle_t e, handle_t agent, handle_t co, const char *o) {
  (void)o;
  struct reader *y = (void *)(uintptr_t)co.handle;
  if (agent.handle != AGENT || !y) return INVALID_ARGUMENT;
  return load_elf((void *)(uintptr_t)e.handle, y->code, y->size, "deserialize");
}
status hsa_executable_global_variable_define(handle_t e, const char *name, void *addr) {
  (void)e;
  char a[160];
  trace("define name=%s addr=%s", name, sym((uintptr_t)addr, a));
  return 0;
}
status hsa_executable_freeze(handle_t e, const char *o) { (void)o; ((struct exec *)(uintptr_t)e.handle)->frozen = true; return 0; }
status hsa_executable_validate(handle_t e, uint32_t *result) { *result = !((struct exec *)(uintptr_t)e.handle)->frozen; return 0; }
/* The images stay mapped (marked dead) so a stale kernel object is recognised. */
status hsa_executable_destroy(handle_t e) {
  struct exec *x = (void *)(uintptr_t)e.handle;
  pthread_mutex_lock(&stub_lock);
  for (int i = 0; i < x->n; i++) images[x->img[i]].live = false;
  pthread_mutex_unlock(&stub_lock);
  for (int i = 0; i < x->n; i++) trace("unload I=%d", x->img[i]);
  free(x);
  __atomic_sub_fetch(&stub_hsa_live[2], 1, __ATOMIC_SEQ_CST);
  return 0;
}

/* ---- symbols ---- */
static handle_t symrec_of(int image, unsigned idx) {
  pthread_mutex_lock(&stub_lock);
  int i = 0;
  while (i < nsymrecs && (symrecs[i].image != image || symrecs[i].idx != idx)) i++;
  if (i == nsymrecs && nsymrecs < MAX_SYMRECS) symrecs[nsymrecs++] = (struct symrec){image, idx};
  pthread_mutex_unlock(&stub_lock);
  return (handle_t){i < MAX_SYMRECS ? (uintptr_t)&symrecs[i] : 0};
}
static status lookup(handle_t e, const char *name, handle_t *out) {
  struct exec *x = (void *)(uintptr_t)e.handle;
  if (!x || !name || !out) return INVALID_ARGUMENT;
  for (int i = 0; i < x->n; i++) {
    const Elf64_Sym *s = find_elf_symbol(&images[x->img[i]], name);
    if (s && (ELF64_ST_TYPE(s->st_info) == STT_OBJECT)) {
      *out = symrec_of(x->img[i], (unsigned)(s - images[x->img[i]].syms));
      return out->handle ? 0 : OUT_OF_RESOURCES;
    }
  }
  return INVALID_SYMBOL_NAME;
}
status hsa_executable_get_symbol_by_name(handle_t e, const char *name, const handle_t *agent, handle_t *s) {
  (void)agent;
  return lookup(e, name, s);
}
status hsa_executable_get_symbol(handle_t e, const char *module, const char *name, handle_t agent, int32_t cc, handle_t *s) {
  (void)module; (void)agent; (void)cc;
  return lookup(e, name, s);
}
status hsa_executable_iterate_symbols(handle_t e, status (*cb)(handle_t, handle_t, void *), void *data) {
  struct exec *x = (void *)(uintptr_t)e.handle;
  for (int i = 0; i < x->n; i++) {
    struct image *im = &images[x->img[i]];
    for (size_t k = 1; k < im->nsyms; k++) {
      const Elf64_Sym *s = &im->syms[k];
      int bind = ELF64_ST_BIND(s->st_info);
      if (s->st_shndx == SHN_UNDEF || (bind != STB_GLOBAL && bind != STB_WEAK) || ELF64_ST_TYPE(s->st_info) != STT_OBJECT) continue;
      status st = cb(e, symrec_of(x->img[i], (unsigned)k), data);
      if (st == INFO_BREAK) return 0;
      if (st) return st;
    }
  }
  return 0;
}
status hsa_executable_symbol_get_info(handle_t h, int attr, void *value) {
  struct symrec *r = (void *)(uintptr_t)h.handle;
  if (!r) return INVALID_ARGUMENT;
  struct image *im = &images[r->image];
  const Elf64_Sym *s = &im->syms[r->idx];
  const char *name = im->strs + s->st_name;
  bool kernel = is_kernel_name(name);
  uint64_t addr = (uintptr_t)im->base + s->st_value;
  const uint32_t *kd = (const uint32_t *)(im->base + s->st_value);
  const struct kmeta *meta = kernel ? kernel_meta(im, name) : NULL;
  switch (attr) {
  case 0: *(int *)value = kernel ? 1 : 0; return 0;                          /* TYPE: kernel / variable */
  case 1: *(uint32_t *)value = (uint32_t)strlen(name); return 0;             /* NAME_LENGTH */
  case 2: memcpy(value, name, strlen(name)); return 0;                       /* NAME (no NUL) */
  case 3: *(uint32_t *)value = 0; return 0;                                  /* MODULE_NAME_LENGTH */
  case 4: return 0;                                                          /* MODULE_NAME */
  case 5: *(int *)value = 1; return 0;                                       /* LINKAGE: program */
  case 6: *(int *)value = 0; return 0;                                       /* VARIABLE_ALLOCATION: agent */
  case 7: *(int *)value = 0; return 0;                                       /* VARIABLE_SEGMENT: global */
  case 8: *(uint32_t *)value = 8; return 0;                                  /* VARIABLE_ALIGNMENT */
  case 9: *(uint32_t *)value = (uint32_t)s->st_size; return 0;               /* VARIABLE_SIZE */
  case 10: *(bool *)value = false; return 0;                                 /* VARIABLE_IS_CONST */
  case 11: if (!kernel) break; *(uint32_t *)value = meta ? meta->kernarg : kd[2]; return 0; /* KERNARG_SEGMENT_SIZE */
  case 12: if (!kernel) break; *(uint32_t *)value = meta && meta->align ? meta->align : 8; return 0; /* KERNARG_SEGMENT_ALIGNMENT */
  case 13: if (!kernel) break; *(uint32_t *)value = meta ? meta->group : kd[0]; return 0;   /* GROUP_SEGMENT_SIZE */
  case 14: if (!kernel) break; *(uint32_t *)value = meta ? meta->private_ : kd[1]; return 0; /* PRIVATE_SEGMENT_SIZE */
  case 15: if (!kernel) break; *(bool *)value = false; return 0;             /* KERNEL_DYNAMIC_CALLSTACK */
  case 17: *(bool *)value = true; return 0;                                  /* IS_DEFINITION */
  case 18: *(uint32_t *)value = 0; return 0;                                 /* KERNEL_CALL_CONVENTION */
  case 20: ((handle_t *)value)->handle = AGENT; return 0;                    /* AGENT */
  case 21: if (kernel) break; *(uint64_t *)value = addr; return 0;           /* VARIABLE_ADDRESS */
  case 22: if (!kernel) break; *(uint64_t *)value = addr; return 0;          /* KERNEL_OBJECT */
  }
  trace("query symbol attr=%#x kernel=%d", attr, kernel);
  return INVALID_ARGUMENT;
}

/* ---- what the device side asks ---- */
static const char *image_symbol_at(int image, uint64_t off, uint64_t *sym_off) {
  const struct image *im = &images[image];
  const Elf64_Sym *best = NULL;
  for (size_t i = 1; i < im->nsyms; i++) {
    const Elf64_Sym *s = &im->syms[i];
    if (s->st_shndx == SHN_UNDEF || ELF64_ST_TYPE(s->st_info) > STT_FUNC) continue;
    if (off >= s->st_value && (off < s->st_value + s->st_size || (!s->st_size && off == s->st_value)) &&
        (!best || s->st_size > 0)) best = s;
  }
  if (!best) return NULL;
  *sym_off = off - best->st_value;
  return im->strs + best->st_name;
}

static uint64_t image_symbol_address(int image, const char *name, uint64_t *size) {
  const Elf64_Sym *s = find_elf_symbol(&images[image], name);
  if (size) *size = s ? s->st_size : 0;
  return s ? (uintptr_t)images[image].base + s->st_value : 0;
}

/* For tests: the address of `name` in the most recently loaded live image that has it
   (0: none). */
uint64_t stub_hsa_image_symbol(const char *name) {
  for (int i = nimages - 1; i >= 0; i--)
    if (images[i].live && find_elf_symbol(&images[i], name)) return image_symbol_address(i, name, NULL);
  return 0;
}

/* The kernel whose descriptor is at `object` in a live image ("<k>.kd"), or NULL. */
static const char *kernel_at(uint64_t object, int *image) {
  for (int i = 0; i < nimages; i++) {
    struct image *im = &images[i];
    if (!im->live || object < (uintptr_t)im->base || object >= (uintptr_t)im->base + im->span) continue;
    uint64_t so;
    const char *n = image_symbol_at(i, object - (uintptr_t)im->base, &so);
    if (n && !so && is_kernel_name(n)) { *image = i; return n; }
  }
  return NULL;
}

/* Traces the bytes of the image's writable segments that differ from the image as
   loaded: what the host wrote into it (ICVs, variables) before launch `launch`. */
static void image_diff(int image, const char *launch) {
  const struct image *im = &images[image];
  const Elf64_Ehdr *h = (const Elf64_Ehdr *)im->elf;
  const Elf64_Phdr *ph = (const Elf64_Phdr *)(im->elf + h->e_phoff);
  for (int i = 0; i < h->e_phnum; i++) {
    if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_W)) continue;
    size_t a = ph[i].p_vaddr, end = a + ph[i].p_memsz;
    while (a < end) {
      if (im->base[a] == (char)im->pristine[a]) { a++; continue; }
      size_t b = a, same = 0;
      while (b < end && same < 8) { same = im->base[b] == (char)im->pristine[b] ? same + 1 : 0; b++; }
      b -= same;
      char hex[2 * 64 + 1] = "", at[160];
      uint64_t fnv = 0xcbf29ce484222325ull;
      for (size_t k = 0; k < b - a; k++) fnv = (fnv ^ (unsigned char)im->base[a + k]) * 0x100000001b3ull;
      for (size_t k = 0; k < b - a && k < 64; k++) sprintf(hex + 2 * k, "%02x", (unsigned char)im->base[a + k]);
      trace("image L=%s at=%s n=%zu bytes=%s%s hash=%016llx", launch, sym((uintptr_t)im->base + a, at), b - a, hex,
            b - a > 64 ? "..." : "", (unsigned long long)fnv);
      a = b;
    }
  }
}
