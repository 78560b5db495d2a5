//! Barriers and warp collectives (PTX ISA, Parallel Synchronization and Communication
//! Instructions: `bar`/`barrier`, `bar.warp.sync`, `vote.sync`, `match.sync`, `redux.sync`,
//! `activemask`, `elect.sync`; Data Movement and Conversion Instructions: `shfl.sync`,
//! `isspacep`). Each becomes an [`Inst::Sync`] whose sources are in the order
//! [`SyncOp::src_types`] gives. Only the `.sync` forms exist here: the deprecated warp-
//! synchronous `shfl`/`vote` without `.sync` have no defined meaning on sm_70 and later.

use super::{Cx, Opnd, R, Raw, err};
use crate::ast::*;

/// Sources by the op's types (`ops` are the source operands only).
fn sources(cx: &Cx, op: SyncOp, ops: &[Opnd]) -> R<Vec<Operand>> {
    op.src_types()
        .into_iter()
        .zip(ops)
        .map(|(ty, o)| cx.src(o, ty))
        .collect()
}

fn sync(op: SyncOp, d: Operand, p: Operand, srcs: Vec<Operand>) -> Inst {
    Inst::Sync { op, d, p, srcs }
}

/// `bar{.cta}.sync a{, b}`, `barrier{.cta}.sync{.aligned} a{, b}`, `bar{.cta}.arrive a, b`,
/// `bar{.cta}.red.popc.u32 d, a{, b}, {!}c`, `bar{.cta}.red.{and,or}.pred p, a{, b}, {!}c`,
/// and `bar.warp.sync membermask`. A bare `bar` is `bar.sync`.
pub(super) fn bar(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    if cx.opcode == "bar" && cx.flag("warp") {
        if !cx.flag("sync") {
            return err(cx.head, "`bar.warp` needs `.sync`");
        }
        cx.count(ops, 1)?;
        return Ok(sync(
            SyncOp::WarpSync,
            Operand::Sink,
            Operand::Sink,
            sources(cx, SyncOp::WarpSync, ops)?,
        ));
    }
    cx.flag("cta");
    cx.flag("aligned");
    let (sync_, arrive, red) = (cx.flag("sync"), cx.flag("arrive"), cx.flag("red"));
    let red = if red {
        let Some(r) = cx.pick(BarRed::from_ptx)? else {
            return err(cx.head, "`bar.red` needs .popc, .and or .or");
        };
        let ty = cx.one_type(&[Type::U32, Type::Pred])?;
        let want = if r == BarRed::Popc {
            Type::U32
        } else {
            Type::Pred
        };
        if ty != want {
            return err(cx.head, format!("`bar.red.{r}` is .{}", want.ptx()));
        }
        Some(r)
    } else {
        None
    };
    let kinds = sync_ as u8 + arrive as u8 + red.is_some() as u8;
    if kinds > 1 || (kinds == 0 && cx.opcode == "barrier") {
        return err(
            cx.head,
            format!("`{}` takes one of .sync, .arrive, .red", cx.opcode),
        );
    }
    // Destination, barrier id, optional count, predicate.
    let fixed = red.is_some() as usize * 2 + 1;
    let counted = match ops.len() {
        n if n == fixed => false,
        n if n == fixed + 1 => true,
        _ => {
            let span = ops.get(fixed + 1).map_or(cx.head, |o| o.span);
            return err(
                span,
                format!(
                    "`{}` takes {fixed} or {} operands, found {}",
                    cx.opcode,
                    fixed + 1,
                    ops.len()
                ),
            );
        }
    };
    if arrive && !counted {
        return err(cx.head, "`bar.arrive` needs a thread count");
    }
    let op = SyncOp::Bar {
        wait: !arrive,
        counted,
        red,
    };
    let (d, srcs) = match red {
        Some(_) => (cx.dst(&ops[0], op.d_type())?, &ops[1..]),
        None => (Operand::Sink, ops),
    };
    let id_span = srcs[0].span;
    let srcs = sources(cx, op, srcs)?;
    if let Operand::Imm(Imm::Int(id)) = srcs[0]
        && !(0..16).contains(&id)
    {
        return err(id_span, "barrier ids are 0 to 15");
    }
    Ok(sync(op, d, Operand::Sink, srcs))
}

/// The membermask of a form without `.sync` (before sm_70: `shfl.mode.b32 d[|p], a, b, c`,
/// `vote.mode d, {!}a`), which acts among the lanes that execute it together: an
/// `activemask` just before it (a sync point that resolves for whichever lanes stand
/// there) gives them.
fn active_mask(cx: &Cx) -> R<Operand> {
    // ptxas: "not supported on .target sm_70 and higher from PTX ISA version 6.4".
    let module = cx.fb.module;
    if module.sm_version().is_some_and(|v| v >= 70) && module.version >= (6, 4) {
        return err(
            cx.head,
            format!(
                "`{}` without `.sync` is not supported on sm_70 and later from PTX ISA 6.4",
                cx.opcode
            ),
        );
    }
    let mask = cx.temp(Type::B32, "%activemask".into());
    cx.pre.borrow_mut().push(sync(
        SyncOp::Activemask,
        Operand::Reg(mask),
        Operand::Sink,
        Vec::new(),
    ));
    Ok(Operand::Reg(mask))
}

