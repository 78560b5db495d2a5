//! `cuGetProcAddress`: every implemented entry point by its base name and the CUDA version
//! the caller was built for (`cuMemAlloc` at 3020 and later is `cuMemAlloc_v2`), and for any
//! other `cu*` name a stub that returns `CUDA_ERROR_NOT_SUPPORTED`, so that a program asking
//! for a function outside the implemented set gets an error code when it calls it rather
//! than a missing symbol.

use super::context::*;
use super::device::*;
use super::errors::*;
use super::launch::*;
use super::library::*;
use super::link::*;
use super::memory::*;
use super::module::*;
use super::stream::*;
use super::*;
use crate::ffi::text;
use std::ffi::{c_char, c_void};
use std::sync::LazyLock;

/// (base name, first CUDA version it has this form, entry point).
type Entry = (&'static str, i32, usize);

macro_rules! entries {
    ($($name:literal $version:literal $f:expr),* $(,)?) => {
        vec![$(($name, $version, $f as *const () as usize)),*]
    };
}

static TABLE: LazyLock<Vec<Entry>> = LazyLock::new(|| {
    entries![
        "cuGetErrorString" 6000 cuGetErrorString,
        "cuGetErrorName" 6000 cuGetErrorName,
        "cuInit" 2000 cuInit,
        "cuDriverGetVersion" 2020 cuDriverGetVersion,
        "cuGetProcAddress" 11030 cuGetProcAddress,
        "cuGetProcAddress" 12000 cuGetProcAddress_v2,
        "cuDeviceGet" 2000 cuDeviceGet,
        "cuDeviceGetCount" 2000 cuDeviceGetCount,
        "cuDeviceGetName" 2000 cuDeviceGetName,
        "cuDeviceGetUuid" 9020 cuDeviceGetUuid,
        "cuDeviceGetUuid" 11040 cuDeviceGetUuid_v2,
        "cuDeviceTotalMem" 3020 cuDeviceTotalMem_v2,
        "cuDeviceGetAttribute" 2000 cuDeviceGetAttribute,
        "cuDeviceComputeCapability" 2000 cuDeviceComputeCapability,
        "cuDeviceGetPCIBusId" 4010 cuDeviceGetPCIBusId,
        "cuDevicePrimaryCtxRetain" 7000 cuDevicePrimaryCtxRetain,
        "cuDevicePrimaryCtxRelease" 11000 cuDevicePrimaryCtxRelease_v2,
        "cuDevicePrimaryCtxSetFlags" 11000 cuDevicePrimaryCtxSetFlags_v2,
        "cuDevicePrimaryCtxGetState" 7000 cuDevicePrimaryCtxGetState,
        "cuDevicePrimaryCtxReset" 11000 cuDevicePrimaryCtxReset_v2,
        "cuCtxCreate" 3020 cuCtxCreate_v2,
        "cuCtxCreate" 11040 cuCtxCreate_v3,
        "cuCtxCreate" 12050 cuCtxCreate_v4,
        "cuCtxDestroy" 4000 cuCtxDestroy_v2,
        "cuCtxPushCurrent" 4000 cuCtxPushCurrent_v2,
        "cuCtxPopCurrent" 4000 cuCtxPopCurrent_v2,
        "cuCtxSetCurrent" 4000 cuCtxSetCurrent,
        "cuCtxGetCurrent" 4000 cuCtxGetCurrent,
        "cuCtxGetDevice" 2000 cuCtxGetDevice,
        "cuCtxGetFlags" 7000 cuCtxGetFlags,
        "cuCtxSynchronize" 2000 cuCtxSynchronize,
        "cuCtxGetApiVersion" 3020 cuCtxGetApiVersion,
        "cuCtxSetLimit" 3010 cuCtxSetLimit,
        "cuCtxGetLimit" 3010 cuCtxGetLimit,
        "cuCtxGetCacheConfig" 3020 cuCtxGetCacheConfig,
        "cuCtxSetCacheConfig" 3020 cuCtxSetCacheConfig,
        "cuCtxGetStreamPriorityRange" 5050 cuCtxGetStreamPriorityRange,
        "cuModuleLoad" 2000 cuModuleLoad,
        "cuModuleLoadData" 2000 cuModuleLoadData,
        "cuModuleLoadDataEx" 2010 cuModuleLoadDataEx,
        "cuModuleUnload" 2000 cuModuleUnload,
        "cuModuleGetFunction" 2000 cuModuleGetFunction,
        "cuModuleGetGlobal" 3020 cuModuleGetGlobal_v2,
        "cuFuncGetModule" 11000 cuFuncGetModule,
        "cuFuncGetAttribute" 2020 cuFuncGetAttribute,
        "cuFuncSetAttribute" 9000 cuFuncSetAttribute,
        "cuFuncSetCacheConfig" 3000 cuFuncSetCacheConfig,
        "cuLibraryLoadData" 12000 cuLibraryLoadData,
        "cuLibraryLoadFromFile" 12000 cuLibraryLoadFromFile,
        "cuLibraryUnload" 12000 cuLibraryUnload,
        "cuLibraryGetKernel" 12000 cuLibraryGetKernel,
        "cuLibraryGetModule" 12000 cuLibraryGetModule,
        "cuLibraryGetGlobal" 12000 cuLibraryGetGlobal,
        "cuKernelGetFunction" 12000 cuKernelGetFunction,
        "cuKernelGetAttribute" 12000 cuKernelGetAttribute,
        "cuKernelSetAttribute" 12000 cuKernelSetAttribute,
        "cuLinkCreate" 6050 cuLinkCreate_v2,
        "cuLinkAddData" 6050 cuLinkAddData_v2,
        "cuLinkAddFile" 6050 cuLinkAddFile_v2,
        "cuLinkComplete" 5050 cuLinkComplete,
        "cuLinkDestroy" 5050 cuLinkDestroy,
        "cuLaunchKernel" 4000 cuLaunchKernel,
        "cuLaunchKernelEx" 11060 cuLaunchKernelEx,
        "cuMemGetInfo" 3020 cuMemGetInfo_v2,
        "cuMemAlloc" 3020 cuMemAlloc_v2,
        "cuMemAllocManaged" 6000 cuMemAllocManaged,
        "cuMemFree" 3020 cuMemFree_v2,
        "cuMemGetAddressRange" 3020 cuMemGetAddressRange_v2,
        "cuMemAllocHost" 3020 cuMemAllocHost_v2,
        "cuMemHostAlloc" 2020 cuMemHostAlloc,
        "cuMemFreeHost" 2000 cuMemFreeHost,
        "cuMemHostGetDevicePointer" 3020 cuMemHostGetDevicePointer_v2,
        "cuMemHostGetFlags" 2030 cuMemHostGetFlags,
        "cuMemHostRegister" 6050 cuMemHostRegister_v2,
        "cuMemHostUnregister" 4000 cuMemHostUnregister,
        "cuMemcpy" 4000 cuMemcpy,
        "cuMemcpyAsync" 4000 cuMemcpyAsync,
        "cuMemcpyHtoD" 3020 cuMemcpyHtoD_v2,
        "cuMemcpyDtoH" 3020 cuMemcpyDtoH_v2,
        "cuMemcpyDtoD" 3020 cuMemcpyDtoD_v2,
        "cuMemcpyHtoDAsync" 3020 cuMemcpyHtoDAsync_v2,
        "cuMemcpyDtoHAsync" 3020 cuMemcpyDtoHAsync_v2,
        "cuMemcpyDtoDAsync" 3020 cuMemcpyDtoDAsync_v2,
        "cuMemsetD8" 3020 cuMemsetD8_v2,
        "cuMemsetD16" 3020 cuMemsetD16_v2,
        "cuMemsetD32" 3020 cuMemsetD32_v2,
        "cuMemsetD8Async" 3020 cuMemsetD8Async,
        "cuMemsetD16Async" 3020 cuMemsetD16Async,
        "cuMemsetD32Async" 3020 cuMemsetD32Async,
        "cuPointerGetAttribute" 4000 cuPointerGetAttribute,
        "cuStreamCreate" 2000 cuStreamCreate,
        "cuStreamCreateWithPriority" 5050 cuStreamCreateWithPriority,
        "cuStreamDestroy" 4000 cuStreamDestroy_v2,
        "cuStreamSynchronize" 2000 cuStreamSynchronize,
        "cuStreamQuery" 2000 cuStreamQuery,
        "cuStreamWaitEvent" 3020 cuStreamWaitEvent,
        "cuStreamGetFlags" 5050 cuStreamGetFlags,
        "cuStreamGetPriority" 5050 cuStreamGetPriority,
        "cuStreamGetCtx" 9020 cuStreamGetCtx,
        "cuEventCreate" 2000 cuEventCreate,
        "cuEventRecord" 2000 cuEventRecord,
        "cuEventRecordWithFlags" 11010 cuEventRecordWithFlags,
        "cuEventQuery" 2000 cuEventQuery,
        "cuEventSynchronize" 2000 cuEventSynchronize,
        "cuEventDestroy" 4000 cuEventDestroy_v2,
        "cuEventElapsedTime" 2000 cuEventElapsedTime,
        "cuEventElapsedTime" 12080 cuEventElapsedTime_v2,
    ]
});

/// The base names of every implemented entry point.
pub fn implemented() -> Vec<&'static str> {
    let mut names: Vec<&str> = TABLE.iter().map(|e| e.0).collect();
    names.dedup();
    names
}

