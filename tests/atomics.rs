//! `atom` and `red` on every engine: each operation and type against the manual's definition
//! re-done here in wide integers (and `rustc_apfloat` for float `add`), atomicity under
//! blocks that run in parallel (tickets drawn by 16,384 threads are a permutation; counts,
//! sums, maxima and float sums exact), faults like a store's, `fence`/`membar` and
//! acquire/release loads and stores ("the last block sums up"), and the front end's errors.

mod common;

use common::{Rng, engines};
use ptxjit::ast::Type;
use ptxjit::generate::edge_value;
use ptxjit::{Arg, Dim3, Module, Value};
use rustc_apfloat::Float;
use rustc_apfloat::ieee::{Double, Single};

/// (operation, type) pairs the manual allows.
const FORMS: &[(&str, &str)] = &[
    ("and", "b32"),
    ("and", "b64"),
    ("or", "b32"),
    ("or", "b64"),
    ("xor", "b32"),
    ("xor", "b64"),
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
    ("min", "u32"),
    ("min", "s32"),
    ("min", "u64"),
    ("min", "s64"),
    ("max", "u32"),
    ("max", "s32"),
    ("max", "u64"),
    ("max", "s64"),
];

/// For each form, `.func (old, new) atom_k(init, b, c)` storing `init` in a global cell, then
/// `atom` on it, then reading it back, and `.func (new) red_k(init, b)` the same with `red`
/// (for the operations `red` has).
fn forms_module() -> String {
    let mut s = String::from(
        ".version 7.8\n.target sm_80\n.address_size 64\n.global .align 8 .b64 cell;\n",
    );
    for (k, (op, ty)) in FORMS.iter().enumerate() {
        let c = if *op == "cas" { ", %c" } else { "" };
        s += &format!(
            ".visible .func (.param .{ty} old, .param .{ty} new) atom_{k}(.param .{ty} init, \
             .param .{ty} b, .param .{ty} c)\n{{\n  .reg .{ty} %i, %b, %c, %o, %n;\n  \
             ld.param.{ty} %i, [init];\n  ld.param.{ty} %b, [b];\n  ld.param.{ty} %c, [c];\n  \
             st.global.{ty} [cell], %i;\n  atom.global.{op}.{ty} %o, [cell], %b{c};\n  \
             ld.global.{ty} %n, [cell];\n  st.param.{ty} [old], %o;\n  \
             st.param.{ty} [new], %n;\n  ret;\n}}\n"
        );
        if !matches!(*op, "cas" | "exch") {
            s += &format!(
                ".visible .func (.param .{ty} new) red_{k}(.param .{ty} init, .param .{ty} b)\n\
                 {{\n  .reg .{ty} %i, %b, %n;\n  .reg .u64 %p;\n  ld.param.{ty} %i, [init];\n  \
                 ld.param.{ty} %b, [b];\n  mov.u64 %p, cell;\n  st.global.{ty} [%p], %i;\n  \
                 red.{op}.{ty} [%p], %b;\n  ld.global.{ty} %n, [%p];\n  \
                 st.param.{ty} [new], %n;\n  ret;\n}}\n"
            );
        }
    }
    s
}

fn ty_of(name: &str) -> Type {
    Type::from_ptx(name).expect("a PTX type")
}

fn signed(v: u64, ty: Type) -> i128 {
    let bits = ty.bits();
    ((v as i128) << (128 - bits)) >> (128 - bits)
}

