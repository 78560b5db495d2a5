//! Kernels in SIMD lanes: 32 consecutive threads of a block row (`%tid.x` = x … x+31, the
//! same `%tid.y`, `%tid.z`) run as one group, a warp, each per-thread 32-bit value in a lane of
//! eight 128-bit vectors. The thread loop stays beside it: [`Lower::kernel_body`] hands each
//! row to the lanes function, which returns where it stopped, and runs what is left one thread
//! at a time.
//!
//! Each register has a shape, known while lowering:
//! - *uniform*: the same in every lane (parameters, `%ctaid`, `%ntid`, constants, anything
//!   computed only from those), held in the register's scalar variable. An instruction whose
//!   sources are all uniform is lowered by the scalar lowering itself, whatever it is;
//! - *affine*: lane k holds `base + k × stride` modulo the type's width, `base` in the scalar
//!   variable, the stride a constant (`%tid.x` has stride 1; `mad.lo.s32 %r, %ctaid.x, %ntid.x,
//!   %tid.x` too; `mul.wide.u32 %rd, %r, 4` has stride 4). Addresses are affine. Where a
//!   form holds only while the lanes do not straddle a boundary (`%laneid`, a sequence's low
//!   bits by `and`, its high bits by `shr`, which are uniform, and `%lanemask_*`, constants
//!   of each lane), the group goes back if they do, as for a sequence that wrapped;
//! - *varying*: anything else, in eight `i32x4`s (floats as their bits, predicates as lane
//!   masks).
//!
//! The lanes lowering takes straight-line kernels: the only branches leave the thread (`@%p bra
//! L` where `L` is a `ret`/`exit` or the end), none after a store; no calls, no `.local` or
//! `.shared`; varying values of 32 bits; global accesses of 32-bit elements at a constant
//! distance (a multiple of 4), or loads from one address; and the varying operations written
//! below. A kernel outside that keeps only the thread loop, with the reason in
//! `Jit::lanes_report`.
//!
//! Results are those of the thread loop, which runs the threads of a block one after another.
//! A group's stores are held back to its end, so until then nothing it did is visible and it
//! can go back to the thread loop (*bail*), which runs its threads one at a time. A load bails
//! unless no affine value wrapped when widened and, in checked mode, its bytes for the group
//! lie in one writable global area (tested inline against its slot's recent area, else asked
//! of `rt_probe`); an exit bails unless every thread agrees. At the end (the *gate*) the same
//! tests cover the stores, and any two accesses that touch the same bytes in another order
//! than the thread loop's bail: a load and a store, or two stores, of different lanes (in lock
//! step a lane could read before an earlier thread's store), or a store before a load of any
//! lane (the load ran before the held store). So faults and failed checks are reported by the
//! thread loop, exactly as without lanes.
//!
//! The files follow those seams: this one holds the group's state and the lanes function's
//! loop over groups; `shape.rs` decides what runs in lanes (the shape of each register, what
//! an instruction reads, the refusals) and reads and writes registers by shape; `vector.rs`
//! lowers the operations on varying values; `memory.rs` the group's global accesses (their
//! ranges, checks and held stores); `gate.rs` the exits, the gate and the hand-back to the
//! thread loop.

mod alike;
mod gate;
mod memory;
pub mod rounds;
mod shape;
mod vector;

use super::Lower;
use crate::ast::{AddrBase, FuncId, IntBinOp, RegId, Space};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, Block, InstBuilder, Value, types};
use cranelift_frontend::{FunctionBuilder, Variable};
use cranelift_jit::JITModule;
use shape::uses_shared_memory;
use std::collections::HashMap;

/// Vectors a varying value takes.
const PARTS: usize = 8;
/// Threads in a group (a warp): four lanes of each of the vectors a varying value takes.
pub const LANES: u32 = 4 * PARTS as u32;
/// The vector type of varying values.
const V: ir::Type = types::I32X4;
/// A varying value: lanes 4p … 4p+3 in part p.
type Vecs<const P: usize> = [Value; P];

/// Why a kernel runs on the thread loop only.
#[derive(Debug, Clone)]
pub struct Refused(pub String);

type Res<T> = Result<T, Refused>;

fn refuse<T>(why: impl Into<String>) -> Res<T> {
    Err(Refused(why.into()))
}

#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Shape {
    Uniform,
    Affine(i64),
    Varying,
}

/// A value of every lane.
#[derive(Clone, Copy)]
enum LaneVal<const P: usize> {
    /// A scalar of the PTX type's Cranelift type.
    Uniform(Value),
    /// Base (scalar integer) and stride, normalised to the type's width.
    Affine(Value, i64),
    /// `i32x4`s.
    Varying(Vecs<P>),
}

