//! The SIMD video instructions (PTX ISA 9.7.18.2) on every engine: every operation with every
//! combination of types, `.sat` and `.add`, every destination mask and sampled lane selectors,
//! and `vset2`/`vset4` with every comparison, over edge-biased inputs, against a model written
//! here lane by lane in i128 from the manual's pseudocode; the manual's examples with
//! hand-worked results; the readings taken where the manual is silent; and malformed forms as
//! located errors. Where NVIDIA's ptxas is found, it accepts every form tested here and
//! rejects every malformed one (`$PTXAS`, the `nvidia-cuda-nvcc-cu12` wheel, or `ptxas` on the
//! PATH; CI sets `PTXJIT_REQUIRE_PTXAS=1`, which makes a missing ptxas a failure).

mod common;

use common::ptxas::{self, assemble};
use common::{Rng, call3 as call, engines, three_operand_module};
use ptxjit::ast::Type;
use ptxjit::{Arg, Dim3, Value};

/// The target the modules here are assembled for.
const ARCH: &str = "sm_80";

const OPS: [&str; 6] = ["vadd", "vsub", "vavrg", "vabsdiff", "vmin", "vmax"];
const CMPS: [&str; 6] = ["eq", "ne", "lt", "le", "gt", "ge"];
const MASKS2: [&str; 3] = ["h0", "h1", "h10"];
const MASKS4: [&str; 15] = [
    "b0", "b1", "b10", "b2", "b20", "b21", "b210", "b3", "b30", "b31", "b310", "b32", "b320",
    "b321", "b3210",
];

#[derive(Clone, Debug)]
struct Form {
    /// `vadd` … `vmax`, or `vset`.
    op: &'static str,
    /// 2 or 4.
    lanes: u32,
    /// Signedness of dtype (unused by vset), atype, btype.
    d: bool,
    a: bool,
    b: bool,
    sat: bool,
    add: bool,
    cmp: &'static str,
    /// The destination mask, source selectors as written (without the dot); None: absent.
    mask: Option<&'static str>,
    asel: Option<String>,
    bsel: Option<String>,
}

fn ty(signed: bool) -> &'static str {
    if signed { "s32" } else { "u32" }
}

impl Form {
    fn ptx(&self) -> String {
        let sel = |s: Option<&str>| s.map_or(String::new(), |s| format!(".{s}"));
        let head = if self.op == "vset" {
            format!(
                "vset{}.{}.{}.{}",
                self.lanes,
                ty(self.a),
                ty(self.b),
                self.cmp
            )
        } else {
            format!(
                "{}{}.{}.{}.{}{}",
                self.op,
                self.lanes,
                ty(self.d),
                ty(self.a),
                ty(self.b),
                if self.sat { ".sat" } else { "" }
            )
        };
        format!(
            "{head}{} %d{}, %a{}, %b{}, %c;",
            if self.add { ".add" } else { "" },
            sel(self.mask),
            sel(self.asel.as_deref()),
            sel(self.bsel.as_deref())
        )
    }
}

// ---- the model: the manual's pseudocode, lane by lane in i128 ---------------------------

/// The digits of a selector or mask, e.g. "h32" → [3, 2] (the highest lane's first).
fn digits(s: &str) -> Vec<u32> {
    s[1..].bytes().map(|c| (c - b'0') as u32).collect()
}

/// extractAndSignExt: lane `i` of the source selected by `sel` from the half-words (or bytes)
/// of a (numbered from 0) followed by those of b.
fn extract(a: u32, b: u32, sel: &str, i: usize, lanes: u32, signed: bool) -> i128 {
    let ds = digits(sel);
    let part = ds[ds.len() - 1 - i];
    let width = 32 / lanes;
    let word = if part < lanes { a } else { b };
    let v = ((word >> ((part % lanes) * width)) as u64 & ((1u64 << width) - 1)) as i128;
    if signed && v >= 1i128 << (width - 1) {
        v - (1i128 << width)
    } else {
        v
    }
}

