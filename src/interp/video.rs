//! The scalar video instructions (PTX ISA 9.7.18.1), following the manual's pseudocode
//! (`partSelectSignExtend`, the primary operation, `optSaturate`, `optSecondaryOp` or
//! `optMerge`) where NVIDIA hardware does, and the hardware where it does not: sm_70 and
//! later run these instructions as code ptxas writes, and where that code departs from the
//! pseudocode (saturation, the secondary operations' comparison, `vmad`'s product, the
//! `.h1` merge) the functions below say how, and docs/semantics.md ("Video instructions")
//! gives the evidence. The SIMD forms follow the pseudocode, as the hardware does.

use super::int::sext;
use crate::ast::{
    CmpOp, Selector, ShfMode, SimdForm, SimdKind, SimdOp, Type, VideoForm, VideoOp, VideoSecOp,
    VideoTail, VmadForm,
};

/// `partSelectSignExtend`: the selected byte, half-word or word of x, sign-extended for a
/// signed type and zero-extended otherwise (an .s33 value).
fn part_select(x: u64, ty: Type, sel: Option<Selector>) -> i128 {
    let (pos, bits) = Selector::bits_of(sel);
    let v = (x >> pos) & ((1u64 << bits) - 1);
    if ty.is_signed() {
        sext(v, bits) as i128
    } else {
        v as i128
    }
}

/// `optSaturate` as NVIDIA hardware computes it (ptxas's code for sm_70 and later, which
/// emulates these instructions; an H200 agrees on every form of
/// tests/hardware/cases/video_scalar.ptx). It departs from the manual's pseudocode:
/// - `vshl`/`vshr` keep the .s34 intermediate the manual names (the exact shift's low 34
///   bits, sign-extended) and clamp it to dtype's 32-bit range, merged into a part of c or
///   not;
/// - the others, merged into a part of c, give the part's largest value unless the exact
///   result lies between 0 and it (a negative result included: the clamp compares
///   unsigned);
/// - unmerged, a signed dtype clamps to the s32 range, an unsigned one only below: a result
///   past 2^32 keeps its low 32 bits.
fn saturate(op: VideoOp, tmp: i128, signed: bool, dsel: Option<Selector>) -> i128 {
    let (s32, u32) = ((i32::MIN as i128, i32::MAX as i128), (0, u32::MAX as i128));
    if matches!(op, VideoOp::Vshl | VideoOp::Vshr) {
        let s34 = sext((tmp as u64) & ((1 << 34) - 1), 34) as i128;
        let (lo, hi) = if signed { s32 } else { u32 };
        return s34.clamp(lo, hi);
    }
    match dsel {
        Some(sel) => {
            let bits = Selector::bits_of(Some(sel)).1;
            let max = if signed {
                (1i128 << (bits - 1)) - 1
            } else {
                (1i128 << bits) - 1
            };
            if (0..=max).contains(&tmp) { tmp } else { max }
        }
        None if signed => tmp.clamp(s32.0, s32.1),
        None if tmp < 0 => 0,
        None => tmp & 0xffff_ffff,
    }
}

/// The value a `.min`/`.max` secondary operation compares with c, as the hardware forms it
/// (a 64-bit value): `vadd`/`vsub` and saturated shifts give their 32-bit result
/// sign-extended, the other shifts their exact value, `vabsdiff`/`vmin`/`vmax` their exact
/// value, or with `.sat` the saturated value for a signed dtype and the exact value's
/// non-negative part for an unsigned one.
fn secondary_key(op: VideoOp, sat: bool, signed: bool, tmp: i128, v: i128) -> i128 {
    match op {
        VideoOp::Vadd | VideoOp::Vsub => sext(v as u64, 32) as i128,
        VideoOp::Vshl | VideoOp::Vshr if sat => sext(v as u64, 32) as i128,
        VideoOp::Vshl | VideoOp::Vshr => tmp,
        _ if sat && !signed => tmp.max(0),
        _ => v,
    }
}

