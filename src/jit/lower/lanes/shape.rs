//! What runs in lanes: the shape of each register (uniform, affine, varying), what an
//! instruction reads, which instructions the lanes refuse and why; and reading and writing
//! registers by their shape (sequences widened with their wrap test, values spread over the
//! lanes, guard masks).

use super::gate::is_exit;
use super::memory::gated_space;
use super::{LaneVal, Lanes, Res, Shape, V, Vecs, refuse};
use crate::ast::{
    AddrBase, Guard, Inst, Instruction, MemOrder, Operand, RegId, Space, SpecialReg,
    SpecialRegKind, Type, VideoForm, VideoSrc, VideoTail, VideoValue,
};
use crate::jit::lower::int_type;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, types};

impl<'f, const P: usize> Lanes<'_, '_, 'f, P> {
    pub(super) fn inst(&mut self, i: usize, ins: &Instruction) -> Res<()> {
        match &ins.inst {
            Inst::Ret | Inst::Exit => self.exit_if(ins.guard),
            Inst::Bra { target, .. } => {
                let body = self.l.f.body.as_ref().expect("kernels have bodies");
                if !is_exit(body, self.l.f.labels[target.0 as usize]) {
                    return refuse("a branch within the kernel (only branches to its end)");
                }
                self.exit_if(ins.guard)
            }
            Inst::Call { .. } => refuse("a call"),
            Inst::Atom { .. } => refuse("an atomic (atom, red)"),
            Inst::Ld {
                order: MemOrder::Acquire,
                ..
            }
            | Inst::St {
                order: MemOrder::Release,
                ..
            } => refuse("an .acquire load or .release store"),
            Inst::Fence => refuse("a fence (the lanes hold stores back to the group's end)"),
            Inst::Ld { space, .. } | Inst::St { space, .. } if gated_space(*space) => {
                if ins.guard.is_some() {
                    return refuse("a guarded memory access");
                }
                let k = self
                    .accesses
                    .iter()
                    .position(|a| a.at == i)
                    .expect("the scan lists every global access");
                self.access(k, &ins.inst)
            }
            Inst::St { .. } => refuse("a store outside global memory"),
            Inst::Ld {
                space,
                addr,
                ty,
                vec,
                ..
            } => {
                let size = ty.bytes() * *vec as usize;
                let safe = matches!(addr.base, AddrBase::Var(_))
                    && (!self.l.sh.checked || self.l.known_safe(addr, size, *space, false));
                if !safe {
                    return refuse("a load outside global memory that may fault");
                }
                self.pure(ins)
            }
            _ => self.pure(ins),
        }
    }

    /// An instruction without side effects: by the scalar lowering when everything it reads
    /// is uniform, else in lanes.
    pub(super) fn pure(&mut self, ins: &Instruction) -> Res<()> {
        let dests: Vec<RegId> = (0..self.shape.len() as u32)
            .map(RegId)
            .filter(|r| ins.inst.writes(*r))
            .collect();
        let guard_uniform = ins
            .guard
            .is_none_or(|g| self.shape[g.reg.0 as usize] == Shape::Uniform);
        // A guarded write keeps the old value where the guard is false: uniform only if
        // the old value is.
        let dests_uniform = ins.guard.is_none()
            || dests
                .iter()
                .all(|r| self.shape[r.0 as usize] == Shape::Uniform);
        if guard_uniform && dests_uniform && self.reads_uniform(&ins.inst) {
            self.l.guarded(ins, &[]);
            for r in dests {
                self.shape[r.0 as usize] = Shape::Uniform;
                self.seq_cmps.remove(&r);
                if self.fixed.is_some() {
                    // A group function keeps the register's one shape.
                    let v = self.l.b.use_var(self.l.regs[r.0 as usize]);
                    let rty = self.l.f.reg(r).ty;
                    self.write(&Operand::Reg(r), rty, LaneVal::Uniform(v), None)?;
                }
            }
            return Ok(());
        }
        let mask = match ins.guard {
            Some(g) => Some(self.guard_mask(g)?),
            None => None,
        };
        self.vector(&ins.inst, mask)
    }

