/* prototypes.c - compile-time check of include/gomp_plugin_nvptx.h against the ABI spec.
 *
 *   gcc -std=c11 -Wall -Werror -Werror=incompatible-pointer-types -fsyntax-only \
 *       -Iinclude abi-tests/prototypes.c
 *
 * (abi-tests/check-exports.sh runs exactly this.) It compiles only if our generated
 * header agrees with the C signatures of the GOMP_OFFLOAD_* entry points we export,
 * as docs/plugin-abi.md section 2 gives them (= libgomp/libgomp-plugin.h of
 * GCC 14-16):
 *   1. every entry point is declared by the header (using an undeclared identifier is
 *      an error, and the table below is compiled before any declaration of our own);
 *   2. the spec's prototypes are then redeclared verbatim: C makes a redeclaration
 *      with an incompatible type a hard error ("conflicting types"), down to
 *      parameter count, return type and pointee qualifiers;
 *   3. the header's AddrPair has the layout of libgomp's struct addr_pair, checked
 *      with _Static_assert; load_image's prototype is redeclared with the header's
 *      name in place of the tag (the C types differ by name only);
 *   4. the plugin's own gomp_nvptx_* API (README "Page-locking host memory") has the
 *      prototypes the README documents.
 * Types that are typedefs of the same C type are compatible, so uint32_t for
 * `unsigned` and size_t for uintptr_t are accepted on LP64 Linux, as the ABI is.
 * Add an entry point here when it is added to libgomp.map.
 */
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gomp_plugin_nvptx.h"

/* 1. Declared by the header (before this file declares anything itself). */
void (*const gomp_plugin_nvptx_declared_by_header[])(void) = {
  (void (*)(void)) GOMP_OFFLOAD_version,
  (void (*)(void)) GOMP_OFFLOAD_get_name,
  (void (*)(void)) GOMP_OFFLOAD_get_caps,
  (void (*)(void)) GOMP_OFFLOAD_get_dev_caps,
  (void (*)(void)) GOMP_OFFLOAD_get_numa_node,
  (void (*)(void)) GOMP_OFFLOAD_get_type,
  (void (*)(void)) GOMP_OFFLOAD_get_num_devices,
  (void (*)(void)) GOMP_OFFLOAD_get_uid,
  (void (*)(void)) GOMP_OFFLOAD_init_device,
  (void (*)(void)) GOMP_OFFLOAD_fini_device,
  (void (*)(void)) GOMP_OFFLOAD_load_image,
  (void (*)(void)) GOMP_OFFLOAD_unload_image,
  (void (*)(void)) GOMP_OFFLOAD_alloc,
  (void (*)(void)) GOMP_OFFLOAD_free,
  (void (*)(void)) GOMP_OFFLOAD_dev2host,
  (void (*)(void)) GOMP_OFFLOAD_host2dev,
  (void (*)(void)) GOMP_OFFLOAD_dev2dev,
  (void (*)(void)) GOMP_OFFLOAD_memset,
  (void (*)(void)) GOMP_OFFLOAD_run,
  (void (*)(void)) GOMP_OFFLOAD_async_run,
  (void (*)(void)) GOMP_OFFLOAD_session_size,
  (void (*)(void)) GOMP_OFFLOAD_session_start,
  (void (*)(void)) GOMP_OFFLOAD_session_set_target_var_table,
  (void (*)(void)) GOMP_OFFLOAD_memcpy2d,
  (void (*)(void)) GOMP_OFFLOAD_memcpy3d,
  (void (*)(void)) GOMP_OFFLOAD_managed_alloc,
  (void (*)(void)) GOMP_OFFLOAD_managed_free,
  (void (*)(void)) GOMP_OFFLOAD_is_accessible_ptr,
  (void (*)(void)) GOMP_OFFLOAD_page_locked_host_alloc,
  (void (*)(void)) GOMP_OFFLOAD_page_locked_host_free,
  (void (*)(void)) GOMP_OFFLOAD_interop,
  (void (*)(void)) GOMP_OFFLOAD_get_interop_int,
  (void (*)(void)) GOMP_OFFLOAD_get_interop_ptr,
  (void (*)(void)) GOMP_OFFLOAD_get_interop_str,
  (void (*)(void)) GOMP_OFFLOAD_get_interop_type_desc,
  (void (*)(void)) GOMP_OFFLOAD_openacc_exec,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_exec,
  (void (*)(void)) GOMP_OFFLOAD_openacc_create_thread_data,
  (void (*)(void)) GOMP_OFFLOAD_openacc_destroy_thread_data,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_construct,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_destruct,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_test,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_synchronize,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_serialize,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_queue_callback,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_host2dev,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_dev2host,
  (void (*)(void)) GOMP_OFFLOAD_openacc_async_dev2dev,
  (void (*)(void)) GOMP_OFFLOAD_openacc_get_property,
  (void (*)(void)) GOMP_OFFLOAD_openacc_cuda_get_current_device,
  (void (*)(void)) GOMP_OFFLOAD_openacc_cuda_get_current_context,
  (void (*)(void)) GOMP_OFFLOAD_openacc_cuda_get_stream,
  (void (*)(void)) GOMP_OFFLOAD_openacc_cuda_set_stream,
  /* The plugin's own API (not libgomp's contract; section 4 below). */
  (void (*)(void)) gomp_nvptx_host_lock,
  (void (*)(void)) gomp_nvptx_host_unlock,
};

