//! Cooperative kernels in SIMD lanes: 32 threads (`%tid.x` = x … x+31 of one row) run from
//! one barrier to the next as one *group*, their per-thread values in vectors, so a round of
//! the block schedule costs a few vector instructions per 32 threads instead of a thread stop
//! each (see `sync.rs` for the thread-by-thread round functions this stands beside). Each
//! kernel gets two group functions, of 32 lanes (`P` = 8 vectors of four) and of 16 (`P` =
//! 4), for rows of 16 threads (16×16 tiles); the launch takes the wider one that divides
//! `%ntid.x`. Barrier-only kernels need no warps: a group is only a run of consecutive
//! threads that the schedule would run one after another. Kernels with warp collectives get
//! only the function of 32 lanes, whose groups are warps.
//!
//! A kernel qualifies when its only sync points are unguarded plain barriers (`bar.sync` with
//! an immediate id, no thread count, no reduction) and warp collectives (`shfl.sync`,
//! `vote.sync`, `activemask`, `redux.sync`, `elect.sync`, `bar.warp.sync`; not `match.sync`)
//! outside per-thread branches, it has no calls, `.local` variables or carries, and every
//! per-thread value the lanes meet has a form they have. The launch uses it, checked or not,
//! for blocks whose `%ntid.x` is a multiple of 32 (or of 16).
//!
//! **Warp collectives.** A group stops at a collective as at a barrier, except that it
//! goes on in the next round whatever the other groups do (a round after groups stopped at
//! collectives runs only those; the others wait on at their barriers), computing the
//! collective from its lanes' sources when it goes on (`collective.rs`). Where the group
//! touches no memory after the collective until its next stop, it runs through it instead
//! ([`collective::stops`] says where).
//!
//! **One shape per register.** Each register is uniform, a sequence or varying in the whole
//! kernel (see [`super::Shape`]), found by lowering again until no write asks for a wider
//! shape; so the registers live across a barrier have one home each in the group's state
//! area ([`GroupPlan`]).
//!
//! **Branches.** A branch on a uniform predicate is a branch. A branch on a per-thread
//! predicate goes forward: the lanes that take it wait at its target (a mask per target)
//! while the others run the code in between under the mask of the running lanes, and join
//! them there (if none is left, the group jumps to the target at once). A lane mask is one
//! 32-bit word, bit k for lane k: joined, tested and saved as a scalar, made into vectors
//! only where a write keeps the other lanes' values (see [`Group::mask`]). A comparison of a
//! `%tid` sequence with a uniform value is decided on its first and last lanes where they
//! agree (all running lanes take the branch, or none does), as most bounds tests are. Writes
//! under a partial mask keep the other lanes' values where those lanes may read them later.
//! An `exit` takes its lanes out of the group for good.
//!
//! **Cheaper paths first.** A segment from a barrier first runs its quiet path (`quiet.rs`:
//! every lane running, no memory touched, as scalars where it can); then a segment from a
//! barrier or the start with per-thread branches and stores runs its converged version
//! (`converged.rs`: the lanes kept together, decided branches as jumps). Each goes on to the
//! next where the lanes would part, having written nothing, and the full segment described
//! here takes any group. A quiet path also takes along the groups after it that would
//! repeat it (block-uniform values and decisions: `alike.rs`).
//!
//! **The block in one call.** The function loops over the block's groups in order, each from
//! the barrier it stands at (its segment) to the next, round after round while all stop at
//! barriers of one id, so a round costs no call. A segment loads only the state it writes
//! (each block loads what it only reads) and its stops store only what it wrote.
//!
//! **Memory, and the one order.** The block schedule runs every thread to its next barrier
//! in x-fastest order, one after another; a group runs its 32 threads in lock step. Loads run
//! at once (as vectors where the lanes read consecutive words, lane by lane where only some
//! lanes run), stores and atomics (whose result nothing reads) are held back to the
//! barrier. There, before anything is written, the *gate* tests each pair of accesses that
//! may touch the same bytes: where the lock step could differ from the thread order (a load
//! of a lane after a store of a lower lane, two stores in the other order than the threads
//! would make them), or where a sequence wrapped as it was widened, the group writes nothing
//! and returns `GROUP_HANDOVER`. The launch then hands the whole block to the thread-by-thread
//! round function and the schedule, from where every thread stands (`Jit`'s `run_groups`),
//! so the result is always the schedule's. Checked, an access whose running lanes' bytes do
//! not pass the checks hands the block over the same way, and the schedule's checks report
//! the fault (`checked.rs`).

mod checked;
mod collective;
mod converged;
mod quiet;
mod tail;

use super::{LaneVal, Lanes, Refused, Res, Shape, V, Vecs, refuse};
use crate::ast::{AddrBase, Guard, Imm, Inst, Instruction, Operand, RegId, Space, SyncOp, Type};
use crate::block::schedule;
use crate::jit::lower::liveness::{self, RegSet};
use crate::jit::lower::{Lower, Shared, clif, flags, trusted};
use crate::jit::runtime::ThreadCtx;
use crate::jit::streams::{self, Streams};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    self, Block, InstBuilder, JumpTableData, StackSlotData, StackSlotKind, Value, types,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::JITModule;
use cranelift_module::Module as _;
use std::collections::{BTreeSet, HashMap};
use std::mem::offset_of;

/// What a group function returns: every lane of the block ended.
pub const GROUP_ENDED: u32 = 0;
/// Group `*at` wrote nothing and stands where it stood; the groups before it stopped in
/// this round, the groups after it have not run in it: run the block thread by thread.
/// Bit 31 of `*at` says whether the round ran only the groups at warp collectives (see
/// [`GROUP_ONLY_COLLECTIVES`]).
pub const GROUP_HANDOVER: u32 = 1;
/// A fault in group `*at` (the context holds it; the group's first thread is named).
pub const GROUP_FAULT: u32 = 2;
/// Every group that has not ended stopped in this round, at barriers of different ids.
pub const GROUP_MIXED: u32 = 3;
/// In `*at` after a hand-over: the round ran only the groups that stood at a warp collective; the
/// others wait at barriers.
pub const GROUP_ONLY_COLLECTIVES: u32 = 1 << 31;

/// The signature of a group function: `(ctx, states, groups, firsts, at) -> result`. It runs
/// the block's `groups` groups (their state areas one after another from `states`, then one
/// more area for a tail's snapshot, see `rounds/tail.rs`; their first threads' `%tid` as
/// `[x, y, z, 0]` words from `firsts`) round after round, each to
/// its next barrier, while all stop at barriers of one id; `at` receives the group a
/// hand-over or fault names.
pub fn group_signature(cc: cranelift_codegen::isa::CallConv) -> ir::Signature {
    crate::jit::lower::signature(
        cc,
        &[types::I64, types::I64, types::I32, types::I64, types::I64],
        &[types::I32],
    )
}

/// Where a register lives in a group's state area.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Home {
    /// The register's value in every lane (stride 0), or lane 0's in a sequence: lane k
    /// holds it plus k × stride. Stored as the register's type.
    Scalar { at: u32, stride: i64 },
    /// A group's lanes of 32 bits (predicates as 0 or all ones).
    Lanes { at: u32 },
}

/// A group's state area and what the launch needs to hand a block over.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupPlan {
    /// Threads in a group (32, or 16 for rows of 16 threads).
    pub lanes: u32,
    /// Bytes of state per group (a multiple of 16).
    pub size: u32,
    /// Each register's home.
    pub homes: Vec<Home>,
    /// The barriers, by resume number - 1: their instruction index.
    pub points: Vec<usize>,
    /// The registers live across each barrier (by resume number - 1).
    pub live: Vec<Vec<RegId>>,
}

impl GroupPlan {
    /// u32: 0 at the group's start, else the resume number of the barrier it stopped at
    /// (the numbering of the thread-by-thread round function), or [`Self::ENDED`].
    pub const RESUME: u32 = 0;
    /// `RESUME` of a group whose lanes have all ended.
    pub const ENDED: u32 = u32::MAX;
    /// u32: the lanes that have not exited, lane k the bit k.
    pub const ALIVE: u32 = 16;

    fn of(
        f: &crate::ast::Function,
        fixed: &[Option<Shape>],
        across: &HashMap<usize, RegSet>,
        lanes: u32,
    ) -> Self {
        // The registers' homes after the alive lanes' word.
        let mut at = Self::ALIVE + 16;
        let homes = f
            .regs
            .iter()
            .zip(fixed)
            .map(|(_, s)| match s {
                Some(Shape::Varying) => {
                    let h = Home::Lanes { at };
                    at += 4 * lanes;
                    h
                }
                Some(Shape::Affine(stride)) => {
                    let h = Home::Scalar {
                        at,
                        stride: *stride,
                    };
                    at += 16;
                    h
                }
                _ => {
                    let h = Home::Scalar { at, stride: 0 };
                    at += 16;
                    h
                }
            })
            .collect();
        let points = sync_points(f);
        let live = points
            .iter()
            .map(|p| {
                (0..f.regs.len() as u32)
                    .map(RegId)
                    .filter(|r| liveness::has(&across[p], *r))
                    .collect()
            })
            .collect();
        GroupPlan {
            lanes,
            size: at.next_multiple_of(16),
            homes,
            points,
            live,
        }
    }
}

/// Where a home starts in the state area.
fn home_at(h: Home) -> u32 {
    match h {
        Home::Scalar { at, .. } | Home::Lanes { at } => at,
    }
}

/// The sync points of `f` in body order (the resume numbers count them from 1).
fn sync_points(f: &crate::ast::Function) -> Vec<usize> {
    (f.body.iter().flatten().enumerate())
        .filter(|(_, i)| matches!(i.inst, Inst::Sync { .. }))
        .map(|(i, _)| i)
        .collect()
}

/// Lowers kernel `fid` as a group function of `4 × P` lanes, again until every register
/// keeps one shape; the function (not yet defined) and its plan, or why the kernel runs
/// thread by thread.
pub fn lower_group<const P: usize>(
    jm: &mut JITModule,
    sh: &Shared,
    fid: crate::ast::FuncId,
) -> Result<(ir::Function, GroupPlan), Refused> {
    let f = sh.ptx.func(fid);
    qualifies(sh, f, fid, 4 * P as u32)?;
    let cc = jm.isa().default_call_conv();
    let live_out = liveness::live_out(f);
    // The registers saved at each barrier: those the round function saves.
    let across = kept_across(f);
    // Registers read before any write start uniform (0 in every lane).
    let mut fixed: Vec<Option<Shape>> = vec![None; f.regs.len()];
    let entry_live = live_in(f, &live_out, 0);
    for (k, s) in fixed.iter_mut().enumerate() {
        if liveness::has(&entry_live, RegId(k as u32)) {
            *s = Some(Shape::Uniform);
        }
    }
    let seeds = fixed.clone();
    for round in 0..16 {
        // Each lowering's writes give the next one's shapes; after a few, the shapes only
        // grow (so they settle).
        let start = if round < 8 { &seeds } else { &fixed };
        let mut func =
            ir::Function::with_name_signature(ir::UserFuncName::default(), group_signature(cc));
        let mut fc = FunctionBuilderContext::new();
        let b = FunctionBuilder::new(&mut func, &mut fc);
        let plan = GroupPlan::of(f, &fixed, &across, 4 * P as u32);
        let raised = Lower::group_function::<P>(b, sh, jm, fid, &fixed, start, &plan)?;
        if raised == fixed {
            return Ok((func, plan));
        }
        fixed = raised;
    }
    refuse("the registers' shapes did not settle")
}

