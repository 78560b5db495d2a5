//! Integer arithmetic (PTX ISA 9.7.1), extended-precision arithmetic (9.7.2), logic and shift
//! (9.7.8) and the bit-manipulation instructions, on bit patterns of a given type.
//!
//! Values arrive as the low `ty.bits()` bits of a u64; results are returned the same way.

use crate::ast::{IntBinOp, IntUnOp, MulMode, PrmtMode, ShfDir, ShfMode, Type, TypeKind};

/// The value as a signed integer of its type's width.
pub fn sext(v: u64, bits: u32) -> i64 {
    if bits >= 64 {
        v as i64
    } else {
        ((v << (64 - bits)) as i64) >> (64 - bits)
    }
}

/// The value widened to i128 by the type's signedness.
fn wide(v: u64, ty: Type) -> i128 {
    if ty.is_signed() {
        sext(v, ty.bits()) as i128
    } else {
        (v & ty.mask()) as i128
    }
}

/// `add`, `sub` (9.7.1.1–2) with `.sat` and the carry forms `add.cc addc sub.cc subc`
/// (9.7.2.1–4). Returns the result and, for the carry forms, CC.CF.
///
/// Subtraction keeps the hardware's convention: CC.CF is NOT borrow, i.e. the carry out of
/// a + ~b + 1 (`sub.cc`) or a + ~b + CF (`subc`); see docs/semantics.md ("The carry flag
/// CC.CF").
#[inline(always)]
pub fn add_sub(
    op: IntBinOp,
    ty: Type,
    sat: bool,
    a: u64,
    b: u64,
    cf_in: Option<bool>,
) -> (u64, bool) {
    let (sum, carry) = match op {
        IntBinOp::Add => add_carry(ty.bits(), a, b, cf_in.unwrap_or(false)),
        _ => add_carry(ty.bits(), a, !b, cf_in.unwrap_or(true)),
    };
    if sat {
        // add.sat.s32 / sub.sat.s32: clamp to [MININT, MAXINT] (9.7.1.1).
        let (x, y) = (sext(a, 32), sext(b, 32));
        let exact = if op == IntBinOp::Add { x + y } else { x - y };
        return (
            exact.clamp(i32::MIN as i64, i32::MAX as i64) as u32 as u64,
            carry,
        );
    }
    (sum, carry)
}

/// x + y + cin over `bits`-bit operands (their low bits): the `bits`-bit sum and the carry
/// out of it.
#[inline(always)]
fn add_carry(bits: u32, x: u64, y: u64, cin: bool) -> (u64, bool) {
    if bits < 64 {
        let mask = u64::MAX >> (64 - bits);
        let sum = (x & mask) + (y & mask) + cin as u64;
        (sum & mask, (sum >> bits) & 1 == 1)
    } else {
        let (s, c1) = x.overflowing_add(y);
        let (s, c2) = s.overflowing_add(cin as u64);
        (s, c1 || c2)
    }
}

/// `min`, `max` (9.7.1.10–11).
pub fn min_max(op: IntBinOp, ty: Type, a: u64, b: u64) -> u64 {
    let (x, y) = (wide(a, ty), wide(b, ty));
    let r = if op == IntBinOp::Min {
        x.min(y)
    } else {
        x.max(y)
    };
    r as u64 & ty.mask()
}

/// `div`, `rem` (9.7.1.7–8). PTX leaves division by zero unspecified; NVIDIA hardware gives
/// all ones for both, signed or not (docs/semantics.md, "Integer division by zero").
/// MININT / -1 wraps to MININT, and MININT % -1 is 0.
pub fn div_rem(op: IntBinOp, ty: Type, a: u64, b: u64) -> u64 {
    let mask = ty.mask();
    let (a, b) = (a & mask, b & mask);
    if b == 0 {
        return mask;
    }
    if !ty.is_signed() {
        return if op == IntBinOp::Div { a / b } else { a % b };
    }
    let (x, y) = (sext(a, ty.bits()) as i128, sext(b, ty.bits()) as i128);
    let r = if op == IntBinOp::Div { x / y } else { x % y };
    r as u64 & mask
}

/// `and`, `or`, `xor` (9.7.8.1–3), also on predicates.
pub fn logic(op: IntBinOp, a: u64, b: u64) -> u64 {
    match op {
        IntBinOp::And => a & b,
        IntBinOp::Or => a | b,
        _ => a ^ b,
    }
}

