//! Memory: allocations in the host's address space (a device pointer is a host address),
//! entered in the [`crate::registry`] so that copies and checked kernels know them; copies
//! and sets run at once, `Async` forms included.

use super::stream::CUstream;
use super::*;
use crate::registry::{self, Kind};
use std::ffi::c_void;

fn alloc(size: usize, kind: Kind) -> Result<u64> {
    if size == 0 {
        return Err(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            "an allocation of 0 bytes",
        ));
    }
    registry::allocate(size, kind).ok_or_else(|| {
        Failure::new(
            CUDA_ERROR_OUT_OF_MEMORY,
            format!("cannot allocate {size} bytes"),
        )
    })
}

/// Checks that `[addr, addr + len)` is device memory (any region the registry knows).
fn known(addr: u64, len: usize, what: &str) -> Result {
    if len == 0 || registry::contains(addr, len) {
        Ok(())
    } else {
        Err(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            format!("{what}: {len} bytes at {addr:#x} are not inside one allocation"),
        ))
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAlloc_v2(dptr: *mut CUdeviceptr, size: usize) -> CUresult {
    api(|| {
        ready()?;
        if dptr.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        let p = alloc(size, Kind::Device)?;
        // SAFETY: checked non-null; CUDA's contract: a writable CUdeviceptr.
        unsafe { out(dptr, p) }
    })
}

/// Managed memory is ordinary memory here: the host and kernels share one address space.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocManaged(
    dptr: *mut CUdeviceptr,
    size: usize,
    _flags: u32,
) -> CUresult {
    // SAFETY: the same contract as cuMemAlloc_v2's.
    unsafe { cuMemAlloc_v2(dptr, size) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemFree_v2(dptr: CUdeviceptr) -> CUresult {
    api(|| {
        ready()?;
        if dptr == 0 || registry::release(dptr, &[Kind::Device]) {
            Ok(())
        } else {
            Err(Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!("{dptr:#x} is not the start of a device allocation"),
            ))
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemAllocHost_v2(pp: *mut *mut c_void, size: usize) -> CUresult {
    api(|| {
        ready()?;
        if pp.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        let p = alloc(size, Kind::Host)?;
        // SAFETY: checked non-null; CUDA's contract: a writable void*.
        unsafe { out(pp, p as *mut c_void) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostAlloc(
    pp: *mut *mut c_void,
    size: usize,
    _flags: u32,
) -> CUresult {
    // SAFETY: the same contract as cuMemAllocHost_v2's.
    unsafe { cuMemAllocHost_v2(pp, size) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemFreeHost(p: *mut c_void) -> CUresult {
    api(|| {
        ready()?;
        if registry::release(p as u64, &[Kind::Host]) {
            Ok(())
        } else {
            Err(Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!("{p:p} is not a host allocation"),
            ))
        }
    })
}

/// Host allocations are device memory at the same address.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetDevicePointer_v2(
    dptr: *mut CUdeviceptr,
    p: *mut c_void,
    _flags: u32,
) -> CUresult {
    api(|| {
        ready()?;
        known(p as u64, 1, "cuMemHostGetDevicePointer")?;
        // SAFETY: CUDA's contract: a writable CUdeviceptr.
        unsafe { out(dptr, p as u64) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemHostGetFlags(flags: *mut u32, p: *mut c_void) -> CUresult {
    api(|| {
        ready()?;
        known(p as u64, 1, "cuMemHostGetFlags")?;
        // SAFETY: CUDA's contract: a writable unsigned int.
        unsafe { out(flags, 0) }
    })
}

/// Makes memory the caller owns known to kernels and copies until unregistered.
#[unsafe(no_mangle)]
pub extern "C" fn cuMemHostRegister_v2(p: *mut c_void, size: usize, _flags: u32) -> CUresult {
    api(|| {
        ready()?;
        if p.is_null() || !registry::register(p as u64, size, Kind::Registered) {
            return Err(Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!("cannot register {size} bytes at {p:p} (null, empty or overlapping)"),
            ));
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemHostUnregister(p: *mut c_void) -> CUresult {
    api(|| {
        ready()?;
        if registry::release(p as u64, &[Kind::Registered]) {
            Ok(())
        } else {
            Err(Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!("{p:p} is not registered"),
            ))
        }
    })
}

/// The host's available and total memory.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CUresult {
    api(|| {
        ready()?;
        let all = device::total_memory();
        let available = device::meminfo("MemAvailable:").unwrap_or(all);
        // SAFETY: CUDA's contract: two writable size_t.
        unsafe {
            out(free, available)?;
            out(total, all)
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemGetAddressRange_v2(
    base: *mut CUdeviceptr,
    size: *mut usize,
    dptr: CUdeviceptr,
) -> CUresult {
    api(|| {
        ready()?;
        let r = registry::find(dptr).ok_or_else(|| {
            Failure::new(
                CUDA_ERROR_NOT_FOUND,
                format!("{dptr:#x} is in no allocation"),
            )
        })?;
        // Either may be null.
        // SAFETY: each is null or writable (CUDA's contract).
        unsafe {
            crate::ffi::put(base, r.base);
            crate::ffi::put(size, r.size);
        }
        Ok(())
    })
}

/// Copies `n` bytes; the ranges may overlap.
///
/// # Safety
///
/// Both ranges are valid for `n` bytes (the device sides are checked by the callers).
unsafe fn copy(dst: u64, src: u64, n: usize) -> Result {
    if n > 0 && (dst == 0 || src == 0) {
        return Err(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            "a copy to or from address 0",
        ));
    }
    // SAFETY: the caller's promise; `copy` allows overlap.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, n) };
    Ok(())
}

/// A copy between any two addresses of the unified address space.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpy(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    api(|| {
        ready()?;
        // SAFETY: CUDA's contract: both ranges valid for n bytes.
        unsafe { copy(dst, src, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyAsync(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: the same contract as cuMemcpy's.
    unsafe { cuMemcpy(dst, src, n) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoD_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
) -> CUresult {
    api(|| {
        ready()?;
        known(dst, n, "cuMemcpyHtoD destination")?;
        // SAFETY: the destination is a known allocation; CUDA's contract: `src` holds n bytes.
        unsafe { copy(dst, src as u64, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, n: usize) -> CUresult {
    api(|| {
        ready()?;
        known(src, n, "cuMemcpyDtoH source")?;
        // SAFETY: the source is a known allocation; CUDA's contract: `dst` holds n bytes.
        unsafe { copy(dst as u64, src, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoD_v2(dst: CUdeviceptr, src: CUdeviceptr, n: usize) -> CUresult {
    api(|| {
        ready()?;
        known(dst, n, "cuMemcpyDtoD destination")?;
        known(src, n, "cuMemcpyDtoD source")?;
        // SAFETY: both ranges lie inside known allocations.
        unsafe { copy(dst, src, n) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    n: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: the same contract as the synchronous form's.
    unsafe { cuMemcpyHtoD_v2(dst, src, n) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    n: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: the same contract as the synchronous form's.
    unsafe { cuMemcpyDtoH_v2(dst, src, n) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    n: usize,
    _s: CUstream,
) -> CUresult {
    // SAFETY: the same contract as the synchronous form's.
    unsafe { cuMemcpyDtoD_v2(dst, src, n) }
}

/// Fills `count` elements of `T` at `dst` (a known allocation) with `value`.
fn set<T: Copy>(dst: CUdeviceptr, value: T, count: usize) -> Result {
    ready()?;
    let size = std::mem::size_of::<T>();
    let bytes = count.checked_mul(size).ok_or(CUDA_ERROR_INVALID_VALUE)?;
    known(dst, bytes, "cuMemset destination")?;
    if !dst.is_multiple_of(size as u64) {
        return Err(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            format!("{dst:#x} is not aligned to {size} bytes"),
        ));
    }
    // SAFETY: the range lies inside a known allocation and is aligned for T.
    unsafe { std::slice::from_raw_parts_mut(dst as *mut T, count) }.fill(value);
    Ok(())
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, value: u8, count: usize) -> CUresult {
    api(|| set(dst, value, count))
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, value: u16, count: usize) -> CUresult {
    api(|| set(dst, value, count))
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, value: u32, count: usize) -> CUresult {
    api(|| set(dst, value, count))
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    value: u8,
    count: usize,
    _s: CUstream,
) -> CUresult {
    api(|| set(dst, value, count))
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    value: u16,
    count: usize,
    _s: CUstream,
) -> CUresult {
    api(|| set(dst, value, count))
}

#[unsafe(no_mangle)]
pub extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    value: u32,
    count: usize,
    _s: CUstream,
) -> CUresult {
    api(|| set(dst, value, count))
}

/// Attributes of a pointer (`CUpointer_attribute`): context, memory type, device and host
/// pointer, managed, device ordinal, range start and size.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuPointerGetAttribute(
    data: *mut c_void,
    attr: u32,
    ptr: CUdeviceptr,
) -> CUresult {
    api(|| {
        ready()?;
        let r = registry::find(ptr).ok_or_else(|| {
            Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!("{ptr:#x} is in no allocation"),
            )
        })?;
        // SAFETY: CUDA's contract: `data` is writable for the attribute's type.
        unsafe {
            match attr {
                1 => out(data as *mut usize, context::current().unwrap_or(0)),
                // CU_MEMORYTYPE_HOST = 1, CU_MEMORYTYPE_DEVICE = 2.
                2 => out(data as *mut u32, if r.kind == Kind::Device { 2 } else { 1 }),
                3 | 4 => out(data as *mut u64, ptr),
                8 => out(data as *mut u32, 0),
                9 => out(data as *mut i32, 0),
                11 => out(data as *mut u64, r.base),
                12 => out(data as *mut usize, r.size),
                _ => Err(CUDA_ERROR_NOT_SUPPORTED.into()),
            }
        }
    })
}
