//! Helpers shared by the integration tests.
#![allow(dead_code)]

use ptxjit::ast::Type;
use ptxjit::{Engine, Interpreter, Jit, JitOptions, Module, Value};

pub mod host;
pub mod ptxas;

/// Every engine the tests run on, by name. Tests loop over this list, so a new engine is
/// covered by every test at once. `jit-plain` is the JIT without SIMD lanes and without
/// inlining small calls: every thread alone, every call through memory.
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
            "jit-plain",
            Box::new(jit_with(
                ptx,
                JitOptions {
                    verify: true,
                    lanes: false,
                    inline: false,
                    ..JitOptions::default()
                },
            )) as Box<dyn Engine>,
        ),
    ]
}

/// [`engines`] and the JIT without memory checks, for kernels that access nothing out of
/// bounds (unchecked, cooperative kernels run a warp at a time in SIMD lanes between
/// barriers: see `lower/lanes/rounds.rs`).
pub fn engines_and_unchecked(ptx: &str) -> Vec<(&'static str, Box<dyn Engine>)> {
    let mut all = engines(ptx);
    let options = JitOptions {
        checked: false,
        verify: true,
        ..JitOptions::default()
    };
    all.push(("jit-unchecked", Box::new(jit_with(ptx, options))));
    all
}

/// [`engines`] and the JIT's soft-float fallback for directed rounding (hardware rounding
/// off), for the tests of rounding.
pub fn engines_and_soft_float(ptx: &str) -> Vec<(&'static str, Box<dyn Engine>)> {
    let mut all = engines(ptx);
    let options = JitOptions {
        hardware_rounding: false,
        verify: true,
        ..JitOptions::default()
    };
    all.push(("jit (soft-float)", Box::new(jit_with(ptx, options))));
    all
}

/// The JIT with particular options.
pub fn jit_with(ptx: &str, options: JitOptions) -> Jit {
    let module = Module::parse(ptx).unwrap_or_else(|e| panic!("test PTX does not parse:\n{e}"));
    Jit::with_options(module, options).unwrap_or_else(|e| panic!("JIT compilation failed:\n{e}"))
}

/// The project's deterministic generator, so inputs are the same on every run.
#[allow(unused_imports)]
pub use ptxjit::generate::Rng;

/// A module of one `.func` per instruction text, `f{k}(a, b, c)` returning `%d`: registers
/// `%a %b %c` hold the arguments and `%d` starts at `d0`; `decls` declares any others the
/// texts use.
pub fn three_operand_module(
    header: &str,
    decls: &str,
    d0: u32,
    texts: impl IntoIterator<Item = String>,
) -> String {
    let mut s = String::from(header);
    for (k, text) in texts.into_iter().enumerate() {
        s += &format!(
            ".visible .func (.param .b32 r) f{k}(.param .b32 a, .param .b32 b, .param .b32 c)\n{{\n\
             \x20 .reg .b32 %a, %b, %c, %d;\n{decls}  ld.param.b32 %a, [a];\n  \
             ld.param.b32 %b, [b];\n  ld.param.b32 %c, [c];\n  mov.b32 %d, {d0};\n  {text}\n  \
             st.param.b32 [r], %d;\n  ret;\n}}\n"
        );
    }
    s
}

/// Calls `name` of a [`three_operand_module`] with three `.b32` arguments: its result.
pub fn call3(e: &dyn Engine, name: &str, a: u32, b: u32, c: u32) -> u32 {
    let v = |x: u32| Value::new(Type::B32, x as u64);
    e.call(name, &[v(a), v(b), v(c)])
        .unwrap_or_else(|err| panic!("{name}: {err}"))[0]
        .bits as u32
}
