//! The one order in which both engines run the threads of a block that has barriers or warp
//! collectives, so that every kernel has one defined result and the engines agree bit for
//! bit (race-free kernels get the hardware's result).
//!
//! A *round* runs every thread that can run, in x-fastest order, until it stops at its next
//! sync point ([`crate::ast::Inst::Sync`]) or ends. Then the points resolve, in this order:
//! 1. `bar.arrive`: the arrival is counted as the thread stops there; it goes on in the next
//!    round.
//! 2. Warp collectives, warp by warp: the lanes of a warp standing at the same instruction
//!    form a group; it resolves once every lane its membermasks name is in it, or has
//!    exited or does not exist (a partial warp at the end of a block). `activemask` names
//!    none, so it resolves for whoever stands there.
//! 3. Barriers (PTX ISA, Parallel Synchronization and Communication Instructions: bar,
//!    barrier), by id: one completes when the threads waiting at it plus the `bar.arrive`
//!    arrivals reach its count, or, without a count, every thread that has not exited (as
//!    on sm_70 and later, exited threads no longer count). With a count, the first threads
//!    to arrive are released; the others wait for the next use of the barrier.
//!
//! Then the next round. A round in which nothing resolves while some thread still waits is
//! a stuck block: a fault naming the barrier or collective, its line, and where every thread
//! stands, never a hang.
//!
//! The common case takes a shortcut with the same outcome: when no thread was waiting before
//! a round and every thread that ran stopped at the same *plain* barrier (`bar.sync` with an
//! immediate id 0–15, no thread count, no reduction, in a kernel without `bar.arrive`) or
//! ended, that barrier completes for all of them (step 3, with no arrivals and no other
//! waiters), and the next round runs every thread that has not ended. The engines report
//! what a round did ([`Round`]), so the schedule does no work per thread then. Likewise an
//! engine may resolve a warp collective as soon as all 32 lanes of a warp stand at it, each
//! naming all 32 ([`resolve_full_warp`]: step 2's result for them, which only the lanes'
//! next round reads); when it resolved every thread that stopped, the schedule has nothing
//! to do but run them all again.

use super::warp::{self, LaneMask};
use crate::ast::{BarRed, Function, Imm, Inst, Instruction, Operand, SyncOp};
use crate::engine::{Dim3, Fault};

/// What a thread gets back when it leaves a sync point: the `d` and `p` results.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resume {
    pub d: u64,
    pub p: bool,
}

/// Where one thread of a block stands, shared between the schedule and an engine (the JIT's
/// generated code reads and writes it at the offsets of this `repr(C)` layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Slot {
    /// [`READY`], [`WAITING`] or [`ENDED`].
    pub status: u32,
    /// The instruction index (in the kernel's body) of the point it waits at.
    pub point: u32,
    /// The values of that point's sources, in the order of [`SyncOp::src_types`].
    pub args: [u64; 4],
    /// The results of the point it leaves (`p` is 0 or 1).
    pub d: u64,
    pub p: u64,
}

/// The thread runs in the next round (from its start, or on from the point it waited at).
pub const READY: u32 = 0;
/// The thread stopped at a sync point.
pub const WAITING: u32 = 1;
/// The thread ended (`ret` or `exit`).
pub const ENDED: u32 = 2;

/// What one round did, as the engine counts it: where the threads that stopped stopped.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Round {
    /// Threads that stopped at a plain barrier ([`plain_barrier`]).
    pub plain: u32,
    /// The ids of those barriers, as a bit mask.
    pub plain_ids: u32,
    /// Threads that stopped at another barrier form.
    pub other: u32,
    /// Threads that stopped at a warp collective.
    pub collective: u32,
    /// Of those, the threads whose collective the engine resolved ([`resolve_full_warp`]).
    pub resolved: u32,
}

impl Round {
    /// Counts a thread that stopped at `inst` (a sync point).
    pub fn stopped_at(&mut self, inst: &Inst) {
        if let Some(id) = plain_barrier(inst) {
            self.plain += 1;
            self.plain_ids |= 1 << id;
        } else if matches!(inst, Inst::Sync { op, .. } if op.is_barrier()) {
            self.other += 1;
        } else {
            self.collective += 1;
        }
    }
}

/// The id of a *plain* barrier: `bar.sync`/`barrier.sync` with an immediate id 0–15, no
/// thread count and no reduction. Everything else is `None`.
pub fn plain_barrier(inst: &Inst) -> Option<u32> {
    match inst {
        Inst::Sync {
            op:
                SyncOp::Bar {
                    wait: true,
                    counted: false,
                    red: None,
                },
            srcs,
            ..
        } => match srcs.first() {
            Some(Operand::Imm(Imm::Int(id))) if (0..BARRIERS as i128).contains(id) => {
                Some(*id as u32)
            }
            _ => None,
        },
        _ => None,
    }
}

