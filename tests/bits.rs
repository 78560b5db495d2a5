//! The integer and bit instructions `lop3 bfind fns bmsk szext mul24 mad24 sad dp4a dp2a`,
//! and `copysign`, `testp`, `cvt.pack` on every engine: every form over edge-biased inputs
//! against models written here from the manual's descriptions in i128 arithmetic and
//! bit-by-bit loops (and Rust's own float classification for `testp`, `f32::copysign` for
//! `copysign`); the manual's examples with their stated results; malformed forms as located
//! errors (each also rejected by ptxas).

mod common;

use common::{Rng, call3 as call, engines, three_operand_module};

/// One instruction form: its text (operands `%d %a %b %c`, or `%p` for a predicate result)
/// and its model (a, b, c → d, where a predicate result is 0 or 1).
struct Form {
    text: String,
    model: Box<dyn Fn(u32, u32, u32) -> u32>,
}

fn form(text: impl Into<String>, model: impl Fn(u32, u32, u32) -> u32 + 'static) -> Form {
    Form {
        text: text.into(),
        model: Box::new(model),
    }
}

fn sext(v: u64, bits: u32) -> i128 {
    let v = v & ((1u128 << bits) - 1) as u64;
    if bits < 128 && (v >> (bits - 1)) & 1 == 1 {
        v as i128 - (1i128 << bits)
    } else {
        v as i128
    }
}

fn ext(v: u64, bits: u32, signed: bool) -> i128 {
    if signed {
        sext(v, bits)
    } else {
        (v & ((1u128 << bits) - 1) as u64) as i128
    }
}

fn sign_name(signed: bool) -> &'static str {
    if signed { "s32" } else { "u32" }
}

/// bfind: "the bit position of the most significant non-sign bit", 0xffffffff if none.
fn bfind_model(a: u32, signed: bool, shiftamt: bool) -> u32 {
    let x = if signed && (a as i32) < 0 { !a } else { a };
    if x == 0 {
        return u32::MAX;
    }
    let pos = 31 - x.leading_zeros();
    if shiftamt { 31 - pos } else { pos }
}

/// fns: walk from `base` by ±1, counting set bits, as the manual's loop does.
fn fns_model(mask: u32, base: u32, offset: i32) -> u32 {
    if base > 31 {
        return u32::MAX;
    }
    if offset == 0 {
        return if mask >> base & 1 == 1 {
            base
        } else {
            u32::MAX
        };
    }
    let positions: Vec<u32> = if offset > 0 {
        (base..32).filter(|i| mask >> i & 1 == 1).collect()
    } else {
        (0..=base).rev().filter(|i| mask >> i & 1 == 1).collect()
    };
    positions
        .get(offset.unsigned_abs() as usize - 1)
        .copied()
        .unwrap_or(u32::MAX)
}

/// bmsk: bits [start, start + width) of the word; .wrap takes both modulo 32; .clamp makes
/// a start of 32 or more an empty mask and caps the width at 32.
fn bmsk_model(a: u32, b: u32, wrap: bool) -> u32 {
    let (start, width) = if wrap {
        (a % 32, b % 32)
    } else {
        (a, b.min(32))
    };
    (0..32)
        .filter(|&i| i >= start as u64 && i < start as u64 + width as u64)
        .fold(0, |d, i| d | 1 << i)
}

/// szext: a's low N bits extended; N = b modulo 32 (.wrap) or at most 32 (.clamp).
fn szext_model(a: u32, b: u32, wrap: bool, signed: bool) -> u32 {
    let n = if wrap { b % 32 } else { b.min(32) };
    match n {
        0 => 0,
        32 => a,
        n => ext(a as u64, n, signed) as u32,
    }
}

/// mul24/mad24: the 48-bit product of 24-bit operands.
fn mul24_model(a: u32, b: u32, c: Option<u32>, hi: bool, signed: bool, sat: bool) -> u32 {
    let t = ext(a as u64, 24, signed) * ext(b as u64, 24, signed);
    let part = if hi { t >> 16 } else { t } & 0xffff_ffff;
    match c {
        None => part as u32,
        Some(c) if sat => {
            let sum = sext(part as u64, 32) + c as i32 as i128;
            sum.clamp(i32::MIN as i128, i32::MAX as i128) as i32 as u32
        }
        Some(c) => (part + c as i128) as u32,
    }
}

