//! The benchmark summary: every workload on the JIT (memory checks on and off), the
//! interpreter and native baselines, measured in one run, in under a minute. Prints a table
//! of ns per operation with ratios, and one machine-readable line per measurement:
//! `RESULT workload=<name> impl=<jit|jit-unchecked|interp|rust|num-bigint|gmp|rayon|g++> ns=<float>`
//! (names like `mul256_u32_kernel`; `interp_mandel` and the other corpus kernels give the
//! interpreter's ns per PTX instruction, counted by `Interpreter::executed`).
//!
//! cargo run --release --example bench_table [--features gmp]

#[path = "../benches/workloads/mod.rs"]
mod workloads;

use num_bigint::BigUint;
use ptxjit::generate::Rng;
use ptxjit::{Arg, Dim3, Engine, Interpreter, Module, Value};
use rayon::prelude::*;
use std::hint::black_box;
use std::time::Instant;
use workloads::{Workload, jit, launch, rust_one, saxpy_launch, saxpy_native};

/// Best of seven timings of `f`, in ns per operation (`ops` operations a run): the minimum
/// filters out the moments a shared machine is busy with something else.
fn time(ops: u64, mut f: impl FnMut()) -> f64 {
    (0..7)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e9 / ops as f64
        })
        .fold(f64::MAX, f64::min)
}

struct Table {
    rows: Vec<(String, String, f64)>,
}

impl Table {
    fn add(&mut self, workload: &str, imp: &str, ns: f64) {
        // One token per field: spaces in a workload's name become underscores.
        let key = workload.replace(' ', "_");
        println!("RESULT workload={key} impl={imp} ns={ns:.3}");
        self.rows.push((workload.into(), imp.into(), ns));
    }
    fn get(&self, workload: &str, imp: &str) -> Option<f64> {
        self.rows
            .iter()
            .find(|(w, i, _)| w == workload && i == imp)
            .map(|r| r.2)
    }
}

fn random_bytes(rng: &mut Rng, n: usize) -> Vec<u8> {
    (0..n).map(|_| rng.next_u64() as u8).collect()
}

/// Operands reduced below the modulus (Montgomery inputs must be).
fn operands(w: &Workload, rng: &mut Rng, count: usize) -> Vec<u8> {
    let mut v = random_bytes(rng, count * w.in_bytes());
    if let Some(p) = &w.modulus {
        let p = BigUint::from_slice(p);
        for chunk in v.chunks_mut(w.in_bytes()) {
            let x = BigUint::from_bytes_le(chunk) % &p;
            let mut b = x.to_bytes_le();
            b.resize(w.in_bytes(), 0);
            chunk.copy_from_slice(&b);
        }
    }
    v
}

