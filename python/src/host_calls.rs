//! `.func`s from Python: one call with Python values (`m.add(1, 2)`), and the vectorised
//! form (`m.add.map(xs, ys)`), one call per element of NumPy arrays in a Rust loop with the
//! GIL released. On the JIT the loop calls the function's slot wrapper
//! (`Jit::slot_func`: one C signature for every function, arguments and results in 8-byte
//! slots), as a Rust host would call its typed wrapper; on the interpreter, or for a
//! signature without a slot wrapper, it goes through `Engine::call`.

use crate::arguments::{self, Array, Elem};
use crate::errors;
use crate::module::Module;
use ptxjit::ast::{FuncKind, Type};
use ptxjit::jit::host::take_fault;
use ptxjit::{Engine, FunctionInfo, Jit, RunError, Value};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn func_info<'m>(module: &'m Module, name: &str) -> PyResult<&'m FunctionInfo> {
    let info = module.signature(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "module `{}` has no function named `{name}`",
            module.name
        ))
    })?;
    if info.kind != FuncKind::Func {
        return Err(PyTypeError::new_err(format!(
            "`{name}` is a kernel: launch it (m.{name}[grid, block](...))"
        )));
    }
    if let Some(p) = info
        .params
        .iter()
        .chain(&info.returns)
        .find(|p| p.is_array())
    {
        return Err(PyTypeError::new_err(format!(
            "`{name}` has the {}-byte array parameter `{}`, which cannot be passed from Python",
            p.size, p.name
        )));
    }
    Ok(info)
}

fn check_arity(info: &FunctionInfo, n: usize) -> PyResult<()> {
    if n == info.params.len() {
        return Ok(());
    }
    let params: Vec<String> = info
        .params
        .iter()
        .map(|p| format!("{}: .{}", p.name, p.ty.ptx()))
        .collect();
    Err(PyTypeError::new_err(format!(
        "`{}` takes {} arguments ({}), got {n}",
        info.name,
        info.params.len(),
        params.join(", ")
    )))
}

/// Return values as Python gives them back: None, one value, or a tuple.
fn returned(py: Python<'_>, values: &[Value]) -> PyResult<Py<PyAny>> {
    match values {
        [] => Ok(py.None()),
        [v] => arguments::to_python(py, *v),
        vs => {
            let items: Vec<Py<PyAny>> = vs
                .iter()
                .map(|v| arguments::to_python(py, *v))
                .collect::<PyResult<_>>()?;
            Ok(PyTuple::new(py, items)?.into_any().unbind())
        }
    }
}

/// Calls the `.func` `name` with Python arguments.
pub fn call(
    py: Python<'_>,
    module: &Module,
    name: &str,
    args: &Bound<'_, PyTuple>,
) -> PyResult<Py<PyAny>> {
    let info = func_info(module, name)?;
    check_arity(info, args.len())?;
    let values: Vec<Value> = info
        .params
        .iter()
        .zip(args.iter())
        .enumerate()
        .map(|(i, (p, a))| arguments::to_value(&a, p.ty, &arguments::describe(i, &p.name, p.ty)))
        .collect::<PyResult<_>>()?;
    let engine = module.engines.engine();
    let rets = match slot_func(module, name) {
        // The slot wrapper, as the vectorised form: `Engine::call` sets up a fresh thread
        // context per call, which costs microseconds.
        Some((jit, f)) => {
            let args: Vec<u64> = values.iter().map(|v| v.bits).collect();
            let mut slots = vec![0u64; info.returns.len()];
            py.detach(|| {
                take_fault(jit);
                // SAFETY: `f` is the slot wrapper of this function of `jit`, which outlives
                // the call; `args` has a slot per parameter and `slots` one per return.
                unsafe { f(args.as_ptr(), slots.as_mut_ptr()) };
                match take_fault(jit) {
                    Some(e) => Err(e),
                    None => Ok(info
                        .returns
                        .iter()
                        .zip(&slots)
                        .map(|(r, bits)| Value::new(r.ty, *bits))
                        .collect::<Vec<_>>()),
                }
            })
        }
        None => py.detach(|| engine.call(name, &values)),
    }
    .map_err(|e| errors::run_error(py, e, None))?;
    returned(py, &rets)
}

/// The JIT and the slot wrapper of `name`, when the module runs on the JIT and the function
/// has one.
fn slot_func<'m>(module: &'m Module, name: &str) -> Option<(&'m Jit, SlotFn)> {
    module.jit().and_then(|j| {
        j.slot_func(name).map(|p| {
            // SAFETY: a slot wrapper's C type is `SlotFn` (ptxjit::jit::host).
            (j, unsafe { std::mem::transmute::<*const u8, SlotFn>(p) })
        })
    })
}

