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
use super::lower::{Lower, Shared, clif, copy_bytes, piece_type, signature};
use super::runtime::{JitArea, ModuleInfo, PendingFault, STATUS_FAULT, ThreadCtx};
use super::{Emit, Jit, compile_error};
use crate::ast::{FuncKind, Function, Type, TypeKind};
use crate::engine::RunError;
use crate::memcheck::AreaMap;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, types};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::JITModule;
use cranelift_module::{FuncId, Linkage, Module as _};
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

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

/// A fresh id for a Jit: what host-call contexts are kept by (never reused, unlike an
/// address).
pub(super) fn new_jit_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Stores zeros over `n` bytes at `ptr + off`, in 8-, 4-, 2- and 1-byte pieces.
fn zero_bytes(b: &mut FunctionBuilder, ptr: ir::Value, off: i32, n: usize) {
    let mut k = 0;
    while k < n {
        let piece = piece_type(n - k);
        let z = b.ins().iconst(piece, 0);
        b.ins()
            .store(MemFlagsData::trusted(), z, ptr, off + k as i32);
        k += piece.bytes() as usize;
    }
}

/// What the module's wrappers are compiled with: the Jit's id and the addresses of its module
/// areas and module info, which live as long as it.
pub(super) struct WrapperModule {
    pub jit_id: u64,
    pub call_areas: u64,
    pub info: u64,
}

