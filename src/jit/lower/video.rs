//! The scalar video instructions (PTX ISA 9.7.18.1) as inline Cranelift IR, with the rules of
//! `interp::video` (the hardware's where it departs from the manual's pseudocode). Everything
//! runs in i64, which holds every .s33 input and result, and the low 64 bits of a shift and of
//! `vmad`'s sum, all the hardware keeps of them. The SIMD forms run lane by lane in i32, which
//! holds every lane's exact result and c plus up to four of them mod 2^32.

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
                // The exact result (shifts: its low 64 bits, all the hardware keeps).
                let tmp = match f.op {
                    VideoOp::Vadd => self.b.ins().iadd(ta, tb),
                    VideoOp::Vsub => self.b.ins().isub(ta, tb),
                    VideoOp::Vabsdiff => {
                        let diff = self.b.ins().isub(ta, tb);
                        self.b.ins().iabs(diff)
                    }
                    VideoOp::Vmin => self.b.ins().smin(ta, tb),
                    VideoOp::Vmax => self.b.ins().smax(ta, tb),
                    VideoOp::Vshl => {
                        let n = self.shift_amount(f.mode, tb);
                        self.b.ins().ishl(ta, n)
                    }
                    VideoOp::Vshr => {
                        let n = self.shift_amount(f.mode, tb);
                        self.b.ins().sshr(ta, n)
                    }
                };
                let signed = f.dty.is_signed();
                let v = if f.sat {
                    self.video_saturate(f.op, tmp, signed, f.tail.dsel())
                } else {
                    tmp
                };
                let shift = matches!(f.op, VideoOp::Vshl | VideoOp::Vshr);
                let key = match f.tail {
                    VideoTail::Secondary(VideoSecOp::Min | VideoSecOp::Max, _) => {
                        // What `.min`/`.max` compare (interp::video::secondary_key).
                        if matches!(f.op, VideoOp::Vadd | VideoOp::Vsub) || (shift && f.sat) {
                            let low = self.b.ins().ireduce(types::I32, v);
                            self.b.ins().sextend(types::I64, low)
                        } else if shift {
                            tmp
                        } else if f.sat && !signed {
                            let zero = self.iconst(types::I64, 0);
                            self.b.ins().smax(tmp, zero)
                        } else {
                            v
                        }
                    }
                    _ => v,
                };
                let r = self.video_finish(f.tail, key, v, signed);
                self.set_reg(*d, Type::B32, r);
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
                // c is signed when atype is (interp::video::vset).
                let v = self.video_finish(*tail, t, t, aty.is_signed());
                self.set_reg(*d, Type::B32, v);
            }
            Inst::Vmad {
                form: m,
                d,
                a,
                b,
                c,
            } => {
                // One signed 32 × 32 → 64-bit multiply-add, as the hardware's code
                // (interp::video::vmad): each source taken as a signed 32-bit value, c
                // sign-extended, the sum mod 2^64.
                let word = |l: &mut Self, v: Value| {
                    let low = l.b.ins().ireduce(types::I32, v);
                    l.b.ins().sextend(types::I64, low)
                };
                let ta = self.part_select(*a, m.aty);
                let ta = word(self, ta);
                let tb = self.part_select(*b, m.bty);
                let tb = word(self, tb);
                let signed_final = m.signed_final();
                let c = self.get(&c.operand(), Type::B32);
                let mut cw = self.resize(c, types::I64, true);
                let mut prod = self.b.ins().imul(ta, tb);
                if !m.po && m.neg_product {
                    prod = self.b.ins().bnot(prod);
                } else if !m.po && m.neg_c {
                    cw = self.b.ins().bnot(cw);
                }
                let mut sum = self.b.ins().iadd(prod, cw);
                if m.po || m.neg_product || m.neg_c {
                    sum = self.b.ins().iadd_imm_s(sum, 1);
                }
                let shift = m.shift() as i64;
                let scaled = match (shift, signed_final) {
                    (0, _) => sum,
                    (_, true) => self.b.ins().sshr_imm_s(sum, shift),
                    (_, false) => self.b.ins().ushr_imm_s(sum, shift),
                };
                let result = if m.sat {
                    let (lo, hi) = if signed_final {
                        (i32::MIN as i64 as u64, i32::MAX as u64)
                    } else {
                        (0, u32::MAX as u64)
                    };
                    let lo = self.iconst(types::I64, lo);
                    let hi = self.iconst(types::I64, hi);
                    let r = self.b.ins().smax(scaled, lo);
                    self.b.ins().smin(r, hi)
                } else {
                    scaled
                };
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

    /// `optSaturate` as the hardware computes it (interp::video::saturate): shifts clamp
    /// their .s34 intermediate to dtype's 32-bit range; the others, merged, give the part's
    /// largest value unless the result lies between 0 and it, and unmerged clamp to s32, or
    /// for an unsigned dtype only below (keeping the low 32 bits).
    fn video_saturate(
        &mut self,
        op: VideoOp,
        tmp: Value,
        signed: bool,
        dsel: Option<Selector>,
    ) -> Value {
        let clamp = |l: &mut Self, v: Value, lo: u64, hi: u64| {
            let lo = l.iconst(types::I64, lo);
            let hi = l.iconst(types::I64, hi);
            let r = l.b.ins().smax(v, lo);
            l.b.ins().smin(r, hi)
        };
        let (s32, u32) = (
            (i32::MIN as i64 as u64, i32::MAX as u64),
            (0, u32::MAX as u64),
        );
        if matches!(op, VideoOp::Vshl | VideoOp::Vshr) {
            let up = self.b.ins().ishl_imm_s(tmp, 30);
            let s34 = self.b.ins().sshr_imm_s(up, 30);
            let (lo, hi) = if signed { s32 } else { u32 };
            return clamp(self, s34, lo, hi);
        }
        match dsel {
            Some(sel) => {
                let bits = Selector::bits_of(Some(sel)).1;
                let max = if signed {
                    (1u64 << (bits - 1)) - 1
                } else {
                    (1u64 << bits) - 1
                };
                // Unsigned: a negative result is out of range too.
                let inside =
                    self.b
                        .ins()
                        .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, tmp, max as i64);
                let max = self.iconst(types::I64, max);
                self.b.ins().select(inside, tmp, max)
            }
            None if signed => clamp(self, tmp, s32.0, s32.1),
            None => {
                let negative = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, tmp, 0);
                let zero = self.iconst(types::I64, 0);
                let low = self.b.ins().band_imm_s(tmp, u32::MAX as i64);
                self.b.ins().select(negative, zero, low)
            }
        }
    }

    /// `optSecondaryOp` / `optMerge`, truncated to the 32-bit result
    /// (interp::video::finish): `.min`/`.max` compare `key` with c in 64 bits, signed or
    /// unsigned as `c_signed` says; `.add` and the merges take `v`.
    fn video_finish(&mut self, tail: VideoTail, key: Value, v: Value, c_signed: bool) -> Value {
        let r = match tail {
            VideoTail::None => v,
            VideoTail::Secondary(op, c) => {
                let c = self.get(&c.operand(), Type::B32);
                let c = self.resize(c, types::I64, c_signed);
                match op {
                    VideoSecOp::Add => self.b.ins().iadd(v, c),
                    VideoSecOp::Min | VideoSecOp::Max => {
                        let cc = if c_signed {
                            IntCC::SignedLessThan
                        } else {
                            IntCC::UnsignedLessThan
                        };
                        let less = self.b.ins().icmp(cc, key, c);
                        if op == VideoSecOp::Min {
                            self.b.ins().select(less, key, c)
                        } else {
                            self.b.ins().select(less, c, key)
                        }
                    }
                }
            }
            VideoTail::Merge(sel, c) => {
                let c = self.get(&c.operand(), Type::B32);
                let c = self.resize(c, types::I64, false);
                let (pos, bits) = Selector::bits_of(Some(sel));
                let mask = ((1u64 << bits) - 1) << pos;
                let shift = crate::interp::video::merge_shift(sel);
                let v = self.b.ins().ishl_imm_s(v, shift as i64);
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
