//! `ptxjit.Module`: a parsed PTX module on one engine (the JIT, or the reference
//! interpreter), its functions' signatures, the compiled code's listing, and lookup of its
//! kernels and `.func`s by attribute or by key.

use crate::errors;
use crate::host_calls::Function;
use crate::launch::{self, Kernel};
use ptxjit::ast::FuncKind;
use ptxjit::jit::Emit;
use ptxjit::{Engine, Interpreter, Jit, JitOptions, LaunchConfig, RunError};
use pyo3::exceptions::{PyAttributeError, PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::path::PathBuf;

/// The engine a module runs on.
pub enum Engines {
    Jit(Box<Jit>),
    Interp(Box<Interpreter>),
}

impl Engines {
    pub fn engine(&self) -> &(dyn Engine + Sync) {
        match self {
            Engines::Jit(j) => &**j,
            Engines::Interp(i) => &**i,
        }
    }
}

/// A PTX module, parsed, validated and compiled (with `engine="jit"`, the default) or ready
/// for the reference interpreter (`engine="interp"`).
///
/// `Module(ptx, name=None, *, engine="jit", checked=True, lanes=True, egraph=False)`: `name`
/// names the text in errors (default `<input>`); `checked=False` drops the JIT's memory
/// checks (faster; a bad access may crash the process); `lanes=False` runs every kernel one
/// thread at a time; `egraph=True` runs Cranelift's e-graph optimizer.
///
/// Kernels and functions are attributes (`m.saxpy`) or keys (`m["saxpy"]`, for names that
/// clash with a method): a kernel launches as `m.saxpy[grid, block](args...)` or
/// `m.saxpy[grid, block, shared_bytes](args...)`, a `.func` is called as `m.add(1, 2)` and
/// over arrays as `m.add.map(xs, ys)`.
#[pyclass(frozen, module = "ptxjit")]
pub struct Module {
    pub(crate) name: String,
    pub(crate) ptx: ptxjit::Module,
    pub(crate) engines: Engines,
    options: JitOptions,
    engine_name: &'static str,
    pub(crate) signatures: Vec<ptxjit::FunctionInfo>,
}

/// One function of a module, as `Module.functions()` lists it.
#[pyclass(frozen, module = "ptxjit", get_all)]
pub struct FunctionInfo {
    /// The function's name.
    name: String,
    /// `"entry"` for a kernel, `"func"` for a device function.
    kind: &'static str,
    /// `(name, type)` of each parameter, the type as PTX spells it without the dot (`"u32"`,
    /// or `"b8[16]"` for a byte array).
    params: Vec<(String, String)>,
    /// `(name, type)` of each return value (`.func` only).
    returns: Vec<(String, String)>,
    /// False for a prototype, which can be neither called nor launched.
    has_body: bool,
}

#[pymethods]
impl FunctionInfo {
    fn __repr__(&self) -> String {
        let list = |v: &[(String, String)]| {
            v.iter()
                .map(|(n, t)| format!("{n}: {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let rets = if self.returns.is_empty() {
            String::new()
        } else {
            format!(" -> ({})", list(&self.returns))
        };
        format!(
            "<{} {}({}){rets}>",
            self.kind,
            self.name,
            list(&self.params)
        )
    }
}

fn type_text(p: &ptxjit::ParamInfo) -> String {
    if p.is_array() {
        format!("{}[{}]", p.ty.ptx(), p.size / p.ty.bytes())
    } else {
        p.ty.ptx().to_string()
    }
}

impl Module {
    fn build(
        py: Python<'_>,
        text: &str,
        name: &str,
        engine: &str,
        options: JitOptions,
    ) -> PyResult<Module> {
        let engine_name = match engine {
            "jit" => "jit",
            "interp" => "interp",
            other => {
                return Err(PyValueError::new_err(format!(
                    "engine must be \"jit\" or \"interp\", not {other:?}"
                )));
            }
        };
        let ptx = py
            .detach(|| ptxjit::Module::parse_named(text, name))
            .map_err(|e| errors::ptx_error(py, &e))?;
        let engines = py
            .detach(|| -> Result<Engines, RunError> {
                Ok(match engine_name {
                    "jit" => Engines::Jit(Box::new(Jit::with_options(ptx.clone(), options)?)),
                    _ => Engines::Interp(Box::new(Interpreter::new(ptx.clone()))),
                })
            })
            .map_err(|e| compile_error(py, e))?;
        Ok(Module {
            name: name.to_string(),
            signatures: ptx.signatures(),
            ptx,
            engines,
            options,
            engine_name,
        })
    }

    /// The signature of the function `name`.
    pub fn signature(&self, name: &str) -> Option<&ptxjit::FunctionInfo> {
        self.signatures.iter().find(|f| f.name == name)
    }

    /// The JIT, when the module runs on it.
    pub fn jit(&self) -> Option<&Jit> {
        match &self.engines {
            Engines::Jit(j) => Some(j),
            Engines::Interp(_) => None,
        }
    }

    /// A kernel or function object for `name`, or None.
    fn lookup(slf: &Bound<'_, Self>, name: &str) -> PyResult<Option<Py<PyAny>>> {
        let py = slf.py();
        let Some(info) = slf.get().signature(name) else {
            return Ok(None);
        };
        let module = slf.clone().unbind();
        Ok(Some(match info.kind {
            FuncKind::Entry => Py::new(py, Kernel::new(module, info.clone()))?.into_any(),
            FuncKind::Func => Py::new(py, Function::new(module, info.clone()))?.into_any(),
        }))
    }
}

/// A compile failure: the JIT refusing a module that parsed is a `ptxjit.Error`.
fn compile_error(py: Python<'_>, e: RunError) -> PyErr {
    match e {
        RunError::Usage(m) => errors::Error::new_err(m),
        other => errors::run_error(py, other, None),
    }
}

#[pymethods]
impl Module {
    #[new]
    #[pyo3(signature = (ptx, name = None, *, engine = "jit", checked = true, lanes = true, egraph = false))]
    fn new(
        py: Python<'_>,
        ptx: &str,
        name: Option<&str>,
        engine: &str,
        checked: bool,
        lanes: bool,
        egraph: bool,
    ) -> PyResult<Module> {
        let options = JitOptions {
            checked,
            lanes,
            egraph,
            ..JitOptions::default()
        };
        Module::build(py, ptx, name.unwrap_or("<input>"), engine, options)
    }

    /// `Module.from_file(path, *, engine="jit", checked=True, lanes=True, egraph=False)`:
    /// the module in a PTX file, named by its path in errors.
    #[staticmethod]
    #[pyo3(signature = (path, *, engine = "jit", checked = true, lanes = true, egraph = false))]
    fn from_file(
        py: Python<'_>,
        path: PathBuf,
        engine: &str,
        checked: bool,
        lanes: bool,
        egraph: bool,
    ) -> PyResult<Module> {
        let text = std::fs::read_to_string(&path)?;
        let options = JitOptions {
            checked,
            lanes,
            egraph,
            ..JitOptions::default()
        };
        Module::build(py, &text, &path.to_string_lossy(), engine, options)
    }

    /// The name the module's errors give its text.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// `"jit"` or `"interp"`.
    #[getter]
    fn engine(&self) -> &str {
        self.engine_name
    }

    /// Every function of the module in source order: name, kind, parameter and return types.
    fn functions(&self) -> Vec<FunctionInfo> {
        let pair = |p: &ptxjit::ParamInfo| (p.name.clone(), type_text(p));
        self.signatures
            .iter()
            .map(|f| FunctionInfo {
                name: f.name.clone(),
                kind: match f.kind {
                    FuncKind::Entry => "entry",
                    FuncKind::Func => "func",
                },
                params: f.params.iter().map(pair).collect(),
                returns: f.returns.iter().map(pair).collect(),
                has_body: f.has_body,
            })
            .collect()
    }

    /// The compiled code as text: `"clif"` (Cranelift IR) or `"asm"` (x86-64), of every
    /// function and host wrapper, each under a `;; name` line. Compiles the module again with
    /// this module's options (also for a module on the interpreter).
    fn emit(&self, py: Python<'_>, kind: &str) -> PyResult<String> {
        let emit = match kind {
            "clif" => Emit::Clif,
            "asm" => Emit::Asm,
            other => {
                return Err(PyValueError::new_err(format!(
                    "emit takes \"clif\" or \"asm\", not {other:?}"
                )));
            }
        };
        let options = JitOptions {
            emit,
            ..self.options
        };
        let jit = py
            .detach(|| Jit::with_options(self.ptx.clone(), options))
            .map_err(|e| compile_error(py, e))?;
        Ok(jit
            .listing
            .iter()
            .map(|(name, text)| format!(";; {name}\n{text}\n"))
            .collect())
    }

    /// `m.launch(kernel, grid, block, args=(), shared_bytes=0)`: launches a kernel. `grid` and
    /// `block` are ints or tuples of up to three; array arguments are written in place.
    #[pyo3(signature = (kernel, grid, block, args = None, shared_bytes = 0))]
    fn launch(
        slf: &Bound<'_, Self>,
        kernel: &str,
        grid: &Bound<'_, PyAny>,
        block: &Bound<'_, PyAny>,
        args: Option<&Bound<'_, PyTuple>>,
        shared_bytes: u32,
    ) -> PyResult<()> {
        let py = slf.py();
        let config = LaunchConfig {
            grid: launch::dim3(grid, "grid")?,
            block: launch::dim3(block, "block")?,
            shared_bytes,
        };
        let empty = PyTuple::empty(py);
        launch::launch(py, slf.get(), kernel, config, args.unwrap_or(&empty))
    }

    /// `m.call(func, *args)`: calls a `.func`, as `m[func](*args)`.
    #[pyo3(signature = (func, *args))]
    fn call(slf: &Bound<'_, Self>, func: &str, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        crate::host_calls::call(slf.py(), slf.get(), func, args)
    }

    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Py<PyAny>> {
        Module::lookup(slf, name)?.ok_or_else(|| {
            PyAttributeError::new_err(format!(
                "module `{}` has no kernel or function named `{name}`",
                slf.get().name
            ))
        })
    }

    fn __getitem__(slf: &Bound<'_, Self>, name: &str) -> PyResult<Py<PyAny>> {
        Module::lookup(slf, name)?.ok_or_else(|| {
            PyKeyError::new_err(format!(
                "module `{}` has no kernel or function named `{name}`",
                slf.get().name
            ))
        })
    }

    fn __contains__(&self, name: &str) -> bool {
        self.signature(name).is_some()
    }

    fn __dir__(slf: &Bound<'_, Self>) -> PyResult<Vec<String>> {
        let mut names: Vec<String> = slf
            .get_type()
            .dir()?
            .iter()
            .filter_map(|n| n.extract::<String>().ok())
            .collect();
        names.extend(slf.get().signatures.iter().map(|f| f.name.clone()));
        Ok(names)
    }

    fn __repr__(&self) -> String {
        format!(
            "<ptxjit.Module {:?} on {}, {} functions>",
            self.name,
            self.engine_name,
            self.signatures.len()
        )
    }
}
