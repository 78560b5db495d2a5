//! The driver's linker (`cuLink*`) for one PTX input. ptxjit loads PTX text, so the linked
//! image of a single PTX module is that text, which `cuModuleLoadData` and
//! `cuLibraryLoadData` take: numba-cuda links its kernels so when nvJitLink is not
//! installed. The input is parsed when it is added, as the driver compiles it then, and a
//! syntax error comes back as `CUDA_ERROR_INVALID_PTX` with the located diagnostics in the
//! error log. Binary inputs (cubins, fatbins, objects, libraries, LTO IR) are not supported,
//! nor is more than one input: several PTX modules would have to be linked into one, their
//! `.extern` declarations resolved against each other's definitions, which is not built.

use super::jit_log::{self, JitLog, JitLogs};
use super::module::read_file;
use super::*;
use crate::ffi::{LastError, text};
use std::collections::HashSet;
use std::ffi::{c_char, c_void};
use std::sync::{LazyLock, Mutex, RwLock};

pub type CUlinkState = *mut c_void;

/// `CUjitInputType`: PTX text.
const INPUT_PTX: u32 = 1;
/// The last `CUjitInputType` (NVVM IR).
const INPUT_NVVM: u32 = 5;
/// A link in progress: its error log, and the PTX added so far (with a NUL after it, so
/// that the completed image is a C string).
struct Link {
    error_log: Option<JitLog>,
    ptx: Option<Vec<u8>>,
}

// SAFETY: the raw pointers are the caller's log buffer and option slot, which CUDA's
// contract keeps valid for the link's life whatever thread calls; the link is only reached
// through its mutex.
unsafe impl Send for Link {}

/// Live links, by address.
static LINKS: LazyLock<RwLock<HashSet<usize>>> = LazyLock::new(Default::default);

/// Runs `body` on the link behind `state`, locked.
fn with_link<T>(state: CUlinkState, body: impl FnOnce(&mut Link) -> Result<T>) -> Result<T> {
    let live = LINKS.read().unwrap_or_else(|e| e.into_inner());
    if !live.contains(&(state as usize)) {
        return Err(Failure::new(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{state:p} is not a link in progress"),
        ));
    }
    // SAFETY: live links are `Box<Mutex<Link>>`s leaked by `cuLinkCreate`; `cuLinkDestroy`
    // frees one only after removing it under the write lock, which waits for this read lock.
    let link = unsafe { &*(state as *const Mutex<Link>) };
    let mut l = link.lock().unwrap_or_else(|e| e.into_inner());
    body(&mut l)
}

impl Link {
    /// A failure, also written into the error log.
    fn fail(&mut self, f: Failure) -> Failure {
        jit_log::add(&mut self.error_log, &f.1.text.to_string_lossy());
        f
    }
}

/// Starts a link; of the options, the error log is written (the info log stays empty) and
/// the rest ignored (they tune code generation, which the JIT does its own way).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkCreate_v2(
    count: u32,
    options: *mut u32,
    values: *mut *mut c_void,
    state: *mut CUlinkState,
) -> CUresult {
    api(|| {
        ready()?;
        if state.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        // SAFETY: CUDA's contract: `count` options and values (or none), the log buffers
        // and the option values valid until the link is destroyed (output options are
        // written during it).
        let mut logs = unsafe { JitLogs::of(count, options, values) };
        // The info log is empty: nothing to say (its size is the NUL alone).
        jit_log::add(&mut logs.info, "");
        let l = Box::into_raw(Box::new(Mutex::new(Link {
            error_log: logs.error,
            ptx: None,
        })));
        LINKS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(l as usize);
        // SAFETY: checked non-null; CUDA's contract: a writable CUlinkState.
        unsafe { out(state, l as CUlinkState) }
    })
}