fn dot_model(a: u32, b: u32, c: u32, half: Option<bool>, sa: bool, sb: bool) -> u32 {
    let part = |x: u32, i: u32, bits: u32, s: bool| ext((x >> (i * bits)) as u64, bits, s);
    let sum: i128 = match half {
        None => (0..4).map(|i| part(a, i, 8, sa) * part(b, i, 8, sb)).sum(),
        Some(hi) => {
            let first = if hi { 2 } else { 0 };
            (0..2)
                .map(|i| part(a, i, 16, sa) * part(b, first + i, 8, sb))
                .sum()
        }
    };
    (c as i128 + sum) as u32
}

/// lop3: each result bit is immLut's bit numbered by (a_i, b_i, c_i) as the manual's
/// constants 0xF0, 0xCC, 0xAA number it.
fn lop3_model(lut: u8, a: u32, b: u32, c: u32) -> u32 {
    let mut d = 0;
    for i in 0..32 {
        let (x, y, z) = (a >> i & 1, b >> i & 1, c >> i & 1);
        // The bit of (0xF0, 0xCC, 0xAA) that has these three values.
        let k = (0..8)
            .find(|&k| (0xF0 >> k & 1, 0xCC >> k & 1, 0xAA >> k & 1) == (x, y, z))
            .unwrap();
        d |= ((lut >> k) & 1) as u32 * (1 << i);
    }
    d
}

fn cvt_pack_model(a: u32, b: u32, c: u32, bits: u32, signed: bool, with_c: bool) -> u32 {
    let (lo, hi) = if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let field = |x: u32| ((x as i32 as i128).clamp(lo, hi) as u64 & ((1 << bits) - 1)) as u128;
    let mut d = field(a) << bits | field(b);
    if with_c {
        d |= (c as u128) << (2 * bits);
    }
    d as u32
}

