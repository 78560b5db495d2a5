//! The half-precision corpus (tests/corpus/half): CUDA kernels written with cuda_fp16.h and
//! cuda_bf16.h, compiled by NVIDIA's NVRTC, run on every engine over edge-biased random
//! inputs, each result checked against `rustc_apfloat` (IEEE 754 in software) and Rust's own
//! f32 arithmetic for the sums the kernels do in float.

mod common;

use common::{Rng, engines};
use ptxjit::ast::Type;
use ptxjit::{Arg, Dim3, Value};
use rustc_apfloat::ieee::{BFloat, Half, Single};
use rustc_apfloat::{Float, FloatConvert, Round};

const PTX: &str = include_str!("corpus/half/half.ptx");
const N: usize = 4096;
const RN: Round = Round::NearestTiesToEven;
const NAN16: u16 = 0x7fff;

fn bits16<T: Float>(x: T) -> u16 {
    if x.is_nan() {
        NAN16
    } else {
        x.to_bits() as u16
    }
}

fn half(b: u16) -> Half {
    Half::from_bits(b as u128)
}

fn bf(b: u16) -> BFloat {
    BFloat::from_bits(b as u128)
}

/// Halves biased to the edges: zeros, subnormals, ones, the largest, infinities, NaNs.
fn half_bits(rng: &mut Rng) -> u16 {
    const EDGES: [u16; 10] = [
        0, 1, 0x03ff, 0x0400, 0x3c00, 0x3bff, 0x7bff, 0x7c00, 0x7e00, 0x7c01,
    ];
    let v = if rng.below(4) == 0 {
        EDGES[rng.below(EDGES.len() as u64) as usize]
    } else {
        rng.next_u64() as u16 & 0x7fff
    };
    v | if rng.below(2) == 0 { 0x8000 } else { 0 }
}

fn bytes<T: Copy>(v: &[T], to: fn(T) -> Vec<u8>) -> Vec<u8> {
    v.iter().flat_map(|x| to(*x)).collect()
}

fn u16s(b: &[u8]) -> Vec<u16> {
    b.chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn launch(e: &dyn ptxjit::Engine, kernel: &str, threads: usize, args: &mut [Arg]) {
    e.launch(
        kernel,
        Dim3::x(threads.div_ceil(128) as u32),
        Dim3::x(128),
        args,
    )
    .unwrap_or_else(|err| panic!("{kernel}: {err}"));
}

fn n_arg(n: usize) -> Arg<'static> {
    Arg::Scalar(Value::new(Type::S32, n as u64))
}

/// max without `.NaN`: a NaN operand yields the other; −0.0 < +0.0.
fn max_model<T: Float>(x: T, y: T) -> u16 {
    match (x.is_nan(), y.is_nan()) {
        (true, true) => NAN16,
        (true, false) => bits16(y),
        (false, true) => bits16(x),
        _ if x == y => bits16(if x.is_negative() { y } else { x }),
        _ => bits16(if x > y { x } else { y }),
    }
}

#[test]
fn half_arithmetic_kernels_match_apfloat() {
    let mut rng = Rng::new(0xf16);
    let a: Vec<u16> = (0..N).map(|_| half_bits(&mut rng)).collect();
    let b: Vec<u16> = (0..N).map(|_| half_bits(&mut rng)).collect();
    for (name, e) in engines(PTX) {
        let (mut ab, mut bb) = (
            bytes(&a, |x| x.to_le_bytes().to_vec()),
            bytes(&b, |x| x.to_le_bytes().to_vec()),
        );
        let mut out = vec![0u8; 16 * N];
        launch(
            &*e,
            "half_ops",
            N,
            &mut [
                Arg::Buffer(&mut ab),
                Arg::Buffer(&mut bb),
                Arg::Buffer(&mut out),
                n_arg(N),
            ],
        );
        let out = u16s(&out);
        for i in 0..N {
            let (x, y) = (half(a[i]), half(b[i]));
            let min_nan = if x.is_nan() || y.is_nan() {
                NAN16
            } else if x == y {
                bits16(if x.is_negative() { x } else { y })
            } else {
                bits16(if x < y { x } else { y })
            };
            let want = [
                bits16(x.add_r(y, RN).value),
                bits16(x.sub_r(y, RN).value),
                bits16(x.mul_r(y, RN).value),
                bits16(x.mul_add_r(y, x, RN).value),
                max_model(x, y),
                min_nan,
                (x < y) as u16,
                // __hneg: the sign flipped, a NaN canonical (as `neg.f16` on an H200).
                if x.is_nan() { NAN16 } else { a[i] ^ 0x8000 },
            ];
            assert_eq!(
                &out[8 * i..8 * i + 8],
                &want,
                "{name}: half_ops on {:#x}, {:#x}",
                a[i],
                b[i]
            );
        }
    }
}