    fn operand_shape(&self, op: &Operand) -> Shape {
        match op {
            Operand::Reg(r)
            | Operand::NotPred(r)
            | Operand::RegSel(r, _)
            | Operand::RegLanes(r, _)
            | Operand::NegReg(r, _) => self.shape[r.0 as usize],
            Operand::Vector(parts) => {
                if parts
                    .iter()
                    .all(|p| self.operand_shape(p) == Shape::Uniform)
                {
                    Shape::Uniform
                } else {
                    Shape::Varying
                }
            }
            Operand::Special(s) => match s.kind {
                SpecialRegKind::Tid if s.dim == 0 => Shape::Affine(1),
                SpecialRegKind::Laneid => Shape::Affine(1),
                SpecialRegKind::Warpid
                | SpecialRegKind::LanemaskEq
                | SpecialRegKind::LanemaskLe
                | SpecialRegKind::LanemaskLt
                | SpecialRegKind::LanemaskGe
                | SpecialRegKind::LanemaskGt => Shape::Varying,
                _ => Shape::Uniform,
            },
            Operand::Imm(_)
            | Operand::Var(_)
            | Operand::VarPlus(..)
            | Operand::Addr(_)
            | Operand::Sink => Shape::Uniform,
        }
    }

    /// Whether everything an instruction reads is uniform (CC.CF always is: only the scalar
    /// lowering writes it).
    pub(super) fn reads_uniform(&self, inst: &Inst) -> bool {
        let u = |op: &Operand| self.operand_shape(op) == Shape::Uniform;
        let reg = |r: &RegId| self.shape[r.0 as usize] == Shape::Uniform;
        let value = |v: VideoValue| match v {
            VideoValue::Reg(r) => reg(&r),
            VideoValue::Imm(_) => true,
        };
        let video = |s: &VideoSrc| value(s.value);
        use Inst::*;
        match inst {
            Mov { a, .. } | Cvta { a, .. } | IntUn { a, .. } | Cvt { a, .. } => u(a),
            FloatUn { a, .. } => u(a),
            Ld { addr, .. } => match addr.base {
                AddrBase::Reg(r) => reg(&r),
                _ => true,
            },
            IntBin { a, b, .. } | Mul { a, b, .. } | FloatBin { a, b, .. } => u(a) && u(b),
            Mad { a, b, c, .. }
            | Shf { a, b, c, .. }
            | Prmt { a, b, c, .. }
            | Selp { a, b, c, .. }
            | Slct { a, b, c, .. }
            | Fma { a, b, c, .. } => u(a) && u(b) && u(c),
            Bfe { a, pos, len, .. } => u(a) && u(pos) && u(len),
            Bfi { a, b, pos, len, .. } => u(a) && u(b) && u(pos) && u(len),
            Compute { srcs, .. } => srcs.iter().all(u),
            Hint => true,
            Setp { a, b, c, .. } => u(a) && u(b) && c.as_ref().is_none_or(u),
            // A merge takes the other bytes from c (d is not read); d must be uniform all the
            // same, which costs nothing.
            Video {
                d,
                a,
                b,
                form: VideoForm { tail, .. },
            }
            | Vset { d, a, b, tail, .. } => {
                reg(d) && video(a) && video(b) && tail_value(*tail).is_none_or(value)
            }
            Vmad { d, a, b, c, .. } => reg(d) && video(a) && video(b) && value(*c),
            VideoSimd { a, b, c, .. } => reg(a) && reg(b) && reg(c),
            St { .. }
            | Atom { .. }
            | Fence
            | Bra { .. }
            | Call { .. }
            | Ret
            | Exit
            | Sync { .. }
            | Isspacep { .. } => false,
        }
    }

