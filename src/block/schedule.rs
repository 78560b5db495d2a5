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

use super::warp::{self, LaneMask};
use crate::ast::{BarRed, Function, Inst, Instruction, SyncOp};
use crate::engine::{Dim3, Fault};

/// What a thread gets back when it leaves a sync point: the `d` and `p` results.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Resume {
    pub d: u64,
    pub p: bool,
}

/// Why a thread stopped running.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stop {
    /// At the sync point with this instruction index in the kernel's body, with the values
    /// of its sources (in the order of [`SyncOp::src_types`]).
    At { point: u32, args: [u64; 4] },
    /// At `ret` or `exit`.
    Ended,
}

/// An engine's threads of one block.
pub trait Threads {
    /// Runs thread `t` (its linear index, x fastest) from where it stands until it stops.
    /// `resume` carries the results of the point it leaves (nothing at its start).
    fn run(&mut self, t: usize, resume: Resume) -> Result<Stop, Fault>;
}

#[derive(Clone, Copy)]
enum State {
    Ready(Resume),
    Waiting {
        point: u32,
        op: SyncOp,
        args: [u64; 4],
    },
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
    let body = kernel.body.as_deref().unwrap_or(&[]);
    let n = block.count() as usize;
    let mut state = vec![State::Ready(Resume::default()); n];
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
    loop {
        let mut progress = false;
        let mut at_warp_points = false;
        for (t, st) in state.iter_mut().enumerate() {
            let State::Ready(resume) = *st else {
                continue;
            };
            *st = match threads.run(t, resume)? {
                Stop::Ended => {
                    live -= 1;
                    State::Ended
                }
                Stop::At { point, args } => {
                    let op = match &body[point as usize].inst {
                        Inst::Sync { op, .. } => *op,
                        other => unreachable!("sync points are Inst::Sync, not {other:?}"),
                    };
                    match op {
                        SyncOp::Bar { .. } if args[0] >= BARRIERS as u64 => {
                            let id = args[0];
                            return Err(fault(t, point, format!("barrier id {id} is not 0 to 15")));
                        }
                        // 1. bar.arrive is counted, and the thread goes on next round.
                        SyncOp::Bar { wait: false, .. } => {
                            arrivals[args[0] as usize] += 1;
                            progress = true;
                            State::Ready(Resume::default())
                        }
                        SyncOp::Bar { .. } => {
                            queue[args[0] as usize].push(t);
                            State::Waiting { point, op, args }
                        }
                        _ => {
                            at_warp_points = true;
                            State::Waiting { point, op, args }
                        }
                    }
                }
            };
        }
        // 2. Warp collectives.
        if at_warp_points {
            for w in 0..n.div_ceil(32) {
                progress |= resolve_warp(&mut state, w, n);
            }
        }
        // 3. Barriers.
        for id in 0..BARRIERS {
            let Some(&first) = queue[id].first() else {
                continue;
            };
            let State::Waiting {
                point,
                op: SyncOp::Bar { counted, red, .. },
                args,
            } = state[first]
            else {
                unreachable!("barrier queues hold threads waiting at barriers");
            };
            let expected = if counted { args[1] } else { live };
            if expected == 0 {
                return Err(fault(
                    first,
                    point,
                    format!("barrier {id} with a thread count of 0"),
                ));
            }
            if queue[id].len() as u64 + arrivals[id] < expected {
                continue;
            }
            let from_arrivals = arrivals[id].min(expected);
            arrivals[id] -= from_arrivals;
            let released = (expected - from_arrivals) as usize;
            let pred_at = if counted { 2 } else { 1 };
            let preds = queue[id][..released].iter().map(|&t| match state[t] {
                State::Waiting { args, .. } => args[pred_at] & 1 != 0,
                _ => unreachable!("queued threads wait"),
            });
            let d = match red {
                None => 0,
                Some(BarRed::Popc) => preds.filter(|&p| p).count() as u64,
                Some(BarRed::And) => preds.clone().all(|p| p) as u64,
                Some(BarRed::Or) => preds.clone().any(|p| p) as u64,
            };
            for t in queue[id].drain(..released) {
                state[t] = State::Ready(Resume { d, p: false });
            }
            progress = true;
        }
        if !progress {
            return match state
                .iter()
                .position(|s| matches!(s, State::Waiting { .. }))
            {
                None => Ok(()),
                Some(t) => {
                    let State::Waiting { point, .. } = state[t] else {
                        unreachable!()
                    };
                    Err(fault(t, point, stuck_message(&state, body)))
                }
            };
        }
    }
}

/// Resolves the groups of warp `w` that can resolve; whether any did.
fn resolve_warp(state: &mut [State], w: usize, n: usize) -> bool {
    let lanes = (w * 32)..(n.min(w * 32 + 32));
    let live: LaneMask = lanes
        .clone()
        .filter(|&t| !matches!(state[t], State::Ended))
        .fold(0, |m, t| m | (1 << (t - w * 32)));
    let mut progress = false;
    let mut done: LaneMask = 0;
    for t in lanes.clone() {
        let State::Waiting { point, op, .. } = state[t] else {
            continue;
        };
        if op.is_barrier() || done & (1 << (t - w * 32)) != 0 {
            continue;
        }
        let mut group: LaneMask = 0;
        let mut named: LaneMask = 0;
        let mut args = [[0u64; 4]; 32];
        for u in t..lanes.end {
            if let State::Waiting {
                point: p, args: a, ..
            } = state[u]
                && p == point
            {
                let lane = u - w * 32;
                group |= 1 << lane;
                args[lane] = a;
                if let Some(k) = op.mask_index() {
                    named |= a[k] as u32;
                }
            }
        }
        done |= group;
        if named & live & !group != 0 {
            continue;
        }
        let results = warp::resolve(op, group, &args);
        for u in t..lanes.end {
            let lane = u - w * 32;
            if group & (1 << lane) != 0 {
                state[u] = State::Ready(results[lane]);
            }
        }
        progress = true;
    }
    progress
}

/// Where the threads of a stuck block stand, for the fault message.
fn stuck_message(state: &[State], body: &[Instruction]) -> String {
    use std::collections::BTreeMap;
    let mut at: BTreeMap<(u32, u64), (usize, bool)> = BTreeMap::new();
    let mut ended = 0;
    for s in state {
        match s {
            State::Waiting { point, op, args } => {
                let barrier = op.is_barrier();
                let key = if barrier { args[0] } else { u64::MAX };
                at.entry((*point, key)).or_insert((0, barrier)).0 += 1;
            }
            State::Ended => ended += 1,
            State::Ready(_) => {}
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
