//! Kernels with barriers and warp collectives, lowered as resumable *round functions*, and
//! the lowering of the instructions that reach the block's shared memory.
//!
//! A cooperative kernel (one with an [`Inst::Sync`]) becomes a *round function*
//! `round(ctx, slots, states, n) -> status`: one round of the block schedule of
//! [`crate::block::schedule`], which runs every thread whose [`Slot`] is ready, in order, from
//! where it stands until its next sync point or its end. Each thread has a state area
//! ([`StepLayout`]) besides its slot: at a sync point the thread stores the point's sources
//! in its slot, and every PTX register, CC.CF and the point's resume number in its state,
//! and the loop goes on with the next thread; its `.local` frame lives in the state area
//! too, so it survives. When the thread runs again, the function dispatches on the resume
//! number (`br_table`) to a block that reloads the registers, writes the point's results
//! (which the schedule put in the slot) to its destinations, and goes on after the point.
//! This is the design of gpuocelot's and MCUDA's barrier handling, with the loop over a
//! block's threads in generated code as for ordinary kernels; the state holds every
//! register live across the point (a backward data-flow over the body), the others dead
//! there.

use super::liveness::{self, RegSet};
use super::{Lower, trusted};
use crate::ast::{self, Inst, Operand, Space, SyncOp, Type};
use crate::block::schedule::{self, Slot};
use crate::jit::runtime::ThreadCtx;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, Block, InstBuilder, JumpTableData, Value, types};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::HashMap;
use std::mem::{offset_of, size_of};

/// The state area of one thread of a cooperative kernel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepLayout {
    /// Where the registers start (8 bytes each, by register id).
    regs: u32,
    /// Where the `.local` frame starts.
    pub frame: u32,
    /// Bytes per thread (a multiple of 16).
    pub size: u32,
}

impl StepLayout {
    /// u32: 0 at the thread's start, else 1 + the number of the point it stopped at (the
    /// launch writes this, `TID`, and the zeroed frame before the block's first round).
    pub const RESUME: u32 = 0;
    /// 3 × u32: the thread's `%tid`, written by the launch.
    pub const TID: u32 = 4;
    /// u64: CC.CF.
    const CF: u32 = 16;

    /// Where register `k` is saved (8 bytes, its value in the low bytes).
    pub fn reg(&self, k: u32) -> u32 {
        self.regs + 8 * k
    }

    pub fn of(f: &ast::Function, frame_size: u32) -> StepLayout {
        let regs = 24;
        let frame = (regs + 8 * f.regs.len() as u32).next_multiple_of(16);
        StepLayout {
            regs,
            frame,
            size: (frame + frame_size).next_multiple_of(16),
        }
    }
}

/// For each sync point of `f`, by instruction index, the registers live after it (see
/// [`liveness::live_out`]). The point's own results are written when the thread goes on,
/// so they are not live across it. Only these are saved and reloaded.
pub(super) fn live_across_points(f: &ast::Function) -> HashMap<usize, RegSet> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let live_out = liveness::live_out(f);
    body.iter()
        .enumerate()
        .filter_map(|(i, ins)| match &ins.inst {
            Inst::Sync { d, p, .. } => {
                let mut live = live_out[i].clone();
                for o in [d, p] {
                    if let Operand::Reg(r) = o {
                        liveness::remove(&mut live, *r);
                    }
                }
                Some((i, live))
            }
            _ => None,
        })
        .collect()
}

