//! The new value of `atom` and `red` (PTX ISA, Parallel Synchronization and Communication
//! Instructions: atom):
//!
//! ```text
//! atomic {
//!     d = *a;
//!     *a = (op == cas) ? cas(*a, b, c) : op(*a, b);
//! }
//! inc(r, s)    = (r >= s) ? 0 : r + 1;
//! dec(r, s)    = (r == 0 || r > s) ? s : r - 1;
//! exch(r, s)   = s;
//! cas(r, s, t) = (r == s) ? t : r;
//! ```
//!
//! `add.f32` rounds to nearest even and flushes subnormal inputs and results to
//! sign-preserving zero; `add.f64` and `add.noftz` on halves round to nearest even (a pair
//! half by half). The caller makes the read and the write one atomic step.

use super::{float, half, int};
use crate::ast::{AtomOp, FloatBinOp, HalfFn, HalfOp, IntBinOp, Precision, Rounding, Type};
use crate::softfloat::Fmt;

/// What `op` stores at an address that held `old` (all values the low bits of their type).
pub fn new_value(op: AtomOp, ty: Type, old: u64, b: u64, c: u64) -> u64 {
    let mask = ty.mask();
    match op {
        AtomOp::And => old & b,
        AtomOp::Or => old | b,
        AtomOp::Xor => old ^ b,
        AtomOp::Add if ty.is_half() => half_add(ty, old, b),
        AtomOp::Add if ty == Type::F64 && Fmt::F64.is_nan(old) | Fmt::F64.is_nan(b) => {
            // b's NaN, else the old value's, as they are: an H200's atomic unit does not
            // quiet a signalling NaN (tests/hardware/cases/nan_between_halves.ptx).
            if Fmt::F64.is_nan(b) { b } else { old }
        }
        AtomOp::Add if ty.is_float() => {
            let f = Fmt::of(ty);
            let ftz = ty == Type::F32;
            let rn = Precision::Ieee(Rounding::Rn);
            float::binary(FloatBinOp::Add, f, rn, ftz, false, old, b)
        }
        AtomOp::Add => old.wrapping_add(b) & mask,
        AtomOp::Inc => {
            if old >= b {
                0
            } else {
                old + 1
            }
        }
        AtomOp::Dec => {
            if old == 0 || old > b {
                b
            } else {
                old - 1
            }
        }
        AtomOp::Min => int::min_max(IntBinOp::Min, ty, old, b),
        AtomOp::Max => int::min_max(IntBinOp::Max, ty, old, b),
        AtomOp::Exch => b,
        AtomOp::Cas => {
            if old == b {
                c
            } else {
                old
            }
        }
    }
}

/// The [`HalfOp`] of `atom.add.noftz` on `ty`: `add.rn`, subnormals kept.
pub fn half_add_op(ty: Type) -> HalfOp {
    HalfOp::Arith {
        f: HalfFn::Add,
        ty,
        ftz: false,
        sat: false,
        relu: false,
        nan: false,
        xorsign: false,
    }
}

fn half_add(ty: Type, old: u64, b: u64) -> u64 {
    half::compute(half_add_op(ty), [old, b, 0, 0]).0
}
