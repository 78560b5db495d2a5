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
    // As ptxas: a function is called after its declaration (a prototype will do).
    if cx.fb.mb.headers[func.0 as usize].declared_at > fop.span.start {
        return err(
            fop.span,
            format!(
                "`{}` is called before it is declared; declare it (a prototype will do) above",
                callee.name
            ),
        );
    }
    let header = &cx.fb.mb.headers[func.0 as usize];
    // The callee's header did not parse: that error is reported; its parameters are unknown.
    if header.broken {
        return Ok(Inst::Call {
            uni,
            func,
            rets: Vec::new(),
            args: Vec::new(),
        });
    }
    // One operand per declared parameter; a vector register parameter (`.reg .v2 .u32 q`)
    // is `widths[i]` entries of `params`, and takes a whole vector register.
    let check = |list: &[Opnd], params: &[Param], widths: &[u8], what: &str| -> R<Vec<Operand>> {
        if list.len() != widths.len() {
            return err(
                fop.span,
                format!(
                    "`{}` takes {} {what}, the call passes {}",
                    callee.name,
                    widths.len(),
                    list.len()
                ),
            );
        }
        let mut out = Vec::new();
        let mut at = 0;
        for (i, (o, &width)) in list.iter().zip(widths).enumerate() {
            let p = &params[at];
            at += width as usize;
            if width > 1 {
                let ty = callee.param_type(p);
                let name = callee.param_name(p);
                let name = name.strip_suffix(".x").unwrap_or(name);
                // ptxas: a vector register of as many elements, each as wide as the
                // parameter's (of any kind).
                let parts = match o.raw {
                    Raw::VecReg { len, .. } if len == width => cx.vector_parts(o).unwrap(),
                    _ => {
                        return err(
                            o.span,
                            format!(
                                "`{name}` is a .v{width} {ty} register: pass a .v{width} vector register"
                            ),
                        );
                    }
                };
                for part in parts {
                    if let Operand::Reg(r) = part
                        && cx.reg_ty(r).bits() != ty.bits()
                    {
                        return err(
                            o.span,
                            format!(
                                "`{}` has type {}, which does not fit the {ty} elements of `{name}`",
                                cx.func.reg(r).name,
                                cx.reg_ty(r)
                            ),
                        );
                    }
                    out.push(part);
                }
                continue;
            }
            if what == "arguments" && cx.fb.mb.headers[func.0 as usize].vector_arrays[i] {
                // ptxas: "Type of argument does not match formal parameter", whatever the
                // argument.
                return err(
                    o.span,
                    format!(
                        "`{}` is a .param array of vectors, which ptxas takes no argument for",
                        callee.param_name(p)
                    ),
                );
            }
            // ptxas reads no `%v.x` in a call (a syntax error): element registers alone
            // have a `.` in their names.
            if let Raw::Op(Operand::Reg(r)) = o.raw
                && cx.func.reg(r).name.contains('.')
            {
                return err(
                    o.span,
                    format!(
                        "a vector element (`{}`) cannot be a call operand",
                        cx.func.reg(r).name
                    ),
                );
            }
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
    let rets = check(&rets, &callee.rets, &header.rets, "return values")?;
    let args = check(&args, &callee.params, &header.params, "arguments")?;
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
