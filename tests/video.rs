//! The scalar video instructions (PTX ISA 9.7.18.1) on every engine: every form — each
//! operation with every combination of types, `.sat`, shift mode, secondary operation or
//! merge selector, `vset` comparisons, `vmad` negations, `.po` and scales — over edge-biased
//! inputs, against a model written here in i128 of what NVIDIA hardware computes (the
//! manual's pseudocode, and the code ptxas writes for these instructions where it departs
//! from it, as an H200 confirms); and each of the manual's examples with a hand-worked
//! result.

mod common;

use common::{Rng, call3 as call, engines, three_operand_module};

const SELS: [&str; 6] = ["b0", "b1", "b2", "b3", "h0", "h1"];

#[derive(Clone, Debug)]
enum Kind {
    /// vadd … vshr: op, dtype, atype, btype signedness, sat, shift mode.
    Arith {
        op: &'static str,
        d: bool,
        a: bool,
        b: bool,
        sat: bool,
        wrap: Option<bool>,
    },
    Vset {
        a: bool,
        b: bool,
        cmp: &'static str,
    },
    Vmad {
        d: bool,
        a: bool,
        b: bool,
        po: bool,
        sat: bool,
        scale: u32,
        neg: [bool; 3],
    },
}

#[derive(Clone, Debug)]
struct Form {
    kind: Kind,
    /// None, a secondary op (`add min max`) or a merge selector.
    secop: Option<&'static str>,
    dsel: Option<&'static str>,
    asel: Option<&'static str>,
    bsel: Option<&'static str>,
}

fn ty(signed: bool) -> &'static str {
    if signed { "s32" } else { "u32" }
}

impl Form {
    fn ptx(&self) -> String {
        let sel = |s: Option<&str>| s.map_or(String::new(), |s| format!(".{s}"));
        let (a, b) = (
            format!("%a{}", sel(self.asel)),
            format!("%b{}", sel(self.bsel)),
        );
        let tail = |text: String| match (self.secop, self.dsel) {
            (Some(op), _) => format!("{text}.{op} %d, {a}, {b}, %c;"),
            (None, Some(s)) => format!("{text} %d.{s}, {a}, {b}, %c;"),
            (None, None) => format!("{text} %d, {a}, {b};"),
        };
        match &self.kind {
            Kind::Arith {
                op,
                d,
                a: at,
                b: bt,
                sat,
                wrap,
            } => {
                let sat = if *sat { ".sat" } else { "" };
                let mode = match wrap {
                    None => "",
                    Some(true) => ".wrap",
                    Some(false) => ".clamp",
                };
                tail(format!(
                    "{op}.{}.{}.{}{sat}{mode}",
                    ty(*d),
                    ty(*at),
                    ty(*bt)
                ))
            }
            Kind::Vset { a: at, b: bt, cmp } => tail(format!("vset.{}.{}.{cmp}", ty(*at), ty(*bt))),
            Kind::Vmad {
                d,
                a: at,
                b: bt,
                po,
                sat,
                scale,
                neg,
            } => {
                let m = |n: bool| if n { "-" } else { "" };
                format!(
                    "vmad.{}.{}.{}{}{}{} %d, {}{a}, {}{b}, {}%c;",
                    ty(*d),
                    ty(*at),
                    ty(*bt),
                    if *po { ".po" } else { "" },
                    if *sat { ".sat" } else { "" },
                    match scale {
                        7 => ".shr7",
                        15 => ".shr15",
                        _ => "",
                    },
                    m(neg[0]),
                    m(neg[1]),
                    m(neg[2])
                )
            }
        }
    }
}

// ---- the model: what NVIDIA hardware computes, in i128 ----------------------------------
//
// The manual's pseudocode, except where ptxas's code for these instructions (sm_70 and later
// run them as code ptxas writes, read with nvdisasm) departs from it, which an H200 confirms
// on every form of tests/hardware/cases/video_scalar.ptx: the saturation rules, the value
// `.min`/`.max` compare with c, vset's c, vmad's signed 32 × 32 → 64-bit product, and the
// `.h1` merge (docs/semantics.md, "Video instructions").

fn sel_bits(s: Option<&str>) -> (u32, u32) {
    match s {
        None => (0, 32),
        Some("h0") => (0, 16),
        Some("h1") => (16, 16),
        Some(b) => (8 * (b.as_bytes()[1] - b'0') as u32, 8),
    }
}

