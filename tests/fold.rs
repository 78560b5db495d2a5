//! The lowering's own folding (src/jit/lower/fold.rs): results of shifts, funnel shifts,
//! rotates, bit-field operations, multiplications, divisions, comparisons and selects whose
//! operands are constants, against Rust's integer operations on every engine; and the shape
//! of the code each folding gives (`JitOptions::emit`), so that none can regress unnoticed.

mod common;

use common::{call3, engines, jit_with, three_operand_module};
use ptxjit::JitOptions;
use ptxjit::jit::Emit;

const HEADER: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

/// Inputs that reach every edge: zero, one, the sign bit, all ones, a mixed pattern.
const INPUTS: [u32; 6] = [0, 1, 0x8000_0000, 0xffff_ffff, 0x1234_5678, 0xdead_beef];

/// A model written from the PTX ISA manual (9.7.8.8–9: amounts of the width or more clamp to
/// the width) with Rust's own operations.
fn shl(x: u32, n: u32) -> u32 {
    x.checked_shl(n).unwrap_or(0)
}
fn shr_u(x: u32, n: u32) -> u32 {
    x.checked_shr(n).unwrap_or(0)
}
fn shr_s(x: u32, n: u32) -> u32 {
    ((x as i32) >> n.min(31)) as u32
}
/// `shf` (9.7.8.6): the upper (`.l`) or lower (`.r`) 32 bits of hi:lo shifted by n.
fn shf_l(lo: u32, hi: u32, n: u32) -> u32 {
    let pair = ((hi as u64) << 32) | lo as u64;
    ((pair << n) >> 32) as u32
}
fn shf_r(lo: u32, hi: u32, n: u32) -> u32 {
    let pair = ((hi as u64) << 32) | lo as u64;
    (pair >> n) as u32
}

type Model = Box<dyn Fn(u32, u32) -> u32>;

