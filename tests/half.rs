//! Half precision on every engine: `add sub mul fma` on `.f16 .bf16` and their pairs with
//! `.ftz .sat .relu`, `neg abs min max` with `.NaN .xorsign.abs`, `setp` and `set`, and
//! `cvt` between the half types and f32, f64, the integers and themselves, in every rounding
//! mode, against `rustc_apfloat`'s `Half` and `BFloat` (IEEE 754 arithmetic in software),
//! with the modifiers applied as the manual describes them; hand-worked values for the
//! approximate `ex2` and `tanh`.

mod common;

use common::{Rng, engines};
use ptxjit::{Arg, Dim3};
use rustc_apfloat::ieee::{BFloat, Double, Half, Single};
use rustc_apfloat::{Float, FloatConvert, Round};
use std::cmp::Ordering;

const NAN: u16 = 0x7fff;
const RN: Round = Round::NearestTiesToEven;

/// A kernel that runs `text` (operands `%a %b %c` → `%d`, `.b32` registers, `decls` declaring
/// any others) once per record `{a, b, c, d}` of its buffer, one thread per record.
fn kernel(decls: &str, text: &str) -> String {
    format!(
        ".version 8.3\n.target sm_90\n.address_size 64\n\
         .visible .entry k(.param .u64 io, .param .u32 n)\n{{\n\
         \x20 .reg .b32 %a, %b, %c, %d, %i, %n;\n  .reg .b64 %rd<4>;\n  .reg .pred %done;\n{decls}\
         \x20 mov.u32 %i, %ctaid.x;\n  mov.u32 %n, %ntid.x;\n  mul.lo.u32 %i, %i, %n;\n\
         \x20 mov.u32 %n, %tid.x;\n  add.u32 %i, %i, %n;\n  ld.param.u32 %n, [n];\n\
         \x20 setp.ge.u32 %done, %i, %n;\n  @%done bra END;\n  ld.param.u64 %rd1, [io];\n\
         \x20 mul.wide.u32 %rd2, %i, 16;\n  add.u64 %rd3, %rd1, %rd2;\n\
         \x20 ld.global.b32 %a, [%rd3];\n  ld.global.b32 %b, [%rd3+4];\n\
         \x20 ld.global.b32 %c, [%rd3+8];\n  mov.b32 %d, 0;\n  {text}\n\
         \x20 st.global.b32 [%rd3+12], %d;\nEND:\n  ret;\n}}\n"
    )
}

/// Runs `text` over `inputs` on every engine and checks each result against `model`.
fn check(decls: &str, text: &str, inputs: &[[u32; 3]], model: impl Fn(u32, u32, u32) -> u32) {
    let ptx = kernel(decls, text);
    let mut io: Vec<u8> = inputs
        .iter()
        .flat_map(|[a, b, c]| [*a, *b, *c, 0])
        .flat_map(u32::to_le_bytes)
        .collect();
    let fresh = io.clone();
    for (name, e) in engines(&ptx) {
        io.copy_from_slice(&fresh);
        let n = inputs.len() as u32;
        e.launch(
            "k",
            Dim3::x(n.div_ceil(128)),
            Dim3::x(128),
            &mut [Arg::Buffer(&mut io), Arg::Scalar(ptxjit::Value::u32(n))],
        )
        .unwrap_or_else(|err| panic!("{name}: `{text}`: {err}"));
        for (k, [a, b, c]) in inputs.iter().enumerate() {
            let got = u32::from_le_bytes(io[16 * k + 12..16 * k + 16].try_into().unwrap());
            let want = model(*a, *b, *c);
            assert_eq!(
                got, want,
                "{name}: `{text}` on a={a:#x} b={b:#x} c={c:#x}: got {got:#x}, want {want:#x}"
            );
        }
    }
}

/// The two 16-bit formats, as `rustc_apfloat` types.
trait Half16: Float + FloatConvert<Single> + FloatConvert<Double> {
    const ONE: u16;
    fn of(bits: u16) -> Self {
        Self::from_bits(bits as u128)
    }
    fn bits16(self) -> u16 {
        if self.is_nan() {
            NAN
        } else {
            self.to_bits() as u16
        }
    }
}
impl Half16 for Half {
    const ONE: u16 = 0x3c00;
}
impl Half16 for BFloat {
    const ONE: u16 = 0x3f80;
}