/// For each sync point of `f`, by instruction index, the registers whose copy in the state
/// area may differ from their value there (`live` gives the registers saved at each point):
/// a forward data-flow from the thread's start, where every copy may differ, through the
/// instructions, which make what they write differ, and the points, after which a thread
/// has reloaded every register saved there (the others, dead there, restart from 0; a
/// guarded point may also be passed over). Only these are stored at a point; the rest are
/// already in the state area.
fn dirty_at_points(f: &ast::Function, live: &HashMap<usize, RegSet>) -> HashMap<usize, RegSet> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let (n, words) = (body.len(), f.regs.len().div_ceil(64).max(1));
    let mut preds = vec![Vec::new(); n];
    for i in 0..n {
        for s in liveness::successors(f, i) {
            preds[s].push(i);
        }
    }
    let all = vec![u64::MAX; words];
    let mut dirty_in = vec![vec![0u64; words]; n];
    let mut dirty_out = vec![vec![0u64; words]; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            let mut inn = if i == 0 {
                all.clone()
            } else {
                vec![0u64; words]
            };
            for &p in &preds[i] {
                for (d, o) in inn.iter_mut().zip(&dirty_out[p]) {
                    *d |= o;
                }
            }
            let out = match live.get(&i) {
                // A guarded point may be passed over without a stop.
                Some(saved) if body[i].guard.is_some() => {
                    saved.iter().zip(&inn).map(|(w, d)| !w | d).collect()
                }
                Some(saved) => saved.iter().map(|w| !w).collect(),
                None => {
                    let mut out = inn.clone();
                    for r in body[i].inst.written() {
                        liveness::add(&mut out, r);
                    }
                    out
                }
            };
            if out != dirty_out[i] || inn != dirty_in[i] {
                changed = true;
                dirty_in[i] = inn;
                dirty_out[i] = out;
            }
        }
    }
    live.keys().map(|&i| (i, dirty_in[i].clone())).collect()
}

/// Whether a function reads or writes CC.CF.
fn uses_carry(f: &ast::Function) -> bool {
    f.body.iter().flatten().any(|i| i.inst.uses_carry())
}

/// The round function's state while it is lowered.
pub(super) struct Step {
    /// The running thread's index (a variable of the thread loop), slot and state area,
    /// and its block's shared window.
    thread: Variable,
    slot: Value,
    state: Value,
    /// (None when the module has no shared memory.)
    shared_base: Option<Value>,
    layout: StepLayout,
    /// Where a thread goes when it stops or ends: the next one.
    next: Block,
    /// The registers saved at each sync point (see [`live_across_points`]), and those of
    /// them stored there (see [`dirty_at_points`]).
    live: HashMap<usize, RegSet>,
    dirty: HashMap<usize, RegSet>,
    /// Whether the kernel uses CC.CF at all (else it stays 0 and is not saved).
    carries: bool,
    /// The sync points lowered so far, in order.
    points: Vec<ResumePoint>,
    counts: RoundCounts,
}

/// A sync point of a round function, as its resume block needs it.
struct ResumePoint {
    /// The block that reloads the thread, and the block after the point.
    resume: Block,
    after: Block,
    /// The point's instruction.
    at: usize,
    /// The registers saved in the state area, and those live across the point known to
    /// hold constants there (register, value), which are set again instead.
    saved: RegSet,
    constants: Vec<(usize, u64)>,
}

/// The variables counting what a round did (the fields of [`schedule::Round`]).
#[derive(Clone, Copy)]
struct RoundCounts {
    plain: Variable,
    plain_ids: Variable,
    other: Variable,
    collective: Variable,
    resolved: Variable,
}

impl RoundCounts {
    fn all(self) -> [Variable; 5] {
        [
            self.plain,
            self.plain_ids,
            self.other,
            self.collective,
            self.resolved,
        ]
    }

    /// Adds `by` to count `v` (or, for the id mask, ors it in).
    fn bump(self, b: &mut FunctionBuilder, v: Variable, by: i64) {
        let old = b.use_var(v);
        let new = if v == self.plain_ids {
            b.ins().bor_imm_u(old, by)
        } else {
            b.ins().iadd_imm_s(old, by)
        };
        b.def_var(v, new);
    }
}

fn slot_field(offset: usize) -> i32 {
    offset as i32
}