/// `shl`, `shr` (9.7.8.8–9): shift amounts beyond the width are clamped to the width, so
/// `shl` and unsigned `shr` give 0 and signed `shr` fills with the sign bit.
pub fn shift(op: IntBinOp, ty: Type, a: u64, amount: u64) -> u64 {
    let bits = ty.bits();
    let n = (amount & 0xffff_ffff).min(bits as u64) as u32;
    let mask = ty.mask();
    let r = match op {
        IntBinOp::Shl => {
            if n >= 64 {
                0
            } else {
                a << n
            }
        }
        _ if ty.kind() == TypeKind::Signed => (sext(a, bits) >> n.min(63)) as u64,
        _ => {
            if n >= 64 {
                0
            } else {
                (a & mask) >> n
            }
        }
    };
    r & mask
}

/// Unary integer operations: `neg abs` (9.7.1.9, 9.7.1.12), `not cnot` (9.7.8.4–5), `popc clz
/// brev` (9.7.1.13–14, 9.7.1.16). `popc` and `clz` results are .u32.
pub fn unary(op: IntUnOp, ty: Type, a: u64) -> u64 {
    let bits = ty.bits();
    let mask = ty.mask();
    let a = a & mask;
    match op {
        IntUnOp::Neg => a.wrapping_neg() & mask,
        IntUnOp::Abs => (sext(a, bits).wrapping_abs() as u64) & mask,
        IntUnOp::Not => !a & mask,
        IntUnOp::Cnot => (a == 0) as u64,
        IntUnOp::Popc => a.count_ones() as u64,
        IntUnOp::Clz => (a.leading_zeros() - (64 - bits)) as u64,
        IntUnOp::Brev => a.reverse_bits() >> (64 - bits),
    }
}

/// The full 2n-bit product of two n-bit values, signed or unsigned by `ty`.
fn product(ty: Type, a: u64, b: u64) -> i128 {
    let (x, y) = (wide(a, ty), wide(b, ty));
    if ty.is_signed() {
        x * y
    } else {
        (x as u128).wrapping_mul(y as u128) as i128
    }
}

/// `mul.lo/.hi/.wide` (9.7.1.3). The result has the type's width (twice it for `.wide`).
#[inline(always)]
pub fn mul(mode: MulMode, ty: Type, a: u64, b: u64) -> u64 {
    let bits = ty.bits();
    if bits <= 32 {
        // The 2n-bit product of n ≤ 32 bits fits in 64 (two's complement when signed).
        let p = (wide(a, ty) as i64).wrapping_mul(wide(b, ty) as i64) as u64;
        return match mode {
            MulMode::Lo => p & ty.mask(),
            MulMode::Hi => (p >> bits) & ty.mask(),
            MulMode::Wide => p & (u64::MAX >> (64 - 2 * bits)),
        };
    }
    let p = product(ty, a, b) as u128;
    match mode {
        // (The front end rejects `.wide` of 64-bit types; its low half stands in.)
        MulMode::Lo | MulMode::Wide => p as u64,
        MulMode::Hi => (p >> 64) as u64,
    }
}

/// `mad.lo/.hi/.wide` (9.7.1.4), `mad.hi.sat.s32`, and the carry forms `mad.cc madc`
/// (9.7.2.5–6): the selected half of a×b plus c (plus CC.CF for `madc`). The carry out is the
/// unsigned carry of that addition.
#[inline(always)]
pub fn mad(
    mode: MulMode,
    ty: Type,
    sat: bool,
    a: u64,
    b: u64,
    c: u64,
    cf_in: Option<bool>,
) -> (u64, bool) {
    let half = mul(mode, ty, a, b);
    let dbits = if mode == MulMode::Wide {
        2 * ty.bits()
    } else {
        ty.bits()
    };
    if sat {
        // mad.hi.sat.s32: d = saturate(hi(a*b) + c) over the exact signed sum.
        let sum = sext(half, 32) + sext(c, 32);
        return (
            sum.clamp(i32::MIN as i64, i32::MAX as i64) as u32 as u64,
            false,
        );
    }
    add_carry(dbits, half, c, cf_in.unwrap_or(false))
}

/// `shf.l/.r` (9.7.8.6): shifts the 64-bit value b:a and keeps the upper (`.l`) or lower
/// (`.r`) 32 bits. The amount is `c & 31` (`.wrap`) or `min(c, 32)` (`.clamp`).
pub fn shf(dir: ShfDir, mode: ShfMode, a: u64, b: u64, c: u64) -> u64 {
    let n = match mode {
        ShfMode::Wrap => c & 31,
        ShfMode::Clamp => (c & 0xffff_ffff).min(32),
    };
    let pair = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    match dir {
        ShfDir::L => ((pair << n) >> 32) & 0xffff_ffff,
        ShfDir::R => (pair >> n) & 0xffff_ffff,
    }
}