fn all_forms() -> Vec<Form> {
    let mut forms = Vec::new();
    for signed in [false, true] {
        for shiftamt in [false, true] {
            let s = if shiftamt { ".shiftamt" } else { "" };
            forms.push(form(
                format!("bfind{s}.{} %d, %a;", sign_name(signed)),
                move |a, _, _| bfind_model(a, signed, shiftamt),
            ));
        }
    }
    forms.push(form("fns.b32 %d, %a, %b, %c;", |a, b, c| {
        fns_model(a, b, c as i32)
    }));
    for wrap in [false, true] {
        let mode = if wrap { "wrap" } else { "clamp" };
        forms.push(form(
            format!("bmsk.{mode}.b32 %d, %a, %b;"),
            move |a, b, _| bmsk_model(a, b, wrap),
        ));
        for signed in [false, true] {
            forms.push(form(
                format!("szext.{mode}.{} %d, %a, %b;", sign_name(signed)),
                move |a, b, _| szext_model(a, b, wrap, signed),
            ));
        }
    }
    for signed in [false, true] {
        let t = sign_name(signed);
        for hi in [false, true] {
            let m = if hi { "hi" } else { "lo" };
            forms.push(form(
                format!("mul24.{m}.{t} %d, %a, %b;"),
                move |a, b, _| mul24_model(a, b, None, hi, signed, false),
            ));
            forms.push(form(
                format!("mad24.{m}.{t} %d, %a, %b, %c;"),
                move |a, b, c| mul24_model(a, b, Some(c), hi, signed, false),
            ));
        }
    }
    forms.push(form("mad24.hi.sat.s32 %d, %a, %b, %c;", |a, b, c| {
        mul24_model(a, b, Some(c), true, true, true)
    }));
    for signed in [false, true] {
        forms.push(form(
            format!("sad.{} %d, %a, %b, %c;", sign_name(signed)),
            move |a, b, c| {
                let diff = (ext(a as u64, 32, signed) - ext(b as u64, 32, signed)).abs();
                (c as i128 + diff) as u32
            },
        ));
        // 16-bit sad through cvt: the result's low half.
        let t = if signed { "s16" } else { "u16" };
        forms.push(form(
            format!(
                "cvt.u16.u32 %h, %a; cvt.u16.u32 %i, %b; cvt.u16.u32 %j, %c; \
                 sad.{t} %j, %h, %i, %j; cvt.u32.u16 %d, %j;"
            ),
            move |a, b, c| {
                let diff = (ext(a as u64, 16, signed) - ext(b as u64, 16, signed)).abs();
                ((c as i128 + diff) & 0xffff) as u32
            },
        ));
    }
    for sa in [false, true] {
        for sb in [false, true] {
            let types = format!("{}.{}", sign_name(sa), sign_name(sb));
            forms.push(form(
                format!("dp4a.{types} %d, %a, %b, %c;"),
                move |a, b, c| dot_model(a, b, c, None, sa, sb),
            ));
            for hi in [false, true] {
                let m = if hi { "hi" } else { "lo" };
                forms.push(form(
                    format!("dp2a.{m}.{types} %d, %a, %b, %c;"),
                    move |a, b, c| dot_model(a, b, c, Some(hi), sa, sb),
                ));
            }
        }
    }
    // Every truth table (constants, single variables, the selection trees in between).
    for lut in 0..=255u8 {
        forms.push(form(
            format!("lop3.b32 %d, %a, %b, %c, {lut};"),
            move |a, b, c| lop3_model(lut, a, b, c),
        ));
    }
    for (op, and) in [("or", false), ("and", true)] {
        for lut in [0x00u8, 0x96, 0xe8, 0x80, 0xfe] {
            // p = (d != 0) op q with q = (c is odd); the result is p alone (d is checked
            // by the plain forms).
            forms.push(form(
                format!(
                    "and.b32 %d, %c, 1; setp.ne.u32 %q, %d, 0; \
                     lop3.{op}.b32 _|%p, %a, %b, %c, {lut}, %q; selp.u32 %d, 1, 0, %p;"
                ),
                move |a, b, c| {
                    let nonzero = lop3_model(lut, a, b, c) != 0;
                    let q = c & 1 == 1;
                    (if and { nonzero && q } else { nonzero || q }) as u32
                },
            ));
        }
    }
    forms.push(form(
        "mov.b32 %x, %a; mov.b32 %y, %b; copysign.f32 %z, %x, %y; mov.b32 %d, %z;",
        |a, b, _| f32::from_bits(b).copysign(f32::from_bits(a)).to_bits(),
    ));
    type Classify = fn(f32) -> bool;
    let tests: [(&str, Classify); 6] = [
        ("finite", f32::is_finite),
        ("infinite", f32::is_infinite),
        ("number", |x| !x.is_nan()),
        ("notanumber", f32::is_nan),
        // The manual: "positive and negative zero are considered normal numbers".
        ("normal", |x| x.is_normal() || x == 0.0),
        ("subnormal", f32::is_subnormal),
    ];
    for (name, test) in tests {
        forms.push(form(
            format!("mov.b32 %x, %a; testp.{name}.f32 %p, %x; selp.u32 %d, 1, 0, %p;"),
            move |a, _, _| test(f32::from_bits(a)) as u32,
        ));
    }
    for (t, bits, signed) in [("u16", 16, false), ("s16", 16, true)] {
        forms.push(form(
            format!("cvt.pack.sat.{t}.s32 %d, %a, %b;"),
            move |a, b, c| cvt_pack_model(a, b, c, bits, signed, false),
        ));
    }
    for (t, bits, signed) in [
        ("u8", 8, false),
        ("s8", 8, true),
        ("u4", 4, false),
        ("s4", 4, true),
        ("u2", 2, false),
        ("s2", 2, true),
    ] {
        forms.push(form(
            format!("cvt.pack.sat.{t}.s32.b32 %d, %a, %b, %c;"),
            move |a, b, c| cvt_pack_model(a, b, c, bits, signed, true),
        ));
    }
    forms
}

const EDGES: [u32; 16] = [
    0,
    1,
    2,
    31,
    32,
    33,
    0x7f,
    0x80,
    0xff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    0x00ff_ffff,
    0x0080_0000,
    0x7f80_0000,
    0x0000_0001 | 0x8000_0000,
];

