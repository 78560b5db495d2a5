//! The tail: the groups after one whose quiet path took them along, left owing its stop.
//!
//! In a tree reduction's late rounds one group works and the quiet path of the next takes
//! the rest along ([`Group::skip_alike`]): each of them gets the registers that path saved
//! and its stop, a store or two a group, every round. They would get the same every time.
//! So where the path took every group after it (none had ended), it writes its stop once,
//! into the state area after the groups' (the *snapshot*: the resume number and the
//! block-uniform registers live there), and the groups after it become its *tail*: their
//! own states are left as they were, and they owe the snapshot. The next round's quiet
//! path of the same group (or of one before it) finds them standing where the snapshot
//! says and takes them along again by writing the snapshot anew.
//!
//! Whatever else reaches a group of the tail pays its debt first ([`Group::settle_tail`]):
//! the round coming to it (the group before it did not take it along), and a hand-over of
//! the block, which reads every group's state. Only block-uniform registers are owed, and
//! each group of the tail stands where the snapshot says, so every register it owes holds
//! the snapshot's value in it: the tail's groups end as the stores of the skip would have
//! left them.

use super::{Group, Home, RegId, Shape, V, fixed_shape, home_at};
use crate::jit::lower::liveness;
use crate::jit::lower::{GroupPlan, clif, trusted};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

