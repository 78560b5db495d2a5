//! One instruction: resolve its operands, map its modifier list onto the opcode's typed form
//! (a table-driven check, see docs/architecture.md: modifiers in any order, the first
//! unexpected or missing one reported with its span), and check operand types by PTX's rules
//! (PTX ISA 6.4.1, "Operand type information" and the relaxed rules for ld/st/cvt).
//!
//! This file holds what every instruction shares: operands, the checking context `Cx` and
//! the dispatch on the opcode. Each family's forms are in a file of their own, beside the
//! interpreter's and the lowering's: `int.rs`, `float.rs`, `convert.rs` (`cvt`, `setp`,
//! `selp`, `slct`), `memory.rs` (`mov`, `ld`, `st`, `cvta`), `atomic.rs` (`atom`, `red`,
//! `fence`), `bits.rs` (`lop3`, `bfind`, `dp4a` and the other pure computations, and the
//! hints), `video.rs`, `sync.rs` (barriers and warp collectives), `control.rs` (`bra`,
//! `call`, `ret`, `exit`).

mod atomic;
mod bits;
mod control;
mod convert;
mod float;
mod half;
mod int;
mod memory;
mod sync;
mod video;

use super::{FnBuilder, Name, Rule, VECTOR_ELEMENTS, literal, span_of};
use crate::ast::*;
use crate::frontend::Diagnostic;
use pest::iterators::Pair;
use std::cell::RefCell;
use std::collections::HashMap;

/// An operand as written, resolved, with its span.
#[derive(Clone, Debug)]
pub(crate) enum Raw {
    Op(Operand),
    Label(LabelId),
    Func(FuncId),
    List(Vec<Opnd>),
    PredPair(RegId, RegId),
    /// `_|%p`: a discarded result beside a predicate (`elect.sync`).
    SinkPred(RegId),
    /// `var+8` (`index` false) or `var[2]` (`index` true: elements, scaled by the variable's
    /// element size where the instruction resolves it).
    VarPlus {
        var: VarId,
        by: i64,
        index: bool,
    },
    /// A whole vector register (`%v` of `.reg .v4 .f32 %v`): its element registers `first`,
    /// `first + 1`, …, as `ld`, `st`, `mov` and `call` take it.
    VecReg {
        first: RegId,
        len: u8,
    },
    /// `%r+4`: a register plus a constant (already truncated to 64 bits), as a source value.
    RegPlus(RegId, i64),
}

#[derive(Clone, Debug)]
pub(crate) struct Opnd {
    raw: Raw,
    span: Span,
}

type R<T> = Result<T, Diagnostic>;

fn err<T>(span: Span, msg: impl Into<String>) -> R<T> {
    Err(Diagnostic::new(span, msg))
}

pub(crate) fn immediate(p: &Pair<Rule>) -> Option<Imm> {
    let lit = p.clone().into_inner().next()?;
    match lit.as_rule() {
        Rule::int_lit => literal::parse_int(lit.as_str()).map(Imm::Int),
        Rule::float_lit => literal::parse_float(lit.as_str()),
        _ => None,
    }
}

/// Checks that an immediate fits an operand of type `ty` (PTX ISA 4.5.1), as ptxas applies
/// it: an integer literal is a 64-bit value, truncated to a narrower operand
/// (`mov.b32 %r, 4294967296` is 0), and cannot be a float operand.
pub(crate) fn check_imm(imm: Imm, ty: Type) -> Result<(), String> {
    match (imm, ty.kind()) {
        (Imm::Int(v), TypeKind::Pred) if v == 0 || v == 1 => Ok(()),
        (Imm::Int(v), TypeKind::Bits | TypeKind::Unsigned | TypeKind::Signed) => {
            if v < i64::MIN as i128 || v > u64::MAX as i128 {
                Err(format!("immediate {v} does not fit in 64 bits"))
            } else {
                Ok(())
            }
        }
        (Imm::Int(_), TypeKind::Float) => Err(format!(
            "an integer immediate cannot be a {ty} operand (write 1.0 or 0f3F800000)"
        )),
        // No literal has a half type (ptxas): halves come from registers.
        (Imm::F32(_) | Imm::F64(_), TypeKind::Float) if !ty.is_half() => Ok(()),
        // A hex float literal is a bit pattern; PTX accepts it for bit-size types too.
        (Imm::F32(_), TypeKind::Bits) if ty.bits() == 32 => Ok(()),
        (Imm::F64(_), TypeKind::Bits) if ty.bits() == 64 => Ok(()),
        _ => Err(format!("this immediate cannot be used as {ty}")),
    }
}

/// How strictly a register's declared type must match the instruction type.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fit {
    /// Same size; bit-size types match any kind, u/s match each other, floats match only
    /// floats and bit-size types.
    Exact,
    /// As `Exact`, but an integer operand may sit in a wider register (cvt).
    Wider,
    /// A register at least as wide as the type, of a kind ptxas takes: its rule for the
    /// value of `ld` and `st` (`ld.global.f32 %rd` loads into the low bits, `st.b32 [a], %fd`
    /// stores the register's low bits; `ld.u32 %f` and `st.f32 [a], %fd` are refused).
    Memory,
}

