//! The integer and bit instructions beyond the classic set (PTX ISA, Integer Arithmetic
//! Instructions: `bfind`, `fns`, `bmsk`, `szext`, `mul24`, `mad24`, `sad`, `dp4a`, `dp2a`;
//! Logic and Shift Instructions: `lop3`), `copysign` and `testp` (Floating-Point
//! Instructions) and `cvt.pack` (Data Movement and Conversion Instructions). Each becomes an
//! [`Inst::Compute`] whose sources are in the order [`ComputeOp::src_types`] gives; and the
//! hints `nanosleep`, `prefetch`, `prefetchu`, which become [`Inst::Hint`].

use super::{Cx, Opnd, R, Raw, err};
use crate::ast::*;
use crate::frontend::Diagnostic;

/// Sources by the op's types (`ops` are the source operands only).
fn compute(cx: &Cx, op: ComputeOp, d: Operand, p: Operand, ops: &[Opnd]) -> R<Inst> {
    let srcs = op
        .src_types()
        .into_iter()
        .zip(ops)
        .map(|(ty, o)| cx.src(o, ty))
        .collect::<R<Vec<_>>>()?;
    Ok(Inst::Compute { op, d, p, srcs })
}

/// `.clamp` or `.wrap`, required: whether it is `.wrap`.
fn wrap_mode(cx: &mut Cx) -> R<bool> {
    match cx.pick(ShfMode::from_ptx)? {
        Some(m) => Ok(m == ShfMode::Wrap),
        None => err(cx.head, format!("`{}` needs .clamp or .wrap", cx.opcode)),
    }
}

/// `.hi` or `.lo`, required: whether it is `.hi`.
fn half_mode(cx: &mut Cx) -> R<bool> {
    let (hi, lo) = (cx.flag("hi"), cx.flag("lo"));
    if hi == lo {
        return err(cx.head, format!("`{}` takes one of .hi, .lo", cx.opcode));
    }
    cx.mode_first(if hi { "hi" } else { "lo" })?;
    Ok(hi)
}

/// The two types of `dp4a`/`dp2a` (`.atype.btype`, each `.u32` or `.s32`): whether each is
/// signed.
fn dot_types(cx: &mut Cx) -> R<(bool, bool)> {
    let tys = cx.types();
    let [(a, sa), (b, sb)] = tys.as_slice() else {
        return err(
            cx.head,
            format!("`{}` takes two type modifiers: .atype.btype", cx.opcode),
        );
    };
    for (t, span) in [(a, sa), (b, sb)] {
        if !matches!(t, Type::U32 | Type::S32) {
            return err(*span, format!("`{}` does not take type {t}", cx.opcode));
        }
    }
    Ok((*a == Type::S32, *b == Type::S32))
}

