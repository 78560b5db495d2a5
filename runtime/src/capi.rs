//! ptxjit's own C ABI, declared in `include/ptxjit.h` (a test keeps the two in sync).
//!
//! Every function returns a status (`PTXJIT_OK` or an error code) or a plain value; after an
//! error, `ptxjit_last_error` gives the calling thread's message, `ptxjit_diagnostic` its
//! located diagnostics and `ptxjit_last_fault` the fault of a failed launch or call. Strings
//! that functions hand out live as long as what they describe (a module's names) or until
//! the thread's next failing call (error texts).
//!
//! The safety contract of each function is the one its header comment states: pointers are
//! null or valid for what the function reads or writes through them.
#![allow(clippy::missing_safety_doc)]

use crate::ffi::{self, LastError, c_string, guard, put, set_last_error, text};
use crate::program::{LoadError, Program};
use crate::registry::{self, Kind};
use ptxjit::ast::FuncKind;
use ptxjit::{Dim3, Engine, LaunchConfig, ParamInfo, RunError, Value};
use std::ffi::{CString, c_char, c_int, c_void};

pub const PTXJIT_OK: c_int = 0;
/// A null pointer, bad UTF-8, an unknown name or index, or memory that cannot be registered.
pub const PTXJIT_ERROR_INVALID_ARGUMENT: c_int = 1;
/// The PTX text does not parse or validate (the diagnostics say where).
pub const PTXJIT_ERROR_PARSE: c_int = 2;
/// The module parsed but did not compile.
pub const PTXJIT_ERROR_COMPILE: c_int = 3;
/// The call or launch was refused (wrong kernel, dimensions, parameters, shared memory).
pub const PTXJIT_ERROR_USAGE: c_int = 4;
/// The PTX faulted while running (`ptxjit_last_fault`).
pub const PTXJIT_ERROR_FAULT: c_int = 5;
/// A bug in ptxjit, caught at the boundary.
pub const PTXJIT_ERROR_INTERNAL: c_int = 6;

/// `ptxjit_module_load` flag: compile without memory checks.
pub const PTXJIT_LOAD_UNCHECKED: u32 = 1;

/// A loaded module with the C strings its descriptions hand out.
pub struct PtxjitModule {
    program: Program,
    names: Vec<CString>,
    /// Per function: (name, type) of each parameter, then of each return value.
    params: Vec<Vec<(CString, CString)>>,
    returns: Vec<Vec<(CString, CString)>>,
}

#[repr(C)]
pub struct PtxjitDim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PtxjitDiagnostic {
    pub path: *const c_char,
    pub line: u32,
    pub column: u32,
    pub message: *const c_char,
}

#[repr(C)]
#[derive(Clone, Copy)]
pub struct PtxjitFault {
    pub function: *const c_char,
    pub message: *const c_char,
    pub path: *const c_char,
    pub line: u32,
    pub column: u32,
    pub ctaid: [u32; 3],
    pub tid: [u32; 3],
    pub address: u64,
    pub has_address: c_int,
}

#[repr(C)]
pub struct PtxjitFunctionInfo {
    pub name: *const c_char,
    pub is_kernel: c_int,
    pub has_body: c_int,
    pub param_count: u32,
    pub return_count: u32,
    pub param_buffer_size: usize,
}

#[repr(C)]
pub struct PtxjitParamInfo {
    pub name: *const c_char,
    pub r#type: *const c_char,
    pub size: usize,
    pub align: u32,
    pub offset: usize,
}

fn fail(code: c_int, e: LastError) -> c_int {
    set_last_error(e);
    code
}

fn invalid(message: impl AsRef<str>) -> c_int {
    fail(PTXJIT_ERROR_INVALID_ARGUMENT, LastError::message(message))
}

fn run_failed(e: RunError) -> c_int {
    let code = match e {
        RunError::Fault(..) => PTXJIT_ERROR_FAULT,
        _ => PTXJIT_ERROR_USAGE,
    };
    fail(code, LastError::run(&e))
}

fn described(ps: &[ParamInfo]) -> Vec<(CString, CString)> {
    ps.iter()
        .map(|p| (c_string(&p.name), c_string(p.ty.ptx())))
        .collect()
}

