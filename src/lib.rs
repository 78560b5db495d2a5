//! ptxjit: NVIDIA PTX on x86-64 CPUs — a typed front end, a reference interpreter and (next)
//! a Cranelift JIT behind one engine interface.

pub mod ast;
pub mod block;
pub mod cli;
pub mod diff;
pub mod engine;
pub mod frontend;
pub mod generate;
pub mod interp;
pub mod jit;
pub mod memcheck;
pub mod signature;
pub mod softfloat;

pub use ast::Module;
pub use engine::{Arg, Dim3, Engine, ErrorKind, Fault, LaunchConfig, Location, RunError, Value};
pub use frontend::ParseError;
pub use interp::Interpreter;
pub use jit::{HostArea, Jit, JitOptions};
pub use signature::{FunctionInfo, ParamInfo};

impl Module {
    /// Parses and validates PTX text; `path` names it in diagnostics.
    pub fn parse_named(text: &str, path: &str) -> Result<Module, ParseError> {
        frontend::parse(text, path)
    }
    /// Parses and validates PTX text.
    pub fn parse(text: &str) -> Result<Module, ParseError> {
        frontend::parse(text, "<input>")
    }
}

impl ParseError {
    /// Each diagnostic's location and message, in order: the structured form of what
    /// `Display` renders.
    pub fn located(&self) -> Vec<(Location, &str)> {
        self.diagnostics
            .iter()
            .map(|d| (Location::of(&self.source, d.span.start), d.message.as_str()))
            .collect()
    }
}
