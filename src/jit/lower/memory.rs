//! `ld`, `st` (PTX ISA 9.7.9.8–9): addresses, checked accesses, vectors.
//!
//! In checked mode an access goes through `rt_check` unless it is known safe when compiled:
//! a variable's address plus a constant offset that stays inside the variable, aligned,
//! in the right space and (for stores) writable. Global and generic accesses first try the
//! area last checked in their slot (one per base register, [`CheckPlan`]) inline; and a run of
//! such accesses through one base register tries the span of the whole run once, at its first
//! access.

use super::bounded::BoundedSpan;
use super::{Lower, clif, flags, trusted};
use crate::ast::{
    AddrBase, Address, Function, Inst, MemOrder, Operand, RegId, Space, VarId, VarRole,
};
use crate::jit::runtime::AccessDesc;
use crate::jit::runtime::{HIT_AREAS, SHARED_HITS, ThreadCtx};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, Value, types};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::{HashMap, HashSet};
use std::mem::offset_of;

/// Runs of checked global, generic or `.shared` accesses `[%r + offset]` through one base register
/// with nothing between them that could change the address or skip the start: no label,
/// branch, call, return, sync point, or write to `%r`. Bignum kernels load and store every limb this
/// way. At the run's first access, one test of the span `[%r + lowest, %r + highest end)`
/// and of `%r`'s alignment against the thread's recent areas decides for all members;
/// if it fails, each member is checked on its own as before, so faults are reported at the
/// same instruction with the same message.
///
/// The plan also gives each base register its slot in the thread's recent areas
/// (`ThreadCtx::hits`), in the order registers first appear in accesses: accesses through
/// different registers, usually different buffers, do not evict each other's area.
#[derive(Default)]
pub(super) struct CheckPlan {
    /// The run each member access belongs to, by instruction index.
    member: HashMap<usize, usize>,
    /// The run that starts at an instruction index.
    start: HashMap<usize, usize>,
    runs: Vec<CheckRun>,
    slots: HashMap<RegId, usize>,
    /// Accesses through a base register plus a bounded index, by instruction index, and
    /// for each of their spans the base value whose span last passed the test
    /// ([`super::bounded`]; `u64::MAX`, which no span of an area starts at, before one has).
    bounded: HashMap<usize, BoundedSpan>,
    proved: HashMap<BoundedSpan, Variable>,
    /// Stretches of straight-line code whose runs are tested together at their first
    /// instruction ([`super::stretches`]), by that instruction's index, and for each member
    /// of their runs the stretch it belongs to.
    pub(super) stretches: HashMap<usize, Stretch>,
    stretch_of: HashMap<usize, usize>,
}

/// Runs tested together at the stretch's first instruction, whose accesses all come before
/// instruction `end` ([`super::stretches`]).
pub(super) struct Stretch {
    pub runs: Vec<usize>,
    pub end: usize,
}

/// The slot of accesses through no register (absolute or variable addresses).
const OTHER_SLOT: usize = HIT_AREAS - 1;

/// A member access of a run being collected: instruction index, offset, size.
type Member = (usize, i64, usize);
/// The runs still open while planning: base register, whether its accesses are `.shared`
/// (window offsets) rather than global or generic (host addresses), and members so far.
type OpenRuns = Vec<(RegId, bool, Vec<Member>)>;

/// An area an access can be tested against inline.
#[derive(Clone, Copy)]
pub(super) enum Area {
    /// The recent area of a slot of the thread's context.
    Recent(usize),
    /// Bounds the code knows: a variable of the function's frame.
    Fixed(Value, Value),
}

/// What an access knows of the run it belongs to: the run's number, whether the access is
/// its first, its span's bytes from the base register (`[lowest, end)`) and the alignment
/// the base needs.
#[derive(Clone, Copy, Debug)]
pub(super) struct RunSpan {
    pub run: usize,
    pub starts: bool,
    pub lowest: i64,
    pub end: i64,
    pub align: u64,
}

struct CheckRun {
    /// The first and last members' instruction indices.
    first: usize,
    last: usize,
    reg: RegId,
    shared: bool,
    lowest: i64,
    end: i64,
    /// The largest access size: the base must be aligned to it (every member's offset is a
    /// multiple of its own size).
    align: u64,
    /// Whether the span test passed, once the run has started.
    ok: Option<Variable>,
}

