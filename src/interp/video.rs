//! The scalar video instructions (PTX ISA 9.7.18.1), following the manual's pseudocode:
//! `partSelectSignExtend`, the primary operation, `optSaturate`, `optSecondaryOp` or
//! `optMerge`, and `vmad`'s 128-bit intermediate. Values are computed exactly in i128; where the
//! manual's text and pseudocode differ, the reading taken is written beside the code and in
//! docs/semantics.md ("Video instructions").

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

/// `optSaturate`: clamps to the destination's range — signed or unsigned by dtype, and the
/// byte or half-word range when the result is merged into a part of c.
fn saturate(tmp: i128, sat: bool, signed: bool, dsel: Option<Selector>) -> i128 {
    if !sat {
        return tmp;
    }
    let bits = Selector::bits_of(dsel).1;
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    tmp.clamp(lo, hi)
}

/// `optSecondaryOp` / `optMerge` and the final truncation to 32 bits. The third operand's
/// signedness is dtype's (unsigned for `vset`).
fn finish(tail: VideoTail, tmp: i128, c: u64, c_signed: bool) -> u64 {
    let r = match tail {
        VideoTail::None => tmp,
        VideoTail::Secondary(op, _) => {
            let c = if c_signed {
                sext(c, 32) as i128
            } else {
                (c & 0xffff_ffff) as i128
            };
            match op {
                VideoSecOp::Add => tmp + c,
                VideoSecOp::Min => tmp.min(c),
                VideoSecOp::Max => tmp.max(c),
            }
        }
        VideoTail::Merge(sel, _) => {
            let (pos, bits) = Selector::bits_of(Some(sel));
            let mask = ((1i128 << bits) - 1) << pos;
            ((tmp << merge_shift(sel)) & mask) | (c as i128 & !mask)
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

/// `vadd vsub vabsdiff vmin vmax` (9.7.18.1.1) and `vshl vshr` (9.7.18.1.2).
///
/// Shifts: `.clamp` limits the amount to 32, `.wrap` takes it mod 32. A left shift of an .s33
/// value by up to 32 needs 65 bits, more than the manual's .s34 intermediate; we keep the
/// exact value, so `.sat` and `.min/.max` see its true magnitude (not verified on hardware).
pub fn video(f: VideoForm, s: Sources) -> u64 {
    let ta = part_select(s.a, f.aty, s.asel);
    let tb = part_select(s.b, f.bty, s.bsel);
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
    let tmp = saturate(tmp, f.sat, signed, f.tail.dsel());
    finish(f.tail, tmp, s.c, signed)
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

/// `vset` (9.7.18.1.4): 1 if the comparison holds, else 0; c and d are unsigned.
pub fn vset(aty: Type, bty: Type, cmp: CmpOp, tail: VideoTail, s: Sources) -> u64 {
    let ta = part_select(s.a, aty, s.asel);
    let tb = part_select(s.b, bty, s.bsel);
    finish(tail, compare(cmp, ta, tb) as i128, s.c, false)
}

/// `vmad` (9.7.18.1.3): (±a·b) + (±c) (+1 for `.po`) over 128 bits, negation as ones'
/// complement plus the lsb, scaled by `.shr7/.shr15`, the low 64 bits saturated to the final
/// type's 32-bit range.
///
/// c is extended by the sign of the intermediate result, as the text says, before a negation
/// (128-bit complement): `(u32 * u32) - u32` subtracts c's unsigned value. The pseudocode
/// sign-extends `~c` instead, which differs only there and only for c ≥ 2^31.
pub fn vmad(m: VmadForm, s: Sources) -> u64 {
    let ta = part_select(s.a, m.aty, s.asel);
    let tb = part_select(s.b, m.bty, s.bsel);
    let (signed_product, signed_final) = (m.signed_product(), m.signed_final());
    let mut tmp = ta * tb;
    let mut c = if signed_product {
        sext(s.c, 32) as i128
    } else {
        (s.c & 0xffff_ffff) as i128
    };
    let mut lsb = 0;
    if m.po {
        lsb = 1;
    } else if m.neg_product {
        tmp = !tmp;
        lsb = 1;
    } else if m.neg_c {
        c = !c;
        lsb = 1;
    }
    let tmp = tmp.wrapping_add(c).wrapping_add(lsb);
    let result = ((tmp as u128) >> m.shift()) as u64;
    let result = match (m.sat, signed_final) {
        (false, _) => result,
        (true, true) => (result as i64).clamp(i32::MIN as i64, i32::MAX as i64) as u64,
        (true, false) => result.min(u32::MAX as u64),
    };
    result & 0xffff_ffff
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
