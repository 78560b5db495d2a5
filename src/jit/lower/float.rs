//! Floating-point instructions (PTX ISA 9.7.3) lowered to Cranelift, with the same rules as
//! `interp::float`: round-to-nearest arithmetic is the host's (exact IEEE-754); directed
//! add/sub/mul/fma are computed inline from it and the sign of its exact error
//! (`directed.rs`); other directed operations and the approximate functions call the runtime;
//! `.ftz` flushes subnormal inputs and results, NaN results become those of NVIDIA hardware
//! (the canonical NaN for f32; for f64 the first NaN operand in the instruction's order of
//! precedence, quieted, which is not always the one x86 picks), `.sat` clamps to [0.0, 1.0]
//! with NaN → +0.0.

mod directed;
pub(super) mod nan;

use super::{Lower, clif, int_type};
use crate::ast::{FloatBinOp, FloatUnOp, Inst, Precision, Rounding, Type};
use crate::jit::runtime::{bin_op_code, float_code, un_op_code};
use crate::softfloat::Fmt;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value, types};
use directed::Exact;

impl Lower<'_, '_> {
    pub(super) fn float(&mut self, inst: &Inst) {
        match inst {
            Inst::FloatBin {
                op,
                ty,
                prec,
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                let x = self.get(a, *ty);
                let x = self.flush_if(*ftz, *ty, x);
                let y = self.get(b, *ty);
                let y = self.flush_if(*ftz, *ty, y);
                let (r, sat) = match (op, prec) {
                    (FloatBinOp::Min | FloatBinOp::Max, _) => (self.min_max(*op, x, y), false),
                    // .approx and .full divisions are computed correctly rounded, within
                    // PTX's bounds (as the interpreter does).
                    (_, Precision::Ieee(Rounding::Rn) | Precision::Approx | Precision::Full) => {
                        (self.host_rn(*op, x, y), *sat)
                    }
                    // Inline where the host has FMA (the f64 residuals need it) and
                    // hardware rounding is on (else everything stays on the soft-float path).
                    (FloatBinOp::Add | FloatBinOp::Sub | FloatBinOp::Mul, Precision::Ieee(r))
                        if self.sh.hw_fma =>
                    {
                        (self.directed(*ty, *r, Exact::of(*op), &[x, y]), *sat)
                    }
                    (_, Precision::Ieee(r)) => {
                        let code = float_code(Fmt::of(*ty), *r, bin_op_code(*op));
                        (
                            self.soft(*ty, self.arith_helper(), code, &[x, y], false),
                            *sat,
                        )
                    }
                };
                let operands = Fmt::binary_nan_order(*op).map(|k| [x, y][k]);
                let r = self.finish_result(*ty, *ftz, sat, r, &operands);
                self.set(d, *ty, r);
            }
            Inst::FloatUn {
                op,
                ty,
                prec,
                ftz,
                d,
                a,
            } => {
                let x = self.get(a, *ty);
                let x = self.flush_if(*ftz, *ty, x);
                let rnd = match prec {
                    Precision::Ieee(r) => *r,
                    _ => Rounding::Rn,
                };
                let r = match op {
                    // neg and abs act on the sign bit; a NaN becomes the hardware's (the
                    // canonical NaN for f32, the operand quieted for f64).
                    FloatUnOp::Neg | FloatUnOp::Abs => {
                        let bits = self.bitcast(int_type(ty.bits()), x);
                        let sign = self.iconst(int_type(ty.bits()), Fmt::of(*ty).sign_bit());
                        let r = if *op == FloatUnOp::Neg {
                            self.b.ins().bxor(bits, sign)
                        } else {
                            let keep = self.b.ins().bnot(sign);
                            self.b.ins().band(bits, keep)
                        };
                        let r = self.bitcast(clif(*ty), r);
                        let r = self.flush_if(*ftz, *ty, r);
                        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                        let nan = self.quiet_nan(*ty, x);
                        let r = self.b.ins().select(is_nan, nan, r);
                        self.set(d, *ty, r);
                        return;
                    }
                    // The f64 approximations with .ftz work on the high word, as on the
                    // hardware; the result is final.
                    FloatUnOp::Rcp | FloatUnOp::Rsqrt
                        if *ty == Type::F64 && *ftz && *prec == Precision::Approx =>
                    {
                        let rsqrt = (*op == FloatUnOp::Rsqrt) as u64;
                        let which = self.iconst(types::I32, rsqrt);
                        let bits = self.float_bits(x);
                        let r = self
                            .helper("rt_approx_ftz_f64", &[which, bits])
                            .expect("rt_approx_ftz_f64 returns bits");
                        let r = self.float_of_bits(Type::F64, r);
                        self.set(d, *ty, r);
                        return;
                    }
                    FloatUnOp::Sqrt if rnd == Rounding::Rn => self.b.ins().sqrt(x),
                    FloatUnOp::Rcp if rnd == Rounding::Rn => {
                        let one = self.one(*ty);
                        self.b.ins().fdiv(one, x)
                    }
                    FloatUnOp::Rcp => {
                        let one = self.one(*ty);
                        let code = float_code(Fmt::of(*ty), rnd, bin_op_code(FloatBinOp::Div));
                        self.soft(*ty, self.arith_helper(), code, &[one, x], false)
                    }
                    FloatUnOp::Sqrt if self.sh.hw_arith => {
                        let code = float_code(Fmt::of(*ty), rnd, 0);
                        self.soft(*ty, "rt_sqrt_hw", code, &[x], false)
                    }
                    _ => {
                        let code = float_code(Fmt::of(*ty), rnd, un_op_code(*op));
                        self.soft(*ty, "rt_unary", code, &[x], false)
                    }
                };
                let r = self.finish(*ty, *ftz, false, r, &[x]);
                self.set(d, *ty, r);
            }
            Inst::Fma {
                ty,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => {
                let mut v = [a, b, c].map(|o| self.get(o, *ty));
                for x in v.iter_mut() {
                    *x = self.flush_if(*ftz, *ty, *x);
                }
                let r = if *rnd == Rounding::Rn {
                    self.b.ins().fma(v[0], v[1], v[2])
                } else if self.sh.hw_fma {
                    self.directed(*ty, *rnd, Exact::Fma, &v)
                } else {
                    let code = float_code(Fmt::of(*ty), *rnd, 0);
                    let helper = if self.sh.hw_fma {
                        "rt_fma_hw"
                    } else {
                        "rt_fma"
                    };
                    self.soft(*ty, helper, code, &v, false)
                };
                let operands = Fmt::FMA_NAN_ORDER.map(|k| v[k]);
                let r = self.finish_result(*ty, *ftz, *sat, r, &operands);
                self.set(d, *ty, r);
            }
            _ => unreachable!("not a float instruction"),
        }
    }

    /// The helper for directed add/sub/mul/div: hardware or soft-float.
    fn arith_helper(&self) -> &'static str {
        if self.sh.hw_arith {
            "rt_arith_hw"
        } else {
            "rt_arith"
        }
    }

