//! What every engine offers: calling a `.func`, launching an `.entry`, and the values,
//! arguments and errors they exchange with the host.

use crate::ast::{FuncId, FuncKind, Function, Module, Param, Source, Span, Type, TypeKind};
use crate::block::SharedLayout;
use std::fmt;
use std::sync::atomic::AtomicBool;

/// Deepest chain of PTX calls a thread may make before the launch faults (both engines).
pub const MAX_CALL_DEPTH: usize = 256;

/// A typed scalar: the PTX type and its bit pattern in the low bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value {
    pub ty: Type,
    pub bits: u64,
}

impl Value {
    pub fn new(ty: Type, bits: u64) -> Value {
        Value {
            ty,
            bits: bits & ty.mask(),
        }
    }
    pub fn u32(v: u32) -> Value {
        Value::new(Type::U32, v as u64)
    }
    pub fn u64(v: u64) -> Value {
        Value::new(Type::U64, v)
    }
    pub fn s32(v: i32) -> Value {
        Value::new(Type::S32, v as u32 as u64)
    }
    pub fn s64(v: i64) -> Value {
        Value::new(Type::S64, v as u64)
    }
    pub fn f32(v: f32) -> Value {
        Value::new(Type::F32, v.to_bits() as u64)
    }
    pub fn f64(v: f64) -> Value {
        Value::new(Type::F64, v.to_bits())
    }
    /// The value of type `ty` stored little-endian in `bytes` (at most 8; missing high bytes
    /// are zero, as for a short last element of a buffer).
    pub fn from_le_bytes(ty: Type, bytes: &[u8]) -> Value {
        let mut v = [0u8; 8];
        let n = bytes.len().min(8);
        v[..n].copy_from_slice(&bytes[..n]);
        Value::new(ty, u64::from_le_bytes(v))
    }
    /// Little-endian bytes of the value at its type's size.
    pub fn to_le_bytes(self) -> Vec<u8> {
        self.bits.to_le_bytes()[..self.ty.bytes()].to_vec()
    }
    /// Equality where any NaN equals any NaN of the same type.
    pub fn same_as(self, other: Value) -> bool {
        if self.ty != other.ty {
            return false;
        }
        let nan = |v: Value| match v.ty {
            Type::F32 => f32::from_bits(v.bits as u32).is_nan(),
            Type::F64 => f64::from_bits(v.bits).is_nan(),
            _ => false,
        };
        self.bits == other.bits || (nan(self) && nan(other))
    }
}

impl fmt::Display for Value {
    /// The CLI's output format: `0x` + zero-padded lowercase hex for integers, `0f`/`0d` +
    /// hex bits for floats.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ty {
            Type::F32 => write!(f, "0f{:08x}", self.bits),
            Type::F64 => write!(f, "0d{:016x}", self.bits),
            Type::Pred => write!(f, "{}", self.bits & 1),
            t => write!(f, "0x{:0width$x}", self.bits, width = t.bytes() * 2),
        }
    }
}

/// A kernel argument: a scalar, or a buffer passed as its 64-bit global address.
#[derive(Debug)]
pub enum Arg<'a> {
    Scalar(Value),
    Buffer(&'a mut [u8]),
}

/// Grid and block extents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub fn new(x: u32, y: u32, z: u32) -> Dim3 {
        Dim3 { x, y, z }
    }
    pub fn x(x: u32) -> Dim3 {
        Dim3 { x, y: 1, z: 1 }
    }
    pub fn count(self) -> u64 {
        self.x as u64 * self.y as u64 * self.z as u64
    }
    /// The i-th point in x-major order.
    pub fn point(self, i: u64) -> [u32; 3] {
        // One row (a 1-D grid or block): no divisions, which a launch pays at every block.
        if self.y == 1 && self.z == 1 {
            return [i as u32, 0, 0];
        }
        let x = (i % self.x as u64) as u32;
        let y = ((i / self.x as u64) % self.y as u64) as u32;
        let z = (i / (self.x as u64 * self.y as u64)) as u32;
        [x, y, z]
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({},{},{})", self.x, self.y, self.z)
    }
}

/// A fault inside running PTX: where it happened and what.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub message: String,
    /// The function or kernel that was running.
    pub function: String,
    /// Block and thread indices (`%ctaid`, `%tid`).
    pub ctaid: [u32; 3],
    pub tid: [u32; 3],
    /// The faulting instruction.
    pub span: Span,
    pub line: u32,
    /// The address involved, for memory faults.
    pub address: Option<u64>,
}

