//! The group's global accesses: where the group ends and which accesses come before it,
//! each access's range of bytes, the checked-mode test of that range (inline, else
//! `rt_probe` and a rerun), loads as vectors or lane by lane, and stores held back to the
//! group's end.

use super::gate::is_exit;
use super::{Access, HeldStore, LaneVal, Lanes, Range, Res, V, refuse};
use crate::ast::{AddrBase, Inst, Instruction, Operand, Space, Type};
use crate::jit::lower::{clif, flags};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, types};

pub(super) fn gated_space(space: Option<Space>) -> bool {
    matches!(space, None | Some(Space::Global))
}

impl<'f, const P: usize> Lanes<'_, '_, 'f, P> {
    /// Where the group ends (the first unconditional `ret`, `exit` or `bra` to an end), and
    /// the global accesses before it.
    pub(super) fn scan(&mut self, body: &[Instruction]) -> Res<usize> {
        let labels = &self.l.f.labels;
        let mut end = body.len();
        for (i, ins) in body.iter().enumerate() {
            let ends = match &ins.inst {
                Inst::Ret | Inst::Exit => true,
                Inst::Bra { target, .. } => is_exit(body, labels[target.0 as usize]),
                _ => false,
            };
            if ends && ins.guard.is_none() {
                end = i;
                break;
            }
            if let Inst::Ld {
                space,
                ty,
                addr,
                vec,
                ..
            }
            | Inst::St {
                space,
                ty,
                addr,
                vec,
                ..
            } = &ins.inst
                && gated_space(*space)
            {
                self.accesses.push(Access {
                    at: i,
                    base: addr.base,
                    offset: addr.offset,
                    size: ty.bytes() * *vec as usize,
                    store: matches!(ins.inst, Inst::St { .. }),
                    space: *space,
                });
            }
        }
        self.ranges = vec![None; self.accesses.len()];
        Ok(end)
    }

    /// An access's address, offset included.
    fn address(&mut self, base: AddrBase, offset: i64) -> Res<LaneVal<P>> {
        let a = match base {
            AddrBase::Reg(r) => self.read(&Operand::Reg(r), Type::U64)?,
            AddrBase::Var(v) => LaneVal::Uniform(self.l.var_addr(v)),
            AddrBase::None => LaneVal::Uniform(self.b().ins().iconst(types::I64, 0)),
        };
        Ok(match a {
            LaneVal::Uniform(v) => LaneVal::Uniform(self.l.plus(v, offset)),
            LaneVal::Affine(v, s) => LaneVal::Affine(self.l.plus(v, offset), s),
            LaneVal::Varying(v) => LaneVal::Varying(v),
        })
    }

    /// Access `k`'s range: a load at one address (every lane reads it), or lane k's element at
    /// `lo + k × stride` with the stride a multiple of the size (so that every lane is as
    /// aligned as lane 0) and 32-bit elements.
    fn range(&mut self, k: usize) -> Res<Range> {
        let (base, offset, size, store) = {
            let a = &self.accesses[k];
            (a.base, a.offset, a.size, a.store)
        };
        let (lo, len, stride) = match self.address(base, offset)? {
            LaneVal::Uniform(_) if store => {
                return refuse("every thread stores to one address");
            }
            LaneVal::Uniform(v) => (v, size as i64, None),
            LaneVal::Affine(v, s)
                if size == 4
                    && s > 0
                    && s % 4 == 0
                    && s <= i32::MAX as i64 / Self::LANES as i64 =>
            {
                (v, (Self::LANES as i64 - 1) * s + 4, Some(s))
            }
            _ => {
                return refuse(format!(
                    "the threads' addresses are not {size}-byte elements at a constant distance"
                ));
            }
        };
        let hi = self.b().ins().iadd_imm_s(lo, len);
        Ok(Range {
            lo,
            hi,
            stride,
            size,
        })
    }

