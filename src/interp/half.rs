//! Half precision, as PTX ISA 9.7.4 (Half Precision Floating-Point Instructions), 9.7.7
//! (Half Precision Comparison Instructions) and the half-precision forms of `cvt` (9.7.9.21)
//! describe it: `.f16` (IEEE binary16) and `.bf16` (bfloat16: an f32 with 7 fraction bits),
//! and their packed pairs `.f16x2 .bf16x2`, whose operations apply to each 16-bit half (the
//! low half is element 0).
//!
//! Every result is the exact one rounded once. The exact value is held in an `f64`, which
//! holds every half exactly, and every sum and product of two halves up to one rounding
//! error that [`two_sum`] recovers exactly; rounding that pair to odd in `f64`
//! ([`round_to_odd`]) and then to the half format gives the once-rounded result, because a
//! half has at most 11 significant bits, far fewer than `f64`'s 53 − 2 (Boldo and Melquiond,
//! "When double rounding is odd", 2005). The JIT calls this module through `rt_half`.

use super::convert::{combine, compare, compare_floats};
use crate::ast::{BoolOp, CmpOp, CvtRounding, HalfFn, HalfOp, IntRounding, Rounding, Type};
use crate::softfloat::{self as sf, Fmt};

/// The two 16-bit float formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    F16,
    BF16,
}

/// The canonical NaN of both formats (the shape of PTX's f32 one, `0x7fffffff`).
pub const CANONICAL_NAN: u16 = 0x7fff;
const SIGN: u16 = 0x8000;

impl Format {
    /// The format of a half type's elements.
    pub fn of(ty: Type) -> Format {
        if ty.element() == Type::BF16 {
            Format::BF16
        } else {
            Format::F16
        }
    }
    fn frac_bits(self) -> i32 {
        match self {
            Format::F16 => 10,
            Format::BF16 => 7,
        }
    }
    fn bias(self) -> i32 {
        match self {
            Format::F16 => 15,
            Format::BF16 => 127,
        }
    }
    /// The exponent of the smallest normal number.
    fn emin(self) -> i32 {
        1 - self.bias()
    }
    /// +∞: all exponent bits set.
    pub fn inf(self) -> u16 {
        match self {
            Format::F16 => 0x7c00,
            Format::BF16 => 0x7f80,
        }
    }
    pub fn max_finite(self) -> u16 {
        self.inf() - 1
    }
    /// 1.0.
    pub fn one(self) -> u16 {
        (self.bias() as u16) << self.frac_bits()
    }
    pub fn is_nan(self, h: u16) -> bool {
        h & !SIGN > self.inf()
    }
    pub fn is_subnormal(self, h: u16) -> bool {
        h & self.inf() == 0 && h & !SIGN != 0
    }
    /// A subnormal flushed to the zero of its sign.
    pub fn flush(self, h: u16) -> u16 {
        if self.is_subnormal(h) { h & SIGN } else { h }
    }

    /// The exact value of `h` (NaNs become a NaN).
    pub fn to_f64(self, h: u16) -> f64 {
        let fb = self.frac_bits();
        let exp = ((h & !SIGN) >> fb) as i32;
        let frac = (h & ((1 << fb) - 1)) as f64;
        let magnitude = if exp == 0 {
            frac * pow2(self.emin() - fb)
        } else if h & self.inf() == self.inf() {
            if frac == 0.0 { f64::INFINITY } else { f64::NAN }
        } else {
            (frac + pow2(fb)) * pow2(exp - self.bias() - fb)
        };
        if h & SIGN != 0 { -magnitude } else { magnitude }
    }

