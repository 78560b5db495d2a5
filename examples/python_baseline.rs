//! The Rust figures `python/bench.py` compares the Python package against, measured the
//! same way: a `.func` called through its typed host handle once per element of arrays of
//! 1M operands (tests/corpus/hash.ptx's `mix`, ns per call), and the launch of an empty
//! kernel (µs per launch). Prints `RESULT name=value` lines.
//!
//! `cargo run --release --example python_baseline [-- N]`

use ptxjit::{Dim3, Engine, Jit, Module};
use std::hint::black_box;
use std::time::Instant;

/// The best of `runs` timings of `f`, in seconds.
fn best(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(1_000_000);
    let hash = Module::parse_named(include_str!("../tests/corpus/hash.ptx"), "hash.ptx")?;
    let jit = Jit::new(hash)?;
    let mix = jit.func::<(u64, u64), u64>("_Z3mixmm")?;
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        x ^ (x >> 31)
    };
    let a: Vec<u64> = (0..n).map(|_| next()).collect();
    let b: Vec<u64> = (0..n).map(|_| next()).collect();
    let mut out = vec![0u64; n];
    let t = best(7, || {
        for ((o, a), b) in out.iter_mut().zip(&a).zip(&b) {
            *o = mix.call((*a, *b)).expect("mix does not fault");
        }
        black_box(&out);
    });
    println!("RESULT rust_func_call_ns={:.2}", t * 1e9 / n as f64);

    let empty = Module::parse_named(
        ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry empty() { ret; }\n",
        "empty.ptx",
    )?;
    let jit = Jit::new(empty)?;
    let launches = 100_000;
    let t = best(7, || {
        for _ in 0..launches {
            jit.launch("empty", Dim3::x(1), Dim3::x(1), &mut [])
                .expect("empty launches");
        }
    });
    println!("RESULT rust_launch_us={:.3}", t * 1e6 / launches as f64);
    Ok(())
}
