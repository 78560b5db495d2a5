//! The `ptxjit` Python package's native module, `ptxjit._native`: PTX modules on either
//! engine, kernels launched on NumPy arrays in place, `.func`s called one at a time or over
//! arrays, the differential runner, and the library's errors as Python exceptions.
//!
//! - [`module`]: `Module` (parsing, engine options, `functions()`, `emit()`, lookup).
//! - [`arguments`]: Python values to typed PTX scalars and back, arrays as buffers.
//! - [`launch`]: kernels, launch configurations, Ctrl-C between blocks.
//! - [`host_calls`]: `.func`s as Python callables and their vectorised form.
//! - [`errors`]: `PtxError`, `KernelFault` and the mapping of the library's errors.
//! - [`diff`]: `diff()`, both engines on the same inputs.

mod arguments;
mod diff;
mod errors;
mod host_calls;
mod launch;
mod module;

use pyo3::prelude::*;

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<errors::Error>())?;
    m.add("PtxError", py.get_type::<errors::PtxError>())?;
    m.add("KernelFault", py.get_type::<errors::KernelFault>())?;
    m.add_class::<module::Module>()?;
    m.add_class::<module::FunctionInfo>()?;
    m.add_class::<launch::Kernel>()?;
    m.add_class::<launch::Launcher>()?;
    m.add_class::<host_calls::Function>()?;
    m.add_class::<diff::Random>()?;
    m.add_class::<diff::DiffResult>()?;
    m.add_function(wrap_pyfunction!(diff::diff, m)?)?;
    m.add_function(wrap_pyfunction!(diff::random, m)?)?;
    Ok(())
}
