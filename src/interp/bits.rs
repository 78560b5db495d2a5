//! The pure computations of [`ComputeOp`], each as its section of the PTX ISA describes it
//! (Integer Arithmetic Instructions: bfind, fns, bmsk, szext, mul24, mad24, sad, dp4a, dp2a;
//! Logic and Shift Instructions: lop3; Floating-Point Instructions: copysign, testp; Data
//! Movement and Conversion Instructions: cvt.pack).
//!
//! Sources arrive as the low bits of u64s at the types [`ComputeOp::src_types`] gives; the
//! result is `d` (the low bits of a u64) and `p`.

use super::int::sext;
use crate::ast::{BoolOp, ComputeOp, TestpOp, Type};

/// Runs `op` on its sources: (d, p).
pub fn compute(op: ComputeOp, s: [u64; 4]) -> (u64, bool) {
    match op {
        ComputeOp::Bfind { ty, shiftamt } => (bfind(ty, shiftamt, s[0]), false),
        ComputeOp::Fns => (fns(s[0] as u32, s[1] as u32, s[2] as i32) as u64, false),
        ComputeOp::Bmsk { wrap } => (bmsk(wrap, s[0] as u32, s[1] as u32) as u64, false),
        ComputeOp::Szext { wrap, signed } => {
            (szext(wrap, signed, s[0] as u32, s[1] as u32) as u64, false)
        }
        ComputeOp::Mul24 {
            hi,
            signed,
            add,
            sat,
        } => {
            let c = if add { s[2] as u32 } else { 0 };
            (
                mul24(hi, signed, sat, s[0] as u32, s[1] as u32, c) as u64,
                false,
            )
        }
        ComputeOp::Sad { ty } => (sad(ty, s[0], s[1], s[2]), false),
        ComputeOp::Dot {
            half,
            a_signed,
            b_signed,
        } => (
            dot(
                half,
                a_signed,
                b_signed,
                s[0] as u32,
                s[1] as u32,
                s[2] as u32,
            ) as u64,
            false,
        ),
        ComputeOp::Lop3 { lut, combine } => {
            let d = lop3(lut, s[0] as u32, s[1] as u32, s[2] as u32);
            let p = match combine {
                Some(BoolOp::And) => d != 0 && s[3] != 0,
                Some(_) => d != 0 || s[3] != 0,
                None => false,
            };
            (d as u64, p)
        }
        ComputeOp::Copysign { ty } => {
            let sign = 1u64 << (ty.bits() - 1);
            ((s[1] & !sign) | (s[0] & sign), false)
        }
        ComputeOp::Testp { op, ty } => (0, testp(op, ty, s[0])),
        ComputeOp::CvtPack {
            bits,
            signed,
            with_c,
        } => {
            let c = if with_c { s[2] as u32 } else { 0 };
            let packed = cvt_pack(
                bits as u32,
                signed,
                s[0] as u32 as i32,
                s[1] as u32 as i32,
                c,
            );
            (packed as u64, false)
        }
        ComputeOp::Half(h) => super::half::compute(h, s),
    }
}

/// `bfind`: the position of the most significant 1 (of `!a` for a negative signed `a`),
/// 0xffffffff if none; with `.shiftamt`, msb minus that position.
fn bfind(ty: Type, shiftamt: bool, a: u64) -> u64 {
    let msb = ty.bits() - 1;
    let mut a = a & ty.mask();
    if ty.is_signed() && (a >> msb) & 1 == 1 {
        a = !a & ty.mask();
    }
    let found = (0..=msb).rev().find(|i| (a >> i) & 1 == 1);
    match found {
        None => 0xffff_ffff,
        Some(i) if shiftamt => (msb - i) as u64,
        Some(i) => i as u64,
    }
}

/// `fns`: from bit `base`, the position of the |offset|-th set bit of `mask` going up
/// (offset > 0) or down (offset < 0); offset 0 asks whether bit `base` itself is set.
/// 0xffffffff if there is none. PTX leaves `base` > 31 undefined; here such a base finds
/// nothing (the search starts outside the word), as on NVIDIA hardware, which also gives 0
/// for an offset of -2^31 whatever the mask and base (tests/hardware/cases/fns_offsets.ptx).
pub fn fns(mask: u32, base: u32, offset: i32) -> u32 {
    if offset == i32::MIN {
        return 0;
    }
    let bit = |pos: i64| (0..32).contains(&pos) && (mask >> pos) & 1 == 1;
    if offset == 0 {
        return if bit(base as i64) { base } else { u32::MAX };
    }
    let step = if offset > 0 { 1 } else { -1 };
    let mut count = offset.unsigned_abs() - 1;
    let mut pos = base as i64;
    while (0..32).contains(&pos) {
        if bit(pos) {
            if count == 0 {
                return pos as u32;
            }
            count -= 1;
        }
        pos += step;
    }
    u32::MAX
}

/// `bmsk`: `b` one-bits from bit `a`. `.wrap` takes both modulo 32; `.clamp` makes a start
/// past bit 31 an empty mask and a width of 32 or more run to the top.
fn bmsk(wrap: bool, a: u32, b: u32) -> u32 {
    let (a1, b1) = (a & 0x1f, b & 0x1f);
    let mut mask0 = u32::MAX << a1;
    let sum = a1 + b1;
    let sum_overflow = sum >= 32;
    let (mut position_overflow, mut width_overflow) = (false, false);
    if !wrap {
        if a >= 32 {
            position_overflow = true;
            mask0 = 0;
        }
        width_overflow = b >= 32;
    }
    let mask1 = if sum_overflow || position_overflow || width_overflow {
        0
    } else if b1 == 0 {
        u32::MAX
    } else {
        u32::MAX << sum
    };
    mask0 & !mask1
}

