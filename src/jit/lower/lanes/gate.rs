//! Where a group goes back to the thread loop: exits the threads disagree on, affine values
//! that wrapped, and at the end the gate over the stores' ranges and the order of accesses
//! that touch the same bytes.

use super::{LaneVal, Lanes, Range, Res, SeqCmp, Shape, V, Vecs, refuse};
use crate::ast::{Guard, Inst, Instruction};
use crate::ast::{IntBinOp, Type};
use cranelift_codegen::ir::condcodes::{CondCode, IntCC};
use cranelift_codegen::ir::{InstBuilder, Value, types};

/// Whether a branch target is a thread's end: the body's end or an unguarded `ret`/`exit`.
pub(super) fn is_exit(body: &[Instruction], pos: usize) -> bool {
    body.get(pos)
        .is_none_or(|i| i.guard.is_none() && matches!(i.inst, Inst::Ret | Inst::Exit))
}

impl<'f, const P: usize> Lanes<'_, '_, 'f, P> {
    /// `ret`/`exit`/`bra` to the end, under `guard`: the group is done if the guard holds in
    /// every lane, goes on if in none; else, before the first store, it goes back to the
    /// thread loop (the group's lanes are always all running). Unguarded, it ends the group
    /// (the caller stops there).
    pub(super) fn exit_if(&mut self, guard: Option<Guard>) -> Res<()> {
        let Some(g) = guard else {
            return Ok(());
        };
        if self.stored {
            // The stores before it are held back to the group's end.
            return refuse("an exit after a store");
        }
        let leave = match self.shape[g.reg.0 as usize] {
            Shape::Uniform => {
                let p = self.l.b.use_var(self.l.regs[g.reg.0 as usize]);
                if g.negated {
                    self.b().ins().bxor_imm_s(p, 1)
                } else {
                    p
                }
            }
            _ => match self.seq_cmps.get(&g.reg).copied() {
                Some(c) => self.seq_exit(c, g.negated),
                None => {
                    let m = self.guard_mask(g)?;
                    let (mut all, mut any) = (m[0], m[0]);
                    for p in &m[1..] {
                        all = self.b().ins().band(all, *p);
                        any = self.b().ins().bor(any, *p);
                    }
                    let any = self.b().ins().vhigh_bits(types::I32, any);
                    let all = self.b().ins().vhigh_bits(types::I32, all);
                    let some = self.b().ins().icmp_imm_s(IntCC::NotEqual, any, 0);
                    let every = self.b().ins().icmp_imm_s(IntCC::Equal, all, 0xf);
                    let mixed = self.b().ins().bxor(some, every);
                    self.bail_if(mixed);
                    every
                }
            },
        };
        let (done, cont) = (self.done, self.b().create_block());
        self.b().ins().brif(leave, done, &[], cont, &[]);
        self.b().switch_to_block(cont);
        Ok(())
    }

    /// An exit whose guard is a [`SeqCmp`]: the first lane's answer if the last lane's is the
    /// same and the sequence does not wrap (in the comparison's signedness), else back to the
    /// thread loop.
    fn seq_exit(&mut self, c: SeqCmp, negated: bool) -> Value {
        let (answer, unsure) = self.seq_answer(c, negated);
        self.bail_if(unsure);
        answer
    }

    /// A [`SeqCmp`] (negated or not) decided for the whole group where it can be: the first
    /// lane's answer, and whether the lanes may differ (the last lane's answer differs, or
    /// the sequence wraps in the comparison's signedness).
    pub(super) fn seq_answer(&mut self, c: SeqCmp, negated: bool) -> (Value, Value) {
        self.seq_answer_over(c, negated, None)
    }

