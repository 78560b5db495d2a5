//! Random cooperative kernels: the threads of a block meet at barriers and warp collectives
//! and talk through `.shared` memory (`src/block/` has the semantics both engines follow).
//!
//! `k(.param .u64 inp, .param .u64 out)` with the slots of [`super::program`]: each thread
//! loads its registers from its slot of `inp`, runs a body, then stores its registers and
//! [`DUMP`] words of shared memory to its slot of `out` ([`COOP_OUT_BYTES`] each). The body
//! mixes the per-thread items of the other generator with stores to the thread's own word of
//! the `.shared` array `sh`; barriers (`bar`/`barrier` `.sync`, by id, in a register, with a
//! thread count and with `bar.arrive` where every warp is whole and no thread leaves early);
//! loads of other threads' words (a neighbour's, the reversed index's, `tid ^ k`'s, any);
//! barriers inside loops of a uniform trip count; early exits before uncounted barriers;
//! if/else on per-thread predicates as compilers write them, a side sometimes leaving;
//! `shfl.sync` in every mode with CUDA's widths and odd `c` values; votes, ballots, `match`,
//! `redux`, `bar.red`, `activemask`, `elect`, `bar.warp.sync`, `%lanemask_*`; shared
//! atomics and reductions; generic addresses into shared memory (`cvta`, `isspacep`); and
//! collectives under a divergent guard, with the active mask or now and then the full mask
//! (which may leave the block stuck: a fault both engines must report alike). Every access
//! stays in bounds by construction: addresses are computed from the thread's index or
//! reduced modulo the array, each in the one body line (shrinking deletes whole lines).
//!
//! Some modules have `.func`s with a barrier or a shuffle inside, which the body calls (and
//! the front end inlines). Launches exercise partial warps (blocks of 7, 48, 100 threads,
//! rows of 33) and sometimes
//! several blocks; some have dynamic shared memory `dyn` of a random size.

use super::{
    Gen, IN_BYTES, Layout, OUT_BYTES, Program, Rng, helper, load_registers, register_decls,
    store_registers,
};
use crate::engine::Dim3;

/// Words of shared memory each thread copies to its output slot after its registers.
const DUMP: usize = 8;
/// Bytes of each thread's output slot in a cooperative program.
pub const COOP_OUT_BYTES: usize = OUT_BYTES + DUMP * 4;
/// Words of `sh` past the power of two at or above the block's thread count.
const EXTRA: u32 = 32;
/// `elect.sync` needs PTX ISA 8.0 and sm_90.
const HEADER: &str = ".version 8.3\n.target sm_90\n.address_size 64\n";

/// The blocks a cooperative program runs as (x, y, z): whole warps, partial last warps,
/// rows shorter than a warp or one thread past it (rows of 16 run in groups of 16 in the
/// unchecked JIT), and 3-D blocks.
const BLOCKS: [(u32, u32, u32); 11] = [
    (32, 1, 1),
    (48, 1, 1),
    (64, 1, 1),
    (100, 1, 1),
    (128, 1, 1),
    (96, 1, 1),
    (7, 1, 1),
    (16, 3, 1),
    (33, 2, 1),
    (8, 4, 2),
    (16, 2, 2),
];

