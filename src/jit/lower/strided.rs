//! Checked accesses in a loop whose addresses move by the same amount every iteration: the
//! inner loop of a matrix product (`ld.global.f32 %f, [%rd15]` with `%rd15 = %B +
//! 4 * sext(%r26)` and `%r26 += %r6` each time round). Once such an access has passed its
//! test in one iteration, the number of further iterations it stays inside its area follows
//! from its address, the area's bounds and its per-iteration step; the minimum of those
//! numbers over the loop's accesses (and over the iterations before a 32-bit index that is
//! widened into an address would overflow) is a budget of iterations that run without
//! tests. The body is lowered twice, a tested version that works out the budget and a
//! proved one without tests (or budget arithmetic), and the loop's head takes the proved
//! one while the budget lasts; every way into the loop from outside spends it. So one
//! iteration in many pays for the checks instead of every one, and a fault is found in the
//! iteration where it happens, as the interpreter finds it.
//!
//! Found here, before lowering, for loops of one straight line (a label, no other label up
//! to a branch back to it, no calls, returns or sync points; other branches leave the loop),
//! so that every iteration that goes on runs every instruction of the body once. An
//! induction register is written once in the body, unguarded, by `add`/`sub` of itself and a
//! constant or a register the body does not write. Values are followed in body order as
//! sums of induction steps times constants (`add`, `sub`, `mov`, `shl` and `mul` by
//! constants, widening `mul.wide` and `cvt` of 32-bit values, whose no-overflow the budget
//! covers); an access is a site when it is unguarded and its address register is such a sum.

use super::Lower;
use crate::ast::{AddrBase, Function, Imm, Inst, IntBinOp, MulMode, Operand, RegId, Space, Type};
use crate::interp::int::sext;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, StackSlotData, StackSlotKind, Value, types};
use cranelift_frontend::Variable;
use std::collections::HashMap;

/// A step of an induction register: a constant or a register the loop does not write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Imm(i64),
    Reg(RegId),
}

/// An induction register of a loop: written once per iteration by `reg += step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Induction {
    pub reg: RegId,
    /// Its width in bits (32 or 64) and whether the step is subtracted.
    pub bits: u32,
    pub negated: bool,
    pub step: Step,
}

/// A part of a per-iteration change: `coef` times an induction step, or `coef` times the
/// change of a widened 32-bit value (which the budget keeps from overflowing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Term {
    Step { iv: usize, coef: i64 },
    Widened { ext: usize, coef: i64 },
}

/// A change per iteration: the sum of its terms, in `bits`-bit arithmetic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Delta {
    pub bits: u32,
    pub terms: Vec<Term>,
}

/// A 32-bit value widened to 64 bits at instruction `at` (its source register `reg`, by sign
/// or by zero): its change per iteration must not carry it out of the 32-bit range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Widening {
    pub at: usize,
    pub reg: RegId,
    pub signed: bool,
    pub delta: Delta,
}

/// A loop of one straight line and what moves in it.
#[derive(Clone, Debug, Default)]
pub(super) struct StridedLoop {
    /// The first instruction of the body (a label's) and the branch back to it.
    pub head: usize,
    pub back: usize,
    pub ivs: Vec<Induction>,
    pub widenings: Vec<Widening>,
    /// Accesses by instruction index: the change of the address per iteration.
    pub sites: HashMap<usize, Delta>,
    /// The distinct changes per iteration (in the form [`StridedLoop::canonical`] gives)
    /// among the sites and the widenings: each is one budget bound, worked out from the
    /// least room that any of its sites or widenings has left.
    pub steps: Vec<Delta>,
    /// The step each site moves by, and each widening (by position in `widenings`).
    pub site_step: HashMap<usize, usize>,
    pub widening_step: Vec<usize>,
    /// The registers the body reads before it writes them: those it never writes
    /// (`invariant`) and those it does (`carried` from one iteration to the next).
    pub invariant: Vec<RegId>,
    pub carried: Vec<RegId>,
}