    /// Reads a source as type `ty`, with the scalar lowering's rules (a narrower register
    /// zero-extended, a wider one truncated).
    pub(super) fn read(&mut self, op: &Operand, ty: Type) -> Res<LaneVal<P>> {
        match op {
            Operand::Reg(r) => {
                let rty = self.l.f.reg(*r).ty;
                match self.shape[r.0 as usize] {
                    Shape::Uniform => Ok(LaneVal::Uniform(self.l.get(op, ty))),
                    Shape::Affine(s) => {
                        let base = self.l.b.use_var(self.l.regs[r.0 as usize]);
                        self.affine_conv(base, s, rty, ty, false)
                    }
                    Shape::Varying => {
                        if !same_lanes(rty, ty) {
                            return refuse(format!(
                                "a per-thread .{} register read as .{}",
                                rty.ptx(),
                                ty.ptx()
                            ));
                        }
                        let vars = self.vregs[r.0 as usize];
                        let mut v = vars.map(|v| self.l.b.use_var(v));
                        // A reader that can see a NaN's payload, of a register whose NaNs are
                        // made canonical by such readers (the NaN plan, as in the scalar
                        // lowering).
                        if rty == Type::F32 && self.l.nan.canonical_reads.contains(&(self.l.at, *r))
                        {
                            v = v.map(|x| self.canonical_f32x4(x));
                        }
                        Ok(LaneVal::Varying(v))
                    }
                }
            }
            Operand::NotPred(r) if self.shape[r.0 as usize] == Shape::Varying => {
                let vars = self.vregs[r.0 as usize];
                let v = vars.map(|v| self.l.b.use_var(v));
                Ok(LaneVal::Varying(self.map(v, |b, v| b.ins().bnot(v))))
            }
            Operand::Special(s) if s.kind == SpecialRegKind::Tid && s.dim == 0 => {
                let tid = self.l.dims.as_ref().expect("a kernel").tid[0];
                let x = self.l.b.use_var(tid);
                self.affine_conv(x, 1, Type::U32, ty, false)
            }
            Operand::Special(s) if s.kind == SpecialRegKind::Laneid => {
                // The lanes count on from the first one's number.
                let first = self.warp_lane_zero();
                self.affine_conv(first, 1, Type::U32, ty, false)
            }
            Operand::Special(s)
                if matches!(
                    s.kind,
                    SpecialRegKind::LanemaskEq
                        | SpecialRegKind::LanemaskLe
                        | SpecialRegKind::LanemaskLt
                        | SpecialRegKind::LanemaskGe
                        | SpecialRegKind::LanemaskGt
                ) && ty.bits() == 32 =>
            {
                // Constants of each lane k, whose number is k.
                self.warp_lane_zero();
                let mask = |k: u64| -> i32 {
                    let (below, upto) = ((1u64 << k) - 1, (2u64 << k) - 1);
                    (match s.kind {
                        SpecialRegKind::LanemaskEq => 1 << k,
                        SpecialRegKind::LanemaskLe => upto,
                        SpecialRegKind::LanemaskLt => below,
                        SpecialRegKind::LanemaskGe => !below,
                        _ => !upto,
                    }) as u32 as i32
                };
                let parts: Vecs<P> = std::array::from_fn(|q| {
                    self.vconst(std::array::from_fn(|k| mask((4 * q + k) as u64)))
                });
                Ok(LaneVal::Varying(parts))
            }
            _ if self.operand_shape(op) == Shape::Uniform => {
                Ok(LaneVal::Uniform(self.l.get(op, ty)))
            }
            _ => refuse("a per-thread operand of this kind"),
        }
    }

    fn current(&mut self, r: RegId) -> LaneVal<P> {
        let k = r.0 as usize;
        match self.shape[k] {
            Shape::Uniform => LaneVal::Uniform(self.l.b.use_var(self.l.regs[k])),
            Shape::Affine(s) => LaneVal::Affine(self.l.b.use_var(self.l.regs[k]), s),
            Shape::Varying => LaneVal::Varying(self.vregs[k].map(|v| self.l.b.use_var(v))),
        }
    }

    /// Writes a destination of instruction type `ty` (the scalar lowering's extension rules);
    /// under a guard mask, lanes where it is false keep their value.
    pub(super) fn write(
        &mut self,
        d: &Operand,
        ty: Type,
        v: LaneVal<P>,
        mask: Option<Vecs<P>>,
    ) -> Res<()> {
        let r = match d {
            Operand::Reg(r) => *r,
            Operand::Sink => return Ok(()),
            _ => return refuse("a vector destination"),
        };
        self.seq_cmps.remove(&r);
        let rty = self.l.f.reg(r).ty;
        let v = match v {
            LaneVal::Uniform(s) => LaneVal::Uniform(self.l.conv(s, ty, rty, ty.is_signed())),
            LaneVal::Affine(base, s) if rty.is_int() => {
                self.affine_conv(base, s, ty, rty, ty.is_signed())?
            }
            LaneVal::Affine(..) if same_lanes(ty, rty) => LaneVal::Varying(self.lanes_of(v, ty)?),
            LaneVal::Varying(x) if same_lanes(ty, rty) => LaneVal::Varying(x),
            _ => {
                return refuse(format!(
                    "per-thread .{} values written to a .{} register",
                    ty.ptx(),
                    rty.ptx()
                ));
            }
        };
        let v = match mask {
            None => v,
            Some(m) => {
                let old = self.current(r);
                let old = self.lanes_of(old, rty)?;
                let new = self.lanes_of(v, rty)?;
                LaneVal::Varying(std::array::from_fn(|p| {
                    self.l.b.ins().bitselect(m[p], new[p], old[p])
                }))
            }
        };
        let k = r.0 as usize;
        let v = self.keep_fixed(k, rty, v)?;
        match v {
            LaneVal::Uniform(s) => {
                self.l.b.def_var(self.l.regs[k], s);
                self.shape[k] = Shape::Uniform;
            }
            LaneVal::Affine(base, s) => {
                self.l.b.def_var(self.l.regs[k], base);
                self.shape[k] = Shape::Affine(s);
            }
            LaneVal::Varying(x) => {
                for (var, x) in self.vregs[k].into_iter().zip(x) {
                    self.l.b.def_var(var, x);
                }
                self.shape[k] = Shape::Varying;
            }
        }
        Ok(())
    }

