//! The soft-float reference: exact IEEE-754 arithmetic in every rounding mode, on bit patterns,
//! built on `rustc_apfloat` (the soft-float of rustc and Miri). Both engines may call it; the
//! interpreter uses it for every directed rounding, the JIT for its portable fallback.
//!
//! Also holds PTX's float conventions shared by both engines: the canonical NaN, flush to
//! zero, saturation, and the functions PTX only approximates (`ex2`, `lg2`, `sin`, `cos`,
//! `rsqrt`), for which we define one result each.

use crate::ast::{FloatBinOp, Rounding};
use rustc_apfloat::ieee::{Double, Single};
use rustc_apfloat::{Float, FloatConvert, Round};

/// The two float formats PTX computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fmt {
    F32,
    F64,
}

impl Fmt {
    pub fn of(ty: crate::ast::Type) -> Fmt {
        match ty {
            crate::ast::Type::F64 => Fmt::F64,
            _ => Fmt::F32,
        }
    }
    /// The NaN an invalid operation without NaN operands gives on NVIDIA hardware: for f32
    /// the canonical NaN `0x7fffffff` (PTX ISA 9.7.3 notes), for f64 `0xfff8000000000000`
    /// (docs/semantics.md, "Float NaN results").
    pub fn default_nan(self) -> u64 {
        match self {
            Fmt::F32 => 0x7fff_ffff,
            Fmt::F64 => 0xfff8_0000_0000_0000,
        }
    }
    /// The quiet bit of a NaN (the top bit of the significand).
    pub fn quiet_bit(self) -> u64 {
        match self {
            Fmt::F32 => 1 << 22,
            Fmt::F64 => 1 << 51,
        }
    }
    /// The NaN an operation gives when its result is a NaN, from its operands in the
    /// hardware's order of precedence: f32 results are always the canonical NaN; an f64
    /// result is the first NaN operand, quieted, or the default NaN if there is none
    /// (docs/semantics.md, "Float NaN results").
    pub fn nan_result(self, operands: &[u64]) -> u64 {
        match self {
            Fmt::F32 => self.default_nan(),
            Fmt::F64 => operands
                .iter()
                .find(|&&v| self.is_nan(v))
                .map_or(self.default_nan(), |v| v | self.quiet_bit()),
        }
    }
    pub fn is_nan(self, bits: u64) -> bool {
        match self {
            Fmt::F32 => f32::from_bits(bits as u32).is_nan(),
            Fmt::F64 => f64::from_bits(bits).is_nan(),
        }
    }
    pub fn sign_bit(self) -> u64 {
        match self {
            Fmt::F32 => 1 << 31,
            Fmt::F64 => 1 << 63,
        }
    }
    /// True for subnormal (denormal) values, excluding zero.
    pub fn is_subnormal(self, bits: u64) -> bool {
        match self {
            Fmt::F32 => f32::from_bits(bits as u32).is_subnormal(),
            Fmt::F64 => f64::from_bits(bits).is_subnormal(),
        }
    }
    /// `.ftz`: a subnormal becomes a zero of the same sign.
    pub fn flush(self, bits: u64) -> u64 {
        if self.is_subnormal(bits) {
            bits & self.sign_bit()
        } else {
            bits
        }
    }
    /// The order in which NVIDIA hardware takes the NaN operands of `a op b` (indices into
    /// `[a, b]`): b's first, except in a division.
    pub fn binary_nan_order(op: FloatBinOp) -> [usize; 2] {
        if op == FloatBinOp::Div {
            [0, 1]
        } else {
            [1, 0]
        }
    }
    /// The order in which NVIDIA hardware takes the NaN operands of `fma a, b, c` (indices
    /// into `[a, b, c]`): b's, then c's, then a's.
    pub const FMA_NAN_ORDER: [usize; 3] = [1, 2, 0];
    /// `bits`, or if it is a NaN the NaN [`Fmt::nan_result`] gives for `operands`.
    pub fn with_nan_of(self, bits: u64, operands: &[u64]) -> u64 {
        if self.is_nan(bits) {
            self.nan_result(operands)
        } else {
            bits
        }
    }
    /// A NaN converted to another format, as NVIDIA hardware does: to f32 the canonical NaN
    /// (from f64, the sign and the significand's top bits, quieted); to f64 the sign and
    /// the whole significand, quieted.
    pub fn convert_nan(self, to: Fmt, bits: u64) -> u64 {
        match (self, to) {
            (Fmt::F32, Fmt::F32) => to.default_nan(),
            (Fmt::F64, Fmt::F32) => {
                (bits >> 32 & 0x8000_0000) | 0x7fc0_0000 | (bits >> 29 & 0x7f_ffff)
            }
            (Fmt::F32, Fmt::F64) => {
                (bits & 0x8000_0000) << 32 | 0x7ff8_0000_0000_0000 | (bits & 0x7f_ffff) << 29
            }
            (Fmt::F64, Fmt::F64) => bits | self.quiet_bit(),
        }
    }
    /// `.sat`: clamps to [0.0, 1.0]; NaN becomes +0.0 (PTX ISA 9.7.3).
    pub fn saturate(self, bits: u64) -> u64 {
        match self {
            Fmt::F32 => {
                let v = f32::from_bits(bits as u32);
                if v.is_nan() || v <= 0.0 {
                    0
                } else if v >= 1.0 {
                    1.0f32.to_bits() as u64
                } else {
                    bits
                }
            }
            Fmt::F64 => {
                let v = f64::from_bits(bits);
                if v.is_nan() || v <= 0.0 {
                    0
                } else if v >= 1.0 {
                    1.0f64.to_bits()
                } else {
                    bits
                }
            }
        }
    }
}

