//! `ptxjit diff`: a `.func` or `.entry` on both engines with the same inputs, N times,
//! every return value and buffer compared bit for bit.

use super::values::{Format, Spec, format_buffer, parse_spec};
use super::{Exit, bad, load, parse_dim};
use crate::ast::{FuncKind, Type};
use crate::diff::{self, Input, Outcome};
use crate::engine::{Dim3, Engine, LaunchConfig, Value};
use crate::generate::{Rng, edge_value};
use clap::Args;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

#[derive(Args)]
pub(super) struct DiffArgs {
    /// The PTX module
    file: PathBuf,
    /// The .func or .entry to run
    name: String,
    /// Blocks in the grid (kernels only)
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_dim)]
    grid: Option<Dim3>,
    /// Threads in a block (kernels only)
    #[arg(long, value_name = "X[,Y[,Z]]", value_parser = parse_dim)]
    block: Option<Dim3>,
    /// Bytes of dynamic shared memory per block (what `.extern .shared` arrays of unspecified
    /// size name; kernels only)
    #[arg(long, value_name = "N", default_value_t = 0)]
    shared_bytes: u32,
    /// An argument, one for each parameter in order: a SPEC as for `launch`, or TYPE:random
    /// or TYPE[N]:random
    ///
    /// `random` draws new edge-biased values each run: 0, ±1, min/max, all ones, sign bits,
    /// subnormals, infinities, NaNs and uniform bits. A .func without --arg gets random
    /// values for every parameter.
    #[arg(long = "arg", value_name = "SPEC", value_parser = parse_spec)]
    args: Vec<Spec>,
    /// How many runs to compare
    #[arg(long, value_name = "N", default_value_t = 100)]
    iterations: u64,
    /// The seed of the random values
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u64,
}

/// What to run: a function with argument specs, or a kernel with its extents.
enum Target {
    Func,
    Kernel(LaunchConfig),
}

pub(super) fn diff(a: DiffArgs, out: &mut dyn Write, err: &mut dyn Write) -> Result<(), Exit> {
    let DiffArgs {
        file,
        name,
        grid,
        block,
        shared_bytes,
        args: mut specs,
        iterations,
        seed,
    } = a;
    let name = name.as_str();
    let module = load(&file)?;
    let Some((_, func)) = module.function(name) else {
        return Err(bad(format!("error: no function or kernel named `{name}`")));
    };
    let func = func.clone();
    let target = match func.kind {
        FuncKind::Func => {
            if grid.is_some() || block.is_some() || shared_bytes > 0 {
                return Err(bad(
                    "error: --grid, --block and --shared-bytes are for kernels",
                ));
            }
            if specs.is_empty() {
                specs = func
                    .params
                    .iter()
                    .map(|p| Spec::RandomScalar(func.param_type(p)))
                    .collect();
            }
            if specs.iter().any(|s| buffer_type(s).is_some()) {
                return Err(bad("error: a .func takes scalar arguments only"));
            }
            Target::Func
        }
        FuncKind::Entry => Target::Kernel(LaunchConfig {
            grid: grid.ok_or_else(|| bad("error: diff of a kernel needs --grid"))?,
            block: block.ok_or_else(|| bad("error: diff of a kernel needs --block"))?,
            shared_bytes,
        }),
    };
    let (jit, interp) = diff::engines(module, false)?;
    let mut rng = Rng::new(seed);
    let progress = std::io::stderr().is_terminal() && iterations >= 20;
    for run in 0..iterations {
        if progress && run % 10 == 0 {
            let _ = write!(err, "\r{run}/{iterations} runs");
        }
        let inputs: Vec<Input> = specs.iter().map(|s| materialize(s, &mut rng)).collect();
        let (ours, theirs, types) = match &target {
            Target::Func => {
                let values: Vec<Value> = inputs
                    .iter()
                    .map(|i| match i {
                        Input::Scalar(v) => *v,
                        Input::Buffer { .. } => unreachable!("checked above"),
                    })
                    .collect();
                (
                    diff::call(&jit, name, &values)?,
                    diff::call(&interp, name, &values)?,
                    Vec::new(),
                )
            }
            Target::Kernel(config) => {
                let run = |e: &dyn Engine| diff::launch(e, name, *config, &inputs);
                let types = specs.iter().filter_map(buffer_type).collect();
                (run(&jit)?, run(&interp)?, types)
            }
        };
        if let Some(d) = diff::first_difference(&ours, &theirs, &types) {
            if progress {
                let _ = writeln!(err);
            }
            let report = format!(
                "mismatch on run {} of {iterations} (seed {seed})\n  inputs: {}\n  jit:    {}\n  interp: {}\n  first difference: {d}",
                run + 1,
                command(&file, name, &target, &inputs),
                show(&ours, &types),
                show(&theirs, &types),
            );
            return Err(Exit(1, report));
        }
    }
    if progress {
        let _ = writeln!(err);
    }
    let _ = writeln!(out, "{iterations} runs, 0 mismatches");
    Ok(())
}

