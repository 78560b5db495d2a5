//! Integer arithmetic (PTX ISA 9.7.1), extended-precision arithmetic (9.7.2), logic and shift
//! (9.7.8) and bit manipulation: `add sub addc subc min max div rem and or xor shl shr`, `neg
//! abs not cnot popc clz brev`, `mul mad madc`, `shf bfe bfi prmt`.

use super::{Cx, Opnd, R, err};
use crate::ast::*;
use crate::frontend::Diagnostic;

const INT_TYPES: &[Type] = &[
    Type::U16,
    Type::U32,
    Type::U64,
    Type::S16,
    Type::S32,
    Type::S64,
];

const BIT_TYPES: &[Type] = &[Type::B16, Type::B32, Type::B64];
const CARRY_TYPES: &[Type] = &[Type::U32, Type::S32, Type::U64, Type::S64];

pub(super) fn int_bin(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let (op, carry_in) = match cx.opcode {
        "addc" => (IntBinOp::Add, true),
        "subc" => (IntBinOp::Sub, true),
        o => (IntBinOp::from_ptx(o).expect("dispatched by opcode"), false),
    };
    let carry_out = cx.flag("cc");
    let sat = cx.flag("sat");
    let allowed: &[Type] = match op {
        IntBinOp::And | IntBinOp::Or | IntBinOp::Xor => &[Pred, B16, B32, B64],
        IntBinOp::Shl => BIT_TYPES,
        IntBinOp::Shr => &[B16, B32, B64, U16, U32, U64, S16, S32, S64],
        _ if carry_in || carry_out => CARRY_TYPES,
        _ => INT_TYPES,
    };
    let ty = cx.one_type(allowed)?;
    let arith = matches!(op, IntBinOp::Add | IntBinOp::Sub);
    cx.forbid(carry_out && !arith, "cc", "applies to add and sub only")?;
    cx.forbid(
        sat && !(arith && ty == S32),
        "sat",
        "applies to add.s32 and sub.s32 only",
    )?;
    cx.forbid(
        sat && (carry_in || carry_out),
        "sat",
        "cannot be combined with a carry",
    )?;
    cx.count(ops, 3)?;
    let bty = op.b_type(ty);
    Ok(Inst::IntBin {
        op,
        ty,
        sat,
        carry: Carry {
            carry_in,
            carry_out,
        },
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], bty)?,
    })
}

pub(super) fn int_un(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let op = IntUnOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let allowed: &[Type] = match op {
        IntUnOp::Neg | IntUnOp::Abs => &[S16, S32, S64],
        IntUnOp::Not => &[Pred, B16, B32, B64],
        IntUnOp::Cnot => BIT_TYPES,
        IntUnOp::Popc | IntUnOp::Clz | IntUnOp::Brev => &[B32, B64],
    };
    let ty = cx.one_type(allowed)?;
    cx.count(ops, 2)?;
    let dty = op.result_type(ty);
    Ok(Inst::IntUn {
        op,
        ty,
        d: cx.dst(&ops[0], dty)?,
        a: cx.src(&ops[1], ty)?,
    })
}

fn mul_mode(cx: &mut Cx, ty: Type) -> R<MulMode> {
    let mode = cx.pick(MulMode::from_ptx)?;
    if let Some(m) = mode {
        cx.mode_first(m.ptx())?;
    }
    match mode {
        None => err(
            cx.head,
            format!("`{}` on integers needs .lo, .hi or .wide", cx.opcode),
        ),
        Some(MulMode::Wide) if ty.bits() == 64 => {
            err(cx.head, ".wide applies to 16- and 32-bit types only")
        }
        Some(m) => Ok(m),
    }
}

pub(super) fn mul(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let ty = cx.one_type(INT_TYPES)?;
    let mode = mul_mode(cx, ty)?;
    cx.count(ops, 3)?;
    let dty = mode.result_type(ty);
    Ok(Inst::Mul {
        mode,
        ty,
        d: cx.dst(&ops[0], dty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
    })
}

pub(super) fn mad(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let carry_in = cx.opcode == "madc";
    let carry_out = cx.flag("cc");
    let sat = cx.flag("sat");
    let ty = cx.one_type(if carry_in || carry_out {
        CARRY_TYPES
    } else {
        INT_TYPES
    })?;
    let mode = mul_mode(cx, ty)?;
    cx.forbid(
        sat && !(mode == MulMode::Hi && ty == Type::S32),
        "sat",
        "applies to mad.hi.s32 only",
    )?;
    cx.forbid(sat && carry_out, "sat", "cannot be combined with .cc")?;
    if (carry_in || carry_out) && mode == MulMode::Wide {
        return err(cx.head, "the carry forms of mad take .lo or .hi");
    }
    cx.count(ops, 4)?;
    let dty = mode.result_type(ty);
    Ok(Inst::Mad {
        mode,
        ty,
        sat,
        carry: Carry {
            carry_in,
            carry_out,
        },
        d: cx.dst(&ops[0], dty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], dty)?,
    })
}

pub(super) fn shf(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let dir = cx
        .pick(ShfDir::from_ptx)?
        .ok_or_else(|| Diagnostic::new(cx.head, "shf needs .l or .r"))?;
    let mode = cx
        .pick(ShfMode::from_ptx)?
        .ok_or_else(|| Diagnostic::new(cx.head, "shf needs .wrap or .clamp"))?;
    let ty = cx.one_type(&[Type::B32])?;
    cx.count(ops, 4)?;
    Ok(Inst::Shf {
        dir,
        mode,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], Type::U32)?,
    })
}

pub(super) fn bitfield(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    if cx.opcode == "bfe" {
        let ty = cx.one_type(&[U32, U64, S32, S64])?;
        cx.count(ops, 4)?;
        Ok(Inst::Bfe {
            ty,
            d: cx.dst(&ops[0], ty)?,
            a: cx.src(&ops[1], ty)?,
            pos: cx.src(&ops[2], U32)?,
            len: cx.src(&ops[3], U32)?,
        })
    } else {
        let ty = cx.one_type(&[B32, B64])?;
        cx.count(ops, 5)?;
        Ok(Inst::Bfi {
            ty,
            d: cx.dst(&ops[0], ty)?,
            a: cx.src(&ops[1], ty)?,
            b: cx.src(&ops[2], ty)?,
            pos: cx.src(&ops[3], U32)?,
            len: cx.src(&ops[4], U32)?,
        })
    }
}

pub(super) fn prmt(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let mode = cx.pick(PrmtMode::from_ptx)?;
    let ty = cx.one_type(&[Type::B32])?;
    cx.count(ops, 4)?;
    Ok(Inst::Prmt {
        mode,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], ty)?,
    })
}