fn model(f: &Form, a: u32, b: u32, c: u32) -> u32 {
    let width = 32 / f.lanes;
    let (da, db) = if f.lanes == 2 {
        ("h10", "h32")
    } else {
        ("b3210", "b7654")
    };
    let asel = f.asel.as_deref().unwrap_or(da);
    let bsel = f.bsel.as_deref().unwrap_or(db);
    let mask_digits = f.mask.map_or((0..f.lanes).collect(), digits);
    let mut t = Vec::new();
    for i in 0..f.lanes as usize {
        let va = extract(a, b, asel, i, f.lanes, f.a);
        let vb = extract(a, b, bsel, i, f.lanes, f.b);
        let r = match f.op {
            "vadd" => va + vb,
            "vsub" => va - vb,
            "vavrg" => {
                if va + vb >= 0 {
                    (va + vb + 1) >> 1
                } else {
                    (va + vb) >> 1
                }
            }
            "vabsdiff" => (va - vb).abs(),
            "vmin" => va.min(vb),
            "vmax" => va.max(vb),
            "vset" => {
                let holds = match f.cmp {
                    "eq" => va == vb,
                    "ne" => va != vb,
                    "lt" => va < vb,
                    "le" => va <= vb,
                    "gt" => va > vb,
                    _ => va >= vb,
                };
                holds as i128
            }
            other => unreachable!("{other}"),
        };
        let r = if f.sat {
            if f.d {
                r.clamp(-(1i128 << (width - 1)), (1i128 << (width - 1)) - 1)
            } else {
                r.clamp(0, (1i128 << width) - 1)
            }
        } else {
            r
        };
        t.push(r);
    }
    let masked = |i: usize| mask_digits.contains(&(i as u32));
    let d: i128 = if f.add {
        let mut d = c as i128;
        for (i, r) in t.iter().enumerate() {
            if masked(i) {
                d += r;
            }
        }
        d
    } else {
        let lane = (1i128 << width) - 1;
        let mut d = 0;
        for (i, r) in t.iter().enumerate() {
            let v = if masked(i) {
                *r
            } else {
                (c as i128) >> (i as u32 * width)
            };
            d |= (v & lane) << (i as u32 * width);
        }
        d
    };
    (d & 0xffff_ffff) as u32
}

// ---- forms and inputs -------------------------------------------------------------------

/// A random selector of 2 half-words (from 0–3) or 4 bytes (from 0–7).
fn random_sel(rng: &mut Rng, lanes: u32) -> String {
    let letter = if lanes == 2 { 'h' } else { 'b' };
    let ds: String = (0..lanes)
        .map(|_| char::from(b'0' + rng.below(2 * lanes as u64) as u8))
        .collect();
    format!("{letter}{ds}")
}

fn maybe_sel(rng: &mut Rng, lanes: u32) -> Option<String> {
    match rng.below(4) {
        0 => None,
        1 => Some(if lanes == 2 { "h10" } else { "b3210" }.to_string()),
        _ => Some(random_sel(rng, lanes)),
    }
}

fn masks(lanes: u32) -> &'static [&'static str] {
    if lanes == 2 { &MASKS2 } else { &MASKS4 }
}