fn buffer_type(s: &Spec) -> Option<Type> {
    match s {
        Spec::Given(Input::Buffer { ty, .. }) | Spec::RandomBuffer { ty, .. } => Some(*ty),
        Spec::Given(Input::Scalar(_)) | Spec::RandomScalar(_) => None,
    }
}

/// A spec's value for one run.
fn materialize(s: &Spec, rng: &mut Rng) -> Input {
    match s {
        Spec::Given(input) => input.clone(),
        Spec::RandomScalar(ty) => Input::Scalar(Value::new(*ty, edge_value(rng, *ty))),
        Spec::RandomBuffer { ty, n } => Input::Buffer {
            ty: *ty,
            bytes: (0..*n)
                .flat_map(|_| edge_value(rng, *ty).to_le_bytes()[..ty.bytes()].to_vec())
                .collect(),
        },
    }
}

/// The run as a ready-to-run `ptxjit call` or `ptxjit launch` command.
fn command(file: &Path, name: &str, target: &Target, inputs: &[Input]) -> String {
    let file = file.display();
    match target {
        Target::Func => {
            let args: Vec<String> = inputs
                .iter()
                .map(|i| match i {
                    Input::Scalar(v) => v.to_string(),
                    Input::Buffer { .. } => String::new(),
                })
                .collect();
            format!("ptxjit call {file} {name} {}", args.join(" "))
        }
        Target::Kernel(config) => {
            let dim = |d: &Dim3| format!("{},{},{}", d.x, d.y, d.z);
            let args: Vec<String> = inputs
                .iter()
                .map(|i| match i {
                    Input::Scalar(v) => format!("--arg {}:{v}", &v.ty.ptx()),
                    Input::Buffer { ty, bytes } => format!(
                        "--arg '{}[]:{}'",
                        ty.ptx(),
                        format_buffer(*ty, bytes, Format::Hex).replace(' ', ",")
                    ),
                })
                .collect();
            let shared = match config.shared_bytes {
                0 => String::new(),
                n => format!(" --shared-bytes {n}"),
            };
            format!(
                "ptxjit launch {file} {name} --grid {} --block {}{shared} {}",
                dim(&config.grid),
                dim(&config.block),
                args.join(" ")
            )
        }
    }
}

/// An outcome for the report (buffers cut to their first 64 elements).
fn show(o: &Outcome, types: &[Type]) -> String {
    match o {
        Outcome::Returned(v) => v
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        Outcome::Buffers(bufs) => bufs
            .iter()
            .enumerate()
            .map(|(k, b)| {
                let ty = types.get(k).copied().unwrap_or(Type::B8);
                let shown = &b[..b.len().min(64 * ty.bytes())];
                let more = if shown.len() < b.len() { " …" } else { "" };
                format!(
                    "buffer {k}: {}{more}",
                    format_buffer(ty, shown, Format::Hex)
                )
            })
            .collect::<Vec<_>>()
            .join("\n          "),
        Outcome::Fault(f) => format!("fault:\n{f}"),
    }
}