impl Lower<'_, '_> {
    /// A cooperative kernel's round function (see the module documentation).
    pub(super) fn round_body(&mut self) {
        let entry = self
            .b
            .current_block()
            .expect("positioned in the entry block");
        let params = self.b.block_params(entry).to_vec();
        let (slots, states, n) = (params[1], params[2], params[3]);
        let (waiting_too, round_out) = (params[4], params[5]);
        let layout = StepLayout::of(self.f, self.layout.frame_size);
        self.kernel_dims();
        let ctx = self.ctx;
        let tid = self.dims.as_ref().expect("kernel_dims sets them").tid;
        let t = self.b.declare_var(types::I32);
        let zero32 = self.b.ins().iconst(types::I32, 0);
        self.b.def_var(t, zero32);
        // What the round did (`schedule::Round`), counted as it goes.
        let counts = RoundCounts {
            plain: self.b.declare_var(types::I32),
            plain_ids: self.b.declare_var(types::I32),
            other: self.b.declare_var(types::I32),
            collective: self.b.declare_var(types::I32),
            resolved: self.b.declare_var(types::I32),
        };
        for v in counts.all() {
            self.b.def_var(v, zero32);
        }
        // Threads whose status is at most this run: READY, or WAITING too.
        let runnable = self.b.ins().iadd_imm_s(waiting_too, schedule::READY as i64);
        let (head, check, run, next, finish) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().jump(head, &[]);

        // The threads in order; those not ready are passed over.
        self.b.switch_to_block(head);
        let tv = self.b.use_var(t);
        let done = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, tv, n);
        self.b.ins().brif(done, finish, &[], check, &[]);
        self.b.switch_to_block(check);
        let t64 = self.b.ins().uextend(types::I64, tv);
        let at = self.b.ins().imul_imm_s(t64, size_of::<Slot>() as i64);
        let slot = self.b.ins().iadd(slots, at);
        let status = self.b.ins().load(
            types::I32,
            trusted(),
            slot,
            slot_field(offset_of!(Slot, status)),
        );
        let runs = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, status, runnable);
        self.b.ins().brif(runs, run, &[], next, &[]);

        // One thread: its state, its %tid, then on from where it stands.
        self.b.switch_to_block(run);
        let at = self.b.ins().imul_imm_s(t64, layout.size as i64);
        let state = self.b.ins().iadd(states, at);
        self.frame = self.b.ins().iadd_imm_s(state, layout.frame as i64);
        // The context's %tid is read by called functions; where a fault is located, the
        // fault path writes the thread's index instead.
        let calls = (self.f.body.iter().flatten()).any(|i| matches!(i.inst, Inst::Call { .. }));
        for (k, var) in tid.iter().enumerate() {
            let v = self.b.ins().load(
                types::I32,
                trusted(),
                state,
                (StepLayout::TID + 4 * k as u32) as i32,
            );
            self.b.def_var(*var, v);
            if calls {
                let field = (offset_of!(ThreadCtx, tid) + 4 * k) as i32;
                self.b.ins().store(trusted(), v, ctx, field);
            }
        }
        let shared_base = (!self.sh.shared_layout.is_empty()).then(|| self.load_shared_base());
        let live = live_across_points(self.f);
        self.step = Some(Step {
            shared_base,
            thread: t,
            slot,
            state,
            layout,
            next,
            dirty: dirty_at_points(self.f, &live),
            live,
            carries: uses_carry(self.f),
            points: Vec::new(),
            counts,
        });
        self.enter_frame();
        let resume = self
            .b
            .ins()
            .load(types::I32, trusted(), state, StepLayout::RESUME as i32);
        let dispatch = self.b.current_block().expect("in the run block");
        let start = self.b.create_block();
        self.b.switch_to_block(start);
        // Registers and CC.CF start at 0; the frame is zeroed with the whole state area when
        // the block starts.
        let zero64 = self.b.ins().iconst(types::I64, 0);
        self.b.def_var(self.cf, zero64);
        for (k, r) in self.f.regs.iter().enumerate() {
            let z = self.zero(r.ty);
            self.b.def_var(self.regs[k], z);
        }
        self.body();
        let (ret, exit) = (self.ret, self.exit);
        self.b.ins().jump(ret, &[]);
        self.b.switch_to_block(exit);
        self.b.ins().jump(ret, &[]);
        self.b.switch_to_block(ret);
        let ended = self.b.ins().iconst(types::I32, schedule::ENDED as i64);
        self.b
            .ins()
            .store(trusted(), ended, slot, slot_field(offset_of!(Slot, status)));
        self.leave_frame();
        self.b.ins().jump(next, &[]);

        self.b.switch_to_block(next);
        let tv = self.b.use_var(t);
        let t1 = self.b.ins().iadd_imm_s(tv, 1);
        self.b.def_var(t, t1);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(finish);
        for (v, field) in [
            (counts.plain, offset_of!(schedule::Round, plain)),
            (counts.plain_ids, offset_of!(schedule::Round, plain_ids)),
            (counts.other, offset_of!(schedule::Round, other)),
            (counts.collective, offset_of!(schedule::Round, collective)),
            (counts.resolved, offset_of!(schedule::Round, resolved)),
        ] {
            let v = self.b.use_var(v);
            self.b.ins().store(trusted(), v, round_out, field as i32);
        }
        let ok = self.b.ins().iconst(types::I32, super::STATUS_OK as i64);
        self.b.ins().return_(&[ok]);
        let fail = self.fail;
        self.b.switch_to_block(fail);
        // The faulting thread's index in the block goes to the context's `%tid.x`, where
        // the launch reads it (keeping the %tid values for this path would keep them in
        // registers or stack slots through every thread's run).
        let tv = self.b.use_var(t);
        let field = offset_of!(ThreadCtx, tid) as i32;
        self.b.ins().store(trusted(), tv, ctx, field);
        let st = self.b.ins().iconst(types::I32, super::STATUS_FAULT as i64);
        self.b.ins().return_(&[st]);

        // Resume blocks: reload the thread, take the point's results, go on after it.
        let step = self.step.take().expect("set above");
        let body = self.f.body.as_ref().expect("kernels have bodies");
        for point in &step.points {
            let (after, at) = (point.after, point.at);
            self.b.switch_to_block(point.resume);
            self.load_thread(&step, point);
            if let Inst::Sync { op, d, p, .. } = &body[at].inst {
                for (o, ty, field) in [
                    (d, op.d_type(), offset_of!(Slot, d)),
                    (p, Type::Pred, offset_of!(Slot, p)),
                ] {
                    if *o != Operand::Sink {
                        let at = slot_field(field);
                        let v = self.b.ins().load(types::I64, trusted(), slot, at);
                        let v = self.conv(v, Type::B64, ty, false);
                        self.set(o, ty, v);
                    }
                }
            }
            self.b.ins().jump(after, &[]);
        }
        self.b.switch_to_block(dispatch);
        let mut table = vec![self.b.func.dfg.block_call(start, &[])];
        for point in &step.points {
            table.push(self.b.func.dfg.block_call(point.resume, &[]));
        }
        let default = self.b.func.dfg.block_call(start, &[]);
        let jt = self
            .b
            .create_jump_table(JumpTableData::new(default, &table));
        self.b.ins().br_table(resume, jt);
    }

    /// Forgets the frame's variables (checked mode; see `enter_frame`).
    fn leave_frame(&mut self) {
        if self.sh.frames_known && self.layout.has_vars() {
            let fid = self.b.ins().iconst(types::I32, self.fid as i64);
            let ctx = self.ctx;
            self.helper("rt_leave", &[ctx, fid]);
        }
    }

    /// Reloads the registers saved at `point` and CC.CF from the state area, and sets those
    /// known to hold constants; the others are dead there and start again from 0 (so that
    /// no value flows around the thread loop).
    fn load_thread(&mut self, step: &Step, point: &ResumePoint) {
        for (k, r) in self.f.regs.iter().enumerate() {
            let v = if liveness::has(&point.saved, ast::RegId(k as u32)) {
                let at = (step.layout.regs + 8 * k as u32) as i32;
                self.load_value(super::clif(r.ty), trusted(), step.state, at)
            } else if let Some(&(_, c)) = point.constants.iter().find(|(j, _)| *j == k) {
                self.iconst(super::clif(r.ty), c)
            } else {
                self.zero(r.ty)
            };
            self.b.def_var(self.regs[k], v);
        }
        let cf = if step.carries {
            self.b
                .ins()
                .load(types::I64, trusted(), step.state, StepLayout::CF as i32)
        } else {
            self.b.ins().iconst(types::I64, 0)
        };
        self.b.def_var(self.cf, cf);
    }

    /// The instructions of this file: sync points, `isspacep`, and `cvta` to and from the
    /// shared window.
    pub(super) fn sync(&mut self, inst: &Inst) {
        match inst {
            Inst::Sync { op, srcs, .. } => self.sync_point(*op, srcs),
            Inst::Isspacep { space, p, a } => {
                let addr = self.get(a, Type::U64);
                let index = Space::ALL.iter().position(|s| s == space).expect("a space");
                let code = self.b.ins().iconst(types::I32, index as i64);
                let ctx = self.ctx;
                let r = self
                    .helper("rt_isspacep", &[ctx, addr, code])
                    .expect("rt_isspacep returns");
                let r = self.b.ins().ireduce(types::I8, r);
                self.set(p, Type::Pred, r);
            }
            Inst::Cvta { dir, ty, d, a, .. } => {
                let v = self.get(a, *ty);
                let v = self.conv(v, *ty, Type::U64, false);
                let base = self.shared_base();
                let v = match dir {
                    ast::CvtaDir::ToGeneric => self.b.ins().iadd(v, base),
                    ast::CvtaDir::ToSpace => self.b.ins().isub(v, base),
                };
                let v = self.conv(v, Type::U64, *ty, false);
                self.set(d, *ty, v);
            }
            other => unreachable!("not a sync or shared-window instruction: {other:?}"),
        }
    }

    /// The host address of offset 0 of the block's shared window (in a round function,
    /// loaded once as each thread starts running).
    pub(super) fn shared_base(&mut self) -> Value {
        match self.step.as_ref().and_then(|s| s.shared_base) {
            Some(base) => base,
            None => self.load_shared_base(),
        }
    }

    fn load_shared_base(&mut self) -> Value {
        let ctx = self.ctx;
        let at = offset_of!(ThreadCtx, shared_base) as i32;
        self.b.ins().load(types::I64, trusted(), ctx, at)
    }

    /// A sync point: publish the sources, save the thread, go on with the next thread; the
    /// code after the point is reached through its resume block.
    fn sync_point(&mut self, op: SyncOp, srcs: &[Operand]) {
        let step = self
            .step
            .as_ref()
            .expect("the front end allows sync points in kernels only");
        let (slot, state, layout, next) = (step.slot, step.state, step.layout, step.next);
        let number = step.points.len();
        for (k, (o, ty)) in srcs.iter().zip(op.src_types()).enumerate() {
            let v = self.get(o, ty);
            let v = self.conv(v, ty, Type::B64, false);
            let at = slot_field(offset_of!(Slot, args) + 8 * k);
            self.b.ins().store(trusted(), v, slot, at);
        }
        let step = self.step.as_ref().expect("checked above");
        let (mut live, dirty) = (step.live[&self.at].clone(), step.dirty[&self.at].clone());
        // Only registers whose copy may be stale are stored; one known to hold a constant
        // here is set again by the resume block instead of reloaded.
        let mut constants = Vec::new();
        for k in (0..self.f.regs.len()).filter(|&k| liveness::has(&live, ast::RegId(k as u32))) {
            let v = self.b.use_var(self.regs[k]);
            if liveness::has(&dirty, ast::RegId(k as u32)) {
                let at = (layout.regs + 8 * k as u32) as i32;
                self.b.ins().store(trusted(), v, state, at);
            }
            if let Some(c) = self.known(v) {
                constants.push((k, c));
            }
        }
        for &(k, _) in &constants {
            liveness::remove(&mut live, ast::RegId(k as u32));
        }
        if self.step.as_ref().expect("checked above").carries {
            let cf = self.b.use_var(self.cf);
            self.b
                .ins()
                .store(trusted(), cf, state, StepLayout::CF as i32);
        }
        let body = self.f.body.as_deref().expect("kernels have bodies");
        let counts = self.step.as_ref().expect("checked above").counts;
        match schedule::plain_barrier(&body[self.at].inst) {
            Some(id) => {
                counts.bump(&mut self.b, counts.plain, 1);
                counts.bump(&mut self.b, counts.plain_ids, 1 << id);
            }
            None if op.is_barrier() => counts.bump(&mut self.b, counts.other, 1),
            None => counts.bump(&mut self.b, counts.collective, 1),
        }
        let resume = self.b.ins().iconst(types::I32, number as i64 + 1);
        self.b
            .ins()
            .store(trusted(), resume, state, StepLayout::RESUME as i32);
        let point = self.b.ins().iconst(types::I32, self.at as i64);
        self.b
            .ins()
            .store(trusted(), point, slot, slot_field(offset_of!(Slot, point)));
        let waiting = self.b.ins().iconst(types::I32, schedule::WAITING as i64);
        self.b.ins().store(
            trusted(),
            waiting,
            slot,
            slot_field(offset_of!(Slot, status)),
        );
        if !op.is_barrier() {
            self.resolve_warp_at_last_lane();
        }
        self.leave_frame();
        self.b.ins().jump(next, &[]);
        let (resume_block, after) = (self.b.create_block(), self.b.create_block());
        let at = self.at;
        self.step
            .as_mut()
            .expect("checked above")
            .points
            .push(ResumePoint {
                resume: resume_block,
                after,
                at,
                saved: live,
                constants,
            });
        self.b.switch_to_block(after);
    }
}

