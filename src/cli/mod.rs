//! The `ptxjit` command line. Its syntax and output are a contract that other tools and the
//! test harnesses drive; see the README.
//!
//! Exit codes: 0 success, 1 a fault inside the PTX, 2 bad input (parse or validation errors,
//! bad arguments).

mod diff;
pub mod values;

use crate::ast::{FuncKind, Module};
use crate::diff::{Input, Outcome};
use crate::engine::{Dim3, Engine, RunError, Value};
use crate::interp::Interpreter;
use crate::jit::{Emit, Jit, JitOptions, LANES};
use std::io::{BufRead, Write};
use std::time::Instant;
use values::{Spec, format_buffer, parse_spec, parse_value};

pub const USAGE: &str = "\
usage:
  ptxjit check FILE
  ptxjit call FILE FUNC [ENGINE OPTIONS] [ARG...] [--batch FILE|-]
  ptxjit launch FILE KERNEL --grid X[,Y[,Z]] --block X[,Y[,Z]] [ENGINE OPTIONS]
                [--arg SPEC]... [--out-dir DIR]
  ptxjit diff FILE NAME [--grid X[,Y[,Z]] --block X[,Y[,Z]]] [--arg SPEC]...
                [--iterations N] [--seed S]

ENGINE OPTIONS:
  --engine jit|interp   the Cranelift JIT (default) or the reference interpreter
  --unchecked           JIT: drop the memory checks (a bad access may crash the process)
  --emit clif|asm       JIT: print the Cranelift IR or the x86-64 code of each function
  --egraph              JIT: also run Cranelift's e-graph optimizer (off by default: it
                        lengthens live ranges in unrolled code; see README, Benchmarks)
  --no-lanes            JIT: run kernels one thread at a time (by default a kernel that
                        allows it runs a warp, 32 threads, at a time in SIMD lanes;
                        --stats says which do)
  --stats               print compile time, run time and threads/s to stderr
  --verify              run the interpreter beside the JIT; exit 1 on any difference

ARG: an integer (decimal, negative for signed types, or 0x hex) or a float (decimal, or PTX
     hex bits 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX), typed by the function's parameter.
SPEC: TYPE:VALUE (scalar), TYPE[]:V1,V2,... or TYPE[]:@PATH (buffer from values or a file's
     little-endian bytes), TYPE[N] (N zeroed elements); TYPE is u8..u64, s8..s64, b8..b64,
     f32 or f64. Buffers are passed as 64-bit global addresses. For diff also TYPE:random
     and TYPE[N]:random (new edge-biased values each run); a .func without --arg gets
     random values for every parameter.
exit codes: 0 success, 1 fault inside the PTX, 2 bad input";

/// An error that ends the command, with its exit code.
struct Exit(i32, String);

fn bad(msg: impl Into<String>) -> Exit {
    Exit(2, msg.into())
}

impl From<RunError> for Exit {
    fn from(e: RunError) -> Exit {
        match e {
            RunError::Usage(_) => Exit(2, e.to_string()),
            RunError::Fault(..) => Exit(1, e.to_string()),
        }
    }
}

