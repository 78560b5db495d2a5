//! Half precision (PTX ISA 9.7.4, 9.7.7 and the half forms of `cvt` in 9.7.9.21): the
//! arithmetic on `.f16 .f16x2 .bf16 .bf16x2`, `tanh.approx` (also on `.f32`), `setp` and
//! `set` on halves (and `set` in every form), and `cvt` to and from the half types. Every
//! form becomes an [`Inst::Compute`] of a [`HalfOp`].
//!
//! The rules are ptxas's (CUDA 12.9), which are narrower than the manual's syntax tables:
//! arithmetic rounds to nearest only; `.ftz` and `.sat` apply to `.f16`/`.f16x2`; the
//! `.bf16` forms of `add sub mul setp set ex2 tanh`, and `cvt` between `.bf16` and anything
//! but `.f32`, need sm_90; `.xorsign.abs` needs sm_86.

use super::{Cx, Fit, Opnd, R, Raw, convert, err};
use crate::ast::*;
use crate::frontend::Diagnostic;

const HALF_TYPES: &[Type] = &[Type::F16, Type::F16x2, Type::BF16, Type::BF16x2];

/// Whether the instruction's type modifiers name a half type (or it is `tanh`/`set`).
pub(super) fn is_half_form(cx: &Cx) -> bool {
    let has = |names: &[&str]| cx.mods.iter().any(|(m, _)| names.contains(m));
    matches!(cx.opcode, "tanh" | "set")
        || has(&["f16", "f16x2", "bf16", "bf16x2"])
        // `min`/`max` with `.NaN` or `.xorsign.abs` on `.f32` share the halves' rules.
        || (matches!(cx.opcode, "min" | "max") && has(&["f32"]) && has(&["NaN", "xorsign"]))
}

fn is_bf16(ty: Type) -> bool {
    ty.element() == Type::BF16
}

/// ptxas's target requirement for a feature.
pub(super) fn needs_sm(cx: &Cx, min: u32, what: &str) -> R<()> {
    match cx.fb.module.sm_version() {
        Some(v) if v < min => err(
            cx.head,
            format!("{what} requires .target sm_{min} or higher"),
        ),
        _ => Ok(()),
    }
}

