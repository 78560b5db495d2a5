//! Criterion benches of the bignum workloads: one host call of each `.func` on the JIT
//! (memory checks on and off) against the same algorithm in Rust. `examples/bench_table.rs`
//! gives the full picture (kernels over all cores, the interpreter, num-bigint) in one run.
//!
//! cargo bench --bench bignum

mod workloads;

use criterion::{Criterion, criterion_group, criterion_main};
use ptxjit::{Jit, JitOptions, Module};
use std::hint::black_box;

fn host_calls(c: &mut Criterion) {
    for w in workloads::all() {
        let ptx = workloads::ptx(&w);
        let (ib, ob) = (w.in_bytes(), w.out_bytes());
        let a: Vec<u8> = (0..ib).map(|k| (k * 37 + 11) as u8).collect();
        let b: Vec<u8> = (0..ib).map(|k| (k * 91 + 5) as u8).collect();
        // Reduce below the modulus by clearing the top limb (p's top limb is nonzero).
        let (mut a, mut b) = (a, b);
        if w.modulus.is_some() {
            a[ib - 4..].fill(0);
            b[ib - 4..].fill(0);
        }
        let mut group = c.benchmark_group(w.name);
        for checked in [true, false] {
            let module = Module::parse(&ptx).expect("workload PTX parses");
            let jit = Jit::with_options(
                module,
                JitOptions {
                    checked,
                    ..JitOptions::default()
                },
            )
            .expect("compiles");
            let raw = jit.raw_func(w.name).expect("the .func has a wrapper");
            // SAFETY: `(.param .b8 r[OUT]) f(.param .b8 a[IN], .param .b8 b[IN])` is
            // `extern "C" fn(out, a, b)` with byte pointers (jit::host); the buffers have
            // those sizes and `jit` outlives the calls.
            let f: extern "C" fn(*mut u8, *const u8, *const u8) =
                unsafe { std::mem::transmute(raw) };
            let mut r = vec![0u8; ob];
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
        group.finish();
    }
}

criterion_group!(benches, host_calls);
criterion_main!(benches);