fn reg_fits(reg: Type, ty: Type, fit: Fit) -> bool {
    if reg == Type::Pred || ty == Type::Pred {
        return reg == ty;
    }
    if fit == Fit::Memory {
        // As ptxas 12.9 has it: a bit-size type moves any register's bits; an integer type
        // refuses float registers (but an .f16x2 one); a float type takes a bit-size
        // register or one of its own type.
        let kinds_ok = match ty.kind() {
            TypeKind::Bits => true,
            TypeKind::Unsigned | TypeKind::Signed => !reg.is_float() || reg == Type::F16x2,
            TypeKind::Float => reg == ty || reg.kind() == TypeKind::Bits,
            TypeKind::Pred => unreachable!("handled above"),
        };
        return reg.bits() >= ty.bits() && kinds_ok;
    }
    let kinds_ok = match ty.kind() {
        TypeKind::Bits => true,
        TypeKind::Unsigned | TypeKind::Signed => reg.kind() != TypeKind::Float,
        // A float type takes a register of that type or a bit-size one (ptxas refuses an
        // .f32 register for .f16x2).
        TypeKind::Float => reg == ty || reg.kind() == TypeKind::Bits,
        TypeKind::Pred => unreachable!(),
    };
    // cvt's relaxed rule: an integer (and, as ptxas has it, an .f16) operand may sit in a
    // wider register, of bit-size type for the .f16.
    let wider_ok =
        !reg.is_float() && (!ty.is_float() || (ty == Type::F16 && reg.kind() == TypeKind::Bits));
    let size_ok =
        reg.bits() == ty.bits() || (fit == Fit::Wider && reg.bits() > ty.bits() && wider_ok);
    kinds_ok && size_ok
}

/// The checking context of one instruction.
struct Cx<'c, 'a, 's> {
    fb: &'c FnBuilder<'a, 's>,
    func: &'c Function,
    opcode: &'c str,
    head: Span,
    mods: Vec<(&'c str, Span)>,
    used: Vec<bool>,
    /// Registers this statement needs beyond the function's (a `%r+4` operand's sum, the
    /// copies a `mov.v2` makes of sources it overwrites): their ids follow the function's.
    temps: RefCell<Vec<RegDecl>>,
    /// Instructions that run before the statement's own (the sums of `%r+4` operands, all
    /// but the last move of a `mov.v2`), under the same guard.
    pre: RefCell<Vec<Inst>>,
    /// Guards of instructions in `pre` other than the instruction's own (by index; None:
    /// unguarded).
    pre_guards: RefCell<HashMap<usize, Option<Guard>>>,
    /// The instruction's own guard.
    guard: Option<Guard>,
}