/// Every operation × lane count × types × {plain, .sat, .add} (vset: × comparison × .add), each
/// with a mask taken in turn (or none) and random selectors; then every mask with every
/// operation at random types.
fn all_forms(rng: &mut Rng) -> Vec<Form> {
    let mut forms = Vec::new();
    let mut turn = 0usize;
    let mut mask = |lanes: u32| {
        turn += 1;
        let ms = masks(lanes);
        (turn % (ms.len() + 1)).checked_sub(1).map(|k| ms[k])
    };
    for lanes in [2, 4] {
        for op in OPS {
            for types in 0..8 {
                for (sat, add) in [(false, false), (true, false), (false, true)] {
                    for _ in 0..2 {
                        forms.push(Form {
                            op,
                            lanes,
                            d: types & 4 != 0,
                            a: types & 2 != 0,
                            b: types & 1 != 0,
                            sat,
                            add,
                            cmp: "eq",
                            mask: mask(lanes),
                            asel: maybe_sel(rng, lanes),
                            bsel: maybe_sel(rng, lanes),
                        });
                    }
                }
            }
        }
        for cmp in CMPS {
            for types in 0..4 {
                for add in [false, true] {
                    forms.push(Form {
                        op: "vset",
                        lanes,
                        d: false,
                        a: types & 2 != 0,
                        b: types & 1 != 0,
                        sat: false,
                        add,
                        cmp,
                        mask: mask(lanes),
                        asel: maybe_sel(rng, lanes),
                        bsel: maybe_sel(rng, lanes),
                    });
                }
            }
        }
        for &m in masks(lanes) {
            for op in OPS.iter().chain(&["vset"]) {
                let add = rng.below(2) == 1;
                forms.push(Form {
                    op,
                    lanes,
                    d: rng.below(2) == 1,
                    a: rng.below(2) == 1,
                    b: rng.below(2) == 1,
                    sat: *op != "vset" && !add && rng.below(2) == 1,
                    add,
                    cmp: CMPS[rng.below(6) as usize],
                    mask: Some(m),
                    asel: maybe_sel(rng, lanes),
                    bsel: maybe_sel(rng, lanes),
                });
            }
        }
    }
    forms
}

const EDGES: [u32; 12] = [
    0,
    1,
    0xffff_ffff,
    0x7fff_ffff,
    0x8000_0000,
    0x7fff_8000,
    0x8000_7fff,
    0xffff_0001,
    0x7f80_ff01,
    0x8080_8080,
    0x7f7f_7f7f,
    0x0100_ff80,
];

/// Edge-biased: whole-word edges, words of edge bytes or half-words, or uniform bits.
fn value(rng: &mut Rng) -> u32 {
    match rng.below(4) {
        0 => EDGES[rng.below(EDGES.len() as u64) as usize],
        1 => (0..4).fold(0, |v, k| {
            let b = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x81, 0xfe, 0x40][rng.below(8) as usize];
            v | (b << (8 * k))
        }),
        2 => (0..2).fold(0, |v, k| {
            let h = [
                0x0000, 0x0001, 0x7fff, 0x8000, 0xffff, 0x8001, 0xfffe, 0x4000,
            ][rng.below(8) as usize];
            v | (h << (16 * k))
        }),
        _ => rng.next_u64() as u32,
    }
}

/// A module with one function per form, `f{k}(a, b, c)` returning d. d starts as a pattern
/// that no masked-off lane should keep.
fn module(forms: &[Form]) -> String {
    three_operand_module(HEADER, "", 0x5a5a5a5a, forms.iter().map(Form::ptx))
}

const HEADER: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

#[test]
fn every_form_matches_the_pseudocode_model() {
    let mut rng = Rng::new(2024);
    let forms = all_forms(&mut rng);
    assert!(forms.len() > 700, "{} forms", forms.len());
    let ptx = module(&forms);
    if let Some(ptxas) = ptxas::require("every_form_matches_the_pseudocode_model") {
        assemble(&ptxas, &ptx, ARCH, "simd_forms").unwrap_or_else(|e| panic!("ptxas rejects: {e}"));
    }
    let engines = engines(&ptx);
    for (k, f) in forms.iter().enumerate() {
        for _ in 0..24 {
            let (a, b, c) = (value(&mut rng), value(&mut rng), value(&mut rng));
            let want = model(f, a, b, c);
            for (name, e) in &engines {
                let got = call(e.as_ref(), &format!("f{k}"), a, b, c);
                assert_eq!(
                    got,
                    want,
                    "{name}: `{}` with a={a:#x} b={b:#x} c={c:#x}",
                    f.ptx()
                );
            }
        }
    }
}