    /// Checked: the group goes on only if access `k`'s range lies in the area its slot last
    /// checked. If not, the runtime is asked (`rt_probe`) whether it lies in one writable
    /// global area; if so the area goes into the slot and the group starts again (it has
    /// stored nothing), else it goes to the thread loop, which reports any fault. (Calling the
    /// runtime and going on would make every vector live across the call a spill in the
    /// straight-line code.) Unchecked, ranges are trusted (one wrapping around the address
    /// space would fault in the thread loop too).
    pub(super) fn check_range(&mut self, k: usize, r: Range) {
        let (base, size, space, store, offset) = {
            let a = &self.accesses[k];
            (a.base, a.size, a.space, a.store, a.offset)
        };
        let addr = crate::ast::Address { base, offset };
        if !self.l.sh.checked || self.l.known_safe(&addr, size, space, store) {
            return;
        }
        let slot = self.l.checks.slot(base);
        let ok = self.l.in_recent_area(r.lo, r.hi, slot, r.lo, size as u64);
        let (probe, cont) = (self.b().create_block(), self.b().create_block());
        self.b().set_cold_block(probe);
        self.b().ins().brif(ok, cont, &[], probe, &[]);
        self.b().switch_to_block(probe);
        let packed = self.b().ins().iconst(types::I32, (slot | size << 8) as i64);
        let ctx = self.l.ctx;
        let found = self
            .l
            .helper("rt_probe", &[ctx, r.lo, r.hi, packed])
            .expect("rt_probe returns");
        // Each run fills at least one slot: as many runs as accesses (two accesses sharing a
        // slot in different areas could take turns forever).
        let retried = self.l.b.use_var(self.retried);
        let runs = self.accesses.len().min(100) as i64;
        let more = self
            .b()
            .ins()
            .icmp_imm_s(IntCC::UnsignedLessThan, retried, runs);
        let found = self.b().ins().icmp_imm_s(IntCC::NotEqual, found, 0);
        let again = self.b().ins().band(found, more);
        let tid = self.l.dims.as_ref().expect("a kernel").tid[0];
        let x = self.b().use_var(tid);
        let next = self.b().ins().iadd_imm_s(retried, 1);
        let (head, bail) = (self.head, self.bail);
        self.b()
            .ins()
            .brif(again, head, &[x.into(), next.into()], bail, &[]);
        self.b().switch_to_block(cont);
    }

    /// Global access `k`: a load runs now, once the group is ready and (checked) its range
    /// passes, as vector loads for consecutive elements, lane by lane for others, one scalar
    /// load for one address; a store is held back to the group's end (see [`Lanes::gate`]).
    pub(super) fn access(&mut self, k: usize, inst: &Inst) -> Res<()> {
        let r = self.range(k)?;
        self.ranges[k] = Some(r);
        match inst {
            Inst::Ld { ty, d, .. } => {
                self.ready();
                self.check_range(k, r);
                let v = match r.stride {
                    None => {
                        let v = self.l.load_value(clif(*ty), flags(), r.lo, 0);
                        return self.write(d, *ty, LaneVal::Uniform(v), None);
                    }
                    Some(4) => std::array::from_fn(|p| {
                        self.l.b.ins().load(V, flags(), r.lo, 16 * p as i32)
                    }),
                    Some(s) => {
                        let mut v = [r.lo; P];
                        for (p, v) in v.iter_mut().enumerate() {
                            let lanes = [0, 1, 2, 3].map(|lane| {
                                let off = ((4 * p + lane) as i64 * s) as i32;
                                self.l.b.ins().load(types::I32, flags(), r.lo, off)
                            });
                            let mut x = self.b().ins().scalar_to_vector(V, lanes[0]);
                            for (lane, y) in lanes.into_iter().enumerate().skip(1) {
                                x = self.b().ins().insertlane(x, y, lane as u8);
                            }
                            *v = x;
                        }
                        v
                    }
                };
                self.write(d, *ty, LaneVal::Varying(v), None)
            }
            Inst::St { ty, a, .. } => {
                let v = self.read(a, *ty)?;
                let vals = self.lanes_of(v, *ty)?;
                let stride = r.stride.expect("range refuses stores to one address");
                self.held.push(HeldStore {
                    at: r.lo,
                    stride,
                    vals,
                });
                self.stored = true;
                Ok(())
            }
            _ => unreachable!("an access"),
        }
    }

    /// The held stores, in program order (lanes in order within each).
    pub(super) fn store_held(&mut self) {
        for h in std::mem::take(&mut self.held) {
            for (p, v) in h.vals.into_iter().enumerate() {
                if h.stride == 4 {
                    self.b().ins().store(flags(), v, h.at, 16 * p as i32);
                    continue;
                }
                for lane in 0..4 {
                    let x = self.b().ins().extractlane(v, lane as u8);
                    let off = (4 * p as i64 + lane) * h.stride;
                    self.b().ins().store(flags(), x, h.at, off as i32);
                }
            }
        }
    }
}