/// `(instruction text, model of %d from %a and %b)`; `%k` holds a constant set by `mov`.
fn cases() -> Vec<(String, Model)> {
    let mut v: Vec<(String, Model)> = Vec::new();
    for n in [0u32, 1, 5, 16, 31, 32, 33, 255, 0xffff_ffff] {
        v.push((
            format!("shl.b32 %d, %a, {n};"),
            Box::new(move |a, _| shl(a, n)),
        ));
        v.push((
            format!("shr.u32 %d, %a, {n};"),
            Box::new(move |a, _| shr_u(a, n)),
        ));
        v.push((
            format!("shr.s32 %d, %a, {n};"),
            Box::new(move |a, _| shr_s(a, n)),
        ));
        // The amount in a register that holds a constant.
        v.push((
            format!("mov.u32 %k, {n};\n  shr.u32 %d, %a, %k;"),
            Box::new(move |a, _| shr_u(a, n)),
        ));
        for (wrap, m) in [("wrap", n & 31), ("clamp", n.min(32))] {
            v.push((
                format!("shf.l.{wrap}.b32 %d, %a, %a, {n};"),
                Box::new(move |a, _| shf_l(a, a, m)),
            ));
            v.push((
                format!("shf.r.{wrap}.b32 %d, %a, %a, {n};"),
                Box::new(move |a, _| shf_r(a, a, m)),
            ));
            v.push((
                format!("shf.l.{wrap}.b32 %d, %a, %b, {n};"),
                Box::new(move |a, b| shf_l(a, b, m)),
            ));
            v.push((
                format!("shf.r.{wrap}.b32 %d, %a, %b, {n};"),
                Box::new(move |a, b| shf_r(a, b, m)),
            ));
        }
    }
    // Equal sources with a run-time amount are a rotate too.
    v.push((
        "shf.l.wrap.b32 %d, %a, %a, %b;".into(),
        Box::new(|a, b| a.rotate_left(b & 31)),
    ));
    v.push((
        "shf.r.clamp.b32 %d, %a, %a, %b;".into(),
        Box::new(|a, b| shf_r(a, a, b.min(32))),
    ));
    // shl/shr pairs combined: a rotate when the amounts add up to the width.
    for (k, m) in [(7u32, 25u32), (1, 31), (31, 1), (7, 24), (16, 16)] {
        for op in ["or.b32", "add.u32", "xor.b32"] {
            let text = format!("shl.b32 %k, %a, {k};\n  shr.u32 %l, %a, {m};\n  {op} %d, %k, %l;");
            let f: Box<dyn Fn(u32, u32) -> u32> = match op {
                "or.b32" => Box::new(move |a, _| shl(a, k) | shr_u(a, m)),
                "add.u32" => Box::new(move |a, _| shl(a, k).wrapping_add(shr_u(a, m))),
                _ => Box::new(move |a, _| shl(a, k) ^ shr_u(a, m)),
            };
            v.push((text, f));
        }
    }
    // A signed right shift is not half of a rotate.
    v.push((
        "shl.b32 %k, %a, 8;\n  shr.s32 %l, %a, 24;\n  or.b32 %d, %k, %l;".into(),
        Box::new(|a, _| shl(a, 8) | shr_s(a, 24)),
    ));
    // Multiplications by constants.
    for c in [0u32, 1, 2, 4, 3, 5, 9, 0x8000_0000, 0xffff_fffc, 12345] {
        v.push((
            format!("mul.lo.u32 %d, %a, {c};"),
            Box::new(move |a, _| a.wrapping_mul(c)),
        ));
        v.push((
            format!("mul.lo.u32 %d, {c}, %a;"),
            Box::new(move |a, _| a.wrapping_mul(c)),
        ));
        v.push((
            format!("mad.lo.u32 %d, %a, {c}, %b;"),
            Box::new(move |a, b| a.wrapping_mul(c).wrapping_add(b)),
        ));
        // The wide product's halves.
        v.push((
            format!("mul.wide.s32 %w, %a, {};\n  cvt.u32.u64 %d, %w;", c as i32),
            Box::new(move |a, _| ((a as i32 as i64).wrapping_mul(c as i32 as i64)) as u32),
        ));
        v.push((
            format!(
                "mul.wide.s32 %w, %a, {};\n  shr.u64 %w, %w, 32;\n  cvt.u32.u64 %d, %w;",
                c as i32
            ),
            Box::new(move |a, _| ((a as i32 as i64).wrapping_mul(c as i32 as i64) >> 32) as u32),
        ));
        v.push((
            format!("mul.wide.u32 %w, %a, {c};\n  shr.u64 %w, %w, 32;\n  cvt.u32.u64 %d, %w;"),
            Box::new(move |a, _| ((a as u64 * c as u64) >> 32) as u32),
        ));
    }
    // Divisions by constants (by 0 as NVIDIA hardware gives it: all ones for both).
    for c in [0u32, 1, 2, 8, 0x8000_0000, 3] {
        v.push((
            format!("div.u32 %d, %a, {c};"),
            Box::new(move |a, _| a.checked_div(c).unwrap_or(u32::MAX)),
        ));
        v.push((
            format!("rem.u32 %d, %a, {c};"),
            Box::new(move |a, _| a.checked_rem(c).unwrap_or(u32::MAX)),
        ));
    }
    // Bit fields at known positions (9.7.1.18–19).
    for (p, l) in [(7u32, 10u32), (0, 32), (31, 1), (24, 16), (40, 3), (0, 0)] {
        let k = l.min(32 - p.min(32));
        let mask = if k >= 32 { u32::MAX } else { (1 << k) - 1 };
        v.push((
            format!("bfe.u32 %d, %a, {p}, {l};"),
            Box::new(move |a, _| if p >= 32 { 0 } else { (a >> p) & mask }),
        ));
        v.push((
            format!("bfe.s32 %d, %a, {p}, {l};"),
            Box::new(move |a, _| {
                let field = if p >= 32 { 0 } else { (a >> p) & mask };
                let sign = l > 0 && (a >> (p + l - 1).min(31)) & 1 == 1;
                if sign { field | !mask } else { field }
            }),
        ));
        v.push((
            format!("bfi.b32 %d, %a, %b, {p}, {l};"),
            Box::new(move |a, b| {
                if p >= 32 {
                    b
                } else {
                    let m = mask << p;
                    (b & !m) | ((a << p) & m)
                }
            }),
        ));
    }
    // Comparisons and selects on constants, and guards they decide.
    for (x, y) in [(3u32, 5u32), (5, 3), (0xffff_ffff, 1), (7, 7)] {
        v.push((
            format!("mov.u32 %k, {x};\n  setp.lt.s32 %p, %k, {y};\n  selp.b32 %d, %a, %b, %p;"),
            Box::new(move |a, b| if (x as i32) < (y as i32) { a } else { b }),
        ));
        v.push((
            format!(
                "mov.u32 %k, {x};\n  setp.lt.u32 %p, %k, {y};\n  mov.u32 %d, %b;\n  @%p mov.u32 %d, %a;"
            ),
            Box::new(move |a, b| if x < y { a } else { b }),
        ));
        v.push((
            format!(
                "mov.u32 %k, {x};\n  setp.ge.u32 %p, %k, {y};\n  mov.u32 %d, %b;\n  @!%p add.u32 %d, %a, %k;"
            ),
            Box::new(move |a, b| if x >= y { b } else { a.wrapping_add(x) }),
        ));
    }
    v
}

