//! The lowering's own small optimizer, applied while instructions are built: Cranelift's
//! e-graph pass is off by default (it slows long straight-line bignum code, see
//! docs/performance.md), and without it nothing else folds constants. Each helper here
//! builds one Cranelift instruction, or what it folds to:
//!
//! - constant knowledge: a value an `iconst` defines is known ([`Lower::known`]); operations
//!   on known values become constants, comparisons and selects on them are decided, and
//!   additions, logic and multiplications by 0 or 1 disappear;
//! - shifts by a known amount are plain shifts by an immediate, without the out-of-range
//!   clamp PTX needs for a run-time amount ([`Lower::shift_by`]);
//! - a multiplication by a power of two is a shift; by another constant that fits an
//!   immediate, an `imul` with that immediate ([`Lower::mul_lo`]);
//! - `shl` and `shr` of one value by amounts that add up to its width, combined by `or`,
//!   `add` or `xor`, are a rotate ([`Lower::combine`]), as clang writes one.
//!
//! Every fold gives the bits the unfolded instructions would (the interpreter stays the
//! reference; `tests/fold.rs` pins the shapes).

use super::Lower;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{self, InstBuilder, Value};

/// The bits of an integer type.
pub(in crate::jit) fn mask_of(ty: ir::Type) -> u64 {
    if ty.bits() >= 64 {
        u64::MAX
    } else {
        (1u64 << ty.bits()) - 1
    }
}

/// `v` (the low `bits` bits) sign-extended to i64.
pub(in crate::jit) fn signed(v: u64, bits: u32) -> i64 {
    let s = 64 - bits.min(64);
    ((v << s) as i64) >> s
}

/// An integer comparison of two values of `bits` bits (zero-extended), as Cranelift's `icmp`.
pub(in crate::jit) fn eval_cc(cc: IntCC, a: u64, b: u64, bits: u32) -> bool {
    let (sa, sb) = (signed(a, bits), signed(b, bits));
    match cc {
        IntCC::Equal => a == b,
        IntCC::NotEqual => a != b,
        IntCC::SignedLessThan => sa < sb,
        IntCC::SignedGreaterThanOrEqual => sa >= sb,
        IntCC::SignedGreaterThan => sa > sb,
        IntCC::SignedLessThanOrEqual => sa <= sb,
        IntCC::UnsignedLessThan => a < b,
        IntCC::UnsignedGreaterThanOrEqual => a >= b,
        IntCC::UnsignedGreaterThan => a > b,
        IntCC::UnsignedLessThanOrEqual => a <= b,
    }
}

/// Which shift a [`Lower::shift_by`] builds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Shift {
    Left,
    /// Logical (zero-filling) right shift.
    Right,
    /// Arithmetic (sign-filling) right shift.
    RightSigned,
}

/// Which combination of two values a [`Lower::combine`] builds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Combine {
    Add,
    Sub,
    And,
    Or,
    Xor,
}

impl Lower<'_, '_> {
    /// The bits of `v` (zero-extended from its type) if an `iconst` defines it.
    pub(super) fn known(&self, v: Value) -> Option<u64> {
        let k = self.const_of(v)? as u64;
        Some(k & mask_of(self.b.func.dfg.value_type(v)))
    }

    /// The constant `k` (its low bits) of `v`'s type.
    fn same_type_const(&mut self, v: Value, k: u64) -> Value {
        let ty = self.b.func.dfg.value_type(v);
        self.iconst(ty, k)
    }

    /// `icmp cc x, y`, decided when both are known.
    pub(super) fn icmp_k(&mut self, cc: IntCC, x: Value, y: Value) -> Value {
        if let (Some(a), Some(c)) = (self.known(x), self.known(y)) {
            let bits = self.b.func.dfg.value_type(x).bits();
            return self.iconst(ir::types::I8, eval_cc(cc, a, c, bits) as u64);
        }
        self.b.ins().icmp(cc, x, y)
    }

