//! The `ptxjit` command line, on clap (derive). Its syntax and output are a contract that
//! other tools and the test harnesses drive; `ptxjit help` and the README describe it.
//!
//! Exit codes: 0 success, 1 a fault inside the PTX or a difference between the engines
//! (`diff`, `--verify`), 2 bad input (parse or validation errors, bad arguments).

mod diff;
pub mod values;

use crate::ast::{FuncKind, Function, Inst, Module};
use crate::diff::{Input, Outcome};
use crate::engine::{Dim3, Engine, LaunchConfig, RunError, Value, check_arity, find_function};
use crate::interp::Interpreter;
use crate::jit::{Emit, Jit, JitOptions, LANES};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;
use values::{Format, Spec, format_buffer, format_value, parse_spec, parse_value};

/// Run NVIDIA PTX on an x86-64 CPU: compiled with Cranelift, or on the reference interpreter
#[derive(Parser)]
#[command(
    name = "ptxjit",
    version,
    arg_required_else_help = false,
    after_help = "Exit codes: 0 success, 1 a fault inside the PTX or a difference between the \
                  engines, 2 bad input (syntax, validation, arguments)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Parse and validate a module
    Check(CheckArgs),
    /// Call a .func with scalar arguments and print its return values on one line
    Call(CallArgs),
    /// Launch a kernel over a grid and print its buffers afterwards (or write them to files)
    Launch(LaunchArgs),
    /// Run a .func or a kernel on the JIT and on the interpreter and compare the results
    ///
    /// Both engines get the same inputs, --iterations times, and every return value and
    /// buffer is compared bit for bit: NaN equals NaN; faults must match in location and
    /// message. A progress count shows on a terminal. On a mismatch it exits 1 and prints
    /// the inputs as a ready-to-run `ptxjit call` or `ptxjit launch` command, both outcomes
    /// and the first differing word, all in hex; otherwise it prints `N runs, 0 mismatches`.
    Diff(diff::DiffArgs),
}

#[derive(Args)]
struct CheckArgs {
    /// The PTX module
    file: PathBuf,
}

/// The options of the commands that run PTX on one engine.
#[derive(Args, Clone, Copy)]
#[command(next_help_heading = "Engine options")]
struct EngineOpts {
    /// The engine: the Cranelift JIT or the reference interpreter
    #[arg(long, value_enum, default_value_t = EngineKind::Jit)]
    engine: EngineKind,
    /// JIT: drop the memory checks (faster; a bad access may crash the process)
    #[arg(long)]
    unchecked: bool,
    /// JIT: print the Cranelift IR (clif, as lowered: before Cranelift's own passes) or the
    /// x86-64 code (asm) of each compiled function (and each .func's host wrapper) before the
    /// results
    #[arg(long, value_name = "clif|asm", value_parser = parse_emit)]
    emit: Option<Emit>,
    /// JIT: also run Cranelift's e-graph optimizer on every function
    ///
    /// Off by default: it lengthens live ranges in unrolled code and slows the bignum
    /// kernels (see docs/performance.md, "Cranelift's e-graph pass"). The group functions of
    /// cooperative kernels get it either way, unless their straight-line code loads much.
    #[arg(long)]
    egraph: bool,
    /// JIT: run kernels one thread at a time
    ///
    /// By default a kernel that allows it runs a warp, 32 threads, at a time in SIMD lanes;
    /// --stats says which kernels do and why the others do not.
    #[arg(long)]
    no_lanes: bool,
    /// JIT: keep every call a call
    ///
    /// By default calls of small leaf functions are compiled as the callee's body.
    #[arg(long)]
    no_inline: bool,
    /// Print the compile time, which kernels run in SIMD lanes, and the run time and
    /// threads/s or calls/s to stderr
    #[arg(long)]
    stats: bool,
    /// Run the interpreter beside the JIT; exit 1 on any difference
    #[arg(long)]
    verify: bool,
}

/// The engine `--engine` names.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EngineKind {
    /// the Cranelift JIT
    Jit,
    /// the reference interpreter
    Interp,
}

fn parse_emit(text: &str) -> Result<Emit, String> {
    match text {
        "clif" => Ok(Emit::Clif),
        "asm" => Ok(Emit::Asm),
        _ => Err("expected clif or asm".into()),
    }
}

