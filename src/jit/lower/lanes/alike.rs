//! Which registers every thread of a block holds alike, and which hold a sequence of the
//! thread's index: what lets a group function take the groups after one at once where
//! they would repeat what it did (the quiet path's skip, `rounds/quiet.rs`).
//!
//! A register is *block-uniform* when every thread of the block that reaches a point
//! holds the same value in it there: each of its definitions computes from immediates,
//! `%ntid`, `%nctaid`, `%ctaid`, variables' addresses, `ld.param` and block-uniform
//! registers, under no guard or a block-uniform one, outside the code that a branch on
//! anything else decides per thread (the code *control dependent* on such a branch: from
//! the branch to its immediate post-dominator). Then every thread runs the same
//! definitions in the same order, so two threads that passed the same number of barriers
//! hold the same values (found as the largest set that keeps these rules, by removing
//! registers until none breaks them). A branch that only takes threads out of the kernel
//! (to a `ret`, `exit` or the end) decides nothing for the threads that go on.
//!
//! A register is a *block sequence* when, in a block of one dimension, thread x holds
//! A + x × s in it (modulo 2^32) with A block-uniform: `%tid.x`, and adds, subtractions,
//! multiplications and shifts by immediates of sequences and block-uniform values, under
//! the same rules. The group functions' lanes hold such a register as a sequence of the
//! same stride, so what the first lane of one group holds and the stride give every later
//! thread's value.

use super::gate::is_exit;
use crate::ast::{
    AddrBase, Function, Guard, Inst, Instruction, IntBinOp, MulMode, Operand, RegId, Space,
    SpecialRegKind,
};

/// The registers a kernel's threads hold alike (see the module's notes).
pub(super) struct Alike {
    uniform: Vec<bool>,
    sequence: Vec<bool>,
}

impl Alike {
    /// What kernel `f` holds alike; None where a barrier or warp collective lies in code that
    /// threads may run a different number of times, some code never reaches the kernel's
    /// end, or the analysis would take more than [`Self::WORK`] steps (what the skip relies
    /// on could not be shown).
    pub fn of(f: &Function) -> Option<Alike> {
        let body = f.body.as_deref()?;
        let n = f.regs.len();
        let succ: Vec<Vec<usize>> = (0..body.len()).map(|i| successors(f, body, i)).collect();
        let ipdom = post_dominators(&succ, body.len())?;
        let mut budget = Self::WORK;
        let mut alike = Alike {
            uniform: vec![true; n],
            sequence: vec![true; n],
        };
        loop {
            let decided = alike.decided_per_thread(body, (&succ, &ipdom), &mut budget)?;
            budget = budget.checked_sub(body.len() as u64)?;
            let mut uniform = vec![true; n];
            let mut sequence = vec![true; n];
            for (ins, per_thread) in body.iter().zip(&decided) {
                let u = !per_thread && alike.uniform_def(ins);
                let s = !per_thread && alike.sequence_def(ins);
                for r in ins.inst.written() {
                    uniform[r.0 as usize] &= u;
                    sequence[r.0 as usize] &= s;
                }
            }
            if uniform == alike.uniform && sequence == alike.sequence {
                let sync_alike = (body.iter().zip(&decided))
                    .all(|(ins, per_thread)| !per_thread || !matches!(ins.inst, Inst::Sync { .. }));
                return sync_alike.then_some(alike);
            }
            alike = Alike { uniform, sequence };
        }
    }

    /// The most instructions the analysis visits, in the walks over branches' regions and
    /// its passes over the body together (about 20 ms).
    const WORK: u64 = 1 << 22;

    /// Whether every thread of the block holds the same value in `r`.
    pub fn uniform(&self, r: RegId) -> bool {
        self.uniform[r.0 as usize]
    }

