//! `fma`, float `mad`, `add`, `sub` and `mul` in every rounding mode, with `.ftz` and `.sat`
//! for f32, on every engine — and on the JIT with its soft-float fallback — against an exact
//! reference computed here with rustc_apfloat, over edge-biased inputs: ±0, ±inf, NaNs,
//! subnormals, values near overflow and underflow, exact cancellation (where the sign of the
//! zero depends on the mode) and ties.

mod common;

use common::{Rng, engines, engines_and_soft_float};
use ptxjit::Value;
use ptxjit::ast::Type;
use rustc_apfloat::ieee::{Double, Single};
use rustc_apfloat::{Float, Round};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Fma,
    Mad,
    Add,
    Sub,
    Mul,
}

#[derive(Clone, Copy, Debug)]
struct Form {
    op: Op,
    f64: bool,
    rnd: &'static str,
    ftz: bool,
    sat: bool,
}

impl Form {
    fn ptx(&self) -> String {
        let op = match self.op {
            Op::Fma => "fma",
            Op::Mad => "mad",
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
        };
        let ftz = if self.ftz { ".ftz" } else { "" };
        let sat = if self.sat { ".sat" } else { "" };
        let ty = if self.f64 { "f64" } else { "f32" };
        let srcs = if matches!(self.op, Op::Fma | Op::Mad) {
            "%x, %y, %z"
        } else {
            "%x, %y"
        };
        format!("{op}.{}{ftz}{sat}.{ty} %d, {srcs};", self.rnd)
    }
}

fn forms() -> Vec<Form> {
    let mut v = Vec::new();
    for op in [Op::Fma, Op::Mad, Op::Add, Op::Sub, Op::Mul] {
        for rnd in ["rn", "rz", "rm", "rp"] {
            v.push(Form {
                op,
                f64: true,
                rnd,
                ftz: false,
                sat: false,
            });
            for (ftz, sat) in [(false, false), (true, false), (false, true), (true, true)] {
                v.push(Form {
                    op,
                    f64: false,
                    rnd,
                    ftz,
                    sat,
                });
            }
        }
    }
    v
}

/// One `.func` per form: `(.param .bN r) fK(.param .bN a, .param .bN b, .param .bN c)`.
fn module(forms: &[Form]) -> String {
    let mut s = String::from(".version 7.8\n.target sm_80\n.address_size 64\n");
    for (k, f) in forms.iter().enumerate() {
        let (b, t) = if f.f64 {
            ("b64", "f64")
        } else {
            ("b32", "f32")
        };
        s += &format!(
            ".visible .func (.param .{b} r) f{k}(.param .{b} a, .param .{b} b, .param .{b} c)\n{{\n\
             \x20 .reg .{t} %x, %y, %z, %d;\n  ld.param.{t} %x, [a];\n  ld.param.{t} %y, [b];\n  \
             ld.param.{t} %z, [c];\n  {}\n  st.param.{t} [r], %d;\n  ret;\n}}\n",
            f.ptx()
        );
    }
    s
}

fn round(r: &str) -> Round {
    match r {
        "rn" => Round::NearestTiesToEven,
        "rz" => Round::TowardZero,
        "rm" => Round::TowardNegative,
        _ => Round::TowardPositive,
    }
}