impl Cx<'_, '_, '_> {
    fn reg_ty(&self, r: RegId) -> Type {
        match r.0.checked_sub(self.func.regs.len() as u32) {
            Some(t) => self.temps.borrow()[t as usize].ty,
            None => self.func.reg(r).ty,
        }
    }

    /// A register of type `ty` for this statement alone; `name` says what it holds.
    fn temp(&self, ty: Type, name: String) -> RegId {
        let mut temps = self.temps.borrow_mut();
        temps.push(RegDecl { name, ty });
        RegId((self.func.regs.len() + temps.len() - 1) as u32)
    }

    /// Adds an instruction before the one being built, under `guard` rather than the
    /// instruction's own.
    fn pre_guarded(&self, inst: Inst, guard: Option<Guard>) {
        let mut pre = self.pre.borrow_mut();
        self.pre_guards.borrow_mut().insert(pre.len(), guard);
        pre.push(inst);
    }

    /// The name of a vector register whose first element is `first`.
    fn vector_name(&self, first: RegId) -> String {
        let element = &self.func.reg(first).name;
        element.strip_suffix(".x").unwrap_or(element).to_string()
    }

    /// The elements of a vector operand: a `{a, b, ...}` list or a whole vector register.
    fn vector_parts(&self, o: &Opnd) -> Option<Vec<Operand>> {
        match &o.raw {
            Raw::Op(Operand::Vector(parts)) => Some(parts.clone()),
            Raw::VecReg { first, len } => Some(
                (0..*len as u32)
                    .map(|k| Operand::Reg(RegId(first.0 + k)))
                    .collect(),
            ),
            _ => None,
        }
    }

    /// The element of a `{x}` list of one, as an operand of its own.
    fn single_element(&self, o: &Opnd) -> Option<Opnd> {
        match &o.raw {
            Raw::Op(Operand::Vector(parts)) if parts.len() == 1 => Some(Opnd {
                raw: Raw::Op(parts[0].clone()),
                span: o.span,
            }),
            _ => None,
        }
    }

    /// The declaration of a variable an address names.
    fn var_decl(&self, v: VarId) -> &VarDecl {
        match v {
            VarId::Module(i) => &self.fb.module.vars[i as usize],
            VarId::Function(i) => self.func.var(i),
        }
    }

    // ---- modifiers -------------------------------------------------------------------

    /// Takes a flag modifier if present.
    fn flag(&mut self, name: &str) -> bool {
        let mut found = false;
        for (i, (m, _)) in self.mods.iter().enumerate() {
            if !self.used[i] && *m == name {
                self.used[i] = true;
                found = true;
            }
        }
        found
    }

    /// Takes at most one modifier that `parse` recognises.
    fn pick<T>(&mut self, parse: impl Fn(&str) -> Option<T>) -> R<Option<T>> {
        let mut out = None;
        for (i, (m, span)) in self.mods.iter().enumerate() {
            if self.used[i] {
                continue;
            }
            if let Some(v) = parse(m) {
                if out.is_some() {
                    return err(
                        *span,
                        format!("conflicting modifier `.{m}` on `{}`", self.opcode),
                    );
                }
                self.used[i] = true;
                out = Some(v);
            }
        }
        Ok(out)
    }

    /// Takes every type modifier, in order.
    fn types(&mut self) -> Vec<(Type, Span)> {
        let mut out = Vec::new();
        for (i, (m, span)) in self.mods.iter().enumerate() {
            if !self.used[i]
                && let Some(t) = Type::from_ptx(m)
            {
                self.used[i] = true;
                out.push((t, *span));
            }
        }
        out
    }

    /// Exactly one type, from the allowed list.
    fn one_type(&mut self, allowed: &[Type]) -> R<Type> {
        let tys = self.types();
        match tys.as_slice() {
            [] => err(
                self.head,
                format!("`{}` needs a type modifier", self.opcode),
            ),
            [(t, span)] => {
                if allowed.contains(t) {
                    Ok(*t)
                } else {
                    err(*span, format!("`{}` does not take type {t}", self.opcode))
                }
            }
            [_, (_, span), ..] => err(*span, format!("`{}` takes one type modifier", self.opcode)),
        }
    }

    /// Reports the first modifier nothing took.
    fn finish(&self) -> R<()> {
        for (i, (m, span)) in self.mods.iter().enumerate() {
            if !self.used[i] {
                return err(
                    *span,
                    format!("unexpected modifier `.{m}` on `{}`", self.opcode),
                );
            }
        }
        Ok(())
    }

    /// ptxas reads some modes as part of the opcode (`mad.lo`, `mul.wide`, `mul24.hi`): the
    /// mode `name` must be the first modifier.
    fn mode_first(&self, name: &str) -> R<()> {
        match self.mods.first() {
            Some((m, _)) if *m == name => Ok(()),
            first => {
                let span = self
                    .mods
                    .iter()
                    .find(|(m, _)| *m == name)
                    .map_or(self.head, |(_, s)| *s);
                let after = first.map_or(String::new(), |(m, _)| format!(", before `.{m}`"));
                err(
                    span,
                    format!("`.{name}` must follow `{}` directly{after}", self.opcode),
                )
            }
        }
    }

    fn forbid(&self, cond: bool, name: &str, why: &str) -> R<()> {
        if cond {
            let span = self
                .mods
                .iter()
                .find(|(m, _)| *m == name)
                .map_or(self.head, |(_, s)| *s);
            return err(span, format!("`.{name}` {why}"));
        }
        Ok(())
    }

    // ---- operands --------------------------------------------------------------------

    fn count(&self, ops: &[Opnd], n: usize) -> R<()> {
        if ops.len() != n {
            let span = ops.get(n).map_or(self.head, |o| o.span);
            return err(
                span,
                format!("`{}` takes {n} operands, found {}", self.opcode, ops.len()),
            );
        }
        Ok(())
    }

    fn reg_of(&self, o: &Opnd, ty: Type, fit: Fit) -> R<RegId> {
        match &o.raw {
            Raw::Op(Operand::Reg(r)) => {
                let rt = self.reg_ty(*r);
                if reg_fits(rt, ty, fit) {
                    Ok(*r)
                } else {
                    err(
                        o.span,
                        format!(
                            "register `{}` has type {rt}, which does not fit {ty} of `{}`",
                            self.func.reg(*r).name,
                            self.opcode
                        ),
                    )
                }
            }
            Raw::VecReg { first, len } => err(
                o.span,
                format!(
                    "`{}` is a .v{len} vector register; `{}` takes one element (`{}.x`) here",
                    self.vector_name(*first),
                    self.opcode,
                    self.vector_name(*first)
                ),
            ),
            Raw::RegPlus(..) => err(o.span, format!("expected a {ty} register, not a sum")),
            _ => err(o.span, format!("expected a {ty} register")),
        }
    }

    /// A variable's address operand (`var`, `var+8`, `var[2]`) as `mov` and `cvta` take it,
    /// or None for another operand.
    fn var_address(&self, o: &Opnd) -> Option<Operand> {
        match o.raw {
            Raw::Op(Operand::Var(v)) => Some(Operand::Var(v)),
            Raw::VarPlus { var, by, index } => {
                let scale = if index {
                    self.var_decl(var).ty.bytes() as i64
                } else {
                    1
                };
                Some(Operand::VarPlus(var, by.wrapping_mul(scale)))
            }
            _ => None,
        }
    }

    /// A destination register of type `ty`.
    fn dst(&self, o: &Opnd, ty: Type) -> R<Operand> {
        self.dst_fit(o, ty, Fit::Exact)
    }

    fn dst_fit(&self, o: &Opnd, ty: Type, fit: Fit) -> R<Operand> {
        if let Raw::Op(Operand::Sink) = o.raw {
            return Ok(Operand::Sink);
        }
        Ok(Operand::Reg(self.reg_of(o, ty, fit)?))
    }

    /// A source: register or immediate of type `ty`.
    fn src(&self, o: &Opnd, ty: Type) -> R<Operand> {
        self.src_fit(o, ty, Fit::Exact)
    }

    fn src_fit(&self, o: &Opnd, ty: Type, fit: Fit) -> R<Operand> {
        match &o.raw {
            Raw::Op(Operand::Imm(imm)) => {
                check_imm(*imm, ty).or_else(|m| err(o.span, m))?;
                Ok(Operand::Imm(*imm))
            }
            Raw::Op(Operand::NotPred(r)) if ty == Type::Pred => {
                self.reg_of(
                    &Opnd {
                        raw: Raw::Op(Operand::Reg(*r)),
                        span: o.span,
                    },
                    ty,
                    fit,
                )?;
                Ok(Operand::NotPred(*r))
            }
            Raw::RegPlus(r, k) => {
                let as_reg = Opnd {
                    raw: Raw::Op(Operand::Reg(*r)),
                    span: o.span,
                };
                self.reg_of(&as_reg, ty, fit)?;
                let rt = self.reg_ty(*r);
                // ptxas wants an integer constant, and crashes on `%f+1` and `%p+1`.
                if !(rt.is_int() && rt.bits() >= 16) {
                    return err(
                        o.span,
                        format!(
                            "`+ constant` needs a 16-, 32- or 64-bit integer register; `{}` is {rt}",
                            self.func.reg(*r).name
                        ),
                    );
                }
                // The sum wraps at the register's width (ptxas's `IADD3 R, R, imm`).
                let tmp = self.temp(rt, format!("{}+{k}", self.func.reg(*r).name));
                self.pre.borrow_mut().push(Inst::IntBin {
                    op: IntBinOp::Add,
                    ty: rt.unsigned(),
                    sat: false,
                    carry: Carry::default(),
                    d: Operand::Reg(tmp),
                    a: Operand::Reg(*r),
                    b: Operand::Imm(Imm::Int((*k as u64 & rt.mask()) as i128)),
                });
                Ok(Operand::Reg(tmp))
            }
            _ => Ok(Operand::Reg(self.reg_of(o, ty, fit)?)),
        }
    }

    fn address(&self, o: &Opnd) -> R<Address> {
        match &o.raw {
            Raw::Op(Operand::Addr(a)) => {
                if let AddrBase::Reg(r) = a.base {
                    let t = self.reg_ty(r);
                    if !(t.is_int() && t.bits() >= 32) {
                        return err(
                            o.span,
                            format!(
                                "address register has type {t}; expected a 32- or 64-bit integer"
                            ),
                        );
                    }
                }
                Ok(*a)
            }
            _ => err(o.span, "expected an address `[...]`"),
        }
    }

    /// `d` or `d|p`: a destination of type `ty` and an optional predicate beside it.
    fn dst_and_pred(&self, o: &Opnd, ty: Type, pred_ok: bool) -> R<(Operand, Operand)> {
        match &o.raw {
            Raw::PredPair(d, p) if pred_ok => {
                let as_opnd = |r: RegId| Opnd {
                    raw: Raw::Op(Operand::Reg(r)),
                    span: o.span,
                };
                self.reg_of(&as_opnd(*d), ty, Fit::Exact)?;
                self.reg_of(&as_opnd(*p), Type::Pred, Fit::Exact)?;
                Ok((Operand::Reg(*d), Operand::Reg(*p)))
            }
            Raw::SinkPred(p) if pred_ok => {
                let p = Opnd {
                    raw: Raw::Op(Operand::Reg(*p)),
                    span: o.span,
                };
                self.reg_of(&p, Type::Pred, Fit::Exact)?;
                let Raw::Op(p) = p.raw else {
                    unreachable!("built above")
                };
                Ok((Operand::Sink, p))
            }
            Raw::PredPair(..) | Raw::SinkPred(_) => err(
                o.span,
                format!("`{}` has no predicate result `|p`", self.opcode),
            ),
            _ => Ok((self.dst(o, ty)?, Operand::Sink)),
        }
    }

    /// `{a, b, ...}` with `n` elements of type `ty`: registers, and immediates in a source
    /// (`is_dst` false) or sinks in a destination.
    fn vector(&self, o: &Opnd, n: usize, ty: Type, fit: Fit, is_dst: bool) -> R<Operand> {
        match self.vector_parts(o) {
            Some(parts) => {
                if parts.len() != n {
                    return err(
                        o.span,
                        format!("expected a vector of {n} elements, found {}", parts.len()),
                    );
                }
                for p in &parts {
                    match p {
                        Operand::Reg(r) => {
                            let rt = self.reg_ty(*r);
                            if !reg_fits(rt, ty, fit) {
                                return err(
                                    o.span,
                                    format!(
                                        "vector element `{}` has type {rt}, which does not fit {ty}",
                                        self.func.reg(*r).name
                                    ),
                                );
                            }
                        }
                        Operand::Imm(_) if is_dst => {
                            return err(o.span, "an immediate cannot be a destination");
                        }
                        Operand::Imm(imm) => check_imm(*imm, ty).or_else(|m| err(o.span, m))?,
                        _ if !is_dst => return err(o.span, "`_` cannot be a source"),
                        _ => {}
                    }
                }
                Ok(Operand::Vector(parts))
            }
            None => err(o.span, format!("expected a vector of {n} elements")),
        }
    }
}

