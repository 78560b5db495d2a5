//! Integer arithmetic (PTX ISA 9.7.1), extended-precision arithmetic (9.7.2), logic and shift
//! (9.7.8) and bit manipulation, lowered to Cranelift. Results equal `interp::int` bit for
//! bit; the comments say how each PTX rule is met.

use super::fold::{Combine, Shift};
use super::{Lower, clif};
use crate::ast::{Carry, Inst, IntBinOp, IntUnOp, MulMode, PrmtMode, ShfDir, ShfMode, Type};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, InstBuilder, Value, types};

impl Lower<'_, '_> {
    pub(super) fn int_arith(&mut self, inst: &Inst) {
        match inst {
            Inst::IntBin {
                op,
                ty,
                sat,
                carry,
                d,
                a,
                b,
            } => {
                let x = self.get(a, *ty);
                let y = self.get(b, op.b_type(*ty));
                let v = match op {
                    IntBinOp::Add | IntBinOp::Sub => self.add_sub(*op, *sat, *carry, x, y),
                    IntBinOp::Min => {
                        if ty.is_signed() {
                            self.b.ins().smin(x, y)
                        } else {
                            self.b.ins().umin(x, y)
                        }
                    }
                    IntBinOp::Max => {
                        if ty.is_signed() {
                            self.b.ins().smax(x, y)
                        } else {
                            self.b.ins().umax(x, y)
                        }
                    }
                    IntBinOp::Div | IntBinOp::Rem => self.div_rem(*op, *ty, x, y),
                    IntBinOp::And => self.combine(Combine::And, x, y),
                    IntBinOp::Or => self.combine(Combine::Or, x, y),
                    IntBinOp::Xor => self.combine(Combine::Xor, x, y),
                    IntBinOp::Shl | IntBinOp::Shr => self.shift(*op, *ty, x, y),
                };
                self.set(d, *ty, v);
            }
            Inst::IntUn { op, ty, d, a } => {
                let x = self.get(a, *ty);
                let v = match op {
                    IntUnOp::Neg => self.b.ins().ineg(x),
                    IntUnOp::Abs => self.b.ins().iabs(x),
                    IntUnOp::Not if *ty == Type::Pred => self.b.ins().bxor_imm_s(x, 1),
                    IntUnOp::Not => self.b.ins().bnot(x),
                    IntUnOp::Cnot => {
                        let z = self.b.ins().icmp_imm_s(IntCC::Equal, x, 0);
                        self.resize(z, clif(*ty), false)
                    }
                    IntUnOp::Popc => {
                        let n = self.b.ins().popcnt(x);
                        self.resize(n, types::I32, false)
                    }
                    IntUnOp::Clz => {
                        let n = self.b.ins().clz(x);
                        self.resize(n, types::I32, false)
                    }
                    IntUnOp::Brev => self.b.ins().bitrev(x),
                };
                self.set(d, op.result_type(*ty), v);
            }
            Inst::Mul { mode, ty, d, a, b } => {
                let (x, y) = (self.get(a, *ty), self.get(b, *ty));
                let v = self.mul(*mode, *ty, x, y);
                self.set(d, mode.result_type(*ty), v);
            }
            Inst::Mad {
                mode,
                ty,
                sat,
                carry,
                d,
                a,
                b,
                c,
            } => {
                let dty = mode.result_type(*ty);
                let (x, y) = (self.get(a, *ty), self.get(b, *ty));
                let half = self.mul(*mode, *ty, x, y);
                let z = self.get(c, dty);
                let v = if *sat {
                    // mad.hi.sat.s32: the exact signed sum, clamped.
                    self.sat_s32(IntBinOp::Add, half, z)
                } else if carry.carry_in || carry.carry_out {
                    let cin = self.carry_in(*carry, false);
                    let high_unsigned = *mode == MulMode::Hi && !ty.is_signed();
                    let (v, cout) = self.add_with_carry(half, z, cin, high_unsigned);
                    if carry.carry_out {
                        self.b.def_var(self.cf, cout);
                    }
                    v
                } else {
                    self.combine(Combine::Add, half, z)
                };
                self.set(d, dty, v);
            }
            _ => unreachable!("not an integer arithmetic instruction"),
        }
    }