/// The manual's `atom` definition: the value stored where `old` was.
fn reference(op: &str, ty: Type, old: u64, b: u64, c: u64) -> u64 {
    let mask = ty.mask();
    let pick = |take_b: bool| if take_b { b } else { old };
    match op {
        "and" => old & b,
        "or" => old | b,
        "xor" => old ^ b,
        "exch" => b,
        "cas" => {
            if old == b {
                c
            } else {
                old
            }
        }
        "add" if ty == Type::F32 => {
            // Round to nearest even; subnormal inputs and the result flushed to a zero of
            // their sign; a NaN result is the canonical NaN.
            let flush = |v: u64| {
                if v & 0x7f80_0000 == 0 {
                    v & 0x8000_0000
                } else {
                    v
                }
            };
            let sum =
                (Single::from_bits(flush(old) as u128) + Single::from_bits(flush(b) as u128)).value;
            if sum.is_nan() {
                0x7fff_ffff
            } else {
                flush(sum.to_bits() as u64)
            }
        }
        "add" if ty == Type::F64 => {
            // A NaN result: b's NaN, else old's, as they are (not quieted), else the
            // default NaN (an H200: tests/hardware/cases/atomics_float.ptx,
            // nan_between_halves.ptx).
            let sum = (Double::from_bits(old as u128) + Double::from_bits(b as u128)).value;
            let is_nan = |v: u64| f64::from_bits(v).is_nan();
            if sum.is_nan() {
                [b, old]
                    .into_iter()
                    .find(|&v| is_nan(v))
                    .unwrap_or(0xfff8_0000_0000_0000)
            } else {
                sum.to_bits() as u64
            }
        }
        "add" => ((old as u128 + b as u128) as u64) & mask,
        "inc" => {
            if old >= b {
                0
            } else {
                old + 1
            }
        }
        "dec" => {
            if old == 0 || old > b {
                b
            } else {
                old - 1
            }
        }
        "min" | "max" => {
            let (x, y) = if ty.is_signed() {
                (signed(old, ty), signed(b, ty))
            } else {
                (old as i128, b as i128)
            };
            pick(if op == "min" { y < x } else { y > x })
        }
        _ => unreachable!("{op}"),
    }
}

#[test]
fn every_operation_and_type_matches_the_manual() {
    let ptx = forms_module();
    let mut rng = Rng::new(21);
    for (name, e) in engines(&ptx) {
        for (k, (op, tyname)) in FORMS.iter().enumerate() {
            let ty = ty_of(tyname);
            for _ in 0..200 {
                let old = edge_value(&mut rng, ty);
                // b equal to old now and then, so that cas swaps and inc/dec meet their
                // bounds; else b near old or an edge value.
                let b = match rng.below(4) {
                    0 => old,
                    1 => old.wrapping_add(rng.below(3)).wrapping_sub(1) & ty.mask(),
                    _ => edge_value(&mut rng, ty),
                };
                let c = edge_value(&mut rng, ty);
                let want = reference(op, ty, old, b, c);
                let args = [Value::new(ty, old), Value::new(ty, b), Value::new(ty, c)];
                let got = e.call(&format!("atom_{k}"), &args).unwrap();
                let what = format!("{name}: atom.{op}.{tyname} old {old:#x} b {b:#x} c {c:#x}");
                assert_eq!(got[0].bits, old, "{what}: d");
                assert_eq!(got[1].bits, want, "{what}: new value");
                if !matches!(*op, "cas" | "exch") {
                    let got = e.call(&format!("red_{k}"), &args[..2]).unwrap();
                    assert_eq!(got[0].bits, want, "{what}: red");
                }
            }
        }
    }
}

/// Every thread of 128 blocks × 128 threads: a ticket from `atom.add.u32` (written to its
/// slot), `red.add.u64` of its global index (between fences), `atom.max.s32` of a value that peaks at one
/// thread, `atom.inc.u32` with bound 999 (so the count wraps), and `red.add.f32` of 1.0.
const CONTENDED: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry contended(.param .u64 pcounters, .param .u64 ptickets)
{
  .reg .b32 %r<8>;
  .reg .f32 %f1;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pcounters];
  ld.param.u64 %rd2, [ptickets];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mad.lo.s32 %r4, %r1, %r2, %r3;
  atom.global.add.u32 %r5, [%rd1], 1;
  mul.wide.u32 %rd3, %r4, 4;
  add.s64 %rd4, %rd2, %rd3;
  st.global.u32 [%rd4], %r5;
  membar.gl;
  cvt.u64.u32 %rd5, %r4;
  red.global.add.u64 [%rd1+8], %rd5;
  fence.sc.gpu;
  sub.s32 %r6, 7000, %r4;
  abs.s32 %r6, %r6;
  neg.s32 %r6, %r6;
  atom.relaxed.gpu.global.max.s32 %r7, [%rd1+16], %r6;
  atom.global.inc.u32 %r7, [%rd1+20], 999;
  mov.f32 %f1, 0f3F800000;
  red.global.add.f32 [%rd1+24], %f1;
  ret;
}
"#;

