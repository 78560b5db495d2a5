//! The interpreter's compact form of a function body, built once per function before any
//! thread runs it: a pre-pass over the AST, not semantics.
//!
//! A frame's register file is a flat array of slots: the function's registers first (slot =
//! register id), a sink for `_`, then in order of first use one slot per distinct constant
//! the body reads (immediates converted to the type they are read at, address offsets) and
//! per special register and variable address it reads (filled when a frame starts). Every
//! scalar operand becomes a slot index with the width it is read or written at, and each
//! instruction an [`Op`] of 64 bytes: its opcode and the modifiers its handler needs
//! ([`Kind`]) beside its operands. The AST's instructions are 200 bytes and more; a loop over
//! big unrolled bodies (a 32-limb product is 3,400 instructions) ran out of the caches on
//! them.
//!
//! The read and write types below are those of the instruction descriptions (PTX ISA 9.7):
//! sources at the instruction type unless the manual gives the operand its own (shift amounts
//! and bit positions `.u32`, `mad.wide`'s addend at the doubled type, predicates).

use crate::ast::*;
use std::collections::HashMap;

/// `MASKS[s] = u64::MAX >> s`, looked up rather than shifted: a variable shift needs its
/// count in `cl` and a register of ones, three instructions on the hottest path; a load
/// from this table (one cache line for the shifts in use, indexed by a `u8`, so no bounds
/// check) is one. Shifts past 63 are never made.
static MASKS: [u64; 256] = {
    let mut m = [0u64; 256];
    let mut s = 0;
    while s < 64 {
        m[s] = u64::MAX >> s;
        s += 1;
    }
    m
};

/// A source: the slot holding it, the width it is read at, and whether it is a negated
/// predicate (`!%p`, read as bit 0 flipped).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Src {
    slot: u32,
    /// The read mask is `u64::MAX >> shift`.
    shift: u8,
    flip: u8,
}

impl Src {
    pub fn slot(self) -> u32 {
        self.slot
    }
    #[inline(always)]
    pub fn read(self, slots: &[u64]) -> u64 {
        (slots[self.slot as usize] ^ self.flip as u64) & MASKS[self.shift as usize]
    }
    /// Whether a guard holds. An unguarded instruction's guard is the constant 1 marked
    /// [`UNGUARDED`], answered without reading the register file (most instructions are
    /// unguarded, and this test runs before every one).
    #[inline(always)]
    pub fn holds(self, slots: &[u64]) -> bool {
        self.flip == UNGUARDED || self.read(slots) != 0
    }
}

/// The `flip` of an unguarded instruction's guard (bit 1: a predicate reads bit 0 only, so
/// reading it as a source still gives 1).
const UNGUARDED: u8 = 2;

/// A destination register written at an instruction type: a register wider than that type
/// receives the value sign-extended for signed types, zero-extended otherwise (as `ld` and
/// `cvt` into wider registers do), and only the register's own bits are kept.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dst {
    slot: u32,
    /// The kept bits are `u64::MAX >> shift`.
    shift: u8,
    /// The instruction type's width when the value is sign-extended; 0 when it is not.
    sext_from: u8,
}

impl Dst {
    /// Register `r`, of type `rty`, written at the instruction type `ty`.
    pub fn new(r: RegId, rty: Type, ty: Type) -> Dst {
        let sext = rty.bits() > ty.bits() && ty.is_signed();
        Dst {
            slot: r.0,
            shift: if sext {
                shift(rty)
            } else {
                shift(ty).max(shift(rty))
            },
            sext_from: if sext { ty.bits() as u8 } else { 0 },
        }
    }
    #[inline(always)]
    pub fn write(self, slots: &mut [u64], v: u64) {
        let v = if self.sext_from != 0 {
            super::int::sext(v, self.sext_from as u32) as u64
        } else {
            v
        };
        slots[self.slot as usize] = v & MASKS[self.shift as usize];
    }
}