/// In a kernel, per-thread sources (which the JIT's lanes lowering hands to the scalar one)
/// and uniform ones (computed once for the lanes) give the model's values in every thread.
#[test]
fn per_thread_and_uniform_sources_in_a_kernel() {
    let form = |op, lanes, mask, asel: &str, bsel: &str, sat, add| Form {
        op,
        lanes,
        d: true,
        a: true,
        b: false,
        sat,
        add,
        cmp: "le",
        mask,
        asel: Some(asel.to_string()),
        bsel: Some(bsel.to_string()),
    };
    // (form, its a register): %x differs per thread, %a is uniform.
    let forms = [
        (
            form("vsub", 4, Some("b310"), "b7531", "b0246", true, false),
            "%x",
        ),
        (
            form("vabsdiff", 4, None, "b3210", "b7654", false, true),
            "%x",
        ),
        (form("vset", 2, Some("h1"), "h12", "h32", false, true), "%a"),
        (form("vavrg", 2, None, "h01", "h23", true, false), "%a"),
    ];
    let mut body = String::new();
    for (k, (f, a)) in forms.iter().enumerate() {
        body += &format!(
            "  {}\n  st.global.u32 [%rd+{}], %d;\n",
            f.ptx().replace("%a", a),
            4 * k
        );
    }
    let ptx = format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n\
         .visible .entry k(.param .u64 out, .param .u32 pa, .param .u32 pb, .param .u32 pc)\n{{\n\
         \x20 .reg .b32 %a, %b, %c, %d, %x, %t;\n  .reg .b64 %rd, %off;\n\
         \x20 ld.param.u64 %rd, [out];\n  ld.param.u32 %a, [pa];\n  ld.param.u32 %b, [pb];\n\
         \x20 ld.param.u32 %c, [pc];\n  mov.u32 %t, %tid.x;\n  mul.lo.u32 %x, %t, 0x01030507;\n\
         \x20 xor.b32 %x, %x, %a;\n  mul.wide.u32 %off, %t, {};\n  add.s64 %rd, %rd, %off;\n\
         {body}  ret;\n}}\n",
        4 * forms.len()
    );
    if let Some(ptxas) = ptxas::require("per_thread_and_uniform_sources_in_a_kernel") {
        assemble(&ptxas, &ptx, ARCH, "simd_kernel")
            .unwrap_or_else(|e| panic!("ptxas rejects: {e}"));
    }
    let n = 96u32;
    let mut rng = Rng::new(77);
    for _ in 0..8 {
        let (a, b, c) = (value(&mut rng), value(&mut rng), value(&mut rng));
        for (name, e) in engines(&ptx) {
            let mut out = vec![0u8; 4 * forms.len() * n as usize];
            let v = |x: u32| Arg::Scalar(Value::new(Type::U32, x as u64));
            e.launch(
                "k",
                Dim3::x(1),
                Dim3::x(n),
                &mut [Arg::Buffer(&mut out), v(a), v(b), v(c)],
            )
            .unwrap_or_else(|err| panic!("{name}: {err}"));
            for t in 0..n {
                let x = t.wrapping_mul(0x0103_0507) ^ a;
                for (k, (f, reg)) in forms.iter().enumerate() {
                    let at = 4 * (forms.len() * t as usize + k);
                    let got = u32::from_le_bytes(out[at..at + 4].try_into().unwrap());
                    let src = if *reg == "%x" { x } else { a };
                    assert_eq!(
                        got,
                        model(f, src, b, c),
                        "{name}: thread {t}: `{}` with a={src:#x} b={b:#x} c={c:#x}",
                        f.ptx()
                    );
                }
            }
        }
    }
}

/// Runs `text` on registers %a %b %c (%d starts as `d0`) on every engine; the value of %d.
fn run_with(text: &str, a: u32, b: u32, c: u32, d0: u32) -> u32 {
    let ptx = three_operand_module(HEADER, "", d0, [text.to_string()]);
    if let Some(ptxas) = ptxas::require("run_with") {
        assemble(&ptxas, &ptx, ARCH, "simd_one")
            .unwrap_or_else(|e| panic!("ptxas rejects {text}: {e}"));
    }
    let mut out = Vec::new();
    for (name, e) in engines(&ptx) {
        out.push((name, call(e.as_ref(), "f0", a, b, c)));
    }
    assert!(out.iter().all(|(_, v)| *v == out[0].1), "{text}: {out:x?}");
    out[0].1
}

