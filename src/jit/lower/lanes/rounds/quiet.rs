//! The quiet path of a segment: the group from a barrier to its next stop where all its
//! lanes run together and it touches no memory, as scalars where the registers are
//! uniform or sequences.
//!
//! A tree reduction's block makes ten rounds, and in most of them most groups have
//! nothing to do: `if (t < half) s[t] += s[t + half]` is false in every lane of the warps
//! at and above `half`, decided on the first and last lanes. The full segment still sets
//! up its lane masks, joins them where the branch lands and saves them at the stop, which
//! costs a group about as much as a round with work in it. The quiet path runs first: the
//! segment's code lowered with every lane running, following uniform branches and the
//! per-thread branches its first and last lanes decide for all lanes. It stops, as the
//! full segment would, at the first barrier it reaches, saving the registers it wrote; at
//! an unguarded `ret` or `exit` (or the kernel's end) the group ends. At anything else (a
//! load or store, a guarded exit, a warp collective, a per-thread branch the lanes may
//! split at, a guard that differs from lane to lane, a sequence that wrapped) it goes to
//! the full segment's start instead. It has written nothing by then (the state is as the
//! round found it), so the full segment runs the group from the barrier as if the quiet
//! path had not been there.
//!
//! Where the groups after it would do just what it did (every choice on the way the same
//! for every thread after its own, see [`Group::skip_alike`]), a quiet path that stops or
//! ends takes them along: the round does not visit them. Where it takes every group after
//! it, they become its tail and owe its stop instead of getting it stored (`tail.rs`).

use super::{Group, Res, fixed_shape};
use crate::ast::{AddrBase, Guard, Inst, RegId, Space};
use crate::jit::lower::lanes::{Refused, Shape, V};
use crate::jit::lower::liveness::{self, RegSet};
use crate::jit::lower::{GroupPlan, trusted};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{Block, InstBuilder, Value, types};
use std::collections::{BTreeMap, BTreeSet};

/// What the quiet path does at an instruction.
#[derive(Clone, Copy, PartialEq)]
enum Step {
    /// A barrier or collective the group stops at.
    Stop,
    /// An unguarded `ret` or `exit`: every lane ends (they all run on the quiet path).
    End,
    /// Something only the full segment does.
    Leave,
    /// A branch: uniform, or per-thread and decided for all lanes or none.
    Branch,
    /// Computed as the full segment computes it.
    Compute,
}

