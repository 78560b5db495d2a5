//! Data movement (PTX ISA 9.7.9): `mov` (vector packing and unpacking, special registers,
//! variable addresses), `ld` and `st` (memory order and scope, cache operators, vectors, the
//! state space of the variable they name) and `cvta`.

use super::{Cx, Fit, Opnd, R, Raw, err};
use crate::ast::*;

pub(super) fn mov(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    let vec = cx.pick(|m| match m {
        "v2" => Some(2usize),
        "v4" => Some(4),
        _ => None,
    })?;
    let ty = cx.one_type(&[Pred, B16, B32, B64, U16, U32, U64, S16, S32, S64, F32, F64])?;
    cx.count(ops, 2)?;
    let (d, a) = (&ops[0], &ops[1]);
    if let Some(n) = vec {
        return mov_vector(cx, n, ty, d, a);
    }
    // Packing and unpacking: mov.b64 {lo, hi}, %rd  /  mov.b64 %rd, {lo, hi} (or a whole
    // vector register in place of the braces).
    let vec_len = |o: &Opnd| cx.vector_parts(o).map(|v| v.len());
    if let (Some(_), Some(_)) = (vec_len(d), vec_len(a)) {
        return err(
            cx.head,
            "a move from vector to vector needs .v2 or .v4 (`mov.v2.u32`)",
        );
    }
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
            let bits = s.kind.bits();
            if !(ty.is_int() && ty.bits() == bits) {
                return err(
                    a.span,
                    format!(
                        "special register `%{}` is {bits}-bit; use mov.u{bits}",
                        s.kind.ptx()
                    ),
                );
            }
            Operand::Special(*s)
        }
        _ if let Some(addr) = cx.var_address(a) => {
            let (Operand::Var(v) | Operand::VarPlus(v, _)) = addr else {
                unreachable!("var_address gives a variable's address")
            };
            // A shared variable's address is an offset in the block's window: 32 bits hold it.
            let shared = cx.var_decl(v).space == Space::Shared;
            if !(ty.is_int() && (ty.bits() == 64 || (shared && ty.bits() == 32))) {
                return err(
                    a.span,
                    "taking a variable's address needs a 64-bit integer type (or 32-bit for .shared)",
                );
            }
            addr
        }
        _ => cx.src(a, ty)?,
    };
    Ok(Inst::Mov { ty, d, a })
}