fn round(r: Rounding) -> Round {
    match r {
        Rounding::Rn => Round::NearestTiesToEven,
        Rounding::Rz => Round::TowardZero,
        Rounding::Rm => Round::TowardNegative,
        Rounding::Rp => Round::TowardPositive,
    }
}

/// Applies an apfloat operation in the given format.
macro_rules! in_fmt {
    ($fmt:expr, |$t:ident| $body:expr) => {
        match $fmt {
            Fmt::F32 => {
                type $t = Single;
                $body
            }
            Fmt::F64 => {
                type $t = Double;
                $body
            }
        }
    };
}

fn from(f: Fmt, bits: u64) -> u128 {
    match f {
        Fmt::F32 => (bits & 0xffff_ffff) as u128,
        Fmt::F64 => bits as u128,
    }
}

/// a + b, a - b, a × b or a ÷ b (`op` is one of those four), rounded once.
pub fn arith(f: Fmt, op: FloatBinOp, r: Rounding, a: u64, b: u64) -> u64 {
    in_fmt!(f, |T| {
        let (x, y) = (T::from_bits(from(f, a)), T::from_bits(from(f, b)));
        let r = round(r);
        let v = match op {
            FloatBinOp::Add => x.add_r(y, r),
            FloatBinOp::Sub => x.sub_r(y, r),
            FloatBinOp::Mul => x.mul_r(y, r),
            FloatBinOp::Div => x.div_r(y, r),
            FloatBinOp::Min | FloatBinOp::Max => unreachable!("min/max do not round"),
        };
        v.value.to_bits() as u64
    })
}

/// a × b + c in infinite precision, rounded once.
pub fn fma(f: Fmt, r: Rounding, a: u64, b: u64, c: u64) -> u64 {
    in_fmt!(f, |T| T::from_bits(from(f, a))
        .mul_add_r(T::from_bits(from(f, b)), T::from_bits(from(f, c)), round(r))
        .value
        .to_bits() as u64)
}

