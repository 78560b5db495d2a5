//! The scalar video instructions (PTX ISA 9.7.18.1) as inline Cranelift IR, with the rules of
//! `interp::video`. Everything runs in i64, which holds every .s33 input and .s34 result, with
//! two exceptions shown where they arise: `vshl` (a 65-bit exact result, tracked as its low 64
//! bits plus an overflow-aware comparison key) and `vmad.sat` (the saturated window of the
//! 128-bit sum reaches past bit 64, so it is computed in i128). The SIMD forms run lane by
//! lane in i32, which holds every lane's exact result and c plus up to four of them mod 2^32.

use super::Lower;
use crate::ast::{
    CmpOp, Inst, Operand, RegId, Selector, ShfMode, SimdForm, SimdKind, SimdOp, Type, VideoOp,
    VideoSecOp, VideoSrc, VideoTail,
};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, Value, types};

impl Lower<'_, '_> {
    pub(super) fn video(&mut self, inst: &Inst) {
        match inst {
            Inst::Video { form: f, d, a, b } => {
                let ta = self.part_select(*a, f.aty);
                let tb = self.part_select(*b, f.bty);
                // (key, lo): the exact result for comparisons, and its low 64 bits.
                let (key, lo) = match f.op {
                    VideoOp::Vadd => self.same(|l| l.b.ins().iadd(ta, tb)),
                    VideoOp::Vsub => self.same(|l| l.b.ins().isub(ta, tb)),
                    VideoOp::Vabsdiff => self.same(|l| {
                        let diff = l.b.ins().isub(ta, tb);
                        l.b.ins().iabs(diff)
                    }),
                    VideoOp::Vmin => self.same(|l| l.b.ins().smin(ta, tb)),
                    VideoOp::Vmax => self.same(|l| l.b.ins().smax(ta, tb)),
                    VideoOp::Vshl => {
                        let n = self.shift_amount(f.mode, tb);
                        let lo = self.b.ins().ishl(ta, n);
                        // Shifting back tells whether bits were lost; then the exact value
                        // lies beyond the i64 range, on ta's side of zero.
                        let back = self.b.ins().sshr(lo, n);
                        let lost = self.b.ins().icmp(IntCC::NotEqual, back, ta);
                        let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, ta, 0);
                        let min = self.iconst(types::I64, i64::MIN as u64);
                        let max = self.iconst(types::I64, i64::MAX as u64);
                        let beyond = self.b.ins().select(negative, min, max);
                        (self.b.ins().select(lost, beyond, lo), lo)
                    }
                    VideoOp::Vshr => {
                        let n = self.shift_amount(f.mode, tb);
                        self.same(|l| l.b.ins().sshr(ta, n))
                    }
                };
                let (key, lo) = self.video_saturate(key, lo, f.sat, f.dty.is_signed(), f.tail);
                let v = self.video_finish(f.tail, key, lo, f.dty.is_signed());
                self.set_reg(*d, Type::B32, v);
            }
            Inst::Vset {
                aty,
                bty,
                cmp,
                tail,
                d,
                a,
                b,
            } => {
                let ta = self.part_select(*a, *aty);
                let tb = self.part_select(*b, *bty);
                let t = self.b.ins().icmp(simd_cc(*cmp), ta, tb);
                let t = self.b.ins().uextend(types::I64, t);
                let v = self.video_finish(*tail, t, t, false);
                self.set_reg(*d, Type::B32, v);
            }
            Inst::Vmad {
                form: m,
                d,
                a,
                b,
                c,
            } => {
                let ta = self.part_select(*a, m.aty);
                let tb = self.part_select(*b, m.bty);
                let (signed_product, signed_final) = (m.signed_product(), m.signed_final());
                let c = self.get(&c.operand(), Type::B32);
                let shift = m.shift() as i64;
                // Without .sat only bits [shift, shift+32) of the sum are kept, all below
                // bit 47: the low 64 bits of every term suffice. With .sat the whole 64-bit
                // window [shift, shift+64) counts, and the product of two .s33 values has 66.
                let wide = if m.sat { types::I128 } else { types::I64 };
                let mut prod = self.b.ins().imul(ta, tb);
                if m.sat {
                    let hi = self.b.ins().smulhi(ta, tb);
                    prod = self.b.ins().iconcat(prod, hi);
                }
                let mut cw = self.resize(c, wide, signed_product);
                let lsb = m.po || m.neg_product || m.neg_c;
                if !m.po && m.neg_product {
                    prod = self.b.ins().bnot(prod);
                } else if !m.po && m.neg_c {
                    cw = self.b.ins().bnot(cw);
                }
                let sum = self.b.ins().iadd(prod, cw);
                let sum = if lsb {
                    let one = self.b.ins().iconst(types::I64, 1);
                    let one = self.resize(one, wide, false);
                    self.b.ins().iadd(sum, one)
                } else {
                    sum
                };
                let scaled = if shift > 0 {
                    self.b.ins().ushr_imm_s(sum, shift)
                } else {
                    sum
                };
                let mut result = self.resize(scaled, types::I64, false);
                if m.sat {
                    result = if signed_final {
                        let lo = self.iconst(types::I64, i32::MIN as i64 as u64);
                        let hi = self.iconst(types::I64, i32::MAX as u64);
                        let r = self.b.ins().smax(result, lo);
                        self.b.ins().smin(r, hi)
                    } else {
                        let hi = self.iconst(types::I64, u32::MAX as u64);
                        self.b.ins().umin(result, hi)
                    };
                }
                let v = self.b.ins().ireduce(types::I32, result);
                self.set_reg(*d, Type::B32, v);
            }
            Inst::VideoSimd { form, d, a, b, c } => {
                let v = self.video_simd(*form, *a, *b, *c);
                self.set_reg(*d, Type::B32, v);
            }
            _ => unreachable!("not a video instruction"),
        }
    }

    /// The SIMD video instructions (9.7.18.2) with the rules of `interp::video::simd`.
    fn video_simd(&mut self, f: SimdForm, a: RegId, b: RegId, c: RegId) -> Value {
        let bits = f.lane_bits();
        let lanes = f.lanes as u32;
        let words = [a, b].map(|r| self.get(&Operand::Reg(r), Type::B32));
        let c = self.get(&Operand::Reg(c), Type::B32);
        let narrow = super::int_type(bits);
        // Part `part` of {b, a} as an i32, extended by the type's sign.
        let part = |l: &mut Self, part: u8, ty: Type| {
            let word = words[(part as u32 / lanes) as usize];
            let pos = (part as u32 % lanes) * bits;
            let v = if pos > 0 {
                l.b.ins().ushr_imm_s(word, pos as i64)
            } else {
                word
            };
            let v = l.resize(v, narrow, false);
            l.resize(v, types::I32, ty.is_signed())
        };
        let lane_mask = (1u64 << bits) - 1;
        let mut acc = if f.add { Some(c) } else { None };
        // Merge: c's lanes outside the mask.
        let keep: u64 = (0..lanes)
            .filter(|i| f.mask >> i & 1 == 0)
            .fold(0, |m, i| m | lane_mask << (i * bits));
        if !f.add && keep != 0 {
            acc = Some(self.b.ins().band_imm_s(c, keep as u32 as i32 as i64));
        }
        for i in (0..lanes).filter(|i| f.mask >> i & 1 == 1) {
            let va = part(self, f.asel[i as usize], f.aty);
            let vb = part(self, f.bsel[i as usize], f.bty);
            let t = match f.kind {
                SimdKind::Arith { op, dty, sat } => {
                    let t = match op {
                        SimdOp::Vadd => self.b.ins().iadd(va, vb),
                        SimdOp::Vsub => self.b.ins().isub(va, vb),
                        SimdOp::Vavrg => {
                            // (s + 1) >> 1 for s ≥ 0, s >> 1 below.
                            let s = self.b.ins().iadd(va, vb);
                            let up = self
                                .b
                                .ins()
                                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, s, 0);
                            let up = self.b.ins().uextend(types::I32, up);
                            let s = self.b.ins().iadd(s, up);
                            self.b.ins().sshr_imm_s(s, 1)
                        }
                        SimdOp::Vabsdiff => {
                            let diff = self.b.ins().isub(va, vb);
                            self.b.ins().iabs(diff)
                        }
                        SimdOp::Vmin => self.b.ins().smin(va, vb),
                        SimdOp::Vmax => self.b.ins().smax(va, vb),
                    };
                    if sat {
                        let (lo, hi) = if dty.is_signed() {
                            (-(1i64 << (bits - 1)) as u64, (1u64 << (bits - 1)) - 1)
                        } else {
                            (0, lane_mask)
                        };
                        let lo = self.iconst(types::I32, lo);
                        let hi = self.iconst(types::I32, hi);
                        let t = self.b.ins().smax(t, lo);
                        self.b.ins().smin(t, hi)
                    } else {
                        t
                    }
                }
                SimdKind::Set(cmp) => {
                    let t = self.b.ins().icmp(simd_cc(cmp), va, vb);
                    self.b.ins().uextend(types::I32, t)
                }
            };
            let t = if f.add {
                t
            } else {
                let t = if i + 1 < lanes {
                    self.b.ins().band_imm_s(t, lane_mask as i64)
                } else {
                    t
                };
                if i > 0 {
                    self.b.ins().ishl_imm_s(t, (i * bits) as i64)
                } else {
                    t
                }
            };
            acc = Some(match acc {
                None => t,
                Some(x) if f.add => self.b.ins().iadd(x, t),
                Some(x) => self.b.ins().bor(x, t),
            });
        }
        acc.unwrap_or_else(|| self.iconst(types::I32, 0))
    }

    /// A result whose comparison key and low bits are the same value.
    fn same(&mut self, f: impl FnOnce(&mut Self) -> Value) -> (Value, Value) {
        let v = f(self);
        (v, v)
    }

    /// `partSelectSignExtend`: the selected part of a 32-bit register as an i64.
    fn part_select(&mut self, src: VideoSrc, ty: Type) -> Value {
        let v = self.get(&src.value.operand(), Type::B32);
        let (pos, bits) = Selector::bits_of(src.sel);
        let v = if pos > 0 {
            self.b.ins().ushr_imm_s(v, pos as i64)
        } else {
            v
        };
        let narrow = super::int_type(bits);
        let v = self.resize(v, narrow, false);
        self.resize(v, types::I64, ty.is_signed())
    }

    /// The shift amount (a zero-extended u32 part): at most 32 with `.clamp`, mod 32 with
    /// `.wrap`.
    fn shift_amount(&mut self, mode: Option<ShfMode>, tb: Value) -> Value {
        match mode {
            Some(ShfMode::Wrap) => self.b.ins().band_imm_s(tb, 0x1f),
            _ => {
                let max = self.b.ins().iconst(types::I64, 32);
                self.b.ins().umin(tb, max)
            }
        }
    }

    /// `optSaturate` on (key, lo): the clamp of the exact value, which fits in i64.
    fn video_saturate(
        &mut self,
        key: Value,
        lo: Value,
        sat: bool,
        signed: bool,
        tail: VideoTail,
    ) -> (Value, Value) {
        if !sat {
            return (key, lo);
        }
        let bits = Selector::bits_of(tail.dsel()).1;
        let (min, max) = if signed {
            (-(1i64 << (bits - 1)) as u64, (1u64 << (bits - 1)) - 1)
        } else {
            (0, (1u64 << bits) - 1)
        };
        let min = self.iconst(types::I64, min);
        let max = self.iconst(types::I64, max);
        let r = self.b.ins().smax(key, min);
        let r = self.b.ins().smin(r, max);
        (r, r)
    }

    /// `optSecondaryOp` / `optMerge`, truncated to the 32-bit result.
    fn video_finish(&mut self, tail: VideoTail, key: Value, lo: Value, c_signed: bool) -> Value {
        let r = match tail {
            VideoTail::None => lo,
            VideoTail::Secondary(op, c) => {
                let c = self.get(&c.operand(), Type::B32);
                let c = self.resize(c, types::I64, c_signed);
                match op {
                    VideoSecOp::Add => self.b.ins().iadd(lo, c),
                    VideoSecOp::Min => {
                        let less = self.b.ins().icmp(IntCC::SignedLessThan, key, c);
                        self.b.ins().select(less, lo, c)
                    }
                    VideoSecOp::Max => {
                        let more = self.b.ins().icmp(IntCC::SignedGreaterThan, key, c);
                        self.b.ins().select(more, lo, c)
                    }
                }
            }
            VideoTail::Merge(sel, c) => {
                let c = self.get(&c.operand(), Type::B32);
                let c = self.resize(c, types::I64, false);
                let (pos, bits) = Selector::bits_of(Some(sel));
                let mask = ((1u64 << bits) - 1) << pos;
                let shift = crate::interp::video::merge_shift(sel);
                let v = self.b.ins().ishl_imm_s(lo, shift as i64);
                let v = self.b.ins().band_imm_s(v, mask as i64);
                let keep = self.b.ins().band_imm_s(c, !mask as u32 as i64);
                self.b.ins().bor(v, keep)
            }
        };
        self.b.ins().ireduce(types::I32, r)
    }
}

/// The signed condition of a `vset` comparison (its inputs are sign- or zero-extended).
fn simd_cc(cmp: CmpOp) -> IntCC {
    match cmp {
        CmpOp::Eq => IntCC::Equal,
        CmpOp::Ne => IntCC::NotEqual,
        CmpOp::Lt => IntCC::SignedLessThan,
        CmpOp::Le => IntCC::SignedLessThanOrEqual,
        CmpOp::Gt => IntCC::SignedGreaterThan,
        CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
        other => unreachable!("validated: vset does not take {other}"),
    }
}