fn value(rng: &mut Rng) -> u32 {
    match rng.below(4) {
        0 => EDGES[rng.below(EDGES.len() as u64) as usize],
        // Small values (positions, widths, offsets) of both signs.
        1 => (rng.below(80) as i32 - 40) as u32,
        2 => (0..4).fold(0, |v, k| {
            let b = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x7c, 0x81][rng.below(7) as usize];
            v | (b << (8 * k))
        }),
        _ => rng.next_u64() as u32,
    }
}

fn module(forms: &[Form]) -> String {
    let header = ".version 8.3\n.target sm_90\n.address_size 64\n";
    let decls = "  .reg .b16 %h, %i, %j;\n  .reg .f32 %x, %y, %z;\n  .reg .pred %p, %q;\n";
    three_operand_module(header, decls, 0, forms.iter().map(|f| f.text.clone()))
}

#[test]
fn every_form_matches_its_model() {
    let mut rng = Rng::new(2611);
    let forms = all_forms();
    let ptx = module(&forms);
    let engines = engines(&ptx);
    for (k, f) in forms.iter().enumerate() {
        for _ in 0..40 {
            let (a, b, c) = (value(&mut rng), value(&mut rng), value(&mut rng));
            let want = (f.model)(a, b, c);
            for (name, e) in &engines {
                let got = call(e.as_ref(), &format!("f{k}"), a, b, c);
                assert_eq!(
                    got, want,
                    "{name}: `{}` with a={a:#x} b={b:#x} c={c:#x}",
                    f.text
                );
            }
        }
    }
}

/// Runs one instruction on registers a, b, c (result in %d) on every engine.
fn run_one(text: &str, a: u32, b: u32, c: u32) -> u32 {
    let ptx = module(&[form(text, |_, _, _| 0)]);
    let out: Vec<u32> = engines(&ptx)
        .iter()
        .map(|(_, e)| call(e.as_ref(), "f0", a, b, c))
        .collect();
    assert!(out.iter().all(|v| *v == out[0]), "{text}: {out:x?}");
    out[0]
}

#[test]
fn the_manuals_examples() {
    // fns: "fns.b32 d, 0xaaaaaaaa, 3, 1; // d = 3" and its three siblings.
    for (base, offset, want) in [(3, 1, 3), (3, -1, 3), (2, 1, 3), (2, -1, 1)] {
        let got = run_one("fns.b32 %d, 0xaaaaaaaa, %b, %c;", 0, base, offset as u32);
        assert_eq!(got, want, "fns base {base} offset {offset}");
    }
    // bmsk: "bmsk.wrap.b32 rd, 1, 2; // Creates a bitmask of 0x00000006."
    assert_eq!(run_one("bmsk.wrap.b32 %d, 1, 2;", 0, 0, 0), 6);
    // lop3: immLut = F(0xF0, 0xCC, 0xAA): a & b & c is 0x80, (a & b | c) ^ a is 0x1A.
    assert_eq!(
        run_one("lop3.b32 %d, %a, %b, %c, 0x80;", 0xF0, 0xCC, 0xAA),
        0x80
    );
    assert_eq!(
        run_one("lop3.b32 %d, %a, %b, %c, 0x1A;", 0xF0, 0xCC, 0xAA),
        0x1A
    );
    // bfind: 0x00010000 has its msb at 16, a shift of 15 brings it to bit 31; no bit found
    // in 0 or (signed) in -1.
    assert_eq!(run_one("bfind.u32 %d, %a;", 0x1_0000, 0, 0), 16);
    assert_eq!(run_one("bfind.shiftamt.u32 %d, %a;", 0x1_0000, 0, 0), 15);
    assert_eq!(run_one("bfind.s32 %d, %a;", u32::MAX, 0, 0), u32::MAX);
    assert_eq!(run_one("bfind.s32 %d, %a;", 0xffff_0000, 0, 0), 15);
    // dp4a.u32.u32 of 0x01020304 with itself plus 10: 1 + 4 + 9 + 16 + 10 = 40.
    assert_eq!(
        run_one("dp4a.u32.u32 %d, %a, %b, %c;", 0x0102_0304, 0x0102_0304, 10),
        40
    );
    // dp2a.hi.s32.s32: a's halves (-1, 2) times b's bytes 2, 3 (3, -4): -3 - 8 = -11.
    assert_eq!(
        run_one(
            "dp2a.hi.s32.s32 %d, %a, %b, %c;",
            0x0002_ffff,
            0xfc03_0000,
            0
        ),
        (-11i32) as u32
    );
    // mul24.hi.u32: 0xffffff² = 0xfffffe000001, bits 47..16 = 0xfffffe00.
    assert_eq!(
        run_one("mul24.hi.u32 %d, %a, %b;", 0xffffff, 0xffffff, 0),
        0xfffffe00
    );
    // sad.s32: |-5 - 7| + 1 = 13.
    assert_eq!(run_one("sad.s32 %d, %a, %b, %c;", -5i32 as u32, 7, 1), 13);
    // cvt.pack.sat.s8.s32.b32: 300 → 127, -300 → -128, c's low 16 bits on top.
    assert_eq!(
        run_one(
            "cvt.pack.sat.s8.s32.b32 %d, %a, %b, %c;",
            300,
            -300i32 as u32,
            0xabcd
        ),
        0xabcd_7f80
    );
}