impl<'l, 'a, 'f, const P: usize> Group<'l, 'a, 'f, P> {
    /// Lowers the quiet path of segment `k` (from barrier k, not a collective), going to
    /// `full` (the converged version's start, or the segment's) where it cannot go on, and
    /// straight to `parted` (the segment's) where its lanes part: the converged version
    /// would come to the same branch with the same values and part there too. Its first
    /// block, or None if it reaches no stop or end.
    pub(super) fn quiet(&mut self, k: usize, full: Block, parted: Block) -> Res<Option<Block>> {
        let body = self.body();
        let n = body.len();
        let start = self.points[k - 1] + 1;
        // The instructions it may reach, and the blocks they make.
        let mut reach = vec![false; n];
        let mut leaders = BTreeSet::from([start]);
        let mut stack = vec![start];
        let (mut stops, mut ends) = (false, false);
        while let Some(i) = stack.pop() {
            if i >= n {
                // Past the last instruction every lane ends.
                ends = true;
                continue;
            }
            if reach[i] {
                continue;
            }
            reach[i] = true;
            let next = match self.step(i) {
                Step::Stop => {
                    stops = true;
                    continue;
                }
                Step::End => {
                    ends = true;
                    continue;
                }
                Step::Leave => continue,
                Step::Compute => vec![i + 1],
                Step::Branch => {
                    let next = self.branch_targets(i);
                    match self.quiet_real_branch(i) {
                        true => leaders.extend(next.iter().copied()),
                        // A per-thread branch goes on in the block it is in, as the full
                        // segment does (what the block knows of its values holds on).
                        false => leaders.extend(next.first().copied()),
                    }
                    next
                }
            };
            stack.extend(next);
        }
        if !stops && !ends {
            return Ok(None);
        }
        leaders.retain(|&l| l < n);
        let blocks: BTreeMap<usize, Block> = leaders
            .iter()
            .map(|&l| (l, self.lanes.l.b.create_block()))
            .collect();
        let f = self.lanes.l.f;
        let mut read: RegSet = vec![0; f.regs.len().div_ceil(64).max(1)];
        let mut written = read.clone();
        for i in (0..n).filter(|&i| reach[i] && self.step(i) != Step::Stop) {
            let ins = &body[i];
            for r in ins.inst.written() {
                liveness::add(&mut written, r);
            }
            for r in ins.inst.reads().into_iter().chain(ins.guard.map(|g| g.reg)) {
                liveness::add(&mut read, r);
            }
        }

        let first = self.b().create_block();
        self.b().switch_to_block(first);
        self.quiet_start(k, &written);
        let entry = blocks[&start];
        self.b().ins().jump(entry, &[]);
        // The registers it only reads are loaded by each block that reads them (a value
        // loaded at the start would live, and be spilled, across the path).
        let only_read: RegSet = (read.iter().zip(&written)).map(|(r, w)| r & !w).collect();
        let mut stop_blocks: BTreeMap<usize, Block> = BTreeMap::new();
        let end = self.b().create_block();
        for &l in &leaders {
            self.quiet_block(
                l,
                &blocks,
                &only_read,
                &mut stop_blocks,
                (full, parted, end),
            )?;
        }
        for (i, blk) in stop_blocks {
            self.b().switch_to_block(blk);
            self.quiet_stop(k, i, &written, full);
        }
        if ends {
            self.b().switch_to_block(end);
            self.quiet_end(k, full);
        }
        Ok(Some(first))
    }

    /// What the quiet path does at instruction `i` (what the full segment's `inst` does
    /// with it, for the instructions it may do too).
    fn step(&self, i: usize) -> Step {
        let body = self.body();
        let ins = &body[i];
        let per_thread_guard = ins
            .guard
            .is_some_and(|g| fixed_shape(&self.lanes, g.reg) != Shape::Uniform);
        match &ins.inst {
            Inst::Sync { .. } if self.through(i) => Step::Leave,
            Inst::Sync { .. } => Step::Stop,
            Inst::Ret | Inst::Exit if ins.guard.is_none() => Step::End,
            Inst::Ret | Inst::Exit => Step::Leave,
            Inst::Bra { .. } => Step::Branch,
            Inst::Ld { space, addr, .. }
                if matches!(addr.base, AddrBase::Var(_))
                    && !matches!(
                        self.memory_space(*space, addr),
                        Some(Space::Global | Space::Shared)
                    )
                    && !per_thread_guard =>
            {
                Step::Compute
            }
            Inst::Ld { .. } | Inst::St { .. } | Inst::Atom { .. } => Step::Leave,
            Inst::Fence | Inst::Call { .. } => Step::Leave,
            _ if per_thread_guard => Step::Leave,
            _ => Step::Compute,
        }
    }

    /// Whether the quiet path takes branch `i` as a branch in the group function: on a
    /// predicate uniform in the group, to an exit too (where its path ends; the full
    /// segment's [`Group::real_branch`] leaves exits to its lane masks).
    fn quiet_real_branch(&self, i: usize) -> bool {
        let g = self.body()[i].guard;
        g.is_none_or(|g| fixed_shape(&self.lanes, g.reg) == Shape::Uniform)
    }

    /// Where a branch may go on the quiet path (a per-thread one to either side).
    fn branch_targets(&self, i: usize) -> Vec<usize> {
        let ins = &self.body()[i];
        let Inst::Bra { target, .. } = ins.inst else {
            unreachable!("a branch");
        };
        let t = self.lanes.l.f.labels[target.0 as usize];
        match ins.guard {
            None => vec![t],
            Some(_) => vec![t, i + 1],
        }
    }