#[test]
fn packed_pair_kernels_match_apfloat() {
    let mut rng = Rng::new(0x2f16);
    let pair = |rng: &mut Rng| half_bits(rng) as u32 | (half_bits(rng) as u32) << 16;
    let bf_pair = |rng: &mut Rng| rng.next_u64() as u32;
    let le = |x: u32| x.to_le_bytes().to_vec();
    let per_half = |f: &dyn Fn(u16, u16, u16) -> u16, a: u32, b: u32, c: u32| {
        f(a as u16, b as u16, c as u16) as u32
            | (f((a >> 16) as u16, (b >> 16) as u16, (c >> 16) as u16) as u32) << 16
    };
    let [a, b, c]: [Vec<u32>; 3] =
        std::array::from_fn(|_| (0..N).map(|_| pair(&mut rng)).collect());
    let [p, q, r]: [Vec<u32>; 3] =
        std::array::from_fn(|_| (0..N).map(|_| bf_pair(&mut rng)).collect());
    let fma16 = |x: u16, y: u16, z: u16| bits16(half(x).mul_add_r(half(y), half(z), RN).value);
    let sat16 = |x: u16, y: u16, z: u16| {
        let v = half(fma16(x, y, z));
        if v.is_nan() || v.is_negative() {
            0
        } else if v > half(0x3c00) {
            0x3c00
        } else {
            bits16(v)
        }
    };
    let fma_bf = |x: u16, y: u16, z: u16| bits16(bf(x).mul_add_r(bf(y), bf(z), RN).value);
    let max_bf = |x: u16, y: u16, _| max_model(bf(x), bf(y));
    for (name, e) in engines(PTX) {
        let (mut ab, mut bb, mut cb) = (bytes(&a, le), bytes(&b, le), bytes(&c, le));
        let (mut d, mut s) = (vec![0u8; 4 * N], vec![0u8; 4 * N]);
        launch(
            &*e,
            "half2_fma",
            N,
            &mut [
                Arg::Buffer(&mut ab),
                Arg::Buffer(&mut bb),
                Arg::Buffer(&mut cb),
                Arg::Buffer(&mut d),
                Arg::Buffer(&mut s),
                n_arg(N),
            ],
        );
        let (d, s) = (u32s(&d), u32s(&s));
        for i in 0..N {
            assert_eq!(
                d[i],
                per_half(&fma16, a[i], b[i], c[i]),
                "{name}: __hfma2 {i}"
            );
            assert_eq!(
                s[i],
                per_half(&sat16, a[i], b[i], c[i]),
                "{name}: __hfma2_sat {i}"
            );
        }
        let (mut pb, mut qb, mut rb) = (bytes(&p, le), bytes(&q, le), bytes(&r, le));
        let (mut d, mut m) = (vec![0u8; 4 * N], vec![0u8; 4 * N]);
        launch(
            &*e,
            "bf16x2_ops",
            N,
            &mut [
                Arg::Buffer(&mut pb),
                Arg::Buffer(&mut qb),
                Arg::Buffer(&mut rb),
                Arg::Buffer(&mut d),
                Arg::Buffer(&mut m),
                n_arg(N),
            ],
        );
        let (d, m) = (u32s(&d), u32s(&m));
        for i in 0..N {
            assert_eq!(
                d[i],
                per_half(&fma_bf, p[i], q[i], r[i]),
                "{name}: bf16 __hfma2 {i}"
            );
            assert_eq!(
                m[i],
                per_half(&max_bf, p[i], q[i], 0),
                "{name}: bf16 __hmax2 {i}"
            );
        }
    }
}

