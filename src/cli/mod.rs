//! The `ptxjit` command line. Its syntax and output are a contract that other tools and the
//! test harnesses drive; see the README.
//!
//! Exit codes: 0 success, 1 a fault inside the PTX, 2 bad input (parse or validation errors,
//! bad arguments).

pub mod values;

use crate::ast::{FuncKind, Module};
use crate::engine::{Arg, Dim3, Engine, RunError, Value};
use crate::interp::Interpreter;
use std::io::{BufRead, Write};
use values::{Spec, format_buffer, parse_spec, parse_value};

pub const USAGE: &str = "\
usage:
  ptxjit check FILE
  ptxjit call FILE FUNC [--engine jit|interp] [ARG...] [--batch FILE|-]
  ptxjit launch FILE KERNEL --grid X[,Y[,Z]] --block X[,Y[,Z]] [--engine jit|interp]
                [--arg SPEC]... [--out-dir DIR]

ARG: an integer (decimal, negative for signed types, or 0x hex) or a float (decimal, or PTX
     hex bits 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX), typed by the function's parameter.
SPEC: TYPE:VALUE (scalar), TYPE[]:V1,V2,... or TYPE[]:@PATH (buffer from values or a file's
     little-endian bytes), TYPE[N] (N zeroed elements); TYPE is u8..u64, s8..s64, b8..b64,
     f32 or f64. Buffers are passed as 64-bit global addresses.
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
    match dispatch(args, stdin, out) {
        Ok(()) => 0,
        Err(Exit(code, msg)) => {
            let _ = writeln!(err, "{}", msg.trim_end());
            code
        }
    }
}

fn dispatch(args: &[String], stdin: &mut dyn BufRead, out: &mut dyn Write) -> Result<(), Exit> {
    let Some(cmd) = args.first() else {
        return Err(bad(USAGE));
    };
    match cmd.as_str() {
        "check" => check(&args[1..], out),
        "call" => call(&args[1..], stdin, out),
        "launch" => launch(&args[1..], out),
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

fn engine_of(kind: EngineKind, module: Module) -> Result<Box<dyn Engine>, Exit> {
    match kind {
        EngineKind::Interp => Ok(Box::new(Interpreter::new(module))),
        EngineKind::Jit => Err(bad(
            "error: the JIT engine is not built yet; use --engine interp",
        )),
    }
}

fn parse_engine(v: Option<&String>) -> Result<EngineKind, Exit> {
    match v.map(String::as_str) {
        Some("interp") => Ok(EngineKind::Interp),
        Some("jit") => Ok(EngineKind::Jit),
        Some(o) => Err(bad(format!("error: unknown engine `{o}` (jit or interp)"))),
        None => Err(bad("error: --engine needs a value")),
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

fn call(args: &[String], stdin: &mut dyn BufRead, out: &mut dyn Write) -> Result<(), Exit> {
    let mut positional = Vec::new();
    let mut engine = EngineKind::Interp;
    let mut batch = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "--engine" => {
                engine = parse_engine(args.get(i + 1))?;
                i += 1;
            }
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
    let engine = engine_of(engine, module)?;
    let mut one = |words: &[String]| -> Result<(), Exit> {
        let values = parse_args(words)?;
        let rets = engine.call(&name, &values)?;
        let line: Vec<String> = rets.iter().map(|v| v.to_string()).collect();
        let _ = writeln!(out, "{}", line.join(" "));
        Ok(())
    };
    match batch {
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
    }
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

fn launch(args: &[String], out: &mut dyn Write) -> Result<(), Exit> {
    let mut positional = Vec::new();
    let mut engine = EngineKind::Interp;
    let (mut grid, mut block) = (None, None);
    let mut specs = Vec::new();
    let mut out_dir = None;
    let mut i = 0;
    while i < args.len() {
        let next = args.get(i + 1);
        match args[i].as_str() {
            "--engine" => engine = parse_engine(next)?,
            "--grid" => grid = Some(parse_dim(next, "--grid")?),
            "--block" => block = Some(parse_dim(next, "--block")?),
            "--arg" => specs.push(
                parse_spec(next.ok_or_else(|| bad("error: --arg needs a SPEC"))?)
                    .map_err(|m| bad(format!("error: {m}")))?,
            ),
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
    let grid = grid.ok_or_else(|| bad("error: launch needs --grid"))?;
    let block = block.ok_or_else(|| bad("error: launch needs --block"))?;
    let module = load(file)?;
    let engine = engine_of(engine, module)?;
    let mut buffers: Vec<(usize, crate::ast::Type, Vec<u8>)> = Vec::new();
    let mut scalars = Vec::new();
    for (k, s) in specs.into_iter().enumerate() {
        match s {
            Spec::Scalar(v) => scalars.push((k, v)),
            Spec::Buffer { ty, bytes } => buffers.push((k, ty, bytes)),
        }
    }
    {
        let mut slots: Vec<Option<Arg>> =
            (0..scalars.len() + buffers.len()).map(|_| None).collect();
        for (k, v) in &scalars {
            slots[*k] = Some(Arg::Scalar(*v));
        }
        for (k, _, bytes) in buffers.iter_mut() {
            slots[*k] = Some(Arg::Buffer(bytes.as_mut_slice()));
        }
        let mut launch_args: Vec<Arg> = slots
            .into_iter()
            .map(|s| s.expect("every slot filled"))
            .collect();
        engine.launch(kernel, grid, block, &mut launch_args)?;
    }
    for (k, ty, bytes) in &buffers {
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