/// `optSecondaryOp` / `optMerge` and the final truncation to 32 bits. `.min`/`.max` compare
/// `key` with c as 64-bit values, signed or unsigned as `c_signed` says (c extended the
/// same way); `.add` and the merges take `v`'s low bits. A merge into `.h1` keeps `v`'s own
/// bits 31..16, as the hardware does (ptxas merges with `PRMT 0x3254`); the other parts
/// take `v`'s low bits, as the pseudocode says.
fn finish(tail: VideoTail, key: i128, v: i128, c: u64, c_signed: bool) -> u64 {
    let c64 = if c_signed {
        sext(c, 32) as i128
    } else {
        (c & 0xffff_ffff) as i128
    };
    let r = match tail {
        VideoTail::None => v,
        VideoTail::Secondary(VideoSecOp::Add, _) => v + c64,
        VideoTail::Secondary(op, _) => {
            // The comparison in 64 bits, as the hardware's code makes it: of a shift's exact
            // value, which may reach past bit 63, only the low 64 bits count.
            let x = key as u64;
            let less = if c_signed {
                (x as i64) < (c64 as i64)
            } else {
                x < c64 as u64
            };
            let take_key = (op == VideoSecOp::Min) == less;
            if take_key { key } else { c64 }
        }
        VideoTail::Merge(sel, _) => {
            let (pos, bits) = Selector::bits_of(Some(sel));
            let mask = ((1i128 << bits) - 1) << pos;
            ((v << merge_shift(sel)) & mask) | (c as i128 & !mask)
        }
    };
    r as u64 & 0xffff_ffff
}

/// How far `optMerge` moves the result up into its part of c: the part's position, as the
/// pseudocode says, except for `.h1`, where NVIDIA hardware keeps the result's own bits
/// 31..16 (ptxas's code merges with `PRMT 0x3254`; an H200 agrees:
/// tests/hardware/cases/video_scalar.ptx).
pub fn merge_shift(sel: Selector) -> u32 {
    if sel == Selector::H1 {
        0
    } else {
        Selector::bits_of(Some(sel)).0
    }
}

/// The inputs of one video instruction: a, b and c as read from their registers.
#[derive(Clone, Copy, Debug)]
pub struct Sources {
    pub a: u64,
    pub asel: Option<Selector>,
    pub b: u64,
    pub bsel: Option<Selector>,
    pub c: u64,
}

/// `vadd vsub vabsdiff vmin vmax` (9.7.18.1.1) and `vshl vshr` (9.7.18.1.2), as NVIDIA
/// hardware computes them (see [`saturate`] and [`secondary_key`]).
///
/// Shifts: `.clamp` limits the amount to 32, `.wrap` takes it mod 32. The exact result of an
/// .s33 value shifted by up to 32 has up to 65 bits; the hardware's `.sat` sees its low 34
/// and its `.min`/`.max` its low 64 (which hold it for every input whose shifted bits stay
/// within them).
pub fn video(f: VideoForm, s: Sources) -> u64 {
    let ta = part_select(s.a, f.aty, s.asel);
    let tb = part_select(s.b, f.bty, s.bsel);
    // A shift's b is a .u32 (the parser holds to it), so the amount is never negative.
    let amount = || match f.mode {
        Some(ShfMode::Wrap) => tb & 0x1f,
        _ => tb.min(32),
    } as u32;
    let tmp = match f.op {
        VideoOp::Vadd => ta + tb,
        VideoOp::Vsub => ta - tb,
        VideoOp::Vabsdiff => (ta - tb).abs(),
        VideoOp::Vmin => ta.min(tb),
        VideoOp::Vmax => ta.max(tb),
        VideoOp::Vshl => ta << amount(),
        VideoOp::Vshr => ta >> amount(),
    };
    let signed = f.dty.is_signed();
    let v = if f.sat {
        saturate(f.op, tmp, signed, f.tail.dsel())
    } else {
        tmp
    };
    let key = secondary_key(f.op, f.sat, signed, tmp, v);
    finish(f.tail, key, v, s.c, signed)
}

/// 1 if `ta cmp tb` holds, else 0.
fn compare(cmp: CmpOp, ta: i128, tb: i128) -> bool {
    match cmp {
        CmpOp::Eq => ta == tb,
        CmpOp::Ne => ta != tb,
        CmpOp::Lt => ta < tb,
        CmpOp::Le => ta <= tb,
        CmpOp::Gt => ta > tb,
        CmpOp::Ge => ta >= tb,
        other => unreachable!("validated: vset does not take {other}"),
    }
}

/// `vset` (9.7.18.1.4): 1 if the comparison holds, else 0; c is signed when atype is (as
/// the hardware takes it for `.min`/`.max`).
pub fn vset(aty: Type, bty: Type, cmp: CmpOp, tail: VideoTail, s: Sources) -> u64 {
    let ta = part_select(s.a, aty, s.asel);
    let tb = part_select(s.b, bty, s.bsel);
    let t = compare(cmp, ta, tb) as i128;
    finish(tail, t, t, s.c, aty.is_signed())
}

