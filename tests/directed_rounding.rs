//! Directed rounding (`.rz .rm .rp`) of `add`, `sub`, `mul` and `fma`, f32 and f64, against
//! rustc_apfloat, aimed at the cases where the JIT's inline computation from the
//! round-to-nearest result and its exact error could go wrong (`src/jit/lower/float/
//! directed.rs`): ties and exact results, signed zeros (`x + (−x)` is −0 under `.rm`),
//! overflow to infinity against the largest finite number, subnormal and underflowing
//! results, the boundaries of the f64 fast path (products near 2^−968), `.ftz`, `.sat` and
//! NaNs. Every case runs on every engine; a kernel over arrays runs many inputs at once.

mod common;

use common::{Rng, engines_and_soft_float};
use ptxjit::{Arg, Dim3};
use rustc_apfloat::ieee::{Double, Single};
use rustc_apfloat::{Float, Round};

const OPS: [&str; 4] = ["add", "sub", "mul", "fma"];
const MODES: [&str; 3] = ["rz", "rm", "rp"];

/// The exact reference: one rounding of the exact result, a NaN as NVIDIA hardware gives it
/// (f32: the canonical NaN; f64: the first NaN operand, quieted, `b` then `a` — for fma `b`,
/// `c`, `a` —, or the default NaN `0xfff8000000000000`: tests/hardware/cases/nan_f64.ptx on
/// an H200), then `.ftz` (inputs and result) and `.sat` as PTX ISA 9.7.3 defines them.
fn reference(op: &str, mode: &str, f64: bool, ftz: bool, sat: bool, x: [u64; 3]) -> u64 {
    let r = match mode {
        "rz" => Round::TowardZero,
        "rm" => Round::TowardNegative,
        _ => Round::TowardPositive,
    };
    let nan = |default: u64, [a, b, c]: [u64; 3]| {
        if !f64 {
            return default;
        }
        let order = if op == "fma" {
            vec![b, c, a]
        } else {
            vec![b, a]
        };
        let is_nan = |v: u64| v & 0x7ff0_0000_0000_0000 == 0x7ff0_0000_0000_0000 && v << 12 != 0;
        order
            .into_iter()
            .find(|&v| is_nan(v))
            .map_or(default, |v| v | 1 << 51)
    };
    macro_rules! exact {
        ($T:ty, $sign:expr, $exp:expr, $nan:expr, $one:expr) => {{
            let flush = |v: u64| if ftz && v & $exp == 0 { v & $sign } else { v };
            let [a, b, c] = x.map(|v| <$T>::from_bits(flush(v) as u128));
            let v = match op {
                "add" => a.add_r(b, r).value,
                "sub" => a.sub_r(b, r).value,
                "mul" => a.mul_r(b, r).value,
                _ => a.mul_add_r(b, c, r).value,
            };
            let d = if v.is_nan() {
                nan($nan, x.map(flush))
            } else {
                flush(v.to_bits() as u64)
            };
            let v = <$T>::from_bits(d as u128);
            if !sat {
                d
            } else if v.is_nan() || v.is_negative() || v.is_zero() {
                0
            } else if v >= <$T>::from_bits($one as u128) {
                $one
            } else {
                d
            }
        }};
    }
    if f64 {
        exact!(
            Double,
            1 << 63,
            0x7ff0_0000_0000_0000,
            0xfff8_0000_0000_0000,
            1.0f64.to_bits()
        )
    } else {
        exact!(
            Single,
            1 << 31,
            0x7f80_0000,
            0x7fff_ffff,
            1.0f32.to_bits() as u64
        )
    }
}