impl StridedLoop {
    /// The same change with like terms added up, in order, and each widened term naming the
    /// first widening whose source moves alike (a widened value changes by its source's
    /// change, as a signed number, whether widened by sign or by zero: the budget keeps the
    /// source in range).
    fn canonical(&self, delta: &Delta) -> Delta {
        let mut sum: Vec<((u8, usize), i64)> = Vec::new();
        for t in &delta.terms {
            let (key, coef) = match *t {
                Term::Step { iv, coef } => ((0, iv), coef),
                Term::Widened { ext, coef } => {
                    let moves = self.canonical(&self.widenings[ext].delta);
                    let first = (self.widenings.iter())
                        .position(|w| self.canonical(&w.delta) == moves)
                        .unwrap_or(ext);
                    ((1, first), coef)
                }
            };
            match sum.iter_mut().find(|(k, _)| *k == key) {
                Some((_, c)) => *c = c.wrapping_add(coef),
                None => sum.push((key, coef)),
            }
        }
        let mask = if delta.bits == 32 {
            u32::MAX as u64
        } else {
            u64::MAX
        };
        sum.retain(|&(_, c)| c as u64 & mask != 0);
        sum.sort_unstable_by_key(|&(k, _)| k);
        let terms = (sum.into_iter())
            .map(|((kind, n), coef)| match kind {
                0 => Term::Step { iv: n, coef },
                _ => Term::Widened { ext: n, coef },
            })
            .collect();
        Delta {
            bits: delta.bits,
            terms,
        }
    }

    /// Groups the sites and widenings by their change per iteration (`steps`).
    fn group_steps(&mut self) {
        let step_of = |l: &Self, d: &Delta, steps: &mut Vec<Delta>| {
            let d = l.canonical(d);
            steps.iter().position(|s| *s == d).unwrap_or_else(|| {
                steps.push(d);
                steps.len() - 1
            })
        };
        let mut steps = Vec::new();
        let mut sites: Vec<(usize, Delta)> =
            (self.sites.iter()).map(|(&i, d)| (i, d.clone())).collect();
        sites.sort_unstable_by_key(|&(i, _)| i);
        for (i, d) in sites {
            let n = step_of(self, &d, &mut steps);
            self.site_step.insert(i, n);
        }
        for w in 0..self.widenings.len() {
            let d = self.widenings[w].delta.clone();
            let n = step_of(self, &d, &mut steps);
            self.widening_step.push(n);
        }
        self.steps = steps;
    }

    /// Whether instruction `i` is in the body.
    pub fn contains(&self, i: usize) -> bool {
        (self.head..=self.back).contains(&i)
    }

    /// `delta` as a number (a 32-bit change as its signed value), if all its steps are
    /// constants.
    fn fixed(&self, delta: &Delta) -> Option<i64> {
        let mut sum = 0i64;
        for t in &delta.terms {
            let part = match *t {
                Term::Step { iv, coef } => {
                    let v = self.ivs[iv];
                    let Step::Imm(s) = v.step else {
                        return None;
                    };
                    let s = if v.bits == 32 { s as i32 as i64 } else { s };
                    let s = if v.negated { s.wrapping_neg() } else { s };
                    s.wrapping_mul(coef)
                }
                Term::Widened { ext, coef } => {
                    self.fixed(&self.widenings[ext].delta)?.wrapping_mul(coef)
                }
            };
            sum = sum.wrapping_add(part);
        }
        Some(if delta.bits == 32 {
            sum as i32 as i64
        } else {
            sum
        })
    }
}

/// A strided loop and the variables of its budget while it is lowered.
pub(super) struct LoopBudget {
    pub shape: StridedLoop,
    /// Iterations still proved after this one.
    budget: Variable,
    /// The budget the tested iteration under way proves (the least over what it tested).
    next: Variable,
    /// The room of each of the shape's steps in the tested iteration under way.
    rooms: Vec<Room>,
    /// Where a proved iteration's branch back goes: the head's choice again, in a block of
    /// its own, so that the proved iterations are a loop of their own inside the loop and
    /// the register allocator keeps more of their values in registers rather than in the
    /// slots the tested version's pressure gives them at the head.
    again: Option<Block>,
    /// The proved iterations' copies of the invariant registers they read
    /// ([`Lower::strided_head`]).
    copies: HashMap<RegId, Value>,
}

/// What the tested iteration under way found of the sites and widenings that move by one
/// step: the least room they have left (in bytes, or in values of a 32-bit source), and the
/// largest site's size, which the step must be a multiple of. The least room makes one
/// division for all of them: with one step, the one with the least room is the first to
/// leave its area.
///
/// For a step known when compiled, one room: the room ahead, in the direction the step
/// moves (for a step of 0, either side), made negative when a site lies outside its area
/// on the other side. For a step known only at run time, the least room below and the
/// least above. Rooms are signed: a site outside the area it was tested against has a
/// negative room on one side (the area and the address that passed its test are host
/// addresses, below 2^47 in x86-64's user space, so their differences do not reach 2^63),
/// and then the step's bound is 0.
struct Room {
    fixed: Option<i64>,
    below: Variable,
    above: Variable,
    align: u64,
    /// Whether a site or widening of the iteration being lowered has set the variables.
    seen: bool,
}

/// The budget an iteration that tested nothing hands on: more iterations than any loop
/// runs.
const UNBOUNDED: i64 = i64::MAX;