/// Resolves warp collective `op` at instruction `point` for the 32 `lanes` of a warp if
/// they all wait there and each names all 32 in its membermask: the results step 2 gives
/// them (the group is the whole warp). Whether it did.
pub fn resolve_full_warp(op: SyncOp, point: u32, lanes: &mut [Slot]) -> bool {
    let all = lanes.len() == 32
        && lanes.iter().all(|s| {
            s.status == WAITING
                && s.point == point
                && op.mask_index().is_none_or(|k| s.args[k] as u32 == u32::MAX)
        });
    if !all || op.is_barrier() {
        return false;
    }
    if let SyncOp::Shfl(mode) = op {
        // The common case without the general grouping: every lane reads the 32 values.
        let mut values = [0u64; 32];
        for (v, s) in values.iter_mut().zip(lanes.iter()) {
            *v = s.args[0] & 0xffff_ffff;
        }
        for (i, s) in lanes.iter_mut().enumerate() {
            let r = warp::shfl(mode, i as u32, &s.args, |j| values[j as usize]);
            s.d = r.d;
            s.p = r.p as u64;
        }
        return true;
    }
    let mut args = [[0u64; 4]; 32];
    for (a, s) in args.iter_mut().zip(lanes.iter()) {
        *a = s.args;
    }
    for (s, r) in lanes.iter_mut().zip(warp::resolve(op, u32::MAX, &args)) {
        s.d = r.d;
        s.p = r.p as u64;
    }
    true
}

/// An engine's threads of one block.
pub trait Threads {
    /// One round: runs every thread whose slot is [`READY`] (and [`WAITING`] too when
    /// `waiting_too`), in slot order (x-fastest thread order), until it stops at a sync
    /// point (its slot then says where, with the point's sources) or ends; says what it did.
    fn run_round(&mut self, slots: &mut [Slot], waiting_too: bool) -> Result<Round, Fault>;
}

/// What the schedule knows of a thread besides its slot.
#[derive(Clone, Copy, PartialEq)]
enum Seen {
    Running,
    /// Waiting, at a barrier (queued) or a warp collective.
    Waiting(SyncOp),
    Ended,
}

const BARRIERS: usize = 16;

/// Runs the block `ctaid` of `kernel` (`block` threads) to its end.
pub fn run_block(
    kernel: &Function,
    block: Dim3,
    ctaid: [u32; 3],
    threads: &mut impl Threads,
) -> Result<(), Fault> {
    let slots = vec![Slot::default(); block.count() as usize];
    run_block_from(kernel, block, ctaid, threads, slots)
}