/// The low `bits` bits of v as a signed number.
fn signed_low(v: i128, bits: u32) -> i128 {
    let m = v & ((1i128 << bits) - 1);
    if m >> (bits - 1) & 1 == 1 {
        m - (1i128 << bits)
    } else {
        m
    }
}

/// partSelectSignExtend.
fn extract(x: u32, signed: bool, sel: Option<&str>) -> i128 {
    let (pos, bits) = sel_bits(sel);
    let v = ((x as u64 >> pos) & ((1u64 << bits) - 1)) as i128;
    if signed { signed_low(v, bits) } else { v }
}

/// optSaturate as the hardware's code does it: shifts clamp their .s34 intermediate to the
/// 32-bit range; the rest, merged, keep a result in [0, part max] and give the part max
/// otherwise; unmerged, signed clamps to s32 and unsigned only below 0 (the low 32 bits).
fn saturate(shift: bool, tmp: i128, signed: bool, dsel: Option<&str>) -> i128 {
    let range = if signed {
        (i32::MIN as i128, i32::MAX as i128)
    } else {
        (0, u32::MAX as i128)
    };
    if shift {
        return signed_low(tmp, 34).clamp(range.0, range.1);
    }
    match dsel {
        Some(s) => {
            let bits = sel_bits(Some(s)).1;
            let max = if signed {
                (1i128 << (bits - 1)) - 1
            } else {
                (1i128 << bits) - 1
            };
            if 0 <= tmp && tmp <= max { tmp } else { max }
        }
        None if signed => tmp.clamp(range.0, range.1),
        None => {
            if tmp < 0 {
                0
            } else {
                tmp & 0xffff_ffff
            }
        }
    }
}

/// optSecondaryOp / optMerge, then the low 32 bits: `.min`/`.max` compare `key` with c as
/// 64-bit numbers (signed or not as `c_signed`); `.add` and the merges take `v` (a merge into
/// `.h1` keeps v's own bits 31..16, the others v's low bits moved up).
fn tail(f: &Form, key: i128, v: i128, c: u32, c_signed: bool) -> u32 {
    let cv = if c_signed {
        c as i32 as i128
    } else {
        c as i128
    };
    let in64 = |x: i128| {
        if c_signed {
            signed_low(x, 64)
        } else {
            x & ((1i128 << 64) - 1)
        }
    };
    let r = match (f.secop, f.dsel) {
        (Some("add"), _) => v + cv,
        (Some("min"), _) => {
            if in64(key) < cv {
                key
            } else {
                cv
            }
        }
        (Some(_), _) => {
            if in64(key) > cv {
                key
            } else {
                cv
            }
        }
        (None, Some(s)) => {
            let (pos, bits) = sel_bits(Some(s));
            let m = ((1i128 << bits) - 1) << pos;
            if s == "h1" {
                (v & m) | (c as i128 & !m)
            } else {
                ((v & ((1i128 << bits) - 1)) << pos) | (c as i128 & !m)
            }
        }
        (None, None) => v,
    };
    r as u32
}

