//! `ld`, `st` (PTX ISA 9.7.9.8–9): addresses, checked accesses, vectors.
//!
//! In checked mode an access goes through `rt_check` unless it is known safe when compiled:
//! a variable's address plus a constant offset that stays inside the variable, aligned,
//! in the right space and (for stores) writable.

use super::{Lower, clif, flags};
use crate::ast::{AddrBase, Address, Inst, Operand, Space, VarId, VarRole};
use crate::jit::runtime::access_desc;
use cranelift_codegen::ir::{InstBuilder, Value, types};

impl Lower<'_, '_> {
    pub(super) fn memory(&mut self, inst: &Inst) {
        match inst {
            Inst::Ld {
                space,
                vec,
                ty,
                d,
                addr,
                ..
            } => {
                let n = ty.bytes();
                let at = self.access(addr, n * *vec as usize, *space, false);
                match d {
                    Operand::Vector(regs) => {
                        for (k, reg) in regs.iter().enumerate() {
                            let v = self.b.ins().load(clif(*ty), flags(), at, (k * n) as i32);
                            if let Some(reg) = reg {
                                self.set_reg(*reg, *ty, v);
                            }
                        }
                    }
                    _ => {
                        let v = self.b.ins().load(clif(*ty), flags(), at, 0);
                        self.set(d, *ty, v);
                    }
                }
            }
            Inst::St {
                space,
                vec,
                ty,
                addr,
                a,
                ..
            } => {
                let n = ty.bytes();
                let values: Vec<Value> = match a {
                    Operand::Vector(regs) => regs
                        .iter()
                        .map(|r| {
                            let r = r.expect("validated: no sink in a store");
                            self.get(&Operand::Reg(r), *ty)
                        })
                        .collect(),
                    _ => vec![self.get(a, *ty)],
                };
                let at = self.access(addr, n * *vec as usize, *space, true);
                for (k, v) in values.into_iter().enumerate() {
                    self.b.ins().store(flags(), v, at, (k * n) as i32);
                }
            }
            _ => unreachable!("not a memory instruction"),
        }
    }

    /// The address of an access, checked (unless provably safe) in checked mode.
    fn access(&mut self, a: &Address, size: usize, space: Option<Space>, store: bool) -> Value {
        let base = match a.base {
            AddrBase::Reg(r) => self.get(&Operand::Reg(r), crate::ast::Type::U64),
            AddrBase::Var(v) => self.var_addr(v),
            AddrBase::None => self.b.ins().iconst(types::I64, 0),
        };
        let at = self.b.ins().iadd_imm_s(base, a.offset);
        if self.sh.checked && !self.known_safe(a, size, space, store) {
            let desc = self.iconst(types::I32, access_desc(size, space, store) as u64);
            let site = self.iconst(types::I64, self.site);
            let ctx = self.ctx;
            let failed = self
                .helper("rt_check", &[ctx, at, desc, site])
                .expect("rt_check returns a status");
            self.fail_if(failed);
        }
        at
    }

    /// Whether an access is inside a variable, aligned, in its space and allowed, whatever
    /// the thread (module variables and frame variables are 16-byte aligned).
    fn known_safe(&self, a: &Address, size: usize, space: Option<Space>, store: bool) -> bool {
        let AddrBase::Var(v) = a.base else {
            return false;
        };
        let (decl, writable) = match v {
            VarId::Module(i) => {
                let d = &self.sh.ptx.vars[i as usize];
                (d, d.space != Space::Const)
            }
            VarId::Function(i) => {
                let d = self.f.var(i);
                let kernel_param =
                    self.kernel_params.is_some() && matches!(d.role, VarRole::Param(_));
                (d, !kernel_param)
            }
        };
        a.offset >= 0
            && size <= crate::jit::layout::VAR_ALIGN as usize
            && a.offset as usize + size <= decl.size
            && (a.offset as usize).is_multiple_of(size)
            && space.is_none_or(|s| s == decl.space)
            && (!store || writable)
    }
}