    /// Whether an operand reads the same value in every thread of the block.
    pub fn uniform_operand(&self, o: &Operand) -> bool {
        use SpecialRegKind::*;
        match o {
            Operand::Reg(r)
            | Operand::NotPred(r)
            | Operand::RegSel(r, _)
            | Operand::RegLanes(r, _)
            | Operand::NegReg(r, _) => self.uniform(*r),
            Operand::Imm(_) | Operand::Var(_) | Operand::VarPlus(..) | Operand::Sink => true,
            Operand::Special(s) => matches!(
                s.kind,
                Ntid | Nctaid | Ctaid | Nwarpid | DynamicSmemSize | TotalSmemSize
            ),
            Operand::Vector(parts) => parts.iter().all(|p| self.uniform_operand(p)),
            Operand::Addr(a) => match a.base {
                AddrBase::Reg(r) => self.uniform(r),
                AddrBase::Var(_) | AddrBase::None => true,
            },
        }
    }

    /// Whether an operand is a block sequence (in blocks of one dimension).
    pub fn sequence_operand(&self, o: &Operand) -> bool {
        match o {
            Operand::Reg(r) => self.sequence[r.0 as usize],
            Operand::Special(s) => s.kind == SpecialRegKind::Tid && s.dim == 0,
            _ => false,
        }
    }

    fn uniform_guard(&self, g: Option<Guard>) -> bool {
        g.is_none_or(|g| self.uniform(g.reg))
    }

    /// Whether instruction `ins` writes the same values in every thread that runs it,
    /// given the same values in its block-uniform sources.
    fn uniform_def(&self, ins: &Instruction) -> bool {
        use Inst::*;
        let sources: Vec<&Operand> = match &ins.inst {
            Mov { a, .. } | Cvta { a, .. } | IntUn { a, .. } | Cvt { a, .. } => vec![a],
            FloatUn { a, .. } => vec![a],
            IntBin { a, b, .. } | Mul { a, b, .. } | FloatBin { a, b, .. } => vec![a, b],
            Mad { a, b, c, .. } | Fma { a, b, c, .. } | Shf { a, b, c, .. } => vec![a, b, c],
            Prmt { a, b, c, .. } | Selp { a, b, c, .. } | Slct { a, b, c, .. } => vec![a, b, c],
            Bfe { a, pos, len, .. } => vec![a, pos, len],
            Bfi { a, b, pos, len, .. } => vec![a, b, pos, len],
            Setp { a, b, c, .. } => [a, b].into_iter().chain(c).collect(),
            Ld {
                space: Some(Space::Param),
                addr,
                ..
            } => {
                return self.uniform_guard(ins.guard)
                    && match addr.base {
                        AddrBase::Reg(r) => self.uniform(r),
                        _ => true,
                    };
            }
            _ => return false,
        };
        !ins.inst.uses_carry()
            && self.uniform_guard(ins.guard)
            && sources.into_iter().all(|o| self.uniform_operand(o))
    }

    /// Whether instruction `ins` writes a block sequence, given its sources'.
    fn sequence_def(&self, ins: &Instruction) -> bool {
        let seq = |o: &Operand| self.sequence_operand(o);
        let alike = |o: &Operand| self.sequence_operand(o) || self.uniform_operand(o);
        let imm = |o: &Operand| matches!(o, Operand::Imm(_));
        let fits = match &ins.inst {
            Inst::Mov { ty, a, .. } => ty.bits() == 32 && seq(a),
            Inst::IntBin {
                op: IntBinOp::Add | IntBinOp::Sub,
                ty,
                sat: false,
                a,
                b,
                ..
            } => ty.bits() == 32 && ((seq(a) && alike(b)) || (alike(a) && seq(b))),
            Inst::IntBin {
                op: IntBinOp::Shl,
                ty,
                a,
                b,
                ..
            } => ty.bits() == 32 && seq(a) && imm(b),
            Inst::Mul {
                mode: MulMode::Lo,
                ty,
                a,
                b,
                ..
            } => ty.bits() == 32 && ((seq(a) && imm(b)) || (imm(a) && seq(b))),
            Inst::Mad {
                mode: MulMode::Lo,
                ty,
                sat: false,
                a,
                b,
                c,
                ..
            } => ty.bits() == 32 && ((seq(a) && imm(b)) || (imm(a) && seq(b))) && alike(c),
            _ => false,
        };
        fits && !ins.inst.uses_carry() && self.uniform_guard(ins.guard)
    }

