//! Streams and events. Work runs when it is submitted, so every stream is always idle and
//! synchronising waits for nothing; an event records the time its `cuEventRecord` ran, and
//! `cuEventElapsedTime` measures real time between two of them.

use super::*;
use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::{LazyLock, Mutex, RwLock};
use std::time::Instant;

pub type CUstream = *mut c_void;
pub type CUevent = *mut c_void;

/// A stream made by `cuStreamCreate`.
struct Stream {
    flags: u32,
    priority: i32,
    context: usize,
}

/// An event made by `cuEventCreate`.
struct Event {
    flags: u32,
    recorded: Mutex<Option<Instant>>,
}

/// `CU_EVENT_DISABLE_TIMING`.
const DISABLE_TIMING: u32 = 2;

static STREAMS: LazyLock<RwLock<HashSet<usize>>> = LazyLock::new(Default::default);
static EVENTS: LazyLock<RwLock<HashSet<usize>>> = LazyLock::new(Default::default);

/// The stream behind a handle: None for the default streams (null, `CU_STREAM_LEGACY`,
/// `CU_STREAM_PER_THREAD`).
fn stream(s: CUstream) -> Result<Option<&'static Stream>> {
    let at = s as usize;
    if at <= 2 {
        return Ok(None);
    }
    if STREAMS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&at)
    {
        // SAFETY: live streams are leaked boxes, freed only by cuStreamDestroy after removal.
        return Ok(Some(unsafe { &*(at as *const Stream) }));
    }
    Err(Failure::new(
        CUDA_ERROR_INVALID_HANDLE,
        format!("{s:p} is not a live stream"),
    ))
}

fn event(e: CUevent) -> Result<&'static Event> {
    if EVENTS
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&(e as usize))
    {
        // SAFETY: live events are leaked boxes, freed only by cuEventDestroy after removal.
        return Ok(unsafe { &*(e as *const Event) });
    }
    Err(Failure::new(
        CUDA_ERROR_INVALID_HANDLE,
        format!("{e:p} is not a live event"),
    ))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreateWithPriority(
    ps: *mut CUstream,
    flags: u32,
    priority: i32,
) -> CUresult {
    api(|| {
        ready()?;
        if ps.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        let s = Box::into_raw(Box::new(Stream {
            flags,
            priority,
            context: context::current().unwrap_or(0),
        }));
        STREAMS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(s as usize);
        // SAFETY: checked non-null; CUDA's contract: a writable CUstream.
        unsafe { out(ps, s as CUstream) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamCreate(ps: *mut CUstream, flags: u32) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuStreamCreateWithPriority(ps, flags, 0) }
}

#[unsafe(no_mangle)]
pub extern "C" fn cuStreamDestroy_v2(s: CUstream) -> CUresult {
    api(|| {
        initialized()?;
        if stream(s)?.is_none() {
            return Err(CUDA_ERROR_INVALID_HANDLE.into());
        }
        STREAMS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(s as usize));
        // SAFETY: it was live (checked) and is now removed, so this frees it once.
        drop(unsafe { Box::from_raw(s as *mut Stream) });
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuStreamSynchronize(s: CUstream) -> CUresult {
    api(|| {
        ready()?;
        stream(s).map(drop)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuStreamQuery(s: CUstream) -> CUresult {
    api(|| {
        ready()?;
        stream(s).map(drop)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuStreamWaitEvent(s: CUstream, e: CUevent, _flags: u32) -> CUresult {
    api(|| {
        ready()?;
        stream(s)?;
        event(e).map(drop)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetFlags(s: CUstream, flags: *mut u32) -> CUresult {
    api(|| {
        ready()?;
        let f = stream(s)?.map_or(0, |s| s.flags);
        // SAFETY: CUDA's contract: a writable unsigned int.
        unsafe { out(flags, f) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetPriority(s: CUstream, priority: *mut i32) -> CUresult {
    api(|| {
        ready()?;
        let p = stream(s)?.map_or(0, |s| s.priority);
        // SAFETY: CUDA's contract: a writable int.
        unsafe { out(priority, p) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuStreamGetCtx(s: CUstream, pctx: *mut context::CUcontext) -> CUresult {
    api(|| {
        ready()?;
        let c = stream(s)?.map_or_else(|| context::current().unwrap_or(0), |s| s.context);
        // SAFETY: CUDA's contract: a writable CUcontext.
        unsafe { out(pctx, c as context::CUcontext) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventCreate(pe: *mut CUevent, flags: u32) -> CUresult {
    api(|| {
        ready()?;
        if pe.is_null() {
            return Err(CUDA_ERROR_INVALID_VALUE.into());
        }
        let e = Box::into_raw(Box::new(Event {
            flags,
            recorded: Mutex::new(None),
        }));
        EVENTS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(e as usize);
        // SAFETY: checked non-null; CUDA's contract: a writable CUevent.
        unsafe { out(pe, e as CUevent) }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuEventRecord(e: CUevent, s: CUstream) -> CUresult {
    api(|| {
        ready()?;
        stream(s)?;
        let ev = event(e)?;
        *ev.recorded.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuEventRecordWithFlags(e: CUevent, s: CUstream, _flags: u32) -> CUresult {
    cuEventRecord(e, s)
}

#[unsafe(no_mangle)]
pub extern "C" fn cuEventQuery(e: CUevent) -> CUresult {
    api(|| {
        initialized()?;
        event(e).map(drop)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuEventSynchronize(e: CUevent) -> CUresult {
    api(|| {
        initialized()?;
        event(e).map(drop)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn cuEventDestroy_v2(e: CUevent) -> CUresult {
    api(|| {
        initialized()?;
        event(e)?;
        EVENTS
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(e as usize));
        // SAFETY: it was live (checked) and is now removed, so this frees it once.
        drop(unsafe { Box::from_raw(e as *mut Event) });
        Ok(())
    })
}

/// Milliseconds from `start`'s record to `end`'s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime(
    ms: *mut f32,
    start: CUevent,
    end: CUevent,
) -> CUresult {
    api(|| {
        initialized()?;
        let (a, b) = (event(start)?, event(end)?);
        if (a.flags | b.flags) & DISABLE_TIMING != 0 {
            return Err(Failure::new(
                CUDA_ERROR_INVALID_HANDLE,
                "an event was created without timing",
            ));
        }
        let time = |e: &Event| *e.recorded.lock().unwrap_or_else(|e| e.into_inner());
        let (Some(t0), Some(t1)) = (time(a), time(b)) else {
            return Err(Failure::new(
                CUDA_ERROR_INVALID_HANDLE,
                "an event has not been recorded",
            ));
        };
        let millis = if t1 >= t0 {
            (t1 - t0).as_secs_f64() * 1e3
        } else {
            -((t0 - t1).as_secs_f64() * 1e3)
        };
        // SAFETY: CUDA's contract: a writable float.
        unsafe { out(ms, millis as f32) }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuEventElapsedTime_v2(
    ms: *mut f32,
    start: CUevent,
    end: CUevent,
) -> CUresult {
    // SAFETY: the same contract.
    unsafe { cuEventElapsedTime(ms, start, end) }
}
