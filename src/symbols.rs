//! The run-time symbol table: one declaration list per driver, resolved once from the
//! library opened at run time (the DLWRAP / `cuda-lib.def` idea). Each backend declares
//! its table with [`symbol_table!`]; calls always go through the table, so tests can
//! put a stand-in library in its place.
//!
//! A missing *required* entry makes the whole driver unusable (the backend reports 0
//! devices); a missing *optional* entry is replaced by a stand-in that returns the
//! declared "not supported" status, and `has(name)` says which entries are real.

pub use libloading::os::unix::Library;
use std::ffi::c_void;

/// Looks `name` up in `lib` with `dlsym`; `None` when absent or NULL.
pub fn dlsym(lib: &Library, name: &str) -> Option<*mut c_void> {
    // SAFETY: looking up a symbol does not run code; the caller uses the pointer only
    // through the declared signature of `name`.
    unsafe { lib.get::<*mut c_void>(name.as_bytes()) }
        .ok()
        .map(|s| *s)
        .filter(|p| !p.is_null())
}

/// Declares a driver's entry-point table: a struct `$table` with one `unsafe extern "C"
/// fn` field per entry, and `$table::resolve(lib, libname, find)`, where `find(lib,
/// api, symbol)` returns the address of an entry (e.g. through `cuGetProcAddress`, or
/// [`dlsym`]). Syntax:
///
/// ```text
/// symbol_table! {
///     /// docs
///     pub struct Driver;
///     required {
///         cuInit = "cuInit" (u32) -> CUresult;
///     }
///     optional (CUresult = CUDA_ERROR_NOT_SUPPORTED as CUresult) {
///         cuMemHostRegister = "cuMemHostRegister_v2" (*mut c_void, usize, u32);
///     }
/// }
/// ```
/// The struct owns the library and is meant to live in a `static` once resolved
/// (shared read-only by all threads).
#[macro_export]
macro_rules! symbol_table {
    (
        $(#[$meta:meta])*
        pub struct $table:ident;
        required { $( $name:ident = $sym:literal ( $($ty:ty),* ) -> $ret:ty; )* }
        optional ($ostatus:ty = $missing:expr) { $( $oname:ident = $osym:literal ( $($oty:ty),* ); )* }
    ) => {
        $(#[$meta])*
        pub struct $table {
            _lib: $crate::symbols::Library,
            missing_optional: Vec<&'static str>,
            $( #[doc = $sym] pub $name: unsafe extern "C" fn($($ty),*) -> $ret, )*
            $( #[doc = $osym] pub $oname: unsafe extern "C" fn($($oty),*) -> $ostatus, )*
        }

        impl $table {
            /// Resolves every entry of `lib` through `find(lib, api_name, symbol)`; the
            /// error names the first missing required symbol and `libname`.
            pub fn resolve(
                lib: $crate::symbols::Library,
                libname: &str,
                find: impl Fn(&$crate::symbols::Library, &str, &str) -> Option<*mut std::ffi::c_void>,
            ) -> Result<Self, String> {
                #[allow(unused_mut)]
                let mut missing_optional = Vec::new();
                $(
                    let p = find(&lib, stringify!($name), $sym)
                        .ok_or_else(|| format!("'{libname}' is missing '{}'", $sym))?;
                    // SAFETY: `p` is the library's `$sym`, whose C signature is the one declared.
                    let $name = unsafe {
                        std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn($($ty),*) -> $ret>(p)
                    };
                )*
                $(
                    let $oname = match find(&lib, stringify!($oname), $osym) {
                        // SAFETY: as above, the declared signature is `$osym`'s.
                        Some(p) => unsafe {
                            std::mem::transmute::<*mut std::ffi::c_void, unsafe extern "C" fn($($oty),*) -> $ostatus>(p)
                        },
                        None => {
                            unsafe extern "C" fn stand_in($(_: $oty),*) -> $ostatus {
                                $missing
                            }
                            missing_optional.push(stringify!($oname));
                            stand_in
                        }
                    };
                )*
                Ok($table { _lib: lib, missing_optional, $($name,)* $($oname,)* })
            }

            /// True when the optional entry point `name` was found in the library.
            pub fn has(&self, name: &str) -> bool {
                !self.missing_optional.contains(&name)
            }
        }
    };
}