    /// For each instruction, whether a branch on a value that is not block-uniform decides
    /// whether (or how often) a thread runs it: the instructions from such a branch's
    /// successors up to its immediate post-dominator (given each instruction's successors
    /// and immediate post-dominator). None when `budget` runs out.
    fn decided_per_thread(
        &self,
        body: &[Instruction],
        (succ, ipdom): (&[Vec<usize>], &[usize]),
        budget: &mut u64,
    ) -> Option<Vec<bool>> {
        let n = body.len();
        let mut decided = vec![false; n];
        // The branch whose region each instruction was last seen in.
        let mut seen = vec![usize::MAX; n + 1];
        for (i, ins) in body.iter().enumerate() {
            let per_thread = parts(body, &succ[i]) && !self.uniform_guard(ins.guard);
            if !per_thread {
                continue;
            }
            let stop = ipdom[i];
            let mut stack = succ[i].clone();
            while let Some(j) = stack.pop() {
                if j == stop || seen[j] == i {
                    continue;
                }
                seen[j] = i;
                *budget = budget.checked_sub(1)?;
                if j < n {
                    decided[j] = true;
                    stack.extend(&succ[j]);
                }
            }
        }
        Some(decided)
    }
}

/// Where instruction `i` goes on (`n`, past the last instruction, is the end, as is an
/// unguarded `ret` or `exit`).
fn successors(f: &Function, body: &[Instruction], i: usize) -> Vec<usize> {
    let n = body.len();
    let ins = &body[i];
    let to = |t: usize| if is_exit(body, t) { n } else { t };
    let next = to(i + 1);
    match ins.inst {
        Inst::Bra { target, .. } => {
            let t = to(f.labels[target.0 as usize]);
            match ins.guard {
                Some(_) if t != next => vec![next, t],
                _ => vec![t],
            }
        }
        Inst::Ret | Inst::Exit if ins.guard.is_none() => vec![n],
        Inst::Ret | Inst::Exit => vec![next, n],
        _ => vec![next],
    }
}

/// Whether instruction `i` sends the threads that stay in the kernel two ways: a guarded
/// branch, not to an exit and not past one (a thread that ends there leaves the others
/// running alike).
fn parts(body: &[Instruction], succ: &[usize]) -> bool {
    succ.len() == 2 && succ.iter().all(|&s| s < body.len())
}

