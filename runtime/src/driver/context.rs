//! Contexts: the device's primary context and ordinary ones, and each thread's stack of
//! current contexts. Memory, modules and streams are the process's, whichever context was
//! current when they were made (there is one device and one address space), so destroying a
//! context frees nothing but itself.

use super::device::device;
use super::*;
use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::AtomicU32;

pub type CUcontext = *mut c_void;

/// A context: the device's primary one or one made by `cuCtxCreate`.
pub struct Context {
    flags: AtomicU32,
}

static PRIMARY: Context = Context {
    flags: AtomicU32::new(0),
};
static PRIMARY_REFS: AtomicU32 = AtomicU32::new(0);
/// Contexts made by `cuCtxCreate` and not destroyed, by address.
static CREATED: Mutex<Vec<usize>> = Mutex::new(Vec::new());

thread_local! {
    static STACK: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

fn primary() -> usize {
    &PRIMARY as *const Context as usize
}

fn created() -> std::sync::MutexGuard<'static, Vec<usize>> {
    CREATED.lock().unwrap_or_else(|e| e.into_inner())
}

/// The context behind a live handle.
fn context(ctx: CUcontext) -> Result<&'static Context> {
    let at = ctx as usize;
    if at == primary() {
        return Ok(&PRIMARY);
    }
    if created().contains(&at) {
        // SAFETY: `at` is a `Box<Context>` leaked by `create` and not yet destroyed (it is in
        // CREATED); destroyed contexts are never freed, so the reference stays valid.
        return Ok(unsafe { &*(at as *const Context) });
    }
    Err(Failure::new(
        CUDA_ERROR_INVALID_CONTEXT,
        format!("{ctx:p} is not a live context"),
    ))
}

/// The calling thread's current context.
pub fn current() -> Option<usize> {
    STACK.with(|s| s.borrow().last().copied())
}

