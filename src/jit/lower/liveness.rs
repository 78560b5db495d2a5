//! Which PTX registers are live where: a backward data-flow over a function's body, read by
//! the round functions (only the registers live across a sync point are saved) and by the
//! float lowering (a NaN result nothing observes needs no canonical form).

use crate::ast::{Function, Inst, RegId};

/// A set of registers, by id.
pub(super) type RegSet = Vec<u64>;

pub(super) fn has(set: &RegSet, r: RegId) -> bool {
    set[r.0 as usize / 64] & (1 << (r.0 % 64)) != 0
}

pub(super) fn add(set: &mut RegSet, r: RegId) {
    set[r.0 as usize / 64] |= 1 << (r.0 % 64);
}

pub(super) fn remove(set: &mut RegSet, r: RegId) {
    set[r.0 as usize / 64] &= !(1 << (r.0 % 64));
}

/// The instructions control may go to after instruction `i` of `f`.
pub(super) fn successors(f: &Function, i: usize) -> Vec<usize> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let ins = &body[i];
    let falls_through =
        ins.guard.is_some() || !matches!(ins.inst, Inst::Bra { .. } | Inst::Ret | Inst::Exit);
    let mut s = Vec::new();
    if falls_through && i + 1 < body.len() {
        s.push(i + 1);
    }
    if let Inst::Bra { target, .. } = ins.inst {
        let to = f.labels[target.0 as usize];
        if to < body.len() {
            s.push(to);
        }
    }
    s
}

/// For each instruction of `f`, the registers live after it: read on some path from there
/// before they are written. Guarded writes do not count as writes (the old value survives
/// when the guard is false).
pub(super) fn live_out(f: &Function) -> Vec<RegSet> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let (n, words) = (body.len(), f.regs.len().div_ceil(64).max(1));
    let mut uses = vec![vec![0u64; words]; n];
    let mut defs = vec![vec![0u64; words]; n];
    for (i, ins) in body.iter().enumerate() {
        for r in ins.inst.reads().into_iter().chain(ins.guard.map(|g| g.reg)) {
            add(&mut uses[i], r);
        }
        if ins.guard.is_none() {
            for r in ins.inst.written() {
                add(&mut defs[i], r);
            }
        }
    }
    let succs: Vec<Vec<usize>> = (0..n).map(|i| successors(f, i)).collect();
    let mut live_in = vec![vec![0u64; words]; n];
    let mut live_out = vec![vec![0u64; words]; n];
    let mut changed = true;
    while changed {
        changed = false;
        for i in (0..n).rev() {
            let mut out = vec![0u64; words];
            for &s in &succs[i] {
                for (o, l) in out.iter_mut().zip(&live_in[s]) {
                    *o |= l;
                }
            }
            let inn: RegSet = (0..words)
                .map(|w| uses[i][w] | (out[w] & !defs[i][w]))
                .collect();
            if inn != live_in[i] {
                live_in[i] = inn;
                changed = true;
            }
            live_out[i] = out;
        }
    }
    live_out
}
