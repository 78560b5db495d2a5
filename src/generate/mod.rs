//! Random PTX programs and edge-biased values, for differential testing of the two engines.
//!
//! A program is one kernel `k(.param .u64 inp, .param .u64 out)`: each thread loads its own
//! slot of `inp` into registers of every class (.b32, .b64, .f32, .f64, predicates), runs a
//! random body, and stores every register to its own slot of `out`. Bodies mix straight-line
//! integer, carry-chain, float (every rounding mode), conversion, comparison, video and memory
//! instructions, predication, forward branches and bounded loops. Programs are valid PTX by
//! construction (the tests parse every one) and always terminate.
//!
//! Two more shapes: element-wise array programs for the JIT's SIMD lanes ([`array_program`],
//! `arrays.rs`) and cooperative kernels whose threads share `.shared` memory and meet at
//! barriers and warp collectives ([`coop_program`], `coop.rs`), which end or, now and then,
//! leave a block stuck (a fault).

mod arrays;
mod coop;
mod groups;

pub use arrays::{ARRAY_BYTES, array_input, array_program};
pub use coop::{COOP_OUT_BYTES, coop_program};
pub use groups::group_program;

use crate::ast::Type;
use crate::engine::Dim3;

/// (operation, type) pairs of `atom` the generators draw from: each operation with types the
/// manual gives it.
const ATOMIC_FORMS: &[(&str, &str)] = &[
    ("and", "b32"),
    ("or", "b64"),
    ("xor", "b32"),
    ("exch", "b32"),
    ("exch", "b64"),
    ("cas", "b32"),
    ("cas", "b64"),
    ("add", "u32"),
    ("add", "s32"),
    ("add", "u64"),
    ("add", "f32"),
    ("add", "f64"),
    ("inc", "u32"),
    ("dec", "u32"),
    ("min", "s32"),
    ("min", "u64"),
    ("max", "u32"),
    ("max", "s64"),
];

/// A small deterministic generator (xorshift64*).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in 0..n.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    /// A uniform float in [lo, hi).
    pub fn f64_in(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
    /// `items` in a uniformly random order (Fisher–Yates).
    fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// An edge-biased value of type `ty` (its bit pattern): half the time one of the type's edge
/// values (0, ±1, min/max, all ones, sign bit; for floats also subnormals, infinities, NaNs,
/// ±0), else uniform bits.
pub fn edge_value(rng: &mut Rng, ty: Type) -> u64 {
    if rng.chance(50) {
        return rng.next_u64() & ty.mask();
    }
    match ty {
        Type::F32 => *rng.pick(&[
            0u32,
            0x8000_0000,
            0x3f80_0000,
            0xbf80_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7fc0_0000,
            0x7f80_0001,
            0x0000_0001,
            0x807f_ffff,
            0x0080_0000,
            0x7f7f_ffff,
            0xff7f_ffff,
            0x4f00_0000,
            0x3f00_0000,
            // NaNs with payloads, of both signs and kinds (they pass through f64 and
            // conversions as the hardware passes them).
            0xffc0_0abc,
            0x7fa1_2345,
        ]) as u64,
        Type::F64 => *rng.pick(&[
            0u64,
            1 << 63,
            0x3ff0_0000_0000_0000,
            0xbff0_0000_0000_0000,
            0x7ff0_0000_0000_0000,
            0xfff0_0000_0000_0000,
            0x7ff8_0000_0000_0000,
            0x7ff0_0000_0000_0001,
            1,
            0x800f_ffff_ffff_ffff,
            0x0010_0000_0000_0000,
            0x7fef_ffff_ffff_ffff,
            0x43e0_0000_0000_0000,
            0x3fe0_0000_0000_0000,
            0xfff8_0000_0000_0abc,
            0x7ff4_0000_0001_2345,
        ]),
        Type::Pred => rng.below(2),
        t => {
            let bits = t.bits();
            let sign = 1u64 << (bits - 1);
            *rng.pick(&[
                0,
                1,
                t.mask(),
                sign,
                sign - 1,
                sign + 1,
                2,
                0x7f,
                0x80,
                0xff,
                0x8000,
                31,
                32,
                33,
            ]) & t.mask()
        }
    }
}

/// PTX-shaped fragments [`mutate`] inserts: punctuation, types, registers, literals at the
/// edges, opcodes, selectors, comment and string openers, odd characters.
pub const MUTATION_TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    ".u32",
    ".s64",
    ".f32",
    ".pred",
    ".b8",
    ".param",
    ".reg",
    "%r1",
    "%rd1",
    "%p1",
    "@%p1",
    "@!%p1",
    "0x7fffffff",
    "-1",
    "0f3f800000",
    "0d3ff0000000000000",
    "mov",
    "add.cc",
    "call",
    "ret;",
    "bra",
    "$L__BB0_1:",
    ".local .align 8 .b8 d[8];",
    "[%rd1+-4]",
    "{%r1, %r2}",
    "%tid.x",
    "%r1.b0",
    "_",
    "|",
    "<4>",
    "99999999999999999999999",
    ".align 3",
    ".v4",
    ".rn",
    ".sat",
    ".ftz",
    ".wide",
    "ld.param.v2.u64",
    ".local",
    ".global",
    ".const",
    "madc.hi.cc",
    "vadd.s32.u32.s32.sat",
    "vmad.s32.s32.u32.sat",
    "-%r1.h0",
    ".shr15",
    "vset.u32.u32.ne",
    "vadd4.s32.s32.u32.sat",
    "vset2.u32.u32.ne.add",
    ".b7654",
    ".h10",
    ".po",
    "\"",
    "//",
    "/*",
    "*/",
    "\n",
    "\0",
    "\u{feff}",
    "é",
];

/// A few random edits of PTX text (fuzzing the front end): bytes deleted, a token from
/// [`MUTATION_TOKENS`] inserted, a chunk duplicated elsewhere, or a byte replaced.
pub fn mutate(rng: &mut Rng, mut text: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(6) {
        if text.is_empty() {
            text.push(b'{');
        }
        let at = rng.below(text.len() as u64) as usize;
        match rng.below(5) {
            0 => {
                let n = (1 + rng.below(16) as usize).min(text.len() - at);
                text.drain(at..at + n);
            }
            1 | 2 => {
                let t = MUTATION_TOKENS[rng.below(MUTATION_TOKENS.len() as u64) as usize];
                text.splice(at..at, format!(" {t} ").into_bytes());
            }
            3 => {
                let from = rng.below(text.len() as u64) as usize;
                let n = (1 + rng.below(80) as usize).min(text.len() - from);
                let chunk = text[from..from + n].to_vec();
                text.splice(at..at, chunk);
            }
            _ => text[at] = rng.next_u64() as u8,
        }
    }
    text
}

/// Registers of each class the bodies use.
const R: usize = 8;
const RD: usize = 8;
const F: usize = 6;
const FD: usize = 4;
const P: usize = 4;