/// What an instruction does: its opcode and the modifiers its handler needs, copied out of
/// the AST ([`Inst`] has the meaning of each).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    /// `mov` and `cvta` of scalars (`cvta` is the identity: see memory.rs).
    Mov,
    /// Scalar `ld`: the address is `src[0] + src[1]`.
    Ld {
        space: Option<Space>,
        ty: Type,
    },
    /// `atom`/`red` at `src[0] + src[1]` with operands `src[2]` (b) and `src[3]` (c).
    Atom {
        op: AtomOp,
        space: Option<Space>,
        ty: Type,
    },
    /// Scalar `st` of `src[2]` at `src[0] + src[1]`.
    St {
        space: Option<Space>,
        ty: Type,
    },
    IntBin {
        op: IntBinOp,
        ty: Type,
        sat: bool,
        carry: Carry,
    },
    IntUn {
        op: IntUnOp,
        ty: Type,
    },
    Mul {
        mode: MulMode,
        ty: Type,
    },
    Mad {
        mode: MulMode,
        ty: Type,
        sat: bool,
        carry: Carry,
    },
    Shf {
        dir: ShfDir,
        mode: ShfMode,
    },
    Bfe {
        ty: Type,
    },
    Bfi {
        ty: Type,
    },
    Prmt {
        mode: Option<PrmtMode>,
    },
    Setp {
        cmp: CmpOp,
        combine: Option<BoolOp>,
        ftz: bool,
        ty: Type,
    },
    Selp,
    Slct {
        cty: Type,
        ftz: bool,
    },
    Cvt {
        dty: Type,
        aty: Type,
        rnd: Option<CvtRounding>,
        ftz: bool,
        sat: bool,
    },
    FloatBin {
        op: FloatBinOp,
        ty: Type,
        prec: Precision,
        ftz: bool,
        sat: bool,
    },
    FloatUn {
        op: FloatUnOp,
        ty: Type,
        prec: Precision,
        ftz: bool,
    },
    Fma {
        ty: Type,
        rnd: Rounding,
        ftz: bool,
        sat: bool,
    },
    /// `cvta.shared` (`to_generic`) and `cvta.to.shared`: between a block's shared window
    /// and host addresses (the other spaces' `cvta` is [`Kind::Mov`]).
    CvtaShared {
        to_generic: bool,
    },
    /// `isspacep.space`: whether `src[0]` is an address in `space`.
    Isspacep {
        space: Space,
    },
    /// A barrier or warp collective: the thread stops with its sources `src` (in the order of
    /// [`SyncOp::src_types`]) and later receives `d` and `p`.
    Sync {
        op: SyncOp,
    },
    /// A pure computation ([`ComputeOp`]): writes `d` and `p`.
    Compute {
        op: ComputeOp,
    },
    /// `nanosleep`, `prefetch`, `prefetchu`: no effect.
    Hint,
    /// `bra` to the instruction index `target`.
    Bra {
        target: u32,
    },
    /// `fence`/`membar`.
    Fence,
    Ret,
    Exit,
    /// Executed from the AST instruction: moves, loads and stores of vectors (their scalar
    /// side and address are decoded as for the scalar forms), video instructions, calls.
    Ast,
}

/// One decoded instruction: sources in the order the instruction is written, destinations
/// `d` (and `q` of `setp`). Unused positions read 0 and write to the sink.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    pub kind: Kind,
    /// Reads 1 when the instruction executes: the guard predicate (flipped for `@!%p`), or
    /// the constant 1.
    pub guard: Src,
    pub src: [Src; 4],
    pub dst: [Dst; 2],
}

/// A slot a frame fills when it starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fill {
    /// A special register (its readers mask it to the type they read it at).
    Special(SpecialReg),
    /// A variable's address.
    Var(VarId),
}

/// A function body's decoded instructions and the register file its frames start from.
pub struct Decoded {
    /// Per instruction, in body order (instruction i of the AST is `ops[i]`).
    pub ops: Vec<Op>,
    /// The initial register file: registers 0, constants, unfilled slots 0.
    pub slots: Vec<u64>,
    pub fills: Vec<(u32, Fill)>,
}

/// Builds the slot layout while operands are decoded.
struct Layout<'f> {
    module: &'f Module,
    func: &'f Function,
    slots: Vec<u64>,
    fills: Vec<(u32, Fill)>,
    constants: HashMap<u64, u32>,
    filled: HashMap<Fill, u32>,
    zero: Src,
    sink: Dst,
}

impl<'f> Layout<'f> {
    fn new(module: &'f Module, func: &'f Function) -> Self {
        let mut slots = vec![0; func.regs.len()];
        let sink = slots.len() as u32;
        slots.push(0);
        let mut l = Layout {
            module,
            func,
            slots,
            fills: Vec::new(),
            constants: HashMap::new(),
            filled: HashMap::new(),
            zero: Src {
                slot: 0,
                shift: 0,
                flip: 0,
            },
            sink: Dst {
                slot: sink,
                shift: 0,
                sext_from: 0,
            },
        };
        l.zero = l.constant(0);
        l
    }