    fn host_rn(&mut self, op: FloatBinOp, x: Value, y: Value) -> Value {
        match op {
            FloatBinOp::Add => self.b.ins().fadd(x, y),
            FloatBinOp::Sub => self.b.ins().fsub(x, y),
            FloatBinOp::Mul => self.b.ins().fmul(x, y),
            _ => self.b.ins().fdiv(x, y),
        }
    }

    /// `min`/`max` (9.7.3.11–12): a NaN operand yields the other operand (two NaNs a NaN,
    /// which `finish` makes the hardware's); Cranelift's fmin/fmax order -0.0 below +0.0.
    fn min_max(&mut self, op: FloatBinOp, x: Value, y: Value) -> Value {
        let r = if op == FloatBinOp::Min {
            self.b.ins().fmin(x, y)
        } else {
            self.b.ins().fmax(x, y)
        };
        let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
        let r = self.b.ins().select(x_nan, y, r);
        let y_nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
        self.b.ins().select(y_nan, x, r)
    }

    /// Calls a soft-float helper on bit patterns and returns a float of type `ty`; from a
    /// cold block (`cold`), one of [`COLD_HELPERS`](super::COLD_HELPERS) through its
    /// trampoline.
    pub(super) fn soft(
        &mut self,
        ty: Type,
        helper: &'static str,
        code: u32,
        args: &[Value],
        cold: bool,
    ) -> Value {
        let mut call = vec![self.b.ins().iconst(types::I32, code as i64)];
        for a in args {
            let bits = self.float_bits(*a);
            call.push(bits);
        }
        let r = if cold {
            self.cold_helper(helper, &call)
        } else {
            self.helper(helper, &call)
        };
        let r = r.expect("soft-float helpers return bits");
        self.float_of_bits(ty, r)
    }

    /// A float's bits, zero-extended to i64.
    pub(super) fn float_bits(&mut self, v: Value) -> Value {
        let t = self.b.func.dfg.value_type(v);
        let bits = self.bitcast(int_type(t.bits()), v);
        self.resize(bits, types::I64, false)
    }

    /// The float of type `ty` whose bits are the low bits of an i64.
    pub(super) fn float_of_bits(&mut self, ty: Type, v: Value) -> Value {
        let bits = self.resize(v, int_type(ty.bits()), false);
        self.bitcast(clif(ty), bits)
    }

    fn one(&mut self, ty: Type) -> Value {
        let bits = match ty {
            Type::F32 => 1.0f32.to_bits() as u64,
            _ => 1.0f64.to_bits(),
        };
        self.constant(ty, bits)
    }

