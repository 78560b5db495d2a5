//! CUDA's driver API on the CPU: one device (this CPU), contexts, modules from PTX text,
//! memory in the host's address space, synchronous launches, streams and events.
//!
//! Exported under the names CUDA's header maps its functions to (`cuMemAlloc` is
//! `cuMemAlloc_v2`, …) with CUDA's argument types and `CUresult` codes, so that the library
//! serves as `libcuda.so.1`; [`proc::cuGetProcAddress_v2`] hands out every implemented entry
//! point, and a stub that returns `CUDA_ERROR_NOT_SUPPORTED` for any other `cu*` name.
//!
//! A device pointer is the host address of an allocation in the [`crate::registry`]; checked
//! mode (the default; `PTXJIT_UNCHECKED=1` in the environment turns it off for modules
//! loaded afterwards) reports a kernel's access outside the known allocations as
//! `CUDA_ERROR_ILLEGAL_ADDRESS`, with ptxjit's located message in `ptxjit_last_error()`.
//! Work is done when it is submitted: streams order nothing, and events record the time
//! their `cuEventRecord` ran.
//!
//! Every function's safety contract is CUDA's: pointers are null or valid for what the
//! function reads or writes, and handles are ones it handed out and not destroyed.
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod context;
pub mod device;
pub mod errors;
pub mod jit_log;
pub mod launch;
pub mod library;
pub mod link;
pub mod memory;
pub mod module;
pub mod proc;
pub mod stream;

use crate::ffi::{LastError, guard, set_last_error};
use std::sync::atomic::{AtomicBool, Ordering};

pub type CUresult = u32;
pub type CUdevice = i32;
pub type CUdeviceptr = u64;

pub const CUDA_SUCCESS: CUresult = 0;
pub const CUDA_ERROR_INVALID_VALUE: CUresult = 1;
pub const CUDA_ERROR_OUT_OF_MEMORY: CUresult = 2;
pub const CUDA_ERROR_NOT_INITIALIZED: CUresult = 3;
pub const CUDA_ERROR_NO_DEVICE: CUresult = 100;
pub const CUDA_ERROR_INVALID_DEVICE: CUresult = 101;
pub const CUDA_ERROR_INVALID_IMAGE: CUresult = 200;
pub const CUDA_ERROR_INVALID_CONTEXT: CUresult = 201;
pub const CUDA_ERROR_INVALID_PTX: CUresult = 218;
pub const CUDA_ERROR_FILE_NOT_FOUND: CUresult = 301;
pub const CUDA_ERROR_INVALID_HANDLE: CUresult = 400;
pub const CUDA_ERROR_NOT_FOUND: CUresult = 500;
pub const CUDA_ERROR_NOT_READY: CUresult = 600;
pub const CUDA_ERROR_ILLEGAL_ADDRESS: CUresult = 700;
pub const CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: CUresult = 701;
pub const CUDA_ERROR_MISALIGNED_ADDRESS: CUresult = 716;
pub const CUDA_ERROR_LAUNCH_FAILED: CUresult = 719;
pub const CUDA_ERROR_NOT_SUPPORTED: CUresult = 801;
pub const CUDA_ERROR_UNKNOWN: CUresult = 999;

/// The CUDA version this driver reports (`cuDriverGetVersion`): 12.8.
pub const DRIVER_VERSION: i32 = 12080;

/// A failed call: its code, and the message `ptxjit_last_error` gives.
pub struct Failure(pub CUresult, pub Box<LastError>);

impl Failure {
    pub fn new(code: CUresult, message: impl AsRef<str>) -> Failure {
        Failure::with(code, LastError::message(message))
    }
    pub fn with(code: CUresult, e: LastError) -> Failure {
        Failure(code, Box::new(e))
    }
}

impl From<CUresult> for Failure {
    fn from(code: CUresult) -> Failure {
        Failure::with(code, LastError::message(errors::describe(code)))
    }
}

pub type Result<T = ()> = std::result::Result<T, Failure>;

/// Runs an entry point's body: a panic becomes `CUDA_ERROR_UNKNOWN`, a failure its code
/// (and the thread's last error).
pub fn api(body: impl FnOnce() -> Result) -> CUresult {
    guard(CUDA_ERROR_UNKNOWN, || match body() {
        Ok(()) => CUDA_SUCCESS,
        Err(Failure(code, e)) => {
            set_last_error(*e);
            code
        }
    })
}

static INITIALIZED: AtomicBool = AtomicBool::new(false);

/// `CUDA_ERROR_NOT_INITIALIZED` before `cuInit`.
pub fn initialized() -> Result {
    if INITIALIZED.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err(Failure::new(
            CUDA_ERROR_NOT_INITIALIZED,
            "cuInit has not been called",
        ))
    }
}

/// Initialisation and a current context: what most entry points need.
pub fn ready() -> Result {
    initialized()?;
    context::current().map(|_| ()).ok_or_else(|| {
        Failure::new(
            CUDA_ERROR_INVALID_CONTEXT,
            "no context is current on this thread",
        )
    })
}

/// Writes through an out-pointer, or fails with `CUDA_ERROR_INVALID_VALUE` for null.
///
/// # Safety
///
/// `p` is null or valid for writing a `T`.
pub unsafe fn out<T>(p: *mut T, v: T) -> Result {
    // SAFETY: the caller's promise.
    if unsafe { crate::ffi::put(p, v) } {
        Ok(())
    } else {
        Err(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            "an output pointer is null",
        ))
    }
}

/// Whether kernels loaded now are compiled with memory checks (unless `PTXJIT_UNCHECKED=1`).
pub fn checked() -> bool {
    !std::env::var("PTXJIT_UNCHECKED").is_ok_and(|v| v == "1")
}

/// Starts the driver; `flags` must be 0.
#[unsafe(no_mangle)]
pub extern "C" fn cuInit(flags: u32) -> CUresult {
    api(|| {
        if flags != 0 {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        INITIALIZED.store(true, Ordering::Release);
        Ok(())
    })
}

/// The CUDA version the driver supports.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDriverGetVersion(version: *mut i32) -> CUresult {
    // SAFETY: CUDA's contract: a writable int.
    api(|| unsafe { out(version, DRIVER_VERSION) })
}
