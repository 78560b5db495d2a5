//! Checked accesses through a base register plus a bounded index: a table lookup in a loop
//! (`and.b32 %i, %h, 255; mul.wide.u32 %o, %i, 4; add.s64 %a, %table, %o; ld.global.u32
//! %v, [%a]`) reads somewhere in `[%table, %table + 1024)`, whatever `%h` is. Once that
//! whole span has passed the recent-area test for one value of `%table`, every later access
//! with the same base value passes too (the areas a span can lie in, a launch's buffers and
//! module variables, stay where they are while the launch runs), so such an access compares
//! its base with the value last proved and skips its own test when they are equal: one
//! range check per loop instead of one per iteration (see `Lower::check`).
//!
//! Found here, before lowering, by looking back from each global or generic access in its
//! own basic block: its address register is the sum of a base register and an index, and
//! the index is a chain of unguarded `and`, `rem`, `shr` (by constants), zero-extending
//! `cvt`, `mov`, `shl` or multiplies by constants that bounds it to `[0, max]` and keeps it a
//! multiple of the access size. Neither the base nor the sum is written between the sum and
//! the access, so at the access `address - base` is the index.

use crate::ast::{AddrBase, Function, Imm, Inst, IntBinOp, MulMode, Operand, RegId, Space, Type};
use std::collections::{HashMap, HashSet};

/// A checked access whose address lies in `[base + lowest, base + end)`, `base` a multiple
/// of `align` making every possible address aligned.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) struct BoundedSpan {
    pub base: RegId,
    pub lowest: i64,
    pub end: i64,
    pub align: u64,
}

/// How far back an index's definition is followed.
const MAX_DEPTH: usize = 6;

/// The bounded accesses of `f`, by instruction index (none in a function with sync points:
/// the proof lives in a variable a round function does not save).
pub(super) fn bounded_accesses(f: &Function) -> HashMap<usize, BoundedSpan> {
    let mut found = HashMap::new();
    let Some(body) = &f.body else {
        return found;
    };
    if body.iter().any(|i| matches!(i.inst, Inst::Sync { .. })) {
        return found;
    }
    let starts: HashSet<usize> = f.labels.iter().copied().collect();
    let scope = Scope {
        body: &body[..],
        starts: &starts,
    };
    for (i, ins) in body.iter().enumerate() {
        let Some((space, vec, ty, addr)) = ins.inst.load_or_store() else {
            continue;
        };
        let AddrBase::Reg(sum) = addr.base else {
            continue;
        };
        if !matches!(space, None | Some(Space::Global)) {
            continue;
        }
        let size = (ty.bytes() * vec as usize) as u64;
        let Some(span) = scope.span(i, sum, addr.offset, size) else {
            continue;
        };
        found.insert(i, span);
    }
    found
}

/// A function body and where its basic blocks start (labels).
struct Scope<'f> {
    body: &'f [crate::ast::Instruction],
    starts: &'f HashSet<usize>,
}