    /// CC.CF for a carry-in form, else the constant carry of the plain operation (0 for
    /// add, 1 for sub: a − b = a + ~b + 1).
    fn carry_in(&mut self, carry: Carry, sub: bool) -> Value {
        if carry.carry_in {
            self.b.use_var(self.cf)
        } else {
            self.b.ins().iconst(types::I64, sub as i64)
        }
    }

    /// `add`/`sub` with `.sat` and the carry forms (9.7.1.1–2, 9.7.2.1–4). Subtraction adds
    /// the complement, so CC.CF is NOT borrow, as on NVIDIA hardware.
    fn add_sub(&mut self, op: IntBinOp, sat: bool, carry: Carry, x: Value, y: Value) -> Value {
        let sub = op == IntBinOp::Sub;
        if sat {
            return self.sat_s32(op, x, y);
        }
        if !carry.carry_in && !carry.carry_out {
            let op = if sub { Combine::Sub } else { Combine::Add };
            return self.combine(op, x, y);
        }
        let y = if sub { self.b.ins().bnot(y) } else { y };
        let cin = self.carry_in(carry, sub);
        let (v, cout) = self.add_with_carry(x, y, cin, false);
        if carry.carry_out {
            self.b.def_var(self.cf, cout);
        }
        v
    }

    /// x + y + cin and its carry out (an i64 0/1), computed one width up: i64 for 32-bit
    /// operands, i128 (add/adc) for 64-bit ones. Terms known to be zero (a chain's first
    /// carry-in, limbs cleared with `mov %t, 0`) are left out, and a lone term has no carry.
    /// `x_absorbs_carry`: x + cin cannot wrap (x is the high half of an unsigned product,
    /// at most 2^n − 2), so a 64-bit step adds the carry first and needs one carry out.
    fn add_with_carry(
        &mut self,
        x: Value,
        y: Value,
        cin: Value,
        x_absorbs_carry: bool,
    ) -> (Value, Value) {
        let ty = self.b.func.dfg.value_type(x);
        let wide = if ty.bits() < 64 {
            types::I64
        } else {
            types::I128
        };
        let known_zero = |l: &Self, v: Value| l.const_of(v) == Some(0);
        let (x, cin) = if wide == types::I128 && x_absorbs_carry && !known_zero(self, cin) {
            let c = self.resize(cin, ty, false);
            (self.b.ins().iadd(x, c), self.iconst(types::I64, 0))
        } else {
            (x, cin)
        };
        let terms: Vec<Value> = [x, y, cin]
            .into_iter()
            .filter(|v| !known_zero(self, *v))
            .collect();
        if terms.len() < 2 {
            let v = match terms.first() {
                Some(&t) => self.resize(t, ty, false),
                None => x,
            };
            return (v, self.iconst(types::I64, 0));
        }
        let s = self.sum_in(&terms, wide);
        self.halves(s, ty)
    }

    /// The sum of `terms`, each zero-extended (or truncated) to `ty`, the terms known to be
    /// zero left out; zero when none is left.
    pub(super) fn sum_in(&mut self, terms: &[Value], ty: ir::Type) -> Value {
        let mut acc: Option<Value> = None;
        for &t in terms {
            if self.const_of(t) == Some(0) {
                continue;
            }
            let t = self.resize(t, ty, false);
            acc = Some(match acc {
                Some(a) => self.b.ins().iadd(a, t),
                None => t,
            });
        }
        acc.unwrap_or_else(|| self.iconst(ty, 0))
    }

    /// A sum made one width up (i64 for a 32-bit `narrow`, i128 for a 64-bit one) as its
    /// low half, a value of `narrow`, and its high half, the carry (an i64).
    pub(super) fn halves(&mut self, sum: Value, narrow: ir::Type) -> (Value, Value) {
        if narrow == types::I64 {
            let (lo, hi) = self.b.ins().isplit(sum);
            (lo, hi)
        } else {
            // The limb as its own zero-extended copy (`movl`), so that the sum dies in the
            // shift and the next step reads the limb without extending it.
            let low = self.b.ins().ireduce(narrow, sum);
            let low = self.b.ins().uextend(types::I64, low);
            let v = self.narrow_zext(narrow, low);
            let c = self.b.ins().ushr_imm_s(sum, narrow.bits() as i64);
            (v, c)
        }
    }

