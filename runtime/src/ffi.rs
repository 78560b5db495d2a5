//! What every exported function shares: catching panics at the boundary, the calling
//! thread's last error (message, located diagnostics, fault), and reading C arguments.

use ptxjit::{Fault, Location, ParseError, RunError};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `body`, turning a panic into `panicked` (and a last error saying so): the only way
/// exported functions run their code.
pub fn guard<T>(panicked: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(v) => v,
        Err(e) => {
            let what = e
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| e.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(LastError::message(format!("internal error: {what}")));
            panicked
        }
    }
}

/// One located message: a parse diagnostic or a fault's place.
#[derive(Clone, Debug)]
pub struct Located {
    pub path: CString,
    pub line: u32,
    pub column: u32,
    pub message: CString,
}

/// The last error of a call on this thread, kept until the next failing call.
#[derive(Clone, Debug, Default)]
pub struct LastError {
    /// The rendered text (rustc-style for located errors).
    pub text: CString,
    pub diagnostics: Vec<Located>,
    pub fault: Option<Box<FaultRecord>>,
}

/// A fault with its text as C strings.
#[derive(Clone, Debug)]
pub struct FaultRecord {
    pub fault: Fault,
    pub at: Located,
    pub function: CString,
}

/// A C string from Rust text (an interior NUL becomes a space).
pub fn c_string(s: &str) -> CString {
    CString::new(s.replace('\0', " ")).expect("no NUL left")
}

fn located(at: Location, message: &str) -> Located {
    Located {
        path: c_string(&at.path),
        line: at.line as u32,
        column: at.column as u32,
        message: c_string(message),
    }
}

impl LastError {
    pub fn message(text: impl AsRef<str>) -> LastError {
        LastError {
            text: c_string(text.as_ref()),
            ..LastError::default()
        }
    }
    pub fn parse(e: &ParseError) -> LastError {
        LastError {
            text: c_string(&e.to_string()),
            diagnostics: e
                .located()
                .into_iter()
                .map(|(at, m)| located(at, m))
                .collect(),
            fault: None,
        }
    }
    pub fn run(e: &RunError) -> LastError {
        let mut last = LastError::message(e.to_string());
        if let (Some(f), Some(at)) = (e.fault(), e.location()) {
            let at = located(at, &f.message);
            last.diagnostics.push(at.clone());
            last.fault = Some(Box::new(FaultRecord {
                fault: f.clone(),
                at,
                function: c_string(&f.function),
            }));
        }
        last
    }
}

thread_local! {
    static LAST: RefCell<LastError> = RefCell::new(LastError::default());
}

pub fn set_last_error(e: LastError) {
    LAST.with(|l| *l.borrow_mut() = e);
}

/// Reads the calling thread's last error.
pub fn with_last_error<R>(f: impl FnOnce(&LastError) -> R) -> R {
    LAST.with(|l| f(&l.borrow()))
}

/// A pointer into the calling thread's last error text, valid until its next failing call.
pub fn last_error_text() -> *const c_char {
    LAST.with(|l| l.borrow().text.as_ptr())
}

/// The UTF-8 text of a NUL-terminated C string, or None for a null pointer or invalid UTF-8.
///
/// # Safety
///
/// `p` is null or points to a NUL-terminated string that lives for `'a`.
pub unsafe fn text<'a>(p: *const c_char) -> Option<&'a str> {
    if p.is_null() {
        return None;
    }
    // SAFETY: non-null, and the caller promises a NUL-terminated string living for 'a.
    unsafe { CStr::from_ptr(p) }.to_str().ok()
}

/// Writes `v` through an out-pointer; false for a null pointer.
///
/// # Safety
///
/// `p` is null or valid for writing a `T` (alignment included).
pub unsafe fn put<T>(p: *mut T, v: T) -> bool {
    if p.is_null() {
        return false;
    }
    // SAFETY: non-null, and the caller promises it is valid for a write of T.
    unsafe { p.write(v) };
    true
}