/// √a, rounded once. The round-to-nearest root is computed by the host (IEEE-754 requires it
/// correctly rounded); the exact residual a − r² (one fused multiply-add, exact for a
/// correctly rounded root as long as it does not underflow) tells on which side of the true
/// root r lies, which fixes the directed modes. Tiny inputs are first scaled by an even power
/// of two (exactly), so that the residual stays normal; the root is scaled back exactly,
/// since the root of any value, even a subnormal one, is normal.
pub fn sqrt(f: Fmt, r: Rounding, a: u64) -> u64 {
    macro_rules! directed_sqrt {
        ($t:ty, $x:expr, $tiny:expr, $up:expr, $down:expr) => {{
            let x: $t = $x;
            let root = x.sqrt();
            if root.is_nan() || root.is_infinite() || root == 0.0 || r == Rounding::Rn {
                return root.to_bits() as u64;
            }
            let (xs, back) = if x < $tiny {
                (x * $up, $down)
            } else {
                (x, 1.0)
            };
            let root = xs.sqrt();
            let residual = (-root).mul_add(root, xs);
            let adjusted = match r {
                Rounding::Rz | Rounding::Rm if residual < 0.0 => root.next_down(),
                Rounding::Rp if residual > 0.0 => root.next_up(),
                _ => root,
            };
            (adjusted * back).to_bits() as u64
        }};
    }
    match f {
        Fmt::F32 => directed_sqrt!(
            f32,
            f32::from_bits(a as u32),
            2f32.powi(-60),
            2f32.powi(100),
            2f32.powi(-50)
        ),
        Fmt::F64 => directed_sqrt!(
            f64,
            f64::from_bits(a),
            2f64.powi(-900),
            2f64.powi(1000),
            2f64.powi(-500)
        ),
    }
}

/// Integer → float, rounded once.
pub fn from_int(f: Fmt, r: Rounding, v: i128) -> u64 {
    in_fmt!(f, |T| T::from_i128_r(v, round(r)).value.to_bits() as u64)
}

/// Float → integer of `width` bits with rounding `r`: saturating (PTX ISA 9.7.9.21); a NaN
/// gives [`nan_to_int`]. Returns the value as a two's-complement bit pattern in the low
/// `width` bits.
pub fn to_int(f: Fmt, r: Rounding, bits: u64, signed: bool, width: u32) -> u64 {
    let mask = if width == 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    };
    in_fmt!(f, |T| {
        let x = T::from_bits(from(f, bits));
        if x.is_nan() {
            return nan_to_int(f, width);
        }
        if signed {
            (x.to_i128_r(width as usize, round(r), &mut true).value as u64) & mask
        } else {
            (x.to_u128_r(width as usize, round(r), &mut true).value as u64) & mask
        }
    })
}

/// What a NaN converts to as an integer of `width` bits, as NVIDIA hardware gives it (PTX
/// ISA 9.7.9.21 says 0): only the top bit, from an f64 or to a 64-bit integer, else 0
/// (docs/semantics.md, "cvt float to integer").
pub fn nan_to_int(f: Fmt, width: u32) -> u64 {
    if f == Fmt::F64 || width == 64 {
        1 << (width - 1)
    } else {
        0
    }
}

/// Rounds to an integral value in the same format (cvt.rni.f32.f32 and friends).
pub fn round_integral(f: Fmt, r: Rounding, bits: u64) -> u64 {
    in_fmt!(f, |T| T::from_bits(from(f, bits))
        .round_to_integral(round(r))
        .value
        .to_bits() as u64)
}

/// f32 → f64 (exact) or f64 → f32 (rounded once).
pub fn convert(from_fmt: Fmt, to: Fmt, r: Rounding, bits: u64) -> u64 {
    let mut lost = false;
    match (from_fmt, to) {
        (Fmt::F32, Fmt::F64) => {
            let v: Double = Single::from_bits(from(from_fmt, bits))
                .convert_r(round(r), &mut lost)
                .value;
            v.to_bits() as u64
        }
        (Fmt::F64, Fmt::F32) => {
            let v: Single = Double::from_bits(bits as u128)
                .convert_r(round(r), &mut lost)
                .value;
            v.to_bits() as u64
        }
        _ => bits,
    }
}

/// `ex2.approx`: 2^a. PTX bounds the error (2 ulp for f32); we define the result as the
/// host's `exp2` in double precision rounded to the format, the same in both engines.
pub fn ex2_approx(f: Fmt, a: u64) -> u64 {
    approx(f, a, f64::exp2)
}

/// `lg2.approx`: log2(a), defined like [`ex2_approx`].
pub fn lg2_approx(f: Fmt, a: u64) -> u64 {
    approx(f, a, f64::log2)
}

/// `sin.approx`, defined like [`ex2_approx`].
pub fn sin_approx(f: Fmt, a: u64) -> u64 {
    approx(f, a, f64::sin)
}