    /// `icmp cc x, k` (k taken in x's type, as `icmp_imm` does), decided when x is known.
    pub(super) fn icmp_imm_k(&mut self, cc: IntCC, x: Value, k: i64) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        if let Some(a) = self.known(x) {
            let r = eval_cc(cc, a, k as u64 & mask_of(ty), ty.bits());
            return self.iconst(ir::types::I8, r as u64);
        }
        self.b.ins().icmp_imm_s(cc, x, k)
    }

    /// `select c, t, f`, decided when c is known or both sides are the same value.
    pub(super) fn select_k(&mut self, c: Value, t: Value, f: Value) -> Value {
        match self.known(c) {
            Some(0) => f,
            Some(_) => t,
            None if t == f => t,
            None => self.b.ins().select(c, t, f),
        }
    }

    /// A shift of `x` by a known amount `n` (0 ≤ n < width): no instruction for 0.
    fn shift_imm(&mut self, kind: Shift, x: Value, n: u32) -> Value {
        if n == 0 {
            return x;
        }
        let ty = self.b.func.dfg.value_type(x);
        if let Some(a) = self.known(x) {
            let bits = ty.bits();
            let r = match kind {
                Shift::Left => a << n,
                Shift::Right => a >> n,
                Shift::RightSigned => (signed(a, bits) >> n) as u64,
            };
            return self.iconst(ty, r);
        }
        match kind {
            Shift::Left => self.b.ins().ishl_imm_s(x, n as i64),
            Shift::Right => self.b.ins().ushr_imm_s(x, n as i64),
            Shift::RightSigned => self.b.ins().sshr_imm_s(x, n as i64),
        }
    }

    /// A shift with PTX's rule for amounts of the width or more (9.7.8.8–9: `shl` and
    /// unsigned `shr` give 0, signed `shr` the sign fill), when the amount is known; None
    /// when it is not.
    pub(super) fn shift_by(&mut self, kind: Shift, x: Value, amount: Value) -> Option<Value> {
        let n = self.known(amount)?;
        let bits = self.b.func.dfg.value_type(x).bits();
        let n = n & 0xffff_ffff;
        Some(if n < bits as u64 {
            self.shift_imm(kind, x, n as u32)
        } else if kind == Shift::RightSigned {
            self.shift_imm(kind, x, bits - 1)
        } else {
            self.same_type_const(x, 0)
        })
    }

    /// Cranelift's shift of `x` by `amount` (taken modulo the width), as an immediate shift
    /// (or a constant) when the amount is known and below the width.
    pub(super) fn shift_mod(&mut self, kind: Shift, x: Value, amount: Value) -> Value {
        let bits = self.b.func.dfg.value_type(x).bits() as u64;
        match self.known(amount) {
            Some(n) if n < bits => self.shift_imm(kind, x, n as u32),
            _ => match kind {
                Shift::Left => self.b.ins().ishl(x, amount),
                Shift::Right => self.b.ins().ushr(x, amount),
                Shift::RightSigned => self.b.ins().sshr(x, amount),
            },
        }
    }

    /// `bnot v`, folded when v is known.
    pub(super) fn bnot_k(&mut self, v: Value) -> Value {
        match self.known(v) {
            Some(k) => self.same_type_const(v, !k),
            None => self.b.ins().bnot(v),
        }
    }

    /// `x * y` modulo the width: folded when both are known, nothing for 0 and 1, a shift
    /// for a power of two, else `imul` (with an immediate when the constant fits one, which
    /// instruction selection takes from the `iconst`).
    pub(super) fn mul_lo(&mut self, x: Value, y: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let (k, v) = match (self.known(x), self.known(y)) {
            (Some(a), Some(c)) => return self.iconst(ty, a.wrapping_mul(c)),
            (Some(a), None) => (a, y),
            (None, Some(c)) => (c, x),
            (None, None) => return self.b.ins().imul(x, y),
        };
        match k {
            0 => self.iconst(ty, 0),
            1 => v,
            k if k.is_power_of_two() => self.shift_imm(Shift::Left, v, k.trailing_zeros()),
            // x + (x << s), which x86 does in one `lea` (1 cycle, where `imul` takes 3).
            3 | 5 | 9 if ty.bits() >= 32 => {
                let s = self.shift_imm(Shift::Left, v, (k - 1).trailing_zeros());
                self.b.ins().iadd(v, s)
            }
            k => {
                let c = self.iconst(ty, k);
                self.b.ins().imul(v, c)
            }
        }
    }

    /// `x op y`: folded when both are known, the identities of 0 (and of all ones for
    /// `and`) applied, and `shl`/`shr` pairs of one value that make a rotate recognised.
    pub(super) fn combine(&mut self, op: Combine, x: Value, y: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let mask = mask_of(ty);
        let (kx, ky) = (self.known(x), self.known(y));
        if let (Some(a), Some(c)) = (kx, ky) {
            let r = match op {
                Combine::Add => a.wrapping_add(c),
                Combine::Sub => a.wrapping_sub(c),
                Combine::And => a & c,
                Combine::Or => a | c,
                Combine::Xor => a ^ c,
            };
            return self.iconst(ty, r);
        }
        match (op, kx, ky) {
            (Combine::Add | Combine::Or | Combine::Xor, Some(0), _) => return y,
            (Combine::Add | Combine::Sub | Combine::Or | Combine::Xor, _, Some(0)) => return x,
            (Combine::And, Some(0), _) | (Combine::And, _, Some(0)) => {
                return self.iconst(ty, 0);
            }
            (Combine::And, Some(m), _) if m == mask => return y,
            (Combine::And, _, Some(m)) if m == mask => return x,
            _ => {}
        }
        if matches!(op, Combine::Add | Combine::Or | Combine::Xor)
            && let Some(r) = self.rotate_of(x, y).or_else(|| self.rotate_of(y, x))
        {
            return r;
        }
        match op {
            Combine::Add => self.b.ins().iadd(x, y),
            Combine::Sub => self.b.ins().isub(x, y),
            Combine::And => self.b.ins().band(x, y),
            Combine::Or => self.b.ins().bor(x, y),
            Combine::Xor => self.b.ins().bxor(x, y),
        }
    }

    /// The shifted value and the amount of `v` if `v` is a shift of the given opcode by a
    /// known amount.
    fn shifted_by_const(&self, v: Value, opcode: ir::Opcode) -> Option<(Value, u64)> {
        let dfg = &self.b.func.dfg;
        let ir::ValueDef::Result(inst, _) = dfg.value_def(v) else {
            return None;
        };
        match dfg.insts[inst] {
            ir::InstructionData::Binary { opcode: op, args } if op == opcode => {
                Some((args[0], self.known(args[1])?))
            }
            _ => None,
        }
    }

    /// `rotl v, k` if `hi` is `v << k` and `lo` is `v >> (width − k)` (logical), with
    /// 0 < k < width: the two shifted parts do not overlap, so their `or`, `add` and `xor`
    /// are all the rotate.
    fn rotate_of(&mut self, hi: Value, lo: Value) -> Option<Value> {
        let (v, k) = self.shifted_by_const(hi, ir::Opcode::Ishl)?;
        let (w, m) = self.shifted_by_const(lo, ir::Opcode::Ushr)?;
        let bits = self.b.func.dfg.value_type(v).bits() as u64;
        (v == w && bits >= 16 && k > 0 && k < bits && k + m == bits)
            .then(|| self.b.ins().rotl_imm_s(v, k as i64))
    }

    /// `umin x, y`, folded when both are known.
    pub(super) fn umin_k(&mut self, x: Value, y: Value) -> Value {
        match (self.known(x), self.known(y)) {
            (Some(a), Some(c)) => self.same_type_const(x, a.min(c)),
            _ => self.b.ins().umin(x, y),
        }
    }

    /// `v` sign-extended to `to`; a constant extends to a constant.
    pub(super) fn sextend(&mut self, to: ir::Type, v: Value) -> Value {
        match self.known(v) {
            Some(k) if to.bits() <= 64 => {
                let bits = self.b.func.dfg.value_type(v).bits();
                self.iconst(to, signed(k, bits) as u64)
            }
            _ => self.b.ins().sextend(to, v),
        }
    }
}
