//! The lowering from the typed AST to Cranelift IR: one function at a time, one instruction
//! at a time. This file holds what ties the families together — registers as
//! `FunctionBuilder` variables, operands, guards, control flow, calls, frames and the kernel's
//! loop over the threads of a block. The families sit beside it, mirroring the interpreter:
//! [`int`] (9.7.1, 9.7.2, 9.7.8), [`float`] (9.7.3), [`convert`] (9.7.7, 9.7.9.21),
//! [`memory`] (9.7.9), [`video`] (9.7.18.1).

mod atomic;
mod bits;
mod bounded;
mod convert;
mod float;
mod fold;
mod int;
mod lanes;
mod liveness;
mod memory;
mod pieces;
mod rows;
mod stretches;
mod strided;
pub(super) mod sync;
mod video;

use convert::{float_cc, int_cc};
pub(super) use fold::{eval_cc, mask_of, signed};
pub use lanes::rounds::{
    GROUP_ENDED, GROUP_FAULT, GROUP_HANDOVER, GROUP_MIXED, GROUP_ONLY_COLLECTIVES, GroupPlan, Home,
    group_signature, lower_group,
};
pub use lanes::{LANES, Refused};

use super::layout::FrameLayout;
use super::runtime::{self, STATUS_EXIT, STATUS_FAULT, STATUS_OK, Site, ThreadCtx};
use crate::ast::{self, FuncId, FuncKind, Function, Inst, Operand, Param, SpecialRegKind, Type};
use crate::block::SharedLayout;
use crate::engine::MAX_CALL_DEPTH;
use cranelift_codegen::ir::immediates::{Ieee32, Ieee64};
use cranelift_codegen::ir::{
    self, AbiParam, Block, FuncRef, InstBuilder, MemFlagsData, Signature, StackSlotData,
    StackSlotKind, Value, types,
};
use cranelift_codegen::isa::CallConv;
use cranelift_frontend::{FunctionBuilder, Variable};
use cranelift_jit::JITModule;
use cranelift_module::{Linkage, Module as _};
use std::collections::HashMap;
use std::mem::offset_of;

/// Frames up to this size are zeroed by straight-line stores, bigger ones by a loop.
const UNROLLED_ZEROING: u32 = 256;

/// The runtime helpers generated code may call: name, parameter types, result types.
pub const HELPERS: &[(&str, &[ir::Type], &[ir::Type])] = {
    use types::{I32, I64};
    &[
        ("rt_check", &[I64, I64, I32, I64], &[I32]),
        ("rt_probe", &[I64, I64, I64, I32], &[I32]),
        ("rt_probe_access", &[I64, I64, I64, I32], &[I32]),
        ("rt_isspacep", &[I64, I64, I32], &[I32]),
        ("rt_enter", &[I64, I32, I64], &[]),
        ("rt_leave", &[I64, I32], &[]),
        ("rt_warp", &[I64, I64, I64], &[I32]),
        ("rt_fault", &[I64, I64, I32, I32], &[]),
        ("rt_call_failed", &[I64, I64, I32], &[]),
        ("rt_arith", &[I32, I64, I64], &[I64]),
        ("rt_arith_hw", &[I32, I64, I64], &[I64]),
        ("rt_fma_hw", &[I32, I64, I64, I64], &[I64]),
        ("rt_sqrt_hw", &[I32, I64], &[I64]),
        ("rt_fma", &[I32, I64, I64, I64], &[I64]),
        ("rt_unary", &[I32, I64], &[I64]),
        ("rt_approx_ftz_f64", &[I32, I64], &[I64]),
        ("rt_from_int", &[I32, I64, I32], &[I64]),
        ("rt_to_int", &[I32, I64, I32], &[I64]),
        ("rt_convert", &[I32, I64], &[I64]),
        ("rt_round_integral", &[I32, I64], &[I64]),
        ("rt_fns", &[I32, I32, I32], &[I32]),
        ("rt_half", &[I64, I64, I64, I64], &[I64]),
        ("rt_clock", &[I32], &[I64]),
    ]
};

/// Helpers called only where a fast test failed (cold blocks). Generated code calls each
/// through a trampoline of Cranelift's `preserve_all` convention (`out, args...` → nothing;
/// see `compile::define_cold_trampolines`), which saves every register it uses and writes
/// the helper's result to `out`: a call that clobbers nothing lets the values live across
/// it (an accumulator, a loop's addresses) stay in registers on the fast path too, where a
/// call of the host's convention would make the register allocator keep them in the frame.
pub const COLD_HELPERS: &[&str] = &["rt_check", "rt_arith_hw", "rt_fma_hw", "rt_probe_access"];

/// The name of a cold helper's trampoline (see [`COLD_HELPERS`]).
pub fn cold_name(helper: &str) -> String {
    format!("{helper}.cold")
}

/// A helper's parameter and result types (see [`HELPERS`]).
fn helper_types(name: &str) -> (&'static [ir::Type], &'static [ir::Type]) {
    let (_, params, rets) = HELPERS
        .iter()
        .find(|h| h.0 == name)
        .expect("a runtime helper");
    (params, rets)
}

/// The signature of a cold helper's trampoline (see [`COLD_HELPERS`]).
pub fn cold_signature(name: &str) -> Signature {
    let (params, _) = helper_types(name);
    let mut with_out = vec![types::I64];
    with_out.extend_from_slice(params);
    signature(CallConv::PreserveAll, &with_out, &[])
}

/// A signature in the host's calling convention.
pub fn signature(cc: CallConv, params: &[ir::Type], rets: &[ir::Type]) -> Signature {
    let mut s = Signature::new(cc);
    s.params.extend(params.iter().map(|t| AbiParam::new(*t)));
    s.returns.extend(rets.iter().map(|t| AbiParam::new(*t)));
    s
}

/// Internal functions: `.func` is `(ctx, args, rets) -> status`, `.entry` is
/// `(ctx) -> status` and runs a whole block.
pub fn internal_signature(cc: CallConv, kind: FuncKind) -> Signature {
    match kind {
        FuncKind::Func => signature(cc, &[types::I64; 3], &[types::I32]),
        FuncKind::Entry => signature(cc, &[types::I64], &[types::I32]),
    }
}

/// The Cranelift type holding a PTX type: floats as floats, integers and predicates as
/// integers of their width (a predicate is an i8 holding 0 or 1).
pub fn clif(ty: Type) -> ir::Type {
    match ty {
        Type::F32 => types::F32,
        Type::F64 => types::F64,
        t => int_type(t.bits()),
    }
}

/// The widest integer type (8, 4, 2 or 1 bytes) that fits in `remaining` bytes: the pieces
/// a byte copy or fill moves.
pub fn piece_type(remaining: usize) -> ir::Type {
    match remaining {
        8.. => types::I64,
        4..=7 => types::I32,
        2..=3 => types::I16,
        _ => types::I8,
    }
}

/// The integer type of a width (predicates: i8).
pub fn int_type(bits: u32) -> ir::Type {
    match bits {
        0..=8 => types::I8,
        16 => types::I16,
        32 => types::I32,
        _ => types::I64,
    }
}

/// Copies `n` bytes from `src + src_off` to `dst + dst_off` in 8-, 4-, 2- and 1-byte pieces
/// (x86 allows the unaligned accesses; both areas are always valid).
pub fn copy_bytes(
    b: &mut FunctionBuilder,
    dst: Value,
    dst_off: i32,
    src: Value,
    src_off: i32,
    n: usize,
) {
    let mut k = 0;
    while k < n {
        let piece = piece_type(n - k);
        let v = b.ins().load(piece, trusted(), src, src_off + k as i32);
        b.ins().store(trusted(), v, dst, dst_off + k as i32);
        k += piece.bytes() as usize;
    }
}

