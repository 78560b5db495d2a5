//! Warp collectives in a group function, whose group is a whole warp standing at the
//! collective (one inside a per-thread branch is refused), each lane's result what
//! [`crate::block::warp::resolve`] gives it for the group of the lanes that have not exited.
//! The membermask only says which lanes the hardware waits for, and all are there; it
//! limits the lanes that `vote`, `redux` and `elect` cover. A per-thread membermask must
//! hold the same value in every lane (else the group hands over), as CUDA's masks computed
//! in each thread do.
//!
//! - `shfl.sync`: a lane that reads an exited lane gets 0 (the schedule's rule for a lane
//!   outside the group). Where the lane operand `b` and the clamp `c` are constants
//!   (`__shfl_down_sync(m, v, 16)` compiles to constants in registers written once), the
//!   lane each lane reads is known while lowering, and each result vector is a byte shuffle
//!   of the few source vectors it draws on (for `down`/`up` by less than four, `palignr`; by
//!   multiples of four, none). Otherwise the sources go through the scratch area and each
//!   lane loads the word it reads.
//! - `vote.sync`, `activemask`, `elect.sync`: from the group's lanes (a lane mask, one
//!   32-bit word) and the predicate's (its vectors narrowed to bytes and their sign bits
//!   taken: [`Group::lane_bits`]), uniform results
//!   (`elect`'s predicate compares each lane with the leader).
//! - `redux.sync`: the covered lanes' values (the others the operation's identity) combined
//!   across the vectors, then within one.
//! - `bar.warp.sync`: nothing to compute; the group stops at it or runs through it like any
//!   collective ([`stops`]).

use super::{Group, Res, V, Vecs};
use crate::ast::{Imm, Inst, Operand, ReduxOp, RegId, ShflMode, Space, SyncOp, Type, VoteMode};
use crate::block::warp;
use crate::jit::lower::lanes::LaneVal;
use crate::jit::lower::liveness::{self, RegSet};
use crate::jit::lower::trusted;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, ConstantData, Endianness, InstBuilder, MemFlagsData, types};
use cranelift_frontend::FunctionBuilder;
use std::collections::HashMap;

/// The registers that hold one integer constant wherever they are read: written once, by
/// an unguarded `mov` of an immediate, and not live where the kernel starts (so every read
/// comes after that write).
pub(super) fn constant_regs(f: &crate::ast::Function, entry_live: &RegSet) -> HashMap<RegId, i128> {
    let mut writes: HashMap<RegId, (usize, Option<i128>)> = HashMap::new();
    for ins in f.body.iter().flatten() {
        let value = match (&ins.inst, ins.guard) {
            (
                Inst::Mov {
                    a: Operand::Imm(Imm::Int(v)),
                    ..
                },
                None,
            ) => Some(*v),
            _ => None,
        };
        for r in ins.inst.written() {
            let w = writes.entry(r).or_insert((0, value));
            w.0 += 1;
        }
    }
    (writes.into_iter())
        .filter(|(r, (n, _))| *n == 1 && !liveness::has(entry_live, *r))
        .filter_map(|(r, (_, v))| v.map(|v| (r, v)))
        .collect()
}

/// Whether instruction `inst` touches memory another warp may read or write: any access
/// but a load of `.param` or `.const`.
fn shared_access(m: &crate::ast::Module, f: &crate::ast::Function, inst: &Inst) -> bool {
    let (space, addr) = match inst {
        Inst::Ld { space, addr, .. } => (*space, addr),
        Inst::St { space, addr, .. } | Inst::Atom { space, addr, .. } => (*space, addr),
        _ => return false,
    };
    !matches!(
        crate::interp::access_space(m, f, space, addr),
        Some(Space::Param | Space::Const)
    )
}