/// Parses, validates and compiles PTX text into `*module`. `name` (may be null) names the
/// text in diagnostics; `flags` may hold `PTXJIT_LOAD_UNCHECKED`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_module_load(
    ptx: *const c_char,
    name: *const c_char,
    flags: u32,
    module: *mut *mut PtxjitModule,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a NUL-terminated text.
        let Some(ptx) = (unsafe { text(ptx) }) else {
            return invalid("the PTX text is null or not UTF-8");
        };
        // SAFETY: as above, for the name (null allowed).
        let name = unsafe { text(name) }.unwrap_or("<input>");
        if module.is_null() {
            return invalid("`module` is null");
        }
        let checked = flags & PTXJIT_LOAD_UNCHECKED == 0;
        let program = match Program::compile(ptx, name, checked) {
            Ok(p) => p,
            Err(LoadError::Parse(e)) => return fail(PTXJIT_ERROR_PARSE, LastError::parse(&e)),
            Err(LoadError::Compile(e)) => return fail(PTXJIT_ERROR_COMPILE, LastError::run(&e)),
        };
        let loaded = PtxjitModule {
            names: program
                .functions
                .iter()
                .map(|f| c_string(&f.name))
                .collect(),
            params: program
                .functions
                .iter()
                .map(|f| described(&f.params))
                .collect(),
            returns: program
                .functions
                .iter()
                .map(|f| described(&f.returns))
                .collect(),
            program,
        };
        // SAFETY: checked non-null above; the header asks for a writable pointer.
        unsafe { put(module, Box::into_raw(Box::new(loaded))) };
        PTXJIT_OK
    })
}

/// Frees a module (null is allowed). No launch or call of it may be running.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_module_free(module: *mut PtxjitModule) {
    guard((), || {
        if !module.is_null() {
            // SAFETY: the pointer came from `ptxjit_module_load` and is freed once, as the
            // header requires.
            drop(unsafe { Box::from_raw(module) });
        }
    })
}

/// The module behind a handle.
///
/// # Safety
///
/// `module` is null or a live handle from `ptxjit_module_load`.
unsafe fn loaded<'a>(module: *const PtxjitModule) -> Option<&'a PtxjitModule> {
    // SAFETY: the caller promises null or a live handle.
    unsafe { module.as_ref() }
}

/// How many functions (kernels and `.func`s) the module has; 0 for null.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_function_count(module: *const PtxjitModule) -> usize {
    // SAFETY: the header asks for a live handle or null.
    guard(0, || unsafe { loaded(module) }.map_or(0, |m| m.names.len()))
}

/// The index of the function named `name`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_function_find(
    module: *const PtxjitModule,
    name: *const c_char,
    index: *mut usize,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a live handle and a NUL-terminated name.
        let (Some(m), Some(name)) = (unsafe { loaded(module) }, unsafe { text(name) }) else {
            return invalid("null module or name");
        };
        let Some(i) = m.program.index(name) else {
            return invalid(format!("no function named `{name}` in this module"));
        };
        // SAFETY: the header asks for a writable size_t.
        if unsafe { put(index, i) } {
            PTXJIT_OK
        } else {
            invalid("`index` is null")
        }
    })
}

/// Describes function `index`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_function_info(
    module: *const PtxjitModule,
    index: usize,
    info: *mut PtxjitFunctionInfo,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a live handle.
        let Some(m) = (unsafe { loaded(module) }) else {
            return invalid("null module");
        };
        let Some(f) = m.program.functions.get(index) else {
            return invalid(format!("no function {index}"));
        };
        let value = PtxjitFunctionInfo {
            name: m.names[index].as_ptr(),
            is_kernel: (f.kind == FuncKind::Entry) as c_int,
            has_body: f.has_body as c_int,
            param_count: f.params.len() as u32,
            return_count: f.returns.len() as u32,
            param_buffer_size: m.program.layouts[index].1,
        };
        // SAFETY: the header asks for a writable ptxjit_function_info.
        if unsafe { put(info, value) } {
            PTXJIT_OK
        } else {
            invalid("`info` is null")
        }
    })
}

