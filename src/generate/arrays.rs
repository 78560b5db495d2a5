//! Random element-wise kernels, for the JIT's SIMD lanes (`jit/lower/lanes.rs`). The
//! programs of [`super::program`] use loops, `.local` memory and a slot of bytes per thread,
//! which the lanes refuse; these keep to what the lanes take — thread i reads element i of
//! each input array, straight-line code of 32-bit integer and f32 operations, per-thread
//! guards and exits — and stress where lanes and the thread loop could part: groups whose
//! threads disagree on an exit, stores that land on other threads' elements (`j = i + d`),
//! stores into the arrays being read, and now and then an operation the lanes refuse.
//!
//! `k(.param .u64 inp, .param .u64 out, .param .u32 n)`: both buffers hold [`ARRAYS`] arrays
//! of `STRIDE` u32 elements; thread i < n loads `%r0..` and `%f0..` from element i of the
//! first ones, runs the body and stores every register to element j of `out` (or `inp`).

use super::{HEADER, Layout, Program, Rng, edge_value, reg};
use crate::ast::Type;
use crate::engine::Dim3;

/// Threads an array program's arrays have an element for; its launch runs at most this many
/// (thread i, counted in the engines' order — x fastest, then y, then the blocks — has
/// element i).
const THREADS: u32 = 300;
/// Stores go up to this many elements past the thread's own.
const PAD: u32 = 40;
/// Elements of an array.
const STRIDE: u32 = THREADS + PAD;
const R: usize = 6;
const F: usize = 4;
const P: usize = 4;
/// Arrays in each buffer: one per register (predicates stored as 0/1).
const ARRAYS: usize = R + F + P;
/// Bytes of each buffer.
pub const ARRAY_BYTES: usize = ARRAYS * STRIDE as usize * 4;

