//! The cooperative corpus (tests/corpus/coop): CUDA kernels whose threads work together
//! through `.shared` memory, `bar.sync` and its reductions, warp shuffles, votes, match and
//! redux, with PTX from NVIDIA's compiler (NVRTC, compute_80) checked in. Each kernel is
//! launched on every engine and its buffers compared bit for bit with what the same CUDA
//! source computes on the host: tests/corpus/coop/host.cpp, built by g++, runs each block's
//! threads as real threads with CUDA's barriers and warp intrinsics emulated
//! (host_cuda.h). The kernels are race-free, so any correct schedule gives the host's
//! results.
//!
//! Each kernel runs twice: NVRTC's optimised PTX, and its debug build (`-G`, in `debug/`),
//! where CUDA's intrinsics and the corpus' device functions are `.func`s with barriers and
//! shuffles inside (inlined into the kernel by the front end) and line information.
//!
//! Regenerating the PTX after changing a kernel: `python3 tests/corpus/coop/regen.py` (it
//! says what to pip-install); checking the host reference against a Python model of each
//! kernel: `python3 tests/corpus/coop/selftest.py`.

mod common;

use common::Rng;
use common::host::{Gen, check_against_host, f32_bits, host_binary};
use ptxjit::{Dim3, LaunchConfig, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

struct Case {
    /// The test's name (and its inputs' seed); the kernel's, unless one kernel has several
    /// launches.
    name: &'static str,
    kernel: &'static str,
    grid: Dim3,
    block: Dim3,
    /// Dynamic shared memory (`extern __shared__`) for the launch.
    shared_bytes: u32,
    args: Vec<Gen>,
}

fn coop_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/coop")
}

fn dim(d: Dim3) -> String {
    format!("{},{},{}", d.x, d.y, d.z)
}

fn run_case(case: Case) {
    // The optimised build, then the debug build (`-G`: device functions kept as calls, with
    // their barriers and shuffles, which the front end inlines; line information).
    for dir in [coop_dir(), coop_dir().join("debug")] {
        let file = dir.join(format!("{}.ptx", case.kernel));
        let ptx = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("{}: {e} (regen.py writes it)", file.display()));
        run_build(&case, &ptx);
    }
}

fn run_build(case: &Case, ptx: &str) {
    // The host reference, g++ without fused multiply-add (as the PTX, -fmad=false).
    let flags = [
        "-std=c++20",
        "-O1",
        "-pthread",
        "-ffp-contract=off",
        "-fno-strict-aliasing",
    ];
    let out_dir = format!("coop-host/{}", case.name);
    let exe = host_binary(&coop_dir(), "host.cpp", case.kernel, &flags, &out_dir);
    let mut host = Command::new(exe);
    host.arg(dim(case.grid))
        .arg(dim(case.block))
        .arg(case.shared_bytes.to_string());
    check_against_host(case.name, ptx, host, &case.args, &|engine, args| {
        let config = LaunchConfig {
            grid: case.grid,
            block: case.block,
            shared_bytes: case.shared_bytes,
        };
        engine.launch_with(case.kernel, config, args)
    });
}

macro_rules! coop_test {
    ($name:ident, $grid:expr, $block:expr, $shared:expr, [$($arg:expr),* $(,)?]) => {
        coop_test!($name = $name, $grid, $block, $shared, [$($arg),*]);
    };
    ($name:ident = $kernel:ident, $grid:expr, $block:expr, $shared:expr, [$($arg:expr),* $(,)?]) => {
        #[test]
        fn $name() {
            run_case(Case {
                name: stringify!($name),
                kernel: stringify!($kernel),
                grid: $grid,
                block: $block,
                shared_bytes: $shared,
                args: vec![$($arg),*],
            });
        }
    };
}

