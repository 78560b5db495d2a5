//! Calls replaced by the callee's body, for two reasons: barriers and warp collectives
//! inside a `.func` ([`inline_sync_calls`], for both engines), and the cost of a call
//! through memory ([`inline_small_calls`], for the JIT only).
//!
//! Barriers and warp collectives inside a `.func` (CUDA's debug builds and `__noinline__`
//! device functions have them): each call of such a function from a kernel is replaced by
//! the function's body, so that every sync point is a point of the kernel itself, where the
//! block schedule of both engines can stop a thread ([`crate::block::schedule`]) with no
//! call stack to keep. Inlining was chosen over resumable calls because it leaves the
//! engines as they are: a round function's state is one frame, and the interpreter's
//! resumable thread one activation.
//!
//! A call becomes what the call does (PTX ISA, Control Flow Instructions: call, and the
//! frames of both engines): the callee's registers and its `.local` and `.param` variables
//! start at zero (fresh names in the kernel, set to zero where the call begins), the
//! arguments are copied into its parameters, its body runs with `ret` as a branch to the
//! call's end, and the return parameters are copied out. A guarded call is branched around.
//! Instructions keep their source lines, so a fault inside the inlined body names the
//! callee's line (and the kernel as the function).
//!
//! Such a `.func` itself cannot run on its own (a host call has no block to meet): it is
//! refused for host calls with the reason. Its `.shared` variables (NVRTC moves a kernel's
//! `__shared__` array into the one function that uses it) become variables of the kernel,
//! one per block as before, shared by every inlined copy. Recursion through such functions
//! and vector arguments refuse the kernel instead.

use super::diag::Diagnostic;
use crate::ast::*;
use std::collections::HashMap;

/// Largest `.local`/`.param` variable of an inlined function zeroed at each call, in bytes.
const MAX_ZEROED: usize = 1 << 16;

/// Inlines every call of a function that reaches a sync point into the kernels; refuses
/// such functions for host calls, and kernels whose calls cannot be inlined.
pub(super) fn inline_sync_calls(m: &mut Module) {
    let syncs = reaching_sync_points(m);
    for k in 0..m.functions.len() {
        let f = &m.functions[k];
        let calls_sync = f
            .body
            .iter()
            .flatten()
            .any(|i| matches!(i.inst, Inst::Call { func, .. } if syncs[func.0 as usize]));
        if f.kind != FuncKind::Entry || !calls_sync {
            continue;
        }
        // The engines report a fault in such a body as the kernel's, at the callee's line.
        match Inliner::function(m, &syncs, FuncId(k as u32)) {
            Ok((f, _)) => m.functions[k] = f,
            Err(d) => {
                let f = &mut m.functions[k];
                f.refused = vec![d];
                f.body = None;
            }
        }
    }
    for (f, _) in m
        .functions
        .iter_mut()
        .zip(&syncs)
        .filter(|(f, s)| **s && f.kind == FuncKind::Func)
    {
        let Some(at) = f
            .body
            .iter()
            .flatten()
            .find(|i| matches!(i.inst, Inst::Sync { .. } | Inst::Call { .. }))
        else {
            continue;
        };
        let message = format!(
            "`{}` has barriers or warp collectives: it runs inlined into the kernels that call it, not on its own",
            f.name
        );
        f.refused = vec![Diagnostic::unsupported(at.span, message)];
        f.body = None;
        f.inlined = true;
    }
}

/// Longest callee the JIT inlines, in instructions.
const SMALL_CALLEE: usize = 48;
/// Most bytes of `.param`/`.local` variables of a callee the JIT inlines (zeroed per call).
const SMALL_FRAME: usize = 256;
/// Most instructions inlining may add to one caller.
const INLINE_BUDGET: usize = 4096;