fn edges<T: Half16>() -> Vec<u16> {
    let one = T::ONE;
    let smallest_normal = T::smallest_normalized().to_bits() as u16;
    let largest = T::largest().to_bits() as u16;
    let inf = T::INFINITY.to_bits() as u16;
    let mut v = vec![
        0,
        1,
        smallest_normal - 1,
        smallest_normal,
        one - 1,
        one,
        one + 1,
        largest,
        inf,
        inf + 1,
        NAN,
        one + (one >> 4),
    ];
    let neg: Vec<u16> = v.iter().map(|x| x | 0x8000).collect();
    v.extend(neg);
    v
}

/// Edge pairs, random pairs and pairs whose sum is near a tie.
fn inputs<T: Half16>(rng: &mut Rng, n: usize) -> Vec<[u32; 3]> {
    let e = edges::<T>();
    let mut v = Vec::new();
    for &a in &e {
        for &b in &e {
            v.push([a as u32, b as u32, e[(a ^ b) as usize % e.len()] as u32]);
        }
    }
    for _ in 0..n {
        let a = rng.next_u64() as u16;
        // b within a few binades of a half the time, to reach ties and cancellation.
        let b = if rng.next_u64() & 1 == 0 {
            (a & 0xfc00 | rng.next_u64() as u16 & 0x03ff) ^ (rng.next_u64() as u16 & 0x8800)
        } else {
            rng.next_u64() as u16
        };
        // c near −(a·b) a third of the time: fma's cancellation.
        let prod = T::of(a).mul_r(T::of(b), RN).value.bits16();
        let c = match rng.next_u64() % 3 {
            0 => (prod ^ 0x8000)
                .wrapping_add((rng.next_u64() % 5) as u16)
                .wrapping_sub(2),
            _ => rng.next_u64() as u16,
        };
        v.push([a as u32, b as u32, c as u32]);
    }
    v
}

/// The manual's modifiers on one result: `.ftz` flushes a subnormal result to zero of its
/// sign, `.sat` clamps to [0.0, 1.0] with NaN to +0.0, `.relu` makes negatives +0.0.
fn finish<T: Half16>(r: T, ftz: bool, sat: bool, relu: bool) -> u16 {
    let mut bits = r.bits16();
    if ftz && T::of(bits).is_denormal() {
        bits &= 0x8000;
    }
    let v = T::of(bits);
    if sat {
        if v.is_nan() || v.is_negative() {
            bits = 0;
        } else if v >= T::of(T::ONE) {
            bits = T::ONE;
        }
    }
    if relu && !v.is_nan() && v.is_negative() {
        bits = 0;
    }
    bits
}

fn arith_model<T: Half16>(
    op: &str,
    ftz: bool,
    sat: bool,
    relu: bool,
    a: u16,
    b: u16,
    c: u16,
) -> u16 {
    let flush = |h: u16| {
        if ftz && T::of(h).is_denormal() {
            h & 0x8000
        } else {
            h
        }
    };
    let (x, y, z) = (T::of(flush(a)), T::of(flush(b)), T::of(flush(c)));
    let r = match op {
        "add" => x.add_r(y, RN).value,
        "sub" => x.sub_r(y, RN).value,
        "mul" => x.mul_r(y, RN).value,
        "fma" => x.mul_add_r(y, z, RN).value,
        _ => unreachable!(),
    };
    finish(r, ftz, sat, relu)
}

/// Applies a 16-bit model to each half of a pair.
fn pairwise(f: impl Fn(u16, u16, u16) -> u16, a: u32, b: u32, c: u32) -> u32 {
    let lo = f(a as u16, b as u16, c as u16) as u32;
    let hi = f((a >> 16) as u16, (b >> 16) as u16, (c >> 16) as u16) as u32;
    lo | hi << 16
}

const DECLS16: &str = "  .reg .b16 %ha, %hb, %hc, %hd;\n";
const UNPACK: &str = "cvt.u16.u32 %ha, %a; cvt.u16.u32 %hb, %b; cvt.u16.u32 %hc, %c;";

fn scalar(op_text: &str) -> String {
    format!("{UNPACK} {op_text}; cvt.u32.u16 %d, %hd;")
}