/// Resolves one operand pair.
fn operand(fb: &FnBuilder, pair: Pair<Rule>) -> R<Opnd> {
    let span = span_of(&pair);
    let inner = pair.into_inner().next().expect("operand has one child");
    let reg = |p: &Pair<Rule>| -> R<RegId> {
        match fb.lookup(p.as_str()) {
            Some(Name::Reg(r)) => Ok(r),
            Some(Name::Vector { .. }) => err(
                span_of(p),
                format!(
                    "`{}` is a vector register; name one element (`{}.x`)",
                    p.as_str(),
                    p.as_str()
                ),
            ),
            _ => err(span_of(p), format!("undefined register `{}`", p.as_str())),
        }
    };
    let raw = match inner.as_rule() {
        Rule::vector => {
            let mut parts = Vec::new();
            for e in inner.into_inner() {
                parts.push(match e.as_rule() {
                    Rule::sink => Operand::Sink,
                    Rule::imm => match immediate(&e) {
                        Some(imm) => Operand::Imm(imm),
                        None => {
                            return err(span_of(&e), format!("invalid literal `{}`", e.as_str()));
                        }
                    },
                    // `%r`, or a vector register's element `%v.x`.
                    Rule::reg_sel => {
                        let es = span_of(&e);
                        match operand_reg_sel(fb, e)? {
                            Operand::Reg(r) => Operand::Reg(r),
                            _ => return err(es, "a vector element must be a register"),
                        }
                    }
                    _ => Operand::Reg(reg(&e)?),
                });
            }
            Raw::Op(Operand::Vector(parts))
        }
        Rule::address => {
            let mut base = AddrBase::None;
            let mut offset = 0i64;
            for p in inner.into_inner() {
                match p.as_rule() {
                    Rule::addr_base => {
                        let b = p.into_inner().next().unwrap();
                        base = match fb.lookup(b.as_str()) {
                            Some(Name::Reg(r)) => AddrBase::Reg(r),
                            Some(Name::Var(v)) => AddrBase::Var(v),
                            Some(Name::Vector { .. }) => {
                                return err(
                                    span_of(&b),
                                    format!(
                                        "`{}` is a vector register; an address needs a scalar one",
                                        b.as_str()
                                    ),
                                );
                            }
                            None => {
                                return err(
                                    span_of(&b),
                                    format!("undefined register or variable `{}`", b.as_str()),
                                );
                            }
                        };
                    }
                    Rule::addr_offset => {
                        let lit = p.into_inner().next().unwrap();
                        offset = literal::parse_int(lit.as_str())
                            .and_then(|v| i64::try_from(v).ok())
                            .ok_or_else(|| {
                                Diagnostic::new(span_of(&lit), "address offset out of range")
                            })?;
                    }
                    _ => {}
                }
            }
            Raw::Op(Operand::Addr(Address { base, offset }))
        }
        Rule::paren_list => {
            let mut list = Vec::new();
            for p in inner.into_inner() {
                list.push(operand(fb, p)?);
            }
            Raw::List(list)
        }
        Rule::pred_pair => {
            let mut it = inner.into_inner();
            let first = it.next().unwrap();
            let q = reg(&it.next().unwrap())?;
            match first.as_str() {
                "_" => Raw::SinkPred(q),
                _ => Raw::PredPair(reg(&first)?, q),
            }
        }
        Rule::not_reg => Raw::Op(Operand::NotPred(reg(&inner.into_inner().next().unwrap())?)),
        Rule::neg_reg => {
            let rs = inner.into_inner().next().unwrap();
            match operand_reg_sel(fb, rs)? {
                Operand::Reg(r) => Raw::Op(Operand::NegReg(r, None)),
                Operand::RegSel(r, s) => Raw::Op(Operand::NegReg(r, Some(s))),
                _ => return err(span, "only a register can be negated"),
            }
        }
        Rule::imm => match immediate(&inner) {
            Some(imm) => Raw::Op(Operand::Imm(imm)),
            None => return err(span, format!("invalid literal `{}`", inner.as_str())),
        },
        Rule::reg_plus => {
            let mut it = inner.into_inner();
            let name = it.next().unwrap();
            let r = reg(&name)?;
            let mut sum = 0i128;
            for lit in it {
                let v = literal::parse_int(lit.as_str())
                    .filter(|v| (i64::MIN as i128..=u64::MAX as i128).contains(v))
                    .ok_or_else(|| Diagnostic::new(span_of(&lit), "constant out of range"))?;
                sum = sum.wrapping_add(v);
            }
            Raw::RegPlus(r, sum as i64)
        }
        Rule::reg_sel => {
            let name = inner.clone().into_inner().next().unwrap();
            match (fb.lookup(name.as_str()), name.as_str() == inner.as_str()) {
                (Some(Name::Vector { first, len }), true) => Raw::VecReg { first, len },
                _ => Raw::Op(operand_reg_sel(fb, inner)?),
            }
        }
        Rule::sink => Raw::Op(Operand::Sink),
        Rule::var_plus => {
            let mut it = inner.into_inner();
            let name = it.next().unwrap();
            let disp = it.next().unwrap();
            let (lit, index) = match disp.as_rule() {
                Rule::var_index => (disp.into_inner().next().unwrap(), true),
                _ => (disp, false),
            };
            let by = literal::parse_int(lit.as_str())
                .and_then(|v| i64::try_from(v).ok())
                .ok_or_else(|| Diagnostic::new(span_of(&lit), "offset out of range"))?;
            match fb.lookup(name.as_str()) {
                Some(Name::Var(var)) => Raw::VarPlus { var, by, index },
                // `r+4` for a register declared without `%`.
                Some(Name::Reg(r)) if !index => Raw::RegPlus(r, by),
                _ => {
                    return err(
                        span_of(&name),
                        format!("`{}` is not a variable", name.as_str()),
                    );
                }
            }
        }
        Rule::ident => {
            let name = inner.as_str();
            match fb.lookup(name) {
                Some(Name::Reg(r)) => Raw::Op(Operand::Reg(r)),
                Some(Name::Var(v)) => Raw::Op(Operand::Var(v)),
                Some(Name::Vector { first, len }) => Raw::VecReg { first, len },
                // PTX's one predefined identifier: the warp size.
                None if name == "WARP_SZ" => Raw::Op(Operand::Imm(Imm::Int(32))),
                None => {
                    if let Some((id, _)) = fb.labels.get(name) {
                        Raw::Label(*id)
                    } else if let Some(f) = fb.func_id(name) {
                        Raw::Func(f)
                    } else {
                        return err(span, format!("undefined name `{name}`"));
                    }
                }
            }
        }
        r => unreachable!("operand child {r:?}"),
    };
    Ok(Opnd { raw, span })
}