/// The module the JIT compiles: each call of a small leaf `.func` (no calls, barriers,
/// `.shared` variables or carry flag, at most `SMALL_CALLEE` instructions) replaced by the
/// callee's body, in every function without sync points, so that its arguments and results
/// are register copies instead of a call through memory (the lowering keeps such `.param`
/// variables in registers, `jit::layout::in_registers`). A module with recursion is left
/// whole: a call chain's
/// depth, which can fault, must stay what the interpreter counts. Each rebuilt function
/// lists its inlined calls, by which the JIT reports a fault inside one as the interpreter
/// does (at the call, "in call to" the callee).
pub fn inline_small_calls(mut m: Module) -> Module {
    if has_recursion(&m) {
        return m;
    }
    let small: Vec<bool> = m
        .functions
        .iter()
        .map(|f| {
            let Some(body) = &f.body else { return false };
            f.kind == FuncKind::Func
                && body.len() <= SMALL_CALLEE
                && !body
                    .iter()
                    .any(|i| matches!(i.inst, Inst::Call { .. } | Inst::Sync { .. }))
                // CC.CF is each call's own (docs/semantics.md): a callee that reads or
                // writes it keeps its call.
                && !body.iter().any(|i| i.inst.uses_carry())
                && f.vars.iter().all(|v| v.space != Space::Shared)
                && f.vars.iter().map(|v| v.size).sum::<usize>() <= SMALL_FRAME
        })
        .collect();
    for k in 0..m.functions.len() {
        let f = &m.functions[k];
        let Some(body) = &f.body else { continue };
        if body.iter().any(|i| matches!(i.inst, Inst::Sync { .. })) {
            continue;
        }
        let mut added = 0;
        let mut any = false;
        for i in body {
            let Inst::Call {
                func, rets, args, ..
            } = &i.inst
            else {
                continue;
            };
            let callee = m.func(*func);
            let plain = rets
                .iter()
                .chain(args)
                .all(|o| !matches!(o, Operand::Vector(_)))
                && args.len() == callee.params.len()
                && rets.len() == callee.rets.len();
            if !small[func.0 as usize] || !plain {
                any = false;
                break;
            }
            any = true;
            added += callee.body.as_ref().map_or(0, Vec::len) + callee.regs.len();
        }
        if !any || added > INLINE_BUDGET {
            continue;
        }
        if let Ok((mut f, calls)) = Inliner::function(&m, &small, FuncId(k as u32)) {
            f.inlined_calls = calls;
            m.functions[k] = f;
        }
    }
    m
}

/// Whether some function can reach itself through calls.
fn has_recursion(m: &Module) -> bool {
    let callees: Vec<Vec<usize>> = (m.functions.iter())
        .map(|f| {
            (f.body.iter().flatten())
                .filter_map(|i| match i.inst {
                    Inst::Call { func, .. } => Some(func.0 as usize),
                    _ => None,
                })
                .collect()
        })
        .collect();
    // Depth-first, colouring each function: 0 unseen, 1 on the path, 2 done.
    let mut colour = vec![0u8; callees.len()];
    fn visit(k: usize, callees: &[Vec<usize>], colour: &mut [u8]) -> bool {
        colour[k] = 1;
        for &c in &callees[k] {
            if colour[c] == 1 || (colour[c] == 0 && visit(c, callees, colour)) {
                return true;
            }
        }
        colour[k] = 2;
        false
    }
    (0..callees.len()).any(|k| colour[k] == 0 && visit(k, &callees, &mut colour))
}

/// Which functions reach a sync point: have one, or call a function that does.
fn reaching_sync_points(m: &Module) -> Vec<bool> {
    let mut syncs: Vec<bool> = m
        .functions
        .iter()
        .map(|f| {
            f.body
                .iter()
                .flatten()
                .any(|i| matches!(i.inst, Inst::Sync { .. }))
        })
        .collect();
    loop {
        let mut changed = false;
        for (k, f) in m.functions.iter().enumerate() {
            if !syncs[k]
                && f.body
                    .iter()
                    .flatten()
                    .any(|i| matches!(i.inst, Inst::Call { func, .. } if syncs[func.0 as usize]))
            {
                syncs[k] = true;
                changed = true;
            }
        }
        if !changed {
            return syncs;
        }
    }
}