#[derive(Args)]
struct CallArgs {
    /// The PTX module
    file: PathBuf,
    /// The .func to call
    func: String,
    /// The arguments, one per parameter and typed by it
    ///
    /// Integers in decimal (negative for signed types) or 0x hex; floats in decimal or as
    /// PTX hex bits 0fXXXXXXXX (f32) / 0dXXXXXXXXXXXXXXXX (f64) / 0xXXXX (f16). A value that
    /// starts with `-` but is not a decimal number (-0x10, -inf) goes after `--`.
    #[arg(value_name = "ARG", allow_negative_numbers = true)]
    args: Vec<String>,
    /// Read one argument list per line from FILE (`-`: stdin) and print one result line
    /// for each
    #[arg(long, value_name = "FILE|-", conflicts_with = "args")]
    batch: Option<PathBuf>,
    /// How to print the return values
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    #[command(flatten)]
    engine: EngineOpts,
}

#[derive(Args)]
struct LaunchArgs {
    /// The PTX module
    file: PathBuf,
    /// The .entry to launch
    kernel: String,
    /// Blocks in the grid
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_dim)]
    grid: Dim3,
    /// Threads in a block
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_dim)]
    block: Dim3,
    /// Bytes of dynamic shared memory per block (what `.extern .shared` arrays of unspecified
    /// size name)
    #[arg(long, value_name = "N", default_value_t = 0)]
    shared_bytes: u32,
    /// A kernel argument; give one for each parameter, in order
    ///
    /// TYPE:VALUE a scalar (VALUE as for `call`), TYPE[]:V1,V2,... a buffer of those values,
    /// TYPE[]:@PATH a buffer of a file's little-endian bytes, TYPE[N] a buffer of N zeroed
    /// elements. TYPE is u8…u64, s8…s64, b8…b64, f32 or f64. Buffers are passed as 64-bit
    /// global addresses.
    #[arg(long = "arg", value_name = "SPEC", value_parser = parse_spec)]
    args: Vec<Spec>,
    /// The buffers to give back after the launch, by 0-based parameter index or by
    /// parameter name [default: every buffer]
    ///
    /// Repeat it or separate with commas. The other buffers are neither printed nor
    /// written: on a large input that saves more time than the kernel takes.
    #[arg(long, value_name = "K[,K...]", value_delimiter = ',')]
    out: Vec<String>,
    /// Write each buffer given back to DIR/argK.bin (K its 0-based parameter index) instead
    /// of printing it as `argK: v0 v1 ...`
    #[arg(long, value_name = "DIR")]
    out_dir: Option<PathBuf>,
    /// How to print the buffers (files get the raw bytes)
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    #[command(flatten)]
    engine: EngineOpts,
}

/// An error that ends the command, with its exit code.
struct Exit(i32, String);

fn bad(msg: impl Into<String>) -> Exit {
    Exit(2, msg.into())
}

impl From<RunError> for Exit {
    fn from(e: RunError) -> Exit {
        match e {
            RunError::Usage(_) => Exit(2, e.to_string()),
            RunError::Fault(..) | RunError::Interrupted => Exit(1, e.to_string()),
        }
    }
}

/// Runs the command line `args` (without the program name); returns the exit code. Help
/// and the version go to `out`, errors to `err`.
pub fn run<I, T>(args: I, stdin: &mut dyn BufRead, out: &mut dyn Write, err: &mut dyn Write) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let words = std::iter::once(OsString::from("ptxjit")).chain(args.into_iter().map(Into::into));
    let cli = match Cli::try_parse_from(words) {
        Ok(cli) => cli,
        Err(e) => {
            let text = e.render().to_string();
            let _ = if e.use_stderr() {
                err.write_all(text.as_bytes())
            } else {
                out.write_all(text.as_bytes())
            };
            return e.exit_code();
        }
    };
    let result = match cli.command {
        Command::Check(a) => check(&a.file, out, err),
        Command::Call(a) => call(a, stdin, out, err),
        Command::Launch(a) => launch(a, out, err),
        Command::Diff(a) => diff::diff(a, out, err),
    };
    match result {
        Ok(()) => 0,
        Err(Exit(code, msg)) => {
            let _ = writeln!(err, "{}", msg.trim_end());
            code
        }
    }
}