/// Inputs of an array program: `inp`'s register arrays edge-biased by type (the rest zero).
pub fn array_input(rng: &mut Rng) -> Vec<u8> {
    let mut bytes = vec![0u8; ARRAY_BYTES];
    for k in 0..R + F {
        let ty = if k < R { Type::B32 } else { Type::F32 };
        for i in 0..THREADS as usize {
            let at = (k * STRIDE as usize + i) * 4;
            let v = edge_value(rng, ty) as u32;
            bytes[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
    }
    bytes
}

/// A random array program of about `size` body instructions.
pub fn array_program(rng: &mut Rng, size: usize) -> Program {
    let mut g = ArrayGen {
        rng,
        out: Vec::new(),
    };
    for _ in 0..size {
        g.item();
    }
    let in_place = g.rng.chance(15);
    let shift = match g.rng.below(10) {
        0..=5 => 0,
        // At most PAD − 2: the read-back below may go two elements further.
        6 | 7 => g.rng.below(PAD as u64 - 1) as u32,
        _ => *g.rng.pick(&[1, 31, 32, 33]),
    };
    let reads = Elements::pick(g.rng);
    let writes = Elements::pick(g.rng);
    let (epilogue, reads_neighbour) = epilogue(g.rng, writes, in_place, shift);
    // Blocks run in parallel, so a program whose threads touch other threads' elements (a
    // shift, a neighbour's read-back, or stores in place in another layout than the loads)
    // has one block; the others may have several.
    let own_elements = shift == 0 && !reads_neighbour && !(in_place && reads != writes);
    let (grid, block) = launch(g.rng, own_elements);
    let prologue = prologue(g.rng, reads, block.y > 1);
    Program {
        layout: Layout::Arrays { grid, block },
        prologue,
        body: g.out,
        epilogue,
    }
}

/// The launch of an array program: one block of 300 threads (nine lane groups and twelve
/// threads on the thread loop), or of rows shorter than a group or not a multiple of it
/// (2-D blocks), or, for a program whose threads keep to their own elements, several blocks.
fn launch(rng: &mut Rng, own_elements: bool) -> (Dim3, Dim3) {
    const ONE_BLOCK: [(u32, u32); 6] = [(300, 1), (100, 3), (20, 15), (64, 4), (96, 3), (33, 9)];
    const BLOCKS: [(u32, u32, u32); 3] = [(3, 100, 1), (2, 64, 2), (4, 32, 2)];
    let (grid, x, y) = if own_elements && rng.chance(40) {
        *rng.pick(&BLOCKS)
    } else if rng.chance(50) {
        (1, 300, 1)
    } else {
        let (x, y) = *rng.pick(&ONE_BLOCK);
        (1, x, y)
    };
    debug_assert!(grid * x * y <= THREADS);
    (Dim3::x(grid), Dim3::new(x, y, 1))
}

/// Declarations, the thread's index `%i` (`(%ctaid.x·%ntid.y + %tid.y)·%ntid.x + %tid.x` in
/// 2-D blocks), the exit past n and the loads.
fn prologue(rng: &mut Rng, layout: Elements, rows: bool) -> String {
    let mut s =
        format!("{HEADER}.visible .entry k(.param .u64 inp, .param .u64 out, .param .u32 n)\n{{\n");
    s += &format!(
        "  .reg .b32 %r<{R}>;\n  .reg .f32 %f<{F}>;\n  .reg .pred %p<{P}>;\n  \
         .reg .b32 %i, %n, %t, %j;\n  .reg .b64 %in, %out, %w;\n"
    );
    s += "  ld.param.u32 %n, [n];\n  mov.u32 %t, %ctaid.x;\n";
    if rows {
        s += "  mov.u32 %i, %ntid.y;\n  mov.u32 %j, %tid.y;\n  mad.lo.u32 %t, %t, %i, %j;\n";
    }
    s += "  mov.u32 %i, %ntid.x;\n  mul.lo.u32 %i, %i, %t;\n  mov.u32 %t, %tid.x;\n  \
          add.u32 %i, %i, %t;\n";
    // Most programs leave past n; the others run every thread.
    if rng.chance(85) {
        s += "  setp.ge.u32 %p0, %i, %n;\n  @%p0 bra $END;\n";
    }
    s += &format!(
        "  ld.param.u64 %in, [inp];\n  mul.wide.u32 %w, %i, {};\n  add.s64 %in, %in, %w;\n",
        layout.thread_bytes()
    );
    for k in 0..R + F {
        let (ty, reg) = if k < R {
            ("b32", format!("%r{k}"))
        } else {
            ("f32", format!("%f{}", k - R))
        };
        s += &format!("  ld.global.{ty} {reg}, [%in+{}];\n", layout.offset(k));
    }
    s += "  setp.lt.u32 %p1, %r0, %r3;\n  setp.ne.u32 %p2, %r1, %r4;\n  \
          setp.gtu.f32 %p3, %f0, %f1;\n";
    s
}

/// Where element k of a thread is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Elements {
    /// Array k, element i: `k · STRIDE + i`.
    Arrays,
    /// Structure i, field k: `i · ARRAYS + k` (the lanes read and write those lane by lane).
    Structures,
}

impl Elements {
    fn pick(rng: &mut Rng) -> Elements {
        if rng.chance(25) {
            Elements::Structures
        } else {
            Elements::Arrays
        }
    }
    /// Bytes from one thread's elements to the next thread's.
    fn thread_bytes(self) -> usize {
        match self {
            Elements::Arrays => 4,
            Elements::Structures => 4 * ARRAYS,
        }
    }
    /// Byte offset of element k from the thread's first.
    fn offset(self, k: usize) -> usize {
        match self {
            Elements::Arrays => 4 * k * STRIDE as usize,
            Elements::Structures => 4 * k,
        }
    }
}

/// The stores of every register to element i + shift of `out` (or `inp`), and whether a
/// thread then reads back another thread's element.
fn epilogue(rng: &mut Rng, layout: Elements, in_place: bool, shift: u32) -> (String, bool) {
    let buffer = if in_place { "inp" } else { "out" };
    let mut s = format!(
        "  ld.param.u64 %out, [{buffer}];\n  add.u32 %j, %i, {shift};\n  \
         mul.wide.u32 %w, %j, {};\n  add.s64 %out, %out, %w;\n",
        layout.thread_bytes()
    );
    let mut stores = Vec::new();
    for k in 0..ARRAYS {
        let at = layout.offset(k);
        stores.push(match k {
            k if k < R => format!("  st.global.b32 [%out+{at}], %r{k};\n"),
            k if k < R + F => format!("  st.global.f32 [%out+{at}], %f{};\n", k - R),
            k => format!(
                "  selp.u32 %t, 1, 0, %p{};\n  st.global.u32 [%out+{at}], %t;\n",
                k - R - F
            ),
        });
    }
    // Stores in a random order now and then (the lanes check every pair).
    if rng.chance(30) {
        rng.shuffle(&mut stores);
    }
    // Now and then a thread reads back an element after the stores (its neighbour's in the
    // structure-of-arrays layout): a store before a load, which the lanes must order.
    let mut reads_neighbour = false;
    if rng.chance(15) {
        let k = rng.below(ARRAYS as u64) as usize;
        let near = layout.thread_bytes() as u64 * rng.below(3);
        reads_neighbour = near > 0;
        stores.push(format!(
            "  ld.global.b32 %t, [%out+{}];\n  st.global.b32 [%out+{}], %t;\n",
            layout.offset(k) as u64 + near,
            layout.offset(ARRAYS - 1)
        ));
    }
    s += &stores.concat();
    (s + "$END:\n  ret;\n}\n", reads_neighbour)
}

struct ArrayGen<'r> {
    rng: &'r mut Rng,
    out: Vec<String>,
}

