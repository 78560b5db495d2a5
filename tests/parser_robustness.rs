//! The front end never panics, and the JIT compiles whatever it accepts: corpus modules with
//! random edits (`generate::mutate`: bytes deleted, duplicated or replaced, PTX-shaped tokens
//! inserted) must each end in Ok or a located error. A bounded, deterministic sweep;
//! `examples/parse_fuzz.rs` runs the same edits (and more) for as long as asked.

use ptxjit::generate::{Rng, mutate};
use ptxjit::{Jit, JitOptions, Module};

#[test]
fn mutated_corpus_never_panics() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut sources: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ptx"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    sources.sort();
    let mut rng = Rng::new(2026);
    let mut rejected = 0;
    let rounds: usize = std::env::var("PTXJIT_MUTATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000);
    for round in 0..rounds {
        let text = mutate(
            &mut rng,
            sources[round % sources.len()].clone().into_bytes(),
        );
        let text = String::from_utf8_lossy(&text);
        match Module::parse(&text) {
            Err(e) => {
                rejected += 1;
                // Every rejection is located and renders.
                assert!(e.first_location().is_some());
                assert!(!e.to_string().is_empty());
            }
            // Whatever the front end accepts, the JIT compiles (IR verifier on).
            Ok(m) => {
                let options = JitOptions {
                    verify: true,
                    ..JitOptions::default()
                };
                if let Err(e) = Jit::with_options(m, options) {
                    panic!("accepted module does not compile: {e}\n{text}");
                }
            }
        }
    }
    assert!(
        rejected > 1000,
        "the mutations should mostly break the modules ({rejected} rejected)"
    );
}
