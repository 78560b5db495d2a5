//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ptxjit::{Engine, Interpreter, Jit, JitOptions, Module};

pub mod host;

/// Every engine the tests run on, by name. Tests loop over this list, so a new engine is
/// covered by every test at once.
pub fn engines(ptx: &str) -> Vec<(&'static str, Box<dyn Engine>)> {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("test PTX does not parse:\n{e}"));
    let jit = |egraph| {
        let options = JitOptions {
            verify: true,
            egraph,
            ..JitOptions::default()
        };
        Box::new(jit_with(ptx, options)) as Box<dyn Engine>
    };
    vec![
        (
            "interp",
            Box::new(Interpreter::new(module)) as Box<dyn Engine>,
        ),
        ("jit", jit(false)),
        ("jit-egraph", jit(true)),
        (
            "jit-no-lanes",
            Box::new(jit_with(
                ptx,
                JitOptions {
                    verify: true,
                    lanes: false,
                    ..JitOptions::default()
                },
            )) as Box<dyn Engine>,
        ),
    ]
}

/// The JIT with particular options.
pub fn jit_with(ptx: &str, options: JitOptions) -> Jit {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("test PTX does not parse:\n{e}"));
    Jit::with_options(module, options).unwrap_or_else(|e| panic!("JIT compilation failed:\n{e}"))
}

/// The project's deterministic generator, so inputs are the same on every run.
#[allow(unused_imports)]
pub use ptxjit::generate::Rng;