impl<const P: usize> Group<'_, '_, '_, P> {
    /// Whether a quiet path stopping at sync point `number` may leave a tail: a barrier
    /// (the tail's groups are counted as stopped there) in a kernel without warp
    /// collectives (whose rounds of the groups at collectives the tail would not follow).
    pub(super) fn tail_may_form(&self, number: u32) -> bool {
        number != GroupPlan::ENDED
            && self.ids[number as usize - 1].is_some()
            && self.ids.iter().all(|id| id.is_some())
    }

    /// The registers a group standing at sync point `number` owes: those live there that
    /// every thread of the block holds alike.
    fn owed_regs(&self, number: usize) -> Vec<RegId> {
        let Some(alike) = &self.lanes.alike else {
            return Vec::new();
        };
        let live = &self.plan_live[number - 1];
        (0..self.lanes.l.f.regs.len())
            .map(|r| RegId(r as u32))
            .filter(|&r| liveness::has(live, r) && alike.uniform(r))
            .collect()
    }

    /// Register `r`'s home copied from state `from` to state `to`.
    fn copy_home(&mut self, r: RegId, from: Value, to: Value) {
        let home = home_at(self.homes[r.0 as usize]);
        match fixed_shape(&self.lanes, r) {
            Shape::Varying => {
                for p in 0..P {
                    let off = (home + 16 * p as u32) as i32;
                    let v = self.b().ins().load(V, trusted(), from, off);
                    self.b().ins().store(trusted(), v, to, off);
                }
            }
            _ => {
                debug_assert!(matches!(self.homes[r.0 as usize], Home::Scalar { .. }));
                let ty = clif(self.lanes.l.f.reg(r).ty);
                let v = self.lanes.l.load_value(ty, trusted(), from, home as i32);
                self.b().ins().store(trusted(), v, to, home as i32);
            }
        }
    }

    /// The running group, from barrier `k` stopped at sync point `number` with its state
    /// saved (registers `saved` written on the way), leaves the groups after it as its
    /// tail: its stop and owed registers into the snapshot. Where a tail stood at `k`
    /// already, the snapshot is of the last round's stop there: from `k` back to `k`, only
    /// the registers written on the way are new.
    pub(super) fn form_tail(&mut self, k: usize, number: u32, saved: &[RegId], new: Value) {
        let (gstate, snapshot) = (self.gstate, self.snapshot);
        let owed = self.owed_regs(number as usize);
        if number as usize == k {
            let (all, some, join) = (
                self.b().create_block(),
                self.b().create_block(),
                self.b().create_block(),
            );
            self.b().ins().brif(new, all, &[], some, &[]);
            self.b().switch_to_block(some);
            // The skip needs every saved register block-uniform, and saved ones are live.
            debug_assert!(saved.iter().all(|r| owed.contains(r)));
            for &r in saved {
                self.copy_home(r, gstate, snapshot);
            }
            self.b().ins().jump(join, &[]);
            self.b().switch_to_block(all);
            for &r in &owed {
                self.copy_home(r, gstate, snapshot);
            }
            self.b().ins().jump(join, &[]);
            self.b().switch_to_block(join);
            return self.snapshot_stop(number);
        }
        for r in owed {
            self.copy_home(r, gstate, snapshot);
        }
        self.snapshot_stop(number);
    }

    /// The snapshot stands at `number`, and the groups after the running one are its tail.
    fn snapshot_stop(&mut self, number: u32) {
        let snapshot = self.snapshot;
        let n = self.b().ins().iconst(types::I32, number as i64);
        self.b()
            .ins()
            .store(trusted(), n, snapshot, GroupPlan::RESUME as i32);
        let round = self.round;
        let g = self.b().use_var(round.group);
        let first = self.b().ins().iadd_imm_s(g, 1);
        self.b().def_var(round.tail, first);
    }

    /// The tail's groups, if there is one, end (with the group before them, which stood
    /// where they stand); then there is no tail.
    pub(super) fn end_tail(&mut self) {
        self.each_of_tail(|g, hstate| {
            let ended = g.b().ins().iconst(types::I32, GroupPlan::ENDED as i64);
            (g.b().ins()).store(trusted(), ended, hstate, GroupPlan::RESUME as i32);
        });
    }

    /// The tail's groups, if there is one, get what they owe: the snapshot's resume number
    /// and owed registers, each in its own state; then there is no tail.
    pub(super) fn settle_tail(&mut self) {
        let snapshot = self.snapshot;
        let number = self
            .b()
            .ins()
            .load(types::I32, trusted(), snapshot, GroupPlan::RESUME as i32);
        self.each_of_tail(|g, hstate| {
            (g.b().ins()).store(trusted(), number, hstate, GroupPlan::RESUME as i32);
            // The owed registers of the barrier the snapshot names.
            let next = g.b().create_block();
            for k in 1..=g.points.len() {
                let regs = g.owed_regs(k);
                if regs.is_empty() || !g.tail_may_form(k as u32) {
                    continue;
                }
                let (copy, other) = (g.b().create_block(), g.b().create_block());
                let is = g.b().ins().icmp_imm_u(IntCC::Equal, number, k as i64);
                g.b().ins().brif(is, copy, &[], other, &[]);
                g.b().switch_to_block(copy);
                for r in regs {
                    g.copy_home(r, snapshot, hstate);
                }
                g.b().ins().jump(next, &[]);
                g.b().switch_to_block(other);
            }
            g.b().ins().jump(next, &[]);
            g.b().switch_to_block(next);
        });
    }

    /// `each` for the state of every group of the tail (none where there is no tail), in a
    /// loop in the generated code; then there is no tail.
    fn each_of_tail(&mut self, mut each: impl FnMut(&mut Self, Value)) {
        let (round, states, groups, size) = (self.round, self.states, self.groups, self.size);
        let (head, body, done) = (
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
        );
        let first = self.b().use_var(round.tail);
        let at = self.b().ins().imul_imm_u(first, size as i64);
        let first_state = self.b().ins().iadd(states, at);
        self.b().append_block_param(head, types::I64);
        self.b().append_block_param(head, types::I64);
        (self.b().ins()).jump(head, &[first.into(), first_state.into()]);
        self.b().switch_to_block(head);
        let [h, hstate] = self.b().block_params(head)[..] else {
            unreachable!("two parameters")
        };
        let more = self.b().ins().icmp(IntCC::UnsignedLessThan, h, groups);
        self.b().ins().brif(more, body, &[], done, &[]);
        self.b().switch_to_block(body);
        each(self, hstate);
        let after = self.b().ins().iadd_imm_s(h, 1);
        let after_state = self.b().ins().iadd_imm_s(hstate, size as i64);
        (self.b().ins()).jump(head, &[after.into(), after_state.into()]);
        self.b().switch_to_block(done);
        self.b().def_var(round.tail, groups);
    }
}