#[test]
fn atomics_are_atomic_across_blocks_running_in_parallel() {
    const BLOCKS: u32 = 128;
    const THREADS: u32 = 128;
    let n = (BLOCKS * THREADS) as u64;
    for (name, e) in engines(CONTENDED) {
        let mut counters = vec![0u8; 32];
        // The maximum starts below every value.
        counters[16..20].copy_from_slice(&i32::MIN.to_le_bytes());
        let mut tickets = vec![0u8; 4 * n as usize];
        e.launch(
            "contended",
            Dim3::x(BLOCKS),
            Dim3::x(THREADS),
            &mut [Arg::Buffer(&mut counters), Arg::Buffer(&mut tickets)],
        )
        .unwrap();
        let word = |at: usize| u32::from_le_bytes(counters[at..at + 4].try_into().unwrap());
        assert_eq!(word(0) as u64, n, "{name}: tickets drawn");
        let sum = u64::from_le_bytes(counters[8..16].try_into().unwrap());
        assert_eq!(sum, n * (n - 1) / 2, "{name}: sum of indices");
        assert_eq!(word(16) as i32, 0, "{name}: max of -|7000 - i|");
        assert_eq!(word(20) as u64, n % 1000, "{name}: inc wraps after 999");
        assert_eq!(f32::from_bits(word(24)), n as f32, "{name}: float sum");
        let mut seen: Vec<u32> = tickets
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        seen.sort_unstable();
        assert!(
            seen.iter().enumerate().all(|(i, &t)| t == i as u32),
            "{name}: the tickets are not a permutation of 0..{n}"
        );
    }
}

/// An atomic faults where a store would: past the end, misaligned, on constant memory.
const FAULTS: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.const .align 4 .u32 fixed = 5;
.visible .entry poke(.param .u64 p, .param .u32 how)
{
  .reg .pred %q<3>;
  .reg .b32 %r<3>;
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p];
  ld.param.u32 %r1, [how];
  setp.eq.u32 %q1, %r1, 1;
  setp.eq.u32 %q2, %r1, 2;
  @%q1 bra PAST;
  @%q2 bra CONST;
  atom.global.add.u32 %r2, [%rd1+2], 1;
  ret;
PAST:
  atom.global.exch.b32 %r2, [%rd1+16], 1;
  ret;
CONST:
  mov.u64 %rd2, fixed;
  atom.add.u32 %r2, [%rd2], 1;
  ret;
}
"#;

#[test]
fn atomics_fault_where_stores_would() {
    let cases = [
        (0, 17, "misaligned"),
        (1, 20, "out of bounds"),
        (2, 24, "read-only"),
    ];
    for (name, e) in engines(FAULTS) {
        for (how, line, what) in cases {
            let mut buf = vec![0u8; 16];
            let f = e
                .launch(
                    "poke",
                    Dim3::x(1),
                    Dim3::x(1),
                    &mut [Arg::Buffer(&mut buf), Arg::Scalar(Value::u32(how))],
                )
                .expect_err("faults");
            let ptxjit::RunError::Fault(f, _) = f else {
                panic!("{name}: not a fault: {f:?}")
            };
            assert_eq!(f.line, line, "{name}: {}", f.message);
            assert!(f.message.contains(what), "{name}: {}", f.message);
            assert_eq!(buf, vec![0; 16], "{name}: nothing written");
        }
    }
}

/// "The last block sums up": one thread of each block stores its part (`st.relaxed`), then
/// `fence.acq_rel` and `atom.acq_rel.add` on a counter; the block that draws the last ticket
/// reads every part with `ld.acquire` and stores the total with `st.release`.
const LAST_BLOCK: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry lastblock(.param .u64 pparts, .param .u64 pcount, .param .u64 ptotal)
{
  .reg .pred %p<3>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [pparts];
  ld.param.u64 %rd2, [pcount];
  ld.param.u64 %rd3, [ptotal];
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %nctaid.x;
  setp.ne.u32 %p1, %r2, 0;
  @%p1 bra DONE;
  mad.lo.u32 %r4, %r1, %r1, 7;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd1, %rd4;
  st.relaxed.gpu.global.u32 [%rd5], %r4;
  fence.acq_rel.gpu;
  atom.acq_rel.gpu.global.add.u32 %r5, [%rd2], 1;
  add.u32 %r6, %r5, 1;
  setp.ne.u32 %p2, %r6, %r3;
  @%p2 bra DONE;
  mov.u32 %r7, 0;
  mov.u32 %r8, 0;
LOOP:
  mul.wide.u32 %rd6, %r8, 4;
  add.s64 %rd7, %rd1, %rd6;
  ld.acquire.gpu.global.u32 %r9, [%rd7];
  add.u32 %r7, %r7, %r9;
  add.u32 %r8, %r8, 1;
  setp.lt.u32 %p2, %r8, %r3;
  @%p2 bra LOOP;
  st.release.gpu.global.u32 [%rd3], %r7;
DONE:
  ret;
}
"#;

