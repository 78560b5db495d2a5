//! The library's errors as Python exceptions: `PtxError` for PTX that does not parse or
//! validate, `KernelFault` for a fault inside running PTX (both with their location as
//! attributes), `ValueError` for requests the engine refuses, `KeyboardInterrupt` for a
//! launch stopped by Ctrl-C.

use ptxjit::{ParseError, RunError};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyList;

create_exception!(
    ptxjit,
    Error,
    PyException,
    "Base class of the errors ptxjit raises itself."
);
create_exception!(
    ptxjit,
    PtxError,
    Error,
    "PTX that does not parse or validate: `file`, `line`, `column` and `message` locate the \
     first problem, `diagnostics` lists every one as (line, column, message); str() is the \
     located text of all of them."
);
create_exception!(
    ptxjit,
    KernelFault,
    Error,
    "A fault inside running PTX (an out-of-bounds access, a block stuck at a barrier, ...): \
     `kernel` (the function that was running), `block` and `thread` (index tuples), `file`, \
     `line`, `column`, `address` (or None) and `message`; `index` is the element of a \
     vectorised call that faulted (else None). str() is the located text."
);

/// A `PtxError` for a module that does not parse or validate.
pub fn ptx_error(py: Python<'_>, e: &ParseError) -> PyErr {
    let err = PtxError::new_err(e.to_string());
    let set = || -> PyResult<()> {
        let v = err.value(py);
        let (line, column) = e.first_location().unwrap_or((0, 0));
        v.setattr("file", &e.source.path)?;
        v.setattr("line", line)?;
        v.setattr("column", column)?;
        let message = e.diagnostics.first().map_or("", |d| d.message.as_str());
        v.setattr("message", message)?;
        let all = PyList::empty(py);
        for d in &e.diagnostics {
            let (line, column) = e.source.line_col(d.span.start);
            all.append((line, column, d.message.as_str()))?;
        }
        v.setattr("diagnostics", all)?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(e) => e,
    }
}

/// The Python exception for an engine error; `index` is the element of a vectorised call.
pub fn run_error(py: Python<'_>, e: RunError, index: Option<usize>) -> PyErr {
    match e {
        RunError::Usage(m) => PyValueError::new_err(m),
        RunError::Interrupted => PyKeyboardInterrupt::new_err("the launch was interrupted"),
        RunError::Fault(ref fault, ref source) => {
            let err = KernelFault::new_err(e.to_string());
            let set = || -> PyResult<()> {
                let v = err.value(py);
                let (_, column) = source.line_col(fault.span.start);
                let line = fault.line;
                v.setattr("kernel", &fault.function)?;
                v.setattr("block", (fault.ctaid[0], fault.ctaid[1], fault.ctaid[2]))?;
                v.setattr("thread", (fault.tid[0], fault.tid[1], fault.tid[2]))?;
                v.setattr("file", &source.path)?;
                v.setattr("line", line)?;
                v.setattr("column", column)?;
                v.setattr("address", fault.address)?;
                v.setattr("message", &fault.message)?;
                v.setattr("index", index)?;
                Ok(())
            };
            match set() {
                Ok(()) => err,
                Err(e) => e,
            }
        }
    }
}