    /// In a group function, a value written to register `k` in the register's one shape:
    /// a uniform value or a sequence spread over the lanes where the register is varying.
    /// A value the shape cannot hold raises the shape the next lowering gives the register.
    fn keep_fixed(&mut self, k: usize, rty: Type, v: LaneVal<P>) -> Res<LaneVal<P>> {
        let Some(fixed) = self.fixed.as_ref().map(|f| f[k]) else {
            return Ok(v);
        };
        let got = match v {
            LaneVal::Uniform(_) => Shape::Uniform,
            LaneVal::Affine(_, s) => Shape::Affine(s),
            LaneVal::Varying(_) => Shape::Varying,
        };
        if self.tainted {
            self.unknown[k] = true;
        } else {
            self.unknown[k] = false;
            self.raised[k] = join(Some(got), self.raised[k]);
        }
        match (fixed, v) {
            (Some(Shape::Varying), LaneVal::Uniform(_) | LaneVal::Affine(..)) => {
                Ok(LaneVal::Varying(self.lanes_of(v, rty)?))
            }
            _ => Ok(v),
        }
    }

    /// A guard as a lane mask.
    pub(super) fn guard_mask(&mut self, g: Guard) -> Res<Vecs<P>> {
        let p = self.read(&Operand::Reg(g.reg), Type::Pred)?;
        let m = self.lanes_of(p, Type::Pred)?;
        Ok(if g.negated {
            self.map(m, |b, v| b.ins().bnot(v))
        } else {
            m
        })
    }

    /// Every lane's value as vectors (32-bit types and predicates).
    pub(super) fn lanes_of(&mut self, v: LaneVal<P>, ty: Type) -> Res<Vecs<P>> {
        match v {
            LaneVal::Varying(v) => Ok(v),
            LaneVal::Uniform(s) if ty == Type::Pred => {
                let w = self.b().ins().uextend(types::I32, s);
                let m = self.b().ins().ineg(w);
                Ok([self.b().ins().splat(V, m); P])
            }
            LaneVal::Uniform(s) if ty.bits() == 32 => {
                let v = if self.b().func.dfg.value_type(s) == types::F32 {
                    // Broadcast in the vector registers (no round trip through a general
                    // one).
                    let f = self.b().ins().splat(types::F32X4, s);
                    self.b().ins().bitcast(V, MemFlagsData::new(), f)
                } else {
                    let s = if ty.is_float() {
                        self.l.bitcast(types::I32, s)
                    } else {
                        s
                    };
                    self.b().ins().splat(V, s)
                };
                Ok([v; P])
            }
            LaneVal::Affine(base, s) if ty.bits() == 32 => {
                let base = self.b().ins().splat(V, base);
                let mut out = [base; P];
                for (p, o) in out.iter_mut().enumerate() {
                    let steps = [0, 1, 2, 3].map(|k| ((4 * p as i64 + k) * s) as i32);
                    let steps = self.vconst(steps);
                    *o = self.b().ins().iadd(base, steps);
                }
                Ok(out)
            }
            _ => refuse(format!("per-thread .{} values", ty.ptx())),
        }
    }

    /// `base + k × stride` as a lane value of a `bits`-wide integer: uniform when the stride
    /// is 0 modulo the width.
    pub(super) fn affine(&self, base: Value, stride: i64, bits: u32) -> LaneVal<P> {
        match norm(stride, bits) {
            0 => LaneVal::Uniform(base),
            s => LaneVal::Affine(base, s),
        }
    }

