//! Which float results need no canonical NaN. PTX's arithmetic gives the canonical NaN
//! (PTX ISA 9.7.3: NaN results are `0x7fffffff` / `0x7fffffffffffffff`), x86 gives its
//! default NaN or an input's payload, so every result is made canonical (a compare and a
//! select). That is only needed where some instruction can tell the payloads apart: a
//! `mov`, a store, a conversion, `neg`/`abs` (they flip bits), an integer view of the bits.
//! Float arithmetic of the same type cannot (a NaN in gives a NaN out whatever its payload,
//! and makes its own result canonical), nor can a float comparison. So the result of an
//! `add`/`sub`/`mul`/`div`/`min`/`max`/`fma`/`mad` whose value, in straight-line code, is
//! read only by such instructions before it dies or is overwritten stays as the host made
//! it; a chain of them (a dot product) pays for the canonical NaN once, at its end.

use super::super::liveness::{self, RegSet};
use crate::ast::{Function, Inst, Operand, RegId, Type};

/// The register and type an instruction's float arithmetic writes, if it is such.
fn arithmetic_result(inst: &Inst) -> Option<(RegId, Type)> {
    match inst {
        Inst::FloatBin {
            ty: ty @ (Type::F32 | Type::F64),
            d: Operand::Reg(r),
            ..
        }
        | Inst::Fma {
            ty: ty @ (Type::F32 | Type::F64),
            d: Operand::Reg(r),
            ..
        } => Some((*r, *ty)),
        _ => None,
    }
}

/// Whether `inst` reads its float sources of type `ty` without seeing a NaN's payload.
fn payload_blind(inst: &Inst, ty: Type) -> bool {
    match inst {
        Inst::FloatBin { ty: t, .. } | Inst::Fma { ty: t, .. } | Inst::Setp { ty: t, .. } => {
            *t == ty
        }
        _ => false,
    }
}

/// For each instruction of `f`: whether it is float arithmetic whose NaN result nothing
/// observes (see the module documentation).
pub(in crate::jit::lower) fn unobserved(f: &Function) -> Vec<bool> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let mut out = vec![false; body.len()];
    if !body.iter().any(|i| arithmetic_result(&i.inst).is_some()) {
        return out;
    }
    let live = liveness::live_out(f);
    let mut label = vec![false; body.len() + 1];
    for &t in &f.labels {
        if t <= body.len() {
            label[t] = true;
        }
    }
    for (i, ins) in body.iter().enumerate() {
        if let Some((r, ty)) = arithmetic_result(&ins.inst) {
            out[i] = unobserved_from(f, &live, &label, i, r, ty);
        }
    }
    out
}

/// Follows the value that instruction `i` writes to `r` down the straight-line code after
/// it: true if it dies or is overwritten having met only payload-blind readers.
fn unobserved_from(
    f: &Function,
    live: &[RegSet],
    label: &[bool],
    i: usize,
    r: RegId,
    ty: Type,
) -> bool {
    let body = f.body.as_deref().unwrap_or(&[]);
    let mut j = i;
    loop {
        if !liveness::has(&live[j], r) {
            return true;
        }
        // Live where control may leave the straight line: some reader elsewhere may see it.
        let leaves = j + 1 >= body.len()
            || label[j + 1]
            || matches!(body[j].inst, Inst::Bra { .. } | Inst::Ret | Inst::Exit);
        if leaves {
            return false;
        }
        j += 1;
        let ins = &body[j];
        let reads = ins.guard.is_some_and(|g| g.reg == r) || ins.inst.reads().contains(&r);
        if reads && !payload_blind(&ins.inst, ty) {
            return false;
        }
        if ins.guard.is_none() && ins.inst.writes(r) {
            return true;
        }
    }
}