const DECLS: &str = "  .reg .b32 %k, %l;\n  .reg .b64 %w;\n  .reg .pred %p;\n";

#[test]
fn folded_results_match_rust() {
    let cases = cases();
    let ptx = three_operand_module(HEADER, DECLS, 0, cases.iter().map(|c| c.0.clone()));
    for (name, e) in engines(&ptx) {
        for (k, (text, model)) in cases.iter().enumerate() {
            for a in INPUTS {
                for b in [0u32, 5, 0x8765_4321, 37] {
                    let got = call3(e.as_ref(), &format!("f{k}"), a, b, 0);
                    let want = model(a, b);
                    assert_eq!(got, want, "{name}: `{text}` with a={a:#x} b={b:#x}");
                }
            }
        }
    }
}

/// The x86-64 code of every function of `ptx` (unchecked, no lanes), by name.
fn asm(ptx: &str) -> Vec<(String, String)> {
    let options = JitOptions {
        emit: Emit::Asm,
        checked: false,
        lanes: false,
        ..JitOptions::default()
    };
    jit_with(ptx, options).listing.clone()
}

/// The code of function `name` in a listing.
fn code_of<'a>(listing: &'a [(String, String)], name: &str) -> &'a str {
    &listing
        .iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("no listing of {name}: {listing:?}"))
        .1
}

/// The instructions (mnemonics) of a listing's code.
fn mnemonics(code: &str) -> Vec<&str> {
    code.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|m| !m.ends_with(':') && *m != "unwind")
        .collect()
}

fn one_func(body: &str) -> String {
    three_operand_module(HEADER, DECLS, 0, [body.to_string()])
}

#[test]
fn a_constant_shift_has_no_clamp() {
    for text in [
        "shr.u32 %d, %a, 16;",
        "shl.b32 %d, %a, 7;",
        "shr.s32 %d, %a, 40;",
        "mov.u32 %k, 3;\n  shl.b32 %d, %a, %k;",
    ] {
        let listing = asm(&one_func(text));
        let m = mnemonics(code_of(&listing, "f0"));
        assert!(
            !m.iter()
                .any(|i| i.starts_with("cmp") || i.starts_with("cmov")),
            "`{text}`: {m:?}"
        );
        assert!(
            m.iter()
                .any(|i| i.starts_with("sh") || i.starts_with("sar")),
            "`{text}`: {m:?}"
        );
    }
    // Out of range: the known result, no shift at all.
    let listing = asm(&one_func("shl.b32 %d, %a, 32;"));
    let m = mnemonics(code_of(&listing, "f0"));
    assert!(
        !m.iter()
            .any(|i| i.starts_with("sh") || i.starts_with("cmp") || i.starts_with("cmov")),
        "{m:?}"
    );
}

