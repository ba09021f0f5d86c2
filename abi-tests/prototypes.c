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
 * The entry points and their prototypes are entry_points.inc, generated from the
 * table src/edge/table.rs (cargo run -p gomp-plugin --example edge_table -- write).
 */
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gomp_plugin_nvptx.h"

/* 1. Declared by the header (before this file declares anything itself): every entry
   point of entry_points.inc, generated from the table src/edge/table.rs. */
#define ENTRY_POINT(name, ...) (void (*)(void)) name,
void (*const gomp_plugin_nvptx_declared_by_header[])(void) = {
#include "entry_points.inc"
  /* The plugin's own API (not libgomp's contract; section 4 below). */
  (void (*)(void)) gomp_nvptx_host_lock,
  (void (*)(void)) gomp_nvptx_host_unlock,
};
#undef ENTRY_POINT

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

/* 2. The spec's prototypes (plugin-abi.md section 2, libgomp-plugin.h), one per entry
   point, from the table src/edge/table.rs (entry_points.inc), after the types they use.
   libgomp's struct, union and enum tags are mapped to the header's names, whose layouts
   are checked here (addr_pair in section 3). */

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

/* OpenACC: the queue is opaque to libgomp; the header names its tag GoaccAsyncqueue.
   libgomp's property union and enum are declared as in libgomp-plugin.h; the union must
   have the header's layout. */
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

#define addr_pair AddrPair
#define interop_obj_t InteropObj
#define goacc_asyncqueue GoaccAsyncqueue
#define goacc_property_value PropertyValue
#define ENTRY_POINT(name, ...) __VA_ARGS__
#include "entry_points.inc"
#undef ENTRY_POINT
#undef addr_pair
#undef interop_obj_t
#undef goacc_asyncqueue
#undef goacc_property_value

/* 4. The plugin's own API (src/edge/extensions.rs), as the README documents it. */
extern int gomp_nvptx_host_lock (void *p, size_t size, int device);
extern int gomp_nvptx_host_unlock (void *p, int device);
