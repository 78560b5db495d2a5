//! Where things live in memory for generated code: each function's frame (its variables),
//! the buffers that carry arguments and return values between functions, and a kernel's
//! parameter block.

use super::runtime::FrameVar;
use crate::ast::{FuncKind, Function, Module, VarRole};
use crate::memcheck;
use std::sync::Arc;

/// The most `.local`/`.param` memory one function's frame may hold: PTX's per-thread local
/// memory limit (512 KiB). With the 256-deep call limit this bounds the stack a launch needs.
pub const MAX_FRAME_BYTES: u32 = 512 << 10;

/// Every variable starts at a multiple of this (enough for any PTX access, `.v4.b32`
/// included), so the natural alignment of an access depends only on its offset.
pub const VAR_ALIGN: u32 = 16;

fn align_up(v: u32, a: u32) -> u32 {
    v.div_ceil(a) * a
}

/// Offsets of consecutive pieces of the given sizes, each aligned to `align`; and the total.
pub fn packed(sizes: impl IntoIterator<Item = usize>, align: u32) -> (Vec<u32>, u32) {
    let mut offsets = Vec::new();
    let mut at = 0;
    for s in sizes {
        at = align_up(at, align);
        offsets.push(at);
        at += s as u32;
    }
    (offsets, align_up(at, align))
}

/// The memory layout of one function.
#[derive(Clone, Debug, Default)]
pub struct FrameLayout {
    /// Offset of each function variable in the frame (unused for a kernel's parameters,
    /// which live in the launch's parameter block).
    pub vars: Vec<u32>,
    pub frame_size: u32,
    /// Offsets of the parameters in an argument buffer, and its size.
    pub args: Vec<u32>,
    pub args_size: u32,
    /// Offsets of the return parameters in a return buffer, and its size.
    pub rets: Vec<u32>,
    pub rets_size: u32,
    /// Offsets of a kernel's parameters in its parameter block, and its size.
    pub kernel_params: Vec<u32>,
    pub kernel_params_size: u32,
    /// Bytes this function needs for the argument and return buffers of its calls.
    pub call_buf: u32,
    /// The frame's variables, for checked accesses.
    pub frame_vars: Vec<FrameVar>,
    /// Variables kept in registers instead of the frame, as their pieces ([`in_registers`]).
    pub in_registers: Vec<Option<Vec<Piece>>>,
}

impl FrameLayout {
    /// Whether the frame holds any variable (checked mode registers them).
    pub fn has_vars(&self) -> bool {
        !self.frame_vars.is_empty()
    }

    pub fn of(module: &Module, f: &Function) -> FrameLayout {
        // A kernel's parameters are the launch's; `.shared` variables are the block's
        // (see `crate::block`).
        let in_registers = in_registers(f);
        let in_frame = |v: &crate::ast::VarDecl| {
            !(f.kind == FuncKind::Entry && matches!(v.role, VarRole::Param(_)))
                && v.space != crate::ast::Space::Shared
        };
        let mut vars = Vec::with_capacity(f.vars.len());
        let mut frame_vars = Vec::new();
        let mut at = 0;
        for (v, in_register) in f.vars.iter().zip(&in_registers) {
            if in_frame(v) && in_register.is_none() {
                at = align_up(at, VAR_ALIGN);
                vars.push(at);
                frame_vars.push(FrameVar {
                    offset: at,
                    size: v.size,
                    space: v.space,
                    name: Arc::from(memcheck::frame_var_name(v.space, &v.name)),
                });
                at += v.size.max(1) as u32;
            } else {
                vars.push(0);
            }
        }
        let (args, args_size) = packed(sizes_of(f, &f.params), 8);
        let (rets, rets_size) = packed(sizes_of(f, &f.rets), 8);
        let (kernel_params, kernel_params_size) = packed(sizes_of(f, &f.params), VAR_ALIGN);
        let call_buf = f
            .body
            .iter()
            .flatten()
            .filter_map(|ins| match &ins.inst {
                crate::ast::Inst::Call { func, .. } => {
                    let c = module.func(*func);
                    let a = packed(sizes_of(c, &c.params), 8).1;
                    let r = packed(sizes_of(c, &c.rets), 8).1;
                    // A call without parameters still passes the buffer's address.
                    Some((a + r).max(8))
                }
                _ => None,
            })
            .max()
            .unwrap_or(0);
        FrameLayout {
            vars,
            frame_size: align_up(at, VAR_ALIGN),
            args,
            args_size,
            rets,
            rets_size,
            kernel_params,
            kernel_params_size,
            call_buf,
            frame_vars,
            in_registers,
        }
    }
}

