//! `cvt` (PTX ISA 9.7.9.21) and the comparison and selection instructions `setp selp slct`
//! (9.7.7.1–4), lowered with the rules of `interp::convert`.

use super::fold::Combine;
use super::{Lower, clif};
use crate::ast::{BoolOp, CmpOp, CvtRounding, Inst, Rounding, Type};
use crate::jit::runtime::float_code;
use crate::softfloat::{self as sf, Fmt};
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value, types};

impl Lower<'_, '_> {
    pub(super) fn convert(&mut self, inst: &Inst) {
        match inst {
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
            } => {
                let x = self.get(a, *ty);
                let y = self.get(b, *ty);
                let t = self.compare(*cmp, *ty, *ftz, x, y);
                let one = self.iconst(types::I8, 1);
                let not_t = self.combine(Combine::Xor, t, one);
                let (pv, qv) = match (combine, c) {
                    (Some(op), Some(c)) => {
                        let c = self.get(c, Type::Pred);
                        (self.bool_op(*op, t, c), self.bool_op(*op, not_t, c))
                    }
                    _ => (t, not_t),
                };
                // q first: `setp %p|%p` leaves p in the register (docs/semantics.md).
                self.set(q, Type::Pred, qv);
                self.set(p, Type::Pred, pv);
            }
            Inst::Selp { ty, d, a, b, c } => {
                let x = self.get(a, *ty);
                let y = self.get(b, *ty);
                let c = self.get(c, Type::Pred);
                let v = self.select_k(c, x, y);
                self.set(d, *ty, v);
            }
            Inst::Slct {
                ty,
                cty,
                ftz,
                d,
                a,
                b,
                c,
            } => {
                // a if c ≥ 0: for an f32 c, -0.0 counts as ≥ 0 and NaN as not.
                let cv = self.get(c, *cty);
                let take_a = if *cty == Type::F32 {
                    let cv = self.flush_if(*ftz, *cty, cv);
                    let zero = self.zero(Type::F32);
                    self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, cv, zero)
                } else {
                    self.b
                        .ins()
                        .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, cv, 0)
                };
                let x = self.get(a, *ty);
                let y = self.get(b, *ty);
                let v = self.b.ins().select(take_a, x, y);
                self.set(d, *ty, v);
            }
            Inst::Cvt {
                dty,
                aty,
                rnd,
                ftz,
                sat,
                d,
                a,
            } => {
                let x = self.get(a, *aty);
                let v = match (aty.is_float(), dty.is_float()) {
                    (false, false) => self.int_to_int(*dty, *aty, *sat, x),
                    (false, true) => {
                        let r = match rnd {
                            Some(CvtRounding::Float(r)) => *r,
                            _ => Rounding::Rn,
                        };
                        let v = self.int_to_float(*dty, *aty, r, x);
                        let v = self.flush_if(*ftz, *dty, v);
                        if *sat { self.saturate(*dty, v) } else { v }
                    }
                    (true, false) => {
                        let x = self.flush_if(*ftz, *aty, x);
                        let r = match rnd {
                            Some(CvtRounding::Int(r)) => r.direction(),
                            _ => Rounding::Rz,
                        };
                        self.float_to_int(*dty, *aty, r, x)
                    }
                    (true, true) => {
                        let x = self.flush_if(*ftz, *aty, x);
                        let v = match rnd {
                            Some(CvtRounding::Int(r)) => self.round_integral(r.direction(), x),
                            Some(CvtRounding::Float(Rounding::Rn)) | None => {
                                self.float_to_float(*dty, *aty, x)
                            }
                            Some(CvtRounding::Float(r)) => {
                                let code = float_code(Fmt::of(*aty), *r, 0);
                                self.soft(*dty, "rt_convert", code, &[x], false)
                            }
                        };
                        // With no modifier, cvt.f32.f32 and cvt.f64.f64 are moves (a NaN
                        // kept as it is, as on the hardware).
                        let plain = rnd.is_none() && !*ftz && dty == aty;
                        let v = if plain {
                            v
                        } else {
                            self.converted_nan(*dty, *aty, x, v)
                        };
                        let v = self.flush_if(*ftz, *dty, v);
                        if *sat { self.saturate(*dty, v) } else { v }
                    }
                };
                self.set(d, *dty, v);
            }
            _ => unreachable!("not a conversion or comparison"),
        }
    }

    /// Integer to integer: extended by the source's signedness, then truncated, or with
    /// `.sat` clamped to the destination's range. The clamp is exact in i64: a signed source
    /// is sign-extended (bounds compared signed, negatives to 0 for unsigned destinations); an
    /// unsigned one is zero-extended and only bounded above, compared unsigned.
    fn int_to_int(&mut self, dty: Type, aty: Type, sat: bool, x: Value) -> Value {
        let dt = clif(dty);
        if !sat {
            return self.resize(x, dt, aty.is_signed());
        }
        let w = self.resize(x, types::I64, aty.is_signed());
        let bits = dty.bits();
        let max = if dty.is_signed() {
            (1u64 << (bits - 1)) - 1
        } else {
            dty.mask()
        };
        let hi = self.iconst(types::I64, max);
        let w = if aty.is_signed() {
            let lo = if dty.is_signed() {
                (-(1i64 << (bits - 1))) as u64
            } else {
                0
            };
            let lo = self.iconst(types::I64, lo);
            let w = self.b.ins().smax(w, lo);
            if dty.is_signed() {
                self.b.ins().smin(w, hi)
            } else {
                // Non-negative now: an unsigned bound.
                self.b.ins().umin(w, hi)
            }
        } else {
            self.b.ins().umin(w, hi)
        };
        self.resize(w, dt, false)
    }

    /// Integer to float, rounded once in mode `r`.
    fn int_to_float(&mut self, dty: Type, aty: Type, r: Rounding, x: Value) -> Value {
        let signed = aty.is_signed();
        let w = self.resize(x, types::I64, signed);
        if r == Rounding::Rn {
            return if signed {
                self.b.ins().fcvt_from_sint(clif(dty), w)
            } else {
                self.b.ins().fcvt_from_uint(clif(dty), w)
            };
        }
        let code = self
            .b
            .ins()
            .iconst(types::I32, float_code(Fmt::of(dty), r, 0) as i64);
        let s = self.b.ins().iconst(types::I32, signed as i64);
        let bits = self
            .helper("rt_from_int", &[code, w, s])
            .expect("rt_from_int returns bits");
        self.float_of_bits(dty, bits)
    }

    /// Float to integer: rounded to an integral value in mode `r`, saturated to the
    /// destination's range, a NaN to [`sf::nan_to_int`] (Cranelift's saturating conversions
    /// give 0 for it, and saturate as PTX for 32- and 64-bit destinations; narrower ones go
    /// through the soft-float reference).
    fn float_to_int(&mut self, dty: Type, aty: Type, r: Rounding, x: Value) -> Value {
        if dty.bits() >= 32 {
            let rounded = self.round_integral(r, x);
            let v = if dty.is_signed() {
                self.b.ins().fcvt_to_sint_sat(clif(dty), rounded)
            } else {
                self.b.ins().fcvt_to_uint_sat(clif(dty), rounded)
            };
            let nan = sf::nan_to_int(Fmt::of(aty), dty.bits());
            if nan == 0 {
                return v;
            }
            let is_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
            let nan = self.iconst(clif(dty), nan);
            return self.b.ins().select(is_nan, nan, v);
        }
        let code = self
            .b
            .ins()
            .iconst(types::I32, float_code(Fmt::of(aty), r, 0) as i64);
        let bits = self.float_bits(x);
        let sw = dty.bits() as i64 | if dty.is_signed() { 256 } else { 0 };
        let sw = self.b.ins().iconst(types::I32, sw);
        let v = self
            .helper("rt_to_int", &[code, bits, sw])
            .expect("rt_to_int returns bits");
        self.resize(v, clif(dty), false)
    }

    /// `v`, the conversion of `x` from `aty` to `dty`, or if `x` is a NaN the NaN NVIDIA
    /// hardware gives ([`Fmt::convert_nan`]): from the bits, whatever the host made.
    fn converted_nan(&mut self, dty: Type, aty: Type, x: Value, v: Value) -> Value {
        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let nan = match (Fmt::of(aty), Fmt::of(dty)) {
            // Within a format: what the arithmetic makes of a NaN operand.
            (from, to) if from == to => self.quiet_nan(dty, x),
            (Fmt::F64, Fmt::F32) => {
                // The sign, and the significand's top 23 bits, quieted.
                let bits = self.bitcast(types::I64, x);
                let sign = self.b.ins().ushr_imm_u(bits, 32);
                let sign = self.b.ins().band_imm_u(sign, 0x8000_0000);
                let frac = self.b.ins().ushr_imm_u(bits, 29);
                let frac = self.b.ins().band_imm_u(frac, 0x7f_ffff);
                let r = self.b.ins().bor(sign, frac);
                let r = self.b.ins().bor_imm_u(r, 0x7fc0_0000);
                let r = self.b.ins().ireduce(types::I32, r);
                self.bitcast(types::F32, r)
            }
            _ => {
                // f32 to f64: the sign and the whole significand, quieted.
                let bits = self.bitcast(types::I32, x);
                let bits = self.b.ins().uextend(types::I64, bits);
                let sign = self.b.ins().band_imm_u(bits, 0x8000_0000);
                let sign = self.b.ins().ishl_imm_u(sign, 32);
                let frac = self.b.ins().band_imm_u(bits, 0x7f_ffff);
                let frac = self.b.ins().ishl_imm_u(frac, 29);
                let r = self.b.ins().bor(sign, frac);
                let r = self.b.ins().bor_imm_u(r, 0x7ff8_0000_0000_0000);
                self.bitcast(types::F64, r)
            }
        };
        self.b.ins().select(is_nan, nan, v)
    }

    /// Rounds to an integral value in the same format.
    fn round_integral(&mut self, r: Rounding, x: Value) -> Value {
        match r {
            Rounding::Rn => self.b.ins().nearest(x),
            Rounding::Rz => self.b.ins().trunc(x),
            Rounding::Rm => self.b.ins().floor(x),
            Rounding::Rp => self.b.ins().ceil(x),
        }
    }

    /// f32 → f64 (exact), f64 → f32 (to nearest), or the same type.
    fn float_to_float(&mut self, dty: Type, aty: Type, x: Value) -> Value {
        match (aty, dty) {
            (Type::F32, Type::F64) => self.b.ins().fpromote(types::F64, x),
            (Type::F64, Type::F32) => self.b.ins().fdemote(types::F32, x),
            _ => x,
        }
    }

    /// The comparison of `setp` (tables 26–27) as an i8 0/1.
    fn compare(&mut self, cmp: CmpOp, ty: Type, ftz: bool, x: Value, y: Value) -> Value {
        if ty.is_float() {
            let x = self.flush_if(ftz, ty, x);
            let y = self.flush_if(ftz, ty, y);
            return self.b.ins().fcmp(float_cc(cmp), x, y);
        }
        // Predicates compare as their 0/1 values; known operands give a known result.
        self.icmp_k(int_cc(cmp, ty.is_signed()), x, y)
    }

    fn bool_op(&mut self, op: BoolOp, a: Value, b: Value) -> Value {
        let op = match op {
            BoolOp::And => Combine::And,
            BoolOp::Or => Combine::Or,
            BoolOp::Xor => Combine::Xor,
        };
        self.combine(op, a, b)
    }
}