    fn sat_s32(&mut self, op: IntBinOp, x: Value, y: Value) -> Value {
        let xw = self.b.ins().sextend(types::I64, x);
        let yw = self.b.ins().sextend(types::I64, y);
        let s = if op == IntBinOp::Sub {
            self.b.ins().isub(xw, yw)
        } else {
            self.b.ins().iadd(xw, yw)
        };
        let lo = self.iconst(types::I64, i32::MIN as i64 as u64);
        let hi = self.iconst(types::I64, i32::MAX as u64);
        let s = self.b.ins().smax(s, lo);
        let s = self.b.ins().smin(s, hi);
        self.b.ins().ireduce(types::I32, s)
    }

    /// `div`/`rem` (9.7.1.7–8) without host traps: the divisor is replaced by 1 where the
    /// hardware instruction would trap, and the defined results are selected instead —
    /// x/0 and x%0 are all ones (as on NVIDIA hardware), MININT / -1 = MININT (the negation
    /// wraps), MININT % -1 = 0.
    pub(super) fn div_rem(&mut self, op: IntBinOp, ty: Type, x: Value, y: Value) -> Value {
        let ct = clif(ty);
        let div = op == IntBinOp::Div;
        // Unsigned by a known power of two: a shift or a mask.
        if !ty.is_signed()
            && let Some(k) = self.known(y)
            && k.is_power_of_two()
        {
            return if div {
                let n = self.iconst(types::I32, k.trailing_zeros() as u64);
                self.shift_by(Shift::Right, x, n).expect("a known amount")
            } else {
                let m = self.iconst(ct, k - 1);
                self.combine(Combine::And, x, m)
            };
        }
        // Unsigned 32-bit by another known divisor (2 < d < 2^32): a multiplication by its
        // inverse, where `div` takes tens of cycles. With M = ⌊(2^64 − 1) / d⌋ + 1, every
        // 32-bit x has x / d = ⌊M·x / 2^64⌋ and x % d = ⌊(M·x mod 2^64)·d / 2^64⌋ (Lemire,
        // Kaser and Kurz, "Faster remainder by direct computation", 2019).
        if !ty.is_signed()
            && ty.bits() == 32
            && let Some(d) = self.known(y)
            && d > 2
        {
            let m = self.b.ins().iconst(types::I64, (u64::MAX / d + 1) as i64);
            let wide = self.b.ins().uextend(types::I64, x);
            let v = if div {
                self.b.ins().umulhi(wide, m)
            } else {
                let low = self.b.ins().imul(wide, m);
                let d = self.b.ins().iconst(types::I64, d as i64);
                self.b.ins().umulhi(low, d)
            };
            return self.b.ins().ireduce(types::I32, v);
        }
        let zero = self.icmp_imm_k(IntCC::Equal, y, 0);
        let one = self.iconst(ct, 1);
        let all = self.iconst(ct, u64::MAX);
        if !ty.is_signed() {
            let safe = self.select_k(zero, one, y);
            let q = if div {
                self.b.ins().udiv(x, safe)
            } else {
                self.b.ins().urem(x, safe)
            };
            return self.select_k(zero, all, q);
        }
        let minus1 = self.icmp_k(IntCC::Equal, y, all);
        let odd = self.combine(Combine::Or, zero, minus1);
        let safe = self.select_k(odd, one, y);
        let (q, at_minus1) = if div {
            (self.b.ins().sdiv(x, safe), self.b.ins().ineg(x))
        } else {
            (self.b.ins().srem(x, safe), self.iconst(ct, 0))
        };
        let r = self.select_k(minus1, at_minus1, q);
        self.select_k(zero, all, r)
    }