fn arith_forms<T: Half16>(ty: &str, mods: &[(&str, bool, bool, bool)], rng: &mut Rng) {
    let inputs16 = inputs::<T>(rng, 3000);
    let pairs: Vec<[u32; 3]> = inputs16
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| [0, 1, 2].map(|i| c[0][i] | c[1][i] << 16))
        .collect();
    for op in ["add", "sub", "mul", "fma"] {
        for &(m, ftz, sat, relu) in mods {
            if relu && op != "fma" {
                continue;
            }
            let rnd = if op == "fma" { ".rn" } else { "" };
            let srcs = if op == "fma" {
                "%ha, %hb, %hc"
            } else {
                "%ha, %hb"
            };
            let model = |a: u16, b: u16, c: u16| arith_model::<T>(op, ftz, sat, relu, a, b, c);
            check(
                DECLS16,
                &scalar(&format!("{op}{rnd}{m}.{ty} %hd, {srcs}")),
                &inputs16,
                |a, b, c| model(a as u16, b as u16, c as u16) as u32,
            );
            let srcs = if op == "fma" { "%a, %b, %c" } else { "%a, %b" };
            check(
                "",
                &format!("{op}{rnd}{m}.{ty}x2 %d, {srcs};"),
                &pairs,
                |a, b, c| pairwise(model, a, b, c),
            );
        }
    }
}

#[test]
fn f16_arithmetic_rounds_once_to_nearest() {
    let mut rng = Rng::new(0x16);
    let mods = [
        ("", false, false, false),
        (".ftz", true, false, false),
        (".sat", false, true, false),
        (".ftz.sat", true, true, false),
        (".relu", false, false, true),
        (".ftz.relu", true, false, true),
    ];
    arith_forms::<Half>("f16", &mods, &mut rng);
}

#[test]
fn bf16_arithmetic_rounds_once_to_nearest() {
    let mut rng = Rng::new(0xbf16);
    arith_forms::<BFloat>(
        "bf16",
        &[("", false, false, false), (".relu", false, false, true)],
        &mut rng,
    );
}

/// neg/abs flip or clear the sign (after `.ftz`), and give the canonical NaN for a NaN (as an
/// H200: tests/hardware/cases/nan_f16.ptx); min/max return the other operand of a NaN
/// (the canonical NaN for two, or for any with `.NaN`), −0.0 below +0.0; `.xorsign.abs`
/// compares magnitudes and gives the xor of the signs.
fn sign_and_minmax<T: Half16>(ty: &str, ftz_ok: bool, rng: &mut Rng) {
    let inputs16 = inputs::<T>(rng, 500);
    let flush = |ftz: bool, h: u16| {
        if ftz && T::of(h).is_denormal() {
            h & 0x8000
        } else {
            h
        }
    };
    let sign_op = |a: u16, r: u16| if T::of(a).is_nan() { NAN } else { r } as u32;
    for ftz in [false, true] {
        if ftz && !ftz_ok {
            continue;
        }
        let m = if ftz { ".ftz" } else { "" };
        check(
            DECLS16,
            &scalar(&format!("neg{m}.{ty} %hd, %ha")),
            &inputs16,
            |a, _, _| sign_op(a as u16, flush(ftz, a as u16 ^ 0x8000)),
        );
        check(
            DECLS16,
            &scalar(&format!("abs{m}.{ty} %hd, %ha")),
            &inputs16,
            |a, _, _| sign_op(a as u16, flush(ftz, a as u16 & 0x7fff)),
        );
        for op in ["min", "max"] {
            for (nm, nan) in [("", false), (".NaN", true)] {
                for (xm, xorsign) in [("", false), (".xorsign.abs", true)] {
                    let model = |a: u16, b: u16| -> u16 {
                        let (a, b) = (flush(ftz, a), flush(ftz, b));
                        let sign = (a ^ b) & 0x8000;
                        let (a, b) = if xorsign {
                            (a & 0x7fff, b & 0x7fff)
                        } else {
                            (a, b)
                        };
                        let (x, y) = (T::of(a), T::of(b));
                        let r = match (x.is_nan(), y.is_nan()) {
                            (true, true) => return NAN,
                            (true, _) | (_, true) if nan => return NAN,
                            (true, false) => b,
                            (false, true) => a,
                            _ => {
                                let below = match x.partial_cmp(&y).unwrap() {
                                    Ordering::Equal => x.is_negative() && !y.is_negative(),
                                    o => o == Ordering::Less,
                                };
                                if below == (op == "min") { a } else { b }
                            }
                        };
                        if xorsign { r | sign } else { r }
                    };
                    check(
                        DECLS16,
                        &scalar(&format!("{op}{m}{nm}{xm}.{ty} %hd, %ha, %hb")),
                        &inputs16,
                        |a, b, _| model(a as u16, b as u16) as u32,
                    );
                }
            }
        }
    }
}