fn param_info(
    m: &PtxjitModule,
    function: usize,
    i: usize,
    returns: bool,
    info: *mut PtxjitParamInfo,
) -> c_int {
    let Some(f) = m.program.functions.get(function) else {
        return invalid(format!("no function {function}"));
    };
    let (list, names) = if returns {
        (&f.returns, &m.returns[function])
    } else {
        (&f.params, &m.params[function])
    };
    let Some(p) = list.get(i) else {
        return invalid(format!("`{}` has no parameter {i}", f.name));
    };
    let value = PtxjitParamInfo {
        name: names[i].0.as_ptr(),
        r#type: names[i].1.as_ptr(),
        size: p.size,
        align: p.align,
        offset: if returns {
            0
        } else {
            m.program.layouts[function].0[i]
        },
    };
    // SAFETY: the callers' header entries ask for a writable ptxjit_param_info.
    if unsafe { put(info, value) } {
        PTXJIT_OK
    } else {
        invalid("`info` is null")
    }
}

/// Describes parameter `param` of function `function`: name, element type (`u32`, `b8`
/// for a byte array), size, alignment and offset in a packed parameter buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_param_info(
    module: *const PtxjitModule,
    function: usize,
    param: usize,
    info: *mut PtxjitParamInfo,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a live handle.
        match unsafe { loaded(module) } {
            Some(m) => param_info(m, function, param, false, info),
            None => invalid("null module"),
        }
    })
}

/// Describes return value `ret` of `.func` `function` (its offset is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_return_info(
    module: *const PtxjitModule,
    function: usize,
    ret: usize,
    info: *mut PtxjitParamInfo,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a live handle.
        match unsafe { loaded(module) } {
            Some(m) => param_info(m, function, ret, true, info),
            None => invalid("null module"),
        }
    })
}

/// Tells checked launches that `[base, base + size)` is memory kernels may access, until
/// `ptxjit_unregister_memory(base)`. The caller keeps it valid while it is registered.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_register_memory(base: *mut c_void, size: usize) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        if base.is_null() || !registry::register(base as u64, size, Kind::Registered) {
            return invalid(format!(
                "cannot register {size} bytes at {base:p}: null, empty, or overlapping memory already known"
            ));
        }
        PTXJIT_OK
    })
}

/// Forgets memory registered at `base`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_unregister_memory(base: *mut c_void) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        if registry::release(base as u64, &[Kind::Registered]) {
            PTXJIT_OK
        } else {
            invalid(format!("no memory registered at {base:p}"))
        }
    })
}

/// Launches kernel `kernel` over `grid` blocks of `block` threads with `shared_bytes` of
/// dynamic shared memory; `params[i]` points to the value of parameter `i` (as
/// `cuLaunchKernel`'s `kernelParams`). Buffers are passed as their host addresses; checked
/// modules allow accesses to registered memory only.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_launch(
    module: *const PtxjitModule,
    kernel: *const c_char,
    grid: PtxjitDim3,
    block: PtxjitDim3,
    shared_bytes: u32,
    params: *mut *mut c_void,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a live handle and a NUL-terminated name.
        let (Some(m), Some(kernel)) = (unsafe { loaded(module) }, unsafe { text(kernel) }) else {
            return invalid("null module or kernel name");
        };
        let f = match m.program.kernel(kernel) {
            Ok(f) => f,
            Err(e) => return run_failed(e),
        };
        let count = m.program.functions[f].params.len();
        if count > 0 && params.is_null() {
            return invalid(format!(
                "`{kernel}` takes {count} parameters; `params` is null"
            ));
        }
        // SAFETY: the header asks for one pointer per parameter to its value.
        let values = unsafe { m.program.pointed_params(f, params) };
        let config = LaunchConfig {
            grid: Dim3::new(grid.x, grid.y, grid.z),
            block: Dim3::new(block.x, block.y, block.z),
            shared_bytes,
        };
        // SAFETY: the header's contract: addresses among the parameters are registered memory
        // (checked) or memory the kernel may use (unchecked).
        match unsafe { m.program.launch(f, config, &values) } {
            Ok(()) => PTXJIT_OK,
            Err(e) => run_failed(e),
        }
    })
}

