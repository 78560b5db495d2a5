//! Operations on varying values, eight `i32x4`s at a time: moves, integer arithmetic and
//! logic (sequences stay sequences where they can), division lane by lane, integer `cvt`,
//! `setp`, `selp`, and f32 arithmetic with the scalar lowering's NaN, `.ftz` and `.sat` rules.

use super::shape::{norm, same_lanes};
use super::{LaneVal, Lanes, Res, SeqCmp, Shape, V, Vecs, refuse};
use crate::ast::{
    BoolOp, CmpOp, FloatBinOp, FloatUnOp, Inst, IntBinOp, IntUnOp, MulMode, Operand, Precision,
    RegId, Rounding, Type,
};
use crate::jit::lower::{float_cc, int_cc};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{ConstantData, InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::FunctionBuilder;

impl<'f, const P: usize> Lanes<'_, '_, 'f, P> {
    pub(super) fn vector(&mut self, inst: &Inst, mask: Option<Vecs<P>>) -> Res<()> {
        match inst {
            Inst::Mov { ty, d, a } | Inst::Cvta { ty, d, a, .. }
                if !matches!(d, Operand::Vector(_)) && !matches!(a, Operand::Vector(_)) =>
            {
                let v = self.read(a, *ty)?;
                self.write(d, *ty, v, mask)
            }
            Inst::IntBin {
                op,
                ty,
                sat: false,
                carry,
                d,
                a,
                b,
            } if !carry.carry_in && !carry.carry_out => {
                let v = self.int_bin(*op, *ty, a, b)?;
                // A sequence's comparison and-ed or or-ed with a uniform predicate stays
                // one the first and last lanes may decide.
                let combined = match (op, a, b) {
                    (IntBinOp::And | IntBinOp::Or, Operand::Reg(x), Operand::Reg(y))
                        if *ty == Type::Pred && mask.is_none() =>
                    {
                        self.seq_with(*op, *x, *y)
                            .or_else(|| self.seq_with(*op, *y, *x))
                    }
                    _ => None,
                };
                self.write(d, *ty, v, mask)?;
                if let (Some(c), Operand::Reg(r)) = (combined, d) {
                    self.seq_cmps.insert(*r, c);
                }
                Ok(())
            }
            Inst::IntUn {
                op: op @ (IntUnOp::Abs | IntUnOp::Neg | IntUnOp::Not | IntUnOp::Cnot),
                ty,
                d,
                a,
            } if ty.bits() == 32 => {
                let x = self.read(a, *ty)?;
                let x = self.lanes_of(x, *ty)?;
                let v = match op {
                    // abs of the most negative value is itself, as `iabs` gives.
                    IntUnOp::Abs => self.map(x, |b, x| b.ins().iabs(x)),
                    IntUnOp::Neg => self.map(x, |b, x| b.ins().ineg(x)),
                    IntUnOp::Not => self.map(x, |b, x| b.ins().bnot(x)),
                    _ => {
                        // cnot: 1 where x is 0, else 0 (the mask of x == 0, shifted down).
                        let zero = self.splat(0);
                        let z = self.map(x, |b, x| b.ins().icmp(IntCC::Equal, x, zero));
                        self.map(z, |b, m| b.ins().ushr_imm_s(m, 31))
                    }
                };
                self.write(d, *ty, LaneVal::Varying(v), mask)
            }
            Inst::IntUn {
                op: op @ (IntUnOp::Popc | IntUnOp::Clz | IntUnOp::Brev),
                ty,
                d,
                a,
            } if ty.bits() == 32 => {
                // Lane by lane (SSE has no per-lane count or reversal of 32-bit words).
                let x = self.read(a, *ty)?;
                let x = self.lanes_of(x, *ty)?;
                let v = self.each_lane(x, x, |b, w, _| match op {
                    IntUnOp::Popc => b.ins().popcnt(w),
                    IntUnOp::Clz => b.ins().clz(w),
                    _ => b.ins().bitrev(w),
                });
                self.write(d, op.result_type(*ty), LaneVal::Varying(v), mask)
            }
            Inst::Mul { mode, ty, d, a, b } => {
                let v = self.mul(*mode, *ty, a, b)?;
                self.write(d, mode.result_type(*ty), v, mask)
            }
            Inst::Mad {
                mode,
                ty,
                sat: false,
                carry,
                d,
                a,
                b,
                c,
            } if !carry.carry_in && !carry.carry_out => {
                let rty = mode.result_type(*ty);
                let p = self.mul(*mode, *ty, a, b)?;
                let c = self.read(c, rty)?;
                let v = self.add_sub(IntBinOp::Add, rty, p, c)?;
                self.write(d, rty, v, mask)
            }
            // Integer conversions: extension by the source type's signedness.
            Inst::Cvt {
                dty,
                aty,
                rnd: None,
                ftz: false,
                sat: false,
                d,
                a,
            } if dty.is_int() && aty.is_int() => {
                let v = match self.read(a, *aty)? {
                    LaneVal::Affine(base, s) => {
                        self.affine_conv(base, s, *aty, *dty, aty.is_signed())?
                    }
                    LaneVal::Varying(v) if same_lanes(*aty, *dty) => LaneVal::Varying(v),
                    LaneVal::Uniform(v) => {
                        LaneVal::Uniform(self.l.conv(v, *aty, *dty, aty.is_signed()))
                    }
                    _ => return refuse(format!("a per-thread cvt.{}.{}", dty.ptx(), aty.ptx())),
                };
                self.write(d, *dty, v, mask)
            }
            Inst::Setp {
                cmp,
                combine,
                ftz,
                ty,
                p,
                q,
                a,
                b,
                c,
            } if ty.bits() == 32 => {
                let (xv, yv) = (self.read(a, *ty)?, self.read(b, *ty)?);
                let x = self.lanes_of(xv, *ty)?;
                let y = self.lanes_of(yv, *ty)?;
                let seq = match (xv, yv) {
                    (LaneVal::Affine(base, stride), LaneVal::Uniform(other)) => {
                        Some((base, stride, other, false))
                    }
                    (LaneVal::Uniform(other), LaneVal::Affine(base, stride)) => {
                        Some((base, stride, other, true))
                    }
                    _ => None,
                };
                let c = match (combine, c) {
                    (Some(op), Some(c)) => {
                        let c = self.read(c, Type::Pred)?;
                        Some((*op, self.lanes_of(c, Type::Pred)?))
                    }
                    _ => None,
                };
                let (mut pv, mut qv) = (x, x);
                for k in 0..P {
                    let t = if ty.is_float() {
                        let x = self.flush(*ftz, x[k]);
                        let y = self.flush(*ftz, y[k]);
                        let (x, y) = (self.as_f32x4(x), self.as_f32x4(y));
                        self.fcmp(float_cc(*cmp), x, y)
                    } else {
                        let cc = int_cc(*cmp, ty.is_signed());
                        self.b().ins().icmp(cc, x[k], y[k])
                    };
                    let not_t = self.b().ins().bnot(t);
                    (pv[k], qv[k]) = match c {
                        Some((op, c)) => (self.bool_op(op, t, c[k]), self.bool_op(op, not_t, c[k])),
                        None => (t, not_t),
                    };
                }
                // q first: `setp %p|%p` leaves p in the register (docs/semantics.md).
                self.write(q, Type::Pred, LaneVal::Varying(qv), mask)?;
                self.write(p, Type::Pred, LaneVal::Varying(pv), mask)?;
                // An ordering comparison, or eq/ne where the lanes span less than 2^32.
                let decidable = |stride: i64| {
                    !matches!(cmp, CmpOp::Eq | CmpOp::Ne)
                        || (Self::LANES as u64) * stride.unsigned_abs() < 1 << 32
                };
                if let (Some((base, stride, other, swapped)), true, None, None) =
                    (seq, ty.is_int(), c, mask)
                    && decidable(stride)
                {
                    let cc = int_cc(*cmp, ty.is_signed());
                    let (sa, oa) = if swapped { (b, a) } else { (a, b) };
                    let alike = (self.alike.as_ref())
                        .is_some_and(|k| k.sequence_operand(sa) && k.uniform_operand(oa));
                    for (d, negated) in [(q, true), (p, false)] {
                        if let Operand::Reg(r) = d {
                            let c = SeqCmp {
                                cc,
                                base,
                                stride,
                                other,
                                swapped,
                                negated,
                                with: None,
                                alike,
                            };
                            self.seq_cmps.insert(*r, c);
                        }
                    }
                }
                Ok(())
            }
            Inst::Selp { ty, d, a, b, c } if ty.bits() == 32 => {
                let x = self.read(a, *ty)?;
                let x = self.lanes_of(x, *ty)?;
                let y = self.read(b, *ty)?;
                let y = self.lanes_of(y, *ty)?;
                let c = self.read(c, Type::Pred)?;
                let c = self.lanes_of(c, Type::Pred)?;
                let v = std::array::from_fn(|p| self.l.b.ins().bitselect(c[p], x[p], y[p]));
                self.write(d, *ty, LaneVal::Varying(v), mask)
            }
            Inst::FloatBin {
                op: op @ (FloatBinOp::Add | FloatBinOp::Sub | FloatBinOp::Mul | FloatBinOp::Div),
                ty: Type::F32,
                prec: Precision::Ieee(Rounding::Rn),
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                let [x, y] = self.f32_sources([a, b], *ftz)?;
                let mut r = x;
                for p in 0..P {
                    let v = match op {
                        FloatBinOp::Add => self.b().ins().fadd(x[p], y[p]),
                        FloatBinOp::Sub => self.b().ins().fsub(x[p], y[p]),
                        FloatBinOp::Div => self.b().ins().fdiv(x[p], y[p]),
                        _ => self.b().ins().fmul(x[p], y[p]),
                    };
                    r[p] = self.finish(v, *ftz, *sat);
                }
                self.write(d, Type::F32, LaneVal::Varying(r), mask)
            }
            Inst::Fma {
                ty: Type::F32,
                rnd: Rounding::Rn,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => {
                let [x, y, z] = self.f32_sources([a, b, c], *ftz)?;
                let mut r = x;
                for p in 0..P {
                    let v = self.b().ins().fma(x[p], y[p], z[p]);
                    r[p] = self.finish(v, *ftz, *sat);
                }
                self.write(d, Type::F32, LaneVal::Varying(r), mask)
            }
            Inst::FloatUn {
                op: op @ (FloatUnOp::Neg | FloatUnOp::Abs),
                ty: Type::F32,
                ftz,
                d,
                a,
                ..
            } => {
                // Sign-bit operations, then .ftz on the result (as the scalar lowering); a NaN
                // becomes the canonical NaN, as on hardware.
                let x = self.read(a, Type::F32)?;
                let x = self.lanes_of(x, Type::F32)?;
                let sign = self.splat(i32::MIN as i64);
                let mut r = x;
                for p in 0..P {
                    let v = if *op == FloatUnOp::Neg {
                        self.b().ins().bxor(x[p], sign)
                    } else {
                        self.b().ins().band_not(x[p], sign)
                    };
                    let v = self.canonical_f32x4(v);
                    r[p] = self.flush(*ftz, v);
                }
                self.write(d, Type::F32, LaneVal::Varying(r), mask)
            }
            _ => refuse("an operation the lanes lowering does not have on per-thread values"),
        }
    }

    fn int_bin(&mut self, op: IntBinOp, ty: Type, a: &Operand, b: &Operand) -> Res<LaneVal<P>> {
        let x = self.read(a, ty)?;
        if matches!(op, IntBinOp::Shl | IntBinOp::Shr) {
            return match b {
                Operand::Imm(k) => self.shift(op, ty, x, k.bits_for(Type::U32)),
                _ => {
                    let k = self.read(b, Type::U32)?;
                    self.shift_by(op, ty, x, k)
                }
            };
        }
        if op == IntBinOp::And
            && ty.bits() == 32
            && let Operand::Imm(m) = b
            && let Some(low) = self.sequence_low_bits(x, m.bits_for(Type::U32))
        {
            return Ok(low);
        }
        let y = self.read(b, ty)?;
        if matches!(op, IntBinOp::Add | IntBinOp::Sub) {
            return self.add_sub(op, ty, x, y);
        }
        if !(ty.bits() == 32 || ty == Type::Pred) {
            return refuse(format!("per-thread .{} values", ty.ptx()));
        }
        if matches!(op, IntBinOp::Div | IntBinOp::Rem) {
            return self.div_rem(op, ty, x, y);
        }
        let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
        let signed = ty.is_signed();
        let v = match op {
            IntBinOp::And => self.map2(x, y, |b, x, y| b.ins().band(x, y)),
            IntBinOp::Or => self.map2(x, y, |b, x, y| b.ins().bor(x, y)),
            IntBinOp::Xor => self.map2(x, y, |b, x, y| b.ins().bxor(x, y)),
            IntBinOp::Min if signed => self.map2(x, y, |b, x, y| b.ins().smin(x, y)),
            IntBinOp::Min => self.map2(x, y, |b, x, y| b.ins().umin(x, y)),
            IntBinOp::Max if signed => self.map2(x, y, |b, x, y| b.ins().smax(x, y)),
            IntBinOp::Max => self.map2(x, y, |b, x, y| b.ins().umax(x, y)),
            _ => return refuse("an integer operation the lanes lowering does not have"),
        };
        Ok(LaneVal::Varying(v))
    }

    /// A sequence's low bits, `x & m` for `m` one less than a power of two below 2^32
    /// (`%tid.x & 31`, the lane), where they are a sequence again: the lanes' values stay
    /// below `m + 1` apart.
    fn sequence_low_bits(&mut self, x: LaneVal<P>, m: u64) -> Option<LaneVal<P>> {
        let LaneVal::Affine(base, s) = x else {
            return None;
        };
        let fits = m != u32::MAX as u64
            && (m + 1).is_power_of_two()
            && s > 0
            && (Self::LANES as i64 - 1) * s <= m as i64;
        fits.then(|| LaneVal::Affine(self.low_bits(base, s, m as i64), s))
    }

    /// `div`/`rem` (9.7.1.7–8) of 32-bit lanes: unsigned by a uniform power of two, `shr` or
    /// `and` (so a sequence keeps the shapes those give it); else lane by lane through the
    /// scalar lowering's [`Lower::div_rem`](crate::jit::lower::Lower), with its defined
    /// results (x/0 and x%0 all ones, MININT / -1 = MININT, MININT % -1 = 0) and no host trap
    /// in any lane.
    fn div_rem(&mut self, op: IntBinOp, ty: Type, x: LaneVal<P>, y: LaneVal<P>) -> Res<LaneVal<P>> {
        let div = op == IntBinOp::Div;
        if let (LaneVal::Uniform(a), LaneVal::Uniform(b)) = (x, y) {
            return Ok(LaneVal::Uniform(self.l.div_rem(op, ty, a, b)));
        }
        if !ty.is_signed()
            && let LaneVal::Uniform(d) = y
            && let Some(k) = self.l.known(d)
            && k.is_power_of_two()
        {
            if div {
                return self.shift(IntBinOp::Shr, ty, x, k.trailing_zeros() as u64);
            }
            if let Some(low) = self.sequence_low_bits(x, k - 1) {
                return Ok(low);
            }
            let x = self.lanes_of(x, ty)?;
            let m = self.splat(k as i64 - 1);
            return Ok(LaneVal::Varying(
                self.map2(x, [m; P], |b, x, m| b.ins().band(x, m)),
            ));
        }
        // A uniform divisor stays one scalar: a constant one then folds the defined cases
        // away in `div_rem`.
        let uniform = match y {
            LaneVal::Uniform(d) => Some(d),
            _ => None,
        };
        let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
        let mut r = x;
        for p in 0..P {
            for lane in 0..4u8 {
                let a = self.b().ins().extractlane(x[p], lane);
                let b = match uniform {
                    Some(d) => d,
                    None => self.b().ins().extractlane(y[p], lane),
                };
                let q = self.l.div_rem(op, ty, a, b);
                r[p] = self.b().ins().insertlane(r[p], q, lane);
            }
        }
        Ok(LaneVal::Varying(r))
    }

    /// `shl`/`shr` by a constant: PTX clamps amounts above the width (9.7.8.8–9).
    fn shift(&mut self, op: IntBinOp, ty: Type, x: LaneVal<P>, k: u64) -> Res<LaneVal<P>> {
        let bits = ty.bits() as u64;
        if op == IntBinOp::Shl
            && let LaneVal::Affine(base, s) = x
            && k < bits
        {
            let v = self.b().ins().ishl_imm_s(base, k as i64);
            return Ok(self.affine(v, s.wrapping_shl(k as u32), ty.bits()));
        }
        if bits != 32 {
            return refuse(format!("per-thread .{} shifts", ty.ptx()));
        }
        if op == IntBinOp::Shr
            && let LaneVal::Affine(base, s) = x
            && s > 0
            && k < 32
            && (Self::LANES as i64 - 1) * s < 1 << k
        {
            // A sequence spanning less than 2^k (`%tid.x >> 5`, the warp's number): the same
            // in every lane.
            self.low_bits(base, s, (1 << k) - 1);
            let v = if ty.is_signed() {
                self.b().ins().sshr_imm_s(base, k as i64)
            } else {
                self.b().ins().ushr_imm_s(base, k as i64)
            };
            return Ok(LaneVal::Uniform(v));
        }
        let v = self.lanes_of(x, ty)?;
        let k = k.min(bits) as i64;
        let r = match (op, k == 32) {
            (IntBinOp::Shl, false) => self.map(v, |b, v| b.ins().ishl_imm_s(v, k)),
            (IntBinOp::Shr, false) if ty.is_signed() => {
                self.map(v, |b, v| b.ins().sshr_imm_s(v, k))
            }
            (IntBinOp::Shr, false) => self.map(v, |b, v| b.ins().ushr_imm_s(v, k)),
            (IntBinOp::Shr, true) if ty.is_signed() => {
                self.map(v, |b, v| b.ins().sshr_imm_s(v, 31))
            }
            _ => [self.splat(0); P],
        };
        Ok(LaneVal::Varying(r))
    }

    /// `shl`/`shr` of 32-bit values by amounts in a register, clamped as PTX clamps them
    /// (9.7.8.8–9): by a uniform amount in vectors, by per-thread amounts lane by lane.
    fn shift_by(
        &mut self,
        op: IntBinOp,
        ty: Type,
        x: LaneVal<P>,
        k: LaneVal<P>,
    ) -> Res<LaneVal<P>> {
        if ty.bits() != 32 {
            return refuse(format!("per-thread .{} shifts", ty.ptx()));
        }
        let x = self.lanes_of(x, ty)?;
        let signed = ty.is_signed();
        // One shift, of a vector or a word by a word: an arithmetic shift right by 31 at
        // most, the others 0 from 32 on.
        let shift = |b: &mut FunctionBuilder<'f>, v: Value, k: Value| {
            if op == IntBinOp::Shr && signed {
                let k31 = b.ins().iconst(types::I32, 31);
                let k31 = b.ins().umin(k, k31);
                return b.ins().sshr(v, k31);
            }
            let r = match op {
                IntBinOp::Shl => b.ins().ishl(v, k),
                _ => b.ins().ushr(v, k),
            };
            let zero = b.ins().iconst(types::I32, 0);
            let zero = if b.func.dfg.value_type(v).is_vector() {
                b.ins().splat(V, zero)
            } else {
                zero
            };
            let wide = b.ins().icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, k, 32);
            b.ins().select(wide, zero, r)
        };
        let v = match k {
            LaneVal::Uniform(k) => self.map(x, |b, v| shift(b, v, k)),
            _ => {
                let k = self.lanes_of(k, Type::U32)?;
                self.each_lane(x, k, shift)
            }
        };
        Ok(LaneVal::Varying(v))
    }

    /// The bits under `mask` (2^k - 1) of a sequence's first lane `base` (stride `s`, with
    /// 0 < 31 × s ≤ `mask`): those of every lane count on from them, unless the lanes straddle
    /// a multiple of 2^k, which sends the group back as a wrapped sequence does.
    fn low_bits(&mut self, base: Value, s: i64, mask: i64) -> Value {
        let low = self.b().ins().band_imm_u(base, mask);
        let last = self.b().ins().iadd_imm_s(low, (Self::LANES as i64 - 1) * s);
        let straddles = self
            .b()
            .ins()
            .icmp_imm_u(IntCC::UnsignedGreaterThan, last, mask);
        self.note_wrap(straddles);
        low
    }

    /// `f` on each lane's words of `x` and `y`, for what has no vector form on SSE
    /// (per-lane shift amounts, bit counts).
    fn each_lane(
        &mut self,
        x: Vecs<P>,
        y: Vecs<P>,
        f: impl Fn(&mut FunctionBuilder<'f>, Value, Value) -> Value,
    ) -> Vecs<P> {
        self.map2(x, y, |b, v, w| {
            let mut out = v;
            for lane in 0..4u8 {
                let (a, c) = (b.ins().extractlane(v, lane), b.ins().extractlane(w, lane));
                let r = f(b, a, c);
                out = b.ins().insertlane(out, r, lane);
            }
            out
        })
    }

    fn add_sub(&mut self, op: IntBinOp, ty: Type, x: LaneVal<P>, y: LaneVal<P>) -> Res<LaneVal<P>> {
        let sub = op == IntBinOp::Sub;
        let parts = |v: LaneVal<P>| match v {
            LaneVal::Uniform(b) => Some((b, 0)),
            LaneVal::Affine(b, s) => Some((b, s)),
            LaneVal::Varying(_) => None,
        };
        if let (Some((b1, s1)), Some((b2, s2))) = (parts(x), parts(y)) {
            let (base, s) = if sub {
                (self.b().ins().isub(b1, b2), s1.wrapping_sub(s2))
            } else {
                (self.b().ins().iadd(b1, b2), s1.wrapping_add(s2))
            };
            return Ok(self.affine(base, s, ty.bits()));
        }
        if ty.bits() != 32 {
            return refuse(format!("per-thread .{} values", ty.ptx()));
        }
        let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
        let v = if sub {
            self.map2(x, y, |b, x, y| b.ins().isub(x, y))
        } else {
            self.map2(x, y, |b, x, y| b.ins().iadd(x, y))
        };
        Ok(LaneVal::Varying(v))
    }

    /// `mul.lo` and `mul.wide` (a sequence times a constant stays a sequence).
    fn mul(&mut self, mode: MulMode, ty: Type, a: &Operand, b: &Operand) -> Res<LaneVal<P>> {
        let x = self.read(a, ty)?;
        let y = self.read(b, ty)?;
        let constant = |l: &Self, v: LaneVal<P>| match v {
            LaneVal::Uniform(c) => l.l.const_of(c),
            _ => None,
        };
        let (seq, k) = match (x, y) {
            (LaneVal::Affine(..), _) if constant(self, y).is_some() => (x, constant(self, y)),
            (_, LaneVal::Affine(..)) if constant(self, x).is_some() => (y, constant(self, x)),
            _ => (x, None),
        };
        match mode {
            MulMode::Lo => {
                if let (LaneVal::Affine(base, s), Some(k)) = (seq, k) {
                    let v = self.b().ins().imul_imm_s(base, k);
                    return Ok(self.affine(v, s.wrapping_mul(k), ty.bits()));
                }
                if let (LaneVal::Uniform(p), LaneVal::Uniform(q)) = (x, y) {
                    return Ok(LaneVal::Uniform(self.b().ins().imul(p, q)));
                }
                if ty.bits() != 32 {
                    return refuse(format!("per-thread .{} products", ty.ptx()));
                }
                let (x, y) = (self.lanes_of(x, ty)?, self.lanes_of(y, ty)?);
                Ok(LaneVal::Varying(
                    self.map2(x, y, |b, x, y| b.ins().imul(x, y)),
                ))
            }
            MulMode::Wide => {
                let wide = ty.widened();
                let signed = ty.is_signed();
                if let (LaneVal::Affine(base, s), Some(k)) = (seq, k) {
                    let w = self.affine_conv(base, s, ty, wide, signed)?;
                    // The constant as the wide type: sign- or zero-extended from `ty`.
                    let bits = ty.bits();
                    let k = if signed {
                        norm(k, bits)
                    } else {
                        k & ((1i64 << bits) - 1)
                    };
                    return Ok(match w {
                        LaneVal::Affine(b, s) => {
                            let v = self.b().ins().imul_imm_s(b, k);
                            self.affine(v, s.wrapping_mul(k), wide.bits())
                        }
                        other => other,
                    });
                }
                refuse("a per-thread mul.wide other than a sequence times a constant")
            }
            MulMode::Hi => refuse("a per-thread mul.hi"),
        }
    }

    /// `seq op other` as a [`SeqCmp`], where `seq` is one without a combination and
    /// `other` is uniform.
    fn seq_with(&mut self, op: IntBinOp, seq: RegId, other: RegId) -> Option<SeqCmp> {
        let c = self.seq_cmps.get(&seq).copied()?;
        if c.with.is_some() || self.shape[other.0 as usize] != Shape::Uniform {
            return None;
        }
        let u = self.l.b.use_var(self.l.regs[other.0 as usize]);
        let alike = c.alike && self.alike.as_ref().is_some_and(|k| k.uniform(other));
        Some(SeqCmp {
            with: Some((op, u)),
            alike,
            ..c
        })
    }

    fn bool_op(&mut self, op: BoolOp, a: Value, b: Value) -> Value {
        match op {
            BoolOp::And => self.b().ins().band(a, b),
            BoolOp::Or => self.b().ins().bor(a, b),
            BoolOp::Xor => self.b().ins().bxor(a, b),
        }
    }

    /// A float comparison of `f32x4`s as a lane mask; x64 has no vector `one` and `ueq`.
    fn fcmp(&mut self, cc: FloatCC, x: Value, y: Value) -> Value {
        let ins = |l: &mut Self, cc| l.b().ins().fcmp(cc, x, y);
        match cc {
            FloatCC::OrderedNotEqual => {
                let o = ins(self, FloatCC::Ordered);
                let ne = ins(self, FloatCC::NotEqual);
                self.b().ins().band(o, ne)
            }
            FloatCC::UnorderedOrEqual => {
                let u = ins(self, FloatCC::Unordered);
                let eq = ins(self, FloatCC::Equal);
                self.b().ins().bor(u, eq)
            }
            cc => ins(self, cc),
        }
    }

    /// f32 sources as `f32x4`s, flushed with `.ftz`.
    fn f32_sources<const N: usize>(&mut self, ops: [&Operand; N], ftz: bool) -> Res<[Vecs<P>; N]> {
        let mut out = [None; N];
        for (o, op) in out.iter_mut().zip(ops) {
            let v = self.read(op, Type::F32)?;
            let mut v = self.lanes_of(v, Type::F32)?;
            for x in v.iter_mut() {
                let f = self.flush(ftz, *x);
                *x = self.as_f32x4(f);
            }
            *o = Some(v);
        }
        Ok(out.map(|v| v.expect("every source read")))
    }

    /// f32 bits with every NaN made the canonical NaN.
    pub(super) fn canonical_f32x4(&mut self, bits: Value) -> Value {
        let f = self.as_f32x4(bits);
        let nan = self.b().ins().fcmp(FloatCC::Unordered, f, f);
        let canonical = self.splat(crate::softfloat::Fmt::F32.default_nan() as i64);
        self.b().ins().bitselect(nan, canonical, bits)
    }

    /// `.ftz` on f32 bits: a subnormal becomes a zero of its sign.
    fn flush(&mut self, ftz: bool, v: Value) -> Value {
        if !ftz {
            return v;
        }
        let exp_mask = self.splat(0x7f80_0000);
        let exp = self.b().ins().band(v, exp_mask);
        let zero = self.splat(0);
        let tiny = self.b().ins().icmp(IntCC::Equal, exp, zero);
        let sign = self.splat(i32::MIN as i64);
        let signs = self.b().ins().band(v, sign);
        self.b().ins().bitselect(tiny, signs, v)
    }

    /// The scalar lowering's tail on an `f32x4` result: canonical NaN (unless the NaN
    /// plan leaves it to the readers that can see payloads, as the scalar lowering does),
    /// `.ftz`, `.sat`; bits out.
    fn finish(&mut self, r: Value, ftz: bool, sat: bool) -> Value {
        let bits = self.as_i32x4(r);
        let unobserved = self.l.nan.unobserved.get(self.l.at).copied();
        let v = match unobserved {
            Some(true) => bits,
            _ => self.canonical_f32x4(bits),
        };
        let v = self.flush(ftz, v);
        if !sat {
            return v;
        }
        // [0.0, 1.0]; NaN and -0.0 become +0.0.
        let one = self.splat(1.0f32.to_bits() as i64);
        let zero = self.splat(0);
        let (f, fone, fzero) = (self.as_f32x4(v), self.as_f32x4(one), self.as_f32x4(zero));
        let ge1 = self.b().ins().fcmp(FloatCC::GreaterThanOrEqual, f, fone);
        let s = self.b().ins().bitselect(ge1, one, v);
        let gt0 = self.b().ins().fcmp(FloatCC::GreaterThan, f, fzero);
        self.b().ins().bitselect(gt0, s, zero)
    }

    /// A constant in every lane (made once a group).
    pub(super) fn splat(&mut self, k: i64) -> Value {
        if let Some(v) = self.splats.get(&k) {
            return *v;
        }
        let s = self.b().ins().iconst(types::I32, k);
        let v = self.b().ins().splat(V, s);
        self.splats.insert(k, v);
        v
    }

    pub(super) fn vconst(&mut self, lanes: [i32; 4]) -> Value {
        let bytes: Vec<u8> = lanes.iter().flat_map(|v| v.to_le_bytes()).collect();
        let c = self
            .b()
            .func
            .dfg
            .constants
            .insert(ConstantData::from(bytes));
        self.b().ins().vconst(V, c)
    }

    fn as_f32x4(&mut self, v: Value) -> Value {
        self.b().ins().bitcast(types::F32X4, MemFlagsData::new(), v)
    }

    fn as_i32x4(&mut self, v: Value) -> Value {
        self.b().ins().bitcast(V, MemFlagsData::new(), v)
    }

    /// `f` on each part.
    pub(super) fn map(
        &mut self,
        x: Vecs<P>,
        f: impl Fn(&mut FunctionBuilder<'f>, Value) -> Value,
    ) -> Vecs<P> {
        x.map(|v| f(&mut self.l.b, v))
    }

    /// `f` on each pair of parts.
    pub(super) fn map2(
        &mut self,
        x: Vecs<P>,
        y: Vecs<P>,
        f: impl Fn(&mut FunctionBuilder<'f>, Value, Value) -> Value,
    ) -> Vecs<P> {
        std::array::from_fn(|p| f(&mut self.l.b, x[p], y[p]))
    }
}