/// Runs the command line `args` (without the program name); returns the exit code.
pub fn run(
    args: &[String],
    stdin: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> i32 {
    match dispatch(args, stdin, out, err) {
        Ok(()) => 0,
        Err(Exit(code, msg)) => {
            let _ = writeln!(err, "{}", msg.trim_end());
            code
        }
    }
}

fn dispatch(
    args: &[String],
    stdin: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Exit> {
    let Some(cmd) = args.first() else {
        return Err(bad(USAGE));
    };
    match cmd.as_str() {
        "check" => check(&args[1..], out),
        "call" => call(&args[1..], stdin, out, err),
        "launch" => launch(&args[1..], out, err),
        "diff" => diff::diff(&args[1..], out, err),
        "-h" | "--help" | "help" => {
            let _ = writeln!(out, "{USAGE}");
            Ok(())
        }
        other => Err(bad(format!("error: unknown command `{other}`\n{USAGE}"))),
    }
}

fn load(path: &str) -> Result<Module, Exit> {
    let bytes = std::fs::read(path).map_err(|e| bad(format!("error: cannot read {path}: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        bad(format!(
            "error: {path} is not UTF-8 text (byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Module::parse_named(&text, path).map_err(|e| bad(e.to_string()))
}

/// The engine `--engine` names.
#[derive(Clone, Copy, PartialEq, Eq)]
enum EngineKind {
    Interp,
    Jit,
}

/// The options every running command takes.
#[derive(Clone, Copy)]
struct EngineOpts {
    kind: EngineKind,
    checked: bool,
    emit: Emit,
    egraph: bool,
    lanes: bool,
    stats: bool,
    /// Run the interpreter beside the JIT and fail on any difference.
    verify: bool,
}

impl Default for EngineOpts {
    fn default() -> Self {
        EngineOpts {
            kind: EngineKind::Jit,
            checked: true,
            emit: Emit::None,
            egraph: false,
            lanes: true,
            stats: false,
            verify: false,
        }
    }
}

impl EngineOpts {
    /// Takes the option at `args[i]` if it is an engine option; returns how many words it
    /// used (0 if it is not one).
    fn take(&mut self, args: &[String], i: usize) -> Result<usize, Exit> {
        let next = args.get(i + 1).map(String::as_str);
        match args[i].as_str() {
            "--engine" => {
                self.kind = match next {
                    Some("interp") => EngineKind::Interp,
                    Some("jit") => EngineKind::Jit,
                    Some(o) => {
                        return Err(bad(format!("error: unknown engine `{o}` (jit or interp)")));
                    }
                    None => return Err(bad("error: --engine needs a value")),
                };
                Ok(2)
            }
            "--emit" => {
                self.emit = match next {
                    Some("clif") => Emit::Clif,
                    Some("asm") => Emit::Asm,
                    Some(o) => {
                        return Err(bad(format!("error: unknown --emit `{o}` (clif or asm)")));
                    }
                    None => return Err(bad("error: --emit needs clif or asm")),
                };
                Ok(2)
            }
            "--unchecked" => {
                self.checked = false;
                Ok(1)
            }
            "--egraph" => {
                self.egraph = true;
                Ok(1)
            }
            "--no-lanes" => {
                self.lanes = false;
                Ok(1)
            }
            "--stats" => {
                self.stats = true;
                Ok(1)
            }
            "--verify" => {
                self.verify = true;
                Ok(1)
            }
            _ => Ok(0),
        }
    }

    /// The interpreter `--verify` compares the JIT with.
    fn reference(self, module: &Module) -> Result<Option<Interpreter>, Exit> {
        match (self.verify, self.kind) {
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
        if self.kind == EngineKind::Interp {
            if self.emit != Emit::None || !self.checked || self.egraph || !self.lanes {
                return Err(bad(
                    "error: --emit, --unchecked, --egraph and --no-lanes apply to the JIT engine",
                ));
            }
            return Ok(Box::new(Interpreter::new(module)));
        }
        let jit = Jit::with_options(
            module,
            JitOptions {
                checked: self.checked,
                emit: self.emit,
                egraph: self.egraph,
                lanes: self.lanes,
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
                let _ = match why {
                    None => writeln!(err, "kernel {name}: SIMD lanes, {LANES} threads at a time"),
                    Some(why) => writeln!(err, "kernel {name}: one thread at a time ({why})"),
                };
            }
        }
        Ok(Box::new(jit))
    }
}

fn check(args: &[String], out: &mut dyn Write) -> Result<(), Exit> {
    let [file] = args else {
        return Err(bad(format!("error: check takes one FILE\n{USAGE}")));
    };
    let m = load(file)?;
    let _ = writeln!(out, "{file}: ok ({} functions)", m.functions.len());
    Ok(())
}

fn call(
    args: &[String],
    stdin: &mut dyn BufRead,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<(), Exit> {
    let mut positional = Vec::new();
    let mut opts = EngineOpts::default();
    let mut batch = None;
    let mut i = 0;
    while i < args.len() {
        let used = opts.take(args, i)?;
        if used > 0 {
            i += used;
            continue;
        }
        match args[i].as_str() {
            "--batch" => {
                batch = Some(
                    args.get(i + 1)
                        .ok_or_else(|| bad("error: --batch needs FILE or -"))?
                        .clone(),
                );
                i += 1;
            }
            _ => positional.push(args[i].clone()),
        }
        i += 1;
    }
    if positional.len() < 2 {
        return Err(bad(format!("error: call needs FILE and FUNC\n{USAGE}")));
    }
    let module = load(&positional[0])?;
    let name = positional[1].clone();
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
        let line: Vec<String> = rets.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(out, "{}", line.join(" "));
        Ok(())
    };
    let result = match batch {
        None => one(&positional[2..]),
        Some(src) => {
            if positional.len() > 2 {
                return Err(bad(
                    "error: give arguments either on the command line or with --batch",
                ));
            }
            let mut file_reader;
            let reader: &mut dyn BufRead = if src == "-" {
                stdin
            } else {
                let f = std::fs::File::open(&src)
                    .map_err(|e| bad(format!("error: cannot read {src}: {e}")))?;
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

fn parse_dim(v: Option<&String>, what: &str) -> Result<Dim3, Exit> {
    let v = v.ok_or_else(|| bad(format!("error: {what} needs X[,Y[,Z]]")))?;
    let parts: Vec<&str> = v.split(',').collect();
    if parts.is_empty() || parts.len() > 3 {
        return Err(bad(format!("error: {what} `{v}` is not X[,Y[,Z]]")));
    }
    let mut d = [1u32; 3];
    for (k, p) in parts.iter().enumerate() {
        d[k] = p.trim().parse().map_err(|_| {
            bad(format!(
                "error: {what} `{v}`: `{p}` is not a positive integer"
            ))
        })?;
    }
    Ok(Dim3::new(d[0], d[1], d[2]))
}

/// What `launch` and `diff` run: the extents and the argument SPECs.
#[derive(Default)]
struct LaunchShape {
    grid: Option<Dim3>,
    block: Option<Dim3>,
    specs: Vec<Spec>,
}

impl LaunchShape {
    /// Takes `--grid`, `--block` or `--arg` at `args[i]` with its value; returns how many
    /// words it used (0 if it is none of them).
    fn take(&mut self, args: &[String], i: usize) -> Result<usize, Exit> {
        let next = args.get(i + 1);
        match args[i].as_str() {
            "--grid" => self.grid = Some(parse_dim(next, "--grid")?),
            "--block" => self.block = Some(parse_dim(next, "--block")?),
            "--arg" => self.specs.push(
                parse_spec(next.ok_or_else(|| bad("error: --arg needs a SPEC"))?)
                    .map_err(|m| bad(format!("error: {m}")))?,
            ),
            _ => return Ok(0),
        }
        Ok(2)
    }
}

fn launch(args: &[String], out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Exit> {
    let mut positional = Vec::new();
    let mut opts = EngineOpts::default();
    let mut shape = LaunchShape::default();
    let mut out_dir = None;
    let mut i = 0;
    while i < args.len() {
        let used = opts.take(args, i)? + shape.take(args, i)?;
        if used > 0 {
            i += used;
            continue;
        }
        let next = args.get(i + 1);
        match args[i].as_str() {
            "--out-dir" => {
                out_dir = Some(
                    next.ok_or_else(|| bad("error: --out-dir needs a folder"))?
                        .clone(),
                )
            }
            a if a.starts_with("--") => {
                return Err(bad(format!("error: unknown option `{a}`\n{USAGE}")));
            }
            _ => {
                positional.push(args[i].clone());
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    let [file, kernel] = &positional[..] else {
        return Err(bad(format!("error: launch needs FILE and KERNEL\n{USAGE}")));
    };
    let LaunchShape { grid, block, specs } = shape;
    let grid = grid.ok_or_else(|| bad("error: launch needs --grid"))?;
    let block = block.ok_or_else(|| bad("error: launch needs --block"))?;
    let module = load(file)?;
    let reference = opts.reference(&module)?;
    let engine = opts.build(module, out, err)?;
    let mut inputs = specs
        .into_iter()
        .map(|s| match s {
            Spec::Given(input) => Ok(input),
            Spec::RandomScalar(_) | Spec::RandomBuffer { .. } => {
                Err(bad("error: `random` arguments are for `ptxjit diff`"))
            }
        })
        .collect::<Result<Vec<Input>, Exit>>()?;
    let theirs = match &reference {
        Some(r) => Some(crate::diff::launch(r, kernel, grid, block, &inputs)?),
        None => None,
    };
    let started = Instant::now();
    let result = engine.launch(kernel, grid, block, &mut Input::args(&mut inputs));
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
    for (k, input) in inputs.iter().enumerate() {
        let Input::Buffer { ty, bytes } = input else {
            continue;
        };
        match &out_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| bad(format!("error: cannot create {dir}: {e}")))?;
                let path = std::path::Path::new(dir).join(format!("arg{k}.bin"));
                std::fs::write(&path, bytes)
                    .map_err(|e| bad(format!("error: cannot write {}: {e}", path.display())))?;
            }
            None => {
                let _ = writeln!(out, "arg{k}: {}", format_buffer(*ty, bytes));
            }
        }
    }
    Ok(())
}