/// The register classes a thread loads from its input slot and stores to its output slot, in
/// slot order: name prefix, count, type.
const CLASSES: [(&str, usize, Type); 4] = [
    ("r", R, Type::B32),
    ("rd", RD, Type::B64),
    ("f", F, Type::F32),
    ("fd", FD, Type::F64),
];

/// Bytes of each thread's input and output slots.
pub const IN_BYTES: usize = R * 4 + RD * 8 + F * 4 + FD * 8;
const SCRATCH: usize = 32;
/// Bytes of each function's `.local` array `loc`.
const LOCAL: usize = 32;
pub const OUT_BYTES: usize = IN_BYTES + P * 4 + SCRATCH;

/// One thread's input slot: an edge-biased value of each register's type, in slot order.
pub fn random_input(rng: &mut Rng) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(IN_BYTES);
    for (_, n, ty) in CLASSES {
        for _ in 0..n {
            bytes.extend_from_slice(&edge_value(rng, ty).to_le_bytes()[..ty.bytes()]);
        }
    }
    debug_assert_eq!(bytes.len(), IN_BYTES);
    bytes
}

/// How a generated program lays out its data, and so how it is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// `k(inp, out)`: each thread has its own slot of `inp` and of `out` ([`program`]).
    Slots,
    /// `k(inp, out, n)`: element-wise over arrays, for the JIT's SIMD lanes
    /// ([`array_program`]), launched as `grid` blocks of `block` threads.
    Arrays { grid: Dim3, block: Dim3 },
    /// `k(inp, out)` with slots as [`Layout::Slots`] (but [`COOP_OUT_BYTES`] of `out` each),
    /// threads that meet at barriers and warp collectives over `.shared` memory
    /// ([`coop_program`]), launched as `grid` blocks of `block` threads with `shared_bytes`
    /// of dynamic shared memory.
    Coop {
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        /// Made for the JIT's group functions ([`group_program`]).
        lanes: bool,
    },
}

/// A generated program: the PTX, and its body lines (what a shrinker may delete).
#[derive(Clone, Debug)]
pub struct Program {
    pub layout: Layout,
    pub prologue: String,
    pub body: Vec<String>,
    pub epilogue: String,
}

impl Program {
    pub fn ptx(&self) -> String {
        format!("{}{}{}", self.prologue, self.body.join(""), self.epilogue)
    }
    /// The same program without body line `i` (which may no longer be valid PTX).
    pub fn without(&self, i: usize) -> Program {
        let mut p = self.clone();
        p.body.remove(i);
        p
    }
}

/// A random program of about `size` body items, with a random helper `.func` the body may
/// call.
pub fn program(rng: &mut Rng, size: usize) -> Program {
    let helper = helper(rng);
    let mut g = Gen {
        rng,
        out: Vec::new(),
        labels: 0,
        calls: true,
    };
    for _ in 0..size {
        g.item(true);
    }
    Program {
        layout: Layout::Slots,
        prologue: HEADER.to_string() + &helper + &prologue(),
        body: g.out,
        epilogue: epilogue(),
    }
}

const HEADER: &str = ".version 8.3\n.target sm_90\n.address_size 64\n";

/// The registers every generated function declares.
fn register_decls() -> String {
    format!(
        "  .reg .b32 %r<{R}>;\n  .reg .b64 %rd<{RD}>;\n  .reg .f32 %f<{F}>;\n  .reg .f64 %fd<{FD}>;\n  \
         .reg .pred %p<{P}>;\n  .reg .u64 %in, %out, %t64;\n  .reg .u32 %t, %n, %lc, %si;\n  .reg .pred %lp;\n  .reg .u64 %sa;\n  \
         .reg .v2 .b32 %v<2>;\n  .local .align 8 .b8 loc[{LOCAL}];\n"
    )
}

/// `.func (.param .b32 r) h(.param .b32 a, .param .b64 b)`: a few random straight-line
/// instructions over its own registers (a and b loaded into %r0 and %rd0), returning %r1;
/// now and then a carry chain, which reads the flag the call starts with and leaves one
/// behind (each call's own: docs/semantics.md).
fn helper(rng: &mut Rng) -> String {
    let mut g = Gen {
        rng,
        out: Vec::new(),
        labels: 0,
        calls: false,
    };
    for _ in 0..3 + g.rng.below(8) {
        if g.rng.chance(10) {
            g.carry_chain();
        } else {
            g.instruction();
        }
    }
    format!(
        ".func (.param .b32 r) h(.param .b32 a, .param .b64 b)\n{{\n{}  \
         ld.param.b32 %r0, [a];\n  ld.param.b64 %rd0, [b];\n  mov.b32 %r1, %r0;\n{}  \
         st.param.b32 [r], %r1;\n  ret;\n}}\n",
        register_decls(),
        g.out.join("")
    )
}

fn prologue() -> String {
    let mut s = String::from(".visible .entry k(.param .u64 inp, .param .u64 out)\n{\n");
    s += &register_decls();
    s += "  ld.param.u64 %in, [inp];\n  ld.param.u64 %out, [out];\n";
    s += "  mov.u32 %t, %ctaid.x;\n  mov.u32 %n, %ntid.x;\n  mul.lo.u32 %t, %t, %n;\n  \
          mov.u32 %n, %tid.x;\n  add.u32 %t, %t, %n;\n";
    s += &format!(
        "  mul.wide.u32 %t64, %t, {IN_BYTES};\n  add.u64 %in, %in, %t64;\n  \
         mul.wide.u32 %t64, %t, {OUT_BYTES};\n  add.u64 %out, %out, %t64;\n"
    );
    s + &load_registers()
}

/// The loads of every register from the thread's input slot at `%in`, and the predicates.
fn load_registers() -> String {
    let mut s = String::new();
    let mut at = 0;
    for (class, n, ty) in CLASSES {
        for k in 0..n {
            s += &format!("  ld.global{ty} %{class}{k}, [%in+{at}];\n");
            at += ty.bytes();
        }
    }
    for k in 0..P {
        s += &format!("  setp.lt.u32 %p{k}, %r{k}, %r{};\n", k + 4);
    }
    s
}

/// The stores of every register to the thread's output slot at `%out`.
fn store_registers() -> String {
    let mut s = String::new();
    let mut at = 0;
    for (class, n, ty) in CLASSES {
        for k in 0..n {
            s += &format!("  st.global{ty} [%out+{at}], %{class}{k};\n");
            at += ty.bytes();
        }
    }
    for k in 0..P {
        s += &format!("  selp.u32 %t, 1, 0, %p{k};\n  st.global.u32 [%out+{at}], %t;\n");
        at += 4;
    }
    s
}

fn epilogue() -> String {
    store_registers() + "  ret;\n}\n"
}

struct Gen<'r> {
    rng: &'r mut Rng,
    out: Vec<String>,
    labels: usize,
    /// Whether calls of the helper may be emitted (not inside the helper itself).
    calls: bool,
}

const RNDS: [&str; 4] = ["rn", "rz", "rm", "rp"];
const IRNDS: [&str; 4] = ["rni", "rzi", "rmi", "rpi"];
const SELS: [&str; 6] = ["b0", "b1", "b2", "b3", "h0", "h1"];

