//! CUDA 12's context-independent loading (`cuLibrary*`, `cuKernel*`). There is one device
//! and its contexts share everything, so a `CUlibrary` is a loaded module's handle and a
//! `CUkernel` is its kernel's `CUfunction`: the module functions do the work, and either
//! handle is accepted wherever the other is (as CUDA lets a `CUkernel` be launched as a
//! `CUfunction`). Library options are accepted and ignored.

use super::launch::{cuFuncGetAttribute, cuFuncSetAttribute};
use super::module::*;
use super::*;
use std::ffi::{c_char, c_void};

pub type CUlibrary = CUmodule;
pub type CUkernel = CUfunction;

/// As `cuModuleLoadDataEx`, with the JIT options' logs.
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
    // SAFETY: the same contract as `cuModuleLoadDataEx`'s.
    unsafe { cuModuleLoadDataEx(library, code, jit_count, jit_options, jit_values) }
}

/// As `cuModuleLoad`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLibraryLoadFromFile(
    library: *mut CUlibrary,
    path: *const c_char,
    _jit_options: *mut u32,
    _jit_values: *mut *mut c_void,
    _jit_count: u32,
    _library_options: *mut u32,
    _library_values: *mut *mut c_void,
    _library_count: u32,
) -> CUresult {
    // SAFETY: the same contract as `cuModuleLoad`'s.
    unsafe { cuModuleLoad(library, path) }
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

/// As `cuFuncGetAttribute`; there is one device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuKernelGetAttribute(
    value: *mut i32,
    attr: i32,
    k: CUkernel,
    _device: i32,
) -> CUresult {
    // SAFETY: the same contract as `cuFuncGetAttribute`'s.
    unsafe { cuFuncGetAttribute(value, attr, k) }
}

/// As `cuFuncSetAttribute`; there is one device.
#[unsafe(no_mangle)]
pub extern "C" fn cuKernelSetAttribute(
    attr: i32,
    value: i32,
    k: CUkernel,
    _device: i32,
) -> CUresult {
    cuFuncSetAttribute(k, attr, value)
}