/// Why a call or launch did not complete.
#[derive(Clone, Debug, PartialEq)]
pub enum RunError {
    /// The request itself is wrong (unknown function, wrong argument count or types).
    Usage(String),
    /// The PTX faulted while running.
    Fault(Box<Fault>, Box<Source>),
    /// The launch was stopped (its `stop` flag set) before every block had run; the blocks
    /// that had started ran to their end.
    Interrupted,
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Usage(m) => write!(f, "error: {m}"),
            RunError::Interrupted => write!(f, "error: the launch was interrupted"),
            RunError::Fault(fault, source) => {
                crate::frontend::diag::render(source, fault.span, &fault.message, f)?;
                write!(
                    f,
                    "  = in `{}`, block ({},{},{}), thread ({},{},{})",
                    fault.function,
                    fault.ctaid[0],
                    fault.ctaid[1],
                    fault.ctaid[2],
                    fault.tid[0],
                    fault.tid[1],
                    fault.tid[2]
                )
            }
        }
    }
}

impl std::error::Error for RunError {}

/// A place in a PTX source: its file name and 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Location {
    pub path: String,
    pub line: usize,
    pub column: usize,
}

impl Location {
    /// Where byte offset `offset` of `source` is.
    pub fn of(source: &Source, offset: usize) -> Location {
        let (line, column) = source.line_col(offset);
        Location {
            path: source.path.clone(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path, self.line, self.column)
    }
}

/// What kind of error a host interface reports: bad input text, a wrong request, a fault
/// inside running PTX, or a stopped launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The PTX text does not parse or validate ([`crate::ParseError`]).
    Parse,
    /// [`RunError::Usage`].
    Usage,
    /// [`RunError::Fault`].
    Fault,
    /// [`RunError::Interrupted`].
    Interrupted,
}

impl RunError {
    /// Its kind, as a plain value.
    pub fn kind(&self) -> ErrorKind {
        match self {
            RunError::Usage(_) => ErrorKind::Usage,
            RunError::Fault(..) => ErrorKind::Fault,
            RunError::Interrupted => ErrorKind::Interrupted,
        }
    }
    /// The message alone, without location or rendering (`Display` gives the rustc-style
    /// text with the source line).
    pub fn message(&self) -> &str {
        match self {
            RunError::Usage(m) => m,
            RunError::Fault(f, _) => &f.message,
            RunError::Interrupted => "the launch was interrupted",
        }
    }
    /// Where in the PTX a fault happened (faults only).
    pub fn location(&self) -> Option<Location> {
        match self {
            RunError::Fault(f, source) => Some(Location::of(source, f.span.start)),
            _ => None,
        }
    }
    /// The fault, for a fault.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            RunError::Fault(f, _) => Some(f),
            _ => None,
        }
    }
}

/// How a kernel is launched: `grid` blocks of `block` threads, each block with
/// `shared_bytes` of dynamic shared memory (what `.extern .shared` arrays of unspecified size
/// name; CUDA's `sharedMemBytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_bytes: u32,
}

/// An engine runs a parsed module: the interpreter and the JIT.
pub trait Engine {
    /// Calls a `.func` with scalar arguments; returns its return values in order.
    fn call(&self, func: &str, args: &[Value]) -> Result<Vec<Value>, RunError>;
    /// Launches an `.entry` as `config` says; once `stop` is set no further block starts,
    /// and the launch ends with [`RunError::Interrupted`] (how a host answers Ctrl-C).
    fn launch_until(
        &self,
        kernel: &str,
        config: LaunchConfig,
        args: &mut [Arg],
        stop: &AtomicBool,
    ) -> Result<(), RunError>;
    /// Launches an `.entry` as `config` says.
    fn launch_with(
        &self,
        kernel: &str,
        config: LaunchConfig,
        args: &mut [Arg],
    ) -> Result<(), RunError> {
        self.launch_until(kernel, config, args, &AtomicBool::new(false))
    }
    /// Launches an `.entry` over `grid` blocks of `block` threads, without dynamic shared
    /// memory.
    fn launch(
        &self,
        kernel: &str,
        grid: Dim3,
        block: Dim3,
        args: &mut [Arg],
    ) -> Result<(), RunError> {
        let config = LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
        };
        self.launch_with(kernel, config, args)
    }
    /// How many threads the launches so far ran in SIMD lanes, for engines that have them.
    fn lane_threads(&self) -> Option<u64> {
        None
    }
}

/// Checks a scalar argument against a parameter and gives its bytes (what every engine
/// copies into the parameter).
pub fn arg_bytes(func: &Function, p: &Param, v: Value) -> Result<Vec<u8>, RunError> {
    check_arg(func, p, v)?;
    Ok(v.to_le_bytes())
}

