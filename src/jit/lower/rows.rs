//! Product rows: the way GPU bignum code adds a product `Σ a_j·b_j·2^(w·j)` into an
//! accumulator of limbs, as two carry chains (PTX ISA 9.7.2):
//!
//! ```text
//! mad.lo.cc.u32  t0, a0, b0, t0;      // the low halves, at limbs 0 .. n-1
//! madc.lo.cc.u32 t1, a1, b1, t1;  ...
//! addc.cc.u32    t4, t4, 0;           // the carry into the limbs above
//! addc.u32       t5, t5, 0;
//! mad.hi.cc.u32  t1, a0, b0, t1;      // the high halves, one limb up
//! madc.hi.cc.u32 t2, a1, b1, t2;  ...
//! addc.u32       t5, t5, 0;
//! ```
//!
//! Both chains end at the same top limb and drop their last carry, so together they add the
//! whole product modulo 2^(w·(top+1)). A CPU forms each product once, as one double-width
//! value, and carries it in one chain: `acc = t_j + a_j·b_j + c` (at most 2^(2w) − 1, so it
//! never wraps), `t_j = low(acc)`, `c = high(acc)`, then `c` rippled through the limbs above.
//! The sum is the same; the flag CC.CF in between is not, so a row is taken only where
//! nothing reads CC.CF after it before writing it. Lowered as written, every product is
//! formed twice (`imul` for `.lo`, `mul` for `.hi`) and two carries are live.

use super::Lower;
use super::liveness;
use crate::ast::{Function, Imm, Inst, IntBinOp, MulMode, Operand, RegId, Type};
use cranelift_codegen::ir::{InstBuilder, Value, types};
use std::collections::{HashMap, HashSet};

/// A recognised pair of rows: instructions `start..=end` of a function.
#[derive(Clone)]
pub(super) struct Row {
    pub end: usize,
    /// `.u32` or `.u64`.
    pub ty: Type,
    /// The factors of each product, low limb first.
    pub pairs: Vec<(Operand, Operand)>,
    /// The accumulator's limbs, low first: a product's limb and the limbs above it.
    pub limbs: Vec<RegId>,
}

/// The rows of a function.
#[derive(Default)]
pub(super) struct Rows {
    /// By first instruction.
    pub start: HashMap<usize, Row>,
    /// The other instructions of the rows: lowered with their first.
    pub inner: HashSet<usize>,
}

/// The rows of `f`.
pub(super) fn plan(f: &Function) -> Rows {
    let body = f.body.as_deref().unwrap_or(&[]);
    let labelled: HashSet<usize> = f.labels.iter().copied().collect();
    let mut rows = Rows::default();
    let mut i = 0;
    while i < body.len() {
        match row_at(f, i) {
            Some(row)
                if !(i + 1..=row.end).any(|k| labelled.contains(&k))
                    && carry_dead_after(f, row.end) =>
            {
                let end = row.end;
                rows.inner.extend(i + 1..=end);
                rows.start.insert(i, row);
                i = end + 1;
            }
            _ => i += 1,
        }
    }
    rows
}

/// One step of a chain: `mad{c}.{lo,hi}{.cc}` accumulating into its own destination, or
/// `addc{.cc} t, t, 0`.
struct Step<'a> {
    mode: Option<MulMode>,
    ty: Type,
    carry_in: bool,
    carry_out: bool,
    limb: RegId,
    pair: Option<(&'a Operand, &'a Operand)>,
}

fn step(f: &Function, i: usize) -> Option<Step<'_>> {
    let ins = f.body.as_deref()?.get(i)?;
    if ins.guard.is_some() {
        return None;
    }
    match &ins.inst {
        Inst::Mad {
            mode: mode @ (MulMode::Lo | MulMode::Hi),
            ty,
            sat: false,
            carry,
            d: Operand::Reg(d),
            a,
            b,
            c: Operand::Reg(c),
        } if d == c => Some(Step {
            mode: Some(*mode),
            ty: *ty,
            carry_in: carry.carry_in,
            carry_out: carry.carry_out,
            limb: *d,
            pair: Some((a, b)),
        }),
        Inst::IntBin {
            op: IntBinOp::Add,
            ty,
            sat: false,
            carry,
            d: Operand::Reg(d),
            a: Operand::Reg(a),
            b: Operand::Imm(Imm::Int(0)),
        } if d == a && carry.carry_in => Some(Step {
            mode: None,
            ty: *ty,
            carry_in: true,
            carry_out: carry.carry_out,
            limb: *d,
            pair: None,
        }),
        _ => None,
    }
}