    /// `x` rounded once to this format in `mode`; a NaN becomes the canonical NaN, and a
    /// result beyond the largest finite number is ∞ or that number, as IEEE 754 says for the
    /// mode.
    pub fn round(self, x: f64, mode: Rounding) -> u16 {
        if x.is_nan() {
            return CANONICAL_NAN;
        }
        let sign = if x.is_sign_negative() { SIGN } else { 0 };
        if x.is_infinite() {
            return sign | self.inf();
        }
        if x == 0.0 {
            return sign;
        }
        // |x| = m · 2^e exactly.
        let bits = x.abs().to_bits();
        let (m, e) = match (bits >> 52) as i32 {
            0 => (bits, -1074),
            be => ((bits & ((1 << 52) - 1)) | (1 << 52), be - 1075),
        };
        let fb = self.frac_bits();
        let top = 63 - m.leading_zeros() as i32 + e;
        // The exponent of the result's last place: fb bits below the leading one, never
        // below the subnormals' last place.
        let q = top.max(self.emin()) - fb;
        let shift = q - e;
        let (mut kept, rem, half) = if shift <= 0 {
            (m << -shift, 0, 1)
        } else if shift > 60 {
            (0, m, u64::MAX)
        } else {
            (m >> shift, m & ((1 << shift) - 1), 1 << (shift - 1))
        };
        let negative = sign != 0;
        let up = match mode {
            Rounding::Rn => rem > half || (rem == half && kept & 1 == 1),
            Rounding::Rz => false,
            Rounding::Rm => negative && rem != 0,
            Rounding::Rp => !negative && rem != 0,
        };
        kept += up as u64;
        // Biased exponent above the subnormals' and significand add up to the encoding (a
        // carry out of the significand moves into the exponent, as it should).
        let encoded = (((q - (self.emin() - fb)) as u64) << fb) + kept;
        if encoded >= self.inf() as u64 {
            let to_inf = match mode {
                Rounding::Rn => true,
                Rounding::Rz => false,
                Rounding::Rm => negative,
                Rounding::Rp => !negative,
            };
            return sign
                | if to_inf {
                    self.inf()
                } else {
                    self.max_finite()
                };
        }
        sign | encoded as u16
    }
}

/// 2^e, exactly (e within f64's normal exponents, as every use here is).
fn pow2(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// `a + b` as the rounded sum and its exact error (Knuth's TwoSum): s + e = a + b exactly
/// when the sum is finite.
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    if !s.is_finite() {
        return (s, 0.0);
    }
    let bb = s - a;
    let e = (a - (s - bb)) + (b - bb);
    (s, e)
}

/// The exact value `s + e` (e within half an ulp of s) rounded to odd: s if exact, else
/// whichever of s and its neighbour toward e has an odd last bit.
fn round_to_odd(s: f64, e: f64) -> f64 {
    if e == 0.0 || !s.is_finite() || s.to_bits() & 1 == 1 {
        return s;
    }
    let away_from_zero = (e > 0.0) == (s > 0.0);
    let bits = s.to_bits();
    f64::from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
}

/// How many 16-bit elements a value of `ty` holds: two for a pair, else one.
fn lanes(ty: Type) -> usize {
    if ty.bits() == 32 { 2 } else { 1 }
}

/// Element `i` of a value (element 0 in the low bits).
fn element(v: u64, i: usize) -> u16 {
    (v >> (16 * i)) as u16
}

/// Runs `op` on its sources (the low bits of u64s at [`HalfOp::src_types`]): (d, p).
pub fn compute(op: HalfOp, s: [u64; 4]) -> (u64, bool) {
    match op {
        HalfOp::Arith {
            f: HalfFn::Tanh,
            ty: Type::F32,
            ..
        } => (tanh_f32(s[0] as u32) as u64, false),
        HalfOp::Arith {
            f: f @ (HalfFn::Min | HalfFn::Max),
            ty: Type::F32,
            ftz,
            nan,
            xorsign,
            ..
        } => {
            let (a, b) = (s[0] as u32, s[1] as u32);
            (
                min_max_f32(f == HalfFn::Min, ftz, nan, xorsign, a, b) as u64,
                false,
            )
        }
        HalfOp::Arith {
            f,
            ty,
            ftz,
            sat,
            relu,
            nan,
            xorsign,
        } => {
            let fmt = Format::of(ty);
            let mods = Mods {
                ftz,
                sat,
                relu,
                nan,
                xorsign,
            };
            let d = (0..lanes(ty)).fold(0, |d, i| {
                let e = |v: u64| element(v, i);
                let r = arith(f, fmt, mods, e(s[0]), e(s[1]), e(s[2]));
                d | (r as u64) << (16 * i)
            });
            (d, false)
        }
        HalfOp::Setp {
            cmp,
            combine: op,
            ftz,
            ty,
        } => {
            let t = compare_halves(cmp, ty, ftz, s[0], s[1]);
            let c = s[2] != 0;
            if lanes(ty) == 2 {
                // p from the low halves, q from the high halves.
                (combine(op, t[0], c).0 as u64, combine(op, t[1], c).0)
            } else {
                let (p, q) = combine(op, t[0], c);
                (p as u64, q)
            }
        }
        HalfOp::Set {
            cmp,
            combine: op,
            ftz,
            dty,
            sty,
        } => {
            let (t, n) = if sty.is_half() {
                (compare_halves(cmp, sty, ftz, s[0], s[1]), lanes(sty))
            } else {
                ([compare(cmp, sty, ftz, s[0], s[1]), false], 1)
            };
            let c = s[2] != 0;
            let parts = t.map(|t| combine(op, t, c).0 as u64);
            (set_result(dty, &parts[..n]), false)
        }
        HalfOp::Cvt {
            dty,
            aty,
            rnd,
            ftz,
            sat,
            relu,
            satfinite,
        } => {
            let mods = CvtMods {
                ftz,
                sat,
                relu,
                satfinite,
            };
            (cvt(dty, aty, rnd, mods, s[0]), false)
        }
        HalfOp::CvtPair {
            dty,
            rnd,
            relu,
            satfinite,
        } => {
            let mods = CvtMods {
                ftz: false,
                sat: false,
                relu,
                satfinite,
            };
            let to = |v: u64| {
                cvt(
                    dty.element(),
                    Type::F32,
                    Some(CvtRounding::Float(rnd)),
                    mods,
                    v,
                )
            };
            // a into the upper half, b into the lower.
            ((to(s[0]) << 16) | to(s[1]), false)
        }
    }
}