/// The kernels the group functions take (besides what the lowering refuses), in groups of
/// `lanes` threads.
fn qualifies(
    sh: &Shared,
    f: &crate::ast::Function,
    fid: crate::ast::FuncId,
    lanes: u32,
) -> Res<()> {
    let layout = &sh.layouts[fid.0 as usize];
    if layout.frame_size > 0 || layout.call_buf > 0 {
        return refuse("it has .local variables or calls");
    }
    let mut collectives = false;
    for ins in f.body.iter().flatten() {
        match &ins.inst {
            Inst::Sync { .. } if ins.guard.is_some() => return refuse("a guarded sync point"),
            Inst::Sync {
                op:
                    SyncOp::Shfl(_)
                    | SyncOp::Vote(_)
                    | SyncOp::Activemask
                    | SyncOp::Redux(..)
                    | SyncOp::WarpSync
                    | SyncOp::Elect,
                srcs,
                ..
            } => {
                if lanes != 32 {
                    return refuse("a warp collective in groups of other than a warp");
                }
                if !srcs
                    .iter()
                    .all(|s| matches!(s, Operand::Reg(_) | Operand::Imm(Imm::Int(_))))
                {
                    return refuse("a collective's operand other than a register or an integer");
                }
                collectives = true;
            }
            Inst::Sync { .. } if schedule::plain_barrier(&ins.inst).is_none() => {
                return refuse("a sync point other than a plain bar.sync or a warp collective");
            }
            Inst::IntBin { carry, .. } | Inst::Mad { carry, .. }
                if carry.carry_in || carry.carry_out =>
            {
                return refuse("carry arithmetic");
            }
            Inst::Call { .. } => return refuse("a call"),
            _ => {}
        }
    }
    if collectives && sync_points(f).len() > 63 {
        return refuse("more than 63 sync points with warp collectives among them");
    }
    Ok(())
}

/// For each sync point, the registers a group keeps in its state there: those live after
/// it and, at a warp collective, its sources (the group computes the collective when it
/// goes on, and a hand-over publishes them).
fn kept_across(f: &crate::ast::Function) -> HashMap<usize, RegSet> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let mut across = crate::jit::lower::sync::live_across_points(f);
    for (&i, set) in across.iter_mut() {
        if matches!(body[i].inst, Inst::Sync { op, .. } if !op.is_barrier()) {
            for r in body[i].inst.reads() {
                liveness::add(set, r);
            }
        }
    }
    across
}

/// The registers live before instruction `i`.
fn live_in(f: &crate::ast::Function, live_out: &[RegSet], i: usize) -> RegSet {
    let body = f.body.as_deref().unwrap_or(&[]);
    let Some(ins) = body.get(i) else {
        return vec![0; f.regs.len().div_ceil(64).max(1)];
    };
    let mut set = live_out[i].clone();
    if ins.guard.is_none() {
        for r in ins.inst.written() {
            liveness::remove(&mut set, r);
        }
    }
    for r in ins.inst.reads() {
        liveness::add(&mut set, r);
    }
    if let Some(g) = ins.guard {
        liveness::add(&mut set, g.reg);
    }
    set
}

/// What an access of a segment leaves for the gate.
struct Access<const P: usize> {
    /// Its instruction, and whether it writes (a store or an atomic).
    at: usize,
    writes: bool,
    atomic: bool,
    /// Lane 0's host address, and whether any lane ran it.
    lo: Variable,
    ran: Variable,
    /// Lane k's bytes are at `lo + k × stride` (None: every lane's at `lo`).
    stride: Option<i64>,
    size: usize,
    held: Option<Held<P>>,
    /// The state space the instruction names (None: generic), and its address as written.
    space: Option<Space>,
    addr: crate::ast::Address,
}

/// A store or atomic held back to the barrier.
struct Held<const P: usize> {
    /// The lanes that ran it (a [lane mask](Group::mask)).
    mask: Variable,
    what: HeldWhat<P>,
}

enum HeldWhat<const P: usize> {
    /// 32-bit values, a lane each.
    Lanes([Variable; P]),
    /// One value (of the store's type) for every lane.
    Scalar(Variable, Type),
    /// An atomic with uniform operands: the registers it reads and their values then.
    Atomic(Vec<(RegId, Variable)>),
}

/// The group function's state while it is lowered.
struct Group<'l, 'a, 'f, const P: usize> {
    lanes: Lanes<'l, 'a, 'f, P>,
    live_out: &'l [RegSet],
    /// Before instruction i: the targets of per-thread branches still waited for.
    open: Vec<BTreeSet<usize>>,
    gstate: Value,
    /// The block's group states, how many groups there are (I64) and each one's size: for
    /// the quiet path's skip over the groups after the one running; and the state area after
    /// them, where a tail's owed stop is kept (see [`Self::settle_tail`]).
    states: Value,
    groups: Value,
    size: u32,
    snapshot: Value,
    /// On the quiet path (I8): whether every choice so far went the same way for the groups
    /// after this one (see `quiet.rs`).
    alike: Variable,
    shared_base: Value,
    window_end: Value,
    /// The lanes that have not exited and those running: [lane masks](Self::mask).
    alive: Variable,
    cur: Variable,
    /// Whether `alive` holds every lane wherever the lowering now stands: the segment
    /// started with every lane there and no exit of it is lowered yet (blocks are lowered
    /// in an order where every edge goes forward). Collectives then need not mask the
    /// sources of exited lanes.
    every_alive: bool,
    /// Lanes waiting at each target of a per-thread branch.
    pending: HashMap<usize, Variable>,
    /// The running lanes as vectors, by their lane mask: the block they were made in and
    /// the vectors ([`Self::running_vectors`]).
    cur_vectors: HashMap<Value, (Block, Vecs<P>)>,
    /// Checked: whether each run's span passed (I8, by run; see `checked.rs`).
    run_ok: HashMap<usize, Variable>,
    /// 128 bytes for lane-by-lane work: a word a lane.
    scratch: ir::StackSlot,
    handover: Block,
    plan_live: Vec<RegSet>,
    /// Each register's home in the state area (the plan's).
    homes: Vec<Home>,
    points: Vec<usize>,
    // The segment being lowered:
    blocks: HashMap<usize, Block>,
    accesses: Vec<Access<P>>,
    stops: Vec<(Option<usize>, Block)>,
    seg_vars: Vec<(Variable, ir::Type)>,
    /// The segment being lowered, the registers it writes and the exits that may take
    /// lanes out: what its stops store (the rest is in the state as it was loaded).
    seg: usize,
    seg_written: RegSet,
    /// The registers the segment reads or writes: the others are not loaded where it
    /// starts.
    seg_used: RegSet,
    /// The registers the segment only reads, saved at its barrier: each block that reads
    /// one loads it from the state itself (a value loaded where the segment starts would
    /// live, and be spilled, across the whole segment).
    seg_reloaded: RegSet,
    seg_exits: Vec<usize>,
    /// Whether a store or atomic of the segment ran in any lane (I8): if none did, its
    /// stops have nothing to gate or write.
    wrote: Option<Variable>,
    /// Lowering the segment's converged version (see `converged.rs`): where it goes
    /// when its lanes would part (the full segment's start).
    converged: Option<Block>,
    round: Round,
    /// The barriers' ids, by resume number - 1 (None: a warp collective).
    ids: Vec<Option<u32>>,
    /// Whether the group stops at each sync point, by resume number - 1 (see
    /// [`collective::stops`]): it runs through the other collectives.
    stops_at: Vec<bool>,
    /// The collectives it runs through, by instruction.
    through: BTreeSet<usize>,
    /// Registers that hold one constant wherever they are read (see
    /// [`collective::constant_regs`]).
    constants: HashMap<RegId, i128>,
}

/// The variables of the group function's rounds.
#[derive(Clone, Copy)]
struct Round {
    /// The group running (I64).
    group: Variable,
    /// The id of the barriers the round's groups stopped at (I32, `u32::MAX` before the
    /// first), whether they differ (I8) and how many stopped (I32).
    id: Variable,
    mixed: Variable,
    stopped: Variable,
    /// How many groups stopped at a warp collective in this round (I32), and whether this round runs
    /// only the groups that stand at one (I8: the others wait at barriers).
    collected: Variable,
    only: Variable,
    /// The first group of the tail, those that owe a stop (I64; the number of groups when
    /// there is none: see [`Group::settle_tail`]); the round runs the groups before it, then
    /// pays the tail and runs its groups too.
    tail: Variable,
    /// Where a group's run ends: on to the next group.
    next: Block,
}

impl Round {
    /// A round of every group that has not ended, from the first, jumping to `head`.
    fn start(&self, b: &mut FunctionBuilder, head: Block) {
        let none = b.ins().iconst(types::I32, u32::MAX as i64);
        b.def_var(self.id, none);
        let no = b.ins().iconst(types::I8, 0);
        b.def_var(self.mixed, no);
        let z32 = b.ins().iconst(types::I32, 0);
        b.def_var(self.stopped, z32);
        self.run_from_first(b, head, false);
    }

    /// A round of the groups that stand at a warp collective (the schedule resolved it when the
    /// last round ended), the others waiting on at their barriers.
    fn collectives(&self, b: &mut FunctionBuilder, head: Block) {
        self.run_from_first(b, head, true);
    }

    fn run_from_first(&self, b: &mut FunctionBuilder, head: Block, only: bool) {
        let z64 = b.ins().iconst(types::I64, 0);
        b.def_var(self.group, z64);
        let z32 = b.ins().iconst(types::I32, 0);
        b.def_var(self.collected, z32);
        let only = b.ins().iconst(types::I8, only as i64);
        b.def_var(self.only, only);
        b.ins().jump(head, &[]);
    }

    /// The group running stopped at a warp collective.
    fn stopped_at_collective(&self, b: &mut FunctionBuilder) {
        let n = b.use_var(self.collected);
        let n = b.ins().iadd_imm_s(n, 1);
        b.def_var(self.collected, n);
        b.ins().jump(self.next, &[]);
    }

    /// The group running stopped at a barrier of id `id`; `one_id`: the kernel's barriers
    /// all have that id (they cannot differ).
    fn stopped_at(&self, b: &mut FunctionBuilder, id: u32, one_id: bool) {
        let n = b.use_var(self.stopped);
        let n = b.ins().iadd_imm_s(n, 1);
        b.def_var(self.stopped, n);
        if one_id {
            b.ins().jump(self.next, &[]);
            return;
        }
        let before = b.use_var(self.id);
        let other = b.ins().icmp_imm_u(IntCC::NotEqual, before, id as i64);
        let first = b.ins().icmp_imm_u(IntCC::Equal, before, u32::MAX as i64);
        let differs = b.ins().band_not(other, first);
        let m = b.use_var(self.mixed);
        let m = b.ins().bor(m, differs);
        b.def_var(self.mixed, m);
        let id = b.ins().iconst(types::I32, id as i64);
        b.def_var(self.id, id);
        b.ins().jump(self.next, &[]);
    }

    /// The group running ended: marked so in its state.
    fn ended(&self, b: &mut FunctionBuilder, gstate: Value) {
        let e = b.ins().iconst(types::I32, GroupPlan::ENDED as i64);
        b.ins()
            .store(trusted(), e, gstate, GroupPlan::RESUME as i32);
        b.ins().jump(self.next, &[]);
    }
}