/// A chain of `mode` products starting at `i` (its first step without carry-in, each later
/// step taking the carry of the one before), then at most `most_addc` `addc` steps: (its
/// steps, the index after it).
fn chain(
    f: &Function,
    i: usize,
    mode: MulMode,
    ty: Type,
    most_addc: usize,
) -> (Vec<Step<'_>>, usize) {
    let mut steps: Vec<Step> = Vec::new();
    let mut addc = 0;
    while let Some(s) = step(f, i + steps.len()) {
        let fits = match (s.mode, steps.last()) {
            (Some(m), None) => m == mode && !s.carry_in,
            (Some(m), Some(p)) => m == mode && addc == 0 && s.carry_in && p.carry_out,
            (None, Some(p)) => addc < most_addc && p.carry_out,
            (None, None) => false,
        };
        if s.ty != ty || !fits {
            break;
        }
        addc += s.mode.is_none() as usize;
        steps.push(s);
    }
    let end = i + steps.len();
    (steps, end)
}

/// The pair of rows starting at instruction `i`, if one does.
fn row_at(f: &Function, i: usize) -> Option<Row> {
    let ty = step(f, i)?.ty;
    if !matches!(ty, Type::U32 | Type::U64) {
        return None;
    }
    let (lo, k) = chain(f, i, MulMode::Lo, ty, usize::MAX);
    let n = lo.iter().filter(|s| s.mode.is_some()).count();
    if n == 0 || lo.len() == n {
        return None;
    }
    let (hi, k) = chain(f, k, MulMode::Hi, ty, lo.len() - n - 1);
    let limbs: Vec<RegId> = lo.iter().map(|s| s.limb).collect();
    let hi_products = hi.iter().filter(|s| s.mode.is_some()).count();
    let same_pairs = hi_products == n && (lo.iter().zip(&hi)).all(|(l, h)| l.pair == h.pair);
    let shifted = hi.iter().map(|s| s.limb).eq(limbs[1..].iter().copied());
    if !same_pairs || !shifted {
        return None;
    }
    // Distinct limbs of the row's width, and factors that the row does not write.
    let distinct = limbs.iter().collect::<HashSet<_>>().len() == limbs.len();
    let exact = limbs.iter().all(|r| f.reg(*r).ty.bits() == ty.bits());
    let factor_ok = |o: &Operand| match o {
        Operand::Reg(r) => !limbs.contains(r),
        Operand::Imm(Imm::Int(_)) => true,
        _ => false,
    };
    let pairs: Vec<(Operand, Operand)> = lo[..n]
        .iter()
        .map(|s| s.pair.expect("a product step"))
        .map(|(a, b)| (a.clone(), b.clone()))
        .collect();
    let factors_ok = pairs.iter().all(|(a, b)| factor_ok(a) && factor_ok(b));
    (distinct && exact && factors_ok).then_some(Row {
        end: k - 1,
        ty,
        pairs,
        limbs,
    })
}

/// Whether no path from after instruction `end` reads CC.CF before writing it. A call
/// counts as a read (the callee's view of the flag is not this function's business).
fn carry_dead_after(f: &Function, end: usize) -> bool {
    let body = f.body.as_deref().unwrap_or(&[]);
    let mut seen = HashSet::new();
    let mut work = liveness::successors(f, end);
    while let Some(k) = work.pop() {
        if !seen.insert(k) {
            continue;
        }
        let ins = &body[k];
        let (reads, writes) = match &ins.inst {
            Inst::IntBin { carry, .. } | Inst::Mad { carry, .. } => {
                (carry.carry_in, carry.carry_out)
            }
            Inst::Call { .. } => (true, false),
            _ => (false, false),
        };
        if reads {
            return false;
        }
        if !(writes && ins.guard.is_none()) {
            work.extend(liveness::successors(f, k));
        }
    }
    true
}

