//! The one device: this CPU, described with the limits the JIT keeps (sm_80's).

use super::*;
use ptxjit::block::MAX_SHARED_BYTES;
use std::ffi::c_char;

/// Static shared memory a block may use without opting in (CUDA's 48 KiB).
pub const DEFAULT_SHARED_BYTES: u32 = 48 << 10;

/// Checks a device ordinal: the CPU is device 0.
pub fn device(ordinal: CUdevice) -> Result {
    if ordinal == 0 {
        Ok(())
    } else {
        Err(Failure::new(
            CUDA_ERROR_INVALID_DEVICE,
            format!("no device {ordinal}: the CPU is device 0"),
        ))
    }
}

/// The CPU's model name, from /proc/cpuinfo.
pub fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "x86-64 CPU".into())
}

/// A `/proc/meminfo` figure in bytes.
pub fn meminfo(key: &str) -> Option<usize> {
    let t = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = t.lines().find(|l| l.starts_with(key))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The host's memory: the device's.
pub fn total_memory() -> usize {
    meminfo("MemTotal:").unwrap_or(16 << 30)
}

fn cores() -> i32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as i32)
}

/// A device attribute (`CUdevice_attribute`), or None for one out of range.
pub fn attribute(attr: i32) -> Option<i32> {
    Some(match attr {
        1 => 1024,                        // max threads per block
        2 | 3 => 1024,                    // max block dim x, y
        4 => 64,                          // max block dim z
        5 => i32::MAX,                    // max grid dim x
        6 | 7 => 65535,                   // max grid dim y, z
        8 => DEFAULT_SHARED_BYTES as i32, // shared memory per block
        9 => 64 << 10,                    // total constant memory
        10 => 32,                         // warp size
        11 => i32::MAX,                   // max pitch
        12 | 82 => 65536,                 // registers per block, per SM
        13 => 1_000_000,                  // clock rate (kHz)
        14 => 512,                        // texture alignment
        15 => 1,                          // copy and kernel overlap
        16 => cores(),                    // multiprocessors: one per core
        19 => 1,                          // can map host memory
        31 => 1,                          // concurrent kernels
        39 => 2048,                       // threads per multiprocessor
        41 => 1,                          // unified addressing
        75 => 8,                          // compute capability 8.0
        76 => 0,
        81 => MAX_SHARED_BYTES as i32 + (1 << 10), // shared memory per SM
        83 => 1,                                   // managed memory
        97 => MAX_SHARED_BYTES as i32,             // shared per block, opted in
        106 => 32,                                 // blocks per multiprocessor
        0..144 => 0,
        _ => return None,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGet(dev: *mut CUdevice, ordinal: i32) -> CUresult {
    api(|| {
        initialized()?;
        device(ordinal)?;
        // SAFETY: CUDA's contract: a writable CUdevice.
        unsafe { out(dev, 0) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetCount(count: *mut i32) -> CUresult {
    api(|| {
        initialized()?;
        // SAFETY: CUDA's contract: a writable int.
        unsafe { out(count, 1) }
    })
}

/// Writes `s` with its NUL into a caller's buffer of `len` bytes, cut to fit.
///
/// # Safety
///
/// `buf` is null or valid for writing `len` bytes.
pub unsafe fn write_text(buf: *mut c_char, len: i32, s: &str) -> Result {
    if buf.is_null() || len <= 0 {
        return Err(CUDA_ERROR_INVALID_VALUE.into());
    }
    let n = s.len().min(len as usize - 1);
    // SAFETY: the caller promises `len` writable bytes; n + 1 <= len.
    unsafe {
        std::ptr::copy_nonoverlapping(s.as_ptr(), buf as *mut u8, n);
        *buf.add(n) = 0;
    }
    Ok(())
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetName(name: *mut c_char, len: i32, dev: CUdevice) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: `len` writable bytes.
        unsafe { write_text(name, len, &format!("ptxjit CPU ({})", cpu_name())) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, dev: CUdevice) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: a writable size_t.
        unsafe { out(bytes, total_memory()) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetAttribute(
    value: *mut i32,
    attr: i32,
    dev: CUdevice,
) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        let v = attribute(attr).ok_or_else(|| {
            Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!("no device attribute {attr}"),
            )
        })?;
        // SAFETY: CUDA's contract: a writable int.
        unsafe { out(value, v) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceComputeCapability(
    major: *mut i32,
    minor: *mut i32,
    dev: CUdevice,
) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: two writable ints.
        unsafe {
            out(major, 8)?;
            out(minor, 0)
        }
    })
}

/// The device's UUID: fixed bytes spelling "ptxjit-cpu-dev-0".
const UUID: [u8; 16] = *b"ptxjit-cpu-dev-0";

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid(uuid: *mut [u8; 16], dev: CUdevice) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: a writable CUuuid (16 bytes).
        unsafe { out(uuid, UUID) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetUuid_v2(uuid: *mut [u8; 16], dev: CUdevice) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuDeviceGetUuid(uuid, dev) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDeviceGetPCIBusId(
    bus: *mut c_char,
    len: i32,
    dev: CUdevice,
) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: `len` writable bytes.
        unsafe { write_text(bus, len, "0000:00:00.0") }
    })
}