/// `vmad` (9.7.18.1.3) as NVIDIA hardware computes it (ptxas's code: one signed 32 × 32 →
/// 64-bit multiply-add): each selected source, extended by its type's sign to 32 bits, is
/// then taken as a *signed* 32-bit value (so a `.u32` operand of 2^31 or more counts as
/// negative), c is sign-extended whatever the types, and the sum `(±a·b) + (±c)` (+1 for
/// `.po`; negation as ones' complement plus the lsb) is formed mod 2^64. `.shr7/.shr15`
/// shift it right, arithmetically when the result is signed (the product is signed, or c
/// negated), logically otherwise; `.sat` clamps that 64-bit value to the signed or unsigned
/// 32-bit range. An H200 agrees on every form of tests/hardware/cases/video_scalar.ptx.
pub fn vmad(m: VmadForm, s: Sources) -> u64 {
    let word = |v: i128| sext(v as u64, 32);
    let ta = word(part_select(s.a, m.aty, s.asel));
    let tb = word(part_select(s.b, m.bty, s.bsel));
    let signed_final = m.signed_final();
    let mut prod = ta.wrapping_mul(tb);
    let mut c = sext(s.c, 32);
    let mut lsb = 0;
    if m.po {
        lsb = 1;
    } else if m.neg_product {
        prod = !prod;
        lsb = 1;
    } else if m.neg_c {
        c = !c;
        lsb = 1;
    }
    let sum = prod.wrapping_add(c).wrapping_add(lsb);
    let scaled = if signed_final {
        sum >> m.shift()
    } else {
        ((sum as u64) >> m.shift()) as i64
    };
    let result = match (m.sat, signed_final) {
        (false, _) => scaled,
        (true, true) => scaled.clamp(i32::MIN as i64, i32::MAX as i64),
        (true, false) => scaled.clamp(0, u32::MAX as i64),
    };
    result as u64 & 0xffff_ffff
}

/// `extractAndSignExt`: part `part` (of `bits` bits) of the pair `{b, a}` (`ab`, a in the low
/// word), sign-extended for a signed type and zero-extended otherwise.
fn lane(ab: u64, part: u8, bits: u32, ty: Type) -> i128 {
    let v = (ab >> (part as u32 * bits)) & ((1u64 << bits) - 1);
    if ty.is_signed() {
        sext(v, bits) as i128
    } else {
        v as i128
    }
}

/// The SIMD video instructions (9.7.18.2): per lane, the selected half-words or bytes of
/// `{b, a}` combined exactly in i128 — `vavrg` rounds half away from zero (`(s + 1) >> 1` for
/// a sum s ≥ 0, `s >> 1` below, as the pseudocode says), `.sat` clamps to the lane's range of
/// dtype, `vset` gives 0 or 1. Then either `.add` — d = c plus the masked lanes' results at
/// their full value — or the merge: masked lanes take their result's low bits, the others
/// c's lane.
pub fn simd(f: SimdForm, a: u64, b: u64, c: u64) -> u64 {
    let bits = f.lane_bits();
    let ab = ((b & 0xffff_ffff) << 32) | (a & 0xffff_ffff);
    let lane_mask = (1i128 << bits) - 1;
    let mut d = if f.add { (c & 0xffff_ffff) as i128 } else { 0 };
    for i in 0..f.lanes as usize {
        let va = lane(ab, f.asel[i], bits, f.aty);
        let vb = lane(ab, f.bsel[i], bits, f.bty);
        let t = match f.kind {
            SimdKind::Arith { op, dty, sat } => {
                let t = match op {
                    SimdOp::Vadd => va + vb,
                    SimdOp::Vsub => va - vb,
                    SimdOp::Vavrg => {
                        let s = va + vb;
                        if s >= 0 { (s + 1) >> 1 } else { s >> 1 }
                    }
                    SimdOp::Vabsdiff => (va - vb).abs(),
                    SimdOp::Vmin => va.min(vb),
                    SimdOp::Vmax => va.max(vb),
                };
                match (sat, dty.is_signed()) {
                    (false, _) => t,
                    (true, true) => t.clamp(-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1),
                    (true, false) => t.clamp(0, lane_mask),
                }
            }
            SimdKind::Set(cmp) => compare(cmp, va, vb) as i128,
        };
        let selected = f.mask >> i & 1 == 1;
        let pos = i as u32 * bits;
        if f.add {
            if selected {
                d += t;
            }
        } else {
            let v = if selected { t } else { (c >> pos) as i128 };
            d |= (v & lane_mask) << pos;
        }
    }
    d as u64 & 0xffff_ffff
}