/// `mov.v2.u32 d, a` / `mov.v4.f32 d, a`: each element of vector `a` (a vector register, or
/// `{…}` of registers and immediates) to the same element of `d` (a vector register, or `{…}`
/// of registers and sinks), all at once. ptxas's rules, which differ from a scalar `mov`'s:
/// every element as wide as the type; an integer type takes no float register, a float or
/// bit-size type any register; a `{…}` source holds no float beside a signed or unsigned
/// register; a destination is not all sinks.
///
/// The AST has scalar moves only: this becomes one `mov` per element, in order, after
/// copies of the sources that an earlier move would overwrite (`{%a, %b}, {%b, %a}`).
fn mov_vector(cx: &mut Cx, n: usize, ty: Type, d: &Opnd, a: &Opnd) -> R<Inst> {
    if ty == Type::Pred {
        return err(cx.head, "`mov.v2`/`.v4` does not take .pred");
    }
    if ty.bits() as usize * n > 128 {
        return err(cx.head, format!(".v{n} of {ty} is wider than 128 bits"));
    }
    let (Some(dp), Some(ap)) = (cx.vector_parts(d), cx.vector_parts(a)) else {
        let o = if cx.vector_parts(d).is_none() { d } else { a };
        return err(o.span, format!("`mov.v{n}` moves a vector to a vector"));
    };
    let fits = |r: RegId| {
        let rt = cx.reg_ty(r);
        rt.bits() == ty.bits()
            && rt != Type::Pred
            && !(matches!(ty.kind(), TypeKind::Unsigned | TypeKind::Signed) && rt.is_float())
    };
    for (o, parts, is_dst) in [(d, &dp, true), (a, &ap, false)] {
        if parts.len() != n {
            return err(
                o.span,
                format!("expected a vector of {n} elements, found {}", parts.len()),
            );
        }
        for p in parts.iter() {
            match p {
                Operand::Reg(r) if !fits(*r) => {
                    return err(
                        o.span,
                        format!(
                            "vector element `{}` has type {}, which does not fit {ty}",
                            cx.func.reg(*r).name,
                            cx.reg_ty(*r)
                        ),
                    );
                }
                Operand::Imm(_) if is_dst => {
                    return err(o.span, "an immediate cannot be a destination");
                }
                Operand::Imm(imm) => super::check_imm(*imm, ty).or_else(|m| err(o.span, m))?,
                Operand::Sink if !is_dst => return err(o.span, "`_` cannot be a source"),
                _ => {}
            }
        }
    }
    // ptxas: "Vector with elements of different types are not allowed in mov instruction"
    // for floats beside unsigned or signed integers (bit-size registers go with either).
    let kinds: Vec<TypeKind> = ap
        .iter()
        .filter_map(|p| match p {
            Operand::Reg(r) => Some(cx.reg_ty(*r).kind()),
            _ => None,
        })
        .collect();
    if kinds.contains(&TypeKind::Float)
        && kinds
            .iter()
            .any(|k| matches!(k, TypeKind::Unsigned | TypeKind::Signed))
    {
        return err(
            a.span,
            "a `mov` vector cannot hold both float and signed or unsigned registers",
        );
    }
    // ptxas: "Unable to infer type of vector elements".
    if dp.iter().all(|p| matches!(p, Operand::Sink)) {
        return err(
            d.span,
            "a `mov` vector needs a register among its destinations",
        );
    }
    // Element moves as bit-size moves of the element's width: the bits go unchanged.
    let bty = match ty.bits() {
        16 => Type::B16,
        32 => Type::B32,
        _ => Type::B64,
    };
    let writes = |p: &Operand, r: RegId| matches!(p, Operand::Reg(w) if *w == r);
    // A source that an earlier element's move overwrites is copied first.
    let mut src = ap.clone();
    for (j, s) in ap.iter().enumerate() {
        if let Operand::Reg(r) = s
            && dp[..j].iter().any(|p| writes(p, *r))
        {
            let tmp = cx.temp(bty, format!("{}.copy", cx.func.reg(*r).name));
            cx.pre.borrow_mut().push(Inst::Mov {
                ty: bty,
                d: Operand::Reg(tmp),
                a: Operand::Reg(*r),
            });
            src[j] = Operand::Reg(tmp);
        }
    }
    let mut moves: Vec<Inst> = dp
        .iter()
        .zip(src)
        .filter(|(d, _)| !matches!(d, Operand::Sink))
        .map(|(d, a)| Inst::Mov {
            // An immediate as the instruction types it (`1.0` in `mov.v2.f32` is an f32).
            ty: if matches!(a, Operand::Imm(_)) {
                ty
            } else {
                bty
            },
            d: d.clone(),
            a,
        })
        .collect();
    let last = moves.pop().expect("a destination that is not a sink");
    cx.pre.borrow_mut().extend(moves);
    Ok(last)
}

/// The L1 cache-eviction priorities of `ld` and `st` (PTX ISA, Data Movement and
/// Conversion Instructions: ld, `.level1::eviction_priority`; ptxas takes the L2 ones only
/// on 256-bit accesses, which are not supported).
const EVICTION_PRIORITIES: [&str; 5] = [
    "L1::evict_normal",
    "L1::evict_unchanged",
    "L1::evict_first",
    "L1::evict_last",
    "L1::no_allocate",
];

