//! The converged version of a segment: the same code lowered for a group whose running
//! lanes stay together, so that no lanes wait at a per-thread branch's target.
//!
//! The full segment runs a per-thread branch under lane masks: the lanes that take it wait
//! at its target, where they join the others. A comparison of a `%tid` sequence with a
//! uniform value is mostly decided for every lane on the first and last lanes (a bounds
//! test, `t < half`), but the target still joins the lanes that may wait there, so the
//! masks live as variables across the segment, merged at every such target and tested at
//! every access. The converged version takes a decided branch as a jump and goes
//! on with the lanes it has; where the lanes would part (a comparison not decided for all
//! of them, a branch on any other per-thread predicate) it goes to the full segment's start
//! instead. Its loads have no effect and its stores and atomics are held back to its stop,
//! so it has written nothing by then, and the full segment runs the group from where it
//! stood.

use super::{Group, Res};
use crate::ast::{Guard, Inst};
use cranelift_codegen::ir::{Block, InstBuilder};

impl<'l, 'a, 'f, const P: usize> Group<'l, 'a, 'f, P> {
    /// Whether segment `k` gets a converged version: it has a per-thread branch (else the
    /// version would be the segment itself) and a store or atomic, whose lane masks the
    /// full segment carries to its stop. Without one the version saves little (a load's
    /// mask test) and its code costs more: the group function grows, and its round's
    /// variables are spilled the more (`warp_sum`, whose first segment has a bounds test
    /// and a load, was 20% slower with one).
    pub(super) fn may_part(&self, k: usize) -> bool {
        let reach = self.reach(k);
        let body = self.body();
        let f = self.lanes.l.f;
        let mut reached = (0..body.len()).filter(|&i| reach[i]);
        let parts = reached.clone().any(|i| {
            matches!(body[i].inst, Inst::Bra { target, .. }
                if !super::super::gate::is_exit(body, f.labels[target.0 as usize]))
                && self.real_branch(i).is_none()
        });
        parts && reached.any(|i| matches!(body[i].inst, Inst::St { .. } | Inst::Atom { .. }))
    }

    /// A per-thread branch to `t` in the converged version: a jump where every running
    /// lane takes it, on where none does, else the full segment.
    pub(super) fn converged_branch(&mut self, t: usize, guard: Option<Guard>) -> Res<bool> {
        let to = self.target_block(t);
        let full = self.converged.expect("lowering the converged version");
        match guard {
            Some(g) => Ok(self.branch_together(g, to, full)),
            None => {
                self.b().ins().jump(to, &[]);
                Ok(false)
            }
        }
    }

    /// A per-thread branch on `g` to `to` for a group whose running lanes stay together
    /// (the quiet path, the converged version): where the sequence comparison it tests
    /// sends every lane the same way, to `to` or on in a new block (true); else to
    /// `parted`, where the lanes may part.
    pub(super) fn branch_together(&mut self, g: Guard, to: Block, parted: Block) -> bool {
        let Some(&c) = self.lanes.seq_cmps.get(&g.reg) else {
            self.b().ins().jump(parted, &[]);
            return false;
        };
        let (answer, unsure) = self.lanes.seq_answer(c, g.negated);
        let (decided, on) = (self.b().create_block(), self.b().create_block());
        self.b().ins().brif(unsure, parted, &[], decided, &[]);
        self.b().switch_to_block(decided);
        self.b().ins().brif(answer, to, &[], on, &[]);
        self.b().switch_to_block(on);
        self.fresh_block_keeping_shapes();
        true
    }

    /// The lanes would part here: the full segment takes the group from its start.
    pub(super) fn leave_converged(&mut self) {
        let full = self.converged.expect("lowering the converged version");
        self.b().ins().jump(full, &[]);
    }
}