#[test]
fn neg_abs_min_max_on_halves() {
    let mut rng = Rng::new(7);
    sign_and_minmax::<Half>("f16", true, &mut rng);
    sign_and_minmax::<BFloat>("bf16", false, &mut rng);
}

/// The comparison table (PTX ISA 9.7.7.1, table 27) on `partial_cmp`.
fn holds(cmp: &str, o: Option<Ordering>) -> bool {
    use Ordering::*;
    let u = o.is_none();
    match cmp {
        "eq" => o == Some(Equal),
        "ne" => o == Some(Less) || o == Some(Greater),
        "lt" => o == Some(Less),
        "le" => matches!(o, Some(Less | Equal)),
        "gt" => o == Some(Greater),
        "ge" => matches!(o, Some(Greater | Equal)),
        "equ" => u || o == Some(Equal),
        "neu" => o != Some(Equal),
        "ltu" => u || o == Some(Less),
        "leu" => u || matches!(o, Some(Less | Equal)),
        "gtu" => u || o == Some(Greater),
        "geu" => u || matches!(o, Some(Greater | Equal)),
        "num" => !u,
        "nan" => u,
        _ => unreachable!(),
    }
}

const CMPS: [&str; 14] = [
    "eq", "ne", "lt", "le", "gt", "ge", "equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan",
];

#[test]
fn setp_and_set_compare_halves() {
    let mut rng = Rng::new(0x5e7);
    let inputs16 = inputs::<Half>(&mut rng, 300);
    let pairs: Vec<[u32; 3]> = inputs16
        .iter()
        .map(|[a, b, c]| [a | b << 16, b | c << 16, *c & 1])
        .collect();
    let t = |cmp: &str, ftz: bool, a: u16, b: u16| {
        let f = |h: u16| {
            if ftz && Half::of(h).is_denormal() {
                h & 0x8000
            } else {
                h
            }
        };
        holds(cmp, Half::of(f(a)).partial_cmp(&Half::of(f(b))))
    };
    let decls = "  .reg .pred %p, %q, %r;\n";
    for cmp in CMPS {
        for ftz in [false, true] {
            let m = if ftz { ".ftz" } else { "" };
            // setp.f16 p|q: q is p's complement; with .and, both are and-ed with c.
            check(
                &(DECLS16.to_string() + decls),
                &format!(
                    "{UNPACK} setp.ne.u32 %r, %c, 0; setp.{cmp}.and{m}.f16 %p|%q, %ha, %hb, %r; \
                     selp.u32 %d, 1, 0, %p; selp.u32 %a, 2, 0, %q; or.b32 %d, %d, %a;"
                ),
                &pairs,
                |a, b, c| {
                    let r = t(cmp, ftz, a as u16, b as u16);
                    let c = c != 0;
                    (r && c) as u32 | ((!r && c) as u32) << 1
                },
            );
            // setp.f16x2 p|q: the low halves' and the high halves' comparisons.
            check(
                decls,
                &format!(
                    "setp.{cmp}{m}.f16x2 %p|%q, %a, %b; selp.u32 %d, 1, 0, %p; \
                     selp.u32 %c, 2, 0, %q; or.b32 %d, %d, %c;"
                ),
                &pairs,
                |a, b, _| {
                    t(cmp, ftz, a as u16, b as u16) as u32
                        | (t(cmp, ftz, (a >> 16) as u16, (b >> 16) as u16) as u32) << 1
                },
            );
            // set: 1.0 in a half destination, all ones in an integer one, per half.
            check(
                "",
                &format!("set.{cmp}{m}.f16x2.f16x2 %d, %a, %b;"),
                &pairs,
                |a, b, _| {
                    let one = |r: bool| if r { 0x3c00 } else { 0 };
                    one(t(cmp, ftz, a as u16, b as u16))
                        | one(t(cmp, ftz, (a >> 16) as u16, (b >> 16) as u16)) << 16
                },
            );
            check(
                DECLS16,
                &format!("{UNPACK} set.{cmp}{m}.u32.f16 %d, %ha, %hb;"),
                &pairs,
                |a, b, _| {
                    if t(cmp, ftz, a as u16, b as u16) {
                        u32::MAX
                    } else {
                        0
                    }
                },
            );
        }
    }
    // set in its other forms: an f16 result of an f32 comparison, an f32 one of integers.
    check(
        DECLS16,
        "set.lt.f16.f32 %hd, %a, %b; cvt.u32.u16 %d, %hd;",
        &[
            [0x3f80_0000, 0x4000_0000, 0],
            [0x4000_0000, 0x3f80_0000, 0],
            [0x7fc0_0000, 0, 0],
        ],
        |a, b, _| {
            let lt = f32::from_bits(a) < f32::from_bits(b);
            if lt { 0x3c00 } else { 0 }
        },
    );
    check(
        "",
        "set.gt.f32.s32 %d, %a, %b;",
        &[[5, 3, 0], [3, 5, 0], [u32::MAX, 1, 0]],
        |a, b, _| {
            if (a as i32) > (b as i32) {
                1f32.to_bits()
            } else {
                0
            }
        },
    );
}