/// `shfl.sync.mode.b32 d[|p], a, b, c, membermask`, and `shfl.mode.b32 d[|p], a, b, c`
/// (see [`active_mask`]).
pub(super) fn shfl(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let legacy = !cx.flag("sync");
    let Some(mode) = cx.pick(ShflMode::from_ptx)? else {
        return err(cx.head, "`shfl` needs .up, .down, .bfly or .idx");
    };
    cx.one_type(&[Type::B32])?;
    cx.count(ops, if legacy { 4 } else { 5 })?;
    let op = SyncOp::Shfl(mode);
    let (d, p) = cx.dst_and_pred(&ops[0], Type::B32, true)?;
    let mut srcs = sources(cx, op, &ops[1..])?;
    if legacy {
        srcs.push(active_mask(cx)?);
    }
    Ok(sync(op, d, p, srcs))
}

/// `vote.sync.{all,any,uni}.pred d, {!}a, membermask`, `vote.sync.ballot.b32 d, {!}a,
/// membermask`, and the forms without `.sync` (see [`active_mask`]).
pub(super) fn vote(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let legacy = !cx.flag("sync");
    let Some(mode) = cx.pick(VoteMode::from_ptx)? else {
        return err(cx.head, "`vote` needs .all, .any, .uni or .ballot");
    };
    let op = SyncOp::Vote(mode);
    cx.one_type(&[op.d_type()])?;
    cx.count(ops, if legacy { 2 } else { 3 })?;
    let d = cx.dst(&ops[0], op.d_type())?;
    let mut srcs = sources(cx, op, &ops[1..])?;
    if legacy {
        srcs.push(active_mask(cx)?);
    }
    Ok(sync(op, d, Operand::Sink, srcs))
}

/// `match.{any,all}.sync.type d[|p], a, membermask` (`|p` for `.all` only).
pub(super) fn match_(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let (any, all) = (cx.flag("any"), cx.flag("all"));
    if any == all {
        return err(cx.head, "`match` takes one of .any, .all");
    }
    if !cx.flag("sync") {
        return err(cx.head, "`match` needs `.sync`");
    }
    let ty = cx.one_type(&[Type::B32, Type::B64])?;
    cx.count(ops, 3)?;
    let op = SyncOp::Match { all, ty };
    let (d, p) = cx.dst_and_pred(&ops[0], Type::B32, all)?;
    Ok(sync(op, d, p, sources(cx, op, &ops[1..])?))
}

/// `redux.sync.op.type d, a, membermask`: add/min/max on .u32/.s32, and/or/xor on .b32.
pub(super) fn redux(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    if !cx.flag("sync") {
        return err(cx.head, "`redux` needs `.sync`");
    }
    let Some(r) = cx.pick(ReduxOp::from_ptx)? else {
        return err(
            cx.head,
            "`redux.sync` needs .add, .min, .max, .and, .or or .xor",
        );
    };
    let allowed: &[Type] = match r {
        ReduxOp::Add | ReduxOp::Min | ReduxOp::Max => &[Type::U32, Type::S32],
        ReduxOp::And | ReduxOp::Or | ReduxOp::Xor => &[Type::B32],
    };
    let ty = cx.one_type(allowed)?;
    cx.count(ops, 3)?;
    let op = SyncOp::Redux(r, ty);
    let d = cx.dst(&ops[0], ty)?;
    Ok(sync(op, d, Operand::Sink, sources(cx, op, &ops[1..])?))
}

/// `activemask.b32 d`.
pub(super) fn activemask(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    cx.one_type(&[Type::B32])?;
    cx.count(ops, 1)?;
    let d = cx.dst(&ops[0], Type::B32)?;
    Ok(sync(SyncOp::Activemask, d, Operand::Sink, Vec::new()))
}

/// `elect.sync d|p, membermask` (`d` may be the sink `_`).
pub(super) fn elect(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    if !cx.flag("sync") {
        return err(cx.head, "`elect` needs `.sync`");
    }
    cx.count(ops, 2)?;
    let (d, p) = match &ops[0].raw {
        Raw::PredPair(..) | Raw::SinkPred(_) => cx.dst_and_pred(&ops[0], Type::B32, true)?,
        _ => return err(ops[0].span, "`elect.sync` writes `d|p`"),
    };
    Ok(sync(
        SyncOp::Elect,
        d,
        p,
        sources(cx, SyncOp::Elect, &ops[1..])?,
    ))
}

/// `isspacep.space p, a` for `.global .shared .local .const .param`.
pub(super) fn isspacep(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let space = match cx.pick(super::space_modifier)? {
        Some(s @ (Space::Global | Space::Shared | Space::Local | Space::Const | Space::Param)) => s,
        Some(s) => return err(cx.head, format!("isspacep does not support {s}")),
        None => return err(cx.head, "isspacep needs a state space"),
    };
    cx.count(ops, 2)?;
    Ok(Inst::Isspacep {
        space,
        p: cx.dst(&ops[0], Type::Pred)?,
        a: cx.src(&ops[1], Type::U64)?,
    })
}