/// One argument of a vectorised call: an array's elements, or a scalar for every element.
struct Column {
    ptr: *const u8,
    /// Bytes from one element to the next (0 for a scalar).
    stride: usize,
    size: usize,
}

impl Column {
    /// Element `i`, zero-extended.
    ///
    /// # Safety
    /// `i` must be below the column's element count (any `i` for a scalar).
    #[inline(always)]
    unsafe fn get(&self, i: usize) -> u64 {
        // SAFETY: the caller's bound; the element lies inside the array (or is the scalar),
        // read unaligned as buffers need not be aligned.
        unsafe {
            let p = self.ptr.add(i * self.stride);
            match self.size {
                1 => *p as u64,
                2 => (p as *const u16).read_unaligned() as u64,
                4 => (p as *const u32).read_unaligned() as u64,
                _ => (p as *const u64).read_unaligned(),
            }
        }
    }
}

/// One result of a vectorised call: an output array's elements.
struct Output {
    ptr: *mut u8,
    size: usize,
    pred: bool,
}

impl Output {
    /// Writes element `i`.
    ///
    /// # Safety
    /// `i` must be below the array's element count.
    #[inline(always)]
    unsafe fn set(&self, i: usize, v: u64) {
        // SAFETY: the caller's bound; the element lies inside the freshly made array.
        unsafe {
            let p = self.ptr.add(i * self.size);
            match self.size {
                1 => *p = if self.pred { (v & 1) as u8 } else { v as u8 },
                2 => (p as *mut u16).write_unaligned(v as u16),
                4 => (p as *mut u32).write_unaligned(v as u32),
                _ => (p as *mut u64).write_unaligned(v),
            }
        }
    }
}

// SAFETY: the pointers are into arrays whose buffer exports the vectorised call holds until
// its loop has ended; the loop is the only user of the output arrays, made for it.
unsafe impl Send for Column {}
// SAFETY: as above.
unsafe impl Sync for Column {}
// SAFETY: as above.
unsafe impl Send for Output {}
// SAFETY: as above.
unsafe impl Sync for Output {}

/// The slot wrapper's C type (see `ptxjit::jit::host`).
type SlotFn = unsafe extern "C" fn(*const u64, *mut u64);

/// Runs the function on every element; a fault stops at its element.
#[allow(clippy::too_many_arguments)]
fn run_loop(
    jit: Option<(&Jit, SlotFn)>,
    engine: &(dyn Engine + Sync),
    name: &str,
    params: &[Type],
    rets: &[Type],
    columns: &[Column],
    outputs: &[Output],
    n: usize,
) -> Result<(), (usize, RunError)> {
    match jit {
        Some((jit, f)) => {
            let mut args = vec![0u64; params.len().max(1)];
            let mut results = vec![0u64; rets.len().max(1)];
            take_fault(jit);
            for i in 0..n {
                for (a, c) in args.iter_mut().zip(columns) {
                    // SAFETY: `i < n`, every array column has `n` elements.
                    *a = unsafe { c.get(i) };
                }
                // SAFETY: `f` is the slot wrapper of this function of `jit`, which outlives
                // the loop; `args` has a slot per parameter and `results` one per return.
                unsafe { f(args.as_ptr(), results.as_mut_ptr()) };
                if let Some(e) = take_fault(jit) {
                    return Err((i, e));
                }
                for (o, r) in outputs.iter().zip(&results) {
                    // SAFETY: `i < n`, every output has `n` elements.
                    unsafe { o.set(i, *r) };
                }
            }
        }
        None => {
            let mut values: Vec<Value> = params.iter().map(|t| Value::new(*t, 0)).collect();
            for i in 0..n {
                for (v, c) in values.iter_mut().zip(columns) {
                    // SAFETY: `i < n`, every array column has `n` elements.
                    *v = Value::new(v.ty, unsafe { c.get(i) });
                }
                let r = engine.call(name, &values).map_err(|e| (i, e))?;
                for (o, r) in outputs.iter().zip(&r) {
                    // SAFETY: `i < n`, every output has `n` elements.
                    unsafe { o.set(i, r.bits) };
                }
            }
        }
    }
    Ok(())
}

/// A `.func` of a module: `f(*args)` calls it once with Python values and returns Python
/// values (None, one value, or a tuple for several); `f.map(*arrays)` calls it once per
/// element of NumPy arrays and returns arrays.
#[pyclass(frozen, module = "ptxjit")]
pub struct Function {
    module: Py<Module>,
    info: FunctionInfo,
}