pub(super) fn bfind(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let shiftamt = cx.flag("shiftamt");
    let ty = cx.one_type(&[Type::U32, Type::U64, Type::S32, Type::S64])?;
    cx.count(ops, 2)?;
    let op = ComputeOp::Bfind { ty, shiftamt };
    let d = cx.dst(&ops[0], op.d_type())?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

pub(super) fn fns(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    cx.one_type(&[Type::B32])?;
    cx.count(ops, 4)?;
    let op = ComputeOp::Fns;
    let d = cx.dst(&ops[0], op.d_type())?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

/// `bmsk.mode.b32 d, a, b` and `szext.mode.type d, a, b`.
pub(super) fn bmsk_szext(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let wrap = wrap_mode(cx)?;
    let op = if cx.opcode == "bmsk" {
        cx.one_type(&[Type::B32])?;
        ComputeOp::Bmsk { wrap }
    } else {
        let ty = cx.one_type(&[Type::U32, Type::S32])?;
        ComputeOp::Szext {
            wrap,
            signed: ty == Type::S32,
        }
    };
    cx.count(ops, 3)?;
    let d = cx.dst(&ops[0], op.d_type())?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

/// `mul24.mode.type d, a, b`, `mad24.mode.type d, a, b, c`, `mad24.hi.sat.s32 d, a, b, c`.
pub(super) fn mul24(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let add = cx.opcode == "mad24";
    let hi = half_mode(cx)?;
    let sat = add && cx.flag("sat");
    let ty = cx.one_type(&[Type::U32, Type::S32])?;
    cx.forbid(
        sat && !(hi && ty == Type::S32),
        "sat",
        "applies to mad24.hi.s32 only",
    )?;
    cx.count(ops, if add { 4 } else { 3 })?;
    let op = ComputeOp::Mul24 {
        hi,
        signed: ty == Type::S32,
        add,
        sat,
    };
    let d = cx.dst(&ops[0], op.d_type())?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

pub(super) fn sad(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ty = cx.one_type(&[U16, U32, U64, S16, S32, S64])?;
    cx.count(ops, 4)?;
    let op = ComputeOp::Sad { ty };
    let d = cx.dst(&ops[0], op.d_type())?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

/// `dp4a.atype.btype d, a, b, c` and `dp2a.mode.atype.btype d, a, b, c`.
pub(super) fn dot(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let half = if cx.opcode == "dp2a" {
        Some(half_mode(cx)?)
    } else {
        None
    };
    let (a_signed, b_signed) = dot_types(cx)?;
    cx.count(ops, 4)?;
    let op = ComputeOp::Dot {
        half,
        a_signed,
        b_signed,
    };
    let d = cx.dst(&ops[0], op.d_type())?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

/// `lop3.b32 d, a, b, c, immLut` and `lop3.{or,and}.b32 d|p, a, b, c, immLut, q` (`d` may
/// be `_` there).
pub(super) fn lop3(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let combine = match cx.pick(BoolOp::from_ptx)? {
        Some(BoolOp::Xor) => return err(cx.head, "`lop3` combines with .or or .and only"),
        c => c,
    };
    cx.one_type(&[Type::B32])?;
    cx.count(ops, if combine.is_some() { 6 } else { 5 })?;
    // ptxas takes any integer constant and uses its low 8 bits (0x1ff is 0xff, -1 is 0xff).
    let lut = match &ops[4].raw {
        Raw::Op(Operand::Imm(Imm::Int(v))) => (*v & 0xff) as u8,
        _ => {
            return Err(Diagnostic::new(
                ops[4].span,
                "`lop3`'s truth table immLut must be an integer constant",
            ));
        }
    };
    let op = ComputeOp::Lop3 { lut, combine };
    let (d, p) = match combine {
        Some(_) => match &ops[0].raw {
            Raw::PredPair(..) | Raw::SinkPred(_) => cx.dst_and_pred(&ops[0], Type::B32, true)?,
            _ => return err(ops[0].span, "`lop3` with .or/.and writes `d|p`"),
        },
        None => cx.dst_and_pred(&ops[0], Type::B32, false)?,
    };
    let srcs: Vec<Opnd> = ops[1..4].iter().chain(ops.get(5)).cloned().collect();
    compute(cx, op, d, p, &srcs)
}

pub(super) fn copysign(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let ty = cx.one_type(&[Type::F32, Type::F64])?;
    cx.count(ops, 3)?;
    let op = ComputeOp::Copysign { ty };
    let d = cx.dst(&ops[0], ty)?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

pub(super) fn testp(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let Some(test) = cx.pick(TestpOp::from_ptx)? else {
        return err(
            cx.head,
            "`testp` needs .finite, .infinite, .number, .notanumber, .normal or .subnormal",
        );
    };
    let ty = cx.one_type(&[Type::F32, Type::F64])?;
    cx.count(ops, 2)?;
    let op = ComputeOp::Testp { op: test, ty };
    let p = cx.dst(&ops[0], Type::Pred)?;
    compute(cx, op, Operand::Sink, p, &ops[1..])
}

/// `cvt.pack.sat.{u16,s16}.s32 d, a, b` and `cvt.pack.sat.{u8,s8,u4,s4,u2,s2}.s32.b32 d,
/// a, b, c`.
pub(super) fn cvt_pack(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    if !cx.flag("sat") {
        return err(cx.head, "`cvt.pack` needs .sat");
    }
    // .u4 .s4 .u2 .s2 are no register types: they are modifiers here.
    let narrow = cx.pick(|m| match m {
        "u4" => Some((4, false)),
        "s4" => Some((4, true)),
        "u2" => Some((2, false)),
        "s2" => Some((2, true)),
        _ => None,
    })?;
    let tys = cx.types();
    let types: Vec<Type> = tys.iter().map(|(t, _)| *t).collect();
    let usage =
        "`cvt.pack.sat` takes .u16/.s16 with .s32, or .u8/.s8/.u4/.s4/.u2/.s2 with .s32.b32";
    let (bits, signed, with_c) = match (narrow, types.as_slice()) {
        (None, [d @ (Type::U16 | Type::S16), Type::S32]) => (16, d.is_signed(), false),
        (None, [d @ (Type::U8 | Type::S8), Type::S32, Type::B32]) => (8, d.is_signed(), true),
        (Some((bits, signed)), [Type::S32, Type::B32]) => (bits, signed, true),
        _ => return err(cx.head, usage),
    };
    cx.count(ops, if with_c { 4 } else { 3 })?;
    let op = ComputeOp::CvtPack {
        bits,
        signed,
        with_c,
    };
    let d = cx.dst(&ops[0], Type::U32)?;
    compute(cx, op, d, Operand::Sink, &ops[1..])
}

/// `createpolicy` (PTX ISA, Data Movement and Conversion Instructions: createpolicy): a
/// 64-bit L2 cache policy for the `.L2::cache_hint` forms of loads and stores, which have
/// no cache here. The policy is opaque to a program (only cache hints read it); we make it
/// 0 (what hardware encodes is *unverified*).
///
/// ```text
/// createpolicy.fractional.L2::primary{.L2::secondary}.b64 d{, fraction};
/// createpolicy.range.L2::primary{.L2::secondary}.b64 d, [a], primary_size, total_size;
/// createpolicy.cvt.L2.b64 d, access_property;
/// ```
pub(super) fn createpolicy(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    super::half::needs_sm(cx, 80, "createpolicy")?;
    cx.one_type(&[Type::B64])?;
    // One primary priority, and with .fractional or .range maybe a second one
    // (evict_first or evict_unchanged).
    let priorities = |cx: &mut Cx| -> R<()> {
        let found: Vec<&str> = [
            "evict_last",
            "evict_normal",
            "evict_first",
            "evict_unchanged",
        ]
        .into_iter()
        .filter(|p| cx.flag(&format!("L2::{p}")))
        .collect();
        let second_ok = |p: &&str| matches!(*p, "evict_first" | "evict_unchanged");
        match found.len() {
            1 => Ok(()),
            2 if found.iter().any(second_ok) => Ok(()),
            _ => err(
                cx.head,
                "`createpolicy` takes a primary L2 priority and at most a secondary one",
            ),
        }
    };
    if cx.flag("fractional") {
        priorities(cx)?;
        match ops.len() {
            1 => {}
            2 => {
                cx.src(&ops[1], Type::F32)?;
            }
            _ => return err(cx.head, "expected 1 or 2 operands"),
        }
    } else if cx.flag("range") {
        priorities(cx)?;
        cx.count(ops, 4)?;
        cx.address(&ops[1])?;
        cx.src(&ops[2], Type::U32)?;
        cx.src(&ops[3], Type::U32)?;
    } else if cx.flag("cvt") {
        if !cx.flag("L2") {
            return err(cx.head, "`createpolicy.cvt` needs .L2");
        }
        cx.count(ops, 2)?;
        cx.src(&ops[1], Type::B64)?;
    } else {
        return err(cx.head, "`createpolicy` takes .fractional, .range or .cvt");
    }
    Ok(Inst::Mov {
        ty: Type::B64,
        d: cx.dst(&ops[0], Type::B64)?,
        a: Operand::Imm(Imm::Int(0)),
    })
}

/// `nanosleep.u32 t`, `prefetch{.space}.level [a]`, `prefetchu.L1 [a]`: checked, no effect.
pub(super) fn hint(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    cx.count(ops, 1)?;
    match cx.opcode {
        "nanosleep" => {
            cx.one_type(&[Type::U32])?;
            cx.src(&ops[0], Type::U32)?;
        }
        "prefetchu" => {
            if !cx.flag("L1") {
                return err(cx.head, "`prefetchu` needs .L1");
            }
            cx.address(&ops[0])?;
        }
        _ => {
            cx.pick(|m| match m {
                "global" | "local" => Some(()),
                _ => None,
            })?;
            let evict = cx.flag("L2::evict_last") | cx.flag("L2::evict_normal");
            if cx.flag("L1") as u8 + cx.flag("L2") as u8 + evict as u8 != 1 {
                return err(
                    cx.head,
                    "`prefetch` takes one of .L1, .L2, .L2::evict_last, .L2::evict_normal",
                );
            }
            cx.address(&ops[0])?;
        }
    }
    Ok(Inst::Hint)
}
