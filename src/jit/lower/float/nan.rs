//! Which f32 results need no canonical NaN. NVIDIA hardware gives the canonical NaN
//! `0x7fffffff` for every f32 NaN result (docs/semantics.md, "Float NaN results"), x86 gives
//! its default NaN or an input's payload, so every result is made canonical (a compare and a
//! select). That is only needed where some instruction can tell the payloads apart: a
//! `mov`, a store, a conversion, `neg`/`abs`, an integer view of the bits. f32 arithmetic
//! cannot (a NaN in gives a NaN out whatever its payload, and makes its own result
//! canonical), nor can a float comparison. So the result of an f32
//! `add`/`sub`/`mul`/`div`/`min`/`max`/`fma`/`mad` whose value, in straight-line code, is
//! read only by such instructions before it dies or is overwritten stays as the host made
//! it; a chain of them (a dot product) pays for the canonical NaN once, at its end. And a
//! register that only payload-blind instructions read, anywhere in the function (the
//! values of a float loop that only comparisons leave, as in an escape-time loop), never
//! needs a canonical NaN, whatever path its values take.
//!
//! f64 results are not planned here: the hardware keeps an f64 NaN operand's payload, so f64
//! arithmetic passes payloads on and each result is made exactly the hardware's where it is
//! computed ([`Lower::f64_nan`](super::super::Lower)).

use super::super::liveness::{self, RegSet};
use crate::ast::{Function, Inst, Operand, Param, RegId, Type};
use std::collections::HashSet;

/// The register and type an instruction's float arithmetic writes, if it is such.
fn arithmetic_result(inst: &Inst) -> Option<(RegId, Type)> {
    match inst {
        Inst::FloatBin {
            ty: ty @ Type::F32,
            d: Operand::Reg(r),
            ..
        }
        | Inst::Fma {
            ty: ty @ Type::F32,
            d: Operand::Reg(r),
            ..
        } => Some((*r, *ty)),
        _ => None,
    }
}

/// Whether `inst` reads its float sources of type `ty` without seeing a NaN's payload.
fn payload_blind(inst: &Inst, ty: Type) -> bool {
    match inst {
        Inst::FloatBin { ty: t, .. } | Inst::Fma { ty: t, .. } => *t == ty && ty == Type::F32,
        Inst::Setp { ty: t, .. } => *t == ty,
        _ => false,
    }
}

/// Where the lowering makes float results canonical.
#[derive(Default)]
pub(in crate::jit::lower) struct NanPlan {
    /// By instruction: float arithmetic whose result needs no canonical NaN where it is
    /// made (nothing observes it there, or its register's observers make it canonical).
    pub unobserved: Vec<bool>,
    /// (instruction, register): the instruction observes the register, whose every value
    /// comes from float arithmetic or a number, so it reads the value made canonical.
    pub canonical_reads: HashSet<(usize, RegId)>,
}

/// Where `f`'s float results are made canonical (see the module documentation).
pub(in crate::jit::lower) fn plan(f: &Function) -> NanPlan {
    let body = f.body.as_deref().unwrap_or(&[]);
    let mut plan = NanPlan {
        unobserved: vec![false; body.len()],
        canonical_reads: HashSet::new(),
    };
    if !body.iter().any(|i| arithmetic_result(&i.inst).is_some()) {
        return plan;
    }
    let live = liveness::live_out(f);
    let mut label = vec![false; body.len() + 1];
    for &t in &f.labels {
        if t <= body.len() {
            label[t] = true;
        }
    }
    let moved = moved_to_readers(f);
    for (i, ins) in body.iter().enumerate() {
        if let Some((r, ty)) = arithmetic_result(&ins.inst) {
            plan.unobserved[i] = moved[r.0 as usize].as_ref().is_some_and(|(t, _)| *t == ty)
                || unobserved_from(f, &live, &label, i, r, ty);
        }
    }
    for (r, m) in moved.iter().enumerate() {
        if let Some((_, observers)) = m {
            plan.canonical_reads
                .extend(observers.iter().map(|&i| (i, RegId(r as u32))));
        }
    }
    plan
}

/// By register: `(type, observers)` where the canonical NaN can be left to the readers that
/// can see payloads (`observers`). Either there are none (the values of an escape-time loop,
/// which only arithmetic and comparisons read), or every write of the register is float
/// arithmetic of its type or a number that is not a NaN, the caller gives it no value, and
/// its observers are no more than its writes (an accumulator written in a loop and stored
/// after it). A function's result registers are observed by its return.
fn moved_to_readers(f: &Function) -> Vec<Option<(Type, Vec<usize>)>> {
    let body = f.body.as_deref().unwrap_or(&[]);
    let float = |r: RegId| Some(f.reg(r).ty).filter(|t| matches!(t, Type::F32 | Type::F64));
    let mut observers: Vec<Vec<usize>> = vec![Vec::new(); f.regs.len()];
    for (i, ins) in body.iter().enumerate() {
        for r in ins.inst.reads() {
            let k = r.0 as usize;
            if float(r).is_some_and(|ty| !payload_blind(&ins.inst, ty))
                && !observers[k].contains(&i)
            {
                observers[k].push(i);
            }
        }
    }
    let mut writes = vec![0usize; f.regs.len()];
    let mut made_here = vec![true; f.regs.len()];
    for ins in body {
        let arithmetic = arithmetic_result(&ins.inst);
        for r in ins.inst.written() {
            let k = r.0 as usize;
            writes[k] += 1;
            made_here[k] &= match (&ins.inst, float(r)) {
                (_, None) => false,
                (_, Some(ty)) if arithmetic == Some((r, ty)) => true,
                (
                    Inst::Mov {
                        a: Operand::Imm(v), ..
                    },
                    Some(ty),
                ) => !is_nan(ty, v.bits_for(ty)),
                _ => false,
            };
        }
    }
    for p in &f.params {
        if let Param::Reg(r) = p {
            made_here[r.0 as usize] = false;
        }
    }
    let returned: Vec<RegId> = (f.rets.iter())
        .filter_map(|p| match p {
            Param::Reg(r) => Some(*r),
            Param::Mem(_) => None,
        })
        .collect();
    (0..f.regs.len())
        .map(|k| {
            let r = RegId(k as u32);
            let ty = float(r)?;
            let obs = std::mem::take(&mut observers[k]);
            let moved = obs.is_empty() || (made_here[k] && obs.len() <= writes[k]);
            (moved && !returned.contains(&r)).then_some((ty, obs))
        })
        .collect()
}

/// Whether `bits` are a NaN of float type `ty`.
fn is_nan(ty: Type, bits: u64) -> bool {
    match ty {
        Type::F32 => f32::from_bits(bits as u32).is_nan(),
        _ => f64::from_bits(bits).is_nan(),
    }
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
