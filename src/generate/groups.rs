//! Random cooperative kernels of the kind the JIT runs a warp (or a row of 16) at
//! a time in SIMD lanes (`jit/lower/lanes/rounds.rs`): plain barriers, 32-bit
//! per-thread registers, addresses that are `%tid` sequences. The body mixes arithmetic,
//! stores of a thread's own `.shared` word, loads of other threads' words (a neighbour's, the
//! reversed index's, a fixed one) that race with those stores or wait for a barrier,
//! if/else and plain branches on per-thread predicates (bounds on the thread's index, its
//! parity, its data) whose sides may leave, guarded exits, and loops of a uniform trip count
//! around a barrier; branches on the warp's number (uniform in each warp, different between
//! warps) around items without barriers, and on the block's number over a barrier; bit
//! counts and reversals, lane masks; and warp collectives: shuffles of every mode (their
//! lane and clamp operands constants, immediates or registers written once, or per-thread
//! values, some with the predicate result read), votes, `redux`, `activemask` and
//! `bar.warp.sync`, with the full membermask or another. [`super::coop_program`]'s kernels
//! mostly fall outside what the lanes take; these stay inside, so `ptxjit diff` holds the
//! group functions to the interpreter.
//!
//! `k(.param .u64 inp, .param .u64 out)` with [`Layout::Coop`]'s slots: each thread loads
//! eight words from its input slot and stores them, and its own word of `sh`, to its output
//! slot; threads that leave early store nothing.

use super::{COOP_OUT_BYTES, IN_BYTES, Layout, Program, Rng};
use crate::engine::Dim3;

/// The blocks a program runs as: rows of whole warps, or of 16 threads.
const BLOCKS: [(u32, u32); 7] = [
    (32, 1),
    (64, 1),
    (96, 1),
    (128, 1),
    (16, 2),
    (16, 4),
    (32, 2),
];
/// The per-thread registers `%a0` … `%a7`.
const REGS: u64 = 8;
/// Words of `sh` past the block's threads (so a neighbour `k` ahead stays inside).
const AHEAD: u32 = 32;

/// A random kernel of about `size` body items for the group functions.
pub fn group_program(rng: &mut Rng, size: usize) -> Program {
    let (x, y) = *rng.pick(&BLOCKS);
    let block = Dim3::new(x, y, 1);
    let grid = Dim3::x(1 + rng.below(2) as u32);
    let nt = x * y;
    let words = nt + AHEAD;
    let exits = rng.chance(50);
    let mut s = String::from(".version 7.8\n.target sm_80\n.address_size 64\n");
    s += ".visible .entry k(.param .u64 inp, .param .u64 out)\n{\n";
    s += &format!("  .shared .align 4 .b32 sh[{words}];\n");
    s += "  .reg .b32 %a<8>, %tx, %row, %nx, %lin, %cb, %t, %ri, %ni, %lc, %w;\n  \
          .reg .b64 %in, %out, %pin, %pout, %oi, %oo, %sb, %sa, %r64, %ra, %n64, %na, %m64;\n  \
          .reg .pred %q, %lp, %sp, %wq, %uq, %pu;\n  .reg .b32 %sq;\n  .reg .b32 %k<64>, %wn, %ub;\n";
    // Every value that is a sequence of the thread's index stays one (a register keeps
    // one shape in the lanes): %lin = %tid.y × %ntid.x + %tid.x, the slots, the own word.
    s += "  ld.param.u64 %in, [inp];\n  ld.param.u64 %out, [out];\n  \
          mov.u32 %tx, %tid.x;\n  mov.u32 %row, %tid.y;\n  mov.u32 %nx, %ntid.x;\n  \
          mul.lo.u32 %row, %row, %nx;\n  add.u32 %lin, %row, %tx;\n  \
          mov.u32 %cb, %ctaid.x;\n";
    s += &format!(
        "  mul.lo.u32 %cb, %cb, {nt};\n  add.u32 %t, %cb, %lin;\n  \
         mul.wide.u32 %oi, %t, {IN_BYTES};\n  add.u64 %pin, %in, %oi;\n  \
         mul.wide.u32 %oo, %t, {COOP_OUT_BYTES};\n  add.u64 %pout, %out, %oo;\n"
    );
    for k in 0..REGS {
        s += &format!("  ld.global.u32 %a{k}, [%pin+{}];\n", 4 * k);
    }
    s += "  mov.u64 %sb, sh;\n  mul.wide.u32 %r64, %lin, 4;\n  add.u64 %sa, %sb, %r64;\n";
    let mut g = Group {
        rng,
        out: Vec::new(),
        labels: 0,
        nt,
        exits,
        depth: 0,
        constants: 0,
        warp_branch: false,
    };
    for _ in 0..size {
        g.item(true);
    }
    // A barrier before the own word is read back: a lane reading its own store of the
    // same round hands the block over (the lanes hold stores back to the barrier).
    let mut e = String::from("  bar.sync 0;\n");
    for k in 0..REGS {
        e += &format!("  st.global.u32 [%pout+{}], %a{k};\n", 4 * k);
    }
    e += &format!(
        "  ld.shared.u32 %w, [%sa];\n  st.global.u32 [%pout+{}], %w;\n  ret;\n}}\n",
        4 * REGS
    );
    Program {
        layout: Layout::Coop {
            grid,
            block,
            shared_bytes: 0,
            lanes: true,
        },
        prologue: s,
        body: g.out,
        epilogue: e,
    }
}