fn bignum(w: &Workload, t: &mut Table, rng: &mut Rng) {
    let ptx = workloads::ptx(w);
    let (checked, unchecked) = (jit(&ptx, true), jit(&ptx, false));
    let interp = Interpreter::new(Module::parse(&ptx).unwrap());
    let count = 1 << 15;
    let (mut a, mut b) = (operands(w, rng, count), operands(w, rng, count));
    let mut out = vec![0u8; count * w.out_bytes()];
    // Correctness first: the JIT's results against the Rust baseline.
    launch(&unchecked, w, &mut a, &mut b, &mut out, count);
    let mut want = vec![0u8; w.out_bytes()];
    for i in 0..count {
        let ib = w.in_bytes();
        rust_one(
            w,
            &a[i * ib..(i + 1) * ib],
            &b[i * ib..(i + 1) * ib],
            &mut want,
        );
        assert_eq!(
            &out[i * w.out_bytes()..(i + 1) * w.out_bytes()],
            &want[..],
            "{} operand {i}",
            w.name
        );
    }
    // Throughput over all cores.
    let kernel = format!("{} kernel", w.name);
    for (imp, e) in [("jit", &checked), ("jit-unchecked", &unchecked)] {
        let ns = time(count as u64, || {
            launch(e, w, &mut a, &mut b, &mut out, count)
        });
        t.add(&kernel, imp, ns);
    }
    let small = 1024;
    let ib = w.in_bytes();
    let ns = time(small as u64, || {
        launch(
            &interp,
            w,
            &mut a[..small * ib],
            &mut b[..small * ib],
            &mut out[..small * w.out_bytes()],
            small,
        )
    });
    t.add(&kernel, "interp", ns);
    let instructions = workloads::kernel_instructions(w) as f64;
    let per_core = instructions / (ns * 1e-9) / rayon::current_num_threads() as f64;
    println!(
        "  interpreter: {instructions} PTX instructions per thread, {:.1}M instructions/s per core",
        per_core / 1e6
    );
    let ob = w.out_bytes();
    let ns = time(count as u64, || {
        out.par_chunks_mut(ob)
            .enumerate()
            .for_each(|(i, o)| rust_one(w, &a[i * ib..(i + 1) * ib], &b[i * ib..(i + 1) * ib], o))
    });
    t.add(&kernel, "rust", ns);

    // Latency of one host call of the .func.
    let func = format!("{} call", w.name);
    let calls = 200_000u64;
    let (x, y) = (a[..ib].to_vec(), b[..ib].to_vec());
    for (imp, j) in [("jit", &checked), ("jit-unchecked", &unchecked)] {
        let raw = j.raw_func(w.name).expect("the .func has a wrapper");
        // SAFETY: `(.param .b8 r[OUT]) f(.param .b8 a[IN], .param .b8 b[IN])` is, by the
        // wrapper mapping (jit::host), `extern "C" fn(out, a, b)` with byte pointers; the
        // buffers have those sizes and `j` outlives the calls.
        let f: extern "C" fn(*mut u8, *const u8, *const u8) = unsafe { std::mem::transmute(raw) };
        let mut r = vec![0u8; ob];
        let ns = time(calls, || {
            for _ in 0..calls {
                f(
                    black_box(r.as_mut_ptr()),
                    black_box(x.as_ptr()),
                    black_box(y.as_ptr()),
                );
            }
        });
        assert_eq!(&r[..], &out[..ob]);
        t.add(&func, imp, ns);
    }
    let mut r = vec![0u8; ob];
    let ns = time(calls, || {
        for _ in 0..calls {
            rust_one(w, black_box(&x), black_box(&y), black_box(&mut r));
        }
    });
    t.add(&func, "rust", ns);
    #[cfg(feature = "gmp")]
    if w.modulus.is_none() {
        // GMP's mpn_mul_n on the same operands as 64-bit limbs.
        let limbs = |v: &[u8]| -> Vec<u64> {
            v.chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        let (gx, gy) = (limbs(&x), limbs(&y));
        let mut gr = vec![0u64; 2 * gx.len()];
        let ns = time(calls, || {
            for _ in 0..calls {
                // SAFETY: rp holds 2n limbs, s1p and s2p n limbs each, and rp overlaps
                // neither, as mpn_mul_n requires.
                unsafe {
                    gmp_mpfr_sys::gmp::mpn_mul_n(
                        black_box(gr.as_mut_ptr()),
                        black_box(gx.as_ptr()),
                        black_box(gy.as_ptr()),
                        gx.len() as gmp_mpfr_sys::gmp::size_t,
                    )
                }
            }
        });
        let got: Vec<u8> = gr.iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(&got[..], &out[..ob], "GMP agrees");
        t.add(&func, "gmp", ns);
    }
    if w.modulus.is_none() {
        let (bx, by) = (BigUint::from_bytes_le(&x), BigUint::from_bytes_le(&y));
        let ns = time(calls, || {
            for _ in 0..calls {
                black_box(black_box(&bx) * black_box(&by));
            }
        });
        t.add(&func, "num-bigint", ns);
    }
}

fn streaming(t: &mut Table) {
    let n: usize = 1 << 24;
    let ptx = workloads::SAXPY_PTX;
    let (checked, unchecked) = (jit(ptx, true), jit(ptx, false));
    let interp = Interpreter::new(Module::parse(ptx).unwrap());
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut yb = vec![0u8; 4 * n];
    let name = "saxpy 16M";
    for (imp, e) in [("jit", &checked), ("jit-unchecked", &unchecked)] {
        let ns = time(n as u64, || saxpy_launch(e, &mut xb, &mut yb, n));
        t.add(name, imp, ns);
    }
    let small = 1 << 16;
    let ns = time(small as u64, || {
        saxpy_launch(&interp, &mut xb[..4 * small], &mut yb[..4 * small], small)
    });
    t.add(name, "interp", ns);
    let mut y = vec![0f32; n];
    let ns = time(n as u64, || {
        y.par_chunks_mut(1 << 14)
            .zip(x.par_chunks(1 << 14))
            .for_each(|(y, x)| saxpy_native(2.0, x, y))
    });
    t.add(name, "rayon", ns);
}

/// Best of `runs` timings (for the heavy cooperative workloads).
fn time_runs(runs: usize, ops: u64, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e9 / ops as f64
        })
        .fold(f64::MAX, f64::min)
}

