//! Floating-point instructions (PTX ISA 9.7.3): `add sub mul div min max`, `neg abs` and the
//! unary functions, `fma` and float `mad`, with their rounding, `.approx`/`.full`, `.ftz` and
//! `.sat` rules.

use super::{Cx, Opnd, R, err};
use crate::ast::*;

const FLOAT_TYPES: &[Type] = &[Type::F32, Type::F64];

pub(super) fn float_ftz_sat(cx: &mut Cx, ty: Type, sat_ok: bool) -> R<(bool, bool)> {
    let ftz = cx.flag("ftz");
    let sat = sat_ok && cx.flag("sat");
    cx.forbid(ftz && ty == Type::F64, "ftz", "applies to .f32 only")?;
    cx.forbid(sat && ty == Type::F64, "sat", "applies to .f32 only")?;
    Ok((ftz, sat))
}

pub(super) fn float_bin(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let op = FloatBinOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let ty = cx.one_type(FLOAT_TYPES)?;
    let rnd = cx.pick(Rounding::from_ptx)?;
    let approx = cx.flag("approx");
    let full = cx.flag("full");
    let minmax = matches!(op, FloatBinOp::Min | FloatBinOp::Max);
    // ptxas takes no `.sat` on `div` ("Illegal modifier").
    let sat_ok = !minmax && op != FloatBinOp::Div;
    let (ftz, sat) = float_ftz_sat(cx, ty, sat_ok)?;
    let prec = match (op, rnd, approx, full) {
        (_, Some(r), false, false) if !minmax => Precision::Ieee(r),
        (FloatBinOp::Div, None, true, false) if ty == Type::F32 => Precision::Approx,
        (FloatBinOp::Div, None, false, true) if ty == Type::F32 => Precision::Full,
        (FloatBinOp::Div, None, false, false) => {
            return err(
                cx.head,
                "div on floats needs .approx, .full or a rounding modifier (.rn .rz .rm .rp)",
            );
        }
        (_, None, false, false) if minmax => Precision::Ieee(Rounding::Rn),
        // add/sub/mul without rounding: round to nearest, which PTX allows to be fused into
        // fma by ptxas; we never fuse, so the result is the .rn one.
        (_, None, false, false) => Precision::Ieee(Rounding::Rn),
        _ => {
            return err(
                cx.head,
                format!("invalid precision modifiers on `{}`", cx.opcode),
            );
        }
    };
    cx.count(ops, 3)?;
    Ok(Inst::FloatBin {
        op,
        ty,
        prec,
        ftz,
        sat,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
    })
}

pub(super) fn float_un(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let op = FloatUnOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let ty = cx.one_type(FLOAT_TYPES)?;
    let rnd = cx.pick(Rounding::from_ptx)?;
    let approx = cx.flag("approx");
    let f64_approx_ok = matches!(op, FloatUnOp::Rcp | FloatUnOp::Rsqrt);
    // `.ftz` is for .f32, and for `rcp.approx.ftz.f64` and `rsqrt.approx{.ftz}.f64`.
    let ftz = cx.flag("ftz");
    let f64_ftz_ok = f64_approx_ok && approx;
    cx.forbid(
        ftz && ty == Type::F64 && !f64_ftz_ok,
        "ftz",
        "applies to .f32 only",
    )?;
    let prec = match op {
        FloatUnOp::Neg | FloatUnOp::Abs => {
            if rnd.is_some() || approx {
                return err(cx.head, format!("`{}` takes no rounding", cx.opcode));
            }
            Precision::Ieee(Rounding::Rn)
        }
        FloatUnOp::Sqrt | FloatUnOp::Rcp => match (rnd, approx) {
            (Some(r), false) => Precision::Ieee(r),
            (None, true) if ty == Type::F32 || f64_approx_ok => Precision::Approx,
            _ => {
                return err(
                    cx.head,
                    format!("`{}` needs .approx (f32) or a rounding modifier", cx.opcode),
                );
            }
        },
        _ => match (rnd, approx) {
            (None, true) if ty == Type::F32 || f64_approx_ok => Precision::Approx,
            _ => {
                return err(
                    cx.head,
                    format!(
                        "`{}` needs .approx{}",
                        cx.opcode,
                        if f64_approx_ok { "" } else { " and .f32" }
                    ),
                );
            }
        },
    };
    if op == FloatUnOp::Rcp && ty == Type::F64 && prec == Precision::Approx && !ftz {
        return err(cx.head, "`rcp.approx.f64` needs .ftz");
    }
    cx.count(ops, 2)?;
    Ok(Inst::FloatUn {
        op,
        ty,
        prec,
        ftz,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
    })
}

/// `fma` and float `mad` (PTX ISA 9.7.3.6, 9.7.3.7).
pub(super) fn fma(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let ty = cx.one_type(FLOAT_TYPES)?;
    let rnd = cx.pick(Rounding::from_ptx)?;
    let (mut ftz, sat) = float_ftz_sat(cx, ty, true)?;
    let version = cx.fb.module.version;
    let sm1x = cx.fb.module.sm_version().is_some_and(|v| v < 20);
    let rnd = match rnd {
        Some(r) => r,
        None if cx.opcode == "fma" => {
            return err(cx.head, "fma needs a rounding modifier (.rn .rz .rm .rp)");
        }
        // mad.f64 without rounding: .rn before PTX ISA 1.4, an error after.
        None if ty == Type::F64 && version < (1, 4) => Rounding::Rn,
        None if ty == Type::F64 => {
            return err(cx.head, "mad.f64 needs a rounding modifier (PTX ISA 1.4+)");
        }
        // mad.f32 without rounding on sm_1x targets is what sm_20+ hardware runs: fma.rn.ftz.
        None if sm1x => {
            ftz = true;
            Rounding::Rn
        }
        None if version <= (3, 1) => Rounding::Rn,
        None => {
            return err(
                cx.head,
                "mad.f32 needs a rounding modifier (PTX ISA 3.2+ on sm_20+)",
            );
        }
    };
    cx.count(ops, 4)?;
    Ok(Inst::Fma {
        ty,
        rnd,
        ftz,
        sat,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], ty)?,
    })
}
