//! Floating-point instructions (PTX ISA 9.7.3) on bit patterns.
//!
//! Round-to-nearest arithmetic uses the host's IEEE-754 operations, which are exact; every
//! directed rounding goes through the soft-float reference. Common to all: `.ftz` flushes
//! subnormal inputs and results to zero of the same sign (f32 only), NaN results are those of
//! NVIDIA hardware ([`Fmt::nan_result`]: the canonical NaN for f32, the first NaN operand in
//! the instruction's order of precedence for f64), and `.sat` clamps to [0.0, 1.0] with
//! NaN → +0.0.

use crate::ast::{FloatBinOp, FloatUnOp, Precision, Rounding};
use crate::softfloat::{self as sf, Fmt};

fn flush_in(f: Fmt, ftz: bool, v: u64) -> u64 {
    if ftz { f.flush(v) } else { v }
}

/// The common tail: the NaN of `operands` (in their order of precedence) if the result is
/// one, then `.ftz` on the result, then `.sat`.
fn finish(f: Fmt, ftz: bool, sat: bool, r: u64, operands: &[u64]) -> u64 {
    let r = flush_in(f, ftz, f.with_nan_of(r, operands));
    if sat { f.saturate(r) } else { r }
}

fn host_rn(f: Fmt, op: FloatBinOp, a: u64, b: u64) -> u64 {
    match f {
        Fmt::F32 => {
            let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            let r = match op {
                FloatBinOp::Add => x + y,
                FloatBinOp::Sub => x - y,
                FloatBinOp::Mul => x * y,
                _ => x / y,
            };
            r.to_bits() as u64
        }
        Fmt::F64 => {
            let (x, y) = (f64::from_bits(a), f64::from_bits(b));
            let r = match op {
                FloatBinOp::Add => x + y,
                FloatBinOp::Sub => x - y,
                FloatBinOp::Mul => x * y,
                _ => x / y,
            };
            r.to_bits()
        }
    }
}

/// `add sub mul div` (9.7.3.1–3, 9.7.3.8) and `min max` (9.7.3.11–12).
pub fn binary(
    op: FloatBinOp,
    f: Fmt,
    prec: Precision,
    ftz: bool,
    sat: bool,
    a: u64,
    b: u64,
) -> u64 {
    let (a, b) = (flush_in(f, ftz, a), flush_in(f, ftz, b));
    let r = match op {
        FloatBinOp::Min | FloatBinOp::Max => {
            let operands = Fmt::binary_nan_order(op).map(|k| [a, b][k]);
            return finish(f, ftz, false, min_max(op, f, a, b), &operands);
        }
        _ => match prec {
            // .approx and .full divisions are computed correctly rounded, within PTX's bounds.
            Precision::Ieee(Rounding::Rn) | Precision::Approx | Precision::Full => {
                host_rn(f, op, a, b)
            }
            Precision::Ieee(r) => sf::arith(f, op, r, a, b),
        },
    };
    let operands = Fmt::binary_nan_order(op).map(|k| [a, b][k]);
    finish(f, ftz, sat, r, &operands)
}

/// `min`/`max` (9.7.3.11–12): a NaN operand yields the other operand, two NaNs a NaN (which
/// `finish` makes the hardware's); -0.0 is taken as smaller than +0.0.
fn min_max(op: FloatBinOp, f: Fmt, a: u64, b: u64) -> u64 {
    match (f.is_nan(a), f.is_nan(b)) {
        (true, true) => return a,
        (true, false) => return b,
        (false, true) => return a,
        _ => {}
    }
    let less = match f {
        Fmt::F32 => f32::from_bits(a as u32)
            .total_cmp(&f32::from_bits(b as u32))
            .is_lt(),
        Fmt::F64 => f64::from_bits(a).total_cmp(&f64::from_bits(b)).is_lt(),
    };
    match (op, less) {
        (FloatBinOp::Min, true) | (FloatBinOp::Max, false) => a,
        _ => b,
    }
}

/// `fma` and float `mad` (9.7.3.6–7): a×b+c in infinite precision, one rounding.
pub fn fma(f: Fmt, rnd: Rounding, ftz: bool, sat: bool, a: u64, b: u64, c: u64) -> u64 {
    let (a, b, c) = (
        flush_in(f, ftz, a),
        flush_in(f, ftz, b),
        flush_in(f, ftz, c),
    );
    let r = match (rnd, f) {
        (Rounding::Rn, Fmt::F32) => {
            let (x, y, z) = (
                f32::from_bits(a as u32),
                f32::from_bits(b as u32),
                f32::from_bits(c as u32),
            );
            x.mul_add(y, z).to_bits() as u64
        }
        (Rounding::Rn, Fmt::F64) => f64::from_bits(a)
            .mul_add(f64::from_bits(b), f64::from_bits(c))
            .to_bits(),
        (r, _) => sf::fma(f, r, a, b, c),
    };
    let operands = Fmt::FMA_NAN_ORDER.map(|k| [a, b, c][k]);
    finish(f, ftz, sat, r, &operands)
}

/// `neg abs` (9.7.3.9–10) act on the sign bit, but give a NaN as the hardware's arithmetic
/// does (f32: the canonical NaN; f64: the operand, quieted); `sqrt rcp` (9.7.3.14,
/// 9.7.3.13) round in the given mode; the `.approx` functions are defined in the soft-float
/// module.
pub fn unary(op: FloatUnOp, f: Fmt, prec: Precision, ftz: bool, a: u64) -> u64 {
    let a = flush_in(f, ftz, a);
    let rnd = match prec {
        Precision::Ieee(r) => r,
        _ => Rounding::Rn,
    };
    let one = match f {
        Fmt::F32 => 1.0f32.to_bits() as u64,
        Fmt::F64 => 1.0f64.to_bits(),
    };
    let high_word = f == Fmt::F64 && ftz && prec == Precision::Approx;
    let r = match op {
        FloatUnOp::Rcp | FloatUnOp::Rsqrt if high_word => {
            return sf::approx_ftz_f64_high(op == FloatUnOp::Rsqrt, a);
        }
        FloatUnOp::Neg | FloatUnOp::Abs if f.is_nan(a) => return f.nan_result(&[a]),
        FloatUnOp::Neg => return flush_in(f, ftz, a ^ f.sign_bit()),
        FloatUnOp::Abs => return flush_in(f, ftz, a & !f.sign_bit()),
        FloatUnOp::Sqrt => sf::sqrt(f, rnd, a),
        FloatUnOp::Rcp if rnd == Rounding::Rn => host_rn(f, FloatBinOp::Div, one, a),
        FloatUnOp::Rcp => sf::arith(f, FloatBinOp::Div, rnd, one, a),
        FloatUnOp::Rsqrt => sf::rsqrt_approx(f, a),
        FloatUnOp::Ex2 => sf::ex2_approx(f, a),
        FloatUnOp::Lg2 => sf::lg2_approx(f, a),
        FloatUnOp::Sin => sf::sin_approx(f, a),
        FloatUnOp::Cos => sf::cos_approx(f, a),
    };
    finish(f, ftz, false, r, &[a])
}