/// `setp` of an integer sequence against a uniform value with an ordering comparison: the
/// lanes agree when its first and last lane do (the sequence does not wrap), which an exit
/// can test on two scalars instead of the group's vectors.
#[derive(Clone, Copy)]
struct SeqCmp {
    cc: IntCC,
    /// First lane (i32), stride, the uniform side (i32), whether the sequence is the right
    /// operand, and whether the predicate is the comparison's negation (`setp`'s q).
    base: Value,
    stride: i64,
    other: Value,
    swapped: bool,
    negated: bool,
    /// The comparison (negated or not) and-ed or or-ed with a uniform predicate (an i8):
    /// `or.pred`/`and.pred` of a bounds test on the sequence and one on a uniform value.
    with: Option<(IntBinOp, Value)>,
    /// Whether it compares a block sequence with block-uniform values (see `alike.rs`):
    /// then the first lane and the stride give every later thread's answer too.
    alike: bool,
}

/// A global (or generic) access of the kernel.
struct Access {
    at: usize,
    base: AddrBase,
    offset: i64,
    size: usize,
    store: bool,
    space: Option<Space>,
}

/// The bytes an access touches in a group, `[lo, hi)`: lane k's `size` bytes at
/// `lo + k × stride`, or all lanes' at `lo` (a uniform address, `stride` None).
#[derive(Clone, Copy)]
struct Range {
    lo: Value,
    hi: Value,
    stride: Option<i64>,
    size: usize,
}

/// A store held back to the group's end: lane 0's address, stride, the values.
struct HeldStore<const P: usize> {
    at: Value,
    stride: i64,
    vals: Vecs<P>,
}

struct Lanes<'l, 'a, 'f, const P: usize> {
    l: &'l mut Lower<'a, 'f>,
    shape: Vec<Shape>,
    /// The vectors of each register while it is varying.
    vregs: Vec<[Variable; P]>,
    /// Splats of constants made in this group (they dominate the rest of it).
    splats: HashMap<i64, Value>,
    /// Predicates set by comparing a sequence with a uniform value (see [`SeqCmp`]).
    seq_cmps: HashMap<RegId, SeqCmp>,
    /// What the block's threads hold alike, for group functions (see `alike.rs`).
    alike: Option<alike::Alike>,
    /// Set when an affine value wrapped as it was widened (the group then runs on the loop).
    wrap: Option<Variable>,
    /// Affine bases already widened (base, signed, bits), with their wrap tests made.
    widened: HashMap<(Value, bool, u32), Value>,
    /// Widenings happened since the last test of `wrap`.
    wrap_unchecked: bool,
    /// A store has been lowered (held back to the group's end): exits are no longer taken.
    stored: bool,
    accesses: Vec<Access>,
    /// Each access's range, once its instruction is lowered.
    ranges: Vec<Option<Range>>,
    /// Stores held back to the group's end, in program order.
    held: Vec<HeldStore<P>>,
    /// The group loop's head `(x, retried)`, and whether this group is a rerun.
    head: Block,
    retried: Variable,
    /// Group finished; group handed back to the thread loop.
    done: Block,
    bail: Block,
    /// In a group function ([`rounds`]): each register's one shape for the whole kernel
    /// (None: written nowhere yet), which every write keeps, and the shapes the writes
    /// asked for (the next lowering's, when they differ).
    fixed: Option<Vec<Option<Shape>>>,
    raised: Vec<Option<Shape>>,
    /// Registers whose shape is not known yet where they are read (no shape, not written
    /// since the block began), and whether the instruction being lowered reads one (its
    /// results then ask for no shape).
    unknown: Vec<bool>,
    tainted: bool,
}

impl<'a, 'f> Lower<'a, 'f> {
    /// Lowers kernel `fid` as a lanes function `(ctx, x, y, z) -> x'`: it runs the groups of
    /// row (y, z) from x on while [`LANES`] threads are left and returns where it stopped (a
    /// group it handed back, the first of fewer than [`LANES`] threads left, or `%ntid.x`).
    pub fn lanes_function(
        b: FunctionBuilder<'f>,
        sh: &'a super::Shared<'a>,
        jm: &'a mut JITModule,
        fid: FuncId,
    ) -> Result<(), Refused> {
        let f = sh.ptx.func(fid);
        let layout = &sh.layouts[fid.0 as usize];
        if layout.frame_size > 0
            || layout.call_buf > 0
            || layout.in_registers.iter().any(Option::is_some)
        {
            return refuse("it has .local or .param variables or calls");
        }
        if uses_shared_memory(sh.ptx, f) {
            return refuse("it uses shared memory");
        }
        let (mut l, entry) = Lower::new(b, sh, jm, fid);
        let params = l.b.block_params(entry).to_vec();
        let (x0, y, z) = (params[1], params[2], params[3]);
        l.kernel_dims();
        let dims = l.dims.as_ref().expect("kernel_dims sets them");
        let (tid, ntid_x) = (dims.tid, dims.ntid[0]);
        l.b.def_var(tid[1], y);
        l.b.def_var(tid[2], z);
        // The group's first thread, and whether the group is being run again (see
        // `Lanes::check_range`).
        let head = l.b.create_block();
        l.b.append_block_param(head, types::I32);
        l.b.append_block_param(head, types::I8);
        let no = l.b.ins().iconst(types::I8, 0);
        l.b.ins().jump(head, &[x0.into(), no.into()]);

        l.b.switch_to_block(head);
        let (x, again) = (l.b.block_params(head)[0], l.b.block_params(head)[1]);
        let retried = l.b.declare_var(types::I8);
        l.b.def_var(retried, again);
        let (group, stop) = (l.b.create_block(), l.b.create_block());
        let room = l.b.ins().isub(ntid_x, x);
        let fits =
            l.b.ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, room, LANES as i64);
        l.b.ins().brif(fits, group, &[], stop, &[]);
        l.b.switch_to_block(stop);
        l.b.ins().return_(&[x]);

