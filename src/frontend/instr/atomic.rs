//! `atom`, `red`, `fence` and `membar` (PTX ISA, Parallel Synchronization and Communication
//! Instructions).

use super::{Cx, Opnd, R, err};
use crate::ast::*;

/// `atom{.sem}{.scope}{.space}.op.type d, [a], b{, c}` and `red{.sem}{.scope}{.space}.op.type
/// [a], b` (PTX ISA, Parallel Synchronization and Communication Instructions). Every
/// atomic is sequentially consistent here, which is at least what any `.sem`/`.scope` asks.
pub(super) fn atom(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let is_red = cx.opcode == "red";
    for m in [
        "relaxed", "acquire", "release", "acq_rel", "cta", "gpu", "sys", "cluster",
    ] {
        cx.flag(m);
    }
    let space = cx.pick(super::space_modifier)?;
    match space {
        None | Some(Space::Global | Space::Shared) => {}
        Some(s) => return err(cx.head, format!("`{}` does not take {s}", cx.opcode)),
    }
    let Some(op) = cx.pick(AtomOp::from_ptx)? else {
        return err(
            cx.head,
            format!(
                "`{}` needs an operation: .and .or .xor .add .inc .dec .min .max{}",
                cx.opcode,
                if is_red { "" } else { " .exch .cas" }
            ),
        );
    };
    if is_red && matches!(op, AtomOp::Exch | AtomOp::Cas) {
        return err(cx.head, "`red` has no .exch or .cas; use `atom`");
    }
    let noftz = cx.flag("noftz");
    let allowed: &[Type] = match op {
        AtomOp::Cas => &[B16, B32, B64],
        AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch => &[B32, B64],
        AtomOp::Add => &[U32, S32, U64, F32, F64, F16, F16x2, BF16, BF16x2],
        AtomOp::Inc | AtomOp::Dec => &[U32],
        AtomOp::Min | AtomOp::Max => &[U32, S32, U64, S64],
    };
    let ty = cx.one_type(allowed)?;
    // Half-precision add (sm_70 .f16, sm_60 .f16x2, sm_90 .bf16 .bf16x2) keeps subnormals
    // and says so (ptxas requires .noftz).
    if ty.is_half() != noftz {
        return err(
            cx.head,
            if noftz {
                format!(
                    "`.noftz` applies to half-precision `{}.add` only",
                    cx.opcode
                )
            } else {
                format!("`{}.add` on {ty} needs .noftz", cx.opcode)
            },
        );
    }
    if ty.element() == BF16
        && let Some(v) = cx.fb.module.sm_version()
        && v < 90
    {
        return err(
            cx.head,
            format!(
                "`{}.add.noftz{ty}` requires .target sm_90 or higher",
                cx.opcode
            ),
        );
    }
    let with_d = !is_red as usize;
    let with_c = (op == AtomOp::Cas) as usize;
    cx.count(ops, with_d + 2 + with_c)?;
    let d = if is_red {
        Operand::Sink
    } else {
        cx.dst(&ops[0], ty)?
    };
    let addr = cx.address(&ops[with_d])?;
    if let AddrBase::Var(v) = addr.base {
        let decl = cx.var_decl(v);
        if !matches!(decl.space, Space::Global | Space::Shared)
            || space.is_some_and(|s| s != decl.space)
        {
            return err(
                ops[with_d].span,
                format!(
                    "`{}` is in {} space; `{}` works on global and shared memory",
                    decl.name, decl.space, cx.opcode
                ),
            );
        }
    }
    let b = cx.src(&ops[with_d + 1], ty)?;
    let c = if with_c == 1 {
        Some(cx.src(&ops[with_d + 2], ty)?)
    } else {
        None
    };
    Ok(Inst::Atom {
        op,
        space,
        ty,
        d,
        addr,
        b,
        c,
    })
}

/// `fence{.sc,.acq_rel}{.cta,.cluster,.gpu,.sys}` and `membar{.cta,.gl,.sys}`: every one is
/// the strongest fence here. The proxy forms (`fence.proxy.*`, `.mbarrier_init`) name memory
/// this project does not have and are refused.
pub(super) fn fence(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let levels: &[&str] = if cx.opcode == "membar" {
        &["cta", "gl", "sys"]
    } else {
        &["sc", "acq_rel", "cta", "cluster", "gpu", "sys"]
    };
    let mut named = false;
    for m in levels {
        named |= cx.flag(m);
    }
    if cx.opcode == "membar" && !named {
        return err(cx.head, "`membar` needs a level: .cta, .gl or .sys");
    }
    cx.count(ops, 0)?;
    Ok(Inst::Fence)
}
