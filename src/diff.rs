//! Differential runs: the same PTX on the JIT and on the interpreter with the same inputs,
//! every return value and buffer compared bit for bit (a NaN equals a NaN of its type), and
//! faults compared by location and message (host addresses aside).

use crate::ast::{Module, Type};
use crate::engine::{Arg, Dim3, Engine, LaunchConfig, RunError, Value};
use crate::generate::{self, Layout, Program, Rng};
use crate::interp::Interpreter;
use crate::jit::{Jit, JitOptions};

/// An input of a run: the owned form of an engine [`Arg`]. `ptxjit launch` runs on these
/// too, so that its buffers keep their element types for printing.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Scalar(Value),
    Buffer { ty: Type, bytes: Vec<u8> },
}

impl Input {
    /// Engine arguments over `inputs`, buffers borrowed in place: a launch writes into them.
    pub fn args(inputs: &mut [Input]) -> Vec<Arg<'_>> {
        inputs
            .iter_mut()
            .map(|i| match i {
                Input::Scalar(v) => Arg::Scalar(*v),
                Input::Buffer { bytes, .. } => Arg::Buffer(bytes.as_mut_slice()),
            })
            .collect()
    }

    /// The bytes of a buffer; None for a scalar.
    pub fn into_buffer(self) -> Option<Vec<u8>> {
        match self {
            Input::Buffer { bytes, .. } => Some(bytes),
            Input::Scalar(_) => None,
        }
    }
}

/// What one engine produced.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Returned(Vec<Value>),
    /// The buffers after a launch, in argument order.
    Buffers(Vec<Vec<u8>>),
    /// A fault, rendered without host addresses.
    Fault(String),
}

