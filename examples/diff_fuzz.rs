//! Long differential runs: random PTX programs (src/generate.rs) on both engines until the
//! time is up, on every core. Prints the count; on a disagreement prints the shrunk program
//! and its input, and exits 1.
//!
//! cargo run --release --example diff_fuzz -- --seconds 3600 [--seed S] [--inputs 32]

mod common;

use common::arg;
use ptxjit::diff::check_program;
use ptxjit::generate::{Rng, program};
use rayon::prelude::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

fn main() {
    let seconds = arg("--seconds", 60);
    let seed = arg("--seed", 1);
    let inputs = arg("--inputs", 32) as usize;
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let programs = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let workers = rayon::current_num_threads() as u64;
    (0..workers).into_par_iter().for_each(|w| {
        let mut rng = Rng::new(seed.wrapping_mul(1_000_003).wrapping_add(w));
        while Instant::now() < deadline && !failed.load(Ordering::Relaxed) {
            let size = 10 + rng.below(60) as usize;
            let p = program(&mut rng, size);
            if let Some(d) = check_program(&p, &mut rng, inputs) {
                failed.store(true, Ordering::Relaxed);
                eprintln!(
                    "DISAGREEMENT: {}\n--- shrunk program:\n{}\n--- input bytes: {:02x?}",
                    d.difference,
                    d.program.ptx(),
                    d.input
                );
            }
            programs.fetch_add(1, Ordering::Relaxed);
        }
    });
    let n = programs.load(Ordering::Relaxed);
    println!(
        "{n} programs x {inputs} inputs x {} threads in {seconds} s, {} mismatches (seed {seed})",
        ptxjit::diff::GRID * ptxjit::diff::BLOCK,
        failed.load(Ordering::Relaxed) as u32
    );
    if failed.load(Ordering::Relaxed) {
        std::process::exit(1);
    }
}