fn create(pctx: *mut CUcontext, flags: u32, dev: CUdevice) -> Result {
    initialized()?;
    device(dev)?;
    if pctx.is_null() {
        return Err(CUDA_ERROR_INVALID_VALUE.into());
    }
    // Leaked on purpose: a destroyed context's handle may still be on other threads'
    // stacks, and only the CREATED list says whether it is live.
    let at = Box::into_raw(Box::new(Context {
        flags: AtomicU32::new(flags),
    })) as usize;
    created().push(at);
    STACK.with(|s| s.borrow_mut().push(at));
    // SAFETY: checked non-null; CUDA's contract: a writable CUcontext.
    unsafe { out(pctx, at as CUcontext) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v2(
    pctx: *mut CUcontext,
    flags: u32,
    dev: CUdevice,
) -> CUresult {
    api(|| create(pctx, flags, dev))
}

/// As `cuCtxCreate_v2`; execution-affinity parameters are accepted and ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v3(
    pctx: *mut CUcontext,
    _params: *mut c_void,
    _count: i32,
    flags: u32,
    dev: CUdevice,
) -> CUresult {
    api(|| create(pctx, flags, dev))
}

/// As `cuCtxCreate_v2`; the creation parameters (affinity, CIG) are accepted and ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxCreate_v4(
    pctx: *mut CUcontext,
    _params: *mut c_void,
    flags: u32,
    dev: CUdevice,
) -> CUresult {
    api(|| create(pctx, flags, dev))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxDestroy_v2(ctx: CUcontext) -> CUresult {
    api(|| {
        initialized()?;
        let at = ctx as usize;
        let mut list = created();
        let Some(i) = list.iter().position(|&c| c == at) else {
            return Err(Failure::new(
                CUDA_ERROR_INVALID_CONTEXT,
                format!("{ctx:p} is not a context made by cuCtxCreate"),
            ));
        };
        list.remove(i);
        STACK.with(|s| s.borrow_mut().retain(|&c| c != at));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPushCurrent_v2(ctx: CUcontext) -> CUresult {
    api(|| {
        initialized()?;
        context(ctx)?;
        STACK.with(|s| s.borrow_mut().push(ctx as usize));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxPopCurrent_v2(pctx: *mut CUcontext) -> CUresult {
    api(|| {
        initialized()?;
        let top = STACK
            .with(|s| s.borrow_mut().pop())
            .ok_or(CUDA_ERROR_INVALID_CONTEXT)?;
        if !pctx.is_null() {
            // SAFETY: non-null; CUDA's contract: a writable CUcontext.
            unsafe { out(pctx, top as CUcontext)? };
        }
        Ok(())
    })
}

/// Makes `ctx` current in place of the top of the stack (null unbinds it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxSetCurrent(ctx: CUcontext) -> CUresult {
    api(|| {
        initialized()?;
        if !ctx.is_null() {
            context(ctx)?;
        }
        STACK.with(|s| {
            let mut s = s.borrow_mut();
            s.pop();
            if !ctx.is_null() {
                s.push(ctx as usize);
            }
        });
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCurrent(pctx: *mut CUcontext) -> CUresult {
    api(|| {
        initialized()?;
        let c = current().map_or(std::ptr::null_mut(), |c| c as CUcontext);
        // SAFETY: CUDA's contract: a writable CUcontext.
        unsafe { out(pctx, c) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetDevice(dev: *mut CUdevice) -> CUresult {
    api(|| {
        ready()?;
        // SAFETY: CUDA's contract: a writable CUdevice.
        unsafe { out(dev, 0) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetFlags(flags: *mut u32) -> CUresult {
    api(|| {
        ready()?;
        let c = context(current().expect("ready() checks it") as CUcontext)?;
        // SAFETY: CUDA's contract: a writable unsigned int.
        unsafe { out(flags, c.flags.load(Ordering::Relaxed)) }
    })
}

/// Work is done when submitted: nothing to wait for.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSynchronize() -> CUresult {
    api(ready)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetApiVersion(ctx: CUcontext, version: *mut u32) -> CUresult {
    api(|| {
        initialized()?;
        if !ctx.is_null() {
            context(ctx)?;
        }
        // SAFETY: CUDA's contract: a writable unsigned int.
        unsafe { out(version, 3020) }
    })
}

/// Context limits (`CUlimit`), as set; kernels here have no such limits to obey.
static LIMITS: Mutex<[usize; 10]> = Mutex::new([1024, 1 << 20, 8 << 20, 2, 2048, 64, 0, 0, 0, 0]);

#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetLimit(limit: u32, value: usize) -> CUresult {
    api(|| {
        ready()?;
        let mut l = LIMITS.lock().unwrap_or_else(|e| e.into_inner());
        *l.get_mut(limit as usize).ok_or(CUDA_ERROR_INVALID_VALUE)? = value;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetLimit(value: *mut usize, limit: u32) -> CUresult {
    api(|| {
        ready()?;
        let l = LIMITS.lock().unwrap_or_else(|e| e.into_inner());
        let v = *l.get(limit as usize).ok_or(CUDA_ERROR_INVALID_VALUE)?;
        // SAFETY: CUDA's contract: a writable size_t.
        unsafe { out(value, v) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetCacheConfig(config: *mut u32) -> CUresult {
    api(|| {
        ready()?;
        // SAFETY: CUDA's contract: a writable CUfunc_cache.
        unsafe { out(config, 0) }
    })
}

/// Cache preferences mean nothing on a CPU; accepted.
#[unsafe(no_mangle)]
pub extern "C" fn cuCtxSetCacheConfig(_config: u32) -> CUresult {
    api(ready)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuCtxGetStreamPriorityRange(
    least: *mut i32,
    greatest: *mut i32,
) -> CUresult {
    api(|| {
        ready()?;
        // Null pointers are allowed here.
        // SAFETY: each is null or a writable int (CUDA's contract).
        unsafe {
            crate::ffi::put(least, 0);
            crate::ffi::put(greatest, 0);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxRetain(pctx: *mut CUcontext, dev: CUdevice) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: a writable CUcontext.
        unsafe { out(pctx, primary() as CUcontext)? };
        PRIMARY_REFS.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(dev: CUdevice) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        PRIMARY_REFS
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .map(|_| ())
            .map_err(|_| {
                Failure::new(
                    CUDA_ERROR_INVALID_CONTEXT,
                    "the primary context is not retained",
                )
            })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(dev: CUdevice, flags: u32) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        PRIMARY.flags.store(flags, Ordering::Relaxed);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuDevicePrimaryCtxGetState(
    dev: CUdevice,
    flags: *mut u32,
    active: *mut i32,
) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        // SAFETY: CUDA's contract: a writable unsigned int and int.
        unsafe {
            out(flags, PRIMARY.flags.load(Ordering::Relaxed))?;
            out(active, (PRIMARY_REFS.load(Ordering::Relaxed) > 0) as i32)
        }
    })
}

/// Resetting the primary context keeps the process's memory and modules (see the module
/// documentation); it clears the retain count and flags.
#[unsafe(no_mangle)]
pub extern "C" fn cuDevicePrimaryCtxReset_v2(dev: CUdevice) -> CUresult {
    api(|| {
        initialized()?;
        device(dev)?;
        PRIMARY_REFS.store(0, Ordering::Relaxed);
        PRIMARY.flags.store(0, Ordering::Relaxed);
        Ok(())
    })
}