#[test]
fn rotates_are_recognised() {
    for text in [
        "shf.l.wrap.b32 %d, %a, %a, 5;",
        "shf.r.wrap.b32 %d, %a, %a, 13;",
        "shf.l.clamp.b32 %d, %a, %a, %b;",
        "shl.b32 %k, %a, 7;\n  shr.u32 %l, %a, 25;\n  or.b32 %d, %k, %l;",
        "shl.b32 %k, %a, 27;\n  shr.b32 %l, %a, 5;\n  add.u32 %d, %l, %k;",
    ] {
        let listing = asm(&one_func(text));
        let m = mnemonics(code_of(&listing, "f0"));
        assert!(
            m.iter()
                .any(|i| i.starts_with("rol") || i.starts_with("ror")),
            "`{text}`: {m:?}"
        );
        // No 64-bit funnel through a register pair, no separate shifts.
        assert!(!m.iter().any(|i| i.starts_with("sh")), "`{text}`: {m:?}");
    }
    // The 64-bit rotate clang writes for (h << 27) | (h >> 37) in the corpus hash.
    let ptx = include_str!("corpus/hash.ptx");
    let listing = asm(ptx);
    let m = mnemonics(code_of(&listing, "_Z3mixmm"));
    assert!(
        m.iter()
            .any(|i| i.starts_with("rol") || i.starts_with("ror")),
        "{m:?}"
    );
}

#[test]
fn multiplies_by_constants_need_no_memory() {
    // By a power of two: a shift (or an addressing mode), no imul, no constant load.
    let listing = asm(&one_func(
        "mul.wide.s32 %w, %a, 4;\n  add.u64 %w, %w, 100;\n  cvt.u32.u64 %d, %w;",
    ));
    let code = code_of(&listing, "f0");
    assert!(!code.contains("imul") && !code.contains("(%rip)"), "{code}");
    // By 3, 5 or 9: one lea.
    let listing = asm(&one_func("mad.lo.u32 %d, %a, 5, 1000;"));
    let code = code_of(&listing, "f0");
    assert!(!code.contains("imul") && code.contains("lea"), "{code}");
    // By a small constant: imul with an immediate, not one loaded from memory.
    let listing = asm(&one_func("mul.lo.u32 %d, %a, 12345;"));
    let code = code_of(&listing, "f0");
    assert!(
        code.contains("imul") && code.contains("$0x3039") && !code.contains("(%rip)"),
        "{code}"
    );
}

#[test]
fn constant_comparisons_and_guards_are_decided() {
    let listing = asm(&one_func(
        "mov.u32 %k, 3;\n  setp.lt.u32 %p, %k, 5;\n  selp.b32 %d, %a, %b, %p;\n  @!%p add.u32 %d, %d, 1;",
    ));
    let m = mnemonics(code_of(&listing, "f0"));
    assert!(
        !m.iter().any(|i| i.starts_with("cmp")
            || i.starts_with("cmov")
            || (i.starts_with('j') && *i != "jmp")),
        "{m:?}"
    );
}

