//! The driver's linker (`cuLink*`) for one PTX input. ptxjit loads PTX text, so the linked
//! image of a single PTX module is that text, which `cuModuleLoadData` and
//! `cuLibraryLoadData` take: numba-cuda links its kernels so when nvJitLink is not
//! installed. The input is parsed when it is added, as the driver compiles it then, and a
//! syntax error comes back as `CUDA_ERROR_INVALID_PTX` with the located diagnostics in the
//! error log. Binary inputs (cubins, fatbins, objects, libraries, LTO IR) are not supported,
//! nor is more than one input: several PTX modules would have to be linked into one, their
//! `.extern` declarations resolved against each other's definitions, which is not built.

use super::*;
use crate::ffi::{LastError, text};
use std::collections::HashSet;
use std::ffi::{c_char, c_void};
use std::sync::{LazyLock, RwLock};

pub type CUlinkState = *mut c_void;

/// `CUjitInputType`: PTX text.
const INPUT_PTX: u32 = 1;
/// `CUjit_option`s of the logs.
const INFO_LOG_BUFFER: u32 = 3;
const INFO_LOG_BUFFER_SIZE_BYTES: u32 = 4;
const ERROR_LOG_BUFFER: u32 = 5;
const ERROR_LOG_BUFFER_SIZE_BYTES: u32 = 6;

/// A link in progress: the caller's log buffers and the PTX added so far (with a NUL after
/// it, so that the completed image is a C string).
struct Link {
    info_log: Option<(*mut c_char, usize)>,
    error_log: Option<(*mut c_char, usize)>,
    ptx: Option<Vec<u8>>,
}

/// Live links, by address.
static LINKS: LazyLock<RwLock<HashSet<usize>>> = LazyLock::new(Default::default);

fn link<'a>(state: CUlinkState) -> Result<&'a mut Link> {
    let live = LINKS.read().unwrap_or_else(|e| e.into_inner());
    if live.contains(&(state as usize)) {
        // SAFETY: live links are `Box<Link>`s leaked by `cuLinkCreate` and not yet
        // destroyed; CUDA does not make a link state safe to use from two threads at once.
        Ok(unsafe { &mut *(state as *mut Link) })
    } else {
        Err(Failure::new(
            CUDA_ERROR_INVALID_HANDLE,
            format!("{state:p} is not a link in progress"),
        ))
    }
}

impl Link {
    /// Writes `text` into the log buffer `which` (if the caller gave one), NUL-terminated and
    /// cut to its size.
    fn log(which: Option<(*mut c_char, usize)>, text: &str) {
        if let Some((buf, size)) = which {
            // SAFETY: CUDA's contract: the buffer given at `cuLinkCreate` holds `size` bytes
            // and lives until the link is destroyed.
            unsafe { device::write_text(buf, size.min(i32::MAX as usize) as i32, text).ok() };
        }
    }

    /// A failure, also written into the error log.
    fn fail(&self, f: Failure) -> Failure {
        Link::log(self.error_log, &f.1.text.to_string_lossy());
        f
    }
}

/// Starts a link; of the options, the info and error log buffers are used and the rest
/// ignored (they tune code generation, which the JIT does its own way).
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
        // SAFETY: CUDA's contract: `count` options and values (or none).
        let (options, values) = unsafe {
            if count == 0 || options.is_null() || values.is_null() {
                (&[][..], &[][..])
            } else {
                (
                    std::slice::from_raw_parts(options, count as usize),
                    std::slice::from_raw_parts(values, count as usize),
                )
            }
        };
        let find = |o: u32| options.iter().position(|&x| x == o).map(|i| values[i]);
        let buffer = |buf: u32, size: u32| match (find(buf), find(size)) {
            (Some(b), Some(s)) if !b.is_null() && s as usize > 0 => {
                Some((b as *mut c_char, s as usize))
            }
            _ => None,
        };
        let l = Box::into_raw(Box::new(Link {
            info_log: buffer(INFO_LOG_BUFFER, INFO_LOG_BUFFER_SIZE_BYTES),
            error_log: buffer(ERROR_LOG_BUFFER, ERROR_LOG_BUFFER_SIZE_BYTES),
            ptx: None,
        }));
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
    // The size may count a NUL at the end.
    let bytes = bytes.strip_suffix(&[0]).unwrap_or(bytes);
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
        let l = link(state)?;
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
        let l = link(state)?;
        // SAFETY: CUDA's contract: a NUL-terminated path.
        let path = unsafe { text(path) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let bytes = std::fs::read(path).map_err(|e| {
            l.fail(Failure::new(
                CUDA_ERROR_FILE_NOT_FOUND,
                format!("cannot read {path}: {e}"),
            ))
        })?;
        add(l, kind, &bytes, path)
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
        let l = link(state)?;
        if image.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        let Some(ptx) = &l.ptx else {
            return Err(l.fail(Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                "nothing was added to the link",
            )));
        };
        Link::log(l.info_log, "");
        Link::log(l.error_log, "");
        // SAFETY: checked non-null; CUDA's contract: a writable pointer, and `size` null or
        // a writable size.
        unsafe {
            crate::ffi::put(size, ptx.len());
            out(image, ptx.as_ptr() as *mut c_void)
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuLinkDestroy(state: CUlinkState) -> CUresult {
    api(|| {
        initialized()?;
        link(state)?;
        LINKS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(state as usize));
        // SAFETY: it was live (checked) and is now removed, so this frees it once.
        drop(unsafe { Box::from_raw(state as *mut Link) });
        Ok(())
    })
}