/// Defines the wrappers of every `.func` with a body.
///
/// A wrapper asks [`rt_host_enter`] for this thread's context (a thread-local load when the
/// thread's last host call was of the same Jit) and calls the internal function with its
/// argument and return buffers, which are the caller's own memory where their layouts agree:
/// a slot wrapper's argument and return slots are the internal function's buffers (8-byte
/// slots both), and an out struct whose fields lie where the return buffer has them (a single
/// array return, say) is the return buffer, as is a single array parameter's bytes the
/// argument buffer. The internal function zeroes its own frame and registers; the wrapper
/// zeroes nothing unless the call faults (then the results). A function whose code never
/// reads its context (`context_free`) gets none; with scalar parameters and at most one
/// scalar result, its typed wrapper is the function itself, lowered for the C ABI
/// ([`Lower::direct_host_function`]).
pub(super) fn define_wrappers(
    jm: &mut JITModule,
    sh: &Shared,
    context_free: &[bool],
    wm: &WrapperModule,
    emit: Emit,
    listing: &mut Listing,
) -> Result<Wrappers, RunError> {
    let cc = jm.isa().default_call_conv();
    let enter = jm
        .declare_function(
            "rt_host_enter",
            Linkage::Import,
            &signature(cc, &[types::I64, types::I64, types::I64], &[types::I64]),
        )
        .map_err(compile_error)?;
    let fault = jm
        .declare_function(
            "rt_host_fault",
            Linkage::Import,
            &signature(cc, &[types::I64, types::I64, types::I64], &[]),
        )
        .map_err(compile_error)?;
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = jm.make_context();
    ctx.set_disasm(emit == Emit::Asm);
    let mut wrappers = Wrappers {
        typed: Vec::new(),
        slots: Vec::new(),
    };
    let (module, layouts, internal) = (sh.ptx, sh.layouts, sh.internal);
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
            let out = form == Form::Slots || returns_through_pointer(f);
            // Where the caller's out struct (or return slots) has each return value.
            let fields = match form {
                Form::Typed => c_struct_offsets(out_fields(f)),
                Form::Slots => (0..f.rets.len()).map(|k| 8 * k).collect(),
            };
            let slot_offsets: Vec<u32> = (0..f.params.len() as u32).map(|k| 8 * k).collect();
            let direct_args = match form {
                Form::Slots => layout.args == slot_offsets,
                Form::Typed => f.params.len() == 1 && is_array(f, &f.params[0]),
            };
            let direct_rets = out
                && fields.len() == layout.rets.len()
                && fields
                    .iter()
                    .zip(&layout.rets)
                    .all(|(a, b)| *a == *b as usize);
            if form == Form::Typed && context_free[i] && !has_arrays && !out {
                let b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
                Lower::direct_host_function(b, sh, jm, crate::ast::FuncId(i as u32));
            } else {
                let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
                let flags = MemFlagsData::trusted();
                let entry = b.create_block();
                b.append_block_params_for_function_params(entry);
                b.switch_to_block(entry);
                let values = b.block_params(entry).to_vec();
                // The caller's out struct or return slots, if the wrapper has them.
                let out_ptr = out.then(|| match form {
                    Form::Typed => values[0],
                    Form::Slots => values[1],
                });
                // The wrapper's own buffer: the arguments, then the return values, each part
                // only where the caller's memory cannot serve. Not zeroed: the arguments
                // fill the argument part, and the callee writes every return parameter
                // unless it faults, when the results are zeroed below.
                let own_args = if direct_args { 0 } else { layout.args_size };
                let own_rets = if direct_rets { 0 } else { layout.rets_size };
                let slot = (own_args + own_rets > 0).then(|| {
                    b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        (own_args + own_rets).div_ceil(8) * 8,
                        4,
                    ))
                });
                // The buffer's address, taken afresh where it is needed (an `lea`), so that
                // no register has to keep it across a call.
                // (Without a buffer, both parts are empty: the callee reads and writes
                // nothing through them.)
                let buf_at = |b: &mut FunctionBuilder, off: u32| match slot {
                    Some(slot) => b.ins().stack_addr(types::I64, slot, off as i32),
                    None => b.ins().iconst(types::I64, 0),
                };
                // Where the callee writes the return values.
                let rets_at = |b: &mut FunctionBuilder| {
                    if direct_rets {
                        out_ptr.expect("direct returns go through the out pointer")
                    } else {
                        buf_at(b, own_args)
                    }
                };
                let direct_args_buf = direct_args.then(|| match form {
                    Form::Slots => values[0],
                    Form::Typed => values[out as usize],
                });
                if !direct_args {
                    let buf = buf_at(&mut b, 0);
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
                }
                let enter_ref = jm.declare_func_in_func(enter, b.func);
                let fault_ref = jm.declare_func_in_func(fault, b.func);
                let target_ref = jm.declare_func_in_func(target, b.func);
                let tctx = if context_free[i] {
                    b.ins().iconst(types::I64, 0)
                } else {
                    let jit_id = b.ins().iconst(types::I64, wm.jit_id as i64);
                    let areas = b.ins().iconst(types::I64, wm.call_areas as i64);
                    let info = b.ins().iconst(types::I64, wm.info as i64);
                    let call = b.ins().call(enter_ref, &[jit_id, areas, info]);
                    b.inst_results(call)[0]
                };
                let args_buf = match direct_args_buf {
                    Some(v) => v,
                    None => buf_at(&mut b, 0),
                };
                let rets_buf = rets_at(&mut b);
                let call = b.ins().call(target_ref, &[tctx, args_buf, rets_buf]);
                let status = b.inst_results(call)[0];
                let failed = b
                    .ins()
                    .icmp_imm_s(IntCC::Equal, status, STATUS_FAULT as i64);
                let (bad, done) = (b.create_block(), b.create_block());
                b.ins().brif(failed, bad, &[], done, &[]);
                b.set_cold_block(bad);
                b.switch_to_block(bad);
                let jit_id = b.ins().iconst(types::I64, wm.jit_id as i64);
                let areas = b.ins().iconst(types::I64, wm.call_areas as i64);
                let info = b.ins().iconst(types::I64, wm.info as i64);
                b.ins().call(fault_ref, &[jit_id, areas, info]);
                // Zeroed results after a fault.
                let rets_buf = rets_at(&mut b);
                for (p, off) in f.rets.iter().zip(&layout.rets) {
                    zero_bytes(&mut b, rets_buf, *off as i32, f.param_size(p));
                }
                b.ins().jump(done, &[]);
                b.switch_to_block(done);
                let rets_buf = rets_at(&mut b);
                if out {
                    if !direct_rets {
                        for ((p, off), o) in f.rets.iter().zip(&layout.rets).zip(fields) {
                            let n = f.param_size(p);
                            let out_ptr = out_ptr.expect("an out pointer");
                            copy_bytes(&mut b, out_ptr, o as i32, rets_buf, *off as i32, n);
                        }
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
            define(jm, None, &mut ctx, id, &name, &what, emit, listing)?;
            ids.push(Some(id));
        }
    }
    Ok(wrappers)
}

