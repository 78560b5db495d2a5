//! `cuLaunchKernel` (parameters through `kernelParams` or a packed `extra` buffer) and
//! function attributes. A launch runs to its end before the call returns.

use super::module::{CUfunction, kernel};
use super::stream::CUstream;
use super::*;
use crate::ffi::LastError;
use ptxjit::block::MAX_SHARED_BYTES;
use ptxjit::{Dim3, LaunchConfig, RunError};
use std::ffi::c_void;

/// `extra` keys.
const LAUNCH_PARAM_END: usize = 0;
const LAUNCH_PARAM_BUFFER_POINTER: usize = 1;
const LAUNCH_PARAM_BUFFER_SIZE: usize = 2;

/// The code of a failed launch: faults by what they touched, refusals as invalid values.
pub fn launch_error(e: &RunError) -> CUresult {
    match e {
        RunError::Fault(f, _) if f.message.contains("misaligned") => CUDA_ERROR_MISALIGNED_ADDRESS,
        RunError::Fault(f, _) if f.address.is_some() => CUDA_ERROR_ILLEGAL_ADDRESS,
        RunError::Fault(..) => CUDA_ERROR_LAUNCH_FAILED,
        RunError::Usage(_) => CUDA_ERROR_INVALID_VALUE,
        RunError::Interrupted => CUDA_ERROR_LAUNCH_FAILED,
    }
}