#[test]
fn kernels_run_them_per_thread() {
    // Each thread i: out[i] = dp4a.s32.s32(i * 0x01010101, 0xff01ff01, i) and
    // lop3(i, ~i, 0x0f0f0f0f, 0xe8) (majority).
    let ptx = ".version 8.3\n.target sm_90\n.address_size 64\n\
        .visible .entry k(.param .u64 out)\n{\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<4>;\n\
        ld.param.u64 %rd1, [out];\n  mov.u32 %r1, %tid.x;\n  mul.lo.u32 %r2, %r1, 0x01010101;\n\
        dp4a.s32.s32 %r3, %r2, 0xff01ff01, %r1;\n  not.b32 %r4, %r1;\n\
        lop3.b32 %r5, %r1, %r4, 0x0f0f0f0f, 0xe8;\n  mul.wide.u32 %rd2, %r1, 8;\n\
        add.u64 %rd3, %rd1, %rd2;\n  st.global.v2.u32 [%rd3], {%r3, %r5};\n  ret;\n}\n";
    for (name, e) in engines(ptx) {
        let mut out = vec![0u8; 64 * 8];
        e.launch(
            "k",
            ptxjit::Dim3::x(1),
            ptxjit::Dim3::x(64),
            &mut [ptxjit::Arg::Buffer(&mut out)],
        )
        .unwrap();
        for i in 0..64u32 {
            let w = |k: usize| {
                let at = (i as usize * 2 + k) * 4;
                u32::from_le_bytes(out[at..at + 4].try_into().unwrap())
            };
            let want_dot = dot_model(i.wrapping_mul(0x01010101), 0xff01ff01, i, None, true, true);
            assert_eq!(w(0), want_dot, "{name}: thread {i} dp4a");
            assert_eq!(
                w(1),
                lop3_model(0xe8, i, !i, 0x0f0f0f0f),
                "{name}: thread {i} lop3"
            );
        }
    }
}

#[test]
fn malformed_forms_are_located_errors() {
    // Each is also rejected by ptxas 12.9 (`ptxas -arch=sm_90`).
    for (line, msg) in [
        ("sad.b32 %d, %a, %b, %c;", "does not take type .b32"),
        (
            "mad24.lo.sat.s32 %d, %a, %b, %c;",
            "applies to mad24.hi.s32 only",
        ),
        ("mul24.s32 %d, %a, %b;", "one of .hi, .lo"),
        ("bfind.b32 %d, %a;", "does not take type .b32"),
        ("bmsk.b32 %d, %a, %b;", ".clamp or .wrap"),
        ("szext.clamp.b32 %d, %a, %b;", "does not take type .b32"),
        ("dp4a.u32.b32 %d, %a, %b, %c;", "does not take type .b32"),
        ("lop3.b32 %d, %a, %b, %c, %a;", "integer constant"),
        ("lop3.xor.b32 %d|%p, %a, %b, %c, 1, %p;", ".or or .and"),
        ("cvt.pack.sat.u8.s32 %d, %a, %b;", "cvt.pack.sat` takes"),
        ("cvt.pack.u16.s32 %d, %a, %b;", "needs .sat"),
        ("testp.normal.f16 %p, %a;", "does not take type .f16"),
        ("prefetch.L3 [%a];", "one of .L1, .L2"),
        ("prefetch.shared.L1 [%a];", "unexpected modifier `.shared`"),
        ("nanosleep.u32 %p;", "does not fit .u32"),
    ] {
        let ptx = format!(
            ".version 8.3\n.target sm_90\n.address_size 64\n.visible .func f()\n{{\n  \
             .reg .b32 %a, %b, %c, %d;\n  .reg .pred %p;\n  {line}\n  ret;\n}}\n"
        );
        let e = ptxjit::Module::parse(&ptx).expect_err(line).to_string();
        assert!(e.contains(msg), "{line}: {e}");
        assert!(e.contains("<input>:8:"), "{line}: {e}");
    }
}