/* 3. libgomp's table entry (libgomp-plugin.h) and the header's equivalent. */
struct addr_pair
{
  uintptr_t start;
  uintptr_t end;
};

#define SAME_TYPE(expr, type) _Generic ((expr), type: 1, default: 0)
_Static_assert (sizeof (AddrPair) == sizeof (struct addr_pair), "AddrPair size");
_Static_assert (alignof (AddrPair) == alignof (struct addr_pair), "AddrPair alignment");
_Static_assert (offsetof (AddrPair, start) == offsetof (struct addr_pair, start),
		"AddrPair.start offset");
_Static_assert (offsetof (AddrPair, end) == offsetof (struct addr_pair, end),
		"AddrPair.end offset");
_Static_assert (SAME_TYPE (((AddrPair *) 0)->start, uintptr_t), "AddrPair.start type");
_Static_assert (SAME_TYPE (((AddrPair *) 0)->end, uintptr_t), "AddrPair.end type");

/* 2. The spec's prototypes (plugin-abi.md section 2), verbatim. */
extern unsigned GOMP_OFFLOAD_version (void);
extern const char *GOMP_OFFLOAD_get_name (void);
extern unsigned GOMP_OFFLOAD_get_caps (void);
extern int GOMP_OFFLOAD_get_type (void);
extern int GOMP_OFFLOAD_get_num_devices (unsigned omp_requires_mask);
extern const char *GOMP_OFFLOAD_get_uid (int ord);
extern bool GOMP_OFFLOAD_init_device (int ord);
extern bool GOMP_OFFLOAD_fini_device (int ord);
extern bool GOMP_OFFLOAD_unload_image (int ord, unsigned version, const void *target_data);
extern void *GOMP_OFFLOAD_alloc (int ord, size_t);
extern bool GOMP_OFFLOAD_free (int ord, void *);
extern bool GOMP_OFFLOAD_dev2host (int, void *dst, const void *src, size_t);
extern bool GOMP_OFFLOAD_host2dev (int, void *dst, const void *src, size_t);
extern bool GOMP_OFFLOAD_dev2dev (int, void *dst, const void *src, size_t);
extern bool GOMP_OFFLOAD_memset (int ord, void *ptr, int val, size_t n);
extern void GOMP_OFFLOAD_run (int ord, void *fn, void *vars, void **args);
/* libgomp 17 (plugin-abi.md section 7); run, async_run and openacc_*exec keep the
   prototypes above in the header, the libgomp 17 forms being read from the same
   registers (section 7.2). */
extern unsigned GOMP_OFFLOAD_get_dev_caps (int ord);
extern int GOMP_OFFLOAD_get_numa_node (int ord);
extern size_t GOMP_OFFLOAD_session_size (void);
extern void GOMP_OFFLOAD_session_start (void *session, int ord);
extern void GOMP_OFFLOAD_session_set_target_var_table (void *session, void *table);
extern void GOMP_OFFLOAD_async_run (int ord, void *fn, void *vars, void **args, void *async_data);
extern int GOMP_OFFLOAD_memcpy2d (int dst_ord, int src_ord, size_t dim1_size, size_t dim0_len,
				  void *dst, size_t dst_off1_size, size_t dst_off0_len,
				  size_t dst_dim1_size, const void *src, size_t src_off1_size,
				  size_t src_off0_len, size_t src_dim1_size);
extern int GOMP_OFFLOAD_memcpy3d (int dst_ord, int src_ord, size_t dim2_size, size_t dim1_len,
				  size_t dim0_len, void *dst, size_t dst_off2_size,
				  size_t dst_off1_len, size_t dst_off0_len, size_t dst_dim2_size,
				  size_t dst_dim1_len, const void *src, size_t src_off2_size,
				  size_t src_off1_len, size_t src_off0_len, size_t src_dim2_size,
				  size_t src_dim1_len);
extern void *GOMP_OFFLOAD_managed_alloc (int, size_t);
extern bool GOMP_OFFLOAD_managed_free (int, void *);
extern int GOMP_OFFLOAD_is_accessible_ptr (int ord, const void *, size_t);
extern bool GOMP_OFFLOAD_page_locked_host_alloc (void **ptr, size_t);
extern bool GOMP_OFFLOAD_page_locked_host_free (void *);

/* Interop (libgomp 15+): libgomp-plugin.h's object and omp.h's enums.  The header's
   InteropObj must have the layout of struct interop_obj_t. */