impl<'a, 'f> Lower<'a, 'f> {
    /// One lowering of a group function with register shapes `fixed`; the shapes its
    /// writes asked for.
    fn group_function<const P: usize>(
        b: FunctionBuilder<'f>,
        sh: &'a Shared<'a>,
        jm: &'a mut JITModule,
        fid: crate::ast::FuncId,
        fixed: &[Option<Shape>],
        start: &[Option<Shape>],
        plan: &GroupPlan,
    ) -> Res<Vec<Option<Shape>>> {
        let (mut l, entry) = Lower::new(b, sh, jm, fid);
        let live_out = &liveness::live_out(l.f);
        let params = l.b.block_params(entry).to_vec();
        let (states, groups, firsts, at_out) = (params[1], params[2], params[3], params[4]);
        let groups64 = l.b.ins().uextend(types::I64, groups);
        l.kernel_dims();
        let tid = l.dims.as_ref().expect("kernel_dims sets them").tid;
        let ctx = l.ctx;
        let shared_base = l.b.ins().load(
            types::I64,
            trusted(),
            ctx,
            offset_of!(ThreadCtx, shared_base) as i32,
        );
        let dynamic = l.b.ins().load(
            types::I32,
            trusted(),
            ctx,
            offset_of!(ThreadCtx, dynamic_smem) as i32,
        );
        let dynamic = l.b.ins().uextend(types::I64, dynamic);
        let window_end = l.b.ins().iadd(shared_base, dynamic);
        let fixed_window = sh.shared_layout.window_size(fid, 0) as i64;
        let window_end = l.b.ins().iadd_imm_s(window_end, fixed_window);
        let nregs = l.f.regs.len();
        let vregs = (0..nregs)
            .map(|_| [(); P].map(|_| l.b.declare_var(V)))
            .collect();
        let (head, done, bail, handover) = (
            l.b.create_block(),
            l.b.create_block(),
            l.b.create_block(),
            l.b.create_block(),
        );
        let retried = l.b.declare_var(types::I8);
        let wrap = l.b.declare_var(types::I8);
        let alive = l.b.declare_var(types::I32);
        let cur = l.b.declare_var(types::I32);
        let scratch =
            l.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 128, 4));
        // The rounds: every group that has not ended, in order, to its next barrier.
        let round = Round {
            group: l.b.declare_var(types::I64),
            id: l.b.declare_var(types::I32),
            mixed: l.b.declare_var(types::I8),
            stopped: l.b.declare_var(types::I32),
            collected: l.b.declare_var(types::I32),
            only: l.b.declare_var(types::I8),
            tail: l.b.declare_var(types::I64),
            next: l.b.create_block(),
        };
        // The state area after the groups' holds what the groups of a tail owe.
        let snapshot = l.b.ins().imul_imm_u(groups64, plan.size as i64);
        let snapshot = l.b.ins().iadd(states, snapshot);
        l.b.def_var(round.tail, groups64);
        let (round_head, run, end) = (l.b.create_block(), l.b.create_block(), l.b.create_block());
        round.start(&mut l.b, round_head);
        l.b.switch_to_block(round_head);
        let g = l.b.use_var(round.group);
        let tail = l.b.use_var(round.tail);
        let more = l.b.ins().icmp(IntCC::UnsignedLessThan, g, tail);
        let past = l.b.create_block();
        l.b.ins().brif(more, run, &[], past, &[]);
        // At a tail's first group (not past the last group, where a quiet path that left a
        // tail sends the round), the tail's groups are paid what they owe and the round goes
        // on with them.
        l.b.switch_to_block(past);
        let settle = l.b.create_block();
        let owed = l.b.ins().icmp(IntCC::UnsignedLessThan, g, groups64);
        l.b.ins().brif(owed, settle, &[], end, &[]);
        l.b.switch_to_block(run);
        let gstate = l.b.ins().imul_imm_u(g, plan.size as i64);
        let gstate = l.b.ins().iadd(states, gstate);
        let resume =
            l.b.ins()
                .load(types::I32, trusted(), gstate, GroupPlan::RESUME as i32);
        let ended =
            l.b.ins()
                .icmp_imm_u(IntCC::Equal, resume, GroupPlan::ENDED as i64);
        let dispatch = l.b.create_block();
        let points = plan.points.clone();
        let body = l.f.body.as_deref().expect("kernels have bodies");
        // The barriers' ids by resume number - 1 (None: a warp collective).
        let ids: Vec<Option<u32>> = (points.iter())
            .map(|&p| schedule::plain_barrier(&body[p].inst))
            .collect();
        let collectives = ids.iter().any(|id| id.is_none());
        if collectives {
            // In a round of the groups at warp collectives, the others wait on.
            let waits = l.b.create_block();
            l.b.ins().brif(ended, round.next, &[], waits, &[]);
            l.b.switch_to_block(waits);
            let barriers = (ids.iter().enumerate())
                .filter(|(_, id)| id.is_some())
                .fold(0u64, |m, (k, _)| m | 1 << (k + 1));
            let barriers = l.b.ins().iconst(types::I64, barriers as i64);
            let number = l.b.ins().uextend(types::I64, resume);
            let at_barrier = l.b.ins().ushr(barriers, number);
            let at_barrier = l.b.ins().ireduce(types::I8, at_barrier);
            let only = l.b.use_var(round.only);
            let waits = l.b.ins().band(only, at_barrier);
            let waits = l.b.ins().band_imm_u(waits, 1);
            l.b.ins().brif(waits, round.next, &[], dispatch, &[]);
        } else {
            l.b.ins().brif(ended, round.next, &[], dispatch, &[]);
        }
        l.b.switch_to_block(dispatch);
        let first = l.b.ins().ishl_imm_u(g, 4);
        let first = l.b.ins().iadd(firsts, first);
        for (k, t) in tid.into_iter().enumerate() {
            let v = l.b.ins().load(types::I32, trusted(), first, 4 * k as i32);
            l.b.def_var(t, v);
        }
        // The next group, and after the last the round's end: all ended, on to the next
        // round, or barriers of different ids.
        l.b.switch_to_block(round.next);
        let g = l.b.use_var(round.group);
        let g1 = l.b.ins().iadd_imm_s(g, 1);
        l.b.def_var(round.group, g1);
        l.b.ins().jump(round_head, &[]);
        l.b.switch_to_block(end);
        let (again, all_ended, mixed) =
            (l.b.create_block(), l.b.create_block(), l.b.create_block());
        if collectives {
            // Groups stopped at warp collectives: those go on, the others wait on.
            let (more, barriers) = (l.b.create_block(), l.b.create_block());
            let n = l.b.use_var(round.collected);
            l.b.ins().brif(n, more, &[], barriers, &[]);
            l.b.switch_to_block(more);
            round.collectives(&mut l.b, round_head);
            l.b.switch_to_block(barriers);
        }
        let stopped = l.b.use_var(round.stopped);
        let go = l.b.create_block();
        l.b.ins().brif(stopped, go, &[], all_ended, &[]);
        l.b.switch_to_block(go);
        let m = l.b.use_var(round.mixed);
        l.b.ins().brif(m, mixed, &[], again, &[]);
        l.b.switch_to_block(again);
        round.start(&mut l.b, round_head);
        l.b.switch_to_block(all_ended);
        let v = l.b.ins().iconst(types::I32, GROUP_ENDED as i64);
        l.b.ins().return_(&[v]);
        let across = kept_across(l.f);
        let plan_live: Vec<RegSet> = points.iter().map(|p| across[p].clone()).collect();
        let mut lanes = Lanes::new(&mut l, vregs, head, retried, done, bail);
        lanes.wrap = Some(wrap);
        lanes.fixed = Some(fixed.to_vec());
        lanes.raised = start.to_vec();
        lanes.unknown = vec![false; nregs];
        lanes.alike = super::alike::Alike::of(lanes.l.f);
        let alike = lanes.l.b.declare_var(types::I8);
        let open = regions(&mut lanes)?;
        let constants = collective::constant_regs(lanes.l.f, &live_in(lanes.l.f, live_out, 0));
        let stops_at = collective::stops(sh.ptx, lanes.l.f, &points);
        let mut g = Group {
            lanes,
            live_out,
            open,
            gstate,
            states,
            groups: groups64,
            size: plan.size,
            snapshot,
            alike,
            shared_base,
            window_end,
            alive,
            cur,
            every_alive: false,
            pending: HashMap::new(),
            cur_vectors: HashMap::new(),
            run_ok: HashMap::new(),
            scratch,
            handover,
            plan_live,
            homes: plan.homes.clone(),
            points: points.clone(),
            blocks: HashMap::new(),
            accesses: Vec::new(),
            stops: Vec::new(),
            seg_vars: Vec::new(),
            round,
            ids,
            constants,
            through: (points.iter().zip(&stops_at))
                .filter(|(_, stop)| !**stop)
                .map(|(p, _)| *p)
                .collect(),
            stops_at,
            seg: 0,
            seg_written: RegSet::new(),
            seg_used: RegSet::new(),
            seg_reloaded: RegSet::new(),
            seg_exits: Vec::new(),
            wrote: None,
            converged: None,
        };
        let mut starts = Vec::new();
        let never = g.b().create_block();
        for k in 0..=points.len() {
            if k > 0 && !g.stops_at[k - 1] {
                // No group stands at a collective it runs through.
                starts.push(never);
                continue;
            }
            let blk = g.b().create_block();
            g.segment(k, blk)?;
            // A segment from the start or a barrier tries its quiet path, then its
            // converged version, then the full segment.
            let from_barrier = k == 0 || g.ids[k - 1].is_some();
            let mut first = blk;
            if from_barrier && g.may_part(k) {
                first = g.b().create_block();
                g.converged = Some(blk);
                g.segment(k, first)?;
                g.converged = None;
            }
            let quiet = match k > 0 && from_barrier {
                true => g.quiet(k, first, blk)?,
                false => None,
            };
            starts.push(quiet.unwrap_or(first));
        }
        let raised = std::mem::take(&mut g.lanes.raised);
        // Each group on from where it stands.
        let b = g.b();
        b.switch_to_block(dispatch);
        if starts.len() <= 4 {
            // A few segments: conditional branches (a little faster than the indirect
            // jump on the tiled matmul).
            for (k, s) in starts.iter().enumerate().skip(1) {
                let is = b.ins().icmp_imm_s(IntCC::Equal, resume, k as i64);
                let other = b.create_block();
                b.ins().brif(is, *s, &[], other, &[]);
                b.switch_to_block(other);
            }
            b.ins().jump(starts[0], &[]);
        } else {
            let table: Vec<_> = starts
                .iter()
                .map(|s| b.func.dfg.block_call(*s, &[]))
                .collect();
            let default = b.func.dfg.block_call(starts[0], &[]);
            let jt = b.create_jump_table(JumpTableData::new(default, &table));
            b.ins().br_table(resume, jt);
        }
        g.b().switch_to_block(settle);
        g.settle_tail();
        g.b().ins().jump(round_head, &[]);
        let fail = g.lanes.l.fail;
        for (blk, code) in [(handover, GROUP_HANDOVER), (fail, GROUP_FAULT)] {
            g.b().switch_to_block(blk);
            if code == GROUP_HANDOVER {
                g.settle_tail();
            }
            let b = g.b();
            let at = b.use_var(round.group);
            let mut at = b.ins().ireduce(types::I32, at);
            if code == GROUP_HANDOVER {
                // Whether the round ran only the groups at warp collectives.
                let only = b.use_var(round.only);
                let only = b.ins().uextend(types::I32, only);
                let only = b.ins().ishl_imm_u(only, 31);
                at = b.ins().bor(at, only);
            }
            b.ins().store(trusted(), at, at_out, 0);
            let v = b.ins().iconst(types::I32, code as i64);
            b.ins().return_(&[v]);
        }
        g.b().switch_to_block(mixed);
        g.settle_tail();
        let v = g.b().ins().iconst(types::I32, GROUP_MIXED as i64);
        g.b().ins().return_(&[v]);
        let b = g.b();
        for blk in [head, done, bail, never] {
            b.switch_to_block(blk);
            b.ins().trap(ir::TrapCode::unwrap_user(1));
        }
        drop(g);
        l.seal_and_finalize();
        Ok(raised)
    }
}

/// Which per-thread branches wait where: before each instruction, the targets still
/// waited for (a forward scan of the body, with the shapes of this lowering); refuses what
/// the group functions do not take.
fn regions<const P: usize>(lanes: &mut Lanes<'_, '_, '_, P>) -> Res<Vec<BTreeSet<usize>>> {
    let f = lanes.l.f;
    let body = f.body.as_deref().expect("kernels have bodies");
    let n = body.len();
    let mut open: BTreeSet<usize> = BTreeSet::new();
    let mut before = Vec::with_capacity(n + 1);
    let mut jumps: Vec<usize> = Vec::new();
    for (i, ins) in body.iter().enumerate() {
        open.remove(&i);
        before.push(open.clone());
        let text = || lanes.text(i);
        match &ins.inst {
            Inst::Bra { target, .. } => {
                let t = f.labels[target.0 as usize];
                if super::gate::is_exit(body, t) {
                    continue;
                }
                let uniform = match ins.guard {
                    None => open.is_empty(),
                    Some(g) => fixed_shape(lanes, g.reg) == Shape::Uniform,
                };
                if uniform {
                    if !open.is_empty() {
                        return refuse(format!(
                            "{}: a branch on a uniform value inside a per-thread branch",
                            text()
                        ));
                    }
                    jumps.push(t);
                } else {
                    if t <= i {
                        return refuse(format!("{}: a per-thread branch backwards", text()));
                    }
                    open.insert(t);
                }
            }
            Inst::Sync { .. } if !open.is_empty() => {
                return refuse(format!(
                    "{}: a barrier or warp collective inside a per-thread branch",
                    text()
                ));
            }
            _ => {}
        }
    }
    open.remove(&n);
    before.push(open);
    for t in jumps {
        if !before[t].is_empty() {
            return refuse("a branch into the middle of a per-thread branch");
        }
    }
    Ok(before)
}