/// What every unimplemented `cu*` name resolves to. Driver functions all return a
/// `CUresult` and the x86-64 C convention has the caller remove its arguments, so one stub
/// serves every signature.
extern "C" fn not_supported() -> CUresult {
    crate::ffi::set_last_error(crate::ffi::LastError::message(
        "this driver API function is not implemented by ptxjit",
    ));
    CUDA_ERROR_NOT_SUPPORTED
}

/// `CUdriverProcAddressQueryResult`.
const SYMBOL_SUCCESS: i32 = 0;
const SYMBOL_NOT_FOUND: i32 = 1;
const VERSION_NOT_SUFFICIENT: i32 = 2;

/// The entry point for `name` at `version`, and the query result.
fn resolve(name: &str, version: i32) -> (usize, i32) {
    let forms: Vec<&Entry> = TABLE.iter().filter(|e| e.0 == name).collect();
    if forms.is_empty() {
        return if name.starts_with("cu") {
            (not_supported as *const () as usize, SYMBOL_SUCCESS)
        } else {
            (0, SYMBOL_NOT_FOUND)
        };
    }
    match forms.iter().filter(|e| e.1 <= version).max_by_key(|e| e.1) {
        Some(e) => (e.2, SYMBOL_SUCCESS),
        None => (0, VERSION_NOT_SUFFICIENT),
    }
}