impl CheckPlan {
    /// Finds the runs of `f` (two accesses or more) and the slots of its base registers.
    pub(super) fn of(f: &Function) -> CheckPlan {
        let mut plan = CheckPlan::default();
        let Some(body) = &f.body else {
            return plan;
        };
        let labels: HashSet<usize> = f.labels.iter().copied().collect();
        let mut open: OpenRuns = Vec::new();
        // The piece of straight-line code each instruction is in: a label starts one, and
        // whatever closes every open run ends one.
        let mut piece = Vec::with_capacity(body.len());
        let mut pieces = 0usize;
        for (i, ins) in body.iter().enumerate() {
            if labels.contains(&i) {
                plan.close_all(&mut open);
                pieces += 1;
            }
            piece.push(pieces);
            // Each base register of a `.shared` access has a slot of its own too (among the
            // shared-space slots), so that two shared arrays read in turn do not evict each
            // other.
            if let Inst::Ld {
                space: Some(Space::Shared),
                addr,
                ..
            }
            | Inst::St {
                space: Some(Space::Shared),
                addr,
                ..
            }
            | Inst::Atom {
                space: Some(Space::Shared),
                addr,
                ..
            } = &ins.inst
                && let AddrBase::Reg(reg) = addr.base
            {
                let next = plan.slots.len() % OTHER_SLOT;
                plan.slots.entry(reg).or_insert(next);
            }
            if let Some((reg, shared, offset, size)) = run_candidate(&ins.inst) {
                let next = plan.slots.len() % OTHER_SLOT;
                plan.slots.entry(reg).or_insert(next);
                match open
                    .iter_mut()
                    .find(|(r, sh, _)| *r == reg && *sh == shared)
                {
                    Some((_, _, members)) => members.push((i, offset, size)),
                    None => open.push((reg, shared, vec![(i, offset, size)])),
                }
            }
            match &ins.inst {
                // A sync point too: the thread that goes on after it (in a later round) is
                // not the one that tested the span, and the test's result is not saved.
                Inst::Bra { .. }
                | Inst::Call { .. }
                | Inst::Ret
                | Inst::Exit
                | Inst::Sync { .. } => {
                    plan.close_all(&mut open);
                    pieces += 1;
                }
                other => {
                    let (closed, kept) = open.drain(..).partition(|(r, _, _)| other.writes(*r));
                    open = kept;
                    for (reg, shared, members) in closed {
                        plan.close(reg, shared, members);
                    }
                }
            }
        }
        plan.close_all(&mut open);
        plan.plan_stretches(body, &piece);
        plan.bounded = super::bounded::bounded_accesses(f);
        plan.bounded.retain(|i, _| !plan.member.contains_key(i));
        plan
    }

    /// Declares the proof variable of each bounded span (once) and sets it to "nothing
    /// proved", as a thread starts.
    pub(super) fn forget_proofs(&mut self, b: &mut FunctionBuilder) {
        let spans: HashSet<BoundedSpan> = self.bounded.values().copied().collect();
        for span in spans {
            let var = *self
                .proved
                .entry(span)
                .or_insert_with(|| b.declare_var(types::I64));
            let none = b.ins().iconst(types::I64, u64::MAX as i64);
            b.def_var(var, none);
        }
    }