pub(super) fn ld_st(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    // `ldu` (load uniform) is a load from global memory: on a CPU every load is one.
    let is_ld = cx.opcode != "st";
    let order = cx.pick(MemOrder::from_ptx)?.unwrap_or(MemOrder::Weak);
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
    // Cache operators, .nc and the cache-eviction priorities change nothing on a CPU.
    for c in ["ca", "cg", "cs", "lu", "cv", "wb", "wt", "nc"] {
        cx.flag(c);
    }
    if EVICTION_PRIORITIES.iter().filter(|p| cx.flag(p)).count() > 1 {
        return err(cx.head, "at most one L1 eviction priority");
    }
    if is_ld {
        for c in ["L2::64B", "L2::128B", "L2::256B"] {
            cx.flag(c);
        }
    }
    // `.L2::cache_hint` takes a 64-bit cache policy as a last operand, which is checked and
    // dropped.
    let ops = if cx.flag("L2::cache_hint") {
        cx.count(ops, 3)?;
        cx.src(&ops[2], B64)?;
        &ops[..2]
    } else {
        ops
    };
    let space = cx.pick(super::space_modifier)?;
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
        Some(Space::Global) | None => {}
        _ if cx.opcode == "ldu" => return err(cx.head, "`ldu` reads global memory only"),
        _ => {}
    }
    if let Some(s @ (Space::Param | Space::Local | Space::Const)) = space
        && order != MemOrder::Weak
    {
        return err(cx.head, format!("`{order}` cannot be applied to {s} space"));
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
    // `{%r}`: a vector of one element is the element (Triton writes scalars so).
    let one = cx.single_element(val);
    let val = one.as_ref().unwrap_or(val);
    let val = if vec > 1 {
        cx.vector(val, vec as usize, ty, Fit::Memory, is_ld)?
    } else if is_ld {
        cx.dst_fit(val, ty, Fit::Memory)?
    } else {
        cx.src_fit(val, ty, Fit::Memory)?
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

pub(super) fn cvta(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let dir = if cx.flag("to") {
        CvtaDir::ToSpace
    } else {
        CvtaDir::ToGeneric
    };
    let space = match cx.pick(super::space_modifier)? {
        Some(s @ (Space::Global | Space::Local | Space::Shared | Space::Const | Space::Param)) => s,
        Some(s) => return err(cx.head, format!("cvta does not support {s}")),
        None => return err(cx.head, "cvta needs a state space"),
    };
    let ty = cx.one_type(&[Type::U32, Type::U64])?;
    cx.count(ops, 2)?;
    let d = cx.dst(&ops[0], ty)?;
    let a = match cx.var_address(&ops[1]) {
        Some(addr) => addr,
        None => cx.src(&ops[1], ty)?,
    };
    Ok(Inst::Cvta {
        dir,
        space,
        ty,
        d,
        a,
    })
}

/// `cp.async` (PTX ISA, Data Movement and Conversion Instructions: cp.async), an
/// asynchronous copy from global to shared memory, and its groups:
///
/// ```text
/// cp.async.ca.shared{::cta}.global{.L2::cache_hint}{.L2::size} [dst], [src], size{, src_size}{, policy};
/// cp.async.cg.shared{::cta}.global{.L2::cache_hint}{.L2::size} [dst], [src], 16{, src_size}{, policy};
/// cp.async.ca/.cg…  [dst], [src], size{, ignore_src}{, policy};
/// cp.async.commit_group;  cp.async.wait_group n;  cp.async.wait_all;
/// ```
///
/// The copy happens when the instruction runs (one of the orders the asynchronous copy
/// allows: its bytes are only defined for the program after the wait, and touching them
/// before is a race), so the group instructions have nothing left to do. The `src_size`
/// bytes of `src` are copied and the rest of the `size` bytes of `dst` zeroed (all zeroed
/// when `ignore_src` is true), each byte a load of its own under a guard so that bytes past
/// `src_size` are never read.
pub(super) fn cp_async(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    use Type::*;
    if !cx.flag("async") {
        return err(cx.head, "only `cp.async` is supported");
    }
    super::half::needs_sm(cx, 80, "cp.async")?;
    if cx.flag("commit_group") || cx.flag("wait_all") {
        cx.count(ops, 0)?;
        return Ok(Inst::Hint);
    }
    if cx.flag("wait_group") {
        cx.count(ops, 1)?;
        match &ops[0].raw {
            Raw::Op(Operand::Imm(Imm::Int(_))) => return Ok(Inst::Hint),
            _ => {
                return err(
                    ops[0].span,
                    "`cp.async.wait_group` takes an integer constant",
                );
            }
        }
    }
    let cg = cx.flag("cg");
    if cg == cx.flag("ca") {
        return err(cx.head, "`cp.async` takes one of .ca, .cg");
    }
    // The destination's space comes first: `.shared.global`.
    let at = |name: &str| cx.mods.iter().position(|(m, _)| *m == name);
    let dst_first = match (at("shared").or(at("shared::cta")), at("global")) {
        (Some(d), Some(g)) => d < g,
        _ => false,
    };
    if !(cx.flag("shared") | cx.flag("shared::cta")) || !cx.flag("global") || !dst_first {
        return err(
            cx.head,
            "`cp.async` copies .shared from .global (`.shared.global`)",
        );
    }
    for c in ["L2::64B", "L2::128B", "L2::256B"] {
        cx.flag(c);
    }
    let hint = cx.flag("L2::cache_hint");
    let ops = if hint {
        let Some((policy, rest)) = ops.split_last() else {
            return err(cx.head, "expected a cache policy operand");
        };
        cx.src(policy, B64)?;
        rest
    } else {
        ops
    };
    if !(3..=4).contains(&ops.len()) {
        return err(
            cx.head,
            format!("expected 3 or 4 operands, found {}", ops.len()),
        );
    }
    let (dst, src) = (cx.address(&ops[0])?, cx.address(&ops[1])?);
    let size = match &ops[2].raw {
        Raw::Op(Operand::Imm(Imm::Int(v @ (4 | 8 | 16)))) if !cg || *v == 16 => *v as i64,
        _ => {
            let sizes = if cg { "16" } else { "4, 8 or 16" };
            return err(ops[2].span, format!("the copy size is {sizes}"));
        }
    };
    // How many bytes come from `src`: all, a count, or none when `ignore_src` holds.
    enum Take {
        All,
        Count(Operand),
        Ignore(Operand),
    }
    let take = match ops.get(3) {
        None => Take::All,
        Some(o) if matches!(&o.raw, Raw::Op(Operand::Reg(r)) if cx.reg_ty(*r) == Pred) => {
            Take::Ignore(cx.src(o, Pred)?)
        }
        Some(o) => Take::Count(cx.src(o, U32)?),
    };
    let shared = Some(Space::Shared);
    let global = Some(Space::Global);
    let at = |a: Address, k: i64| Address {
        offset: a.offset + k,
        ..a
    };
    let mut code = Vec::new();
    if let Take::All = take {
        // A copy of `size` bytes in pieces of 4.
        let t = cx.temp(B32, "%cp.async".into());
        for k in (0..size).step_by(4) {
            code.push(Inst::Ld {
                space: global,
                order: MemOrder::Weak,
                vec: 1,
                ty: B32,
                d: Operand::Reg(t),
                addr: at(src, k),
            });
            code.push(Inst::St {
                space: shared,
                order: MemOrder::Weak,
                vec: 1,
                ty: B32,
                addr: at(dst, k),
                a: Operand::Reg(t),
            });
        }
    } else {
        let byte = cx.temp(B16, "%cp.async".into());
        let take_it = cx.temp(Pred, "%cp.async.p".into());
        let outer = cx.guard;
        let pre = |code: &mut Vec<Inst>, inst, guard| {
            cx.pre.borrow_mut().append(code);
            cx.pre_guarded(inst, guard);
        };
        for k in 0..size {
            // Whether byte k comes from `src` (k < src_size, or src not ignored), computed
            // whatever the instruction's guard, and false where that guard is.
            let take = match &take {
                Take::Count(n) => Inst::Setp {
                    cmp: CmpOp::Gt,
                    combine: None,
                    ftz: false,
                    ty: U32,
                    p: Operand::Reg(take_it),
                    q: Operand::Sink,
                    a: n.clone(),
                    b: Operand::Imm(Imm::Int(k as i128)),
                    c: None,
                },
                Take::Ignore(ignore) => Inst::Setp {
                    cmp: CmpOp::Eq,
                    combine: Some(BoolOp::And),
                    ftz: false,
                    ty: U32,
                    p: Operand::Reg(take_it),
                    q: Operand::Sink,
                    a: Operand::Imm(Imm::Int(0)),
                    b: Operand::Imm(Imm::Int(0)),
                    c: Some(match ignore {
                        Operand::Reg(r) => Operand::NotPred(*r),
                        other => other.clone(),
                    }),
                },
                Take::All => unreachable!("handled above"),
            };
            pre(&mut code, take, None);
            if let Some(g) = outer {
                let off = Guard {
                    negated: !g.negated,
                    ..g
                };
                let no = Inst::Mov {
                    ty: Pred,
                    d: Operand::Reg(take_it),
                    a: Operand::Imm(Imm::Int(0)),
                };
                pre(&mut code, no, Some(off));
            }
            code.push(Inst::Mov {
                ty: B16,
                d: Operand::Reg(byte),
                a: Operand::Imm(Imm::Int(0)),
            });
            let load = Inst::Ld {
                space: global,
                order: MemOrder::Weak,
                vec: 1,
                ty: U8,
                d: Operand::Reg(byte),
                addr: at(src, k),
            };
            let taken = Guard {
                reg: take_it,
                negated: false,
            };
            pre(&mut code, load, Some(taken));
            code.push(Inst::St {
                space: shared,
                order: MemOrder::Weak,
                vec: 1,
                ty: B8,
                addr: at(dst, k),
                a: Operand::Reg(byte),
            });
        }
    }
    let last = code.pop().expect("a copy has instructions");
    cx.pre.borrow_mut().extend(code);
    Ok(last)
}