/// The exact reference: inputs flushed (`.ftz`), one rounding in the mode, a NaN result as
/// the hardware gives it (`$nan`), result flushed, then clamped to [0, 1] with NaN → +0
/// (`.sat`). PTX ISA 9.7.3.
macro_rules! reference {
    ($T:ty, $bits:ty, $f:expr, $a:expr, $b:expr, $c:expr, $nan:expr, $sign:expr, $exp:expr, $one:expr) => {{
        let f: &Form = $f;
        let flush = |v: $bits| if v & $exp == 0 { v & $sign } else { v };
        let inp = |v: $bits| if f.ftz { flush(v) } else { v };
        let (x, y, z) = (
            <$T>::from_bits(inp($a) as u128),
            <$T>::from_bits(inp($b) as u128),
            <$T>::from_bits(inp($c) as u128),
        );
        let r = round(f.rnd);
        let v = match f.op {
            Op::Fma | Op::Mad => x.mul_add_r(y, z, r).value,
            Op::Add => x.add_r(y, r).value,
            Op::Sub => x.sub_r(y, r).value,
            Op::Mul => x.mul_r(y, r).value,
        };
        let mut d = if v.is_nan() {
            $nan
        } else {
            v.to_bits() as $bits
        };
        if f.ftz {
            d = flush(d);
        }
        if f.sat {
            let v = <$T>::from_bits(d as u128);
            d = if v.is_nan() || v.is_negative() || v.is_zero() {
                0
            } else if v >= <$T>::from_bits($one as u128) {
                $one
            } else {
                d
            };
        }
        d as u64
    }};
}

/// An f64 NaN result as NVIDIA hardware gives it: the first NaN of `b, a` (`fma`/`mad`:
/// `b, c, a`), quieted, else the default NaN (an H200: tests/hardware/cases/nan_f64.ptx).
/// f32 NaN results are all the canonical NaN `0x7fffffff`.
fn f64_nan(f: &Form, a: u64, b: u64, c: u64) -> u64 {
    let order = match f.op {
        Op::Fma | Op::Mad => vec![b, c, a],
        _ => vec![b, a],
    };
    let is_nan = |v: u64| f64::from_bits(v).is_nan();
    order
        .into_iter()
        .find(|&v| is_nan(v))
        .map_or(0xfff8_0000_0000_0000, |v| v | 1 << 51)
}

fn reference(f: &Form, a: u64, b: u64, c: u64) -> u64 {
    if f.f64 {
        reference!(
            Double,
            u64,
            f,
            a,
            b,
            c,
            f64_nan(f, a, b, c),
            1 << 63,
            0x7ff0_0000_0000_0000,
            1.0f64.to_bits()
        )
    } else {
        let (a, b, c) = (a as u32, b as u32, c as u32);
        reference!(
            Single,
            u32,
            f,
            a,
            b,
            c,
            0x7fff_ffff,
            1 << 31,
            0x7f80_0000,
            1.0f32.to_bits()
        )
    }
}

const EDGES32: &[u32] = &[
    0x0000_0000,
    0x8000_0000,
    0x7f80_0000,
    0xff80_0000,
    0x7fc0_0000,
    0x7f80_0001,
    0xffc0_1234,
    0x0000_0001,
    0x8000_0001,
    0x007f_ffff,
    0x807f_ffff,
    0x0040_0000,
    0x0080_0000,
    0x8080_0000,
    0x7f7f_ffff,
    0xff7f_ffff,
    0x3f80_0000,
    0xbf80_0000,
    0x3f80_0001,
    0x3f7f_ffff,
    0x3380_0000,
    0x3400_0000,
    0xb380_0000,
    0x3fc0_0000,
    0x4000_0000,
    0x3f00_0000,
    0x1f80_0000,
    0x5f80_0000,
    0x2000_0001,
    0x5f7f_ffff,
    0x4040_0000,
    0xc0a0_0000,
];

const EDGES64: &[u64] = &[
    0,
    1 << 63,
    0x7ff0_0000_0000_0000,
    0xfff0_0000_0000_0000,
    0x7ff8_0000_0000_0000,
    0x7ff0_0000_0000_0001,
    1,
    (1 << 63) | 1,
    0x000f_ffff_ffff_ffff,
    0x0010_0000_0000_0000,
    0x7fef_ffff_ffff_ffff,
    0xffef_ffff_ffff_ffff,
    0x3ff0_0000_0000_0000,
    0xbff0_0000_0000_0000,
    0x3ff0_0000_0000_0001,
    0x3ca0_0000_0000_0000,
    0x3cb0_0000_0000_0000,
    0x3ff8_0000_0000_0000,
    0x1ff0_0000_0000_0000,
    0x5ff0_0000_0000_0000,
    0x2000_0000_0000_0001,
    0x4008_0000_0000_0000,
];