impl Scope<'_> {
    /// The instruction that last wrote `r` before `i` in `i`'s basic block, if it is not
    /// guarded (a guarded write may not have happened).
    fn last_def(&self, i: usize, r: RegId) -> Option<usize> {
        let mut j = i;
        while j > 0 && !self.starts.contains(&j) {
            j -= 1;
            let ins = &self.body[j];
            if matches!(
                ins.inst,
                Inst::Bra { .. } | Inst::Call { .. } | Inst::Ret | Inst::Exit
            ) {
                return None;
            }
            if ins.inst.writes(r) {
                return ins.guard.is_none().then_some(j);
            }
        }
        None
    }

    /// Whether `r` is written by an instruction in `from+1 .. to`.
    fn written_between(&self, from: usize, to: usize, r: RegId) -> bool {
        self.body[from + 1..to].iter().any(|i| i.inst.writes(r))
    }

    /// The span of the access at `at` through `[sum + offset]` of `size` bytes.
    fn span(&self, at: usize, sum: RegId, offset: i64, size: u64) -> Option<BoundedSpan> {
        let d = self.last_def(at, sum)?;
        let Inst::IntBin {
            op: IntBinOp::Add,
            ty,
            sat: false,
            carry,
            a: Operand::Reg(a),
            b: Operand::Reg(b),
            ..
        } = &self.body[d].inst
        else {
            return None;
        };
        if ty.bits() != 64 || carry.carry_in || carry.carry_out {
            return None;
        }
        // Either operand may be the base: the one whose index is bounded is the other.
        for (base, index) in [(*a, *b), (*b, *a)] {
            if base == sum || self.written_between(d, at, base) {
                continue;
            }
            let Some((max, multiple)) = self.range(d, index, 64, 0) else {
                continue;
            };
            if multiple % size != 0 || offset.rem_euclid(size as i64) != 0 {
                continue;
            }
            let end = i64::try_from(max)
                .ok()
                .and_then(|m| m.checked_add(offset)?.checked_add(size as i64))?;
            return Some(BoundedSpan {
                base,
                lowest: offset,
                end,
                align: size,
            });
        }
        None
    }

    /// `(max, multiple)`: register `r` as read at instruction `at` (as an unsigned number
    /// of `bits`) lies in `[0, max]` and is a multiple of `multiple` (a power of two).
    fn range(&self, at: usize, r: RegId, bits: u32, depth: usize) -> Option<(u64, u64)> {
        if depth > MAX_DEPTH {
            return None;
        }
        let d = self.last_def(at, r)?;
        let imm = |o: &Operand, ty: Type| match o {
            Operand::Imm(i @ Imm::Int(_)) => Some(i.bits_for(ty)),
            _ => None,
        };
        let reg = |o: &Operand| match o {
            Operand::Reg(x) => Some(*x),
            _ => None,
        };
        let (max, multiple) = match &self.body[d].inst {
            Inst::IntBin {
                op,
                ty,
                sat: false,
                a,
                b,
                ..
            } if ty.is_int() => {
                let width = ty.bits();
                match op {
                    IntBinOp::And => {
                        let m = imm(b, *ty).or_else(|| imm(a, *ty))?;
                        (m, lowest_bit(m))
                    }
                    IntBinOp::Rem if !ty.is_signed() => {
                        let m = imm(b, *ty).filter(|m| *m > 0)?;
                        (m - 1, 1)
                    }
                    IntBinOp::Shr if !ty.is_signed() => {
                        let k = imm(b, Type::U32)?;
                        (mask(width).checked_shr(k as u32).unwrap_or(0), 1)
                    }
                    IntBinOp::Shl => {
                        let k = imm(b, Type::U32)? as u32;
                        let (m, mul) = self.range(d, reg(a)?, width, depth + 1)?;
                        scaled(m, mul, 1u64.checked_shl(k)?, width)?
                    }
                    _ => return None,
                }
            }
            Inst::Mul { mode, ty, a, b, .. } if ty.is_int() && *mode != MulMode::Hi => {
                let (x, k) = match (reg(a), imm(b, *ty)) {
                    (Some(x), Some(k)) => (x, k),
                    _ => (reg(b)?, imm(a, *ty)?),
                };
                let (m, mul) = self.range(d, x, ty.bits(), depth + 1)?;
                // A signed `.wide` product extends its operands' signs: both must be
                // non-negative to give the unsigned product.
                if *mode == MulMode::Wide
                    && ty.is_signed()
                    && (m > mask(ty.bits() - 1) || k > mask(ty.bits() - 1))
                {
                    return None;
                }
                scaled(m, mul, k, mode.result_type(*ty).bits())?
            }
            Inst::Cvt {
                dty,
                aty,
                rnd: None,
                sat: false,
                a,
                ..
            } if dty.is_int() && aty.is_int() => {
                let (m, mul) = self.range(d, reg(a)?, aty.bits(), depth + 1)?;
                // A signed source is extended by its sign; a narrower result truncates.
                let kept = dty.bits().min(aty.bits() - u32::from(aty.is_signed()));
                if m > mask(kept) {
                    return None;
                }
                (m, mul)
            }
            Inst::Mov { ty, a, .. } if ty.is_int() => {
                self.range(d, reg(a)?, ty.bits(), depth + 1)?
            }
            _ => return None,
        };
        // Read at `bits`, a wider value is truncated: keep only what fits.
        (max <= mask(bits)).then_some((max, multiple))
    }
}