/// A random cooperative program of about `size` body items, with the helper `.func` of
/// [`super::program`] the body may call.
pub fn coop_program(rng: &mut Rng, size: usize) -> Program {
    let helper = helper(rng);
    let (x, y, z) = *rng.pick(&BLOCKS);
    let block = Dim3::new(x, y, z);
    let grid = Dim3::x(match rng.below(10) {
        0..=5 => 1,
        6..=8 => 2,
        _ => 3,
    });
    let nt = x * y * z;
    let pow = nt.next_power_of_two();
    let words = pow + EXTRA;
    // Dynamic shared memory: an array the kernel uses, or bytes only `%dynamic_smem_size`
    // sees, or none.
    let (dyn_words, shared_bytes) = if rng.chance(40) {
        let w = *rng.pick(&[4, 16, 33, nt, 2 * pow]);
        (w, 4 * w + rng.below(4) as u32)
    } else if rng.chance(50) {
        (0, 0)
    } else {
        (0, rng.below(2048) as u32)
    };
    let exits = rng.chance(40);
    let module_sh = rng.chance(50);
    let final_barrier = rng.chance(60);
    let pad = rng.chance(30).then(|| 1 + rng.below(40));

    let sync_funcs = rng.chance(50);
    let mut s = HEADER.to_string() + &helper;
    if sync_funcs {
        s += SYNC_FUNCS;
    }
    let sh_decl = format!(".shared .align 8 .b32 sh[{words}];\n");
    if let Some(n) = pad {
        s += &format!(".shared .align 16 .b8 pad[{n}];\n");
    }
    if module_sh {
        s += &sh_decl;
    }
    if dyn_words > 0 || rng.chance(20) {
        s += ".extern .shared .align 16 .b8 dyn[];\n";
    }
    s += ".visible .entry k(.param .u64 inp, .param .u64 out)\n{\n";
    s += &register_decls();
    s += "  .reg .b32 %lin, %sb, %so, %db, %x, %y, %am;\n  .reg .b64 %x64, %g64;\n  \
          .reg .pred %q, %v;\n";
    if !module_sh {
        s += &format!("  {sh_decl}");
    }
    s += "  ld.param.u64 %in, [inp];\n  ld.param.u64 %out, [out];\n";
    // %lin: the thread's index in its block, x fastest (its warp is %lin / 32).
    s += "  mov.u32 %x, %tid.z;\n  mov.u32 %y, %ntid.y;\n  mov.u32 %n, %tid.y;\n  \
          mad.lo.u32 %x, %x, %y, %n;\n  mov.u32 %y, %ntid.x;\n  mov.u32 %n, %tid.x;\n  \
          mad.lo.u32 %lin, %x, %y, %n;\n";
    s += &format!(
        "  mov.u32 %t, %ctaid.x;\n  mad.lo.u32 %t, %t, {nt}, %lin;\n  \
         mul.wide.u32 %t64, %t, {};\n  add.u64 %in, %in, %t64;\n  \
         mul.wide.u32 %t64, %t, {COOP_OUT_BYTES};\n  add.u64 %out, %out, %t64;\n",
        IN_BYTES
    );
    s += &load_registers();
    s += "  mov.u32 %sb, sh;\n  shl.b32 %so, %lin, 2;\n  add.u32 %so, %so, %sb;\n";
    if dyn_words > 0 {
        s += "  mov.u32 %db, dyn;\n";
    }

    let mut c = Coop {
        g: Gen {
            rng,
            out: Vec::new(),
            labels: 0,
            calls: true,
        },
        nt,
        pow,
        words,
        dyn_words,
        counted: nt.is_multiple_of(32) && !exits,
        exits,
        sync_funcs,
    };
    for _ in 0..size {
        c.item(true);
    }
    let body = c.g.out;

    let mut e = String::new();
    if final_barrier {
        e += "  bar.sync 0;\n";
    }
    // Threads that leave early by `bra $DONE` still store their registers.
    e += "$DONE:\n";
    e += &store_registers();
    for j in 0..DUMP {
        let at = OUT_BYTES + 4 * j;
        if j == DUMP - 1 && dyn_words > 0 {
            e += &format!(
                "  rem.u32 %x, %lin, {dyn_words};\n  shl.b32 %x, %x, 2;\n  add.u32 %x, %x, %db;\n"
            );
        } else {
            e += &format!(
                "  mad.lo.u32 %x, %lin, {DUMP}, {j};\n  rem.u32 %x, %x, {words};\n  \
                 shl.b32 %x, %x, 2;\n  add.u32 %x, %x, %sb;\n"
            );
        }
        e += &format!("  ld.shared.b32 %y, [%x];\n  st.global.b32 [%out+{at}], %y;\n");
    }
    e += "  ret;\n}\n";
    Program {
        layout: Layout::Coop {
            grid,
            block,
            shared_bytes,
            lanes: false,
        },
        prologue: s,
        body,
        epilogue: e,
    }
}

struct Coop<'r> {
    g: Gen<'r>,
    /// Threads in a block.
    nt: u32,
    /// `nt` rounded up to a power of two.
    pow: u32,
    /// Words of `sh`.
    words: u32,
    /// Words of `dyn` the kernel uses (0: none).
    dyn_words: u32,
    /// Whether barriers may count `nt` threads: every warp whole and no thread leaves.
    counted: bool,
    /// Whether threads may leave early.
    exits: bool,
    /// Whether the module has [`SYNC_FUNCS`].
    sync_funcs: bool,
}