/// How many Jits' host-call contexts a thread keeps (the least recently used goes first).
const KEPT_CONTEXTS: usize = 8;

/// The host-call contexts of one thread: one per Jit it called into lately, by the Jit's
/// [`Jit::id`], most recently used first.
struct HostContexts(Vec<(u64, Box<ThreadCtx>)>);

impl Drop for HostContexts {
    fn drop(&mut self) {
        // The contexts go with the thread: the fast path must not find one any more.
        LAST.set((0, std::ptr::null_mut()));
    }
}

thread_local! {
    /// The Jit id and context of the last host call on this thread: what a call finds
    /// without a search (a `const`, drop-free thread-local is one `%fs`-relative load).
    /// Points into `CONTEXTS` (or, on a thread that is ending, to a leaked context).
    static LAST: Cell<(u64, *mut ThreadCtx)> = const { Cell::new((0, std::ptr::null_mut())) };
    /// The contexts `LAST` is taken from.
    static CONTEXTS: RefCell<HostContexts> = const { RefCell::new(HostContexts(Vec::new())) };
    /// The fault of the last host call on this thread that faulted, with its Jit's id, until
    /// taken.
    static HOST_FAULT: RefCell<Option<(u64, PendingFault)>> = const { RefCell::new(None) };
    /// Whether `HOST_FAULT` holds a fault (read on every typed call: no borrow, no drop).
    static FAULTED: Cell<bool> = const { Cell::new(false) };
}

/// `rt_host_enter(jit, areas, info) -> ctx`: this thread's context for host calls of the Jit
/// whose id is `jit` (module areas `areas`, module info `info`), made on the thread's first
/// call of that Jit and reused by the next ones.
///
/// Between calls a context is as new (no frame registered, depth 0, no fault, the launch
/// fields at their host-call values), so a call uses it as it finds it: every return of a
/// function, a fault or `exit` included, unregisters its frame and restores the depth, and
/// [`rt_host_fault`] clears what a fault leaves. Its recent-area slots stay filled between
/// calls: they only ever hold module variables of that one Jit, which live as long as it
/// (ids are never reused, so a context is never used for another Jit). What PTX requires to
/// start at zero on every call (registers, `.local` and `.param` variables) is the callee's
/// own frame, which it zeroes itself.
///
/// Nothing can use a context twice at once: PTX code cannot call back into the host, so a
/// host call never starts while another host call of the same thread runs.
pub extern "C" fn rt_host_enter(jit: u64, areas: u64, info: u64) -> *mut ThreadCtx {
    let (last, ctx) = LAST.get();
    if last == jit {
        return ctx;
    }
    host_ctx_slow(jit, areas, info)
}

/// The context of a Jit other than the last one called on this thread (`extern "C"` like
/// its caller, so that the call is a jump and the fast path saves no registers).
#[cold]
#[inline(never)]
extern "C" fn host_ctx_slow(jit: u64, areas: u64, info: u64) -> *mut ThreadCtx {
    // SAFETY: the wrapper passes the addresses of its Jit's module areas and module info,
    // which live as long as the Jit, and the wrapper can only run while the Jit lives.
    let (areas, info) = unsafe {
        (
            &*(areas as *const AreaMap<JitArea>),
            &*(info as *const ModuleInfo),
        )
    };
    let kept = CONTEXTS.try_with(|c| {
        let mut c = c.try_borrow_mut().ok()?;
        let list = &mut c.0;
        let entry = match list.iter().position(|(id, _)| *id == jit) {
            Some(k) => list.remove(k),
            None => (jit, Box::new(ThreadCtx::new(areas, info))),
        };
        list.insert(0, entry);
        list.truncate(KEPT_CONTEXTS);
        Some(&mut *list[0].1 as *mut ThreadCtx)
    });
    // A thread whose thread-locals are being destroyed (a host call from another
    // thread-local's destructor) gets a context of its own, left to the end of the process.
    let ctx = kept
        .ok()
        .flatten()
        .unwrap_or_else(|| Box::leak(Box::new(ThreadCtx::new(areas, info))));
    LAST.set((jit, ctx));
    ctx
}