/// The condition of a float comparison of `setp` (table 27).
pub(super) fn float_cc(cmp: CmpOp) -> FloatCC {
    use CmpOp::*;
    match cmp {
        Eq => FloatCC::Equal,
        Ne => FloatCC::OrderedNotEqual,
        Lt => FloatCC::LessThan,
        Le => FloatCC::LessThanOrEqual,
        Gt => FloatCC::GreaterThan,
        Ge => FloatCC::GreaterThanOrEqual,
        Equ => FloatCC::UnorderedOrEqual,
        Neu => FloatCC::NotEqual,
        Ltu => FloatCC::UnorderedOrLessThan,
        Leu => FloatCC::UnorderedOrLessThanOrEqual,
        Gtu => FloatCC::UnorderedOrGreaterThan,
        Geu => FloatCC::UnorderedOrGreaterThanOrEqual,
        Num => FloatCC::Ordered,
        Nan => FloatCC::Unordered,
        Lo | Ls | Hi | Hs => unreachable!("validated: integer-only comparison"),
    }
}

/// The condition of an integer comparison of `setp` (table 26).
pub(super) fn int_cc(cmp: CmpOp, signed: bool) -> IntCC {
    use CmpOp::*;
    match cmp {
        Eq => IntCC::Equal,
        Ne => IntCC::NotEqual,
        Lt if signed => IntCC::SignedLessThan,
        Le if signed => IntCC::SignedLessThanOrEqual,
        Gt if signed => IntCC::SignedGreaterThan,
        Ge if signed => IntCC::SignedGreaterThanOrEqual,
        Lt | Lo => IntCC::UnsignedLessThan,
        Le | Ls => IntCC::UnsignedLessThanOrEqual,
        Gt | Hi => IntCC::UnsignedGreaterThan,
        Ge | Hs => IntCC::UnsignedGreaterThanOrEqual,
        _ => unreachable!("validated: float-only comparison"),
    }
}