/// Functions with a barrier and a warp collective inside, which run inlined into the
/// kernel: `xchg` stores `v` at shared address `own`, waits at `bar.sync 0` and returns the
/// word at `other` (plus its `.local` word, 0 on every call); `bfly` is a butterfly shuffle
/// over the whole warp whose lanes without a partner add 1.
const SYNC_FUNCS: &str = "\
.func (.param .b32 r) xchg(.param .b32 v, .param .b32 own, .param .b32 other)
{
  .reg .b32 %v, %a, %b, %z;
  .local .align 4 .b32 fresh;
  ld.param.b32 %v, [v];
  ld.param.b32 %a, [own];
  ld.param.b32 %b, [other];
  st.shared.b32 [%a], %v;
  bar.sync 0;
  ld.shared.b32 %v, [%b];
  ld.local.b32 %z, [fresh];
  add.u32 %v, %v, %z;
  st.local.b32 [fresh], %v;
  st.param.b32 [r], %v;
  ret;
}
.func (.reg .b32 r) bfly(.reg .b32 v, .reg .b32 k)
{
  .reg .pred %p;
  shfl.sync.bfly.b32 r|%p, v, k, 31, -1;
  @!%p add.u32 r, r, 1;
  ret;
}
";

/// One body line of several instructions.
fn lines(ins: &[String]) -> String {
    ins.iter().map(|i| format!("  {i}\n")).collect()
}