/// A function being rebuilt with its calls inlined.
struct Inliner<'m> {
    m: &'m Module,
    /// The callees whose calls are inlined.
    inline: &'m [bool],
    f: Function,
    body: Vec<Instruction>,
    /// The functions being inlined, innermost last (a repeat is recursion).
    stack: Vec<FuncId>,
    /// A scratch register per width, for copies of `.param` bytes.
    scratch: HashMap<usize, RegId>,
    /// The kernel's variable for each inlined function's `.shared` variable.
    shared: HashMap<(FuncId, usize), VarId>,
    /// The calls inlined so far.
    calls: Vec<InlinedCall>,
}

impl<'m> Inliner<'m> {
    /// Function `k` with every call of a function in `inline` inlined, and those calls.
    fn function(
        m: &'m Module,
        inline: &'m [bool],
        k: FuncId,
    ) -> Result<(Function, Vec<InlinedCall>), Diagnostic> {
        let kernel = m.func(k);
        let mut f = kernel.clone();
        f.body = None;
        let mut me = Inliner {
            m,
            inline,
            f,
            body: Vec::new(),
            stack: vec![k],
            scratch: HashMap::new(),
            shared: HashMap::new(),
            calls: Vec::new(),
        };
        let regs: Vec<RegId> = (0..kernel.regs.len() as u32).map(RegId).collect();
        let vars: Vec<VarId> = (0..kernel.vars.len() as u32).map(VarId::Function).collect();
        let labels: Vec<LabelId> = (0..kernel.labels.len() as u32).map(LabelId).collect();
        let same = Renaming {
            regs: &regs,
            vars: &vars,
            labels: &labels,
        };
        me.emit(k, &same, None)?;
        me.f.body = Some(me.body);
        Ok((me.f, me.calls))
    }

    /// Appends function `id`'s body under the names `to`; in a callee (`end` given), `ret`
    /// branches to `end`.
    fn emit(&mut self, id: FuncId, to: &Renaming, end: Option<LabelId>) -> Result<(), Diagnostic> {
        let f = self.m.func(id);
        let body = f.body.as_deref().unwrap_or(&[]);
        let mut at: HashMap<usize, Vec<LabelId>> = HashMap::new();
        for (l, &pos) in f.labels.iter().enumerate() {
            at.entry(pos).or_default().push(to.labels[l]);
        }
        for (i, ins) in body.iter().enumerate() {
            self.place(at.get(&i));
            let mut ins = ins.clone();
            ins.rename(to);
            match (&ins.inst, end) {
                (Inst::Call { func, .. }, _) if self.inline[func.0 as usize] => self.call(ins)?,
                (Inst::Ret, Some(end)) => {
                    ins.inst = Inst::Bra {
                        uni: false,
                        target: end,
                    };
                    self.body.push(ins);
                }
                _ => self.body.push(ins),
            }
        }
        self.place(at.get(&body.len()));
        Ok(())
    }

    /// Puts `labels` at the next instruction.
    fn place(&mut self, labels: Option<&Vec<LabelId>>) {
        for l in labels.into_iter().flatten() {
            self.f.labels[l.0 as usize] = self.body.len();
        }
    }

    fn new_label(&mut self) -> LabelId {
        self.f.labels.push(usize::MAX);
        LabelId(self.f.labels.len() as u32 - 1)
    }

    fn new_reg(&mut self, name: String, ty: Type) -> RegId {
        self.f.regs.push(RegDecl { name, ty });
        RegId(self.f.regs.len() as u32 - 1)
    }

    /// The scratch register of `bytes` width.
    fn scratch(&mut self, bytes: usize) -> RegId {
        if let Some(&r) = self.scratch.get(&bytes) {
            return r;
        }
        let r = self.new_reg(format!("%inline.b{}", 8 * bytes), bits_type(bytes));
        self.scratch.insert(bytes, r);
        r
    }