/// Best of `runs` timings of each of `fs`, taken in turn (one of each, then again), so that
/// all see the same moments of a shared machine and their ratios hold when its speed moves.
fn time_alternately<const N: usize>(
    runs: usize,
    ops: u64,
    mut fs: [&mut dyn FnMut(); N],
) -> [f64; N] {
    let mut best = [f64::MAX; N];
    for _ in 0..runs {
        for (b, f) in best.iter_mut().zip(fs.iter_mut()) {
            *b = b.min(time_runs(1, ops, &mut *f));
        }
    }
    best
}

/// Adds the rows of one cooperative workload: the checked JIT, the unchecked JIT and Rust
/// (`[checked, unchecked, rust]`) timed in turn over `ops` operations, the interpreter alone
/// over `interp_ops`.
fn add_cooperative(
    t: &mut Table,
    name: &str,
    ops: u64,
    jit_and_rust: [&mut dyn FnMut(); 3],
    interp_ops: u64,
    interp: impl FnMut(),
) {
    let [c, u, r] = time_alternately(5, ops, jit_and_rust);
    let i = time_runs(3, interp_ops, interp);
    for (imp, ns) in [("jit", c), ("jit-unchecked", u), ("interp", i), ("rust", r)] {
        t.add(name, imp, ns);
    }
}