/// The strided loops of `f` that have at least one site.
pub(super) fn strided_loops(f: &Function) -> Vec<StridedLoop> {
    let Some(body) = &f.body else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for (back, ins) in body.iter().enumerate() {
        let Inst::Bra { target, .. } = ins.inst else {
            continue;
        };
        let head = f.labels[target.0 as usize];
        if head > back {
            continue;
        }
        if let Some(l) = one_loop(f, head, back).filter(|l| !l.sites.is_empty()) {
            found.push(l);
        }
    }
    found
}

impl Lower<'_, '_> {
    /// The strided loops of the function being lowered, with their variables (checked mode,
    /// outside round functions, whose budgets would have to live across sync points).
    pub(super) fn loop_budgets(&mut self) -> Vec<LoopBudget> {
        let has_sync = (self.f.body.iter().flatten()).any(|i| matches!(i.inst, Inst::Sync { .. }));
        if !self.sh.checked || has_sync {
            return Vec::new();
        }
        (strided_loops(self.f).into_iter())
            .map(|shape| LoopBudget {
                rooms: (shape.steps.iter())
                    .map(|step| Room {
                        fixed: shape.fixed(step),
                        below: self.b.declare_var(types::I64),
                        above: self.b.declare_var(types::I64),
                        align: 1,
                        seen: false,
                    })
                    .collect(),
                shape,
                budget: self.b.declare_var(types::I64),
                next: self.b.declare_var(types::I64),
                again: None,
                copies: HashMap::new(),
            })
            .collect()
    }

    /// Where control enters the loop headed at instruction `to` from instruction `from`
    /// outside it (a branch, or falling into its label): no iteration is proved yet.
    pub(super) fn strided_entry(&mut self, from: usize, to: usize) {
        for k in 0..self.loops.len() {
            let l = &self.loops[k];
            if l.shape.head == to && !l.shape.contains(from) {
                let zero = self.b.ins().iconst(types::I64, 0);
                self.b.def_var(self.loops[k].budget, zero);
            }
        }
    }

    /// At the head of loop `k` (its label's block): to the proved version of the body if
    /// the budget is not spent, else to the tested one. Returns each version's first block
    /// (and whether it is the proved one) and the block after the loop.
    ///
    /// The proved iterations are a loop of their own ([`LoopBudget::again`]), entered from
    /// the head through `enter`. Where the registers the loop reads fit in the machine's
    /// ([`Self::few_registers`]), `enter` copies the invariant ones through stack slots, and
    /// the proved iterations read the copies: values of the proved loop alone, which the
    /// register allocator keeps in registers there. Without the copies, an invariant's one
    /// value is live across the tested version too, whose pressure sends it to the stack,
    /// and the proved loop reloads it at every use. (Copying the registers the loop carries
    /// as well, on every way in and out, kept the proved loop free of stack accesses but
    /// cost more at each entry and exit than it saved on matmul's 64-iteration rows.)
    pub(super) fn strided_head(&mut self, k: usize) -> ([(Block, bool); 2], Block) {
        let [tested, proved, after, again, enter] = [(); 5].map(|_| self.b.create_block());
        let left = self.b.use_var(self.loops[k].budget);
        self.b.ins().brif(left, enter, &[], tested, &[]);
        self.b.switch_to_block(again);
        let left = self.b.use_var(self.loops[k].budget);
        self.b.ins().brif(left, proved, &[], tested, &[]);
        self.loops[k].again = Some(again);
        self.b.switch_to_block(enter);
        if self.few_registers(k) {
            for r in self.loops[k].shape.invariant.clone() {
                let v = self.b.use_var(self.regs[r.0 as usize]);
                if self.const_of(v).is_none() {
                    let copy = self.through_memory(v);
                    self.loops[k].copies.insert(r, copy);
                }
            }
        }
        self.b.ins().jump(proved, &[]);
        ([(tested, false), (proved, true)], after)
    }

    /// Whether the registers loop `k` reads before writing them fit, with room to spare,
    /// in x86-64's 15 general registers and 16 vector ones; where they do not, copies
    /// would only add to the pressure in the proved loop.
    fn few_registers(&self, k: usize) -> bool {
        let shape = &self.loops[k].shape;
        let regs = shape.invariant.iter().chain(&shape.carried);
        let floats = regs
            .clone()
            .filter(|r| self.f.reg(**r).ty.is_float())
            .count();
        let ints = regs.count() - floats;
        ints <= 10 && floats <= 12
    }