/// The modifiers of one arithmetic operation.
#[derive(Clone, Copy)]
struct Mods {
    ftz: bool,
    sat: bool,
    relu: bool,
    nan: bool,
    xorsign: bool,
}

/// One element of `add sub mul fma neg abs min max ex2 tanh` (9.7.4.1–10): `.ftz` flushes
/// subnormal inputs and results to zeros of their sign, NaN results are canonical, `.sat`
/// clamps to [0.0, 1.0] (NaN to +0.0), `.relu` clamps negatives (−0.0 too) to +0.0.
fn arith(f: HalfFn, fmt: Format, m: Mods, a: u16, b: u16, c: u16) -> u16 {
    let flush = |h: u16| if m.ftz { fmt.flush(h) } else { h };
    let (a, b, c) = (flush(a), flush(b), flush(c));
    let (x, y, z) = (fmt.to_f64(a), fmt.to_f64(b), fmt.to_f64(c));
    let (s, e) = match f {
        // neg and abs change the sign bit; a NaN becomes the canonical NaN (as on hardware).
        HalfFn::Neg | HalfFn::Abs if fmt.is_nan(a) => return CANONICAL_NAN,
        HalfFn::Neg => return flush(a ^ SIGN),
        HalfFn::Abs => return flush(a & !SIGN),
        HalfFn::Min | HalfFn::Max => return min_max(f == HalfFn::Min, fmt, m, a, b),
        HalfFn::Add => two_sum(x, y),
        HalfFn::Sub => two_sum(x, -y),
        // A product of two halves has at most 22 significant bits: exact in an f64.
        HalfFn::Mul => (x * y, 0.0),
        HalfFn::Fma => two_sum(x * y, z),
        // The approximate functions: we define them as the exact function's f64 value
        // (the host's libm) rounded to nearest.
        HalfFn::Ex2 => (x.exp2(), 0.0),
        HalfFn::Tanh => (x.tanh(), 0.0),
    };
    let r = flush(fmt.round(round_to_odd(s, e), Rounding::Rn));
    if m.sat {
        if fmt.is_nan(r) || r & SIGN != 0 {
            0
        } else if fmt.to_f64(r) >= 1.0 {
            fmt.one()
        } else {
            r
        }
    } else if m.relu && !fmt.is_nan(r) && r & SIGN != 0 {
        0
    } else {
        r
    }
}

/// `min`/`max` (9.7.4.7–8): a NaN operand yields the other (`.NaN`: the canonical NaN),
/// −0.0 is below +0.0; `.xorsign.abs` compares magnitudes and gives the result the
/// exclusive or of the operands' signs.
fn min_max(min: bool, fmt: Format, m: Mods, a: u16, b: u16) -> u16 {
    let sign = (a ^ b) & SIGN;
    let (a, b) = if m.xorsign {
        (a & !SIGN, b & !SIGN)
    } else {
        (a, b)
    };
    let r = match (fmt.is_nan(a), fmt.is_nan(b)) {
        (true, true) => return CANONICAL_NAN,
        (true, false) | (false, true) if m.nan => return CANONICAL_NAN,
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            let a_below = total_order(a) < total_order(b);
            if a_below == min { a } else { b }
        }
    };
    if m.xorsign { r | sign } else { r }
}