/// `%r`, `%r.b0`, `%tid.x`.
fn operand_reg_sel(fb: &FnBuilder, p: Pair<Rule>) -> R<Operand> {
    let span = span_of(&p);
    let mut it = p.into_inner();
    let name = it.next().unwrap();
    let comp = it.next().map(|c| c.as_str());
    if let Some(Name::Vector { first, len }) = fb.lookup(name.as_str()) {
        let Some(c) = comp else {
            return err(
                span,
                format!(
                    "`{}` is a vector register; name one element (`{}.x`)",
                    name.as_str(),
                    name.as_str()
                ),
            );
        };
        return match VECTOR_ELEMENTS.iter().position(|names| names.contains(&c)) {
            Some(k) if k < len as usize => Ok(Operand::Reg(RegId(first.0 + k as u32))),
            // ptxas takes `.z` and `.w` of a .v2 register without complaint, but as no
            // register of its own (a write to `.w` may change `.z`): refused here.
            Some(_) => err(
                span,
                format!(
                    "`{}` is a .v{len} register: it has no element `.{c}`",
                    name.as_str()
                ),
            ),
            None => err(
                span,
                format!("unknown vector element `.{c}` (elements are .x .y .z .w or .r .g .b .a)"),
            ),
        };
    }
    if let Some(Name::Reg(r)) = fb.lookup(name.as_str()) {
        return match comp {
            None => Ok(Operand::Reg(r)),
            Some(c) => match (Selector::from_ptx(c), LaneSpec::from_ptx(c)) {
                (Some(sel), _) => Ok(Operand::RegSel(r, sel)),
                (None, Some(lanes)) => Ok(Operand::RegLanes(r, lanes)),
                (None, None) => err(span, format!("unknown register selector `.{c}`")),
            },
        };
    }
    if let Some(kind) = SpecialRegKind::from_ptx(&name.as_str()[1..]) {
        let vector = matches!(
            kind,
            SpecialRegKind::Tid
                | SpecialRegKind::Ntid
                | SpecialRegKind::Ctaid
                | SpecialRegKind::Nctaid
        );
        let dim = match (vector, comp) {
            (true, Some("x")) => 0,
            (true, Some("y")) => 1,
            (true, Some("z")) => 2,
            (false, None) => 0,
            (true, _) => {
                return err(
                    span,
                    format!("`{}` needs a component .x, .y or .z", name.as_str()),
                );
            }
            (false, Some(c)) => {
                return err(span, format!("`{}` has no component `.{c}`", name.as_str()));
            }
        };
        return Ok(Operand::Special(SpecialReg { kind, dim }));
    }
    if let Some(value) = fixed_special(fb, &name.as_str()[1..], comp) {
        return value.map_err(|why| Diagnostic::new(span, why));
    }
    err(
        span_of(&name),
        format!("undefined register `{}`", name.as_str()),
    )
}

