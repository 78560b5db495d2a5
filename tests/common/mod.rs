//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ptxjit::{Engine, Interpreter, Jit, JitOptions, Module};

/// Every engine the tests run on, by name. Tests loop over this list, so a new engine is
/// covered by every test at once.
pub fn engines(ptx: &str) -> Vec<(&'static str, Box<dyn Engine>)> {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("test PTX does not parse:\n{e}"));
    let jit = jit_with(
        ptx,
        JitOptions {
            verify: true,
            ..JitOptions::default()
        },
    );
    vec![
        (
            "interp",
            Box::new(Interpreter::new(module)) as Box<dyn Engine>,
        ),
        ("jit", Box::new(jit) as Box<dyn Engine>),
    ]
}

/// The JIT with particular options.
pub fn jit_with(ptx: &str, options: JitOptions) -> Jit {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("test PTX does not parse:\n{e}"));
    Jit::with_options(module, options).unwrap_or_else(|e| panic!("JIT compilation failed:\n{e}"))
}

/// A small deterministic generator (xorshift64*), so inputs are the same on every run.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A uniform float in [lo, hi).
    pub fn f64_in(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * ((self.next() >> 11) as f64 / (1u64 << 53) as f64)
    }
}