    /// The registers the quiet path writes, from the state where barrier `k` left them
    /// (zero for those it writes first).
    fn quiet_start(&mut self, k: usize, written: &RegSet) {
        let live = &self.plan_live[k - 1];
        let f = self.lanes.l.f;
        let (mut saved, mut fresh) = (BTreeSet::new(), Vec::new());
        for r in (0..f.regs.len()).map(|r| RegId(r as u32)) {
            match (liveness::has(written, r), liveness::has(live, r)) {
                (true, true) => _ = saved.insert(r),
                (true, false) => fresh.push(r),
                _ => {}
            }
        }
        self.load_regs(saved);
        let zero = self.b().ins().iconst(types::I32, 0);
        let zero_v = self.b().ins().splat(V, zero);
        for r in fresh {
            let k = r.0 as usize;
            match fixed_shape(&self.lanes, r) {
                Shape::Varying => {
                    for var in self.lanes.vregs[k] {
                        self.b().def_var(var, zero_v);
                    }
                }
                _ => {
                    let z = self.lanes.l.zero(f.reg(r).ty);
                    let var = self.lanes.l.regs[k];
                    self.b().def_var(var, z);
                }
            }
        }
        // Every lane runs (the lanes that exited, if any, take writes no one reads: their
        // registers are never read again).
        let every = self.every_lane();
        let (alive, cur) = (self.alive, self.cur);
        self.b().def_var(alive, every);
        self.b().def_var(cur, every);
        // (Lanes may have exited: no collective may leave their sources unmasked.)
        self.every_alive = false;
        let wrap = self.lanes.wrap.expect("set");
        let no = self.b().ins().iconst(types::I8, 0);
        self.b().def_var(wrap, no);
        self.lanes.wrap_unchecked = false;
        // The groups after this one are the threads after its own only in a block of one
        // dimension.
        let alike = match self.lanes.alike.is_some() {
            true => {
                let ntid = self
                    .lanes
                    .l
                    .dims
                    .as_ref()
                    .expect("kernel_dims sets them")
                    .ntid;
                let yz = self.b().ins().bor(ntid[1], ntid[2]);
                self.b().ins().icmp_imm_u(IntCC::Equal, yz, 1)
            }
            false => no,
        };
        let var = self.alike;
        self.b().def_var(var, alike);
    }

    /// Lowers the quiet path's block starting at instruction `l`; it goes to `full` where
    /// it cannot go on, to `parted` where its lanes part and to `end` where every lane
    /// ends.
    fn quiet_block(
        &mut self,
        l: usize,
        blocks: &BTreeMap<usize, Block>,
        only_read: &RegSet,
        stops: &mut BTreeMap<usize, Block>,
        (full, parted, end): (Block, Block, Block),
    ) -> Res<()> {
        self.b().switch_to_block(blocks[&l]);
        self.fresh_block();
        let body = self.body();
        let mut reads = BTreeSet::new();
        for (i, ins) in body.iter().enumerate().skip(l) {
            if i != l && blocks.contains_key(&i) {
                break;
            }
            let step = self.step(i);
            if step != Step::Stop {
                let regs = ins.inst.reads().into_iter().chain(ins.guard.map(|g| g.reg));
                reads.extend(regs.filter(|r| liveness::has(only_read, *r)));
            }
            let goes_on = match step {
                Step::Compute => true,
                Step::Branch => ins.guard.is_some() && !self.quiet_real_branch(i),
                Step::Stop | Step::End | Step::Leave => false,
            };
            if !goes_on {
                break;
            }
        }
        self.load_regs(reads);
        let mut i = l;
        loop {
            if i >= body.len() {
                self.b().ins().jump(end, &[]);
                return Ok(());
            }
            if i != l
                && let Some(&b) = blocks.get(&i)
            {
                self.b().ins().jump(b, &[]);
                return Ok(());
            }
            let ins = &body[i];
            self.lowering(i);
            match self.step(i) {
                Step::Stop => {
                    let stop = *stops
                        .entry(i)
                        .or_insert_with(|| self.lanes.l.b.create_block());
                    self.b().ins().jump(stop, &[]);
                    return Ok(());
                }
                Step::End => {
                    self.b().ins().jump(end, &[]);
                    return Ok(());
                }
                Step::Leave => {
                    self.b().ins().jump(full, &[]);
                    return Ok(());
                }
                Step::Branch => {
                    if !self.quiet_branch(i, blocks, (parted, end)) {
                        return Ok(());
                    }
                }
                Step::Compute => self
                    .pure(i, ins)
                    .map_err(|Refused(why)| Refused(format!("{}: {why}", self.lanes.text(i))))?,
            }
            i += 1;
        }
    }

