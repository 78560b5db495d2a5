//! `.func`s as host callables.
//!
//! Each `.func` with a body gets a wrapper with the C ABI (`extern "C"`) whose Rust type
//! follows its PTX parameters:
//!
//! | PTX | Rust |
//! |---|---|
//! | `.u8 .u16 .u32 .u64` (and `.b`) | `u8 u16 u32 u64` |
//! | `.s8 .s16 .s32 .s64` | `i8 i16 i32 i64` (or the unsigned type of the same width) |
//! | `.f32 .f64` | `f32 f64` |
//! | `.pred` (`.reg` parameters) | `u8` holding 0 or 1 |
//! | an array parameter (`.param .b8 x[16]`) | `*const u8` to its bytes |
//! | no return value | `()` |
//! | one scalar return value | that value |
//! | several return values, or an array | a leading `out: *mut R` argument, `R` a `#[repr(C)]` struct of them in order (an array as `[u8; N]`); the function returns nothing |
//!
//! Each such `.func` also gets a slot wrapper `(args: *const u64, rets: *mut u64)` with one
//! signature for all ([`Jit::slot_func`]).
//!
//! A fault inside the function (out-of-bounds access, call depth) ends the call with zeroed
//! return values and records the fault for the calling thread; [`take_fault`] returns it.
//! The typed handle [`Func`] checks the Rust types against the PTX signature when it is made
//! and turns a recorded fault into an error.

use super::compile::{Listing, define};
use super::layout::FrameLayout;
use super::lower::{clif, copy_bytes, signature};
use super::runtime::{JitArea, ModuleInfo, PendingFault, STATUS_FAULT, ThreadCtx};
use super::{Emit, Jit, compile_error};
use crate::ast::{FuncKind, Function, Module, Type, TypeKind};
use crate::engine::RunError;
use crate::memcheck::AreaMap;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module as _};
use std::cell::RefCell;
use std::marker::PhantomData;

fn is_array(f: &Function, p: &crate::ast::Param) -> bool {
    f.param_size(p) != f.param_type(p).bytes()
}

/// Whether the wrapper returns through a leading out pointer.
fn returns_through_pointer(f: &Function) -> bool {
    f.rets.len() > 1 || f.rets.iter().any(|p| is_array(f, p))
}

/// The C-ABI parameter and result types of a `.func`'s wrapper.
fn wrapper_types(f: &Function) -> (Vec<ir::Type>, Vec<ir::Type>) {
    let mut params = Vec::new();
    let out = returns_through_pointer(f);
    if out {
        params.push(types::I64);
    }
    for p in &f.params {
        params.push(if is_array(f, p) {
            types::I64
        } else {
            clif(f.param_type(p))
        });
    }
    let rets = if out || f.rets.is_empty() {
        Vec::new()
    } else {
        vec![clif(f.param_type(&f.rets[0]))]
    };
    (params, rets)
}

/// Offsets of the fields of a `#[repr(C)]` struct whose fields have the given sizes and
/// alignments.
fn c_struct_offsets(fields: impl IntoIterator<Item = (usize, usize)>) -> Vec<usize> {
    let mut at = 0usize;
    fields
        .into_iter()
        .map(|(size, align)| {
            at = at.div_ceil(align) * align;
            let o = at;
            at += size;
            o
        })
        .collect()
}

/// The out struct's fields: scalars align to their size, arrays (`[u8; N]`) to 1.
fn out_fields(f: &Function) -> Vec<(usize, usize)> {
    f.rets
        .iter()
        .map(|p| {
            let n = f.param_size(p);
            (n, if is_array(f, p) { 1 } else { n })
        })
        .collect()
}

/// The two host forms of a `.func`: the C-ABI wrapper typed by its parameters, and the
/// slot wrapper `(args: *const u64, rets: *mut u64)` of every `.func` without array
/// parameters or returns, one 8-byte slot per value, for callers that pick the function at
/// run time (the Python package's vectorised calls).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    Typed,
    Slots,
}

/// The host wrappers of a module's `.func`s: typed and slot forms, by function index.
pub(super) struct Wrappers {
    pub typed: Vec<Option<FuncId>>,
    pub slots: Vec<Option<FuncId>>,
}

