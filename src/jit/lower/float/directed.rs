//! Directed rounding (`.rz`, `.rm`, `.rp`) of add, sub, mul and fma computed inline, from the
//! round-to-nearest result and the sign of its exact error: no rounding-mode state, no call
//! on the common path. Why each case is exact is written down in
//! [docs/semantics.md](../../../../docs/semantics.md#directed-rounding); in short:
//!
//! - `r = RN(x)` is the host's result for the exact value `x`, `g` a value with the sign of
//!   the error `x − r`. `.rp` moves `r` one float up when `g > 0`, `.rm` one down when
//!   `g < 0`, `.rz` one toward zero when `g` and `r` have opposite signs. On the bit pattern
//!   that is ±1 (sign-magnitude), which also steps from the largest finite number to
//!   infinity and back, and from zero to the smallest subnormal.
//! - An exact zero sum is +0 in round-to-nearest (unless both terms are −0) and −0 in `.rm`
//!   (unless both are +0): for `.rm` such results come from the mirror
//!   `RM(x) = −RN(−x)`, i.e. `−((−a) − b)`, `−(b − a)`, `−((−a)·b + (−c))`.
//! - f32: the operands are exact in f64, so is their product (an f32 fma is one f64 fma).
//!   The f64 result `s` rounded to f32 gives `r`; `s − r` is exact and, when nonzero, has
//!   the sign of the whole error. Only when `s` is an f32 itself does the f64 rounding's own
//!   error decide: TwoSum gives it, in a cold block. Nothing can overflow or underflow in
//!   f64, so every input takes this path; `.rm` of a sum is `.rp` mirrored, which gives its
//!   zeros their sign.
//! - f64: TwoSum (add, sub), the fma residual `fma(a, b, −p)` (mul), and for fma
//!   `t + tl = r − c` (TwoSum) with `w = fma(a, b, −t)`: the error `x − r = (a·b − t) − tl`
//!   has the sign of `w − tl` whenever that is nonzero. An error that is zero only where it
//!   is proved so gives `r` itself; everything else — infinities, NaNs, overflow, tiny
//!   products, and the rare `w = tl ≠ 0` — goes to a cold call of the hardware helper
//!   (`rt_arith_hw`, `rt_fma_hw`).

use super::super::Lower;
use crate::ast::{FloatBinOp, Rounding, Type};
use crate::jit::runtime::{bin_op_code, float_code};
use crate::softfloat::Fmt;
use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value, types};

/// The operations rounded inline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::lower) enum Exact {
    Add,
    Sub,
    Mul,
    Fma,
}

impl Exact {
    pub(in crate::jit::lower) fn of(op: FloatBinOp) -> Exact {
        match op {
            FloatBinOp::Add => Exact::Add,
            FloatBinOp::Sub => Exact::Sub,
            FloatBinOp::Mul => Exact::Mul,
            other => unreachable!("{other:?} is not rounded inline"),
        }
    }
}

/// 2^−968 and 2^−967: an f64 product at least this large has an error the fma residual
/// represents, so its sign is exact (see the module comment).
const F64_TINY_PRODUCT: u64 = 0x0370_0000_0000_0000;
const F64_TINY_T: u64 = 0x0380_0000_0000_0000;

impl Lower<'_, '_> {
    /// `op` on `args` (two, or three for fma) rounded in the directed mode `rnd`: the IEEE
    /// result, before PTX's canonical NaN, `.ftz` and `.sat` (which `finish` applies).
    pub(in crate::jit::lower) fn directed(
        &mut self,
        ty: Type,
        rnd: Rounding,
        op: Exact,
        args: &[Value],
    ) -> Value {
        debug_assert!(rnd != Rounding::Rn);
        match ty {
            Type::F64 => self.directed_f64(rnd, op, args),
            _ => self.directed_f32(rnd, op, args),
        }
    }