    /// [`Self::seq_answer`] over `lanes` lanes (an i64) from the first instead of the
    /// group's: for an `alike` comparison, the threads from the group's first to the
    /// block's last.
    pub(super) fn seq_answer_over(
        &mut self,
        c: SeqCmp,
        negated: bool,
        lanes: Option<Value>,
    ) -> (Value, Value) {
        let (first, unsure) = if matches!(c.cc, IntCC::Equal | IntCC::NotEqual) {
            self.seq_equal(c, lanes)
        } else {
            self.seq_order(c, lanes)
        };
        let mut unsure = unsure;
        // The comparison's negation (setp's q) is made once, with the guard's where it can.
        let (mut answer, mut flip) = (first, c.negated);
        if let Some((op, u)) = c.with {
            if flip {
                answer = self.b().ins().bxor_imm_s(answer, 1);
                flip = false;
            }
            // Or-ed with a true or and-ed with a false uniform predicate, every lane agrees.
            if op == IntBinOp::Or {
                answer = self.b().ins().bor(answer, u);
                unsure = self.b().ins().band_not(unsure, u);
            } else {
                answer = self.b().ins().band(answer, u);
                unsure = self.b().ins().band(unsure, u);
            }
        }
        if flip ^ negated {
            answer = self.b().ins().bxor_imm_s(answer, 1);
        }
        (answer, unsure)
    }

    /// `eq`/`ne` of a sequence with a uniform value: no lane equals it where it lies past
    /// the lanes' span from the first lane (modulo 2^32, so wrapping changes nothing), and
    /// then every lane gives the same answer. The answer then, and whether a lane may equal
    /// it.
    fn seq_equal(&mut self, c: SeqCmp, lanes: Option<Value>) -> (Value, Value) {
        let d = if c.stride > 0 {
            self.b().ins().isub(c.other, c.base)
        } else {
            self.b().ins().isub(c.base, c.other)
        };
        let step = c.stride.unsigned_abs() as i64;
        let hit = match lanes {
            None => {
                let span = Self::LANES as i64 * step;
                self.b().ins().icmp_imm_u(IntCC::UnsignedLessThan, d, span)
            }
            Some(n) => {
                // Lanes × stride may pass 2^32: compared in 64 bits.
                let span = self.b().ins().imul_imm_s(n, step);
                let d = self.l.uextend(types::I64, d);
                self.b().ins().icmp(IntCC::UnsignedLessThan, d, span)
            }
        };
        let answer = self
            .b()
            .ins()
            .iconst(types::I8, (c.cc == IntCC::NotEqual) as i64);
        (answer, hit)
    }

    /// An ordering comparison of a sequence with a uniform value: the first lane's answer,
    /// and whether the lanes may differ (the last lane's answer differs, or the sequence
    /// wraps in the comparison's signedness).
    fn seq_order(&mut self, c: SeqCmp, lanes: Option<Value>) -> (Value, Value) {
        let span = match lanes {
            None => self
                .b()
                .ins()
                .iconst(types::I64, (Self::LANES as i64 - 1) * c.stride),
            Some(n) => {
                let last = self.b().ins().iadd_imm_s(n, -1);
                self.b().ins().imul_imm_s(last, c.stride)
            }
        };
        let wraps = self.seq_wraps(c, span);
        let span32 = self.b().ins().ireduce(types::I32, span);
        let last = self.b().ins().iadd(c.base, span32);
        let test = |l: &mut Self, x: Value| {
            if c.swapped {
                l.b().ins().icmp(c.cc, c.other, x)
            } else {
                l.b().ins().icmp(c.cc, x, c.other)
            }
        };
        let first = test(self, c.base);
        let last = test(self, last);
        let differ = self.b().ins().bxor(first, last);
        let unsure = self.b().ins().bor(differ, wraps);
        (first, unsure)
    }