/// `min`/`max` on `.f32` with `.NaN` or `.xorsign.abs` (9.7.3.11–12): as on halves, with the
/// canonical NaN `0x7fffffff`; `.ftz` flushes subnormal operands first.
fn min_max_f32(min: bool, ftz: bool, nan: bool, xorsign: bool, a: u32, b: u32) -> u32 {
    let flush = |v: u32| {
        if ftz {
            Fmt::F32.flush(v as u64) as u32
        } else {
            v
        }
    };
    let (a, b) = (flush(a), flush(b));
    let sign = (a ^ b) & 0x8000_0000;
    let (a, b) = if xorsign {
        (a & 0x7fff_ffff, b & 0x7fff_ffff)
    } else {
        (a, b)
    };
    let canonical = Fmt::F32.default_nan() as u32;
    let (x, y) = (f32::from_bits(a), f32::from_bits(b));
    let r = match (x.is_nan(), y.is_nan()) {
        (true, true) => return canonical,
        (true, false) | (false, true) if nan => return canonical,
        (true, false) => b,
        (false, true) => a,
        (false, false) => {
            let a_below = x.total_cmp(&y).is_lt();
            if a_below == min { a } else { b }
        }
    };
    if xorsign { r | sign } else { r }
}

/// A key that orders non-NaN halves of one format by value, −0.0 below +0.0.
fn total_order(h: u16) -> i32 {
    if h & SIGN != 0 {
        -((h & !SIGN) as i32) - 1
    } else {
        h as i32
    }
}

/// The comparisons of one or two pairs of halves (`.ftz` flushes subnormals first); a
/// single half's is element 0.
fn compare_halves(cmp: CmpOp, ty: Type, ftz: bool, a: u64, b: u64) -> [bool; 2] {
    let fmt = Format::of(ty);
    let value = |v: u64, i: usize| {
        let h = element(v, i);
        fmt.to_f64(if ftz { fmt.flush(h) } else { h })
    };
    [0, 1].map(|i| i < lanes(ty) && compare_floats(cmp, value(a, i), value(b, i)))
}

/// `set`'s destination (9.7.6.1, 9.7.7.1): true is 1.0 in a float or half type and all
/// ones in an integer type, per half of a pair; false is 0.
fn set_result(dty: Type, t: &[u64]) -> u64 {
    let one = |t: u64, bits: u32| -> u64 {
        if t == 0 {
            0
        } else if dty.is_half() {
            Format::of(dty).one() as u64
        } else if dty == Type::F32 {
            1f32.to_bits() as u64
        } else {
            u64::MAX >> (64 - bits)
        }
    };
    if t.len() == 2 {
        one(t[0], 16) | one(t[1], 16) << 16
    } else {
        one(t[0], dty.bits())
    }
}

/// The modifiers of one conversion.
#[derive(Clone, Copy)]
struct CvtMods {
    ftz: bool,
    sat: bool,
    relu: bool,
    satfinite: bool,
}

