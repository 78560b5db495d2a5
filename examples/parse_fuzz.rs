//! Fuzzing the front end: arbitrary bytes, corpus modules with grammar-shaped mutations, and
//! deeply nested input, until the time is up. Every input must end in Ok or a located error:
//! a panic is caught and reported (exit 1); a stack overflow or abort ends the process with
//! a signal, which the caller sees. Accepted modules are also JIT-compiled.
//!
//! cargo run --release --example parse_fuzz -- --seconds 1800 [--seed S]

use ptxjit::generate::Rng;
use ptxjit::{Jit, Module};
use std::time::{Duration, Instant};

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
    ".local",
    ".global",
    ".const",
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
    "madc.hi.cc",
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
    "vadd.s32.u32.s32.sat",
    "vmad.s32.s32.u32.sat",
    "-%r1.h0",
    ".shr15",
    "vset.u32.u32.ne",
    ".po",
    "\"",
    "//",
    "/*",
    "*/",
    "\n",
    "\0",
    "\u{feff}",
    "é",
];

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mutate(rng: &mut Rng, mut text: Vec<u8>) -> Vec<u8> {
    for _ in 0..1 + rng.below(6) {
        if text.is_empty() {
            text.push(b'{');
        }
        let at = rng.below(text.len() as u64) as usize;
        match rng.below(5) {
            0 => {
                let n = (1 + rng.below(16) as usize).min(text.len() - at);
                text.drain(at..at + n);
            }
            1 | 2 => {
                let t = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                text.splice(at..at, format!(" {t} ").into_bytes());
            }
            3 => {
                let from = rng.below(text.len() as u64) as usize;
                let n = (1 + rng.below(80) as usize).min(text.len() - from);
                let chunk = text[from..from + n].to_vec();
                text.splice(at..at, chunk);
            }
            _ => text[at] = rng.next_u64() as u8,
        }
    }
    text
}

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
