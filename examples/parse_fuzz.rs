//! Fuzzing the front end: arbitrary bytes, corpus modules with grammar-shaped mutations, and
//! deeply nested input, until the time is up. Every input must end in Ok or a located error:
//! a panic is caught and reported (exit 1); a stack overflow or abort ends the process with
//! a signal, which the caller sees. Accepted modules are also JIT-compiled.
//!
//! cargo run --release --example parse_fuzz -- --seconds 1800 [--seed S]

mod common;

use common::arg;
use ptxjit::generate::{Rng, mutate};
use ptxjit::{Jit, Module};
use std::time::{Duration, Instant};

fn main() {
    let seconds = arg("--seconds", 60);
    let seed = arg("--seed", 1);
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut corpus: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .expect("corpus folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .map(|p| std::fs::read(p).expect("corpus file"))
        .collect();
    corpus.sort();
    let mut rng = Rng::new(seed);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut inputs, mut accepted) = (0u64, 0u64);
    while Instant::now() < deadline {
        let bytes = match rng.below(10) {
            // Arbitrary bytes.
            0 => (0..rng.below(400)).map(|_| rng.next_u64() as u8).collect(),
            // Deep nesting of one bracket kind, with a corpus prefix.
            1 => {
                let open = [b'{', b'(', b'['][rng.below(3) as usize];
                let mut v = corpus[rng.below(corpus.len() as u64) as usize].clone();
                v.truncate(rng.below(v.len() as u64) as usize);
                v.extend(std::iter::repeat_n(open, rng.below(200_000) as usize));
                v
            }
            _ => {
                let base = corpus[rng.below(corpus.len() as u64) as usize].clone();
                mutate(&mut rng, base)
            }
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let outcome = std::panic::catch_unwind(|| match Module::parse(&text) {
            Ok(m) => {
                Jit::new(m).expect("an accepted module compiles");
                true
            }
            Err(e) => {
                assert!(e.first_location().is_some(), "unlocated error: {e}");
                false
            }
        });
        match outcome {
            Ok(ok) => accepted += ok as u64,
            Err(_) => {
                eprintln!("PANIC on input:\n{text}");
                std::process::exit(1);
            }
        }
        inputs += 1;
    }
    println!(
        "{inputs} inputs in {seconds} s ({accepted} accepted and JIT-compiled), 0 crashes (seed {seed})"
    );
}