/// The little-endian bytes of `v`.
fn u32s(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn words(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Cooperative kernels (the NVRTC corpus' `reduce_sum`, `matmul_tiled` and `warp_sum`, and
/// a barrier loop) against the same algorithms in Rust over rayon: the tree reduction of
/// each 512-element chunk through a 256-word scratch, the 16×16-tiled product, the
/// down-shuffle tree of each warp. Each result is checked against Rust's first.
fn cooperative(t: &mut Table, rng: &mut Rng) {
    // Barriers: 16,384 threads in blocks of 256 pass 200 barriers each.
    let ptx = include_str!("../benches/workloads/barriers.ptx");
    let (checked, unchecked) = (jit(ptx, true), jit(ptx, false));
    let interp = Interpreter::new(Module::parse(ptx).unwrap());
    let (grid, block, passes) = (64u32, 256u32, 200u32);
    for (imp, e, grid) in [
        ("jit", &checked as &dyn Engine, grid),
        ("jit-unchecked", &unchecked, grid),
        ("interp", &interp, 4),
    ] {
        let mut out = vec![0u8; 4];
        let ns = time_runs(3, (grid * block * passes) as u64, || {
            e.launch(
                "barriers",
                Dim3::x(grid),
                Dim3::x(block),
                &mut [Arg::Buffer(&mut out), Arg::Scalar(Value::u32(passes))],
            )
            .expect("barriers run")
        });
        t.add("bar.sync per thread", imp, ns);
    }

    // Tree reduction in shared memory of 16M u32 (1M for the interpreter).
    let ptx = include_str!("../tests/corpus/coop/reduce_sum.ptx");
    let (checked, unchecked) = (jit(ptx, true), jit(ptx, false));
    let interp = Interpreter::new(Module::parse(ptx).unwrap());
    let n = 1usize << 24;
    let input: Vec<u32> = (0..n).map(|_| rng.next_u64() as u32).collect();
    // Each block's sum is a u32 (it wraps); the total adds them up in 64 bits.
    let rust_reduce = |input: &[u32]| -> u64 {
        input
            .par_chunks(512)
            .map(|c| {
                let mut s = [0u32; 256];
                for (k, v) in s.iter_mut().enumerate() {
                    *v = c[k].wrapping_add(c[k + 256]);
                }
                let mut half = 128;
                while half > 0 {
                    for k in 0..half {
                        s[k] = s[k].wrapping_add(s[k + half]);
                    }
                    half /= 2;
                }
                s[0] as u64
            })
            .sum()
    };
    let (mut on_checked, mut on_unchecked) = (
        reduce_on(&checked, &input, n),
        reduce_on(&unchecked, &input, n),
    );
    let mut on_interp = reduce_on(&interp, &input, n >> 4);
    let want = rust_reduce(&input);
    assert_eq!(on_checked(), want, "jit: reduce_sum");
    assert_eq!(on_unchecked(), want, "jit-unchecked: reduce_sum");
    let want = rust_reduce(&input[..n >> 4]);
    assert_eq!(on_interp(), want, "interp: reduce_sum");
    add_cooperative(
        t,
        "shared reduce 16M",
        n as u64,
        [
            &mut || {
                black_box(on_checked());
            },
            &mut || {
                black_box(on_unchecked());
            },
            &mut || {
                black_box(rust_reduce(black_box(&input)));
            },
        ],
        (n >> 4) as u64,
        || {
            black_box(on_interp());
        },
    );

    // Tiled 512×512 f32 product (128×128 for the interpreter), ns per multiply-add.
    let ptx = include_str!("../tests/corpus/coop/matmul_tiled.ptx");
    let (checked, unchecked) = (jit(ptx, true), jit(ptx, false));
    let interp = Interpreter::new(Module::parse(ptx).unwrap());
    let m = 512usize;
    let a: Vec<f32> = (0..m * m).map(|i| (i % 13) as f32 - 6.0).collect();
    let b: Vec<f32> = (0..m * m).map(|i| (i % 7) as f32 * 0.5).collect();
    let rust_tiled = |m: usize| -> Vec<f32> {
        let mut c = vec![0f32; m * m];
        c.par_chunks_mut(16 * m).enumerate().for_each(|(bi, rows)| {
            for bj in 0..m / 16 {
                let mut acc = [[0f32; 16]; 16];
                for k0 in (0..m).step_by(16) {
                    let mut ta = [[0f32; 16]; 16];
                    let mut tb = [[0f32; 16]; 16];
                    for y in 0..16 {
                        for x in 0..16 {
                            ta[y][x] = a[(bi * 16 + y) * m + k0 + x];
                            tb[y][x] = b[(k0 + y) * m + bj * 16 + x];
                        }
                    }
                    for y in 0..16 {
                        for x in 0..16 {
                            for j in 0..16 {
                                acc[y][x] += ta[y][j] * tb[j][x];
                            }
                        }
                    }
                }
                for y in 0..16 {
                    rows[y * m + bj * 16..y * m + bj * 16 + 16].copy_from_slice(&acc[y]);
                }
            }
        });
        c
    };
    let (mut on_checked, mut on_unchecked) = (
        matmul_on(&checked, &a, &b, m),
        matmul_on(&unchecked, &a, &b, m),
    );
    // The interpreter multiplies the first 128×128 words of each (a product of its own).
    let mut on_interp = matmul_on(&interp, &a, &b, 128);
    let want = words_of(&rust_tiled(m));
    assert_eq!(on_checked(true), want, "jit: matmul_tiled");
    assert_eq!(on_unchecked(true), want, "jit-unchecked: matmul_tiled");
    let want = words_of(&rust_tiled(128));
    assert_eq!(on_interp(true), want, "interp: matmul_tiled");
    add_cooperative(
        t,
        "tiled matmul 512",
        (m * m * m) as u64,
        [
            &mut || {
                black_box(on_checked(false));
            },
            &mut || {
                black_box(on_unchecked(false));
            },
            &mut || {
                black_box(rust_tiled(m));
            },
        ],
        128 * 128 * 128,
        || {
            black_box(on_interp(false));
        },
    );

    // Warp-shuffle reduction of 4M u32 (256K for the interpreter), ns per element.
    let ptx = include_str!("../tests/corpus/coop/warp_sum.ptx");
    let (checked, unchecked) = (jit(ptx, true), jit(ptx, false));
    let interp = Interpreter::new(Module::parse(ptx).unwrap());
    let n = 1usize << 22;
    let rust_warps = |input: &[u32]| -> Vec<u32> {
        input
            .par_chunks(32)
            .map(|w| {
                let mut v = [0u32; 32];
                v.copy_from_slice(w);
                let mut d = 16;
                while d > 0 {
                    // Lane l reads lane l + d (its own value past the warp, as shfl's clamp).
                    let before = v;
                    for l in 0..32 {
                        let src = if l + d < 32 { before[l + d] } else { before[l] };
                        v[l] = v[l].wrapping_add(src);
                    }
                    d /= 2;
                }
                v[0]
            })
            .collect()
    };
    let (mut on_checked, mut on_unchecked) = (
        warps_on(&checked, &input, n),
        warps_on(&unchecked, &input, n),
    );
    let mut on_interp = warps_on(&interp, &input, n >> 4);
    let want = rust_warps(&input[..n]);
    assert_eq!(on_checked(true), want, "jit: warp_sum");
    assert_eq!(on_unchecked(true), want, "jit-unchecked: warp_sum");
    assert_eq!(on_interp(true), want[..(n >> 4) / 32], "interp: warp_sum");
    add_cooperative(
        t,
        "warp shuffle sum 4M",
        n as u64,
        [
            &mut || {
                black_box(on_checked(false));
            },
            &mut || {
                black_box(on_unchecked(false));
            },
            &mut || {
                black_box(rust_warps(&input[..n]));
            },
        ],
        (n >> 4) as u64,
        || {
            black_box(on_interp(false));
        },
    );
}

/// A launch of `reduce_sum` over the first `n` words of `input` on `e`, giving the total.
fn reduce_on<'a>(e: &'a dyn Engine, input: &[u32], n: usize) -> impl FnMut() -> u64 + 'a {
    let mut inb = u32s(&input[..n]);
    let blocks = n / 512;
    let (mut sums, mut total) = (vec![0u8; 4 * blocks], vec![0u8; 8]);
    move || -> u64 {
        total.fill(0);
        e.launch(
            "reduce_sum",
            Dim3::x(blocks as u32),
            Dim3::x(256),
            &mut [
                Arg::Buffer(&mut inb),
                Arg::Buffer(&mut sums),
                Arg::Buffer(&mut total),
                Arg::Scalar(Value::u32(n as u32)),
            ],
        )
        .expect("reduce_sum runs");
        u64::from_le_bytes(total[..8].try_into().unwrap())
    }
}

/// A launch of `matmul_tiled` on the first `m`×`m` of `a` and `b` on `e`, giving the
/// product's words when asked to `read` them (timed launches are not).
fn matmul_on<'a>(
    e: &'a dyn Engine,
    a: &[f32],
    b: &[f32],
    m: usize,
) -> impl FnMut(bool) -> Vec<u32> + 'a {
    let (mut ab, mut bb) = (u32s(&words_of(&a[..m * m])), u32s(&words_of(&b[..m * m])));
    let mut c = vec![0u8; 4 * m * m];
    move |read| -> Vec<u32> {
        let k = m as i32;
        e.launch(
            "matmul_tiled",
            Dim3::new((m / 16) as u32, (m / 16) as u32, 1),
            Dim3::new(16, 16, 1),
            &mut [
                Arg::Buffer(&mut ab),
                Arg::Buffer(&mut bb),
                Arg::Buffer(&mut c),
                Arg::Scalar(Value::s32(k)),
                Arg::Scalar(Value::s32(k)),
                Arg::Scalar(Value::s32(k)),
            ],
        )
        .expect("matmul_tiled runs");
        if read { words(&c) } else { Vec::new() }
    }
}