    /// Groups the runs into stretches: in each piece of straight-line code (`piece`, by
    /// instruction, as [`CheckPlan::of`] found them) that has runs, the first run's first
    /// access starts a stretch, which takes every run of the piece whose base register
    /// nothing writes between that access and the run's own first: their spans can be
    /// tested there.
    fn plan_stretches(&mut self, body: &[crate::ast::Instruction], piece: &[usize]) {
        let mut order: Vec<usize> = (0..self.runs.len()).collect();
        order.sort_unstable_by_key(|&k| self.runs[k].first);
        // The stretch each run is tested in, by its first instruction.
        let mut tested_in: Vec<Option<usize>> = vec![None; self.runs.len()];
        let mut at = 0;
        while at < order.len() {
            let start = self.runs[order[at]].first;
            let mut stretch = Stretch {
                runs: Vec::new(),
                end: 0,
            };
            let mut others = Vec::new();
            while at < order.len() && piece[self.runs[order[at]].first] == piece[start] {
                let run = &self.runs[order[at]];
                let moved = body[start..run.first]
                    .iter()
                    .any(|i| i.inst.writes(run.reg));
                if moved {
                    others.push(order[at]);
                } else {
                    stretch.runs.push(order[at]);
                    stretch.end = stretch.end.max(run.last + 1);
                    tested_in[order[at]] = Some(start);
                }
                at += 1;
            }
            // A run left out that starts inside the stretch ends inside it too: its span is
            // tested in the proved copy only, so no member after the stretch may read that
            // test. (In order of first members, one pass reaches the fixed point.)
            for k in others {
                let run = &self.runs[k];
                if run.first < stretch.end {
                    stretch.end = stretch.end.max(run.last + 1);
                }
            }
            self.stretches.insert(start, stretch);
        }
        for (&i, &k) in &self.member {
            if let Some(start) = tested_in[k] {
                self.stretch_of.insert(i, start);
            }
        }
    }

    /// The run access `at` belongs to, if any.
    pub(super) fn run_of(&self, at: usize) -> Option<RunSpan> {
        let &k = self.member.get(&at)?;
        let r = &self.runs[k];
        Some(RunSpan {
            run: k,
            starts: r.first == at,
            lowest: r.lowest,
            end: r.end,
            align: r.align,
        })
    }

    /// The stretch whose runs instruction `at` is a member of, by its first instruction.
    pub(super) fn stretch_of(&self, at: usize) -> Option<usize> {
        self.stretch_of.get(&at).copied()
    }

    /// The recent-area slot of an access through `base`.
    pub(super) fn slot(&self, base: AddrBase) -> usize {
        match base {
            AddrBase::Reg(r) => self.slots.get(&r).copied().unwrap_or(OTHER_SLOT),
            _ => OTHER_SLOT,
        }
    }

    /// The slot of an access through `base` in `space`: a shared-space access has one of its
    /// own (`rt_check` keeps only shared areas there).
    pub(super) fn space_slot(&self, base: AddrBase, space: Option<Space>) -> usize {
        match space {
            Some(Space::Shared) => HIT_AREAS + self.slot(base) % SHARED_HITS,
            _ => self.slot(base),
        }
    }

    fn close_all(&mut self, open: &mut OpenRuns) {
        for (reg, shared, members) in open.drain(..) {
            self.close(reg, shared, members);
        }
    }

    fn close(&mut self, reg: RegId, shared: bool, members: Vec<Member>) {
        if members.len() < 2 {
            return;
        }
        let k = self.runs.len();
        self.start.insert(members[0].0, k);
        for &(i, _, _) in &members {
            self.member.insert(i, k);
        }
        self.runs.push(CheckRun {
            first: members[0].0,
            last: members[members.len() - 1].0,
            reg,
            shared,
            lowest: members.iter().map(|m| m.1).min().unwrap_or(0),
            end: members.iter().map(|m| m.1 + m.2 as i64).max().unwrap_or(0),
            align: members.iter().map(|m| m.2 as u64).max().unwrap_or(1),
            ok: None,
        });
    }
}

/// A global, generic or `.shared` access through a register at an offset aligned to its
/// size: base register, whether it is `.shared`, offset, size.
fn run_candidate(inst: &Inst) -> Option<(RegId, bool, i64, usize)> {
    let (space, vec, ty, addr) = inst.load_or_store()?;
    let AddrBase::Reg(reg) = addr.base else {
        return None;
    };
    let size = ty.bytes() * vec as usize;
    let usable = matches!(space, None | Some(Space::Global | Space::Shared))
        && addr.offset.rem_euclid(size as i64) == 0
        && addr.offset.checked_add(size as i64).is_some();
    usable.then_some((reg, space == Some(Space::Shared), addr.offset, size))
}

/// The elements of an access's register operand: a vector's parts, or the operand alone.
fn elements(op: &Operand) -> &[Operand] {
    match op {
        Operand::Vector(parts) => parts,
        _ => std::slice::from_ref(op),
    }
}

