//! The scalar video instructions (PTX ISA 9.7.18.1): `vadd vsub vabsdiff vmin vmax vshl vshr
//! vset vmad`, their three operand shapes (plain, secondary operation, data merge), source and
//! destination selectors, and `vmad`'s negations; and the SIMD video instructions (9.7.18.2):
//! `vadd2 … vmax2`, `vset2` on half-words and `vadd4 … vmax4`, `vset4` on bytes, with their
//! destination masks, lane selectors and `.add`.

use super::{Cx, Opnd, R, Raw, err};
use crate::ast::*;

const VIDEO_TYPES: &[Type] = &[Type::U32, Type::S32];

/// The `n` leading type modifiers, each `.u32` or `.s32`.
fn video_types<const N: usize>(cx: &mut Cx, what: &str) -> R<[Type; N]> {
    let tys = cx.types();
    if tys.len() != N {
        let span = tys.get(N).map_or(cx.head, |(_, s)| *s);
        return err(span, format!("`{}` takes {what}", cx.opcode));
    }
    for (t, span) in &tys {
        if !VIDEO_TYPES.contains(t) {
            return err(
                *span,
                format!("`{}` takes .u32 or .s32, not {t}", cx.opcode),
            );
        }
    }
    Ok(std::array::from_fn(|k| tys[k].0))
}

/// A 32-bit register operand, with its selector if it has one, or an immediate (its low 32
/// bits, as ptxas takes it).
fn source(cx: &Cx, o: &Opnd) -> R<VideoSrc> {
    let (reg, sel) = match &o.raw {
        Raw::Op(Operand::Imm(imm)) => {
            super::check_imm(*imm, Type::B32).or_else(|m| err(o.span, m))?;
            return Ok(VideoSrc {
                value: VideoValue::Imm(imm.bits_for(Type::B32) as u32),
                sel: None,
            });
        }
        Raw::Op(Operand::Reg(r)) => (*r, None),
        Raw::Op(Operand::RegSel(r, s)) => (*r, Some(*s)),
        Raw::Op(Operand::RegLanes(_, l)) => {
            return err(
                o.span,
                format!(
                    "`{l}` is not a selector of `{}` (.b0 .b1 .b2 .b3 .h0 .h1)",
                    cx.opcode
                ),
            );
        }
        _ => {
            return err(
                o.span,
                "expected a 32-bit register (with an optional selector)",
            );
        }
    };
    let plain = Opnd {
        raw: Raw::Op(Operand::Reg(reg)),
        span: o.span,
    };
    cx.reg_of(&plain, Type::U32, super::Fit::Exact)?;
    Ok(VideoSrc {
        value: VideoValue::Reg(reg),
        sel,
    })
}

/// The destination register of a video instruction.
fn dest(o: &Opnd, d: VideoSrc) -> R<RegId> {
    match d.value {
        VideoValue::Reg(r) => Ok(r),
        VideoValue::Imm(_) => err(o.span, "the destination must be a register"),
    }
}

/// A source that may be negated (`vmad`): the source and whether it is.
fn maybe_negated(cx: &Cx, o: &Opnd) -> R<(VideoSrc, bool)> {
    match &o.raw {
        Raw::Op(Operand::NegReg(r, sel)) => {
            let plain = Opnd {
                raw: Raw::Op(match sel {
                    Some(s) => Operand::RegSel(*r, *s),
                    None => Operand::Reg(*r),
                }),
                span: o.span,
            };
            Ok((source(cx, &plain)?, true))
        }
        _ => Ok((source(cx, o)?, false)),
    }
}

/// The destination and what follows the primary operation: `d, a, b`; `d, a, b, c` with a
/// secondary operation; or `d.dsel, a, b, c`.
fn shape(cx: &mut Cx, ops: &[Opnd]) -> R<(RegId, VideoTail)> {
    let secop = cx.pick(VideoSecOp::from_ptx)?;
    if !(ops.len() == 3 || ops.len() == 4) {
        let span = ops.get(4).map_or(cx.head, |o| o.span);
        return err(
            span,
            format!("`{}` takes 3 or 4 operands, found {}", cx.opcode, ops.len()),
        );
    }
    let d_src = source(cx, &ops[0])?;
    let d = dest(&ops[0], d_src)?;
    match (ops.len(), secop, d_src.sel) {
        (3, None, None) => Ok((d, VideoTail::None)),
        (3, Some(op), _) => err(
            cx.head,
            format!("`.{}` needs a third source operand c", op.ptx()),
        ),
        (3, None, Some(_)) => err(
            ops[0].span,
            "a destination selector merges into c: give a fourth operand",
        ),
        (_, Some(_), Some(_)) => err(
            ops[0].span,
            "a secondary operation and a destination selector cannot be combined",
        ),
        (_, Some(op), None) => Ok((d, VideoTail::Secondary(op, plain_c(cx, &ops[3])?))),
        (_, None, Some(sel)) => Ok((d, VideoTail::Merge(sel, plain_c(cx, &ops[3])?))),
        (_, None, None) => err(
            ops[3].span,
            "a fourth operand needs `.add`/`.min`/`.max` or a destination selector",
        ),
    }
}