/// A launch of `warp_sum` over the first `n` words of `input` on `e`, giving each warp's sum
/// when asked to `read` them (timed launches are not).
fn warps_on<'a>(e: &'a dyn Engine, input: &[u32], n: usize) -> impl FnMut(bool) -> Vec<u32> + 'a {
    let mut inb = u32s(&input[..n]);
    let mut sums = vec![0u8; 4 * (n / 32)];
    move |read| -> Vec<u32> {
        e.launch(
            "warp_sum",
            Dim3::x((n / 256) as u32),
            Dim3::x(256),
            &mut [
                Arg::Buffer(&mut inb),
                Arg::Buffer(&mut sums),
                Arg::Scalar(Value::u32(n as u32)),
            ],
        )
        .expect("warp_sum runs");
        if read { words(&sums) } else { Vec::new() }
    }
}

fn words_of(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Interpreter throughput on corpus kernels with loops, branches, calls and memory, counted
/// by the interpreter itself (`Interpreter::executed`): ns per PTX instruction, and the rate
/// per core.
fn interpreter_rate(t: &mut Table) {
    let starts: Vec<u32> = (0..1024u32).map(|i| 27 + 7 * i).collect();
    let matrix: Vec<u32> = (0..32 * 32u32)
        .map(|i| ((i % 7) as f32).to_bits())
        .collect();
    // (kernel file, name, grid, block, buffers then scalars as Args)
    type Case = (
        &'static str,
        &'static str,
        Dim3,
        Dim3,
        Vec<Vec<u8>>,
        Vec<Value>,
    );
    let cases: Vec<Case> = vec![
        (
            include_str!("../tests/corpus/mandel.ptx"),
            "mandel",
            Dim3 { x: 4, y: 4, z: 1 },
            Dim3 { x: 16, y: 16, z: 1 },
            vec![vec![0; 4 * 64 * 64]],
            vec![Value::u32(64), Value::u32(64), Value::u32(100)],
        ),
        (
            include_str!("../tests/corpus/matmul.ptx"),
            "matmul",
            Dim3 { x: 2, y: 2, z: 1 },
            Dim3 { x: 16, y: 16, z: 1 },
            vec![u32s(&matrix), u32s(&matrix), vec![0; 4 * 32 * 32]],
            vec![Value::u32(32)],
        ),
        (
            include_str!("../tests/corpus/collatz.ptx"),
            "collatz",
            Dim3::x(8),
            Dim3::x(128),
            vec![u32s(&starts), vec![0; 4 * 1024]],
            vec![Value::u32(1024)],
        ),
        (
            include_str!("../tests/corpus/hash.ptx"),
            "hash",
            Dim3::x(8),
            Dim3::x(128),
            vec![(0..=255u8).collect(), vec![0; 8 * 1024]],
            vec![Value::u32(64)],
        ),
    ];
    for (ptx, name, grid, block, mut buffers, scalars) in cases {
        let interp = Interpreter::new(Module::parse(ptx).expect("corpus PTX parses"));
        let mut run = || {
            let mut args: Vec<Arg> = buffers.iter_mut().map(|b| Arg::Buffer(b)).collect();
            args.extend(scalars.iter().map(|v| Arg::Scalar(*v)));
            interp
                .launch(name, grid, block, &mut args)
                .expect("corpus kernel runs")
        };
        run();
        let per_launch = interp.executed();
        let ns = time(per_launch, run);
        t.add(&format!("interp {name}"), "interp", ns);
        println!(
            "  interpreter: {name}, {per_launch} PTX instructions a launch, {:.1}M instructions/s per core",
            1e3 / ns / rayon::current_num_threads() as f64
        );
    }
}

/// A buffer or scalar argument of a same-source kernel.
enum SameArg {
    Buf(Vec<u8>),
    U32(u32),
}

/// Same-source rows: corpus kernels (their C source compiled by clang-16 into the PTX the JIT
/// runs) against the same source compiled for the host by g++ -O2
/// (benches/same_source_host.cpp), ns per thread. The host program runs the grid on one
/// thread, so compare at one core (`RAYON_NUM_THREADS=1`). Skipped, with a note, when g++
/// cannot build it.
fn same_source(t: &mut Table, rng: &mut Rng) {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("ptxjit-same-source-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let table: Vec<u8> = random_bytes(rng, 4 * 256);
    // Floats in [-1, 1): products and sums of them stay normal.
    let floats = |rng: &mut Rng, n: usize| -> Vec<u8> {
        (0..n)
            .flat_map(|_| ((rng.next_u64() >> 40) as f32 / (1u64 << 23) as f32 - 1.0).to_le_bytes())
            .collect()
    };
    // Numbers below BN254's base field prime (the top limb below 2^61), the prime and
    // -p^-1 mod 2^64.
    let below_p: Vec<u8> = (0..4 * 16384)
        .flat_map(|i| {
            let w = rng.next_u64();
            (if i % 4 == 3 { w >> 3 } else { w }).to_le_bytes()
        })
        .collect();
    let bn254: Vec<u8> = [
        0x3c20_8c16_d87c_fd47u64,
        0x9781_6a91_6871_ca8d,
        0xb850_45b6_8181_585d,
        0x3064_4e72_e131_a029,
        0x87d2_0782_e486_6389,
    ]
    .iter()
    .flat_map(|w| w.to_le_bytes())
    .collect();
    let (n, side) = (128u32, 16384usize);
    let cases: Vec<(&str, &str, Dim3, Dim3, Vec<SameArg>)> = vec![
        (
            "hash32",
            include_str!("../tests/corpus/hash32.ptx"),
            Dim3::x(64),
            Dim3::x(256),
            vec![
                SameArg::Buf(table.clone()),
                SameArg::Buf(vec![0; 4 * 16384]),
                SameArg::U32(256),
                SameArg::U32(0x9747_b28c),
            ],
        ),
        (
            "hash",
            include_str!("../tests/corpus/hash.ptx"),
            Dim3::x(64),
            Dim3::x(256),
            vec![
                SameArg::Buf(table[..256].to_vec()),
                SameArg::Buf(vec![0; 8 * 16384]),
                SameArg::U32(64),
            ],
        ),
        (
            "mandel",
            include_str!("../tests/corpus/mandel.ptx"),
            Dim3::new(8, 8, 1),
            Dim3::new(32, 8, 1),
            vec![
                SameArg::Buf(vec![0; 4 * 256 * 64]),
                SameArg::U32(256),
                SameArg::U32(64),
                SameArg::U32(256),
            ],
        ),
        (
            "matmul",
            include_str!("../tests/corpus/matmul.ptx"),
            Dim3::new(n / 32, n / 8, 1),
            Dim3::new(32, 8, 1),
            vec![
                SameArg::Buf(floats(rng, side)),
                SameArg::Buf(floats(rng, side)),
                SameArg::Buf(vec![0; 4 * side]),
                SameArg::U32(n),
            ],
        ),
        (
            "mont64",
            include_str!("../tests/corpus/mont64.ptx"),
            Dim3::x(64),
            Dim3::x(256),
            vec![
                SameArg::Buf(below_p),
                SameArg::Buf(vec![0; 32 * 16384]),
                SameArg::Buf(bn254),
                SameArg::U32(16),
            ],
        ),
    ];
    for (kernel, ptx, grid, block, args) in cases {
        let threads = (grid.x * grid.y * block.x * block.y) as usize;
        let name = format!("{kernel} same-source");
        let exe = dir.join(kernel);
        let built = std::process::Command::new("g++")
            .current_dir(root)
            .args([
                "-std=c++17",
                "-O2",
                "-ffp-contract=off",
                "-I",
                "tests/corpus",
            ])
            .arg(format!("-DKERNEL_FILE=\"{kernel}.cu\""))
            .arg(format!("-DKERNEL_NAME={kernel}"))
            .arg("benches/same_source_host.cpp")
            .arg("-o")
            .arg(&exe)
            .output();
        match built {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                println!(
                    "  {name}: skipped, g++ failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                continue;
            }
            Err(e) => {
                println!("  {name}: skipped, no g++ ({e})");
                continue;
            }
        }
        // The host program: inputs from files, outputs back into files.
        let mut host = std::process::Command::new(&exe);
        host.arg(format!("{},{}", grid.x, grid.y))
            .arg(format!("{},{}", block.x, block.y))
            .arg("7");
        for (k, a) in args.iter().enumerate() {
            match a {
                SameArg::Buf(b) => {
                    let (inp, out) = (dir.join(format!("in{k}")), dir.join(format!("out{k}")));
                    std::fs::write(&inp, b).expect("writes the input");
                    host.arg(format!("{}:{}", inp.display(), out.display()));
                }
                SameArg::U32(v) => {
                    host.arg(v.to_string());
                }
            }
        }
        let out = host.output().expect("the host program runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let ns: f64 = text
            .trim()
            .strip_prefix("ns_per_thread=")
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name}: host program said {text:?}"));
        let host_out: Vec<Option<Vec<u8>>> = (0..args.len())
            .map(|k| std::fs::read(dir.join(format!("out{k}"))).ok())
            .collect();
        for (imp, checked) in [("jit", true), ("jit-unchecked", false)] {
            let e = jit(ptx, checked);
            let mut bufs: Vec<Vec<u8>> = args
                .iter()
                .filter_map(|a| match a {
                    SameArg::Buf(b) => Some(b.clone()),
                    SameArg::U32(_) => None,
                })
                .collect();
            let run = |bufs: &mut Vec<Vec<u8>>| {
                let mut it = bufs.iter_mut();
                let mut launch_args: Vec<Arg> = args
                    .iter()
                    .map(|a| match a {
                        SameArg::Buf(_) => Arg::Buffer(it.next().expect("a buffer")),
                        SameArg::U32(v) => Arg::Scalar(Value::u32(*v)),
                    })
                    .collect();
                e.launch(kernel, grid, block, &mut launch_args)
                    .expect("corpus kernel runs")
            };
            run(&mut bufs);
            // The JIT's buffers against the host's, bit for bit.
            let mut b = bufs.iter();
            for (k, a) in args.iter().enumerate() {
                if let SameArg::Buf(_) = a {
                    let got = b.next().expect("a buffer");
                    assert_eq!(Some(got), host_out[k].as_ref(), "{name}: {imp} buffer {k}");
                }
            }
            let ns = time(threads as u64, || run(&mut bufs));
            t.add(&name, imp, ns);
        }
        t.add(&name, "g++", ns);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn main() {
    let started = Instant::now();
    let mut t = Table { rows: Vec::new() };
    let mut rng = Rng::new(8);
    // `bench_table [GROUP ...]` runs only the named groups of rows (all without names).
    let groups: Vec<String> = std::env::args().skip(1).collect();
    let wanted = |g: &str| groups.is_empty() || groups.iter().any(|w| w == g);
    if wanted("bignum") {
        for w in workloads::all() {
            bignum(&w, &mut t, &mut rng);
        }
    }
    if wanted("streaming") {
        streaming(&mut t);
    }
    if wanted("cooperative") {
        cooperative(&mut t, &mut rng);
    }
    if wanted("interpreter") {
        interpreter_rate(&mut t);
    }
    if wanted("same-source") {
        same_source(&mut t, &mut rng);
    }
    let mut names: Vec<String> = t
        .rows
        .iter()
        .map(|r| r.0.clone())
        .filter(|n| !n.starts_with("interp "))
        .collect();
    names.dedup();
    println!(
        "\n{:<22} {:>10} {:>14} {:>10} {:>12} {:>11} {:>9}",
        "workload", "jit ns", "unchecked ns", "interp ns", "native ns", "native/jit", "interp/jit"
    );
    for name in names {
        let get = |i: &str| t.get(&name, i);
        let native = get("rust").or(get("rayon")).or(get("g++"));
        let jit = get("jit-unchecked");
        let show = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        println!(
            "{name:<22} {:>10} {:>14} {:>10} {:>12} {:>11} {:>9}",
            show(get("jit")),
            show(jit),
            show(get("interp")),
            show(native),
            ratio(native, jit),
            ratio(get("interp"), jit)
        );
        if let Some(nb) = get("num-bigint") {
            let gmp = get("gmp").map_or(String::new(), |g| format!(", GMP mpn_mul_n {g:.2} ns"));
            println!("{:<22} num-bigint {nb:.2} ns{gmp}", "");
        }
    }
    println!(
        "\n{} cores; ratios use the unchecked JIT; measured in {:.1} s",
        rayon::current_num_threads(),
        started.elapsed().as_secs_f64()
    );
}