/// `cvt` with a half type on one side or both (9.7.9.21). Halves widen exactly; a value
/// becomes a half by one rounding in the given mode, then `.relu` (negatives to +0.0, NaN
/// canonical), `.satfinite` (±∞ and overflows to the largest finite number of their sign,
/// NaN stays NaN) and `.sat` (clamp to [0.0, 1.0], NaN to +0.0). `.ftz` flushes an `.f32`
/// source or destination's subnormals.
fn cvt(dty: Type, aty: Type, rnd: Option<CvtRounding>, m: CvtMods, a: u64) -> u64 {
    // A NaN to an integer converts the same with .sat; to a float, .sat and .relu decide.
    if (!(m.sat || m.relu) || dty.is_int())
        && let Some(nan) = converted_nan(dty, aty, a)
    {
        return nan;
    }
    let x = exact_value(aty, m.ftz, a);
    if !dty.is_half() {
        // From a half: widened exactly to an f64, then that f64's conversion.
        let Exact::Float(wide) = x else {
            unreachable!("a conversion with no half type is not a half conversion")
        };
        let ftz = m.ftz && dty == Type::F32;
        return super::convert::cvt(dty, Type::F64, rnd, ftz, m.sat, wide.to_bits());
    }
    let fmt = Format::of(dty);
    let h = match (rnd, x) {
        (Some(CvtRounding::Int(r)), Exact::Float(x)) => {
            fmt.round(round_integral(x, r), Rounding::Rn)
        }
        (Some(CvtRounding::Float(r)), Exact::Float(x)) => fmt.round(x, r),
        (Some(CvtRounding::Float(r)), Exact::Int(v)) => fmt.round(int_to_odd(v), r),
        (None, Exact::Float(x)) => fmt.round(x, Rounding::Rn),
        (_, Exact::Int(v)) => fmt.round(int_to_odd(v), Rounding::Rn),
    };
    let mut h = h;
    if m.relu {
        if fmt.is_nan(h) {
            h = CANONICAL_NAN;
        } else if h & SIGN != 0 {
            h = 0;
        }
    }
    if m.satfinite && !fmt.is_nan(h) && h & !SIGN == fmt.inf() {
        h = (h & SIGN) | fmt.max_finite();
    }
    if m.sat {
        h = if fmt.is_nan(h) || h & SIGN != 0 {
            0
        } else if fmt.to_f64(h) >= 1.0 {
            fmt.one()
        } else {
            h
        };
    }
    h as u64
}

/// A NaN converted as NVIDIA hardware converts it, where that is not the canonical NaN
/// (docs/semantics.md, "Half precision"): to an integer as from an f32 (0, or only the top
/// bit of a 64-bit integer); a half widened to an f64 keeps its sign and significand,
/// quieted; a `.bf16` widened to an `.f32` keeps its bits (not even quieted, the conversion
/// being a shift), an `.f16` becomes the canonical NaN; an f64 to a half keeps the sign and
/// the significand's top bits, quieted. None where `a` is no NaN or the result is the
/// canonical NaN.
fn converted_nan(dty: Type, aty: Type, a: u64) -> Option<u64> {
    let nan = match aty {
        t if t.is_half() => Format::of(t).is_nan(a as u16),
        Type::F32 => Fmt::F32.is_nan(a),
        Type::F64 => Fmt::F64.is_nan(a),
        _ => false,
    };
    if !nan {
        return None;
    }
    let half = aty.is_half().then(|| Format::of(aty));
    match (dty, half) {
        (t, _) if t.is_int() => Some(sf::nan_to_int(Fmt::F32, t.bits())),
        (Type::F32, Some(Format::BF16)) => Some(a << 16 & 0xffff_0000),
        (Type::F32, Some(Format::F16)) => Some(Fmt::F32.default_nan()),
        (Type::F64, Some(f)) => {
            let (sign, frac) = (a & 0x8000, a & ((1 << f.frac_bits()) - 1));
            Some(sign << 48 | 0x7ff8_0000_0000_0000 | frac << (52 - f.frac_bits()))
        }
        (Type::F16 | Type::BF16, None) if aty == Type::F64 => {
            let f = Format::of(dty);
            let frac = a >> (52 - f.frac_bits()) & ((1 << f.frac_bits()) - 1);
            let quiet = 1 << (f.frac_bits() - 1);
            Some((a >> 48 & 0x8000) | f.inf() as u64 | quiet | frac)
        }
        _ => None,
    }
}

/// A source's exact value: a float (every half, f32 and f64 is exact in an f64) or an
/// integer.
#[derive(Clone, Copy)]
enum Exact {
    Float(f64),
    Int(i128),
}

fn exact_value(aty: Type, ftz: bool, a: u64) -> Exact {
    match aty {
        t if t.is_half() => Exact::Float(Format::of(t).to_f64(a as u16)),
        Type::F32 => {
            let a = if ftz { Fmt::F32.flush(a) } else { a };
            Exact::Float(f32::from_bits(a as u32) as f64)
        }
        Type::F64 => Exact::Float(f64::from_bits(a)),
        t if t.is_signed() => Exact::Int(super::int::sext(a, t.bits()) as i128),
        t => Exact::Int((a & t.mask()) as i128),
    }
}

/// An integer of up to 64 bits rounded to odd in an f64 (exact below 2^53).
fn int_to_odd(v: i128) -> f64 {
    let s = v as f64;
    let err = v - s as i128;
    round_to_odd(s, err.signum() as f64)
}