/// Looks up `symbol` for a caller built against CUDA `version`; `flags` (default,
/// legacy or per-thread default stream) change nothing, as every stream is synchronous.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress_v2(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: i32,
    _flags: u64,
    status: *mut i32,
) -> CUresult {
    api(|| {
        // SAFETY: CUDA's contract: a NUL-terminated name.
        let name = unsafe { text(symbol) }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        if pfn.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        let (f, result) = resolve(name, version);
        // SAFETY: checked non-null; CUDA's contract: a writable function pointer, and
        // `status` null or a writable int.
        unsafe {
            *pfn = f as *mut c_void;
            crate::ffi::put(status, result);
        }
        if result == SYMBOL_SUCCESS {
            Ok(())
        } else {
            Err(Failure::new(
                CUDA_ERROR_NOT_FOUND,
                format!("no entry point `{name}` for CUDA {version}"),
            ))
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetProcAddress(
    symbol: *const c_char,
    pfn: *mut *mut c_void,
    version: i32,
    flags: u64,
) -> CUresult {
    // SAFETY: the same contract, without the status.
    unsafe { cuGetProcAddress_v2(symbol, pfn, version, flags, std::ptr::null_mut()) }
}

/// CUDA's private tables of internal entry points, which NVIDIA's own libraries ask the
/// driver for (NVRTC does when `libcuda.so.1` can be loaded): there are none here, so the
/// answer is `CUDA_ERROR_NOT_SUPPORTED` and a null table, which they handle.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetExportTable(
    table: *mut *const c_void,
    _id: *const c_void,
) -> CUresult {
    api(|| {
        // SAFETY: null or a writable pointer (CUDA's contract).
        unsafe { crate::ffi::put(table, std::ptr::null()) };
        Err(Failure::new(CUDA_ERROR_NOT_SUPPORTED, "no export tables"))
    })
}