    /// `.ftz`: a subnormal (exponent field 0) becomes a zero of the same sign.
    pub(super) fn flush_if(&mut self, ftz: bool, ty: Type, v: Value) -> Value {
        if !ftz {
            return v;
        }
        let it = int_type(ty.bits());
        let f = Fmt::of(ty);
        let bits = self.bitcast(it, v);
        let exp_mask = match f {
            Fmt::F32 => 0x7f80_0000u64,
            Fmt::F64 => 0x7ff0_0000_0000_0000,
        };
        let exp = self.b.ins().band_imm_s(bits, exp_mask as i64);
        let tiny = self.b.ins().icmp_imm_s(IntCC::Equal, exp, 0);
        let sign = self.iconst(it, f.sign_bit());
        let zero = self.b.ins().band(bits, sign);
        let r = self.b.ins().select(tiny, zero, bits);
        self.bitcast(clif(ty), r)
    }

    /// Any NaN becomes the canonical NaN (f32; f64 NaNs need their operands: [`Self::finish`]).
    pub(super) fn canonical(&mut self, ty: Type, v: Value) -> Value {
        let nan = self.b.ins().fcmp(FloatCC::Unordered, v, v);
        let c = self.constant(ty, Fmt::of(ty).default_nan());
        self.b.ins().select(nan, c, v)
    }

    /// The NaN an instruction of type `ty` makes of the NaN operand `x`: for f32 the
    /// canonical NaN, for f64 `x` quieted.
    pub(super) fn quiet_nan(&mut self, ty: Type, x: Value) -> Value {
        let f = Fmt::of(ty);
        if f == Fmt::F32 {
            return self.constant(ty, f.default_nan());
        }
        // An or with a pooled constant: no 64-bit immediate to build.
        let quiet = self.constant(ty, f.quiet_bit());
        self.b.ins().bor(x, quiet)
    }

    /// An f64 result `r`, or if it is a NaN the hardware's ([`Fmt::nan_result`]): the first
    /// NaN of `operands`, quieted, or the default NaN. x86 keeps a NaN operand's payload too
    /// but may pick the other one of two, so the choice is made again, in a cold block.
    fn f64_nan(&mut self, r: Value, operands: &[Value]) -> Value {
        let (nan, join) = (self.b.create_block(), self.b.create_block());
        let out = self.b.append_block_param(join, types::F64);
        let is_nan = self.b.ins().fcmp(FloatCC::Unordered, r, r);
        self.b.ins().brif(is_nan, nan, &[], join, &[r.into()]);

        self.b.switch_to_block(nan);
        self.b.set_cold_block(nan);
        let mut v = self.constant(Type::F64, Fmt::F64.default_nan());
        for &x in operands.iter().rev() {
            let x_nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
            let quiet = self.quiet_nan(Type::F64, x);
            v = self.b.ins().select(x_nan, quiet, v);
        }
        self.b.ins().jump(join, &[v.into()]);

        self.b.switch_to_block(join);
        out
    }

    /// `.sat`: clamps to [0.0, 1.0]; NaN and -0.0 become +0.0.
    pub(super) fn saturate(&mut self, ty: Type, v: Value) -> Value {
        let one = self.one(ty);
        let zero = self.zero(ty);
        let ge1 = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, v, one);
        let s = self.b.ins().select(ge1, one, v);
        let gt0 = self.b.ins().fcmp(FloatCC::GreaterThan, v, zero);
        self.b.ins().select(gt0, s, zero)
    }

    /// `finish` for the result of the arithmetic instruction being lowered: without the
    /// canonical NaN where nothing observes it or its readers make it canonical ([`nan::plan`],
    /// f32 only).
    fn finish_result(
        &mut self,
        ty: Type,
        ftz: bool,
        sat: bool,
        r: Value,
        operands: &[Value],
    ) -> Value {
        if !self.nan.unobserved.get(self.at).copied().unwrap_or(false) {
            return self.finish(ty, ftz, sat, r, operands);
        }
        let r = self.flush_if(ftz, ty, r);
        if sat { self.saturate(ty, r) } else { r }
    }

    /// The common tail: the hardware's NaN (from `operands`, in their order of precedence,
    /// for f64), then `.ftz` on the result, then `.sat`.
    pub(super) fn finish(
        &mut self,
        ty: Type,
        ftz: bool,
        sat: bool,
        r: Value,
        operands: &[Value],
    ) -> Value {
        let r = if ty == Type::F64 {
            self.f64_nan(r, operands)
        } else {
            self.canonical(ty, r)
        };
        let r = self.flush_if(ftz, ty, r);
        if sat { self.saturate(ty, r) } else { r }
    }
}