fn run_one(text: &str, a: u32, b: u32, c: u32) -> u32 {
    run_with(text, a, b, c, 0)
}

#[test]
fn the_manuals_examples() {
    // vadd2.s32.s32.u32.sat: lane 0 is -32768 + 65535 = 32767, lane 1 is 32767 + 1, clamped
    // to 32767.
    assert_eq!(
        run_one(
            "vadd2.s32.s32.u32.sat %d, %a, %b, %c;",
            0x7fff_8000,
            0x0001_ffff,
            0
        ),
        0x7fff_7fff
    );
    // vsub2 into .h0 only: -32768 - 1 clamps to -32768; the high half is c's.
    assert_eq!(
        run_one(
            "vsub2.s32.s32.s32.sat %d.h0, %a.h10, %b.h32, %c;",
            0x0000_8000,
            0x0000_0001,
            0x1234_5678
        ),
        0x1234_8000
    );
    // vmin2 .add with a.h00 (a's low half in both lanes) and b.h22 (b's low half in both):
    // 1 + min(65535, 32768) · 2 = 65537 (the lanes' results are added at full value).
    assert_eq!(
        run_one(
            "vmin2.s32.u32.u32.add %d.h10, %a.h00, %b.h22, %c;",
            0x0000_ffff,
            0x0000_8000,
            1
        ),
        65537
    );
    // vadd4.s32.s32.u32.sat: -1 + 128 = 127; 1 + 255 → 127; 127 + 1 → 127; -128 + 1 = -127.
    assert_eq!(
        run_one(
            "vadd4.s32.s32.u32.sat %d, %a, %b, %c;",
            0x807f_01ff,
            0x0101_ff80,
            0
        ),
        0x817f_7f7f
    );
    // vsub4 into .b0 only: -128 - 1 clamps to -128; bytes 1–3 are c's.
    assert_eq!(
        run_one(
            "vsub4.s32.s32.s32.sat %d.b0, %a.b3210, %b.b7654, %c;",
            0x0000_0080,
            0x0000_0001,
            0xaabb_ccdd
        ),
        0xaabb_cc80
    );
    // The manual's `vmin4.s32.u32.u32.add r1.b00, r2.b0000, r3.b2222, r1` has a mask ptxas
    // rejects (see the malformed forms); with `.b0`: 7 + min(5, 3), where `b.b2222` takes
    // byte 2 of the pair {b, a} — a's byte 2, not b's.
    assert_eq!(
        run_one(
            "vmin4.s32.u32.u32.add %d.b0, %a.b0000, %b.b2222, %c;",
            0x0003_0005,
            0x0000_0001,
            7
        ),
        10
    );
    // Selectors pick from the pair {b, a}, the highest lane's first: with a.h23 and b.h01,
    // lane 0 = b.h1 + a.h1 = 0x20 + 2 and lane 1 = b.h0 + a.h0 = 0x10 + 1.
    assert_eq!(
        run_one(
            "vadd2.u32.u32.u32 %d, %a.h23, %b.h01, %c;",
            0x0002_0001,
            0x0020_0010,
            0
        ),
        0x0011_0022
    );
    // vset2.s32.u32.lt: 1 < 2 and -1 < 0.
    assert_eq!(
        run_one("vset2.s32.u32.lt %d, %a, %b, %c;", 0xffff_0001, 2, 0),
        0x0001_0001
    );
    // vset2.u32.u32.ne.add: only lane 0 differs: 41 + 1.
    assert_eq!(
        run_one(
            "vset2.u32.u32.ne.add %d, %a, %b, %c;",
            0x0001_0002,
            0x0001_0003,
            41
        ),
        42
    );
    // vset4.s32.u32.lt: bytes -1 < 0, 5 < 5 no, 0 < 0 no, -128 < 0.
    assert_eq!(
        run_one(
            "vset4.s32.u32.lt %d, %a, %b, %c;",
            0x8000_05ff,
            0x0000_0500,
            0
        ),
        0x0100_0001
    );
}