fn round_of(r: &str) -> Round {
    match r {
        "rn" => Round::NearestTiesToEven,
        "rz" => Round::TowardZero,
        "rm" => Round::TowardNegative,
        _ => Round::TowardPositive,
    }
}

/// f32 inputs: edges of both half formats, values halfway between halves, random bits.
fn f32_inputs(rng: &mut Rng) -> Vec<[u32; 3]> {
    let mut v: Vec<u32> = vec![
        0,
        0x8000_0000,
        1,
        0x0080_0000,
        0x3f80_0000,
        0x477f_e000, // 65504, f16's largest
        0x477f_f000, // 65520: halfway to 65536
        0x477f_efff,
        0x4780_0000,
        0x3380_0000, // 2^-24, f16's smallest subnormal
        0x3300_0000, // 2^-25, halfway to it
        0x3300_0001,
        0x387f_c000, // just below f16's smallest normal
        0x7f7f_ffff,
        0x7f80_0000,
        0x7fc0_0000,
        0x7f80_0001,
        0x3f80_1000, // 1 + 2^-11: a tie in f16
        0x3f80_3000,
        0x3f80_8000, // 1 + 2^-8: a tie in bf16
        0x3f81_8000,
    ];
    let neg: Vec<u32> = v.iter().map(|x| x | 0x8000_0000).collect();
    v.extend(neg);
    for _ in 0..3000 {
        let x = rng.next_u64() as u32;
        // Half of them with an exponent near the halves' range.
        v.push(if x & 1 == 0 {
            x
        } else {
            (x & 0x87ff_ffff) | 0x3000_0000
        });
    }
    v.into_iter().map(|x| [x, x.rotate_left(7), 0]).collect()
}

fn half_from_f32<T: Half16>(
    x: u32,
    rnd: Round,
    relu: bool,
    satfinite: bool,
    sat: bool,
    ftz: bool,
) -> u16
where
    Single: FloatConvert<T>,
{
    let mut s = Single::from_bits(x as u128);
    if ftz && s.is_denormal() {
        s = Single::from_bits((x & 0x8000_0000) as u128);
    }
    let r: T = s.convert_r(rnd, &mut false).value;
    let mut bits = r.bits16();
    if satfinite && !r.is_nan() && r.is_infinite() {
        bits = (bits & 0x8000) | T::largest().to_bits() as u16;
    }
    finish(T::of(bits), false, sat, relu)
}