    /// `v` stored to a stack slot of its own and loaded back: a value the register
    /// allocator cannot join with `v`.
    fn through_memory(&mut self, v: Value) -> Value {
        let ty = self.b.func.dfg.value_type(v);
        let slot = (self.b).create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            16,
            4,
        ));
        self.b.ins().stack_store(types::I64, v, slot, 0);
        self.b.ins().stack_load(types::I64, ty, slot, 0)
    }

    /// Where the branch at instruction `at` to `target` goes instead: a proved iteration's
    /// branch back to its loop's head (see [`LoopBudget::again`]).
    pub(super) fn strided_back(&self, at: usize, target: Block) -> Block {
        match self.version {
            Some((k, true)) if self.loops[k].shape.back == at => {
                self.loops[k].again.unwrap_or(target)
            }
            _ => target,
        }
    }

    /// Starts a version of loop `k`'s body in block `start`: a proved iteration spends one
    /// of the budget; a tested one starts its next budget at no bound.
    pub(super) fn strided_version(&mut self, k: usize, start: Block, proved: bool) {
        self.b.switch_to_block(start);
        let (budget, next) = (self.loops[k].budget, self.loops[k].next);
        if proved {
            let left = self.b.use_var(budget);
            let less = self.b.ins().iadd_imm_s(left, -1);
            self.b.def_var(budget, less);
        } else {
            let all = self.b.ins().iconst(types::I64, UNBOUNDED);
            self.b.def_var(next, all);
            for r in &mut self.loops[k].rooms {
                r.seen = false;
            }
        }
        self.proved_copies = match proved {
            true => std::mem::take(&mut self.loops[k].copies),
            false => HashMap::new(),
        };
        self.version = Some((k, proved));
    }

    /// Ends the version being lowered.
    pub(super) fn strided_version_end(&mut self) {
        self.version = None;
        self.proved_copies.clear();
    }

    /// Before instruction `at`, in a tested iteration: the budget bounds of the widenings it
    /// makes and, at the branch back, the budget for the iterations after it.
    pub(super) fn strided_before(&mut self, at: usize) {
        let Some((k, false)) = self.version else {
            return;
        };
        if self.loops[k].shape.widenings.iter().any(|w| w.at == at) {
            self.strided_widening(k, at);
        }
        if self.loops[k].shape.back == at {
            for step in 0..self.loops[k].rooms.len() {
                self.strided_step_bound(k, step);
            }
            let found = self.b.use_var(self.loops[k].next);
            self.b.def_var(self.loops[k].budget, found);
        }
    }

    /// Whether instruction `at` is an access the version being lowered does not test (a site
    /// of a proved iteration); `Some(k)` when it is a site of loop `k`'s tested version.
    pub(super) fn strided_site(&self, at: usize) -> Option<(usize, bool)> {
        let (k, proved) = self.version?;
        self.loops[k]
            .shape
            .sites
            .contains_key(&at)
            .then_some((k, proved))
    }

    /// After site `at` of loop `k` passed its test at address `addr` (`size` bytes, of
    /// `space`, its recent area in `slot`): its room below and above inside that area,
    /// folded into its step's [`Room`].
    ///
    /// Sound because a recent-area slot only ever holds an area valid for accesses of its
    /// kind (writable global areas in the global slots, shared areas in the shared ones:
    /// `rt_check`), and no area goes away while the loop runs (it has no calls or returns);
    /// an address outside the slot's area proves nothing (a negative room, a budget of 0).
    /// The test that passed has shown the address aligned and `addr + size` not to wrap.
    pub(super) fn strided_site_room(
        &mut self,
        k: usize,
        at: usize,
        addr: Value,
        size: u64,
        space: Option<Space>,
        slot: usize,
    ) {
        let step = self.loops[k].shape.site_step[&at];
        let room = &mut self.loops[k].rooms[step];
        room.align = room.align.max(size);
        let (below, above) = match self.known_area(space, slot) {
            Some(area) => {
                let (lo, hi) = self.area_bounds(area);
                let end = self.b.ins().iadd_imm_s(addr, size as i64);
                (self.b.ins().isub(addr, lo), self.b.ins().isub(hi, end))
            }
            None => {
                let none = self.b.ins().iconst(types::I64, -1);
                (none, none)
            }
        };
        self.least_room(k, step, below, above, true);
    }

    /// Before widening `w` of loop `k` (a 32-bit value widened into an address): its room
    /// in the 32-bit range, folded into its step's [`Room`].
    pub(super) fn strided_widening(&mut self, k: usize, at: usize) {
        let shape = &self.loops[k].shape;
        let Some(w) = shape.widenings.iter().position(|w| w.at == at) else {
            return;
        };
        let (reg, signed) = (shape.widenings[w].reg, shape.widenings[w].signed);
        let step = shape.widening_step[w];
        let ty = if signed { Type::S32 } else { Type::U32 };
        let v = self.get(&Operand::Reg(reg), ty);
        let v = if signed {
            self.b.ins().sextend(types::I64, v)
        } else {
            self.b.ins().uextend(types::I64, v)
        };
        let (min, max) = if signed {
            (i32::MIN as i64, i32::MAX as i64)
        } else {
            (0, u32::MAX as i64)
        };
        let below = self.b.ins().iadd_imm_s(v, -min);
        let max = self.b.ins().iconst(types::I64, max);
        let above = self.b.ins().isub(max, v);
        self.least_room(k, step, below, above, false);
    }

    /// Folds a site's or a widening's room below and above into step `step`'s [`Room`]
    /// (a widening's rooms are never negative).
    fn least_room(&mut self, k: usize, step: usize, below: Value, above: Value, site: bool) {
        let room = &self.loops[k].rooms[step];
        let (fixed, seen) = (room.fixed, room.seen);
        let parts = match fixed {
            Some(0) => vec![(room.below, self.b.ins().bor(below, above))],
            Some(c) => {
                let (ahead, behind) = if c < 0 {
                    (below, above)
                } else {
                    (above, below)
                };
                let ahead = if site {
                    let outside = self.b.ins().sshr_imm_s(behind, 63);
                    self.b.ins().bor(ahead, outside)
                } else {
                    ahead
                };
                vec![(room.below, ahead)]
            }
            None => vec![(room.below, below), (room.above, above)],
        };
        for (var, v) in parts {
            let least = match seen {
                true => {
                    let now = self.b.use_var(var);
                    self.b.ins().smin(now, v)
                }
                false => v,
            };
            self.b.def_var(var, least);
        }
        self.loops[k].rooms[step].seen = true;
    }

    /// At the end of a tested iteration of loop `k`: the iterations after it that every
    /// site and widening moving by step `step` stays in bounds (and, for sites, aligned: the
    /// step a multiple of the largest site's size), folded into the next budget.
    fn strided_step_bound(&mut self, k: usize, step: usize) {
        let room = &self.loops[k].rooms[step];
        let (fixed, align, below, above) = (room.fixed, room.align, room.below, room.above);
        if !room.seen {
            return;
        }
        let (n, ok) = match fixed {
            Some(c) => {
                let ahead = self.b.use_var(below);
                let size = c.unsigned_abs();
                let n = if !size.is_multiple_of(align) {
                    self.b.ins().iconst(types::I64, 0)
                } else if size == 0 {
                    self.b.ins().iconst(types::I64, UNBOUNDED)
                } else if size.is_power_of_two() {
                    self.b.ins().ushr_imm_u(ahead, size.trailing_zeros() as i64)
                } else {
                    let size = self.b.ins().iconst(types::I64, size as i64);
                    self.b.ins().udiv(ahead, size)
                };
                let ok = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, ahead, 0);
                (n, ok)
            }
            None => {
                let (below, above) = (self.b.use_var(below), self.b.use_var(above));
                let delta = self.loops[k].shape.steps[step].clone();
                let value = self.delta_value(k, &delta);
                let n = self.room(value, below, above);
                let least = self.b.ins().smin(below, above);
                let inside = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, least, 0);
                let odd = self.b.ins().band_imm_s(value, align as i64 - 1);
                let aligned = self.b.ins().icmp_imm_s(IntCC::Equal, odd, 0);
                (n, self.b.ins().band(inside, aligned))
            }
        };
        let zero = self.b.ins().iconst(types::I64, 0);
        let n = self.b.ins().select(ok, n, zero);
        self.strided_bound(k, n);
    }

    /// The iterations a value moving by `step` (known only at run time) stays in bounds
    /// with `below` units of room under it and `above` over it (both non-negative). Exact,
    /// since every tested iteration costs many proved ones: a division.
    fn room(&mut self, step: Value, below: Value, above: Value) -> Value {
        let down = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, step, 0);
        let still = self.b.ins().icmp_imm_s(IntCC::Equal, step, 0);
        let room = self.b.ins().select(down, below, above);
        let size = self.b.ins().iabs(step);
        let one = self.b.ins().iconst(types::I64, 1);
        let size = self.b.ins().select(still, one, size);
        let n = self.b.ins().udiv(room, size);
        let all = self.b.ins().iconst(types::I64, UNBOUNDED);
        self.b.ins().select(still, all, n)
    }

    /// `next = min(next, n)` for loop `k`.
    fn strided_bound(&mut self, k: usize, n: Value) {
        let next = self.loops[k].next;
        let now = self.b.use_var(next);
        let least = self.b.ins().umin(now, n);
        self.b.def_var(next, least);
    }

    /// The change per iteration `delta` of loop `k` as an i64 (a 32-bit change as its
    /// signed value).
    fn delta_value(&mut self, k: usize, delta: &Delta) -> Value {
        let mut sum: Option<Value> = None;
        for t in &delta.terms {
            let (part, coef) = match *t {
                Term::Step { iv, coef } => {
                    let v = self.loops[k].shape.ivs[iv];
                    let step = match v.step {
                        Step::Imm(s) => self.b.ins().iconst(types::I64, s),
                        Step::Reg(r) => {
                            let ty = if v.bits == 32 { Type::S32 } else { Type::S64 };
                            let s = self.get(&Operand::Reg(r), ty);
                            if v.bits == 32 {
                                self.b.ins().sextend(types::I64, s)
                            } else {
                                s
                            }
                        }
                    };
                    let step = if v.negated {
                        self.b.ins().ineg(step)
                    } else {
                        step
                    };
                    (step, coef)
                }
                Term::Widened { ext, coef } => {
                    let inner = self.loops[k].shape.widenings[ext].delta.clone();
                    (self.delta_value(k, &inner), coef)
                }
            };
            let part = match coef {
                1 => part,
                _ => self.b.ins().imul_imm_s(part, coef),
            };
            sum = Some(match sum {
                Some(s) => self.b.ins().iadd(s, part),
                None => part,
            });
        }
        let sum = sum.unwrap_or_else(|| self.b.ins().iconst(types::I64, 0));
        if delta.bits == 32 {
            let low = self.b.ins().ireduce(types::I32, sum);
            self.b.ins().sextend(types::I64, low)
        } else {
            sum
        }
    }
}