/// Edge-biased operands: edges, random bits, small integers scaled by powers of two, and a c
/// that cancels a·b exactly.
fn inputs(f64: bool, rng: &mut Rng, n: usize) -> Vec<[u64; 3]> {
    let pick = |rng: &mut Rng| -> u64 {
        match rng.below(4) {
            0 | 1 if f64 => EDGES64[rng.below(EDGES64.len() as u64) as usize],
            0 | 1 => EDGES32[rng.below(EDGES32.len() as u64) as usize] as u64,
            2 if f64 => rng.next_u64(),
            2 => rng.next_u64() & 0xffff_ffff,
            _ => {
                let v = (rng.below(64) as f64 - 32.0) * 2f64.powi(rng.below(40) as i32 - 20);
                if f64 {
                    v.to_bits()
                } else {
                    (v as f32).to_bits() as u64
                }
            }
        }
    };
    (0..n)
        .map(|_| {
            let (a, b) = (pick(rng), pick(rng));
            let c = if rng.below(5) == 0 {
                // Exact cancellation when a·b is representable.
                if f64 {
                    (-(f64::from_bits(a) * f64::from_bits(b))).to_bits()
                } else {
                    let p = f32::from_bits(a as u32) as f64 * f32::from_bits(b as u32) as f64;
                    ((-p) as f32).to_bits() as u64
                }
            } else {
                pick(rng)
            };
            [a, b, c]
        })
        .collect()
}

#[test]
fn every_rounding_form_matches_apfloat_on_every_engine() {
    let forms = forms();
    let ptx = module(&forms);
    let all = engines_and_soft_float(&ptx);
    let mut rng = Rng::new(97);
    let mut checked = 0;
    for (k, f) in forms.iter().enumerate() {
        let ty = if f.f64 { Type::B64 } else { Type::B32 };
        for [a, b, c] in inputs(f.f64, &mut rng, 400) {
            let want = Value::new(ty, reference(f, a, b, c));
            let args = [Value::new(ty, a), Value::new(ty, b), Value::new(ty, c)];
            for (name, e) in &all {
                let got = e.call(&format!("f{k}"), &args).unwrap()[0];
                assert!(
                    got.same_as(want),
                    "{name}: `{}` on {a:#x}, {b:#x}, {c:#x}: got {got}, want {want}",
                    f.ptx()
                );
            }
            checked += 1;
        }
    }
    assert_eq!(checked, forms.len() * 400);
}