#[test]
fn cvt_to_halves_rounds_once_in_every_mode() {
    let mut rng = Rng::new(0xc47);
    let xs = f32_inputs(&mut rng);
    for r in ["rn", "rz", "rm", "rp"] {
        for (m, relu, satfinite, sat, ftz) in [
            ("", false, false, false, false),
            (".relu", true, false, false, false),
            (".satfinite", false, true, false, false),
            (".sat", false, false, true, false),
            (".ftz", false, false, false, true),
        ] {
            // As ptxas: .relu and .satfinite round with .rn or .rz only, and .sat does not
            // apply to a .bf16.
            if (relu || satfinite) && !matches!(r, "rn" | "rz") {
                continue;
            }
            let rnd = round_of(r);
            check(
                DECLS16,
                &format!("cvt.{r}{m}.f16.f32 %hd, %a; cvt.u32.u16 %d, %hd;"),
                &xs,
                |a, _, _| half_from_f32::<Half>(a, rnd, relu, satfinite, sat, ftz) as u32,
            );
            if sat {
                continue;
            }
            check(
                DECLS16,
                &format!("cvt.{r}{m}.bf16.f32 %hd, %a; cvt.u32.u16 %d, %hd;"),
                &xs,
                |a, _, _| half_from_f32::<BFloat>(a, rnd, relu, satfinite, sat, ftz) as u32,
            );
        }
    }
    // The pairs: a into the upper half, b into the lower.
    for r in ["rn", "rz"] {
        for (m, relu, satfinite) in [("", false, false), (".relu.satfinite", true, true)] {
            let rnd = round_of(r);
            check(
                "",
                &format!("cvt.{r}{m}.f16x2.f32 %d, %a, %b;"),
                &xs,
                |a, b, _| {
                    (half_from_f32::<Half>(a, rnd, relu, satfinite, false, false) as u32) << 16
                        | half_from_f32::<Half>(b, rnd, relu, satfinite, false, false) as u32
                },
            );
            check(
                "",
                &format!("cvt.{r}{m}.bf16x2.f32 %d, %a, %b;"),
                &xs,
                |a, b, _| {
                    (half_from_f32::<BFloat>(a, rnd, relu, satfinite, false, false) as u32) << 16
                        | half_from_f32::<BFloat>(b, rnd, relu, satfinite, false, false) as u32
                },
            );
        }
    }
    // From f64 and from integers of every width.
    let wide: Vec<[u32; 3]> = xs.iter().map(|[a, b, _]| [*a, *b, 0]).collect();
    for r in ["rn", "rz", "rm", "rp"] {
        let rnd = round_of(r);
        check(
            "  .reg .f64 %fd;\n  .reg .b16 %hd;\n",
            &format!("mov.b64 %fd, {{%b, %a}}; cvt.{r}.f16.f64 %hd, %fd; cvt.u32.u16 %d, %hd;"),
            &wide,
            |a, b, _| {
                let x = Double::from_bits(((a as u64) << 32 | b as u64) as u128);
                let h: Half = x.convert_r(rnd, &mut false).value;
                h.bits16() as u32
            },
        );
        check(
            "  .reg .s64 %sd;\n  .reg .b16 %hd;\n",
            &format!("mov.b64 %sd, {{%b, %a}}; cvt.{r}.f16.s64 %hd, %sd; cvt.u32.u16 %d, %hd;"),
            &wide,
            |a, b, _| {
                let v = ((a as u64) << 32 | b as u64) as i64;
                Half::from_i128_r(v as i128, rnd).value.bits16() as u32
            },
        );
        check(
            "  .reg .b16 %hd;\n",
            &format!("cvt.{r}.f16.u32 %hd, %a; cvt.u32.u16 %d, %hd;"),
            &wide,
            |a, _, _| Half::from_u128_r(a as u128, rnd).value.bits16() as u32,
        );
        check(
            "  .reg .b16 %hd;\n",
            &format!("cvt.{r}.bf16.f32 %hd, %a; cvt.u32.u16 %d, %hd;"),
            &wide,
            |a, _, _| half_from_f32::<BFloat>(a, rnd, false, false, false, false) as u32,
        );
    }
}

fn every_half() -> Vec<[u32; 3]> {
    (0..=u16::MAX as u32).map(|h| [h, 0, 0]).collect()
}