impl ArrayGen<'_> {
    fn r(&mut self) -> String {
        reg(self.rng, "r", R)
    }
    fn f(&mut self) -> String {
        reg(self.rng, "f", F)
    }
    fn p(&mut self) -> String {
        reg(self.rng, "p", P)
    }
    /// A 32-bit source: a register, the thread's index, a uniform value or an immediate.
    fn src(&mut self) -> String {
        match self.rng.below(20) {
            0..=1 => format!("{}", edge_value(self.rng, Type::U32) as u32),
            2 => "%i".into(),
            3 => "%n".into(),
            _ => self.r(),
        }
    }
    fn f_src(&mut self) -> String {
        if self.rng.chance(10) {
            format!("0f{:08X}", edge_value(self.rng, Type::F32) as u32)
        } else {
            self.f()
        }
    }
    fn ftz(&mut self) -> &'static str {
        if self.rng.chance(40) { ".ftz" } else { "" }
    }
    fn sat(&mut self) -> &'static str {
        if self.rng.chance(30) { ".sat" } else { "" }
    }
    fn emit(&mut self, text: String) {
        let g = if self.rng.chance(20) {
            let p = self.p();
            if self.rng.chance(50) {
                format!("@!{p} ")
            } else {
                format!("@{p} ")
            }
        } else {
            String::new()
        };
        self.out.push(format!("  {g}{text}\n"));
    }

    fn item(&mut self) {
        let r = self.rng.below(200);
        match r {
            0..=29 => {
                let op = *self.rng.pick(&[
                    "add.u32", "sub.s32", "min.s32", "min.u32", "max.s32", "max.u32", "and.b32",
                    "or.b32", "xor.b32",
                ]);
                let (d, a, b) = (self.r(), self.src(), self.src());
                self.emit(format!("{op} {d}, {a}, {b};"));
            }
            30..=43 => {
                let d = self.r();
                let (a, b, c) = (self.src(), self.src(), self.src());
                if self.rng.chance(50) {
                    self.emit(format!("mul.lo.u32 {d}, {a}, {b};"));
                } else {
                    self.emit(format!("mad.lo.s32 {d}, {a}, {b}, {c};"));
                }
            }
            44..=55 => {
                let op = *self.rng.pick(&["shl.b32", "shr.u32", "shr.s32"]);
                let (d, a) = (self.r(), self.src());
                let k = self.rng.below(40);
                self.emit(format!("{op} {d}, {a}, {k};"));
            }
            56..=71 => {
                let ty = *self.rng.pick(&["u32", "s32"]);
                let cmps: &[&str] = if ty == "u32" {
                    &["eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs"]
                } else {
                    &["eq", "ne", "lt", "le", "gt", "ge"]
                };
                let cmp = *self.rng.pick(cmps);
                let (p, a, b) = (self.p(), self.src(), self.src());
                if self.rng.chance(40) {
                    let bop = *self.rng.pick(&["and", "or", "xor"]);
                    let (q, c) = (self.p(), self.p());
                    let c = if self.rng.chance(30) {
                        format!("!{c}")
                    } else {
                        c
                    };
                    self.emit(format!("setp.{cmp}.{bop}.{ty} {p}|{q}, {a}, {b}, {c};"));
                } else {
                    self.emit(format!("setp.{cmp}.{ty} {p}, {a}, {b};"));
                }
            }
            72..=83 => {
                let cmp = *self.rng.pick(&[
                    "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu",
                    "num", "nan",
                ]);
                let ftz = self.ftz();
                let (p, a, b) = (self.p(), self.f_src(), self.f_src());
                self.emit(format!("setp.{cmp}{ftz}.f32 {p}, {a}, {b};"));
            }
            84..=95 => {
                let c = self.p();
                if self.rng.chance(50) {
                    let (d, a, b) = (self.r(), self.src(), self.src());
                    self.emit(format!("selp.b32 {d}, {a}, {b}, {c};"));
                } else {
                    let (d, a, b) = (self.f(), self.f_src(), self.f_src());
                    self.emit(format!("selp.f32 {d}, {a}, {b}, {c};"));
                }
            }
            96..=127 => {
                let op = *self.rng.pick(&["add", "sub", "mul"]);
                let rn = if self.rng.chance(50) { ".rn" } else { "" };
                let (ftz, sat) = (self.ftz(), self.sat());
                let (d, a, b) = (self.f(), self.f_src(), self.f_src());
                self.emit(format!("{op}{rn}{ftz}{sat}.f32 {d}, {a}, {b};"));
            }
            128..=145 => {
                let (ftz, sat) = (self.ftz(), self.sat());
                let op = if self.rng.chance(50) { "fma" } else { "mad" };
                let (d, a, b, c) = (self.f(), self.f_src(), self.f_src(), self.f_src());
                self.emit(format!("{op}.rn{ftz}{sat}.f32 {d}, {a}, {b}, {c};"));
            }
            146..=153 => {
                let op = *self.rng.pick(&["neg", "abs"]);
                let ftz = self.ftz();
                let (d, a) = (self.f(), self.f());
                self.emit(format!("{op}{ftz}.f32 {d}, {a};"));
            }
            154..=163 => {
                if self.rng.chance(50) {
                    let (d, a) = (self.f(), self.r());
                    self.emit(format!("mov.b32 {d}, {a};"));
                } else {
                    let (d, a) = (self.r(), self.f());
                    self.emit(format!("mov.b32 {d}, {a};"));
                }
            }
            164..=175 => {
                let d = self.r();
                let s = *self
                    .rng
                    .pick(&["%tid.x", "%ctaid.x", "%ntid.x", "%nctaid.x"]);
                self.emit(format!("mov.u32 {d}, {s};"));
            }
            176..=183 => {
                // A per-thread exit: groups whose threads disagree go to the thread loop.
                let p = self.p();
                let neg = if self.rng.chance(50) { "!" } else { "" };
                self.out.push(format!("  @{neg}{p} bra $END;\n"));
            }
            184..=185 => {
                // Something the lanes refuse: the kernel runs on the thread loop.
                let (d, a, b) = (self.r(), self.src(), self.src());
                let op = *self.rng.pick(&["div.u32", "rem.s32", "mul.hi.u32"]);
                self.emit(format!("{op} {d}, {a}, {b};"));
            }
            _ => {
                let (d, a) = (self.r(), self.src());
                self.emit(format!("mov.b32 {d}, {a};"));
            }
        }
    }
}
