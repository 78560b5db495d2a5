//! `ptxjit.diff()`: a `.func` or kernel on the JIT and on the interpreter with the same
//! inputs, N times, every return value and buffer compared bit for bit (the library's
//! differential runner, `ptxjit::diff`, as `ptxjit diff` uses it).

use crate::arguments;
use crate::errors;
use crate::launch::dim3;
use crate::module::Module;
use ptxjit::ast::{FuncKind, Type, TypeKind};
use ptxjit::diff::{self as runner, Input, Outcome};
use ptxjit::generate::{Rng, edge_value};
use ptxjit::{Engine, LaunchConfig, RunError, Value};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A random argument for `diff`: made by `ptxjit.random()`.
#[pyclass(frozen, module = "ptxjit")]
#[derive(Clone)]
pub struct Random {
    /// Elements of a random buffer, or None for a scalar.
    n: Option<usize>,
    /// The buffer's element type.
    ty: Option<Type>,
}

#[pymethods]
impl Random {
    fn __repr__(&self) -> String {
        match (self.n, self.ty) {
            (Some(n), Some(t)) => format!("ptxjit.random({n}, \"{}\")", t.ptx()),
            _ => "ptxjit.random()".into(),
        }
    }
}

/// `random()`: a random scalar of the parameter's type, new each run; `random(n, "f32")`: a
/// buffer of `n` random elements of that PTX type. Values are biased to edges: 0, ±1,
/// min/max, all ones, sign bits, subnormals, infinities, NaNs, and uniform bits.
#[pyfunction]
#[pyo3(signature = (n = None, r#type = None))]
pub fn random(n: Option<usize>, r#type: Option<&str>) -> PyResult<Random> {
    let ty = r#type
        .map(|t| {
            Type::from_ptx(t.trim_start_matches('.'))
                .filter(|t| t.kind() != TypeKind::Pred)
                .ok_or_else(|| PyValueError::new_err(format!("{t:?} is not a PTX type")))
        })
        .transpose()?;
    if n.is_some() != ty.is_some() {
        return Err(PyTypeError::new_err(
            "random() is a random scalar; random(n, type) a random buffer of n elements",
        ));
    }
    Ok(Random { n, ty })
}

/// What `diff` found: true when the engines agreed on every run.
#[pyclass(frozen, module = "ptxjit", get_all)]
pub struct DiffResult {
    /// Runs compared (up to and including the first mismatch).
    runs: u64,
    /// Whether the engines agreed on every run.
    ok: bool,
    /// Where the first mismatch lies, in words (None when they agree).
    difference: Option<String>,
    /// The inputs of the mismatching run (None when they agree).
    inputs: Option<String>,
    /// Each engine's outcome on the mismatching run (None when they agree).
    jit: Option<String>,
    interp: Option<String>,
}

#[pymethods]
impl DiffResult {
    fn __bool__(&self) -> bool {
        self.ok
    }

    fn __str__(&self) -> String {
        match &self.difference {
            None => format!("{} runs, 0 mismatches", self.runs),
            Some(d) => format!(
                "mismatch on run {}\n  inputs: {}\n  jit:    {}\n  interp: {}\n  first difference: {d}",
                self.runs,
                self.inputs.as_deref().unwrap_or(""),
                self.jit.as_deref().unwrap_or(""),
                self.interp.as_deref().unwrap_or("")
            ),
        }
    }

    fn __repr__(&self) -> String {
        format!("<ptxjit.DiffResult ok={} runs={}>", self.ok, self.runs)
    }
}

/// An argument for each run: given, or drawn anew.
enum Spec {
    Given(Input),
    Scalar(Type),
    Buffer(Type, usize),
}

fn materialize(s: &Spec, rng: &mut Rng) -> Input {
    match s {
        Spec::Given(i) => i.clone(),
        Spec::Scalar(ty) => Input::Scalar(Value::new(*ty, edge_value(rng, *ty))),
        Spec::Buffer(ty, n) => Input::Buffer {
            ty: *ty,
            bytes: (0..*n)
                .flat_map(|_| edge_value(rng, *ty).to_le_bytes()[..ty.bytes()].to_vec())
                .collect(),
        },
    }
}

/// An array's element type as a PTX type.
fn array_type(elem: arguments::Elem) -> Type {
    use arguments::Elem::*;
    match elem {
        Unsigned(1) | Bool => Type::U8,
        Unsigned(2) => Type::U16,
        Unsigned(4) => Type::U32,
        Unsigned(8) => Type::U64,
        Signed(1) => Type::S8,
        Signed(2) => Type::S16,
        Signed(4) => Type::S32,
        Signed(8) => Type::S64,
        Float(2) => Type::F16,
        Float(4) => Type::F32,
        Float(8) => Type::F64,
        _ => Type::B8,
    }
}