/// Rounding to an integral value (`.rni .rzi .rmi .rpi`).
fn round_integral(x: f64, r: IntRounding) -> f64 {
    match r {
        IntRounding::Rni => x.round_ties_even(),
        IntRounding::Rzi => x.trunc(),
        IntRounding::Rmi => x.floor(),
        IntRounding::Rpi => x.ceil(),
    }
}

/// `tanh.approx.f32` (9.7.3.22), which we define as the host libm's f64 `tanh` rounded to
/// nearest (NaN canonical).
fn tanh_f32(a: u32) -> u32 {
    let t = (f32::from_bits(a) as f64).tanh() as f32;
    if t.is_nan() {
        Fmt::F32.default_nan() as u32
    } else {
        t.to_bits()
    }
}

/// [`HalfOp`] packed into a u64 and back, so the JIT can pass one to `rt_half` as a
/// constant.
pub mod code {
    use super::*;

    struct Packer(u64, u32);

    impl Packer {
        fn put(&mut self, v: usize, bits: u32) {
            debug_assert!(v < 1 << bits);
            self.0 |= (v as u64) << self.1;
            self.1 += bits;
        }
        fn take(&mut self, bits: u32) -> usize {
            let v = (self.0 >> self.1) & ((1 << bits) - 1);
            self.1 += bits;
            v as usize
        }
    }

    fn index<T: PartialEq>(all: &[T], v: T) -> usize {
        all.iter().position(|x| *x == v).expect("listed")
    }

    fn put_opt<T: PartialEq + Copy>(p: &mut Packer, all: &[T], v: Option<T>) {
        p.put(v.map_or(0, |v| index(all, v) + 1), 5);
    }

    fn take_opt<T: Copy>(p: &mut Packer, all: &[T]) -> Option<T> {
        match p.take(5) {
            0 => None,
            i => Some(all[i - 1]),
        }
    }

    /// Every `cvt` rounding, float ones first.
    fn rounding_all() -> [CvtRounding; 8] {
        use CvtRounding::{Float, Int};
        [
            Float(Rounding::Rn),
            Float(Rounding::Rz),
            Float(Rounding::Rm),
            Float(Rounding::Rp),
            Int(IntRounding::Rni),
            Int(IntRounding::Rzi),
            Int(IntRounding::Rmi),
            Int(IntRounding::Rpi),
        ]
    }

    pub fn encode(op: HalfOp) -> u64 {
        let mut p = Packer(0, 0);
        let flags = |p: &mut Packer, fs: &[bool]| {
            for f in fs {
                p.put(*f as usize, 1);
            }
        };
        match op {
            HalfOp::Arith {
                f,
                ty,
                ftz,
                sat,
                relu,
                nan,
                xorsign,
            } => {
                p.put(0, 3);
                p.put(index(HalfFn::ALL, f), 5);
                p.put(index(Type::ALL, ty), 5);
                flags(&mut p, &[ftz, sat, relu, nan, xorsign]);
            }
            HalfOp::Setp {
                cmp,
                combine,
                ftz,
                ty,
            } => {
                p.put(1, 3);
                p.put(index(CmpOp::ALL, cmp), 5);
                put_opt(&mut p, BoolOp::ALL, combine);
                p.put(index(Type::ALL, ty), 5);
                flags(&mut p, &[ftz]);
            }
            HalfOp::Set {
                cmp,
                combine,
                ftz,
                dty,
                sty,
            } => {
                p.put(2, 3);
                p.put(index(CmpOp::ALL, cmp), 5);
                put_opt(&mut p, BoolOp::ALL, combine);
                p.put(index(Type::ALL, dty), 5);
                p.put(index(Type::ALL, sty), 5);
                flags(&mut p, &[ftz]);
            }
            HalfOp::Cvt {
                dty,
                aty,
                rnd,
                ftz,
                sat,
                relu,
                satfinite,
            } => {
                p.put(3, 3);
                p.put(index(Type::ALL, dty), 5);
                p.put(index(Type::ALL, aty), 5);
                put_opt(&mut p, &rounding_all(), rnd);
                flags(&mut p, &[ftz, sat, relu, satfinite]);
            }
            HalfOp::CvtPair {
                dty,
                rnd,
                relu,
                satfinite,
            } => {
                p.put(4, 3);
                p.put(index(Type::ALL, dty), 5);
                p.put(index(Rounding::ALL, rnd), 5);
                flags(&mut p, &[relu, satfinite]);
            }
        }
        p.0
    }

