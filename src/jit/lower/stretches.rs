//! Checked accesses in straight-line code, tested once for a whole stretch. A bignum
//! kernel loads every limb through one or two base registers, works for thousands of
//! instructions, and stores every limb through a third: runs ([`super::memory::CheckPlan`])
//! test each base register's span once, but each member still had to branch on that test,
//! and more than a hundred such branches, each with a slow path that joins the fast one
//! again, cut the code into as many blocks and made the register allocator spill (checked
//! mul1024 ran at 2.2 times its unchecked time).
//!
//! A stretch is the code from a run's first access to the last access of the runs that
//! can be tested there (those in the same straight-line piece whose base registers nothing
//! writes before their own first access). Its runs' spans are tested together at its
//! start. If every test passes, the stretch runs with none of its runs' accesses tested
//! (the proved copy, lowered in line); if one fails, a tested copy of the same
//! instructions runs instead, which checks every access on its own, exactly as the
//! interpreter would meet them, so a fault is reported at the access where it happens
//! with the message it has today. Both copies go on from the instruction after the
//! stretch. The tested copy is laid out with the cold blocks; it runs when a span is not
//! in its slot's recent area yet (a thread's first access to a buffer) or is not valid.

use super::Lower;
use super::memory::Area;
use cranelift_codegen::ir::{Block, InstBuilder};

/// A stretch being lowered: its first instruction and the one after it, the block its
/// tests are in and the tested copy's first block.
pub(super) struct OpenStretch {
    start: usize,
    end: usize,
    tested_from: Block,
    tested: Block,
}

impl Lower<'_, '_> {
    /// Before instruction `at` of the function's main line: if a stretch starts there,
    /// tests its runs' spans and goes on in the proved copy; the tested one is lowered at
    /// the stretch's end ([`Self::stretch_end`]). Not in round functions (whose thread
    /// state the lowering keeps per resume point) or inside a strided loop (whose proved
    /// iterations already go untested).
    pub(super) fn stretch_start(&mut self, at: usize) {
        if self.step.is_some() || self.stretch.is_some() {
            return;
        }
        let Some(stretch) = self.checks.stretches.get(&at) else {
            return;
        };
        if self.loops.iter().any(|l| l.shape.contains(at)) {
            return;
        }
        let (runs, end) = (stretch.runs.clone(), stretch.end);
        let here = self.b.current_block();
        let tested = self.b.create_block();
        self.b.set_cold_block(tested);
        // Each run's test, compare by compare, on to the next run's or to the proved copy.
        for k in runs {
            let (lo, hi, slot, base, align) = self.run_span(k);
            let next = self.b.create_block();
            self.branch_in_area(lo, hi, Area::Recent(slot), (base, align), next, tested);
            self.b.switch_to_block(next);
            self.b.seal_block(next);
        }
        self.note_dominated(self.b.current_block().expect("a block"), here);
        self.stretch = Some(OpenStretch {
            start: at,
            end,
            tested_from: here.expect("a block"),
            tested,
        });
    }

    /// Whether instruction `at` is an access whose span the open stretch has tested, in
    /// its proved copy.
    pub(super) fn stretch_proved(&self, at: usize) -> bool {
        !self.tested_copy
            && (self.stretch.as_ref()).is_some_and(|s| self.checks.stretch_of(at) == Some(s.start))
    }

    /// Before instruction `at` of the main line: if the open stretch ends there, lowers its
    /// tested copy, and both copies go on in a block of their own.
    pub(super) fn stretch_end(&mut self, at: usize, labels: &[Block]) {
        let Some(s) = self.stretch.take_if(|s| s.end == at) else {
            return;
        };
        let join = self.b.create_block();
        self.b.ins().jump(join, &[]);
        let first_cold = self.b.func.dfg.num_blocks();
        self.b.switch_to_block(s.tested);
        self.b.seal_block(s.tested);
        self.note_dominated(s.tested, Some(s.tested_from));
        self.tested_copy = true;
        let body = self
            .f
            .body
            .as_deref()
            .expect("compiled functions have bodies");
        for (j, ins) in body.iter().enumerate().take(s.end).skip(s.start) {
            self.instruction(j, ins, labels);
        }
        self.tested_copy = false;
        self.b.ins().jump(join, &[]);
        for n in first_cold..self.b.func.dfg.num_blocks() {
            self.b.set_cold_block(Block::from_u32(n as u32));
        }
        self.b.switch_to_block(join);
        self.note_dominated(join, Some(s.tested_from));
    }
}