    fn constant(&mut self, v: u64) -> Src {
        let slots = &mut self.slots;
        let slot = *self.constants.entry(v).or_insert_with(|| {
            slots.push(v);
            slots.len() as u32 - 1
        });
        Src {
            slot,
            shift: 0,
            flip: 0,
        }
    }

    fn fill(&mut self, fill: Fill, ty: Type) -> Src {
        let slots = &mut self.slots;
        let fills = &mut self.fills;
        let slot = *self.filled.entry(fill).or_insert_with(|| {
            slots.push(0);
            let slot = slots.len() as u32 - 1;
            fills.push((slot, fill));
            slot
        });
        Src {
            slot,
            shift: shift(ty),
            flip: 0,
        }
    }

    fn reg(&self, r: RegId, ty: Type) -> Src {
        Src {
            slot: r.0,
            shift: shift(ty),
            flip: 0,
        }
    }

    /// A scalar source read at `ty`; operands that are not scalars (vectors, video
    /// selectors) read 0 here: their instructions take them from the AST.
    fn src(&mut self, op: &Operand, ty: Type) -> Src {
        match op {
            Operand::Reg(r) => self.reg(*r, ty),
            Operand::NotPred(r) => Src {
                flip: 1,
                ..self.reg(*r, Type::Pred)
            },
            Operand::Imm(i) => self.constant(i.bits_for(ty)),
            Operand::Special(s) => self.fill(Fill::Special(*s), ty),
            Operand::Var(v) => self.var(*v),
            _ => self.zero,
        }
    }

    fn var(&mut self, v: VarId) -> Src {
        self.fill(Fill::Var(v), Type::B64)
    }

    /// An address as base and offset, both read as 64-bit values.
    fn address(&mut self, a: &Address) -> (Src, Src) {
        let base = match a.base {
            AddrBase::Reg(r) => self.reg(r, Type::B64),
            AddrBase::Var(v) => self.var(v),
            AddrBase::None => self.zero,
        };
        (base, self.constant(a.offset as u64))
    }

    fn access_space(&self, space: Option<Space>, a: &Address) -> Option<Space> {
        access_space(self.module, self.func, space, a)
    }

    /// A destination written at `ty` (the sink for `_` and non-scalar operands).
    fn dst(&self, op: &Operand, ty: Type) -> Dst {
        match op {
            Operand::Reg(r) => Dst::new(*r, self.func.reg(*r).ty, ty),
            _ => self.sink,
        }
    }

