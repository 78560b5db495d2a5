//! Blocks of cooperative kernels run a group of 32 threads (or 16, for rows of 16) at a time
//! in SIMD lanes (the group functions of `lower/lanes/rounds.rs`). One call of the group
//! function runs the whole block in the block schedule's rounds at the level of groups:
//! each round runs every group that has not ended, in order, to its next barrier; when
//! every group stopped at barriers of one id, all go on (what the schedule does for plain
//! barriers). Anything else, a group that hands over or groups at different barriers, hands
//! the block to the thread-by-thread round function and [`schedule::run_block_from`], each
//! thread standing where its group stands.

use super::lower::{
    GROUP_ENDED, GROUP_FAULT, GROUP_HANDOVER, GROUP_MIXED, GROUP_ONLY_COLLECTIVES, GroupPlan, Home,
    sync::StepLayout,
};
use super::runtime::ThreadCtx;
use super::{RoundFunc, StepThreads, aligned_words, as_bytes, locate};
use crate::ast::{FuncId, Imm, Inst, Module, Operand, Type};
use crate::block::schedule::{self, ENDED, READY, Slot, WAITING};
use crate::block::warp;
use crate::engine::{Dim3, Fault};

/// A group function: `(ctx, states, groups, firsts, at) -> result` (see
/// [`super::lower::group_signature`]).
pub(super) type GroupFunc =
    unsafe extern "C" fn(*mut ThreadCtx, *mut u8, u32, *const [u32; 4], *mut u32) -> u32;

/// What a cooperative kernel's block needs to run in groups.
pub(super) struct Groups<'a> {
    pub module: &'a Module,
    pub id: FuncId,
    pub group: GroupFunc,
    pub plan: &'a GroupPlan,
    pub round: RoundFunc,
    pub layout: StepLayout,
    pub block: Dim3,
    pub ctaid: [u32; 3],
    /// Each group's first thread's `%tid` ([`Self::firsts`]).
    pub firsts: &'a [[u32; 4]],
}