#[test]
fn conversion_kernel_matches_apfloat() {
    let mut rng = Rng::new(0xc0f);
    let x: Vec<u32> = (0..N)
        .map(|_| {
            let v = rng.next_u64() as u32;
            // Most near the halves' range, some anywhere.
            if rng.below(4) == 0 {
                v
            } else {
                (v & 0x87ff_ffff) | 0x3000_0000
            }
        })
        .collect();
    let to_half = |v: u32, r: Round| -> u16 {
        let h: Half = Single::from_bits(v as u128).convert_r(r, &mut false).value;
        bits16(h)
    };
    for (name, e) in engines(PTX) {
        let mut xb = bytes(&x, |v| v.to_le_bytes().to_vec());
        let (mut out, mut back) = (vec![0u8; 12 * N], vec![0u8; 4 * N]);
        launch(
            &*e,
            "convert",
            N,
            &mut [
                Arg::Buffer(&mut xb),
                Arg::Buffer(&mut out),
                Arg::Buffer(&mut back),
                n_arg(N),
            ],
        );
        let (out, back) = (u16s(&out), u32s(&back));
        for i in 0..N {
            let rn = to_half(x[i], RN);
            let b: BFloat = Single::from_bits(x[i] as u128)
                .convert_r(RN, &mut false)
                .value;
            // __half2int_rn: to the nearest integer, ties to even, saturated; NaN is 0.
            let wide: Single = half(rn).convert(&mut false).value;
            let v = f32::from_bits(wide.to_bits() as u32);
            let int = if v.is_nan() {
                0
            } else {
                v.round_ties_even().clamp(i32::MIN as f32, i32::MAX as f32) as i32
            };
            let want = [
                rn,
                to_half(x[i], Round::TowardZero),
                to_half(x[i], Round::TowardNegative),
                to_half(x[i], Round::TowardPositive),
                bits16(b),
                int as u16,
            ];
            assert_eq!(&out[6 * i..6 * i + 6], &want, "{name}: convert {:#x}", x[i]);
            let back_want = if v.is_nan() { 0x7fff_ffff } else { v.to_bits() };
            assert_eq!(back[i], back_want, "{name}: __half2float {:#x}", x[i]);
        }
    }
}

#[test]
fn dot_product_kernel_sums_rounded_products_in_order() {
    const LEN: usize = 64;
    const ROWS: usize = 256;
    let mut rng = Rng::new(0xd07);
    // Finite halves of moderate size, so the sums stay finite.
    let small = |rng: &mut Rng| (rng.next_u64() as u16 & 0x3fff) ^ (rng.next_u64() as u16 & 0x8000);
    let x: Vec<u32> = (0..LEN * ROWS)
        .map(|_| small(&mut rng) as u32 | (small(&mut rng) as u32) << 16)
        .collect();
    let y: Vec<u32> = (0..LEN * ROWS)
        .map(|_| small(&mut rng) as u32 | (small(&mut rng) as u32) << 16)
        .collect();
    let product = |a: u16, b: u16| -> f32 {
        let p: Single = half(a).mul_r(half(b), RN).value.convert(&mut false).value;
        f32::from_bits(p.to_bits() as u32)
    };
    for (name, e) in engines(PTX) {
        let (mut xb, mut yb) = (
            bytes(&x, |v| v.to_le_bytes().to_vec()),
            bytes(&y, |v| v.to_le_bytes().to_vec()),
        );
        let mut out = vec![0u8; 4 * ROWS];
        launch(
            &*e,
            "dot_rows",
            ROWS,
            &mut [
                Arg::Buffer(&mut xb),
                Arg::Buffer(&mut yb),
                Arg::Buffer(&mut out),
                n_arg(LEN),
                n_arg(ROWS),
            ],
        );
        let out = u32s(&out);
        for (r, got) in out.iter().enumerate() {
            let mut acc = 0f32;
            for k in r * LEN..(r + 1) * LEN {
                acc += product(x[k] as u16, y[k] as u16);
                acc += product((x[k] >> 16) as u16, (y[k] >> 16) as u16);
            }
            assert_eq!(*got, acc.to_bits(), "{name}: row {r}");
        }
    }
}