    /// An affine value of type `from` as type `to` (the extension signed or not): a wider type
    /// needs the lanes not to wrap, which the gate checks (so only before it).
    pub(super) fn affine_conv(
        &mut self,
        base: Value,
        s: i64,
        from: Type,
        to: Type,
        signed: bool,
    ) -> Res<LaneVal<P>> {
        if !from.is_int() || !to.is_int() {
            return refuse("an integer sequence used as another type");
        }
        let (fb, tb) = (from.bits(), to.bits());
        if tb == fb {
            return Ok(self.affine(base, s, tb));
        }
        if tb < fb {
            let v = self.b().ins().ireduce(int_type(tb), base);
            return Ok(self.affine(v, s, tb));
        }
        let s = norm(s, fb);
        if let Some(&wide) = self.widened.get(&(base, signed, tb)) {
            return Ok(self.affine(wide, s, tb));
        }
        let wide = if signed {
            self.b().ins().sextend(int_type(tb), base)
        } else {
            self.l.uextend(int_type(tb), base)
        };
        let last = self
            .b()
            .ins()
            .iadd_imm_s(wide, (Self::LANES as i64 - 1) * s);
        let (lo, hi) = if signed {
            (-(1i64 << (fb - 1)), (1i64 << (fb - 1)) - 1)
        } else {
            (0, (1i64 << fb) - 1)
        };
        let wrapped = if s > 0 {
            self.b()
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, last, hi)
        } else {
            self.b().ins().icmp_imm_s(IntCC::SignedLessThan, last, lo)
        };
        self.note_wrap(wrapped);
        self.widened.insert((base, signed, tb), wide);
        Ok(self.affine(wide, s, tb))
    }

    /// `%laneid` of the group's first lane, which must be 0: a group that straddles two warps
    /// (in a row whose length is no multiple of 32) goes back, as for a wrapped sequence.
    fn warp_lane_zero(&mut self) -> Value {
        let lane = SpecialReg {
            kind: SpecialRegKind::Laneid,
            dim: 0,
        };
        let first = self.l.special(lane);
        let straddles = self.b().ins().icmp_imm_u(IntCC::NotEqual, first, 0);
        self.note_wrap(straddles);
        first
    }

    /// Records that a sequence's lanes wrapped (or otherwise left the form the lowering
    /// gave their result) if `wrapped` (an i8): the group goes back before its next load
    /// and at its end.
    pub(super) fn note_wrap(&mut self, wrapped: Value) {
        // The flag is first defined here, by the group's first widening (straight-line code:
        // every later test of it comes after).
        match self.wrap {
            Some(w) => {
                let before = self.b().use_var(w);
                let now = self.b().ins().bor(before, wrapped);
                self.b().def_var(w, now);
            }
            None => {
                let w = self.b().declare_var(types::I8);
                self.b().def_var(w, wrapped);
                self.wrap = Some(w);
            }
        }
        self.wrap_unchecked = true;
    }
}

/// The least shape holding values of both shapes (None: no value yet).
pub(super) fn join(a: Option<Shape>, b: Option<Shape>) -> Option<Shape> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(x), Some(y)) if x == y => Some(x),
        _ => Some(Shape::Varying),
    }
}

/// `s` as a stride of a `bits`-wide type: the signed value of its low bits.
pub(super) fn norm(s: i64, bits: u32) -> i64 {
    if bits >= 64 {
        s
    } else {
        (s << (64 - bits)) >> (64 - bits)
    }
}

/// Whether values of type `a` and `b` share the lanes representation (32-bit, or predicates).
pub(super) fn same_lanes(a: Type, b: Type) -> bool {
    (a.bits() == 32 && b.bits() == 32) || (a == Type::Pred && b == Type::Pred)
}

/// The operand a video instruction's tail reads (`c`), if any.
fn tail_value(t: VideoTail) -> Option<VideoValue> {
    match t {
        VideoTail::None => None,
        VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) => Some(c),
    }
}

/// Whether a kernel reaches shared memory: an access in the shared window, `cvta` to or from
/// it, or `isspacep` (the lanes lowering has no shared window).
pub(super) fn uses_shared_memory(m: &crate::ast::Module, f: &crate::ast::Function) -> bool {
    let shared = |space: Option<Space>, a: &crate::ast::Address| {
        crate::interp::access_space(m, f, space, a) == Some(Space::Shared)
    };
    f.body.iter().flatten().any(|i| match &i.inst {
        Inst::Ld { space, addr, .. } | Inst::St { space, addr, .. } => shared(*space, addr),
        Inst::Atom { space, addr, .. } => shared(*space, addr),
        Inst::Cvta { space, .. } => *space == Space::Shared,
        Inst::Isspacep { .. } | Inst::Sync { .. } => true,
        _ => false,
    })
}