fn model(f: &Form, a: u32, b: u32, c: u32) -> u32 {
    match &f.kind {
        Kind::Arith {
            op,
            d,
            a: at,
            b: bt,
            sat,
            wrap,
        } => {
            let ta = extract(a, *at, f.asel);
            let tb = extract(b, *bt, f.bsel);
            let amount = |tb: i128| match wrap {
                Some(true) => (tb & 0x1f) as u32,
                _ => tb.min(32) as u32,
            };
            let shift = op.starts_with("vsh");
            let tmp = match *op {
                "vadd" => ta + tb,
                "vsub" => ta - tb,
                "vabsdiff" => (ta - tb).abs(),
                "vmin" => ta.min(tb),
                "vmax" => ta.max(tb),
                "vshl" => ta << amount(tb),
                _ => ta >> amount(tb),
            };
            let v = if *sat {
                saturate(shift, tmp, *d, f.dsel)
            } else {
                tmp
            };
            // What `.min`/`.max` compare: the 32-bit result sign-extended for vadd/vsub and
            // saturated shifts, a shift's exact value, or the exact value (with .sat, the
            // clamped value for a signed dtype, the non-negative part for an unsigned one).
            let key = if *op == "vadd" || *op == "vsub" || (shift && *sat) {
                signed_low(v, 32)
            } else if shift {
                tmp
            } else if *sat && !*d {
                tmp.max(0)
            } else {
                v
            };
            tail(f, key, v, c, *d)
        }
        Kind::Vset { a: at, b: bt, cmp } => {
            let (ta, tb) = (extract(a, *at, f.asel), extract(b, *bt, f.bsel));
            let t = match *cmp {
                "eq" => ta == tb,
                "ne" => ta != tb,
                "lt" => ta < tb,
                "le" => ta <= tb,
                "gt" => ta > tb,
                _ => ta >= tb,
            };
            // c is signed when atype is.
            tail(f, t as i128, t as i128, c, *at)
        }
        Kind::Vmad {
            a: at,
            b: bt,
            po,
            sat,
            scale,
            neg,
            ..
        } => {
            // Each source a signed 32-bit value, c sign-extended, the sum mod 2^64.
            let ta = signed_low(extract(a, *at, f.asel), 32);
            let tb = signed_low(extract(b, *bt, f.bsel), 32);
            let neg_p = neg[0] ^ neg[1];
            let signed_final = *at || *bt || neg_p || neg[2];
            let cv = c as i32 as i128;
            let p = ta * tb;
            let sum = if *po {
                p + cv + 1
            } else if neg_p {
                -p + cv
            } else if neg[2] {
                p - cv
            } else {
                p + cv
            };
            let sum = signed_low(sum, 64);
            // Arithmetic for a signed result, logical otherwise.
            let scaled = if signed_final {
                sum >> scale
            } else {
                (sum & ((1i128 << 64) - 1)) >> scale
            };
            let result = match (*sat, signed_final) {
                (false, _) => scaled,
                (true, true) => scaled.clamp(i32::MIN as i128, i32::MAX as i128),
                (true, false) => signed_low(scaled, 64).clamp(0, u32::MAX as i128),
            };
            result as u32
        }
    }
}

// ---- forms and inputs --------------------------------------------------------------------