#[test]
fn the_last_block_sees_every_part() {
    const BLOCKS: u32 = 300;
    let want: u32 = (0..BLOCKS).map(|b| b * b + 7).sum();
    for (name, e) in engines(LAST_BLOCK) {
        for _ in 0..20 {
            let mut parts = vec![0u8; 4 * BLOCKS as usize];
            let mut count = vec![0u8; 4];
            let mut total = vec![0u8; 4];
            e.launch(
                "lastblock",
                Dim3::x(BLOCKS),
                Dim3::x(32),
                &mut [
                    Arg::Buffer(&mut parts),
                    Arg::Buffer(&mut count),
                    Arg::Buffer(&mut total),
                ],
            )
            .unwrap();
            assert_eq!(
                u32::from_le_bytes(count.try_into().unwrap()),
                BLOCKS,
                "{name}"
            );
            assert_eq!(
                u32::from_le_bytes(total.try_into().unwrap()),
                want,
                "{name}"
            );
        }
    }
}

#[test]
fn the_front_end_refuses_forms_the_manual_does_not_have() {
    let body = |line: &str| {
        format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(.param .u64 p)\n\
             {{\n  .reg .b32 %r<4>;\n  .reg .b64 %rd<2>;\n  ld.param.u64 %rd1, [p];\n  \
             {line}\n  ret;\n}}\n"
        )
    };
    let cases = [
        ("atom.global.inc.u64 %rd1, [%rd1], 3;", "does not take type"),
        ("atom.global.and.u32 %r1, [%rd1], 3;", "does not take type"),
        ("red.global.cas.b32 [%rd1], %r1, %r2;", "no .exch or .cas"),
        ("atom.param.add.u32 %r1, [%rd1], 1;", "does not take"),
        ("atom.local.add.u32 %r1, [%rd1], 1;", "does not take"),
        ("atom.global.u32 %r1, [%rd1], 1;", "needs an operation"),
        ("atom.global.cas.b32 %r1, [%rd1], %r2;", "takes 4 operands"),
        ("red.global.add.u32 %r1, [%rd1], 1;", "takes 2 operands"),
        ("membar;", "needs a level"),
        ("fence.proxy.alias;", "unexpected modifier `.proxy`"),
        ("fence.sc.gpu %r1;", "takes 0 operands"),
        (
            "st.acquire.gpu.global.u32 [%rd1], %r1;",
            "cannot be .acquire",
        ),
        (
            "ld.release.gpu.global.u32 %r1, [%rd1];",
            "cannot be .release",
        ),
        ("ld.relaxed.global.u32 %r1, [%rd1];", "needs a scope"),
        (
            "ld.volatile.gpu.global.u32 %r1, [%rd1];",
            "a scope goes with",
        ),
        (
            "ld.acquire.relaxed.gpu.u32 %r1, [%rd1];",
            "conflicting modifier",
        ),
    ];
    for (line, want) in cases {
        let e = Module::parse(&body(line)).expect_err(line).to_string();
        assert!(e.contains(want), "{line}: {e}");
        // Located on line 9 of the module, with the offending text.
        assert!(e.contains(":9:"), "{line}: {e}");
    }
    for ok in [
        "atom.acq_rel.sys.global.add.u32 %r1, [%rd1], 1;",
        "atom.shared.add.u32 %r1, [%rd1], 1;",
        "fence.acq_rel.cta;",
        "membar.sys;",
        "ld.relaxed.sys.global.u32 %r1, [%rd1];",
        "st.release.cta.u32 [%rd1], %r1;",
        "ld.volatile.global.v2.u32 {%r1, %r2}, [%rd1];",
    ] {
        Module::parse(&body(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
}
