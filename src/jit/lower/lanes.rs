//! Kernels in SIMD lanes: four consecutive threads of a block row (`%tid.x` = x … x+3, the same
//! `%tid.y`, `%tid.z`) run as one group, each per-thread 32-bit value in a lane of a 128-bit
//! vector. The thread loop stays beside it: [`Lower::kernel_body`] hands each row to the lanes
//! function, which returns where it stopped, and runs what is left one thread at a time.
//!
//! Each register has a shape, known while lowering:
//! - *uniform*: the same in every lane (parameters, `%ctaid`, `%ntid`, constants, anything
//!   computed only from those), held in the register's scalar variable. An instruction whose
//!   sources are all uniform is lowered by the scalar lowering itself, whatever it is;
//! - *affine*: lane k holds `base + k × stride` modulo the type's width, `base` in the scalar
//!   variable, the stride a constant (`%tid.x` has stride 1; `mad.lo.s32 %r, %ctaid.x, %ntid.x,
//!   %tid.x` too; `mul.wide.u32 %rd, %r, 4` has stride 4). Addresses are affine;
//! - *varying*: anything else, in an `i32x4` (floats as their bits, predicates as lane masks).
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

use super::{Lower, flags, int_type};
use super::{float_cc, int_cc};
use crate::ast::{
    AddrBase, BoolOp, CmpOp, FloatBinOp, FloatUnOp, FuncId, Guard, Inst, Instruction, IntBinOp,
    IntUnOp, MemOrder, MulMode, Operand, Precision, RegId, Rounding, Space, SpecialRegKind, Type,
    VideoSrc, VideoTail,
};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{self, Block, ConstantData, InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::{FunctionBuilder, Variable};
use cranelift_jit::JITModule;
use cranelift_module::Module as _;
use std::collections::HashMap;

/// Vectors a varying value takes.
const PARTS: usize = 8;
/// Threads in a group (a warp): four lanes of each of the vectors a varying value takes.
pub const LANES: u32 = 4 * PARTS as u32;
/// The vector type of varying values.
const V: ir::Type = types::I32X4;
/// A varying value: lanes 4p … 4p+3 in part p.
type Vecs = [Value; PARTS];

/// Why a kernel runs on the thread loop only.
#[derive(Debug, Clone)]
pub struct Refused(pub String);

type Res<T> = Result<T, Refused>;

fn refuse<T>(why: impl Into<String>) -> Res<T> {
    Err(Refused(why.into()))
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Shape {
    Uniform,
    Affine(i64),
    Varying,
}

/// A value of every lane.
#[derive(Clone, Copy)]
enum LaneVal {
    /// A scalar of the PTX type's Cranelift type.
    Uniform(Value),
    /// Base (scalar integer) and stride, normalised to the type's width.
    Affine(Value, i64),
    /// `i32x4`s.
    Varying(Vecs),
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
struct HeldStore {
    at: Value,
    stride: i64,
    vals: Vecs,
}

/// Whether a branch target is a thread's end: the body's end or an unguarded `ret`/`exit`.
fn is_exit(body: &[Instruction], pos: usize) -> bool {
    body.get(pos)
        .is_none_or(|i| i.guard.is_none() && matches!(i.inst, Inst::Ret | Inst::Exit))
}

/// `s` as a stride of a `bits`-wide type: the signed value of its low bits.
fn norm(s: i64, bits: u32) -> i64 {
    if bits >= 64 {
        s
    } else {
        (s << (64 - bits)) >> (64 - bits)
    }
}

fn gated_space(space: Option<Space>) -> bool {
    matches!(space, None | Some(Space::Global))
}

struct Lanes<'l, 'a, 'f> {
    l: &'l mut Lower<'a, 'f>,
    shape: Vec<Shape>,
    /// The vectors of each register while it is varying.
    vregs: Vec<[Variable; PARTS]>,
    /// Splats of constants made in this group (they dominate the rest of it).
    splats: HashMap<i64, Value>,
    /// Predicates set by comparing a sequence with a uniform value (see [`SeqCmp`]).
    seq_cmps: HashMap<RegId, SeqCmp>,
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
    held: Vec<HeldStore>,
    /// The group loop's head `(x, retried)`, and whether this group is a rerun.
    head: Block,
    retried: Variable,
    /// Group finished; group handed back to the thread loop.
    done: Block,
    bail: Block,
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
        if layout.frame_size > 0 || layout.call_buf > 0 {
            return refuse("it has .local variables or calls");
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
        let mut lanes = Lanes {
            l: &mut l,
            shape: vec![Shape::Uniform; nregs],
            vregs,
            splats: HashMap::new(),
            seq_cmps: HashMap::new(),
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
        };
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
        l.b.seal_all_blocks();
        let cfg = l.jm.isa().frontend_config();
        l.b.finalize(cfg);
        Ok(())
    }
}

impl<'f> Lanes<'_, '_, 'f> {
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

    /// Where the group ends (the first unconditional `ret`, `exit` or `bra` to an end), and
    /// the global accesses before it.
    fn scan(&mut self, body: &[Instruction]) -> Res<usize> {
        let labels = &self.l.f.labels;
        let mut end = body.len();
        for (i, ins) in body.iter().enumerate() {
            let ends = match &ins.inst {
                Inst::Ret | Inst::Exit => true,
                Inst::Bra { target, .. } => is_exit(body, labels[target.0 as usize]),
                _ => false,
            };
            if ends && ins.guard.is_none() {
                end = i;
                break;
            }
            if let Inst::Ld {
                space,
                ty,
                addr,
                vec,
                ..
            }
            | Inst::St {
                space,
                ty,
                addr,
                vec,
                ..
            } = &ins.inst
                && gated_space(*space)
            {
                self.accesses.push(Access {
                    at: i,
                    base: addr.base,
                    offset: addr.offset,
                    size: ty.bytes() * *vec as usize,
                    store: matches!(ins.inst, Inst::St { .. }),
                    space: *space,
                });
            }
        }
        self.ranges = vec![None; self.accesses.len()];
        Ok(end)
    }

    fn inst(&mut self, i: usize, ins: &Instruction) -> Res<()> {
        match &ins.inst {
            Inst::Ret | Inst::Exit => self.exit_if(ins.guard),
            Inst::Bra { target, .. } => {
                let body = self.l.f.body.as_ref().expect("kernels have bodies");
                if !is_exit(body, self.l.f.labels[target.0 as usize]) {
                    return refuse("a branch within the kernel (only branches to its end)");
                }
                self.exit_if(ins.guard)
            }
            Inst::Call { .. } => refuse("a call"),
            Inst::Atom { .. } => refuse("an atomic (atom, red)"),
            Inst::Ld {
                order: MemOrder::Acquire,
                ..
            }
            | Inst::St {
                order: MemOrder::Release,
                ..
            } => refuse("an .acquire load or .release store"),
            Inst::Fence => refuse("a fence (the lanes hold stores back to the group's end)"),
            Inst::Ld { space, .. } | Inst::St { space, .. } if gated_space(*space) => {
                if ins.guard.is_some() {
                    return refuse("a guarded memory access");
                }
                let k = self
                    .accesses
                    .iter()
                    .position(|a| a.at == i)
                    .expect("the scan lists every global access");
                self.access(k, &ins.inst)
            }
            Inst::St { .. } => refuse("a store outside global memory"),
            Inst::Ld {
                space,
                addr,
                ty,
                vec,
                ..
            } => {
                let size = ty.bytes() * *vec as usize;
                let safe = matches!(addr.base, AddrBase::Var(_))
                    && (!self.l.sh.checked || self.l.known_safe(addr, size, *space, false));
                if !safe {
                    return refuse("a load outside global memory that may fault");
                }
                self.pure(ins)
            }
            _ => self.pure(ins),
        }
    }

    /// An instruction without side effects: by the scalar lowering when everything it reads
    /// is uniform, else in lanes.
    fn pure(&mut self, ins: &Instruction) -> Res<()> {
        let dests: Vec<RegId> = (0..self.shape.len() as u32)
            .map(RegId)
            .filter(|r| ins.inst.writes(*r))
            .collect();
        let guard_uniform = ins
            .guard
            .is_none_or(|g| self.shape[g.reg.0 as usize] == Shape::Uniform);
        // A guarded write keeps the old value where the guard is false: uniform only if
        // the old value is.
        let dests_uniform = ins.guard.is_none()
            || dests
                .iter()
                .all(|r| self.shape[r.0 as usize] == Shape::Uniform);
        if guard_uniform && dests_uniform && self.reads_uniform(&ins.inst) {
            self.l.guarded(ins, &[]);
            for r in dests {
                self.shape[r.0 as usize] = Shape::Uniform;
                self.seq_cmps.remove(&r);
            }
            return Ok(());
        }
        let mask = match ins.guard {
            Some(g) => Some(self.guard_mask(g)?),
            None => None,
        };
        self.vector(&ins.inst, mask)
    }

    fn operand_shape(&self, op: &Operand) -> Shape {
        match op {
            Operand::Reg(r)
            | Operand::NotPred(r)
            | Operand::RegSel(r, _)
            | Operand::NegReg(r, _) => self.shape[r.0 as usize],
            Operand::Vector(parts) => {
                if parts
                    .iter()
                    .flatten()
                    .all(|r| self.shape[r.0 as usize] == Shape::Uniform)
                {
                    Shape::Uniform
                } else {
                    Shape::Varying
                }
            }
            Operand::Special(s) => match s.kind {
                SpecialRegKind::Tid if s.dim == 0 => Shape::Affine(1),
                SpecialRegKind::Laneid | SpecialRegKind::Warpid => Shape::Varying,
                _ => Shape::Uniform,
            },
            Operand::Imm(_) | Operand::Var(_) | Operand::Addr(_) | Operand::Sink => Shape::Uniform,
        }
    }

    /// Whether everything an instruction reads is uniform (CC.CF always is: only the scalar
    /// lowering writes it).
    fn reads_uniform(&self, inst: &Inst) -> bool {
        let u = |op: &Operand| self.operand_shape(op) == Shape::Uniform;
        let reg = |r: &RegId| self.shape[r.0 as usize] == Shape::Uniform;
        let video = |s: &VideoSrc| reg(&s.reg);
        use Inst::*;
        match inst {
            Mov { a, .. } | Cvta { a, .. } | IntUn { a, .. } | Cvt { a, .. } => u(a),
            FloatUn { a, .. } => u(a),
            Ld { addr, .. } => match addr.base {
                AddrBase::Reg(r) => reg(&r),
                _ => true,
            },
            IntBin { a, b, .. } | Mul { a, b, .. } | FloatBin { a, b, .. } => u(a) && u(b),
            Mad { a, b, c, .. }
            | Shf { a, b, c, .. }
            | Prmt { a, b, c, .. }
            | Selp { a, b, c, .. }
            | Slct { a, b, c, .. }
            | Fma { a, b, c, .. } => u(a) && u(b) && u(c),
            Bfe { a, pos, len, .. } => u(a) && u(pos) && u(len),
            Bfi { a, b, pos, len, .. } => u(a) && u(b) && u(pos) && u(len),
            Setp { a, b, c, .. } => u(a) && u(b) && c.as_ref().is_none_or(u),
            // Sub-word destinations keep the other bytes of d: d is read too.
            Video { d, a, b, tail, .. } | Vset { d, a, b, tail, .. } => {
                reg(d) && video(a) && video(b) && tail_reg(*tail).as_ref().is_none_or(reg)
            }
            Vmad { d, a, b, c, .. } => reg(d) && video(a) && video(b) && reg(c),
            St { .. }
            | Atom { .. }
            | Fence
            | Bra { .. }
            | Call { .. }
            | Ret
            | Exit
            | Sync { .. }
            | Isspacep { .. } => false,
        }
    }

    // ---- exits and the gate --------------------------------------------------------------

    /// `ret`/`exit`/`bra` to the end, under `guard`: the group is done if the guard holds in
    /// every lane, goes on if in none; else, before the first store, it goes back to the
    /// thread loop (the group's lanes are always all running). Unguarded, it ends the group
    /// (the caller stops there).
    fn exit_if(&mut self, guard: Option<Guard>) -> Res<()> {
        let Some(g) = guard else {
            return Ok(());
        };
        if self.stored {
            // The stores before it are held back to the group's end.
            return refuse("an exit after a store");
        }
        let leave = match self.shape[g.reg.0 as usize] {
            Shape::Uniform => {
                let p = self.l.b.use_var(self.l.regs[g.reg.0 as usize]);
                if g.negated {
                    self.b().ins().bxor_imm_s(p, 1)
                } else {
                    p
                }
            }
            _ => match self.seq_cmps.get(&g.reg).copied() {
                Some(c) => self.seq_exit(c, g.negated),
                None => {
                    let m = self.guard_mask(g)?;
                    let (mut all, mut any) = (m[0], m[0]);
                    for p in &m[1..] {
                        all = self.b().ins().band(all, *p);
                        any = self.b().ins().bor(any, *p);
                    }
                    let any = self.b().ins().vhigh_bits(types::I32, any);
                    let all = self.b().ins().vhigh_bits(types::I32, all);
                    let some = self.b().ins().icmp_imm_s(IntCC::NotEqual, any, 0);
                    let every = self.b().ins().icmp_imm_s(IntCC::Equal, all, 0xf);
                    let mixed = self.b().ins().bxor(some, every);
                    self.bail_if(mixed);
                    every
                }
            },
        };
        let (done, cont) = (self.done, self.b().create_block());
        self.b().ins().brif(leave, done, &[], cont, &[]);
        self.b().switch_to_block(cont);
        Ok(())
    }

    /// An exit whose guard is a [`SeqCmp`]: the first lane's answer if the last lane's is the
    /// same and the sequence does not wrap (in the comparison's signedness), else back to the
    /// thread loop.
    fn seq_exit(&mut self, c: SeqCmp, negated: bool) -> Value {
        let span = (LANES as i64 - 1) * c.stride;
        let signed = matches!(
            c.cc,
            IntCC::SignedLessThan
                | IntCC::SignedLessThanOrEqual
                | IntCC::SignedGreaterThan
                | IntCC::SignedGreaterThanOrEqual
        );
        let wide = if signed {
            self.b().ins().sextend(types::I64, c.base)
        } else {
            self.l.uextend(types::I64, c.base)
        };
        let last_wide = self.b().ins().iadd_imm_s(wide, span);
        let (lo, hi) = if signed {
            (i32::MIN as i64, i32::MAX as i64)
        } else {
            (0, u32::MAX as i64)
        };
        let wraps = if span > 0 {
            self.b()
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, last_wide, hi)
        } else {
            self.b()
                .ins()
                .icmp_imm_s(IntCC::SignedLessThan, last_wide, lo)
        };
        let last = self.b().ins().iadd_imm_s(c.base, span);
        let test = |l: &mut Self, x: Value| {
            if c.swapped {
                l.b().ins().icmp(c.cc, c.other, x)
            } else {
                l.b().ins().icmp(c.cc, x, c.other)
            }
        };
        let first = test(self, c.base);
        let last = test(self, last);
        let differ = self.b().ins().bxor(first, last);
        let unsure = self.b().ins().bor(differ, wraps);
        self.bail_if(unsure);
        if c.negated ^ negated {
            self.b().ins().bxor_imm_s(first, 1)
        } else {
            first
        }
    }

    /// Whether the group may read memory: no affine value wrapped since the last test (else
    /// back to the thread loop).
    fn ready(&mut self) {
        if self.wrap_unchecked {
            let w = self.wrap.expect("a widening declares the flag");
            let wrapped = self.b().use_var(w);
            self.bail_if(wrapped);
            self.wrap_unchecked = false;
        }
    }

    /// Access `k`'s range: a load at one address (every lane reads it), or lane k's element at
    /// `lo + k × stride` with the stride a multiple of the size (so that every lane is as
    /// aligned as lane 0) and 32-bit elements.
    fn range(&mut self, k: usize) -> Res<Range> {
        let (base, offset, size, store) = {
            let a = &self.accesses[k];
            (a.base, a.offset, a.size, a.store)
        };
        let (lo, len, stride) = match self.address(base, offset)? {
            LaneVal::Uniform(_) if store => {
                return refuse("every thread stores to one address");
            }
            LaneVal::Uniform(v) => (v, size as i64, None),
            LaneVal::Affine(v, s)
                if size == 4 && s > 0 && s % 4 == 0 && s <= i32::MAX as i64 / LANES as i64 =>
            {
                (v, (LANES as i64 - 1) * s + 4, Some(s))
            }
            _ => {
                return refuse(format!(
                    "the threads' addresses are not {size}-byte elements at a constant distance"
                ));
            }
        };
        let hi = self.b().ins().iadd_imm_s(lo, len);
        Ok(Range {
            lo,
            hi,
            stride,
            size,
        })
    }

    /// Checked: the group goes on only if access `k`'s range lies in the area its slot last
    /// checked. If not, the runtime is asked (`rt_probe`) whether it lies in one writable
    /// global area; if so the area goes into the slot and the group starts again (it has
    /// stored nothing), else it goes to the thread loop, which reports any fault. (Calling the
    /// runtime and going on would make every vector live across the call a spill in the
    /// straight-line code.) Unchecked, ranges are trusted (one wrapping around the address
    /// space would fault in the thread loop too).
    fn check_range(&mut self, k: usize, r: Range) {
        let (base, size, space, store, offset) = {
            let a = &self.accesses[k];
            (a.base, a.size, a.space, a.store, a.offset)
        };
        let addr = crate::ast::Address { base, offset };
        if !self.l.sh.checked || self.l.known_safe(&addr, size, space, store) {
            return;
        }
        let slot = self.l.checks.slot(base);
        let ok = self.l.in_recent_area(r.lo, r.hi, slot, r.lo, size as u64);
        let (probe, cont) = (self.b().create_block(), self.b().create_block());
        self.b().set_cold_block(probe);
        self.b().ins().brif(ok, cont, &[], probe, &[]);
        self.b().switch_to_block(probe);
        let packed = self.b().ins().iconst(types::I32, (slot | size << 8) as i64);
        let ctx = self.l.ctx;
        let found = self
            .l
            .helper("rt_probe", &[ctx, r.lo, r.hi, packed])
            .expect("rt_probe returns");
        // Each run fills at least one slot: as many runs as accesses (two accesses sharing a
        // slot in different areas could take turns forever).
        let retried = self.l.b.use_var(self.retried);
        let runs = self.accesses.len().min(100) as i64;
        let more = self
            .b()
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, retried, runs);
        let found = self.b().ins().icmp_imm_s(IntCC::NotEqual, found, 0);
        let again = self.b().ins().band(found, more);
        let tid = self.l.dims.as_ref().expect("a kernel").tid[0];
        let x = self.b().use_var(tid);
        let next = self.b().ins().iadd_imm_s(retried, 1);
        let (head, bail) = (self.head, self.bail);
        self.b()
            .ins()
            .brif(again, head, &[x.into(), next.into()], bail, &[]);
        self.b().switch_to_block(cont);
    }

    /// `a | b` of optional i8 conditions.
    fn either(&mut self, a: Option<Value>, b: Option<Value>) -> Option<Value> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.b().ins().bor(a, b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether some lane's bytes of `a` overlap another lane's bytes of `b`. Two accesses with
    /// the same stride interleave without touching when their starts are at most `stride −
    /// size` apart (the fields of one array of structures; 0 apart: lane for lane the same
    /// bytes); otherwise any overlap of the two ranges counts (which may be more than exact).
    fn across_lanes(&mut self, a: Range, b: Range) -> Option<Value> {
        let apart = match (a.stride, b.stride) {
            (Some(s), Some(t)) if s == t => Some(s - a.size.max(b.size) as i64),
            _ => None,
        };
        if apart.is_some() && a.lo == b.lo {
            return None;
        }
        let overlap = self.overlap(a, b);
        Some(match apart {
            Some(apart) => {
                let d = self.b().ins().isub(a.lo, b.lo);
                let near = self
                    .b()
                    .ins()
                    .icmp_imm_s(IntCC::SignedLessThanOrEqual, d, apart);
                let far = self
                    .b()
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, -apart);
                let interleaved = self.b().ins().band(near, far);
                self.b().ins().band_not(overlap, interleaved)
            }
            None => overlap,
        })
    }

    /// Whether the ranges of `a` and `b` overlap at all.
    fn overlap(&mut self, a: Range, b: Range) -> Value {
        let ins = self.b().ins();
        let x = ins.icmp(IntCC::UnsignedLessThan, a.lo, b.hi);
        let ins = self.b().ins();
        let y = ins.icmp(IntCC::UnsignedLessThan, b.lo, a.hi);
        self.b().ins().band(x, y)
    }

    /// At the group's end, before its held stores: the group must be ready, the stores'
    /// ranges good, and no two accesses where one is a store may touch the same bytes where
    /// the order differs from the thread loop's: a load before a store, or two stores, from
    /// different lanes (the thread loop would run one thread's both before the other's); a
    /// store before a load, from any lanes (the load ran before the held store). Else the
    /// group goes back to the thread loop, which has nothing to undo.
    fn gate(&mut self) -> Res<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        self.ready();
        let ranges: Vec<Option<Range>> = self.ranges.clone();
        for (k, r) in ranges.iter().enumerate() {
            if let (Some(r), true) = (r, self.accesses[k].store) {
                self.check_range(k, *r);
            }
        }
        let mut bad = None;
        for (later, b) in ranges.iter().enumerate() {
            let Some(b) = *b else { continue };
            for (earlier, a) in ranges.iter().enumerate().take(later) {
                let Some(a) = *a else { continue };
                let (a_store, b_store) = (self.accesses[earlier].store, self.accesses[later].store);
                let conflict = match (a_store, b_store) {
                    (false, false) => None,
                    (true, false) => {
                        if a.lo == b.lo {
                            return refuse(format!(
                                "{}: a thread reads what it stored",
                                self.text(self.accesses[later].at)
                            ));
                        }
                        Some(self.overlap(a, b))
                    }
                    _ => self.across_lanes(a, b),
                };
                bad = self.either(bad, conflict);
            }
        }
        if let Some(bad) = bad {
            self.bail_if(bad);
        }
        Ok(())
    }

    /// The held stores, in program order (lanes in order within each).
    fn store_held(&mut self) {
        for h in std::mem::take(&mut self.held) {
            for (p, v) in h.vals.into_iter().enumerate() {
                if h.stride == 4 {
                    self.b().ins().store(flags(), v, h.at, 16 * p as i32);
                    continue;
                }
                for lane in 0..4 {
                    let x = self.b().ins().extractlane(v, lane as u8);
                    let off = (4 * p as i64 + lane) * h.stride;
                    self.b().ins().store(flags(), x, h.at, off as i32);
                }
            }
        }
    }

    fn bail_if(&mut self, cond: Value) {
        let (bail, cont) = (self.bail, self.b().create_block());
        self.b().ins().brif(cond, bail, &[], cont, &[]);
        self.b().switch_to_block(cont);
    }

    /// An access's address, offset included.
    fn address(&mut self, base: AddrBase, offset: i64) -> Res<LaneVal> {
        let a = match base {
            AddrBase::Reg(r) => self.read(&Operand::Reg(r), Type::U64)?,
            AddrBase::Var(v) => LaneVal::Uniform(self.l.var_addr(v)),
            AddrBase::None => LaneVal::Uniform(self.b().ins().iconst(types::I64, 0)),
        };
        Ok(match a {
            LaneVal::Uniform(v) => LaneVal::Uniform(self.l.plus(v, offset)),
            LaneVal::Affine(v, s) => LaneVal::Affine(self.l.plus(v, offset), s),
            LaneVal::Varying(v) => LaneVal::Varying(v),
        })
    }

    /// Global access `k`: a load runs now, once the group is ready and (checked) its range
    /// passes, as vector loads for consecutive elements, lane by lane for others, one scalar
    /// load for one address; a store is held back to the group's end (see [`Lanes::gate`]).
    fn access(&mut self, k: usize, inst: &Inst) -> Res<()> {
        let r = self.range(k)?;
        self.ranges[k] = Some(r);
        match inst {
            Inst::Ld { ty, d, .. } => {
                self.ready();
                self.check_range(k, r);
                let v = match r.stride {
                    None => {
                        let v = self.l.load_value(super::clif(*ty), flags(), r.lo, 0);
                        return self.write(d, *ty, LaneVal::Uniform(v), None);
                    }
                    Some(4) => std::array::from_fn(|p| {
                        self.l.b.ins().load(V, flags(), r.lo, 16 * p as i32)
                    }),
                    Some(s) => {
                        let mut v = [r.lo; PARTS];
                        for (p, v) in v.iter_mut().enumerate() {
                            let lanes = [0, 1, 2, 3].map(|lane| {
                                let off = ((4 * p + lane) as i64 * s) as i32;
                                self.l.b.ins().load(types::I32, flags(), r.lo, off)
                            });
                            let mut x = self.b().ins().scalar_to_vector(V, lanes[0]);
                            for (lane, y) in lanes.into_iter().enumerate().skip(1) {
                                x = self.b().ins().insertlane(x, y, lane as u8);
                            }
                            *v = x;
                        }
                        v
                    }
                };
                self.write(d, *ty, LaneVal::Varying(v), None)
            }
            Inst::St { ty, a, .. } => {
                let v = self.read(a, *ty)?;
                let vals = self.lanes_of(v, *ty)?;
                let stride = r.stride.expect("range refuses stores to one address");
                self.held.push(HeldStore {
                    at: r.lo,
                    stride,
                    vals,
                });
                self.stored = true;
                Ok(())
            }
            _ => unreachable!("an access"),
        }
    }

    // ---- values --------------------------------------------------------------------------

    /// A constant in every lane (made once a group).
    fn splat(&mut self, k: i64) -> Value {
        if let Some(v) = self.splats.get(&k) {
            return *v;
        }
        let s = self.b().ins().iconst(types::I32, k);
        let v = self.b().ins().splat(V, s);
        self.splats.insert(k, v);
        v
    }

    fn vconst(&mut self, lanes: [i32; 4]) -> Value {
        let bytes: Vec<u8> = lanes.iter().flat_map(|v| v.to_le_bytes()).collect();
        let c = self
            .b()
            .func
            .dfg
            .constants
            .insert(ConstantData::from(bytes));
        self.b().ins().vconst(V, c)
    }

    fn as_f32x4(&mut self, v: Value) -> Value {
        self.b().ins().bitcast(types::F32X4, MemFlagsData::new(), v)
    }

    fn as_i32x4(&mut self, v: Value) -> Value {
        self.b().ins().bitcast(V, MemFlagsData::new(), v)
    }

    /// `f` on each part.
    fn map(&mut self, x: Vecs, f: impl Fn(&mut FunctionBuilder<'f>, Value) -> Value) -> Vecs {
        x.map(|v| f(&mut self.l.b, v))
    }

    /// `f` on each pair of parts.
    fn map2(
        &mut self,
        x: Vecs,
        y: Vecs,
        f: impl Fn(&mut FunctionBuilder<'f>, Value, Value) -> Value,
    ) -> Vecs {
        std::array::from_fn(|p| f(&mut self.l.b, x[p], y[p]))
    }

    /// `base + k × stride` as a lane value of a `bits`-wide integer: uniform when the stride
    /// is 0 modulo the width.
    fn affine(&self, base: Value, stride: i64, bits: u32) -> LaneVal {
        match norm(stride, bits) {
            0 => LaneVal::Uniform(base),
            s => LaneVal::Affine(base, s),
        }
    }

    /// Every lane's value as vectors (32-bit types and predicates).
    fn lanes_of(&mut self, v: LaneVal, ty: Type) -> Res<Vecs> {
        match v {
            LaneVal::Varying(v) => Ok(v),
            LaneVal::Uniform(s) if ty == Type::Pred => {
                let w = self.b().ins().uextend(types::I32, s);
                let m = self.b().ins().ineg(w);
                Ok([self.b().ins().splat(V, m); PARTS])
            }
            LaneVal::Uniform(s) if ty.bits() == 32 => {
                let s = if ty.is_float() {
                    self.l.bitcast(types::I32, s)
                } else {
                    s
                };
                Ok([self.b().ins().splat(V, s); PARTS])
            }
            LaneVal::Affine(base, s) if ty.bits() == 32 => {
                let base = self.b().ins().splat(V, base);
                let mut out = [base; PARTS];
                for (p, o) in out.iter_mut().enumerate() {
                    let steps = [0, 1, 2, 3].map(|k| ((4 * p as i64 + k) * s) as i32);
                    let steps = self.vconst(steps);
                    *o = self.b().ins().iadd(base, steps);
                }
                Ok(out)
            }
            _ => refuse(format!("per-thread .{} values", ty.ptx())),
        }
    }

    /// An affine value of type `from` as type `to` (the extension signed or not): a wider type
    /// needs the lanes not to wrap, which the gate checks (so only before it).
    fn affine_conv(
        &mut self,
        base: Value,
        s: i64,
        from: Type,
        to: Type,
        signed: bool,
    ) -> Res<LaneVal> {
        if !from.is_int() || !to.is_int() {
            return refuse("an integer sequence used as another type");
        }
        let (fb, tb) = (from.bits(), to.bits());
        if tb == fb {
            return Ok(self.affine(base, s, tb));
        }
        if tb < fb {
            let v = self.b().ins().ireduce(int_type(tb), base);
            return Ok(self.affine(v, s, tb));
        }
        let s = norm(s, fb);
        if let Some(&wide) = self.widened.get(&(base, signed, tb)) {
            return Ok(self.affine(wide, s, tb));
        }
        let wide = if signed {
            self.b().ins().sextend(int_type(tb), base)
        } else {
            self.l.uextend(int_type(tb), base)
        };
        let last = self.b().ins().iadd_imm_s(wide, (LANES as i64 - 1) * s);
        let (lo, hi) = if signed {
            (-(1i64 << (fb - 1)), (1i64 << (fb - 1)) - 1)
        } else {
            (0, (1i64 << fb) - 1)
        };
        let wrapped = if s > 0 {
            self.b()
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, last, hi)
        } else {
            self.b().ins().icmp_imm_s(IntCC::SignedLessThan, last, lo)
        };
        // The flag is first defined here, by the group's first widening (straight-line code:
        // every later test of it comes after).
        match self.wrap {
            Some(w) => {
                let before = self.b().use_var(w);
                let now = self.b().ins().bor(before, wrapped);
                self.b().def_var(w, now);
            }
            None => {
                let w = self.b().declare_var(types::I8);
                self.b().def_var(w, wrapped);
                self.wrap = Some(w);
            }
        }
        self.wrap_unchecked = true;
        self.widened.insert((base, signed, tb), wide);
        Ok(self.affine(wide, s, tb))
    }

    /// Reads a source as type `ty`, with the scalar lowering's rules (a narrower register
    /// zero-extended, a wider one truncated).
    fn read(&mut self, op: &Operand, ty: Type) -> Res<LaneVal> {
        match op {
            Operand::Reg(r) => {
                let rty = self.l.f.reg(*r).ty;
                match self.shape[r.0 as usize] {
                    Shape::Uniform => Ok(LaneVal::Uniform(self.l.get(op, ty))),
                    Shape::Affine(s) => {
                        let base = self.l.b.use_var(self.l.regs[r.0 as usize]);
                        self.affine_conv(base, s, rty, ty, false)
                    }
                    Shape::Varying => {
                        if !same_lanes(rty, ty) {
                            return refuse(format!(
                                "a per-thread .{} register read as .{}",
                                rty.ptx(),
                                ty.ptx()
                            ));
                        }
                        let vars = self.vregs[r.0 as usize];
                        Ok(LaneVal::Varying(vars.map(|v| self.l.b.use_var(v))))
                    }
                }
            }
            Operand::NotPred(r) if self.shape[r.0 as usize] == Shape::Varying => {
                let vars = self.vregs[r.0 as usize];
                let v = vars.map(|v| self.l.b.use_var(v));
                Ok(LaneVal::Varying(self.map(v, |b, v| b.ins().bnot(v))))
            }
            Operand::Special(s) if s.kind == SpecialRegKind::Tid && s.dim == 0 => {
                let tid = self.l.dims.as_ref().expect("a kernel").tid[0];
                let x = self.l.b.use_var(tid);
                self.affine_conv(x, 1, Type::U32, ty, false)
            }
            _ if self.operand_shape(op) == Shape::Uniform => {
                Ok(LaneVal::Uniform(self.l.get(op, ty)))
            }
            _ => refuse("a per-thread operand of this kind"),
        }
    }

    fn current(&mut self, r: RegId) -> LaneVal {
        let k = r.0 as usize;
        match self.shape[k] {
            Shape::Uniform => LaneVal::Uniform(self.l.b.use_var(self.l.regs[k])),
            Shape::Affine(s) => LaneVal::Affine(self.l.b.use_var(self.l.regs[k]), s),
            Shape::Varying => LaneVal::Varying(self.vregs[k].map(|v| self.l.b.use_var(v))),
        }
    }

    /// Writes a destination of instruction type `ty` (the scalar lowering's extension rules);
    /// under a guard mask, lanes where it is false keep their value.
    fn write(&mut self, d: &Operand, ty: Type, v: LaneVal, mask: Option<Vecs>) -> Res<()> {
        let r = match d {
            Operand::Reg(r) => *r,
            Operand::Sink => return Ok(()),
            _ => return refuse("a vector destination"),
        };
        self.seq_cmps.remove(&r);
        let rty = self.l.f.reg(r).ty;
        let v = match v {
            LaneVal::Uniform(s) => LaneVal::Uniform(self.l.conv(s, ty, rty, ty.is_signed())),
            LaneVal::Affine(base, s) if rty.is_int() => {
                self.affine_conv(base, s, ty, rty, ty.is_signed())?
            }
            LaneVal::Affine(..) if same_lanes(ty, rty) => LaneVal::Varying(self.lanes_of(v, ty)?),
            LaneVal::Varying(x) if same_lanes(ty, rty) => LaneVal::Varying(x),
            _ => {
                return refuse(format!(
                    "per-thread .{} values written to a .{} register",
                    ty.ptx(),
                    rty.ptx()
                ));
            }
        };
        let v = match mask {
            None => v,
            Some(m) => {
                let old = self.current(r);
                let old = self.lanes_of(old, rty)?;
                let new = self.lanes_of(v, rty)?;
                LaneVal::Varying(std::array::from_fn(|p| {
                    self.l.b.ins().bitselect(m[p], new[p], old[p])
                }))
            }
        };
        let k = r.0 as usize;
        match v {
            LaneVal::Uniform(s) => {
                self.l.b.def_var(self.l.regs[k], s);
                self.shape[k] = Shape::Uniform;
            }
            LaneVal::Affine(base, s) => {
                self.l.b.def_var(self.l.regs[k], base);
                self.shape[k] = Shape::Affine(s);
            }
            LaneVal::Varying(x) => {
                for (var, x) in self.vregs[k].into_iter().zip(x) {
                    self.l.b.def_var(var, x);
                }
                self.shape[k] = Shape::Varying;
            }
        }
        Ok(())
    }

    /// A guard as a lane mask.
    fn guard_mask(&mut self, g: Guard) -> Res<Vecs> {
        let p = self.read(&Operand::Reg(g.reg), Type::Pred)?;
        let m = self.lanes_of(p, Type::Pred)?;
        Ok(if g.negated {
            self.map(m, |b, v| b.ins().bnot(v))
        } else {
            m
        })
    }

    // ---- operations in lanes --------------------------------------------------------------

    fn vector(&mut self, inst: &Inst, mask: Option<Vecs>) -> Res<()> {
        match inst {
            Inst::Mov { ty, d, a } | Inst::Cvta { ty, d, a, .. }
                if !matches!(d, Operand::Vector(_)) && !matches!(a, Operand::Vector(_)) =>
            {
                let v = self.read(a, *ty)?;
                self.write(d, *ty, v, mask)
            }
            Inst::IntBin {
                op,
                ty,
                sat: false,
                carry,
                d,
                a,
                b,
            } if !carry.carry_in && !carry.carry_out => {
                let v = self.int_bin(*op, *ty, a, b)?;
                self.write(d, *ty, v, mask)
            }
            Inst::IntUn {
                op: op @ (IntUnOp::Abs | IntUnOp::Neg | IntUnOp::Not | IntUnOp::Cnot),
                ty,
                d,
                a,
            } if ty.bits() == 32 => {
                let x = self.read(a, *ty)?;
                let x = self.lanes_of(x, *ty)?;
                let v = match op {
                    // abs of the most negative value is itself, as `iabs` gives.
                    IntUnOp::Abs => self.map(x, |b, x| b.ins().iabs(x)),
                    IntUnOp::Neg => self.map(x, |b, x| b.ins().ineg(x)),
                    IntUnOp::Not => self.map(x, |b, x| b.ins().bnot(x)),
                    _ => {
                        // cnot: 1 where x is 0, else 0 (the mask of x == 0, shifted down).
                        let zero = self.splat(0);
                        let z = self.map(x, |b, x| b.ins().icmp(IntCC::Equal, x, zero));
                        self.map(z, |b, m| b.ins().ushr_imm_s(m, 31))
                    }
                };
                self.write(d, *ty, LaneVal::Varying(v), mask)
            }
            Inst::Mul { mode, ty, d, a, b } => {
                let v = self.mul(*mode, *ty, a, b)?;
                self.write(d, mode.result_type(*ty), v, mask)
            }
            Inst::Mad {
                mode,
                ty,
                sat: false,
                carry,
                d,
                a,
                b,
                c,
            } if !carry.carry_in && !carry.carry_out => {
                let rty = mode.result_type(*ty);
                let p = self.mul(*mode, *ty, a, b)?;
                let c = self.read(c, rty)?;
                let v = self.add_sub(IntBinOp::Add, rty, p, c)?;
                self.write(d, rty, v, mask)
            }
            // Integer conversions: extension by the source type's signedness.
            Inst::Cvt {
                dty,
                aty,
                rnd: None,
                ftz: false,
                sat: false,
                d,
                a,
            } if dty.is_int() && aty.is_int() => {
                let v = match self.read(a, *aty)? {
                    LaneVal::Affine(base, s) => {
                        self.affine_conv(base, s, *aty, *dty, aty.is_signed())?
                    }
                    LaneVal::Varying(v) if same_lanes(*aty, *dty) => LaneVal::Varying(v),
                    LaneVal::Uniform(v) => {
                        LaneVal::Uniform(self.l.conv(v, *aty, *dty, aty.is_signed()))
                    }
                    _ => return refuse(format!("a per-thread cvt.{}.{}", dty.ptx(), aty.ptx())),
                };
                self.write(d, *dty, v, mask)
            }
            Inst::Setp {
                cmp,
                combine,
                ftz,
                ty,
                p,
                q,
                a,
                b,
                c,
            } if ty.bits() == 32 => {
                let (xv, yv) = (self.read(a, *ty)?, self.read(b, *ty)?);
                let x = self.lanes_of(xv, *ty)?;
                let y = self.lanes_of(yv, *ty)?;
                let seq = match (xv, yv) {
                    (LaneVal::Affine(base, stride), LaneVal::Uniform(other)) => {
                        Some((base, stride, other, false))
                    }
                    (LaneVal::Uniform(other), LaneVal::Affine(base, stride)) => {
                        Some((base, stride, other, true))
                    }
                    _ => None,
                };
                let c = match (combine, c) {
                    (Some(op), Some(c)) => {
                        let c = self.read(c, Type::Pred)?;
                        Some((*op, self.lanes_of(c, Type::Pred)?))
                    }
                    _ => None,
                };
                let (mut pv, mut qv) = (x, x);
                for k in 0..PARTS {
                    let t = if ty.is_float() {
                        let x = self.flush(*ftz, x[k]);
                        let y = self.flush(*ftz, y[k]);
                        let (x, y) = (self.as_f32x4(x), self.as_f32x4(y));
                        self.fcmp(float_cc(*cmp), x, y)
                    } else {
                        let cc = int_cc(*cmp, ty.is_signed());
                        self.b().ins().icmp(cc, x[k], y[k])
                    };
                    let not_t = self.b().ins().bnot(t);
                    (pv[k], qv[k]) = match c {
                        Some((op, c)) => (self.bool_op(op, t, c[k]), self.bool_op(op, not_t, c[k])),
                        None => (t, not_t),
                    };
                }
                self.write(p, Type::Pred, LaneVal::Varying(pv), mask)?;
                self.write(q, Type::Pred, LaneVal::Varying(qv), mask)?;
                let ordering = !matches!(cmp, CmpOp::Eq | CmpOp::Ne);
                if let (Some((base, stride, other, swapped)), true, None, None) =
                    (seq, ordering && ty.is_int(), c, mask)
                {
                    let cc = int_cc(*cmp, ty.is_signed());
                    for (d, negated) in [(p, false), (q, true)] {
                        if let Operand::Reg(r) = d {
                            let c = SeqCmp {
                                cc,
                                base,
                                stride,
                                other,
                                swapped,
                                negated,
                            };
                            self.seq_cmps.insert(*r, c);
                        }
                    }
                }
                Ok(())
            }
            Inst::Selp { ty, d, a, b, c } if ty.bits() == 32 => {
                let x = self.read(a, *ty)?;
                let x = self.lanes_of(x, *ty)?;
                let y = self.read(b, *ty)?;
                let y = self.lanes_of(y, *ty)?;
                let c = self.read(c, Type::Pred)?;
                let c = self.lanes_of(c, Type::Pred)?;
                let v = std::array::from_fn(|p| self.l.b.ins().bitselect(c[p], x[p], y[p]));
                self.write(d, *ty, LaneVal::Varying(v), mask)
            }
            Inst::FloatBin {
                op: op @ (FloatBinOp::Add | FloatBinOp::Sub | FloatBinOp::Mul),
                ty: Type::F32,
                prec: Precision::Ieee(Rounding::Rn),
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                let [x, y] = self.f32_sources([a, b], *ftz)?;
                let mut r = x;
                for p in 0..PARTS {
                    let v = match op {
                        FloatBinOp::Add => self.b().ins().fadd(x[p], y[p]),
                        FloatBinOp::Sub => self.b().ins().fsub(x[p], y[p]),
                        _ => self.b().ins().fmul(x[p], y[p]),
                    };
                    r[p] = self.finish(v, *ftz, *sat);
                }
                self.write(d, Type::F32, LaneVal::Varying(r), mask)
            }
            Inst::Fma {
                ty: Type::F32,
                rnd: Rounding::Rn,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => {
                let [x, y, z] = self.f32_sources([a, b, c], *ftz)?;
                let mut r = x;
                for p in 0..PARTS {
                    let v = self.b().ins().fma(x[p], y[p], z[p]);
                    r[p] = self.finish(v, *ftz, *sat);
                }
                self.write(d, Type::F32, LaneVal::Varying(r), mask)
            }
            Inst::FloatUn {
                op: op @ (FloatUnOp::Neg | FloatUnOp::Abs),
                ty: Type::F32,
                ftz,
                d,
                a,
                ..
            } => {
                // Sign-bit operations, then .ftz on the result (as the scalar lowering).
                let x = self.read(a, Type::F32)?;
                let x = self.lanes_of(x, Type::F32)?;
                let sign = self.splat(i32::MIN as i64);
                let mut r = x;
                for p in 0..PARTS {
                    let v = if *op == FloatUnOp::Neg {
                        self.b().ins().bxor(x[p], sign)
                    } else {
                        self.b().ins().band_not(x[p], sign)
                    };
                    r[p] = self.flush(*ftz, v);
                }
                self.write(d, Type::F32, LaneVal::Varying(r), mask)
            }
            _ => refuse("an operation the lanes lowering does not have on per-thread values"),
        }
    }

    fn int_bin(&mut self, op: IntBinOp, ty: Type, a: &Operand, b: &Operand) -> Res<LaneVal> {
        let x = self.read(a, ty)?;
        if matches!(op, IntBinOp::Shl | IntBinOp::Shr) {
            let Operand::Imm(k) = b else {
                return refuse("a shift by a register");
            };
            return self.shift(op, ty, x, k.bits_for(Type::U32));
        }
        let y = self.read(b, ty)?;
        if matches!(op, IntBinOp::Add | IntBinOp::Sub) {
            return self.add_sub(op, ty, x, y);
        }
        if !(ty.bits() == 32 || ty == Type::Pred) {
            return refuse(format!("per-thread .{} values", ty.ptx()));
        }
        let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
        let signed = ty.is_signed();
        let v = match op {
            IntBinOp::And => self.map2(x, y, |b, x, y| b.ins().band(x, y)),
            IntBinOp::Or => self.map2(x, y, |b, x, y| b.ins().bor(x, y)),
            IntBinOp::Xor => self.map2(x, y, |b, x, y| b.ins().bxor(x, y)),
            IntBinOp::Min if signed => self.map2(x, y, |b, x, y| b.ins().smin(x, y)),
            IntBinOp::Min => self.map2(x, y, |b, x, y| b.ins().umin(x, y)),
            IntBinOp::Max if signed => self.map2(x, y, |b, x, y| b.ins().smax(x, y)),
            IntBinOp::Max => self.map2(x, y, |b, x, y| b.ins().umax(x, y)),
            _ => return refuse("division on per-thread values"),
        };
        Ok(LaneVal::Varying(v))
    }

    /// `shl`/`shr` by a constant: PTX clamps amounts above the width (9.7.8.8–9).
    fn shift(&mut self, op: IntBinOp, ty: Type, x: LaneVal, k: u64) -> Res<LaneVal> {
        let bits = ty.bits() as u64;
        if op == IntBinOp::Shl
            && let LaneVal::Affine(base, s) = x
            && k < bits
        {
            let v = self.b().ins().ishl_imm_s(base, k as i64);
            return Ok(self.affine(v, s.wrapping_shl(k as u32), ty.bits()));
        }
        if bits != 32 {
            return refuse(format!("per-thread .{} shifts", ty.ptx()));
        }
        let v = self.lanes_of(x, ty)?;
        let k = k.min(bits) as i64;
        let r = match (op, k == 32) {
            (IntBinOp::Shl, false) => self.map(v, |b, v| b.ins().ishl_imm_s(v, k)),
            (IntBinOp::Shr, false) if ty.is_signed() => {
                self.map(v, |b, v| b.ins().sshr_imm_s(v, k))
            }
            (IntBinOp::Shr, false) => self.map(v, |b, v| b.ins().ushr_imm_s(v, k)),
            (IntBinOp::Shr, true) if ty.is_signed() => {
                self.map(v, |b, v| b.ins().sshr_imm_s(v, 31))
            }
            _ => [self.splat(0); PARTS],
        };
        Ok(LaneVal::Varying(r))
    }

    fn add_sub(&mut self, op: IntBinOp, ty: Type, x: LaneVal, y: LaneVal) -> Res<LaneVal> {
        let sub = op == IntBinOp::Sub;
        let parts = |v: LaneVal| match v {
            LaneVal::Uniform(b) => Some((b, 0)),
            LaneVal::Affine(b, s) => Some((b, s)),
            LaneVal::Varying(_) => None,
        };
        if let (Some((b1, s1)), Some((b2, s2))) = (parts(x), parts(y)) {
            let (base, s) = if sub {
                (self.b().ins().isub(b1, b2), s1.wrapping_sub(s2))
            } else {
                (self.b().ins().iadd(b1, b2), s1.wrapping_add(s2))
            };
            return Ok(self.affine(base, s, ty.bits()));
        }
        if ty.bits() != 32 {
            return refuse(format!("per-thread .{} values", ty.ptx()));
        }
        let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
        let v = if sub {
            self.map2(x, y, |b, x, y| b.ins().isub(x, y))
        } else {
            self.map2(x, y, |b, x, y| b.ins().iadd(x, y))
        };
        Ok(LaneVal::Varying(v))
    }

    /// `mul.lo` and `mul.wide` (a sequence times a constant stays a sequence).
    fn mul(&mut self, mode: MulMode, ty: Type, a: &Operand, b: &Operand) -> Res<LaneVal> {
        let x = self.read(a, ty)?;
        let y = self.read(b, ty)?;
        let constant = |l: &Self, v: LaneVal| match v {
            LaneVal::Uniform(c) => l.l.const_of(c),
            _ => None,
        };
        let (seq, k) = match (x, y) {
            (LaneVal::Affine(..), _) if constant(self, y).is_some() => (x, constant(self, y)),
            (_, LaneVal::Affine(..)) if constant(self, x).is_some() => (y, constant(self, x)),
            _ => (x, None),
        };
        match mode {
            MulMode::Lo => {
                if let (LaneVal::Affine(base, s), Some(k)) = (seq, k) {
                    let v = self.b().ins().imul_imm_s(base, k);
                    return Ok(self.affine(v, s.wrapping_mul(k), ty.bits()));
                }
                if let (LaneVal::Uniform(p), LaneVal::Uniform(q)) = (x, y) {
                    return Ok(LaneVal::Uniform(self.b().ins().imul(p, q)));
                }
                if ty.bits() != 32 {
                    return refuse(format!("per-thread .{} products", ty.ptx()));
                }
                let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
                Ok(LaneVal::Varying(
                    self.map2(x, y, |b, x, y| b.ins().imul(x, y)),
                ))
            }
            MulMode::Wide => {
                let wide = ty.widened();
                let signed = ty.is_signed();
                if let (LaneVal::Affine(base, s), Some(k)) = (seq, k) {
                    let w = self.affine_conv(base, s, ty, wide, signed)?;
                    // The constant as the wide type: sign- or zero-extended from `ty`.
                    let bits = ty.bits();
                    let k = if signed {
                        norm(k, bits)
                    } else {
                        k & ((1i64 << bits) - 1)
                    };
                    return Ok(match w {
                        LaneVal::Affine(b, s) => {
                            let v = self.b().ins().imul_imm_s(b, k);
                            self.affine(v, s.wrapping_mul(k), wide.bits())
                        }
                        other => other,
                    });
                }
                refuse("a per-thread mul.wide other than a sequence times a constant")
            }
            MulMode::Hi => refuse("a per-thread mul.hi"),
        }
    }

    fn bool_op(&mut self, op: BoolOp, a: Value, b: Value) -> Value {
        match op {
            BoolOp::And => self.b().ins().band(a, b),
            BoolOp::Or => self.b().ins().bor(a, b),
            BoolOp::Xor => self.b().ins().bxor(a, b),
        }
    }

    /// A float comparison of `f32x4`s as a lane mask; x64 has no vector `one` and `ueq`.
    fn fcmp(&mut self, cc: FloatCC, x: Value, y: Value) -> Value {
        let ins = |l: &mut Self, cc| l.b().ins().fcmp(cc, x, y);
        match cc {
            FloatCC::OrderedNotEqual => {
                let o = ins(self, FloatCC::Ordered);
                let ne = ins(self, FloatCC::NotEqual);
                self.b().ins().band(o, ne)
            }
            FloatCC::UnorderedOrEqual => {
                let u = ins(self, FloatCC::Unordered);
                let eq = ins(self, FloatCC::Equal);
                self.b().ins().bor(u, eq)
            }
            cc => ins(self, cc),
        }
    }

    /// f32 sources as `f32x4`s, flushed with `.ftz`.
    fn f32_sources<const N: usize>(&mut self, ops: [&Operand; N], ftz: bool) -> Res<[Vecs; N]> {
        let mut out = [None; N];
        for (o, op) in out.iter_mut().zip(ops) {
            let v = self.read(op, Type::F32)?;
            let mut v = self.lanes_of(v, Type::F32)?;
            for x in v.iter_mut() {
                let f = self.flush(ftz, *x);
                *x = self.as_f32x4(f);
            }
            *o = Some(v);
        }
        Ok(out.map(|v| v.expect("every source read")))
    }

    /// `.ftz` on f32 bits: a subnormal becomes a zero of its sign.
    fn flush(&mut self, ftz: bool, v: Value) -> Value {
        if !ftz {
            return v;
        }
        let exp_mask = self.splat(0x7f80_0000);
        let exp = self.b().ins().band(v, exp_mask);
        let zero = self.splat(0);
        let tiny = self.b().ins().icmp(IntCC::Equal, exp, zero);
        let sign = self.splat(i32::MIN as i64);
        let signs = self.b().ins().band(v, sign);
        self.b().ins().bitselect(tiny, signs, v)
    }

    /// The scalar lowering's tail on an `f32x4` result: canonical NaN, `.ftz`, `.sat`; bits out.
    fn finish(&mut self, r: Value, ftz: bool, sat: bool) -> Value {
        let nan = self.b().ins().fcmp(FloatCC::Unordered, r, r);
        let canonical = self.splat(crate::softfloat::Fmt::F32.canonical_nan() as i64);
        let bits = self.as_i32x4(r);
        let v = self.b().ins().bitselect(nan, canonical, bits);
        let v = self.flush(ftz, v);
        if !sat {
            return v;
        }
        // [0.0, 1.0]; NaN and -0.0 become +0.0.
        let one = self.splat(1.0f32.to_bits() as i64);
        let zero = self.splat(0);
        let (f, fone, fzero) = (self.as_f32x4(v), self.as_f32x4(one), self.as_f32x4(zero));
        let ge1 = self.b().ins().fcmp(FloatCC::GreaterThanOrEqual, f, fone);
        let s = self.b().ins().bitselect(ge1, one, v);
        let gt0 = self.b().ins().fcmp(FloatCC::GreaterThan, f, fzero);
        self.b().ins().bitselect(gt0, s, zero)
    }
}

/// Whether values of type `a` and `b` share the lanes representation (32-bit, or predicates).
fn same_lanes(a: Type, b: Type) -> bool {
    (a.bits() == 32 && b.bits() == 32) || (a == Type::Pred && b == Type::Pred)
}

/// The register a video instruction's tail reads (`c`), if any.
fn tail_reg(t: VideoTail) -> Option<RegId> {
    match t {
        VideoTail::None => None,
        VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) => Some(c),
    }
}

/// Whether a kernel reaches shared memory: an access in the shared window, `cvta` to or from
/// it, or `isspacep` (the lanes lowering has no shared window).
fn uses_shared_memory(m: &crate::ast::Module, f: &crate::ast::Function) -> bool {
    let shared = |space: Option<Space>, a: &crate::ast::Address| {
        crate::interp::access_space(m, f, space, a) == Some(Space::Shared)
    };
    f.body.iter().flatten().any(|i| match &i.inst {
        Inst::Ld { space, addr, .. } | Inst::St { space, addr, .. } => shared(*space, addr),
        Inst::Atom { space, addr, .. } => shared(*space, addr),
        Inst::Cvta { space, .. } => *space == Space::Shared,
        Inst::Isspacep { .. } | Inst::Sync { .. } => true,
        _ => false,
    })
}
