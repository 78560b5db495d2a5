//! The front end never panics, and the JIT compiles whatever it accepts: mutated corpus modules (bytes deleted, duplicated, replaced by
//! PTX-shaped tokens) must each end in Ok or a located error. A bounded, deterministic sweep;
//! long fuzzing belongs to issue 7.

mod common;

use common::Rng;
use ptxjit::{Jit, JitOptions, Module};

const TOKENS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ";",
    ",",
    ".u32",
    ".s64",
    ".f32",
    ".pred",
    ".b8",
    ".param",
    ".reg",
    "%r1",
    "%rd1",
    "%p1",
    "@%p1",
    "@!%p1",
    "0x7fffffff",
    "-1",
    "0f3f800000",
    "0d3ff0000000000000",
    "mov",
    "add.cc",
    "call",
    "ret;",
    "bra",
    "$L__BB0_1:",
    ".local .align 8 .b8 d[8];",
    "[%rd1+-4]",
    "{%r1, %r2}",
    "%tid.x",
    "%r1.b0",
    "_",
    "|",
    "<4>",
    "99999999999999999999999",
    ".align 3",
    ".v4",
    ".rn",
    ".sat",
    ".ftz",
    ".wide",
    "ld.param.v2.u64",
];

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
        let mut text = sources[round % sources.len()].clone().into_bytes();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(text.len() as u64) as usize;
            match rng.below(3) {
                0 => {
                    let n = (1 + rng.below(12) as usize).min(text.len() - at);
                    text.drain(at..at + n);
                }
                1 => {
                    let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                    text.splice(at..at, format!(" {t} ").into_bytes());
                }
                _ => {
                    let from = rng.below(text.len() as u64) as usize;
                    let n = (1 + rng.below(40) as usize).min(text.len() - from);
                    let chunk: Vec<u8> = text[from..from + n].to_vec();
                    text.splice(at..at, chunk);
                }
            }
        }
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