    /// `shl`/`shr` (9.7.8.8–9): amounts of the width or more give 0 (or the sign fill for
    /// signed `shr`); Cranelift's shifts take the amount modulo the width, hence the selects.
    /// A known amount gives a plain shift by an immediate, or the known result.
    fn shift(&mut self, op: IntBinOp, ty: Type, x: Value, amount: Value) -> Value {
        let bits = ty.bits() as i64;
        let ct = clif(ty);
        let kind = match op {
            IntBinOp::Shl => Shift::Left,
            _ if ty.is_signed() => Shift::RightSigned,
            _ => Shift::Right,
        };
        if ty != Type::Pred
            && let Some(v) = self.shift_by(kind, x, amount)
        {
            return v;
        }
        if op == IntBinOp::Shr && ty.is_signed() {
            let max = self.b.ins().iconst(types::I32, bits - 1);
            let n = self.b.ins().umin(amount, max);
            return self.b.ins().sshr(x, n);
        }
        let over = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, amount, bits);
        let r = if op == IntBinOp::Shl {
            self.b.ins().ishl(x, amount)
        } else {
            self.b.ins().ushr(x, amount)
        };
        let zero = self.iconst(ct, 0);
        self.b.ins().select(over, zero, r)
    }

    /// `mul.lo/.hi/.wide` (9.7.1.3). `.lo` and `.hi` are one native-width `imul` and
    /// `umulhi`/`smulhi` each (x86: `imul` and `mul`/`mulx`), not halves of one shared double-width
    /// product: bignum code runs a whole `mad.lo.cc` row before the `madc.hi.cc` row on the
    /// same operands, and a shared product would stay live (spilled) across the row.
    fn mul(&mut self, mode: MulMode, ty: Type, x: Value, y: Value) -> Value {
        let signed = ty.is_signed();
        match mode {
            MulMode::Lo => self.mul_lo(x, y),
            MulMode::Hi if signed => self.b.ins().smulhi(x, y),
            MulMode::Hi => self.b.ins().umulhi(x, y),
            MulMode::Wide => {
                let wide = clif(ty.widened());
                let xw = self.resize(x, wide, signed);
                let yw = self.resize(y, wide, signed);
                self.mul_lo(xw, yw)
            }
        }
    }

    pub(super) fn bits(&mut self, inst: &Inst) {
        match inst {
            Inst::Shf {
                dir,
                mode,
                d,
                a,
                b,
                c,
            } => {
                let lo = self.get(a, Type::B32);
                let hi = self.get(b, Type::B32);
                let n = self.get(c, Type::U32);
                let v = self.shf(*dir, *mode, lo, hi, n);
                self.set(d, Type::B32, v);
            }
            Inst::Bfe { ty, d, a, pos, len } => {
                let x = self.get(a, *ty);
                let p = self.get(pos, Type::U32);
                let l = self.get(len, Type::U32);
                let v = self.bfe(*ty, x, p, l);
                self.set(d, *ty, v);
            }
            Inst::Bfi {
                ty,
                d,
                a,
                b,
                pos,
                len,
            } => {
                let x = self.get(a, *ty);
                let y = self.get(b, *ty);
                let p = self.get(pos, Type::U32);
                let l = self.get(len, Type::U32);
                let v = self.bfi(*ty, x, y, p, l);
                self.set(d, *ty, v);
            }
            Inst::Prmt { mode, d, a, b, c } => {
                let x = self.get(a, Type::B32);
                let y = self.get(b, Type::B32);
                let z = self.get(c, Type::B32);
                let v = self.prmt(*mode, x, y, z);
                self.set(d, Type::B32, v);
            }
            _ => unreachable!("not a bit-manipulation instruction"),
        }
    }

    /// `shf` (9.7.8.6): the 64-bit value b:a shifted, upper (`.l`) or lower (`.r`) half kept.
    /// With equal sources that is a rotate of a by n (n = 32 under `.clamp` keeps a, as a
    /// rotate by 32 does); with a known n (below 32, or a wrapped one), two shifts by
    /// immediates and an `or`.
    fn shf(&mut self, dir: ShfDir, mode: ShfMode, a: Value, b: Value, c: Value) -> Value {
        let n = match (mode, self.known(c)) {
            (ShfMode::Wrap, Some(k)) => Some(k & 31),
            (ShfMode::Clamp, Some(k)) => Some(k.min(32)),
            (_, None) => None,
        };
        if a == b {
            let n = match (mode, n) {
                (_, Some(k)) => self.iconst(types::I32, k & 31),
                (ShfMode::Wrap, None) => c,
                (ShfMode::Clamp, None) => {
                    let max = self.iconst(types::I32, 32);
                    self.b.ins().umin(c, max)
                }
            };
            return match (dir, self.known(n)) {
                (_, Some(0)) => a,
                (ShfDir::L, _) => self.b.ins().rotl(a, n),
                (ShfDir::R, _) => self.b.ins().rotr(a, n),
            };
        }
        if let Some(n) = n {
            // .l: (b << n) | (a >> (32 − n)); .r: (a >> n) | (b << (32 − n)); n = 32 keeps
            // the other half whole.
            let (keep, spill) = match dir {
                ShfDir::L => (b, a),
                ShfDir::R => (a, b),
            };
            let (toward, away) = match dir {
                ShfDir::L => (Shift::Left, Shift::Right),
                ShfDir::R => (Shift::Right, Shift::Left),
            };
            let n1 = self.iconst(types::I32, n);
            let n2 = self.iconst(types::I32, 32 - n);
            let x = self.shift_by(toward, keep, n1).expect("a known amount");
            let y = self.shift_by(away, spill, n2).expect("a known amount");
            return self.combine(Combine::Or, x, y);
        }
        let n = match mode {
            ShfMode::Wrap => self.b.ins().band_imm_s(c, 31),
            ShfMode::Clamp => {
                let max = self.b.ins().iconst(types::I32, 32);
                self.b.ins().umin(c, max)
            }
        };
        let pair = self.pair(a, b);
        let n = self.b.ins().uextend(types::I64, n);
        let r = match dir {
            ShfDir::L => {
                let s = self.b.ins().ishl(pair, n);
                self.b.ins().ushr_imm_s(s, 32)
            }
            ShfDir::R => self.b.ins().ushr(pair, n),
        };
        self.b.ins().ireduce(types::I32, r)
    }

    /// b:a as one i64 (a in the low half).
    fn pair(&mut self, a: Value, b: Value) -> Value {
        let lo = self.b.ins().uextend(types::I64, a);
        let hi = self.b.ins().uextend(types::I64, b);
        let hi = self.b.ins().ishl_imm_s(hi, 32);
        self.b.ins().bor(hi, lo)
    }

    /// The field of `bfe`/`bfi` (9.7.1.18–19): pos and len (each & 0xff) as i64, the number
    /// k of field bits inside the type (min(len, bits − min(pos, bits))) and a mask of k ones.
    /// Known positions and lengths fold to constants.
    fn field(&mut self, ty: Type, pos: Value, len: Value) -> (Value, Value, Value) {
        let byte = self.iconst(types::I64, 0xff);
        let p = self.uextend(types::I64, pos);
        let p = self.combine(Combine::And, p, byte);
        let l = self.uextend(types::I64, len);
        let l = self.combine(Combine::And, l, byte);
        let bits = self.iconst(types::I64, ty.bits() as u64);
        let pc = self.umin_k(p, bits);
        let avail = self.combine(Combine::Sub, bits, pc);
        let k = self.umin_k(l, avail);
        if let Some(k) = self.known(k) {
            let mask = if k >= 64 { u64::MAX } else { (1 << k) - 1 };
            return (p, l, self.iconst(types::I64, mask));
        }
        let one = self.b.ins().iconst(types::I64, 1);
        let pow = self.b.ins().ishl(one, k);
        let mask = self.b.ins().isub(pow, one);
        let full = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThanOrEqual, k, 64);
        let all = self.iconst(types::I64, u64::MAX);
        let mask = self.b.ins().select(full, all, mask);
        (p, l, mask)
    }

    /// `bfe`: bits pos.. of a, k of them, filled above with the sign bit
    /// a[min(pos+len-1, msb)] for signed types (when len > 0), else zeros.
    fn bfe(&mut self, ty: Type, a: Value, pos: Value, len: Value) -> Value {
        let (p, l, mask) = self.field(ty, pos, len);
        let a = self.resize(a, types::I64, false);
        let p63 = self.umin_const(p, 63);
        let shifted = self.shift_mod(Shift::Right, a, p63);
        let over = self.icmp_imm_k(IntCC::UnsignedGreaterThanOrEqual, p, ty.bits() as i64);
        let zero = self.iconst(types::I64, 0);
        let shifted = self.select_k(over, zero, shifted);
        let mut d = self.combine(Combine::And, shifted, mask);
        if ty.is_signed() {
            let end = self.combine(Combine::Add, p, l);
            let minus1 = self.iconst(types::I64, u64::MAX);
            let end = self.combine(Combine::Add, end, minus1);
            let msb = self.iconst(types::I64, ty.bits() as u64 - 1);
            let idx = self.umin_k(end, msb);
            let bit = self.shift_mod(Shift::Right, a, idx);
            let one = self.iconst(types::I64, 1);
            let bit = self.combine(Combine::And, bit, one);
            let has_len = self.icmp_imm_k(IntCC::NotEqual, l, 0);
            let has_len = self.uextend(types::I64, has_len);
            let sign = self.combine(Combine::And, bit, has_len);
            let fill = self.bnot_k(mask);
            let fill = self.select_k(sign, fill, zero);
            d = self.combine(Combine::Or, d, fill);
        }
        self.resize(d, clif(ty), false)
    }

    /// `bfi`: b with bits pos..pos+k-1 replaced by the low bits of a.
    fn bfi(&mut self, ty: Type, a: Value, b: Value, pos: Value, len: Value) -> Value {
        let (p, _, mask) = self.field(ty, pos, len);
        let a = self.resize(a, types::I64, false);
        let b = self.resize(b, types::I64, false);
        let p63 = self.umin_const(p, 63);
        let m = self.shift_mod(Shift::Left, mask, p63);
        let ins = self.shift_mod(Shift::Left, a, p63);
        let ins = self.combine(Combine::And, ins, m);
        let keep = self.bnot_k(m);
        let kept = self.combine(Combine::And, b, keep);
        let r = self.combine(Combine::Or, kept, ins);
        self.resize(r, clif(ty), false)
    }

    /// `prmt` (9.7.8.7): four bytes picked out of the eight bytes of {b, a}.
    fn prmt(&mut self, mode: Option<PrmtMode>, a: Value, b: Value, c: Value) -> Value {
        let bytes = self.pair(a, b);
        let c = self.b.ins().uextend(types::I64, c);
        let mut d = self.b.ins().iconst(types::I64, 0);
        let picks: Vec<Value> = match mode {
            None => (0..4)
                .map(|k| {
                    // Each nibble of c selects a byte; its bit 3 replicates the sign bit.
                    let s = self.b.ins().ushr_imm_s(c, 4 * k);
                    let s = self.b.ins().band_imm_s(s, 0xf);
                    let byte = self.byte_of(bytes, s);
                    let sign = self.b.ins().ushr_imm_s(byte, 7);
                    let rep = self.b.ins().imul_imm_s(sign, 0xff);
                    let replicate = self.b.ins().band_imm_s(s, 8);
                    self.b.ins().select(replicate, rep, byte)
                })
                .collect(),
            Some(m) => {
                let s = self.b.ins().band_imm_s(c, 3);
                let k = |l: &mut Self, v: i64| l.b.ins().iconst(types::I64, v);
                let idx: [Value; 4] = match m {
                    PrmtMode::F4e => [0, 1, 2, 3].map(|i| self.b.ins().iadd_imm_s(s, i)),
                    PrmtMode::B4e => [0, 1, 2, 3].map(|i| self.b.ins().iadd_imm_s(s, -i)),
                    PrmtMode::Rc8 => [s; 4],
                    PrmtMode::Ecl => {
                        let (one, two, three) = (k(self, 1), k(self, 2), k(self, 3));
                        [
                            s,
                            self.b.ins().umax(s, one),
                            self.b.ins().umax(s, two),
                            three,
                        ]
                    }
                    PrmtMode::Ecr => {
                        let (zero, one, two) = (k(self, 0), k(self, 1), k(self, 2));
                        [
                            zero,
                            self.b.ins().umin(s, one),
                            self.b.ins().umin(s, two),
                            s,
                        ]
                    }
                    PrmtMode::Rc16 => {
                        let lo = self.b.ins().band_imm_s(s, 1);
                        let lo = self.b.ins().ishl_imm_s(lo, 1);
                        let hi = self.b.ins().iadd_imm_s(lo, 1);
                        [lo, hi, lo, hi]
                    }
                };
                idx.iter().map(|i| self.byte_of(bytes, *i)).collect()
            }
        };
        for (k, v) in picks.into_iter().enumerate() {
            let v = self.b.ins().ishl_imm_s(v, 8 * k as i64);
            d = self.b.ins().bor(d, v);
        }
        self.b.ins().ireduce(types::I32, d)
    }

    /// min(v, c), unsigned, for an i64 v.
    fn umin_const(&mut self, v: Value, c: i64) -> Value {
        let c = self.b.ins().iconst(types::I64, c);
        self.umin_k(v, c)
    }

    /// Byte `i & 7` of `bytes`.
    fn byte_of(&mut self, bytes: Value, i: Value) -> Value {
        let i = self.b.ins().band_imm_s(i, 7);
        let sh = self.b.ins().ishl_imm_s(i, 3);
        let v = self.b.ins().ushr(bytes, sh);
        self.b.ins().band_imm_s(v, 0xff)
    }
}