/// `cos.approx`, defined like [`ex2_approx`].
pub fn cos_approx(f: Fmt, a: u64) -> u64 {
    approx(f, a, f64::cos)
}

/// `rsqrt.approx`: 1/√a, defined like [`ex2_approx`].
pub fn rsqrt_approx(f: Fmt, a: u64) -> u64 {
    approx(f, a, |x| 1.0 / x.sqrt())
}

/// `rcp.approx.ftz.f64` (`rsqrt` false) and `rsqrt.approx.ftz.f64` (true) as NVIDIA hardware
/// computes them, from the operand's high 32 bits alone (its low word taken as zero): the
/// exact function of that value rounded to nearest, then its low 32 bits cleared; a NaN
/// result is `0x7fffffff00000000` (an H200: tests/hardware/cases/moves_f64_approx.ptx, where
/// 4.0 and 0.25 give 0.25 and 4.0, the smallest subnormal +∞, −0 −∞, and a signalling NaN
/// whose payload lies in the low word 0). `a` is already flushed (`.ftz`).
pub fn approx_ftz_f64_high(rsqrt: bool, a: u64) -> u64 {
    let x = f64::from_bits(a & 0xffff_ffff_0000_0000);
    let r = if rsqrt { 1.0 / x.sqrt() } else { 1.0 / x };
    if r.is_nan() {
        0x7fff_ffff_0000_0000
    } else {
        r.to_bits() & 0xffff_ffff_0000_0000
    }
}

fn approx(f: Fmt, a: u64, op: fn(f64) -> f64) -> u64 {
    match f {
        Fmt::F32 => (op(f32::from_bits(a as u32) as f64) as f32).to_bits() as u64,
        Fmt::F64 => op(f64::from_bits(a)).to_bits(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directed_rounding_of_one_third() {
        let one = 1.0f32.to_bits() as u64;
        let three = 3.0f32.to_bits() as u64;
        let div = |r| arith(Fmt::F32, FloatBinOp::Div, r, one, three);
        let (rn, rz, rp) = (div(Rounding::Rn), div(Rounding::Rz), div(Rounding::Rp));
        // 1/3 = 0x3eaaaaab rounded to nearest (the tail 0xaaa... rounds up).
        assert_eq!(rn, 0x3eaa_aaab);
        assert_eq!(rz, 0x3eaa_aaaa);
        assert_eq!(rp, 0x3eaa_aaab);
    }

    #[test]
    fn directed_sqrt_brackets_the_root() {
        let two = 2.0f64.to_bits();
        let lo = f64::from_bits(sqrt(Fmt::F64, Rounding::Rz, two));
        let hi = f64::from_bits(sqrt(Fmt::F64, Rounding::Rp, two));
        assert_eq!(hi, lo.next_up());
        assert!(lo.mul_add(lo, -2.0) < 0.0);
        // Exact roots stay exact in every mode.
        let four = 4.0f32.to_bits() as u64;
        for r in Rounding::ALL {
            assert_eq!(sqrt(Fmt::F32, *r, four), 2.0f32.to_bits() as u64);
        }
    }

    #[test]
    fn float_to_int_saturates_and_maps_nan_to_zero() {
        let big = 1e20f32.to_bits() as u64;
        assert_eq!(to_int(Fmt::F32, Rounding::Rz, big, true, 32), 0x7fff_ffff);
        assert_eq!(to_int(Fmt::F32, Rounding::Rz, big, false, 32), 0xffff_ffff);
        let neg = (-1e20f32).to_bits() as u64;
        assert_eq!(to_int(Fmt::F32, Rounding::Rz, neg, true, 32), 0x8000_0000);
        assert_eq!(to_int(Fmt::F32, Rounding::Rz, neg, false, 32), 0);
        assert_eq!(to_int(Fmt::F32, Rounding::Rz, 0x7fc0_0000, true, 32), 0);
        let x = (-2.5f64).to_bits();
        assert_eq!(to_int(Fmt::F64, Rounding::Rn, x, true, 64) as i64, -2);
        assert_eq!(to_int(Fmt::F64, Rounding::Rm, x, true, 64) as i64, -3);
        assert_eq!(to_int(Fmt::F64, Rounding::Rp, x, true, 64) as i64, -2);
    }
}