/// Adds `bytes` of input of kind `kind`, named `name` in diagnostics.
fn add(l: &mut Link, kind: u32, bytes: &[u8], name: &str) -> Result {
    if kind > INPUT_NVVM {
        return Err(l.fail(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            format!("`{name}`: {kind} is not an input type"),
        )));
    }
    if kind != INPUT_PTX {
        return Err(l.fail(Failure::new(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("`{name}`: ptxjit links PTX text only (input type {kind})"),
        )));
    }
    if l.ptx.is_some() {
        return Err(l.fail(Failure::new(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("`{name}`: ptxjit links one PTX module, and one was added already"),
        )));
    }
    // PTX input is a C string: the text ends at its first NUL (the size may count it).
    let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
    let text = std::str::from_utf8(bytes).map_err(|_| {
        l.fail(Failure::new(
            CUDA_ERROR_INVALID_PTX,
            format!("`{name}` is not PTX text (not UTF-8)"),
        ))
    })?;
    if let Err(e) = ptxjit::Module::parse_named(text, name) {
        return Err(l.fail(Failure::with(CUDA_ERROR_INVALID_PTX, LastError::parse(&e))));
    }
    let mut ptx = bytes.to_vec();
    ptx.push(0);
    l.ptx = Some(ptx);
    Ok(())
}

/// Adds `size` bytes at `data`, of input type `kind`; per-input options are ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddData_v2(
    state: CUlinkState,
    kind: u32,
    data: *mut c_void,
    size: usize,
    name: *const c_char,
    _count: u32,
    _options: *mut u32,
    _values: *mut *mut c_void,
) -> CUresult {
    api(|| {
        initialized()?;
        with_link(state, |l| {
            if data.is_null() || size == 0 {
                return Err(CUDA_ERROR_INVALID_VALUE.into());
            }
            // SAFETY: CUDA's contract: `size` readable bytes at `data`, and `name` null or a
            // NUL-terminated string.
            let (bytes, name) = unsafe {
                (
                    std::slice::from_raw_parts(data as *const u8, size),
                    text(name).unwrap_or("<cuLinkAddData>"),
                )
            };
            add(l, kind, bytes, name)
        })
    })
}

/// Adds the file at `path`, of input type `kind`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkAddFile_v2(
    state: CUlinkState,
    kind: u32,
    path: *const c_char,
    _count: u32,
    _options: *mut u32,
    _values: *mut *mut c_void,
) -> CUresult {
    api(|| {
        initialized()?;
        with_link(state, |l| {
            // SAFETY: CUDA's contract: a NUL-terminated path.
            let path = unsafe { text(path) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
            match read_file(path) {
                Ok(bytes) => add(l, kind, &bytes, path),
                Err(f) => Err(l.fail(f)),
            }
        })
    })
}

/// The linked image: the PTX added, NUL-terminated, owned by the link until it is destroyed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLinkComplete(
    state: CUlinkState,
    image: *mut *mut c_void,
    size: *mut usize,
) -> CUresult {
    api(|| {
        initialized()?;
        with_link(state, |l| {
            if image.is_null() {
                return Err(CUDA_ERROR_INVALID_VALUE.into());
            }
            let Some(ptx) = &l.ptx else {
                return Err(l.fail(Failure::new(
                    CUDA_ERROR_INVALID_VALUE,
                    "nothing was added to the link",
                )));
            };
            // SAFETY: checked non-null; CUDA's contract: a writable pointer, and `size` null
            // or a writable size. The bytes stay in the link until it is destroyed (they are
            // never replaced: a second input is refused).
            unsafe {
                crate::ffi::put(size, ptx.len());
                out(image, ptx.as_ptr() as *mut c_void)
            }
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuLinkDestroy(state: CUlinkState) -> CUresult {
    api(|| {
        initialized()?;
        let removed = LINKS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(state as usize));
        if !removed {
            return Err(Failure::new(
                CUDA_ERROR_INVALID_HANDLE,
                format!("{state:p} is not a link in progress"),
            ));
        }
        // SAFETY: it was live and this call removed it (under the write lock, after every
        // user's read lock), so this frees it once and no one holds it.
        drop(unsafe { Box::from_raw(state as *mut Mutex<Link>) });
        Ok(())
    })
}
