//! Control flow (PTX ISA, Control Flow Instructions): `bra`, `call` (its argument and return
//! lists against the callee's parameters), `ret` and `exit`.

use super::{Cx, Opnd, R, Raw, err};
use crate::ast::*;
use crate::frontend::Diagnostic;

pub(super) fn bra(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let uni = cx.flag("uni");
    cx.count(ops, 1)?;
    match ops[0].raw {
        Raw::Label(target) => Ok(Inst::Bra { uni, target }),
        _ => err(ops[0].span, "bra needs a label"),
    }
}

/// `call{.uni} (rets), func, (args)`: the argument and return lists must match the callee's
/// parameters in number and size.
pub(super) fn call(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let uni = cx.flag("uni");
    let mut it = ops.iter().peekable();
    let rets = match it.peek() {
        Some(Opnd {
            raw: Raw::List(l), ..
        }) => {
            let l = l.clone();
            it.next();
            l
        }
        _ => Vec::new(),
    };
    let fop = it
        .next()
        .ok_or_else(|| Diagnostic::new(cx.head, "call needs a function"))?;
    let Raw::Func(func) = fop.raw else {
        return err(fop.span, "call needs a function name");
    };
    let args = match it.next() {
        Some(Opnd {
            raw: Raw::List(l), ..
        }) => l.clone(),
        Some(o) => return err(o.span, "call arguments go in parentheses"),
        None => Vec::new(),
    };
    if let Some(o) = it.next() {
        return err(o.span, "unexpected operand after the call's arguments");
    }
    let callee = cx.fb.module.func(func);
    if callee.kind == FuncKind::Entry {
        return err(fop.span, "a kernel (.entry) cannot be called");
    }
    let check = |list: &[Opnd], params: &[Param], what: &str| -> R<Vec<Operand>> {
        if list.len() != params.len() {
            return err(
                fop.span,
                format!(
                    "`{}` takes {} {what}, the call passes {}",
                    callee.name,
                    params.len(),
                    list.len()
                ),
            );
        }
        let mut out = Vec::new();
        for (o, p) in list.iter().zip(params) {
            let size = callee.param_size(p);
            match &o.raw {
                Raw::Op(Operand::Var(v @ VarId::Function(i))) => {
                    let var = cx.func.var(*i);
                    if var.space != Space::Param || var.size != size {
                        return err(
                            o.span,
                            format!(
                                "`{}` must be a .param of {size} bytes to match `{}`",
                                var.name,
                                callee.param_name(p)
                            ),
                        );
                    }
                    out.push(Operand::Var(*v));
                }
                _ => {
                    let ty = callee.param_type(p);
                    if size != ty.bytes() {
                        return err(
                            o.span,
                            format!(
                                "`{}` is an array; pass a .param variable",
                                callee.param_name(p)
                            ),
                        );
                    }
                    out.push(if what == "return values" {
                        cx.dst(o, ty)?
                    } else {
                        cx.src(o, ty)?
                    });
                }
            }
        }
        Ok(out)
    };
    let rets = check(&rets, &callee.rets, "return values")?;
    let args = check(&args, &callee.params, "arguments")?;
    Ok(Inst::Call {
        uni,
        func,
        rets,
        args,
    })
}

/// `ret` and `exit`.
pub(super) fn ret_exit(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    cx.flag("uni");
    cx.count(ops, 0)?;
    Ok(if cx.opcode == "ret" {
        Inst::Ret
    } else {
        Inst::Exit
    })
}