/// `bfe` (9.7.1.18), following the manual's bit loop: bits pos..pos+len-1 of a, filled above
/// with the sign bit (a[min(pos+len-1, msb)] for signed types, 0 otherwise).
pub fn bfe(ty: Type, a: u64, pos: u64, len: u64) -> u64 {
    let msb = ty.bits() as u64 - 1;
    let pos = pos & 0xff;
    let len = len & 0xff;
    let bit = |i: u64| (a >> i) & 1;
    let sbit = if ty.is_signed() && len > 0 {
        bit((pos + len - 1).min(msb))
    } else {
        0
    };
    let mut d = 0u64;
    for i in 0..=msb {
        let v = if i < len && pos + i <= msb {
            bit(pos + i)
        } else {
            sbit
        };
        d |= v << i;
    }
    d
}

/// `bfi` (9.7.1.19): b with bits pos..pos+len-1 replaced by the low bits of a.
pub fn bfi(ty: Type, a: u64, b: u64, pos: u64, len: u64) -> u64 {
    let msb = ty.bits() as u64 - 1;
    let pos = pos & 0xff;
    let len = len & 0xff;
    let mut f = b & ty.mask();
    let mut i = 0;
    while i < len && pos + i <= msb {
        f = (f & !(1 << (pos + i))) | (((a >> i) & 1) << (pos + i));
        i += 1;
    }
    f
}

/// `prmt` (9.7.8.7): picks four bytes out of the eight bytes of {b, a}.
pub fn prmt(mode: Option<PrmtMode>, a: u64, b: u64, c: u64) -> u64 {
    let bytes = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    let byte = |i: u64| (bytes >> (8 * (i & 7))) & 0xff;
    let sel: [u64; 4] = match mode {
        None => {
            // Each nibble of c selects a byte; its bit 3 replicates the byte's sign bit.
            let mut d = 0;
            for k in 0..4 {
                let s = (c >> (4 * k)) & 0xf;
                let v = byte(s & 7);
                let v = if s & 8 != 0 {
                    if v & 0x80 != 0 { 0xff } else { 0 }
                } else {
                    v
                };
                d |= v << (8 * k);
            }
            return d;
        }
        Some(m) => {
            let s = c & 3;
            // Byte indices for d.b0, d.b1, d.b2, d.b3 (the manual's table).
            match m {
                PrmtMode::F4e => [s, s + 1, s + 2, s + 3],
                PrmtMode::B4e => {
                    [s, s.wrapping_sub(1), s.wrapping_sub(2), s.wrapping_sub(3)].map(|v| v & 7)
                }
                PrmtMode::Rc8 => [s; 4],
                PrmtMode::Ecl => [s, s.max(1), s.max(2), 3],
                PrmtMode::Ecr => [0, s.min(1), s.min(2), s],
                PrmtMode::Rc16 => {
                    let lo = (s & 1) * 2;
                    [lo, lo + 1, lo, lo + 1]
                }
            }
        }
    };
    sel.iter()
        .enumerate()
        .fold(0, |d, (k, &i)| d | (byte(i) << (8 * k)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carry_chain_adds_128_bits() {
        // 0xffffffff_ffffffff + 1 across two 64-bit limbs.
        let (lo, c) = add_sub(IntBinOp::Add, Type::U64, false, u64::MAX, 1, None);
        let (hi, c2) = add_sub(IntBinOp::Add, Type::U64, false, 0, 0, Some(c));
        assert_eq!((lo, hi, c, c2), (0, 1, true, false));
    }

    #[test]
    fn sub_cc_is_not_borrow() {
        assert_eq!(
            add_sub(IntBinOp::Sub, Type::U32, false, 5, 3, None),
            (2, true)
        );
        assert_eq!(
            add_sub(IntBinOp::Sub, Type::U32, false, 3, 5, None),
            (0xffff_fffe, false)
        );
        // subc with CF = 0 subtracts one more.
        assert_eq!(
            add_sub(IntBinOp::Sub, Type::U32, false, 5, 3, Some(false)),
            (1, true)
        );
    }

    #[test]
    fn prmt_modes_match_the_manual_table() {
        let a = 0x33221100;
        let b = 0x77665544;
        assert_eq!(prmt(None, a, b, 0x3210), 0x33221100);
        assert_eq!(prmt(None, a, b, 0x7654), 0x77665544);
        assert_eq!(prmt(None, 0x80, 0, 0x8880), 0xffffff80);
        assert_eq!(prmt(Some(PrmtMode::F4e), a, b, 1), 0x44332211);
        assert_eq!(prmt(Some(PrmtMode::B4e), a, b, 0), 0x55667700);
        assert_eq!(prmt(Some(PrmtMode::Rc8), a, b, 2), 0x22222222);
        assert_eq!(prmt(Some(PrmtMode::Ecl), a, b, 1), 0x33221111);
        assert_eq!(prmt(Some(PrmtMode::Ecr), a, b, 2), 0x22221100);
        assert_eq!(prmt(Some(PrmtMode::Rc16), a, b, 1), 0x33223322);
    }
}