/// `diff(module, name, args=None, *, grid=None, block=None, shared_bytes=0, iterations=100,
/// seed=1, egraph=False)`: runs the `.func` or kernel `name` of `module` (a `Module` or PTX
/// text) on both engines `iterations` times and compares the results bit for bit. `args`
/// has one entry per parameter: a value, an array (copied for each run), `random()` or
/// `random(n, type)`; a `.func` without `args` gets random values for every parameter.
/// Kernels need `grid` and `block`. Returns a `DiffResult` (true when they agree).
#[pyfunction]
#[pyo3(signature = (module, name, args = None, *, grid = None, block = None, shared_bytes = 0, iterations = 100, seed = 1, egraph = false))]
#[allow(clippy::too_many_arguments)]
pub fn diff(
    py: Python<'_>,
    module: &Bound<'_, PyAny>,
    name: &str,
    args: Option<&Bound<'_, PyAny>>,
    grid: Option<&Bound<'_, PyAny>>,
    block: Option<&Bound<'_, PyAny>>,
    shared_bytes: u32,
    iterations: u64,
    seed: u64,
    egraph: bool,
) -> PyResult<DiffResult> {
    let ptx = if let Ok(m) = module.cast::<Module>() {
        m.get().ptx.clone()
    } else if let Ok(text) = module.extract::<String>() {
        ptxjit::Module::parse(&text).map_err(|e| errors::ptx_error(py, &e))?
    } else {
        return Err(PyTypeError::new_err(
            "diff takes a ptxjit.Module or PTX text",
        ));
    };
    let Some(info) = ptx.signature(name) else {
        return Err(PyValueError::new_err(format!(
            "no function or kernel named `{name}`"
        )));
    };
    let kernel = info.kind == FuncKind::Entry;
    let config = if kernel {
        let need = |d: Option<&Bound<'_, PyAny>>, what: &str| {
            d.map(|d| dim3(d, what)).unwrap_or_else(|| {
                Err(PyTypeError::new_err(format!(
                    "diff of a kernel needs {what}="
                )))
            })
        };
        Some(LaunchConfig {
            grid: need(grid, "grid")?,
            block: need(block, "block")?,
            shared_bytes,
        })
    } else {
        if grid.is_some() || block.is_some() || shared_bytes > 0 {
            return Err(PyTypeError::new_err(
                "grid, block and shared_bytes are for kernels",
            ));
        }
        None
    };
    let items: Vec<Bound<'_, PyAny>> = match args {
        Some(a) => a.try_iter()?.collect::<PyResult<_>>()?,
        None if !kernel => info
            .params
            .iter()
            .map(|_| {
                Ok(Py::new(py, Random { n: None, ty: None })?
                    .into_bound(py)
                    .into_any())
            })
            .collect::<PyResult<_>>()?,
        None => return Err(PyTypeError::new_err("diff of a kernel needs args")),
    };
    if items.len() != info.params.len() {
        return Err(PyTypeError::new_err(format!(
            "`{name}` takes {} arguments, got {}",
            info.params.len(),
            items.len()
        )));
    }
    let mut specs = Vec::new();
    for (i, (p, a)) in info.params.iter().zip(&items).enumerate() {
        let what = arguments::describe(i, &p.name, p.ty);
        let spec = if let Ok(r) = a.cast::<Random>() {
            match (r.get().n, r.get().ty) {
                (Some(n), Some(ty)) => Spec::Buffer(ty, n),
                _ => Spec::Scalar(p.ty),
            }
        } else if arguments::is_array(a) {
            let arr = arguments::array(a, &what, false)?;
            // SAFETY: the export held in `arr` keeps the memory alive for the copy.
            let bytes = unsafe { std::slice::from_raw_parts(arr.ptr, arr.len) }.to_vec();
            Spec::Given(Input::Buffer {
                ty: array_type(arr.elem),
                bytes,
            })
        } else {
            Spec::Given(Input::Scalar(arguments::to_value(a, p.ty, &what)?))
        };
        if !kernel && matches!(spec, Spec::Buffer(..) | Spec::Given(Input::Buffer { .. })) {
            return Err(PyTypeError::new_err(format!(
                "{what}: a .func takes scalar arguments only"
            )));
        }
        specs.push(spec);
    }
    let result = py.detach(|| -> Result<DiffResult, RunError> {
        let (jit, interp) = runner::engines(ptx, egraph)?;
        let mut rng = Rng::new(seed);
        let types: Vec<Type> = specs
            .iter()
            .filter_map(|s| match s {
                Spec::Buffer(ty, _) | Spec::Given(Input::Buffer { ty, .. }) => Some(*ty),
                _ => None,
            })
            .collect();
        for run in 0..iterations {
            let inputs: Vec<Input> = specs.iter().map(|s| materialize(s, &mut rng)).collect();
            let (ours, theirs, types) = match config {
                None => {
                    let values: Vec<Value> = inputs
                        .iter()
                        .filter_map(|i| match i {
                            Input::Scalar(v) => Some(*v),
                            Input::Buffer { .. } => None,
                        })
                        .collect();
                    (
                        runner::call(&jit, name, &values)?,
                        runner::call(&interp, name, &values)?,
                        &[][..],
                    )
                }
                Some(config) => {
                    let run = |e: &dyn Engine| runner::launch(e, name, config, &inputs);
                    (run(&jit)?, run(&interp)?, &types[..])
                }
            };
            if let Some(d) = runner::first_difference(&ours, &theirs, types) {
                return Ok(DiffResult {
                    runs: run + 1,
                    ok: false,
                    difference: Some(d),
                    inputs: Some(runner::describe_inputs(&inputs)),
                    jit: Some(show(&ours)),
                    interp: Some(show(&theirs)),
                });
            }
        }
        Ok(DiffResult {
            runs: iterations,
            ok: true,
            difference: None,
            inputs: None,
            jit: None,
            interp: None,
        })
    });
    result.map_err(|e| errors::run_error(py, e, None))
}

fn show(o: &Outcome) -> String {
    match o {
        Outcome::Returned(v) => v
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        Outcome::Buffers(b) => format!("completed ({} buffers)", b.len()),
        Outcome::Fault(f) => format!("faulted: {f}"),
    }
}
