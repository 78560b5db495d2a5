//! Long differential runs: random PTX programs (src/generate) on both engines until the time
//! is up, on every core, in turn of the three shapes the generator makes (per-thread slots,
//! element-wise arrays for the JIT's SIMD lanes, and cooperative kernels with shared memory,
//! barriers and warp collectives). Prints the counts; on a disagreement prints the shrunk
//! program, its launch and its input, and exits 1.
//!
//! cargo run --release --example diff_fuzz -- --seconds 3600 [--seed S] [--inputs 32]

mod common;

use common::arg;
use ptxjit::diff::check_program;
use ptxjit::generate::{Rng, array_program, coop_program, group_program, program};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let seconds = arg("--seconds", 60);
    let seed = arg("--seed", 1);
    let inputs = arg("--inputs", 32) as usize;
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let programs = AtomicU64::new(0);
    let (arrays, in_lanes) = (AtomicU64::new(0), AtomicU64::new(0));
    // Cooperative programs; those of them that faulted alike on some input (stuck blocks
    // among them).
    let (coop, faulted, stuck) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let failed = AtomicBool::new(false);
    let workers = rayon::current_num_threads() as u64;
    (0..workers).into_par_iter().for_each(|w| {
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(w));
        while Instant::now() < deadline && !failed.load(Ordering::Relaxed) {
            let size = 10 + rng.below(60) as usize;
            let n = programs.fetch_add(1, Ordering::Relaxed);
            let shape = n % 3;
            let p = match shape {
                0 => program(&mut rng, size),
                1 => {
                    arrays.fetch_add(1, Ordering::Relaxed);
                    array_program(&mut rng, size)
                }
                _ => {
                    coop.fetch_add(1, Ordering::Relaxed);
                    if rng.below(10) < 3 {
                        group_program(&mut rng, size)
                    } else {
                        coop_program(&mut rng, size)
                    }
                }
            };
            let report = check_program(&p, &mut rng, inputs);
            if report.lane_threads > 0 {
                in_lanes.fetch_add(1, Ordering::Relaxed);
            }
            if let (2, Some(f)) = (shape, &report.fault) {
                faulted.fetch_add(1, Ordering::Relaxed);
                if f.contains("cannot go on") {
                    stuck.fetch_add(1, Ordering::Relaxed);
                }
            }
            if let Some(d) = report.disagreement {
                failed.store(true, Ordering::Relaxed);
                eprintln!(
                    "DISAGREEMENT: {}\n--- shrunk program:\n{}\n--- inputs: {}",
                    d.difference,
                    d.program.ptx(),
                    ptxjit::diff::describe_inputs(&d.input)
                );
            }
        }
    });
    let n = programs.load(Ordering::Relaxed);
    println!(
        "{n} programs x {inputs} inputs in {seconds} s on {workers} threads ({} of them array \
         programs, {} run partly in SIMD lanes; {} cooperative, {} of which faulted alike on \
         some input, {} with a stuck block), {} mismatches (seed {seed})",
        arrays.load(Ordering::Relaxed),
        in_lanes.load(Ordering::Relaxed),
        coop.load(Ordering::Relaxed),
        faulted.load(Ordering::Relaxed),
        stuck.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed) as u32
    );
    if failed.load(Ordering::Relaxed) {
        std::process::exit(1);
    }
}