/// Defines the wrappers of every `.func` with a body.
#[allow(clippy::too_many_arguments)]
pub(super) fn define_wrappers(
    jm: &mut JITModule,
    module: &Module,
    layouts: &[FrameLayout],
    internal: &[Option<FuncId>],
    call_areas: u64,
    info: u64,
    emit: Emit,
    listing: &mut Listing,
) -> Result<Wrappers, RunError> {
    let cc = jm.isa().default_call_conv();
    let enter = jm
        .declare_function(
            "rt_host_enter",
            Linkage::Import,
            &signature(cc, &[types::I64, types::I64], &[types::I64]),
        )
        .map_err(compile_error)?;
    let fault = jm
        .declare_function(
            "rt_host_fault",
            Linkage::Import,
            &signature(cc, &[types::I64], &[]),
        )
        .map_err(compile_error)?;
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = jm.make_context();
    ctx.set_disasm(emit == Emit::Asm);
    let mut wrappers = Wrappers {
        typed: Vec::new(),
        slots: Vec::new(),
    };
    for (i, f) in module.functions.iter().enumerate() {
        let (Some(target), FuncKind::Func) = (internal[i], f.kind) else {
            wrappers.typed.push(None);
            wrappers.slots.push(None);
            continue;
        };
        let has_arrays = f.params.iter().chain(&f.rets).any(|p| is_array(f, p));
        for form in [Form::Typed, Form::Slots] {
            if form == Form::Slots && has_arrays {
                wrappers.slots.push(None);
                continue;
            }
            let (params, rets) = match form {
                Form::Typed => wrapper_types(f),
                Form::Slots => (vec![types::I64, types::I64], Vec::new()),
            };
            let sig = signature(cc, &params, &rets);
            let prefix = match form {
                Form::Typed => "host",
                Form::Slots => "slots",
            };
            let id = jm
                .declare_function(&format!("{prefix}{i}.{}", f.name), Linkage::Local, &sig)
                .map_err(compile_error)?;
            ctx.func.signature = sig;
            let layout = &layouts[i];
            {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
                let flags = MemFlagsData::trusted();
                let entry = b.create_block();
                b.append_block_params_for_function_params(entry);
                b.switch_to_block(entry);
                let size = layout.args_size + layout.rets_size;
                let slot = b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    size.max(8).div_ceil(8) * 8,
                    4,
                ));
                let buf = b.ins().stack_addr(types::I64, slot, 0);
                // Not zeroed: the arguments below fill the argument part, and the callee
                // writes every return parameter unless it faults, when the results are
                // zeroed below.
                let zero = b.ins().iconst(types::I64, 0);
                let values = b.block_params(entry).to_vec();
                let out = form == Form::Slots || returns_through_pointer(f);
                let args: Vec<ir::Value> = match form {
                    Form::Typed => values[out as usize..].to_vec(),
                    // Each argument from the low bytes of its slot (little-endian).
                    Form::Slots => f
                        .params
                        .iter()
                        .enumerate()
                        .map(|(k, p)| {
                            b.ins()
                                .load(clif(f.param_type(p)), flags, values[0], 8 * k as i32)
                        })
                        .collect(),
                };
                for ((p, v), off) in f.params.iter().zip(&args).zip(&layout.args) {
                    if is_array(f, p) {
                        copy_bytes(&mut b, buf, *off as i32, *v, 0, f.param_size(p));
                    } else {
                        b.ins().store(flags, *v, buf, *off as i32);
                    }
                }
                let rets_buf = b.ins().iadd_imm_s(buf, layout.args_size as i64);
                let enter_ref = jm.declare_func_in_func(enter, b.func);
                let fault_ref = jm.declare_func_in_func(fault, b.func);
                let target_ref = jm.declare_func_in_func(target, b.func);
                let areas = b.ins().iconst(types::I64, call_areas as i64);
                let info = b.ins().iconst(types::I64, info as i64);
                let call = b.ins().call(enter_ref, &[areas, info]);
                let tctx = b.inst_results(call)[0];
                let call = b.ins().call(target_ref, &[tctx, buf, rets_buf]);
                let status = b.inst_results(call)[0];
                let failed = b
                    .ins()
                    .icmp_imm_s(IntCC::Equal, status, STATUS_FAULT as i64);
                let (bad, done) = (b.create_block(), b.create_block());
                b.ins().brif(failed, bad, &[], done, &[]);
                b.switch_to_block(bad);
                b.ins().call(fault_ref, &[tctx]);
                // Zeroed results after a fault.
                for k in (0..layout.rets_size).step_by(8) {
                    b.ins().store(flags, zero, rets_buf, k as i32);
                }
                b.ins().jump(done, &[]);
                b.switch_to_block(done);
                if out {
                    let fields = match form {
                        Form::Typed => c_struct_offsets(out_fields(f)),
                        Form::Slots => (0..f.rets.len()).map(|k| 8 * k).collect(),
                    };
                    let out_ptr = match form {
                        Form::Typed => values[0],
                        Form::Slots => values[1],
                    };
                    for ((p, off), o) in f.rets.iter().zip(&layout.rets).zip(fields) {
                        let n = f.param_size(p);
                        copy_bytes(&mut b, out_ptr, o as i32, rets_buf, *off as i32, n);
                    }
                    b.ins().return_(&[]);
                } else {
                    let loaded: Vec<ir::Value> = f
                        .rets
                        .iter()
                        .zip(&layout.rets)
                        .map(|(p, off)| {
                            b.ins()
                                .load(clif(f.param_type(p)), flags, rets_buf, *off as i32)
                        })
                        .collect();
                    b.ins().return_(&loaded);
                }
                b.seal_all_blocks();
                b.finalize(jm.isa().frontend_config());
            }
            let (name, what, ids) = match form {
                Form::Typed => (
                    format!("{} (host wrapper)", f.name),
                    format!("wrapper of `{}`", f.name),
                    &mut wrappers.typed,
                ),
                Form::Slots => (
                    format!("{} (slot wrapper)", f.name),
                    format!("slot wrapper of `{}`", f.name),
                    &mut wrappers.slots,
                ),
            };
            define(jm, &mut ctx, id, &name, &what, emit, listing)?;
            ids.push(Some(id));
        }
    }
    Ok(wrappers)
}