/// Special registers whose value follows from how ptxjit runs a grid (PTX ISA, Special
/// Registers): every block runs on "SM" 0 of 1 (`%smid`, `%nsmid`), the grid is launch 0
/// (`%gridid`), and there are no clusters of blocks, so each block is a cluster of one
/// (`%clusterid` is `%ctaid`, `%nclusterid` is `%nctaid`, `%cluster_ctaid` 0,
/// `%cluster_nctaid` 1, `%cluster_ctarank` 0, `%cluster_nctarank` 1, `%is_explicit_cluster`
/// false; these need sm_90, as in ptxas). None: not such a register.
fn fixed_special(
    fb: &FnBuilder,
    name: &str,
    comp: Option<&str>,
) -> Option<Result<Operand, String>> {
    let dim = match comp {
        None => None,
        Some("x") => Some(0),
        Some("y") => Some(1),
        Some("z") => Some(2),
        Some(c) => return Some(Err(format!("`%{name}` has no component `.{c}`"))),
    };
    let imm = |v| Operand::Imm(Imm::Int(v));
    let special = |kind, dim| Operand::Special(SpecialReg { kind, dim });
    let (vector, value) = match name {
        "smid" | "gridid" => (false, imm(0)),
        "nsmid" => (false, imm(1)),
        "clusterid" => (true, special(SpecialRegKind::Ctaid, dim.unwrap_or(0))),
        "nclusterid" => (true, special(SpecialRegKind::Nctaid, dim.unwrap_or(0))),
        "cluster_ctaid" => (true, imm(0)),
        "cluster_nctaid" => (true, imm(1)),
        "cluster_ctarank" | "is_explicit_cluster" => (false, imm(0)),
        "cluster_nctarank" => (false, imm(1)),
        _ => return None,
    };
    if vector != dim.is_some() {
        let why = if vector {
            format!("`%{name}` needs a component .x, .y or .z")
        } else {
            format!("`%{name}` has no components")
        };
        return Some(Err(why));
    }
    let cluster = name.contains("cluster");
    if cluster && fb.module.sm_version().is_some_and(|v| v < 90) {
        return Some(Err(format!("`%{name}` requires .target sm_90 or higher")));
    }
    Some(Ok(value))
}

/// Builds one statement: usually one instruction, more where the statement needs steps
/// before its own (the sum of a `%r+4` operand, the element moves of a `mov.v2`), all under
/// its guard and at its location. Returns them and the registers they add to the function
/// (ids from `func.regs.len()` on); reports problems and returns nothing on error.
pub(crate) fn build(
    fb: &mut FnBuilder,
    func: &Function,
    pair: Pair<Rule>,
) -> (Vec<Instruction>, Vec<RegDecl>) {
    let span = span_of(&pair);
    let line = fb.line_of(span.start);
    match build_inner(fb, func, pair) {
        Ok((insts, temps)) => {
            let insts = insts
                .into_iter()
                .map(|(guard, inst)| Instruction {
                    guard,
                    inst,
                    span,
                    line,
                })
                .collect();
            (insts, temps)
        }
        Err(d) => {
            fb.report(d);
            (Vec::new(), Vec::new())
        }
    }
}