#[test]
fn cvt_from_halves_is_exact_or_rounds_to_an_integer() {
    let all = every_half();
    // Widening is exact; an .f16 NaN becomes the canonical NaN in an .f32, and keeps its sign
    // and payload, quieted, in an .f64 (as an H200: tests/hardware/cases/nan_f16.ptx); .sat
    // clamps to [0, 1].
    check(
        DECLS16,
        &format!("{UNPACK} cvt.f32.f16 %d, %ha;"),
        &all,
        |a, _, _| {
            let x: Single = Half::of(a as u16).convert(&mut false).value;
            if x.is_nan() {
                0x7fff_ffff
            } else {
                x.to_bits() as u32
            }
        },
    );
    // .sat with a .bf16 is not PTX (ptxas: "Illegal modifier"); .f16's clamps to [0, 1].
    check(
        DECLS16,
        &format!("{UNPACK} cvt.sat.f32.f16 %d, %ha;"),
        &all,
        |a, _, _| {
            let x: Single = Half::of(a as u16).convert(&mut false).value;
            let v = f32::from_bits(x.to_bits() as u32);
            if v.is_nan() || v <= 0.0 {
                0
            } else {
                v.min(1.0).to_bits()
            }
        },
    );
    // A .bf16 widens to .f32 by a shift: a NaN keeps all its bits, a signalling one too (as
    // an H200: tests/hardware/cases/nan_bf16.ptx).
    check(
        DECLS16,
        &format!("{UNPACK} cvt.f32.bf16 %d, %ha;"),
        &all,
        |a, _, _| {
            let x: Single = BFloat::of(a as u16).convert(&mut false).value;
            if x.is_nan() {
                a << 16
            } else {
                x.to_bits() as u32
            }
        },
    );
    check(
        "  .reg .f64 %fd;\n  .reg .b16 %ha;\n",
        "cvt.u16.u32 %ha, %a; cvt.f64.f16 %fd, %ha; mov.b64 {%d, %c}, %fd; xor.b32 %d, %d, %c;",
        &all,
        |a, _, _| {
            let x: Double = Half::of(a as u16).convert(&mut false).value;
            let bits = if x.is_nan() {
                let (sign, payload) = ((a & 0x8000) as u64, (a & 0x3ff) as u64);
                sign << 48 | 0x7ff8_0000_0000_0000 | payload << 42
            } else {
                x.to_bits() as u64
            };
            (bits as u32) ^ (bits >> 32) as u32
        },
    );
    // To integers: round to an integral value, saturate, NaN to 0.
    for (r, f) in [
        ("rni", f64::round_ties_even as fn(f64) -> f64),
        ("rzi", f64::trunc),
        ("rmi", f64::floor),
        ("rpi", f64::ceil),
    ] {
        let integral = |a: u32| -> f64 {
            let x: Double = Half::of(a as u16).convert(&mut false).value;
            f(f64::from_bits(x.to_bits() as u64))
        };
        check(
            DECLS16,
            &format!("{UNPACK} cvt.{r}.s32.f16 %d, %ha;"),
            &all,
            |a, _, _| {
                let v = integral(a);
                if v.is_nan() {
                    0
                } else {
                    v.clamp(i32::MIN as f64, i32::MAX as f64) as i32 as u32
                }
            },
        );
        check(
            DECLS16,
            &format!("{UNPACK} cvt.{r}.u8.f16 %hd, %ha; cvt.u32.u16 %d, %hd;"),
            &all,
            |a, _, _| {
                let v = integral(a);
                if v.is_nan() {
                    0
                } else {
                    v.clamp(0.0, 255.0) as u32
                }
            },
        );
        // A half rounded to an integral half.
        let rnd = round_of(&r[..2]);
        check(
            DECLS16,
            &format!("{UNPACK} cvt.{r}.f16.f16 %hd, %ha; cvt.u32.u16 %d, %hd;"),
            &all,
            |a, _, _| Half::of(a as u16).round_to_integral(rnd).value.bits16() as u32,
        );
    }
}

#[test]
fn approximate_functions_on_hand_worked_values() {
    // ex2: 2^1 = 2, 2^-1 = 0.5, 2^0 = 1, 2^-∞ = 0, 2^∞ = ∞, 2^NaN = NaN; tanh: tanh(0) = 0,
    // tanh(−0) = −0, tanh(±∞) = ±1.
    let cases = [
        ("ex2.approx.f16", 0x3c00, 0x4000),
        ("ex2.approx.f16", 0xbc00, 0x3800),
        ("ex2.approx.f16", 0x0000, 0x3c00),
        ("ex2.approx.f16", 0xfc00, 0x0000),
        ("ex2.approx.f16", 0x7c00, 0x7c00),
        ("ex2.approx.f16", 0x7e00, NAN),
        ("tanh.approx.f16", 0x0000, 0x0000),
        ("tanh.approx.f16", 0x8000, 0x8000),
        ("tanh.approx.f16", 0x7c00, 0x3c00),
        ("tanh.approx.f16", 0xfc00, 0xbc00),
        ("tanh.approx.bf16", 0xff80, 0xbf80),
        ("ex2.approx.ftz.bf16", 0x4000, 0x4080),
    ];
    for (op, a, want) in cases {
        check(
            DECLS16,
            &scalar(&format!("{op} %hd, %ha")),
            &[[a, 0, 0]],
            |_, _, _| want as u32,
        );
    }
    check(
        "",
        "ex2.approx.f16x2 %d, %a;",
        &[[0x3c00_bc00, 0, 0]],
        |_, _, _| 0x4000_3800,
    );
    // tanh.approx.f32: tanh(1) = 0.7615941559557649 rounds to 0x3f42f7d6.
    check(
        "",
        "tanh.approx.f32 %d, %a;",
        &[[0x3f80_0000, 0, 0]],
        |_, _, _| 0x3f42_f7d6,
    );
}