    /// Whether the sequence of an ordering [`SeqCmp`] wraps in the comparison's signedness
    /// before it has gone `span` (an i64) past its first lane.
    pub(super) fn seq_wraps(&mut self, c: SeqCmp, span: Value) -> Value {
        let signed = c.cc.unsigned() != c.cc;
        let wide = self.widen(c.base, signed);
        let last_wide = self.b().ins().iadd(wide, span);
        let (lo, hi) = if signed {
            (i32::MIN as i64, i32::MAX as i64)
        } else {
            (0, u32::MAX as i64)
        };
        if c.stride > 0 {
            self.b()
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, last_wide, hi)
        } else {
            self.b()
                .ins()
                .icmp_imm_s(IntCC::SignedLessThan, last_wide, lo)
        }
    }

    /// An i32 as an i64, sign- or zero-extended.
    fn widen(&mut self, v: Value, signed: bool) -> Value {
        if signed {
            self.b().ins().sextend(types::I64, v)
        } else {
            self.l.uextend(types::I64, v)
        }
    }

    /// The lanes where an ordering [`SeqCmp`] (negated or not) holds, as a lane mask (bit k
    /// for lane k), for a sequence that does not wrap in the comparison's signedness
    /// ([`Self::seq_wraps`]) and whose stride is a power of two (else None). Lane k's value,
    /// `base + k × stride`, then moves one way: the lanes on one side of the uniform value
    /// are a prefix of the lanes, the others the rest, and the prefix's length is the
    /// distance to the value over the stride, rounded as the comparison is strict or not.
    pub(super) fn seq_order_bits(&mut self, c: SeqCmp, negated: bool) -> Option<Value> {
        let step = c.stride.unsigned_abs();
        if matches!(c.cc, IntCC::Equal | IntCC::NotEqual) || !step.is_power_of_two() {
            return None;
        }
        // As `lane cc other`.
        let cc = if c.swapped { c.cc.swap_args() } else { c.cc };
        let signed = cc.unsigned() != cc;
        let (base, other) = (self.widen(c.base, signed), self.widen(c.other, signed));
        let rising = c.stride > 0;
        // How far the value lies past the first lane, in the direction the lanes go.
        let e = match rising {
            true => self.b().ins().isub(other, base),
            false => self.b().ins().isub(base, other),
        };
        let shift = step.trailing_zeros() as i64;
        // Lanes k with k × step < e (ceil(e / step) of them) or ≤ e (floor(e / step) + 1).
        let strict = {
            let up = self.b().ins().iadd_imm_s(e, step as i64 - 1);
            self.b().ins().sshr_imm_u(up, shift)
        };
        let inclusive = {
            let down = self.b().ins().sshr_imm_u(e, shift);
            self.b().ins().iadd_imm_s(down, 1)
        };
        // Rising, the lanes below the value are the prefix; falling, those above it.
        let below = matches!(
            cc.unsigned(),
            IntCC::UnsignedLessThan | IntCC::UnsignedLessThanOrEqual
        );
        let or_equal = matches!(
            cc.unsigned(),
            IntCC::UnsignedLessThanOrEqual | IntCC::UnsignedGreaterThanOrEqual
        );
        // The prefix is of the lanes that hold where they are the lanes the comparison
        // wants; its length counts equality in as the comparison (rising) or its negation
        // (falling) does.
        let (count, holds_in_prefix) = match (rising, below) {
            (true, true) => (if or_equal { inclusive } else { strict }, true),
            (true, false) => (if or_equal { strict } else { inclusive }, false),
            (false, false) => (if or_equal { inclusive } else { strict }, true),
            (false, true) => (if or_equal { strict } else { inclusive }, false),
        };
        let zero = self.b().ins().iconst(types::I64, 0);
        let count = self.b().ins().smax(count, zero);
        let lanes = self.b().ins().iconst(types::I64, Self::LANES as i64);
        let count = self.b().ins().smin(count, lanes);
        let one = self.b().ins().iconst(types::I64, 1);
        let prefix = self.b().ins().ishl(one, count);
        let prefix = self.b().ins().iadd_imm_s(prefix, -1);
        let mut m = self.b().ins().ireduce(types::I32, prefix);
        if !holds_in_prefix ^ c.negated {
            m = self.b().ins().bnot(m);
        }
        if let Some((op, u)) = c.with {
            let u = self.b().ins().uextend(types::I32, u);
            let all = self.b().ins().ineg(u);
            m = match op {
                IntBinOp::Or => self.b().ins().bor(m, all),
                _ => self.b().ins().band(m, all),
            };
        }
        if negated {
            m = self.b().ins().bnot(m);
        }
        Some(m)
    }

    /// A [`SeqCmp`]'s lanes (negated or not) as a mask, made again from the sequence.
    pub(super) fn seq_mask(&mut self, c: SeqCmp, negated: bool) -> Res<Vecs<P>> {
        let seq = self.lanes_of(LaneVal::Affine(c.base, c.stride), Type::U32)?;
        let other = self.b().ins().splat(V, c.other);
        let m = seq.map(|x| match c.swapped {
            true => self.b().ins().icmp(c.cc, other, x),
            false => self.b().ins().icmp(c.cc, x, other),
        });
        let mut m = if c.negated {
            self.map(m, |b, v| b.ins().bnot(v))
        } else {
            m
        };
        if let Some((op, u)) = c.with {
            let u = self.lanes_of(LaneVal::Uniform(u), Type::Pred)?;
            m = match op {
                IntBinOp::Or => self.map2(m, u, |b, x, y| b.ins().bor(x, y)),
                _ => self.map2(m, u, |b, x, y| b.ins().band(x, y)),
            };
        }
        Ok(if negated {
            self.map(m, |b, v| b.ins().bnot(v))
        } else {
            m
        })
    }

    /// Whether the group may read memory: no affine value wrapped since the last test (else
    /// back to the thread loop).
    pub(super) fn ready(&mut self) {
        if self.wrap_unchecked {
            let w = self.wrap.expect("a widening declares the flag");
            let wrapped = self.b().use_var(w);
            self.bail_if(wrapped);
            self.wrap_unchecked = false;
        }
    }

    fn bail_if(&mut self, cond: Value) {
        let (bail, cont) = (self.bail, self.b().create_block());
        self.b().ins().brif(cond, bail, &[], cont, &[]);
        self.b().switch_to_block(cont);
    }

    /// At the group's end, before its held stores: the group must be ready, the stores'
    /// ranges good, and no two accesses where one is a store may touch the same bytes where
    /// the order differs from the thread loop's: a load before a store, or two stores, from
    /// different lanes (the thread loop would run one thread's both before the other's); a
    /// store before a load, from any lanes (the load ran before the held store). Else the
    /// group goes back to the thread loop, which has nothing to undo.
    pub(super) fn gate(&mut self) -> Res<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        self.ready();
        let ranges: Vec<Option<Range>> = self.ranges.clone();
        for (k, r) in ranges.iter().enumerate() {
            if let (Some(r), true) = (r, self.accesses[k].store) {
                self.check_range(k, *r);
            }
        }
        let mut bad = None;
        for (later, b) in ranges.iter().enumerate() {
            let Some(b) = *b else { continue };
            for (earlier, a) in ranges.iter().enumerate().take(later) {
                let Some(a) = *a else { continue };
                let (a_store, b_store) = (self.accesses[earlier].store, self.accesses[later].store);
                let conflict = match (a_store, b_store) {
                    (false, false) => None,
                    (true, false) => {
                        if a.lo == b.lo {
                            return refuse(format!(
                                "{}: a thread reads what it stored",
                                self.text(self.accesses[later].at)
                            ));
                        }
                        Some(self.overlap(a, b))
                    }
                    _ => self.across_lanes(a, b),
                };
                bad = self.either(bad, conflict);
            }
        }
        if let Some(bad) = bad {
            self.bail_if(bad);
        }
        Ok(())
    }

    /// `a | b` of optional i8 conditions.
    fn either(&mut self, a: Option<Value>, b: Option<Value>) -> Option<Value> {
        match (a, b) {
            (Some(a), Some(b)) => Some(self.b().ins().bor(a, b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether some lane's bytes of `a` overlap another lane's bytes of `b`. Two accesses with
    /// the same stride interleave without touching when their starts are at most `stride −
    /// size` apart (the fields of one array of structures; 0 apart: lane for lane the same
    /// bytes); otherwise any overlap of the two ranges counts (which may be more than exact).
    fn across_lanes(&mut self, a: Range, b: Range) -> Option<Value> {
        let apart = match (a.stride, b.stride) {
            (Some(s), Some(t)) if s == t => Some(s - a.size.max(b.size) as i64),
            _ => None,
        };
        if apart.is_some() && a.lo == b.lo {
            return None;
        }
        let overlap = self.overlap(a, b);
        Some(match apart {
            Some(apart) => {
                let d = self.b().ins().isub(a.lo, b.lo);
                let near = self
                    .b()
                    .ins()
                    .icmp_imm_s(IntCC::SignedLessThanOrEqual, d, apart);
                let far = self
                    .b()
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, -apart);
                let interleaved = self.b().ins().band(near, far);
                self.b().ins().band_not(overlap, interleaved)
            }
            None => overlap,
        })
    }

    /// Whether the ranges of `a` and `b` overlap at all.
    fn overlap(&mut self, a: Range, b: Range) -> Value {
        let ins = self.b().ins();
        let x = ins.icmp(IntCC::UnsignedLessThan, a.lo, b.hi);
        let ins = self.b().ins();
        let y = ins.icmp(IntCC::UnsignedLessThan, b.lo, a.hi);
        self.b().ins().band(x, y)
    }
}
