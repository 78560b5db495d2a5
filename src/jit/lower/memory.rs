//! `ld`, `st` (PTX ISA 9.7.9.8–9): addresses, checked accesses, vectors.
//!
//! In checked mode an access goes through `rt_check` unless it is known safe when compiled:
//! a variable's address plus a constant offset that stays inside the variable, aligned,
//! in the right space and (for stores) writable.

use super::{Lower, clif, flags, trusted};
use crate::ast::{AddrBase, Address, Inst, Operand, Space, VarId, VarRole};
use crate::jit::runtime::access_desc;
use crate::jit::runtime::{HIT_AREAS, ThreadCtx};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};
use std::mem::offset_of;

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
                let (at, off) = self.access(addr, n * *vec as usize, *space, false);
                match d {
                    Operand::Vector(regs) => {
                        for (k, reg) in regs.iter().enumerate() {
                            let v = self
                                .b
                                .ins()
                                .load(clif(*ty), flags(), at, off + (k * n) as i32);
                            if let Some(reg) = reg {
                                self.set_reg(*reg, *ty, v);
                            }
                        }
                    }
                    _ => {
                        let v = self.b.ins().load(clif(*ty), flags(), at, off);
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
                let (at, off) = self.access(addr, n * *vec as usize, *space, true);
                for (k, v) in values.into_iter().enumerate() {
                    self.b.ins().store(flags(), v, at, off + (k * n) as i32);
                }
            }
            _ => unreachable!("not a memory instruction"),
        }
    }

    /// The address of an access as a base and a constant offset for the load or store,
    /// checked (unless provably safe) in checked mode.
    fn access(
        &mut self,
        a: &Address,
        size: usize,
        space: Option<Space>,
        store: bool,
    ) -> (Value, i32) {
        let (base, off) = match a.base {
            AddrBase::Reg(r) => (self.get(&Operand::Reg(r), crate::ast::Type::U64), 0),
            AddrBase::Var(v) => self.var_base(v),
            AddrBase::None => (self.b.ins().iconst(types::I64, 0), 0),
        };
        let off = off.wrapping_add(a.offset);
        let checked = self.sh.checked && !self.known_safe(a, size, space, store);
        // The parts of a vector access add up to `size` more; keep them all in i32 range.
        let fits = i32::try_from(off).is_ok() && i32::try_from(off + size as i64).is_ok();
        match i32::try_from(off) {
            Ok(off) if fits && !checked => (base, off),
            _ => {
                let at = self.plus(base, off);
                if checked {
                    self.check(at, size, space, store);
                }
                (at, 0)
            }
        }
    }

    /// Calls `rt_check` for the access, after an inline test against the thread's recently
    /// checked global areas for global and generic accesses (PTX ISA 5.1's rules hold there:
    /// inside, aligned, writable).
    fn check(&mut self, at: Value, size: usize, space: Option<Space>, store: bool) {
        let slow = self.b.create_block();
        let done = self.b.create_block();
        if matches!(space, None | Some(Space::Global)) {
            let ctx = self.ctx;
            let end = self.b.ins().iadd_imm_s(at, size as i64);
            let no_wrap = self.b.ins().icmp(IntCC::UnsignedGreaterThan, end, at);
            let misaligned = self.b.ins().band_imm_s(at, size as i64 - 1);
            let aligned = self.b.ins().icmp_imm_s(IntCC::Equal, misaligned, 0);
            let usable = self.b.ins().band(no_wrap, aligned);
            for k in 0..HIT_AREAS {
                let field = (offset_of!(ThreadCtx, hits) + 16 * k) as i32;
                let lo = self.b.ins().load(types::I64, trusted(), ctx, field);
                let hi = self.b.ins().load(types::I64, trusted(), ctx, field + 8);
                let above = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, at, lo);
                let inside = self.b.ins().icmp(IntCC::UnsignedLessThanOrEqual, end, hi);
                let ok = self.b.ins().band(above, inside);
                let ok = self.b.ins().band(ok, usable);
                let next = if k + 1 == HIT_AREAS {
                    slow
                } else {
                    self.b.create_block()
                };
                self.b.ins().brif(ok, done, &[], next, &[]);
                self.b.switch_to_block(next);
            }
        } else {
            self.b.ins().jump(slow, &[]);
            self.b.switch_to_block(slow);
        }
        let desc = self.iconst(types::I32, access_desc(size, space, store) as u64);
        let site = self.iconst(types::I64, self.site);
        let ctx = self.ctx;
        let failed = self
            .helper("rt_check", &[ctx, at, desc, site])
            .expect("rt_check returns a status");
        self.fail_if(failed);
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
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