    fn op(&mut self, ins: &Instruction) -> Op {
        use Inst::*;
        use Type::{B32, Pred, U32};
        let guard = match ins.guard {
            Some(g) => Src {
                flip: g.negated as u8,
                ..self.reg(g.reg, Pred)
            },
            None => Src {
                flip: UNGUARDED,
                ..self.constant(1)
            },
        };
        let z = self.zero;
        let none = self.sink;
        let is_vector = |o: &Operand| matches!(o, Operand::Vector(_));
        let (kind, src, dst) = match &ins.inst {
            Cvta {
                dir,
                space: Space::Shared,
                ty,
                d,
                a,
            } => (
                Kind::CvtaShared {
                    to_generic: *dir == CvtaDir::ToGeneric,
                },
                [self.src(a, *ty), z, z, z],
                [self.dst(d, *ty), none],
            ),
            Mov { ty, d, a } | Cvta { ty, d, a, .. } => {
                let kind = if is_vector(d) || is_vector(a) {
                    Kind::Ast
                } else {
                    Kind::Mov
                };
                (kind, [self.src(a, *ty), z, z, z], [self.dst(d, *ty), none])
            }
            Ld {
                space,
                ty,
                d,
                addr,
                order,
                ..
            } => {
                let kind = if is_vector(d) || order.is_strong() {
                    Kind::Ast
                } else {
                    Kind::Ld {
                        space: self.access_space(*space, addr),
                        ty: *ty,
                    }
                };
                let (base, offset) = self.address(addr);
                (kind, [base, offset, z, z], [self.dst(d, *ty), none])
            }
            Atom {
                op,
                space,
                ty,
                d,
                addr,
                b,
                c,
            } => {
                let kind = Kind::Atom {
                    op: *op,
                    space: self.access_space(*space, addr),
                    ty: *ty,
                };
                let (base, offset) = self.address(addr);
                let c = c.as_ref().map_or(z, |c| self.src(c, *ty));
                (
                    kind,
                    [base, offset, self.src(b, *ty), c],
                    [self.dst(d, *ty), none],
                )
            }
            St {
                space,
                ty,
                addr,
                a,
                order,
                ..
            } => {
                let kind = if is_vector(a) || order.is_strong() {
                    Kind::Ast
                } else {
                    Kind::St {
                        space: self.access_space(*space, addr),
                        ty: *ty,
                    }
                };
                let (base, offset) = self.address(addr);
                (kind, [base, offset, self.src(a, *ty), z], [none; 2])
            }
            IntBin {
                op,
                ty,
                sat,
                carry,
                d,
                a,
                b,
            } => {
                let bty = op.b_type(*ty);
                let kind = Kind::IntBin {
                    op: *op,
                    ty: *ty,
                    sat: *sat,
                    carry: *carry,
                };
                (
                    kind,
                    [self.src(a, *ty), self.src(b, bty), z, z],
                    [self.dst(d, *ty), none],
                )
            }
            IntUn { op, ty, d, a } => {
                let kind = Kind::IntUn { op: *op, ty: *ty };
                let dty = op.result_type(*ty);
                (kind, [self.src(a, *ty), z, z, z], [self.dst(d, dty), none])
            }
            Mul { mode, ty, d, a, b } => (
                Kind::Mul {
                    mode: *mode,
                    ty: *ty,
                },
                [self.src(a, *ty), self.src(b, *ty), z, z],
                [self.dst(d, mode.result_type(*ty)), none],
            ),
            Mad {
                mode,
                ty,
                sat,
                carry,
                d,
                a,
                b,
                c,
            } => {
                let dty = mode.result_type(*ty);
                let kind = Kind::Mad {
                    mode: *mode,
                    ty: *ty,
                    sat: *sat,
                    carry: *carry,
                };
                (
                    kind,
                    [self.src(a, *ty), self.src(b, *ty), self.src(c, dty), z],
                    [self.dst(d, dty), none],
                )
            }
            Shf {
                dir,
                mode,
                d,
                a,
                b,
                c,
            } => (
                Kind::Shf {
                    dir: *dir,
                    mode: *mode,
                },
                [self.src(a, B32), self.src(b, B32), self.src(c, U32), z],
                [self.dst(d, B32), none],
            ),
            Bfe { ty, d, a, pos, len } => (
                Kind::Bfe { ty: *ty },
                [self.src(a, *ty), self.src(pos, U32), self.src(len, U32), z],
                [self.dst(d, *ty), none],
            ),
            Bfi {
                ty,
                d,
                a,
                b,
                pos,
                len,
            } => (
                Kind::Bfi { ty: *ty },
                [
                    self.src(a, *ty),
                    self.src(b, *ty),
                    self.src(pos, U32),
                    self.src(len, U32),
                ],
                [self.dst(d, *ty), none],
            ),
            Prmt { mode, d, a, b, c } => (
                Kind::Prmt { mode: *mode },
                [self.src(a, B32), self.src(b, B32), self.src(c, B32), z],
                [self.dst(d, B32), none],
            ),
            Setp {
                cmp,
                combine,
                ftz,
                ty,
                p,
                q,
                a,
                b,
                c,
            } => {
                let c = c.as_ref().map_or(z, |c| self.src(c, Pred));
                let kind = Kind::Setp {
                    cmp: *cmp,
                    combine: *combine,
                    ftz: *ftz,
                    ty: *ty,
                };
                (
                    kind,
                    [self.src(a, *ty), self.src(b, *ty), c, z],
                    [self.dst(p, Pred), self.dst(q, Pred)],
                )
            }
            Selp { ty, d, a, b, c } => (
                Kind::Selp,
                [self.src(a, *ty), self.src(b, *ty), self.src(c, Pred), z],
                [self.dst(d, *ty), none],
            ),
            Slct {
                ty,
                cty,
                ftz,
                d,
                a,
                b,
                c,
            } => (
                Kind::Slct {
                    cty: *cty,
                    ftz: *ftz,
                },
                [self.src(a, *ty), self.src(b, *ty), self.src(c, *cty), z],
                [self.dst(d, *ty), none],
            ),
            Cvt {
                dty,
                aty,
                rnd,
                ftz,
                sat,
                d,
                a,
            } => {
                let kind = Kind::Cvt {
                    dty: *dty,
                    aty: *aty,
                    rnd: *rnd,
                    ftz: *ftz,
                    sat: *sat,
                };
                (
                    kind,
                    [self.src(a, *aty), z, z, z],
                    [self.dst(d, *dty), none],
                )
            }
            FloatBin {
                op,
                ty,
                prec,
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                let kind = Kind::FloatBin {
                    op: *op,
                    ty: *ty,
                    prec: *prec,
                    ftz: *ftz,
                    sat: *sat,
                };
                (
                    kind,
                    [self.src(a, *ty), self.src(b, *ty), z, z],
                    [self.dst(d, *ty), none],
                )
            }
            FloatUn {
                op,
                ty,
                prec,
                ftz,
                d,
                a,
            } => {
                let kind = Kind::FloatUn {
                    op: *op,
                    ty: *ty,
                    prec: *prec,
                    ftz: *ftz,
                };
                (kind, [self.src(a, *ty), z, z, z], [self.dst(d, *ty), none])
            }
            Fma {
                ty,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => {
                let kind = Kind::Fma {
                    ty: *ty,
                    rnd: *rnd,
                    ftz: *ftz,
                    sat: *sat,
                };
                (
                    kind,
                    [self.src(a, *ty), self.src(b, *ty), self.src(c, *ty), z],
                    [self.dst(d, *ty), none],
                )
            }
            Bra { target, .. } => {
                let target = self.func.labels[target.0 as usize] as u32;
                (Kind::Bra { target }, [z; 4], [none; 2])
            }
            Fence => (Kind::Fence, [z; 4], [none; 2]),
            Isspacep { space, p, a } => (
                Kind::Isspacep { space: *space },
                [self.src(a, Type::B64), z, z, z],
                [self.dst(p, Pred), none],
            ),
            Sync { op, d, p, srcs } => {
                let mut src = [z; 4];
                for (k, (o, ty)) in srcs.iter().zip(op.src_types()).enumerate() {
                    src[k] = self.src(o, ty);
                }
                (
                    Kind::Sync { op: *op },
                    src,
                    [self.dst(d, op.d_type()), self.dst(p, Pred)],
                )
            }
            Compute { op, d, p, srcs } => {
                let mut src = [z; 4];
                for (k, (o, ty)) in srcs.iter().zip(op.src_types()).enumerate() {
                    src[k] = self.src(o, ty);
                }
                (
                    Kind::Compute { op: *op },
                    src,
                    [self.dst(d, op.d_type()), self.dst(p, Pred)],
                )
            }
            Hint => (Kind::Hint, [z; 4], [none; 2]),
            Ret => (Kind::Ret, [z; 4], [none; 2]),
            Exit => (Kind::Exit, [z; 4], [none; 2]),
            // Video instructions name their registers in the AST; calls copy parameters.
            Video { .. } | Vset { .. } | Vmad { .. } | Call { .. } => {
                (Kind::Ast, [z; 4], [none; 2])
            }
        };
        Op {
            kind,
            guard,
            src,
            dst,
        }
    }
}

/// The space of an access: the one it names, or shared when its address is a `.shared`
/// variable's (whose address is in the block's window, not a host address).
pub fn access_space(m: &Module, f: &Function, space: Option<Space>, a: &Address) -> Option<Space> {
    let var_space = match a.base {
        AddrBase::Var(VarId::Module(i)) => Some(m.vars[i as usize].space),
        AddrBase::Var(VarId::Function(i)) => Some(f.var(i).space),
        _ => None,
    };
    match var_space {
        Some(Space::Shared) => Some(Space::Shared),
        _ => space,
    }
}

/// The shift that makes `u64::MAX >> shift` the type's mask.
fn shift(ty: Type) -> u8 {
    (64 - ty.bits()) as u8
}

/// Decodes a function's body (an empty one for a prototype).
pub fn decode(module: &Module, func: &Function) -> Decoded {
    let mut layout = Layout::new(module, func);
    let ops = func
        .body
        .iter()
        .flatten()
        .map(|ins| layout.op(ins))
        .collect();
    Decoded {
        ops,
        slots: layout.slots,
        fills: layout.fills,
    }
}
#[cfg(test)]
mod tests {
    /// The point of the compact form: one instruction in one cache line.
    #[test]
    fn an_op_fits_a_cache_line() {
        assert!(std::mem::size_of::<super::Op>() <= 64);
    }
}
