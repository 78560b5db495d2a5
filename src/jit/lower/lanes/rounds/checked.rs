//! Checked mode in group functions: each global or shared access tests the bytes its
//! running lanes touch before it runs (a load) or is held (a store or atomic).
//!
//! The lanes of an access touch elements of one size at a constant distance (a multiple of
//! the size), so the first and last running lanes bound them all: the range between them
//! passes if it lies inside the area the access's recent-area slot last held and its lowest
//! address is a multiple of the size, the same inline test as a thread's own access. Where
//! it fails, the runtime is asked (`rt_probe_access`, from a cold block through a trampoline
//! that clobbers no register) whether the whole range lies in the one area a thread's check
//! would find for its first byte and passes for that access; if so the area goes into the
//! slot and the group goes on. If not, the group hands the block over: it has written
//! nothing in the segment (stores and atomics are held back to its stop), so the block goes
//! on thread by thread from where each thread stood, and the round function's checks report
//! the fault at the thread the schedule meets it in, as a launch without group functions
//! does. Every access the group runs therefore lies where a thread's check would pass it.
//!
//! A *run* (accesses through one base register in straight-line code, as the per-thread
//! lowering finds them: `CheckPlan`) is tested once at its first access, over the running
//! lanes and every member's bytes (a tiled product's 16 loads from a row of a tile are one
//! run). Where that passes, its members skip their own tests; where not, each tests itself
//! as above. The running lanes cannot change inside a run (a branch or a label ends it),
//! and a guarded member runs in fewer of them.

use super::{Access, Group};
use crate::jit::runtime::AccessDesc;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

impl<'l, 'a, 'f, const P: usize> Group<'l, 'a, 'f, P> {
    /// Checked, at access `acc` (lane 0's host address `lo`): if it starts a run, tests the
    /// run's span over the running lanes and keeps the answer for the run's members (see
    /// the module documentation).
    pub(super) fn start_run(&mut self, acc: &Access<P>, lo: Value) {
        let Some(run) = self.lanes.l.checks.run_of(acc.at).filter(|r| r.starts) else {
            return;
        };
        // No answer of an earlier lowering of the run may stand for this one.
        self.run_ok.remove(&run.run);
        if !self.lanes.l.sh.checked {
            return;
        }
        // Every member's lanes are a multiple of its size apart (or the group function is
        // refused), so the lowest lane's alignment is every lane's.
        debug_assert!(acc.stride.is_none_or(|s| s % run.align as i64 == 0));
        let (m, f) = (self.lanes.l.sh.ptx, self.lanes.l.f);
        let space = crate::interp::access_space(m, f, acc.space, &acc.addr);
        let slot = self.lanes.l.checks.space_slot(acc.addr.base, space);
        // The base register's lanes as host addresses: lane 0's, the lowest and the highest
        // running lanes'.
        let base = self.lanes.l.plus(lo, -acc.addr.offset);
        let cur = self.mask(self.cur);
        let (low, high) = match acc.stride {
            None => (base, base),
            Some(s) => self.lowest_and_highest(cur, base, s),
        };
        let lo = self.lanes.l.plus(low, run.lowest);
        let hi = self.lanes.l.plus(high, run.end);
        let inside = self.lanes.l.in_recent_area(lo, hi, slot, low, run.align);
        let any = self.b().ins().icmp_imm_u(IntCC::NotEqual, cur, 0);
        let ok = self.b().ins().band(inside, any);
        let var = self.seg_var(types::I8);
        self.b().def_var(var, ok);
        self.run_ok.insert(run.run, var);
    }

    /// Checked: goes on past access `acc` (its running lanes `exec`, `ran` if any runs)
    /// only if its bytes pass the checks, else hands the block over (see the module
    /// documentation). Unchecked, or where the access is known to be safe, nothing.
    pub(super) fn check_access(&mut self, acc: &Access<P>, exec: Value, ran: Value) {
        let (m, f) = (self.lanes.l.sh.ptx, self.lanes.l.f);
        // The space a thread's check gives the access (a generic one names none).
        let space = crate::interp::access_space(m, f, acc.space, &acc.addr);
        let (size, store) = (acc.size, acc.writes);
        if !self.lanes.l.sh.checked || self.lanes.l.known_safe(&acc.addr, size, space, store) {
            return;
        }
        let here = self.b().current_block();
        let (test, probe, on) = (
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
        );
        // A member of a run whose span passed needs no test of its own.
        let run_ok =
            (self.lanes.l.checks.run_of(acc.at)).and_then(|r| self.run_ok.get(&r.run).copied());
        if let Some(var) = run_ok {
            let ok = self.b().use_var(var);
            let own = self.b().create_block();
            self.b().ins().brif(ok, on, &[], own, &[]);
            self.b().switch_to_block(own);
        }
        self.b().ins().brif(ran, test, &[], on, &[]);
        self.b().switch_to_block(test);
        let lo = self.b().use_var(acc.lo);
        let (lo, hi) = match acc.stride {
            None => (lo, self.b().ins().iadd_imm_s(lo, size as i64)),
            Some(s) => {
                let (low, high) = self.lowest_and_highest(exec, lo, s);
                (low, self.b().ins().iadd_imm_s(high, size as i64))
            }
        };
        let slot = self.lanes.l.checks.space_slot(acc.addr.base, space);
        let ok = self.lanes.l.in_recent_area(lo, hi, slot, lo, size as u64);
        self.b().set_cold_block(probe);
        self.b().ins().brif(ok, on, &[], probe, &[]);
        self.b().switch_to_block(probe);
        let desc = AccessDesc {
            size,
            space,
            store,
            slot,
        };
        let desc = self.b().ins().iconst(types::I32, desc.pack() as i64);
        let ctx = self.lanes.l.ctx;
        let found = (self.lanes.l)
            .cold_helper("rt_probe_access", &[ctx, lo, hi, desc])
            .expect("rt_probe_access returns");
        let handover = self.handover;
        self.b().ins().brif(found, on, &[], handover, &[]);
        self.b().switch_to_block(on);
        self.lanes.l.note_dominated(on, here);
        self.fresh_block_keeping_shapes();
    }

    /// The lowest and the highest address of the lanes in lane mask `lanes` (not empty),
    /// lane k's at `lane0 + k × stride`: the first and last lanes', in the stride's order.
    fn lowest_and_highest(&mut self, lanes: Value, lane0: Value, stride: i64) -> (Value, Value) {
        let first = self.b().ins().ctz(lanes);
        let zeros = self.b().ins().clz(lanes);
        let top = self.b().ins().iconst(types::I32, 31);
        let last = self.b().ins().isub(top, zeros);
        let [first, last] = [first, last].map(|k| {
            let k = self.b().ins().uextend(types::I64, k);
            let off = self.b().ins().imul_imm_s(k, stride);
            self.b().ins().iadd(lane0, off)
        });
        if stride > 0 {
            (first, last)
        } else {
            (last, first)
        }
    }
}