fn plain_c(cx: &Cx, o: &Opnd) -> R<VideoValue> {
    let c = source(cx, o)?;
    if c.sel.is_some() {
        return err(o.span, "c takes no selector");
    }
    Ok(c.value)
}

/// `vadd vsub vabsdiff vmin vmax vshl vshr` (9.7.18.1.1–2).
pub(super) fn video(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let op = VideoOp::from_ptx(cx.opcode).expect("dispatched by opcode");
    let shift = matches!(op, VideoOp::Vshl | VideoOp::Vshr);
    let [dty, aty, bty] = video_types::<3>(cx, "three types (.dtype.atype.btype)")?;
    let sat = cx.flag("sat");
    let mode = if shift {
        if bty != Type::U32 {
            return err(
                cx.head,
                format!("the shift amount of `{}` is .u32", cx.opcode),
            );
        }
        Some(
            cx.pick(ShfMode::from_ptx)?
                .ok_or_else(|| super::Diagnostic::new(cx.head, "shifts need .clamp or .wrap"))?,
        )
    } else {
        None
    };
    let (d, tail) = shape(cx, ops)?;
    Ok(Inst::Video {
        form: VideoForm {
            op,
            dty,
            aty,
            bty,
            sat,
            mode,
            tail,
        },
        d,
        a: source(cx, &ops[1])?,
        b: source(cx, &ops[2])?,
    })
}

/// `vset` (9.7.18.1.4).
pub(super) fn vset(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let [aty, bty] = video_types::<2>(cx, "two types (.atype.btype)")?;
    let cmp = cx
        .pick(CmpOp::from_ptx)?
        .ok_or_else(|| super::Diagnostic::new(cx.head, "vset needs a comparison"))?;
    use CmpOp::*;
    if !matches!(cmp, Eq | Ne | Lt | Le | Gt | Ge) {
        return err(
            cx.head,
            format!("vset compares with .eq .ne .lt .le .gt .ge, not {cmp}"),
        );
    }
    let (d, tail) = shape(cx, ops)?;
    Ok(Inst::Vset {
        aty,
        bty,
        cmp,
        tail,
        d,
        a: source(cx, &ops[1])?,
        b: source(cx, &ops[2])?,
    })
}

/// `vmad` (9.7.18.1.3).
pub(super) fn vmad(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let [dty, aty, bty] = video_types::<3>(cx, "three types (.dtype.atype.btype)")?;
    let po = cx.flag("po");
    let sat = cx.flag("sat");
    let scale = cx.pick(VmadScale::from_ptx)?;
    cx.count(ops, 4)?;
    let d = source(cx, &ops[0])?;
    if d.sel.is_some() {
        return err(ops[0].span, "vmad's destination takes no selector");
    }
    let (a, neg_a) = maybe_negated(cx, &ops[1])?;
    let (b, neg_b) = maybe_negated(cx, &ops[2])?;
    let (c, neg_c) = maybe_negated(cx, &ops[3])?;
    if c.sel.is_some() {
        return err(ops[3].span, "c takes no selector");
    }
    let negated = [(neg_a, 1), (neg_b, 2), (neg_c, 3)];
    if po && let Some((_, k)) = negated.iter().find(|(n, _)| *n) {
        return err(ops[*k].span, "operands of vmad.po cannot be negated");
    }
    let neg_product = neg_a ^ neg_b;
    if neg_product && neg_c {
        return err(
            ops[3].span,
            "vmad negates either the product or c, not both",
        );
    }
    Ok(Inst::Vmad {
        form: VmadForm {
            dty,
            aty,
            bty,
            po,
            sat,
            scale,
            neg_product,
            neg_c,
        },
        d: dest(&ops[0], d)?,
        a,
        b,
        c: c.value,
    })
}

/// A 32-bit register with the lane spec written after it, if any.
fn simd_operand(cx: &Cx, o: &Opnd, k: usize) -> R<(RegId, Option<LaneSpec>)> {
    let (reg, spec) = match &o.raw {
        Raw::Op(Operand::Reg(r)) => (*r, None),
        Raw::Op(Operand::RegSel(r, s)) => (*r, Some(LaneSpec::from_selector(*s))),
        Raw::Op(Operand::RegLanes(r, l)) => (*r, Some(*l)),
        _ => {
            let what = if k == 3 {
                "a 32-bit register"
            } else {
                "a 32-bit register (with an optional lane selector)"
            };
            return err(o.span, format!("expected {what}"));
        }
    };
    let plain = Opnd {
        raw: Raw::Op(Operand::Reg(reg)),
        span: o.span,
    };
    cx.reg_of(&plain, Type::U32, super::Fit::Exact)?;
    Ok((reg, spec))
}

/// The lane count of a SIMD opcode (`vadd2`: 2) and its name without it.
fn simd_lanes(opcode: &str) -> (u8, &str) {
    match opcode.split_at(opcode.len() - 1) {
        (base, "2") => (2, base),
        (base, _) => (4, base),
    }
}