/// Everything the lowering of one module's functions shares.
pub struct Shared<'a> {
    pub ptx: &'a ast::Module,
    pub layouts: &'a [FrameLayout],
    /// The internal function of each PTX function (None for prototypes).
    pub internal: &'a [Option<cranelift_module::FuncId>],
    pub helpers: &'a HashMap<&'static str, cranelift_module::FuncId>,
    /// Address of each module variable.
    pub module_vars: &'a [u64],
    pub checked: bool,
    /// Whether functions register their frames' variables with the thread's context: in
    /// checked mode, and for `isspacep` (which must know `.local` addresses) in any mode.
    pub frames_known: bool,
    /// Directed add/sub/mul/div/sqrt on the host's hardware (else soft-float).
    pub hw_arith: bool,
    /// Directed fma on the host's FMA unit (else soft-float).
    pub hw_fma: bool,
    /// The lanes function of each kernel that has one (see [`lanes`]).
    pub lanes: &'a [Option<cranelift_module::FuncId>],
    /// Where `.shared` variables lie in a block's window.
    pub shared_layout: &'a SharedLayout,
    /// Which functions are kernels with barriers or warp collectives (compiled as step
    /// functions, see [`sync`]).
    pub cooperative: &'a [bool],
}

/// The signature of a kernel's lanes function: `(ctx, x, y, z) -> x'`.
pub fn lanes_signature(cc: CallConv) -> Signature {
    signature(
        cc,
        &[types::I64, types::I32, types::I32, types::I32],
        &[types::I32],
    )
}

/// Special registers a kernel reads once per block.
struct KernelDims {
    tid: [Variable; 3],
    ntid: [Value; 3],
    ctaid: [Value; 3],
    nctaid: [Value; 3],
}

/// The lowering of one function.
pub struct Lower<'a, 'f> {
    pub b: FunctionBuilder<'f>,
    sh: &'a Shared<'a>,
    jm: &'a mut JITModule,
    fid: u32,
    f: &'a Function,
    layout: &'a FrameLayout,
    regs: Vec<Variable>,
    /// CC.CF (PTX ISA 9.7.2), an i64 holding 0 or 1 (the width carry arithmetic uses, so
    /// it never needs narrowing or extending).
    cf: Variable,
    ctx: Value,
    frame: Value,
    kernel_params: Option<Value>,
    dims: Option<KernelDims>,
    /// Where a fault goes, where `ret` goes, where `exit` goes.
    fail: Block,
    ret: Block,
    exit: Block,
    call_buf: Option<ir::StackSlot>,
    site: u64,
    /// Index of the instruction being lowered.
    at: usize,
    /// Runs of accesses that share one check, and recent-area slots (checked mode).
    checks: memory::CheckPlan,
    /// Loops whose accesses are tested once for many iterations (checked mode), and the
    /// version of one being lowered: (loop, whether its iterations are proved).
    loops: Vec<strided::LoopBudget>,
    version: Option<(usize, bool)>,
    /// In a proved version: the loop-invariant registers it reads, as copied on entry.
    proved_copies: HashMap<ast::RegId, Value>,
    /// The stretch of straight-line code whose runs were tested together, while its proved
    /// copy is lowered, and whether its tested copy is being lowered (see [`stretches`]).
    stretch: Option<stretches::OpenStretch>,
    tested_copy: bool,
    refs: HashMap<&'static str, FuncRef>,
    cold_refs: HashMap<&'static str, FuncRef>,
    /// Where cold helpers' trampolines write their results.
    cold_out: Option<ir::StackSlot>,
    callees: HashMap<u32, FuncRef>,
    /// In a round function (a kernel with sync points, see [`sync`]): the running thread's state
    /// and the resume points lowered so far.
    step: Option<sync::Step>,
    /// Narrow integer values whose zero extension to i64 is already in a register (the
    /// limbs of 32-bit carry sums, 32-bit loads): the carry arithmetic works one width up,
    /// and asking for the extension again would cost a `movl` each time (see
    /// [`Lower::uextend`]).
    zext: HashMap<Value, Value>,
    /// A kernel's loads of its own parameters, made once per block before the thread loop
    /// (parameters are read-only): the value of each part, by instruction index.
    hoisted: HashMap<usize, Vec<Value>>,
    /// By instruction index: float arithmetic whose NaN result needs no canonical form
    /// (see [`float::nan`]).
    nan: float::nan::NanPlan,
    /// The variables kept in registers (`layout::in_registers`): an integer of each
    /// piece's width, holding its bits (see [`pieces`]).
    var_regs: Vec<Option<Vec<(crate::jit::layout::Piece, Variable)>>>,
    /// Pairs of product rows lowered as one chain (see [`rows`]), the limb pairs those
    /// chains keep packed in 64 bits, by their two 32-bit values (each made just before
    /// the two, so it dominates wherever they are read), and the factor pairs packed in a
    /// block, valid in the blocks it is known to dominate.
    rows: rows::Rows,
    packed: HashMap<(Value, Value), Value>,
    packed_here: HashMap<(Value, Value), (Block, Value)>,
    /// Blocks that checks and guards continue in, each with the block it began in, which
    /// dominates it (see [`Lower::note_dominated`]).
    dominated_by: HashMap<Block, Block>,
}

/// Memory flags of ordinary accesses (may trap only in unchecked mode).
fn flags() -> MemFlagsData {
    MemFlagsData::new()
}