#[test]
fn readings_where_the_manual_is_silent() {
    // Lanes outside the mask come from c, not from d's old value.
    assert_eq!(
        run_with(
            "vadd2.u32.u32.u32 %d.h0, %a, %b, %c;",
            1,
            2,
            0xabcd_0000,
            0x1111_1111
        ),
        0xabcd_0003
    );
    assert_eq!(
        run_with(
            "vmax4.u32.u32.u32 %d.b31, %a, %b, %c;",
            0x0102_0304,
            0,
            0xa0b0_c0d0,
            0x1111_1111
        ),
        0x01b0_03d0
    );
    // vavrg rounds half away from zero: (-3 + 0) / 2 → -2, (3 + 0) / 2 → 2.
    assert_eq!(
        run_one("vavrg2.s32.s32.s32 %d, %a, %b, %c;", 0x0003_fffd, 0, 0),
        0x0002_fffe
    );
    // (-1) / 2 → -1; 255 / 2 → 128 (unsigned); (-128 + -127) / 2 → -128.
    assert_eq!(
        run_one(
            "vavrg4.s32.s32.s32 %d, %a, %b, %c;",
            0x0080_00ff,
            0x0081_0000,
            0
        ),
        0x0080_00ff
    );
    assert_eq!(
        run_one("vavrg4.u32.u32.u32 %d, %a, %b, %c;", 0xff, 0, 0),
        0x80
    );
    // Without .sat a lane keeps the low bits of its result: 0xff + 1 wraps to 0 in its byte.
    assert_eq!(
        run_one(
            "vadd4.u32.u32.u32 %d, %a, %b, %c;",
            0x0000_01ff,
            0x0000_0001,
            0
        ),
        0x0000_0100
    );
    // .add adds each lane's exact value, negative ones too: c + (0 - 127) · 4.
    assert_eq!(
        run_one(
            "vsub4.s32.s32.s32.add %d, %a, %b, %c;",
            0,
            0x7f7f_7f7f,
            1000
        ),
        1000 - 508
    );
    // ... and does not depend on dtype: the same sum with .u32.
    assert_eq!(
        run_one(
            "vsub4.u32.s32.s32.add %d, %a, %b, %c;",
            0,
            0x7f7f_7f7f,
            1000
        ),
        1000 - 508
    );
    // The sum of absolute differences (vabsdiff4 .add): |0 - 255| · 4 = 1020.
    assert_eq!(
        run_one(
            "vabsdiff4.u32.u32.u32.add %d, %a, %b, %c;",
            0,
            0xffff_ffff,
            0
        ),
        1020
    );
    // A signed absolute difference of bytes reaches 255, clamped by .sat to 127 for .s32.
    assert_eq!(
        run_one(
            "vabsdiff4.s32.s32.s32.sat %d.b0, %a, %b, %c;",
            0x80,
            0x7f,
            0
        ),
        0x7f
    );
    // The sum wraps mod 2^32.
    assert_eq!(
        run_one(
            "vadd2.u32.u32.u32.add %d, %a, %b, %c;",
            0xffff_ffff,
            0xffff_ffff,
            0xffff_ffff
        ),
        0xffff_ffff_u32.wrapping_add(4 * 0xffff)
    );
    // .sat written twice is .sat (ptxas accepts it).
    assert_eq!(
        run_one("vadd2.u32.u32.u32.sat.sat %d, %a, %b, %c;", 0xffff, 1, 0),
        0xffff
    );
}