    /// Replaces the call `ins` (already renamed into the kernel) by the callee's body.
    fn call(&mut self, ins: Instruction) -> Result<(), Diagnostic> {
        let Inst::Call {
            func, rets, args, ..
        } = &ins.inst
        else {
            unreachable!("called with a call");
        };
        let callee = self.m.func(*func);
        let refuse = |why: String| Err(Diagnostic::unsupported(ins.span, why));
        if self.stack.contains(func) {
            return refuse(format!(
                "calls `{}` recursively, and it has barriers or warp collectives (inlined, so it cannot recurse)",
                callee.name
            ));
        }
        if callee.body.is_none() {
            return refuse(format!("calls `{}`, which has no body", callee.name));
        }
        let vector = rets
            .iter()
            .chain(args)
            .any(|o| matches!(o, Operand::Vector(_)));
        if vector || args.len() != callee.params.len() || rets.len() != callee.rets.len() {
            return refuse(format!(
                "calls `{}` (which has barriers or warp collectives) with vector or unmatched operands (not supported yet)",
                callee.name
            ));
        }
        let (span, line) = (ins.span, ins.line);
        let here = |inst| Instruction {
            guard: None,
            inst,
            span,
            line,
        };
        // A guarded call: branch around it when the guard is false.
        let skip = ins.guard.map(|g| {
            let l = self.new_label();
            self.body.push(Instruction {
                guard: Some(Guard {
                    reg: g.reg,
                    negated: !g.negated,
                }),
                ..here(Inst::Bra {
                    uni: false,
                    target: l,
                })
            });
            l
        });
        let name = &callee.name;
        let regs: Vec<RegId> = (callee.regs.iter())
            .map(|r| self.new_reg(format!("{name}::{}", r.name), r.ty))
            .collect();
        let mut vars = Vec::new();
        for (k, v) in callee.vars.iter().enumerate() {
            // A `.shared` variable is one per block, whichever call reaches it: every
            // inlined copy names the same variable of the kernel (under its own name, as
            // faults name it).
            let shared = v.space == Space::Shared;
            if let Some(&id) = shared.then(|| self.shared.get(&(*func, k))).flatten() {
                vars.push(id);
                continue;
            }
            self.f.vars.push(VarDecl {
                name: if shared {
                    v.name.clone()
                } else {
                    format!("{name}::{}", v.name)
                },
                role: VarRole::Body,
                ..v.clone()
            });
            let id = VarId::Function(self.f.vars.len() as u32 - 1);
            if shared {
                self.shared.insert((*func, k), id);
            }
            vars.push(id);
        }
        let labels: Vec<LabelId> = callee.labels.iter().map(|_| self.new_label()).collect();
        let end = self.new_label();
        // A fresh activation: registers and frame variables at zero.
        for (r, decl) in regs.iter().zip(&callee.regs) {
            self.body.push(here(Inst::Mov {
                ty: decl.ty,
                d: Operand::Reg(*r),
                a: Operand::Imm(Imm::Int(0)),
            }));
        }
        for (v, decl) in vars.iter().zip(&callee.vars) {
            if decl.space == Space::Shared {
                continue;
            }
            if decl.size > MAX_ZEROED {
                return refuse(format!(
                    "calls `{}` (which has barriers or warp collectives), whose variable `{}` of {} bytes is too large to inline (at most {MAX_ZEROED})",
                    callee.name, decl.name, decl.size
                ));
            }
            let width = widest(decl.align as usize, decl.size);
            for offset in (0..decl.size).step_by(width) {
                self.body.push(here(Inst::St {
                    space: Some(decl.space),
                    order: MemOrder::Weak,
                    vec: 1,
                    ty: bits_type(width),
                    addr: Address {
                        base: AddrBase::Var(*v),
                        offset: offset as i64,
                    },
                    a: Operand::Imm(Imm::Int(0)),
                }));
            }
        }
        let param = |p: &Param| match p {
            Param::Reg(r) => Operand::Reg(regs[r.0 as usize]),
            Param::Mem(VarId::Function(i)) => Operand::Var(vars[*i as usize]),
            Param::Mem(VarId::Module(_)) => unreachable!("parameters are function variables"),
        };
        for (a, p) in args.iter().zip(&callee.params) {
            let (ty, size) = (callee.param_type(p), callee.param_size(p));
            let code = self.copy(&param(p), a, ty, size);
            self.body.extend(code.into_iter().map(here));
        }
        let renaming = Renaming {
            regs: &regs,
            vars: &vars,
            labels: &labels,
        };
        self.stack.push(*func);
        let from = self.body.len();
        self.emit(*func, &renaming, Some(end))?;
        self.calls.push(InlinedCall {
            body: from..self.body.len(),
            callee: *func,
            span,
            line,
        });
        self.stack.pop();
        self.f.labels[end.0 as usize] = self.body.len();
        for (d, p) in rets.iter().zip(&callee.rets) {
            let (ty, size) = (callee.param_type(p), callee.param_size(p));
            let code = self.copy(d, &param(p), ty, size);
            self.body.extend(code.into_iter().map(here));
        }
        if let Some(l) = skip {
            self.f.labels[l.0 as usize] = self.body.len();
        }
        Ok(())
    }

