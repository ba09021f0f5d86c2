//! The NVTX tool attached to the process, if any: the function-pointer slots it fills,
//! the export tables it reads them through, and its loading (NVTX v3's injection
//! model, [`super::abi`]): nothing is loaded unless `NVTX_INJECTION64_PATH` names a
//! library, which is then `dlopen`ed once and kept loaded to the process's end.
//!
//! Ownership and threads: the slots and tables are process-wide statics. The tool
//! writes the slots only during its `InitializeInjectionNvtx2` call, made once by
//! [`load`] (before the process's gate opens, `super::attach`); afterwards they are
//! only read, by any thread.

use super::abi::{self, FunctionTable, Slot, MODULES};
use std::ffi::{c_int, c_uint, c_void};
use std::path::Path;
use std::sync::atomic::{AtomicPtr, Ordering};

/// One module's slots, as many as its callback ids (entry 0 unused).
type Slots<const N: usize> = [AtomicPtr<c_void>; N];

static CORE: Slots<16> = [const { AtomicPtr::new(std::ptr::null_mut()) }; 16];
static CUDA: Slots<9> = [const { AtomicPtr::new(std::ptr::null_mut()) }; 9];
static OPENCL: Slots<15> = [const { AtomicPtr::new(std::ptr::null_mut()) }; 15];
static CUDART: Slots<7> = [const { AtomicPtr::new(std::ptr::null_mut()) }; 7];
static CORE2: Slots<16> = [const { AtomicPtr::new(std::ptr::null_mut()) }; 16];
static SYNC: Slots<7> = [const { AtomicPtr::new(std::ptr::null_mut()) }; 7];

/// Each module's slots, in [`MODULES`] order.
fn slots(module: usize) -> &'static [AtomicPtr<c_void>] {
    match module {
        0 => &CORE,
        1 => &CUDA,
        2 => &OPENCL,
        3 => &CUDART,
        4 => &CORE2,
        _ => &SYNC,
    }
}

/// The tables of pointers to the slots the tool is handed: per module, the addresses
/// of its slots (entry 0 NULL, as NVIDIA's) and a terminating NULL. Built once, before
/// the tool is called; never freed.
struct Tables([Box<[*mut Slot]>; 6]);

// SAFETY: the pointers are addresses of the static slots (atomics) above, valid for
// the whole process; the tables are never changed after they are built.
unsafe impl Send for Tables {}
// SAFETY: as above.
unsafe impl Sync for Tables {}

static TABLES: once_cell::sync::OnceCell<Tables> = once_cell::sync::OnceCell::new();

fn tables() -> &'static Tables {
    TABLES.get_or_init(|| {
        Tables(std::array::from_fn(|m| {
            let s = slots(m);
            let mut t: Vec<*mut Slot> = s.iter().map(AtomicPtr::as_ptr).collect();
            t[0] = std::ptr::null_mut();
            t.push(std::ptr::null_mut());
            t.into_boxed_slice()
        }))
    })
}

/// `GetModuleFunctionTable` of the callbacks export table (called by the tool).
unsafe extern "C" fn get_module_function_table(
    module: c_int,
    out_table: *mut FunctionTable,
    out_size: *mut c_uint,
) -> c_int {
    let Some(m) = MODULES.iter().position(|&(id, _)| id == module) else {
        return 0;
    };
    let t = &tables().0[m];
    if !out_size.is_null() {
        // SAFETY: the tool passes a writable `unsigned int` or NULL.
        unsafe { *out_size = MODULES[m].1 as c_uint };
    }
    if !out_table.is_null() {
        // SAFETY: the tool passes a writable table pointer or NULL. The table is
        // never freed; the tool writes only through its entries (the slots).
        unsafe { *out_table = t.as_ptr().cast_mut() };
    }
    1
}

/// `SetInjectionNvtxVersion` of the version export table: ignored, as NVIDIA's
/// implementation does.
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

static CALLBACKS: abi::ExportTableCallbacks = abi::ExportTableCallbacks {
    struct_size: std::mem::size_of::<abi::ExportTableCallbacks>(),
    get_module_function_table,
};

static VERSION_INFO: abi::ExportTableVersionInfo = abi::ExportTableVersionInfo {
    struct_size: std::mem::size_of::<abi::ExportTableVersionInfo>(),
    version: abi::NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `nvtxGetExportTable`: what the tool's `InitializeInjectionNvtx2` is given.
unsafe extern "C" fn get_export_table(id: u32) -> *const c_void {
    match id {
        abi::ETID_CALLBACKS => (&CALLBACKS as *const abi::ExportTableCallbacks).cast(),
        abi::ETID_VERSIONINFO => (&VERSION_INFO as *const abi::ExportTableVersionInfo).cast(),
        _ => std::ptr::null(),
    }
}

/// The function in slot `id` of module `module` ([`MODULES`] index), if the tool filled
/// it, as a raw pointer (the caller transmutes it to the slot's type).
#[inline]
pub fn slot(module: usize, id: usize) -> Option<*mut c_void> {
    let p = slots(module).get(id)?.load(Ordering::Relaxed);
    (!p.is_null()).then_some(p)
}

/// Loads the tool `path` names and lets it fill the slots: `Ok` when its
/// `InitializeInjectionNvtx2` succeeded (the library then stays loaded), else why not
/// (the library is unloaded again). Called once per process (`super::attach`).
pub fn load(path: &Path) -> Result<(), String> {
    // Built before the tool may ask for them.
    tables();
    // SAFETY: loading a library runs its initialisers: the user asked for this tool
    // (as NVTX's own loader does for every program that uses NVTX).
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
    // SAFETY: NVTX's declared type of the entry point.
    let init = unsafe { lib.get::<abi::InitializeInjection>(abi::INITIALIZE_INJECTION) }
        .map_err(|e| e.to_string())?;
    // SAFETY: the protocol's call: the tool reads the export tables (static) and writes
    // the slots through them during this call.
    let ok = unsafe { init(get_export_table) };
    if ok == 0 {
        return Err("InitializeInjectionNvtx2 returned 0".into());
    }
    // The tool's functions are called until the process ends.
    std::mem::forget(lib);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_module_has_its_table_of_the_headers_size() {
        for (m, &(id, size)) in MODULES.iter().enumerate() {
            assert_eq!(slots(m).len(), size, "module {id}");
            let (mut table, mut n): (FunctionTable, c_uint) = (std::ptr::null_mut(), 0);
            assert_eq!(
                // SAFETY: writable out-pointers.
                unsafe { get_module_function_table(id, &mut table, &mut n) },
                1
            );
            assert_eq!(n as usize, size);
            // SAFETY: the table has `size + 1` entries.
            let t = unsafe { std::slice::from_raw_parts(table, size + 1) };
            assert!(t[0].is_null() && t[size].is_null());
            assert_eq!(t[1], slots(m)[1].as_ptr());
        }
        assert_eq!(
            // SAFETY: as above.
            unsafe { get_module_function_table(7, std::ptr::null_mut(), std::ptr::null_mut()) },
            0
        );
        // SAFETY: plain calls.
        unsafe {
            assert!(!get_export_table(abi::ETID_CALLBACKS).is_null());
            assert!(!get_export_table(abi::ETID_VERSIONINFO).is_null());
            assert!(get_export_table(2).is_null());
        }
    }
}