/// A fault's text with every hex address replaced by `0x…`, so that two engines (whose
/// buffers live at different host addresses) can be compared.
pub fn without_addresses(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("0x") {
        out.push_str(&rest[..i]);
        out.push_str("0x…");
        rest = rest[i + 2..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
    }
    out + rest
}

fn outcome<T>(r: Result<T, RunError>, ok: impl FnOnce(T) -> Outcome) -> Result<Outcome, RunError> {
    match r {
        Ok(v) => Ok(ok(v)),
        Err(e @ RunError::Fault(..)) => Ok(Outcome::Fault(without_addresses(&e.to_string()))),
        Err(e) => Err(e),
    }
}

/// The outcome of a run that already happened (None for a refused request).
pub fn outcome_of<T: Clone>(
    r: &Result<T, RunError>,
    ok: impl FnOnce(T) -> Outcome,
) -> Option<Outcome> {
    outcome(r.clone(), ok).ok()
}

/// Calls a `.func`.
pub fn call(e: &dyn Engine, name: &str, args: &[Value]) -> Result<Outcome, RunError> {
    outcome(e.call(name, args), Outcome::Returned)
}

/// Launches a kernel on copies of the inputs, without dynamic shared memory.
pub fn launch(
    e: &dyn Engine,
    name: &str,
    config: LaunchConfig,
    inputs: &[Input],
) -> Result<Outcome, RunError> {
    let mut run = inputs.to_vec();
    let r = e.launch_with(name, config, &mut Input::args(&mut run));
    outcome(r, |()| {
        Outcome::Buffers(run.into_iter().filter_map(Input::into_buffer).collect())
    })
}

/// Where two outcomes first differ, in words, or None when they agree. `types` gives the
/// element type of each buffer (or each return value) for the report.
pub fn first_difference(jit: &Outcome, interp: &Outcome, types: &[Type]) -> Option<String> {
    match (jit, interp) {
        (Outcome::Returned(a), Outcome::Returned(b)) => {
            a.iter().zip(b).enumerate().find_map(|(k, (x, y))| {
                (!x.same_as(*y)).then(|| format!("return value {k}: jit {x}, interp {y}"))
            })
        }
        (Outcome::Buffers(a), Outcome::Buffers(b)) => {
            a.iter().zip(b).enumerate().find_map(|(k, (x, y))| {
                let ty = types.get(k).copied().unwrap_or(Type::B8);
                let n = ty.bytes();
                x.chunks(n)
                    .zip(y.chunks(n))
                    .enumerate()
                    .find_map(|(i, (p, q))| {
                        let (p, q) = (Value::from_le_bytes(ty, p), Value::from_le_bytes(ty, q));
                        (!p.same_as(q)).then(|| {
                            format!(
                                "buffer {k}, element {i} (byte {}): jit {p}, interp {q}",
                                i * n
                            )
                        })
                    })
            })
        }
        (a, b) if a == b => None,
        (a, b) => Some(format!("jit: {}\ninterp: {}", describe(a), describe(b))),
    }
}

fn describe(o: &Outcome) -> String {
    match o {
        Outcome::Returned(v) => format!(
            "returned {}",
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Outcome::Buffers(_) => "completed".into(),
        Outcome::Fault(f) => format!("faulted:\n{f}"),
    }
}

/// Both engines for a module: the JIT with its default, checked options, plus Cranelift's
/// e-graph optimizer if `egraph`.
pub fn engines(module: Module, egraph: bool) -> Result<(Jit, Interpreter), RunError> {
    let jit = Jit::with_options(
        module.clone(),
        JitOptions {
            verify: true,
            egraph,
            ..JitOptions::default()
        },
    )?;
    Ok((jit, Interpreter::new(module)))
}

/// Threads each generated program runs on: 2 blocks of 4.
pub const GRID: u32 = 2;
pub const BLOCK: u32 = 4;

/// A generated program on which the engines disagree, shrunk, with the difference.
#[derive(Clone, Debug)]
pub struct Disagreement {
    pub program: Program,
    pub input: Vec<Input>,
    pub difference: String,
}

/// Inputs for a report: scalars by value, buffers by size unless short.
pub fn describe_inputs(inputs: &[Input]) -> String {
    inputs
        .iter()
        .map(|i| match i {
            Input::Scalar(v) => format!("{} {}", v.ty.ptx(), v),
            Input::Buffer { bytes, .. } if bytes.len() <= 256 => format!("{bytes:02x?}"),
            Input::Buffer { bytes, .. } => format!("a buffer of {} bytes", bytes.len()),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// What checking a program found.
#[derive(Clone, Debug)]
pub struct Report {
    pub disagreement: Option<Disagreement>,
    /// Threads the JIT ran in SIMD lanes over all inputs.
    pub lane_threads: u64,
    /// Inputs on which both engines faulted alike (a stuck block, say), and the first such
    /// fault.
    pub faults: usize,
    pub fault: Option<String>,
}

/// How the JIT runs one generated program.
#[derive(Clone, Copy, Debug)]
struct JitChoice {
    egraph: bool,
    checked: bool,
    inline: bool,
}

impl JitChoice {
    fn describe(self) -> String {
        let mut s = String::new();
        if self.egraph {
            s += "(JIT with --egraph) ";
        }
        if !self.inline {
            s += "(JIT with --no-inline) ";
        }
        if !self.checked {
            s += "(JIT with --unchecked) ";
        }
        s
    }
}

/// Runs a generated program on both engines over `inputs` random inputs and reports the
/// first disagreement, shrunk to as few body lines as still disagree. A program that does
/// not parse or compile is a disagreement too (the generator promises valid PTX). One
/// program in four runs on the JIT with the e-graph optimizer on (`--egraph`), one in four
/// with every call kept a call (`--no-inline`); half the array programs and of those made
/// for the group functions, and a quarter of the other cooperative ones, whose accesses all
/// stay in their buffers and shared arrays (each address computed in the body line that
/// uses it, so also when shrinking deletes lines), run unchecked. Inputs on which both
/// engines fault alike (a cooperative program's stuck block, say) agree; the report counts
/// them.
pub fn check_program(program: &Program, rng: &mut Rng, inputs: usize) -> Report {
    let choice = JitChoice {
        egraph: rng.below(4) == 0,
        inline: rng.below(4) != 0,
        checked: match program.layout {
            Layout::Slots => true,
            Layout::Arrays { .. } => rng.below(2) == 0,
            Layout::Coop { lanes: true, .. } => rng.below(2) == 0,
            Layout::Coop { .. } => rng.below(4) != 0,
        },
    };
    let built = Module::parse(&program.ptx())
        .map_err(|e| e.to_string())
        .and_then(|m| build(m, choice).map_err(|e| e.to_string()));
    let (jit, interp) = match built {
        Ok(e) => e,
        Err(e) => {
            return Report {
                disagreement: Some(Disagreement {
                    program: program.clone(),
                    input: Vec::new(),
                    difference: format!("the generated program is not valid:\n{e}"),
                }),
                lane_threads: 0,
                faults: 0,
                fault: None,
            };
        }
    };
    let (mut faults, mut fault) = (0, None);
    for _ in 0..inputs {
        let input = random_inputs(program.layout, rng);
        match differ(&jit, &interp, program.layout, &input) {
            Run::Completed => {}
            Run::Faulted(f) => {
                faults += 1;
                fault.get_or_insert(f);
            }
            Run::Differ(difference) => {
                let launch = describe_launch(program.layout);
                let (program, difference) = shrink(program.clone(), &input, difference, choice);
                return Report {
                    disagreement: Some(Disagreement {
                        program,
                        input,
                        difference: choice.describe() + &launch + &difference,
                    }),
                    lane_threads: jit.lane_threads(),
                    faults,
                    fault,
                };
            }
        }
    }
    Report {
        disagreement: None,
        lane_threads: jit.lane_threads(),
        faults,
        fault,
    }
}

/// The launch of a program, for a report (programs with slots all have the same).
fn describe_launch(layout: Layout) -> String {
    match layout {
        Layout::Slots => String::new(),
        Layout::Arrays { grid, block } => format!(
            "(launch --grid {} --block {},{}) ",
            grid.x, block.x, block.y
        ),
        Layout::Coop {
            grid,
            block,
            shared_bytes,
            ..
        } => format!(
            "(launch --grid {} --block {},{},{} with {shared_bytes} bytes of dynamic shared \
             memory) ",
            grid.x, block.x, block.y, block.z
        ),
    }
}

/// Both engines for a module, the JIT as chosen.
fn build(module: Module, choice: JitChoice) -> Result<(Jit, Interpreter), RunError> {
    let jit = Jit::with_options(
        module.clone(),
        JitOptions {
            verify: true,
            egraph: choice.egraph,
            checked: choice.checked,
            inline: choice.inline,
            ..JitOptions::default()
        },
    )?;
    Ok((jit, Interpreter::new(module)))
}

/// Random inputs of a generated program with the given layout: for [`Layout::Slots`] and
/// [`Layout::Coop`] a buffer of every thread's input slots and a zeroed output buffer; for
/// [`Layout::Arrays`] the input arrays, a zeroed output buffer and `n`, the threads that
/// run (all of them, or a count next to a multiple of 32, or any).
pub fn random_inputs(layout: Layout, rng: &mut Rng) -> Vec<Input> {
    match layout {
        Layout::Coop { grid, block, .. } => {
            let threads = (grid.count() * block.count()) as usize;
            vec![
                Input::Buffer {
                    ty: Type::U8,
                    bytes: (0..threads)
                        .flat_map(|_| generate::random_input(rng))
                        .collect(),
                },
                Input::Buffer {
                    ty: Type::B32,
                    bytes: vec![0; generate::COOP_OUT_BYTES * threads],
                },
            ]
        }
        Layout::Slots => vec![
            Input::Buffer {
                ty: Type::U8,
                bytes: (0..GRID * BLOCK)
                    .flat_map(|_| generate::random_input(rng))
                    .collect(),
            },
            Input::Buffer {
                ty: Type::B32,
                bytes: vec![0; generate::OUT_BYTES * (GRID * BLOCK) as usize],
            },
        ],
        Layout::Arrays { grid, block } => {
            let threads = (grid.count() * block.count()) as u32;
            let n = match rng.below(4) {
                0 | 1 => threads,
                2 => (32 * rng.below(10) as u32 + rng.below(3) as u32).saturating_sub(1),
                _ => rng.below(threads as u64 + 1) as u32,
            };
            vec![
                Input::Buffer {
                    ty: Type::B32,
                    bytes: generate::array_input(rng),
                },
                Input::Buffer {
                    ty: Type::B32,
                    bytes: vec![0; generate::ARRAY_BYTES],
                },
                Input::Scalar(Value::u32(n)),
            ]
        }
    }
}

/// The difference between the engines on one input, or None (also None when the program
/// does not parse: a shrinking step that broke it).
fn program_difference(program: &Program, input: &[Input], choice: JitChoice) -> Option<String> {
    let module = Module::parse(&program.ptx()).ok()?;
    let (jit, interp) = build(module, choice).ok()?;
    match differ(&jit, &interp, program.layout, input) {
        Run::Differ(d) => Some(d),
        Run::Completed | Run::Faulted(_) => None,
    }
}

/// What one input did on both engines.
enum Run {
    /// Both completed with the same buffers.
    Completed,
    /// Both faulted alike, with this fault.
    Faulted(String),
    /// They differ, as described.
    Differ(String),
}

/// Launches a generated program's kernel on both engines and compares the outputs.
fn differ(jit: &Jit, interp: &Interpreter, layout: Layout, inputs: &[Input]) -> Run {
    let config = match layout {
        Layout::Slots => LaunchConfig {
            grid: Dim3::x(GRID),
            block: Dim3::x(BLOCK),
            shared_bytes: 0,
        },
        Layout::Arrays { grid, block } => LaunchConfig {
            grid,
            block,
            shared_bytes: 0,
        },
        Layout::Coop {
            grid,
            block,
            shared_bytes,
            ..
        } => LaunchConfig {
            grid,
            block,
            shared_bytes,
        },
    };
    let types: Vec<Type> = inputs
        .iter()
        .map(|i| match i {
            Input::Buffer { ty, .. } => *ty,
            Input::Scalar(v) => v.ty,
        })
        .collect();
    let run = |e: &dyn Engine| launch(e, "k", config, inputs);
    match (run(jit), run(interp)) {
        (Ok(a), Ok(b)) => match first_difference(&a, &b, &types) {
            Some(d) => Run::Differ(d),
            None => match a {
                Outcome::Fault(f) => Run::Faulted(f),
                _ => Run::Completed,
            },
        },
        (a, b) => Run::Differ(format!("jit: {a:?}\ninterp: {b:?}")),
    }
}

/// Deletes body lines one at a time while the engines still disagree.
fn shrink(
    mut program: Program,
    input: &[Input],
    mut difference: String,
    choice: JitChoice,
) -> (Program, String) {
    let mut i = 0;
    while i < program.body.len() {
        let smaller = program.without(i);
        match program_difference(&smaller, input, choice) {
            Some(d) => {
                program = smaller;
                difference = d;
            }
            None => i += 1,
        }
    }
    (program, difference)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_differing_word_is_named() {
        let a = Outcome::Buffers(vec![vec![1, 0, 0, 0, 2, 0, 0, 0]]);
        let b = Outcome::Buffers(vec![vec![1, 0, 0, 0, 3, 0, 0, 0]]);
        assert_eq!(
            first_difference(&a, &b, &[Type::U32]).unwrap(),
            "buffer 0, element 1 (byte 4): jit 0x00000002, interp 0x00000003"
        );
        assert_eq!(first_difference(&a, &a, &[Type::U32]), None);
        // NaN equals NaN of any payload; -0 is not +0.
        let nan = |b: u32| Outcome::Returned(vec![Value::new(Type::F32, b as u64)]);
        assert_eq!(
            first_difference(&nan(0x7fc0_0000), &nan(0xffff_ffff), &[]),
            None
        );
        assert!(first_difference(&nan(0), &nan(0x8000_0000), &[]).is_some());
        let fault = Outcome::Fault("error".into());
        assert!(
            first_difference(&fault, &a, &[])
                .unwrap()
                .contains("faulted")
        );
    }

    #[test]
    fn addresses_are_blanked() {
        assert_eq!(
            without_addresses("load at address 0x7f12ab: 0x10 bytes"),
            "load at address 0x…: 0x… bytes"
        );
    }
}
