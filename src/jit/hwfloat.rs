//! Directed rounding on the host's hardware: one SSE/FMA instruction executed with MXCSR's
//! rounding control set to the PTX mode, flush-to-zero and denormals-are-zero clear, every
//! exception masked, and MXCSR restored afterwards — all inside one `asm!` block, so no other
//! float operation can run under the changed mode. IEEE-754 makes the result exact in the
//! chosen direction, the same bits the soft-float reference computes by other means.
//!
//! The JIT calls these when the host has the instructions (`fma` needs the FMA extension;
//! the others SSE2, which every x86-64 has) and the soft-float reference otherwise: for
//! directed `div` and `sqrt`, and for the f64 `add`/`sub`/`mul`/`fma` inputs that the inline
//! computation (`lower/float/directed.rs`) does not prove (infinities, NaNs, overflow, tiny
//! products).

use crate::ast::{FloatBinOp, Rounding};
use std::arch::asm;

/// Whether the host can run [`fma_f32`] and [`fma_f64`].
pub fn has_fma() -> bool {
    std::arch::is_x86_feature_detected!("fma")
}

/// MXCSR for a rounding mode: exceptions masked (0x1f80), FTZ and DAZ clear, RC in bits 13–14.
fn mxcsr(r: Rounding) -> u32 {
    let rc = match r {
        Rounding::Rn => 0,
        Rounding::Rm => 1,
        Rounding::Rp => 2,
        Rounding::Rz => 3,
    };
    0x1f80 | rc << 13
}

/// Runs `$insn` (two or three xmm operands, the first read and written) under rounding mode
/// `$r` and returns the first operand.
macro_rules! rounded {
    ($r:expr, $insn:literal, $x:expr $(, $name:ident = $y:expr)*) => {{
        let mut x = $x;
        let mut saved = 0u32;
        let csr = mxcsr($r);
        // SAFETY: the block saves MXCSR to `saved`, loads `csr` (a valid MXCSR: reserved bits
        // clear), runs one arithmetic instruction on registers, and restores MXCSR before
        // anything else runs; it touches no other memory and keeps the stack untouched.
        unsafe {
            asm!(
                "stmxcsr [{saved}]",
                "ldmxcsr [{csr}]",
                $insn,
                "ldmxcsr [{saved}]",
                saved = in(reg) &mut saved,
                csr = in(reg) &csr,
                x = inout(xmm_reg) x,
                $($name = in(xmm_reg) $y,)*
                options(nostack),
            );
        }
        x
    }};
}

/// a × b + c rounded once in mode `r` (requires [`has_fma`]).
pub fn fma_f32(r: Rounding, a: f32, b: f32, c: f32) -> f32 {
    rounded!(r, "vfmadd213ss {x}, {y}, {z}", a, y = b, z = c)
}

pub fn fma_f64(r: Rounding, a: f64, b: f64, c: f64) -> f64 {
    rounded!(r, "vfmadd213sd {x}, {y}, {z}", a, y = b, z = c)
}

/// a op b rounded in mode `r` (add, sub, mul, div).
pub fn arith_f32(op: FloatBinOp, r: Rounding, a: f32, b: f32) -> f32 {
    match op {
        FloatBinOp::Add => rounded!(r, "addss {x}, {y}", a, y = b),
        FloatBinOp::Sub => rounded!(r, "subss {x}, {y}", a, y = b),
        FloatBinOp::Mul => rounded!(r, "mulss {x}, {y}", a, y = b),
        FloatBinOp::Div => rounded!(r, "divss {x}, {y}", a, y = b),
        FloatBinOp::Min | FloatBinOp::Max => unreachable!("min/max do not round"),
    }
}

pub fn arith_f64(op: FloatBinOp, r: Rounding, a: f64, b: f64) -> f64 {
    match op {
        FloatBinOp::Add => rounded!(r, "addsd {x}, {y}", a, y = b),
        FloatBinOp::Sub => rounded!(r, "subsd {x}, {y}", a, y = b),
        FloatBinOp::Mul => rounded!(r, "mulsd {x}, {y}", a, y = b),
        FloatBinOp::Div => rounded!(r, "divsd {x}, {y}", a, y = b),
        FloatBinOp::Min | FloatBinOp::Max => unreachable!("min/max do not round"),
    }
}

/// √a rounded in mode `r`.
pub fn sqrt_f32(r: Rounding, a: f32) -> f32 {
    rounded!(r, "sqrtss {x}, {x}", a)
}

pub fn sqrt_f64(r: Rounding, a: f64) -> f64 {
    rounded!(r, "sqrtsd {x}, {x}", a)
}