/// One kernel per form, `k(a, b, c, d, n)`: `d[i] = op(a[i], b[i], c[i])`.
fn kernels(forms: &[(String, bool, bool, bool, String, String)]) -> String {
    let mut s = String::from(".version 7.8\n.target sm_80\n.address_size 64\n");
    for (k, (op, f64, ftz, sat, mode, _)) in forms.iter().enumerate() {
        let (t, w) = if *f64 { ("f64", 8) } else { ("f32", 4) };
        let mods = format!(
            "{mode}{}{}",
            if *ftz { ".ftz" } else { "" },
            if *sat { ".sat" } else { "" }
        );
        let srcs = if op == "fma" { "%x, %y, %z" } else { "%x, %y" };
        s += &format!(
            ".visible .entry k{k}(.param .u64 pa, .param .u64 pb, .param .u64 pc, \
             .param .u64 pd, .param .u32 n)\n{{\n\
             \x20 .reg .{t} %x, %y, %z, %r;\n  .reg .u32 %i, %n, %t, %u;\n  .reg .u64 %o, %p;\n\
             \x20 .reg .pred %q;\n\
             \x20 mov.u32 %i, %ctaid.x;\n  mov.u32 %t, %ntid.x;\n  mov.u32 %u, %tid.x;\n  mad.lo.u32 %i, %i, %t, %u;\n\
             \x20 ld.param.u32 %n, [n];\n  setp.ge.u32 %q, %i, %n;\n  @%q bra DONE;\n\
             \x20 mul.wide.u32 %o, %i, {w};\n\
             \x20 ld.param.u64 %p, [pa];\n  add.u64 %p, %p, %o;\n  ld.global.{t} %x, [%p];\n\
             \x20 ld.param.u64 %p, [pb];\n  add.u64 %p, %p, %o;\n  ld.global.{t} %y, [%p];\n\
             \x20 ld.param.u64 %p, [pc];\n  add.u64 %p, %p, %o;\n  ld.global.{t} %z, [%p];\n\
             \x20 {op}.{mods}.{t} %r, {srcs};\n\
             \x20 ld.param.u64 %p, [pd];\n  add.u64 %p, %p, %o;\n  st.global.{t} [%p], %r;\n\
             DONE:\n  ret;\n}}\n"
        );
    }
    s
}

type Form = (String, bool, bool, bool, String, String);

fn forms() -> Vec<Form> {
    let mut v = Vec::new();
    for op in OPS {
        for mode in MODES {
            for (f64, ftz, sat) in [
                (true, false, false),
                (false, false, false),
                (false, true, false),
                (false, false, true),
                (false, true, true),
            ] {
                let name = format!(
                    "{op}.{mode}{}{}.{}",
                    if ftz { ".ftz" } else { "" },
                    if sat { ".sat" } else { "" },
                    if f64 { "f64" } else { "f32" }
                );
                v.push((op.to_string(), f64, ftz, sat, mode.to_string(), name));
            }
        }
    }
    v
}

/// Runs every form over `inputs` on every engine (and the JIT's soft-float fallback) and
/// compares each result with the reference.
fn check_all(inputs64: &[[u64; 3]], inputs32: &[[u64; 3]]) {
    let forms = forms();
    let ptx = kernels(&forms);
    let all = engines_and_soft_float(&ptx);
    for (k, (op, f64, ftz, sat, mode, name)) in forms.iter().enumerate() {
        let inputs = if *f64 { inputs64 } else { inputs32 };
        let w = if *f64 { 8 } else { 4 };
        let column = |j: usize| -> Vec<u8> {
            inputs
                .iter()
                .flat_map(|x| x[j].to_le_bytes()[..w].to_vec())
                .collect()
        };
        let want: Vec<u64> = inputs
            .iter()
            .map(|x| reference(op, mode, *f64, *ftz, *sat, *x))
            .collect();
        let n = inputs.len() as u32;
        for (engine, e) in &all {
            let (mut a, mut b, mut c) = (column(0), column(1), column(2));
            let mut d = vec![0u8; inputs.len() * w];
            e.launch(
                &format!("k{k}"),
                Dim3::x(n.div_ceil(128)),
                Dim3::x(128),
                &mut [
                    Arg::Buffer(&mut a),
                    Arg::Buffer(&mut b),
                    Arg::Buffer(&mut c),
                    Arg::Buffer(&mut d),
                    Arg::Scalar(ptxjit::Value::u32(n)),
                ],
            )
            .unwrap();
            for (i, x) in inputs.iter().enumerate() {
                let mut bytes = [0u8; 8];
                bytes[..w].copy_from_slice(&d[i * w..(i + 1) * w]);
                let got = u64::from_le_bytes(bytes);
                assert_eq!(
                    got, want[i],
                    "{engine}: {name} on {:#x}, {:#x}, {:#x}: got {got:#x}, want {:#x}",
                    x[0], x[1], x[2], want[i]
                );
            }
        }
    }
}