/// The destination mask: `.h0 .h1 .h10` for half-word lanes; for byte lanes `.b` and a
/// strictly descending run of lanes 3–0 (`.b3210`, `.b31`, `.b0`). Bit i: lane i.
fn simd_mask(lanes: u8, spec: Option<LaneSpec>, span: Span, opcode: &str) -> R<u8> {
    let Some(spec) = spec else {
        return Ok((1 << lanes) - 1);
    };
    let digits = spec.digits();
    let halves = lanes == 2;
    let valid = spec.halves == halves
        && digits.iter().all(|&x| x < lanes)
        && digits.windows(2).all(|w| w[0] > w[1]);
    if !valid {
        let hint = if halves {
            ".h0, .h1 or .h10"
        } else {
            ".b and lanes 3 to 0 in descending order (.b3210, .b31, .b0, ...)"
        };
        return err(
            span,
            format!("`{spec}` is not a destination mask of `{opcode}`: give {hint}"),
        );
    }
    Ok(digits.iter().fold(0, |m, &x| m | 1 << x))
}

/// A source selector: `.hxy` (x, y in 0–3) for half-word lanes, `.bxyzw` (0–7) for byte
/// lanes, the highest lane's first; as the part of `{b, a}` each lane takes (lane 0 first).
fn simd_sel(
    lanes: u8,
    spec: Option<LaneSpec>,
    default: [u8; 4],
    span: Span,
    opcode: &str,
) -> R<[u8; 4]> {
    let Some(spec) = spec else {
        return Ok(default);
    };
    let digits = spec.digits();
    let halves = lanes == 2;
    if spec.halves != halves
        || digits.len() != lanes as usize
        || digits.iter().any(|&x| x >= 2 * lanes)
    {
        let hint = if halves {
            ".hxy with x, y from 0 to 3 (.h10, .h32, ...)"
        } else {
            ".bxyzw with x, y, z, w from 0 to 7 (.b3210, .b7654, ...)"
        };
        return err(
            span,
            format!("`{spec}` is not a source selector of `{opcode}`: give {hint}"),
        );
    }
    let mut parts = [0; 4];
    for (i, &x) in digits.iter().rev().enumerate() {
        parts[i] = x;
    }
    Ok(parts)
}

/// `vadd2 vsub2 vavrg2 vabsdiff2 vmin2 vmax2 vset2` and their byte forms `…4` (9.7.18.2).
pub(super) fn simd(cx: &mut Cx, ops: &[Opnd]) -> R<Inst> {
    let opcode = cx.opcode;
    let (lanes, base) = simd_lanes(opcode);
    let (kind, aty, bty) = if base == "vset" {
        let [aty, bty] = video_types::<2>(cx, "two types (.atype.btype)")?;
        let cmp = cx.pick(CmpOp::from_ptx)?.ok_or_else(|| {
            super::Diagnostic::new(cx.head, format!("{opcode} needs a comparison"))
        })?;
        use CmpOp::*;
        if !matches!(cmp, Eq | Ne | Lt | Le | Gt | Ge) {
            return err(
                cx.head,
                format!("{opcode} compares with .eq .ne .lt .le .gt .ge, not {cmp}"),
            );
        }
        (SimdKind::Set(cmp), aty, bty)
    } else {
        let op = SimdOp::from_ptx(base).expect("dispatched by opcode");
        let [dty, aty, bty] = video_types::<3>(cx, "three types (.dtype.atype.btype)")?;
        let sat = cx.flag("sat");
        (SimdKind::Arith { op, dty, sat }, aty, bty)
    };
    let add = match cx.pick(VideoSecOp::from_ptx)? {
        None => false,
        Some(VideoSecOp::Add) => true,
        Some(op) => {
            return err(
                cx.head,
                format!(
                    "`{opcode}` takes `.add` as its only secondary operation, not `.{}`",
                    op.ptx()
                ),
            );
        }
    };
    if add && matches!(kind, SimdKind::Arith { sat: true, .. }) {
        cx.forbid(true, "sat", "cannot be combined with `.add`")?;
    }
    cx.count(ops, 4)?;
    let specs: Vec<(RegId, Option<LaneSpec>)> = ops
        .iter()
        .enumerate()
        .map(|(k, o)| simd_operand(cx, o, k))
        .collect::<R<_>>()?;
    if specs[3].1.is_some() {
        return err(ops[3].span, "c takes no selector");
    }
    let (default_a, default_b) = if lanes == 2 {
        ([0, 1, 0, 0], [2, 3, 0, 0])
    } else {
        ([0, 1, 2, 3], [4, 5, 6, 7])
    };
    Ok(Inst::VideoSimd {
        form: SimdForm {
            kind,
            lanes,
            aty,
            bty,
            asel: simd_sel(lanes, specs[1].1, default_a, ops[1].span, opcode)?,
            bsel: simd_sel(lanes, specs[2].1, default_b, ops[2].span, opcode)?,
            mask: simd_mask(lanes, specs[0].1, ops[0].span, opcode)?,
            add,
        },
        d: specs[0].0,
        a: specs[1].0,
        b: specs[2].0,
        c: specs[3].0,
    })
}