typedef enum omp_interop_property_t { omp_ipr_fr_id = -1, omp_ipr_first = -9 } omp_interop_property_t;
typedef enum omp_interop_rc_t { omp_irc_no_value = 1, omp_irc_other = -6 } omp_interop_rc_t;
typedef enum omp_interop_fr_t { omp_ifr_cuda = 1, omp_ifr_last = 7 } omp_interop_fr_t;
struct interop_obj_t { void *stream; void *device_data; omp_interop_fr_t fr; int device_num; };
enum gomp_interop_flag { gomp_interop_flag_init, gomp_interop_flag_use, gomp_interop_flag_destroy };
_Static_assert (sizeof (InteropObj) == sizeof (struct interop_obj_t), "InteropObj size");
_Static_assert (offsetof (InteropObj, fr) == offsetof (struct interop_obj_t, fr), "InteropObj.fr");
_Static_assert (offsetof (InteropObj, device_num) == offsetof (struct interop_obj_t, device_num),
		"InteropObj.device_num");
extern void GOMP_OFFLOAD_interop (InteropObj *, int, enum gomp_interop_flag, bool, const char *);
extern intptr_t GOMP_OFFLOAD_get_interop_int (InteropObj *, omp_interop_property_t,
					      omp_interop_rc_t *);
extern void *GOMP_OFFLOAD_get_interop_ptr (InteropObj *, omp_interop_property_t,
					   omp_interop_rc_t *);
extern const char *GOMP_OFFLOAD_get_interop_str (InteropObj *obj, omp_interop_property_t,
						 omp_interop_rc_t *);
extern const char *GOMP_OFFLOAD_get_interop_type_desc (InteropObj *, omp_interop_property_t);

/* load_image, 6-argument form (GCC 14+; libgomp 13 passes the first five). The tag
   is mapped to the header's name, whose layout section 3 proved identical. */
#define addr_pair AddrPair
extern int GOMP_OFFLOAD_load_image (int ord, unsigned version, const void *target_data,
				    struct addr_pair **target_table,
				    uint64_t **rev_fn_table, uint64_t *host_ind_fn_table);
#undef addr_pair

/* OpenACC (all versions; async_dev2dev 16+). The queue is opaque to libgomp; the
   header names its tag GoaccAsyncqueue. libgomp's property union and enum are
   declared as in libgomp-plugin.h; the union must have the header's layout and the
   tags are mapped like addr_pair above. */
enum goacc_property
{
  GOACC_PROPERTY_MEMORY = 1,
  GOACC_PROPERTY_FREE_MEMORY = 2,
  GOACC_PROPERTY_NAME = 0x10001,
  GOACC_PROPERTY_VENDOR = 0x10002,
  GOACC_PROPERTY_DRIVER = 0x10003
};
union goacc_property_value_spec { const char *ptr; size_t val; };
_Static_assert (sizeof (PropertyValue) == sizeof (union goacc_property_value_spec),
		"PropertyValue size");
#define goacc_asyncqueue GoaccAsyncqueue
#define goacc_property_value PropertyValue
extern void GOMP_OFFLOAD_openacc_exec (void (*) (void *), size_t, void **, void **,
				       unsigned *, void *);
extern void GOMP_OFFLOAD_openacc_async_exec (void (*) (void *), size_t, void **, void **,
					     unsigned *, void *, struct goacc_asyncqueue *);
extern void *GOMP_OFFLOAD_openacc_create_thread_data (int);
extern void GOMP_OFFLOAD_openacc_destroy_thread_data (void *);
extern struct goacc_asyncqueue *GOMP_OFFLOAD_openacc_async_construct (int);
extern bool GOMP_OFFLOAD_openacc_async_destruct (struct goacc_asyncqueue *);
extern int GOMP_OFFLOAD_openacc_async_test (struct goacc_asyncqueue *);
extern bool GOMP_OFFLOAD_openacc_async_synchronize (struct goacc_asyncqueue *);
extern bool GOMP_OFFLOAD_openacc_async_serialize (struct goacc_asyncqueue *,
						  struct goacc_asyncqueue *);
extern void GOMP_OFFLOAD_openacc_async_queue_callback (struct goacc_asyncqueue *,
						       void (*)(void *), void *);
extern bool GOMP_OFFLOAD_openacc_async_host2dev (int, void *, const void *, size_t,
						 struct goacc_asyncqueue *);
extern bool GOMP_OFFLOAD_openacc_async_dev2host (int, void *, const void *, size_t,
						 struct goacc_asyncqueue *);
extern bool GOMP_OFFLOAD_openacc_async_dev2dev (int, void *, const void *, size_t,
						struct goacc_asyncqueue *);
extern union goacc_property_value GOMP_OFFLOAD_openacc_get_property (int,
								     enum goacc_property);
extern void *GOMP_OFFLOAD_openacc_cuda_get_current_device (void);
extern void *GOMP_OFFLOAD_openacc_cuda_get_current_context (void);
extern void *GOMP_OFFLOAD_openacc_cuda_get_stream (struct goacc_asyncqueue *);
extern int GOMP_OFFLOAD_openacc_cuda_set_stream (struct goacc_asyncqueue *, void *);
#undef goacc_asyncqueue
#undef goacc_property_value

/* 4. The plugin's own API (src/edge/extensions.rs), as the README documents it. */
extern int gomp_nvptx_host_lock (void *p, size_t size, int device);
extern int gomp_nvptx_host_unlock (void *p, int device);