#[test]
fn malformed_half_forms_are_located_errors() {
    let bad = [
        ("add.rz.f16 %h1, %h2, %h3;", "rounds with .rn only"),
        ("fma.f16 %h1, %h2, %h3, %h1;", "needs a rounding"),
        (
            "fma.rn.sat.relu.f16 %h1, %h2, %h3, %h1;",
            "cannot be combined",
        ),
        ("mul.ftz.bf16 %rs1, %rs2, %rs3;", "does not apply"),
        ("add.f16x2 %f1, %f2, %f1;", "does not fit"),
        ("add.f16 %h1, %h2, 1.0;", "cannot be used"),
        ("cvt.f16.f32 %h1, %f1;", "takes a rounding"),
        ("cvt.rn.f32.f16 %f1, %h1;", "takes no rounding"),
        ("cvt.rm.f16x2.f32 %r1, %f1, %f2;", "rounds with .rn or .rz"),
        ("setp.lo.f16 %p1, %h1, %h2;", "does not apply"),
        ("ex2.approx.ftz.f16 %h1, %h2;", "does not apply"),
        ("min.relu.f16 %h1, %h2, %h3;", "applies to fma only"),
        ("set.lt.f32.f16 %f1, %h1, %h2;", "not a form of set"),
    ];
    for (line, want) in bad {
        let ptx = format!(
            ".version 8.3\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n\
             \x20 .reg .f16 %h<4>;\n  .reg .b16 %rs<4>;\n  .reg .b32 %r<4>;\n  .reg .f32 %f<4>;\n\
             \x20 .reg .pred %p<3>;\n  {line}\n  ret;\n}}\n"
        );
        let e = ptxjit::Module::parse(&ptx).expect_err(line);
        let text = e.to_string();
        assert!(text.contains(want), "{line}: {text}");
        assert!(
            text.contains(":11:"),
            "{line}: not located on line 11: {text}"
        );
    }
    // bf16 arithmetic needs sm_90, as ptxas says.
    let ptx = ".version 8.3\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\
               \x20 .reg .b16 %rs<4>;\n  add.bf16 %rs1, %rs2, %rs3;\n  ret;\n}\n";
    let e = ptxjit::Module::parse(ptx).expect_err("sm_80");
    assert!(e.to_string().contains("sm_90"), "{e}");
}

#[test]
fn half_atomics_add_each_half_and_round_to_nearest() {
    // 128 threads each add 1.0 to both halves of a pair, to an f16 and to a bf16, and swap
    // a 16-bit word once. Sums of small integers are exact in any order; 2048 + 1 is a tie
    // in f16, which rounds back to 2048 every time.
    let ptx = ".version 8.3\n.target sm_90\n.address_size 64\n\
        .visible .entry k(.param .u64 p)\n{\n  .reg .b32 %r<4>;\n  .reg .b16 %rs<4>;\n\
        \x20 .reg .b64 %rd<3>;\n  ld.param.u64 %rd1, [p];\n  mov.b32 %r2, 0x3c003c00;\n\
        \x20 atom.global.add.noftz.f16x2 %r1, [%rd1], %r2;\n  mov.b16 %rs2, 0x3c00;\n\
        \x20 red.global.add.noftz.f16 [%rd1+4], %rs2;\n  mov.b16 %rs2, 0x3f80;\n\
        \x20 atom.global.add.noftz.bf16 %rs1, [%rd1+6], %rs2;\n  mov.b16 %rs2, 0x4000;\n\
        \x20 mov.b16 %rs3, 0x4200;\n  atom.global.cas.b16 %rs1, [%rd1+8], %rs2, %rs3;\n  ret;\n}\n";
    for (name, e) in engines(ptx) {
        let mut buf: Vec<u8> = [0x3c00u16, 0x6800, 0x6800, 0x3f80, 0x4000, 0]
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect();
        e.launch("k", Dim3::x(2), Dim3::x(64), &mut [Arg::Buffer(&mut buf)])
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let got: Vec<u16> = buf
            .chunks(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        // 1 + 128 = 129 (0x5808); 2048 + 128 × 1 stays 2048 (0x6800); bf16 1 + 128 = 129
        // (0x4301); the swap happens once.
        assert_eq!(got, [0x5808, 0x6800, 0x6800, 0x4301, 0x4200, 0], "{name}");
    }
}