impl Lower<'_, '_> {
    /// At a warp collective, once the slot says where the thread stands: lane 31 of a warp
    /// asks `rt_warp` to resolve the point for the whole warp now (see
    /// [`schedule::resolve_full_warp`]) and counts the lanes it resolved.
    fn resolve_warp_at_last_lane(&mut self) {
        let step = self.step.as_ref().expect("in a round function");
        let (thread, slot, counts) = (step.thread, step.slot, step.counts);
        let t = self.b.use_var(thread);
        let lane = self.b.ins().band_imm_s(t, 31);
        let last = self.b.ins().icmp_imm_s(IntCC::Equal, lane, 31);
        let (call, after) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(last, call, &[], after, &[]);
        self.b.switch_to_block(call);
        let first = self
            .b
            .ins()
            .iadd_imm_s(slot, -31 * size_of::<Slot>() as i64);
        let site = self.b.ins().iconst(types::I64, self.site as i64);
        let ctx = self.ctx;
        let n = self
            .helper("rt_warp", &[ctx, first, site])
            .expect("rt_warp returns");
        let old = self.b.use_var(counts.resolved);
        let sum = self.b.ins().iadd(old, n);
        self.b.def_var(counts.resolved, sum);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
    }
}

/// The signature of a round function: `(ctx, slots, states, n, waiting_too, round) ->
/// status` (see [`schedule::Threads::run_round`]; `round` points to a [`schedule::Round`]).
pub fn round_signature(cc: cranelift_codegen::isa::CallConv) -> ir::Signature {
    super::signature(
        cc,
        &[
            types::I64,
            types::I64,
            types::I64,
            types::I32,
            types::I32,
            types::I64,
        ],
        &[types::I32],
    )
}