/// A value followed through the body: a sum of steps (`Delta`) or not known.
type Sym = Option<Delta>;

fn one_loop(f: &Function, head: usize, back: usize) -> Option<StridedLoop> {
    let body = f.body.as_deref()?;
    // One straight line: no label inside, no calls, returns or sync points, and no branch
    // back to the head but the last.
    if f.labels.iter().any(|&t| t > head && t <= back) {
        return None;
    }
    for (i, ins) in body.iter().enumerate().take(back + 1).skip(head) {
        match &ins.inst {
            Inst::Bra { target, .. } => {
                let to = f.labels[target.0 as usize];
                if i != back && (head..=back).contains(&to) {
                    return None;
                }
            }
            Inst::Call { .. } | Inst::Ret | Inst::Exit | Inst::Sync { .. } => return None,
            _ => {}
        }
    }
    let lines = &body[head..=back];
    let writes = |r: RegId| lines.iter().filter(|i| i.inst.writes(r)).count();
    let invariant = |o: &Operand| match o {
        Operand::Reg(r) => writes(*r) == 0,
        Operand::Imm(Imm::Int(_)) => true,
        _ => false,
    };
    // Induction registers.
    let mut ivs = Vec::new();
    for ins in lines {
        let Inst::IntBin {
            op: op @ (IntBinOp::Add | IntBinOp::Sub),
            ty,
            sat: false,
            carry,
            d: Operand::Reg(d),
            a,
            b,
        } = &ins.inst
        else {
            continue;
        };
        let bits = ty.bits();
        if ins.guard.is_some() || carry.carry_in || carry.carry_out || !matches!(bits, 32 | 64) {
            continue;
        }
        if writes(*d) != 1 {
            continue;
        }
        // `d = d ± step`, or `d = step + d`.
        let step = match (a, b) {
            (Operand::Reg(x), s) if x == d && invariant(s) => s,
            (s, Operand::Reg(x)) if x == d && *op == IntBinOp::Add && invariant(s) => s,
            _ => continue,
        };
        let step = match step {
            Operand::Reg(r) => Step::Reg(*r),
            Operand::Imm(i) => Step::Imm(i.bits_for(Type::S64) as i64),
            _ => continue,
        };
        ivs.push(Induction {
            reg: *d,
            bits,
            negated: *op == IntBinOp::Sub,
            step,
        });
    }
    let mut l = StridedLoop {
        head,
        back,
        ivs,
        ..StridedLoop::default()
    };
    // Values in body order; a register written earlier in this iteration has its value
    // here, one the loop does not write is invariant, an induction register moves by its
    // step; anything else (a value from the last iteration or from before the loop) is not
    // known.
    let mut known: HashMap<RegId, Sym> = HashMap::new();
    for (k, ins) in lines.iter().enumerate() {
        let i = head + k;
        let read = |o: &Operand, bits: u32, known: &HashMap<RegId, Sym>| -> Sym {
            match o {
                Operand::Imm(Imm::Int(_)) => Some(Delta {
                    bits,
                    terms: Vec::new(),
                }),
                Operand::Reg(r) => {
                    if let Some(n) = l.ivs.iter().position(|v| v.reg == *r) {
                        return (l.ivs[n].bits == bits).then(|| Delta {
                            bits,
                            terms: vec![Term::Step { iv: n, coef: 1 }],
                        });
                    }
                    if writes(*r) == 0 {
                        let width = f.reg(*r).ty.bits();
                        return (width == bits).then(|| Delta {
                            bits,
                            terms: Vec::new(),
                        });
                    }
                    known.get(r).cloned().flatten().filter(|d| d.bits == bits)
                }
                _ => None,
            }
        };
        // An access through a register whose value is known here.
        if let Some((_, _, _, addr)) = ins.inst.load_or_store()
            && ins.guard.is_none()
            && let AddrBase::Reg(r) = addr.base
            && let Some(d) = read(&Operand::Reg(r), 64, &known)
        {
            l.sites.insert(i, d);
        }
        let result = if ins.guard.is_some() {
            None
        } else {
            value(ins, i, &mut l.widenings, &|o, bits| read(o, bits, &known))
        };
        for r in ins.inst.written() {
            if l.ivs.iter().all(|v| v.reg != r) {
                known.insert(r, result.clone().filter(|_| Some(r) == dest(&ins.inst)));
            }
        }
    }
    l.group_steps();
    for (n, ins) in lines.iter().enumerate() {
        for r in ins.inst.reads() {
            if lines[..n].iter().any(|i| i.inst.writes(r)) {
                continue;
            }
            let list = match writes(r) {
                0 => &mut l.invariant,
                _ => &mut l.carried,
            };
            if !list.contains(&r) {
                list.push(r);
            }
        }
    }
    Some(l)
}

