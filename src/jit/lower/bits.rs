//! Lowering of the pure computations of [`ComputeOp`] (the interpreter's `interp/bits.rs`
//! holds each as the manual reads): inline integer code for all but `fns`, whose search is
//! a runtime helper.

use super::Lower;
use crate::ast::{BoolOp, ComputeOp, HalfOp, Inst, Operand, TestpOp, Type};
use crate::interp::half::code;
use cranelift_codegen::ir::{InstBuilder, Value, condcodes::IntCC, types};

impl Lower<'_, '_> {
    pub(super) fn compute(&mut self, inst: &Inst) {
        let Inst::Compute { op, d, p, srcs } = inst else {
            unreachable!("not a computation")
        };
        let s: Vec<Value> = srcs
            .iter()
            .zip(op.src_types())
            .map(|(o, ty)| self.get(o, ty))
            .collect();
        match *op {
            ComputeOp::Bfind { ty, shiftamt } => {
                let v = self.bfind(ty, shiftamt, s[0]);
                self.set(d, Type::U32, v);
            }
            ComputeOp::Fns => {
                let v = self.helper("rt_fns", &s).expect("rt_fns returns d");
                self.set(d, Type::B32, v);
            }
            ComputeOp::Bmsk { wrap } => {
                let v = self.bmsk(wrap, s[0], s[1]);
                self.set(d, Type::B32, v);
            }
            ComputeOp::Szext { wrap, signed } => {
                let v = self.szext(wrap, signed, s[0], s[1]);
                self.set(d, op.d_type(), v);
            }
            ComputeOp::Mul24 {
                hi,
                signed,
                add,
                sat,
            } => {
                let c = add.then(|| s[2]);
                let v = self.mul24(hi, signed, sat, s[0], s[1], c);
                self.set(d, op.d_type(), v);
            }
            ComputeOp::Sad { ty } => {
                let v = self.sad(ty, s[0], s[1], s[2]);
                self.set(d, ty, v);
            }
            ComputeOp::Dot {
                half,
                a_signed,
                b_signed,
            } => {
                let v = self.dot(half, a_signed, b_signed, s[0], s[1], s[2]);
                self.set(d, op.d_type(), v);
            }
            ComputeOp::Lop3 { lut, combine } => {
                let v = self.lop3(lut, [s[0], s[1], s[2]]);
                self.set(d, Type::B32, v);
                if let Some(combine) = combine {
                    let nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, v, 0);
                    let q = s[3];
                    let r = match combine {
                        BoolOp::And => self.b.ins().band(nonzero, q),
                        _ => self.b.ins().bor(nonzero, q),
                    };
                    self.set(p, Type::Pred, r);
                }
            }
            ComputeOp::Copysign { ty } => {
                let v = self.copysign(ty, s[0], s[1]);
                self.set(d, ty, v);
            }
            ComputeOp::Testp { op: test, ty } => {
                let v = self.testp(test, ty, s[0]);
                self.set(p, Type::Pred, v);
            }
            ComputeOp::CvtPack {
                bits,
                signed,
                with_c,
            } => {
                let c = with_c.then(|| s[2]);
                let v = self.cvt_pack(bits as u32, signed, s[0], s[1], c);
                self.set(d, Type::U32, v);
            }
            ComputeOp::Half(h) => self.half(h, d, p, &s),
        }
    }

    /// Half precision: the interpreter's code, called through `rt_half` (sources widened to
    /// 64 bits; `setp` answers p | q << 1).
    fn half(&mut self, h: HalfOp, d: &Operand, p: &Operand, s: &[Value]) {
        let wide: Vec<Value> = s
            .iter()
            .zip(h.src_types())
            .map(|(v, ty)| self.conv(*v, ty, Type::B64, false))
            .collect();
        let r = self.call_half(h, &wide);
        if let HalfOp::Setp { .. } = h {
            let pv = self.b.ins().band_imm_u(r, 1);
            let pv = self.b.ins().ireduce(types::I8, pv);
            let qv = self.b.ins().ushr_imm_u(r, 1);
            let qv = self.b.ins().ireduce(types::I8, qv);
            self.set(p, Type::Pred, qv);
            self.set(d, Type::Pred, pv);
        } else {
            let dty = h.d_type();
            let v = self.conv(r, Type::B64, dty, false);
            self.set(d, dty, v);
        }
    }

    /// `rt_half(op, a, b, c)` on sources already widened to 64 bits (absent ones are 0):
    /// its 64-bit answer.
    pub(super) fn call_half(&mut self, h: HalfOp, srcs: &[Value]) -> Value {
        let mut args = vec![self.b.ins().iconst(types::I64, code::encode(h) as i64)];
        args.extend_from_slice(srcs);
        while args.len() < 4 {
            args.push(self.b.ins().iconst(types::I64, 0));
        }
        self.helper("rt_half", &args).expect("rt_half returns d")
    }

    /// `bfind`: msb − clz of a (of !a for a negative signed a), 0xffffffff for 0.
    fn bfind(&mut self, ty: Type, shiftamt: bool, a: Value) -> Value {
        let msb = ty.bits() as i64 - 1;
        let a = if ty.is_signed() {
            // a ^ (a >> msb, arithmetic): !a for a negative a, a otherwise.
            let sign = self.b.ins().sshr_imm_s(a, msb);
            self.b.ins().bxor(a, sign)
        } else {
            a
        };
        let lz = self.b.ins().clz(a);
        let lz = self.resize(lz, types::I32, false);
        let found = if shiftamt {
            lz
        } else {
            let top = self.b.ins().iconst(types::I32, msb);
            self.b.ins().isub(top, lz)
        };
        let none = self.b.ins().icmp_imm_s(IntCC::Equal, a, 0);
        let all = self.b.ins().iconst(types::I32, 0xffff_ffff_u32 as i64);
        self.b.ins().select(none, all, found)
    }

    /// `bmsk`: (~0 << a) & ~(~0 << (a + b)) on 64-bit values (so that shifts of 32 or more
    /// give zeros), with the manual's special cases.
    fn bmsk(&mut self, wrap: bool, a: Value, b: Value) -> Value {
        let a1 = self.b.ins().band_imm_s(a, 31);
        let b1 = self.b.ins().band_imm_s(b, 31);
        let ones = self.b.ins().iconst(types::I64, 0xffff_ffff);
        let a64 = self.b.ins().uextend(types::I64, a1);
        let mask0 = self.b.ins().ishl(ones, a64);
        let mut mask0 = self.b.ins().ireduce(types::I32, mask0);
        let sum = self.b.ins().iadd(a1, b1);
        let sum = self.b.ins().uextend(types::I64, sum);
        let shifted = self.b.ins().ishl(ones, sum);
        let shifted = self.b.ins().ireduce(types::I32, shifted);
        let all = self.b.ins().iconst(types::I32, 0xffff_ffff_u32 as i64);
        let zero = self.b.ins().iconst(types::I32, 0);
        let empty = self.b.ins().icmp_imm_s(IntCC::Equal, b1, 0);
        let mut mask1 = self.b.ins().select(empty, all, shifted);
        if !wrap {
            let a_over = self
                .b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, a, 32);
            mask0 = self.b.ins().select(a_over, zero, mask0);
            let b_over = self
                .b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, b, 32);
            mask1 = self.b.ins().select(b_over, zero, mask1);
        }
        self.b.ins().band_not(mask0, mask1)
    }

    /// `szext`: a's low b bits, the bits above zero or copies of bit b − 1.
    fn szext(&mut self, wrap: bool, signed: bool, a: Value, b: Value) -> Value {
        let b1 = self.b.ins().band_imm_s(b, 31);
        let all = self.b.ins().iconst(types::I32, 0xffff_ffff_u32 as i64);
        let zero = self.b.ins().iconst(types::I32, 0);
        let mut mask = self.b.ins().ishl(all, b1);
        let too_large = (!wrap).then(|| {
            self.b
                .ins()
                .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, b, 32)
        });
        if let Some(t) = too_large {
            mask = self.b.ins().select(t, zero, mask);
        }
        let kept = self.b.ins().band_not(a, mask);
        if !signed {
            return kept;
        }
        // The sign bit a[(b1 − 1) & 31], spread over all bits; none when b1 is 0 or the
        // width is too large (where mask is 0 anyway).
        let pos = self.b.ins().iadd_imm_s(b1, -1);
        let pos = self.b.ins().band_imm_s(pos, 31);
        let top = self.b.ins().iconst(types::I32, 31);
        let lift = self.b.ins().isub(top, pos);
        let up = self.b.ins().ishl(a, lift);
        let spread = self.b.ins().sshr_imm_s(up, 31);
        let has_width = self.b.ins().icmp_imm_s(IntCC::NotEqual, b1, 0);
        let spread = self.b.ins().select(has_width, spread, zero);
        let fill = self.b.ins().band(spread, mask);
        self.b.ins().bor(kept, fill)
    }

    /// `mul24`/`mad24`: the 48-bit product of the low 24 bits, bits 47..16 or 31..0, plus c
    /// (saturated to s32 with `.sat`).
    fn mul24(
        &mut self,
        hi: bool,
        signed: bool,
        sat: bool,
        a: Value,
        b: Value,
        c: Option<Value>,
    ) -> Value {
        let mut operand = |x: Value| {
            if signed {
                let up = self.b.ins().ishl_imm_s(x, 8);
                let v = self.b.ins().sshr_imm_s(up, 8);
                self.b.ins().sextend(types::I64, v)
            } else {
                let v = self.b.ins().band_imm_s(x, 0xff_ffff);
                self.b.ins().uextend(types::I64, v)
            }
        };
        let (x, y) = (operand(a), operand(b));
        let t = self.b.ins().imul(x, y);
        let part = if hi {
            self.b.ins().sshr_imm_s(t, 16)
        } else {
            t
        };
        let part = self.b.ins().ireduce(types::I32, part);
        let Some(c) = c else { return part };
        if !sat {
            return self.b.ins().iadd(part, c);
        }
        let p64 = self.b.ins().sextend(types::I64, part);
        let c64 = self.b.ins().sextend(types::I64, c);
        let sum = self.b.ins().iadd(p64, c64);
        let lo = self.b.ins().iconst(types::I64, i32::MIN as i64);
        let hi_limit = self.b.ins().iconst(types::I64, i32::MAX as i64);
        let sum = self.b.ins().smax(sum, lo);
        let sum = self.b.ins().smin(sum, hi_limit);
        self.b.ins().ireduce(types::I32, sum)
    }

    /// `sad`: c + |a − b| at the type's signedness.
    fn sad(&mut self, ty: Type, a: Value, b: Value, c: Value) -> Value {
        let less = if ty.is_signed() {
            IntCC::SignedLessThan
        } else {
            IntCC::UnsignedLessThan
        };
        let lt = self.b.ins().icmp(less, a, b);
        let ba = self.b.ins().isub(b, a);
        let ab = self.b.ins().isub(a, b);
        let diff = self.b.ins().select(lt, ba, ab);
        self.b.ins().iadd(c, diff)
    }

    /// `dp4a`/`dp2a`: c plus the products of a's and b's extended parts, in wrapping 32-bit
    /// arithmetic (each product fits in 32 bits).
    fn dot(
        &mut self,
        half: Option<bool>,
        a_signed: bool,
        b_signed: bool,
        a: Value,
        b: Value,
        c: Value,
    ) -> Value {
        let mut part = |x: Value, i: i64, bits: i64, signed: bool| {
            // Move the part to the top, then shift it down: arithmetic for signed parts.
            let up = self.b.ins().ishl_imm_s(x, 32 - bits - i * bits);
            if signed {
                self.b.ins().sshr_imm_s(up, 32 - bits)
            } else {
                self.b.ins().ushr_imm_s(up, 32 - bits)
            }
        };
        let pairs: Vec<(Value, Value)> = match half {
            None => (0..4)
                .map(|i| (part(a, i, 8, a_signed), part(b, i, 8, b_signed)))
                .collect(),
            Some(hi) => {
                let first = if hi { 2 } else { 0 };
                (0..2)
                    .map(|i| (part(a, i, 16, a_signed), part(b, first + i, 8, b_signed)))
                    .collect()
            }
        };
        let mut d = c;
        for (x, y) in pairs {
            let prod = self.b.ins().imul(x, y);
            d = self.b.ins().iadd(d, prod);
        }
        d
    }

    /// `lop3`: the truth table as a selection tree on a, then b, then c (Shannon
    /// expansion), constant and single-variable sub-tables folded.
    fn lop3(&mut self, lut: u8, vars: [Value; 3]) -> Value {
        self.truth_table(lut as u32, 8, &vars)
    }

    /// The function of `vars` whose truth table (`size` entries, the first variable the
    /// table index's top bit) is `table`.
    fn truth_table(&mut self, table: u32, size: u32, vars: &[Value]) -> Value {
        let full = (1u64 << size) as u32 - 1;
        if table == 0 {
            return self.b.ins().iconst(types::I32, 0);
        }
        if table == full {
            return self.b.ins().iconst(types::I32, 0xffff_ffff_u32 as i64);
        }
        let half = size / 2;
        let lo_mask = (1u32 << half) - 1;
        let (hi, lo) = (table >> half, table & lo_mask);
        let x = vars[0];
        if hi == lo {
            return self.truth_table(lo, half, &vars[1..]);
        }
        if half == 1 {
            // One variable left: x (table 0b10) or !x (0b01).
            return if hi == 1 { x } else { self.b.ins().bnot(x) };
        }
        let ones = lo_mask;
        if lo == 0 {
            let f = self.truth_table(hi, half, &vars[1..]);
            return self.b.ins().band(x, f);
        }
        if hi == 0 {
            let f = self.truth_table(lo, half, &vars[1..]);
            return self.b.ins().band_not(f, x);
        }
        if hi == ones {
            let f = self.truth_table(lo, half, &vars[1..]);
            return self.b.ins().bor(x, f);
        }
        if lo == ones {
            let f = self.truth_table(hi, half, &vars[1..]);
            return self.b.ins().bor_not(f, x);
        }
        if hi == !lo & ones {
            let f = self.truth_table(lo, half, &vars[1..]);
            return self.b.ins().bxor(x, f);
        }
        let f1 = self.truth_table(hi, half, &vars[1..]);
        let f0 = self.truth_table(lo, half, &vars[1..]);
        self.b.ins().bitselect(x, f1, f0)
    }

    /// `copysign`: b's magnitude bits with a's sign bit.
    fn copysign(&mut self, ty: Type, a: Value, b: Value) -> Value {
        let it = super::int_type(ty.bits());
        let ai = self.bitcast(it, a);
        let bi = self.bitcast(it, b);
        let sign = self.iconst(it, 1u64 << (ty.bits() - 1));
        let sa = self.b.ins().band(ai, sign);
        let mb = self.b.ins().band_not(bi, sign);
        let r = self.b.ins().bor(sa, mb);
        self.bitcast(super::clif(ty), r)
    }

    /// `testp` on the bits: exponent all ones (infinity, NaN), zero (zero, subnormal).
    fn testp(&mut self, op: TestpOp, ty: Type, a: Value) -> Value {
        let (it, man_bits) = if ty == Type::F32 {
            (types::I32, 23)
        } else {
            (types::I64, 52)
        };
        let bits = self.bitcast(it, a);
        let abs = self
            .b
            .ins()
            .band_imm_s(bits, (u64::MAX >> (65 - ty.bits())) as i64);
        let inf = ((1u64 << (ty.bits() - 1 - man_bits)) - 1) << man_bits;
        let min_normal = 1i64 << man_bits;
        use IntCC::*;
        match op {
            TestpOp::Finite => self.b.ins().icmp_imm_s(UnsignedLessThan, abs, inf as i64),
            TestpOp::Infinite => self.b.ins().icmp_imm_s(Equal, abs, inf as i64),
            TestpOp::Number => self
                .b
                .ins()
                .icmp_imm_s(UnsignedLessThanOrEqual, abs, inf as i64),
            TestpOp::NotANumber => self
                .b
                .ins()
                .icmp_imm_s(UnsignedGreaterThan, abs, inf as i64),
            TestpOp::Normal => {
                let zero = self.b.ins().icmp_imm_s(Equal, abs, 0);
                let above = self
                    .b
                    .ins()
                    .icmp_imm_s(UnsignedGreaterThanOrEqual, abs, min_normal);
                let finite = self.b.ins().icmp_imm_s(UnsignedLessThan, abs, inf as i64);
                let normal = self.b.ins().band(above, finite);
                self.b.ins().bor(zero, normal)
            }
            TestpOp::Subnormal => {
                let nonzero = self.b.ins().icmp_imm_s(NotEqual, abs, 0);
                let below = self.b.ins().icmp_imm_s(UnsignedLessThan, abs, min_normal);
                self.b.ins().band(nonzero, below)
            }
        }
    }

    /// `cvt.pack.sat`: a and b clamped to `bits`-bit integers, packed a above b, c above.
    fn cvt_pack(&mut self, bits: u32, signed: bool, a: Value, b: Value, c: Option<Value>) -> Value {
        let (lo, hi) = if signed {
            (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
        } else {
            (0, (1i64 << bits) - 1)
        };
        let mut field = |x: Value| {
            let lo = self.b.ins().iconst(types::I32, lo);
            let hi = self.b.ins().iconst(types::I32, hi);
            let x = self.b.ins().smax(x, lo);
            let x = self.b.ins().smin(x, hi);
            self.b.ins().band_imm_s(x, (1i64 << bits) - 1)
        };
        let (fa, fb) = (field(a), field(b));
        let fa = self.b.ins().ishl_imm_s(fa, bits as i64);
        let packed = self.b.ins().bor(fa, fb);
        match c {
            Some(c) if 2 * bits < 32 => {
                let c = self.b.ins().ishl_imm_s(c, 2 * bits as i64);
                self.b.ins().bor(packed, c)
            }
            _ => packed,
        }
    }
}