/// The instructions a PTX instruction becomes, each with its guard, and their temporaries.
type Built = (Vec<(Option<Guard>, Inst)>, Vec<RegDecl>);

fn build_inner(fb: &FnBuilder, func: &Function, pair: Pair<Rule>) -> R<Built> {
    let mut guard = None;
    let mut head = None;
    let mut ops = Vec::new();
    for p in pair.into_inner() {
        match p.as_rule() {
            Rule::guard => {
                let mut negated = false;
                for g in p.into_inner() {
                    match g.as_rule() {
                        Rule::not => negated = true,
                        _ => match fb.lookup(g.as_str()) {
                            Some(Name::Reg(r)) if func.reg(r).ty == Type::Pred => {
                                guard = Some(Guard { reg: r, negated })
                            }
                            Some(Name::Reg(_)) => {
                                return err(
                                    span_of(&g),
                                    format!("guard `{}` is not a .pred register", g.as_str()),
                                );
                            }
                            _ => {
                                return err(
                                    span_of(&g),
                                    format!("undefined register `{}`", g.as_str()),
                                );
                            }
                        },
                    }
                }
            }
            Rule::head => head = Some(p),
            Rule::operand => ops.push(operand(fb, p)?),
            _ => {}
        }
    }
    let head = head.expect("instruction has a head");
    let head_span = span_of(&head);
    let mut parts = head.into_inner();
    let opcode_pair = parts.next().unwrap();
    let mods: Vec<(&str, Span)> = parts.map(|m| (&m.as_str()[1..], span_of(&m))).collect();
    let used = vec![false; mods.len()];
    let mut cx = Cx {
        fb,
        func,
        opcode: opcode_pair.as_str(),
        head: head_span,
        mods,
        used,
        temps: RefCell::new(Vec::new()),
        pre: RefCell::new(Vec::new()),
        pre_guards: RefCell::new(HashMap::new()),
        guard,
    };
    // ptxas reads `%r+4` as a value wherever a source register goes, but in a call's
    // operand lists and in the video instructions (a syntax error on every target).
    let listed = ops.iter().flat_map(|o| match &o.raw {
        Raw::List(l) => l.iter().collect(),
        _ => vec![o],
    });
    if REG_PLUS_REFUSED.contains(&cx.opcode)
        && let Some(o) = listed
            .into_iter()
            .find(|o| matches!(o.raw, Raw::RegPlus(..)))
    {
        return err(
            o.span,
            format!("`{}` does not take a register plus a constant", cx.opcode),
        );
    }
    let inst = opcode(&mut cx, &ops, span_of(&opcode_pair))?;
    cx.finish()?;
    let own = cx.pre_guards.into_inner();
    let mut insts: Vec<(Option<Guard>, Inst)> = (cx.pre.into_inner().into_iter().enumerate())
        .map(|(i, inst)| (own.get(&i).copied().unwrap_or(guard), inst))
        .collect();
    insts.push((guard, inst));
    Ok((insts, cx.temps.into_inner()))
}

/// Instructions whose operands cannot be `%r+4` (ptxas: a syntax error).
const REG_PLUS_REFUSED: &[&str] = &[
    "call",
    "vadd",
    "vsub",
    "vabsdiff",
    "vmin",
    "vmax",
    "vshl",
    "vshr",
    "vset",
    "vmad",
    "vadd2",
    "vsub2",
    "vavrg2",
    "vabsdiff2",
    "vmin2",
    "vmax2",
    "vset2",
    "vadd4",
    "vsub4",
    "vavrg4",
    "vabsdiff4",
    "vmin4",
    "vmax4",
    "vset4",
];

/// Every opcode [`opcode`] dispatches; any other is an unsupported instruction (and the
/// statement-level recovery in `frontend::parse` reads this list too).
pub(crate) const OPCODES: &[&str] = &[
    "abs",
    "activemask",
    "add",
    "addc",
    "and",
    "atom",
    "bar",
    "barrier",
    "bfe",
    "bfi",
    "bfind",
    "bmsk",
    "bra",
    "brev",
    "call",
    "clz",
    "cnot",
    "copysign",
    "cos",
    "cp",
    "createpolicy",
    "cvt",
    "cvta",
    "div",
    "dp2a",
    "dp4a",
    "elect",
    "ex2",
    "exit",
    "fence",
    "fma",
    "fns",
    "isspacep",
    "ld",
    "ldu",
    "lg2",
    "lop3",
    "mad",
    "mad24",
    "madc",
    "match",
    "max",
    "membar",
    "min",
    "mov",
    "mul",
    "mul24",
    "nanosleep",
    "neg",
    "not",
    "or",
    "popc",
    "prefetch",
    "prefetchu",
    "prmt",
    "rcp",
    "red",
    "redux",
    "rem",
    "ret",
    "rsqrt",
    "sad",
    "selp",
    "set",
    "setp",
    "shf",
    "shl",
    "shr",
    "shfl",
    "sin",
    "slct",
    "sqrt",
    "st",
    "sub",
    "subc",
    "szext",
    "tanh",
    "testp",
    "vabsdiff",
    "vabsdiff2",
    "vabsdiff4",
    "vadd",
    "vadd2",
    "vadd4",
    "vavrg2",
    "vavrg4",
    "vmad",
    "vmax",
    "vmax2",
    "vmax4",
    "vmin",
    "vmin2",
    "vmin4",
    "vote",
    "vset",
    "vset2",
    "vset4",
    "vshl",
    "vshr",
    "vsub",
    "vsub2",
    "vsub4",
    "xor",
];