/// The factors of the products at limbs `j` and `j + 1` of a u32 row as one 32×64-bit
/// product `(y_hi:y_lo)·x`, when the two share a factor (`None` for a limb without a
/// product); `None` when they share none.
fn paired_factors(row: &Row, j: usize) -> Option<[Option<Operand>; 3]> {
    let n = row.pairs.len();
    if j >= n {
        return Some([None, None, None]);
    }
    let (a0, b0) = &row.pairs[j];
    if j + 1 == n {
        return Some([Some(a0.clone()), None, Some(b0.clone())]);
    }
    let (a1, b1) = &row.pairs[j + 1];
    let [y0, y1, x] = if b0 == b1 {
        [a0, a1, b0]
    } else if a0 == a1 {
        [b0, b1, a0]
    } else if b0 == a1 {
        [a0, b1, b0]
    } else if a0 == b1 {
        [b0, a1, a0]
    } else {
        return None;
    };
    Some([Some(y0.clone()), Some(y1.clone()), Some(x.clone())])
}

impl Lower<'_, '_> {
    /// A pair of rows as one chain of double-width steps (see the module documentation).
    /// A u32 row goes two limbs a step where it can: `acc = (t1:t0) + (y1:y0)·x + c` in 128
    /// bits (at most 2^96 − 1 with c < 2^32, so c stays below 2^32), half the steps of
    /// 32-bit ones. The row starts at the limb that makes its pairs the previous row's
    /// (a row one limb down reads the limbs the last one wrote, shifted by one), so the
    /// packed pairs pass from row to row and are never taken apart.
    pub(super) fn product_row(&mut self, start: usize, row: &Row) {
        self.at = start;
        let wide32 = row.ty == Type::U32;
        let mut j = 0;
        if wide32 && row.limbs.len() > 2 {
            let [t0, t1, t2] = [0, 1, 2].map(|k| self.limb_value(row, k));
            if !self.packed.contains_key(&(t0, t1)) && self.packed.contains_key(&(t1, t2)) {
                j = 1;
            }
        }
        let mut carry = None;
        for k in 0..j {
            carry = Some(self.row_step(row, k, carry));
        }
        while j < row.limbs.len() {
            let pair = (wide32 && j + 1 < row.limbs.len())
                .then(|| paired_factors(row, j))
                .flatten();
            match pair {
                Some(factors) => {
                    carry = Some(self.row_pair_step(row, j, factors, carry));
                    j += 2;
                }
                None => {
                    carry = Some(self.row_step(row, j, carry));
                    j += 1;
                }
            }
        }
    }

    /// Limb `j` of a row: `acc = t_j + a_j·b_j + c` (no product above the row), one width
    /// up; the limb is its low half, the carry out (returned, an i64) its high half.
    fn row_step(&mut self, row: &Row, j: usize, carry: Option<Value>) -> Value {
        let (narrow, wide) = match row.ty {
            Type::U32 => (types::I32, types::I64),
            _ => (types::I64, types::I128),
        };
        let mut terms = Vec::new();
        if let Some((a, b)) = row.pairs.get(j) {
            // The factor the row shares goes first: x86's `mulx` reads it from rdx, where it
            // then stays for the whole row.
            let shared_a = [j.wrapping_sub(1), j + 1]
                .iter()
                .filter_map(|&k| row.pairs.get(k))
                .any(|(a2, b2)| a2 == a && b2 != b);
            let (first, second) = if shared_a { (a, b) } else { (b, a) };
            let (x, y) = (self.get(first, row.ty), self.get(second, row.ty));
            let (x, y) = (self.resize(x, wide, false), self.resize(y, wide, false));
            terms.push(self.b.ins().imul(x, y));
        }
        let t = self.limb_value(row, j);
        terms.extend([Some(t), carry].into_iter().flatten());
        terms.retain(|&v| self.const_of(v) != Some(0));
        // Above the products: one term has no carry, and the top limb's carry is dropped.
        if j >= row.pairs.len() && (terms.len() <= 1 || j + 1 == row.limbs.len()) {
            let v = self.sum_in(&terms, narrow);
            self.set_reg(row.limbs[j], row.ty, v);
            return self.iconst(types::I64, 0);
        }
        let acc = self.sum_in(&terms, wide);
        let (low, high) = self.halves(acc, narrow);
        self.set_reg(row.limbs[j], row.ty, low);
        high
    }