/// Each instruction's immediate post-dominator (`n`: the end), by Cooper, Harvey and
/// Kennedy's iteration on the reversed graph; None if some instruction never reaches the
/// end.
fn post_dominators(succ: &[Vec<usize>], n: usize) -> Option<Vec<usize>> {
    let mut preds = vec![Vec::new(); n + 1];
    for (i, ss) in succ.iter().enumerate() {
        for &s in ss {
            preds[s].push(i);
        }
    }
    // Reverse postorder of the reversed graph from the end.
    let mut order = Vec::with_capacity(n + 1);
    let mut seen = vec![false; n + 1];
    let mut stack = vec![(n, 0usize)];
    seen[n] = true;
    while let Some((v, k)) = stack.pop() {
        if let Some(&p) = preds[v].get(k) {
            stack.push((v, k + 1));
            if !seen[p] {
                seen[p] = true;
                stack.push((p, 0));
            }
        } else {
            order.push(v);
        }
    }
    if order.len() != n + 1 {
        return None;
    }
    order.reverse();
    let mut rank = vec![0; n + 1];
    for (k, &v) in order.iter().enumerate() {
        rank[v] = k;
    }
    let mut ipdom: Vec<Option<usize>> = vec![None; n + 1];
    ipdom[n] = Some(n);
    let intersect = |ipdom: &[Option<usize>], mut a: usize, mut b: usize| {
        while a != b {
            while rank[a] > rank[b] {
                a = ipdom[a].expect("processed");
            }
            while rank[b] > rank[a] {
                b = ipdom[b].expect("processed");
            }
        }
        a
    };
    let mut changed = true;
    while changed {
        changed = false;
        for &v in &order[1..] {
            let mut new = None;
            for &s in &succ[v] {
                if ipdom[s].is_some() {
                    new = Some(match new {
                        None => s,
                        Some(x) => intersect(&ipdom, x, s),
                    });
                }
            }
            if new != ipdom[v] {
                ipdom[v] = new;
                changed = true;
            }
        }
    }
    ipdom.into_iter().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::Module;

    fn alike(src: &str) -> (Module, Option<Alike>) {
        let m = Module::parse(src).expect("parses");
        let a = Alike::of(m.func(crate::ast::FuncId(0)));
        (m, a)
    }

    fn reg(m: &Module, name: &str) -> RegId {
        let f = m.func(crate::ast::FuncId(0));
        RegId(
            f.regs
                .iter()
                .position(|r| r.name == name)
                .expect("a register") as u32,
        )
    }

    const HEAD: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

    #[test]
    fn a_tree_reduction_keeps_its_half_alike() {
        let src = format!(
            "{HEAD}.visible .entry k(.param .u32 n) {{
            .reg .pred %p<4>; .reg .b32 %r<8>;
            ld.param.u32 %r1, [n];
            mov.u32 %r2, %tid.x;
            setp.ge.u32 %p1, %r2, %r1;
            @%p1 bra DONE;
            mov.u32 %r3, %ntid.x;
            shr.u32 %r4, %r3, 1;
        LOOP:
            setp.ge.u32 %p2, %r2, %r4;
            @%p2 bra SKIP;
            add.u32 %r5, %r2, %r4;
        SKIP:
            bar.sync 0;
            shr.u32 %r4, %r4, 1;
            setp.ne.u32 %p3, %r4, 0;
            @%p3 bra LOOP;
        DONE:
            ret;
        }}"
        );
        let (m, a) = alike(&src);
        let a = a.expect("its barrier is reached alike");
        for r in ["%r1", "%r3", "%r4", "%p3"] {
            assert!(a.uniform(reg(&m, r)), "{r}");
        }
        for r in ["%r2", "%r5", "%p1", "%p2"] {
            assert!(!a.uniform(reg(&m, r)), "{r}");
        }
        // %r5 is written under t < half: neither, though its operands are.
        let seq = |r| a.sequence_operand(&Operand::Reg(reg(&m, r)));
        assert!(seq("%r2") && !seq("%r5") && !seq("%r4"));
    }

    #[test]
    fn what_a_per_thread_branch_decides_is_not_alike() {
        let src = format!(
            "{HEAD}.visible .entry k() {{
            .reg .pred %p<2>; .reg .b32 %r<8>;
            mov.u32 %r1, %tid.x;
            mov.u32 %r2, 5;
            setp.lt.u32 %p1, %r1, 7;
            @%p1 bra ELSE;
            mov.u32 %r2, 6;
            bra.uni JOIN;
        ELSE:
            mov.u32 %r3, 1;
        JOIN:
            add.u32 %r4, %r2, 1;
            mov.u32 %r5, %warpid;
            bar.sync 0;
            ret;
        }}"
        );
        let (m, a) = alike(&src);
        let a = a.expect("the barrier is after the join");
        for r in ["%r2", "%r3", "%r4", "%r5"] {
            assert!(!a.uniform(reg(&m, r)), "{r}");
        }
    }

    #[test]
    fn a_kernel_too_long_to_analyse_gets_no_facts() {
        // 6,000 per-thread branches, each over all the code after it: 18M steps, where the
        // barrier before them would be found alike.
        let mut body = String::new();
        for k in 0..6000 {
            body += &format!("  setp.lt.u32 %p1, %r1, {k};\n  @%p1 bra END;\n");
        }
        let src = format!(
            "{HEAD}.visible .entry k() {{
            .reg .pred %p<2>; .reg .b32 %r<4>;
            mov.u32 %r1, %tid.x;
            bar.sync 0;
        {body}
        END:
            add.u32 %r1, %r1, 1;
            ret;
        }}"
        );
        assert!(alike(&src).1.is_none());
    }

    #[test]
    fn a_barrier_under_a_per_thread_branch_is_refused() {
        let src = format!(
            "{HEAD}.visible .entry k() {{
            .reg .pred %p<2>; .reg .b32 %r<4>;
            mov.u32 %r1, %tid.x;
            setp.lt.u32 %p1, %r1, 7;
            @%p1 bra SKIP;
            bar.sync 0;
        SKIP:
            add.u32 %r1, %r1, 1;
            ret;
        }}"
        );
        assert!(alike(&src).1.is_none());
    }
}