impl Function {
    pub fn new(module: Py<Module>, info: FunctionInfo) -> Function {
        Function { module, info }
    }
}

#[pymethods]
impl Function {
    /// The function's name.
    #[getter]
    fn name(&self) -> &str {
        &self.info.name
    }

    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        call(py, self.module.get(), &self.info.name, args)
    }

    /// `f.map(*args)`: the function on every element. Each argument is an array whose
    /// dtype holds the parameter's type exactly (`uint32` for `.u32`, `int32` for `.s32`,
    /// either for `.b32`, `float32` for `.f32`, `bool` for `.pred`; no conversion is made),
    /// all arrays of one shape, or a scalar used for every element. Returns an array of that
    /// shape per return value (None, one array, or a tuple of them).
    #[pyo3(signature = (*args))]
    fn map(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let module = self.module.get();
        let info = func_info(module, &self.info.name)?;
        check_arity(info, args.len())?;
        let mut arrays: Vec<Array> = Vec::new();
        let mut scalars: Vec<Box<u64>> = Vec::new();
        let mut shape: Option<Vec<usize>> = None;
        let mut columns = Vec::with_capacity(args.len());
        for (i, (p, a)) in info.params.iter().zip(args.iter()).enumerate() {
            let what = arguments::describe(i, &p.name, p.ty);
            let is_array = arguments::is_array(&a);
            if !is_array {
                let v = arguments::to_value(&a, p.ty, &what)?;
                let b = Box::new(v.bits);
                columns.push(Column {
                    ptr: &*b as *const u64 as *const u8,
                    stride: 0,
                    size: 8,
                });
                scalars.push(b);
                continue;
            }
            let arr = arguments::array(&a, &what, false)?;
            if !arguments::elem_fits(arr.elem, p.ty) || arr.elem == Elem::Other {
                return Err(PyTypeError::new_err(format!(
                    "{what} takes an array of {} (no conversion is made: convert with \
                     .astype(numpy.{}) if the values fit)",
                    arguments::dtype_name(p.ty),
                    arguments::dtype_name(p.ty)
                )));
            }
            match &shape {
                None => shape = Some(arr.shape.clone()),
                Some(s) if *s != arr.shape => {
                    return Err(PyValueError::new_err(format!(
                        "{what} has shape {:?}, an earlier argument {s:?}: the arrays must \
                         have one shape",
                        arr.shape
                    )));
                }
                Some(_) => {}
            }
            columns.push(Column {
                ptr: arr.ptr,
                stride: p.ty.bytes(),
                size: p.ty.bytes(),
            });
            arrays.push(arr);
        }
        let shape = shape.unwrap_or_default();
        let n: usize = shape.iter().product();
        let numpy = py.import("numpy")?;
        let mut outs = Vec::new();
        let mut outputs = Vec::new();
        for r in &info.returns {
            // Made flat (a 0-d array exports no shape), given the arguments' shape below.
            let out = numpy.call_method1("empty", (n, arguments::dtype_name(r.ty)))?;
            let arr = arguments::array(&out, "a result", true)?;
            outputs.push(Output {
                ptr: arr.ptr,
                size: r.ty.bytes(),
                pred: r.ty == Type::Pred,
            });
            arrays.push(arr);
            outs.push(out);
        }
        let params: Vec<Type> = info.params.iter().map(|p| p.ty).collect();
        let rets: Vec<Type> = info.returns.iter().map(|p| p.ty).collect();
        let jit = slot_func(module, &info.name);
        let engine = module.engines.engine();
        let name = info.name.as_str();
        let r = py.detach(|| run_loop(jit, engine, name, &params, &rets, &columns, &outputs, n));
        drop(arrays);
        drop(scalars);
        r.map_err(|(i, e)| errors::run_error(py, e, Some(i)))?;
        let mut shaped: Vec<Py<PyAny>> = outs
            .into_iter()
            .map(|o| {
                o.call_method1("reshape", (shape.clone(),))
                    .map(Bound::unbind)
            })
            .collect::<PyResult<_>>()?;
        match shaped.len() {
            0 => Ok(py.None()),
            1 => Ok(shaped.pop().expect("one output")),
            _ => Ok(PyTuple::new(py, shaped)?.into_any().unbind()),
        }
    }

    fn __repr__(&self) -> String {
        let list = |v: &[ptxjit::ParamInfo]| {
            v.iter()
                .map(|p| format!("{}: .{}", p.name, p.ty.ptx()))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "<ptxjit.Function {}({}) -> ({})>",
            self.info.name,
            list(&self.info.params),
            list(&self.info.returns)
        )
    }
}