    /// f32 through f64: the exact value is `s + e` (`e` = 0 for mul), `s` in f64.
    fn directed_f32(&mut self, rnd: Rounding, op: Exact, v: &[Value]) -> Value {
        let w: Vec<Value> = v.iter().map(|&x| self.promote(x)).collect();
        // .rm of a sum is .rp of the negated sum, negated (for the sign of an exact zero).
        let mirror = rnd == Rounding::Rm && op != Exact::Mul;
        // s = RN(x) in f64, x the exact value (negated for the mirror).
        let s = match op {
            Exact::Mul => self.b.ins().fmul(w[0], w[1]),
            // a·b is exact in f64, so the fused sum rounds once, as the sum of its terms does.
            Exact::Fma if mirror => {
                let na = self.b.ins().fneg(w[0]);
                let nc = self.b.ins().fneg(w[2]);
                self.b.ins().fma(na, w[1], nc)
            }
            Exact::Fma => self.b.ins().fma(w[0], w[1], w[2]),
            Exact::Add | Exact::Sub => {
                let (x, y, sub) = self.f32_sum_terms(op, mirror, &w, None);
                if sub {
                    self.b.ins().fsub(x, y)
                } else {
                    self.b.ins().fadd(x, y)
                }
            }
        };
        let r = self.b.ins().fdemote(types::F32, s);
        let back = self.b.ins().fpromote(types::F64, r);
        // s − back is exact (Sterbenz, or both tiny) and, when nonzero, larger than |e|, so
        // it has the sign of the exact error x − r; it is NaN when s is infinite (exact), and
        // −∞ or +∞ when s overflowed f32 to the other infinity.
        let d = self.b.ins().fsub(s, back);
        let mode = if mirror { Rounding::Rp } else { rnd };
        let bits = if op == Exact::Mul {
            self.f32_step(mode, r, back, d)
        } else {
            // Only when s is an f32 itself (s − back = 0) does the error of s decide:
            // TwoSum's `e`, in a cold block.
            let (common, exact, join) = (
                self.b.create_block(),
                self.b.create_block(),
                self.b.create_block(),
            );
            self.b.append_block_param(join, types::I32);
            let zero = self.b.ins().f64const(0.0);
            let is_f32 = self.b.ins().fcmp(FloatCC::Equal, d, zero);
            self.b.ins().brif(is_f32, exact, &[], common, &[]);

            self.b.switch_to_block(common);
            let bits = self.f32_step(mode, r, back, d);
            self.b.ins().jump(join, &[bits.into()]);

            self.b.switch_to_block(exact);
            self.b.set_cold_block(exact);
            let e = self.f32_sum_error(op, mirror, &w);
            let bits = self.f32_step(mode, r, back, e);
            self.b.ins().jump(join, &[bits.into()]);

            self.b.switch_to_block(join);
            self.b.block_params(join)[0]
        };
        let bits = if mirror {
            self.b.ins().bxor_imm_s(bits, i32::MIN as i64)
        } else {
            bits
        };
        self.bitcast(types::F32, bits)
    }

    /// The bits of the f32 `r` (`back` in f64) stepped by one in `mode` (`.rz` or `.rp`, or
    /// `.rm` of a product) when `g`, the sign carrier of the exact error, asks for it.
    fn f32_step(&mut self, mode: Rounding, r: Value, back: Value, g: Value) -> Value {
        let zero = self.b.ins().f64const(0.0);
        let rb = self.bitcast(types::I32, r);
        match mode {
            Rounding::Rz => {
                // toward zero when g and r have opposite signs; g·r is ±0 when either is
                // zero (f32 values cannot underflow in f64), NaN when g is.
                let h = self.b.ins().fmul(g, back);
                let toward = self.b.ins().fcmp(FloatCC::LessThan, h, zero);
                let toward = self.b.ins().uextend(types::I32, toward);
                self.b.ins().isub(rb, toward)
            }
            _ => {
                let cc = if mode == Rounding::Rp {
                    FloatCC::GreaterThan
                } else {
                    FloatCC::LessThan
                };
                let go = self.b.ins().fcmp(cc, g, zero);
                let up = self.up_step(rb);
                let by = if mode == Rounding::Rp {
                    up
                } else {
                    self.b.ins().ineg(up)
                };
                let none = self.b.ins().iconst(types::I32, 0);
                let by = self.b.ins().select(go, by, none);
                self.b.ins().iadd(rb, by)
            }
        }
    }

    /// TwoSum's error `e` of the f64 sum of the promoted operands `w` (negated for the
    /// mirror): the exact value is `s + e`.
    fn f32_sum_error(&mut self, op: Exact, mirror: bool, w: &[Value]) -> Value {
        let product = (op == Exact::Fma).then(|| self.b.ins().fmul(w[0], w[1]));
        let (x, y, sub) = self.f32_sum_terms(op, mirror, w, product);
        let (_, e) = self.two_sum(x, y, sub);
        e.expect("TwoSum gives an error")
    }