impl Lower<'_, '_> {
    pub(super) fn memory(&mut self, inst: &Inst) {
        match inst {
            Inst::Ld {
                space,
                vec,
                ty,
                d,
                addr,
                order,
            } => {
                if let Some(vars) = self.var_pieces(addr, *ty, *vec) {
                    for (part, var) in elements(d).iter().zip(vars) {
                        let bits = self.b.use_var(var);
                        let v = self.of_int_bits(*ty, bits);
                        self.set(part, *ty, v);
                    }
                    return;
                }
                if let Some(values) = self.hoisted.get(&self.at).cloned() {
                    // A kernel parameter loaded once per block (`Lower::hoist_param_loads`).
                    for (part, v) in elements(d).iter().zip(values) {
                        self.set(part, *ty, v);
                    }
                    return;
                }
                let n = ty.bytes();
                let (at, off) = self.access(addr, n * *vec as usize, *space, false);
                for (k, part) in elements(d).iter().enumerate() {
                    let v = self.load_value(clif(*ty), flags(), at, off + (k * n) as i32);
                    self.set(part, *ty, v);
                }
                // x86 keeps later accesses after a load; the fence also keeps Cranelift
                // from moving them above it.
                if *order == MemOrder::Acquire {
                    self.b.ins().fence();
                }
            }
            Inst::St {
                space,
                vec,
                ty,
                addr,
                a,
                order,
            } => {
                if let Some(vars) = self.var_pieces(addr, *ty, *vec) {
                    for (part, var) in elements(a).iter().zip(vars) {
                        let v = self.get(part, *ty);
                        let bits = self.int_bits(*ty, v);
                        self.b.def_var(var, bits);
                    }
                    return;
                }
                let n = ty.bytes();
                let values: Vec<Value> = elements(a).iter().map(|p| self.get(p, *ty)).collect();
                let (at, off) = self.access(addr, n * *vec as usize, *space, true);
                if *order == MemOrder::Release {
                    self.b.ins().fence();
                }
                for (k, v) in values.into_iter().enumerate() {
                    self.b.ins().store(flags(), v, at, off + (k * n) as i32);
                }
            }
            _ => unreachable!("not a memory instruction"),
        }
    }

    /// The registers holding the elements an access of `vec` elements of `ty` reads or
    /// writes, when its variable lives in registers (see [`super::pieces`]).
    fn var_pieces(&self, a: &Address, ty: crate::ast::Type, vec: u8) -> Option<Vec<Variable>> {
        let AddrBase::Var(VarId::Function(i)) = a.base else {
            return None;
        };
        let n = ty.bytes() as i64;
        (0..vec as i64)
            .map(|k| self.piece_var(i, a.offset + k * n))
            .collect()
    }

    /// The address of an access as a base and a constant offset for the load or store,
    /// checked (unless provably safe) in checked mode.
    pub(super) fn access(
        &mut self,
        a: &Address,
        size: usize,
        space: Option<Space>,
        store: bool,
    ) -> (Value, i32) {
        let (mut base, off) = match a.base {
            AddrBase::Reg(r) => (self.get(&Operand::Reg(r), crate::ast::Type::U64), 0),
            AddrBase::Var(v) => self.var_base(v),
            AddrBase::None => (self.b.ins().iconst(types::I64, 0), 0),
        };
        // A `.shared` address is an offset in the block's window.
        let space = crate::interp::access_space(self.sh.ptx, self.f, space, a);
        if space == Some(Space::Shared) {
            let window = self.shared_base();
            base = self.b.ins().iadd(base, window);
        }
        let off = off.wrapping_add(a.offset);
        // A site of a strided loop is tested only in the loop's tested iterations.
        let site = self.strided_site(self.at);
        let checked = self.sh.checked
            && !self.known_safe(a, size, space, store)
            && !matches!(site, Some((_, true)))
            && !self.stretch_proved(self.at);
        // The parts of a vector access add up to `size` more; keep them all in i32 range.
        let end_fits = off
            .checked_add(size as i64)
            .is_some_and(|end| i32::try_from(end).is_ok());
        match i32::try_from(off) {
            Ok(off) if end_fits && !checked => (base, off),
            _ => {
                let at = self.plus(base, off);
                if checked {
                    let member = self
                        .checks
                        .member
                        .get(&self.at)
                        .filter(|_| !self.tested_copy);
                    let run_ok = member.map(|&k| {
                        let ok = self.checks.runs[k]
                            .ok
                            .expect("a run starts before its members");
                        self.b.use_var(ok)
                    });
                    let slot = self.checks.space_slot(a.base, space);
                    let desc = AccessDesc {
                        size,
                        space,
                        store,
                        slot,
                    };
                    let span = self.checks.bounded.get(&self.at).copied();
                    let proof = span.map(|span| {
                        let base = self.get(&Operand::Reg(span.base), crate::ast::Type::U64);
                        (base, span, self.checks.proved[&span])
                    });
                    self.check(at, desc, run_ok, proof);
                    if let Some((k, false)) = site {
                        self.strided_site_room(k, self.at, at, size as u64, space, slot);
                    }
                }
                (at, 0)
            }
        }
    }