thread_local! {
    /// The context of host calls made on this thread.
    static HOST_CTX: RefCell<Option<Box<ThreadCtx>>> = const { RefCell::new(None) };
    /// The fault of the last host call on this thread that faulted, until taken.
    static HOST_FAULT: RefCell<Option<PendingFault>> = const { RefCell::new(None) };
}

/// `rt_host_enter(areas, info) -> ctx`: a fresh context for a host call on this thread.
pub extern "C" fn rt_host_enter(areas: u64, info: u64) -> u64 {
    // SAFETY: the wrapper passes the addresses of its Jit's module areas and module info,
    // which live as long as the Jit, and the wrapper can only run while the Jit lives.
    let (areas, info) = unsafe {
        (
            &*(areas as *const AreaMap<JitArea>),
            &*(info as *const ModuleInfo),
        )
    };
    HOST_CTX.with(|c| {
        let mut c = c.borrow_mut();
        let ctx = c.get_or_insert_with(|| Box::new(ThreadCtx::new(areas, info)));
        ctx.reset(areas, info);
        &mut **ctx as *mut ThreadCtx as u64
    })
}

/// `rt_host_fault(ctx)`: keeps the fault of a host call for [`take_fault`].
pub extern "C" fn rt_host_fault(ctx: u64) {
    // SAFETY: `ctx` is the context `rt_host_enter` returned for this call.
    let ctx = unsafe { &mut *(ctx as *mut ThreadCtx) };
    let f = ctx.fault.take();
    HOST_FAULT.with(|h| *h.borrow_mut() = f);
}

/// The fault of the last faulting host call on this thread, located in `jit`'s source.
pub fn take_fault(jit: &Jit) -> Option<RunError> {
    HOST_FAULT
        .with(|h| h.borrow_mut().take())
        .map(|f| jit.locate(f, [0; 3], [0; 3]))
}

/// A Rust scalar type that can stand for a PTX parameter or return value.
pub trait HostScalar: Copy {
    /// Whether a PTX parameter of type `t` may be passed as this type.
    fn fits(t: Type) -> bool;
    /// Reads the value from the start of `bytes`.
    fn read(bytes: &[u8]) -> Self;
}

macro_rules! host_scalar {
    ($($t:ty => $bits:literal $float:literal),* $(,)?) => {$(
        impl HostScalar for $t {
            fn fits(t: Type) -> bool {
                t.bits() == $bits && t.kind() != TypeKind::Pred
                    && (t.is_float() == $float || t.kind() == TypeKind::Bits)
            }
            fn read(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes[..$bits / 8].try_into().expect("enough bytes"))
            }
        }
    )*};
}

host_scalar! {
    u8 => 8 false, u16 => 16 false, u32 => 32 false, u64 => 64 false,
    i8 => 8 false, i16 => 16 false, i32 => 32 false, i64 => 64 false,
    f32 => 32 true, f64 => 64 true,
}