    /// A branch on the quiet path: uniform, or per-thread where the sequence comparison
    /// it tests sends every lane the same way (else the full segment takes the group);
    /// whether the block goes on after it (a per-thread branch no lane takes).
    fn quiet_branch(
        &mut self,
        i: usize,
        blocks: &BTreeMap<usize, Block>,
        (parted, end): (Block, Block),
    ) -> bool {
        let ins = &self.body()[i];
        let next = self.branch_targets(i);
        // A target past the last instruction is the end of every lane.
        let to = blocks.get(&next[0]).copied().unwrap_or(end);
        let Some(g) = ins.guard else {
            self.b().ins().jump(to, &[]);
            return false;
        };
        if self.quiet_real_branch(i) {
            // Alike in the group's lanes, not always in the block's (`%tid.x >> 5`).
            if !(self.lanes.alike.as_ref()).is_some_and(|a| a.uniform(g.reg)) {
                self.not_alike();
            }
            let on = blocks.get(&next[1]).copied().unwrap_or(end);
            let p = self.lanes.l.b.use_var(self.lanes.l.regs[g.reg.0 as usize]);
            match g.negated {
                true => self.b().ins().brif(p, on, &[], to, &[]),
                false => self.b().ins().brif(p, to, &[], on, &[]),
            };
            return false;
        }
        self.alike_choice(g);
        self.branch_together(g, to, parted)
    }

    /// A per-thread branch on the quiet path: the groups after this one go the same way if
    /// it compares a block sequence with block-uniform values and the threads from this
    /// group's first to the block's last all give one answer.
    fn alike_choice(&mut self, g: Guard) {
        let Some(c) = self.lanes.seq_cmps.get(&g.reg).copied().filter(|c| c.alike) else {
            self.not_alike();
            return;
        };
        let dims = self.lanes.l.dims.as_ref().expect("kernel_dims sets them");
        let (ntid, tid) = (dims.ntid[0], dims.tid[0]);
        let first = self.b().use_var(tid);
        let lanes = self.b().ins().isub(ntid, first);
        let lanes = self.lanes.l.uextend(types::I64, lanes);
        let (_, unsure) = self.lanes.seq_answer_over(c, g.negated, Some(lanes));
        let var = self.alike;
        let alike = self.b().use_var(var);
        let alike = self.b().ins().band_not(alike, unsure);
        self.b().def_var(var, alike);
    }

    fn not_alike(&mut self) {
        let no = self.b().ins().iconst(types::I8, 0);
        let var = self.alike;
        self.b().def_var(var, no);
    }

    /// The quiet path's stop at barrier `i`: the registers it wrote that live across the
    /// barrier saved (the others are in the state as they were), and the stop counted.
    fn quiet_stop(&mut self, k: usize, i: usize, written: &RegSet, full: Block) {
        self.unless_wrapped(full);
        let number = self.points.iter().position(|&p| p == i).expect("a point") + 1;
        let live = self.plan_live[number - 1].clone();
        let saved: Vec<RegId> = (0..self.lanes.l.f.regs.len())
            .map(|r| RegId(r as u32))
            .filter(|&r| liveness::has(&live, r) && liveness::has(written, r))
            .collect();
        let gstate = self.gstate;
        self.save_quiet(gstate, k, number as u32, &saved);
        let alike =
            (self.lanes.alike.as_ref()).is_some_and(|a| saved.iter().all(|&r| a.uniform(r)));
        if alike {
            self.skip_alike(k, number as u32, &saved);
        }
        self.count_stop(number);
    }

