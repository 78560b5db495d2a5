//! Data movement (PTX ISA 9.7.9): `mov` (vector packing and unpacking, special registers,
//! variable addresses), `ld` and `st` (memory order and scope, cache operators, vectors, the
//! state space of the variable they name) and `cvta`.

use super::{Cx, Fit, Opnd, R, Raw, err};
use crate::ast::*;

pub(super) fn mov(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ty = cx.one_type(&[Pred, B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    cx.count(ops, 2)?;
    let (d, a) = (&ops[0], &ops[1]);
    // Packing and unpacking: mov.b64 {lo, hi}, %rd  /  mov.b64 %rd, {lo, hi}.
    let vec_len = |o: &Opnd| match &o.raw {
        Raw::Op(Operand::Vector(v)) => Some(v.len()),
        _ => None,
    };
    if let Some(n) = vec_len(d).or(vec_len(a)) {
        if ty.kind() != TypeKind::Bits || !(n == 2 || (n == 4 && ty.bits() >= 32)) {
            return err(
                cx.head,
                "vector mov needs a bit-size type and 2 or 4 elements",
            );
        }
        let elem = match ty.bits() / n as u32 {
            8 => B8,
            16 => B16,
            32 => B32,
            _ => return err(cx.head, "vector elements must be 8, 16 or 32 bits"),
        };
        return if vec_len(d).is_some() {
            Ok(Inst::Mov {
                ty,
                d: cx.vector(d, n, elem, Fit::Exact, true)?,
                a: cx.src(a, ty)?,
            })
        } else {
            Ok(Inst::Mov {
                ty,
                d: cx.dst(d, ty)?,
                a: cx.vector(a, n, elem, Fit::Exact, false)?,
            })
        };
    }
    let d = cx.dst(d, ty)?;
    let a = match &a.raw {
        Raw::Op(Operand::Special(s)) => {
            let bits = s.kind.bits();
            if !(ty.is_int() && ty.bits() == bits) {
                return err(
                    a.span,
                    format!(
                        "special register `%{}` is {bits}-bit; use mov.u{bits}",
                        s.kind.ptx()
                    ),
                );
            }
            Operand::Special(*s)
        }
        _ if let Some(addr) = cx.var_address(a) => {
            let (Operand::Var(v) | Operand::VarPlus(v, _)) = addr else {
                unreachable!("var_address gives a variable's address")
            };
            // A shared variable's address is an offset in the block's window: 32 bits hold it.
            let shared = cx.var_decl(v).space == Space::Shared;
            if !(ty.is_int() && (ty.bits() == 64 || (shared && ty.bits() == 32))) {
                return err(
                    a.span,
                    "taking a variable's address needs a 64-bit integer type (or 32-bit for .shared)",
                );
            }
            addr
        }
        _ => cx.src(a, ty)?,
    };
    Ok(Inst::Mov { ty, d, a })
}

pub(super) fn ld_st(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    // `ldu` (load uniform) is a load from global memory: on a CPU every load is one.
    let is_ld = cx.opcode != "st";
    let order = cx.pick(MemOrder::from_ptx)?.unwrap_or(MemOrder::Weak);
    let scoped = ["cta", "cluster", "gpu", "sys"]
        .iter()
        .fold(false, |any, s| cx.flag(s) | any);
    match order {
        MemOrder::Acquire if !is_ld => return err(cx.head, "a store cannot be .acquire"),
        MemOrder::Release if is_ld => return err(cx.head, "a load cannot be .release"),
        MemOrder::Relaxed | MemOrder::Acquire | MemOrder::Release if !scoped => {
            return err(
                cx.head,
                format!(
                    "`{}` with a memory order needs a scope: .cta, .gpu or .sys",
                    cx.opcode
                ),
            );
        }
        MemOrder::Weak | MemOrder::Volatile if scoped => {
            return err(cx.head, "a scope goes with .relaxed, .acquire or .release");
        }
        _ => {}
    }
    // Cache operators and .nc change nothing on a CPU.
    for c in ["ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc"] {
        cx.flag(c);
    }
    let space = cx.pick(Space::from_ptx)?;
    let vec = cx
        .pick(|m| match m {
            "v2" => Some(2u8),
            "v4" => Some(4u8),
            _ => None,
        })?
        .unwrap_or(1);
    let ty = cx.one_type(&[
        B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F32, F64,
    ])?;
    if vec == 4 && ty.bits() == 64 {
        return err(cx.head, ".v4 of 64-bit elements is not a PTX form");
    }
    match space {
        Some(Space::Global) | None => {}
        _ if cx.opcode == "ldu" => return err(cx.head, "`ldu` reads global memory only"),
        _ => {}
    }
    if let Some(s @ (Space::Param | Space::Local | Space::Const)) = space
        && order != MemOrder::Weak
    {
        return err(cx.head, format!("`{order}` cannot be applied to {s} space"));
    }
    match space {
        Some(Space::Reg) => return err(cx.head, "`.reg` is not a memory space"),
        Some(Space::Const) if !is_ld => return err(cx.head, "constant memory is read-only"),
        _ => {}
    }
    cx.count(ops, 2)?;
    let (val, addr) = if is_ld {
        (&ops[0], &ops[1])
    } else {
        (&ops[1], &ops[0])
    };
    let addr = cx.address(addr)?;
    if let AddrBase::Var(v) = addr.base {
        let decl = cx.var_decl(v);
        if let Some(s) = space
            && s != decl.space
        {
            return err(
                cx.head,
                format!("`{}` is in {} space, not {s}", decl.name, decl.space),
            );
        }
        if !is_ld && matches!(decl.role, VarRole::Param(_)) && cx.func.kind == FuncKind::Entry {
            return err(cx.head, "kernel parameters are read-only");
        }
    }
    let val = if vec > 1 {
        cx.vector(val, vec as usize, ty, Fit::Memory, is_ld)?
    } else if is_ld {
        cx.dst_fit(val, ty, Fit::Memory)?
    } else {
        cx.src_fit(val, ty, Fit::Memory)?
    };
    Ok(if is_ld {
        Inst::Ld {
            space,
            order,
            vec,
            ty,
            d: val,
            addr,
        }
    } else {
        Inst::St {
            space,
            order,
            vec,
            ty,
            addr,
            a: val,
        }
    })
}

pub(super) fn cvta(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let dir = if cx.flag("to") {
        CvtaDir::ToSpace
    } else {
        CvtaDir::ToGeneric
    };
    let space = match cx.pick(Space::from_ptx)? {
        Some(s @ (Space::Global | Space::Local | Space::Shared | Space::Const | Space::Param)) => s,
        Some(s) => return err(cx.head, format!("cvta does not support {s}")),
        None => return err(cx.head, "cvta needs a state space"),
    };
    let ty = cx.one_type(&[Type::U32, Type::U64])?;
    cx.count(ops, 2)?;
    let d = cx.dst(&ops[0], ty)?;
    let a = match cx.var_address(&ops[1]) {
        Some(addr) => addr,
        None => cx.src(&ops[1], ty)?,
    };
    Ok(Inst::Cvta {
        dir,
        space,
        ty,
        d,
        a,
    })
}