#[test]
fn kernel_parameters_are_loaded_once_per_block() {
    let ptx = format!(
        "{HEADER}.visible .entry k(.param .u64 out, .param .u32 add)\n{{\n  .reg .b32 %r<4>;\n  \
         .reg .b64 %rd<4>;\n  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [add];\n  \
         mov.u32 %r2, %tid.x;\n  add.u32 %r3, %r2, %r1;\n  mul.wide.u32 %rd2, %r2, 4;\n  \
         add.u64 %rd3, %rd1, %rd2;\n  st.global.u32 [%rd3], %r3;\n  ret;\n}}\n"
    );
    for checked in [false, true] {
        let options = JitOptions {
            emit: Emit::Clif,
            checked,
            lanes: false,
            ..JitOptions::default()
        };
        let jit = jit_with(&ptx, options);
        let clif = code_of(&jit.listing, "k");
        // The entry block (block0) loads the parameters through the parameter block's
        // address; no later block (the thread loop) loads through that address again.
        let (_, from_entry) = clif
            .split_once("block0")
            .unwrap_or_else(|| panic!("{clif}"));
        let (entry, rest) = from_entry
            .split_once("\n\nblock")
            .unwrap_or_else(|| panic!("{clif}"));
        let address = |line: &str| -> Option<String> {
            let (_, operands) = line.split_once("load")?;
            let last = operands.split_whitespace().last()?;
            Some(last.split('+').next()?.to_string())
        };
        let bases: Vec<String> = entry
            .lines()
            .filter_map(address)
            .filter(|a| a != "v0")
            .collect();
        assert!(
            !bases.is_empty(),
            "checked={checked}: no parameter load in the entry\n{clif}"
        );
        for line in rest.lines() {
            if let Some(a) = address(line) {
                assert!(
                    !bases.contains(&a),
                    "checked={checked}: a per-thread parameter load `{line}`\n{clif}"
                );
            }
        }
    }
    // And the kernel still computes tid + add for every thread, on every engine.
    for (name, e) in engines(&ptx) {
        let mut out = vec![0u8; 4 * 8];
        e.launch(
            "k",
            ptxjit::Dim3::x(1),
            ptxjit::Dim3::x(8),
            &mut [
                ptxjit::Arg::Buffer(&mut out),
                ptxjit::Arg::Scalar(ptxjit::Value::u32(100)),
            ],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        let got: Vec<u32> = out
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, (100..108).collect::<Vec<u32>>(), "{name}");
    }
}

/// Float immediates come from the constant pool: one load each, never built in a general
/// register and moved across (`movl $imm` then `vmovd`, which x86-64 Cranelift emits for
/// an `f32const`); the values are Rust's.
#[test]
fn float_constants_are_loaded() {
    let ptx = format!(
        "{HEADER}.visible .func (.reg .f32 %d) f0(.reg .f32 %a)\n{{\n  \
         fma.rn.f32 %d, %a, 0f40490FDB, 0f3F000000;\n  mul.rn.f32 %d, %d, 0f40000001;\n  \
         ret;\n}}\n\
         .visible .func (.reg .f64 %d) f1(.reg .f64 %a)\n{{\n  \
         fma.rn.f64 %d, %a, 0d400921FB54442D18, 0d3FE0000000000000;\n  \
         mul.rn.f64 %d, %d, 0d4000000000000001;\n  ret;\n}}\n"
    );
    let listing = asm(&ptx);
    for name in ["f0", "f1"] {
        let code = code_of(&listing, name);
        assert!(
            !code.contains("vmovd %r") && !code.contains("vmovq %r") && !code.contains("movabs"),
            "{name}: {code}"
        );
    }
    let (k32, h32, c32) = (
        f32::from_bits(0x4049_0FDB),
        0.5f32,
        f32::from_bits(0x4000_0001),
    );
    let (k64, h64, c64) = (
        std::f64::consts::PI,
        0.5f64,
        f64::from_bits(0x4000_0000_0000_0001),
    );
    for (engine, e) in engines(&ptx) {
        for x in [0.0f32, 1.0, -2.5, 1e-40, 3.0e38] {
            let got = e.call("f0", &[ptxjit::Value::f32(x)]).unwrap()[0].bits as u32;
            let want = x.mul_add(k32, h32) * c32;
            assert_eq!(got, want.to_bits(), "{engine} f0({x})");
            let x = f64::from(x);
            let got = e.call("f1", &[ptxjit::Value::f64(x)]).unwrap()[0].bits;
            let want = x.mul_add(k64, h64) * c64;
            assert_eq!(got, want.to_bits(), "{engine} f1({x})");
        }
    }
}
