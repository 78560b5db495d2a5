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
use cranelift_codegen::ir::{self, InstBuilder, Value, types};
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

impl Lower<'_, '_> {
    /// A pair of rows as one chain of double-width steps (see the module documentation).
    pub(super) fn product_row(&mut self, start: usize, row: &Row) {
        let (narrow, wide) = match row.ty {
            Type::U32 => (types::I32, types::I64),
            _ => (types::I64, types::I128),
        };
        let mut carry = None;
        for (j, (a, b)) in row.pairs.iter().enumerate() {
            self.at = start + j;
            let x = self.get(a, row.ty);
            let y = self.get(b, row.ty);
            let (x, y) = (self.resize(x, wide, false), self.resize(y, wide, false));
            let mut acc = self.b.ins().imul(x, y);
            let t = self.get(&Operand::Reg(row.limbs[j]), row.ty);
            for term in [Some(t), carry].into_iter().flatten() {
                if self.const_of(term) != Some(0) {
                    let term = self.resize(term, wide, false);
                    acc = self.b.ins().iadd(acc, term);
                }
            }
            let (low, high) = self.halves(acc, narrow);
            self.set_reg(row.limbs[j], row.ty, low);
            carry = Some(high);
        }
        // The last carry through the limbs above; the top limb's own carry is dropped.
        let zero = self.iconst(types::I64, 0);
        for &limb in &row.limbs[row.pairs.len()..] {
            let c = carry.take().expect("a carry from the row");
            let c = if narrow == types::I32 {
                self.narrow_zext(narrow, c)
            } else {
                c
            };
            let t = self.get(&Operand::Reg(limb), row.ty);
            let (v, cout) = self.add_with_carry(t, c, zero, false);
            self.set_reg(limb, row.ty, v);
            carry = Some(cout);
        }
    }

    /// The low half of a double-width sum (as a `narrow` value) and its high half (as an
    /// i64: the carry).
    fn halves(&mut self, acc: Value, narrow: ir::Type) -> (Value, Value) {
        if narrow == types::I64 {
            let (lo, hi) = self.b.ins().isplit(acc);
            (lo, hi)
        } else {
            // The limb as its own zero-extended copy, as in `add_with_carry`.
            let low = self.b.ins().ireduce(narrow, acc);
            let low = self.b.ins().uextend(types::I64, low);
            let v = self.narrow_zext(narrow, low);
            (v, self.b.ins().ushr_imm_s(acc, 32))
        }
    }
}