/// Which sync points a group stops at, by resume number - 1: every barrier, and the
/// collectives it cannot run through.
///
/// The schedule runs every warp to a collective before any goes on from it; a group function
/// that ran a warp through it, then the next warp, would put what the first does after the
/// collective before what the next does before it (or on another path to its own stop). That
/// cannot show where the warp touches no memory after the collective until its next stop: it
/// only computes in its registers. So a warp runs through a collective only then, and only
/// where no branch may jump over the collective (warps whose uniform values differ, `%tid.y`
/// or the warp's number, may pass different collectives, and so stand at different rounds of
/// the schedule) and the collective is not in a loop (a loop needs a stop in it).
///
/// A collective from which a path reaches a stop at a collective is a stop too: if a later
/// warp of the round hands the block over, a warp that ran through collectives to that one
/// would stand several of the schedule's rounds ahead of the warps behind it, and go on from
/// there while they catch up (what comes after a barrier waits for them all). The rules are
/// applied until no more collectives become stops (a new stop only cuts paths short).
pub(super) fn stops(
    m: &crate::ast::Module,
    f: &crate::ast::Function,
    points: &[usize],
) -> Vec<bool> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let n = body.len();
    let collective = |p: usize| matches!(body[p].inst, Inst::Sync { op, .. } if !op.is_barrier());
    // A branch back over p (a loop), or forward over it to somewhere other than the end.
    let passed_by = |p: usize| {
        body.iter().enumerate().any(|(j, ins)| {
            let Inst::Bra { target, .. } = ins.inst else {
                return false;
            };
            let t = f.labels[target.0 as usize];
            (j > p && t <= p)
                || (j < p && t > p && !crate::jit::lower::lanes::gate::is_exit(body, t))
        })
    };
    let mut stop: Vec<bool> = points
        .iter()
        .map(|&p| !collective(p) || passed_by(p))
        .collect();
    loop {
        let stop_at = |i: usize| points.iter().position(|&p| p == i).is_some_and(|k| stop[k]);
        // From collective p on to the stops: whether it touches memory, comes back to p or
        // reaches a stop at a collective.
        let must_stop = |p: usize| {
            let mut seen = vec![false; n];
            let mut todo = liveness::successors(f, p);
            while let Some(i) = todo.pop() {
                if i >= n || std::mem::replace(&mut seen[i], true) {
                    continue;
                }
                if i == p || shared_access(m, f, &body[i].inst) {
                    return true;
                }
                if stop_at(i) {
                    if collective(i) {
                        return true;
                    }
                    continue;
                }
                todo.extend(liveness::successors(f, i));
            }
            false
        };
        let more: Vec<usize> = (0..points.len())
            .filter(|&k| !stop[k] && must_stop(points[k]))
            .collect();
        if more.is_empty() {
            return stop;
        }
        for k in more {
            stop[k] = true;
        }
    }
}