fn all_forms(rng: &mut Rng) -> Vec<Form> {
    let pick_sel = |rng: &mut Rng| -> Option<&'static str> {
        let k = rng.below(8) as usize;
        (k < 6).then(|| SELS[k])
    };
    let tails: Vec<(Option<&str>, Option<&str>)> = [None, Some("add"), Some("min"), Some("max")]
        .into_iter()
        .map(|s| (s, None))
        .chain(SELS.iter().map(|s| (None, Some(*s))))
        .collect();
    let mut forms = Vec::new();
    let bools = [false, true];
    for op in ["vadd", "vsub", "vabsdiff", "vmin", "vmax", "vshl", "vshr"] {
        let shift = op.starts_with("vsh");
        for d in bools {
            for a in bools {
                for b in bools {
                    if shift && b {
                        continue;
                    }
                    for sat in bools {
                        let modes: &[Option<bool>] = if shift {
                            &[Some(false), Some(true)]
                        } else {
                            &[None]
                        };
                        for wrap in modes {
                            for (secop, dsel) in &tails {
                                forms.push(Form {
                                    kind: Kind::Arith {
                                        op,
                                        d,
                                        a,
                                        b,
                                        sat,
                                        wrap: *wrap,
                                    },
                                    secop: *secop,
                                    dsel: *dsel,
                                    asel: pick_sel(rng),
                                    bsel: pick_sel(rng),
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    for a in bools {
        for b in bools {
            for cmp in ["eq", "ne", "lt", "le", "gt", "ge"] {
                for (secop, dsel) in &tails {
                    forms.push(Form {
                        kind: Kind::Vset { a, b, cmp },
                        secop: *secop,
                        dsel: *dsel,
                        asel: pick_sel(rng),
                        bsel: pick_sel(rng),
                    });
                }
            }
        }
    }
    let negations = [
        [false, false, false],
        [true, false, false],
        [false, true, false],
        [true, true, false],
        [false, false, true],
        [true, true, true],
    ];
    for d in bools {
        for a in bools {
            for b in bools {
                for sat in bools {
                    for scale in [0, 7, 15] {
                        for (po, neg) in negations
                            .iter()
                            .map(|n| (false, *n))
                            .chain([(true, [false; 3])])
                        {
                            forms.push(Form {
                                kind: Kind::Vmad {
                                    d,
                                    a,
                                    b,
                                    po,
                                    sat,
                                    scale,
                                    neg,
                                },
                                secop: None,
                                dsel: None,
                                asel: pick_sel(rng),
                                bsel: pick_sel(rng),
                            });
                        }
                    }
                }
            }
        }
    }
    forms
}

const EDGES: &[u32] = &[
    0,
    1,
    0xffff_ffff,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0x8000,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    31,
    32,
    33,
    255,
    0x0101_0101,
    0x8080_8080,
    0x7f7f_7f7f,
    0xffff_0000,
    0x0000_8000,
    0x8000_7fff,
];

fn value(rng: &mut Rng) -> u32 {
    match rng.below(3) {
        0 => EDGES[rng.below(EDGES.len() as u64) as usize],
        // Bytes from the edges of every part.
        1 => (0..4).fold(0, |v, k| {
            let b = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x20, 0x21][rng.below(7) as usize];
            v | (b << (8 * k))
        }),
        _ => rng.next_u64() as u32,
    }
}

#[test]
fn every_form_matches_the_hardware_model() {
    let mut rng = Rng::new(918);
    let forms = all_forms(&mut rng);
    assert!(forms.len() > 1500, "{} forms", forms.len());
    let ptx = module(&forms);
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

/// A module of one function per form (`f{k}`).
fn module(forms: &[Form]) -> String {
    let header = ".version 7.8\n.target sm_80\n.address_size 64\n";
    three_operand_module(header, "", 0, forms.iter().map(Form::ptx))
}

/// Runs one instruction on registers a, b, c (named %a %b %c; the result in %d).
fn run_one(text: &str, a: u32, b: u32, c: u32) -> u32 {
    let header = ".version 7.8\n.target sm_80\n.address_size 64\n";
    let ptx = three_operand_module(header, "", 0, [text.to_string()]);
    let mut out = Vec::new();
    for (name, e) in engines(&ptx) {
        out.push((name, call(e.as_ref(), "f0", a, b, c)));
    }
    assert!(out.iter().all(|(_, v)| *v == out[0].1), "{text}: {out:x?}");
    out[0].1
}

#[test]
fn the_manuals_examples() {
    // 9.7.18.1.1: b0 of a as u32 (255) + h0 of b as s32 (-32768) = -32513.
    assert_eq!(
        run_one("vadd.s32.u32.s32.sat %d, %a.b0, %b.h0;", 0xff, 0x8000, 0),
        0xffff_80ff
    );
    // h1 of a as s32 (-32768) - h1 of b as u32 (65535) = -98303.
    assert_eq!(
        run_one(
            "vsub.s32.s32.u32.sat %d, %a.h1, %b.h1;",
            0x8000_0000,
            0xffff_0000,
            0
        ),
        0xfffe_8001
    );
    // |-128 - 127| = 255, saturated to s16 (fits), merged into c's low half.
    assert_eq!(
        run_one(
            "vabsdiff.s32.s32.s32.sat %d.h0, %a.b0, %b.b2, %c;",
            0x80,
            0x007f_0000,
            0x1234_5678
        ),
        0x1234_00ff
    );
    // min(-5, 7) + 100 = 95.
    assert_eq!(
        run_one(
            "vmin.s32.s32.s32.sat.add %d, %a, %b, %c;",
            -5i32 as u32,
            7,
            100
        ),
        95
    );
    // 9.7.18.1.2: a shift of 40 clamps to 32: 3 << 32 leaves 0 in the low word; 4 gives 0x30.
    assert_eq!(run_one("vshl.s32.u32.u32.clamp %d, %a, %b;", 3, 40, 0), 0);
    assert_eq!(run_one("vshl.s32.u32.u32.clamp %d, %a, %b;", 3, 4, 0), 0x30);
    // h1 of b is 35, wrapped to 3.
    assert_eq!(
        run_one(
            "vshr.u32.u32.u32.wrap %d, %a, %b.h1;",
            0x8000_0000,
            0x0023_0000,
            0
        ),
        0x1000_0000
    );
    // 9.7.18.1.3: -3 · 5 - 10 = -25.
    assert_eq!(
        run_one("vmad.s32.s32.u32.sat %d, %a, %b, -%c;", -3i32 as u32, 5, 10),
        -25i32 as u32
    );
    // (65535 · 65535 + 32768) >> 15 = 131069.
    assert_eq!(
        run_one(
            "vmad.u32.u32.u32.shr15 %d, %a.h0, %b.h0, %c;",
            0xffff,
            0xffff,
            0x8000
        ),
        131069
    );
    // 9.7.18.1.4: -1 (s32) < 0 (u32); h1 of b (5) == 5.
    assert_eq!(run_one("vset.s32.u32.lt %d, %a, %b;", 0xffff_ffff, 0, 0), 1);
    assert_eq!(
        run_one("vset.u32.u32.ne %d, %a, %b.h1;", 5, 0x0005_0000, 0),
        0
    );
}

#[test]
fn readings_where_the_manual_is_ambiguous() {
    // As the hardware: c is sign-extended, so `- c` of 0x80000000 adds 2^31, and 6 + 2^31
    // saturates to 0x7fffffff (tests/hardware/cases/video_scalar.ptx on an H200).
    assert_eq!(
        run_one("vmad.s32.u32.u32.sat %d, %a, %b, -%c;", 2, 3, 0x8000_0000),
        0x7fff_ffff
    );
    // .sat sees vshl's .s34 intermediate: 0xffffffff << 8 wraps negative in 34 bits and
    // saturates to 0.
    assert_eq!(
        run_one("vshl.u32.u32.u32.clamp.sat %d, %a, %b;", 0xffff_ffff, 8, 0),
        0
    );
    // ... while .min compares the shift's 64-bit value: min(2^40 - 256, 7) = 7.
    assert_eq!(
        run_one(
            "vshl.u32.u32.u32.clamp.min %d, %a, %b, %c;",
            0xffff_ffff,
            8,
            7
        ),
        7
    );
}

#[test]
fn malformed_video_instructions_are_located_errors() {
    for (line, msg) in [
        ("vmad.s32.s32.s32.po %d, -%a, %b, %c;", "cannot be negated"),
        (
            "vmad.s32.s32.s32 %d, -%a, %b, -%c;",
            "either the product or c",
        ),
        (
            "vadd.s32.s32.s32 %d, %a, %b, %c;",
            "needs `.add`/`.min`/`.max`",
        ),
        (
            "vadd.s32.s32.s32.add %d.h0, %a, %b, %c;",
            "cannot be combined",
        ),
        ("vshl.s32.s32.s32.clamp %d, %a, %b;", "shift amount"),
        ("vshr.s32.s32.u32 %d, %a, %b;", ".clamp or .wrap"),
        ("vset.s32.s32.lo %d, %a, %b;", "vset compares"),
        ("vadd.s32.s64.s32 %d, %a, %b;", "takes .u32 or .s32"),
        ("vmin.s32.s32 %d, %a, %b;", "three types"),
        ("vadd.s32.s32.s32 %d.h0, %a, %b;", "fourth operand"),
    ] {
        let ptx = format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .func f()\n{{\n  .reg .b32 %a, %b, %c, %d;\n  {line}\n  ret;\n}}\n"
        );
        let e = ptxjit::Module::parse(&ptx).expect_err(line).to_string();
        assert!(e.contains(msg), "{line}: {e}");
        assert!(e.contains("<input>:7:"), "{line}: {e}");
    }
}

#[test]
fn immediates_as_operands() {
    // ptxas takes immediates for a, b and c (their low 32 bits).
    assert_eq!(
        run_one("vshr.u32.u32.u32.clamp.add %d, %a, 32, %c;", 0xffff, 0, 9),
        9
    );
    assert_eq!(
        run_one("vshr.u32.u32.u32.clamp %d, %a, 4;", 0xf0, 0, 0),
        0xf
    );
    assert_eq!(run_one("vadd.u32.u32.u32 %d, 7, %b;", 0, 5, 0), 12);
    assert_eq!(
        run_one("vadd.s32.s32.s32 %d, %a, -5;", 3, 0, 0),
        -2i32 as u32
    );
    assert_eq!(
        run_one("vadd.u32.u32.u32.max %d, %a, %b, 100;", 1, 2, 0),
        100
    );
    assert_eq!(run_one("vmad.u32.u32.u32 %d, %a, 5, 3;", 4, 0, 0), 23);
    assert_eq!(run_one("vset.u32.u32.lt %d, %a, 5;", 4, 0, 0), 1);
    assert_eq!(
        run_one(
            "vadd.u32.u32.u32 %d.h1, %a, 1, 0x12345678;",
            0x0001_ffff,
            0,
            0
        ),
        0x0002_5678
    );
    let ptx = ".version 7.8\n.target sm_80\n.address_size 64\n.visible .func f()\n{\n  \
               .reg .b32 %a;\n  vadd.u32.u32.u32 5, %a, %a;\n  ret;\n}\n";
    let e = ptxjit::Module::parse(ptx).unwrap_err().to_string();
    assert!(e.contains("the destination must be a register"), "{e}");
}