    /// The instructions that copy `size` bytes of type `ty` from `src` to `dst`: registers,
    /// immediates and `.param` variables, as a call moves arguments and results.
    fn copy(&mut self, dst: &Operand, src: &Operand, ty: Type, size: usize) -> Vec<Inst> {
        let at = |v: VarId, offset: usize| Address {
            base: AddrBase::Var(v),
            offset: offset as i64,
        };
        let param = Some(Space::Param);
        match (dst, src) {
            (Operand::Var(d), Operand::Var(s)) => {
                let align = |v: VarId| match v {
                    VarId::Function(i) => self.f.vars[i as usize].align as usize,
                    VarId::Module(i) => self.m.vars[i as usize].align as usize,
                };
                let width = widest(align(*d).min(align(*s)), size);
                let r = self.scratch(width);
                let mut code = Vec::new();
                for offset in (0..size).step_by(width) {
                    let ty = bits_type(width);
                    code.push(Inst::Ld {
                        space: param,
                        order: MemOrder::Weak,
                        vec: 1,
                        ty,
                        d: Operand::Reg(r),
                        addr: at(*s, offset),
                    });
                    code.push(Inst::St {
                        space: param,
                        order: MemOrder::Weak,
                        vec: 1,
                        ty,
                        addr: at(*d, offset),
                        a: Operand::Reg(r),
                    });
                }
                code
            }
            (Operand::Var(d), a) => vec![Inst::St {
                space: param,
                order: MemOrder::Weak,
                vec: 1,
                ty,
                addr: at(*d, 0),
                a: a.clone(),
            }],
            (d, Operand::Var(s)) => vec![Inst::Ld {
                space: param,
                order: MemOrder::Weak,
                vec: 1,
                ty,
                d: d.clone(),
                addr: at(*s, 0),
            }],
            (d, a) => vec![Inst::Mov {
                ty,
                d: d.clone(),
                a: a.clone(),
            }],
        }
    }
}

/// The widest of 8, 4, 2 and 1 bytes that `align` and `size` are multiples of.
fn widest(align: usize, size: usize) -> usize {
    [8, 4, 2, 1]
        .into_iter()
        .find(|w| align.is_multiple_of(*w) && size.is_multiple_of(*w))
        .unwrap_or(1)
}

/// The untyped bits type of `bytes` bytes.
fn bits_type(bytes: usize) -> Type {
    match bytes {
        1 => Type::B8,
        2 => Type::B16,
        4 => Type::B32,
        _ => Type::B64,
    }
}
