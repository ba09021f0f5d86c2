//! The table of the exported edge: one row per `GOMP_OFFLOAD_*` entry point, the only
//! place an entry point is declared. A row gives
//!
//! - the exported symbol, the Rust doc of its shell, and the products that export it
//!   (`in [nvptx gcn]`);
//! - `looked_up(FROM..)` or `looked_up(FROM..=TO)`: the libgomp releases (GCC major
//!   numbers) that look the symbol up; a libgomp outside the range never calls it;
//! - `required(...)`: whether a missing symbol makes libgomp skip the plugin: `always`,
//!   `openmp` / `openacc` (when `get_caps` has `GOMP_OFFLOAD_CAP_OPENMP_400` /
//!   `OPENACC_200`), `optional`, `all_or_none GROUP` (all of the group or none of it),
//!   `if_present SYMBOL` (required once SYMBOL is exported); required from the first
//!   release that looks it up;
//! - optionally `ifunc(IMPL, OFFER)`: the symbol is a GNU indirect function whose
//!   resolver answers `IMPL` when `OFFER()` is true and NULL otherwise (an optional
//!   entry point hidden from some libgomp releases, e.g. `async_run` from libgomp 12);
//!   `ifunc(IMPL, OFFER, SESSION)`: the same, but under a libgomp that launches through
//!   sessions (17, [`crate::edge::handshake::uses_sessions`]) it answers `SESSION`, the
//!   function serving that release's prototype (see `also`);
//! - `c(RELEASE: "PROTOTYPE", ...)`: the C prototype libgomp calls, per release it
//!   applies from (`"RET (PARAMS)"`, the name left out). When the signature differs by
//!   release, the exported function has the newest (widest) one and reads the
//!   arguments an older libgomp does not pass only after asking `host::libgomp()`
//!   (see [`crate::edge::args`]); the newest prototype is checked against the C header
//!   by abi-tests/prototypes.c;
//! - optionally `also(RELEASE: "PROTOTYPE")`: from that release libgomp calls the symbol
//!   with this prototype instead, one that is not a widening of the ones in `c(...)`
//!   (libgomp 17's session forms): served by `ifunc`'s `SESSION` function, or read from
//!   the same argument registers where it only drops arguments (`get_num_devices`). The
//!   C header and abi-tests/prototypes.c keep the newest `c(...)` prototype;
//! - `note("...")`: the contract's semantics and error convention (docs/plugin-abi.md §2);
//! - the shell itself: its Rust signature and a body (one call into the backend through
//!   [`crate::edge::guard`]; longer conversions in [`crate::edge::shell`]), which names
//!   the backend `Backend`.
//!
//! From the table come: the shells (expanded in each product by
//! [`crate::export_entry_points!`]: `#[no_mangle]` functions of a library would be
//! exported by every cdylib that links it, and the products export different sets),
//! [`ENTRY_POINTS`] (the rows as data), and from that, by `cargo run -p gomp-plugin
//! --example edge-table` (checked by this module's unit test): libgomp.map and
//! libgomp-gcn.map (each product's exports), abi-tests/entry_points.inc (what
//! abi-tests/prototypes.c compiles against the header), the entry-point tables of
//! docs/plugin-abi.md, and the Rust declarations include/generate.sh gives cbindgen.
//! Adding an entry point: docs/architecture.md, "Adding an entry point".

/// When libgomp requires an entry point (a missing required one makes it skip the
/// plugin with "missing function was ...").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Required {
    /// Always.
    Always,
    /// When `get_caps()` has this capability bit.
    Cap(u32),
    /// Never (looked up with `DLSYM_OPT`).
    Optional,
    /// All of the named group or none of it.
    AllOrNone(&'static str),
    /// Required when the named symbol is exported.
    IfPresent(&'static str),
}

/// One row of the table, as data. Plain constants: thread-safe.
#[derive(Clone, Copy, Debug)]
pub struct EntryPoint {
    /// The exported symbol.
    pub name: &'static str,
    /// The products that export it ([`Product::name`]).
    pub exported_by: &'static [&'static str],
    /// The first libgomp release (GCC major) that looks it up.
    pub from: u32,
    /// The last one, if a newer release no longer does.
    pub to: Option<u32>,
    /// When libgomp requires it.
    pub required: Required,
    /// Whether the symbol is a GNU indirect function.
    pub indirect: bool,
    /// The C prototype per release it applies from, oldest first: `"RET (PARAMS)"`.
    pub c: &'static [(u32, &'static str)],
    /// Prototypes a newer release calls the symbol with instead (`also(...)`), oldest
    /// first; not the header's.
    pub also: &'static [(u32, &'static str)],
    /// Semantics and error convention.
    pub note: &'static str,
    /// The shell's doc attributes as Rust source (`#[doc = "..."]` ...).
    pub doc: &'static [&'static str],
    /// The shell's Rust signature: `fn NAME(ARGS) -> RET` as Rust source.
    pub rust: &'static str,
}

impl EntryPoint {
    /// The name without the `GOMP_OFFLOAD_` prefix.
    pub fn short(&self) -> &'static str {
        self.name.trim_start_matches("GOMP_OFFLOAD_")
    }

    /// Whether libgomp release `gcc` looks it up.
    pub fn looked_up_by(&self, gcc: u32) -> bool {
        gcc >= self.from && self.to.is_none_or(|t| gcc <= t)
    }

    /// The newest C prototype (the exported function's).
    pub fn newest_c(&self) -> &'static str {
        self.c.last().map_or("", |c| c.1)
    }

    /// `RET NAME (PARAMS)` of prototype `c` (`"RET (PARAMS)"`).
    pub fn declaration(&self, c: &str) -> String {
        let (ret, params) = c.split_at(c.find('(').unwrap_or(c.len()));
        let ret = ret.trim_end();
        let sep = if ret.ends_with('*') { "" } else { " " };
        format!("{ret}{sep}{} {params}", self.name)
    }
}

/// A product's file and the exports it has beside the table's entry points.
#[derive(Clone, Copy, Debug)]
pub struct Product {
    /// The name rows use in `in [...]` and [`crate::export_entry_points!`]'s argument.
    pub name: &'static str,
    /// Its SONAME.
    pub soname: &'static str,
    /// Its exported-symbol list (the products' `*.map`).
    pub map: &'static str,
    /// Its own C API, exported beside the entry points (not libgomp's contract).
    pub own: &'static [&'static str],
}

/// The products. Adding one also needs an arm in `__gomp_if_exported!`.
pub const PRODUCTS: &[Product] = &[
    Product {
        name: "nvptx",
        soname: "libgomp-plugin-nvptx.so.1",
        map: "libgomp.map",
        own: &["gomp_nvptx_host_lock", "gomp_nvptx_host_unlock"],
    },
    Product {
        name: "gcn",
        soname: "libgomp-plugin-gcn.so.1",
        map: "libgomp-gcn.map",
        own: &[],
    },
];

/// The libgomp releases the table describes (GCC majors), oldest first: the columns of
/// docs/plugin-abi.md §1.2.
pub const RELEASES: &[u32] = &[12, 13, 14, 15, 16, 17];

