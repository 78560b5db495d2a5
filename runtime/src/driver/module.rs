//! Modules from PTX text (`cuModuleLoadData`, `…Ex`, `cuModuleLoad`), their kernels
//! (`CUfunction` handles) and variables (`cuModuleGetGlobal`).

use super::jit_log::{self, JitLogs};
use super::*;
use crate::ffi::{LastError, text};
use crate::program::{LoadError, Program};
use ptxjit::ast::FuncKind;
use std::collections::{HashMap, HashSet};
use std::ffi::{CStr, c_char, c_void};
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, LazyLock, Mutex, RwLock};

pub type CUmodule = *mut c_void;
pub type CUfunction = *mut c_void;

/// A loaded module and the kernels handed out from it.
pub struct DriverModule {
    pub program: Arc<Program>,
    kernels: Mutex<HashMap<String, Box<Kernel>>>,
}

/// A kernel of a loaded module: what a `CUfunction` points to.
pub struct Kernel {
    pub program: Arc<Program>,
    /// Its index among the module's functions.
    pub index: usize,
    pub module: usize,
    /// Most dynamic shared memory a launch may ask for
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
    pub max_dynamic_shared: AtomicU32,
}

/// Live modules and kernels, by address.
static MODULES: LazyLock<RwLock<HashSet<usize>>> = LazyLock::new(Default::default);
static KERNELS: LazyLock<RwLock<HashSet<usize>>> = LazyLock::new(Default::default);

pub(super) fn module(m: CUmodule) -> Result<&'static DriverModule> {
    let live = MODULES.read().unwrap_or_else(|e| e.into_inner());
    if live.contains(&(m as usize)) {
        // SAFETY: live modules are `Box<DriverModule>`s leaked by `load` and not yet
        // unloaded; a caller that unloads a module while using it races as with CUDA.
        Ok(unsafe { &*(m as *const DriverModule) })
    } else {
        Err(Failure::new(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{m:p} is not a loaded module"),
        ))
    }
}

/// The kernel behind a live `CUfunction`.
pub fn kernel(f: CUfunction) -> Result<&'static Kernel> {
    let live = KERNELS.read().unwrap_or_else(|e| e.into_inner());
    if live.contains(&(f as usize)) {
        // SAFETY: live kernels are boxes owned by their live module (removed from KERNELS
        // before the module is freed).
        Ok(unsafe { &*(f as *const Kernel) })
    } else {
        Err(Failure::new(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{f:p} is not a kernel of a loaded module"),
        ))
    }
}

fn load(pmod: *mut CUmodule, ptx: &str, path: &str) -> Result<Arc<Program>> {
    ready()?;
    load_anywhere(pmod, ptx, path)
}

/// `load` without a current context: a CUDA 12 library belongs to every context.
fn load_anywhere(pmod: *mut CUmodule, ptx: &str, path: &str) -> Result<Arc<Program>> {
    initialized()?;
    if pmod.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE.into());
    }
    let program = match Program::compile(ptx, path, checked()) {
        Ok(p) => Arc::new(p),
        Err(LoadError::Parse(e)) => {
            return Err(Failure::with(CUDA_ERROR_INVALID_PTX, LastError::parse(&e)));
        }
        Err(LoadError::Compile(e)) => {
            return Err(Failure::with(CUDA_ERROR_INVALID_PTX, LastError::run(&e)));
        }
    };
    let m = Box::into_raw(Box::new(DriverModule {
        program: program.clone(),
        kernels: Mutex::default(),
    }));
    MODULES
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(m as usize);
    // SAFETY: checked non-null; CUDA's contract: a writable CUmodule.
    unsafe { out(pmod, m as CUmodule)? };
    Ok(program)
}