fn any(r: &mut Rng, _: usize) -> u64 {
    r.next_u64()
}
/// 32-bit values of every size: a random word shifted right by 0, 4, …, 28 bits.
fn mixed_u32(r: &mut Rng, _: usize) -> u64 {
    (r.next_u64() as u32 >> (4 * r.below(8))) as u64
}
fn small_f32(r: &mut Rng, _: usize) -> u64 {
    f32_bits(r.f64_in(-100.0, 100.0))
}
/// Whether element `i` of a launch of 48-thread blocks is in warp 0 of an even block or warp
/// 1 of an odd one (the warps where the vote and match inputs make the all-votes hold).
fn agreeing_warp(i: usize) -> bool {
    (i / 48 + i % 48 / 32).is_multiple_of(2)
}

coop_test!(
    reduce_sum,
    Dim3::x(4),
    Dim3::x(128),
    0,
    [
        Gen::Buf(4, 1000, any),
        Gen::Zeros(4, 4),
        Gen::Zeros(8, 1),
        Gen::Scalar(Value::u32(1000)),
    ]
);
coop_test!(
    scan_hillis,
    Dim3::x(3),
    Dim3::x(100),
    0,
    [
        Gen::Buf(4, 280, mixed_u32),
        Gen::Zeros(4, 280),
        Gen::Zeros(4, 3),
        Gen::Scalar(Value::u32(280)),
    ]
);
coop_test!(
    scan_blelloch,
    Dim3::x(3),
    Dim3::x(64),
    0,
    [
        Gen::Buf(8, 300, |r, _| r.next_u64() >> (8 * r.below(8))),
        Gen::Zeros(8, 300),
        Gen::Zeros(8, 3),
        Gen::Scalar(Value::u32(300)),
    ]
);
coop_test!(
    matmul_tiled,
    Dim3::new(2, 3, 1),
    Dim3::new(16, 16, 1),
    0,
    [
        Gen::Buf(4, 40 * 36, small_f32),
        Gen::Buf(4, 36 * 24, small_f32),
        Gen::Zeros(4, 40 * 24),
        Gen::Scalar(Value::s32(40)),
        Gen::Scalar(Value::s32(24)),
        Gen::Scalar(Value::s32(36)),
    ]
);
coop_test!(
    histogram_shared,
    Dim3::x(3),
    Dim3::x(48),
    0,
    [
        Gen::Buf(4, 1000, |r, _| r.next_u64() >> (32 + r.below(24))),
        Gen::Zeros(4, 64),
        Gen::Zeros(4, 3),
        Gen::Zeros(4, 1),
        Gen::Scalar(Value::u32(1000)),
    ]
);
coop_test!(
    transpose_tiled,
    Dim3::new(3, 2, 1),
    Dim3::new(32, 8, 1),
    0,
    [
        Gen::Buf(4, 70 * 45, any),
        Gen::Zeros(4, 70 * 45),
        Gen::Scalar(Value::u32(70)),
        Gen::Scalar(Value::u32(45)),
    ]
);
coop_test!(
    dyn_shared,
    Dim3::x(3),
    Dim3::x(100),
    250 * 8,
    [
        Gen::Buf(8, 700, any),
        Gen::Zeros(8, 700),
        Gen::Zeros(4, 3),
        Gen::Scalar(Value::u32(250)),
        Gen::Scalar(Value::u32(700)),
    ]
);
coop_test!(
    dyn_shared_small = dyn_shared,
    Dim3::x(4),
    Dim3::x(100),
    40 * 8,
    [
        Gen::Buf(8, 150, any),
        Gen::Zeros(8, 150),
        Gen::Zeros(4, 4),
        Gen::Scalar(Value::u32(40)),
        Gen::Scalar(Value::u32(150)),
    ]
);
coop_test!(
    shfl_reduce,
    Dim3::x(2),
    Dim3::x(48),
    0,
    [
        Gen::Buf(4, 96, any),
        Gen::Buf(8, 96, |r, _| r.f64_in(-1e6, 1e6).to_bits()),
        Gen::Zeros(4, 4 * 96),
        Gen::Zeros(8, 96),
        Gen::Zeros(8, 96),
    ]
);
coop_test!(
    shfl_scan,
    Dim3::x(2),
    Dim3::new(16, 5, 1),
    0,
    [Gen::Buf(4, 160, mixed_u32), Gen::Zeros(4, 7 * 160)]
);
coop_test!(
    vote,
    Dim3::x(2),
    Dim3::x(48),
    0,
    [
        Gen::Buf(4, 96, |r, i| {
            let v = r.next_u64() as u32 as u64;
            v + (agreeing_warp(i) && v.is_multiple_of(16)) as u64
        }),
        Gen::Zeros(4, 8 * 96),
        Gen::Scalar(Value::u32(90)),
    ]
);
coop_test!(
    sync_count,
    Dim3::x(3),
    Dim3::x(100),
    0,
    [
        Gen::Buf(4, 280, |r, i| match i {
            20 => u32::MAX as u64,
            150 => 0,
            _ => (r.next_u64() as u32 | 1 << r.below(32)) as u64,
        }),
        Gen::Zeros(4, 4 * 300),
        Gen::Scalar(Value::u32(280)),
    ]
);
coop_test!(
    odd_even_sort,
    Dim3::x(3),
    Dim3::x(50),
    0,
    [
        Gen::Buf(4, 280, |r, _| if r.below(4) == 0 {
            r.below(5)
        } else {
            (r.next_u64() as i32 >> (8 * r.below(4))) as u32 as u64
        }),
        Gen::Zeros(4, 280),
        Gen::Zeros(4, 3),
        Gen::Scalar(Value::u32(280)),
    ]
);
coop_test!(
    smooth,
    Dim3::x(2),
    Dim3::x(96),
    0,
    [
        Gen::Buf(4, 180, small_f32),
        Gen::Zeros(4, 180),
        Gen::Scalar(Value::s32(9)),
        Gen::Scalar(Value::u32(180)),
    ]
);
coop_test!(
    spin_lock,
    Dim3::x(2),
    Dim3::x(100),
    0,
    [
        Gen::Buf(4, 2 * 100 * 3, any),
        Gen::Zeros(8, 3 * 2),
        Gen::Scalar(Value::u32(3)),
    ]
);
coop_test!(
    warp_lock,
    Dim3::x(3),
    Dim3::x(100),
    0,
    [
        Gen::Buf(8, 3 * 100 * 4, |r, _| r.next_u64() >> (8 * r.below(8))),
        Gen::Zeros(8, 2 * 3),
        Gen::Scalar(Value::u32(4)),
    ]
);
coop_test!(
    redux,
    Dim3::x(2),
    Dim3::x(48),
    0,
    [Gen::Buf(4, 96, any), Gen::Zeros(4, 9 * 96)]
);
coop_test!(
    match_sync,
    Dim3::x(2),
    Dim3::x(48),
    0,
    [
        Gen::Buf(4, 96, |r, i| if agreeing_warp(i) {
            r.below(256) | 0x0123_4500
        } else {
            r.next_u64() as u32 as u64
        }),
        Gen::Buf(8, 96, |r, i| {
            let k = r.below(4) << 62 | r.below(3);
            if agreeing_warp(i) {
                k & ((1 << 40) - 1) | 0xabc << 40
            } else {
                k
            }
        }),
        Gen::Zeros(4, 6 * 96),
        Gen::Scalar(Value::u32(90)),
    ]
);
coop_test!(
    warp_sum,
    Dim3::x(3),
    Dim3::x(64),
    0,
    [
        Gen::Buf(4, 180, any),
        Gen::Zeros(4, 6),
        Gen::Scalar(Value::u32(180)),
    ]
);
coop_test!(
    noinline_sync,
    Dim3::x(2),
    Dim3::x(128),
    0,
    [
        Gen::Buf(4, 256, any),
        Gen::Zeros(4, 256),
        Gen::Scalar(Value::u32(3)),
    ]
);