/// Runs the block on from where `slots` say its threads stand, as if a round had just
/// stopped them there: [`READY`] threads run in the next round, [`WAITING`] ones wait at
/// their point (with its sources in their slots), [`ENDED`] ones have ended. (An engine
/// that ran part of the block its own way hands it over so.)
pub fn run_block_from(
    kernel: &Function,
    block: Dim3,
    ctaid: [u32; 3],
    threads: &mut impl Threads,
    mut slots: Vec<Slot>,
) -> Result<(), Fault> {
    let body = kernel.body.as_deref().unwrap_or(&[]);
    let n = block.count() as usize;
    let mut seen = vec![Seen::Running; n];
    // The threads waiting at each barrier in the order they arrived, and bar.arrive counts.
    let mut queue: [Vec<usize>; BARRIERS] = Default::default();
    let mut arrivals = [0u64; BARRIERS];
    let mut live = n as u64;
    let fault = |t: usize, point: u32, message: String| {
        let ins: &Instruction = &body[point as usize];
        Fault {
            message,
            function: kernel.name.clone(),
            ctaid,
            tid: block.point(t as u64),
            span: ins.span,
            line: ins.line,
            address: None,
        }
    };
    // The op of the last point looked up (threads mostly stop where the one before did).
    let mut last: Option<(u32, SyncOp)> = None;
    // The shortcut (see the module documentation) and whether the last round took it.
    let shortcut = !body.iter().any(|i| {
        matches!(
            i.inst,
            Inst::Sync {
                op: SyncOp::Bar { wait: false, .. },
                ..
            }
        )
    });
    let mut released_all = false;
    // Threads the schedule holds at a point (`Seen::Waiting`); threads handed over waiting
    // are counted so that the first round takes no shortcut past them.
    let mut held = slots.iter().filter(|s| s.status == WAITING).count();
    loop {
        let round = threads.run_round(&mut slots, released_all)?;
        let at_one_barrier = shortcut
            && round.plain > 0
            && round.other + round.collective == 0
            && round.plain_ids.is_power_of_two();
        let all_resolved = round.resolved > 0
            && round.resolved == round.collective
            && round.plain + round.other == 0;
        released_all = held == 0 && (at_one_barrier || all_resolved);
        if released_all {
            continue;
        }
        let mut progress = false;
        let mut at_warp_points = false;
        for (t, (slot, seen)) in slots.iter_mut().zip(seen.iter_mut()).enumerate() {
            if *seen != Seen::Running {
                continue;
            }
            if slot.status == ENDED {
                live -= 1;
                *seen = Seen::Ended;
                continue;
            }
            let op = match last {
                Some((point, op)) if point == slot.point => op,
                _ => {
                    let op = match &body[slot.point as usize].inst {
                        Inst::Sync { op, .. } => *op,
                        other => unreachable!("sync points are Inst::Sync, not {other:?}"),
                    };
                    last = Some((slot.point, op));
                    op
                }
            };
            let id = slot.args[0];
            match op {
                SyncOp::Bar { .. } if id >= BARRIERS as u64 => {
                    let message = format!("barrier id {id} is not 0 to 15");
                    return Err(fault(t, slot.point, message));
                }
                // 1. bar.arrive is counted, and the thread goes on in the next round.
                SyncOp::Bar { wait: false, .. } => {
                    arrivals[id as usize] += 1;
                    progress = true;
                    slot.status = READY;
                    continue;
                }
                SyncOp::Bar { .. } => queue[id as usize].push(t),
                _ => at_warp_points = true,
            }
            *seen = Seen::Waiting(op);
        }
        // 2. Warp collectives.
        if at_warp_points {
            for w in 0..n.div_ceil(32) {
                let lanes = w * 32..n.min(w * 32 + 32);
                progress |= resolve_warp(&mut slots[lanes.clone()], &mut seen[lanes]);
            }
        }
        // 3. Barriers.
        for id in 0..BARRIERS {
            let Some(&first) = queue[id].first() else {
                continue;
            };
            let Seen::Waiting(SyncOp::Bar { counted, red, .. }) = seen[first] else {
                unreachable!("barrier queues hold threads waiting at barriers");
            };
            let expected = if counted { slots[first].args[1] } else { live };
            if expected == 0 {
                let message = format!("barrier {id} with a thread count of 0");
                return Err(fault(first, slots[first].point, message));
            }
            if queue[id].len() as u64 + arrivals[id] < expected {
                continue;
            }
            let from_arrivals = arrivals[id].min(expected);
            arrivals[id] -= from_arrivals;
            let released = (expected - from_arrivals) as usize;
            let pred_at = if counted { 2 } else { 1 };
            let preds = queue[id][..released]
                .iter()
                .map(|&t| slots[t].args[pred_at] & 1 != 0);
            let d = match red {
                None => 0,
                Some(BarRed::Popc) => preds.filter(|&p| p).count() as u64,
                Some(BarRed::And) => preds.clone().all(|p| p) as u64,
                Some(BarRed::Or) => preds.clone().any(|p| p) as u64,
            };
            for t in queue[id].drain(..released) {
                let slot = &mut slots[t];
                slot.status = READY;
                slot.d = d;
                seen[t] = Seen::Running;
            }
            progress = true;
        }
        held = seen
            .iter()
            .filter(|s| matches!(s, Seen::Waiting(_)))
            .count();
        if !progress {
            return match seen.iter().position(|s| matches!(s, Seen::Waiting(_))) {
                None => Ok(()),
                Some(t) => Err(fault(t, slots[t].point, stuck_message(&slots, &seen, body))),
            };
        }
    }
}

/// Resolves the groups of one warp (its lanes' slots and what is known of them) that can
/// resolve; whether any did.
fn resolve_warp(slots: &mut [Slot], seen: &mut [Seen]) -> bool {
    let bit = |lane: usize| 1u32 << lane;
    let live: LaneMask = (0..seen.len())
        .filter(|&l| seen[l] != Seen::Ended)
        .fold(0, |m, l| m | bit(l));
    let mut progress = false;
    let mut done: LaneMask = 0;
    for lane in 0..seen.len() {
        let Seen::Waiting(op) = seen[lane] else {
            continue;
        };
        if op.is_barrier() || done & bit(lane) != 0 {
            continue;
        }
        let point = slots[lane].point;
        let mut group: LaneMask = 0;
        let mut named: LaneMask = 0;
        let mut args = [[0u64; 4]; 32];
        for (l, slot) in slots.iter().enumerate().skip(lane) {
            if matches!(seen[l], Seen::Waiting(_)) && slot.point == point {
                group |= bit(l);
                args[l] = slot.args;
                if let Some(k) = op.mask_index() {
                    named |= slot.args[k] as u32;
                }
            }
        }
        done |= group;
        if named & live & !group != 0 {
            continue;
        }
        let results = warp::resolve(op, group, &args);
        for l in (0..seen.len()).filter(|&l| group & bit(l) != 0) {
            slots[l] = Slot {
                d: results[l].d,
                p: results[l].p as u64,
                ..Slot::default()
            };
            seen[l] = Seen::Running;
        }
        progress = true;
    }
    progress
}