    pub fn decode(code: u64) -> HalfOp {
        let mut p = Packer(code, 0);
        let ty = |p: &mut Packer| Type::ALL[p.take(5)];
        let flag = |p: &mut Packer| p.take(1) == 1;
        match p.take(3) {
            0 => HalfOp::Arith {
                f: HalfFn::ALL[p.take(5)],
                ty: ty(&mut p),
                ftz: flag(&mut p),
                sat: flag(&mut p),
                relu: flag(&mut p),
                nan: flag(&mut p),
                xorsign: flag(&mut p),
            },
            1 => HalfOp::Setp {
                cmp: CmpOp::ALL[p.take(5)],
                combine: take_opt(&mut p, BoolOp::ALL),
                ty: ty(&mut p),
                ftz: flag(&mut p),
            },
            2 => HalfOp::Set {
                cmp: CmpOp::ALL[p.take(5)],
                combine: take_opt(&mut p, BoolOp::ALL),
                dty: ty(&mut p),
                sty: ty(&mut p),
                ftz: flag(&mut p),
            },
            3 => HalfOp::Cvt {
                dty: ty(&mut p),
                aty: ty(&mut p),
                rnd: take_opt(&mut p, &rounding_all()),
                ftz: flag(&mut p),
                sat: flag(&mut p),
                relu: flag(&mut p),
                satfinite: flag(&mut p),
            },
            _ => HalfOp::CvtPair {
                dty: ty(&mut p),
                rnd: Rounding::ALL[p.take(5)],
                relu: flag(&mut p),
                satfinite: flag(&mut p),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_at_the_edges_of_f16() {
        let f = Format::F16;
        assert_eq!(f.round(1.0, Rounding::Rn), 0x3c00);
        assert_eq!(f.round(65504.0, Rounding::Rn), 0x7bff);
        // 65520 is halfway between 65504 and 65536 (∞'s place): ties to even is ∞.
        assert_eq!(f.round(65520.0, Rounding::Rn), 0x7c00);
        assert_eq!(f.round(65520.0, Rounding::Rz), 0x7bff);
        assert_eq!(f.round(-65520.0, Rounding::Rp), 0xfbff);
        assert_eq!(f.round(-65520.0, Rounding::Rm), 0xfc00);
        // The smallest subnormal, 2^-24, and half of it (a tie, to even: zero).
        assert_eq!(f.round(pow2(-24), Rounding::Rn), 0x0001);
        assert_eq!(f.round(pow2(-25), Rounding::Rn), 0x0000);
        assert_eq!(f.round(pow2(-25), Rounding::Rp), 0x0001);
        assert_eq!(f.round(-pow2(-26), Rounding::Rm), 0x8001);
        assert_eq!(f.round(f64::NAN, Rounding::Rn), CANONICAL_NAN);
        assert_eq!(Format::BF16.round(1.0, Rounding::Rn), 0x3f80);
        assert_eq!(Format::BF16.round(3.0e38, Rounding::Rn), 0x7f62);
    }

    #[test]
    fn decoding_inverts_encoding() {
        let ops = [
            HalfOp::Arith {
                f: HalfFn::Tanh,
                ty: Type::BF16x2,
                ftz: false,
                sat: true,
                relu: false,
                nan: true,
                xorsign: true,
            },
            HalfOp::Setp {
                cmp: CmpOp::Nan,
                combine: Some(BoolOp::Xor),
                ftz: true,
                ty: Type::F16x2,
            },
            HalfOp::Set {
                cmp: CmpOp::Geu,
                combine: None,
                ftz: false,
                dty: Type::U32,
                sty: Type::F16,
            },
            HalfOp::Cvt {
                dty: Type::S64,
                aty: Type::BF16,
                rnd: Some(CvtRounding::Int(IntRounding::Rpi)),
                ftz: true,
                sat: false,
                relu: true,
                satfinite: true,
            },
            HalfOp::CvtPair {
                dty: Type::BF16x2,
                rnd: Rounding::Rz,
                relu: true,
                satfinite: false,
            },
        ];
        for op in ops {
            assert_eq!(code::decode(code::encode(op)), op);
        }
    }
}