    /// The two terms of the exact f64 sum an f32 `add`, `sub` or (with the exact product
    /// `product`) `fma` computes, negated for the mirror: `x − y` when the flag says so,
    /// else `x + y`.
    fn f32_sum_terms(
        &mut self,
        op: Exact,
        mirror: bool,
        w: &[Value],
        product: Option<Value>,
    ) -> (Value, Value, bool) {
        match (op, mirror) {
            (Exact::Add, false) => (w[0], w[1], false),
            (Exact::Add, true) => (self.b.ins().fneg(w[0]), w[1], true),
            (Exact::Sub, false) => (w[0], w[1], true),
            (Exact::Sub, true) => (w[1], w[0], true),
            (Exact::Fma, _) => {
                let p = product.expect("fma's terms need its product");
                if mirror {
                    (self.b.ins().fneg(p), w[2], true)
                } else {
                    (p, w[2], false)
                }
            }
            (Exact::Mul, _) => unreachable!("a product of f32 values is exact in f64"),
        }
    }

    /// `x` (f32) in f64; a constant is promoted here.
    fn promote(&mut self, x: Value) -> Value {
        match self.float_const_of(x) {
            Some(bits) => {
                let wide = f64::from(f32::from_bits(bits as u32));
                self.constant(Type::F64, wide.to_bits())
            }
            None => self.b.ins().fpromote(types::F64, x),
        }
    }

    /// +1 on the bits of a float r ≥ 0, −1 for r < 0: the step to the next float up.
    fn up_step(&mut self, rb: Value) -> Value {
        let top = self.b.func.dfg.value_type(rb).bits() as i64 - 1;
        let sign = self.b.ins().sshr_imm_s(rb, top);
        self.b.ins().bor_imm_s(sign, 1)
    }

