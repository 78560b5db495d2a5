//! One instruction: resolve its operands, map its modifier list onto the opcode's typed form
//! (the table-driven check of ../shared/design.md: modifiers in any order, the first unexpected
//! or missing one reported with its span), and check operand types by PTX's rules
//! (PTX ISA 6.4.1, "Operand type information" and the relaxed rules for ld/st/cvt).

mod sync;
mod video;

use super::{FnBuilder, Name, Rule, literal, span_of};
use crate::ast::*;
use crate::frontend::Diagnostic;
use pest::iterators::Pair;

/// An operand as written, resolved, with its span.
#[derive(Clone, Debug)]
pub(crate) enum Raw {
    Op(Operand),
    Label(LabelId),
    Func(FuncId),
    List(Vec<Opnd>),
    PredPair(RegId, RegId),
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

/// Checks that an immediate fits an operand of type `ty` (PTX ISA 4.5.1).
pub(crate) fn check_imm(imm: Imm, ty: Type) -> Result<(), String> {
    match (imm, ty.kind()) {
        (Imm::Int(v), TypeKind::Pred) if v == 0 || v == 1 => Ok(()),
        (Imm::Int(v), TypeKind::Bits | TypeKind::Unsigned | TypeKind::Signed) => {
            let bits = ty.bits();
            let lo = -(1i128 << (bits - 1));
            let hi = (1i128 << bits) - 1;
            if v < lo || v > hi {
                Err(format!("immediate {v} is out of range for {ty}"))
            } else {
                Ok(())
            }
        }
        (Imm::Int(_), TypeKind::Float) => Ok(()),
        (Imm::F32(_) | Imm::F64(_), TypeKind::Float) if ty != Type::F16 => Ok(()),
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
    /// As `Exact`, but an integer operand may sit in a wider register (ld, st, cvt).
    Wider,
}

fn reg_fits(reg: Type, ty: Type, fit: Fit) -> bool {
    if reg == Type::Pred || ty == Type::Pred {
        return reg == ty;
    }
    let kinds_ok = match ty.kind() {
        TypeKind::Bits => true,
        TypeKind::Unsigned | TypeKind::Signed => reg.kind() != TypeKind::Float,
        TypeKind::Float => matches!(reg.kind(), TypeKind::Float | TypeKind::Bits),
        TypeKind::Pred => unreachable!(),
    };
    let size_ok = reg.bits() == ty.bits()
        || (fit == Fit::Wider && reg.bits() > ty.bits() && !ty.is_float() && !reg.is_float());
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
}

impl Cx<'_, '_, '_> {
    fn reg_ty(&self, r: RegId) -> Type {
        self.func.reg(r).ty
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
            _ => err(o.span, format!("expected a {ty} register")),
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

    /// `{a, b, ...}` with `n` registers of type `ty` (sinks allowed for destinations).
    fn vector(&self, o: &Opnd, n: usize, ty: Type, fit: Fit, sink_ok: bool) -> R<Operand> {
        match &o.raw {
            Raw::Op(Operand::Vector(regs)) => {
                if regs.len() != n {
                    return err(o.span, format!("expected a vector of {n} registers"));
                }
                for r in regs {
                    match r {
                        Some(r) => {
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
                        None if !sink_ok => return err(o.span, "`_` cannot be a source"),
                        None => {}
                    }
                }
                Ok(Operand::Vector(regs.clone()))
            }
            _ => err(o.span, format!("expected a vector of {n} registers")),
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
            _ => err(span_of(p), format!("undefined register `{}`", p.as_str())),
        }
    };
    let raw = match inner.as_rule() {
        Rule::vector => {
            let mut regs = Vec::new();
            for e in inner.into_inner() {
                regs.push(match e.as_rule() {
                    Rule::sink => None,
                    _ => Some(reg(&e)?),
                });
            }
            Raw::Op(Operand::Vector(regs))
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
            let p = reg(&it.next().unwrap())?;
            let q = reg(&it.next().unwrap())?;
            Raw::PredPair(p, q)
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
        Rule::reg_sel => Raw::Op(operand_reg_sel(fb, inner)?),
        Rule::sink => Raw::Op(Operand::Sink),
        Rule::ident => {
            let name = inner.as_str();
            match fb.lookup(name) {
                Some(Name::Reg(r)) => Raw::Op(Operand::Reg(r)),
                Some(Name::Var(v)) => Raw::Op(Operand::Var(v)),
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
    if let Some(Name::Reg(r)) = fb.lookup(name.as_str()) {
        return match comp {
            None => Ok(Operand::Reg(r)),
            Some(c) => match Selector::from_ptx(c) {
                Some(sel) => Ok(Operand::RegSel(r, sel)),
                None => err(span, format!("unknown register selector `.{c}`")),
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
    err(
        span_of(&name),
        format!("undefined register `{}`", name.as_str()),
    )
}

/// Builds one instruction; reports problems and returns `None` on error.
pub(crate) fn build(fb: &mut FnBuilder, func: &Function, pair: Pair<Rule>) -> Option<Instruction> {
    let span = span_of(&pair);
    let line = fb.line_of(span.start);
    match build_inner(fb, func, pair) {
        Ok((guard, inst)) => Some(Instruction {
            guard,
            inst,
            span,
            line,
        }),
        Err(d) => {
            fb.err(d.span, d.message);
            None
        }
    }
}

fn build_inner(fb: &FnBuilder, func: &Function, pair: Pair<Rule>) -> R<(Option<Guard>, Inst)> {
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
    };
    let inst = opcode(&mut cx, &ops, span_of(&opcode_pair))?;
    cx.finish()?;
    Ok((guard, inst))
}

const INT_TYPES: &[Type] = &[
    Type::U16,
    Type::U32,
    Type::U64,
    Type::S16,
    Type::S32,
    Type::S64,
];
const BIT_TYPES: &[Type] = &[Type::B16, Type::B32, Type::B64];
const CARRY_TYPES: &[Type] = &[Type::U32, Type::S32, Type::U64, Type::S64];
const FLOAT_TYPES: &[Type] = &[Type::F32, Type::F64];

/// Splits `add`, `mul`, … into their integer and float forms by the type modifier.
fn is_float_form(cx: &Cx) -> bool {
    cx.mods
        .iter()
        .any(|(m, _)| matches!(*m, "f32" | "f64" | "f16"))
}

fn opcode(cx: &mut Cx, ops: &[Opnd], op_span: Span) -> R<Inst> {
    match cx.opcode {
        "mov" => mov(cx, ops),
        "ld" | "st" => ld_st(cx, ops),
        "cvta" => cvta(cx, ops),
        "atom" | "red" => atom(cx, ops),
        "fence" | "membar" => fence(cx, ops),
        "bar" | "barrier" => sync::bar(cx, ops),
        "shfl" => sync::shfl(cx, ops),
        "vote" => sync::vote(cx, ops),
        "match" => sync::match_(cx, ops),
        "redux" => sync::redux(cx, ops),
        "activemask" => sync::activemask(cx, ops),
        "elect" => sync::elect(cx, ops),
        "isspacep" => sync::isspacep(cx, ops),
        "add" | "sub" | "min" | "max" | "div" if is_float_form(cx) => float_bin(cx, ops),
        "mul" if is_float_form(cx) => float_bin(cx, ops),
        "add" | "sub" | "addc" | "subc" | "min" | "max" | "div" | "rem" | "and" | "or" | "xor"
        | "shl" | "shr" => int_bin(cx, ops),
        "mul" => mul(cx, ops),
        "mad" if is_float_form(cx) => fma(cx, ops),
        "fma" => fma(cx, ops),
        "mad" | "madc" => mad(cx, ops),
        "neg" | "abs" if is_float_form(cx) => float_un(cx, ops),
        "neg" | "abs" | "not" | "cnot" | "popc" | "clz" | "brev" => int_un(cx, ops),
        "sqrt" | "rcp" | "rsqrt" | "ex2" | "lg2" | "sin" | "cos" => float_un(cx, ops),
        "shf" => shf(cx, ops),
        "bfe" | "bfi" => bitfield(cx, ops),
        "prmt" => prmt(cx, ops),
        "setp" => setp(cx, ops),
        "selp" => selp(cx, ops),
        "slct" => slct(cx, ops),
        "cvt" => cvt(cx, ops),
        "vadd" | "vsub" | "vabsdiff" | "vmin" | "vmax" | "vshl" | "vshr" => video::video(cx, ops),
        "vset" => video::vset(cx, ops),
        "vmad" => video::vmad(cx, ops),
        "bra" => bra(cx, ops),
        "call" => call(cx, ops),
        "ret" | "exit" => {
            cx.flag("uni");
            cx.count(ops, 0)?;
            Ok(if cx.opcode == "ret" {
                Inst::Ret
            } else {
                Inst::Exit
            })
        }
        other => err(op_span, format!("unsupported instruction `{other}`")),
    }
}

fn mov(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ty = cx.one_type(&[Pred, B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    cx.count(ops, 2)?;
    let (d, a) = (&ops[0], &ops[1]);
    // Packing and unpacking: mov.b64 {lo, hi}, %rd  /  mov.b64 %rd, {lo, hi}.
    let vec_len = |o: &Opnd| match &o.raw {
        Raw::Op(Operand::Vector(v)) => Some(v.len()),
        _ => None,
    };
    if let Some(n) = vec_len(d).or(vec_len(a)) {
        if ty.kind() != TypeKind::Bits || !(n == 2 || (n == 4 && ty.bits() >= 32)) {
            return err(
                cx.head,
                "vector mov needs a bit-size type and 2 or 4 elements",
            );
        }
        let elem = match ty.bits() / n as u32 {
            8 => B8,
            16 => B16,
            32 => B32,
            _ => return err(cx.head, "vector elements must be 8, 16 or 32 bits"),
        };
        return if vec_len(d).is_some() {
            Ok(Inst::Mov {
                ty,
                d: cx.vector(d, n, elem, Fit::Exact, true)?,
                a: cx.src(a, ty)?,
            })
        } else {
            Ok(Inst::Mov {
                ty,
                d: cx.dst(d, ty)?,
                a: cx.vector(a, n, elem, Fit::Exact, false)?,
            })
        };
    }
    let d = cx.dst(d, ty)?;
    let a = match &a.raw {
        Raw::Op(Operand::Special(s)) => {
            if !(ty.is_int() && ty.bits() == 32) {
                return err(
                    a.span,
                    format!(
                        "special register `%{}` is 32-bit; use mov.u32",
                        s.kind.ptx()
                    ),
                );
            }
            Operand::Special(*s)
        }
        Raw::Op(Operand::Var(v)) => {
            // A shared variable's address is an offset in the block's window: 32 bits hold it.
            let shared = cx.var_decl(*v).space == Space::Shared;
            if !(ty.is_int() && (ty.bits() == 64 || (shared && ty.bits() == 32))) {
                return err(
                    a.span,
                    "taking a variable's address needs a 64-bit integer type (or 32-bit for .shared)",
                );
            }
            Operand::Var(*v)
        }
        _ => cx.src(a, ty)?,
    };
    Ok(Inst::Mov { ty, d, a })
}

fn ld_st(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let is_ld = cx.opcode == "ld";
    let order = cx
        .pick(|m| match m {
            "weak" => Some(MemOrder::Weak),
            "volatile" => Some(MemOrder::Volatile),
            "relaxed" => Some(MemOrder::Relaxed),
            "acquire" => Some(MemOrder::Acquire),
            "release" => Some(MemOrder::Release),
            _ => None,
        })?
        .unwrap_or(MemOrder::Weak);
    let scoped = ["cta", "cluster", "gpu", "sys"]
        .iter()
        .fold(false, |any, s| cx.flag(s) | any);
    match order {
        MemOrder::Acquire if !is_ld => return err(cx.head, "a store cannot be .acquire"),
        MemOrder::Release if is_ld => return err(cx.head, "a load cannot be .release"),
        MemOrder::Relaxed | MemOrder::Acquire | MemOrder::Release if !scoped => {
            return err(
                cx.head,
                format!(
                    "`{}` with a memory order needs a scope: .cta, .gpu or .sys",
                    cx.opcode
                ),
            );
        }
        MemOrder::Weak | MemOrder::Volatile if scoped => {
            return err(cx.head, "a scope goes with .relaxed, .acquire or .release");
        }
        _ => {}
    }
    // Cache operators and .nc change nothing on a CPU.
    for c in ["ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc"] {
        cx.flag(c);
    }
    let space = cx.pick(Space::from_ptx)?;
    let vec = cx
        .pick(|m| match m {
            "v2" => Some(2u8),
            "v4" => Some(4u8),
            _ => None,
        })?
        .unwrap_or(1);
    let ty = cx.one_type(&[
        B8, B16, B32, B64, U8, U16, U32, U64, S8, S16, S32, S64, F32, F64,
    ])?;
    if vec == 4 && ty.bits() == 64 {
        return err(cx.head, ".v4 of 64-bit elements is not a PTX form");
    }
    match space {
        Some(Space::Reg) => return err(cx.head, "`.reg` is not a memory space"),
        Some(Space::Const) if !is_ld => return err(cx.head, "constant memory is read-only"),
        _ => {}
    }
    cx.count(ops, 2)?;
    let (val, addr) = if is_ld {
        (&ops[0], &ops[1])
    } else {
        (&ops[1], &ops[0])
    };
    let addr = cx.address(addr)?;
    if let AddrBase::Var(v) = addr.base {
        let decl = cx.var_decl(v);
        if let Some(s) = space
            && s != decl.space
        {
            return err(
                cx.head,
                format!("`{}` is in {} space, not {s}", decl.name, decl.space),
            );
        }
        if !is_ld && matches!(decl.role, VarRole::Param(_)) && cx.func.kind == FuncKind::Entry {
            return err(cx.head, "kernel parameters are read-only");
        }
    }
    let val = if vec > 1 {
        cx.vector(val, vec as usize, ty, Fit::Wider, is_ld)?
    } else if is_ld {
        cx.dst_fit(val, ty, Fit::Wider)?
    } else {
        cx.src_fit(val, ty, Fit::Wider)?
    };
    Ok(if is_ld {
        Inst::Ld {
            space,
            order,
            vec,
            ty,
            d: val,
            addr,
        }
    } else {
        Inst::St {
            space,
            order,
            vec,
            ty,
            addr,
            a: val,
        }
    })
}

/// `atom{.sem}{.scope}{.space}.op.type d, [a], b{, c}` and `red{.sem}{.scope}{.space}.op.type
/// [a], b` (PTX ISA, Parallel Synchronization and Communication Instructions). Every
/// atomic is sequentially consistent here, which is at least what any `.sem`/`.scope` asks.
fn atom(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let is_red = cx.opcode == "red";
    for m in [
        "relaxed", "acquire", "release", "acq_rel", "cta", "gpu", "sys", "cluster",
    ] {
        cx.flag(m);
    }
    let space = cx.pick(Space::from_ptx)?;
    match space {
        None | Some(Space::Global | Space::Shared) => {}
        Some(s) => return err(cx.head, format!("`{}` does not take {s}", cx.opcode)),
    }
    let Some(op) = cx.pick(AtomOp::from_ptx)? else {
        return err(
            cx.head,
            format!(
                "`{}` needs an operation: .and .or .xor .add .inc .dec .min .max{}",
                cx.opcode,
                if is_red { "" } else { " .exch .cas" }
            ),
        );
    };
    if is_red && matches!(op, AtomOp::Exch | AtomOp::Cas) {
        return err(cx.head, "`red` has no .exch or .cas; use `atom`");
    }
    let allowed: &[Type] = match op {
        AtomOp::And | AtomOp::Or | AtomOp::Xor | AtomOp::Exch | AtomOp::Cas => &[B32, B64],
        AtomOp::Add => &[U32, S32, U64, F32, F64],
        AtomOp::Inc | AtomOp::Dec => &[U32],
        AtomOp::Min | AtomOp::Max => &[U32, S32, U64, S64],
    };
    let ty = cx.one_type(allowed)?;
    let with_d = !is_red as usize;
    let with_c = (op == AtomOp::Cas) as usize;
    cx.count(ops, with_d + 2 + with_c)?;
    let d = if is_red {
        Operand::Sink
    } else {
        cx.dst(&ops[0], ty)?
    };
    let addr = cx.address(&ops[with_d])?;
    if let AddrBase::Var(v) = addr.base {
        let decl = cx.var_decl(v);
        if !matches!(decl.space, Space::Global | Space::Shared)
            || space.is_some_and(|s| s != decl.space)
        {
            return err(
                ops[with_d].span,
                format!(
                    "`{}` is in {} space; `{}` works on global and shared memory",
                    decl.name, decl.space, cx.opcode
                ),
            );
        }
    }
    let b = cx.src(&ops[with_d + 1], ty)?;
    let c = if with_c == 1 {
        Some(cx.src(&ops[with_d + 2], ty)?)
    } else {
        None
    };
    Ok(Inst::Atom {
        op,
        space,
        ty,
        d,
        addr,
        b,
        c,
    })
}

/// `fence{.sc,.acq_rel}{.cta,.cluster,.gpu,.sys}` and `membar{.cta,.gl,.sys}`: every one is
/// the strongest fence here. The proxy forms (`fence.proxy.*`, `.mbarrier_init`) name memory
/// this project does not have and are refused.
fn fence(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let levels: &[&str] = if cx.opcode == "membar" {
        &["cta", "gl", "sys"]
    } else {
        &["sc", "acq_rel", "cta", "cluster", "gpu", "sys"]
    };
    let mut named = false;
    for m in levels {
        named |= cx.flag(m);
    }
    if cx.opcode == "membar" && !named {
        return err(cx.head, "`membar` needs a level: .cta, .gl or .sys");
    }
    cx.count(ops, 0)?;
    Ok(Inst::Fence)
}

fn cvta(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let dir = if cx.flag("to") {
        CvtaDir::ToSpace
    } else {
        CvtaDir::ToGeneric
    };
    let space = match cx.pick(Space::from_ptx)? {
        Some(s @ (Space::Global | Space::Local | Space::Shared | Space::Const | Space::Param)) => s,
        Some(s) => return err(cx.head, format!("cvta does not support {s}")),
        None => return err(cx.head, "cvta needs a state space"),
    };
    let ty = cx.one_type(&[Type::U32, Type::U64])?;
    cx.count(ops, 2)?;
    let d = cx.dst(&ops[0], ty)?;
    let a = match &ops[1].raw {
        Raw::Op(Operand::Var(v)) => Operand::Var(*v),
        _ => cx.src(&ops[1], ty)?,
    };
    Ok(Inst::Cvta {
        dir,
        space,
        ty,
        d,
        a,
    })
}

fn int_bin(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let (op, carry_in) = match cx.opcode {
        "addc" => (IntBinOp::Add, true),
        "subc" => (IntBinOp::Sub, true),
        o => (IntBinOp::from_ptx(o).expect("dispatched by opcode"), false),
    };
    let carry_out = cx.flag("cc");
    let sat = cx.flag("sat");
    let allowed: &[Type] = match op {
        IntBinOp::And | IntBinOp::Or | IntBinOp::Xor => &[Pred, B16, B32, B64],
        IntBinOp::Shl => BIT_TYPES,
        IntBinOp::Shr => &[B16, B32, B64, U16, U32, U64, S16, S32, S64],
        _ if carry_in || carry_out => CARRY_TYPES,
        _ => INT_TYPES,
    };
    let ty = cx.one_type(allowed)?;
    let arith = matches!(op, IntBinOp::Add | IntBinOp::Sub);
    cx.forbid(carry_out && !arith, "cc", "applies to add and sub only")?;
    cx.forbid(
        sat && !(arith && ty == S32),
        "sat",
        "applies to add.s32 and sub.s32 only",
    )?;
    cx.forbid(
        sat && (carry_in || carry_out),
        "sat",
        "cannot be combined with a carry",
    )?;
    cx.count(ops, 3)?;
    let bty = op.b_type(ty);
    Ok(Inst::IntBin {
        op,
        ty,
        sat,
        carry: Carry {
            carry_in,
            carry_out,
        },
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], bty)?,
    })
}

fn int_un(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let op = IntUnOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let allowed: &[Type] = match op {
        IntUnOp::Neg | IntUnOp::Abs => &[S16, S32, S64],
        IntUnOp::Not => &[Pred, B16, B32, B64],
        IntUnOp::Cnot => BIT_TYPES,
        IntUnOp::Popc | IntUnOp::Clz | IntUnOp::Brev => &[B32, B64],
    };
    let ty = cx.one_type(allowed)?;
    cx.count(ops, 2)?;
    let dty = op.result_type(ty);
    Ok(Inst::IntUn {
        op,
        ty,
        d: cx.dst(&ops[0], dty)?,
        a: cx.src(&ops[1], ty)?,
    })
}

fn mul_mode(cx: &mut Cx, ty: Type) -> R<MulMode> {
    let mode = cx.pick(MulMode::from_ptx)?;
    match mode {
        None => err(
            cx.head,
            format!("`{}` on integers needs .lo, .hi or .wide", cx.opcode),
        ),
        Some(MulMode::Wide) if ty.bits() == 64 => {
            err(cx.head, ".wide applies to 16- and 32-bit types only")
        }
        Some(m) => Ok(m),
    }
}

fn mul(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let ty = cx.one_type(INT_TYPES)?;
    let mode = mul_mode(cx, ty)?;
    cx.count(ops, 3)?;
    let dty = mode.result_type(ty);
    Ok(Inst::Mul {
        mode,
        ty,
        d: cx.dst(&ops[0], dty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
    })
}

fn mad(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let carry_in = cx.opcode == "madc";
    let carry_out = cx.flag("cc");
    let sat = cx.flag("sat");
    let ty = cx.one_type(if carry_in || carry_out {
        CARRY_TYPES
    } else {
        INT_TYPES
    })?;
    let mode = mul_mode(cx, ty)?;
    cx.forbid(
        sat && !(mode == MulMode::Hi && ty == Type::S32),
        "sat",
        "applies to mad.hi.s32 only",
    )?;
    cx.forbid(sat && carry_out, "sat", "cannot be combined with .cc")?;
    if (carry_in || carry_out) && mode == MulMode::Wide {
        return err(cx.head, "the carry forms of mad take .lo or .hi");
    }
    cx.count(ops, 4)?;
    let dty = mode.result_type(ty);
    Ok(Inst::Mad {
        mode,
        ty,
        sat,
        carry: Carry {
            carry_in,
            carry_out,
        },
        d: cx.dst(&ops[0], dty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], dty)?,
    })
}

fn float_ftz_sat(cx: &mut Cx, ty: Type, sat_ok: bool) -> R<(bool, bool)> {
    let ftz = cx.flag("ftz");
    let sat = sat_ok && cx.flag("sat");
    cx.forbid(ftz && ty == Type::F64, "ftz", "applies to .f32 only")?;
    cx.forbid(sat && ty == Type::F64, "sat", "applies to .f32 only")?;
    Ok((ftz, sat))
}

fn float_bin(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let op = FloatBinOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let ty = cx.one_type(FLOAT_TYPES)?;
    let rnd = cx.pick(Rounding::from_ptx)?;
    let approx = cx.flag("approx");
    let full = cx.flag("full");
    let minmax = matches!(op, FloatBinOp::Min | FloatBinOp::Max);
    let (ftz, sat) = float_ftz_sat(cx, ty, !minmax)?;
    let prec = match (op, rnd, approx, full) {
        (_, Some(r), false, false) if !minmax => Precision::Ieee(r),
        (FloatBinOp::Div, None, true, false) if ty == Type::F32 => Precision::Approx,
        (FloatBinOp::Div, None, false, true) if ty == Type::F32 => Precision::Full,
        (FloatBinOp::Div, None, false, false) => {
            return err(
                cx.head,
                "div on floats needs .approx, .full or a rounding modifier (.rn .rz .rm .rp)",
            );
        }
        (_, None, false, false) if minmax => Precision::Ieee(Rounding::Rn),
        // add/sub/mul without rounding: round to nearest, which PTX allows to be fused into
        // fma by ptxas; we never fuse, so the result is the .rn one.
        (_, None, false, false) => Precision::Ieee(Rounding::Rn),
        _ => {
            return err(
                cx.head,
                format!("invalid precision modifiers on `{}`", cx.opcode),
            );
        }
    };
    cx.count(ops, 3)?;
    Ok(Inst::FloatBin {
        op,
        ty,
        prec,
        ftz,
        sat,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
    })
}

fn float_un(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let op = FloatUnOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let ty = cx.one_type(FLOAT_TYPES)?;
    let rnd = cx.pick(Rounding::from_ptx)?;
    let approx = cx.flag("approx");
    let (ftz, _) = float_ftz_sat(cx, ty, false)?;
    let f64_approx_ok = matches!(op, FloatUnOp::Rcp | FloatUnOp::Rsqrt);
    let prec = match op {
        FloatUnOp::Neg | FloatUnOp::Abs => {
            if rnd.is_some() || approx {
                return err(cx.head, format!("`{}` takes no rounding", cx.opcode));
            }
            Precision::Ieee(Rounding::Rn)
        }
        FloatUnOp::Sqrt | FloatUnOp::Rcp => match (rnd, approx) {
            (Some(r), false) => Precision::Ieee(r),
            (None, true) if ty == Type::F32 || f64_approx_ok => Precision::Approx,
            _ => {
                return err(
                    cx.head,
                    format!("`{}` needs .approx (f32) or a rounding modifier", cx.opcode),
                );
            }
        },
        _ => match (rnd, approx) {
            (None, true) if ty == Type::F32 || f64_approx_ok => Precision::Approx,
            _ => {
                return err(
                    cx.head,
                    format!(
                        "`{}` needs .approx{}",
                        cx.opcode,
                        if f64_approx_ok { "" } else { " and .f32" }
                    ),
                );
            }
        },
    };
    if f64_approx_ok && ty == Type::F64 && prec == Precision::Approx && !ftz {
        return err(cx.head, format!("`{}.approx.f64` needs .ftz", cx.opcode));
    }
    cx.count(ops, 2)?;
    Ok(Inst::FloatUn {
        op,
        ty,
        prec,
        ftz,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
    })
}

/// `fma` and float `mad` (PTX ISA 9.7.3.6, 9.7.3.7).
fn fma(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let ty = cx.one_type(FLOAT_TYPES)?;
    let rnd = cx.pick(Rounding::from_ptx)?;
    let (mut ftz, sat) = float_ftz_sat(cx, ty, true)?;
    let version = cx.fb.module.version;
    let sm1x = cx.fb.module.sm_version().is_some_and(|v| v < 20);
    let rnd = match rnd {
        Some(r) => r,
        None if cx.opcode == "fma" => {
            return err(cx.head, "fma needs a rounding modifier (.rn .rz .rm .rp)");
        }
        // mad.f64 without rounding: .rn before PTX ISA 1.4, an error after.
        None if ty == Type::F64 && version < (1, 4) => Rounding::Rn,
        None if ty == Type::F64 => {
            return err(cx.head, "mad.f64 needs a rounding modifier (PTX ISA 1.4+)");
        }
        // mad.f32 without rounding on sm_1x targets is what sm_20+ hardware runs: fma.rn.ftz.
        None if sm1x => {
            ftz = true;
            Rounding::Rn
        }
        None if version <= (3, 1) => Rounding::Rn,
        None => {
            return err(
                cx.head,
                "mad.f32 needs a rounding modifier (PTX ISA 3.2+ on sm_20+)",
            );
        }
    };
    cx.count(ops, 4)?;
    Ok(Inst::Fma {
        ty,
        rnd,
        ftz,
        sat,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], ty)?,
    })
}

fn shf(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let dir = cx
        .pick(ShfDir::from_ptx)?
        .ok_or_else(|| Diagnostic::new(cx.head, "shf needs .l or .r"))?;
    let mode = cx
        .pick(ShfMode::from_ptx)?
        .ok_or_else(|| Diagnostic::new(cx.head, "shf needs .wrap or .clamp"))?;
    let ty = cx.one_type(&[Type::B32])?;
    cx.count(ops, 4)?;
    Ok(Inst::Shf {
        dir,
        mode,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], Type::U32)?,
    })
}

fn bitfield(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    if cx.opcode == "bfe" {
        let ty = cx.one_type(&[U32, U64, S32, S64])?;
        cx.count(ops, 4)?;
        Ok(Inst::Bfe {
            ty,
            d: cx.dst(&ops[0], ty)?,
            a: cx.src(&ops[1], ty)?,
            pos: cx.src(&ops[2], U32)?,
            len: cx.src(&ops[3], U32)?,
        })
    } else {
        let ty = cx.one_type(&[B32, B64])?;
        cx.count(ops, 5)?;
        Ok(Inst::Bfi {
            ty,
            d: cx.dst(&ops[0], ty)?,
            a: cx.src(&ops[1], ty)?,
            b: cx.src(&ops[2], ty)?,
            pos: cx.src(&ops[3], U32)?,
            len: cx.src(&ops[4], U32)?,
        })
    }
}

fn prmt(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let mode = cx.pick(PrmtMode::from_ptx)?;
    let ty = cx.one_type(&[Type::B32])?;
    cx.count(ops, 4)?;
    Ok(Inst::Prmt {
        mode,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], ty)?,
    })
}

fn setp(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let cmp = cx
        .pick(CmpOp::from_ptx)?
        .ok_or_else(|| Diagnostic::new(cx.head, "setp needs a comparison (.eq, .lt, ...)"))?;
    let combine = cx.pick(BoolOp::from_ptx)?;
    let ty = cx.one_type(&[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    let (ftz, _) = float_ftz_sat(cx, ty, false)?;
    cx.forbid(
        ftz && !ty.is_float(),
        "ftz",
        "applies to float comparisons only",
    )?;
    let ok = if ty.is_float() {
        cmp.is_float()
    } else if ty.kind() == TypeKind::Bits {
        matches!(cmp, CmpOp::Eq | CmpOp::Ne)
    } else {
        cmp.is_int()
    };
    if !ok {
        return err(cx.head, format!("comparison {cmp} does not apply to {ty}"));
    }
    let n = if combine.is_some() { 4 } else { 3 };
    cx.count(ops, n)?;
    let (p, q) = match &ops[0].raw {
        Raw::PredPair(p, q) => {
            for r in [p, q] {
                cx.reg_of(
                    &Opnd {
                        raw: Raw::Op(Operand::Reg(*r)),
                        span: ops[0].span,
                    },
                    Pred,
                    Fit::Exact,
                )?;
            }
            (Operand::Reg(*p), Operand::Reg(*q))
        }
        _ => (cx.dst(&ops[0], Pred)?, Operand::Sink),
    };
    Ok(Inst::Setp {
        cmp,
        combine,
        ftz,
        ty,
        p,
        q,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: if n == 4 {
            Some(cx.src(&ops[3], Pred)?)
        } else {
            None
        },
    })
}

fn selp(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ty = cx.one_type(&[B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    cx.count(ops, 4)?;
    Ok(Inst::Selp {
        ty,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], Pred)?,
    })
}

fn slct(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let ftz = cx.flag("ftz");
    let tys = cx.types();
    let [(ty, tspan), (cty, cspan)] = tys[..] else {
        return err(
            cx.head,
            "slct takes two types: slct.dtype.s32 or slct.dtype.f32",
        );
    };
    if !matches!(
        ty,
        B16 | B32 | B64 | U16 | U32 | U64 | S16 | S32 | S64 | F32 | F64
    ) {
        return err(tspan, format!("slct does not take type {ty}"));
    }
    if !matches!(cty, S32 | F32) {
        return err(cspan, "the comparison operand of slct is .s32 or .f32");
    }
    cx.forbid(
        ftz && cty != F32,
        "ftz",
        "applies to slct with an .f32 operand only",
    )?;
    cx.count(ops, 4)?;
    Ok(Inst::Slct {
        ty,
        cty,
        ftz,
        d: cx.dst(&ops[0], ty)?,
        a: cx.src(&ops[1], ty)?,
        b: cx.src(&ops[2], ty)?,
        c: cx.src(&ops[3], cty)?,
    })
}

/// `cvt` (PTX ISA 9.7.9.21): which rounding a conversion needs or allows.
fn cvt(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let frnd = cx.pick(Rounding::from_ptx)?;
    let irnd = cx.pick(IntRounding::from_ptx)?;
    let ftz = cx.flag("ftz");
    let sat = cx.flag("sat");
    let tys = cx.types();
    let [(dty, dspan), (aty, aspan)] = tys[..] else {
        return err(cx.head, "cvt takes two types: cvt.dtype.atype");
    };
    for (t, s) in [(dty, dspan), (aty, aspan)] {
        if matches!(t.kind(), TypeKind::Pred | TypeKind::Bits) || t == F16 {
            return err(s, format!("cvt does not support {t} here"));
        }
    }
    let rnd = match (frnd, irnd) {
        (Some(_), Some(_)) => return err(cx.head, "cvt takes one rounding modifier"),
        (Some(r), None) => Some(CvtRounding::Float(r)),
        (None, Some(r)) => Some(CvtRounding::Int(r)),
        (None, None) => None,
    };
    let (df, af) = (dty.is_float(), aty.is_float());
    match (af, df, rnd) {
        (false, false, Some(_)) => {
            return err(cx.head, "integer-to-integer cvt takes no rounding modifier");
        }
        (true, false, None) => {
            return err(
                cx.head,
                "float-to-integer cvt needs an integer rounding (.rni .rzi .rmi .rpi)",
            );
        }
        (true, false, Some(CvtRounding::Float(_))) => {
            return err(
                cx.head,
                "float-to-integer cvt takes an integer rounding (.rni .rzi .rmi .rpi)",
            );
        }
        (false, true, None) => {
            return err(
                cx.head,
                "integer-to-float cvt needs a rounding modifier (.rn .rz .rm .rp)",
            );
        }
        (false, true, Some(CvtRounding::Int(_))) => {
            return err(
                cx.head,
                "integer-to-float cvt takes a float rounding (.rn .rz .rm .rp)",
            );
        }
        (true, true, r) => {
            let narrowing = dty.bits() < aty.bits();
            let same = dty == aty;
            match r {
                None if narrowing => {
                    return err(cx.head, "narrowing float cvt needs a rounding modifier");
                }
                Some(CvtRounding::Float(_)) if !narrowing => {
                    return err(
                        cx.head,
                        "a float rounding applies to narrowing float cvt only",
                    );
                }
                Some(CvtRounding::Int(_)) if !same => {
                    return err(
                        cx.head,
                        "an integer rounding between floats needs the same type (e.g. cvt.rni.f32.f32)",
                    );
                }
                _ => {}
            }
        }
        _ => {}
    }
    cx.forbid(
        ftz && !(dty == F32 || aty == F32),
        "ftz",
        "applies when a side is .f32",
    )?;
    cx.count(ops, 2)?;
    Ok(Inst::Cvt {
        dty,
        aty,
        rnd,
        ftz,
        sat,
        d: cx.dst_fit(&ops[0], dty, Fit::Wider)?,
        a: cx.src_fit(&ops[1], aty, Fit::Wider)?,
    })
}

fn bra(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let uni = cx.flag("uni");
    cx.count(ops, 1)?;
    match ops[0].raw {
        Raw::Label(target) => Ok(Inst::Bra { uni, target }),
        _ => err(ops[0].span, "bra needs a label"),
    }
}

/// `call{.uni} (rets), func, (args)`: the argument and return lists must match the callee's
/// parameters in number and size.
fn call(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let uni = cx.flag("uni");
    let mut it = ops.iter().peekable();
    let rets = match it.peek() {
        Some(Opnd {
            raw: Raw::List(l), ..
        }) => {
            let l = l.clone();
            it.next();
            l
        }
        _ => Vec::new(),
    };
    let fop = it
        .next()
        .ok_or_else(|| Diagnostic::new(cx.head, "call needs a function"))?;
    let Raw::Func(func) = fop.raw else {
        return err(fop.span, "call needs a function name");
    };
    let args = match it.next() {
        Some(Opnd {
            raw: Raw::List(l), ..
        }) => l.clone(),
        Some(o) => return err(o.span, "call arguments go in parentheses"),
        None => Vec::new(),
    };
    if let Some(o) = it.next() {
        return err(o.span, "unexpected operand after the call's arguments");
    }
    let callee = cx.fb.module.func(func);
    if callee.kind == FuncKind::Entry {
        return err(fop.span, "a kernel (.entry) cannot be called");
    }
    let check = |list: &[Opnd], params: &[Param], what: &str| -> R<Vec<Operand>> {
        if list.len() != params.len() {
            return err(
                fop.span,
                format!(
                    "`{}` takes {} {what}, the call passes {}",
                    callee.name,
                    params.len(),
                    list.len()
                ),
            );
        }
        let mut out = Vec::new();
        for (o, p) in list.iter().zip(params) {
            let size = callee.param_size(p);
            match &o.raw {
                Raw::Op(Operand::Var(v @ VarId::Function(i))) => {
                    let var = cx.func.var(*i);
                    if var.space != Space::Param || var.size != size {
                        return err(
                            o.span,
                            format!(
                                "`{}` must be a .param of {size} bytes to match `{}`",
                                var.name,
                                callee.param_name(p)
                            ),
                        );
                    }
                    out.push(Operand::Var(*v));
                }
                _ => {
                    let ty = callee.param_type(p);
                    if size != ty.bytes() {
                        return err(
                            o.span,
                            format!(
                                "`{}` is an array; pass a .param variable",
                                callee.param_name(p)
                            ),
                        );
                    }
                    out.push(if what == "return values" {
                        cx.dst(o, ty)?
                    } else {
                        cx.src(o, ty)?
                    });
                }
            }
        }
        Ok(out)
    };
    let rets = check(&rets, &callee.rets, "return values")?;
    let args = check(&args, &callee.params, "arguments")?;
    Ok(Inst::Call {
        uni,
        func,
        rets,
        args,
    })
}
