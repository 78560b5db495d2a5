//! The logs a caller asks for through `CUjit_option`s (`cuModuleLoadDataEx`,
//! `cuLibraryLoadData`, `cuLinkCreate`): each a buffer option and a size option. What is
//! written goes into the buffer, NUL-terminated and cut to its size, and the bytes written
//! (the NUL too) back into the size option's value. Other options are not read here.

use super::device;
use std::ffi::{c_char, c_void};

/// `CUjit_option`s of the logs.
const INFO_LOG_BUFFER: u32 = 3;
const INFO_LOG_BUFFER_SIZE_BYTES: u32 = 4;
const ERROR_LOG_BUFFER: u32 = 5;
const ERROR_LOG_BUFFER_SIZE_BYTES: u32 = 6;

/// One log: its buffer, and the option value its size is written back into.
pub struct JitLog {
    buffer: *mut c_char,
    capacity: usize,
    size_slot: *mut *mut c_void,
    text: String,
}

/// The info and error logs of a set of options, where the caller asked for them.
pub struct JitLogs {
    pub info: Option<JitLog>,
    pub error: Option<JitLog>,
}

impl JitLogs {
    /// The logs `count` options and values ask for.
    ///
    /// # Safety
    ///
    /// CUDA's contract: `count` options and values (or either null), the buffers holding the
    /// bytes their size options say, all valid as long as the logs are written.
    pub unsafe fn of(count: u32, options: *const u32, values: *mut *mut c_void) -> JitLogs {
        // SAFETY: the caller's promise.
        let options = unsafe {
            if count == 0 || options.is_null() || values.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(options, count as usize)
            }
        };
        let slot = |o: u32| {
            options.iter().position(|&x| x == o).map(|i| {
                // SAFETY: `i` < `count`, within the values (the caller's promise).
                unsafe { values.add(i) }
            })
        };
        let log = |buf: u32, size: u32| {
            let (b, s) = (slot(buf)?, slot(size)?);
            // SAFETY: both are slots of the values array (above).
            let (buffer, capacity) = unsafe { (*b as *mut c_char, *s as usize) };
            (!buffer.is_null() && capacity > 0).then(|| JitLog {
                buffer,
                capacity,
                size_slot: s,
                text: String::new(),
            })
        };
        JitLogs {
            info: log(INFO_LOG_BUFFER, INFO_LOG_BUFFER_SIZE_BYTES),
            error: log(ERROR_LOG_BUFFER, ERROR_LOG_BUFFER_SIZE_BYTES),
        }
    }
}

impl JitLog {
    /// Adds a line to the log (after a newline, if it holds some) and writes it all out.
    pub fn add(&mut self, line: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(line);
        let n = self.text.len().min(self.capacity - 1) + 1;
        // SAFETY: `JitLogs::of`'s promise: the buffer holds `capacity` bytes, and it and the
        // size slot are valid while the log is written.
        unsafe {
            device::write_text(
                self.buffer,
                self.capacity.min(i32::MAX as usize) as i32,
                &self.text,
            )
            .ok();
            *self.size_slot = n as *mut c_void;
        }
    }
}

/// Writes `line` into `log` if the caller asked for it.
pub fn add(log: &mut Option<JitLog>, line: &str) {
    if let Some(l) = log {
        l.add(line);
    }
}