/// `add sub mul fma neg abs min max ex2 tanh` on halves (9.7.4.1–10) and `tanh.approx.f32`.
pub(super) fn arith(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let f = HalfFn::from_ptx(cx.opcode).expect("dispatched by opcode");
    let allowed: &[Type] = if matches!(f, HalfFn::Tanh | HalfFn::Min | HalfFn::Max) {
        &[Type::F16, Type::F16x2, Type::BF16, Type::BF16x2, Type::F32]
    } else {
        HALF_TYPES
    };
    let ty = cx.one_type(allowed)?;
    let bf = is_bf16(ty);
    let rnd = cx.pick(Rounding::from_ptx)?;
    let approx = cx.flag("approx");
    let ftz = cx.flag("ftz");
    let sat = cx.flag("sat");
    let relu = cx.flag("relu");
    let nan = cx.flag("NaN");
    let xorsign = cx.flag("xorsign");
    let abs = cx.flag("abs");
    if cx.flag("oob") {
        return Err(Diagnostic::unsupported(
            cx.head,
            "`fma.oob` is not supported yet",
        ));
    }
    let rounded = matches!(f, HalfFn::Add | HalfFn::Sub | HalfFn::Mul | HalfFn::Fma);
    match rnd {
        Some(Rounding::Rn) if rounded => {}
        None if f != HalfFn::Fma => {}
        None => return err(cx.head, "fma needs a rounding modifier (.rn)"),
        Some(r) if rounded => {
            return err(
                cx.head,
                format!("`{}` on {ty} rounds with .rn only, not {r}", cx.opcode),
            );
        }
        Some(r) => {
            return err(
                cx.head,
                format!("`{}` takes no rounding modifier {r}", cx.opcode),
            );
        }
    }
    let approximate = matches!(f, HalfFn::Ex2 | HalfFn::Tanh);
    if approximate != approx {
        return err(
            cx.head,
            if approximate {
                format!("`{}` needs .approx", cx.opcode)
            } else {
                format!("`{}` on {ty} takes no .approx", cx.opcode)
            },
        );
    }
    let ftz_ok = match f {
        HalfFn::Ex2 => bf,
        HalfFn::Tanh => false,
        _ => !bf,
    };
    if ty == Type::F32 && f != HalfFn::Tanh {
        // min/max.f32 come here only with .NaN or .xorsign.abs (both sm_80's PTX 7.0 forms;
        // .xorsign.abs needs sm_86, as below).
        needs_sm(
            cx,
            80,
            &format!("`{}` with .NaN or .xorsign.abs on .f32", cx.opcode),
        )?;
    }
    cx.forbid(
        ftz && !ftz_ok,
        "ftz",
        &format!("does not apply to `{}` on {ty}", cx.opcode),
    )?;
    if f == HalfFn::Ex2 && bf && !ftz {
        return err(cx.head, "ex2.approx on .bf16 needs .ftz");
    }
    let sat_ok = matches!(f, HalfFn::Add | HalfFn::Sub | HalfFn::Mul | HalfFn::Fma) && !bf;
    cx.forbid(
        sat && !sat_ok,
        "sat",
        &format!("does not apply to `{}` on {ty}", cx.opcode),
    )?;
    cx.forbid(relu && f != HalfFn::Fma, "relu", "applies to fma only")?;
    cx.forbid(relu && sat, "relu", "cannot be combined with .sat")?;
    let minmax = matches!(f, HalfFn::Min | HalfFn::Max);
    cx.forbid(nan && !minmax, "NaN", "applies to min and max only")?;
    cx.forbid(xorsign && !minmax, "xorsign", "applies to min and max only")?;
    if xorsign != abs {
        return err(cx.head, "`.xorsign` and `.abs` go together (.xorsign.abs)");
    }
    if xorsign {
        needs_sm(cx, 86, "`.xorsign.abs`")?;
    }
    let sm90 = match f {
        HalfFn::Add | HalfFn::Sub | HalfFn::Mul | HalfFn::Ex2 | HalfFn::Tanh => bf,
        _ => false,
    };
    if sm90 {
        needs_sm(cx, 90, &format!("`{}.{}`", cx.opcode, ty.ptx()))?;
    }
    let op = HalfOp::Arith {
        f,
        ty,
        ftz,
        sat,
        relu,
        nan,
        xorsign,
    };
    cx.count(ops, 1 + f.arity())?;
    compute(cx, op, &ops[0], Operand::Sink, &ops[1..])
}

/// An [`Inst::Compute`] of `op` with destination `d` (and `p`) and sources `srcs`.
fn compute(cx: &Cx, op: HalfOp, d: &Opnd, p: Operand, srcs: &[Opnd]) -> R<Inst> {
    // cvt's integer operands may sit in wider registers (PTX ISA 6.4.1's relaxed rule).
    let fit = match op {
        HalfOp::Cvt { .. } => Fit::Wider,
        _ => Fit::Exact,
    };
    compute_fit(cx, op, fit, d, p, srcs)
}

/// [`compute`] with the registers fitted to the operand types as `fit` says.
fn compute_fit(cx: &Cx, op: HalfOp, fit: Fit, d: &Opnd, p: Operand, srcs: &[Opnd]) -> R<Inst> {
    let d = cx.dst_fit(d, op.d_type(), fit)?;
    let srcs = srcs
        .iter()
        .zip(op.src_types())
        .map(|(o, ty)| cx.src_fit(o, ty, fit))
        .collect::<R<Vec<_>>>()?;
    Ok(Inst::Compute {
        op: ComputeOp::Half(op),
        d,
        p,
        srcs,
    })
}

/// The comparison and combination modifiers of `setp`/`set` on type `ty`.
fn comparison(cx: &mut Cx, ty: Type) -> R<(CmpOp, Option<BoolOp>, bool)> {
    let cmp = cx.pick(CmpOp::from_ptx)?.ok_or_else(|| {
        Diagnostic::new(
            cx.head,
            format!("`{}` needs a comparison (.eq, .lt, ...)", cx.opcode),
        )
    })?;
    let combine = cx.pick(BoolOp::from_ptx)?;
    let ftz = cx.flag("ftz");
    if !cmp.applies_to(ty) {
        return err(cx.head, format!("comparison {cmp} does not apply to {ty}"));
    }
    let ftz_ok = matches!(ty, Type::F16 | Type::F16x2 | Type::F32);
    cx.forbid(
        ftz && !ftz_ok,
        "ftz",
        &format!("does not apply to a comparison of {ty}"),
    )?;
    Ok((cmp, combine, ftz))
}