fn load(path: &Path) -> Result<Module, Exit> {
    let name = path.display();
    let bytes = std::fs::read(path).map_err(|e| bad(format!("error: cannot read {name}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        bad(format!(
            "error: {name} is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Module::parse_named(&text, &path.to_string_lossy()).map_err(|e| bad(e.to_string()))
}

impl EngineOpts {
    /// The interpreter `--verify` compares the JIT with.
    fn reference(self, module: &Module) -> Result<Option<Interpreter>, Exit> {
        match (self.verify, self.engine) {
            (false, _) => Ok(None),
            (true, EngineKind::Jit) => Ok(Some(Interpreter::new(module.clone()))),
            (true, EngineKind::Interp) => Err(bad(
                "error: --verify compares the JIT with the interpreter; use it with --engine jit",
            )),
        }
    }

    /// Builds the engine, printing the listing `--emit` asked for and the compile stats.
    fn build(
        self,
        module: Module,
        out: &mut dyn Write,
        err: &mut dyn Write,
    ) -> Result<Box<dyn Engine>, Exit> {
        if self.engine == EngineKind::Interp {
            if self.emit.is_some()
                || self.unchecked
                || self.egraph
                || self.no_lanes
                || self.no_inline
            {
                return Err(bad(
                    "error: --emit, --unchecked, --egraph, --no-lanes and --no-inline apply to the JIT engine",
                ));
            }
            return Ok(Box::new(Interpreter::new(module)));
        }
        let jit = Jit::with_options(
            module,
            JitOptions {
                checked: !self.unchecked,
                emit: self.emit.unwrap_or(Emit::None),
                egraph: self.egraph,
                lanes: !self.no_lanes,
                inline: !self.no_inline,
                ..JitOptions::default()
            },
        )?;
        for (name, text) in &jit.listing {
            let _ = writeln!(out, "; ---- {name}\n{}", text.trim_end());
        }
        if self.stats {
            let s = jit.stats;
            let _ = writeln!(
                err,
                "compile: {:.2} ms for {} functions, {} PTX instructions ({:.1} us/instruction)",
                s.millis,
                s.functions,
                s.instructions,
                s.millis * 1e3 / s.instructions.max(1) as f64
            );
            for (name, why) in jit.lanes_report() {
                let cooperative = (jit.module().function(name))
                    .and_then(|(_, f)| f.body.as_ref())
                    .is_some_and(|b| b.iter().any(|i| matches!(i.inst, Inst::Sync { .. })));
                let _ = match why {
                    None if cooperative => writeln!(
                        err,
                        "kernel {name}: SIMD lanes between barriers, {LANES} threads at a time (16 in rows of 16 if it has no shuffles)"
                    ),
                    None => writeln!(err, "kernel {name}: SIMD lanes, {LANES} threads at a time"),
                    Some(why) => writeln!(err, "kernel {name}: one thread at a time ({why})"),
                };
            }
        }
        Ok(Box::new(jit))
    }
}

/// Parses and validates; lists the functions that cannot run (on `err`, located), which
/// leave the rest of the module usable.
fn check(file: &Path, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Exit> {
    let m = load(file)?;
    // Functions with barriers run inlined into their kernels: not refusals to report.
    let inlined = m.functions.iter().filter(|f| f.inlined).count();
    let refused: Vec<&crate::ast::Function> = m
        .functions
        .iter()
        .filter(|f| !f.refused.is_empty() && !f.inlined)
        .collect();
    for f in &refused {
        let reasons = crate::frontend::ParseError {
            source: m.source.clone(),
            diagnostics: f.refused.clone(),
        };
        let _ = writeln!(err, "note: `{}` cannot run here:\n{reasons}", f.name);
    }
    let mut refusals = match refused.len() {
        0 => String::new(),
        n => format!(", {n} of them refused"),
    };
    if inlined > 0 {
        refusals += &format!(", {inlined} inlined into the kernels that call them");
    }
    let _ = writeln!(
        out,
        "{}: ok ({} functions{refusals})",
        file.display(),
        m.functions.len()
    );
    Ok(())
}

fn call(
    a: CallArgs,
    stdin: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Exit> {
    let CallArgs {
        file,
        func: name,
        args,
        batch,
        format,
        engine: opts,
    } = a;
    let module = load(&file)?;
    let func = match module.function(&name) {
        Some((_, f)) if f.kind == FuncKind::Func => f.clone(),
        Some(_) => {
            return Err(bad(format!(
                "error: `{name}` is a kernel; use `ptxjit launch`"
            )));
        }
        None => return Err(bad(format!("error: no function named `{name}`"))),
    };
    let types: Vec<_> = func.params.iter().map(|p| func.param_type(p)).collect();
    let parse_args = |words: &[String]| -> Result<Vec<Value>, Exit> {
        if words.len() != types.len() {
            return Err(bad(format!(
                "error: `{name}` takes {} arguments, {} given",
                types.len(),
                words.len()
            )));
        }
        words
            .iter()
            .zip(&types)
            .map(|(w, t)| parse_value(*t, w).map_err(|m| bad(format!("error: {m}"))))
            .collect()
    };
    let reference = opts.reference(&module)?;
    let engine = opts.build(module, out, err)?;
    let started = Instant::now();
    let mut calls = 0u64;
    let mut one = |words: &[String]| -> Result<(), Exit> {
        calls += 1;
        let values = parse_args(words)?;
        let result = engine.call(&name, &values);
        if let Some(r) = &reference {
            let ours = crate::diff::outcome_of(&result, Outcome::Returned);
            let theirs = crate::diff::call(r, &name, &values)?;
            if let Some(d) = ours.and_then(|o| crate::diff::first_difference(&o, &theirs, &[])) {
                return Err(Exit(
                    1,
                    format!("verify: the JIT and the interpreter differ: {d}"),
                ));
            }
        }
        let rets = result?;
        let line: Vec<String> = rets.iter().map(|v| format_value(*v, format)).collect();
        let _ = writeln!(out, "{}", line.join(" "));
        Ok(())
    };
    let result = match batch {
        None => one(&args),
        Some(src) => {
            let mut file_reader;
            let reader: &mut dyn BufRead = if src == Path::new("-") {
                stdin
            } else {
                let f = std::fs::File::open(&src)
                    .map_err(|e| bad(format!("error: cannot read {}: {e}", src.display())))?;
                file_reader = std::io::BufReader::new(f);
                &mut file_reader
            };
            for (n, line) in reader.lines().enumerate() {
                let line = line.map_err(|e| bad(format!("error: reading batch input: {e}")))?;
                let words: Vec<String> = line.split_whitespace().map(String::from).collect();
                one(&words).map_err(|Exit(c, m)| Exit(c, format!("batch line {}: {m}", n + 1)))?;
            }
            Ok(())
        }
    };
    if opts.stats {
        let secs = started.elapsed().as_secs_f64();
        let _ = writeln!(
            err,
            "run: {:.3} ms for {calls} calls ({:.0} calls/s)",
            secs * 1e3,
            calls as f64 / secs.max(1e-9)
        );
    }
    result
}

/// Parses `--grid` or `--block`: X[,Y[,Z]], the missing extents 1.
fn parse_dim(text: &str) -> Result<Dim3, String> {
    let parts: Vec<&str> = text.split(',').collect();
    if parts.len() > 3 {
        return Err("expected X[,Y[,Z]]".into());
    }
    let mut d = [1u32; 3];
    for (k, p) in parts.iter().enumerate() {
        d[k] = p
            .trim()
            .parse()
            .map_err(|_| format!("`{p}` is not a positive integer"))?;
    }
    Ok(Dim3::new(d[0], d[1], d[2]))
}

/// The arguments `launch` gives back, in order: the buffers `--out` picks (by index or
/// parameter name), every buffer when it picks none.
fn given_back(picks: &[String], kernel: &Function, inputs: &[Input]) -> Result<Vec<usize>, Exit> {
    let buffers = (0..inputs.len()).filter(|&k| matches!(inputs[k], Input::Buffer { .. }));
    if picks.is_empty() {
        return Ok(buffers.collect());
    }
    let mut chosen = Vec::new();
    for pick in picks {
        let named = |p| kernel.param_name(p) == pick;
        let k = match pick.parse::<usize>() {
            Ok(k) => k,
            Err(_) => kernel.params.iter().position(named).ok_or_else(|| {
                bad(format!(
                    "error: --out {pick}: `{}` has no parameter named `{pick}`",
                    kernel.name
                ))
            })?,
        };
        match inputs.get(k) {
            Some(Input::Buffer { .. }) => chosen.push(k),
            Some(Input::Scalar(_)) => {
                return Err(bad(format!(
                    "error: --out {pick}: argument {k} is a scalar, not a buffer"
                )));
            }
            None => {
                return Err(bad(format!(
                    "error: --out {pick}: no parameter {k} (`{}` has {})",
                    kernel.name,
                    inputs.len()
                )));
            }
        }
    }
    chosen.sort_unstable();
    chosen.dedup();
    Ok(chosen)
}

fn launch(a: LaunchArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Exit> {
    let LaunchArgs {
        file,
        kernel,
        grid,
        block,
        shared_bytes,
        args: specs,
        out: picks,
        out_dir,
        format,
        engine: opts,
    } = a;
    let module = load(&file)?;
    let mut inputs = specs
        .into_iter()
        .map(|s| match s {
            Spec::Given(input) => Ok(input),
            Spec::RandomScalar(_) | Spec::RandomBuffer { .. } => {
                Err(bad("error: `random` arguments are for `ptxjit diff`"))
            }
        })
        .collect::<Result<Vec<Input>, Exit>>()?;
    let (_, func) = find_function(&module, &kernel, FuncKind::Entry)?;
    check_arity(func, inputs.len())?;
    let given_back = given_back(&picks, func, &inputs)?;
    let config = LaunchConfig {
        grid,
        block,
        shared_bytes,
    };
    let reference = opts.reference(&module)?;
    let engine = opts.build(module, out, err)?;
    let theirs = match &reference {
        Some(r) => Some(crate::diff::launch(r, &kernel, config, &inputs)?),
        None => None,
    };
    let started = Instant::now();
    let result = engine.launch_with(&kernel, config, &mut Input::args(&mut inputs));
    if let Some(theirs) = theirs {
        let ours = crate::diff::outcome_of(&result, |()| {
            Outcome::Buffers(
                inputs
                    .iter()
                    .cloned()
                    .filter_map(Input::into_buffer)
                    .collect(),
            )
        });
        let types: Vec<_> = inputs
            .iter()
            .filter_map(|i| match i {
                Input::Buffer { ty, .. } => Some(*ty),
                Input::Scalar(_) => None,
            })
            .collect();
        if let Some(d) = ours.and_then(|o| crate::diff::first_difference(&o, &theirs, &types)) {
            return Err(Exit(
                1,
                format!("verify: the JIT and the interpreter differ: {d}"),
            ));
        }
    }
    result?;
    if opts.stats {
        let secs = started.elapsed().as_secs_f64();
        let threads = grid.count() * block.count();
        let _ = writeln!(
            err,
            "run: {:.3} ms for {threads} threads ({:.3e} threads/s)",
            secs * 1e3,
            threads as f64 / secs.max(1e-9)
        );
        if let Some(n) = engine.lane_threads() {
            let _ = writeln!(err, "run: {n} of {threads} threads in SIMD lanes");
        }
    }
    for k in given_back {
        let Input::Buffer { ty, bytes } = &inputs[k] else {
            unreachable!("given_back picks buffers");
        };
        match &out_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| bad(format!("error: cannot create {}: {e}", dir.display())))?;
                let path = dir.join(format!("arg{k}.bin"));
                std::fs::write(&path, bytes)
                    .map_err(|e| bad(format!("error: cannot write {}: {e}", path.display())))?;
            }
            None => {
                let _ = writeln!(out, "arg{k}: {}", format_buffer(*ty, bytes, format));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed_and_every_argument_described() {
        let cli = Cli::command();
        cli.clone().debug_assert();
        for cmd in cli.get_subcommands() {
            for arg in cmd.get_arguments() {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                assert!(
                    !help.is_empty(),
                    "`{} {}` has no description",
                    cmd.get_name(),
                    arg.get_id()
                );
            }
        }
    }
}