/// A part of a variable kept in a register: `size` bytes (1, 2, 4 or 8) at `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Piece {
    pub offset: u32,
    pub size: u32,
}

/// The most bytes a variable kept in registers may have, and the most pieces.
const MAX_REGISTER_VAR_BYTES: usize = 1024;
const MAX_PIECES: usize = 64;

/// Which of `f`'s variables live in registers, and in which pieces: a `.param` or `.local`
/// variable declared in the body (a call sequence's parameters, an inlined callee's, see
/// `frontend::inline_small_calls`, a small local array), or a `.func`'s own parameter or
/// return parameter (a bignum passed by value as `.param .b8 a[32]`), that only plain
/// `ld`/`st` (vectors included) at constant offsets from its own address touch, each access
/// naturally aligned as a whole and inside it, and every two elements either the same bytes
/// or disjoint. Each distinct element is a piece. Nothing can take the variable's address, so
/// nothing can tell it is not in memory: a load reads the bits the last store of its piece
/// wrote (or the argument, or zero, as the frame starts), and a byte no piece covers is
/// never read. A function with sync points keeps its frame (its round function saves
/// registers, not these).
pub fn in_registers(f: &Function) -> Vec<Option<Vec<Piece>>> {
    use crate::ast::{AddrBase, Inst, MemOrder, Space, VarId};
    let mut pieces: Vec<Option<Vec<Piece>>> = (f.vars.iter())
        .map(|v| {
            ((v.role == VarRole::Body || f.kind == FuncKind::Func)
                && matches!(v.space, Space::Param | Space::Local)
                && (1..=MAX_REGISTER_VAR_BYTES).contains(&v.size))
            .then(Vec::new)
        })
        .collect();
    let body = f.body.as_deref().unwrap_or(&[]);
    if body.iter().any(|i| matches!(i.inst, Inst::Sync { .. })) {
        return vec![None; f.vars.len()];
    }
    for ins in body {
        // The variable a plain access at a constant offset from its own address reads or
        // writes, and the elements it touches.
        let access = match &ins.inst {
            Inst::Ld {
                space,
                order: MemOrder::Weak,
                vec,
                ty,
                addr,
                ..
            }
            | Inst::St {
                space,
                order: MemOrder::Weak,
                vec,
                ty,
                addr,
                ..
            } => match addr.base {
                // A vector access must be aligned as a whole (else it faults in checked
                // mode, so its variable stays in memory where that is tested).
                AddrBase::Var(VarId::Function(i))
                    if space.is_none_or(|s| s == f.var(i).space)
                        && addr.offset % (ty.bytes() as i64 * *vec as i64) == 0 =>
                {
                    let n = ty.bytes() as i64;
                    let elements: Option<Vec<Piece>> = (0..*vec as i64)
                        .map(|k| {
                            let at = addr.offset.checked_add(k * n)?;
                            let fits = at >= 0 && at % n == 0 && at + n <= f.var(i).size as i64;
                            fits.then_some(Piece {
                                offset: at as u32,
                                size: n as u32,
                            })
                        })
                        .collect();
                    elements.map(|e| (i, e))
                }
                _ => None,
            },
            _ => None,
        };
        // The access names its own variable once; any other naming (an address taken, a
        // call's argument, an access it cannot be split into pieces for) keeps the
        // variable in memory.
        let mut own = access.as_ref().map(|(i, _)| *i);
        for v in ins.vars() {
            if let VarId::Function(i) = v {
                if own == Some(i) {
                    own = None;
                } else {
                    pieces[i as usize] = None;
                }
            }
        }
        if let Some((i, elements)) = access
            && let Some(known) = &mut pieces[i as usize]
        {
            known.extend(elements);
        }
    }
    for p in pieces.iter_mut() {
        if let Some(known) = p {
            known.sort_unstable();
            known.dedup();
            let disjoint = known
                .windows(2)
                .all(|w| w[0].offset + w[0].size <= w[1].offset);
            if !disjoint || known.len() > MAX_PIECES {
                *p = None;
            }
        }
    }
    pieces
}

fn sizes_of(f: &Function, ps: &[crate::ast::Param]) -> Vec<usize> {
    ps.iter().map(|p| f.param_size(p)).collect()
}