/// Calls `.func` `function` on the calling thread: `args[i]` points to the value of
/// parameter `i`, and return value `j` is written to `rets[j]` (each its type's size).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_call(
    module: *const PtxjitModule,
    function: *const c_char,
    args: *mut *mut c_void,
    rets: *mut *mut c_void,
) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        // SAFETY: the header asks for a live handle and a NUL-terminated name.
        let (Some(m), Some(name)) = (unsafe { loaded(module) }, unsafe { text(function) }) else {
            return invalid("null module or function name");
        };
        let Some(f) = m.program.index(name) else {
            return fail(
                PTXJIT_ERROR_USAGE,
                LastError::message(format!("no function named `{name}` in this module")),
            );
        };
        let info = &m.program.functions[f];
        if (!info.params.is_empty() && args.is_null())
            || (!info.returns.is_empty() && rets.is_null())
        {
            return invalid(format!("`{name}` needs `args` and `rets` arrays"));
        }
        // SAFETY: the header asks for one pointer per parameter to its value.
        let bytes = unsafe { m.program.pointed_params(f, args) };
        let values: Vec<Value> = info
            .params
            .iter()
            .zip(&bytes)
            .map(|(p, b)| Value::from_le_bytes(p.ty, b))
            .collect();
        let results = match m.program.jit.call(name, &values) {
            Ok(r) => r,
            Err(e) => return run_failed(e),
        };
        for (j, v) in results.iter().enumerate() {
            let b = v.to_le_bytes();
            // SAFETY: the header asks for one writable pointer per return value, each to
            // its type's size of bytes.
            unsafe {
                let dst = *rets.add(j) as *mut u8;
                std::ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len());
            }
        }
        PTXJIT_OK
    })
}

/// The calling thread's last error message ("" if none); valid until its next failing call.
#[unsafe(no_mangle)]
pub extern "C" fn ptxjit_last_error() -> *const c_char {
    ffi::last_error_text()
}

/// How many located diagnostics the last error has (each parse error, or a fault's place).
#[unsafe(no_mangle)]
pub extern "C" fn ptxjit_diagnostic_count() -> usize {
    ffi::with_last_error(|e| e.diagnostics.len())
}

/// Located diagnostic `index` of the last error; its strings live until the next failing call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_diagnostic(index: usize, out: *mut PtxjitDiagnostic) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        let d = ffi::with_last_error(|e| {
            e.diagnostics.get(index).map(|d| PtxjitDiagnostic {
                path: d.path.as_ptr(),
                line: d.line,
                column: d.column,
                message: d.message.as_ptr(),
            })
        });
        // SAFETY: the header asks for a writable ptxjit_diagnostic.
        match d {
            Some(d) if unsafe { put(out, d) } => PTXJIT_OK,
            _ => PTXJIT_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// The fault of the calling thread's last failed launch or call; PTXJIT_ERROR_INVALID_ARGUMENT
/// if the last error was not a fault.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ptxjit_last_fault(out: *mut PtxjitFault) -> c_int {
    guard(PTXJIT_ERROR_INTERNAL, || {
        let f = ffi::with_last_error(|e| {
            e.fault.as_ref().map(|r| PtxjitFault {
                function: r.function.as_ptr(),
                message: r.at.message.as_ptr(),
                path: r.at.path.as_ptr(),
                line: r.at.line,
                column: r.at.column,
                ctaid: r.fault.ctaid,
                tid: r.fault.tid,
                address: r.fault.address.unwrap_or(0),
                has_address: r.fault.address.is_some() as c_int,
            })
        });
        // SAFETY: the header asks for a writable ptxjit_fault.
        match f {
            Some(f) if unsafe { put(out, f) } => PTXJIT_OK,
            _ => PTXJIT_ERROR_INVALID_ARGUMENT,
        }
    })
}

/// The library's version, e.g. "0.1.0".
#[unsafe(no_mangle)]
pub extern "C" fn ptxjit_version() -> *const c_char {
    static VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), "\0");
    VERSION.as_ptr() as *const c_char
}