    /// Limbs `j` and `j + 1` of a u32 row at once, `(y1:y0)·x` their product (see
    /// [`paired_factors`]): the pair is kept packed for the next row (`Lower::packed`).
    fn row_pair_step(
        &mut self,
        row: &Row,
        j: usize,
        [y0, y1, x]: [Option<Operand>; 3],
        carry: Option<Value>,
    ) -> Value {
        let get = |l: &mut Self, o: Option<Operand>| match o {
            Some(o) => l.get(&o, Type::U32),
            None => l.iconst(types::I32, 0),
        };
        let (y0, y1, x) = (get(self, y0), get(self, y1), get(self, x));
        let (t0, t1) = (self.limb_value(row, j), self.limb_value(row, j + 1));
        let mut terms = Vec::new();
        let product = self.const_of(y0) != Some(0) || self.const_of(y1) != Some(0);
        if product {
            let y = self.pack(y0, y1);
            let y = self.resize(y, types::I128, false);
            let x = self.resize(x, types::I64, false);
            let x = self.resize(x, types::I128, false);
            // The shared factor first, into rdx for `mulx`, as in `row_step`.
            terms.push(self.b.ins().imul(x, y));
        }
        terms.push(self.pack(t0, t1));
        terms.extend(carry);
        terms.retain(|&v| self.const_of(v) != Some(0));
        // Above the products: one term has no carry, and the top pair's carry is dropped.
        let (low, high) = if !product && (terms.len() <= 1 || j + 2 == row.limbs.len()) {
            (self.sum_in(&terms, types::I64), self.iconst(types::I64, 0))
        } else {
            let acc = self.sum_in(&terms, types::I128);
            self.halves(acc, types::I64)
        };
        let v0 = self.b.ins().ireduce(types::I32, low);
        let up = self.b.ins().ushr_imm_s(low, 32);
        let v1 = self.narrow_zext(types::I32, up);
        self.packed.insert((v0, v1), low);
        self.set_reg(row.limbs[j], row.ty, v0);
        self.set_reg(row.limbs[j + 1], row.ty, v1);
        high
    }

    fn limb_value(&mut self, row: &Row, j: usize) -> Value {
        self.get(&Operand::Reg(row.limbs[j]), row.ty)
    }

    /// `hi:lo` of two 32-bit values as an i64: a pair a row made, or made once and used
    /// again in the blocks its block is known to dominate (a row's factors are packed for
    /// the rows after it, across the checks between them, but not for a row in a block
    /// beside it), folded for constants.
    fn pack(&mut self, lo: Value, hi: Value) -> Value {
        if let Some(&p) = self.packed.get(&(lo, hi)) {
            return p;
        }
        let here = self.b.current_block();
        if let Some(&(at, p)) = self.packed_here.get(&(lo, hi))
            && here.is_some_and(|h| self.dominates(at, h))
        {
            return p;
        }
        if let (Some(l), Some(h)) = (self.const_of(lo), self.const_of(hi)) {
            let bits = (l as u32 as u64) | (h as u32 as u64) << 32;
            return self.iconst(types::I64, bits);
        }
        let l = self.resize(lo, types::I64, false);
        if self.const_of(hi) == Some(0) {
            return l;
        }
        let h = self.resize(hi, types::I64, false);
        let h = self.b.ins().ishl_imm_s(h, 32);
        let p = self.b.ins().bor(l, h);
        if let Some(at) = here {
            self.packed_here.insert((lo, hi), (at, p));
        }
        p
    }
}