/// The register an instruction of the kinds [`value`] follows writes.
fn dest(inst: &Inst) -> Option<RegId> {
    match inst {
        Inst::IntBin {
            d: Operand::Reg(d), ..
        }
        | Inst::Mul {
            d: Operand::Reg(d), ..
        }
        | Inst::Mov {
            d: Operand::Reg(d), ..
        }
        | Inst::Cvt {
            d: Operand::Reg(d), ..
        } => Some(*d),
        _ => None,
    }
}

/// The value an unguarded instruction writes, as a sum of steps, if it is one.
fn value(
    ins: &crate::ast::Instruction,
    at: usize,
    widenings: &mut Vec<Widening>,
    read: &dyn Fn(&Operand, u32) -> Sym,
) -> Sym {
    let imm = |o: &Operand, ty: Type| match o {
        Operand::Imm(i @ Imm::Int(_)) => Some(i.bits_for(ty)),
        _ => None,
    };
    let scaled = |d: Delta, k: i64| Delta {
        bits: d.bits,
        terms: (d.terms.into_iter())
            .map(|t| match t {
                Term::Step { iv, coef } => Term::Step {
                    iv,
                    coef: coef.wrapping_mul(k),
                },
                Term::Widened { ext, coef } => Term::Widened {
                    ext,
                    coef: coef.wrapping_mul(k),
                },
            })
            .collect(),
    };
    // A 32-bit value widened here: a new widening unless the value is invariant.
    let mut widen = |a: &Operand, signed: bool| -> Sym {
        let d = read(a, 32)?;
        if d.terms.is_empty() {
            return Some(Delta {
                bits: 64,
                terms: Vec::new(),
            });
        }
        let Operand::Reg(reg) = a else {
            return None;
        };
        widenings.push(Widening {
            at,
            reg: *reg,
            signed,
            delta: d,
        });
        Some(Delta {
            bits: 64,
            terms: vec![Term::Widened {
                ext: widenings.len() - 1,
                coef: 1,
            }],
        })
    };
    match &ins.inst {
        Inst::Mov { ty, a, .. } if ty.is_int() => read(a, ty.bits()),
        Inst::IntBin {
            op,
            ty,
            sat: false,
            carry,
            a,
            b,
            ..
        } if ty.is_int() && !carry.carry_in && !carry.carry_out => {
            let bits = ty.bits();
            match op {
                IntBinOp::Add | IntBinOp::Sub => {
                    let (x, y) = (read(a, bits)?, read(b, bits)?);
                    let y = if *op == IntBinOp::Sub {
                        scaled(y, -1)
                    } else {
                        y
                    };
                    let mut terms = x.terms;
                    terms.extend(y.terms);
                    Some(Delta { bits, terms })
                }
                IntBinOp::Shl => {
                    let k = imm(b, Type::U32)?;
                    (k < u64::from(bits)).then_some(())?;
                    Some(scaled(read(a, bits)?, 1i64 << k))
                }
                _ => None,
            }
        }
        Inst::Mul { mode, ty, a, b, .. } if ty.is_int() && *mode != MulMode::Hi => {
            let (x, k) = match imm(b, *ty) {
                Some(k) => (a, k),
                None => (b, imm(a, *ty)?),
            };
            // The constant as the instruction reads it: sign-extended for signed types.
            let k = if ty.is_signed() {
                sext(k, ty.bits())
            } else {
                k as i64
            };
            match mode {
                MulMode::Wide if ty.bits() == 32 => Some(scaled(widen(x, ty.is_signed())?, k)),
                MulMode::Lo => Some(scaled(read(x, ty.bits())?, k)),
                _ => None,
            }
        }
        Inst::Cvt {
            dty,
            aty,
            rnd: None,
            sat: false,
            a,
            ..
        } if dty.is_int() && aty.is_int() => match (dty.bits(), aty.bits()) {
            (64, 32) => widen(a, aty.is_signed()),
            (x, y) if x == y => read(a, x),
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Module;

    fn loops(body: &str) -> Vec<StridedLoop> {
        let text = format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p, \
             .param .u32 n)\n{{\n.reg .u32 %r<9>;\n.reg .u64 %rd<9>;\n.reg .f32 %f<4>;\n\
             .reg .pred %p<3>;\nld.param.u64 %rd1, [p];\nld.param.u32 %r1, [n];\n\
             mov.u32 %r2, 0;\nmov.u32 %r3, %tid.x;\n{body}\nret;\n}}\n"
        );
        let m = Module::parse(&text).expect("test PTX parses");
        strided_loops(m.func(crate::ast::FuncId(0)))
    }

    #[test]
    fn a_column_walk_moves_by_the_widened_step() {
        let l = loops(
            "L: mul.wide.s32 %rd2, %r3, 4;\nadd.s64 %rd3, %rd1, %rd2;\n\
             ld.global.f32 %f1, [%rd3];\nadd.s32 %r3, %r3, %r1;\nadd.s32 %r2, %r2, 1;\n\
             setp.lt.u32 %p1, %r2, 8;\n@%p1 bra L;",
        );
        assert_eq!(l.len(), 1);
        let l = &l[0];
        assert_eq!(l.ivs.len(), 2);
        assert!(matches!(l.ivs[0].step, Step::Reg(_)));
        assert_eq!(l.ivs[1].step, Step::Imm(1));
        assert_eq!(l.widenings.len(), 1);
        assert!(l.widenings[0].signed);
        let d = l.sites.values().next().unwrap();
        assert_eq!(d.terms, vec![Term::Widened { ext: 0, coef: 4 }]);
    }

    #[test]
    fn guarded_writes_labels_and_values_from_the_last_iteration_are_not_followed() {
        // The address is computed after the load: the load reads last iteration's value.
        let l = loops(
            "L: ld.global.f32 %f1, [%rd3];\nmul.wide.s32 %rd2, %r3, 4;\n\
             add.s64 %rd3, %rd1, %rd2;\nadd.s32 %r3, %r3, 1;\n\
             setp.lt.u32 %p1, %r3, 8;\n@%p1 bra L;",
        );
        assert!(l.is_empty());
        // A guarded step is no induction.
        let l = loops(
            "L: mul.wide.s32 %rd2, %r3, 4;\nadd.s64 %rd3, %rd1, %rd2;\n\
             ld.global.f32 %f1, [%rd3];\nsetp.lt.u32 %p1, %r3, 8;\n@%p1 add.s32 %r3, %r3, 1;\n\
             @%p1 bra L;",
        );
        assert!(l.is_empty());
        // A label inside: two straight lines.
        let l = loops(
            "L: mul.wide.s32 %rd2, %r3, 4;\nadd.s64 %rd3, %rd1, %rd2;\nM:\n\
             ld.global.f32 %f1, [%rd3];\nadd.s32 %r3, %r3, 1;\n\
             setp.lt.u32 %p1, %r3, 8;\n@%p1 bra L;",
        );
        assert!(l.is_empty());
    }

    #[test]
    fn a_pointer_induction_moves_by_its_step() {
        let l = loops(
            "mov.u64 %rd4, %rd1;\nL: ld.global.u32 %r5, [%rd4+4];\nsub.s64 %rd4, %rd4, 8;\n\
             add.s32 %r2, %r2, 1;\nsetp.ne.s32 %p1, %r2, %r1;\n@%p1 bra L;",
        );
        assert_eq!(l.len(), 1);
        let l = &l[0];
        let iv = l.ivs.iter().position(|v| v.bits == 64).unwrap();
        assert!(l.ivs[iv].negated);
        assert_eq!(l.ivs[iv].step, Step::Imm(8));
        let d = l.sites.values().next().unwrap();
        assert_eq!(d.terms, vec![Term::Step { iv, coef: 1 }]);
    }
}