        l.b.switch_to_block(group);
        l.b.def_var(tid[0], x);
        let (done, bail) = (l.b.create_block(), l.b.create_block());
        l.b.set_cold_block(bail);
        let nregs = f.regs.len();
        let vregs = (0..nregs)
            .map(|_| [(); PARTS].map(|_| l.b.declare_var(V)))
            .collect();
        let mut lanes = Lanes::<PARTS>::new(&mut l, vregs, head, retried, done, bail);
        lanes.group()?;
        l.b.switch_to_block(done);
        let ctx = l.ctx;
        let at = std::mem::offset_of!(super::ThreadCtx, lane_threads) as i32;
        let count = l.b.ins().load(types::I64, super::trusted(), ctx, at);
        let count = l.b.ins().iadd_imm_s(count, LANES as i64);
        l.b.ins().store(super::trusted(), count, ctx, at);
        let x = l.b.use_var(tid[0]);
        let next = l.b.ins().iadd_imm_s(x, LANES as i64);
        let no = l.b.ins().iconst(types::I8, 0);
        l.b.ins().jump(head, &[next.into(), no.into()]);
        l.b.switch_to_block(bail);
        let x = l.b.use_var(tid[0]);
        l.b.ins().return_(&[x]);
        l.seal_and_finalize();
        Ok(())
    }
}

impl<'l, 'a, 'f, const P: usize> Lanes<'l, 'a, 'f, P> {
    /// A group's lowering state with every register uniform and nothing seen yet; `head`,
    /// `retried`, `done` and `bail` are the lanes function's loop (see the fields).
    fn new(
        l: &'l mut Lower<'a, 'f>,
        vregs: Vec<[Variable; P]>,
        head: Block,
        retried: Variable,
        done: Block,
        bail: Block,
    ) -> Self {
        let nregs = vregs.len();
        Lanes {
            l,
            shape: vec![Shape::Uniform; nregs],
            vregs,
            splats: HashMap::new(),
            seq_cmps: HashMap::new(),
            alike: None,
            wrap: None,
            wrap_unchecked: false,
            widened: HashMap::new(),
            stored: false,
            accesses: Vec::new(),
            ranges: Vec::new(),
            held: Vec::new(),
            head,
            retried,
            done,
            bail,
            fixed: None,
            raised: Vec::new(),
            unknown: Vec::new(),
            tainted: false,
        }
    }
}

impl<'f, const P: usize> Lanes<'_, '_, 'f, P> {
    /// Threads in a group: four lanes of each of the vectors a varying value takes.
    const LANES: u32 = 4 * P as u32;

    fn b(&mut self) -> &mut FunctionBuilder<'f> {
        &mut self.l.b
    }

    /// The text of instruction `i`, for refusals.
    fn text(&self, i: usize) -> String {
        let ins = &self.l.f.body.as_ref().expect("kernels have bodies")[i];
        let src = &self.l.sh.ptx.source.text;
        let t = src.get(ins.span.start..ins.span.end).unwrap_or("?");
        format!("line {}: `{}`", ins.line, t.trim())
    }

    /// One group: fresh registers, the instructions up to the first unconditional end.
    fn group(&mut self) -> Res<()> {
        self.l.start_thread_state();
        let body = self.l.f.body.as_ref().expect("kernels have bodies");
        let end = self.scan(body)?;
        for (i, ins) in body.iter().enumerate().take(end) {
            self.l.at = i;
            self.inst(i, ins)
                .map_err(|Refused(why)| Refused(format!("{}: {why}", self.text(i))))?;
        }
        self.gate()?;
        self.store_held();
        let done = self.done;
        self.b().ins().jump(done, &[]);
        Ok(())
    }
}