#[test]
fn hints_clocks_and_uniform_loads() {
    // out[0] = ldu of in[1], out[1] = ld.global.nc of in[2], out[2] = %clock64 difference
    // across a nanosleep (monotonic: ≥ 0 as s64), out[3] = %globaltimer (ns since the epoch),
    // out[4] = %clock_hi:%clock read as one 64-bit value is not torn backwards (≥ 0 diff).
    let ptx = ".version 8.3\n.target sm_90\n.address_size 64\n\
        .visible .entry k(.param .u64 out, .param .u64 in)\n{\n  .reg .b32 %r<8>;\n\
        .reg .b64 %rd<12>;\n  ld.param.u64 %rd1, [out];\n  ld.param.u64 %rd2, [in];\n\
        prefetch.global.L2 [%rd2];\n  prefetchu.L1 [%rd2];\n\
        ldu.global.u64 %rd3, [%rd2+8];\n  ld.global.nc.u64 %rd4, [%rd2+16];\n\
        mov.u64 %rd5, %clock64;\n  nanosleep.u32 1000;\n  mov.u64 %rd6, %clock64;\n\
        sub.s64 %rd7, %rd6, %rd5;\n  mov.u64 %rd8, %globaltimer;\n\
        mov.u32 %r1, %globaltimer_lo;\n  mov.u32 %r2, %globaltimer_hi;\n\
        mov.b64 %rd9, {%r1, %r2};\n  sub.s64 %rd10, %rd9, %rd8;\n\
        st.global.v2.u64 [%rd1], {%rd3, %rd4};\n  st.global.v2.u64 [%rd1+16], {%rd7, %rd8};\n\
        st.global.u64 [%rd1+32], %rd10;\n  ret;\n}\n";
    let words = |b: &[u8]| -> Vec<u64> {
        b.chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect()
    };
    for (name, e) in engines(ptx) {
        let mut out = vec![0u8; 5 * 8];
        let mut input: Vec<u8> = [7u64, 11, 13]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        e.launch(
            "k",
            ptxjit::Dim3::x(1),
            ptxjit::Dim3::x(1),
            &mut [
                ptxjit::Arg::Buffer(&mut out),
                ptxjit::Arg::Buffer(&mut input),
            ],
        )
        .unwrap();
        let after = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let w = words(&out);
        assert_eq!((w[0], w[1]), (11, 13), "{name}: ldu, ld.nc");
        assert!(
            (w[2] as i64) >= 0,
            "{name}: %clock64 went back by {}",
            w[2] as i64
        );
        assert!(
            before <= w[3] && w[3] <= after,
            "{name}: %globaltimer {}",
            w[3]
        );
        assert!((w[4] as i64) >= 0, "{name}: %globaltimer halves went back");
    }
    // ldu reads global memory only; the clocks are read at their width.
    for (line, msg) in [
        ("ldu.shared.u32 %r1, [%rd1];", "global memory only"),
        ("mov.u32 %r1, %clock64;", "is 64-bit"),
        ("mov.u64 %rd1, %clock;", "is 32-bit"),
    ] {
        let ptx = format!(
            ".version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n  \
             .reg .b32 %r1;\n  .reg .b64 %rd1;\n  {line}\n  ret;\n}}\n"
        );
        let e = ptxjit::Module::parse(&ptx).expect_err(line).to_string();
        assert!(e.contains(msg), "{line}: {e}");
    }
}