/// `setp` on halves (9.7.7.2): `p|q` (on a pair: the low halves' and the high halves'
/// comparisons), or `p` alone on one half.
pub(super) fn setp(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let ty = cx.one_type(HALF_TYPES)?;
    let (cmp, combine, ftz) = comparison(cx, ty)?;
    if is_bf16(ty) {
        needs_sm(cx, 90, &format!("`setp.{}`", ty.ptx()))?;
    }
    cx.count(ops, if combine.is_some() { 4 } else { 3 })?;
    let reg = |r: RegId| Opnd {
        raw: Raw::Op(Operand::Reg(r)),
        span: ops[0].span,
    };
    let (p, q) = match &ops[0].raw {
        Raw::PredPair(p, q) => (reg(*p), cx.dst(&reg(*q), Type::Pred)?),
        _ if ty.bits() == 32 => {
            return Err(Diagnostic::unsupported(
                ops[0].span,
                format!(
                    "`setp.{}` with one predicate result is not supported; write p|q",
                    ty.ptx()
                ),
            ));
        }
        _ => (ops[0].clone(), Operand::Sink),
    };
    let op = HalfOp::Setp {
        cmp,
        combine,
        ftz,
        ty,
    };
    compute(cx, op, &p, q, &ops[1..])
}

/// `set` (9.7.6.1, and 9.7.7.1 for its half forms): `d` is all ones (1.0 in a float or
/// half type) where the comparison holds, per half of a pair.
pub(super) fn set(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let tys = cx.types();
    let [(dty, dspan), (sty, sspan)] = tys[..] else {
        return err(cx.head, "set takes two types: set.dtype.stype");
    };
    let (cmp, combine, ftz) = comparison(cx, sty)?;
    let dty_ok = match sty {
        F16x2 => matches!(dty, F16x2 | U32 | S32),
        BF16x2 => matches!(dty, BF16x2 | U32 | S32),
        F16 | BF16 => matches!(dty, F16 | BF16 | U16 | S16 | U32 | S32),
        B16 | B32 | B64 | U16 | U32 | U64 | S16 | S32 | S64 | F32 | F64 => {
            matches!(dty, F16 | BF16 | U32 | S32 | F32)
        }
        _ => return err(sspan, format!("set does not take source type {sty}")),
    };
    if !dty_ok {
        return err(
            dspan,
            format!("set.{}.{} is not a form of set", dty.ptx(), sty.ptx()),
        );
    }
    if is_bf16(dty) || is_bf16(sty) {
        needs_sm(cx, 90, "`set` on .bf16")?;
    }
    cx.count(ops, if combine.is_some() { 4 } else { 3 })?;
    let op = HalfOp::Set {
        cmp,
        combine,
        ftz,
        dty,
        sty,
    };
    compute(cx, op, &ops[0], Operand::Sink, &ops[1..])
}