/// `mad` without a rounding modifier (PTX ISA 9.7.3.7): `.rn` on PTX ISA ≤ 3.1, and for
/// `.target sm_1x` the `fma.rn.ftz.f32` that sm_20+ hardware runs; `mad.f64` is `.rn` before
/// PTX ISA 1.4. Later versions refuse both (located errors, see tests/cli.rs).
#[test]
fn mad_without_rounding_follows_the_target_and_version() {
    let module = |version: &str, target: &str, ty: &str| {
        format!(
            ".version {version}\n.target {target}\n.address_size 64\n\
             .visible .func (.param .{ty} r) f(.param .{ty} a, .param .{ty} b, .param .{ty} c)\n{{\n\
             \x20 .reg .{ty} %x, %y, %z, %d;\n  ld.param.{ty} %x, [a];\n  ld.param.{ty} %y, [b];\n\
             \x20 ld.param.{ty} %z, [c];\n  mad.{ty} %d, %x, %y, %z;\n  st.param.{ty} [r], %d;\n  ret;\n}}\n"
        )
    };
    // 2^-70 · 2^-70 + 2^-127 (a subnormal): kept with .rn, flushed to +0 with .ftz.
    let (a, c) = (2f32.powi(-70), f32::from_bits(0x0040_0000));
    let args = [Value::f32(a), Value::f32(a), Value::f32(c)];
    let exact = Value::f32(a * a + c);
    for (version, target, want) in [("3.1", "sm_20", exact), ("1.4", "sm_13", Value::f32(0.0))] {
        for (name, e) in engines(&module(version, target, "f32")) {
            let got = e.call("f", &args).unwrap()[0];
            assert_eq!(got, want, "{name}: .version {version} .target {target}");
        }
    }
    // mad.f64 on PTX ISA 1.3: round to nearest, one rounding (1 + 2^-30)² + -1 keeps 2^-60.
    let x = 1.0 + 2f64.powi(-30);
    let args = [Value::f64(x), Value::f64(x), Value::f64(-1.0)];
    for (name, e) in engines(&module("1.3", "sm_13", "f64")) {
        let got = e.call("f", &args).unwrap()[0];
        assert_eq!(got, Value::f64(x.mul_add(x, -1.0)), "{name}");
        assert_eq!(got, Value::f64(2f64.powi(-29) + 2f64.powi(-60)), "{name}");
    }
    for v in ["7.8", "3.2"] {
        let m = ptxjit::Module::parse(&module(v, "sm_80", "f32"));
        assert!(
            m.unwrap_err()
                .to_string()
                .contains("needs a rounding modifier")
        );
    }
    let m = ptxjit::Module::parse(&module("1.4", "sm_13", "f64"));
    assert!(
        m.unwrap_err()
            .to_string()
            .contains("needs a rounding modifier")
    );
}

/// Directed `sqrt.f32`, checked by squaring in f64 (exact for 24-bit values): the `.rz`/`.rm`
/// root r satisfies r² ≤ x < next(r)², the `.rp` root prev(r)² < x ≤ r². Subnormal and tiny
/// inputs included: the random-program differential run found the soft-float root off by
/// one ulp there (its residual underflowed), now fixed by scaling.
#[test]
fn directed_sqrt_brackets_the_root_even_for_subnormals() {
    let ptx = ".version 7.8\n.target sm_80\n.address_size 64\n\
        .visible .func (.param .f32 r) rz(.param .f32 a) { .reg .f32 %x; ld.param.f32 %x, [a]; sqrt.rz.f32 %x, %x; st.param.f32 [r], %x; ret; }\n\
        .visible .func (.param .f32 r) rm(.param .f32 a) { .reg .f32 %x; ld.param.f32 %x, [a]; sqrt.rm.f32 %x, %x; st.param.f32 [r], %x; ret; }\n\
        .visible .func (.param .f32 r) rp(.param .f32 a) { .reg .f32 %x; ld.param.f32 %x, [a]; sqrt.rp.f32 %x, %x; st.param.f32 [r], %x; ret; }\n";
    let all = engines_and_soft_float(ptx);
    let mut rng = Rng::new(5);
    for k in 0..3000 {
        let bits = match k % 3 {
            0 => 1 + rng.below(0x007f_ffff) as u32,
            1 => (rng.below(0x0100_0000) as u32) | 0x0080_0000,
            _ => rng.next_u64() as u32 & 0x7f7f_ffff,
        };
        let x = f32::from_bits(bits) as f64;
        if x == 0.0 {
            continue;
        }
        for (name, e) in &all {
            let get = |f: &str| {
                let v = e.call(f, &[Value::f32(f32::from_bits(bits))]).unwrap()[0];
                f32::from_bits(v.bits as u32)
            };
            let sq = |v: f32| (v as f64) * (v as f64);
            for f in ["rz", "rm"] {
                let r = get(f);
                assert!(
                    sq(r) <= x && x < sq(r.next_up()),
                    "{name}: sqrt.{f} of {bits:#x} = {r:e}"
                );
            }
            let r = get("rp");
            assert!(
                sq(r.next_down()) < x && x <= sq(r),
                "{name}: sqrt.rp of {bits:#x} = {r:e}"
            );
        }
    }
}
