//! Criterion benches of the workloads: one host call of each `.func` and a launch of each
//! `.entry` over 4,096 operand pairs on the JIT (memory checks on and off) against the same
//! algorithm in Rust (rayon over the operands for launches), and saxpy over 4M elements
//! against a native rayon loop. `examples/bench_table.rs` gives the summary (with the
//! interpreter, num-bigint and GMP) in one run.
//!
//! cargo bench --bench bignum [-- FILTER]

mod workloads;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;
use std::hint::black_box;
use workloads::{Workload, jit};

/// `count` operands of the workload, deterministic; for Montgomery, below the modulus (the
/// top limb cleared: p's top limb is nonzero).
fn operands(w: &Workload, count: usize, seed: usize) -> Vec<u8> {
    let ib = w.in_bytes();
    let mut v: Vec<u8> = (0..count * ib)
        .map(|k| (k * 37 + seed * 91 + 11) as u8)
        .collect();
    if w.modulus.is_some() {
        for chunk in v.chunks_mut(ib) {
            chunk[ib - 4..].fill(0);
        }
    }
    v
}

fn host_calls(c: &mut Criterion) {
    for w in workloads::all() {
        let ptx = workloads::ptx(&w);
        let ob = w.out_bytes();
        let (a, b) = (operands(&w, 1, 1), operands(&w, 1, 2));
        let mut want = vec![0u8; ob];
        workloads::rust_one(&w, &a, &b, &mut want);
        let mut group = c.benchmark_group(format!("{} call", w.name));
        for checked in [true, false] {
            let jit = jit(&ptx, checked);
            let raw = jit.raw_func(w.name).expect("the .func has a wrapper");
            // SAFETY: `(.param .b8 r[OUT]) f(.param .b8 a[IN], .param .b8 b[IN])` is
            // `extern "C" fn(out, a, b)` with byte pointers (jit::host); the buffers have
            // those sizes and `jit` outlives the calls.
            let f: extern "C" fn(*mut u8, *const u8, *const u8) =
                unsafe { std::mem::transmute(raw) };
            let mut r = vec![0u8; ob];
            f(r.as_mut_ptr(), a.as_ptr(), b.as_ptr());
            assert_eq!(r, want, "{} agrees with Rust", w.name);
            let name = if checked { "jit" } else { "jit-unchecked" };
            group.bench_function(name, |bench| {
                bench.iter(|| {
                    f(
                        black_box(r.as_mut_ptr()),
                        black_box(a.as_ptr()),
                        black_box(b.as_ptr()),
                    )
                })
            });
        }
        let mut r = vec![0u8; ob];
        group.bench_function("rust", |bench| {
            bench.iter(|| workloads::rust_one(&w, black_box(&a), black_box(&b), black_box(&mut r)))
        });
        group.finish();
    }
}

fn kernel_launches(c: &mut Criterion) {
    let count = 4096;
    for w in workloads::all() {
        let ptx = workloads::ptx(&w);
        let (ib, ob) = (w.in_bytes(), w.out_bytes());
        let (mut a, mut b) = (operands(&w, count, 1), operands(&w, count, 2));
        let mut want = vec![0u8; count * ob];
        let rust = |a: &[u8], b: &[u8], out: &mut [u8]| {
            out.par_chunks_mut(ob).enumerate().for_each(|(i, o)| {
                workloads::rust_one(&w, &a[i * ib..(i + 1) * ib], &b[i * ib..(i + 1) * ib], o)
            })
        };
        rust(&a, &b, &mut want);
        let mut group = c.benchmark_group(format!("{} kernel", w.name));
        group.throughput(Throughput::Elements(count as u64));
        group.sample_size(20);
        let mut out = vec![0u8; count * ob];
        for checked in [true, false] {
            let jit = jit(&ptx, checked);
            workloads::launch(&jit, &w, &mut a, &mut b, &mut out, count);
            assert_eq!(out, want, "{} kernel agrees with Rust", w.name);
            let name = if checked { "jit" } else { "jit-unchecked" };
            group.bench_function(name, |bench| {
                bench.iter(|| workloads::launch(&jit, &w, &mut a, &mut b, &mut out, count))
            });
        }
        group.bench_function("rust", |bench| bench.iter(|| rust(&a, &b, &mut out)));
        group.finish();
    }
}

fn saxpy(c: &mut Criterion) {
    let n = 1usize << 22;
    let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let mut xb: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut yb = vec![0u8; 4 * n];
    let mut group = c.benchmark_group("saxpy 4M");
    group.throughput(Throughput::Elements(n as u64));
    group.sample_size(20);
    for checked in [true, false] {
        let jit = jit(workloads::SAXPY_PTX, checked);
        let name = if checked { "jit" } else { "jit-unchecked" };
        group.bench_function(name, |bench| {
            bench.iter(|| workloads::saxpy_launch(&jit, &mut xb, &mut yb, n))
        });
    }
    let mut y = vec![0f32; n];
    group.bench_function("rayon", |bench| {
        bench.iter(|| {
            y.par_chunks_mut(1 << 14)
                .zip(x.par_chunks(1 << 14))
                .for_each(|(y, x)| workloads::saxpy_native(2.0, x, y))
        })
    });
    group.finish();
}

criterion_group!(benches, host_calls, kernel_launches, saxpy);
criterion_main!(benches);
