//! CUDA 12's context-independent loading (`cuLibrary*`, `cuKernel*`). There is one device
//! and its contexts share everything, so a `CUlibrary` is a loaded module's handle and a
//! `CUkernel` is its kernel's `CUfunction`: the module functions do the work, and either
//! handle is accepted wherever the other is (as CUDA lets a `CUkernel` be launched as a
//! `CUfunction`). Library options are accepted and ignored.

use super::launch::{cuFuncGetAttribute, cuFuncSetAttribute};
use super::module::*;
use super::*;
use std::ffi::{CString, c_char, c_void};

pub type CUlibrary = CUmodule;
pub type CUkernel = CUfunction;

/// As `cuModuleLoadDataEx`, with the JIT options' logs, and no current context needed.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadData(
    library: *mut CUlibrary,
    code: *const c_void,
    jit_options: *mut u32,
    jit_values: *mut *mut c_void,
    jit_count: u32,
    _library_options: *mut u32,
    _library_values: *mut *mut c_void,
    _library_count: u32,
) -> CUresult {
    let jit = (jit_count, jit_options, jit_values);
    // SAFETY: the same contract as `cuModuleLoadDataEx`'s.
    unsafe { load_library(library, code, jit, "<cuLibraryLoadData>") }
}

/// Loads a PTX file, as `cuLibraryLoadData` loads its text.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    library: *mut CUlibrary,
    path: *const c_char,
    jit_options: *mut u32,
    jit_values: *mut *mut c_void,
    jit_count: u32,
    _library_options: *mut u32,
    _library_values: *mut *mut c_void,
    _library_count: u32,
) -> CUresult {
    let (mut text, mut name) = (CString::default(), "");
    let read = api(|| {
        initialized()?;
        // SAFETY: CUDA's contract: a NUL-terminated file name.
        name = unsafe { crate::ffi::text(path) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let bytes = read_file(name)?;
        // The image is a C string: the text up to its first NUL.
        let first = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
        text = CString::new(first).expect("no NUL before the first");
        Ok(())
    });
    if read != CUDA_SUCCESS {
        return read;
    }
    let jit = (jit_count, jit_options, jit_values);
    // SAFETY: `text` is NUL-terminated and outlives the call; the options as the caller gave
    // them (CUDA's contract).
    unsafe { load_library(library, text.as_ptr() as *const c_void, jit, name) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuLibraryUnload(library: CUlibrary) -> CUresult {
    cuModuleUnload(library)
}

/// As `cuModuleGetFunction`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetKernel(
    kernel: *mut CUkernel,
    library: CUlibrary,
    name: *const c_char,
) -> CUresult {
    // SAFETY: the same contract as `cuModuleGetFunction`'s.
    unsafe { cuModuleGetFunction(kernel, library, name) }
}

/// The library's module: the same handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetModule(m: *mut CUmodule, library: CUlibrary) -> CUresult {
    api(|| {
        initialized()?;
        module(library)?;
        // SAFETY: CUDA's contract: a writable CUmodule.
        unsafe { out(m, library) }
    })
}

/// The kernel's function in the current context: the same handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetFunction(f: *mut CUfunction, k: CUkernel) -> CUresult {
    api(|| {
        initialized()?;
        kernel(k)?;
        // SAFETY: CUDA's contract: a writable CUfunction.
        unsafe { out(f, k) }
    })
}

/// As `cuModuleGetGlobal`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryGetGlobal(
    dptr: *mut CUdeviceptr,
    bytes: *mut usize,
    library: CUlibrary,
    name: *const c_char,
) -> CUresult {
    // SAFETY: the same contract as `cuModuleGetGlobal`'s.
    unsafe { cuModuleGetGlobal_v2(dptr, bytes, library, name) }
}

/// The one device, or `CUDA_ERROR_INVALID_DEVICE`.
fn one_device(d: i32) -> CUresult {
    api(|| {
        initialized()?;
        device::device(d)
    })
}

/// As `cuFuncGetAttribute`, on the one device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetAttribute(
    value: *mut i32,
    attr: i32,
    k: CUkernel,
    d: i32,
) -> CUresult {
    match one_device(d) {
        // SAFETY: the same contract as `cuFuncGetAttribute`'s.
        CUDA_SUCCESS => unsafe { cuFuncGetAttribute(value, attr, k) },
        e => e,
    }
}

/// As `cuFuncSetAttribute`, on the one device.
#[unsafe(no_mangle)]
pub extern "C" fn cuKernelSetAttribute(attr: i32, value: i32, k: CUkernel, d: i32) -> CUresult {
    match one_device(d) {
        CUDA_SUCCESS => cuFuncSetAttribute(k, attr, value),
        e => e,
    }
}