impl Groups<'_> {
    /// Whether a block of this shape runs in groups of `plan`: whole groups in every row.
    pub fn fits(plan: &GroupPlan, block: Dim3) -> bool {
        block.x.is_multiple_of(plan.lanes)
    }

    /// Each group's first thread's `%tid` as `[x, y, z, 0]`, for blocks of shape `block`.
    pub fn firsts(plan: &GroupPlan, block: Dim3) -> Vec<[u32; 4]> {
        let lanes = plan.lanes as u64;
        (0..block.count() / lanes)
            .map(|g| {
                let [x, y, z] = block.point(g * lanes);
                [x, y, z, 0]
            })
            .collect()
    }

    /// Runs the block to its end; `states` is the worker's state storage.
    pub fn run(&self, ctx: &mut ThreadCtx, states: &mut Vec<u128>) -> Result<(), Fault> {
        let n = self.block.count() as usize;
        // A first thread a group (no division here, at every block).
        let groups = self.firsts.len();
        let size = self.plan.size as usize;
        // One more area: what the groups of a tail owe.
        states.resize(aligned_words(size * (groups + 1)), 0);
        let bytes = as_bytes(states);
        for g in 0..groups {
            bytes[g * size..g * size + 4].fill(0);
        }
        let firsts = self.firsts;
        let mut at = 0u32;
        // SAFETY: `group` is this kernel's finalized group function, compiled with the
        // signature `GroupFunc`; `states` holds `groups + 1` areas of `plan.size` bytes (the
        // groups' and the tail's snapshot after them; 16-byte aligned: the size is a multiple
        // of 16), which nothing else uses during the call;
        // `firsts` holds `groups` entries and `at` is a u32 the call may write; the context
        // is this worker's own and its pointers (parameters, shared window) outlive the
        // launch.
        let r = unsafe {
            (self.group)(
                ctx,
                as_bytes(states).as_mut_ptr(),
                groups as u32,
                firsts.as_ptr(),
                &mut at,
            )
        };
        ctx.streams.after_block();
        let only_collectives = at & GROUP_ONLY_COLLECTIVES != 0;
        let at = (at & !GROUP_ONLY_COLLECTIVES) as usize;
        match r {
            GROUP_ENDED => {
                ctx.lane_threads += n as u64;
                Ok(())
            }
            GROUP_HANDOVER => self.hand_over(ctx, states, at, only_collectives),
            GROUP_MIXED => self.hand_over(ctx, states, groups, false),
            GROUP_FAULT => {
                let f = ctx
                    .fault
                    .take()
                    .expect("a faulting group records its fault");
                let [x, y, z, _] = firsts[at];
                Err(locate(self.module, f, self.ctaid, [x, y, z]))
            }
            other => unreachable!("group function result {other}"),
        }
    }

    /// Hands the block to the round function and the schedule, each thread's state made
    /// from its group's. The groups before `ran` ran in the round the call returned in (and
    /// `only_collectives`: it ran only the groups at warp collectives); a group stands
    /// - at its start: ready;
    /// - at a barrier: waiting there if it stopped there in this round or the round left it
    ///   waiting, else ready to go on (the barrier completed when the last round ended);
    /// - at a warp collective: waiting there with its sources if it stopped there in this round,
    ///   else ready to go on with the results (the schedule resolved the collective when the
    ///   last round ended).
    fn hand_over(
        &self,
        ctx: &mut ThreadCtx,
        states: &mut Vec<u128>,
        ran: usize,
        only_collectives: bool,
    ) -> Result<(), Fault> {
        let size = self.plan.size as usize;
        let n = self.block.count() as usize;
        let lanes = self.plan.lanes as usize;
        let copy = as_bytes(states)[..size * (n / lanes)].to_vec();
        let kernel = self.module.func(self.id);
        let mut slots = vec![Slot::default(); n];
        let mut threads = StepThreads::new(
            self.module,
            ctx,
            self.round,
            self.layout,
            self.block,
            states,
        );
        let thread_bytes = as_bytes(threads.states);
        let tsize = self.layout.size as usize;
        for (g, gs) in copy.chunks(size).enumerate() {
            let number = u32::from_le_bytes(gs[0..4].try_into().expect("4 bytes"));
            let ended = number == GroupPlan::ENDED;
            let number = number as usize;
            let at = GroupPlan::ALIVE as usize;
            let alive_bits = u32::from_le_bytes(gs[at..at + 4].try_into().expect("4 bytes"));
            let alive: Vec<bool> = (0..lanes)
                .map(|lane| number == 0 || alive_bits >> lane & 1 == 1)
                .collect();
            if ended {
                for slot in &mut slots[g * lanes..(g + 1) * lanes] {
                    slot.status = ENDED;
                }
                continue;
            }
            let standing = self.standing(gs, number, &alive, g < ran, only_collectives);
            for lane in 0..lanes {
                let t = g * lanes + lane;
                if !alive[lane] {
                    slots[t].status = ENDED;
                    continue;
                }
                let ts = &mut thread_bytes[t * tsize..(t + 1) * tsize];
                ts[StepLayout::RESUME as usize..StepLayout::RESUME as usize + 4]
                    .copy_from_slice(&(number as u32).to_le_bytes());
                if number > 0 {
                    for &r in &self.plan.live[number - 1] {
                        let ty = kernel.reg(r).ty;
                        let v = lane_value(gs, self.plan.homes[r.0 as usize], ty, lane);
                        let w = ty.bytes();
                        let off = self.layout.reg(r.0) as usize;
                        ts[off..off + w].copy_from_slice(&v.to_le_bytes()[..w]);
                    }
                }
                slots[t] = standing[lane];
            }
        }
        schedule::run_block_from(kernel, self.block, self.ctaid, &mut threads, slots)
    }

    /// The slots of the lanes of a group whose state is `gs`, standing at resume number
    /// `number` (see [`Self::hand_over`]); `ran`: it ran in the last round.
    fn standing(
        &self,
        gs: &[u8],
        number: usize,
        alive: &[bool],
        ran: bool,
        only_collectives: bool,
    ) -> Vec<Slot> {
        let ready = Slot {
            status: READY,
            ..Slot::default()
        };
        if number == 0 {
            return vec![ready; alive.len()];
        }
        let kernel = self.module.func(self.id);
        let point = self.plan.points[number - 1];
        let inst = &kernel.body.as_deref().unwrap_or(&[])[point].inst;
        let waiting = |args: [u64; 4]| Slot {
            status: WAITING,
            point: point as u32,
            args,
            ..Slot::default()
        };
        if let Some(id) = schedule::plain_barrier(inst) {
            let slot = if ran || only_collectives {
                waiting([id as u64, 0, 0, 0])
            } else {
                ready
            };
            return vec![slot; alive.len()];
        }
        let Inst::Sync { op, srcs, .. } = inst else {
            unreachable!("group functions stop at barriers and warp collectives");
        };
        // A warp collective: each lane's sources.
        let mut args = [[0u64; 4]; 32];
        for (lane, a) in args.iter_mut().enumerate().take(alive.len()) {
            for (k, (src, ty)) in srcs.iter().zip(op.src_types()).enumerate() {
                a[k] = match src {
                    Operand::Reg(r) => {
                        let v =
                            lane_value(gs, self.plan.homes[r.0 as usize], kernel.reg(*r).ty, lane);
                        v & ty.mask()
                    }
                    Operand::Imm(Imm::Int(v)) => *v as u64 & ty.mask(),
                    other => unreachable!("group functions take no collective operand {other:?}"),
                };
            }
        }
        if ran {
            return args.iter().take(alive.len()).map(|a| waiting(*a)).collect();
        }
        let group = (alive.iter().enumerate())
            .filter(|(_, a)| **a)
            .fold(0u32, |m, (k, _)| m | 1 << k);
        let resolved = warp::resolve(*op, group, &args);
        (resolved.iter().take(alive.len()))
            .map(|r| Slot {
                d: r.d,
                p: r.p as u64,
                ..ready
            })
            .collect()
    }
}

/// Lane `lane`'s value of a register of type `ty` whose home in group state `gs` is `home`.
fn lane_value(gs: &[u8], home: Home, ty: Type, lane: usize) -> u64 {
    match home {
        Home::Scalar { at, stride } => {
            let w = ty.bytes();
            let mut b = [0u8; 8];
            b[..w].copy_from_slice(&gs[at as usize..at as usize + w]);
            let v = u64::from_le_bytes(b).wrapping_add((lane as i64 * stride) as u64);
            if w == 8 {
                v
            } else {
                v & ((1u64 << (8 * w)) - 1)
            }
        }
        Home::Lanes { at } => {
            let at = at as usize + 4 * lane;
            let v = u32::from_le_bytes(gs[at..at + 4].try_into().expect("4 bytes"));
            if ty == Type::Pred {
                (v != 0) as u64
            } else {
                v as u64
            }
        }
    }
}