/// Argument lists a typed handle accepts: tuples of [`HostScalar`]s.
pub trait HostArgs {
    /// Whether the types fit the PTX parameter types.
    fn fit(types: &[Type]) -> bool;
    /// Calls `ptr` (a wrapper) with these arguments and a single return value `R`.
    ///
    /// # Safety
    /// `ptr` must be a wrapper whose C signature is `(Self...) -> R`.
    unsafe fn call_ret<R: HostScalar>(self, ptr: *const u8) -> R;
    /// # Safety
    /// `ptr` must be a wrapper whose C signature is `(Self...)`.
    unsafe fn call_void(self, ptr: *const u8);
    /// # Safety
    /// `ptr` must be a wrapper whose C signature is `(*mut u8, Self...)` and `out` must hold
    /// its return struct.
    unsafe fn call_out(self, ptr: *const u8, out: *mut u8);
}

macro_rules! host_args {
    ($($a:ident),*) => {
        impl<$($a: HostScalar),*> HostArgs for ($($a,)*) {
            fn fit(types: &[Type]) -> bool {
                let want: &[fn(Type) -> bool] = &[$($a::fits),*];
                want.len() == types.len() && want.iter().zip(types).all(|(f, t)| f(*t))
            }
            #[allow(non_snake_case)]
            unsafe fn call_ret<R: HostScalar>(self, ptr: *const u8) -> R {
                let ($($a,)*) = self;
                // SAFETY: the caller guarantees the signature.
                unsafe {
                    let f: extern "C" fn($($a),*) -> R = std::mem::transmute(ptr);
                    f($($a),*)
                }
            }
            #[allow(non_snake_case)]
            unsafe fn call_void(self, ptr: *const u8) {
                let ($($a,)*) = self;
                // SAFETY: the caller guarantees the signature.
                unsafe {
                    let f: extern "C" fn($($a),*) = std::mem::transmute(ptr);
                    f($($a),*)
                }
            }
            #[allow(non_snake_case)]
            unsafe fn call_out(self, ptr: *const u8, out: *mut u8) {
                let ($($a,)*) = self;
                // SAFETY: the caller guarantees the signature and the out buffer.
                unsafe {
                    let f: extern "C" fn(*mut u8, $($a),*) = std::mem::transmute(ptr);
                    f(out, $($a),*)
                }
            }
        }
    };
}

host_args!();
host_args!(A0);
host_args!(A0, A1);
host_args!(A0, A1, A2);
host_args!(A0, A1, A2, A3);
host_args!(A0, A1, A2, A3, A4);
host_args!(A0, A1, A2, A3, A4, A5);
host_args!(A0, A1, A2, A3, A4, A5, A6);
host_args!(A0, A1, A2, A3, A4, A5, A6, A7);

/// Return types a typed handle gives: `()`, one [`HostScalar`], or a tuple of them.
pub trait HostRet: Sized {
    fn fit(types: &[Type]) -> bool;
    /// # Safety
    /// `ptr` must be a wrapper for arguments `A` and this return type.
    unsafe fn call<A: HostArgs>(ptr: *const u8, args: A, types: &[Type]) -> Self;
}

impl HostRet for () {
    fn fit(types: &[Type]) -> bool {
        types.is_empty()
    }
    unsafe fn call<A: HostArgs>(ptr: *const u8, args: A, _: &[Type]) {
        // SAFETY: as the caller guarantees.
        unsafe { args.call_void(ptr) }
    }
}

macro_rules! host_ret_scalar {
    ($($t:ty),*) => {$(
        impl HostRet for $t {
            fn fit(types: &[Type]) -> bool {
                types.len() == 1 && <$t>::fits(types[0])
            }
            unsafe fn call<A: HostArgs>(ptr: *const u8, args: A, _: &[Type]) -> $t {
                // SAFETY: as the caller guarantees.
                unsafe { args.call_ret::<$t>(ptr) }
            }
        }
    )*};
}

host_ret_scalar!(u8, u16, u32, u64, i8, i16, i32, i64, f32, f64);

