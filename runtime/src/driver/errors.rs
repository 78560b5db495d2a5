//! `CUresult` codes by name and meaning (`cuGetErrorName`, `cuGetErrorString`).

use super::*;
use std::ffi::c_char;

/// Each code this driver returns or a program commonly tests for: (code, name, meaning).
/// The meanings are written for this driver.
const CODES: &[(CUresult, &str, &str)] = &[
    (0, "CUDA_SUCCESS\0", "no error\0"),
    (
        1,
        "CUDA_ERROR_INVALID_VALUE\0",
        "an argument is out of range or a pointer is null\0",
    ),
    (
        2,
        "CUDA_ERROR_OUT_OF_MEMORY\0",
        "the host could not allocate the memory\0",
    ),
    (
        3,
        "CUDA_ERROR_NOT_INITIALIZED\0",
        "cuInit has not been called\0",
    ),
    (
        4,
        "CUDA_ERROR_DEINITIALIZED\0",
        "the driver is shutting down\0",
    ),
    (100, "CUDA_ERROR_NO_DEVICE\0", "no device\0"),
    (
        101,
        "CUDA_ERROR_INVALID_DEVICE\0",
        "no such device (the CPU is device 0)\0",
    ),
    (
        200,
        "CUDA_ERROR_INVALID_IMAGE\0",
        "the module image is not PTX text\0",
    ),
    (
        201,
        "CUDA_ERROR_INVALID_CONTEXT\0",
        "no valid context is current\0",
    ),
    (
        209,
        "CUDA_ERROR_NO_BINARY_FOR_GPU\0",
        "the image has no PTX this driver can compile\0",
    ),
    (
        218,
        "CUDA_ERROR_INVALID_PTX\0",
        "the PTX does not parse or validate (see ptxjit_last_error)\0",
    ),
    (
        301,
        "CUDA_ERROR_FILE_NOT_FOUND\0",
        "the file could not be read\0",
    ),
    (
        400,
        "CUDA_ERROR_INVALID_HANDLE\0",
        "the handle is not a live object of its kind\0",
    ),
    (500, "CUDA_ERROR_NOT_FOUND\0", "no object of that name\0"),
    (
        600,
        "CUDA_ERROR_NOT_READY\0",
        "the work has not completed\0",
    ),
    (
        700,
        "CUDA_ERROR_ILLEGAL_ADDRESS\0",
        "a kernel accessed memory outside every allocation (see ptxjit_last_error)\0",
    ),
    (
        701,
        "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES\0",
        "the launch needs more resources than a block has\0",
    ),
    (
        715,
        "CUDA_ERROR_ILLEGAL_INSTRUCTION\0",
        "a kernel executed an illegal instruction\0",
    ),
    (
        716,
        "CUDA_ERROR_MISALIGNED_ADDRESS\0",
        "a kernel accessed memory at a misaligned address (see ptxjit_last_error)\0",
    ),
    (
        719,
        "CUDA_ERROR_LAUNCH_FAILED\0",
        "a kernel faulted (see ptxjit_last_error)\0",
    ),
    (
        801,
        "CUDA_ERROR_NOT_SUPPORTED\0",
        "ptxjit's driver does not implement this function or option\0",
    ),
    (
        999,
        "CUDA_ERROR_UNKNOWN\0",
        "an internal error in ptxjit's driver\0",
    ),
];

fn entry(code: CUresult) -> Option<&'static (CUresult, &'static str, &'static str)> {
    CODES.iter().find(|(c, _, _)| *c == code)
}

/// The meaning of a code, for messages.
pub fn describe(code: CUresult) -> &'static str {
    entry(code).map_or("unknown error", |e| e.2.trim_end_matches('\0'))
}

/// The name of a code (`CUDA_ERROR_INVALID_VALUE`); `CUDA_ERROR_INVALID_VALUE` itself for an
/// unknown code.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorName(error: CUresult, name: *mut *const c_char) -> CUresult {
    api(|| {
        let e = entry(error).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: CUDA's contract: a writable `const char*`.
        unsafe { out(name, e.1.as_ptr() as *const c_char) }
    })
}

/// What a code means.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuGetErrorString(error: CUresult, text: *mut *const c_char) -> CUresult {
    api(|| {
        let e = entry(error).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: CUDA's contract: a writable `const char*`.
        unsafe { out(text, e.2.as_ptr() as *const c_char) }
    })
}