    /// f64: the fast path where the error's sign is proved, an exact result, or a cold call
    /// of the hardware helper.
    fn directed_f64(&mut self, rnd: Rounding, op: Exact, v: &[Value]) -> Value {
        // r: the round-to-nearest result; g: a value with the sign of the exact error x − r
        // when it is finite and nonzero.
        let (r, g, fma_t) = match op {
            Exact::Add | Exact::Sub => {
                let (s, e) = self.two_sum(v[0], v[1], op == Exact::Sub);
                // An overflow anywhere in TwoSum leaves e infinite or NaN.
                (s, e.expect("TwoSum gives an error"), None)
            }
            Exact::Mul => {
                let p = self.b.ins().fmul(v[0], v[1]);
                let np = self.b.ins().fneg(p);
                // RN(a·b − p): nonzero only with the sign of the exact residual; an
                // overflowed p makes it infinite or NaN.
                (p, self.b.ins().fma(v[0], v[1], np), None)
            }
            Exact::Fma => {
                let r = self.b.ins().fma(v[0], v[1], v[2]);
                let (t, tl) = self.two_sum(r, v[2], true);
                let tl = tl.expect("TwoSum gives an error");
                let nt = self.b.ins().fneg(t);
                let w = self.b.ins().fma(v[0], v[1], nt);
                // x − r = (a·b − t) − tl, and w = RN(a·b − t): w − tl, when nonzero, has
                // the sign of x − r (RN is monotonic and tl is a float); an overflow in
                // TwoSum makes it infinite or NaN.
                let g = self.b.ins().fsub(w, tl);
                (r, g, Some((t, tl)))
            }
        };
        let rb = self.bitcast(types::I64, r);
        let gb = self.bitcast(types::I64, g);
        let by = match rnd {
            Rounding::Rz => {
                let differ = self.b.ins().bxor(rb, gb);
                let differ = self.b.ins().ushr_imm_s(differ, 63);
                self.b.ins().ineg(differ)
            }
            _ => {
                // all ones when g < 0
                let below = self.b.ins().sshr_imm_s(gb, 63);
                let up = self.up_step(rb);
                if rnd == Rounding::Rp {
                    self.b.ins().band_not(up, below)
                } else {
                    let by = self.b.ins().band(up, below);
                    self.b.ins().ineg(by)
                }
            }
        };
        let stepped = self.b.ins().iadd(rb, by);
        let fast = self.bitcast(types::F64, stepped);
        // Finite and nonzero: 1 ≤ 2·bits < 2·bits(∞), unsigned.
        let twice = self.b.ins().iadd(gb, gb);
        let less = self.b.ins().iadd_imm_s(twice, -1);
        let ok = self.b.ins().icmp_imm_u(
            IntCC::UnsignedLessThan,
            less,
            (0xffe0_0000_0000_0000u64 - 1) as i64,
        );
        let (check, slow, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.append_block_param(join, types::F64);
        self.b.ins().brif(ok, join, &[fast.into()], check, &[]);

        // No error (g = 0), proved: x = r, which .rm gives the sign of its zeros by the
        // mirror.
        self.b.switch_to_block(check);
        let zero = self.b.ins().f64const(0.0);
        let no_error = self.b.ins().fcmp(FloatCC::Equal, g, zero);
        let exact = match op {
            Exact::Add | Exact::Sub => no_error,
            Exact::Mul => {
                let big = self.at_least(r, F64_TINY_PRODUCT);
                let zeros = self.either_zero(v[0], v[1]);
                let proved = self.b.ins().bor(big, zeros);
                self.b.ins().band(no_error, proved)
            }
            Exact::Fma => {
                let (t, tl) = fma_t.expect("fma keeps t and tl");
                let tl_zero = self.b.ins().fcmp(FloatCC::Equal, tl, zero);
                let big = self.at_least(t, F64_TINY_T);
                let zeros = self.either_zero(v[0], v[1]);
                let proved = self.b.ins().bor(big, zeros);
                let proved = self.b.ins().band(tl_zero, proved);
                self.b.ins().band(no_error, proved)
            }
        };
        let exact_r = if rnd == Rounding::Rm {
            let m = match op {
                Exact::Add => {
                    let na = self.b.ins().fneg(v[0]);
                    self.b.ins().fsub(na, v[1])
                }
                Exact::Sub => self.b.ins().fsub(v[1], v[0]),
                Exact::Mul => self.b.ins().fneg(r),
                Exact::Fma => {
                    let na = self.b.ins().fneg(v[0]);
                    let nc = self.b.ins().fneg(v[2]);
                    self.b.ins().fma(na, v[1], nc)
                }
            };
            self.b.ins().fneg(m)
        } else {
            r
        };
        self.b.ins().brif(exact, join, &[exact_r.into()], slow, &[]);

        self.b.switch_to_block(slow);
        self.b.set_cold_block(slow);
        let hw = match op {
            Exact::Fma => {
                let code = float_code(Fmt::F64, rnd, 0);
                self.soft(Type::F64, "rt_fma_hw", code, v, true)
            }
            _ => {
                let bin = match op {
                    Exact::Add => FloatBinOp::Add,
                    Exact::Sub => FloatBinOp::Sub,
                    _ => FloatBinOp::Mul,
                };
                let code = float_code(Fmt::F64, rnd, bin_op_code(bin));
                self.soft(Type::F64, "rt_arith_hw", code, v, true)
            }
        };
        self.b.ins().jump(join, &[hw.into()]);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// |v| ≥ the f64 with bits `bits`.
    fn at_least(&mut self, v: Value, bits: u64) -> Value {
        let mag = self.b.ins().fabs(v);
        let lo = self.constant(Type::F64, bits);
        self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, mag, lo)
    }

    /// a = 0 or b = 0: the product is exactly zero.
    fn either_zero(&mut self, a: Value, b: Value) -> Value {
        let zero = self.b.ins().f64const(0.0);
        let za = self.b.ins().fcmp(FloatCC::Equal, a, zero);
        let zb = self.b.ins().fcmp(FloatCC::Equal, b, zero);
        self.b.ins().bor(za, zb)
    }

    /// TwoSum (Knuth): `s = RN(a ± b)` and, unless an operation overflowed, the exact error
    /// `e` with `s + e = a ± b`.
    fn two_sum(&mut self, a: Value, b: Value, sub: bool) -> (Value, Option<Value>) {
        let s = if sub {
            self.b.ins().fsub(a, b)
        } else {
            self.b.ins().fadd(a, b)
        };
        let bb = self.b.ins().fsub(s, a);
        let sa = self.b.ins().fsub(s, bb);
        let ea = self.b.ins().fsub(a, sa);
        // (±b) − bb: for a difference, −(b + bb).
        let e = if sub {
            let eb = self.b.ins().fadd(b, bb);
            self.b.ins().fsub(ea, eb)
        } else {
            let eb = self.b.ins().fsub(b, bb);
            self.b.ins().fadd(ea, eb)
        };
        (s, Some(e))
    }
}