/// This thread's host-call context of `jit`, for `Engine::call`: made as new again when `f`
/// returns (or unwinds), whatever it registered (a shared window) or recorded.
pub(super) fn with_host_ctx<R>(jit: &Jit, f: impl FnOnce(&mut ThreadCtx) -> R) -> R {
    struct Clean(*mut ThreadCtx);
    impl Drop for Clean {
        fn drop(&mut self) {
            // SAFETY: the context `with_host_ctx` handed to `f`, which has returned.
            unsafe { (*self.0).end_call() };
        }
    }
    let ctx = rt_host_enter(
        jit.id,
        &*jit.call_areas as *const AreaMap<JitArea> as u64,
        &*jit.info as *const ModuleInfo as u64,
    );
    let _clean = Clean(ctx);
    // SAFETY: the context is this thread's own for `jit` (see `rt_host_enter`) and nothing
    // else uses it until `f` returns: no host call can start inside `f` on this thread.
    f(unsafe { &mut *ctx })
}

/// `rt_host_fault(jit, areas, info)`: keeps the fault of the host call of the Jit whose id
/// is `jit` that has just ended on this thread for [`take_fault`], and makes its context as
/// new for the next call. (The wrapper passes what it passed [`rt_host_enter`], which finds
/// the same context again, so the wrapper need not keep it across the call.)
pub extern "C" fn rt_host_fault(jit: u64, areas: u64, info: u64) {
    let ctx = rt_host_enter(jit, areas, info);
    // SAFETY: the context of the call that has just ended on this thread (no other host
    // call ran in between to make another Jit's the last one), which nothing else uses now.
    let ctx = unsafe { &mut *ctx };
    let f = ctx.fault.take();
    ctx.clear();
    let kept = HOST_FAULT.try_with(|h| {
        if let Ok(mut h) = h.try_borrow_mut() {
            *h = f.map(|f| (jit, f));
        }
    });
    FAULTED.set(kept.is_ok());
}

/// The fault of the last faulting host call on this thread, if it was a call of `jit`,
/// located in `jit`'s source; taking it clears it.
#[inline]
pub fn take_fault(jit: &Jit) -> Option<RunError> {
    if !FAULTED.get() {
        return None;
    }
    take_kept_fault(jit)
}

#[cold]
#[inline(never)]
fn take_kept_fault(jit: &Jit) -> Option<RunError> {
    let f = HOST_FAULT
        .try_with(|h| {
            let mut h = h.try_borrow_mut().ok()?;
            match &*h {
                Some((id, _)) if *id == jit.id => h.take(),
                _ => None,
            }
        })
        .ok()
        .flatten()?;
    FAULTED.set(false);
    Some(jit.locate(f.1, [0; 3], [0; 3]))
}

/// Forgets the fault a host call of `jit` on this thread left untaken.
#[inline]
fn forget_fault(jit: &Jit) {
    if FAULTED.get() {
        drop(take_kept_fault(jit));
    }
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
    /// Whether the function's code can record a fault (see `compile::Defined`): the
    /// calls of one that cannot skip looking for one.
    may_fault: bool,
    _sig: PhantomData<fn(A) -> R>,
}

impl<A: HostArgs, R: HostRet> Func<'_, A, R> {
    /// Calls the function; a fault inside it becomes an error.
    pub fn call(&self, args: A) -> Result<R, RunError> {
        // SAFETY (both calls): `Jit::func` checked that the wrapper's C signature is
        // (A...) -> R, and the borrow of the Jit keeps the code alive.
        if !self.may_fault {
            return Ok(unsafe { R::call(self.ptr, args, &self.ret_types) });
        }
        forget_fault(self.jit);
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
            may_fault: !self.context_free[id.0 as usize],
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