/// `cvt` with a half type on either side (9.7.9.21), and the packing form
/// `cvt.rnd{.relu}{.satfinite}.{f16x2,bf16x2}.f32 d, a, b`.
pub(super) fn cvt(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let frnd = cx.pick(Rounding::from_ptx)?;
    let irnd = cx.pick(IntRounding::from_ptx)?;
    let ftz = cx.flag("ftz");
    let sat = cx.flag("sat");
    let relu = cx.flag("relu");
    let satfinite = cx.flag("satfinite");
    if satfinite && cx.fb.module.version < (8, 1) {
        return err(
            cx.head,
            "`.satfinite` on cvt needs PTX ISA .version 8.1 or later",
        );
    }
    let tys = cx.types();
    let [(dty, dspan), (aty, aspan)] = tys[..] else {
        return err(cx.head, "cvt takes two types: cvt.dtype.atype");
    };
    if matches!(dty, F16x2 | BF16x2) {
        if aty != F32 {
            return err(aspan, format!("cvt to {dty} converts two .f32 values"));
        }
        let rnd = match (frnd, irnd) {
            (Some(r @ (Rounding::Rn | Rounding::Rz)), None) => r,
            _ => return err(cx.head, format!("cvt to {dty} rounds with .rn or .rz")),
        };
        cx.forbid(ftz, "ftz", "does not apply to this conversion")?;
        cx.forbid(sat, "sat", "does not apply to this conversion")?;
        cx.count(ops, 3)?;
        let op = HalfOp::CvtPair {
            dty,
            rnd,
            relu,
            satfinite,
        };
        return compute(cx, op, &ops[0], Operand::Sink, &ops[1..]);
    }
    for (t, s) in [(dty, dspan), (aty, aspan)] {
        if matches!(t.kind(), TypeKind::Pred | TypeKind::Bits) || matches!(t, F16x2 | BF16x2) {
            return err(s, format!("cvt does not support {t} here"));
        }
    }
    let rnd = convert::cvt_rounding(cx, frnd, irnd)?;
    // Which rounding the pair of types needs: a half from a wider or different format
    // or an integer rounds (.rn .rz .rm .rp); a half to an integer rounds to an integral
    // value; a half to its own type may round to an integral value; a widening takes none.
    let narrowing = dty.is_half() && aty != dty;
    let rnd_ok = match rnd {
        Some(CvtRounding::Float(_)) => narrowing,
        Some(CvtRounding::Int(_)) => !dty.is_float() || dty == aty,
        None => !narrowing && dty.is_float(),
    };
    if !rnd_ok {
        let want = if narrowing {
            "a rounding modifier (.rn .rz .rm .rp)"
        } else if !dty.is_float() {
            "an integer rounding (.rni .rzi .rmi .rpi)"
        } else if dty == aty {
            "no rounding or an integer rounding (.rni .rzi .rmi .rpi)"
        } else {
            "no rounding modifier"
        };
        return err(
            cx.head,
            format!("cvt.{}.{} takes {want}", dty.ptx(), aty.ptx()),
        );
    }
    let from_f32 = dty.is_half() && aty == F32;
    cx.forbid(
        ftz && !(aty == F32 || dty == F32),
        "ftz",
        "applies when the source or destination is .f32",
    )?;
    cx.forbid(
        relu && !from_f32,
        "relu",
        "applies to a half from .f32 only",
    )?;
    cx.forbid(
        satfinite && !from_f32,
        "satfinite",
        "applies to a half from .f32 only",
    )?;
    cx.forbid(sat && relu, "sat", "cannot be combined with .relu")?;
    cx.forbid(
        sat && (is_bf16(dty) || is_bf16(aty)),
        "sat",
        "does not apply to a cvt with .bf16 (as ptxas)",
    )?;
    let near_or_zero = matches!(rnd, Some(CvtRounding::Float(Rounding::Rn | Rounding::Rz)));
    if (relu || satfinite) && !near_or_zero {
        return err(
            cx.head,
            "`.relu` and `.satfinite` round with .rn or .rz only (as ptxas)",
        );
    }
    let f32_pair = matches!((dty, aty), (BF16, F32) | (F32, BF16));
    if (is_bf16(dty) || is_bf16(aty)) && !f32_pair {
        needs_sm(cx, 90, &format!("cvt with .{}.{}", dty.ptx(), aty.ptx()))?;
    }
    // As ptxas 12.9: a .bf16 converts to and from 16-bit integers in 16-bit registers only,
    // and not at all to or from 8-bit ones ("Arguments mismatch").
    let int_side = if is_bf16(aty) { dty } else { aty };
    let bf16_narrow_int =
        (is_bf16(dty) || is_bf16(aty)) && int_side.is_int() && int_side.bits() < 32;
    if bf16_narrow_int && int_side.bits() == 8 {
        return err(
            cx.head,
            format!("cvt between .bf16 and .{} is not PTX", int_side.ptx()),
        );
    }
    cx.count(ops, 2)?;
    let op = HalfOp::Cvt {
        dty,
        aty,
        rnd,
        ftz,
        sat,
        relu,
        satfinite,
    };
    let fit = if bf16_narrow_int {
        Fit::Exact
    } else {
        Fit::Wider
    };
    compute_fit(cx, op, fit, &ops[0], Operand::Sink, &ops[1..])
}