/// Memory flags of accesses to the context and frame, which are always valid.
fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl<'a, 'f> Lower<'a, 'f> {
    /// Lowers the PTX function `fid` into `b`.
    pub fn function(
        b: FunctionBuilder<'f>,
        sh: &'a Shared<'a>,
        jm: &'a mut JITModule,
        fid: FuncId,
    ) {
        let (mut l, entry) = Lower::new(b, sh, jm, fid);
        match l.f.kind {
            FuncKind::Func => l.func_body(entry),
            FuncKind::Entry if sh.cooperative[fid.0 as usize] => l.round_body(),
            FuncKind::Entry => l.kernel_body(),
        }
        l.seal_and_finalize();
    }

    /// Seals every block and finalizes the function (its code is complete).
    fn seal_and_finalize(mut self) {
        self.b.seal_all_blocks();
        let cfg = self.jm.isa().frontend_config();
        self.b.finalize(cfg);
    }

    /// The lowering state of function `fid`, positioned in its entry block (which has the
    /// function's parameters; the first is the context).
    fn new(
        b: FunctionBuilder<'f>,
        sh: &'a Shared<'a>,
        jm: &'a mut JITModule,
        fid: FuncId,
    ) -> (Self, Block) {
        Self::new_with(b, sh, jm, fid, true)
    }

    /// As [`Lower::new`]; without `context` the function's parameters are its own (a
    /// [direct host function](Lower::direct_host_function)) and the context is null.
    fn new_with(
        b: FunctionBuilder<'f>,
        sh: &'a Shared<'a>,
        jm: &'a mut JITModule,
        fid: FuncId,
        context: bool,
    ) -> (Self, Block) {
        let f = sh.ptx.func(fid);
        let layout = &sh.layouts[fid.0 as usize];
        let mut b = b;
        let regs: Vec<Variable> = f.regs.iter().map(|r| b.declare_var(clif(r.ty))).collect();
        let var_regs = pieces::declare(&mut b, &layout.in_registers);
        let cf = b.declare_var(types::I64);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let ctx = if context {
            b.block_params(entry)[0]
        } else {
            b.ins().iconst(types::I64, 0)
        };
        let call_buf = (layout.call_buf > 0).then(|| {
            b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                layout.call_buf,
                4,
            ))
        });
        // A round function's frames are in the threads' state areas (see `sync.rs`).
        let frame = if layout.frame_size > 0 && !sh.cooperative[fid.0 as usize] {
            let slot = b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                layout.frame_size,
                4,
            ));
            b.ins().stack_addr(types::I64, slot, 0)
        } else {
            b.ins().iconst(types::I64, 0)
        };
        let (fail, ret, exit) = (b.create_block(), b.create_block(), b.create_block());
        let mut l = Lower {
            b,
            sh,
            jm,
            fid: fid.0,
            f,
            layout,
            regs,
            cf,
            ctx,
            frame,
            kernel_params: None,
            dims: None,
            fail,
            ret,
            exit,
            call_buf,
            site: 0,
            at: 0,
            loops: Vec::new(),
            proved_copies: HashMap::new(),
            stretch: None,
            tested_copy: false,
            version: None,
            checks: if sh.checked {
                memory::CheckPlan::of(f)
            } else {
                memory::CheckPlan::default()
            },
            refs: HashMap::new(),
            cold_refs: HashMap::new(),
            cold_out: None,
            callees: HashMap::new(),
            zext: HashMap::new(),
            hoisted: HashMap::new(),
            nan: float::nan::plan(f),
            step: None,
            var_regs,
            rows: rows::plan(f),
            packed: HashMap::new(),
            packed_here: HashMap::new(),
            dominated_by: HashMap::new(),
        };
        l.loops = l.loop_budgets();
        (l, entry)
    }

    // ---- function shapes -----------------------------------------------------------------

    /// A `.func`: parameters in, body, return parameters out.
    fn func_body(&mut self, entry: Block) {
        let (args, rets) = (self.b.block_params(entry)[1], self.b.block_params(entry)[2]);
        self.start_thread_state();
        for (k, p) in self.f.params.iter().enumerate() {
            let off = self.layout.args[k] as i32;
            match p {
                Param::Mem(ast::VarId::Function(i)) if self.in_registers(*i) => {
                    self.load_pieces(*i, args, off);
                }
                Param::Mem(ast::VarId::Function(i)) => {
                    let dst = self.frame_var(*i);
                    let n = self.f.var(*i).size;
                    copy_bytes(&mut self.b, dst, 0, args, off, n);
                }
                Param::Reg(r) => {
                    let ty = self.f.reg(*r).ty;
                    let v = self.load_value(clif(ty), trusted(), args, off);
                    self.b.def_var(self.regs[r.0 as usize], v);
                }
                Param::Mem(ast::VarId::Module(_)) => unreachable!("parameters are function vars"),
            }
        }
        self.enter_frame();
        self.body();
        let ret = self.ret;
        self.b.ins().jump(ret, &[]);

        self.b.switch_to_block(ret);
        self.store_rets(rets);
        self.leave_and_return(STATUS_OK);
        // After `exit` the return parameters hold what the function wrote before it (a host
        // call returns them, as the interpreter does; a PTX caller ends too and ignores them).
        let (exit, fail) = (self.exit, self.fail);
        self.b.switch_to_block(exit);
        self.store_rets(rets);
        self.leave_and_return(STATUS_EXIT);
        self.b.switch_to_block(fail);
        self.leave_and_return(STATUS_FAULT);
    }

    /// A `.func` whose code never reads its context (see `compile::Defined`) with scalar
    /// parameters and at most one scalar result, as a function of the host's C ABI: the
    /// arguments are its parameters, the result its return value, and nothing passes
    /// through memory (parameters in registers stay there). It is the function's host
    /// wrapper: a host call of it costs what a native call costs.
    pub fn direct_host_function(
        b: FunctionBuilder<'f>,
        sh: &'a Shared<'a>,
        jm: &'a mut JITModule,
        fid: FuncId,
    ) {
        let (mut l, entry) = Lower::new_with(b, sh, jm, fid, false);
        let args = l.b.block_params(entry).to_vec();
        l.start_thread_state();
        for (p, v) in l.f.params.iter().zip(args) {
            match p {
                Param::Reg(r) => l.b.def_var(l.regs[r.0 as usize], v),
                Param::Mem(ast::VarId::Function(i)) => match l.in_registers(*i) {
                    true => {
                        let bits = l.int_bits(l.f.var(*i).ty, v);
                        l.pieces_of_bits(*i, bits);
                    }
                    false => {
                        let at = l.frame_var(*i);
                        l.b.ins().store(trusted(), v, at, 0);
                    }
                },
                Param::Mem(ast::VarId::Module(_)) => unreachable!("parameters are function vars"),
            }
        }
        l.body();
        let (ret, exit, fail) = (l.ret, l.exit, l.fail);
        l.b.ins().jump(ret, &[]);
        // `ret` and `exit` both give back what the return parameter holds.
        let done = l.b.create_block();
        let rty = l.f.rets.first().map(|p| l.f.param_type(p));
        if let Some(t) = rty {
            l.b.append_block_param(done, clif(t));
        }
        for blk in [ret, exit] {
            l.b.switch_to_block(blk);
            let result: Vec<ir::BlockArg> = match l.f.rets.first() {
                Some(Param::Reg(r)) => vec![l.b.use_var(l.regs[r.0 as usize]).into()],
                Some(Param::Mem(ast::VarId::Function(i))) => {
                    let pty = l.f.var(*i).ty;
                    let v = match l.in_registers(*i) {
                        true => {
                            let bits = l.bits_of_pieces(*i);
                            l.of_int_bits(pty, bits)
                        }
                        false => {
                            let at = l.frame_var(*i);
                            l.load_value(clif(pty), trusted(), at, 0)
                        }
                    };
                    vec![v.into()]
                }
                Some(Param::Mem(ast::VarId::Module(_))) => {
                    unreachable!("parameters are function vars")
                }
                None => Vec::new(),
            };
            l.b.ins().jump(done, &result);
        }
        // Nothing reaches the fault block of a function that never reads its context (every
        // fault is recorded there first); it returns zero all the same.
        l.b.switch_to_block(fail);
        let zero: Vec<Value> = rty.map(|t| l.zero(t)).into_iter().collect();
        l.b.ins().return_(&zero);
        l.b.switch_to_block(done);
        let result = l.b.block_params(done).to_vec();
        l.b.ins().return_(&result);
        l.seal_and_finalize();
    }

    /// Copies the return parameters into the caller's return buffer.
    fn store_rets(&mut self, rets: Value) {
        for (k, p) in self.f.rets.iter().enumerate() {
            let off = self.layout.rets[k] as i32;
            match p {
                Param::Mem(ast::VarId::Function(i)) if self.in_registers(*i) => {
                    self.store_pieces(*i, rets, off);
                }
                Param::Mem(ast::VarId::Function(i)) => {
                    let src = self.frame_var(*i);
                    let n = self.f.var(*i).size;
                    copy_bytes(&mut self.b, rets, off, src, 0, n);
                }
                Param::Reg(r) => {
                    let v = self.b.use_var(self.regs[r.0 as usize]);
                    self.b.ins().store(trusted(), v, rets, off);
                }
                Param::Mem(ast::VarId::Module(_)) => unreachable!("parameters are function vars"),
            }
        }
    }

    /// Loads a kernel's launch dimensions and parameter block from the context and declares
    /// the `%tid` variables, starting at 0.
    fn kernel_dims(&mut self) {
        let ctx = self.ctx;
        let load3 = |l: &mut Self, off: usize| -> [Value; 3] {
            [0, 1, 2].map(|k| {
                l.b.ins()
                    .load(types::I32, trusted(), ctx, (off + 4 * k) as i32)
            })
        };
        let ntid = load3(self, offset_of!(ThreadCtx, ntid));
        let ctaid = load3(self, offset_of!(ThreadCtx, ctaid));
        let nctaid = load3(self, offset_of!(ThreadCtx, nctaid));
        let params = self.b.ins().load(
            types::I64,
            trusted(),
            ctx,
            offset_of!(ThreadCtx, params) as i32,
        );
        self.kernel_params = Some(params);
        let tid = [0; 3].map(|_| self.b.declare_var(types::I32));
        let zero = self.b.ins().iconst(types::I32, 0);
        for t in tid {
            self.b.def_var(t, zero);
        }
        self.dims = Some(KernelDims {
            tid,
            ntid,
            ctaid,
            nctaid,
        });
    }

    /// An `.entry`: loops over the threads of the block (x fastest), running the body for
    /// each with fresh registers, frame and CC.CF. A kernel with a lanes function hands each
    /// row to it first; the threads it hands back (a group it would not run, or fewer than a
    /// group at the row's end) run here, and then the rest of the row goes back to it, up to
    /// its second hand-back in the row.
    fn kernel_body(&mut self) {
        let ctx = self.ctx;
        self.kernel_dims();
        self.hoist_param_loads();
        let (tid, ntid) = {
            let d = self.dims.as_ref().expect("kernel_dims sets them");
            (d.tid, d.ntid)
        };
        let zero = self.b.ins().iconst(types::I32, 0);
        // Threads of the row below `until` run here before the lanes function is called again;
        // `handed` counts the groups it handed back in this row: after two, the rest of the
        // row stays here (a kernel whose groups overlap in memory would otherwise run each
        // group twice, once in lanes up to the gate and once here).
        let until = self.b.declare_var(types::I32);
        self.b.def_var(until, zero);
        let handed = self.b.declare_var(types::I32);
        self.b.def_var(handed, zero);
        self.enter_frame();
        let thread = self.b.create_block();
        let carry = [(); 3].map(|_| self.b.create_block());
        self.b.ins().jump(thread, &[]);

        self.b.switch_to_block(thread);
        if let Some(id) = self.sh.lanes[self.fid as usize] {
            let (try_lanes, handed_back, scalar) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            let x = self.b.use_var(tid[0]);
            let u = self.b.use_var(until);
            let ready = self
                .b
                .ins()
                .icmp(ir::condcodes::IntCC::UnsignedGreaterThanOrEqual, x, u);
            self.b.ins().brif(ready, try_lanes, &[], scalar, &[]);
            self.b.switch_to_block(try_lanes);
            let f = self.jm.declare_func_in_func(id, self.b.func);
            let (y, z) = (self.b.use_var(tid[1]), self.b.use_var(tid[2]));
            let call = self.b.ins().call(f, &[ctx, x, y, z]);
            let stopped = self.b.inst_results(call)[0];
            let row_done = self.b.ins().icmp(
                ir::condcodes::IntCC::UnsignedGreaterThanOrEqual,
                stopped,
                ntid[0],
            );
            self.b.ins().brif(row_done, carry[0], &[], handed_back, &[]);
            self.b.switch_to_block(handed_back);
            self.b.def_var(tid[0], stopped);
            let h = self.b.use_var(handed);
            let h = self.b.ins().iadd_imm_s(h, 1);
            self.b.def_var(handed, h);
            let next_try = self.b.ins().iadd_imm_s(stopped, LANES as i64);
            let give_up =
                self.b
                    .ins()
                    .icmp_imm_s(ir::condcodes::IntCC::UnsignedGreaterThanOrEqual, h, 2);
            let never = self.b.ins().iconst(types::I32, u32::MAX as i64);
            let next_try = self.b.ins().select(give_up, never, next_try);
            self.b.def_var(until, next_try);
            self.b.ins().jump(scalar, &[]);
            self.b.switch_to_block(scalar);
        }
        for (k, t) in tid.iter().enumerate() {
            let v = self.b.use_var(*t);
            self.b.ins().store(
                trusted(),
                v,
                ctx,
                (offset_of!(ThreadCtx, tid) + 4 * k) as i32,
            );
        }
        self.start_thread_state();
        self.body();
        let next = self.ret;
        self.b.ins().jump(next, &[]);
        let exit = self.exit;
        self.b.switch_to_block(exit);
        self.b.ins().jump(next, &[]);

        // Next thread: x, then y, then z.
        self.b.switch_to_block(next);
        for k in 0..3 {
            let t = self.b.use_var(tid[k]);
            let t1 = self.b.ins().iadd_imm_s(t, 1);
            let more = self
                .b
                .ins()
                .icmp(ir::condcodes::IntCC::UnsignedLessThan, t1, ntid[k]);
            let go = self.b.create_block();
            self.b.ins().brif(more, go, &[], carry[k], &[]);
            self.b.switch_to_block(go);
            self.b.def_var(tid[k], t1);
            self.b.ins().jump(thread, &[]);
            self.b.switch_to_block(carry[k]);
            self.b.def_var(tid[k], zero);
            if k == 0 {
                self.b.def_var(until, zero);
                self.b.def_var(handed, zero);
            }
        }
        let ok = self.b.ins().iconst(types::I32, STATUS_OK as i64);
        self.b.ins().return_(&[ok]);
        let fail = self.fail;
        self.b.switch_to_block(fail);
        let st = self.b.ins().iconst(types::I32, STATUS_FAULT as i64);
        self.b.ins().return_(&[st]);
    }

    /// Loads, in the block's entry (before the thread loop), every kernel parameter the body
    /// reads with a plain `ld` at a constant offset inside it; [`Lower::memory`] then uses
    /// the loaded value instead of loading again for every thread. Kernel parameters are
    /// read-only (the front end refuses stores to them, checked mode refuses writes), so the
    /// value is the same for every thread of the launch; an access that checked mode would
    /// have to check is left where it is.
    fn hoist_param_loads(&mut self) {
        /// At most this many loads (each keeps a register, or a stack slot, for the block).
        const MAX_HOISTED: usize = 16;
        let Some(params) = self.kernel_params else {
            return;
        };
        let body = self
            .f
            .body
            .as_ref()
            .expect("compiled functions have bodies");
        let mut seen: HashMap<(i64, Type, u8, u32), Vec<Value>> = HashMap::new();
        for (i, ins) in body.iter().enumerate() {
            let Inst::Ld {
                space,
                order: ast::MemOrder::Weak,
                vec,
                ty,
                addr,
                ..
            } = &ins.inst
            else {
                continue;
            };
            let ast::AddrBase::Var(v @ ast::VarId::Function(fv)) = addr.base else {
                continue;
            };
            if !matches!(self.f.var(fv).role, ast::VarRole::Param(_))
                || !matches!(space, None | Some(ast::Space::Param))
            {
                continue;
            }
            let n = ty.bytes();
            if !self.known_safe(addr, n * *vec as usize, *space, false) {
                continue;
            }
            let (_, base_off) = self.var_base(v);
            let off = base_off + addr.offset;
            let key = (off, *ty, *vec, fv);
            if let Some(values) = seen.get(&key) {
                self.hoisted.insert(i, values.clone());
                continue;
            }
            if seen.len() == MAX_HOISTED {
                break;
            }
            let values: Vec<Value> = (0..*vec as usize)
                .map(|k| {
                    self.load_value(clif(*ty), trusted(), params, (off + (k * n) as i64) as i32)
                })
                .collect();
            seen.insert(key, values.clone());
            self.hoisted.insert(i, values);
        }
    }

    /// Registers and CC.CF start at 0, the frame zeroed (PTX leaves them undefined; both
    /// engines define them so).
    fn start_thread_state(&mut self) {
        let zero64 = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(self.cf, zero64);
        for (k, r) in self.f.regs.iter().enumerate() {
            let z = self.zero(r.ty);
            self.b.def_var(self.regs[k], z);
        }
        self.checks.forget_proofs(&mut self.b);
        for k in 0..self.var_regs.len() {
            self.zero_pieces(k as u32);
        }
        // Variables start zeroed, except a `.func`'s parameters, which the arguments fill.
        let mut from = 0;
        for (start, end) in self.copied_params() {
            self.zero_frame(from, start);
            from = end;
        }
        self.zero_frame(from, self.layout.frame_size);
    }

    /// The 8-byte-aligned frame ranges that copying a `.func`'s parameters in overwrites
    /// whole, in frame order.
    fn copied_params(&self) -> Vec<(u32, u32)> {
        if self.f.kind != FuncKind::Func {
            return Vec::new();
        }
        let mut ranges: Vec<(u32, u32)> = self
            .f
            .params
            .iter()
            .filter_map(|p| match p {
                Param::Mem(ast::VarId::Function(i))
                    if self.layout.in_registers[*i as usize].is_none() =>
                {
                    let start = self.layout.vars[*i as usize];
                    let end = start + self.f.var(*i).size as u32 / 8 * 8;
                    (end > start).then_some((start, end))
                }
                _ => None,
            })
            .collect();
        ranges.sort_unstable();
        ranges
    }

    /// Zeroes frame bytes `from..to` (multiples of 8): unrolled for small ranges, else a
    /// loop of 16 bytes an iteration and a last 8 if needed.
    fn zero_frame(&mut self, from: u32, to: u32) {
        if to <= from {
            return;
        }
        let z = self.b.ins().iconst(types::I64, 0);
        if to - from <= UNROLLED_ZEROING {
            for off in (from..to).step_by(8) {
                self.b.ins().store(trusted(), z, self.frame, off as i32);
            }
            return;
        }
        let pairs_end = from + (to - from) / 16 * 16;
        let at = self.b.declare_var(types::I64);
        let start = self.b.ins().iconst(types::I64, from as i64);
        self.b.def_var(at, start);
        let (body, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().jump(body, &[]);
        self.b.switch_to_block(body);
        let off = self.b.use_var(at);
        let p = self.b.ins().iadd(self.frame, off);
        self.b.ins().store(trusted(), z, p, 0);
        self.b.ins().store(trusted(), z, p, 8);
        let next = self.b.ins().iadd_imm_s(off, 16);
        self.b.def_var(at, next);
        let more = self.b.ins().icmp_imm_s(
            ir::condcodes::IntCC::UnsignedLessThan,
            next,
            pairs_end as i64,
        );
        self.b.ins().brif(more, body, &[], done, &[]);
        self.b.switch_to_block(done);
        if pairs_end < to {
            self.b
                .ins()
                .store(trusted(), z, self.frame, pairs_end as i32);
        }
    }

    fn enter_frame(&mut self) {
        if self.sh.frames_known && self.layout.has_vars() {
            let fid = self.b.ins().iconst(types::I32, self.fid as i64);
            let (ctx, frame) = (self.ctx, self.frame);
            self.helper("rt_enter", &[ctx, fid, frame]);
        }
    }

    fn leave_and_return(&mut self, status: i32) {
        if self.sh.frames_known && self.layout.has_vars() {
            let fid = self.b.ins().iconst(types::I32, self.fid as i64);
            let ctx = self.ctx;
            self.helper("rt_leave", &[ctx, fid]);
        }
        let st = self.b.ins().iconst(types::I32, status as i64);
        self.b.ins().return_(&[st]);
    }

    /// The instructions, with labels as blocks and guards as branches around them.
    fn body(&mut self) {
        let body = self
            .f
            .body
            .as_ref()
            .expect("compiled functions have bodies");
        let mut at: HashMap<usize, Block> = HashMap::new();
        for &target in &self.f.labels {
            at.entry(target).or_insert_with(|| self.b.create_block());
        }
        let labels: Vec<Block> = self.f.labels.iter().map(|t| at[t]).collect();
        let mut i = 0;
        while i < body.len() {
            self.stretch_end(i, &labels);
            if let Some(&blk) = at.get(&i) {
                self.strided_entry(i.wrapping_sub(1), i);
                self.b.ins().jump(blk, &[]);
                self.b.switch_to_block(blk);
            }
            // A strided loop: its body twice, tested and proved (see `strided`).
            if let Some(k) = self.loops.iter().position(|l| l.shape.head == i) {
                let back = self.loops[k].shape.back;
                let (versions, after) = self.strided_head(k);
                for (start, proved) in versions {
                    self.strided_version(k, start, proved);
                    for (j, ins) in body.iter().enumerate().take(back + 1).skip(i) {
                        self.instruction(j, ins, &labels);
                    }
                    self.strided_version_end();
                    self.b.ins().jump(after, &[]);
                }
                self.b.switch_to_block(after);
                i = back + 1;
                continue;
            }
            self.stretch_start(i);
            self.instruction(i, &body[i], &labels);
            i += 1;
        }
        self.stretch_end(body.len(), &labels);
        if let Some(&blk) = at.get(&body.len()) {
            self.b.ins().jump(blk, &[]);
            self.b.switch_to_block(blk);
        }
    }

    /// Instruction `i` of the body, with what comes before it in checked mode.
    fn instruction(&mut self, i: usize, ins: &ast::Instruction, labels: &[Block]) {
        self.site = Site {
            func: self.fid,
            inst: i as u32,
        }
        .pack();
        self.at = i;
        self.strided_before(i);
        self.start_check_run(i);
        if let Some(row) = self.rows.start.get(&i).cloned() {
            self.product_row(i, &row);
        } else if !self.rows.inner.contains(&i) {
            self.guarded(ins, labels);
        }
    }

    /// An instruction under its guard: a branch around it.
    fn guarded(&mut self, ins: &ast::Instruction, labels: &[Block]) {
        let known = ins.guard.and_then(|g| {
            let p = self.b.use_var(self.regs[g.reg.0 as usize]);
            self.known(p).map(|v| (v != 0) != g.negated)
        });
        match ins.guard {
            // A guard known when compiled (a predicate set from constants) needs no branch.
            Some(_) if known == Some(true) => self.inst(&ins.inst, labels),
            Some(_) if known == Some(false) && self.step.is_none() => {}
            Some(g) => {
                let (run, skip) = (self.b.create_block(), self.b.create_block());
                let here = self.b.current_block();
                let p = self.b.use_var(self.regs[g.reg.0 as usize]);
                if g.negated {
                    self.b.ins().brif(p, skip, &[], run, &[]);
                } else {
                    self.b.ins().brif(p, run, &[], skip, &[]);
                }
                self.b.switch_to_block(run);
                self.b.seal_block(run);
                self.inst(&ins.inst, labels);
                self.b.ins().jump(skip, &[]);
                self.b.switch_to_block(skip);
                self.b.seal_block(skip);
                self.note_dominated(skip, here);
            }
            None => self.inst(&ins.inst, labels),
        }
    }

    /// Records that every path to `block` passes through `by` (the block where a check or
    /// a guard began), for what the lowering keeps per block ([`Lower::dominates`]).
    pub(super) fn note_dominated(&mut self, block: Block, by: Option<Block>) {
        if let Some(by) = by {
            self.dominated_by.insert(block, by);
        }
    }

    /// Whether `a` is `b` or one of the blocks recorded to dominate it
    /// ([`Lower::note_dominated`]): false when not known.
    pub(super) fn dominates(&self, a: Block, mut b: Block) -> bool {
        loop {
            if a == b {
                return true;
            }
            match self.dominated_by.get(&b) {
                Some(&up) => b = up,
                None => return false,
            }
        }
    }

    /// Jumps to `target` and continues in a fresh (unreachable) block.
    fn jump_away(&mut self, target: Block) {
        self.b.ins().jump(target, &[]);
        let cont = self.b.create_block();
        self.b.switch_to_block(cont);
    }

    /// Branches to the fault exit when `failed` (an i32 or i8) is nonzero.
    fn fail_if(&mut self, failed: Value) {
        let cont = self.b.create_block();
        let fail = self.fail;
        let here = self.b.current_block();
        self.b.ins().brif(failed, fail, &[], cont, &[]);
        self.b.switch_to_block(cont);
        self.note_dominated(cont, here);
        // Its one predecessor is known: sealed now, the block reads every register as the
        // value it had before the test, not as a fresh block parameter, so what the
        // lowering remembers of those values (constants, extensions, packed limb pairs)
        // holds across the test.
        self.b.seal_block(cont);
    }

    fn inst(&mut self, inst: &Inst, labels: &[Block]) {
        use Inst::*;
        match inst {
            Mov { ty, d, a } => self.mov(*ty, d, a),
            Ld { .. } | St { .. } => self.memory(inst),
            Atom { .. } => self.atomic(inst),
            // x86 orders everything but a store before a later load; mfence orders that too.
            Fence => {
                self.b.ins().fence();
            }
            Cvta {
                space: ast::Space::Shared,
                ..
            }
            | Isspacep { .. }
            | Sync { .. } => self.sync(inst),
            // Space and generic addresses coincide (see memcheck.rs): cvta is the identity.
            Cvta { ty, d, a, .. } => {
                let v = self.get(a, *ty);
                self.set(d, *ty, v);
            }
            IntBin { .. } | IntUn { .. } | Mul { .. } | Mad { .. } => self.int_arith(inst),
            Shf { .. } | Bfe { .. } | Bfi { .. } | Prmt { .. } => self.bits(inst),
            Setp { .. } | Selp { .. } | Slct { .. } | Cvt { .. } => self.convert(inst),
            FloatBin { .. } | FloatUn { .. } | Fma { .. } => self.float(inst),
            Video { .. } | Vset { .. } | Vmad { .. } | VideoSimd { .. } => self.video(inst),
            Compute { .. } => self.compute(inst),
            Hint => {}
            Bra { target, .. } => {
                self.strided_entry(self.at, self.f.labels[target.0 as usize]);
                let to = self.strided_back(self.at, labels[target.0 as usize]);
                self.jump_away(to)
            }
            Call {
                func, rets, args, ..
            } => self.call(*func, rets, args),
            Ret => self.jump_away(self.ret),
            Exit => self.jump_away(self.exit),
        }
    }

    // ---- helpers and constants -----------------------------------------------------------

    /// Calls a runtime helper; returns its first result, if any.
    fn helper(&mut self, name: &'static str, args: &[Value]) -> Option<Value> {
        let r = match self.refs.get(name) {
            Some(r) => *r,
            None => {
                let id = self.sh.helpers[name];
                let r = self.jm.declare_func_in_func(id, self.b.func);
                self.refs.insert(name, r);
                r
            }
        };
        let call = self.b.ins().call(r, args);
        self.b.inst_results(call).first().copied()
    }

    /// Calls one of [`COLD_HELPERS`] through its trampoline, from a cold block.
    fn cold_helper(&mut self, name: &'static str, args: &[Value]) -> Option<Value> {
        let r = match self.cold_refs.get(name) {
            Some(r) => *r,
            None => {
                // Declared where first used, defined after every function that uses it.
                let id = self
                    .jm
                    .declare_function(&cold_name(name), Linkage::Local, &cold_signature(name))
                    .expect("one signature for each trampoline");
                let r = self.jm.declare_func_in_func(id, self.b.func);
                self.cold_refs.insert(name, r);
                r
            }
        };
        let slot = *self.cold_out.get_or_insert_with(|| {
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3))
        });
        let out = self.b.ins().stack_addr(types::I64, slot, 0);
        let mut with_out = vec![out];
        with_out.extend_from_slice(args);
        self.b.ins().call(r, &with_out);
        let (_, rets) = helper_types(name);
        rets.first()
            .map(|t| self.b.ins().load(*t, trusted(), out, 0))
    }

    /// An integer constant of a Cranelift type (the low bits of `v`).
    fn iconst(&mut self, ty: ir::Type, v: u64) -> Value {
        let v = if ty.bits() >= 64 {
            v
        } else {
            v & ((1u64 << ty.bits()) - 1)
        };
        self.b.ins().iconst(ty, v as i64)
    }

    /// The constant of PTX type `ty` with bit pattern `bits`.
    fn constant(&mut self, ty: Type, bits: u64) -> Value {
        match ty {
            Type::F32 | Type::F64 if bits != 0 => self.pooled_float(clif(ty), bits),
            Type::F32 => self.b.ins().f32const(Ieee32::with_bits(bits as u32)),
            Type::F64 => self.b.ins().f64const(Ieee64::with_bits(bits)),
            t => self.iconst(clif(t), bits),
        }
    }

    /// A float constant loaded from the constant pool: x86-64 Cranelift builds an
    /// `f32const`/`f64const` in a general register and moves it across (two instructions,
    /// one of them a slow cross-domain move); a vector constant's lane 0 is one load.
    fn pooled_float(&mut self, ty: ir::Type, bits: u64) -> Value {
        let lanes = ty.by(128 / ty.bits()).expect("a 128-bit vector type");
        let bits = bits & (u64::MAX >> (64 - ty.bits()));
        let mut bytes = [0u8; 16];
        bytes[..8].copy_from_slice(&bits.to_le_bytes());
        let k = self.b.func.dfg.constants.insert(bytes.to_vec().into());
        let v = self.b.ins().vconst(lanes, k);
        self.b.ins().extractlane(v, 0)
    }

    fn zero(&mut self, ty: Type) -> Value {
        self.constant(ty, 0)
    }

    fn bitcast(&mut self, to: ir::Type, v: Value) -> Value {
        self.b.ins().bitcast(to, MemFlagsData::new(), v)
    }

    /// The bits of a value of PTX type `ty` as an integer of its width.
    fn int_bits(&mut self, ty: Type, v: Value) -> Value {
        if clif(ty).is_float() {
            self.bitcast(int_type(ty.bits()), v)
        } else {
            v
        }
    }

    /// The value of PTX type `ty` whose bits are the integer `bits` of its width.
    fn of_int_bits(&mut self, ty: Type, bits: Value) -> Value {
        if clif(ty).is_float() {
            self.bitcast(clif(ty), bits)
        } else {
            bits
        }
    }

    /// A value of PTX type `from` as PTX type `to`: same width → reinterpreted; wider →
    /// extended (sign-extended when `signed`); narrower → truncated.
    fn conv(&mut self, v: Value, from: Type, to: Type, signed: bool) -> Value {
        let (fc, tc) = (clif(from), clif(to));
        if fc == tc {
            return v;
        }
        let (fi, ti) = (int_type(from.bits()), int_type(to.bits()));
        let mut x = if fc.is_float() {
            self.bitcast(fi, v)
        } else {
            v
        };
        if ti.bits() > fi.bits() {
            x = if signed {
                self.sextend(ti, x)
            } else {
                self.uextend(ti, x)
            };
        } else if ti.bits() < fi.bits() {
            x = self.b.ins().ireduce(ti, x);
        }
        if tc.is_float() {
            self.bitcast(tc, x)
        } else {
            x
        }
    }

    /// An integer value of Cranelift type `from` extended or truncated to `to`.
    fn resize(&mut self, v: Value, to: ir::Type, signed: bool) -> Value {
        let from = self.b.func.dfg.value_type(v);
        if to.bits() > from.bits() {
            if signed {
                self.sextend(to, v)
            } else {
                self.uextend(to, v)
            }
        } else if to.bits() < from.bits() {
            self.b.ins().ireduce(to, v)
        } else {
            v
        }
    }

    /// `v` zero-extended to `to`, reusing an extension made earlier. Cranelift's x64
    /// backend knows that 32-bit ALU results are zero-extended, but not an `ireduce` of a
    /// 64-bit sum nor a 32-bit load, so without this every carry-chain step would extend
    /// its accumulator limb again. A constant extends to a constant (`mul.wide.u32 %off, %i,
    /// 32` keeps its immediate).
    pub(super) fn uextend(&mut self, to: ir::Type, v: Value) -> Value {
        if let Some(&w) = self.zext.get(&v)
            && self.b.func.dfg.value_type(w) == to
        {
            return w;
        }
        match self.const_of(v) {
            Some(k) if to.bits() <= 64 => {
                let from = self.b.func.dfg.value_type(v);
                let k = k as u64 & (u64::MAX >> (64 - from.bits()));
                self.iconst(to, k)
            }
            _ => self.b.ins().uextend(to, v),
        }
    }

    /// The `narrow` low part of `wide`, whose upper bits are known to be zero: the narrow
    /// value for the PTX register, remembered so that [`Lower::uextend`] gives `wide` back.
    pub(super) fn narrow_zext(&mut self, narrow: ir::Type, wide: Value) -> Value {
        let v = self.b.ins().ireduce(narrow, wide);
        self.zext.insert(v, wide);
        v
    }

    /// A load of a register's value; a 32-bit integer loads zero-extended to i64 (`movl`
    /// does that anyway), so that carry arithmetic can use it without extending it again.
    pub(super) fn load_value(
        &mut self,
        ty: ir::Type,
        flags: MemFlagsData,
        at: Value,
        off: i32,
    ) -> Value {
        if ty == types::I32 {
            let w = self.b.ins().uload32(flags, at, off);
            self.narrow_zext(types::I32, w)
        } else {
            self.b.ins().load(ty, flags, at, off)
        }
    }

    // ---- operands ------------------------------------------------------------------------

    /// A register's current value. A register holding a constant (`mov.u32 %p3, 0x...`, as
    /// bignum code loads its modulus) gives a fresh `iconst` at each use: instruction
    /// selection can then fold it as an immediate, and no register stays busy with it
    /// across the function (the e-graph pass, off by default, would do this).
    fn reg_value(&mut self, r: ast::RegId) -> Value {
        if let Some(&v) = self.proved_copies.get(&r) {
            return v;
        }
        let v = self.b.use_var(self.regs[r.0 as usize]);
        match self.const_of(v) {
            Some(k) => {
                let ty = self.b.func.dfg.value_type(v);
                self.b.ins().iconst(ty, k)
            }
            None => v,
        }
    }

    /// The value of `v` if an `iconst` defines it.
    pub(super) fn const_of(&self, v: Value) -> Option<i64> {
        let dfg = &self.b.func.dfg;
        match dfg.value_def(v) {
            ir::ValueDef::Result(inst, _) => match dfg.insts[inst] {
                ir::InstructionData::UnaryImm {
                    opcode: ir::Opcode::Iconst,
                    imm,
                } => Some(imm.bits()),
                _ => None,
            },
            _ => None,
        }
    }

    /// The bits of `v` if it is a float constant (see [`Lower::constant`]).
    pub(super) fn float_const_of(&self, v: Value) -> Option<u64> {
        let dfg = &self.b.func.dfg;
        let ir::ValueDef::Result(inst, _) = dfg.value_def(v) else {
            return None;
        };
        match dfg.insts[inst] {
            ir::InstructionData::UnaryIeee32 { imm, .. } => Some(imm.bits() as u64),
            ir::InstructionData::UnaryIeee64 { imm, .. } => Some(imm.bits()),
            ir::InstructionData::BinaryImm8 {
                opcode: ir::Opcode::Extractlane,
                arg,
                imm: 0,
            } => match dfg.value_def(arg) {
                ir::ValueDef::Result(k, _) => match dfg.insts[k] {
                    ir::InstructionData::UnaryConst {
                        opcode: ir::Opcode::Vconst,
                        constant_handle,
                    } if dfg.value_type(arg).lane_type() == dfg.value_type(v)
                        && dfg.value_type(v).is_float() =>
                    {
                        let bytes = dfg.constants.get(constant_handle).as_slice();
                        let mut low = [0u8; 8];
                        low.copy_from_slice(&bytes[..8]);
                        Some(u64::from_le_bytes(low))
                    }
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// Reads a source operand as PTX type `ty` (a narrower register zero-extended, a wider
    /// one truncated, as the interpreter reads its low bits).
    fn get(&mut self, op: &Operand, ty: Type) -> Value {
        match op {
            Operand::Reg(r) => {
                let mut v = self.reg_value(*r);
                let rty = self.f.reg(*r).ty;
                if self.nan.canonical_reads.contains(&(self.at, *r)) {
                    v = self.canonical(rty, v);
                }
                self.conv(v, rty, ty, false)
            }
            Operand::NotPred(r) => {
                let v = self.reg_value(*r);
                let one = self.b.ins().iconst(types::I8, 1);
                let n = self.b.ins().bxor(v, one);
                self.conv(n, Type::Pred, ty, false)
            }
            Operand::Imm(i) => self.constant(ty, i.bits_for(ty)),
            Operand::Special(s) => {
                let v = self.special(*s);
                let width = if s.kind.bits() == 64 {
                    Type::U64
                } else {
                    Type::U32
                };
                self.conv(v, width, ty, false)
            }
            Operand::Var(v) => {
                let a = self.var_addr(*v);
                self.conv(a, Type::U64, ty, false)
            }
            Operand::VarPlus(v, off) => {
                let a = self.var_addr(*v);
                let a = self.b.ins().iadd_imm_s(a, *off);
                self.conv(a, Type::U64, ty, false)
            }
            other => unreachable!("validated: {other:?} is not a scalar source"),
        }
    }

    /// Writes a destination of instruction type `ty`; a wider register receives the value
    /// sign-extended for signed types, zero-extended otherwise.
    fn set(&mut self, op: &Operand, ty: Type, v: Value) {
        match op {
            Operand::Reg(r) => self.set_reg(*r, ty, v),
            Operand::Sink => {}
            other => unreachable!("validated: {other:?} is not a destination"),
        }
    }

    fn set_reg(&mut self, r: ast::RegId, ty: Type, v: Value) {
        let rty = self.f.reg(r).ty;
        let v = self.conv(v, ty, rty, ty.is_signed());
        self.b.def_var(self.regs[r.0 as usize], v);
    }

    /// A special register (PTX ISA 10) as a u32.
    fn special(&mut self, s: ast::SpecialReg) -> Value {
        let d = s.dim as usize;
        let from_ctx = |l: &mut Self, field: usize| {
            let ctx = l.ctx;
            l.b.ins()
                .load(types::I32, trusted(), ctx, (field + 4 * d) as i32)
        };
        match s.kind {
            SpecialRegKind::Tid => match &self.dims {
                Some(k) => self.b.use_var(k.tid[d]),
                None => from_ctx(self, offset_of!(ThreadCtx, tid)),
            },
            SpecialRegKind::Ntid => match &self.dims {
                Some(k) => k.ntid[d],
                None => from_ctx(self, offset_of!(ThreadCtx, ntid)),
            },
            SpecialRegKind::Ctaid => match &self.dims {
                Some(k) => k.ctaid[d],
                None => from_ctx(self, offset_of!(ThreadCtx, ctaid)),
            },
            SpecialRegKind::Nctaid => match &self.dims {
                Some(k) => k.nctaid[d],
                None => from_ctx(self, offset_of!(ThreadCtx, nctaid)),
            },
            SpecialRegKind::Nwarpid => {
                (self.b.ins()).iconst(types::I32, crate::block::NWARPID as i64)
            }
            SpecialRegKind::Laneid | SpecialRegKind::Warpid => {
                let at = |l: &mut Self, kind, k| l.special(ast::SpecialReg { kind, dim: k });
                let (x, y, z) = (
                    at(self, SpecialRegKind::Tid, 0),
                    at(self, SpecialRegKind::Tid, 1),
                    at(self, SpecialRegKind::Tid, 2),
                );
                let (nx, ny) = (
                    at(self, SpecialRegKind::Ntid, 0),
                    at(self, SpecialRegKind::Ntid, 1),
                );
                // linear = x + nx * (y + ny * z)
                let t = self.b.ins().imul(ny, z);
                let t = self.b.ins().iadd(y, t);
                let t = self.b.ins().imul(nx, t);
                let linear = self.b.ins().iadd(x, t);
                if s.kind == SpecialRegKind::Laneid {
                    self.b.ins().band_imm_s(linear, 31)
                } else {
                    self.b.ins().ushr_imm_s(linear, 5)
                }
            }
            SpecialRegKind::LanemaskEq
            | SpecialRegKind::LanemaskLe
            | SpecialRegKind::LanemaskLt
            | SpecialRegKind::LanemaskGe
            | SpecialRegKind::LanemaskGt => {
                let lane = self.special(ast::SpecialReg {
                    kind: SpecialRegKind::Laneid,
                    dim: 0,
                });
                // 1 << lane in 64 bits, so that `2 << 31` does not wrap.
                let lane = self.b.ins().uextend(types::I64, lane);
                let one = self.b.ins().iconst(types::I64, 1);
                let eq = self.b.ins().ishl(one, lane);
                let lt = self.b.ins().iadd_imm_s(eq, -1);
                let le = self.b.ins().iadd(lt, eq);
                let mask = match s.kind {
                    SpecialRegKind::LanemaskEq => eq,
                    SpecialRegKind::LanemaskLt => lt,
                    SpecialRegKind::LanemaskLe => le,
                    SpecialRegKind::LanemaskGe => self.b.ins().bnot(lt),
                    _ => self.b.ins().bnot(le),
                };
                self.b.ins().ireduce(types::I32, mask)
            }
            SpecialRegKind::DynamicSmemSize => {
                let ctx = self.ctx;
                let at = offset_of!(ThreadCtx, dynamic_smem) as i32;
                self.b.ins().load(types::I32, trusted(), ctx, at)
            }
            SpecialRegKind::TotalSmemSize => {
                let ctx = self.ctx;
                let at = offset_of!(ThreadCtx, total_smem) as i32;
                self.b.ins().load(types::I32, trusted(), ctx, at)
            }
            kind => {
                let code = self.b.ins().iconst(types::I32, kind as i64);
                let v = self.helper("rt_clock", &[code]).expect("rt_clock returns");
                if kind.bits() == 64 {
                    v
                } else {
                    self.b.ins().ireduce(types::I32, v)
                }
            }
        }
    }

    /// The address of a variable.
    fn var_addr(&mut self, v: ast::VarId) -> Value {
        let (base, off) = self.var_base(v);
        self.plus(base, off)
    }

    /// A variable's address as a base value and a constant offset from it, so that accesses
    /// can fold the offset into the load or store.
    pub(super) fn var_base(&mut self, v: ast::VarId) -> (Value, i64) {
        if let Some(w) = self.sh.shared_layout.offset(self.fid as usize, v) {
            // A `.shared` variable's address is its offset in the block's window (see
            // `crate::block`).
            return (self.b.ins().iconst(types::I64, w as i64), 0);
        }
        match v {
            ast::VarId::Module(i) => {
                let a = self.sh.module_vars[i as usize];
                (self.b.ins().iconst(types::I64, a as i64), 0)
            }
            ast::VarId::Function(i) => match (self.kernel_params, self.f.var(i).role) {
                (Some(p), ast::VarRole::Param(k)) => {
                    (p, self.layout.kernel_params[k as usize] as i64)
                }
                _ => (self.frame, self.layout.vars[i as usize] as i64),
            },
        }
    }

    fn frame_var(&mut self, i: u32) -> Value {
        let off = self.layout.vars[i as usize] as i64;
        self.plus(self.frame, off)
    }

    /// `v + k`, with no instruction for `k == 0` (the lowering does its own folding: the
    /// e-graph pass is off by default).
    pub(super) fn plus(&mut self, v: Value, k: i64) -> Value {
        if k == 0 {
            v
        } else {
            self.b.ins().iadd_imm_s(v, k)
        }
    }

    // ---- mov and calls -------------------------------------------------------------------

    /// `mov` (9.7.9.1), including packing/unpacking with vector operands.
    fn mov(&mut self, ty: Type, d: &Operand, a: &Operand) {
        let it = int_type(ty.bits());
        match (d, a) {
            (Operand::Vector(parts), _) => {
                let v = self.get(a, ty);
                let v = self.conv(v, ty, ty.unsigned(), false);
                let w = ty.bits() / parts.len() as u32;
                let part_ty = Type::ALL
                    .iter()
                    .copied()
                    .find(|t| t.bits() == w && t.kind() == ast::TypeKind::Bits)
                    .expect("8/16/32-bit parts");
                for (k, p) in parts.iter().enumerate() {
                    if let Operand::Reg(r) = p {
                        let s = self.b.ins().ushr_imm_s(v, (w * k as u32) as i64);
                        let s = self.b.ins().ireduce(int_type(w), s);
                        self.set_reg(*r, part_ty, s);
                    }
                }
            }
            (_, Operand::Vector(parts)) => {
                let w = ty.bits() / parts.len() as u32;
                let part_ty = Type::ALL
                    .iter()
                    .copied()
                    .find(|t| t.bits() == w && t.kind() == ast::TypeKind::Bits)
                    .expect("8/16/32-bit parts");
                let mut acc = self.iconst(it, 0);
                for (k, p) in parts.iter().enumerate() {
                    let v = self.get(p, part_ty);
                    let v = self.b.ins().uextend(it, v);
                    let v = self.b.ins().ishl_imm_s(v, (w * k as u32) as i64);
                    acc = self.b.ins().bor(acc, v);
                }
                let v = self.conv(acc, ty.unsigned(), ty, false);
                self.set(d, ty, v);
            }
            _ => {
                let v = self.get(a, ty);
                self.set(d, ty, v);
            }
        }
    }

    /// `call` (9.7.13.5): arguments are copied into a buffer the callee copies into its
    /// parameters; return parameters come back the same way.
    fn call(&mut self, id: FuncId, rets: &[Operand], args: &[Operand]) {
        let callee = self.sh.ptx.func(id);
        let ctx = self.ctx;
        let site = self.iconst(types::I64, self.site);
        let callee_ix = self.iconst(types::I32, id.0 as u64);
        let Some(internal) = self.sh.internal[id.0 as usize] else {
            let kind = self.iconst(types::I32, runtime::FAULT_NO_BODY as u64);
            self.helper("rt_fault", &[ctx, site, kind, callee_ix]);
            self.jump_away(self.fail);
            return;
        };
        // Depth check, as the interpreter does before every call.
        let depth_at = offset_of!(ThreadCtx, depth) as i32;
        let depth = self.b.ins().load(types::I32, trusted(), ctx, depth_at);
        let too_deep = self.b.ins().icmp_imm_s(
            ir::condcodes::IntCC::UnsignedGreaterThanOrEqual,
            depth,
            MAX_CALL_DEPTH as i64,
        );
        let (deep, ok) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(too_deep, deep, &[], ok, &[]);
        self.b.switch_to_block(deep);
        let kind = self.iconst(types::I32, runtime::FAULT_DEPTH as u64);
        self.helper("rt_fault", &[ctx, site, kind, callee_ix]);
        let fail = self.fail;
        self.b.ins().jump(fail, &[]);
        self.b.switch_to_block(ok);

        let callee_layout = &self.sh.layouts[id.0 as usize];
        let slot = self
            .call_buf
            .expect("functions that call have a call buffer");
        let buf = self.b.ins().stack_addr(types::I64, slot, 0);
        let rets_buf = self.b.ins().iadd_imm_s(buf, callee_layout.args_size as i64);
        for ((a, p), off) in args.iter().zip(&callee.params).zip(&callee_layout.args) {
            let size = callee.param_size(p);
            match a {
                Operand::Var(v) => {
                    let src = self.var_addr(*v);
                    copy_bytes(&mut self.b, buf, *off as i32, src, 0, size);
                }
                _ => {
                    let ty = callee.param_type(p);
                    let v = self.get(a, ty);
                    self.b.ins().store(trusted(), v, buf, *off as i32);
                }
            }
        }
        let d1 = self.b.ins().iadd_imm_s(depth, 1);
        self.b.ins().store(trusted(), d1, ctx, depth_at);
        let r = match self.callees.get(&id.0) {
            Some(r) => *r,
            None => {
                let r = self.jm.declare_func_in_func(internal, self.b.func);
                self.callees.insert(id.0, r);
                r
            }
        };
        let call = self.b.ins().call(r, &[ctx, buf, rets_buf]);
        let status = self.b.inst_results(call)[0];
        self.b.ins().store(trusted(), depth, ctx, depth_at);
        let (bad, good) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(status, bad, &[], good, &[]);
        // A fault is re-located at this call; an `exit` ends this thread too.
        self.b.switch_to_block(bad);
        let is_exit =
            self.b
                .ins()
                .icmp_imm_s(ir::condcodes::IntCC::Equal, status, STATUS_EXIT as i64);
        let faulted = self.b.create_block();
        let exit = self.exit;
        self.b.ins().brif(is_exit, exit, &[], faulted, &[]);
        self.b.switch_to_block(faulted);
        self.helper("rt_call_failed", &[ctx, site, callee_ix]);
        self.b.ins().jump(fail, &[]);

        self.b.switch_to_block(good);
        for ((o, p), off) in rets.iter().zip(&callee.rets).zip(&callee_layout.rets) {
            match o {
                Operand::Var(v) => {
                    let dst = self.var_addr(*v);
                    let size = callee.param_size(p);
                    copy_bytes(&mut self.b, dst, 0, rets_buf, *off as i32, size);
                }
                _ => {
                    let ty = callee.param_type(p);
                    let v = self
                        .b
                        .ins()
                        .load(clif(ty), trusted(), rets_buf, *off as i32);
                    self.set(o, ty, v);
                }
            }
        }
    }
}