#[test]
fn malformed_simd_video_instructions_are_located_errors() {
    let ptxas = ptxas::require("malformed_simd_video_instructions_are_located_errors");
    for (line, msg) in [
        (
            "vadd2.u32.u32.u32.sat.add %d, %a, %b, %c;",
            "`.sat` cannot be combined with `.add`",
        ),
        ("vadd2.u32.u32.u32.min %d, %a, %b, %c;", "only secondary"),
        // The manual's example `vset4.u32.u32.ne.max`.
        ("vset4.u32.u32.ne.max %d, %a, %b, %c;", "only secondary"),
        ("vadd2.u32.u32.u32.add.add %d, %a, %b, %c;", "conflicting"),
        ("vadd2.u32.u32.u32 %d, %a, %b;", "takes 4 operands"),
        ("vadd4.u32.u32.u32 %d, %a, %b, %c, %c;", "takes 4 operands"),
        ("vadd2.u32.u32.u32 %d.h01, %a, %b, %c;", "destination mask"),
        ("vadd4.u32.u32.u32 %d.b01, %a, %b, %c;", "destination mask"),
        // The manual's example `vmin4 … r1.b00`.
        (
            "vmin4.s32.u32.u32.add %d.b00, %a.b0000, %b.b2222, %c;",
            "destination mask",
        ),
        ("vadd4.u32.u32.u32 %d.b4, %a, %b, %c;", "destination mask"),
        ("vadd4.u32.u32.u32 %d.h10, %a, %b, %c;", "destination mask"),
        ("vadd2.u32.u32.u32 %d.b0, %a, %b, %c;", "destination mask"),
        ("vadd2.u32.u32.u32 %d, %a.h4, %b, %c;", "source selector"),
        ("vadd2.u32.u32.u32 %d, %a.h0, %b, %c;", "source selector"),
        ("vadd2.u32.u32.u32 %d, %a, %b.h123, %c;", "source selector"),
        ("vadd4.u32.u32.u32 %d, %a.b8000, %b, %c;", "source selector"),
        ("vadd4.u32.u32.u32 %d, %a.b321, %b, %c;", "source selector"),
        ("vadd4.u32.u32.u32 %d, %a, %b.h10, %c;", "source selector"),
        (
            "vadd2.u32.u32.u32 %d, %a, %b, %c.h10;",
            "c takes no selector",
        ),
        (
            "vadd2.u32.u32.u32 %d, %a, %b, %c.h0;",
            "c takes no selector",
        ),
        (
            "vadd2.u32.u32.u32 %d, %a, %b, 5;",
            "expected a 32-bit register",
        ),
        (
            "vadd2.u32.u32.u32 %d, -%a, %b, %c;",
            "expected a 32-bit register",
        ),
        (
            "vset2.u32.u32.lt.sat %d, %a, %b, %c;",
            "unexpected modifier `.sat`",
        ),
        ("vset2.u32.u32.u32.lt %d, %a, %b, %c;", "two types"),
        ("vset2.u32.u32.lo %d, %a, %b, %c;", "compares with"),
        ("vset4.u32.u32 %d, %a, %b, %c;", "needs a comparison"),
        ("vadd2.u32.u32 %d, %a, %b, %c;", "three types"),
        ("vadd2.b32.u32.u32 %d, %a, %b, %c;", "takes .u32 or .s32"),
        (
            "vadd.u32.u32.u32 %d, %a.h10, %b;",
            "not a selector of `vadd`",
        ),
    ] {
        let ptx = format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .func f()\n{{\n  .reg .b32 %a, %b, %c, %d;\n  {line}\n  ret;\n}}\n"
        );
        if let Some(ptxas) = &ptxas {
            assert!(
                assemble(ptxas, &ptx, ARCH, "simd_bad").is_err(),
                "ptxas accepts {line}"
            );
        }
        let e = ptxjit::Module::parse(&ptx).expect_err(line).to_string();
        assert!(e.contains(msg), "{line}: {e}");
        assert!(e.contains("<input>:7:"), "{line}: {e}");
    }
}