macro_rules! host_ret_tuple {
    ($($r:ident $k:tt),*) => {
        impl<$($r: HostScalar),*> HostRet for ($($r,)*) {
            fn fit(types: &[Type]) -> bool {
                let want: &[fn(Type) -> bool] = &[$($r::fits),*];
                want.len() == types.len() && want.iter().zip(types).all(|(f, t)| f(*t))
            }
            unsafe fn call<A: HostArgs>(ptr: *const u8, args: A, types: &[Type]) -> Self {
                let mut out = [0u64; 16];
                // SAFETY: as the caller guarantees; the struct of at most 8 scalars fits in
                // 128 bytes.
                unsafe { args.call_out(ptr, out.as_mut_ptr() as *mut u8) };
                let bytes: Vec<u8> = out.iter().flat_map(|w| w.to_le_bytes()).collect();
                let offs = c_struct_offsets(types.iter().map(|t| (t.bytes(), t.bytes())));
                ($($r::read(&bytes[offs[$k]..]),)*)
            }
        }
    };
}

host_ret_tuple!(R0 0, R1 1);
host_ret_tuple!(R0 0, R1 1, R2 2);
host_ret_tuple!(R0 0, R1 1, R2 2, R3 3);

/// A typed handle on a compiled `.func`: `jit.func::<(u32, u32), u32>("add")?.call((1, 2))`.
pub struct Func<'j, A, R> {
    jit: &'j Jit,
    ptr: *const u8,
    ret_types: Vec<Type>,
    _sig: PhantomData<fn(A) -> R>,
}

impl<A: HostArgs, R: HostRet> Func<'_, A, R> {
    /// Calls the function; a fault inside it becomes an error.
    pub fn call(&self, args: A) -> Result<R, RunError> {
        HOST_FAULT.with(|h| h.borrow_mut().take());
        // SAFETY: `Jit::func` checked that the wrapper's C signature is (A...) -> R, and the
        // borrow of the Jit keeps the code alive.
        let r = unsafe { R::call(self.ptr, args, &self.ret_types) };
        match take_fault(self.jit) {
            Some(e) => Err(e),
            None => Ok(r),
        }
    }

    /// The wrapper's raw pointer (see the module docs for its C type).
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr
    }
}

impl Jit {
    /// A typed handle on the `.func` `name`, checked against its PTX signature.
    pub fn func<A: HostArgs, R: HostRet>(&self, name: &str) -> Result<Func<'_, A, R>, RunError> {
        let (id, f) = crate::engine::find_function(&self.module, name, FuncKind::Func)?;
        let params: Vec<Type> = f.params.iter().map(|p| f.param_type(p)).collect();
        let rets: Vec<Type> = f.rets.iter().map(|p| f.param_type(p)).collect();
        let arrays = f
            .params
            .iter()
            .chain(&f.rets)
            .any(|p| f.param_size(p) != f.param_type(p).bytes());
        if arrays || !A::fit(&params) || !R::fit(&rets) {
            return Err(RunError::Usage(format!(
                "`{name}` has parameters ({}) and returns ({}), which the Rust types {} -> {} do not match{}",
                list(&params),
                list(&rets),
                std::any::type_name::<A>(),
                std::any::type_name::<R>(),
                if arrays {
                    " (array parameters: use the raw pointer)"
                } else {
                    ""
                }
            )));
        }
        Ok(Func {
            jit: self,
            ptr: self.hosts[id.0 as usize].expect("every .func with a body has a wrapper")
                as *const u8,
            ret_types: rets,
            _sig: PhantomData,
        })
    }

    /// The raw `extern "C"` pointer of the `.func` `name`'s wrapper (types in the module
    /// docs). It stays valid while this `Jit` lives.
    pub fn raw_func(&self, name: &str) -> Option<*const u8> {
        let (id, _) = crate::engine::find_function(&self.module, name, FuncKind::Func).ok()?;
        self.hosts[id.0 as usize].map(|p| p as *const u8)
    }

    /// The slot wrapper of the `.func` `name`: `extern "C" fn(args: *const u64, rets: *mut
    /// u64)`, each argument in the low bytes of its own 8-byte slot (the value's little-endian
    /// bits, a predicate as 0 or 1), each return value written to the low bytes of its slot
    /// (the slot's other bytes are left as they were). One signature for every function, for
    /// hosts that choose the function at run time; faults are kept as for the typed wrapper
    /// ([`take_fault`]). None for a function with array parameters or returns, or none of
    /// that name. It stays valid while this `Jit` lives.
    pub fn slot_func(&self, name: &str) -> Option<*const u8> {
        let (id, _) = crate::engine::find_function(&self.module, name, FuncKind::Func).ok()?;
        self.slot_hosts[id.0 as usize].map(|p| p as *const u8)
    }
}

fn list(types: &[Type]) -> String {
    types
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
