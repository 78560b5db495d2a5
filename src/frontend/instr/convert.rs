//! `cvt` (PTX ISA 9.7.9.21) and the comparison and selection instructions `setp selp slct`
//! (9.7.7.1–4).

use super::float::float_ftz_sat;
use super::{Cx, Fit, Opnd, R, Raw, err};
use crate::ast::*;
use crate::frontend::Diagnostic;

pub(super) fn setp(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let cmp = cx
        .pick(CmpOp::from_ptx)?
        .ok_or_else(|| Diagnostic::new(cx.head, "setp needs a comparison (.eq, .lt, ...)"))?;
    let combine = cx.pick(BoolOp::from_ptx)?;
    let ty = cx.one_type(&[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    let (ftz, _) = float_ftz_sat(cx, ty, false)?;
    cx.forbid(
        ftz && !ty.is_float(),
        "ftz",
        "applies to float comparisons only",
    )?;
    if !cmp.applies_to(ty) {
        return err(cx.head, format!("comparison {cmp} does not apply to {ty}"));
    }
    let n = if combine.is_some() { 4 } else { 3 };
    cx.count(ops, n)?;
    let (p, q) = match &ops[0].raw {
        Raw::PredPair(p, q) => {
            for r in [p, q] {
                cx.reg_of(
                    &Opnd {
                        raw: Raw::Op(Operand::Reg(*r)),
                        span: ops[0].span,
                    },
                    Pred,
                    Fit::Exact,
                )?;
            }
            (Operand::Reg(*p), Operand::Reg(*q))
        }
        _ => (cx.dst(&ops[0], Pred)?, Operand::Sink),
    };
    Ok(Inst::Setp {
        cmp,
        combine,
        ftz,
        ty,
        p,
        q,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: if n == 4 {
            Some(cx.src(&ops[3], Pred)?)
        } else {
            None
        },
    })
}

pub(super) fn selp(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ty = cx.one_type(&[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    cx.count(ops, 4)?;
    Ok(Inst::Selp {
        ty,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], Pred)?,
    })
}

pub(super) fn slct(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ftz = cx.flag("ftz");
    let tys = cx.types();
    let [(ty, tspan), (cty, cspan)] = tys[..] else {
        return err(
            cx.head,
            "slct takes two types: slct.dtype.s32 or slct.dtype.f32",
        );
    };
    if !matches!(
        ty,
        B16 | B32 | B64 | U16 | U32 | U64 | S16 | S32 | S64 | F32 | F64
    ) {
        return err(tspan, format!("slct does not take type {ty}"));
    }
    if !matches!(cty, S32 | F32) {
        return err(cspan, "the comparison operand of slct is .s32 or .f32");
    }
    cx.forbid(
        ftz && cty != F32,
        "ftz",
        "applies to slct with an .f32 operand only",
    )?;
    cx.count(ops, 4)?;
    Ok(Inst::Slct {
        ty,
        cty,
        ftz,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], cty)?,
    })
}

/// `cvt`'s one rounding modifier, float (`.rn` …) or integer (`.rni` …), if any.
pub(super) fn cvt_rounding(
    cx: &Cx,
    frnd: Option<Rounding>,
    irnd: Option<IntRounding>,
) -> R<Option<CvtRounding>> {
    match (frnd, irnd) {
        (Some(_), Some(_)) => err(cx.head, "cvt takes one rounding modifier"),
        (Some(r), None) => Ok(Some(CvtRounding::Float(r))),
        (None, Some(r)) => Ok(Some(CvtRounding::Int(r))),
        (None, None) => Ok(None),
    }
}

/// `cvt` (PTX ISA 9.7.9.21): which rounding a conversion needs or allows.
pub(super) fn cvt(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let frnd = cx.pick(Rounding::from_ptx)?;
    let irnd = cx.pick(IntRounding::from_ptx)?;
    let ftz = cx.flag("ftz");
    let sat = cx.flag("sat");
    let tys = cx.types();
    let [(dty, dspan), (aty, aspan)] = tys[..] else {
        return err(cx.head, "cvt takes two types: cvt.dtype.atype");
    };
    for (t, s) in [(dty, dspan), (aty, aspan)] {
        if matches!(t.kind(), TypeKind::Pred | TypeKind::Bits) || t.is_half() {
            return err(s, format!("cvt does not support {t} here"));
        }
    }
    let rnd = cvt_rounding(cx, frnd, irnd)?;
    let (df, af) = (dty.is_float(), aty.is_float());
    match (af, df, rnd) {
        (false, false, Some(_)) => {
            return err(cx.head, "integer-to-integer cvt takes no rounding modifier");
        }
        (true, false, None) => {
            return err(
                cx.head,
                "float-to-integer cvt needs an integer rounding (.rni .rzi .rmi .rpi)",
            );
        }
        (true, false, Some(CvtRounding::Float(_))) => {
            return err(
                cx.head,
                "float-to-integer cvt takes an integer rounding (.rni .rzi .rmi .rpi)",
            );
        }
        (false, true, None) => {
            return err(
                cx.head,
                "integer-to-float cvt needs a rounding modifier (.rn .rz .rm .rp)",
            );
        }
        (false, true, Some(CvtRounding::Int(_))) => {
            return err(
                cx.head,
                "integer-to-float cvt takes a float rounding (.rn .rz .rm .rp)",
            );
        }
        (true, true, r) => {
            let narrowing = dty.bits() < aty.bits();
            let same = dty == aty;
            match r {
                None if narrowing => {
                    return err(cx.head, "narrowing float cvt needs a rounding modifier");
                }
                Some(CvtRounding::Float(_)) if !narrowing => {
                    return err(
                        cx.head,
                        "a float rounding applies to narrowing float cvt only",
                    );
                }
                Some(CvtRounding::Int(_)) if !same => {
                    return err(
                        cx.head,
                        "an integer rounding between floats needs the same type (e.g. cvt.rni.f32.f32)",
                    );
                }
                _ => {}
            }
        }
        _ => {}
    }
    cx.forbid(
        ftz && !(dty == F32 || aty == F32),
        "ftz",
        "applies when a side is .f32",
    )?;
    cx.count(ops, 2)?;
    Ok(Inst::Cvt {
        dty,
        aty,
        rnd,
        ftz,
        sat,
        d: cx.dst_fit(&ops[0], dty, Fit::Wider)?,
        a: cx.src_fit(&ops[1], aty, Fit::Wider)?,
    })
}