/// `2^k`, the largest power of two dividing `m` (`m` 0: any, say 2^63).
fn lowest_bit(m: u64) -> u64 {
    1 << m.trailing_zeros().min(63)
}

/// All ones in the low `bits` bits.
fn mask(bits: u32) -> u64 {
    if bits >= 64 {
        u64::MAX
    } else {
        (1 << bits) - 1
    }
}

/// The range of `x × k` for `x` in `[0, max]` a multiple of `multiple`, when no product
/// exceeds `width` bits.
fn scaled(max: u64, multiple: u64, k: u64, width: u32) -> Option<(u64, u64)> {
    let m = max.checked_mul(k).filter(|m| *m <= mask(width))?;
    let mul = if k == 0 {
        1 << 63
    } else {
        multiple.saturating_mul(lowest_bit(k))
    };
    Some((m, mul))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Module;

    /// The bounded accesses of kernel `k` whose body is `body` (registers declared here).
    fn spans(body: &str) -> Vec<(i64, i64, u64)> {
        let ptx = format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 t)\n{{\n\
             .reg .b32 %h, %i;\n.reg .b64 %a, %x, %p;\n.reg .pred %q;\n\
             ld.param.u64 %a, [t];\nmov.u32 %h, %tid.x;\n{body}\nret;\n}}\n"
        );
        let m = Module::parse(&ptx).expect("test PTX parses");
        let mut found: Vec<_> = bounded_accesses(m.func(crate::ast::FuncId(0)))
            .into_values()
            .map(|s| (s.lowest, s.end, s.align))
            .collect();
        found.sort_unstable();
        found
    }

    #[test]
    fn a_masked_scaled_index_bounds_the_access() {
        let lookup = "and.b32 %i, %h, 255;\nmul.wide.u32 %x, %i, 4;\nadd.s64 %p, %a, %x;\nld.global.u32 %i, [%p+8];";
        assert_eq!(spans(lookup), vec![(8, 1032, 4)]);
        // A byte index, zero-extended, the base on the right.
        let bytes = "rem.u32 %i, %h, 100;\ncvt.u64.u32 %x, %i;\nadd.s64 %p, %x, %a;\nld.global.u8 %i, [%p];";
        assert_eq!(spans(bytes), vec![(0, 100, 1)]);
        // A signed widening of a non-negative index, and a shift.
        let signed = "shr.u32 %i, %h, 24;\nmul.wide.s32 %x, %i, 2;\nshl.b64 %x, %x, 1;\nadd.s64 %p, %a, %x;\nst.global.u32 [%p], %h;";
        assert_eq!(spans(signed), vec![(0, 1024, 4)]);
    }

    #[test]
    fn what_may_not_hold_at_the_access_bounds_nothing() {
        for body in [
            // The mask does not keep the index non-negative for a signed widening.
            "and.b32 %i, %h, -4;\nmul.wide.s32 %x, %i, 4;\nadd.s64 %p, %a, %x;\nld.global.u32 %i, [%p];",
            // A guarded mask may not have run.
            "setp.eq.u32 %q, %h, 0;\n@%q and.b32 %i, %h, 255;\nmul.wide.u32 %x, %i, 4;\nadd.s64 %p, %a, %x;\nld.global.u32 %i, [%p];",
            // The base changes between the sum and the access.
            "and.b32 %i, %h, 255;\nmul.wide.u32 %x, %i, 4;\nadd.s64 %p, %a, %x;\nadd.s64 %a, %a, 4;\nld.global.u32 %i, [%p];",
            // The sum is computed in another block.
            "and.b32 %i, %h, 255;\nmul.wide.u32 %x, %i, 4;\nadd.s64 %p, %a, %x;\nL:\nld.global.u32 %i, [%p];",
            // An index scaled by less than the access size leaves it unaligned.
            "and.b32 %i, %h, 255;\nmul.wide.u32 %x, %i, 2;\nadd.s64 %p, %a, %x;\nld.global.u32 %i, [%p];",
            // A shared-space access is tested against its own window.
            "and.b32 %i, %h, 255;\nmul.wide.u32 %x, %i, 4;\nadd.s64 %p, %a, %x;\nld.shared.u32 %i, [%p];",
        ] {
            assert_eq!(spans(body), vec![], "{body}");
        }
    }
}