/// Hand-picked hard cases, the same for both widths (f32 inputs are the f64 values rounded,
/// plus the f32 boundaries).
#[test]
fn hard_cases_match_apfloat() {
    let max = f64::MAX;
    let min_sub = f64::from_bits(1);
    let min_norm = f64::MIN_POSITIVE;
    let ulp1 = f64::EPSILON;
    let p968 = 2f64.powi(-968);
    let mut c64: Vec<[u64; 3]> = Vec::new();
    let mut push = |a: f64, b: f64, c: f64| c64.push([a.to_bits(), b.to_bits(), c.to_bits()]);
    for (a, b, c) in [
        // signed zeros: x + (−x), zero sums, zero products plus zeros
        (1.5, -1.5, 0.0),
        (0.0, -0.0, 0.0),
        (-0.0, -0.0, -0.0),
        (0.0, 0.0, -0.0),
        (-0.0, 0.0, 0.0),
        (2.0, 3.0, -6.0),
        (-2.0, 3.0, 6.0),
        (0.0, 5.0, -0.0),
        (-0.0, 5.0, 0.0),
        (0.0, -5.0, 0.0),
        (0.0, 5.0, 1.0),
        (0.0, 5.0, -1.0),
        (3.0, 0.0, -2.5),
        // ties and one-ulp errors
        (1.0, ulp1 / 2.0, 0.0),
        (1.0, -ulp1 / 2.0, 0.0),
        (1.0, ulp1 / 4.0, -1.0),
        (1.0 + ulp1, 1.0 + ulp1, -1.0),
        (1.0 + ulp1, 1.0 - ulp1 / 2.0, 0.0),
        (1.0, 2f64.powi(-100), 1.0),
        (1.0, -2f64.powi(-100), 1.0),
        (-1.0, 2f64.powi(-100), -1.0),
        (3.0, 1.0 / 3.0, -1.0),
        (0.1, 0.1, 0.1),
        // overflow to infinity or to the largest finite number
        (max, max, 0.0),
        (max, -max, -max),
        (max, 2.0, -max),
        (-max, 2.0, max),
        (max, 1.0 + ulp1, 0.0),
        (max, 1.0, max * ulp1 / 4.0),
        (max, 1.0, -max * ulp1 / 4.0),
        (max / 2.0, 2.0, max / 2.0),
        (1e300, 1e10, -1e300),
        (-1e300, 1e10, 1e300),
        // subnormal and underflowing results, the fast path's lower bound
        (min_sub, 0.5, 0.0),
        (min_sub, -0.5, 0.0),
        (min_sub, 0.75, min_sub),
        (min_norm, 0.5, -min_sub),
        (min_norm, -min_norm, 0.0),
        (2f64.powi(-600), 2f64.powi(-600), 0.0),
        (2f64.powi(-600), -2f64.powi(-600), min_sub),
        (2f64.powi(-500), 2f64.powi(-500), -min_sub),
        (p968, 1.0 + ulp1, 0.0),
        (p968, 1.0 - ulp1 / 2.0, -p968),
        (2f64.powi(-484), 2f64.powi(-484) * (1.0 + ulp1), 0.0),
        (
            2f64.powi(-484) * (1.0 + ulp1),
            -2f64.powi(-484) * (1.0 + ulp1),
            p968,
        ),
        (3.0 * 2f64.powi(-500), 2f64.powi(-470) / 3.0, -p968),
        (1.0 + ulp1, 2f64.powi(-1060), 0.0),
        (1.0 + ulp1, -2f64.powi(-1060), 2f64.powi(-1060)),
        // infinities and NaNs
        (f64::INFINITY, 1.0, -f64::INFINITY),
        (f64::INFINITY, 0.0, 1.0),
        (f64::INFINITY, -1.0, 1.0),
        (-max, 4352.0, f64::INFINITY),
        (f64::NAN, 1.0, 1.0),
        (1.0, 1.0, f64::NAN),
    ] {
        for (x, y, z) in [(a, b, c), (-a, b, c), (a, b, -c), (b, a, -c)] {
            push(x, y, z);
        }
    }
    let f32_edges: [u32; 12] = [
        0x7f7f_ffff,
        0x0000_0001,
        0x0080_0000,
        0x007f_ffff,
        0x3f80_0001,
        0x3380_0000,
        0x3400_0000,
        0x7f00_0000,
        0x0040_0000,
        0x1f80_0000,
        0x2000_0001,
        0x3f7f_ffff,
    ];
    let mut c32: Vec<[u64; 3]> = c64
        .iter()
        .map(|x| x.map(|v| (f64::from_bits(v) as f32).to_bits() as u64))
        .collect();
    for &a in &f32_edges {
        for &b in &f32_edges {
            for c in [
                0u32,
                0x8000_0000,
                a,
                a ^ 0x8000_0000,
                0x3f80_0000,
                0x0000_0001,
            ] {
                c32.push([a as u64, b as u64, c as u64]);
                c32.push([(a ^ 0x8000_0000) as u64, b as u64, c as u64]);
            }
        }
    }
    assert!(c64.len() > 200 && c32.len() > 1000);
    check_all(&c64, &c32);
}

