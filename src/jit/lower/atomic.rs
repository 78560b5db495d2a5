//! `atom` and `red` (PTX ISA, Parallel Synchronization and Communication Instructions), with
//! the same results as `interp::atomic`: x86's locked instructions where Cranelift has the
//! operation (`atomic_rmw`: and or xor add exch min max, `atomic_cas`), and a
//! compare-and-swap loop for the others (`inc`, `dec`, float `add`). All are sequentially
//! consistent, which is at least what any `.sem`/`.scope` asks for; the address is checked
//! as a store's is.

use super::{Lower, flags, int_type};
use crate::ast::{AtomOp, Inst, Type};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{AtomicRmwOp, InstBuilder, Value, types};

impl Lower<'_, '_> {
    pub(super) fn atomic(&mut self, inst: &Inst) {
        let Inst::Atom {
            op,
            space,
            ty,
            d,
            addr,
            b,
            c,
        } = inst
        else {
            unreachable!("not an atomic")
        };
        let (op, ty) = (*op, *ty);
        let it = int_type(ty.bits());
        let (at, off) = self.access(addr, ty.bytes(), *space, true);
        let p = self.plus(at, off as i64);
        let b = self.get(b, ty);
        let b = self.int_bits(ty, b);
        let rmw = match op {
            AtomOp::And => Some(AtomicRmwOp::And),
            AtomOp::Or => Some(AtomicRmwOp::Or),
            AtomOp::Xor => Some(AtomicRmwOp::Xor),
            AtomOp::Add if !ty.is_float() => Some(AtomicRmwOp::Add),
            AtomOp::Exch => Some(AtomicRmwOp::Xchg),
            AtomOp::Min if ty.is_signed() => Some(AtomicRmwOp::Smin),
            AtomOp::Min => Some(AtomicRmwOp::Umin),
            AtomOp::Max if ty.is_signed() => Some(AtomicRmwOp::Smax),
            AtomOp::Max => Some(AtomicRmwOp::Umax),
            AtomOp::Add | AtomOp::Inc | AtomOp::Dec | AtomOp::Cas => None,
        };
        let old = match (rmw, op) {
            (Some(rmw), _) => self.b.ins().atomic_rmw(it, flags(), rmw, p, b),
            (None, AtomOp::Cas) => {
                let c = c.as_ref().expect("validated: cas has c");
                let c = self.get(c, ty);
                self.b.ins().atomic_cas(flags(), p, b, c)
            }
            (None, _) => self.cas_loop(p, it, |l, old| l.new_value(op, ty, old, b)),
        };
        let old = self.of_int_bits(ty, old);
        self.set(d, ty, old);
    }

    /// What `inc`, `dec` and float `add` store where `old` was (`interp::atomic::new_value`).
    fn new_value(&mut self, op: AtomOp, ty: Type, old: Value, b: Value) -> Value {
        match op {
            AtomOp::Inc => {
                let wraps = self.b.ins().icmp(IntCC::UnsignedGreaterThanOrEqual, old, b);
                let next = self.b.ins().iadd_imm_s(old, 1);
                let zero = self.b.ins().iconst(int_type(ty.bits()), 0);
                self.b.ins().select(wraps, zero, next)
            }
            AtomOp::Dec => {
                let zero = self.b.ins().icmp_imm_s(IntCC::Equal, old, 0);
                let above = self.b.ins().icmp(IntCC::UnsignedGreaterThan, old, b);
                let reload = self.b.ins().bor(zero, above);
                let prev = self.b.ins().iadd_imm_s(old, -1);
                self.b.ins().select(reload, b, prev)
            }
            AtomOp::Add if ty.is_half() => {
                // The interpreter's half addition, out of line as every half operation is.
                let op = crate::interp::atomic::half_add_op(ty);
                let x = self.uextend(types::I64, old);
                let y = self.uextend(types::I64, b);
                let sum = self.call_half(op, &[x, y]);
                self.b.ins().ireduce(int_type(ty.bits()), sum)
            }
            AtomOp::Add => {
                // f32: round to nearest even, subnormal inputs and result flushed, a NaN
                // canonical; f64: round to nearest even, b's NaN, else the old value's, as
                // they are (the atomic unit does not quiet them), else x86's default NaN,
                // which is the hardware's.
                let ftz = ty == Type::F32;
                let ft = super::clif(ty);
                let x = self.bitcast(ft, old);
                let x = self.flush_if(ftz, ty, x);
                let y = self.bitcast(ft, b);
                let y = self.flush_if(ftz, ty, y);
                let sum = self.b.ins().fadd(x, y);
                let sum = if ty == Type::F64 {
                    let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                    let sum = self.b.ins().select(x_nan, x, sum);
                    let y_nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
                    self.b.ins().select(y_nan, y, sum)
                } else {
                    self.finish(ty, ftz, false, sum, &[])
                };
                self.bitcast(int_type(ty.bits()), sum)
            }
            _ => unreachable!("done by atomic_rmw or atomic_cas"),
        }
    }

    /// Reads the value at `p`, then stores `new(old)` there if it still holds `old`, again
    /// with the value found until the swap succeeds; returns the value replaced.
    fn cas_loop(
        &mut self,
        p: Value,
        it: cranelift_codegen::ir::Type,
        new: impl Fn(&mut Self, Value) -> Value,
    ) -> Value {
        let first = self.b.ins().atomic_load(it, flags(), p);
        let retry = self.b.create_block();
        let old = self.b.append_block_param(retry, it);
        let done = self.b.create_block();
        self.b.ins().jump(retry, &[first.into()]);
        self.b.switch_to_block(retry);
        let value = new(self, old);
        let found = self.b.ins().atomic_cas(flags(), p, old, value);
        let swapped = self.b.ins().icmp(IntCC::Equal, found, old);
        self.b
            .ins()
            .brif(swapped, done, &[], retry, &[found.into()]);
        self.b.switch_to_block(done);
        old
    }
}
