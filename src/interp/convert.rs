//! `cvt` (PTX ISA 9.7.9.21) and the comparison and selection instructions `setp selp slct`
//! (9.7.7.1–4).

use super::int::sext;
use crate::ast::{BoolOp, CmpOp, CvtRounding, Rounding, Type};
use crate::softfloat::{self as sf, Fmt};

/// Clamps an exact integer to the range of `ty` (the `.sat` of integer cvt).
fn clamp_to(ty: Type, v: i128) -> u64 {
    let bits = ty.bits();
    let (lo, hi) = if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    v.clamp(lo, hi) as u64 & ty.mask()
}

/// `cvt{.rnd}{.ftz}{.sat}.dtype.atype`. `a` holds the source's bits (already truncated to
/// `aty`); the result is `dty`'s bits.
pub fn cvt(dty: Type, aty: Type, rnd: Option<CvtRounding>, ftz: bool, sat: bool, a: u64) -> u64 {
    let a = a & aty.mask();
    match (aty.is_float(), dty.is_float()) {
        // Integer to integer: sign- or zero-extend by the source type, then truncate, or
        // clamp to the destination range with .sat.
        (false, false) => {
            let v = if aty.is_signed() {
                sext(a, aty.bits()) as i128
            } else {
                a as i128
            };
            if sat {
                clamp_to(dty, v)
            } else {
                v as u64 & dty.mask()
            }
        }
        // Integer to float: one rounding in the given mode.
        (false, true) => {
            let v = if aty.is_signed() {
                sext(a, aty.bits()) as i128
            } else {
                a as i128
            };
            let r = match rnd {
                Some(CvtRounding::Float(r)) => r,
                _ => Rounding::Rn,
            };
            let fmt = Fmt::of(dty);
            let d = sf::from_int(fmt, r, v);
            let d = if ftz { fmt.flush(d) } else { d };
            if sat { fmt.saturate(d) } else { d }
        }
        // Float to integer: round to an integral value, saturate to the destination range;
        // NaN converts to 0. `.ftz` flushes a subnormal input first (it then converts to 0).
        (true, false) => {
            let fmt = Fmt::of(aty);
            let a = if ftz { fmt.flush(a) } else { a };
            let r = match rnd {
                Some(CvtRounding::Int(r)) => r.direction(),
                _ => Rounding::Rz,
            };
            sf::to_int(fmt, r, a, dty.is_signed(), dty.bits())
        }
        // Float to float.
        (true, true) => {
            let (from, to) = (Fmt::of(aty), Fmt::of(dty));
            let a = if ftz { from.flush(a) } else { a };
            let d = match rnd {
                Some(CvtRounding::Int(r)) => sf::round_integral(from, r.direction(), a),
                Some(CvtRounding::Float(r)) => sf::convert(from, to, r, a),
                None => sf::convert(from, to, Rounding::Rn, a),
            };
            // A NaN converts as the hardware converts it; `cvt.f32.f32` and `cvt.f64.f64`
            // with no modifier are moves there, and keep it as it is.
            let d = match (rnd, ftz) {
                _ if !from.is_nan(a) => d,
                (None, false) if from == to => a,
                _ => from.convert_nan(to, a),
            };
            let d = if ftz { to.flush(d) } else { d };
            if sat { to.saturate(d) } else { d }
        }
    }
}

/// The comparison of `setp`/`slct` (9.7.7.1 tables 26–27).
pub fn compare(cmp: CmpOp, ty: Type, ftz: bool, a: u64, b: u64) -> bool {
    use CmpOp::*;
    if ty.is_float() {
        let f = Fmt::of(ty);
        let (a, b) = if ftz {
            (f.flush(a), f.flush(b))
        } else {
            (a, b)
        };
        let (x, y) = match f {
            Fmt::F32 => (
                f32::from_bits(a as u32) as f64,
                f32::from_bits(b as u32) as f64,
            ),
            Fmt::F64 => (f64::from_bits(a), f64::from_bits(b)),
        };
        return compare_floats(cmp, x, y);
    }
    let mask = ty.mask();
    let (ua, ub) = (a & mask, b & mask);
    let (sa, sb) = (sext(a, ty.bits()), sext(b, ty.bits()));
    let signed = ty.is_signed();
    match cmp {
        Eq => ua == ub,
        Ne => ua != ub,
        Lt if signed => sa < sb,
        Le if signed => sa <= sb,
        Gt if signed => sa > sb,
        Ge if signed => sa >= sb,
        Lt | Lo => ua < ub,
        Le | Ls => ua <= ub,
        Gt | Hi => ua > ub,
        Ge | Hs => ua >= ub,
        _ => unreachable!("validated: float-only comparison"),
    }
}

/// The float comparisons (9.7.7.1 table 27) on exact values: the unordered ones (`…u`,
/// `nan`) are true when either is a NaN, the others false (`ne` too).
pub fn compare_floats(cmp: CmpOp, x: f64, y: f64) -> bool {
    use CmpOp::*;
    let unordered = x.is_nan() || y.is_nan();
    match cmp {
        Eq => x == y,
        Ne => !unordered && x != y,
        Lt => x < y,
        Le => x <= y,
        Gt => x > y,
        Ge => x >= y,
        Equ => unordered || x == y,
        Neu => x != y,
        Ltu => unordered || x < y,
        Leu => unordered || x <= y,
        Gtu => unordered || x > y,
        Geu => unordered || x >= y,
        Num => !unordered,
        Nan => unordered,
        Lo | Ls | Hi | Hs => unreachable!("validated: integer-only comparison"),
    }
}

/// `setp`'s optional combination with a predicate c: p = t OP c, q = !t OP c.
pub fn combine(op: Option<BoolOp>, t: bool, c: bool) -> (bool, bool) {
    match op {
        None => (t, !t),
        Some(BoolOp::And) => (t && c, !t && c),
        Some(BoolOp::Or) => (t || c, !t || c),
        Some(BoolOp::Xor) => (t ^ c, !t ^ c),
    }
}

/// `slct` (9.7.7.4): a if c ≥ 0, else b. For an f32 c, -0.0 counts as ≥ 0 and NaN as not.
pub fn slct_takes_a(cty: Type, ftz: bool, c: u64) -> bool {
    if cty == Type::F32 {
        let c = if ftz { Fmt::F32.flush(c) } else { c };
        f32::from_bits(c as u32) >= 0.0
    } else {
        sext(c, 32) >= 0
    }
}