    /// At the first access of a run (before its guard, so that every member sees the
    /// result): tests the run's span once.
    pub(super) fn start_check_run(&mut self, at: usize) {
        let Some(&k) = self.checks.start.get(&at) else {
            return;
        };
        // A stretch's tested copy checks each access on its own; its proved one, none.
        if self.tested_copy || self.stretch_proved(at) {
            return;
        }
        // A run of sites of a strided loop is not tested in the loop's proved iterations.
        let proved_sites = (self.checks.member.iter())
            .filter(|(_, run)| **run == k)
            .all(|(&i, _)| matches!(self.strided_site(i), Some((_, true))));
        if !proved_sites {
            self.test_run(k);
        }
    }

    /// Tests run `k`'s span and keeps the answer in the run's variable.
    fn test_run(&mut self, k: usize) {
        let ok = self.run_span_ok(k);
        let var = self.b.declare_var(types::I8);
        self.b.def_var(var, ok);
        self.checks.runs[k].ok = Some(var);
    }

    /// Whether run `k`'s span lies, aligned, in its slot's recent area (an `i8`).
    fn run_span_ok(&mut self, k: usize) -> Value {
        let (lo, hi, slot, base, align) = self.run_span(k);
        self.in_recent_area(lo, hi, slot, base, align)
    }

    /// Run `k`'s span `[lo, hi)` as host addresses, the recent-area slot it is tested
    /// against, its base address and the alignment the base needs.
    pub(super) fn run_span(&mut self, k: usize) -> (Value, Value, usize, Value, u64) {
        let (reg, shared, lowest, end, align) = {
            let r = &self.checks.runs[k];
            (r.reg, r.shared, r.lowest, r.end, r.align)
        };
        let space = shared.then_some(Space::Shared);
        let slot = self.checks.space_slot(AddrBase::Reg(reg), space);
        let mut base = self.get(&Operand::Reg(reg), crate::ast::Type::U64);
        if shared {
            // A window offset; the span is tested at its host address, in a shared slot.
            let window = self.shared_base();
            base = self.b.ins().iadd(base, window);
        }
        let lo = self.plus(base, lowest);
        let hi = self.plus(base, end);
        (lo, hi, slot, base, align)
    }

    /// Whether `[lo, end)` is non-empty, does not wrap, and lies inside the writable global
    /// area last checked in `slot` (PTX ISA 5.1's rules hold there: inside, writable), and
    /// `base` is a multiple of `align` (the access's own address, or a run's base register).
    pub(super) fn in_recent_area(
        &mut self,
        lo: Value,
        end: Value,
        slot: usize,
        base: Value,
        align: u64,
    ) -> Value {
        let bounds = self.area_bounds(Area::Recent(slot));
        self.in_area(lo, end, bounds, base, align)
    }