struct Group<'r> {
    rng: &'r mut Rng,
    out: Vec<String>,
    labels: u32,
    /// Threads in a block.
    nt: u32,
    /// Whether threads may leave early.
    exits: bool,
    /// Per-thread branches around the item being made (no barrier inside one: the lanes
    /// do not take it).
    depth: u32,
    /// The `%k` registers used, each written once with a constant.
    constants: u32,
    /// Inside a branch on the warp's number (no barrier there: the other warps would not
    /// come).
    warp_branch: bool,
}

impl Group<'_> {
    fn below(&mut self, n: u64) -> u64 {
        self.rng.below(n)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.rng.chance(percent)
    }

    fn a(&mut self) -> String {
        format!("%a{}", self.below(REGS))
    }

    fn label(&mut self) -> String {
        self.labels += 1;
        format!("$G{}", self.labels)
    }

    /// One body item (a single entry of `out`, so that shrinking keeps or deletes a branch
    /// with its labels); `top`: not inside a branch or loop.
    fn item(&mut self, top: bool) {
        let apart = self.depth == 0;
        let barriers = apart && !self.warp_branch;
        let text = match self.below(100) {
            0..=29 => self.arith(),
            30..=37 => self.own_store(),
            // The exchange: own word, barrier, another thread's word.
            38..=47 if barriers => self.own_store() + "  bar.sync 0;\n" + &self.read_other(),
            // Without a barrier between, a read may race with the stores before it.
            48..=51 => self.read_other(),
            52..=61 if barriers => "  bar.sync 0;\n".to_string(),
            62..=77 => self.branch(),
            78..=83 if self.exits => self.exit(),
            84..=89 if top && self.chance(40) => self.halving_loop(),
            84..=89 if top => self.barrier_loop(),
            90..=95 if apart => self.collective(),
            96..=98 if barriers => self.warp_branch(),
            99 if barriers => {
                // A barrier that the blocks of one parity of `%ctaid.x` jump over.
                let over = self.label();
                format!(
                    "  mov.u32 %wn, %ctaid.x;\n  and.b32 %wn, %wn, 1;\n  setp.ne.u32 %wq, %wn, 0;\n  \
                     @%wq bra {over};\n  \
                     bar.sync 0;\n{over}:\n"
                )
            }
            _ => self.arith(),
        };
        self.out.push(text);
    }

    /// The text of a few items for a side of a branch or a loop's body.
    fn items(&mut self, n: u64) -> String {
        let at = self.out.len();
        for _ in 0..1 + self.below(n) {
            self.item(false);
        }
        self.out.drain(at..).collect()
    }

    fn arith(&mut self) -> String {
        let (d, a) = (self.a(), self.a());
        let b = if self.chance(30) {
            self.below(1 << 16).to_string()
        } else {
            self.a()
        };
        let op = *self.rng.pick(&[
            "add.u32",
            "sub.u32",
            "mul.lo.u32",
            "and.b32",
            "or.b32",
            "xor.b32",
            "min.u32",
            "max.s32",
        ]);
        if self.chance(8) {
            // A count or reversal of bits, or a lane mask.
            return match self.below(3) {
                0 => {
                    let op = *self.rng.pick(&["popc.b32", "clz.b32", "brev.b32"]);
                    format!("  {op} {d}, {a};\n")
                }
                _ => {
                    let m = *self.rng.pick(&["eq", "le", "lt", "ge", "gt"]);
                    format!("  mov.u32 %w, %lanemask_{m};\n  and.b32 {d}, {a}, %w;\n")
                }
            };
        }
        if self.chance(15) {
            let sh = *self.rng.pick(&["shl.b32", "shr.u32", "shr.s32"]);
            // By a constant, a thread's data (past the width, mostly), or its lane.
            let k = match self.below(4) {
                0 => self.a(),
                1 => {
                    let r = self.a();
                    let lane = if self.chance(50) {
                        "mov.u32 %w, %laneid;"
                    } else {
                        "and.b32 %w, %lin, 31;"
                    };
                    return format!("  {lane}\n  {sh} {d}, {r}, %w;\n");
                }
                _ => self.below(32).to_string(),
            };
            return format!("  {sh} {d}, {a}, {k};\n");
        }
        format!("  {op} {d}, {a}, {b};\n")
    }

    fn own_store(&mut self) -> String {
        let a = self.a();
        format!("  st.shared.u32 [%sa], {a};\n")
    }

    /// Another thread's word: `k` ahead, the reversed index's, or one fixed word.
    fn read_other(&mut self) -> String {
        let d = self.a();
        match self.below(3) {
            0 => {
                let k = self.below(AHEAD as u64 + 1);
                format!(
                    "  add.u32 %ni, %lin, {k};\n  mul.wide.u32 %n64, %ni, 4;\n  \
                     add.u64 %na, %sb, %n64;\n  ld.shared.u32 {d}, [%na];\n"
                )
            }
            1 => format!(
                "  sub.u32 %ri, {}, %lin;\n  mul.wide.u32 %m64, %ri, 4;\n  \
                 add.u64 %ra, %sb, %m64;\n  ld.shared.u32 {d}, [%ra];\n",
                self.nt - 1
            ),
            _ => {
                let k = self.below(self.nt as u64);
                format!("  ld.shared.u32 {d}, [sh+{}];\n", 4 * k)
            }
        }
    }

    /// A per-thread predicate in `%q`: a bound on the thread's index in the block or in
    /// its row, its parity, or its data.
    fn pred(&mut self) -> String {
        match self.below(4) {
            0 => self.bound("%lin"),
            3 => self.bound("%tx"),
            1 => "  and.b32 %w, %lin, 1;\n  setp.eq.u32 %q, %w, 0;\n".to_string(),
            _ => {
                let (a, b) = (self.a(), self.a());
                format!("  setp.lt.u32 %q, {a}, {b};\n")
            }
        }
    }

    /// A bound on sequence `seq` in `%q`: of `seq` itself or of `%sq` made from it (a
    /// stride of 2 or 4, or falling, where unsigned values wrap below 0), compared either
    /// way round, signed or not, with a constant or `%ntid.x`, and at times and-ed or
    /// or-ed with a uniform predicate.
    fn bound(&mut self, seq: &str) -> String {
        let nt = self.nt as u64;
        // The bound is near the value of some thread's lane, where lanes part.
        let t = self.below(nt) as i64;
        let (a, c) = (self.below(nt) as i64, self.below(8) as i64);
        let (mut text, v, at) = match self.below(4) {
            0 => (String::new(), seq, t),
            1 => (format!("  shl.b32 %sq, {seq}, 2;\n"), "%sq", 4 * t),
            2 => (format!("  sub.u32 %sq, {a}, {seq};\n"), "%sq", a - t),
            _ => (
                format!("  mad.lo.u32 %sq, {seq}, 2, {c};\n"),
                "%sq",
                2 * t + c,
            ),
        };
        let cmp = *self.rng.pick(&["lt", "le", "ge", "gt", "eq", "ne"]);
        let ty = *self.rng.pick(&["u32", "s32"]);
        let k = at + self.below(5) as i64 - 2;
        text += &match self.below(3) {
            0 => format!("  setp.{cmp}.{ty} %q, %nx, {v};\n"),
            _ => format!("  setp.{cmp}.{ty} %q, {v}, {k};\n"),
        };
        if self.chance(25) {
            let (op, ucmp) = (
                *self.rng.pick(&["and", "or"]),
                *self.rng.pick(&["lt", "ge"]),
            );
            text += &format!(
                "  setp.{ucmp}.u32 %pu, %nx, {};\n  {op}.pred %q, %q, %pu;\n",
                self.below(2 * nt)
            );
        }
        text
    }

    /// A branch on a per-thread predicate: over one side, or an if/else as compilers write
    /// it (the `if` side ends in a branch past the `else` side); with exits, a side may
    /// leave instead.
    fn branch(&mut self) -> String {
        let mut text = self.pred();
        let (other, end) = (self.label(), self.label());
        let neg = if self.chance(30) { "!" } else { "" };
        text += &format!("  @{neg}%q bra {other};\n");
        self.depth += 1;
        text += &self.items(2);
        if self.chance(60) {
            let leave = self.exits && self.chance(25);
            let jump = if leave {
                self.rng.pick(&["exit;", "ret;"]).to_string()
            } else {
                let bra = *self.rng.pick(&["bra.uni", "bra"]);
                format!("{bra} {end};")
            };
            text += &format!("  {jump}\n{other}:\n");
            text += &self.items(2);
            text += &format!("{end}:\n");
        } else {
            text += &format!("{other}:\n");
        }
        self.depth -= 1;
        text
    }

    /// Threads leaving by `exit` or `ret` (a branch to the end would put every later
    /// barrier inside a per-thread branch, which the lanes do not take).
    fn exit(&mut self) -> String {
        let how = *self.rng.pick(&["exit;", "ret;"]);
        self.pred() + &format!("  @%q {how}\n")
    }

    /// A warp collective: mostly a shuffle, else a vote, a `redux`, `activemask` or
    /// `bar.warp.sync`.
    fn collective(&mut self) -> String {
        let (d, a, b) = (self.a(), self.a(), self.a());
        // The full membermask, another constant, or one each thread computes: all ones,
        // or its data (mostly differing between lanes).
        let (mask, setup) = match self.below(10) {
            0..=5 => ("-1".to_string(), String::new()),
            6 | 7 => ((self.below(1 << 32) | 1).to_string(), String::new()),
            8 => (
                "%w".to_string(),
                "  and.b32 %w, %lin, 0;\n  sub.u32 %w, %w, 1;\n".to_string(),
            ),
            _ => (self.a(), String::new()),
        };
        setup
            + &match self.below(20) {
                0..=11 => self.shuffle(),
                12..=14 => {
                    let mode = *self.rng.pick(&["all", "any", "uni", "ballot"]);
                    let mut text = format!("  setp.lt.u32 %sp, {a}, {b};\n");
                    if mode == "ballot" {
                        text += &format!("  vote.sync.ballot.b32 {d}, %sp, {mask};\n");
                    } else {
                        text += &format!(
                            "  vote.sync.{mode}.pred %sp, %sp, {mask};\n  selp.b32 {d}, {a}, {b}, %sp;\n"
                        );
                    }
                    text
                }
                15..=17 => {
                    let op = *self.rng.pick(&[
                        "add.u32", "add.s32", "min.u32", "min.s32", "max.u32", "max.s32",
                        "and.b32", "or.b32", "xor.b32",
                    ]);
                    format!("  redux.sync.{op} {d}, {a}, {mask};\n")
                }
                18 => format!("  activemask.b32 {d};\n"),
                _ => format!("  bar.warp.sync {mask};\n"),
            }
    }

    /// A warp shuffle of a register (its lane and clamp operands constants or, now and
    /// then, a register's data), sometimes with its predicate picking a result.
    fn shuffle(&mut self) -> String {
        let mode = *self.rng.pick(&["up", "down", "bfly", "idx"]);
        let width = 1u64 << self.below(6);
        let c = match self.below(4) {
            0 => self.below(1 << 13),
            _ if mode == "up" => (32 - width) << 8,
            _ => ((32 - width) << 8) | 31,
        };
        let mut text = String::new();
        let mut operand = |g: &mut Self, v: u64| -> String {
            if g.constants < 64 && g.chance(50) {
                let k = format!("%k{}", g.constants);
                g.constants += 1;
                text += &format!("  mov.u32 {k}, {v};\n");
                k
            } else {
                v.to_string()
            }
        };
        let b = if self.chance(15) {
            self.a()
        } else {
            let range = if self.chance(80) { 32 } else { 1 << 16 };
            let v = self.below(range);
            operand(self, v)
        };
        let c = operand(self, c);
        let mask = if self.chance(80) {
            "-1".to_string()
        } else {
            (self.below(1 << 32) | 1).to_string()
        };
        let (d, a) = (self.a(), self.a());
        if self.chance(40) {
            let (x, y) = (self.a(), self.a());
            text += &format!(
                "  shfl.sync.{mode}.b32 {d}|%sp, {a}, {b}, {c}, {mask};\n  \
                 selp.b32 {x}, {x}, {y}, %sp;\n"
            );
        } else {
            text += &format!("  shfl.sync.{mode}.b32 {d}, {a}, {b}, {c}, {mask};\n");
        }
        text
    }

    /// A branch on the warp's number (`%lin >> 5`) over a few items without barriers.
    fn warp_branch(&mut self) -> String {
        let over = self.label();
        let cmp = *self.rng.pick(&["eq", "ne", "lt", "gt"]);
        let k = self.below(u64::from(self.nt.div_ceil(32)));
        let mut text = format!(
            "  shr.u32 %wn, %lin, 5;\n  setp.{cmp}.u32 %wq, %wn, {k};\n  @%wq bra {over};\n"
        );
        self.warp_branch = true;
        text += &self.items(3);
        self.warp_branch = false;
        text += &format!("{over}:\n");
        text
    }

    /// A tree reduction's loop: `%ub` halves from half the row down to 1, and the threads
    /// from `%tx` = `%ub` on pass over the body (whole warps of them in most rounds, which
    /// the quiet path takes along after the first idle one). The body starts with an
    /// access, so that an idle warp's quiet path writes only `%ub` and `%lp`.
    fn halving_loop(&mut self) -> String {
        let (l, skip) = (self.label(), self.label());
        let cmp = *self.rng.pick(&["ge", "gt"]);
        let mut text = format!(
            "  shr.u32 %ub, %nx, 1;\n{l}:\n  setp.{cmp}.u32 %uq, %tx, %ub;\n  @%uq bra {skip};\n"
        );
        self.depth += 1;
        text += &match self.chance(50) {
            true => self.own_store(),
            false => self.read_other(),
        };
        text += &self.items(2);
        self.depth -= 1;
        text += &format!(
            "{skip}:\n  bar.sync 0;\n  shr.u32 %ub, %ub, 1;\n  setp.ne.u32 %lp, %ub, 0;\n  \
             @%lp bra {l};\n"
        );
        text
    }

    /// A loop of a uniform trip count around a barrier and a few items.
    fn barrier_loop(&mut self) -> String {
        let l = self.label();
        let n = 1 + self.below(3);
        let mut text = format!("  mov.u32 %lc, {n};\n{l}:\n");
        text += &self.items(3);
        text += "  bar.sync 0;\n";
        text += &format!("  sub.u32 %lc, %lc, 1;\n  setp.ne.u32 %lp, %lc, 0;\n  @%lp bra {l};\n");
        text
    }
}
