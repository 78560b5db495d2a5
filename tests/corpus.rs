//! The clang-16 corpus (tests/corpus): each kernel's PTX is launched on every engine and its
//! buffers compared bit for bit with what the same C source computes on the host, compiled
//! by g++ with tests/corpus/host.cpp. Sources, PTX and how to regenerate: tests/corpus/regen.sh.

mod common;

use common::Rng;
use common::host::{Gen, check_against_host, f32_bits, host_binary};
use ptxjit::{Dim3, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Case {
    kernel: &'static str,
    grid: Dim3,
    block: Dim3,
    args: Vec<Gen>,
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus")
}

fn dim(d: Dim3) -> String {
    format!("{},{},{}", d.x, d.y, d.z)
}

fn run_case(case: Case) {
    let ptx = std::fs::read_to_string(corpus_dir().join(format!("{}.ptx", case.kernel))).unwrap();
    // The host harness, g++ without fused multiply-add (as the PTX).
    let flags = [
        "-std=c++17",
        "-O1",
        "-ffp-contract=off",
        "-fno-strict-aliasing",
    ];
    let exe = host_binary(
        &corpus_dir(),
        "host.cpp",
        case.kernel,
        &flags,
        "corpus-host",
    );
    let mut host = Command::new(exe);
    host.arg(dim(case.grid)).arg(dim(case.block));
    check_against_host(case.kernel, &ptx, host, &case.args, &|engine, args| {
        engine.launch(case.kernel, case.grid, case.block, args)
    });
}

macro_rules! corpus_test {
    ($name:ident, $grid:expr, $block:expr, [$($arg:expr),* $(,)?]) => {
        #[test]
        fn $name() {
            run_case(Case { kernel: stringify!($name), grid: $grid, block: $block, args: vec![$($arg),*] });
        }
    };
}

fn any(r: &mut Rng, _: usize) -> u64 {
    r.next_u64()
}
fn small_f32(r: &mut Rng, _: usize) -> u64 {
    f32_bits(r.f64_in(-100.0, 100.0))
}

/// Starting values of histogram's minimum and maximum: the largest and smallest i32.
fn min_max_start(_: &mut Rng, i: usize) -> u64 {
    [0x7fff_ffff, 0x8000_0000][i]
}
/// Starting values of histogram's or, xor and and words.
fn bits_start(_: &mut Rng, i: usize) -> u64 {
    [0, 0, 0xffff_ffff][i]
}

corpus_test!(
    histogram,
    Dim3::x(3),
    Dim3::x(32),
    [
        Gen::Buf(4, 96, any),
        Gen::Zeros(4, 16),
        Gen::Zeros(8, 1),
        Gen::Buf(4, 2, min_max_start),
        Gen::Buf(4, 3, bits_start),
        Gen::Zeros(4, 1),
        Gen::Zeros(4, 1),
        Gen::Scalar(Value::s32(90)),
    ]
);
corpus_test!(
    vecadd,
    Dim3::x(3),
    Dim3::x(32),
    [
        Gen::Buf(4, 96, small_f32),
        Gen::Buf(4, 96, small_f32),
        Gen::Zeros(4, 96),
        Gen::Scalar(Value::s32(90)),
    ]
);
corpus_test!(
    saxpy,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Scalar(Value::f32(2.5)),
        Gen::Buf(4, 64, small_f32),
        Gen::Buf(4, 64, small_f32),
        Gen::Scalar(Value::u32(60)),
    ]
);
corpus_test!(
    matmul,
    Dim3::new(2, 2, 1),
    Dim3::new(8, 8, 1),
    [
        Gen::Buf(4, 144, small_f32),
        Gen::Buf(4, 144, small_f32),
        Gen::Zeros(4, 144),
        Gen::Scalar(Value::s32(12)),
    ]
);
corpus_test!(
    transpose,
    Dim3::new(2, 1, 1),
    Dim3::new(8, 8, 1),
    [
        Gen::Buf(4, 91, any),
        Gen::Zeros(4, 91),
        Gen::Scalar(Value::u32(13)),
        Gen::Scalar(Value::u32(7)),
    ]
);
corpus_test!(
    collatz,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64, |r, i| if i < 2 {
            i as u64
        } else {
            1 + r.below(100_000)
        }),
        Gen::Zeros(4, 64),
        Gen::Scalar(Value::u32(64)),
    ]
);
corpus_test!(
    bitops,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64, |r, i| match i {
            0 => 0,
            1 => u32::MAX as u64,
            2 => 1,
            _ => r.next_u64() >> (r.below(32) + 32),
        }),
        Gen::Zeros(4, 512),
    ]
);
corpus_test!(
    divrem,
    Dim3::x(1),
    Dim3::x(64),
    [
        Gen::Buf(4, 64, |r, i| if i == 0 {
            i32::MIN as u32 as u64
        } else {
            r.next_u64()
        }),
        Gen::Buf(4, 64, |r, _| {
            let v = 1 + r.below(5000) as i64;
            (if r.below(2) == 0 { -v - 1 } else { v }) as u64
        }),
        Gen::Buf(8, 64, |r, i| if i == 0 {
            i64::MIN as u64
        } else {
            r.next_u64()
        }),
        Gen::Buf(8, 64, |r, _| {
            let v = 1 + (r.next_u64() >> r.below(63)) as i64 / 2;
            (if r.below(2) == 0 { -v - 1 } else { v }) as u64
        }),
        Gen::Zeros(8, 384),
    ]
);
corpus_test!(
    fmath,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64, small_f32),
        Gen::Buf(4, 64, small_f32),
        Gen::Buf(8, 64, |r, _| r.f64_in(-1e6, 1e6).to_bits()),
        Gen::Zeros(4, 256),
        Gen::Zeros(8, 128),
    ]
);
corpus_test!(
    convert,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64, |r, _| f32_bits(r.f64_in(-2e9, 2e9))),
        Gen::Buf(8, 64, |r, _| r.f64_in(-9e18, 9e18).to_bits()),
        Gen::Buf(4, 64, any),
        Gen::Zeros(8, 512),
    ]
);
corpus_test!(
    gather,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(8, 1024, any),
        Gen::Buf(4, 64, |r, _| r.below(127)),
        Gen::Zeros(8, 64),
        Gen::Scalar(Value::u64(8)),
        Gen::Scalar(Value::u32(64)),
    ]
);
corpus_test!(
    selects,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64, |r, i| if i < 4 {
            [0, 100, 101, u32::MAX as u64][i]
        } else {
            r.next_u64() >> r.below(40)
        }),
        Gen::Buf(4, 64, |r, i| if i == 0 { 0 } else { r.next_u64() }),
        Gen::Zeros(4, 320),
    ]
);
corpus_test!(
    mulhi,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64, any),
        Gen::Buf(4, 64, |r, i| if i == 0 {
            u32::MAX as u64
        } else {
            r.next_u64()
        }),
        Gen::Zeros(8, 256),
    ]
);
corpus_test!(
    mandel,
    Dim3::new(3, 2, 1),
    Dim3::new(8, 8, 1),
    [
        Gen::Zeros(4, 24 * 16),
        Gen::Scalar(Value::u32(24)),
        Gen::Scalar(Value::u32(16)),
        Gen::Scalar(Value::s32(64)),
    ]
);
corpus_test!(
    stencil,
    Dim3::new(3, 2, 1),
    Dim3::new(8, 8, 1),
    [
        Gen::Buf(4, 20 * 12, |r, _| r.below(1000)),
        Gen::Zeros(4, 20 * 12),
        Gen::Scalar(Value::s32(20)),
        Gen::Scalar(Value::s32(12)),
    ]
);
corpus_test!(
    hash,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(1, 256, any),
        Gen::Zeros(8, 64),
        Gen::Scalar(Value::u32(12)),
    ]
);
corpus_test!(
    hash32,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 256, any),
        Gen::Zeros(4, 64),
        Gen::Scalar(Value::u32(40)),
        Gen::Scalar(Value::u32(0x9747_b28c)),
    ]
);
corpus_test!(
    reduce_local,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(1, 64 * 20, any),
        Gen::Zeros(8, 64),
        Gen::Scalar(Value::u32(20)),
    ]
);
corpus_test!(
    local_sort,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(4, 64 * 16, |r, _| r.next_u64() >> r.below(33)),
        Gen::Zeros(4, 64 * 16),
    ]
);
corpus_test!(
    u128_mul,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(8, 64, any),
        Gen::Buf(8, 64, any),
        Gen::Zeros(8, 128),
        Gen::Scalar(Value::s32(60)),
    ]
);

/// BN254's base field prime in 64-bit limbs (least significant first) and -p^-1 mod 2^64.
const BN254: [u64; 5] = [
    0x3c20_8c16_d87c_fd47,
    0x9781_6a91_6871_ca8d,
    0xb850_45b6_8181_585d,
    0x3064_4e72_e131_a029,
    0x87d2_0782_e486_6389,
];
/// Numbers below BN254's prime: the top limb below 2^61.
fn below_bn254(r: &mut Rng, i: usize) -> u64 {
    let w = r.next_u64();
    if i % 4 == 3 { w >> 3 } else { w }
}
corpus_test!(
    mont64,
    Dim3::x(2),
    Dim3::x(32),
    [
        Gen::Buf(8, 4 * 64, below_bn254),
        Gen::Zeros(8, 4 * 64),
        Gen::Buf(8, 5, |_, i| BN254[i]),
        Gen::Scalar(Value::u32(9)),
    ]
);