/// One of the registers `%{class}0` … `%{class}{count - 1}`.
fn reg(rng: &mut Rng, class: &str, count: usize) -> String {
    format!("%{class}{}", rng.below(count as u64))
}

impl Gen<'_> {
    fn r(&mut self) -> String {
        reg(self.rng, "r", R)
    }
    fn rd(&mut self) -> String {
        reg(self.rng, "rd", RD)
    }
    fn f(&mut self) -> String {
        reg(self.rng, "f", F)
    }
    fn fd(&mut self) -> String {
        reg(self.rng, "fd", FD)
    }
    fn p(&mut self) -> String {
        reg(self.rng, "p", P)
    }
    /// A 32-bit source: a register, or now and then an immediate.
    fn r_or_imm(&mut self) -> String {
        if self.rng.chance(20) {
            format!("{}", edge_value(self.rng, Type::U32) as u32)
        } else {
            self.r()
        }
    }
    fn rd_or_imm(&mut self) -> String {
        if self.rng.chance(15) {
            format!("{}", edge_value(self.rng, Type::U64))
        } else {
            self.rd()
        }
    }
    /// An f32 source: a register, or now and then an immediate (`0f…`, an edge value).
    fn f_or_imm(&mut self) -> String {
        if self.rng.chance(20) {
            format!("0f{:08x}", edge_value(self.rng, Type::F32) as u32)
        } else {
            self.f()
        }
    }
    /// An f64 source: a register, or now and then an immediate (`0d…`, an edge value).
    fn fd_or_imm(&mut self) -> String {
        if self.rng.chance(20) {
            format!("0d{:016x}", edge_value(self.rng, Type::F64))
        } else {
            self.fd()
        }
    }
    fn small(&mut self) -> String {
        if self.rng.chance(50) {
            format!("{}", self.rng.below(70))
        } else {
            self.r()
        }
    }
    fn guard(&mut self) -> String {
        if self.rng.chance(20) {
            let p = self.p();
            if self.rng.chance(50) {
                format!("@!{p} ")
            } else {
                format!("@{p} ")
            }
        } else {
            String::new()
        }
    }
    fn emit(&mut self, text: String) {
        let g = self.guard();
        self.out.push(format!("  {g}{text}\n"));
    }
    fn label(&mut self) -> String {
        self.labels += 1;
        format!("$L{}", self.labels)
    }

    /// One item: an instruction, a carry chain, a forward branch or (at the top level) a
    /// bounded loop.
    fn item(&mut self, top: bool) {
        match self.rng.below(100) {
            0..=4 if top => {
                // A loop of 1-3 iterations over a few items; %lc and %lp are its own.
                let l = self.label();
                let n = 1 + self.rng.below(3);
                self.out.push(format!("  mov.u32 %lc, {n};\n{l}:\n"));
                for _ in 0..1 + self.rng.below(4) {
                    self.item(false);
                }
                self.out.push(format!(
                    "  sub.u32 %lc, %lc, 1;\n  setp.ne.u32 %lp, %lc, 0;\n  @%lp bra {l};\n"
                ));
            }
            5..=9 => {
                let l = self.label();
                let p = self.p();
                self.out.push(format!("  @{p} bra {l};\n"));
                for _ in 0..1 + self.rng.below(3) {
                    self.instruction();
                }
                self.out.push(format!("{l}:\n"));
            }
            10..=15 => self.carry_chain(),
            16..=17 => self.product_rows(),
            18..=20 if top => self.strided_walk(),
            _ => self.instruction(),
        }
    }

    /// A loop of loads from the thread's input slot that move by a fixed step each time
    /// round, through a pointer or a widened 32-bit index (the checked JIT's strided loops),
    /// up or down, staying inside the slot: a wild address is described differently by the
    /// engines (which memory lies near it differs), and the faults of strided loops have
    /// tests of their own (tests/strided_checks.rs).
    fn strided_walk(&mut self) {
        let l = self.label();
        let step = 4 * *self.rng.pick(&[1i64, 2, 3, 10, -1, -2, -3]);
        let start = 4 * self.rng.below((IN_BYTES / 4) as u64) as i64;
        let room = if step > 0 {
            (IN_BYTES as i64 - 4 - start) / step
        } else {
            start / -step
        };
        let n = 1 + self.rng.below(room as u64 + 1);
        let d = self.r();
        self.out.push(format!("  mov.u32 %lc, {n};\n"));
        if self.rng.chance(50) {
            self.out
                .push(format!("  add.s64 %sa, %in, {start};\n{l}:\n"));
            self.out.push(format!(
                "  ld.global.b32 {d}, [%sa];\n  add.s64 %sa, %sa, {step};\n"
            ));
        } else {
            let (start, step) = (start / 4, step / 4);
            self.out.push(format!("  mov.u32 %si, {start};\n{l}:\n"));
            self.out.push(format!(
                "  mul.wide.s32 %t64, %si, 4;\n  add.s64 %sa, %in, %t64;\n  \
                 ld.global.b32 {d}, [%sa];\n  add.s32 %si, %si, {step};\n"
            ));
        }
        self.out.push(format!(
            "  sub.u32 %lc, %lc, 1;\n  setp.ne.u32 %lp, %lc, 0;\n  @%lp bra {l};\n"
        ));
    }

    fn carry_chain(&mut self) {
        let wide = self.rng.chance(40);
        let ty = if wide { "u64" } else { "u32" };
        let reg = |g: &mut Self| if wide { g.rd() } else { g.r() };
        let first = *self
            .rng
            .pick(&["add.cc", "sub.cc", "mad.lo.cc", "mad.hi.cc"]);
        let mut ops = vec![first];
        for _ in 0..1 + self.rng.below(4) {
            ops.push(*self.rng.pick(&[
                "addc.cc",
                "addc",
                "subc.cc",
                "subc",
                "madc.lo.cc",
                "madc.hi.cc",
                "madc.lo",
                "add.cc",
                "sub.cc",
            ]));
        }
        for op in ops {
            let (d, a, b) = (reg(self), reg(self), reg(self));
            if op.starts_with("mad") {
                let c = reg(self);
                self.emit(format!("{op}.{ty} {d}, {a}, {b}, {c};"));
            } else {
                self.emit(format!("{op}.{ty} {d}, {a}, {b};"));
            }
        }
    }

    /// A product added into limbs as bignum code writes it (the JIT takes this shape as one
    /// chain, src/jit/lower/rows.rs): a `mad.lo` row, `addc` steps into the limbs above, the
    /// `mad.hi` row one limb up over the same factors and its own `addc` steps; now and then
    /// bent out of that shape (a factor among the limbs, chains that end at different limbs,
    /// CC.CF read after it).
    fn product_rows(&mut self) {
        let wide = self.rng.chance(40);
        let (ty, class, count) = if wide {
            ("u64", "rd", RD)
        } else {
            ("u32", "r", R)
        };
        let (n, above) = (
            1 + self.rng.below(3) as usize,
            1 + self.rng.below(2) as usize,
        );
        // One row pair, or two as a product's rows follow each other (the second one limb
        // up, with a factor of its own): the JIT passes packed limb pairs from one to the next.
        let rows = 1 + self.rng.chance(35) as usize;
        let window = n + above + rows - 1;
        let mut regs: Vec<usize> = (0..count).collect();
        self.rng.shuffle(&mut regs);
        let name = |k: usize| format!("%{class}{k}");
        let limbs: Vec<String> = regs[..window].iter().map(|&k| name(k)).collect();
        let spare: Vec<usize> = regs[window..].to_vec();
        let register = |g: &mut Self| match g.rng.chance(8) {
            true => name(regs[g.rng.below(window as u64) as usize]),
            false => name(*g.rng.pick(&spare)),
        };
        let ys: Vec<String> = (0..n)
            .map(|_| match self.rng.chance(25) {
                true => edge_value(self.rng, if wide { Type::U64 } else { Type::U32 }).to_string(),
                false => register(self),
            })
            .collect();
        let below_top = match self.rng.below(10) {
            0 => above,
            1 if above >= 2 => above - 2,
            _ => above - 1,
        };
        let cc = |g: &mut Self, last: bool| if !last || g.rng.chance(30) { ".cc" } else { "" };
        let mut lines = Vec::new();
        for r in 0..rows {
            let x = register(self);
            // Factor pairs: y·x or x·y (an immediate always second), now and then two
            // factors that the neighbouring products do not share.
            let pairs: Vec<(String, String)> = (ys.iter())
                .map(|y| {
                    let other = if self.rng.chance(15) {
                        register(self)
                    } else {
                        x.clone()
                    };
                    match y.starts_with('%') && self.rng.chance(50) {
                        true => (y.clone(), other),
                        false => (other, y.clone()),
                    }
                })
                .collect();
            let limbs = &limbs[r..r + n + above];
            for (j, (a, b)) in pairs.iter().enumerate() {
                let op = if j == 0 { "mad" } else { "madc" };
                let t = &limbs[j];
                lines.push(format!("{op}.lo.cc.{ty} {t}, {a}, {b}, {t};"));
            }
            for k in 0..above {
                let c = cc(self, k + 1 == above);
                let t = &limbs[n + k];
                lines.push(format!("addc{c}.{ty} {t}, {t}, 0;"));
            }
            for (j, (a, b)) in pairs.iter().enumerate() {
                let op = if j == 0 { "mad" } else { "madc" };
                let c = cc(self, j + 1 == n && below_top == 0);
                let t = &limbs[j + 1];
                lines.push(format!("{op}.hi{c}.{ty} {t}, {a}, {b}, {t};"));
            }
            for k in 0..below_top {
                let c = cc(self, k + 1 == below_top);
                let t = &limbs[(n + 1 + k).min(limbs.len() - 1)];
                lines.push(format!("addc{c}.{ty} {t}, {t}, 0;"));
            }
        }
        if self.rng.chance(20) {
            let d = reg(self.rng, class, count);
            lines.push(format!("addc.{ty} {d}, 0, 0;"));
        }
        self.out
            .extend(lines.into_iter().map(|l| format!("  {l}\n")));
    }

    fn instruction(&mut self) {
        match self.rng.below(13) {
            0 => self.int32(),
            1 => self.int64(),
            2 => self.bits(),
            3 | 4 => self.float32(),
            5 => self.float64(),
            6 => self.convert(),
            7 => self.compare(),
            8 | 9 => self.video(),
            10 => self.memory(),
            11 => self.moves(),
            _ if self.rng.chance(50) => self.compute(),
            _ if self.rng.chance(50) => self.half(),
            _ => self.int32(),
        }
    }

    /// Half precision on pairs in `.b32` registers, and conversions between f32 and halves
    /// (halves have no immediates).
    fn half(&mut self) {
        let (d, a, b, c) = (self.r(), self.r(), self.r(), self.r());
        let ty = *self.rng.pick(&["f16x2", "bf16x2"]);
        let f16 = ty == "f16x2";
        let ftz = if f16 && self.rng.chance(30) {
            ".ftz"
        } else {
            ""
        };
        let text = match self.rng.below(8) {
            0 => {
                let op = self.rng.pick(&["add", "sub", "mul"]);
                let sat = if f16 && self.rng.chance(30) {
                    ".sat"
                } else {
                    ""
                };
                format!("{op}{ftz}{sat}.{ty} {d}, {a}, {b};")
            }
            1 => {
                let clamp = match self.rng.below(3) {
                    0 if f16 => ".sat",
                    1 => ".relu",
                    _ => "",
                };
                format!("fma.rn{ftz}{clamp}.{ty} {d}, {a}, {b}, {c};")
            }
            2 => {
                let op = self.rng.pick(&["min", "max"]);
                let nan = self.rng.pick(&["", ".NaN"]);
                let xorsign = self.rng.pick(&["", ".xorsign.abs"]);
                format!("{op}{ftz}{nan}{xorsign}.{ty} {d}, {a}, {b};")
            }
            3 => {
                let op = self.rng.pick(&["neg", "abs"]);
                format!("{op}{ftz}.{ty} {d}, {a};")
            }
            4 => match self.rng.below(3) {
                // ex2 on bf16 takes .ftz, on f16 it does not.
                0 if f16 => format!("ex2.approx.{ty} {d}, {a};"),
                0 => format!("ex2.approx.ftz.{ty} {d}, {a};"),
                1 => format!("tanh.approx.{ty} {d}, {a};"),
                _ => {
                    let (x, y) = (self.f(), self.f());
                    format!("tanh.approx.f32 {x}, {y};")
                }
            },
            5 => {
                let cmp = self.rng.pick(&[
                    "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
                    "num", "nan",
                ]);
                let (p, q) = (self.p(), self.p());
                match self.rng.below(3) {
                    0 => format!("setp.{cmp}{ftz}.{ty} {p}|{q}, {a}, {b};"),
                    1 => {
                        let dty = if self.rng.chance(50) { ty } else { "u32" };
                        format!("set.{cmp}{ftz}.{dty}.{ty} {d}, {a}, {b};")
                    }
                    _ => {
                        let (x, y) = (self.f(), self.f());
                        format!("set.{cmp}.and.u32.f32 {d}, {x}, {y}, {p};")
                    }
                }
            }
            6 => {
                let (x, y) = (self.f(), self.f());
                let rnd = self.rng.pick(&["rn", "rz"]);
                let relu = self.rng.pick(&["", ".relu"]);
                let satfinite = self.rng.pick(&["", ".satfinite"]);
                format!("cvt.{rnd}{relu}{satfinite}.{ty}.f32 {d}, {x}, {y};")
            }
            _ => {
                // An .f16 operand of cvt may sit in a .b32 register.
                let x = self.f();
                match self.rng.below(3) {
                    0 => format!("cvt.f32.f16 {x}, {a};"),
                    1 => {
                        let rnd = self.rng.pick(&["rn", "rz", "rm", "rp"]);
                        format!("cvt.{rnd}.f16.f32 {d}, {x};")
                    }
                    _ => {
                        let rnd = self.rng.pick(&["rni", "rzi", "rmi", "rpi"]);
                        let ity = self.rng.pick(&["s32", "u32"]);
                        format!("cvt.{rnd}.{ity}.f16 {d}, {a};")
                    }
                }
            }
        };
        self.emit(text);
    }

    /// The pure computations of `bits.rs` in the front end (lop3, bfind, dp4a, ...).
    fn compute(&mut self) {
        let (d, a, b, c) = (self.r(), self.r(), self.r_or_imm(), self.r());
        let sign = |rng: &mut Rng| *rng.pick(&["u32", "s32"]);
        let text = match self.rng.below(10) {
            0 => {
                let lut = self.rng.below(256);
                if self.rng.chance(70) {
                    format!("lop3.b32 {d}, {a}, {b}, {c}, {lut};")
                } else {
                    let (p, q) = (self.p(), self.p());
                    let op = self.rng.pick(&["or", "and"]);
                    format!("lop3.{op}.b32 {d}|{p}, {a}, {b}, {c}, {lut}, {q};")
                }
            }
            1 => {
                let shift = self.rng.pick(&["", ".shiftamt"]);
                if self.rng.chance(50) {
                    format!("bfind{shift}.{} {d}, {a};", sign(self.rng))
                } else {
                    let x = self.rd();
                    let ty = self.rng.pick(&["u64", "s64"]);
                    format!("bfind{shift}.{ty} {d}, {x};")
                }
            }
            2 => {
                let (base, offset) = (self.small(), self.r_or_imm());
                format!("fns.b32 {d}, {a}, {base}, {offset};")
            }
            3 => {
                let mode = self.rng.pick(&["clamp", "wrap"]);
                let n = if self.rng.chance(50) {
                    self.small()
                } else {
                    self.r()
                };
                if self.rng.chance(50) {
                    format!("bmsk.{mode}.b32 {d}, {a}, {n};")
                } else {
                    format!("szext.{mode}.{} {d}, {a}, {n};", sign(self.rng))
                }
            }
            4 => {
                let mode = self.rng.pick(&["lo", "hi"]);
                let ty = sign(self.rng);
                if self.rng.chance(50) {
                    format!("mul24.{mode}.{ty} {d}, {a}, {b};")
                } else {
                    format!("mad24.{mode}.{ty} {d}, {a}, {b}, {c};")
                }
            }
            5 => format!("mad24.hi.sat.s32 {d}, {a}, {b}, {c};"),
            6 => {
                if self.rng.chance(70) {
                    format!("sad.{} {d}, {a}, {b}, {c};", sign(self.rng))
                } else {
                    let (x, y, z) = (self.rd(), self.rd(), self.rd());
                    let ty = self.rng.pick(&["u64", "s64"]);
                    format!("sad.{ty} {x}, {y}, {z}, {x};")
                }
            }
            7 => {
                let types = format!("{}.{}", sign(self.rng), sign(self.rng));
                if self.rng.chance(50) {
                    format!("dp4a.{types} {d}, {a}, {b}, {c};")
                } else {
                    let mode = self.rng.pick(&["lo", "hi"]);
                    format!("dp2a.{mode}.{types} {d}, {a}, {b}, {c};")
                }
            }
            8 => {
                if self.rng.chance(50) {
                    let ty = self.rng.pick(&["u16", "s16"]);
                    format!("cvt.pack.sat.{ty}.s32 {d}, {a}, {b};")
                } else {
                    let ty = self.rng.pick(&["u8", "s8", "u4", "s4", "u2", "s2"]);
                    format!("cvt.pack.sat.{ty}.s32.b32 {d}, {a}, {b}, {c};")
                }
            }
            _ => {
                if self.rng.chance(50) {
                    let (x, y, z) = (self.f(), self.f(), self.f());
                    format!("copysign.f32 {x}, {y}, {z};")
                } else {
                    let (p, x) = (self.p(), self.fd());
                    let op = self.rng.pick(&[
                        "finite",
                        "infinite",
                        "number",
                        "notanumber",
                        "normal",
                        "subnormal",
                    ]);
                    format!("testp.{op}.f64 {p}, {x};")
                }
            }
        };
        self.emit(text);
    }

    fn int32(&mut self) {
        let (d, a, b, c) = (self.r(), self.r(), self.r_or_imm(), self.r());
        let text = match self.rng.below(10) {
            0 => {
                let op = self
                    .rng
                    .pick(&["add", "sub", "min", "max", "div", "rem", "mul.lo", "mul.hi"]);
                let ty = self.rng.pick(&["u32", "s32"]);
                format!("{op}.{ty} {d}, {a}, {b};")
            }
            1 => format!("{}.sat.s32 {d}, {a}, {b};", self.rng.pick(&["add", "sub"])),
            2 => format!(
                "{}.b32 {d}, {a}, {b};",
                self.rng.pick(&["and", "or", "xor"])
            ),
            3 => {
                let n = self.small();
                let op = self.rng.pick(&["shl.b32", "shr.u32", "shr.s32", "shr.b32"]);
                format!("{op} {d}, {a}, {n};")
            }
            4 => {
                let ty = self.rng.pick(&["u32", "s32"]);
                let mode = self.rng.pick(&["lo", "hi"]);
                format!("mad.{mode}.{ty} {d}, {a}, {b}, {c};")
            }
            5 => format!("mad.hi.sat.s32 {d}, {a}, {b}, {c};"),
            6 => {
                let op = self.rng.pick(&[
                    "neg.s32", "abs.s32", "not.b32", "cnot.b32", "popc.b32", "clz.b32", "brev.b32",
                ]);
                format!("{op} {d}, {a};")
            }
            7 => {
                let (w, x) = (self.rd(), self.rd());
                let ty = self.rng.pick(&["u32", "s32"]);
                if self.rng.chance(50) {
                    format!("mul.wide.{ty} {w}, {a}, {b};")
                } else {
                    format!("mad.wide.{ty} {w}, {a}, {c}, {x};")
                }
            }
            8 => {
                let q = self.p();
                format!("add.u32 {d}, {a}, {b};\n  @{q} sub.u32 {d}, {d}, 1;")
            }
            _ => {
                let ty = self.rng.pick(&["u32", "s32"]);
                let k = edge_value(self.rng, Type::U32) as u32;
                format!("div.{ty} {d}, {a}, {k};")
            }
        };
        self.emit(text);
    }

    fn int64(&mut self) {
        let (d, a, b, c) = (self.rd(), self.rd(), self.rd_or_imm(), self.rd());
        let text = match self.rng.below(7) {
            0 => {
                let op = self
                    .rng
                    .pick(&["add", "sub", "min", "max", "div", "rem", "mul.lo", "mul.hi"]);
                let ty = self.rng.pick(&["u64", "s64"]);
                format!("{op}.{ty} {d}, {a}, {b};")
            }
            1 => format!(
                "{}.b64 {d}, {a}, {b};",
                self.rng.pick(&["and", "or", "xor"])
            ),
            2 => {
                let n = self.small();
                let op = self.rng.pick(&["shl.b64", "shr.u64", "shr.s64"]);
                format!("{op} {d}, {a}, {n};")
            }
            3 => {
                let ty = self.rng.pick(&["u64", "s64"]);
                let mode = self.rng.pick(&["lo", "hi"]);
                format!("mad.{mode}.{ty} {d}, {a}, {b}, {c};")
            }
            4 => {
                let op = self
                    .rng
                    .pick(&["neg.s64", "abs.s64", "not.b64", "brev.b64"]);
                format!("{op} {d}, {a};")
            }
            5 => {
                let r = self.r();
                let op = self.rng.pick(&["popc.b64", "clz.b64"]);
                format!("{op} {r}, {a};")
            }
            _ => {
                let (p, l) = (self.small(), self.small());
                let ty = self.rng.pick(&["u64", "s64"]);
                format!("bfe.{ty} {d}, {a}, {p}, {l};")
            }
        };
        self.emit(text);
    }

    fn bits(&mut self) {
        let (d, a, b, c) = (self.r(), self.r(), self.r(), self.r());
        let text = match self.rng.below(5) {
            0 => {
                let (p, l) = (self.small(), self.small());
                let ty = self.rng.pick(&["u32", "s32"]);
                format!("bfe.{ty} {d}, {a}, {p}, {l};")
            }
            1 => {
                let (p, l) = (self.small(), self.small());
                if self.rng.chance(50) {
                    format!("bfi.b32 {d}, {a}, {b}, {p}, {l};")
                } else {
                    let (x, y) = (self.rd(), self.rd());
                    format!("bfi.b64 {x}, {y}, {x}, {p}, {l};")
                }
            }
            2 => {
                let mode = self
                    .rng
                    .pick(&["", ".f4e", ".b4e", ".rc8", ".ecl", ".ecr", ".rc16"]);
                let sel = self.r_or_imm();
                format!("prmt.b32{mode} {d}, {a}, {b}, {sel};")
            }
            3 => {
                let dir = self.rng.pick(&["l", "r"]);
                let mode = self.rng.pick(&["wrap", "clamp"]);
                let n = self.small();
                format!("shf.{dir}.{mode}.b32 {d}, {a}, {b}, {n};")
            }
            _ => format!("selp.b32 {d}, {a}, {c}, {};", self.p()),
        };
        self.emit(text);
    }

    fn float32(&mut self) {
        let (d, a, b, c) = (self.f(), self.f(), self.f_or_imm(), self.f_or_imm());
        let rnd = *self.rng.pick(&RNDS);
        let ftz = if self.rng.chance(40) { ".ftz" } else { "" };
        let sat = if self.rng.chance(25) { ".sat" } else { "" };
        let text = match self.rng.below(9) {
            0 | 1 => {
                let op = self.rng.pick(&["add", "sub", "mul"]);
                format!("{op}.{rnd}{ftz}{sat}.f32 {d}, {a}, {b};")
            }
            2 => {
                let op = self.rng.pick(&["fma", "mad"]);
                format!("{op}.{rnd}{ftz}{sat}.f32 {d}, {a}, {b}, {c};")
            }
            3 => {
                let prec = self
                    .rng
                    .pick(&[".rn", ".rz", ".rm", ".rp", ".approx", ".full"]);
                format!("div{prec}{ftz}.f32 {d}, {a}, {b};")
            }
            4 => {
                let op = self.rng.pick(&["min", "max"]);
                let nan = if self.rng.chance(25) { ".NaN" } else { "" };
                let xorsign = if self.rng.chance(25) {
                    ".xorsign.abs"
                } else {
                    ""
                };
                format!("{op}{ftz}{nan}{xorsign}.f32 {d}, {a}, {b};")
            }
            5 => format!("{}{ftz}.f32 {d}, {a};", self.rng.pick(&["neg", "abs"])),
            6 => {
                let op = self.rng.pick(&[
                    "sqrt.rn",
                    "sqrt.rz",
                    "sqrt.rp",
                    "sqrt.approx",
                    "rcp.rn",
                    "rcp.rm",
                    "rcp.approx",
                    "ex2.approx",
                    "lg2.approx",
                    "sin.approx",
                    "cos.approx",
                    "rsqrt.approx",
                ]);
                format!("{op}{ftz}.f32 {d}, {a};")
            }
            7 => format!("selp.f32 {d}, {a}, {b}, {};", self.p()),
            _ => format!("slct{ftz}.f32.f32 {d}, {a}, {b}, {c};"),
        };
        self.emit(text);
    }

    fn float64(&mut self) {
        let (d, a, b, c) = (self.fd(), self.fd(), self.fd_or_imm(), self.fd_or_imm());
        let rnd = *self.rng.pick(&RNDS);
        let text = match self.rng.below(6) {
            0 | 1 => {
                let op = self.rng.pick(&["add", "sub", "mul", "div"]);
                format!("{op}.{rnd}.f64 {d}, {a}, {b};")
            }
            2 => {
                let op = self.rng.pick(&["fma", "mad"]);
                format!("{op}.{rnd}.f64 {d}, {a}, {b}, {c};")
            }
            3 => format!("{}.f64 {d}, {a}, {b};", self.rng.pick(&["min", "max"])),
            4 => format!("{}.f64 {d}, {a};", self.rng.pick(&["neg", "abs"])),
            5 if self.rng.chance(20) => {
                let op = self.rng.pick(&[
                    "rcp.approx.ftz.f64",
                    "rsqrt.approx.f64",
                    "rsqrt.approx.ftz.f64",
                    "cvt.f64.f64",
                    "cvt.rni.f64.f64",
                    "cvt.rzi.f64.f64",
                ]);
                format!("{op} {d}, {a};")
            }
            _ => {
                let op = self.rng.pick(&["sqrt", "rcp"]);
                format!("{op}.{rnd}.f64 {d}, {a};")
            }
        };
        self.emit(text);
    }

    fn convert(&mut self) {
        let rnd = *self.rng.pick(&RNDS);
        let irnd = *self.rng.pick(&IRNDS);
        let sat = if self.rng.chance(30) { ".sat" } else { "" };
        let ftz = if self.rng.chance(30) { ".ftz" } else { "" };
        let text = match self.rng.below(9) {
            0 => {
                let (d, a) = (self.r(), self.rd());
                let (dt, at) = (
                    self.rng.pick(&["u32", "s32", "u16", "s8"]),
                    self.rng.pick(&["u64", "s64"]),
                );
                format!("cvt{sat}.{dt}.{at} {d}, {a};")
            }
            1 => {
                let (d, a) = (self.rd(), self.r());
                let (dt, at) = (
                    self.rng.pick(&["u64", "s64"]),
                    self.rng.pick(&["u32", "s32", "u16", "s16", "u8", "s8"]),
                );
                format!("cvt.{dt}.{at} {d}, {a};")
            }
            2 => {
                let (d, a) = (self.f(), self.r());
                let at = self.rng.pick(&["u32", "s32"]);
                format!("cvt.{rnd}{sat}.f32.{at} {d}, {a};")
            }
            3 => {
                let (d, a) = (self.fd(), self.rd());
                let at = self.rng.pick(&["u64", "s64"]);
                format!("cvt.{rnd}.f64.{at} {d}, {a};")
            }
            4 => {
                let (d, a) = (self.r(), self.f());
                let dt = self.rng.pick(&["u32", "s32", "u16", "s8"]);
                format!("cvt.{irnd}{ftz}{sat}.{dt}.f32 {d}, {a};")
            }
            5 => {
                let (d, a) = (self.rd(), self.fd());
                let dt = self.rng.pick(&["u64", "s64"]);
                format!("cvt.{irnd}{sat}.{dt}.f64 {d}, {a};")
            }
            6 => {
                let (d, a) = (self.f(), self.fd());
                format!("cvt.{rnd}{ftz}{sat}.f32.f64 {d}, {a};")
            }
            7 => {
                let (d, a) = (self.fd(), self.f());
                format!("cvt{ftz}.f64.f32 {d}, {a};")
            }
            _ => {
                // Within f32: a rounding to an integral value, or none (a move).
                let (d, a) = (self.f(), self.f());
                let irnd = if self.rng.chance(30) {
                    String::new()
                } else {
                    format!(".{irnd}")
                };
                format!("cvt{irnd}{ftz}{sat}.f32.f32 {d}, {a};")
            }
        };
        self.emit(text);
    }

    fn compare(&mut self) {
        let (p, q) = (self.p(), self.p());
        let cmp_int = *self
            .rng
            .pick(&["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"]);
        let cmp_f = *self.rng.pick(&[
            "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num",
            "nan",
        ]);
        let combine = if self.rng.chance(30) {
            format!(".{}", self.rng.pick(&["and", "or", "xor"]))
        } else {
            String::new()
        };
        let tail = |g: &mut Self| {
            if combine.is_empty() {
                String::new()
            } else {
                format!(", {}", g.p())
            }
        };
        let dests = if self.rng.chance(50) {
            format!("{p}|{q}")
        } else {
            p
        };
        let text = match self.rng.below(4) {
            0 => {
                let ty = if ["lo", "ls", "hi", "hs"].contains(&cmp_int) {
                    "u32"
                } else {
                    self.rng.pick(&["u32", "s32", "b32"])
                };
                let ty = if ty == "b32" && !["eq", "ne"].contains(&cmp_int) {
                    "u32"
                } else {
                    ty
                };
                let (a, b) = (self.r(), self.r_or_imm());
                format!(
                    "setp.{cmp_int}{combine}.{ty} {dests}, {a}, {b}{};",
                    tail(self)
                )
            }
            1 => {
                let ty = if ["lo", "ls", "hi", "hs"].contains(&cmp_int) {
                    "u64"
                } else {
                    self.rng.pick(&["u64", "s64"])
                };
                let (a, b) = (self.rd(), self.rd());
                format!(
                    "setp.{cmp_int}{combine}.{ty} {dests}, {a}, {b}{};",
                    tail(self)
                )
            }
            2 => {
                let ftz = if self.rng.chance(30) { ".ftz" } else { "" };
                let (a, b) = (self.f(), self.f());
                format!(
                    "setp.{cmp_f}{combine}{ftz}.f32 {dests}, {a}, {b}{};",
                    tail(self)
                )
            }
            _ => {
                let (a, b) = (self.fd(), self.fd());
                format!("setp.{cmp_f}{combine}.f64 {dests}, {a}, {b}{};", tail(self))
            }
        };
        self.emit(text);
    }

    fn video(&mut self) {
        let sel = |g: &mut Self| -> String {
            if g.rng.chance(60) {
                format!(".{}", g.rng.pick(&SELS))
            } else {
                String::new()
            }
        };
        let ty = |g: &mut Self| *g.rng.pick(&["u32", "s32"]);
        let (d, a, b, c) = (self.r(), self.r(), self.r(), self.r());
        let (asel, bsel) = (sel(self), sel(self));
        let (a, b) = (format!("{a}{asel}"), format!("{b}{bsel}"));
        let tail = |g: &mut Self, head: String| -> String {
            match g.rng.below(3) {
                0 => format!("{head} {d}, {a}, {b};"),
                1 => format!(
                    "{head}.{} {d}, {a}, {b}, {c};",
                    g.rng.pick(&["add", "min", "max"])
                ),
                _ => format!("{head} {d}.{}, {a}, {b}, {c};", g.rng.pick(&SELS)),
            }
        };
        let sat = if self.rng.chance(40) { ".sat" } else { "" };
        if self.rng.chance(30) {
            return self.video_simd();
        }
        let text = match self.rng.below(4) {
            0 | 1 => {
                let op = self.rng.pick(&["vadd", "vsub", "vabsdiff", "vmin", "vmax"]);
                let head = format!("{op}.{}.{}.{}{sat}", ty(self), ty(self), ty(self));
                tail(self, head)
            }
            2 => {
                let op = self.rng.pick(&["vshl", "vshr"]);
                let mode = self.rng.pick(&["clamp", "wrap"]);
                let head = format!("{op}.{}.{}.u32{sat}.{mode}", ty(self), ty(self));
                tail(self, head)
            }
            _ => {
                if self.rng.chance(50) {
                    let cmp = self.rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
                    let head = format!("vset.{}.{}.{cmp}", ty(self), ty(self));
                    tail(self, head)
                } else {
                    let scale = self.rng.pick(&["", ".shr7", ".shr15"]);
                    let po = self.rng.chance(20);
                    let neg = |g: &mut Self| if !po && g.rng.chance(30) { "-" } else { "" };
                    let (na, nb) = (neg(self), neg(self));
                    let nc = if (na == "-") != (nb == "-") {
                        ""
                    } else {
                        neg(self)
                    };
                    let po = if po { ".po" } else { "" };
                    format!(
                        "vmad.{}.{}.{}{po}{sat}{scale} {d}, {na}{a}, {nb}{b}, {nc}{c};",
                        ty(self),
                        ty(self),
                        ty(self)
                    )
                }
            }
        };
        self.emit(text);
    }

    /// The SIMD video instructions (PTX ISA 9.7.18.2): `vop2`/`vop4` and `vset2`/`vset4`
    /// with `.sat` or `.add`, destination masks and lane selectors, as ptxas takes them.
    fn video_simd(&mut self) {
        let ty = |g: &mut Self| *g.rng.pick(&["u32", "s32"]);
        let lanes = if self.rng.chance(50) { 2 } else { 4 };
        let (d, a, b, c) = (self.r(), self.r(), self.r(), self.r());
        let sel = |g: &mut Self| -> String {
            if g.rng.chance(40) {
                return String::new();
            }
            let (letter, parts) = if lanes == 2 { ('h', 4) } else { ('b', 8) };
            let digits: String = (0..lanes)
                .map(|_| char::from(b'0' + g.rng.below(parts) as u8))
                .collect();
            format!(".{letter}{digits}")
        };
        let mask = if self.rng.chance(40) {
            String::new()
        } else if lanes == 2 {
            format!(".{}", self.rng.pick(&["h0", "h1", "h10"]))
        } else {
            // A non-empty subset of lanes 3..0, highest first.
            let set = 1 + self.rng.below(15);
            let digits: String = (0..4u8)
                .rev()
                .filter(|i| set >> i & 1 == 1)
                .map(|i| char::from(b'0' + i))
                .collect();
            format!(".b{digits}")
        };
        let add = self.rng.chance(30);
        let head = if self.rng.chance(20) {
            let cmp = self.rng.pick(&["eq", "ne", "lt", "le", "gt", "ge"]);
            format!("vset{lanes}.{}.{}.{cmp}", ty(self), ty(self))
        } else {
            let op = self
                .rng
                .pick(&["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"]);
            let sat = if !add && self.rng.chance(40) {
                ".sat"
            } else {
                ""
            };
            format!("{op}{lanes}.{}.{}.{}{sat}", ty(self), ty(self), ty(self))
        };
        let add = if add { ".add" } else { "" };
        let (asel, bsel) = (sel(self), sel(self));
        self.emit(format!("{head}{add} {d}{mask}, {a}{asel}, {b}{bsel}, {c};"));
    }

    fn memory(&mut self) {
        let off = IN_BYTES + P * 4 + 8 * self.rng.below((SCRATCH / 8) as u64) as usize;
        let loc = 8 * self.rng.below((LOCAL / 8) as u64) as usize;
        // The helper has no `%out` (it would fault on every call): its own `.local` only.
        let case = if self.calls {
            self.rng.below(10)
        } else {
            4 + self.rng.below(3)
        };
        let text = match case {
            0 => {
                let order = self.store_order();
                format!("st{order}.global.b32 [%out+{off}], {};", self.r())
            }
            1 => format!("st.global.b64 [%out+{off}], {};", self.rd()),
            2 => {
                let ty = self.rng.pick(&["u8", "s8", "u16", "s16", "b32"]);
                let order = self.load_order();
                format!("ld{order}.global.{ty} {}, [%out+{off}];", self.r())
            }
            3 => format!(
                "ld.global.v2.b32 {{{}, {}}}, [%out+{off}];",
                self.r(),
                self.r()
            ),
            4 => format!("st.local.b64 [loc+{loc}], {};", self.rd()),
            5 => {
                let ty = self.rng.pick(&["u8", "s16", "b32"]);
                format!("ld.local.{ty} {}, [loc+{loc}];", self.r())
            }
            8 | 9 => self.atomic(off),
            _ if self.calls => return self.call(),
            _ => format!("ld.local.b64 {}, [loc+{loc}];", self.rd()),
        };
        self.emit(text);
    }

    /// A load's memory order: mostly none (weak), now and then a strong one.
    fn load_order(&mut self) -> &'static str {
        const ORDERS: [&str; 7] = [
            "",
            "",
            "",
            ".weak",
            ".volatile",
            ".relaxed.gpu",
            ".acquire.sys",
        ];
        ORDERS[self.rng.below(ORDERS.len() as u64) as usize]
    }

    /// A store's memory order, as [`Self::load_order`].
    fn store_order(&mut self) -> &'static str {
        const ORDERS: [&str; 6] = ["", "", "", ".volatile", ".relaxed.cta", ".release.gpu"];
        ORDERS[self.rng.below(ORDERS.len() as u64) as usize]
    }

    /// `atom` (or now and then `red`, or generic addressing) on the thread's scratch at `off`
    /// (8-aligned), of any operation and type the manual allows.
    fn atomic(&mut self, off: usize) -> String {
        let (op, ty) = *self.rng.pick(ATOMIC_FORMS);
        let mut reg = || match ty {
            "f32" => self.f(),
            "f64" => self.fd(),
            t if t.ends_with("64") => self.rd(),
            _ => self.r(),
        };
        let (d, b, c) = (reg(), reg(), reg());
        let space = if self.rng.chance(25) { "" } else { ".global" };
        let red = !matches!(op, "exch" | "cas") && self.rng.chance(25);
        if red {
            format!("red{space}.{op}.{ty} [%out+{off}], {b};")
        } else if op == "cas" {
            format!("atom{space}.cas.{ty} {d}, [%out+{off}], {b}, {c};")
        } else {
            format!("atom{space}.{op}.{ty} {d}, [%out+{off}], {b};")
        }
    }

    /// A call of the helper `h` (a call sequence with its own `.param` variables; the
    /// call itself may be predicated).
    fn call(&mut self) {
        let (a, b, d) = (self.r(), self.rd(), self.r());
        let g = self.guard();
        self.out.push(format!(
            "  {{\n    .param .b32 pa;\n    .param .b64 pb;\n    .param .b32 pr;\n    \
             st.param.b32 [pa], {a};\n    st.param.b64 [pb], {b};\n    {g}call (pr), h, (pa, pb);\n    \
             ld.param.b32 {d}, [pr];\n  }}\n"
        ));
    }

    fn moves(&mut self) {
        let text = match self.rng.below(6) {
            0 => format!("mov.b64 {{{}, {}}}, {};", self.r(), self.r(), self.rd()),
            1 => format!("mov.b64 {}, {{{}, {}}};", self.rd(), self.r(), self.r()),
            2 => format!("mov.u32 {}, %tid.x;", self.r()),
            3 => format!("mov.b32 {}, {};", self.f(), self.r()),
            4 => self.vector(),
            _ => {
                // A register plus a constant as a source (the constant truncated to 32 bits,
                // the sum wrapping).
                let k = self.rng.below(1 << 33);
                format!("add.u32 {}, {}+{k}, {};", self.r(), self.r(), self.r())
            }
        };
        self.emit(text);
    }

    /// Vector registers (`%v0 %v1`, `.v2 .b32`): elements as scalars, whole registers in
    /// packing, unpacking and `mov.v2`.
    fn vector(&mut self) -> String {
        let v = format!("%v{}", self.rng.below(2));
        let e = |rng: &mut Rng| *rng.pick(&[".x", ".y", ".r", ".g"]);
        match self.rng.below(5) {
            0 => {
                let (a, b) = (self.r(), self.r());
                format!("add.u32 {v}{}, {a}, {b};", e(self.rng))
            }
            1 => {
                let (d, a) = (self.r(), self.r());
                format!("xor.b32 {d}, {v}{}, {a};", e(self.rng))
            }
            2 => format!("mov.b64 {}, {v};", self.rd()),
            3 => format!("mov.b64 {v}, {};", self.rd()),
            _ => {
                let (a, b) = (self.r(), self.r());
                if self.rng.chance(50) {
                    format!("mov.v2.b32 {v}, {{{a}, {b}}};")
                } else {
                    format!("mov.v2.b32 {v}, %v{};", self.rng.below(2))
                }
            }
        }
    }
}
