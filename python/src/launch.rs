//! Kernel launches: arguments typed by the kernel's parameters (arrays passed as their own
//! memory, written in place), the launch configuration (`m.k[grid, block]` or
//! `m.launch(...)`), the GIL released while the kernel runs, and Ctrl-C between blocks.

use crate::arguments::{self, Array};
use crate::errors;
use crate::module::Module;
use ptxjit::ast::{FuncKind, TypeKind};
use ptxjit::{Arg, Dim3, FunctionInfo, LaunchConfig, RunError, Value};
use pyo3::exceptions::{PyKeyboardInterrupt, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How often a waiting launch looks for Ctrl-C.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// A grid or block extent: an int, or a tuple of one to three ints.
pub fn dim3(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Dim3> {
    let bad = || {
        PyTypeError::new_err(format!(
            "{what} must be an int or a tuple of 1 to 3 ints, got {obj}"
        ))
    };
    let one = |o: &Bound<'_, PyAny>| -> PyResult<u32> {
        if !arguments::is_integer(o) {
            return Err(bad());
        }
        let v: i128 = o.extract().map_err(|_| bad())?;
        u32::try_from(v).ok().filter(|&v| v >= 1).ok_or_else(|| {
            PyValueError::new_err(format!("{what} extents must be 1 to 2^32-1, got {v}"))
        })
    };
    if arguments::is_integer(obj) {
        return Ok(Dim3::x(one(obj)?));
    }
    let t = obj.cast::<PyTuple>().map_err(|_| bad())?;
    let v: Vec<u32> = t.iter().map(|o| one(&o)).collect::<PyResult<_>>()?;
    match v[..] {
        [x] => Ok(Dim3::x(x)),
        [x, y] => Ok(Dim3::new(x, y, 1)),
        [x, y, z] => Ok(Dim3::new(x, y, z)),
        _ => Err(bad()),
    }
}

/// A kernel's arguments, checked against its parameters: scalars as values, arrays as their
/// held buffers.
enum Prepared {
    Scalar(Value),
    Array(Array),
    /// An array inside another argument's array: passed as its address, which the other's
    /// extent covers (each buffer argument is a separate memory area to the engines, so
    /// memory shared between arguments is passed once).
    Inside(u64),
}

fn prepare(sig: &FunctionInfo, args: &Bound<'_, PyTuple>) -> PyResult<Vec<Prepared>> {
    if args.len() != sig.params.len() {
        let params: Vec<String> = sig
            .params
            .iter()
            .map(|p| format!("{}: .{}", p.name, p.ty.ptx()))
            .collect();
        return Err(PyTypeError::new_err(format!(
            "kernel `{}` takes {} arguments ({}), got {}",
            sig.name,
            sig.params.len(),
            params.join(", "),
            args.len()
        )));
    }
    let mut out = Vec::with_capacity(args.len());
    for (i, (p, a)) in sig.params.iter().zip(args.iter()).enumerate() {
        let what = arguments::describe(i, &p.name, p.ty);
        if p.is_array() {
            return Err(PyTypeError::new_err(format!(
                "{what} is a {}-byte array parameter, which cannot be passed from Python",
                p.size
            )));
        }
        // A 64-bit integer parameter takes an address: an array, or an integer.
        let pointer = p.ty.bits() == 64 && p.ty.kind() != TypeKind::Float;
        if pointer && arguments::is_array(&a) {
            out.push(Prepared::Array(arguments::array(&a, &what, true)?));
        } else {
            out.push(Prepared::Scalar(arguments::to_value(&a, p.ty, &what)?));
        }
    }
    share_overlaps(&mut out)?;
    Ok(out)
}

/// Arrays that overlap another argument's array: one inside another is passed as its
/// address; a partial overlap is refused.
fn share_overlaps(args: &mut [Prepared]) -> PyResult<()> {
    let extents: Vec<(usize, u64, u64)> = args
        .iter()
        .enumerate()
        .filter_map(|(i, a)| match a {
            Prepared::Array(b) if b.len > 0 => Some((i, b.ptr as u64, b.ptr as u64 + b.len as u64)),
            _ => None,
        })
        .collect();
    let mut inside = Vec::new();
    for &(i, s, e) in &extents {
        for &(j, s2, e2) in &extents {
            if i == j || e <= s2 || e2 <= s {
                continue;
            }
            let contained = s2 <= s && e <= e2;
            // Of two equal extents the first argument keeps the buffer.
            if contained && ((s, e) != (s2, e2) || j < i) {
                inside.push(i);
                break;
            }
            let contains = s <= s2 && e2 <= e;
            if !contained && !contains {
                return Err(PyValueError::new_err(format!(
                    "arguments {} and {} share part of their memory; pass arrays that are \
                     disjoint or one inside the other",
                    i.min(j) + 1,
                    i.max(j) + 1
                )));
            }
        }
    }
    for i in inside {
        if let Prepared::Array(b) = &args[i] {
            args[i] = Prepared::Inside(b.ptr as u64);
        }
    }
    Ok(())
}

/// Launches `name` on `module`'s engine with the GIL released. A launch of several blocks
/// runs on a worker thread while this one waits, taking the GIL every 20 ms to run Python's
/// signal handlers: Ctrl-C (`KeyboardInterrupt`, or whatever the handler raises) stops the
/// launch before its next block and is raised here. A launch of one block cannot be
/// stopped part way, and runs on this thread.
pub fn launch(
    py: Python<'_>,
    module: &Module,
    name: &str,
    config: LaunchConfig,
    args: &Bound<'_, PyTuple>,
) -> PyResult<()> {
    let sig = module.signature(name).ok_or_else(|| {
        PyValueError::new_err(format!(
            "module `{}` has no kernel named `{name}`",
            module.name
        ))
    })?;
    if sig.kind != FuncKind::Entry {
        return Err(PyTypeError::new_err(format!(
            "`{name}` is a .func: call it (m.{name}(...)), do not launch it"
        )));
    }
    let prepared = prepare(sig, args)?;
    let engine = module.engines.engine();
    let run = |stop: &AtomicBool| {
        let mut engine_args: Vec<Arg<'_>> = prepared
            .iter()
            .map(|a| match a {
                Prepared::Scalar(v) => Arg::Scalar(*v),
                Prepared::Inside(addr) => Arg::Scalar(Value::u64(*addr)),
                // SAFETY: the buffer export held in `Array` keeps the memory alive and its
                // size fixed until `prepared` drops, after the launch; the arguments' arrays
                // are disjoint (`share_overlaps`), so no two slices alias; Python code that
                // writes the same array from another thread during the launch races with the
                // kernel as it would with any NumPy operation that releases the GIL.
                Prepared::Array(b) => Arg::Buffer(unsafe { slice_of(b.ptr, b.len) }),
            })
            .collect();
        engine.launch_until(name, config, &mut engine_args, stop)
    };
    let result = if config.grid.count() == 1 {
        py.detach(|| run(&AtomicBool::new(false)))
    } else {
        let (result, signal) = py.detach(|| {
            let stop = AtomicBool::new(false);
            let (tx, rx) = std::sync::mpsc::channel();
            let mut signal = None;
            let result = rayon::in_place_scope(|s| {
                s.spawn(|_| {
                    let _ = tx.send(run(&stop));
                });
                loop {
                    match rx.recv_timeout(SIGNAL_POLL) {
                        Ok(r) => break r,
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                            if signal.is_none()
                                && let Err(e) = Python::attach(|py| py.check_signals())
                            {
                                signal = Some(e);
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                            // The worker panicked; the scope re-raises its panic on return.
                            break Err(RunError::Usage("the launch panicked".into()));
                        }
                    }
                }
            });
            (result, signal)
        });
        if let Some(e) = signal {
            // The handler ran (and consumed the signal): its exception is the result, also
            // when every block had already started and the launch completed.
            drop(prepared);
            return Err(e);
        }
        result
    };
    drop(prepared);
    result.map_err(|e| match e {
        RunError::Interrupted => PyKeyboardInterrupt::new_err("the launch was interrupted"),
        e => errors::run_error(py, e, None),
    })
}

/// The bytes of an array argument.
///
/// # Safety
/// `ptr` must point to `len` writable bytes (an array's held export) that outlive `'a`, and
/// no other slice of that memory may be alive meanwhile.
unsafe fn slice_of<'a>(ptr: *mut u8, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's guarantees.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// A kernel of a module: `m.saxpy[grid, block](args...)` or
/// `m.saxpy[grid, block, shared_bytes](args...)`.
#[pyclass(frozen, module = "ptxjit")]
pub struct Kernel {
    module: Py<Module>,
    info: FunctionInfo,
}

impl Kernel {
    pub fn new(module: Py<Module>, info: FunctionInfo) -> Kernel {
        Kernel { module, info }
    }
}

#[pymethods]
impl Kernel {
    /// The kernel's name.
    #[getter]
    fn name(&self) -> &str {
        &self.info.name
    }

    /// `kernel[grid, block]` or `kernel[grid, block, shared_bytes]`: the kernel with a launch
    /// configuration, ready to call with its arguments.
    fn __getitem__(&self, py: Python<'_>, config: &Bound<'_, PyAny>) -> PyResult<Launcher> {
        let bad = || {
            PyTypeError::new_err(
                "a launch configuration is [grid, block] or [grid, block, shared_bytes]",
            )
        };
        let t = config.cast::<PyTuple>().map_err(|_| bad())?;
        let shared_bytes = match t.len() {
            2 => 0,
            3 => {
                let s = t.get_item(2)?;
                let what = "shared_bytes";
                let v = arguments::to_value(&s, ptxjit::ast::Type::U32, what)?;
                v.bits as u32
            }
            _ => return Err(bad()),
        };
        Ok(Launcher {
            module: self.module.clone_ref(py),
            name: self.info.name.clone(),
            config: LaunchConfig {
                grid: dim3(&t.get_item(0)?, "grid")?,
                block: dim3(&t.get_item(1)?, "block")?,
                shared_bytes,
            },
        })
    }

    #[pyo3(signature = (*_args, **_kwargs))]
    fn __call__(
        &self,
        _args: &Bound<'_, PyTuple>,
        _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>,
    ) -> PyResult<()> {
        Err(PyTypeError::new_err(format!(
            "a kernel needs a launch configuration: m.{0}[grid, block](...) or \
             m.launch(\"{0}\", grid, block, args)",
            self.info.name
        )))
    }

    fn __repr__(&self) -> String {
        let params: Vec<String> = self
            .info
            .params
            .iter()
            .map(|p| format!("{}: .{}", p.name, p.ty.ptx()))
            .collect();
        format!("<ptxjit.Kernel {}({})>", self.info.name, params.join(", "))
    }
}

/// A kernel with its launch configuration; calling it launches the kernel.
#[pyclass(frozen, module = "ptxjit")]
pub struct Launcher {
    module: Py<Module>,
    name: String,
    config: LaunchConfig,
}

#[pymethods]
impl Launcher {
    #[pyo3(signature = (*args))]
    fn __call__(&self, py: Python<'_>, args: &Bound<'_, PyTuple>) -> PyResult<()> {
        launch(py, self.module.get(), &self.name, self.config, args)
    }

    fn __repr__(&self) -> String {
        let LaunchConfig {
            grid,
            block,
            shared_bytes,
        } = self.config;
        format!(
            "<ptxjit.Launcher {}[{grid}, {block}, {shared_bytes}]>",
            self.name
        )
    }
}