/// Expands the product's shells: `export_entry_points!(nvptx, crate::plugin::Nvptx);`
/// in the product's crate root defines `pub mod entry_points` with every `GOMP_OFFLOAD_*`
/// function the table gives that product, calling the backend type given.
#[macro_export]
macro_rules! export_entry_points {
    ($product:ident, $backend:ty) => {
        /// The exported `GOMP_OFFLOAD_*` entry points: the shells of the framework's
        /// table (`src/edge/table.rs`) for this product, over its backend.
        #[allow(non_snake_case, clippy::not_unsafe_ptr_arg_deref)]
        pub mod entry_points {
            /// The backend every shell calls.
            pub type Backend = $backend;
            #[allow(unused_imports)]
            use $crate::edge::shell::prelude::*;
            $crate::__gomp_entry_point_table!(export $product);
        }
    };
}

/// `__gomp_if_exported!(PRODUCT [PRODUCTS...] { ITEMS })`: ITEMS when PRODUCT is listed.
#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_if_exported {
    ($p:ident [] $items:tt) => {};
    (nvptx [nvptx $($rest:ident)*] { $($items:tt)* }) => { $($items)* };
    (gcn [gcn $($rest:ident)*] { $($items:tt)* }) => { $($items)* };
    ($p:ident [$other:ident $($rest:ident)*] $items:tt) => {
        $crate::__gomp_if_exported!($p [$($rest)*] $items);
    };
}