    /// Whether `lo..end` is non-empty and inside `area`, and `base` a multiple of `align`.
    pub(super) fn in_area(
        &mut self,
        lo: Value,
        end: Value,
        (area_lo, area_hi): (Value, Value),
        base: Value,
        align: u64,
    ) -> Value {
        let nonempty = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, lo);
        let above = self
            .b
            .ins()
            .icmp(IntCC::UnsignedGreaterThanOrEqual, lo, area_lo);
        let below = self
            .b
            .ins()
            .icmp(IntCC::UnsignedLessThanOrEqual, end, area_hi);
        let inside = self.b.ins().band(above, below);
        let misaligned = self.b.ins().band_imm_s(base, align as i64 - 1);
        let aligned = self.b.ins().icmp_imm_s(IntCC::Equal, misaligned, 0);
        let ok = self.b.ins().band(nonempty, inside);
        self.b.ins().band(ok, aligned)
    }

    /// [`Self::in_area`] as branches: to `inside` when it holds, else to `outside`. Each
    /// test is one compare and jump (a recent area's bound read by the compare itself), all
    /// predicted alike, where the value form needs a flag, an `and` and a register for each.
    pub(super) fn branch_in_area(
        &mut self,
        lo: Value,
        end: Value,
        area: Area,
        (base, align): (Value, u64),
        inside: Block,
        outside: Block,
    ) {
        let pass = |l: &mut Self, ok: Value| {
            let next = l.b.create_block();
            l.b.ins().brif(ok, next, &[], outside, &[]);
            l.b.switch_to_block(next);
            l.b.seal_block(next);
        };
        let misaligned = self.b.ins().band_imm_s(base, align as i64 - 1);
        let aligned = self.b.ins().icmp_imm_s(IntCC::Equal, misaligned, 0);
        pass(self, aligned);
        let area_lo = self.area_bound(area, false);
        let above = (self.b.ins()).icmp(IntCC::UnsignedGreaterThanOrEqual, lo, area_lo);
        pass(self, above);
        let area_hi = self.area_bound(area, true);
        let below = (self.b.ins()).icmp(IntCC::UnsignedLessThanOrEqual, end, area_hi);
        pass(self, below);
        let nonempty = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, lo);
        self.b.ins().brif(nonempty, inside, &[], outside, &[]);
    }

    /// The low and high bounds of an area that an access can be tested against inline.
    pub(super) fn area_bounds(&mut self, area: Area) -> (Value, Value) {
        (self.area_bound(area, false), self.area_bound(area, true))
    }

    /// The low or high bound of an area that an access can be tested against inline.
    fn area_bound(&mut self, area: Area, high: bool) -> Value {
        match area {
            Area::Recent(slot) => {
                let field = (offset_of!(ThreadCtx, hits) + 16 * slot + 8 * high as usize) as i32;
                let ctx = self.ctx;
                self.b.ins().load(types::I64, trusted(), ctx, field)
            }
            Area::Fixed(lo, hi) => {
                if high {
                    hi
                } else {
                    lo
                }
            }
        }
    }

    /// The function's one `.local` variable in its frame, when it has exactly one (as the
    /// local depot of compiled CUDA): a `.local` access inside it is valid, whatever else
    /// the thread's frames hold.
    fn only_local_var(&self) -> Option<u32> {
        let mut locals = (self.f.vars.iter().enumerate())
            .filter(|(i, v)| v.space == Space::Local && !self.in_registers(*i as u32));
        match (locals.next(), locals.next()) {
            (Some((i, _)), None) => Some(i as u32),
            _ => None,
        }
    }

    /// Where an access of `space` can be tested inline: the recent area of `slot` or, for a
    /// `.local` access, the function's only local variable ([`Self::only_local_var`]); None
    /// when neither applies.
    pub(super) fn known_area(&mut self, space: Option<Space>, slot: usize) -> Option<Area> {
        match space {
            None | Some(Space::Global | Space::Shared) => Some(Area::Recent(slot)),
            Some(Space::Local) => {
                let var = self.only_local_var()?;
                let area_lo = self.frame_var(var);
                let area_hi = self.plus(area_lo, self.f.var(var).size as i64);
                Some(Area::Fixed(area_lo, area_hi))
            }
            _ => None,
        }
    }

    /// Checks an access: passes if its run's span test passed (`run_ok`), then, for global,
    /// generic and shared-space accesses, if it lies aligned in its slot's recent area, for
    /// local ones if it lies aligned in the function's only local variable; else calls
    /// `rt_check`.
    ///
    /// A bounded access (`proof`: its base's value, span and proof variable) first compares
    /// the base with the value whose span was proved; after a test of its own passes, it
    /// tests its whole span and, if that passes, proves it for this base value.
    fn check(
        &mut self,
        at: Value,
        d: AccessDesc,
        run_ok: Option<Value>,
        proof: Option<(Value, BoundedSpan, Variable)>,
    ) {
        // What runs only when an inline test fails is laid out at the end of the function
        // (cold blocks), away from the straight-line code the tests sit in.
        let slow = self.b.create_block();
        self.b.set_cold_block(slow);
        let done = self.b.create_block();
        let began = self.b.current_block();
        if let Some(ok) = run_ok {
            let inline = self.b.create_block();
            self.b.set_cold_block(inline);
            self.b.ins().brif(ok, done, &[], inline, &[]);
            self.b.switch_to_block(inline);
            self.b.seal_block(inline);
        }
        let mut passed = done;
        if let Some((base, _, var)) = proof {
            let known = self.b.use_var(var);
            let same = self.b.ins().icmp(IntCC::Equal, base, known);
            let (inline, learn) = (self.b.create_block(), self.b.create_block());
            self.b.set_cold_block(inline);
            self.b.set_cold_block(learn);
            self.b.ins().brif(same, done, &[], inline, &[]);
            self.b.switch_to_block(inline);
            self.b.seal_block(inline);
            passed = learn;
        }
        let area = self.known_area(d.space, d.slot);
        match area {
            Some(area) => {
                let end = self.b.ins().iadd_imm_s(at, d.size as i64);
                self.branch_in_area(at, end, area, (at, d.size as u64), passed, slow);
            }
            None => {
                self.b.ins().jump(slow, &[]);
            }
        }
        if let Some((base, span, var)) = proof {
            // The access passed, so its area is in its slot now (or it is the local
            // variable): try the whole span there.
            self.b.switch_to_block(passed);
            let lo = self.plus(base, span.lowest);
            let hi = self.plus(base, span.end);
            let ok = match area {
                Some(area) => {
                    let bounds = self.area_bounds(area);
                    self.in_area(lo, hi, bounds, base, span.align)
                }
                None => self.b.ins().iconst(types::I8, 0),
            };
            let known = self.b.use_var(var);
            let known = self.b.ins().select(ok, base, known);
            self.b.def_var(var, known);
            self.b.ins().jump(done, &[]);
        }
        self.b.switch_to_block(slow);
        self.b.seal_block(slow);
        let desc = self.iconst(types::I32, d.pack() as u64);
        let site = self.iconst(types::I64, self.site);
        let ctx = self.ctx;
        let failed = self
            .cold_helper("rt_check", &[ctx, at, desc, site])
            .expect("rt_check returns a status");
        self.fail_if(failed);
        self.b.ins().jump(passed, &[]);
        // Every edge into `done` (and `learn`) is made: sealed, the code after the check
        // reads registers as the values they had before it (see `Lower::fail_if`).
        self.b.seal_block(done);
        if passed != done {
            self.b.seal_block(passed);
        }
        self.b.switch_to_block(done);
        self.note_dominated(done, began);
    }

    /// Whether an access is inside a variable, aligned, in its space and allowed, whatever
    /// the thread (module variables and frame variables are 16-byte aligned).
    pub(super) fn known_safe(
        &self,
        a: &Address,
        size: usize,
        space: Option<Space>,
        store: bool,
    ) -> bool {
        let AddrBase::Var(v) = a.base else {
            return false;
        };
        let (decl, writable) = match v {
            VarId::Module(i) => {
                let d = &self.sh.ptx.vars[i as usize];
                (d, d.space != Space::Const)
            }
            VarId::Function(i) => {
                let d = self.f.var(i);
                let kernel_param =
                    self.kernel_params.is_some() && matches!(d.role, VarRole::Param(_));
                (d, !kernel_param)
            }
        };
        a.offset >= 0
            && size <= crate::jit::layout::VAR_ALIGN as usize
            && a.offset as usize + size <= decl.size
            && (a.offset as usize).is_multiple_of(size)
            && space.is_none_or(|s| s == decl.space)
            && (!store || writable)
    }
}