/// A state space modifier of an instruction: `.shared::cta` is `.shared` (the executing
/// block's shared memory; `.shared::cluster`, another block's, is not supported).
fn space_modifier(m: &str) -> Option<Space> {
    match m {
        "shared::cta" => Some(Space::Shared),
        _ => Space::from_ptx(m),
    }
}

/// Splits `add`, `mul`, … into their integer and float forms by the type modifier.
fn is_float_form(cx: &Cx) -> bool {
    cx.mods
        .iter()
        .any(|(m, _)| matches!(*m, "f32" | "f64" | "f16"))
}

fn opcode(cx: &mut Cx, ops: &[Opnd], op_span: Span) -> R<Inst> {
    if !OPCODES.contains(&cx.opcode) {
        return Err(Diagnostic::unsupported(
            op_span,
            format!("unsupported instruction `{}`", cx.opcode),
        ));
    }
    match cx.opcode {
        "mov" => memory::mov(cx, ops),
        "ld" | "st" | "ldu" => memory::ld_st(cx, ops),
        "cp" => memory::cp_async(cx, ops),
        "cvta" => memory::cvta(cx, ops),
        "atom" | "red" => atomic::atom(cx, ops),
        "fence" | "membar" => atomic::fence(cx, ops),
        "bar" | "barrier" => sync::bar(cx, ops),
        "shfl" => sync::shfl(cx, ops),
        "vote" => sync::vote(cx, ops),
        "match" => sync::match_(cx, ops),
        "redux" => sync::redux(cx, ops),
        "activemask" => sync::activemask(cx, ops),
        "elect" => sync::elect(cx, ops),
        "isspacep" => sync::isspacep(cx, ops),
        "add" | "sub" | "mul" | "fma" | "neg" | "abs" | "min" | "max" | "ex2" | "tanh"
            if half::is_half_form(cx) =>
        {
            half::arith(cx, ops)
        }
        "setp" if half::is_half_form(cx) => half::setp(cx, ops),
        "set" => half::set(cx, ops),
        "cvt" if half::is_half_form(cx) => half::cvt(cx, ops),
        "add" | "sub" | "min" | "max" | "div" if is_float_form(cx) => float::float_bin(cx, ops),
        "mul" if is_float_form(cx) => float::float_bin(cx, ops),
        "add" | "sub" | "addc" | "subc" | "min" | "max" | "div" | "rem" | "and" | "or" | "xor"
        | "shl" | "shr" => int::int_bin(cx, ops),
        "mul" => int::mul(cx, ops),
        "mad" if is_float_form(cx) => float::fma(cx, ops),
        "fma" => float::fma(cx, ops),
        "mad" | "madc" => int::mad(cx, ops),
        "neg" | "abs" if is_float_form(cx) => float::float_un(cx, ops),
        "neg" | "abs" | "not" | "cnot" | "popc" | "clz" | "brev" => int::int_un(cx, ops),
        "sqrt" | "rcp" | "rsqrt" | "ex2" | "lg2" | "sin" | "cos" => float::float_un(cx, ops),
        "shf" => int::shf(cx, ops),
        "bfe" | "bfi" => int::bitfield(cx, ops),
        "prmt" => int::prmt(cx, ops),
        "setp" => convert::setp(cx, ops),
        "selp" => convert::selp(cx, ops),
        "slct" => convert::slct(cx, ops),
        "cvt" if cx.mods.iter().any(|(m, _)| *m == "pack") => {
            cx.flag("pack");
            bits::cvt_pack(cx, ops)
        }
        "cvt" => convert::cvt(cx, ops),
        "bfind" => bits::bfind(cx, ops),
        "fns" => bits::fns(cx, ops),
        "bmsk" | "szext" => bits::bmsk_szext(cx, ops),
        "mul24" | "mad24" => bits::mul24(cx, ops),
        "sad" => bits::sad(cx, ops),
        "dp4a" | "dp2a" => bits::dot(cx, ops),
        "lop3" => bits::lop3(cx, ops),
        "copysign" => bits::copysign(cx, ops),
        "testp" => bits::testp(cx, ops),
        "nanosleep" | "prefetch" | "prefetchu" => bits::hint(cx, ops),
        "createpolicy" => bits::createpolicy(cx, ops),
        "vadd" | "vsub" | "vabsdiff" | "vmin" | "vmax" | "vshl" | "vshr" => video::video(cx, ops),
        "vset" => video::vset(cx, ops),
        "vmad" => video::vmad(cx, ops),
        "vadd2" | "vsub2" | "vavrg2" | "vabsdiff2" | "vmin2" | "vmax2" | "vset2" | "vadd4"
        | "vsub4" | "vavrg4" | "vabsdiff4" | "vmin4" | "vmax4" | "vset4" => video::simd(cx, ops),
        "bra" => control::bra(cx, ops),
        "call" => control::call(cx, ops),
        "ret" | "exit" => control::ret_exit(cx, ops),
        other => unreachable!("`{other}` is in OPCODES but not dispatched"),
    }
}

#[cfg(test)]
mod tests {
    use super::OPCODES;

    /// Every listed opcode reaches a handler (an opcode listed but not dispatched would
    /// panic here), which judges its operands, not its name.
    #[test]
    fn every_listed_opcode_is_dispatched() {
        for op in OPCODES {
            let ptx = format!(
                ".version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n  {op};\n  ret;\n}}\n"
            );
            let refused = match crate::Module::parse(&ptx) {
                Ok(m) => m.functions[0].refused.clone(),
                Err(e) => e.diagnostics,
            };
            assert!(
                refused
                    .iter()
                    .all(|d| !d.message.contains("unsupported instruction")),
                "{op}: {refused:?}"
            );
        }
    }
}