    /// Where the quiet path stops or ends: on to the full segment if a sequence wrapped on
    /// the way (its decisions may not hold), else on in a new block.
    fn unless_wrapped(&mut self, full: Block) {
        self.fresh_block();
        let w = self.lanes.wrap.expect("set");
        let wrapped = self.b().use_var(w);
        let go = self.b().create_block();
        self.b().ins().brif(wrapped, full, &[], go, &[]);
        self.b().switch_to_block(go);
    }

    /// Group state `gstate`, at barrier `k` when its quiet path began, stopped at sync point
    /// `number` (or ended: [`GroupPlan::ENDED`]) having written registers `saved`.
    fn save_quiet(&mut self, gstate: Value, k: usize, number: u32, saved: &[RegId]) {
        for &r in saved {
            self.store_reg(r, gstate);
        }
        if number != k as u32 {
            let n = self.b().ins().iconst(types::I32, number as i64);
            self.b()
                .ins()
                .store(trusted(), n, gstate, GroupPlan::RESUME as i32);
        }
    }

    /// Where every choice of the quiet path went the same way for the groups after this one
    /// (`alike`), those that stand at barrier `k` too would repeat what it did: they do so
    /// here, stopping at `number` (or ending) with registers `saved` (block-uniform, so the
    /// same in each), and the round goes on from the first group that does not. Where that
    /// is every group after this one, they are left owing the stop instead, as its tail
    /// (`tail.rs`; a tail already there owes it too, or ends).
    ///
    /// Why they would repeat it (`alike.rs`): every group that has not ended stopped once
    /// each round, so those at `k` passed as many barriers as this one and hold the same
    /// block-uniform values. The path's uniform branches test block-uniform predicates, and
    /// its per-thread branches were decided for every thread from this group's first to
    /// the block's last: they take the same way.
    fn skip_alike(&mut self, k: usize, number: u32, saved: &[RegId]) {
        let (head, check, take, passed, out, done) = (
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
        );
        let (round, var) = (self.round, self.alike);
        let (states, groups, size) = (self.states, self.groups, self.size);
        let alike = self.b().use_var(var);
        // The groups up to a tail's first (whose own states are not where they stand).
        let limit = self.b().use_var(round.tail);
        // The loop's group, its state, how many it took and whether it passed over none
        // that ended, in block parameters (a variable's count would go through its spill
        // slot at every group).
        let g = self.b().use_var(round.group);
        let next = self.b().ins().iadd_imm_s(g, 1);
        let at = self.b().ins().imul_imm_u(next, size as i64);
        let next_state = self.b().ins().iadd(states, at);
        let none = self.b().ins().iconst(types::I32, 0);
        let yes = self.b().ins().iconst(types::I8, 1);
        for ty in [types::I64, types::I64, types::I32, types::I8] {
            self.b().append_block_param(head, ty);
        }
        // The round goes on after group `last`, with `stops` more stops counted.
        self.b().append_block_param(done, types::I64);
        self.b().append_block_param(done, types::I32);
        let start = [next.into(), next_state.into(), none.into(), yes.into()];
        let not_alike = [g.into(), none.into()];
        self.b().ins().brif(alike, head, &start, done, &not_alike);
        self.b().switch_to_block(head);
        let [h, hstate, taken, clean] = self.b().block_params(head)[..] else {
            unreachable!("four parameters")
        };
        let more = self.b().ins().icmp(IntCC::UnsignedLessThan, h, limit);
        self.b().ins().brif(more, check, &[], out, &[]);
        self.b().switch_to_block(check);
        let resume = self
            .b()
            .ins()
            .load(types::I32, trusted(), hstate, GroupPlan::RESUME as i32);
        let after = self.b().ins().iadd_imm_s(h, 1);
        let after_state = self.b().ins().iadd_imm_s(hstate, size as i64);
        let there = self.b().ins().icmp_imm_u(IntCC::Equal, resume, k as i64);
        self.b().ins().brif(there, take, &[], passed, &[]);
        // Groups that ended are passed over; any other stops the skip.
        self.b().switch_to_block(passed);
        let gone = (self.b().ins()).icmp_imm_u(IntCC::Equal, resume, GroupPlan::ENDED as i64);
        let no = self.b().ins().iconst(types::I8, 0);
        let on = [after.into(), after_state.into(), taken.into(), no.into()];
        self.b().ins().brif(gone, head, &on, out, &[]);
        self.b().switch_to_block(take);
        self.save_quiet(hstate, k, number, saved);
        let one_more = self.b().ins().iadd_imm_s(taken, 1);
        let on = [
            after.into(),
            after_state.into(),
            one_more.into(),
            clean.into(),
        ];
        self.b().ins().jump(head, &on);
        // On from the group before the first not taken, their stops counted as
        // `count_stop` counts the group's own.
        self.b().switch_to_block(out);
        let tail_may_form = self.tail_may_form(number);
        if tail_may_form || number == GroupPlan::ENDED {
            // Every group up to the tail taken, none passed over, and the tail's (if any)
            // standing here too: this group's stop is the snapshot and the groups after it
            // its tail, or they end with it.
            let (form, keep) = (self.b().create_block(), self.b().create_block());
            // (A tail has a group in it: the last group leaves none.)
            let reached = self.b().ins().icmp(IntCC::Equal, h, limit);
            let reached = self.b().ins().band(reached, clean);
            let after_it = self.b().ins().icmp(IntCC::UnsignedLessThan, next, groups);
            let reached = self.b().ins().band(reached, after_it);
            let snapshot = self.snapshot;
            let standing =
                self.b()
                    .ins()
                    .load(types::I32, trusted(), snapshot, GroupPlan::RESUME as i32);
            let standing = self.b().ins().icmp_imm_u(IntCC::Equal, standing, k as i64);
            let no_tail = self.b().ins().icmp(IntCC::Equal, limit, groups);
            let tail_here = self.b().ins().bor(standing, no_tail);
            let forms = self.b().ins().band(reached, tail_here);
            self.b().ins().brif(forms, form, &[], keep, &[]);
            self.b().switch_to_block(form);
            let stops = if tail_may_form {
                self.form_tail(k, number, saved, no_tail);
                let owed = self.b().ins().isub(groups, limit);
                let owed = self.b().ins().ireduce(types::I32, owed);
                self.b().ins().iadd(taken, owed)
            } else {
                self.end_tail();
                taken
            };
            let last = self.b().ins().iadd_imm_s(groups, -1);
            self.b().ins().jump(done, &[last.into(), stops.into()]);
            self.b().switch_to_block(keep);
        }
        let last = self.b().ins().iadd_imm_s(h, -1);
        self.b().ins().jump(done, &[last.into(), taken.into()]);
        self.b().switch_to_block(done);
        let [last, stops] = self.b().block_params(done)[..] else {
            unreachable!("two parameters")
        };
        self.b().def_var(round.group, last);
        // Counted as `count_stop` counts the group's own.
        let count = match number {
            GroupPlan::ENDED => None,
            _ if self.ids[number as usize - 1].is_some() => Some(round.stopped),
            _ => Some(round.collected),
        };
        if let Some(count) = count {
            let n = self.b().use_var(count);
            let n = self.b().ins().iadd(n, stops);
            self.b().def_var(count, n);
        }
    }

    /// The quiet path's end from barrier `k`: every lane of the group ended (unless a
    /// sequence wrapped on the way, which the full segment then hands over), and so do the
    /// groups after it where they would repeat it.
    fn quiet_end(&mut self, k: usize, full: Block) {
        self.unless_wrapped(full);
        if self.lanes.alike.is_some() {
            self.skip_alike(k, GroupPlan::ENDED, &[]);
        }
        let (round, gstate) = (self.round, self.gstate);
        round.ended(self.b(), gstate);
    }
}