impl<const P: usize> Group<'_, '_, '_, P> {
    /// Lowers the collective at instruction `i` for the running lanes: every lane that has
    /// not exited.
    pub(super) fn collective(&mut self, i: usize) -> Res<()> {
        let ins = &self.body()[i];
        let Inst::Sync { op, d, p, srcs } = &ins.inst else {
            unreachable!("a collective");
        };
        let uniform = |v| LaneVal::<P>::Uniform(v);
        match *op {
            SyncOp::Shfl(mode) => self.shuffle(mode, d, p, srcs),
            SyncOp::Activemask => {
                let group = self.group_bits();
                self.lanes.write(d, Type::B32, uniform(group), None)
            }
            SyncOp::Vote(mode) => {
                let (yes, m) = self.covered(&srcs[1], Some(&srcs[0]))?;
                let yes = self.b().ins().band(yes, m);
                let r = match mode {
                    VoteMode::Ballot => yes,
                    VoteMode::All => self.b().ins().icmp(IntCC::Equal, yes, m),
                    VoteMode::Any => self.b().ins().icmp_imm_u(IntCC::NotEqual, yes, 0),
                    VoteMode::Uni => {
                        let none = self.b().ins().icmp_imm_u(IntCC::Equal, yes, 0);
                        let all = self.b().ins().icmp(IntCC::Equal, yes, m);
                        self.b().ins().bor(none, all)
                    }
                };
                self.lanes.write(d, op.d_type(), uniform(r), None)
            }
            SyncOp::Redux(r, ty) => {
                let (_, m) = self.covered(&srcs[1], None)?;
                let v = self.redux(r, ty, &srcs[0], m)?;
                self.lanes.write(d, ty, uniform(v), None)
            }
            SyncOp::Elect => {
                let (_, m) = self.covered(&srcs[0], None)?;
                let leader = self.b().ins().ctz(m);
                let zero = self.b().ins().iconst(types::I32, 0);
                let first = self.b().ins().select(m, leader, zero);
                self.lanes.write(d, Type::B32, uniform(first), None)?;
                if matches!(p, Operand::Reg(_)) {
                    let leader = self.b().ins().splat(V, leader);
                    let is: Vecs<P> = std::array::from_fn(|q| {
                        let lane = self
                            .lanes
                            .vconst(std::array::from_fn(|k| (4 * q + k) as i32));
                        self.b().ins().icmp(IntCC::Equal, lane, leader)
                    });
                    self.lanes
                        .write(p, Type::Pred, LaneVal::Varying(is), None)?;
                }
                Ok(())
            }
            SyncOp::WarpSync => Ok(()),
            SyncOp::Match { .. } | SyncOp::Bar { .. } => {
                unreachable!("group functions take no {op:?} collective")
            }
        }
    }

    /// The group's lanes (those that have not exited) as a 32-bit mask, lane 0 the lowest
    /// bit.
    fn group_bits(&mut self) -> ir::Value {
        self.mask(self.alive)
    }

    /// The lanes a `vote`, `redux` or `elect` covers (the group's lanes in the membermask
    /// `mask`) and, with a predicate `pred`, the group's lanes where it is true (else all of
    /// them): 32-bit masks.
    fn covered(&mut self, mask: &Operand, pred: Option<&Operand>) -> Res<(ir::Value, ir::Value)> {
        let group = self.group_bits();
        let mask = match self.lanes.read(mask, Type::B32)? {
            LaneVal::Uniform(mask) => mask,
            v => {
                let v = self.lanes.lanes_of(v, Type::B32)?;
                self.same_in_every_lane(v)
            }
        };
        let m = self.b().ins().band(group, mask);
        let yes = match pred {
            None => group,
            Some(pred) => match self.lanes.read(pred, Type::Pred)? {
                LaneVal::Uniform(p) => {
                    let zero = self.b().ins().iconst(types::I32, 0);
                    self.b().ins().select(p, group, zero)
                }
                v => {
                    let lanes = self.lanes.lanes_of(v, Type::Pred)?;
                    let set = self.lane_bits(lanes);
                    self.b().ins().band(set, group)
                }
            },
        };
        Ok((yes, m))
    }

    /// The value every running lane holds in `v`; if they differ, the group hands over (a
    /// membermask computed in each thread is mostly the same in all of them, as CUDA
    /// requires of the lanes a collective waits for).
    fn same_in_every_lane(&mut self, v: Vecs<P>) -> ir::Value {
        let (low, high): (Vec<ir::Value>, Vec<ir::Value>) = if self.every_alive {
            (v.to_vec(), v.to_vec())
        } else {
            let alive = self.mask(self.alive);
            let alive = self.bit_lanes(alive);
            let ones = self.lanes.splat(-1);
            let b = &mut self.lanes.l.b;
            (0..P)
                .map(|q| {
                    (
                        b.ins().bitselect(alive[q], v[q], ones),
                        b.ins().band(alive[q], v[q]),
                    )
                })
                .unzip()
        };
        let and = self.fold_lanes(&low, |b, x, y| b.ins().band(x, y));
        let or = self.fold_lanes(&high, |b, x, y| b.ins().bor(x, y));
        let b = &mut self.lanes.l.b;
        let differ = b.ins().icmp(IntCC::NotEqual, and, or);
        let (on, h) = (b.create_block(), self.handover);
        b.ins().brif(differ, h, &[], on, &[]);
        b.switch_to_block(on);
        and
    }

    /// Every lane of `parts` combined by `combine` (associative and commutative): the vectors
    /// with each other, then lanes 0 and 1 with 2 and 3, then lane 0 with lane 1.
    fn fold_lanes(
        &mut self,
        parts: &[ir::Value],
        combine: impl Fn(&mut FunctionBuilder, ir::Value, ir::Value) -> ir::Value,
    ) -> ir::Value {
        let mut v = parts[0];
        for x in &parts[1..] {
            v = combine(&mut self.lanes.l.b, v, *x);
        }
        for words in [2, 1] {
            let turned = (0..16).map(|x| (x + 4 * words) % 16).collect();
            let other = self.shuffle_bytes(v, v, turned);
            v = combine(&mut self.lanes.l.b, v, other);
        }
        self.lanes.l.b.ins().extractlane(v, 0)
    }

    /// `redux.sync` of `a` over the lanes of `m` (a 32-bit mask).
    fn redux(&mut self, op: ReduxOp, ty: Type, a: &Operand, m: ir::Value) -> Res<ir::Value> {
        let a = self.lanes.read(a, Type::B32)?;
        let a = self.lanes.lanes_of(a, Type::B32)?;
        let signed = ty.is_signed();
        let identity = match op {
            ReduxOp::Add | ReduxOp::Or | ReduxOp::Xor => 0,
            ReduxOp::And => -1,
            ReduxOp::Min if signed => i32::MAX as i64,
            ReduxOp::Min => -1,
            ReduxOp::Max if signed => i32::MIN as i64,
            ReduxOp::Max => 0,
        };
        let identity = self.lanes.splat(identity);
        let zero = self.lanes.splat(0);
        let mv = self.b().ins().splat(V, m);
        let parts: Vec<ir::Value> = (0..P)
            .map(|q| {
                let lane = self.lanes.vconst(std::array::from_fn(|k| 1 << (4 * q + k)));
                let b = &mut self.lanes.l.b;
                let bit = b.ins().band(mv, lane);
                let out = b.ins().icmp(IntCC::Equal, bit, zero);
                b.ins().bitselect(out, identity, a[q])
            })
            .collect();
        let combine = |b: &mut FunctionBuilder, x, y| match op {
            ReduxOp::Add => b.ins().iadd(x, y),
            ReduxOp::And => b.ins().band(x, y),
            ReduxOp::Or => b.ins().bor(x, y),
            ReduxOp::Xor => b.ins().bxor(x, y),
            ReduxOp::Min if signed => b.ins().smin(x, y),
            ReduxOp::Min => b.ins().umin(x, y),
            ReduxOp::Max if signed => b.ins().smax(x, y),
            ReduxOp::Max => b.ins().umax(x, y),
        };
        let r = self.fold_lanes(&parts, combine);
        let b = &mut self.lanes.l.b;
        Ok(match op {
            // Of no lanes, min and max give 0.
            ReduxOp::Min | ReduxOp::Max => {
                let zero = b.ins().iconst(types::I32, 0);
                b.ins().select(m, r, zero)
            }
            _ => r,
        })
    }

    /// Lowers `shfl.sync` (mode `mode`, results `d` and `p`, sources `srcs`).
    fn shuffle(&mut self, mode: ShflMode, d: &Operand, p: &Operand, srcs: &[Operand]) -> Res<()> {
        let a = self.lanes.read(&srcs[0], Type::B32)?;

        let mut a = self.lanes.lanes_of(a, Type::B32)?;
        // An exited lane's source reads as 0.
        if !self.every_alive {
            let alive = self.mask(self.alive);
            let alive = self.bit_lanes(alive);
            a = self.and(a, alive);
        }
        let want_p = matches!(p, Operand::Reg(_));
        let (dv, pv) = match (self.constant(&srcs[1]), self.constant(&srcs[2])) {
            (Some(b), Some(c)) => self.known_shuffle(mode, b, c, a, want_p),
            _ => self.lane_shuffle(mode, &srcs[1], &srcs[2], a)?,
        };
        self.lanes.write(d, Type::B32, LaneVal::Varying(dv), None)?;
        if let Some(pv) = pv {
            self.lanes
                .write(p, Type::Pred, LaneVal::Varying(pv), None)?;
        }
        Ok(())
    }

    /// An operand's value where it is known while lowering.
    fn constant(&self, op: &Operand) -> Option<u64> {
        match op {
            Operand::Imm(Imm::Int(v)) => Some(*v as u64),
            Operand::Reg(r) => self.constants.get(r).map(|v| *v as u64),
            _ => None,
        }
    }

    /// The shuffle with constant `b` and `c`: the result vectors as byte shuffles of the
    /// sources, and the predicate (if wanted) as a constant.
    fn known_shuffle(
        &mut self,
        mode: ShflMode,
        b: u64,
        c: u64,
        a: Vecs<P>,
        want_p: bool,
    ) -> (Vecs<P>, Option<Vecs<P>>) {
        let args = [0, b, c, 0];
        let reads: Vec<(usize, bool)> = (0..4 * P as u32)
            .map(|k| {
                let r = warp::shfl(mode, k, &args, |j| j as u64);
                (r.d as usize, r.p)
            })
            .collect();
        let d = std::array::from_fn(|q| self.gather(a, &reads[4 * q..4 * q + 4]));
        let p = want_p.then(|| {
            std::array::from_fn(|q| {
                let lanes = std::array::from_fn(|k| -(reads[4 * q + k].1 as i32));
                self.lanes.vconst(lanes)
            })
        });
        (d, p)
    }

    /// A result vector whose four lanes read source lanes `from`: a byte shuffle of the
    /// first two source vectors it draws on, then of that and each further one.
    fn gather(&mut self, a: Vecs<P>, from: &[(usize, bool)]) -> ir::Value {
        // One source vector's lanes in order: that vector (a byte shuffle of it with
        // itself would be an instruction that moves nothing).
        let part = from[0].0 / 4;
        if from
            .iter()
            .enumerate()
            .all(|(k, &(j, _))| j == 4 * part + k)
        {
            return a[part];
        }
        let mut parts: Vec<usize> = Vec::new();
        for &(j, _) in from {
            if !parts.contains(&(j / 4)) {
                parts.push(j / 4);
            }
        }
        // Byte `byte` of lane k: from the first operand (0–15) or the second (16–31).
        let mask = |pick: &dyn Fn(usize, usize) -> u8| -> Vec<u8> {
            (0..16).map(|x| pick(x / 4, x % 4)).collect()
        };
        let word = |j: usize, byte: usize| (4 * (j % 4) + byte) as u8;
        let first = parts[0];
        let second = *parts.get(1).unwrap_or(&first);
        let mut acc = self.shuffle_bytes(
            a[first],
            a[second],
            mask(&|k, byte| {
                let j = from[k].0;
                if j / 4 == first {
                    word(j, byte)
                } else if j / 4 == second {
                    16 + word(j, byte)
                } else {
                    0
                }
            }),
        );
        for &part in parts.iter().skip(2) {
            acc = self.shuffle_bytes(
                acc,
                a[part],
                mask(&|k, byte| {
                    let j = from[k].0;
                    if j / 4 == part {
                        16 + word(j, byte)
                    } else {
                        (4 * k + byte) as u8
                    }
                }),
            );
        }
        acc
    }

    /// Cranelift's `shuffle` of two `i32x4`s by a byte mask (0–15 the first's bytes, 16–31
    /// the second's).
    fn shuffle_bytes(&mut self, x: ir::Value, y: ir::Value, mask: Vec<u8>) -> ir::Value {
        let little = MemFlagsData::new().with_endianness(Endianness::Little);
        let b = &mut self.lanes.l.b;
        let imm = b.func.dfg.immediates.push(ConstantData::from(mask));
        let x = b.ins().bitcast(types::I8X16, little, x);
        let y = b.ins().bitcast(types::I8X16, little, y);
        let r = b.ins().shuffle(x, y, imm);
        b.ins().bitcast(V, little, r)
    }

    /// The shuffle with `b` or `c` known only when it runs: each lane's source lane and
    /// predicate in vectors, then a word loaded a lane from the sources in the scratch
    /// area.
    fn lane_shuffle(
        &mut self,
        mode: ShflMode,
        b: &Operand,
        c: &Operand,
        a: Vecs<P>,
    ) -> Res<(Vecs<P>, Option<Vecs<P>>)> {
        let scratch = self.scratch;
        for (q, v) in a.iter().enumerate() {
            self.b()
                .ins()
                .stack_store(types::I64, *v, scratch, 16 * q as i32);
        }
        let bv = self.lanes.read(b, Type::U32)?;
        let bv = self.lanes.lanes_of(bv, Type::U32)?;
        let cv = self.lanes.read(c, Type::U32)?;
        let cv = self.lanes.lanes_of(cv, Type::U32)?;
        let m31 = self.lanes.splat(31);
        let base = self.b().ins().stack_addr(types::I64, scratch, 0);
        let mut d = a;
        let mut pv = a;
        for q in 0..P {
            let lane = self
                .lanes
                .vconst(std::array::from_fn(|k| (4 * q + k) as i32));
            let bval = self.b().ins().band(bv[q], m31);
            let cval = self.b().ins().band(cv[q], m31);
            let seg = self.b().ins().ushr_imm_u(cv[q], 8);
            let seg = self.b().ins().band(seg, m31);
            let low = self.b().ins().band(lane, seg);
            let high = self.b().ins().band_not(cval, seg);
            let max = self.b().ins().bor(low, high);
            let (j, cc) = match mode {
                ShflMode::Up => (
                    self.b().ins().isub(lane, bval),
                    IntCC::SignedGreaterThanOrEqual,
                ),
                ShflMode::Down => (
                    self.b().ins().iadd(lane, bval),
                    IntCC::SignedLessThanOrEqual,
                ),
                ShflMode::Bfly => (
                    self.b().ins().bxor(lane, bval),
                    IntCC::SignedLessThanOrEqual,
                ),
                ShflMode::Idx => {
                    let high = self.b().ins().band_not(bval, seg);
                    (self.b().ins().bor(low, high), IntCC::SignedLessThanOrEqual)
                }
            };
            let pval = self.b().ins().icmp(cc, j, max);
            let j = self.b().ins().bitselect(pval, j, lane);
            let mut out = self.lanes.splat(0);
            for k in 0..4u8 {
                let jk = self.b().ins().extractlane(j, k);
                let at = self.b().ins().ishl_imm_u(jk, 2);
                let at = self.b().ins().uextend(types::I64, at);
                let at = self.b().ins().iadd(base, at);
                let w = self.b().ins().load(types::I32, trusted(), at, 0);
                out = self.b().ins().insertlane(out, w, k);
            }
            d[q] = out;
            pv[q] = pval;
        }
        Ok((d, Some(pv)))
    }
}