/// Checks that a scalar argument fits its parameter: a scalar parameter of the value's width,
/// and a float only for a float or bits parameter (and the other way round).
pub fn check_arg(func: &Function, p: &Param, v: Value) -> Result<(), RunError> {
    let ty = func.param_type(p);
    let size = func.param_size(p);
    if size != ty.bytes() {
        return Err(RunError::Usage(format!(
            "parameter `{}` is a {size}-byte array; pass it as a buffer",
            func.param_name(p)
        )));
    }
    if v.ty.bits() != ty.bits() || (v.ty.is_float() != ty.is_float() && ty.kind() != TypeKind::Bits)
    {
        return Err(RunError::Usage(format!(
            "parameter `{}` is {ty}, the argument is {}",
            func.param_name(p),
            v.ty
        )));
    }
    Ok(())
}

/// The kernel a launch names, once its grid, block, dynamic shared memory (against the
/// module's `shared` layout) and argument count are checked: every engine's first step of a
/// launch.
pub fn launched_kernel<'m>(
    module: &'m Module,
    name: &str,
    config: LaunchConfig,
    shared: &SharedLayout,
    args: usize,
) -> Result<(FuncId, &'m Function), RunError> {
    let (id, func) = find_function(module, name, FuncKind::Entry)?;
    check_dims(config.grid, config.block)?;
    shared
        .check_launch(id, config.shared_bytes)
        .map_err(RunError::Usage)?;
    check_arity(func, args)?;
    Ok((id, func))
}

/// The bytes kernel parameter `p` receives from its argument: a scalar's (checked against
/// the parameter), or a buffer's address, which `place` gives (the engine makes the buffer an
/// area there).
pub fn param_bytes(
    func: &Function,
    p: &Param,
    arg: &mut Arg,
    place: impl FnOnce(&mut [u8]) -> u64,
) -> Result<Vec<u8>, RunError> {
    match arg {
        Arg::Scalar(v) => arg_bytes(func, p, *v),
        Arg::Buffer(b) => {
            check_buffer_param(func, p)?;
            Ok(place(b).to_le_bytes().to_vec())
        }
    }
}

/// CUDA's launch limits: at most 1024 threads a block, 2^31-1 × 65535 × 65535 blocks.
pub fn check_dims(grid: Dim3, block: Dim3) -> Result<(), RunError> {
    if grid.count() == 0 || block.count() == 0 {
        return Err(RunError::Usage(
            "grid and block dimensions must be at least 1".into(),
        ));
    }
    if block.count() > 1024 || block.z > 64 {
        return Err(RunError::Usage(format!(
            "block {block} has more than 1024 threads (or z > 64)"
        )));
    }
    if grid.x > i32::MAX as u32 || grid.y > 65535 || grid.z > 65535 {
        return Err(RunError::Usage(format!(
            "grid {grid} exceeds 2^31-1 × 65535 × 65535"
        )));
    }
    Ok(())
}

/// The `.func` or `.entry` named `name`, with a body.
pub fn find_function<'m>(
    module: &'m Module,
    name: &str,
    kind: FuncKind,
) -> Result<(FuncId, &'m Function), RunError> {
    let what = match kind {
        FuncKind::Entry => "kernel (.entry)",
        FuncKind::Func => "function (.func)",
    };
    let msg = match module.function(name) {
        Some((id, f)) if f.kind == kind && f.body.is_some() => return Ok((id, f)),
        Some((_, f)) if !f.refused.is_empty() => {
            let reasons = crate::frontend::ParseError {
                source: module.source.clone(),
                diagnostics: f.refused.clone(),
            };
            format!("`{name}` cannot run: it uses what ptxjit does not support yet\n{reasons}")
        }
        Some((_, f)) if f.kind != kind => format!("`{name}` is not a {what}"),
        Some(_) => format!("`{name}` is declared but has no body"),
        None => format!("no {what} named `{name}` in this module"),
    };
    Err(RunError::Usage(msg))
}

/// Checks the argument count of a call or launch.
pub fn check_arity(func: &Function, given: usize) -> Result<(), RunError> {
    if given != func.params.len() {
        return Err(RunError::Usage(format!(
            "`{}` takes {} arguments, {given} given",
            func.name,
            func.params.len()
        )));
    }
    Ok(())
}

/// Return values of a call come back as scalars; array returns cannot.
pub fn check_scalar_rets(func: &Function) -> Result<(), RunError> {
    for r in &func.rets {
        if func.param_size(r) != func.param_type(r).bytes() {
            return Err(RunError::Usage(format!(
                "return value `{}` is an array, which `call` cannot return",
                func.param_name(r)
            )));
        }
    }
    Ok(())
}

/// A buffer argument is passed as its 64-bit address: the parameter must be 8 bytes.
pub fn check_buffer_param(func: &Function, p: &Param) -> Result<(), RunError> {
    if func.param_size(p) != 8 {
        return Err(RunError::Usage(format!(
            "parameter `{}` is {}; a buffer is passed as a 64-bit address",
            func.param_name(p),
            func.param_type(p)
        )));
    }
    Ok(())
}