/// `szext`: `a`'s low `b` bits, sign- (`.s32`) or zero-extended; `b` modulo 32 (`.wrap`) or,
/// `.clamp`, 32 and more keep all of `a`.
fn szext(wrap: bool, signed: bool, a: u32, b: u32) -> u32 {
    let b1 = b & 0x1f;
    let too_large = b >= 32 && !wrap;
    let mask = if too_large { 0 } else { u32::MAX << b1 };
    let sign = !(b1 == 0 || too_large || !signed) && (a >> ((b1 - 1) & 0x1f)) & 1 == 1;
    (a & !mask) | if sign { mask } else { 0 }
}

/// `mul24`/`mad24`: the 48-bit product of `a` and `b`'s low 24 bits (sign-extended from bit
/// 23 for `.s32`), its bits 47..16 (`.hi`) or 31..0, plus `c`; `.sat` (`mad24.hi.s32`)
/// clamps the sum to the s32 range.
fn mul24(hi: bool, signed: bool, sat: bool, a: u32, b: u32, c: u32) -> u32 {
    let operand = |x: u32| {
        if signed {
            sext(x as u64 & 0xff_ffff, 24)
        } else {
            (x & 0xff_ffff) as i64
        }
    };
    let t = operand(a) * operand(b);
    let part = if hi { t >> 16 } else { t };
    if sat {
        let exact = part as i32 as i64 + c as i32 as i64;
        return exact.clamp(i32::MIN as i64, i32::MAX as i64) as i32 as u32;
    }
    (part as u32).wrapping_add(c)
}

/// `sad`: c + |a - b|, the difference taken at the type's signedness.
fn sad(ty: Type, a: u64, b: u64, c: u64) -> u64 {
    let wide = |v: u64| {
        if ty.is_signed() {
            sext(v, ty.bits()) as i128
        } else {
            (v & ty.mask()) as i128
        }
    };
    let diff = (wide(a) - wide(b)).unsigned_abs() as u64;
    c.wrapping_add(diff) & ty.mask()
}

/// `dp4a` (`half` None): c plus the four products of a's and b's bytes; `dp2a` (`half`
/// Some(hi)): c plus the products of a's two 16-bit halves with b's bytes 0, 1 (`.lo`) or
/// 2, 3 (`.hi`). Each part is sign- or zero-extended by its operand's type.
fn dot(half: Option<bool>, a_signed: bool, b_signed: bool, a: u32, b: u32, c: u32) -> u32 {
    let part = |x: u32, i: u32, bits: u32, signed: bool| {
        let v = ((x >> (i * bits)) as u64) & ((1 << bits) - 1);
        if signed { sext(v, bits) } else { v as i64 }
    };
    let mut d = c as i64;
    match half {
        None => {
            for i in 0..4 {
                d += part(a, i, 8, a_signed) * part(b, i, 8, b_signed);
            }
        }
        Some(hi) => {
            let first = if hi { 2 } else { 0 };
            for i in 0..2 {
                d += part(a, i, 16, a_signed) * part(b, first + i, 8, b_signed);
            }
        }
    }
    d as u32
}

/// `lop3`: bit i of d is bit (a_i b_i c_i) of the truth table, read as a 3-bit number with
/// a the high bit (so that immLut = F(0xF0, 0xCC, 0xAA)).
fn lop3(lut: u8, a: u32, b: u32, c: u32) -> u32 {
    (0..32).fold(0, |d, i| {
        let index = ((a >> i) & 1) << 2 | ((b >> i) & 1) << 1 | ((c >> i) & 1);
        d | (((lut as u32) >> index) & 1) << i
    })
}

/// `testp`. Zero counts as normal, as the manual says, and not as subnormal.
fn testp(op: TestpOp, ty: Type, a: u64) -> bool {
    let (exp_bits, man_bits) = if ty == Type::F32 { (8, 23) } else { (11, 52) };
    let exp = (a >> man_bits) & ((1 << exp_bits) - 1);
    let man = a & ((1 << man_bits) - 1);
    let max_exp = (1 << exp_bits) - 1;
    let nan = exp == max_exp && man != 0;
    let inf = exp == max_exp && man == 0;
    let zero = exp == 0 && man == 0;
    let subnormal = exp == 0 && man != 0;
    match op {
        TestpOp::Finite => exp != max_exp,
        TestpOp::Infinite => inf,
        TestpOp::Number => !nan,
        TestpOp::NotANumber => nan,
        TestpOp::Normal => zero || (exp != 0 && exp != max_exp),
        TestpOp::Subnormal => subnormal,
    }
}

/// `cvt.pack.sat`: a and b saturated to `bits`-bit integers, b in the low bits, a above it,
/// and (with c) c's low bits above both.
fn cvt_pack(bits: u32, signed: bool, a: i32, b: i32, c: u32) -> u32 {
    let (lo, hi) = if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    };
    let field = |x: i32| (x as i64).clamp(lo, hi) as u32 & ((1u32 << bits) - 1);
    let packed = field(a) << bits | field(b);
    if 2 * bits >= 32 {
        packed
    } else {
        packed | c << (2 * bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_examples() {
        // The manual's examples of fns and bmsk.
        assert_eq!(fns(0xaaaa_aaaa, 3, 1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 3, -1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 2, 1), 3);
        assert_eq!(fns(0xaaaa_aaaa, 2, -1), 1);
        assert_eq!(bmsk(true, 1, 2), 0x6);
        // lop3's immLut construction: F(0xF0, 0xCC, 0xAA) for a & b & c is 0x80.
        assert_eq!(lop3(0x80, 0xF0, 0xCC, 0xAA), 0x80);
        assert_eq!(lop3(0x1A, 0xF0, 0xCC, 0xAA), 0x1A);
    }
}