/// Where the threads of a stuck block stand, for the fault message.
fn stuck_message(slots: &[Slot], seen: &[Seen], body: &[Instruction]) -> String {
    use std::collections::BTreeMap;
    let mut at: BTreeMap<(u32, u64), (usize, bool)> = BTreeMap::new();
    let mut ended = 0;
    for (slot, s) in slots.iter().zip(seen) {
        match s {
            Seen::Waiting(op) => {
                let barrier = op.is_barrier();
                let key = if barrier { slot.args[0] } else { u64::MAX };
                at.entry((slot.point, key)).or_insert((0, barrier)).0 += 1;
            }
            Seen::Ended => ended += 1,
            Seen::Running => {}
        }
    }
    let mut parts: Vec<String> = at
        .iter()
        .map(|(&(point, id), &(count, barrier))| {
            let line = body[point as usize].line;
            if barrier {
                format!("{count} at barrier {id} (line {line})")
            } else {
                format!("{count} at a warp collective (line {line})")
            }
        })
        .collect();
    if ended > 0 {
        parts.push(format!("{ended} exited"));
    }
    format!(
        "the block cannot go on: no barrier or warp collective can complete; threads: {}",
        parts.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Module;

    /// Threads that each stop `stops` times at the instruction `point`, then end; records
    /// whether each round was asked to run the waiting threads too.
    struct Looping {
        point: u32,
        stops: u32,
        passed: Vec<u32>,
        waiting_too: Vec<bool>,
        body: Vec<Instruction>,
    }

    impl Threads for Looping {
        fn run_round(&mut self, slots: &mut [Slot], waiting_too: bool) -> Result<Round, Fault> {
            self.waiting_too.push(waiting_too);
            let mut round = Round::default();
            for (slot, passed) in slots.iter_mut().zip(&mut self.passed) {
                let runs = slot.status == READY || (waiting_too && slot.status == WAITING);
                if !runs {
                    continue;
                }
                if *passed == self.stops {
                    slot.status = ENDED;
                } else {
                    *passed += 1;
                    *slot = Slot {
                        status: WAITING,
                        point: self.point,
                        // Barrier 0, a count of 64 where there is one.
                        args: [0, 64, 0, 0],
                        ..Slot::default()
                    };
                    round.stopped_at(&self.body[self.point as usize].inst);
                }
            }
            Ok(round)
        }
    }

    fn looping(ptx: &str, stops: u32) -> (Function, Looping) {
        let m = Module::parse(ptx).expect("test PTX parses");
        let f = m.functions[0].clone();
        let body = f.body.clone().expect("a kernel body");
        let point = body
            .iter()
            .position(|i| matches!(i.inst, Inst::Sync { .. }))
            .expect("a sync point") as u32;
        let threads = Looping {
            point,
            stops,
            passed: vec![0; 64],
            waiting_too: Vec::new(),
            body,
        };
        (f, threads)
    }

    const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

    /// A plain `bar.sync 0` met by every thread each round takes the shortcut: after the
    /// first round, every round runs the waiting threads without the schedule's pass.
    #[test]
    fn plain_barriers_take_the_shortcut() {
        let ptx = format!("{HEAD}.visible .entry k() {{ bar.sync 0; ret; }}");
        let (f, mut threads) = looping(&ptx, 3);
        run_block(&f, Dim3::x(64), [0; 3], &mut threads).expect("the block ends");
        assert_eq!(threads.waiting_too, [false, true, true, true]);
    }

    /// A barrier with a thread count, or in a kernel with `bar.arrive`, goes through the
    /// schedule every round.
    #[test]
    fn other_barriers_do_not() {
        for body in ["bar.sync 0, 64;", "bar.sync 0; bar.arrive 1, 64;"] {
            let ptx = format!("{HEAD}.visible .entry k() {{ {body} ret; }}");
            let (f, mut threads) = looping(&ptx, 3);
            run_block(&f, Dim3::x(64), [0; 3], &mut threads).expect("the block ends");
            assert_eq!(threads.waiting_too, [false; 4], "{body}");
        }
    }
}