/// Random inputs biased toward the hard regions: short significands (ties, exact results),
/// exponents near overflow and underflow and near the f64 fast path's bound, exact and
/// near cancellation.
#[test]
fn biased_random_inputs_match_apfloat() {
    let mut rng = Rng::new(20_261_123);
    let pick64 = |rng: &mut Rng| -> u64 {
        let sign = rng.below(2) << 63;
        let mant = match rng.below(3) {
            0 => rng.next_u64() & 0x000f_ffff_ffff_ffff,
            1 => (rng.next_u64() & 0x000f_ffff_ffff_ffff) & !((1u64 << rng.below(52)) - 1),
            _ => [0, 1, 0x000f_ffff_ffff_ffff][rng.below(3) as usize],
        };
        let exp = match rng.below(5) {
            0 => rng.below(2047),
            1 => 1023 + rng.below(40) - 20,
            2 => rng.below(120),
            3 => 2046 - rng.below(60),
            _ => 55 + rng.below(20) - 10 + 485 * rng.below(2),
        };
        sign | exp << 52 | mant
    };
    let mut inputs64 = Vec::new();
    for _ in 0..6000 {
        let (a, b) = (pick64(&mut rng), pick64(&mut rng));
        let (x, y) = (f64::from_bits(a), f64::from_bits(b));
        let c = match rng.below(5) {
            0 => (-(x * y)).to_bits(),
            1 => {
                let p = x * y;
                (-(p - x.mul_add(y, -p))).to_bits()
            }
            2 => (-(x * y)).to_bits() ^ (1 + rng.below(4)),
            3 => (-x).to_bits() ^ rng.below(3),
            _ => pick64(&mut rng),
        };
        inputs64.push([a, b, c]);
    }
    let pick32 = |rng: &mut Rng| -> u64 {
        let sign = rng.below(2) << 31;
        let mant = match rng.below(3) {
            0 => rng.next_u64() & 0x007f_ffff,
            1 => (rng.next_u64() & 0x007f_ffff) & !((1u64 << rng.below(23)) - 1),
            _ => [0, 1, 0x007f_ffff][rng.below(3) as usize],
        };
        let exp = match rng.below(4) {
            0 => rng.below(255),
            1 => 127 + rng.below(30) - 15,
            2 => rng.below(40),
            _ => 254 - rng.below(30),
        };
        sign | exp << 23 | mant
    };
    let mut inputs32 = Vec::new();
    for _ in 0..6000 {
        let (a, b) = (pick32(&mut rng), pick32(&mut rng));
        let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
        let c = match rng.below(4) {
            0 => (-(x as f64 * y as f64) as f32).to_bits() as u64,
            1 => ((-(x as f64 * y as f64) as f32).to_bits() ^ (1 + rng.below(3) as u32)) as u64,
            2 => (-x).to_bits() as u64,
            _ => pick32(&mut rng),
        };
        inputs32.push([a, b, c]);
    }
    check_all(&inputs64, &inputs32);
}