fn fixed_shape<const P: usize>(lanes: &Lanes<'_, '_, '_, P>, r: RegId) -> Shape {
    lanes.fixed.as_ref().expect("a group function")[r.0 as usize].unwrap_or(Shape::Uniform)
}

impl<'l, 'a, 'f, const P: usize> Group<'l, 'a, 'f, P> {
    fn b(&mut self) -> &mut FunctionBuilder<'f> {
        &mut self.lanes.l.b
    }

    fn body(&self) -> &'a [Instruction] {
        self.lanes.l.f.body.as_deref().expect("kernels have bodies")
    }

    /// Whether the group runs through sync point `i` (a warp collective; see [`collective::stops`]).
    fn through(&self, i: usize) -> bool {
        self.through.contains(&i)
    }

    /// Where control may go after instruction `i` without leaving the segment.
    /// Inside a per-thread branch an exit (or a branch to the end) takes the running lanes
    /// out and the code goes on for the lanes waiting further on, as `exit` lowers it.
    fn next(&self, i: usize) -> Vec<usize> {
        let ins = &self.body()[i];
        let f = self.lanes.l.f;
        let in_branch = !self.open[i].is_empty();
        match ins.inst {
            Inst::Sync { .. } if self.through(i) => liveness::successors(f, i),
            Inst::Sync { .. } => Vec::new(),
            Inst::Ret | Inst::Exit if ins.guard.is_none() && !in_branch => Vec::new(),
            Inst::Ret | Inst::Exit if ins.guard.is_none() => vec![i + 1],
            Inst::Bra { target, .. }
                if in_branch && super::gate::is_exit(self.body(), f.labels[target.0 as usize]) =>
            {
                let mut next = liveness::successors(f, i);
                next.push(i + 1);
                next
            }
            _ => liveness::successors(f, i),
        }
    }

    /// Where the group goes when a per-thread branch at `i` to `t` leaves no lane running:
    /// the first target lanes may be waiting at (an earlier branch's, before `t`), whose
    /// code those lanes have still to run.
    fn first_join(&mut self, i: usize, t: usize) -> (usize, Block) {
        let first = self.open[i].iter().copied().filter(|&x| x < t).min();
        let first = first.unwrap_or(t);
        (first, self.target_block(first))
    }

    /// Whether instruction `i` is a branch that is a branch in the group function (on a
    /// uniform predicate, or a jump outside per-thread branches).
    fn real_branch(&self, i: usize) -> Option<usize> {
        let ins = &self.body()[i];
        let Inst::Bra { target, .. } = ins.inst else {
            return None;
        };
        let t = self.lanes.l.f.labels[target.0 as usize];
        if super::gate::is_exit(self.body(), t) {
            return None;
        }
        let uniform = match ins.guard {
            None => self.open[i].is_empty(),
            Some(g) => fixed_shape(&self.lanes, g.reg) == Shape::Uniform,
        };
        uniform.then_some(t)
    }

    /// Segment `k`: from the kernel's start (0) or barrier k on, to the barriers and ends
    /// it reaches.
    fn segment(&mut self, k: usize, start_block: Block) -> Res<()> {
        let body = self.body();
        let n = body.len();
        let start = if k == 0 { 0 } else { self.points[k - 1] + 1 };
        // The instructions it reaches, and where its blocks start.
        let reach = self.reach(k);
        let mut leaders: BTreeSet<usize> = BTreeSet::new();
        leaders.insert(start);
        for i in (0..n).filter(|&i| reach[i]) {
            let ins = &body[i];
            if let Some(t) = self.real_branch(i) {
                leaders.insert(t);
                if ins.guard.is_some() {
                    leaders.insert(i + 1);
                }
            }
            if let Inst::Bra { target, .. } = ins.inst {
                let t = self.lanes.l.f.labels[target.0 as usize];
                if !super::gate::is_exit(body, t) && self.real_branch(i).is_none() {
                    leaders.insert(t);
                }
            }
        }
        leaders.retain(|&i| i < n && reach[i]);
        // Blocks in an order where every edge goes forward (a loop without a barrier in
        // it has none).
        let succ = |g: &Self, l: usize| -> Vec<usize> {
            let mut out = Vec::new();
            let mut i = l;
            loop {
                let next = g.next(i);
                out.extend(next.iter().filter(|s| leaders.contains(s)));
                if i + 1 >= n || leaders.contains(&(i + 1)) || !next.contains(&(i + 1)) {
                    return out;
                }
                i += 1;
            }
        };
        let mut order = Vec::new();
        let mut state: HashMap<usize, u8> = HashMap::new();
        let mut dfs: Vec<(usize, bool)> = vec![(start, false)];
        while let Some((l, post)) = dfs.pop() {
            if post {
                state.insert(l, 2);
                order.push(l);
                continue;
            }
            match state.get(&l) {
                Some(1) => return refuse("a loop without a barrier in it"),
                Some(_) => continue,
                None => {}
            }
            state.insert(l, 1);
            dfs.push((l, true));
            for s in succ(self, l) {
                match state.get(&s) {
                    Some(1) => return refuse("a loop without a barrier in it"),
                    Some(2) => {}
                    _ => dfs.push((s, false)),
                }
            }
        }
        order.reverse();
        self.blocks = leaders
            .iter()
            .map(|&l| (l, self.lanes.l.b.create_block()))
            .collect();
        self.accesses.clear();
        self.stops.clear();
        self.cur_vectors.clear();
        self.seg = k;
        self.seg_exits.clear();
        self.wrote = Some(self.seg_var(types::I8));
        self.seg_written = vec![0; self.lanes.l.f.regs.len().div_ceil(64).max(1)];
        self.seg_used = self.seg_written.clone();
        // A segment from a warp collective computes it first.
        let collective = (k > 0 && self.ids[k - 1].is_none()).then(|| self.points[k - 1]);
        for i in (0..n).filter(|&i| reach[i] || Some(i) == collective) {
            let ins = &body[i];
            for r in ins.inst.written() {
                liveness::add(&mut self.seg_written, r);
                liveness::add(&mut self.seg_used, r);
            }
            for r in ins.inst.reads().into_iter().chain(ins.guard.map(|g| g.reg)) {
                liveness::add(&mut self.seg_used, r);
            }
        }

        // The segment's start: the group's state, nothing pending or held (the variables
        // of its accesses start at 0 in `init`, filled once they are known).
        self.b().switch_to_block(start_block);
        self.start(k);
        if let Some(i) = collective {
            self.fresh_block();
            let reloaded = (body[i].inst.reads().into_iter())
                .filter(|r| liveness::has(&self.seg_reloaded, *r))
                .collect();
            self.load_regs(reloaded);
            self.lanes.l.at = i;
            let unknown = &self.lanes.unknown;
            self.lanes.tainted = (body[i].inst.reads().into_iter()).any(|r| unknown[r.0 as usize]);
            self.collective(i)
                .map_err(|Refused(why)| Refused(format!("{}: {why}", self.lanes.text(i))))?;
        }
        let init = self.b().create_block();
        self.b().ins().jump(init, &[]);
        for &l in &order {
            self.lower_block(l)?;
        }
        self.finish_stops()?;
        self.b().switch_to_block(init);
        // One zero of each type for all of them: a constant each would be a value each,
        // spilled apart across the segment.
        let mut zeros: HashMap<ir::Type, Value> = HashMap::new();
        for (var, ty) in std::mem::take(&mut self.seg_vars) {
            if let Some(&z) = zeros.get(&ty) {
                self.b().def_var(var, z);
                continue;
            }
            let z = if ty.is_vector() {
                let z = self.b().ins().iconst(types::I32, 0);
                self.b().ins().splat(ty, z)
            } else if ty == types::F32 {
                self.b().ins().f32const(0.0)
            } else if ty == types::F64 {
                self.b().ins().f64const(0.0)
            } else {
                self.b().ins().iconst(ty, 0)
            };
            zeros.insert(ty, z);
            self.b().def_var(var, z);
        }
        let first = self.blocks[&start];
        self.b().ins().jump(first, &[]);
        Ok(())
    }

    /// The instructions segment `k` reaches.
    fn reach(&self, k: usize) -> Vec<bool> {
        let n = self.body().len();
        let start = if k == 0 { 0 } else { self.points[k - 1] + 1 };
        let mut reach = vec![false; n];
        let mut stack = vec![start];
        while let Some(i) = stack.pop() {
            if i >= n || reach[i] {
                continue;
            }
            reach[i] = true;
            stack.extend(self.next(i));
        }
        reach
    }

    /// A variable of the segment's accesses, 0 where the segment starts.
    fn seg_var(&mut self, ty: ir::Type) -> Variable {
        let v = self.b().declare_var(ty);
        self.seg_vars.push((v, ty));
        v
    }

    /// The group's registers and lanes at the start of segment `k`.
    fn start(&mut self, k: usize) {
        let f = self.lanes.l.f;
        self.seg_reloaded = vec![0; f.regs.len().div_ceil(64).max(1)];
        let zero_v = {
            let z = self.b().ins().iconst(types::I32, 0);
            self.b().ins().splat(V, z)
        };
        let live = (k > 0).then(|| self.plan_live[k - 1].clone());
        let gstate = self.gstate;
        // One zero of each type (see `segment`).
        let mut zeros: HashMap<Type, Value> = HashMap::new();
        let mut zero =
            |g: &mut Self, ty: Type| *zeros.entry(ty).or_insert_with(|| g.lanes.l.zero(ty));
        for (r, reg) in f.regs.iter().enumerate() {
            let shape = fixed_shape(&self.lanes, RegId(r as u32));
            let home = home_at(self.homes[r]);
            let id = RegId(r as u32);
            let in_state = live.as_ref().is_some_and(|s| liveness::has(s, id))
                && liveness::has(&self.seg_used, id);
            let reloaded = in_state && !liveness::has(&self.seg_written, id);
            if reloaded {
                liveness::add(&mut self.seg_reloaded, id);
            }
            let saved = in_state && !reloaded;
            self.lanes.shape[r] = shape;
            match shape {
                Shape::Varying => {
                    let z = zero(self, reg.ty);
                    let var = self.lanes.l.regs[r];
                    self.b().def_var(var, z);
                    let vars = self.lanes.vregs[r];
                    for (p, var) in vars.into_iter().enumerate() {
                        let v = if saved {
                            let off = (home + 16 * p as u32) as i32;
                            self.b().ins().load(V, trusted(), gstate, off)
                        } else {
                            zero_v
                        };
                        self.b().def_var(var, v);
                    }
                }
                _ => {
                    let v = if saved {
                        self.lanes
                            .l
                            .load_value(clif(reg.ty), trusted(), gstate, home as i32)
                    } else {
                        zero(self, reg.ty)
                    };
                    let var = self.lanes.l.regs[r];
                    self.b().def_var(var, v);
                }
            }
        }
        let zero64 = self.b().ins().iconst(types::I64, 0);
        let cf = self.lanes.l.cf;
        self.b().def_var(cf, zero64);
        // Where no lane can have exited yet, every lane is there.
        let all_there = k == 0 || !self.may_have_exited(self.points[k - 1]);
        let a = if all_there {
            self.every_lane()
        } else {
            let off = GroupPlan::ALIVE as i32;
            self.b().ins().load(types::I32, trusted(), gstate, off)
        };
        let (alive, cur) = (self.alive, self.cur);
        self.b().def_var(alive, a);
        self.b().def_var(cur, a);
        self.every_alive = all_there;
        // Every target waited for in the kernel starts with no lanes.
        let targets: BTreeSet<usize> = self.open.iter().flatten().copied().collect();
        let none = self.b().ins().iconst(types::I32, 0);
        for t in targets {
            let var = *self
                .pending
                .entry(t)
                .or_insert_with(|| self.lanes.l.b.declare_var(types::I32));
            self.b().def_var(var, none);
        }
        let wrap = self.lanes.wrap.expect("set");
        let no = self.b().ins().iconst(types::I8, 0);
        self.b().def_var(wrap, no);
        self.lanes.wrap_unchecked = false;
    }

    /// Whether a lane may have exited before instruction `p`: the group can stand there
    /// after an exit, that is `p` lies after the first exit (the lanes that did not take
    /// it go on forward), or what lies after it reaches `p` by branches back (also in
    /// several hops: back to a point after `p` and from there back over it).
    fn may_have_exited(&self, p: usize) -> bool {
        let body = self.body();
        let f = self.lanes.l.f;
        let exits = |i: usize| match body[i].inst {
            Inst::Ret | Inst::Exit => true,
            Inst::Bra { target, .. } => super::gate::is_exit(body, f.labels[target.0 as usize]),
            _ => false,
        };
        let Some(first) = (0..body.len()).find(|&i| exits(i)) else {
            return false;
        };
        if first < p {
            return true;
        }
        let mut reached = vec![false; body.len() + 1];
        let mut work: Vec<usize> = (first + 1..body.len()).collect();
        while let Some(i) = work.pop() {
            if i >= body.len() || std::mem::replace(&mut reached[i], true) {
                continue;
            }
            let guarded = body[i].guard.is_some();
            match body[i].inst {
                Inst::Bra { target, .. } => {
                    work.push(f.labels[target.0 as usize]);
                    if guarded {
                        work.push(i + 1);
                    }
                }
                Inst::Ret | Inst::Exit if !guarded => {}
                _ => work.push(i + 1),
            }
        }
        reached[p]
    }

    /// Lowers the block starting at instruction `l`.
    fn lower_block(&mut self, l: usize) -> Res<()> {
        let blk = self.blocks[&l];
        self.b().switch_to_block(blk);
        self.fresh_block();
        // Lanes waiting for this instruction join.
        if let Some(var) = self.pending.get(&l).copied()
            && self.converged.is_none()
            && self.open.iter().any(|o| o.contains(&l))
        {
            let (cur, waiting) = (self.mask(self.cur), self.mask(var));
            let joined = self.b().ins().bor(cur, waiting);
            self.set_mask(self.cur, joined);
            let none = self.b().ins().iconst(types::I32, 0);
            self.set_mask(var, none);
        }
        self.reload(l);
        let body = self.body();
        let n = body.len();
        let mut i = l;
        loop {
            let ins = &body[i];
            self.lowering(i);
            let goes_on = self
                .inst(i, ins)
                .map_err(|Refused(why)| Refused(format!("{}: {why}", self.lanes.text(i))))?;
            if !goes_on {
                return Ok(());
            }
            i += 1;
            if i >= n {
                let end = self.stop_block(None);
                self.b().ins().jump(end, &[]);
                return Ok(());
            }
            if let Some(&next) = self.blocks.get(&i) {
                self.b().ins().jump(next, &[]);
                return Ok(());
            }
        }
    }

    /// Instruction `i` is lowered next: the site its faults name, and whether it reads a
    /// register whose shape this lowering does not know yet.
    fn lowering(&mut self, i: usize) {
        self.lanes.l.at = i;
        self.lanes.l.site = crate::jit::runtime::Site {
            func: self.lanes.l.fid,
            inst: i as u32,
        }
        .pack();
        let ins = &self.body()[i];
        let unknown = &self.lanes.unknown;
        self.lanes.tainted = (ins.inst.reads().into_iter())
            .chain(ins.guard.map(|g| g.reg))
            .any(|r| unknown[r.0 as usize]);
    }

    /// Loads, from the state, the registers the block starting at instruction `l` reads
    /// that the segment reloads (`seg_reloaded`).
    fn reload(&mut self, l: usize) {
        let body = self.body();
        let n = body.len();
        let mut regs = BTreeSet::new();
        let mut i = l;
        loop {
            let ins = &body[i];
            let reads = ins.inst.reads().into_iter().chain(ins.guard.map(|g| g.reg));
            regs.extend(reads.filter(|r| liveness::has(&self.seg_reloaded, *r)));
            // On to the next leader: the lowering may go on past a branch or exit (with
            // the lanes left), and reading more than the block reads costs only a load.
            if i + 1 >= n || self.blocks.contains_key(&(i + 1)) {
                break;
            }
            i += 1;
        }
        self.load_regs(regs);
    }

    /// Loads registers from the state.
    fn load_regs(&mut self, regs: BTreeSet<RegId>) {
        let gstate = self.gstate;
        for r in regs {
            let k = r.0 as usize;
            let home = home_at(self.homes[k]);
            match fixed_shape(&self.lanes, r) {
                Shape::Varying => {
                    for (p, var) in self.lanes.vregs[k].into_iter().enumerate() {
                        let off = (home + 16 * p as u32) as i32;
                        let v = self.b().ins().load(V, trusted(), gstate, off);
                        self.b().def_var(var, v);
                    }
                }
                _ => {
                    let ty = clif(self.lanes.l.f.reg(r).ty);
                    let v = self.lanes.l.load_value(ty, trusted(), gstate, home as i32);
                    let var = self.lanes.l.regs[k];
                    self.b().def_var(var, v);
                }
            }
        }
    }

    /// Stores a register into its home in group state `gstate` (the running group's, or on
    /// the quiet path's skip a later one's).
    fn store_reg(&mut self, r: RegId, gstate: Value) {
        let k = r.0 as usize;
        let home = home_at(self.homes[k]);
        match fixed_shape(&self.lanes, r) {
            Shape::Varying => {
                for (p, var) in self.lanes.vregs[k].into_iter().enumerate() {
                    let v = self.b().use_var(var);
                    let off = (home + 16 * p as u32) as i32;
                    self.b().ins().store(trusted(), v, gstate, off);
                }
            }
            _ => {
                let v = self.lanes.l.b.use_var(self.lanes.l.regs[k]);
                self.b().ins().store(trusted(), v, gstate, home as i32);
            }
        }
    }

    /// Forgets what the lowering knew of values before the block it starts.
    fn fresh_block(&mut self) {
        self.lanes.splats.clear();
        self.lanes.widened.clear();
        self.lanes.seq_cmps.clear();
        let fixed = self.lanes.fixed.as_ref().expect("set");
        for (k, s) in self.lanes.shape.iter_mut().enumerate() {
            *s = fixed[k].unwrap_or(Shape::Uniform);
            self.lanes.unknown[k] = fixed[k].is_none();
        }
    }

    /// The block of a per-thread branch's target (made before the branch when it is not a
    /// leader; the lowering reaches it later in the same block walk).
    fn target_block(&mut self, t: usize) -> Block {
        match self.blocks.get(&t) {
            Some(b) => *b,
            None => {
                let b = self.b().create_block();
                self.blocks.insert(t, b);
                b
            }
        }
    }

    /// A lane mask: an I32 whose bit k is lane k (of `4 × P`).
    fn mask(&mut self, var: Variable) -> Value {
        self.b().use_var(var)
    }

    fn set_mask(&mut self, var: Variable, m: Value) {
        self.b().def_var(var, m);
    }

    /// The lane mask of every lane.
    fn every_lane(&mut self) -> Value {
        let every = ((1u64 << (4 * P)) - 1) as i32;
        self.b().ins().iconst(types::I32, every as i64)
    }

    /// Whether any lane of a lane mask is set (an i8).
    fn any(&mut self, m: Value) -> Value {
        self.b().ins().icmp_imm_s(IntCC::NotEqual, m, 0)
    }

    /// Whether every lane of a lane mask is set (an i8).
    fn all(&mut self, m: Value) -> Value {
        let every = self.every_lane();
        self.b().ins().icmp(IntCC::Equal, m, every)
    }

    /// Lanes that are all ones or 0 (a vector predicate) as a lane mask: the vectors
    /// narrowed to bytes, their sign bits taken.
    pub(super) fn lane_bits(&mut self, m: Vecs<P>) -> Value {
        let b = &mut self.lanes.l.b;
        let halves: Vec<Value> = (m.chunks(2)).map(|h| b.ins().snarrow(h[0], h[1])).collect();
        let mut bits = b.ins().iconst(types::I32, 0);
        for (k, q) in halves.chunks(2).enumerate() {
            let bytes = b.ins().snarrow(q[0], q[1]);
            let high = b.ins().vhigh_bits(types::I32, bytes);
            let high = b.ins().ishl_imm_u(high, 16 * k as i64);
            bits = b.ins().bor(bits, high);
        }
        bits
    }

    /// A lane mask as lanes of all ones or 0: lane 4p + j of vector p is set where bit
    /// 4p + j is.
    pub(super) fn bit_lanes(&mut self, m: Value) -> Vecs<P> {
        let all = self.b().ins().splat(V, m);
        std::array::from_fn(|p| {
            let bit = self.lanes.vconst(std::array::from_fn(|j| 1 << (4 * p + j)));
            let b = &mut self.lanes.l.b;
            let set = b.ins().band(all, bit);
            b.ins().icmp(IntCC::Equal, set, bit)
        })
    }

    /// The running lanes of instruction `guard`'s access, and whether any of them and
    /// whether all of them are set.
    fn exec_lanes(&mut self, guard: Option<Guard>) -> Res<(Value, Value, Value)> {
        let exec = self.guard_lanes(guard)?;
        let (any, all) = (self.any(exec), self.all(exec));
        Ok((exec, any, all))
    }

    fn and(&mut self, a: Vecs<P>, b: Vecs<P>) -> Vecs<P> {
        std::array::from_fn(|p| self.lanes.l.b.ins().band(a[p], b[p]))
    }

    /// The running lanes as lanes of all ones or 0, made once for each definition of them
    /// in the blocks its block dominates.
    fn running_vectors(&mut self) -> Vecs<P> {
        let cur = self.mask(self.cur);
        let here = self.b().current_block().expect("a block");
        if let Some(&(made, v)) = self.cur_vectors.get(&cur)
            && self.lanes.l.dominates(made, here)
        {
            return v;
        }
        let v = self.bit_lanes(cur);
        self.cur_vectors.insert(cur, (here, v));
        v
    }

    /// The running lanes where an instruction's guard holds (a lane mask).
    fn guard_lanes(&mut self, guard: Option<Guard>) -> Res<Value> {
        let cur = self.mask(self.cur);
        match guard {
            None => Ok(cur),
            Some(g) => {
                let m = self.lanes.guard_mask(g)?;
                let m = self.lane_bits(m);
                Ok(self.b().ins().band(cur, m))
            }
        }
    }

    /// The mask a write of instruction `i` needs: the running lanes' if some lane waiting
    /// at a target may read a register it writes there (none waits in the converged
    /// version), with the guard's.
    fn write_mask(&mut self, i: usize, ins: &Instruction) -> Res<Option<Vecs<P>>> {
        let f = self.lanes.l.f;
        let waiting_read = self.converged.is_none()
            && self.open[i].iter().any(|&t| {
                let live = live_in(f, self.live_out, t);
                ins.inst
                    .written()
                    .into_iter()
                    .any(|r| liveness::has(&live, r))
            });
        let region = waiting_read.then(|| self.running_vectors());
        let guard = match ins.guard {
            Some(g) if fixed_shape(&self.lanes, g.reg) != Shape::Uniform || region.is_some() => {
                Some(self.lanes.guard_mask(g)?)
            }
            _ => None,
        };
        Ok(match (region, guard) {
            (Some(r), Some(g)) => Some(self.and(r, g)),
            (r, g) => r.or(g),
        })
    }

    /// Lowers instruction `i`; whether the block goes on after it.
    fn inst(&mut self, i: usize, ins: &Instruction) -> Res<bool> {
        let body = self.body();
        let f = self.lanes.l.f;
        match &ins.inst {
            Inst::Sync { .. } if self.through(i) && self.converged.is_some() => {
                self.leave_converged();
                Ok(false)
            }
            Inst::Sync { .. } if self.through(i) => {
                self.collective(i)?;
                Ok(true)
            }
            Inst::Sync { .. } => {
                let stop = self.stop_block(Some(i));
                self.b().ins().jump(stop, &[]);
                Ok(false)
            }
            Inst::Ret | Inst::Exit => self.exit(i, ins.guard),
            Inst::Bra { target, .. } => {
                let t = f.labels[target.0 as usize];
                if super::gate::is_exit(body, t) {
                    return self.exit(i, ins.guard);
                }
                if let Some(t) = self.real_branch(i) {
                    let to = self.blocks[&t];
                    match ins.guard {
                        None => {
                            self.b().ins().jump(to, &[]);
                        }
                        Some(g) => {
                            let p = self.lanes.l.b.use_var(self.lanes.l.regs[g.reg.0 as usize]);
                            let on = match self.blocks.get(&(i + 1)) {
                                Some(b) => *b,
                                None => self.stop_block(None),
                            };
                            if g.negated {
                                self.b().ins().brif(p, on, &[], to, &[]);
                            } else {
                                self.b().ins().brif(p, to, &[], on, &[]);
                            }
                        }
                    }
                    return Ok(false);
                }
                if self.converged.is_some() {
                    return self.converged_branch(t, ins.guard);
                }
                // Per-thread: the lanes that take it wait at the target.
                let var = self.pending[&t];
                let seq = ins.guard.and_then(|g| {
                    let c = self.lanes.seq_cmps.get(&g.reg).copied();
                    c.map(|c| (c, g.negated))
                });
                if let Some((c, negated)) = seq {
                    return self.seq_branch(i, t, var, c, negated);
                }
                let m = self.guard_lanes(ins.guard)?;
                let (_, to) = self.first_join(i, t);
                let on = self.b().create_block();
                self.wait_at(var, m, on, to);
                self.b().switch_to_block(on);
                Ok(true)
            }
            Inst::Ld { space, addr, .. }
            | Inst::St { space, addr, .. }
            | Inst::Atom { space, addr, .. }
                if matches!(
                    self.memory_space(*space, addr),
                    Some(Space::Global | Space::Shared)
                ) =>
            {
                self.access(i, ins)?;
                Ok(true)
            }
            Inst::St { .. } | Inst::Atom { .. } => {
                refuse("a store outside global and shared memory")
            }
            // Checked, a load of a variable the check may refuse also counts: its fault
            // would name the group's first thread, not the one the schedule meets it in.
            Inst::Ld {
                space,
                addr,
                ty,
                vec,
                ..
            } if !matches!(addr.base, AddrBase::Var(_))
                || self.lanes.l.sh.checked
                    && !(self.lanes.l).known_safe(
                        addr,
                        ty.bytes() * *vec as usize,
                        *space,
                        false,
                    ) =>
            {
                refuse("a load outside global and shared memory that may fault")
            }
            Inst::Fence => refuse("a fence"),
            Inst::Call { .. } => refuse("a call"),
            _ => {
                self.pure(i, ins)?;
                Ok(true)
            }
        }
    }

    /// The running lanes of `m` leave for a branch's target, to wait in `var`; the group
    /// goes on to `on` if lanes are left running, else to `to`.
    fn wait_at(&mut self, var: Variable, m: Value, on: Block, to: Block) {
        let waiting = self.mask(var);
        let w = self.b().ins().bor(waiting, m);
        self.set_mask(var, w);
        let cur = self.mask(self.cur);
        let rest = self.b().ins().band_not(cur, m);
        self.set_mask(self.cur, rest);
        let any = self.any(rest);
        self.b().ins().brif(any, on, &[], to, &[]);
    }

    /// A per-thread branch to `t` (its waiting lanes in `var`) on a comparison of a
    /// sequence with a uniform value ([`SeqCmp`]): where the first and last lanes decide it
    /// for every lane, all running lanes go to the target or none does, tested on two
    /// scalars; else the lanes' mask is made from the sequence, as for any guard.
    fn seq_branch(
        &mut self,
        i: usize,
        t: usize,
        var: Variable,
        c: super::SeqCmp,
        negated: bool,
    ) -> Res<bool> {
        let (answer, unsure) = self.lanes.seq_answer(c, negated);
        let (first, to) = self.first_join(i, t);
        let (decided, all, lanes, on) = (
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
        );
        self.b().ins().brif(unsure, lanes, &[], decided, &[]);
        self.b().switch_to_block(decided);
        self.b().ins().brif(answer, all, &[], on, &[]);
        // Every running lane takes it. Where no other branch goes to `t` and no lanes wait
        // at an earlier target, the running lanes arrive at `t` as they are.
        self.b().switch_to_block(all);
        let f = self.lanes.l.f;
        let branches_to_t = (self.body().iter())
            .filter(|ins| matches!(ins.inst, Inst::Bra { target, .. } if f.labels[target.0 as usize] == t))
            .count();
        if branches_to_t > 1 || first != t {
            let (waiting, cur) = (self.mask(var), self.mask(self.cur));
            let w = self.b().ins().bor(waiting, cur);
            self.set_mask(var, w);
            let none = self.b().ins().iconst(types::I32, 0);
            self.set_mask(self.cur, none);
        }
        self.b().ins().jump(to, &[]);
        // Some lanes do.
        self.b().switch_to_block(lanes);
        self.fresh_block_keeping_shapes();
        let m = self.seq_bits(c, negated)?;
        let cur = self.mask(self.cur);
        let m = self.b().ins().band(cur, m);
        self.wait_at(var, m, on, to);
        // The lanes left go on (the values made in `lanes` do not reach here).
        self.b().switch_to_block(on);
        self.fresh_block_keeping_shapes();
        Ok(true)
    }

    /// A [`SeqCmp`]'s lanes (negated or not) as a lane mask: from the first lane's distance
    /// to the uniform value where the sequence does not wrap ([`Lanes::seq_order_bits`]),
    /// else from vectors of the lanes' values.
    fn seq_bits(&mut self, c: super::SeqCmp, negated: bool) -> Res<Value> {
        let Some(bits) = self.lanes.seq_order_bits(c, negated) else {
            let m = self.lanes.seq_mask(c, negated)?;
            return Ok(self.lane_bits(m));
        };
        let span = (Lanes::<P>::LANES as i64 - 1) * c.stride;
        let span = self.b().ins().iconst(types::I64, span);
        let wraps = self.lanes.seq_wraps(c, span);
        let (vectors, join) = (self.b().create_block(), self.b().create_block());
        self.b().append_block_param(join, types::I32);
        let here = self.b().current_block();
        self.b()
            .ins()
            .brif(wraps, vectors, &[], join, &[bits.into()]);
        self.b().switch_to_block(vectors);
        let m = self.lanes.seq_mask(c, negated)?;
        let m = self.lane_bits(m);
        self.b().ins().jump(join, &[m.into()]);
        self.b().switch_to_block(join);
        self.lanes.l.note_dominated(join, here);
        self.fresh_block_keeping_shapes();
        Ok(self.b().block_params(join)[0])
    }

    /// `ret`/`exit` (or a branch to the end) under `guard`.
    fn exit(&mut self, i: usize, guard: Option<Guard>) -> Res<bool> {
        let uniform = guard.is_none_or(|g| fixed_shape(&self.lanes, g.reg) == Shape::Uniform);
        if uniform && self.open[i].is_empty() {
            let end = self.stop_block(None);
            match guard {
                None => {
                    self.b().ins().jump(end, &[]);
                    return Ok(false);
                }
                Some(g) => {
                    let p = self.lanes.l.b.use_var(self.lanes.l.regs[g.reg.0 as usize]);
                    let on = self.b().create_block();
                    if g.negated {
                        self.b().ins().brif(p, on, &[], end, &[]);
                    } else {
                        self.b().ins().brif(p, end, &[], on, &[]);
                    }
                    self.b().switch_to_block(on);
                    return Ok(true);
                }
            }
        }
        let m = self.guard_lanes(guard)?;
        let alive = self.mask(self.alive);
        let a = self.b().ins().band_not(alive, m);
        self.set_mask(self.alive, a);
        self.every_alive = false;
        self.seg_exits.push(i);
        let cur = self.mask(self.cur);
        let c = self.b().ins().band_not(cur, m);
        self.set_mask(self.cur, c);
        Ok(true)
    }

    /// An instruction without side effects.
    fn pure(&mut self, i: usize, ins: &Instruction) -> Res<()> {
        let mask = self.write_mask(i, ins)?;
        let Some(mask) = mask else {
            return self.lanes.pure(ins);
        };
        if self.lanes.reads_uniform(&ins.inst) {
            // The scalar lowering's result, written under the mask.
            let dests: Vec<RegId> = ins.inst.written();
            let old: Vec<Value> = dests
                .iter()
                .map(|r| self.lanes.l.b.use_var(self.lanes.l.regs[r.0 as usize]))
                .collect();
            self.lanes.l.inst(&ins.inst, &[]);
            for (r, old) in dests.iter().zip(old) {
                let var = self.lanes.l.regs[r.0 as usize];
                let new = self.b().use_var(var);
                self.b().def_var(var, old);
                let rty = self.lanes.l.f.reg(*r).ty;
                self.lanes
                    .write(&Operand::Reg(*r), rty, LaneVal::Uniform(new), Some(mask))?;
            }
            return Ok(());
        }
        self.lanes.vector(&ins.inst, Some(mask))
    }

    /// The state space an access touches: the one it names, or the variable's where it
    /// names a `.shared` or `.global` variable through a generic address (`ld.u32 %r,
    /// [gv]` reads global memory, and must be ordered against the held stores like any).
    fn memory_space(&self, space: Option<Space>, addr: &crate::ast::Address) -> Option<Space> {
        let (m, f) = (self.lanes.l.sh.ptx, self.lanes.l.f);
        let named = crate::interp::access_space(m, f, space, addr);
        let var = match addr.base {
            AddrBase::Var(crate::ast::VarId::Module(i)) => Some(m.vars[i as usize].space),
            AddrBase::Var(crate::ast::VarId::Function(i)) => Some(f.var(i).space),
            _ => None,
        };
        match (named, var) {
            (None, Some(Space::Global)) => Some(Space::Global),
            _ => named,
        }
    }

    /// A host address: the address's base and offset, in the shared window's host memory
    /// for a shared access.
    fn host_address(&mut self, space: Space, addr: &crate::ast::Address) -> Res<LaneVal<P>> {
        let a = match addr.base {
            AddrBase::Reg(r) => self.lanes.read(&Operand::Reg(r), Type::U64)?,
            AddrBase::Var(v) => LaneVal::Uniform(self.lanes.l.var_addr(v)),
            AddrBase::None => LaneVal::Uniform(self.b().ins().iconst(types::I64, 0)),
        };
        let base = if space == Space::Shared {
            self.shared_base
        } else {
            self.b().ins().iconst(types::I64, 0)
        };
        let plus = |g: &mut Self, v: Value| {
            let v = g.lanes.l.plus(v, addr.offset);
            if space == Space::Shared {
                g.b().ins().iadd(v, base)
            } else {
                v
            }
        };
        Ok(match a {
            LaneVal::Uniform(v) => LaneVal::Uniform(plus(self, v)),
            LaneVal::Affine(v, s) => LaneVal::Affine(plus(self, v), s),
            LaneVal::Varying(_) => return refuse("per-thread addresses that are not a sequence"),
        })
    }

    /// Global load `i`'s address (its first lane's), written where the worker's prefetcher
    /// reads it after the block (`jit/streams.rs`), for the kernel's first global loads.
    fn report_stream(&mut self, i: usize, lo: Value) {
        let global_load = |j: &usize| match &self.body()[*j].inst {
            Inst::Ld { space, addr, .. } => self.memory_space(*space, addr) == Some(Space::Global),
            _ => false,
        };
        let site = (0..i).filter(global_load).count();
        if site >= streams::SITES {
            return;
        }
        let at = offset_of!(ThreadCtx, streams) + offset_of!(Streams, seen) + 8 * site;
        let ctx = self.lanes.l.ctx;
        self.b().ins().store(trusted(), lo, ctx, at as i32);
    }

    /// Goes to the hand-over if a sequence wrapped as it was widened since the last test.
    fn wrap_test(&mut self) {
        if !self.lanes.wrap_unchecked {
            return;
        }
        self.lanes.wrap_unchecked = false;
        let w = self.lanes.wrap.expect("set");
        let w = self.b().use_var(w);
        let (on, h) = (self.b().create_block(), self.handover);
        self.b().ins().brif(w, h, &[], on, &[]);
        self.b().switch_to_block(on);
    }

    /// A global or shared access.
    fn access(&mut self, i: usize, ins: &Instruction) -> Res<()> {
        let (space, addr, size, vec) = match &ins.inst {
            Inst::Ld {
                space,
                addr,
                ty,
                vec,
                ..
            }
            | Inst::St {
                space,
                addr,
                ty,
                vec,
                ..
            } => (*space, addr, ty.bytes(), *vec),
            Inst::Atom {
                space, addr, ty, ..
            } => (*space, addr, ty.bytes(), 1),
            _ => unreachable!("an access"),
        };
        if vec != 1 {
            return refuse("a vector access");
        }
        if let Inst::Ld { order, .. } | Inst::St { order, .. } = &ins.inst
            && *order != crate::ast::MemOrder::Weak
        {
            return refuse("an ordered access");
        }
        let space = self.memory_space(space, addr).expect("global or shared");
        let a = self.host_address(space, addr)?;
        let (lo, stride) = match a {
            LaneVal::Uniform(v) => (v, None),
            LaneVal::Affine(v, s)
                if s.unsigned_abs() >= size as u64
                    && s % size as i64 == 0
                    && s.unsigned_abs() < 1 << 24 =>
            {
                (v, Some(s))
            }
            _ => {
                return refuse("per-thread addresses that are not elements at a constant distance");
            }
        };
        let (exec, ran, every) = self.exec_lanes(ins.guard)?;
        let lo_var = self.seg_var(types::I64);
        let ran_var = self.seg_var(types::I8);
        self.b().def_var(lo_var, lo);
        self.b().def_var(ran_var, ran);
        if !matches!(ins.inst, Inst::Ld { .. }) {
            let wrote = self.wrote.expect("set where the segment starts");
            let before = self.b().use_var(wrote);
            let now = self.b().ins().bor(before, ran);
            self.b().def_var(wrote, now);
        }
        let mut acc = Access {
            at: i,
            writes: !matches!(ins.inst, Inst::Ld { .. }),
            atomic: matches!(ins.inst, Inst::Atom { .. }),
            lo: lo_var,
            ran: ran_var,
            stride,
            size,
            held: None,
            space: match &ins.inst {
                Inst::Ld { space, .. } | Inst::St { space, .. } | Inst::Atom { space, .. } => {
                    *space
                }
                _ => None,
            },
            addr: *addr,
        };
        if matches!(ins.inst, Inst::Ld { .. }) {
            self.wrap_test();
        }
        self.start_run(&acc, lo);
        self.check_access(&acc, exec, ran);
        match &ins.inst {
            Inst::Ld { ty, d, .. } => {
                let Operand::Reg(r) = d else {
                    return refuse("a load to a vector of registers");
                };
                let rty = self.lanes.l.f.reg(*r).ty;
                let v = match stride {
                    None => {
                        let (load, skip, join) = (
                            self.b().create_block(),
                            self.b().create_block(),
                            self.b().create_block(),
                        );
                        let cty = clif(*ty);
                        self.b().append_block_param(join, cty);
                        let here = self.b().current_block();
                        self.b().ins().brif(ran, load, &[], skip, &[]);
                        self.b().switch_to_block(load);
                        let v = self.lanes.l.load_value(cty, flags(), lo, 0);
                        self.b().ins().jump(join, &[v.into()]);
                        self.b().switch_to_block(skip);
                        let z = self.lanes.l.zero(*ty);
                        self.b().ins().jump(join, &[z.into()]);
                        self.b().switch_to_block(join);
                        self.lanes.l.note_dominated(join, here);
                        self.fresh_block_keeping_shapes();
                        let v = self.b().block_params(join)[0];
                        let v = self.lanes.l.conv(v, *ty, rty, ty.is_signed());
                        LaneVal::Uniform(v)
                    }
                    Some(s) => {
                        if rty.bits() != 32 {
                            return refuse("a per-thread load to a register of other than 32 bits");
                        }
                        if space == Space::Global {
                            self.report_stream(i, lo);
                        }
                        LaneVal::Varying(self.load_lanes(lo, s, *ty, (exec, every), space)?)
                    }
                };
                let mask = self.write_mask(i, ins)?;
                self.lanes.write(d, rty, v, mask)?;
            }
            Inst::St { ty, a, .. } => {
                let v = self.lanes.read(a, *ty)?;
                let mask = self.seg_var(types::I32);
                self.set_mask(mask, exec);
                let what = match (v, stride) {
                    (LaneVal::Uniform(x), None) => {
                        let var = self.seg_var(clif(*ty));
                        self.b().def_var(var, x);
                        HeldWhat::Scalar(var, *ty)
                    }
                    _ if size == 4 => {
                        let x = self.lanes.lanes_of(v, *ty)?;
                        let vars = [(); P].map(|_| self.seg_var(V));
                        for (var, x) in vars.into_iter().zip(x) {
                            self.b().def_var(var, x);
                        }
                        HeldWhat::Lanes(vars)
                    }
                    _ => return refuse("a per-thread store of other than 32 bits"),
                };
                acc.held = Some(Held { mask, what });
            }
            Inst::Atom { d, .. } => {
                let dead = match d {
                    Operand::Sink => true,
                    Operand::Reg(r) => !liveness::has(&self.live_out[i], *r),
                    _ => false,
                };
                if !dead || stride.is_some() {
                    return refuse("an atomic whose result is read, or at per-thread addresses");
                }
                let mut regs = Vec::new();
                for r in ins.inst.reads() {
                    if fixed_shape(&self.lanes, r) != Shape::Uniform {
                        return refuse("an atomic with per-thread operands");
                    }
                    let var = self.lanes.l.regs[r.0 as usize];
                    let v = self.b().use_var(var);
                    let ty = self.lanes.l.f.reg(r).ty;
                    let keep = self.seg_var(clif(ty));
                    self.b().def_var(keep, v);
                    regs.push((r, keep));
                }
                let mask = self.seg_var(types::I32);
                self.set_mask(mask, exec);
                acc.held = Some(Held {
                    mask,
                    what: HeldWhat::Atomic(regs),
                });
            }
            _ => unreachable!("an access"),
        }
        self.accesses.push(acc);
        Ok(())
    }

    /// After a join made inside an instruction's lowering: the caches no longer hold.
    fn fresh_block_keeping_shapes(&mut self) {
        self.lanes.splats.clear();
        self.lanes.widened.clear();
    }

    /// Lane k's `ty` at `lo + k × stride` for the lanes of `exec`, as 32-bit lanes: four
    /// consecutive words a vector where every lane runs (for shared memory, where the
    /// window holds all of them), else lane by lane.
    fn load_lanes(
        &mut self,
        lo: Value,
        stride: i64,
        ty: Type,
        (exec, every): (Value, Value),
        space: Space,
    ) -> Res<Vecs<P>> {
        let here = self.b().current_block();
        let (slow, join) = (self.b().create_block(), self.b().create_block());
        for _ in 0..P {
            self.b().append_block_param(join, V);
        }
        if stride == 4 && ty.bytes() == 4 {
            // Every lane running: the vector loads read only what the lanes read. Else,
            // for shared memory, when the window holds all the words.
            let fast = self.b().create_block();
            if space == Space::Shared {
                let window = self.b().create_block();
                self.b().ins().brif(every, fast, &[], window, &[]);
                self.b().switch_to_block(window);
                let base = self.shared_base;
                let lo_ok = (self.b().ins()).icmp(IntCC::UnsignedGreaterThanOrEqual, lo, base);
                let hi = self.b().ins().iadd_imm_s(lo, 16 * P as i64);
                let end = self.window_end;
                let hi_ok = self.b().ins().icmp(IntCC::UnsignedLessThanOrEqual, hi, end);
                let ok = self.b().ins().band(lo_ok, hi_ok);
                self.b().ins().brif(ok, fast, &[], slow, &[]);
            } else {
                self.b().ins().brif(every, fast, &[], slow, &[]);
            }
            self.b().switch_to_block(fast);
            let v: Vec<ir::BlockArg> = (0..P)
                .map(|p| {
                    self.lanes
                        .l
                        .b
                        .ins()
                        .load(V, flags(), lo, 16 * p as i32)
                        .into()
                })
                .collect();
            self.b().ins().jump(join, &v);
        } else {
            self.b().ins().jump(slow, &[]);
        }
        self.b().switch_to_block(slow);
        // Lane by lane: each running lane's value into the scratch area.
        let scratch = self.scratch;
        let zero = self.lanes.splat(0);
        for p in 0..P {
            self.b()
                .ins()
                .stack_store(types::I64, zero, scratch, 16 * p as i32);
        }
        let out = self.b().create_block();
        let (k, slot, next) = self.lane_loop(exec, out);
        let off = self.b().ins().imul_imm_s(k, stride);
        let a = self.b().ins().iadd(lo, off);
        let x = self.lanes.l.load_value(clif(ty), flags(), a, 0);
        let x = if ty.is_float() {
            self.lanes.l.bitcast(types::I32, x)
        } else {
            self.lanes.l.resize(x, types::I32, ty.is_signed())
        };
        self.b().ins().store(trusted(), x, slot, 0);
        self.b().ins().jump(next, &[]);
        self.b().switch_to_block(out);
        let v: Vec<ir::BlockArg> = (0..P)
            .map(|p| {
                self.lanes
                    .l
                    .b
                    .ins()
                    .stack_load(types::I64, V, scratch, 16 * p as i32)
                    .into()
            })
            .collect();
        self.b().ins().jump(join, &v);
        self.b().switch_to_block(join);
        self.lanes.l.note_dominated(join, here);
        self.fresh_block_keeping_shapes();
        let params = self.b().block_params(join).to_vec();
        Ok(std::array::from_fn(|p| params[p]))
    }

    /// A loop over the lanes set in `mask`, in lane order (only those: the bits of the mask
    /// taken lowest first), going to `out` after the last: positioned in its body, with the
    /// lane's index (i64), the address of its word among the scratch area's values and the
    /// block the body jumps to when done.
    fn lane_loop(&mut self, mask: Value, out: Block) -> (Value, Value, Block) {
        let bits = self.b().ins().uextend(types::I64, mask);
        let (head, body, next) = (
            self.b().create_block(),
            self.b().create_block(),
            self.b().create_block(),
        );
        self.b().append_block_param(head, types::I64);
        self.b().ins().jump(head, &[bits.into()]);
        self.b().switch_to_block(head);
        let left = self.b().block_params(head)[0];
        self.b().ins().brif(left, body, &[], out, &[]);
        self.b().switch_to_block(next);
        let below = self.b().ins().iadd_imm_s(left, -1);
        let rest = self.b().ins().band(left, below);
        self.b().ins().jump(head, &[rest.into()]);
        self.b().switch_to_block(body);
        let k = self.b().ins().ctz(left);
        let scratch = self.scratch;
        let base = self.b().ins().stack_addr(types::I64, scratch, 0);
        let at4 = self.b().ins().ishl_imm_s(k, 2);
        let slot = self.b().ins().iadd(base, at4);
        (k, slot, next)
    }

    /// The block where the segment stops at barrier `at` (None: where the group ends).
    fn stop_block(&mut self, at: Option<usize>) -> Block {
        if let Some((_, b)) = self.stops.iter().find(|(a, _)| *a == at) {
            return *b;
        }
        let b = self.b().create_block();
        self.stops.push((at, b));
        b
    }

    /// The stops: the gate, the held stores, then the state saved at a barrier.
    fn finish_stops(&mut self) -> Res<()> {
        let stops = std::mem::take(&mut self.stops);
        for (at, blk) in stops {
            self.b().switch_to_block(blk);
            self.fresh_block();
            let wrote = self.wrote.expect("set where the segment starts");
            let wrote = self.b().use_var(wrote);
            let (full, quick, join) = (
                self.b().create_block(),
                self.b().create_block(),
                self.b().create_block(),
            );
            self.b().ins().brif(wrote, full, &[], quick, &[]);
            self.b().switch_to_block(full);
            let before = self.before(at);
            self.gate(&before);
            self.apply_held(&before);
            self.b().ins().jump(join, &[]);
            // Nothing written: only a wrapped sequence hands over.
            self.b().switch_to_block(quick);
            self.fresh_block();
            let w = self.lanes.wrap.expect("set");
            let wrapped = self.b().use_var(w);
            let h = self.handover;
            self.b().ins().brif(wrapped, h, &[], join, &[]);
            self.b().switch_to_block(join);
            self.fresh_block();
            match at {
                None => {
                    let (round, gstate) = (self.round, self.gstate);
                    round.ended(self.b(), gstate);
                }
                Some(i) => self.save(i),
            }
        }
        Ok(())
    }

    /// Which of the segment's accesses may have run before the stop at barrier `at` (None:
    /// the end): those from which the segment's code reaches it. The others' variables
    /// still hold their start's zeros there, so they have nothing to gate or write.
    fn before(&self, at: Option<usize>) -> Vec<bool> {
        let Some(stop) = at else {
            return vec![true; self.accesses.len()];
        };
        (self.accesses.iter())
            .map(|a| self.reaches(a.at, stop))
            .collect()
    }

    /// Whether the segment's code goes on from instruction `from` to instruction `to`.
    fn reaches(&self, from: usize, to: usize) -> bool {
        let n = self.body().len();
        let mut seen = vec![false; n];
        let mut stack = self.next(from);
        while let Some(i) = stack.pop() {
            if i == to {
                return true;
            }
            if i < n && !seen[i] {
                seen[i] = true;
                stack.extend(self.next(i));
            }
        }
        false
    }

    /// Goes to the hand-over if the lock step could differ from the threads' order, or a
    /// sequence wrapped; `before` says which accesses may have run (see [`Self::before`]).
    fn gate(&mut self, before: &[bool]) {
        let w = self.lanes.wrap.expect("set");
        let mut bad = self.b().use_var(w);
        let n = self.accesses.len();
        for j in 0..n {
            for i in 0..j {
                let (a, b) = (&self.accesses[i], &self.accesses[j]);
                if !a.writes && !b.writes || !before[i] || !before[j] || self.lane_for_lane(a, b) {
                    continue;
                }
                // A .global and a .shared access never meet (a shared variable's address
                // is not one that ld/st.global may use).
                let spaces = [a.space, b.space];
                if spaces.contains(&Some(Space::Global)) && spaces.contains(&Some(Space::Shared)) {
                    continue;
                }
                let (a_lo, a_ran, a_stride, a_size, a_w, a_atomic) =
                    (a.lo, a.ran, a.stride, a.size, a.writes, a.atomic);
                let (b_lo, b_ran, b_stride, b_size, b_w, b_atomic) =
                    (b.lo, b.ran, b.stride, b.size, b.writes, b.atomic);
                let bb = self.b();
                let (alo, blo) = (bb.use_var(a_lo), bb.use_var(b_lo));
                // The bytes of all the lanes: from lane 0 up, or from the last lane for a
                // stride below 0.
                let last = 4 * P as i64 - 1;
                let ends = |s: Option<i64>, size: usize| {
                    let s = s.unwrap_or(0);
                    ((last * s).min(0), (last * s).max(0) + size as i64)
                };
                let ((a0, a1), (b0, b1)) = (ends(a_stride, a_size), ends(b_stride, b_size));
                let (alo_r, ahi) = (bb.ins().iadd_imm_s(alo, a0), bb.ins().iadd_imm_s(alo, a1));
                let (blo_r, bhi) = (bb.ins().iadd_imm_s(blo, b0), bb.ins().iadd_imm_s(blo, b1));
                let o1 = bb.ins().icmp(IntCC::UnsignedLessThan, alo_r, bhi);
                let o2 = bb.ins().icmp(IntCC::UnsignedLessThan, blo_r, ahi);
                let mut c = bb.ins().band(o1, o2);
                let (ar, br) = (bb.use_var(a_ran), bb.use_var(b_ran));
                let ran = bb.ins().band(ar, br);
                c = bb.ins().band(c, ran);
                // Same stride, same size: which lanes meet is known from the distance.
                if let (Some(s), Some(t)) = (a_stride, b_stride)
                    && s == t
                    && a_size == b_size
                    && !a_atomic
                    && !b_atomic
                {
                    // In the direction the lanes go.
                    let diff = if s > 0 {
                        bb.ins().isub(blo, alo)
                    } else {
                        bb.ins().isub(alo, blo)
                    };
                    // (a earlier, b later) load-store and store-store meet harmlessly when
                    // diff <= 0 (no lane meets a lower one's bytes after it); store-load
                    // when diff >= size (no lane reads its own or a lower lane's store).
                    let harmless = if a_w && !b_w {
                        bb.ins()
                            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, diff, a_size as i64)
                    } else {
                        bb.ins().icmp_imm_s(IntCC::SignedLessThanOrEqual, diff, 0)
                    };
                    // Or no lane's bytes meet any lane's of the other: the distance is at
                    // least a size away from every multiple of the stride (the words of a
                    // thread's slot of an array of slots).
                    let step = s.unsigned_abs() as i64;
                    let apart = if step >= 2 * a_size as i64 {
                        let r = bb.ins().srem_imm_s(diff, step);
                        let r = {
                            let neg = bb.ins().icmp_imm_s(IntCC::SignedLessThan, r, 0);
                            let up = bb.ins().iadd_imm_s(r, step);
                            bb.ins().select(neg, up, r)
                        };
                        let far =
                            bb.ins()
                                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, r, a_size as i64);
                        let near_next = bb.ins().icmp_imm_s(
                            IntCC::SignedLessThanOrEqual,
                            r,
                            step - a_size as i64,
                        );
                        Some(bb.ins().band(far, near_next))
                    } else {
                        None
                    };
                    let harmless = match apart {
                        Some(x) => bb.ins().bor(harmless, x),
                        None => harmless,
                    };
                    c = bb.ins().band_not(c, harmless);
                }
                bad = self.b().ins().bor(bad, c);
            }
        }
        let (on, h) = (self.b().create_block(), self.handover);
        self.b().ins().brif(bad, h, &[], on, &[]);
        self.b().switch_to_block(on);
    }

    /// Whether `a` and then `b` (neither an atomic, and not a store and then a load, whose
    /// lane would read what it stored) touch each lane's own bytes, the same in both: the
    /// lanes' addresses apart (a sequence) and named alike through a register the segment
    /// does not write. The threads' order has each thread's two accesses one after the
    /// other, as the lock step does. (Lanes at one address would meet each other's.)
    fn lane_for_lane(&self, a: &Access<P>, b: &Access<P>) -> bool {
        let unchanged = match a.addr.base {
            AddrBase::Reg(r) => !liveness::has(&self.seg_written, r),
            AddrBase::Var(_) | AddrBase::None => false,
        };
        let store_then_load = a.writes && !b.writes;
        unchanged
            && a.stride.is_some()
            && a.addr == b.addr
            && a.space == b.space
            && a.size == b.size
            && !store_then_load
            && !a.atomic
            && !b.atomic
    }

    /// The held stores and atomics, in program order, each lane by lane in lane order
    /// unless every lane stores consecutive words.
    fn apply_held(&mut self, before: &[bool]) {
        let n = self.accesses.len();
        for k in (0..n).filter(|&k| before[k]) {
            let a = &self.accesses[k];
            let Some(held) = &a.held else {
                continue;
            };
            let (lo, stride, at) = (a.lo, a.stride, a.at);
            let mask = held.mask;
            let what = match &held.what {
                HeldWhat::Lanes(v) => HeldWhat::Lanes(*v),
                HeldWhat::Scalar(v, t) => HeldWhat::Scalar(*v, *t),
                HeldWhat::Atomic(r) => HeldWhat::Atomic(r.clone()),
            };
            let m = self.mask(mask);
            let lo = self.b().use_var(lo);
            let done = self.b().create_block();
            let any = self.any(m);
            let some = self.b().create_block();
            self.b().ins().brif(any, some, &[], done, &[]);
            self.b().switch_to_block(some);
            if let (HeldWhat::Lanes(vals), Some(4)) = (&what, stride) {
                let full = self.all(m);
                let (fast, slow) = (self.b().create_block(), self.b().create_block());
                self.b().ins().brif(full, fast, &[], slow, &[]);
                self.b().switch_to_block(fast);
                for (p, v) in vals.iter().enumerate() {
                    let x = self.b().use_var(*v);
                    self.b().ins().store(flags(), x, lo, 16 * p as i32);
                }
                self.b().ins().jump(done, &[]);
                self.b().switch_to_block(slow);
            }
            // Lane by lane.
            let scratch = self.scratch;
            if let HeldWhat::Lanes(vals) = &what {
                for (p, v) in vals.iter().enumerate() {
                    let x = self.b().use_var(*v);
                    self.b()
                        .ins()
                        .stack_store(types::I64, x, scratch, 16 * p as i32);
                }
            }
            let (kv, slot, next) = self.lane_loop(m, done);
            let addr = match stride {
                Some(s) => {
                    let off = self.b().ins().imul_imm_s(kv, s);
                    self.b().ins().iadd(lo, off)
                }
                None => lo,
            };
            match &what {
                HeldWhat::Lanes(_) => {
                    let x = self.b().ins().load(types::I32, trusted(), slot, 0);
                    self.b().ins().store(flags(), x, addr, 0);
                }
                HeldWhat::Scalar(v, _) => {
                    let x = self.b().use_var(*v);
                    self.b().ins().store(flags(), x, addr, 0);
                }
                HeldWhat::Atomic(regs) => {
                    let ins = &self.body()[at];
                    let mut old = Vec::new();
                    for (r, keep) in regs {
                        let var = self.lanes.l.regs[r.0 as usize];
                        old.push((var, self.lanes.l.b.use_var(var)));
                        let v = self.lanes.l.b.use_var(*keep);
                        self.b().def_var(var, v);
                    }
                    let written: Vec<(Variable, Value)> = ins
                        .inst
                        .written()
                        .into_iter()
                        .map(|r| {
                            let var = self.lanes.l.regs[r.0 as usize];
                            (var, self.lanes.l.b.use_var(var))
                        })
                        .collect();
                    self.lanes.l.at = at;
                    self.lanes.l.inst(&ins.inst, &[]);
                    for (var, v) in old.into_iter().chain(written) {
                        self.b().def_var(var, v);
                    }
                }
            }
            self.b().ins().jump(next, &[]);
            self.b().switch_to_block(done);
            self.fresh_block_keeping_shapes();
        }
    }

    /// At barrier `i`: ended if no lane is left, else the registers live across it and the
    /// lanes saved, and the stop returned.
    fn save(&mut self, i: usize) {
        let number = self.points.iter().position(|&p| p == i).expect("a point") + 1;
        let alive = self.mask(self.alive);
        // The lanes as the segment found them (no exit of it reaches here): some are left,
        // or the group would have ended at its last barrier.
        let keep_alive = self.seg > 0 && !self.seg_exits.iter().any(|&e| self.reaches(e, i));
        if !keep_alive {
            let any = self.any(alive);
            let (go, ended) = (self.b().create_block(), self.b().create_block());
            self.b().ins().brif(any, go, &[], ended, &[]);
            self.b().switch_to_block(ended);
            let (round, gstate) = (self.round, self.gstate);
            round.ended(self.b(), gstate);
            self.b().switch_to_block(go);
        }
        let gstate = self.gstate;
        let live = self.plan_live[number - 1].clone();
        let f = self.lanes.l.f;
        for r in 0..f.regs.len() {
            // After a barrier, a register the segment does not write is in the state as
            // the segment's start loaded it.
            let unchanged = self.seg > 0 && !liveness::has(&self.seg_written, RegId(r as u32));
            if !liveness::has(&live, RegId(r as u32)) || unchanged {
                continue;
            }
            self.store_reg(RegId(r as u32), gstate);
        }
        if !keep_alive {
            (self.b().ins()).store(trusted(), alive, gstate, GroupPlan::ALIVE as i32);
        }
        let n = self.b().ins().iconst(types::I32, number as i64);
        self.b()
            .ins()
            .store(trusted(), n, gstate, GroupPlan::RESUME as i32);
        self.count_stop(number);
    }

    /// The group stopped at sync point `number` (a resume number): on to the next group.
    fn count_stop(&mut self, number: usize) {
        let round = self.round;
        match self.ids[number - 1] {
            Some(id) => {
                let one_id = self.ids.iter().flatten().all(|&i| i == id);
                round.stopped_at(self.b(), id, one_id);
            }
            None => round.stopped_at_collective(self.b()),
        }
    }
}