impl Coop<'_> {
    fn rng(&mut self) -> &mut Rng {
        self.g.rng
    }
    fn below(&mut self, n: u64) -> u64 {
        self.g.rng.below(n)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.g.rng.chance(percent)
    }
    fn r(&mut self) -> String {
        self.g.r()
    }
    fn rd(&mut self) -> String {
        self.g.rd()
    }
    fn p(&mut self) -> String {
        self.g.p()
    }
    fn push(&mut self, ins: &[String]) {
        self.g.out.push(lines(ins));
    }

    fn item(&mut self, top: bool) {
        match self.below(100) {
            0..=29 => self.g.item(top),
            30..=35 if self.sync_funcs && self.chance(40) => self.call_sync_func(),
            30..=35 => {
                // The classic exchange: own word, barrier, another thread's word.
                self.own_store();
                self.barrier();
                self.read_other();
            }
            36..=39 => self.own_store(),
            40..=45 => self.barrier(),
            46..=51 => self.read_other(),
            52..=55 if top => self.barrier_loop(),
            56..=58 if self.exits => {
                self.exit();
                if self.chance(50) {
                    self.barrier();
                }
            }
            59..=76 => {
                let mut ins = Vec::new();
                let mask = self.mask(&mut ins);
                self.collective(&mask, &mut ins);
                self.push(&ins);
            }
            77..=80 => self.divergent(),
            81..=83 => self.bar_red(),
            84..=86 => self.special(),
            87..=92 => self.atomic(),
            93..=95 => self.generic(),
            96..=97 if self.dyn_words > 0 => self.dynamic(),
            98 => self.write_other(),
            _ => self.if_else(),
        }
    }

    /// A per-thread predicate in `%q`: by the thread's index, its lane, or its data.
    fn thread_pred(&mut self, ins: &mut Vec<String>) {
        match self.below(3) {
            0 => {
                let cmp = *self.rng().pick(&["lt", "ge"]);
                let k = self.below(self.nt as u64);
                ins.push(format!("setp.{cmp}.u32 %q, %lin, {k};"));
            }
            1 => {
                ins.push("and.b32 %x, %lin, 31;".into());
                let k = self.below(33);
                ins.push(format!("setp.lt.u32 %q, %x, {k};"));
            }
            _ => {
                let op = if self.chance(50) { "mov" } else { "not" };
                ins.push(format!("{op}.pred %q, {};", self.p()));
            }
        }
    }

    /// An if/else on a per-thread predicate as compilers write it (the `if` side ends in a
    /// branch past the `else` side), each side a few items of per-thread work; with exits,
    /// sometimes a side that leaves (`exit`, `ret` or a branch to the end) instead.
    fn if_else(&mut self) {
        let mut ins = Vec::new();
        self.thread_pred(&mut ins);
        let (other, end) = (self.g.label(), self.g.label());
        ins.push(format!("@%q bra {other};"));
        // One body item, so that shrinking keeps or deletes the branch with its labels.
        let mut text = lines(&ins);
        text += &self.side();
        let leave = self.exits && self.chance(30);
        let jump = if leave {
            self.rng()
                .pick(&["exit;", "ret;", "bra $DONE;"])
                .to_string()
        } else {
            let bra = *self.rng().pick(&["bra.uni", "bra"]);
            format!("{bra} {end};")
        };
        text += &format!("  {jump}\n{other}:\n");
        text += &self.side();
        text += &format!("{end}:\n");
        self.g.out.push(text);
    }

    /// The text of one side of a per-thread branch: a few items of per-thread work or
    /// stores of the thread's own word.
    fn side(&mut self) -> String {
        let at = self.g.out.len();
        for _ in 0..1 + self.below(2) {
            self.side_item();
        }
        self.g.out.drain(at..).collect()
    }

    fn side_item(&mut self) {
        if self.chance(30) {
            self.own_store();
        } else {
            self.g.item(false);
        }
    }

    /// A call of one of [`SYNC_FUNCS`]: the exchange with another thread's word, or the
    /// warp's butterfly.
    fn call_sync_func(&mut self) {
        let mut ins = Vec::new();
        let (v, d) = (self.r(), self.r());
        if self.chance(60) {
            self.other_index(&mut ins);
            ins.push("shl.b32 %x, %x, 2;".into());
            ins.push("add.u32 %x, %x, %sb;".into());
            ins.push("{".into());
            ins.push(
                ".param .b32 p0;\n  .param .b32 p1;\n  .param .b32 p2;\n  .param .b32 r0;".into(),
            );
            ins.push(format!("st.param.b32 [p0], {v};"));
            ins.push("st.param.b32 [p1], %so;".into());
            ins.push("st.param.b32 [p2], %x;".into());
            ins.push("call (r0), xchg, (p0, p1, p2);".into());
            ins.push(format!("ld.param.b32 {d}, [r0];"));
            ins.push("}".into());
        } else {
            let k = 1 << self.below(5);
            ins.push(format!("mov.u32 %y, {k};"));
            ins.push(format!("call ({d}), bfly, ({v}, %y);"));
        }
        self.push(&ins);
    }

    /// A barrier id: mostly 0.
    fn bar_id(&mut self) -> u64 {
        if self.chance(60) { 0 } else { self.below(16) }
    }

    /// A barrier every thread that has not left reaches.
    fn barrier(&mut self) {
        let id = self.bar_id();
        let counted = self.counted && self.chance(30);
        if counted && self.nt >= 64 && self.chance(40) {
            // Warp 0 only arrives; the others wait for it (producer and consumers).
            let nt = self.nt;
            return self.push(&[
                "setp.lt.u32 %q, %lin, 32;".into(),
                format!("@%q bar.arrive {id}, {nt};"),
                format!("@!%q bar.sync {id}, {nt};"),
            ]);
        }
        let count = if counted {
            format!(", {}", self.nt)
        } else {
            String::new()
        };
        let op = *self.rng().pick(&[
            "bar.sync",
            "bar.sync",
            "barrier.sync",
            "barrier.sync.aligned",
            "bar.cta.sync",
            "barrier.cta.sync",
        ]);
        if self.chance(15) {
            self.push(&[format!("mov.u32 %x, {id};"), format!("{op} %x{count};")]);
        } else {
            self.push(&[format!("{op} {id}{count};")]);
        }
    }

    /// A store of a register to the thread's own word of `sh`.
    fn own_store(&mut self) {
        let ins = match self.below(6) {
            0..=2 => {
                let ty = *self.rng().pick(&["b32", "u32", "s32"]);
                vec![format!("st.shared.{ty} [%so], {};", self.r())]
            }
            3 => vec![format!("st.volatile.shared.u32 [%so], {};", self.r())],
            4 => vec![format!("st.shared.f32 [%so], {};", self.g.f())],
            _ => vec![
                "cvt.u64.u32 %x64, %so;".into(),
                "cvta.shared.u64 %g64, %x64;".into(),
                format!("st.b32 [%g64], {};", self.r()),
            ],
        };
        self.push(&ins);
    }

    /// The index into `sh` of another thread's word (or any word) in `%x`; whether it is
    /// below `pow` (so that up to [`EXTRA`] words past it are in `sh` too).
    fn other_index(&mut self, ins: &mut Vec<String>) -> bool {
        let nt = self.nt;
        match self.below(6) {
            0 | 1 => {
                let k = 1 + self.below(nt as u64 - 1);
                ins.push(format!("add.u32 %x, %lin, {k};"));
                ins.push(format!("rem.u32 %x, %x, {nt};"));
            }
            2 => ins.push(format!("sub.u32 %x, {}, %lin;", nt - 1)),
            3 | 4 => {
                let k = 1 + self.below(self.pow as u64 - 1);
                ins.push(format!("xor.b32 %x, %lin, {k};"));
            }
            _ => {
                let r = self.r();
                ins.push(format!("rem.u32 %x, {r}, {};", self.words));
                return false;
            }
        }
        true
    }

    /// A load of another thread's word of `sh` (or of two, or through a generic address).
    fn read_other(&mut self) {
        let mut ins = Vec::new();
        let below_pow = self.other_index(&mut ins);
        ins.push("shl.b32 %x, %x, 2;".into());
        ins.push("add.u32 %x, %x, %sb;".into());
        match self.below(8) {
            0..=2 => {
                let ty = *self.rng().pick(&["b32", "u32", "s32", "u16", "s8"]);
                ins.push(format!("ld.shared.{ty} {}, [%x];", self.r()));
            }
            3 if below_pow => {
                let off = 4 * self.below(EXTRA as u64);
                ins.push(format!("ld.shared.b32 {}, [%x+{off}];", self.r()));
            }
            3 => ins.push(format!("ld.volatile.shared.u32 {}, [%x];", self.r())),
            4 => {
                // `sh` is 8-aligned: the pair holding the word.
                ins.push("and.b32 %x, %x, -8;".into());
                ins.push(format!("ld.shared.b64 {}, [%x];", self.rd()));
            }
            5 => {
                ins.push("and.b32 %x, %x, -8;".into());
                let (a, b) = (self.r(), self.r());
                ins.push(format!("ld.shared.v2.b32 {{{a}, {b}}}, [%x];"));
            }
            6 => {
                ins.push("cvt.u64.u32 %x64, %x;".into());
                ins.push(format!("ld.shared.f32 {}, [%x64];", self.g.f()));
            }
            _ => {
                ins.push("cvt.u64.u32 %x64, %x;".into());
                ins.push("cvta.shared.u64 %g64, %x64;".into());
                ins.push(format!("ld.b32 {}, [%g64];", self.r()));
            }
        }
        self.push(&ins);
    }

    /// A store to another thread's word of `sh` (a race the schedule decides).
    fn write_other(&mut self) {
        let mut ins = Vec::new();
        self.other_index(&mut ins);
        ins.push("shl.b32 %x, %x, 2;".into());
        ins.push("add.u32 %x, %x, %sb;".into());
        ins.push(format!("st.shared.b32 [%x], {};", self.r()));
        self.push(&ins);
    }

    /// A loop of 1-3 iterations (the same for every thread) around items with a barrier.
    fn barrier_loop(&mut self) {
        let l = self.g.label();
        let n = 1 + self.below(3);
        self.g.out.push(format!("  mov.u32 %lc, {n};\n{l}:\n"));
        let k = 2 + self.below(5);
        let at = self.below(k);
        for i in 0..k {
            if i == at {
                self.barrier();
            } else {
                self.item(false);
            }
        }
        self.g.out.push(format!(
            "  sub.u32 %lc, %lc, 1;\n  setp.ne.u32 %lp, %lc, 0;\n  @%lp bra {l};\n"
        ));
    }

    /// Some threads leave: by their index, their warp or their data; by `exit`, `ret`, or a
    /// branch to the stores at the end.
    fn exit(&mut self) {
        let nt = self.nt as u64;
        let mut ins = Vec::new();
        match self.below(4) {
            0 => ins.push(format!("setp.ge.u32 %q, %lin, {};", 1 + self.below(nt))),
            1 => {
                ins.push(format!("rem.u32 %x, %lin, {};", 2 + self.below(6)));
                ins.push("setp.eq.u32 %q, %x, 0;".into());
            }
            2 => {
                ins.push("shr.u32 %x, %lin, 5;".into());
                ins.push(format!(
                    "setp.eq.u32 %q, %x, {};",
                    self.below(nt.div_ceil(32))
                ));
            }
            _ => {
                let op = if self.chance(50) { "mov" } else { "not" };
                ins.push(format!("{op}.pred %q, {};", self.p()));
            }
        }
        let how = *self
            .rng()
            .pick(&["exit;", "ret;", "bra $DONE;", "bra $DONE;"]);
        ins.push(format!("@%q {how}"));
        self.push(&ins);
    }

    /// A membermask for code every lane of the warp reaches: mostly all lanes, else the
    /// active mask, a lane mask, or any value (lanes it names that have left or do not
    /// exist are not waited for).
    fn mask(&mut self, ins: &mut Vec<String>) -> String {
        match self.below(20) {
            0..=9 => "-1".into(),
            10..=12 => "0xffffffff".into(),
            13..=15 => {
                ins.push("activemask.b32 %am;".into());
                "%am".into()
            }
            16 => {
                let m = *self.rng().pick(&["ge", "le", "gt", "lt", "eq"]);
                ins.push(format!("mov.u32 %am, %lanemask_{m};"));
                "%am".into()
            }
            17 => format!("{}", self.rng().next_u64() as u32),
            _ => self.r(),
        }
    }

    /// A predicate source: a register (maybe negated) or a test of the thread's index into
    /// `%v`.
    fn pred_src(&mut self, ins: &mut Vec<String>) -> String {
        let neg = if self.chance(30) { "!" } else { "" };
        if self.chance(35) {
            let (cmp, k) = match self.below(3) {
                0 => ("lt", self.below(self.nt as u64 + 1)),
                1 => ("ge", self.below(40)),
                _ => ("ne", self.below(self.nt as u64)),
            };
            ins.push(format!("setp.{cmp}.u32 %v, %lin, {k};"));
            format!("{neg}%v")
        } else {
            format!("{neg}{}", self.p())
        }
    }

    /// A 32-bit source for a collective: a register, the thread's index or its warp.
    fn value(&mut self, ins: &mut Vec<String>) -> String {
        match self.below(10) {
            0 => "%lin".into(),
            1 => {
                ins.push("shr.u32 %y, %lin, 5;".into());
                "%y".into()
            }
            2 => {
                let r = self.r();
                ins.push(format!("and.b32 %y, {r}, 3;"));
                "%y".into()
            }
            _ => self.r(),
        }
    }

    /// One warp collective with membermask `mask`, after whatever `ins` holds.
    fn collective(&mut self, mask: &str, ins: &mut Vec<String>) {
        let text = match self.below(20) {
            0..=7 => {
                let mode = *self.rng().pick(&["up", "down", "bfly", "idx"]);
                let d = if self.chance(40) {
                    format!("{}|{}", self.r(), self.p())
                } else {
                    self.r()
                };
                let a = self.value(ins);
                let b = if self.chance(75) {
                    self.below(41).to_string()
                } else {
                    self.r()
                };
                let c = match self.below(10) {
                    0..=7 => {
                        // As CUDA's __shfl_*_sync(mask, v, b, width) build it.
                        let w = *self.rng().pick(&[2u32, 4, 8, 16, 32]);
                        let clamp = if mode == "up" { 0 } else { 31 };
                        (((32 - w) << 8) | clamp).to_string()
                    }
                    8 => (self.rng().next_u64() as u32).to_string(),
                    _ => self.r(),
                };
                format!("shfl.sync.{mode}.b32 {d}, {a}, {b}, {c}, {mask};")
            }
            8..=10 => {
                let a = self.pred_src(ins);
                if self.chance(30) {
                    format!("vote.sync.ballot.b32 {}, {a}, {mask};", self.r())
                } else {
                    let mode = *self.rng().pick(&["all", "any", "uni"]);
                    format!("vote.sync.{mode}.pred {}, {a}, {mask};", self.p())
                }
            }
            11..=12 => {
                let (ty, a) = if self.chance(30) {
                    let a = if self.chance(50) {
                        self.rd()
                    } else {
                        let v = self.value(ins);
                        ins.push(format!("cvt.u64.u32 %x64, {v};"));
                        "%x64".into()
                    };
                    ("b64", a)
                } else {
                    ("b32", self.value(ins))
                };
                if self.chance(50) {
                    format!("match.any.sync.{ty} {}, {a}, {mask};", self.r())
                } else {
                    let d = if self.chance(70) {
                        format!("{}|{}", self.r(), self.p())
                    } else {
                        self.r()
                    };
                    format!("match.all.sync.{ty} {d}, {a}, {mask};")
                }
            }
            13..=15 => {
                let (op, ty) = *self.rng().pick(&[
                    ("add", "u32"),
                    ("add", "s32"),
                    ("min", "u32"),
                    ("min", "s32"),
                    ("max", "u32"),
                    ("max", "s32"),
                    ("and", "b32"),
                    ("or", "b32"),
                    ("xor", "b32"),
                ]);
                let a = self.value(ins);
                format!("redux.sync.{op}.{ty} {}, {a}, {mask};", self.r())
            }
            16 | 17 => format!("elect.sync {}|{}, {mask};", self.r(), self.p()),
            18 => format!("activemask.b32 {};", self.r()),
            _ => format!("bar.warp.sync {mask};"),
        };
        ins.push(text);
    }

    /// Collectives that only some lanes of a warp reach: behind a branch or under a guard,
    /// with the active mask (the lanes that are there), or now and then the full mask,
    /// which the lanes elsewhere never join unless they have left (a stuck block, then).
    fn divergent(&mut self) {
        let mut ins = Vec::new();
        self.thread_pred(&mut ins);
        let full = self.chance(6);
        let mask = if full { "-1" } else { "%am" };
        let mut inner = Vec::new();
        if !full {
            inner.push("activemask.b32 %am;".to_string());
        }
        for _ in 0..1 + self.below(2) {
            self.collective(mask, &mut inner);
        }
        // Mostly the warp meets again after (`__syncwarp()`); else its lanes stay apart,
        // reaching later collectives in different rounds of the schedule.
        let rejoin = if self.chance(70) {
            "  bar.warp.sync -1;\n"
        } else {
            ""
        };
        if self.chance(50) {
            let l = self.g.label();
            ins.push(format!("@!%q bra {l};"));
            ins.extend(inner);
            let text = lines(&ins) + &format!("{l}:\n") + rejoin;
            self.g.out.push(text);
        } else {
            ins.extend(inner.into_iter().map(|i| format!("@%q {i}")));
            self.g.out.push(lines(&ins) + rejoin);
        }
    }

    /// `bar.red`: a count, an and or an or of a predicate over the block.
    fn bar_red(&mut self) {
        let mut ins = Vec::new();
        let id = self.bar_id();
        let count = if self.counted && self.chance(30) {
            format!(", {}", self.nt)
        } else {
            String::new()
        };
        let a = self.pred_src(&mut ins);
        ins.push(match self.below(3) {
            0 => format!("bar.red.popc.u32 {}, {id}{count}, {a};", self.r()),
            1 => format!("bar.red.and.pred {}, {id}{count}, {a};", self.p()),
            _ => format!("bar.red.or.pred {}, {id}{count}, {a};", self.p()),
        });
        self.push(&ins);
    }

    /// A special register of the lane or the block's shared memory, or the active mask.
    fn special(&mut self) {
        let d = self.r();
        let s = *self.rng().pick(&[
            "%lanemask_eq",
            "%lanemask_le",
            "%lanemask_lt",
            "%lanemask_ge",
            "%lanemask_gt",
            "%laneid",
            "%dynamic_smem_size",
            "%total_smem_size",
        ]);
        if self.chance(20) {
            self.push(&[format!("activemask.b32 {d};")]);
        } else {
            self.push(&[format!("mov.u32 {d}, {s};")]);
        }
    }

    /// `atom` or `red` on a word of `sh` (or `dyn`): at a fixed offset, at a random word,
    /// or through a generic address.
    fn atomic(&mut self) {
        let (op, ty) = *self.rng().pick(super::ATOMIC_FORMS);
        let wide = ty.ends_with("64");
        let size: u64 = if wide { 8 } else { 4 };
        let mut ins = Vec::new();
        let (space, addr) = if self.dyn_words >= 2 && self.chance(25) {
            let off = size * self.below(self.dyn_words as u64 * 4 / size);
            (".shared", format!("[dyn+{off}]"))
        } else {
            let slots = self.words as u64 * 4 / size;
            match self.below(4) {
                0 | 1 => (".shared", format!("[sh+{}]", size * self.below(slots))),
                2 => {
                    let r = self.r();
                    ins.push(format!("rem.u32 %x, {r}, {slots};"));
                    ins.push(format!("mul.lo.u32 %x, %x, {size};"));
                    ins.push("add.u32 %x, %x, %sb;".into());
                    (".shared", "[%x]".into())
                }
                _ => {
                    ins.push("mov.u64 %x64, sh;".into());
                    ins.push("cvta.shared.u64 %g64, %x64;".into());
                    ("", format!("[%g64+{}]", size * self.below(slots)))
                }
            }
        };
        let mut reg = || match ty {
            "f32" => self.g.f(),
            "f64" => self.g.fd(),
            t if t.ends_with("64") => self.rd(),
            _ => self.r(),
        };
        let (d, b, c) = (reg(), reg(), reg());
        let red = !matches!(op, "exch" | "cas") && self.chance(25);
        ins.push(if red {
            format!("red{space}.{op}.{ty} {addr}, {b};")
        } else if op == "cas" {
            format!("atom{space}.cas.{ty} {d}, {addr}, {b}, {c};")
        } else {
            format!("atom{space}.{op}.{ty} {d}, {addr}, {b};")
        });
        self.push(&ins);
    }

    /// Generic addresses: `cvta` into shared memory and back, `isspacep` of shared, global
    /// and local addresses, a load through one.
    fn generic(&mut self) {
        let mut ins = vec![
            "mov.u64 %x64, sh;".to_string(),
            "cvta.shared.u64 %g64, %x64;".into(),
        ];
        match self.below(5) {
            0 => {
                let off = 4 * self.below(self.words as u64);
                ins.push(format!("add.u64 %g64, %g64, {off};"));
                ins.push(format!("cvta.to.shared.u64 {}, %g64;", self.rd()));
            }
            1 => {
                let space = *self.rng().pick(&["shared", "global", "local"]);
                ins.push(format!("isspacep.{space} {}, %g64;", self.p()));
            }
            2 => {
                ins.clear();
                let (space, addr) = *self.rng().pick(&[
                    ("global", "%in"),
                    ("shared", "%out"),
                    ("global", "%out"),
                    ("local", "%in"),
                ]);
                ins.push(format!("isspacep.{space} {}, {addr};", self.p()));
            }
            3 => {
                ins.clear();
                ins.push("mov.u64 %x64, loc;".into());
                ins.push("cvta.local.u64 %g64, %x64;".into());
                let space = *self.rng().pick(&["shared", "local"]);
                ins.push(format!("isspacep.{space} {}, %g64;", self.p()));
            }
            _ => {
                let off = 4 * self.below(self.words as u64);
                ins.push(format!("ld.u32 {}, [%g64+{off}];", self.r()));
            }
        }
        self.push(&ins);
    }

    /// The dynamic array: a store to the thread's word (modulo its size), or a load of any.
    fn dynamic(&mut self) {
        let w = self.dyn_words;
        let mut ins = Vec::new();
        let store = self.chance(50);
        if store {
            ins.push(format!("rem.u32 %x, %lin, {w};"));
        } else {
            let r = self.r();
            ins.push(format!("rem.u32 %x, {r}, {w};"));
        }
        ins.push("shl.b32 %x, %x, 2;".into());
        ins.push("add.u32 %x, %x, %db;".into());
        ins.push(if store {
            format!("st.shared.b32 [%x], {};", self.r())
        } else {
            format!("ld.shared.b32 {}, [%x];", self.r())
        });
        self.push(&ins);
    }
}