/// The PTX text of an image, refusing binaries.
///
/// # Safety
///
/// `image` is null or a NUL-terminated image.
unsafe fn ptx_text<'a>(image: *const c_void) -> Result<&'a str> {
    if image.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE.into());
    }
    // SAFETY: the caller's promise: a NUL-terminated image (PTX text is).
    let bytes = unsafe { CStr::from_ptr(image as *const c_char) }.to_bytes();
    if bytes.starts_with(b"\x7fELF")
        || bytes.starts_with(&[0x50, 0xed, 0x55, 0xba])
        || bytes.starts_with(&[0xb1, 0x43, 0x62, 0x46])
    {
        return Err(Failure::new(
            CUDA_ERROR_INVALID_IMAGE,
            "the image is a cubin or fatbin; ptxjit's driver loads PTX text only",
        ));
    }
    std::str::from_utf8(bytes).map_err(|_| {
        Failure::new(
            CUDA_ERROR_INVALID_IMAGE,
            "the image is not PTX text (not UTF-8)",
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadData(pmod: *mut CUmodule, image: *const c_void) -> CUresult {
    api(|| {
        // SAFETY: CUDA's contract: a NUL-terminated image.
        let ptx = unsafe { ptx_text(image) }?;
        load(pmod, ptx, "<cuModuleLoadData>").map(drop)
    })
}

/// As `cuModuleLoadData`; the error log options receive the located diagnostics (the info
/// log an empty string), other options are accepted and ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoadDataEx(
    pmod: *mut CUmodule,
    image: *const c_void,
    count: u32,
    options: *mut u32,
    values: *mut *mut c_void,
) -> CUresult {
    // SAFETY: the caller's promises, as `load_logged` takes them.
    unsafe {
        load_logged(
            pmod,
            image,
            (count, options, values),
            "<cuModuleLoadDataEx>",
            load,
        )
    }
}

/// Loads the PTX `image` with `loader`, writing the logs the JIT options ask for; `path`
/// names it in diagnostics.
///
/// # Safety
///
/// CUDA's contract for `cuModuleLoadDataEx`: `image` a NUL-terminated image, and `count`
/// options and values (or none).
pub(super) unsafe fn load_logged(
    pmod: *mut CUmodule,
    image: *const c_void,
    (count, options, values): (u32, *mut u32, *mut *mut c_void),
    path: &str,
    loader: fn(*mut CUmodule, &str, &str) -> Result<Arc<Program>>,
) -> CUresult {
    api(|| {
        // SAFETY: the caller's promise (CUDA's contract for the options).
        let mut logs = unsafe { JitLogs::of(count, options, values) };
        // SAFETY: CUDA's contract: a NUL-terminated image.
        let loaded = unsafe { ptx_text(image) }.and_then(|ptx| loader(pmod, ptx, path));
        jit_log::add(&mut logs.info, "");
        match loaded {
            Ok(_) => {
                jit_log::add(&mut logs.error, "");
                Ok(())
            }
            Err(Failure(code, e)) => {
                jit_log::add(&mut logs.error, &e.text.to_string_lossy());
                Err(Failure(code, e))
            }
        }
    })
}

/// As `cuModuleLoadDataEx`, with no current context needed (`cuLibraryLoadData`).
///
/// # Safety
///
/// As `cuModuleLoadDataEx`'s.
pub(super) unsafe fn load_library(
    pmod: *mut CUmodule,
    image: *const c_void,
    jit: (u32, *mut u32, *mut *mut c_void),
    path: &str,
) -> CUresult {
    // SAFETY: the caller's promises.
    unsafe { load_logged(pmod, image, jit, path, load_anywhere) }
}

/// The bytes of the file at `path`, or `CUDA_ERROR_FILE_NOT_FOUND` saying why not.
pub(super) fn read_file(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        Failure::new(
            CUDA_ERROR_FILE_NOT_FOUND,
            format!("cannot read {path}: {e}"),
        )
    })
}

/// Loads a PTX file.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleLoad(pmod: *mut CUmodule, fname: *const c_char) -> CUresult {
    api(|| {
        // SAFETY: CUDA's contract: a NUL-terminated file name.
        let path = unsafe { text(fname) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let ptx = std::fs::read_to_string(path).map_err(|e| {
            Failure::new(
                CUDA_ERROR_FILE_NOT_FOUND,
                format!("cannot read {path}: {e}"),
            )
        })?;
        load(pmod, &ptx, path).map(drop)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuModuleUnload(m: CUmodule) -> CUresult {
    api(|| {
        initialized()?;
        module(m)?;
        MODULES
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(m as usize));
        // SAFETY: it was live (checked) and is now removed, so this frees it once.
        let owned = unsafe { Box::from_raw(m as *mut DriverModule) };
        let kernels = owned.kernels.lock().unwrap_or_else(|e| e.into_inner());
        let mut live = KERNELS.write().unwrap_or_else(|e| e.into_inner());
        for k in kernels.values() {
            live.remove(&(&**k as *const Kernel as usize));
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetFunction(
    pf: *mut CUfunction,
    m: CUmodule,
    name: *const c_char,
) -> CUresult {
    api(|| {
        initialized()?;
        let dm = module(m)?;
        // SAFETY: CUDA's contract: a NUL-terminated name.
        let name = unsafe { text(name) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let index = dm.program.kernel(name).map_err(|e| {
            // A kernel that exists but uses what ptxjit does not support yet (the message
            // gives the located reasons) is not supported; any other is not found.
            let code = match dm.program.index(name) {
                Some(i) if dm.program.functions[i].kind == FuncKind::Entry => {
                    CUDA_ERROR_NOT_SUPPORTED
                }
                _ => CUDA_ERROR_NOT_FOUND,
            };
            Failure::with(code, LastError::run(&e))
        })?;
        let mut kernels = dm.kernels.lock().unwrap_or_else(|e| e.into_inner());
        let k = kernels.entry(name.to_string()).or_insert_with(|| {
            let static_shared = dm.program.jit.static_shared_bytes(name);
            let k = Box::new(Kernel {
                program: dm.program.clone(),
                index,
                module: m as usize,
                max_dynamic_shared: AtomicU32::new(
                    device::DEFAULT_SHARED_BYTES.saturating_sub(static_shared),
                ),
            });
            KERNELS
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(&*k as *const Kernel as usize);
            k
        });
        // SAFETY: CUDA's contract: a writable CUfunction.
        unsafe { out(pf, &**k as *const Kernel as CUfunction) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuModuleGetGlobal_v2(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    m: CUmodule,
    name: *const c_char,
) -> CUresult {
    api(|| {
        initialized()?;
        let dm = module(m)?;
        // SAFETY: CUDA's contract: a NUL-terminated name.
        let name = unsafe { text(name) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let (base, size) = dm.program.jit.global(name).ok_or_else(|| {
            Failure::new(
                CUDA_ERROR_NOT_FOUND,
                format!("no .global or .const variable named `{name}`"),
            )
        })?;
        // Either may be null.
        // SAFETY: each is null or writable (CUDA's contract).
        unsafe {
            crate::ffi::put(dptr, base);
            crate::ffi::put(bytes, size);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetModule(pm: *mut CUmodule, f: CUfunction) -> CUresult {
    api(|| {
        initialized()?;
        let k = kernel(f)?;
        // SAFETY: CUDA's contract: a writable CUmodule.
        unsafe { out(pm, k.module as CUmodule) }
    })
}