/// The packed parameter buffer that `extra` names.
///
/// # Safety
///
/// `extra` is a `LAUNCH_PARAM_END`-terminated list of key/value pointers, the buffer
/// pointer valid for the size the size key points to.
unsafe fn packed_buffer<'a>(extra: *mut *mut c_void) -> Result<&'a [u8]> {
    let (mut buffer, mut size) = (None, None);
    for i in (0..).step_by(2) {
        // SAFETY: the caller's promise: pairs up to the END key.
        let (key, value) = unsafe { (*extra.add(i) as usize, *extra.add(i + 1)) };
        match key {
            LAUNCH_PARAM_END => break,
            LAUNCH_PARAM_BUFFER_POINTER => buffer = Some(value as *const u8),
            // SAFETY: the size key's value points to a size_t (CUDA's contract).
            LAUNCH_PARAM_BUFFER_SIZE if !value.is_null() => {
                size = Some(unsafe { *(value as *const usize) })
            }
            _ => {
                return Err(Failure::new(
                    CUDA_ERROR_INVALID_VALUE,
                    format!("unknown `extra` key {key:#x}"),
                ));
            }
        }
    }
    match (buffer, size) {
        (Some(p), Some(n)) if !p.is_null() => {
            // SAFETY: the caller's promise: the buffer holds `n` bytes for the launch.
            Ok(unsafe { std::slice::from_raw_parts(p, n) })
        }
        _ => Err(Failure::new(
            CUDA_ERROR_INVALID_VALUE,
            "`extra` needs CU_LAUNCH_PARAM_BUFFER_POINTER and CU_LAUNCH_PARAM_BUFFER_SIZE",
        )),
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernel(
    f: CUfunction,
    grid_x: u32,
    grid_y: u32,
    grid_z: u32,
    block_x: u32,
    block_y: u32,
    block_z: u32,
    shared_bytes: u32,
    _stream: CUstream,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    api(|| {
        ready()?;
        let k = kernel(f)?;
        let program = &k.program;
        let info = &program.functions[k.index];
        let limit = k.max_dynamic_shared.load(Ordering::Relaxed);
        if shared_bytes > limit {
            return Err(Failure::new(
                CUDA_ERROR_INVALID_VALUE,
                format!(
                    "`{}` may have {limit} bytes of dynamic shared memory, {shared_bytes} asked \
                     (raise CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                    info.name
                ),
            ));
        }
        let values = match (params.is_null(), extra.is_null()) {
            // SAFETY: CUDA's contract: one pointer per parameter, each to its value.
            (false, true) => unsafe { program.pointed_params(k.index, params) },
            (true, false) => {
                // SAFETY: CUDA's contract for `extra`.
                let buffer = unsafe { packed_buffer(extra) }?;
                program.packed_params(k.index, buffer).ok_or_else(|| {
                    Failure::new(
                        CUDA_ERROR_INVALID_VALUE,
                        format!(
                            "the parameter buffer is smaller than `{}`'s {} bytes",
                            info.name, program.layouts[k.index].1
                        ),
                    )
                })?
            }
            (true, true) if info.params.is_empty() => Vec::new(),
            _ => {
                return Err(Failure::new(
                    CUDA_ERROR_INVALID_VALUE,
                    "give the parameters through exactly one of kernelParams and extra",
                ));
            }
        };
        let config = LaunchConfig {
            grid: Dim3::new(grid_x, grid_y, grid_z),
            block: Dim3::new(block_x, block_y, block_z),
            shared_bytes,
        };
        // SAFETY: device pointers are registry allocations, which live until freed; freeing
        // one during a launch is the program's race, as with CUDA.
        unsafe { program.launch(k.index, config, &values) }
            .map_err(|e| Failure::with(launch_error(&e), LastError::run(&e)))
    })
}

/// `CUlaunchConfig`, what `cuLaunchKernelEx` takes.
#[repr(C)]
pub struct LaunchConfigEx {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: CUstream,
    attrs: *const LaunchAttribute,
    num_attrs: u32,
}

/// `CUlaunchAttribute`: an id and a 64-byte union of values.
#[repr(C)]
pub struct LaunchAttribute {
    id: u32,
    _pad: u32,
    value: [u32; 16],
}

// The layouts of CUDA's header.
const _: () = assert!(size_of::<LaunchAttribute>() == 72 && size_of::<LaunchConfigEx>() == 56);

/// `CUlaunchAttributeID`s that change nothing here: ignore, the L2 access policy window,
/// the synchronization policy, the cluster scheduling preference, programmatic stream
/// serialization (it allows a launch to overlap the one before, and launches here end before
/// the call returns), the priority, the memory synchronization domains and the preferred
/// shared memory carveout.
const NO_EFFECT_ATTRIBUTES: [u32; 9] = [0, 1, 3, 5, 6, 8, 9, 10, 14];
/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`: taken when off. A cooperative launch promises every
/// block running at once (for a grid-wide barrier), which blocks run in turn do not keep.
const COOPERATIVE: u32 = 2;
/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`: taken for clusters of one block.
const CLUSTER_DIMENSION: u32 = 4;

/// `cuLaunchKernel` with its configuration in a struct, and launch attributes: those
/// without effect on a CPU are accepted, clusters of one block too (what `%cluster_*`
/// reads here) and a cooperative launch turned off; anything else is not supported.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuLaunchKernelEx(
    config: *const LaunchConfigEx,
    f: CUfunction,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CUresult {
    let checked = api(|| {
        ready()?;
        // SAFETY: CUDA's contract: null or a readable CUlaunchConfig.
        let c = unsafe { config.as_ref() }.ok_or(CUDA_ERROR_INVALID_VALUE)?;
        let attrs = match (c.num_attrs, c.attrs.is_null()) {
            (0, _) => &[][..],
            (_, true) => return Err(CUDA_ERROR_INVALID_VALUE.into()),
            // SAFETY: CUDA's contract: `num_attrs` readable attributes.
            (n, false) => unsafe { std::slice::from_raw_parts(c.attrs, n as usize) },
        };
        for a in attrs {
            let taken = NO_EFFECT_ATTRIBUTES.contains(&a.id)
                || (a.id == COOPERATIVE && a.value[0] == 0)
                || (a.id == CLUSTER_DIMENSION && a.value[..3] == [1, 1, 1]);
            if !taken {
                return Err(Failure::new(
                    CUDA_ERROR_NOT_SUPPORTED,
                    format!("launch attribute {} is not supported", a.id),
                ));
            }
        }
        Ok(())
    });
    if checked != CUDA_SUCCESS {
        return checked;
    }
    // SAFETY: checked readable above.
    let c = unsafe { &*config };
    let ([gx, gy, gz], [bx, by, bz]) = (c.grid, c.block);
    // SAFETY: the same contract as `cuLaunchKernel`'s for the parameters.
    unsafe {
        cuLaunchKernel(
            f,
            gx,
            gy,
            gz,
            bx,
            by,
            bz,
            c.shared_bytes,
            c.stream,
            params,
            extra,
        )
    }
}

/// `.version X.Y` of a module's text as X*10+Y (`CU_FUNC_ATTRIBUTE_PTX_VERSION`).
fn ptx_version(text: &str) -> i32 {
    text.lines()
        .find_map(|l| l.trim().strip_prefix(".version"))
        .and_then(|v| {
            let (major, minor) = v.trim().split_once('.')?;
            Some(major.parse::<i32>().ok()? * 10 + minor.trim().parse::<i32>().ok()?)
        })
        .unwrap_or(0)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFuncGetAttribute(value: *mut i32, attr: i32, f: CUfunction) -> CUresult {
    api(|| {
        initialized()?;
        let k = kernel(f)?;
        let jit = &k.program.jit;
        let v = match attr {
            0 => 1024,
            1 => jit.static_shared_bytes(&k.program.functions[k.index].name) as i32,
            2 => jit
                .module()
                .vars
                .iter()
                .filter(|v| v.space == ptxjit::ast::Space::Const)
                .map(|v| v.size as i32)
                .sum(),
            3 => 0,
            4 => 32,
            5 => ptx_version(&jit.module().source.text),
            6 => 80,
            7 => 0,
            8 => k.max_dynamic_shared.load(Ordering::Relaxed) as i32,
            9 => -1,
            10..16 => 0,
            _ => {
                return Err(Failure::new(
                    CUDA_ERROR_INVALID_VALUE,
                    format!("no function attribute {attr}"),
                ));
            }
        };
        // SAFETY: CUDA's contract: a writable int.
        unsafe { out(value, v) }
    })
}

/// Sets `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES` (up to the device's opt-in limit
/// less the static shared memory); other settable attributes are accepted and ignored.
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetAttribute(f: CUfunction, attr: i32, value: i32) -> CUresult {
    api(|| {
        initialized()?;
        let k = kernel(f)?;
        match attr {
            8 => {
                let jit = &k.program.jit;
                let name = &k.program.functions[k.index].name;
                let most = MAX_SHARED_BYTES.saturating_sub(jit.static_shared_bytes(name));
                if value < 0 || value as u32 > most {
                    return Err(Failure::new(
                        CUDA_ERROR_INVALID_VALUE,
                        format!("at most {most} bytes of dynamic shared memory, {value} asked"),
                    ));
                }
                k.max_dynamic_shared.store(value as u32, Ordering::Relaxed);
                Ok(())
            }
            9..16 => Ok(()),
            _ => Err(CUDA_ERROR_INVALID_VALUE.into()),
        }
    })
}

/// Cache preferences mean nothing on a CPU; accepted.
#[unsafe(no_mangle)]
pub extern "C" fn cuFuncSetCacheConfig(f: CUfunction, _config: u32) -> CUresult {
    api(|| {
        initialized()?;
        kernel(f).map(drop)
    })
}