/// One shell: a plain `#[no_mangle]` function, or an indirect function (the resolver
/// exported under the name, the implementation a public function of its own name).
#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_shell {
    ([] $(#[$attr:meta])* $name:ident ($($arg:ident: $ty:ty),*) ($($ret:ty)?) $body:block) => {
        $(#[$attr])*
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) $(-> $ret)? $body
    };
    ([$imp:ident, $offer:expr, $session:expr] $(#[$attr:meta])* $name:ident ($($arg:ident: $ty:ty),*) ($($ret:ty)?) $body:block) => {
        $crate::__gomp_shell!(@pick [$imp, $offer] $(#[$attr])* $name ($($arg: $ty),*) ($($ret)?) {
            if $crate::edge::handshake::uses_sessions() {
                $session as *const c_void
            } else {
                $imp as *const c_void
            }
        } $body);
    };
    ([$imp:ident, $offer:expr] $(#[$attr:meta])* $name:ident ($($arg:ident: $ty:ty),*) ($($ret:ty)?) $body:block) => {
        $crate::__gomp_shell!(@pick [$imp, $offer] $(#[$attr])* $name ($($arg: $ty),*) ($($ret)?) {
            $imp as *const c_void
        } $body);
    };
    (@pick [$imp:ident, $offer:expr] $(#[$attr:meta])* $name:ident ($($arg:ident: $ty:ty),*) ($($ret:ty)?) $pick:block $body:block) => {
        $(#[$attr])*
        ///
        /// The implementation behind the indirect function of the same symbol (see
        /// `src/edge/table.rs`). Public for the product's tests, which link the library
        /// and cannot reach it by the exported name (there it denotes the resolver).
        pub extern "C" fn $imp($($arg: $ty),*) $(-> $ret)? $body

        /// The resolver of a GNU indirect function: the symbol's value is this function
        /// and its type STT_GNU_IFUNC. The dynamic loader calls it when the symbol is
        /// looked up (libgomp's dlsym, after `GOMP_OFFLOAD_version`) and hands out the
        /// address it returns: the implementation (under libgomp 17, for a symbol whose
        /// prototype changed there, the one serving that prototype), or NULL where the
        /// libgomp that loaded us must not be offered it; glibc's dlsym then answers NULL, which libgomp
        /// takes for an absent optional entry point. The loader may run it before the
        /// program's libraries are initialised, so the offer only reads an atomic and
        /// calls nothing that could allocate, lock or unwind.
        #[no_mangle]
        extern "C" fn $name() -> *const c_void {
            // SAFETY: an assembler directive, no instruction: it makes the symbol of
            // this very function an indirect function (the assembler keeps that type
            // over the function type the compiler gives it). Written inside the
            // function so that it always lands in the object file that defines the
            // symbol, whatever the code-generation units.
            unsafe {
                ::std::arch::asm!(
                    concat!(".type ", stringify!($name), ", @gnu_indirect_function"),
                    options(nomem, nostack, preserves_flags)
                )
            };
            if $offer {
                $pick
            } else {
                ::std::ptr::null()
            }
        }
    };
}

/// `Required` of a row's `required(...)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_required {
    (always) => {
        $crate::edge::table::Required::Always
    };
    (openmp) => {
        $crate::edge::table::Required::Cap($crate::libgomp::abi::CAP_OPENMP_400)
    };
    (openacc) => {
        $crate::edge::table::Required::Cap($crate::libgomp::abi::CAP_OPENACC_200)
    };
    (optional) => {
        $crate::edge::table::Required::Optional
    };
    (all_or_none $g:ident) => {
        $crate::edge::table::Required::AllOrNone(stringify!($g))
    };
    (if_present $s:ident) => {
        $crate::edge::table::Required::IfPresent(stringify!($s))
    };
}

/// What a mode makes of the rows: `describe` (the [`ENTRY_POINTS`] constant) or
/// `export PRODUCT` (that product's shells).
#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_entry_points_from {
    ([$($mode:tt)*] $(
        $(#[$attr:meta])*
        $name:ident in [$($by:ident)+]
        looked_up($from:literal $range:tt $($to:literal)?)
        required($($req:ident)+)
        $(ifunc($imp:ident, $offer:expr $(, $session:expr)?))?
        c($($since:literal: $csig:literal),+ $(,)?)
        $(also($($asince:literal: $asig:literal),+ $(,)?))?
        note($note:literal)
        fn($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    )*) => {
        $crate::__gomp_entry_points_mode! { [$($mode)*] $(
            [$(#[$attr])*] $name [$($by)+] [$from $range $($to)?] [$($req)+] [$($imp, $offer $(, $session)?)?]
            [$(($since, $csig)),+] [$($(($asince, $asig)),+)?] [$note] [$($arg: $ty),*] [$($ret)?] $body
        )* }
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_entry_points_mode {
    ([describe] $(
        [$(#[$attr:meta])*] $name:ident [$($by:ident)+] [$from:literal $range:tt $($to:literal)?]
        [$($req:ident)+] [$($ifunc:tt)*] [$($c:tt),+] [$($also:tt),*] [$note:literal]
        [$($arg:ident: $ty:ty),*] [$($ret:ty)?] $body:block
    )*) => {
        /// Every row of the table, in the table's order.
        pub const ENTRY_POINTS: &[$crate::edge::table::EntryPoint] = &[$(
            $crate::edge::table::EntryPoint {
                name: stringify!($name),
                exported_by: &[$(stringify!($by)),+],
                from: $from,
                to: $crate::__gomp_last!($range $($to)?),
                required: $crate::__gomp_required!($($req)+),
                indirect: $crate::__gomp_nonempty!($($ifunc)*),
                c: &[$($c),+],
                also: &[$($also),*],
                note: $note,
                doc: &[$(stringify!(#[$attr])),*],
                rust: stringify!(fn $name($($arg: $ty),*) $(-> $ret)?),
            }
        ),*];
    };
    ([export $product:ident] $(
        [$(#[$attr:meta])*] $name:ident [$($by:ident)+] [$from:literal $range:tt $($to:literal)?]
        [$($req:ident)+] [$($ifunc:tt)*] [$($c:tt),+] [$($also:tt),*] [$note:literal]
        [$($arg:ident: $ty:ty),*] [$($ret:ty)?] $body:block
    )*) => {
        $($crate::__gomp_if_exported!($product [$($by)+] {
            $crate::__gomp_shell!([$($ifunc)*] $(#[$attr])* $name ($($arg: $ty),*) ($($ret)?) $body);
        });)*
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_last {
    (..) => {
        None
    };
    (..= $v:literal) => {
        Some($v)
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_nonempty {
    () => {
        false
    };
    ($($t:tt)+) => {
        true
    };
}

/// The table. `__gomp_entry_point_table!(describe)` or `(export PRODUCT)`.
#[doc(hidden)]
#[macro_export]
macro_rules! __gomp_entry_point_table {
    ($($mode:tt)*) => { $crate::__gomp_entry_points_from! { [$($mode)*]

    // ---- handshake, devices, images ------------------------------------------------

    /// The plugin's `GOMP_VERSION` for the libgomp that loaded us; 0 (which libgomp
    /// rejects as a version mismatch) for a libgomp we do not support, after saying why.
    GOMP_OFFLOAD_version in [nvptx gcn] looked_up(12..) required(always)
    c(12: "unsigned (void)")
    note("Returns GOMP_VERSION (1 in 12, 2 in 13, 3 in 14-16, 4 in 17). Looked up and called first.")
    fn() -> u32 { guard::value("version", 0, handshake::version::<Backend>) }

    /// The plugin's name ("nvptx", "gcn").
    GOMP_OFFLOAD_get_name in [nvptx gcn] looked_up(12..) required(always)
    c(12: "const char *(void)")
    note("\"nvptx\" / \"gcn\".")
    fn() -> *const c_char {
        // Plugin names are literals without NUL; the static below adds one.
        static NAME: ::once_cell::sync::Lazy<::std::ffi::CString> =
            ::once_cell::sync::Lazy::new(|| ::std::ffi::CString::new(Backend::NAME).unwrap_or_default());
        NAME.as_ptr()
    }

    /// Capabilities (`GOMP_OFFLOAD_CAP_*`); for libgomp 17 also the `requires` clauses
    /// every device meets (`Plugin::CAPS_17`), which that libgomp checks itself.
    GOMP_OFFLOAD_get_caps in [nvptx gcn] looked_up(12..) required(always)
    c(12: "unsigned (void)")
    note("Capability bits (§1.4); called before get_num_devices. libgomp 17 also reads 0x20 (unified_address) and 0x40 (reverse_offload) and checks the program's requires mask itself (§12.3).")
    fn() -> u32 {
        if handshake::uses_sessions() {
            Backend::CAPS | Backend::CAPS_17
        } else {
            Backend::CAPS
        }
    }

    /// Capabilities of device `ord` beyond `get_caps` (libgomp 17 only looks it up):
    /// `GOMP_OFFLOAD_CAP_SHARED_MEM` when the device can use the host's pageable memory.
    GOMP_OFFLOAD_get_dev_caps in [nvptx gcn] looked_up(17..) required(optional)
    c(17: "unsigned (int ord)")
    note("OR-ed into get_caps per device; libgomp 17 skips a device whose caps lack what the program requires (§12.3). Ours: SHARED_MEM (1) on an nvptx device with pageable memory access, else 0.")
    fn(ord: c_int) -> u32 { guard::value("get_dev_caps", 0, || Backend::dev_caps(ord)) }

    /// The host NUMA node closest to device `ord`, -1 when unknown (libgomp 17 only looks
    /// it up).
    GOMP_OFFLOAD_get_numa_node in [nvptx gcn] looked_up(17..) required(optional)
    c(17: "int (int ord)")
    note("Ours: nvptx reads the PCI function's sysfs numa_node; gcn answers -1 (unknown).")
    fn(ord: c_int) -> c_int { guard::value("get_numa_node", -1, || Backend::numa_node(ord)) }

    /// The largest count of teams (`supported_teams_dim`) or of threads a team
    /// (`supported_threads_dim`) device `ord` supports in dimension `dim` (OpenMP 6.1's
    /// multi-dimensional teams and threads; libgomp 17 only looks them up, and answers
    /// `omp_get_supported_teams_dim`/`omp_get_supported_threads_dim` with them).
    GOMP_OFFLOAD_supported_teams_dim in [nvptx gcn] looked_up(17..) required(optional)
    c(17: "int (int ord, int dim)")
    note("Ours launch one-dimensional grids: every dimension but 0 answers 1. Dimension 0: nvptx SMs x registers per SM / 32 (270336 on an H100), gcn 2 x compute units (128 when the runtime does not tell): the stock plugins' figures.")
    fn(ord: c_int, dim: c_int) -> c_int {
        guard::value("supported_teams_dim", 1, || if dim == 0 { Backend::teams_dim0(ord) } else { 1 })
    }

    /// See `supported_teams_dim`.
    GOMP_OFFLOAD_supported_threads_dim in [nvptx gcn] looked_up(17..) required(optional)
    c(17: "int (int ord, int dim)")
    note("Dimension 0: nvptx the warps of the largest block (an OpenMP thread is a warp), gcn 16 wavefronts (GCC's work-group limit); other dimensions 1.")
    fn(ord: c_int, dim: c_int) -> c_int {
        guard::value("supported_threads_dim", 1, || if dim == 0 { Backend::threads_dim0(ord) } else { 1 })
    }

    /// Whether the device code can serve an allocator on memory space `memspace`
    /// (`omp_memspace_handle_t`) with access trait value `access` (`omp_atv_*`; libgomp declares `memspace` as `omp_memspace_handle_t`, an enum of `uintptr_t` size), for
    /// `uses_allocators` (libgomp 17 only looks it up).
    GOMP_OFFLOAD_memspace_validate in [nvptx gcn] looked_up(17..) required(optional)
    c(17: "_Bool (uintptr_t memspace, int access)")
    note("The device side is GCC's libgomp, so ours answers what it serves: never low-latency memory (4, a team's shared memory) with access all (7); nvptx only the predefined spaces 0-4, gcn any space.")
    fn(memspace: u64, access: c_int) -> bool {
        guard::value("memspace_validate", false, || Backend::memspace_valid(memspace, access))
    }

    /// `OFFLOAD_TARGET_TYPE_*`.
    GOMP_OFFLOAD_get_type in [nvptx gcn] looked_up(12..) required(always)
    c(12: "int (void)")
    note("5 (nvptx), 8 (gcn).")
    fn() -> c_int { Backend::TARGET_TYPE }

    /// Number of devices usable under the program's `requires` mask (spec §1.5): 0 without
    /// a usable driver or device, -1 when devices cannot meet the mask. libgomp 12 and
    /// 17 pass no mask: the argument is then ignored.
    GOMP_OFFLOAD_get_num_devices in [nvptx gcn] looked_up(12..) required(always)
    c(12: "int (void)", 13: "int (unsigned omp_requires_mask)")
    also(17: "int (void)")
    note("§1.5. libgomp 12 and 17 pass no mask (the register holds a leftover); 17 checks the mask itself against get_caps | get_dev_caps (§12.3).")
    fn(omp_requires_mask: u32) -> c_int {
        guard::value("get_num_devices", 0, || {
            if host::libgomp().is_some() && !handshake::serves::<Backend>() {
                return 0;
            }
            Backend::read_settings();
            Backend::num_devices(args::requires_mask(host::libgomp(), omp_requires_mask))
        })
    }

    /// The device's unique id, malloc'd for libgomp to keep; NULL if unknown.
    GOMP_OFFLOAD_get_uid in [nvptx gcn] looked_up(15..) required(optional)
    c(15: "const char *(int ord)")
    note("Fresh malloc'd UUID string `GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` from cuDeviceGetUuid_v2 (falling back to cuDeviceGetUuid); NULL if unavailable. libgomp calls it lazily after init.")
    fn(ord: c_int) -> *const c_char {
        guard::value("get_uid", ::std::ptr::null(), || shell::uid::<Backend>(ord))
    }

    /// Opens device `ord`.
    GOMP_OFFLOAD_init_device in [nvptx gcn] looked_up(12..) required(always)
    c(12: "bool (int ord)")
    note("Creates or attaches the context, reads attributes, reads env vars. false if already open or on CUDA error.")
    fn(ord: c_int) -> bool {
        guard::ok("init_device", || Backend::registry().open(ord, Backend::open))
    }

    /// Closes device `ord`, unloading its images; a device that is not open is fine.
    GOMP_OFFLOAD_fini_device in [nvptx gcn] looked_up(12..) required(always)
    c(12: "bool (int ord)")
    note("Runs device dtors (15+), frees cached blocks and stacks, destroys the context unless it was borrowed.")
    fn(ord: c_int) -> bool { guard::ok("fini_device", || Backend::registry().close(ord)) }

    /// Loads an image; returns the number of table entries or -1. libgomp 12 passes only
    /// four arguments and libgomp 13 five: the tables beyond them are never touched
    /// (`args::load_image_tables`).
    GOMP_OFFLOAD_load_image in [nvptx gcn] looked_up(12..) required(always)
    c(
        12: "int (int ord, unsigned version, const void *target_data, struct addr_pair **target_table)",
        13: "int (int ord, unsigned version, const void *target_data, struct addr_pair **target_table, uint64_t **rev_fn_table)",
        14: "int (int ord, unsigned version, const void *target_data, struct addr_pair **target_table, uint64_t **rev_fn_table, uint64_t *host_ind_fn_table)",
    )
    note("§5. Returns the entry count (funcs+vars+1) or -1. rev_fn_table is NULL unless the program `requires reverse_offload`. host_ind_fn_table is NULL unless the image has indirect functions.")
    fn(
        ord: c_int,
        version: u32,
        target_data: *const c_void,
        target_table: *mut *mut AddrPair,
        rev_fn_table: *mut *mut u64,
        host_ind_fn_table: *mut u64,
    ) -> c_int {
        guard::result("load_image", -1, || {
            shell::load_image::<Backend>(ord, version, target_data, target_table, rev_fn_table, host_ind_fn_table)
        })
    }

    /// Unloads an image; its kernel handles are refused from then on.
    GOMP_OFFLOAD_unload_image in [nvptx gcn] looked_up(12..) required(always)
    c(12: "bool (int ord, unsigned version, const void *target_data)")
    note("Runs dtors (15+), cuModuleUnload.")
    fn(ord: c_int, version: u32, target_data: *const c_void) -> bool {
        guard::ok("unload_image", || {
            $crate::device::check_image_version(Backend::IMAGE_KIND, Backend::IMAGE_VERSION, version)?;
            let dev = Backend::device(ord)?;
            Backend::registry().kernels().remove_image(ord, target_data as usize);
            Device::unload_image(&*dev, target_data)
        })
    }

    // ---- memory ---------------------------------------------------------------------

    /// Allocates device memory; NULL after an error message.
    GOMP_OFFLOAD_alloc in [nvptx gcn] looked_up(12..) required(always)
    c(12: "void *(int ord, size_t)")
    note("cuMemAlloc. First drains deferred frees and the over-size stack cache; on OOM frees the stacks and retries. NULL after GOMP_PLUGIN_error.")
    fn(ord: c_int, size: usize) -> *mut c_void {
        guard::result("alloc", ::std::ptr::null_mut(), || {
            Ok(DeviceCore::alloc(Device::core(&*Backend::device(ord)?), size)? as *mut c_void)
        })
    }

    /// Frees device memory (NULL is accepted).
    GOMP_OFFLOAD_free in [nvptx gcn] looked_up(12..) required(always)
    c(12: "bool (int ord, void *)")
    note("cuMemGetAddressRange check, then cuMemFree. If CUDA returns NOT_PERMITTED (we are inside a stream callback) the free is queued for later.")
    fn(ord: c_int, ptr: *mut c_void) -> bool {
        guard::ok("free", || DeviceCore::free(Device::core(&*Backend::device(ord)?), ptr as DevPtr))
    }

    /// Copies device to host.
    GOMP_OFFLOAD_dev2host in [nvptx gcn] looked_up(12..) required(always)
    c(12: "bool (int, void *dst, const void *src, size_t)")
    note("Sanity checks (range via cuMemGetAddressRange, non-NULL, dst≠src), then synchronous cuMemcpyDtoH.")
    fn(ord: c_int, dst: *mut c_void, src: *const c_void, n: usize) -> bool {
        // SAFETY: libgomp passes a host buffer of `n` bytes.
        guard::ok("dev2host", || unsafe {
            DeviceCore::dev2host(Device::core(&*Backend::device(ord)?), dst, src as DevPtr, n)
        })
    }

    /// Copies host to device.
    GOMP_OFFLOAD_host2dev in [nvptx gcn] looked_up(12..) required(always)
    c(12: "bool (int, void *dst, const void *src, size_t)")
    note("As dev2host, then synchronous cuMemcpyHtoD.")
    fn(ord: c_int, dst: *mut c_void, src: *const c_void, n: usize) -> bool {
        // SAFETY: libgomp passes a host buffer of `n` bytes.
        guard::ok("host2dev", || unsafe {
            DeviceCore::host2dev(Device::core(&*Backend::device(ord)?), dst as DevPtr, src, n)
        })
    }

    /// Copies device to device.
    GOMP_OFFLOAD_dev2dev in [nvptx gcn] looked_up(12..) required(openmp)
    c(12: "bool (int, void *dst, const void *src, size_t)")
    note("cuMemcpyDtoDAsync on stream NULL (not synchronized). 16 adds a range check.")
    fn(ord: c_int, dst: *mut c_void, src: *const c_void, n: usize) -> bool {
        guard::ok("dev2dev", || {
            DeviceCore::dev2dev(Device::core(&*Backend::device(ord)?), dst as DevPtr, src as DevPtr, n)
        })
    }

    /// Fills device memory with a byte value.
    GOMP_OFFLOAD_memset in [nvptx gcn] looked_up(16..) required(openmp)
    c(16: "bool (int ord, void *ptr, int val, size_t n)")
    note("cuMemsetD8 (non-Async variant; for plain device memory CUDA may return before the memset finishes). Backs omp_target_memset[_async].")
    fn(ord: c_int, ptr: *mut c_void, val: c_int, n: usize) -> bool {
        guard::ok("memset", || {
            DeviceCore::memset(Device::core(&*Backend::device(ord)?), ptr as DevPtr, val, n)
        })
    }

    // ---- OpenMP target regions ------------------------------------------------------

    /// Whether the kernel handle `tgt_fn` can run on its device; false makes libgomp run
    /// the region on the host (also after an error message for a handle that is not a
    /// live kernel).
    GOMP_OFFLOAD_can_run in [gcn] looked_up(12..) required(optional)
    c(12: "bool (void *fn)")
    note("Not implemented by GCC's nvptx plugin; false means fall back to the host.")
    fn(tgt_fn: *mut c_void) -> bool {
        guard::result("can_run", false, || {
            Backend::registry()
                .kernels()
                .with_known("can_run", tgt_fn as usize, |k| Ok(Backend::can_run(k.kernel)))
        })
    }

    /// `session_size`: the bytes of this plugin's session block (libgomp 17).
    GOMP_OFFLOAD_session_size in [nvptx gcn] looked_up(17..) required(openmp)
    c(17: "size_t (void)")
    note("§12.2. Called once at load, without a NULL check (a plugin without it crashes libgomp 17). Ours: 32.")
    fn() -> usize { session::SIZE }

    /// `session_start`: a fresh session for a launch on device `ord` (libgomp 17). Errors
    /// (a NULL or misaligned block) are fatal: libgomp has no failure value here.
    GOMP_OFFLOAD_session_start in [nvptx gcn] looked_up(17..) required(openmp)
    c(17: "void (void *session, int ord)")
    note("§12.2. Per launch, on libgomp's 16-aligned block of session_size bytes (the stack for run, the heap for a nowait task).")
    fn(session: *mut c_void, ord: c_int) {
        guard::or_fatal("session_start", || {
            // SAFETY: libgomp's block of session_size() bytes.
            unsafe { Session::start(session, ord) }?;
            log::trace!("session {session:p}: started for device {ord}");
            Ok(())
        })
    }

    /// `session_set_target_var_table`: the launch's table of mapped-variable addresses, as
    /// the kernel receives it (libgomp 17). Errors are fatal.
    GOMP_OFFLOAD_session_set_target_var_table in [nvptx gcn] looked_up(17..) required(openmp)
    c(17: "void (void *session, void *table)")
    note("§12.2. Once per session, after session_start: the device address of the table inside libgomp's block of the launch (NULL when nothing is mapped), what run's vars was.")
    fn(session: *mut c_void, table: *mut c_void) {
        guard::or_fatal("session_set_target_var_table", || {
            // SAFETY: libgomp's session block, started, used by this launch only.
            let s = unsafe { Session::get(session) }?;
            if s.sets != 0 {
                return Err(Error::invalid(format!(
                    "session {session:p}: target-variable table set twice"
                )));
            }
            s.set_table(table);
            log::trace!("session {session:p}: table {table:p}");
            Ok(())
        })
    }

    /// `session_allocate_target_var_table`: where libgomp is to write the launch's table
    /// of mapped-variable addresses (`size` bytes), instead of into its device block
    /// (libgomp 17). gcn only: a place after the output ring of a kernarg block reserved
    /// for the session's launch. Errors are fatal (libgomp writes through the answer).
    GOMP_OFFLOAD_session_allocate_target_var_table in [gcn] looked_up(17..) required(optional)
    c(17: "void *(void *session, size_t size)")
    note("§12.2. Once per session with mapped variables, after session_start, instead of session_set_target_var_table (measured: libgomp then does not call it; the answer is the session's table). gcn: the table goes in the launch's kernarg block (host-coherent, read by the kernel directly), so it needs no copy of its own; nvptx does not export it (its table travels in libgomp's copy).")
    fn(session: *mut c_void, size: usize) -> *mut c_void {
        let mut table = ::std::ptr::null_mut();
        guard::or_fatal("session_allocate_target_var_table", || {
            // SAFETY: libgomp's session block, started, used by this launch only.
            let s = unsafe { Session::get(session) }?;
            if s.sets != 0 {
                return Err(Error::invalid(format!(
                    "session {session:p}: target-variable table set twice"
                )));
            }
            table = Backend::allocate_table(session, s.ord, size)?;
            // libgomp writes the table there and does not call set_target_var_table:
            // this is the session's table.
            s.set_table(table);
            log::trace!("session {session:p}: table of {size} bytes at {table:p}");
            Ok(())
        });
        table
    }

    /// Runs an OpenMP target region and waits for it; errors are fatal (contract). An
    /// indirect function: under libgomp 17 it resolves to the session form
    /// (`shell::run_session`).
    GOMP_OFFLOAD_run in [nvptx gcn] looked_up(12..) required(openmp)
    ifunc(run, true, shell::run_session::<Backend>)
    c(12: "void (int ord, void *fn, void *vars, void **args)")
    also(17: "void (void *session, void *fn, void **args)")
    note("§6. Synchronous. Errors are fatal. libgomp 17: the device and the table come through the session (§12.2).")
    fn(ord: c_int, tgt_fn: *mut c_void, tgt_vars: *mut c_void, args: *mut *mut c_void) {
        guard::or_fatal("run", || shell::run::<Backend>("run", ord, tgt_fn, tgt_vars, args, None))
    }

    /// Launches an OpenMP target region without waiting (`nowait`); completion is
    /// reported through `GOMP_PLUGIN_target_task_completion(async_data)`. Errors are fatal.
    /// Not offered to libgomp 12: the symbol is an indirect function (IFUNC) that
    /// resolves to NULL there, so libgomp runs `nowait` regions through `run`, as with
    /// GCC 12's own plugin (docs/plugin-abi.md §4.1).
    GOMP_OFFLOAD_async_run in [nvptx gcn] looked_up(12..) required(optional)
    ifunc(async_run, handshake::offers_async_run(), shell::async_run_session::<Backend>)
    c(12: "void (int ord, void *fn, void *vars, void **args, void *async_data)")
    also(17: "void (void *session, void *fn, void **args, void *async_data)")
    note("**Not implemented by GCC's nvptx plugin**, so libgomp drops `nowait` (PR 93481). Must call `GOMP_PLUGIN_target_task_completion(async_data)` when done (§6.5). Ours is an indirect function resolving to NULL under libgomp 12 (§4.1).")
    fn(ord: c_int, tgt_fn: *mut c_void, tgt_vars: *mut c_void, args: *mut *mut c_void, async_data: *mut c_void) {
        guard::or_fatal("async_run", || {
            shell::run::<Backend>("async_run", ord, tgt_fn, tgt_vars, args, Some(async_data))
        })
    }

    // ---- rectangular copies, managed memory -----------------------------------------

    /// 2-D rectangular copy; ord -1 is the host. Returns 1 on success, 0 after an error.
    #[allow(clippy::too_many_arguments)]
    GOMP_OFFLOAD_memcpy2d in [nvptx gcn] looked_up(14..) required(optional)
    c(14: "int (int dst_ord, int src_ord, size_t dim1_size, size_t dim0_len, void *dst, size_t dst_off1_size, size_t dst_off0_len, size_t dst_dim1_size, const void *src, size_t src_off1_size, size_t src_off0_len, size_t src_dim1_size)")
    note("ord -1 means host. Rebases the origin, then cuMemcpy2D, retrying with cuMemcpy2DUnaligned on INVALID_VALUE. Returns true or false as an int.")
    fn(
        dst_ord: c_int,
        src_ord: c_int,
        dim1_size: usize,
        dim0_len: usize,
        dst: *mut c_void,
        dst_off1_size: usize,
        dst_off0_len: usize,
        dst_dim1_size: usize,
        src: *const c_void,
        src_off1_size: usize,
        src_off0_len: usize,
        src_dim1_size: usize,
    ) -> c_int {
        guard::ok("memcpy2d", || {
            let r = $crate::rect::Rect {
                dst: shell::side(dst_ord, dst, dst_dim1_size, 0, (dst_off1_size, dst_off0_len, 0))?,
                src: shell::side(src_ord, src, src_dim1_size, 0, (src_off1_size, src_off0_len, 0))?,
                width: dim1_size,
                height: dim0_len,
                depth: None,
            };
            // SAFETY: libgomp passes host blocks valid for the described rectangle.
            unsafe { shell::copy_rect::<Backend>(&r) }
        }) as c_int
    }

    /// 3-D rectangular copy; ord -1 is the host. Returns 1 on success, 0 after an error.
    #[allow(clippy::too_many_arguments)]
    GOMP_OFFLOAD_memcpy3d in [nvptx gcn] looked_up(14..) required(optional)
    c(14: "int (int dst_ord, int src_ord, size_t dim2_size, size_t dim1_len, size_t dim0_len, void *dst, size_t dst_off2_size, size_t dst_off1_len, size_t dst_off0_len, size_t dst_dim2_size, size_t dst_dim1_len, const void *src, size_t src_off2_size, size_t src_off1_len, size_t src_off0_len, size_t src_dim2_size, size_t src_dim1_len)")
    note("cuMemcpy3D. Same conventions as memcpy2d.")
    fn(
        dst_ord: c_int,
        src_ord: c_int,
        dim2_size: usize,
        dim1_len: usize,
        dim0_len: usize,
        dst: *mut c_void,
        dst_off2_size: usize,
        dst_off1_len: usize,
        dst_off0_len: usize,
        dst_dim2_size: usize,
        dst_dim1_len: usize,
        src: *const c_void,
        src_off2_size: usize,
        src_off1_len: usize,
        src_off0_len: usize,
        src_dim2_size: usize,
        src_dim1_len: usize,
    ) -> c_int {
        guard::ok("memcpy3d", || {
            let r = $crate::rect::Rect {
                dst: shell::side(dst_ord, dst, dst_dim2_size, dst_dim1_len, (dst_off2_size, dst_off1_len, dst_off0_len))?,
                src: shell::side(src_ord, src, src_dim2_size, src_dim1_len, (src_off2_size, src_off1_len, src_off0_len))?,
                width: dim2_size,
                height: dim1_len,
                depth: Some(dim0_len),
            };
            // SAFETY: libgomp passes host blocks valid for the described box.
            unsafe { shell::copy_rect::<Backend>(&r) }
        }) as c_int
    }

    /// Managed memory on device `ord`; NULL after an error message.
    GOMP_OFFLOAD_managed_alloc in [nvptx gcn] looked_up(16..) required(optional)
    c(16: "void *(int, size_t)")
    note("cuMemAllocManaged(GLOBAL). Backs `ompx_gnu_managed_mem_space`.")
    fn(ord: c_int, size: usize) -> *mut c_void {
        guard::result("managed_alloc", ::std::ptr::null_mut(), || {
            Ok(DeviceCore::managed_alloc(Device::core(&*Backend::device(ord)?), size)? as *mut c_void)
        })
    }

    /// Frees managed memory.
    GOMP_OFFLOAD_managed_free in [nvptx gcn] looked_up(16..) required(optional)
    c(16: "bool (int, void *)")
    note("Frees what managed_alloc returned.")
    fn(ord: c_int, ptr: *mut c_void) -> bool {
        guard::ok("managed_free", || {
            DeviceCore::managed_free(Device::core(&*Backend::device(ord)?), ptr as DevPtr)
        })
    }

    /// 1 if device `ord` can access all of `[ptr, ptr+size)`, else 0 (also after an error
    /// message, e.g. for a device that is not open).
    GOMP_OFFLOAD_is_accessible_ptr in [nvptx gcn] looked_up(16..) required(optional)
    c(16: "int (int ord, const void *, size_t)")
    note("1 if using_usm; else cuPointerGetAttribute(MEMORY_TYPE) on each 4 KiB page (HOST/UNIFIED/DEVICE count as accessible). `omp_target_is_accessible` uses >0.")
    fn(ord: c_int, ptr: *const c_void, size: usize) -> c_int {
        guard::result("is_accessible_ptr", 0, || {
            Ok(DeviceCore::is_accessible(Device::core(&*Backend::device(ord)?), ptr as usize, size) as c_int)
        })
    }

    /// Page-locked host memory; `*ptr` NULL for size 0 or out-of-memory, false only on
    /// other errors. Any thread.
    GOMP_OFFLOAD_page_locked_host_alloc in [nvptx] looked_up(16..) required(optional)
    c(16: "bool (void **ptr, size_t)")
    note("cuMemHostAlloc(flags 0). size 0 gives NULL and true; OOM gives NULL and true. No ord argument. §8.")
    fn(ptr: *mut *mut c_void, size: usize) -> bool {
        guard::ok("page_locked_host_alloc", || {
            if ptr.is_null() {
                return Err(Error::invalid("page_locked_host_alloc: no result pointer"));
            }
            let p = Backend::page_locked_host_alloc(size)?;
            // SAFETY: checked non-NULL; libgomp passes a writable pointer.
            unsafe { *ptr = p.unwrap_or(::std::ptr::null_mut()) };
            Ok(())
        })
    }

    /// Frees page-locked host memory from `page_locked_host_alloc`; NULL is accepted.
    GOMP_OFFLOAD_page_locked_host_free in [nvptx] looked_up(16..) required(optional)
    c(16: "bool (void *)")
    note("cuMemFreeHost.")
    fn(ptr: *mut c_void) -> bool {
        guard::ok("page_locked_host_free", || Backend::page_locked_host_free(ptr as usize))
    }

    // ---- OpenMP interop (libgomp 15+) -----------------------------------------------

    /// Initialises (0), uses (1) or destroys (2) an OpenMP interop object. Errors are fatal.
    GOMP_OFFLOAD_interop in [nvptx] looked_up(15..) required(optional)
    c(15: "void (struct interop_obj_t *, int ord, enum gomp_interop_flag, bool targetsync, const char *prefer_type)")
    note("The object layout is {void *stream; void *device_data; int fr; int device_num}. Picks fr cuda(1), cuda_driver(2) or hip(5) from the prefer_type byte list; creates a stream when targetsync is set.")
    fn(obj: *mut InteropObj, ord: c_int, flag: u32, targetsync: bool, prefer_type: *const c_char) {
        guard::or_fatal("interop", || {
            // SAFETY: libgomp passes its live, calloc'd object.
            let obj = unsafe { obj.as_mut() }.ok_or_else(|| Error::invalid("interop: no object"))?;
            // SAFETY: `prefer_type` is NULL or the compiler's encoding.
            unsafe { Backend::interop(obj, ord, flag, targetsync, prefer_type) }
        })
    }

    /// Integer interop property; `*rc` says whether it exists and its type.
    GOMP_OFFLOAD_get_interop_int in [nvptx] looked_up(15..) required(if_present GOMP_OFFLOAD_interop)
    c(15: "intptr_t (struct interop_obj_t *, omp_interop_property_t, omp_interop_rc_t *)")
    note("Property ids run from -1 (fr_id) to -9 (targetsync); rc codes are success 0, no_value 1, type_int -3, type_ptr -4, type_str -5. The vendor id is 11 (\"nvidia\").")
    fn(obj: *mut InteropObj, prop: c_int, rc: *mut c_int) -> isize {
        match shell::interop_query::<Backend>(obj, prop, b'i', rc) {
            $crate::libgomp::interop::InteropValue::Int(v) => v,
            _ => 0,
        }
    }

    /// Pointer interop property.
    GOMP_OFFLOAD_get_interop_ptr in [nvptx] looked_up(15..) required(if_present GOMP_OFFLOAD_interop)
    c(15: "void *(struct interop_obj_t *, omp_interop_property_t, omp_interop_rc_t *)")
    note("As get_interop_int, for pointer properties.")
    fn(obj: *mut InteropObj, prop: c_int, rc: *mut c_int) -> *mut c_void {
        match shell::interop_query::<Backend>(obj, prop, b'p', rc) {
            $crate::libgomp::interop::InteropValue::Ptr(p) => p,
            _ => ::std::ptr::null_mut(),
        }
    }

    /// String interop property (static text).
    GOMP_OFFLOAD_get_interop_str in [nvptx] looked_up(15..) required(if_present GOMP_OFFLOAD_interop)
    c(15: "const char *(struct interop_obj_t *obj, omp_interop_property_t, omp_interop_rc_t *)")
    note("As get_interop_int, for string properties.")
    fn(obj: *mut InteropObj, prop: c_int, rc: *mut c_int) -> *const c_char {
        match shell::interop_query::<Backend>(obj, prop, b's', rc) {
            $crate::libgomp::interop::InteropValue::Str(s) => s.as_ptr(),
            _ => ::std::ptr::null(),
        }
    }

    /// The C type of an interop property, or NULL.
    GOMP_OFFLOAD_get_interop_type_desc in [nvptx] looked_up(15..) required(if_present GOMP_OFFLOAD_interop)
    c(15: "const char *(struct interop_obj_t *, omp_interop_property_t)")
    note("The C type of a property, as text.")
    fn(obj: *mut InteropObj, prop: c_int) -> *const c_char {
        guard::value("get_interop_type_desc", ::std::ptr::null(), || {
            // SAFETY: libgomp passes NULL or an object it initialised through us.
            let o = unsafe { obj.as_ref() };
            Backend::interop_type_desc(o, prop).map_or(::std::ptr::null(), |s| s.as_ptr())
        })
    }

    // ---- OpenACC --------------------------------------------------------------------

    /// Runs an OpenACC kernel and waits for it. Errors are fatal. An indirect function:
    /// under libgomp 17 it resolves to the session form (`shell::acc_exec_session`).
    GOMP_OFFLOAD_openacc_exec in [nvptx gcn] looked_up(12..) required(openacc)
    ifunc(openacc_exec, true, shell::acc_exec_session::<Backend>)
    c(12: "void (void (*) (void *), size_t, void **, void **, unsigned *, void *)")
    also(17: "void (void *session, void (*) (void *), size_t, void **, unsigned *, void *)")
    note("fn is our descriptor; devaddrs is the *device* address of the pointer block (libgomp 12: a host array of the mapped device addresses, §4.1); dims[3] are in/out (gang, worker, vector; 0 means choose). Launch plus cuStreamSynchronize(NULL).")
    fn(
        fn_: Option<unsafe extern "C" fn(*mut c_void)>,
        mapnum: usize,
        hostaddrs: *mut *mut c_void,
        devaddrs: *mut *mut c_void,
        dims: *mut u32,
        _targ_mem_desc: *mut c_void,
    ) {
        guard::or_fatal("openacc_exec", || {
            shell::acc_exec::<Backend>("openacc_exec", fn_, mapnum, hostaddrs, devaddrs, dims, None)
        })
    }

    /// Enqueues an OpenACC kernel on `aq`. Errors are fatal. An indirect function: under
    /// libgomp 17 it resolves to the session form (`shell::acc_async_exec_session`).
    GOMP_OFFLOAD_openacc_async_exec in [nvptx gcn] looked_up(12..) required(openacc)
    ifunc(openacc_async_exec, true, shell::acc_async_exec_session::<Backend>)
    c(12: "void (void (*) (void *), size_t, void **, void **, unsigned *, void *, struct goacc_asyncqueue *)")
    also(17: "void (void *session, void (*) (void *), size_t, void **, unsigned *, void *, struct goacc_asyncqueue *)")
    note("Same as openacc_exec on aq's stream, without sync.")
    fn(
        fn_: Option<unsafe extern "C" fn(*mut c_void)>,
        mapnum: usize,
        hostaddrs: *mut *mut c_void,
        devaddrs: *mut *mut c_void,
        dims: *mut u32,
        _targ_mem_desc: *mut c_void,
        aq: *mut GoaccAsyncqueue,
    ) {
        guard::or_fatal("openacc_async_exec", || {
            let q = shell::queue::<Backend>(aq)?;
            shell::acc_exec::<Backend>("openacc_async_exec", fn_, mapnum, hostaddrs, devaddrs, dims, Some(q))
        })
    }

    /// Per-thread data for device `ord`; NULL after an error message.
    GOMP_OFFLOAD_openacc_create_thread_data in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "void *(int)")
    note("Per-host-thread TLS blob (libgomp stores it and returns it through `GOMP_PLUGIN_acc_thread()`). nvptx pushes the context if none is current.")
    fn(ord: c_int) -> *mut c_void {
        guard::result("openacc_create_thread_data", ::std::ptr::null_mut(), || {
            Ok(Box::into_raw(Box::new(Backend::thread_data(ord)?)).cast())
        })
    }

    /// Frees what create_thread_data returned.
    GOMP_OFFLOAD_openacc_destroy_thread_data in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "void (void *)")
    note("Frees what openacc_create_thread_data returned.")
    fn(data: *mut c_void) {
        guard::value("openacc_destroy_thread_data", (), || {
            if !data.is_null() {
                // SAFETY: `data` came from create_thread_data and is destroyed once.
                drop(unsafe { Box::from_raw(data.cast::<<Backend as OpenAcc>::ThreadData>()) });
            }
        })
    }

    /// A new async queue on device `ord`; NULL after an error message.
    GOMP_OFFLOAD_openacc_async_construct in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "struct goacc_asyncqueue *(int)")
    note("The plugin defines the layout (nvptx: a single CUstream).")
    fn(ord: c_int) -> *mut GoaccAsyncqueue {
        guard::result("openacc_async_construct", ::std::ptr::null_mut(), || {
            Ok(Box::into_raw(Box::new(Backend::queue(ord)?)).cast())
        })
    }

    /// Waits for `aq` and destroys it.
    GOMP_OFFLOAD_openacc_async_destruct in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "bool (struct goacc_asyncqueue *)")
    note("Waits for the queue and destroys it.")
    fn(aq: *mut GoaccAsyncqueue) -> bool {
        guard::ok("openacc_async_destruct", || {
            shell::queue::<Backend>(aq)?;
            // SAFETY: `aq` came from async_construct; libgomp destroys it once.
            AccQueue::destroy(*unsafe { Box::from_raw(aq.cast::<<Backend as OpenAcc>::Queue>()) })
        })
    }

    /// 1 when `aq` is idle, 0 when busy, -1 after an error message.
    GOMP_OFFLOAD_openacc_async_test in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "int (struct goacc_asyncqueue *)")
    note("1 = idle, 0 = busy, -1 = error.")
    fn(aq: *mut GoaccAsyncqueue) -> c_int {
        guard::result("openacc_async_test", -1, || {
            Ok(AccQueue::test(shell::queue::<Backend>(aq)?)? as c_int)
        })
    }

    /// Waits for all work and callbacks queued on `aq`.
    GOMP_OFFLOAD_openacc_async_synchronize in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "bool (struct goacc_asyncqueue *)")
    note("Stream sync.")
    fn(aq: *mut GoaccAsyncqueue) -> bool {
        guard::ok("openacc_async_synchronize", || AccQueue::synchronize(shell::queue::<Backend>(aq)?))
    }

    /// Makes later work on `aq2` wait for the work queued on `aq1` so far.
    GOMP_OFFLOAD_openacc_async_serialize in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "bool (struct goacc_asyncqueue *, struct goacc_asyncqueue *)")
    note("Event record on aq1 + wait on aq2 (GCC's nvptx plugin leaks the event).")
    fn(aq1: *mut GoaccAsyncqueue, aq2: *mut GoaccAsyncqueue) -> bool {
        guard::ok("openacc_async_serialize", || {
            AccQueue::serialize(shell::queue::<Backend>(aq1)?, shell::queue::<Backend>(aq2)?)
        })
    }

    /// Runs `cb(data)` once the work queued on `aq` so far has completed. Errors are fatal.
    GOMP_OFFLOAD_openacc_async_queue_callback in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "void (struct goacc_asyncqueue *, void (*)(void *), void *)")
    note("cuStreamAddCallback. The callback runs on a CUDA thread, so no CUDA calls are allowed there.")
    fn(aq: *mut GoaccAsyncqueue, cb: Option<unsafe extern "C" fn(*mut c_void)>, data: *mut c_void) {
        guard::or_fatal("openacc_async_queue_callback", || {
            let cb = cb.ok_or_else(|| Error::invalid("openacc_async_queue_callback: no function"))?;
            AccQueue::callback(shell::queue::<Backend>(aq)?, cb, data)
        })
    }

    /// Queues a host-to-device copy on `aq`.
    GOMP_OFFLOAD_openacc_async_host2dev in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "bool (int, void *, const void *, size_t, struct goacc_asyncqueue *)")
    note("Async memcpy on aq. Also used by reverse offload in 14+.")
    fn(_ord: c_int, dst: *mut c_void, src: *const c_void, n: usize, aq: *mut GoaccAsyncqueue) -> bool {
        // SAFETY: libgomp keeps `src` alive (or stages it) until the queue has run.
        guard::ok("openacc_async_host2dev", || unsafe {
            AccQueue::host2dev(shell::queue::<Backend>(aq)?, dst, src, n)
        })
    }

    /// Queues a device-to-host copy on `aq`.
    GOMP_OFFLOAD_openacc_async_dev2host in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "bool (int, void *, const void *, size_t, struct goacc_asyncqueue *)")
    note("Async memcpy on aq. Also used by reverse offload in 14+.")
    fn(_ord: c_int, dst: *mut c_void, src: *const c_void, n: usize, aq: *mut GoaccAsyncqueue) -> bool {
        // SAFETY: libgomp keeps `dst` alive until the queue has run.
        guard::ok("openacc_async_dev2host", || unsafe {
            AccQueue::dev2host(shell::queue::<Backend>(aq)?, dst, src, n)
        })
    }

    /// Queues a device-to-device copy on `aq` (libgomp 16, acc_memcpy_device).
    GOMP_OFFLOAD_openacc_async_dev2dev in [nvptx gcn] looked_up(16..) required(openacc)
    c(16: "bool (int, void *, const void *, size_t, struct goacc_asyncqueue *)")
    note("For acc_memcpy_device (PR 93226).")
    fn(_ord: c_int, dst: *mut c_void, src: *const c_void, n: usize, aq: *mut GoaccAsyncqueue) -> bool {
        guard::ok("openacc_async_dev2dev", || {
            AccQueue::dev2dev(shell::queue::<Backend>(aq)?, dst, src, n)
        })
    }

    /// Property `prop` of device `ord`; 0 / NULL when unknown or on error.
    GOMP_OFFLOAD_openacc_get_property in [nvptx gcn] looked_up(12..) required(openacc)
    c(12: "union goacc_property_value (int, enum goacc_property)")
    note("MEMORY=1, FREE_MEMORY=2, NAME=0x10001, VENDOR=0x10002 (\"Nvidia\"), DRIVER=0x10003 (\"CUDA Driver 13.0\"). The union holds `const char*` or `size_t` and is returned in RAX.")
    fn(ord: c_int, prop: c_uint) -> PropertyValue {
        match guard::result("openacc_get_property", AccProperty::None, || Backend::property(ord, prop)) {
            AccProperty::Size(n) => PropertyValue { size: n },
            AccProperty::Str(s) => PropertyValue { text: s.as_ptr() },
            AccProperty::None => PropertyValue { size: 0 },
        }
    }

    // ---- OpenACC's CUDA interop (CUDA products only) --------------------------------

    /// Pointer to the calling thread's native device handle (`CUdevice`); NULL without
    /// OpenACC thread data.
    GOMP_OFFLOAD_openacc_cuda_get_current_device in [nvptx] looked_up(12..) required(all_or_none openacc_cuda)
    c(12: "void *(void)")
    note("Returns a **pointer to** a CUdevice; NULL if no thread data.")
    fn() -> *mut c_void {
        guard::value("openacc_cuda_get_current_device", ::std::ptr::null_mut(), Backend::native_device)
    }

    /// The calling thread's native context; NULL without OpenACC thread data.
    GOMP_OFFLOAD_openacc_cuda_get_current_context in [nvptx] looked_up(12..) required(all_or_none openacc_cuda)
    c(12: "void *(void)")
    note("The current CUcontext; NULL if no thread data.")
    fn() -> *mut c_void {
        guard::value("openacc_cuda_get_current_context", ::std::ptr::null_mut(), Backend::native_context)
    }

    /// The native stream of `aq`.
    GOMP_OFFLOAD_openacc_cuda_get_stream in [nvptx] looked_up(12..) required(all_or_none openacc_cuda)
    c(12: "void *(struct goacc_asyncqueue *)")
    note("The queue's CUstream.")
    fn(aq: *mut GoaccAsyncqueue) -> *mut c_void {
        guard::result("openacc_cuda_get_stream", ::std::ptr::null_mut(), || {
            Ok(AccQueue::native_stream(shell::queue::<Backend>(aq)?))
        })
    }

    /// Makes `aq` use the program's `stream`; 1 on success, 0 after an error message.
    GOMP_OFFLOAD_openacc_cuda_set_stream in [nvptx] looked_up(12..) required(all_or_none openacc_cuda)
    c(12: "int (struct goacc_asyncqueue *, void *)")
    note("Syncs and destroys the old stream, then adopts the user's; returns 1.")
    fn(aq: *mut GoaccAsyncqueue, stream: *mut c_void) -> c_int {
        guard::result("openacc_cuda_set_stream", 0, || {
            AccQueue::set_native_stream(shell::queue::<Backend>(aq)?, stream)?;
            Ok(1)
        })
    }

    } };
}

__gomp_entry_point_table!(describe);
