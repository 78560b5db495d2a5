//! Running a corpus kernel against its host reference: the kernel's C source compiled by g++
//! with a harness (tests/corpus/host.cpp, tests/corpus/coop/host.cpp) computes the expected
//! buffers, and every engine's launch must produce them bit for bit.

use super::{Rng, engines_and_unchecked};
use ptxjit::{Arg, Engine, RunError, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One kernel argument: a buffer with generated contents, a zeroed output buffer, or a
/// scalar.
pub enum Gen {
    /// `elem` bytes per element, `n` elements, each value's bits from the generator (given
    /// the element's index).
    Buf(usize, usize, fn(&mut Rng, usize) -> u64),
    Zeros(usize, usize),
    Scalar(Value),
}

pub fn f32_bits(v: f64) -> u64 {
    (v as f32).to_bits() as u64
}

/// Builds a host program: `harness` (in `dir`) with `-DKERNEL_FILE="<kernel>.cu"` and
/// `-DKERNEL_NAME=<kernel>`, by g++ with `flags`, into the test target's scratch directory
/// `out_dir`.
pub fn host_binary(
    dir: &Path,
    harness: &str,
    kernel: &str,
    flags: &[&str],
    out_dir: &str,
) -> PathBuf {
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(out_dir);
    std::fs::create_dir_all(&out_dir).unwrap();
    let exe = out_dir.join(kernel);
    let out = Command::new("g++")
        .current_dir(dir)
        .args(flags)
        .arg(format!("-DKERNEL_FILE=\"{kernel}.cu\""))
        .arg(format!("-DKERNEL_NAME={kernel}"))
        .arg(harness)
        .arg("-o")
        .arg(&exe)
        .output()
        .expect("g++ must be installed (see .ci/run)");
    assert!(
        out.status.success(),
        "g++ failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// A scalar as the host harnesses read it (decimal, floats in exponent form).
fn scalar_text(v: Value) -> String {
    match v.ty {
        ptxjit::ast::Type::F32 => format!("{:e}", f32::from_bits(v.bits as u32)),
        ptxjit::ast::Type::F64 => format!("{:e}", f64::from_bits(v.bits)),
        t if t.is_signed() => format!("{}", ptxjit::interp::int::sext(v.bits, t.bits())),
        _ => format!("{}", v.bits),
    }
}

/// Launches a kernel on an engine with the given arguments.
pub type Launch<'a> = dyn Fn(&dyn Engine, &mut [Arg]) -> Result<(), RunError> + 'a;

/// Generates the arguments (from a seed derived from `name`), runs `host` (a command that
/// already has the harness's launch-shape arguments) on them for the expected buffers, then
/// launches `kernel` of `ptx` on every engine through `launch` and compares every buffer.
pub fn check_against_host(name: &str, ptx: &str, mut host: Command, args: &[Gen], launch: &Launch) {
    let mut rng = Rng::new(name.len() as u64 * 7919 + name.as_bytes()[0] as u64);
    // Inputs.
    let inputs: Vec<Option<Vec<u8>>> = args
        .iter()
        .map(|g| match g {
            Gen::Buf(elem, n, f) => Some(
                (0..*n)
                    .flat_map(|i| f(&mut rng, i).to_le_bytes()[..*elem].to_vec())
                    .collect(),
            ),
            Gen::Zeros(elem, n) => Some(vec![0; elem * n]),
            Gen::Scalar(_) => None,
        })
        .collect();
    // Expected: the host build of the same source.
    let exe = PathBuf::from(host.get_program());
    let tmp = exe.with_file_name(format!("{name}-io"));
    std::fs::create_dir_all(&tmp).unwrap();
    for (k, (g, input)) in args.iter().zip(&inputs).enumerate() {
        match (g, input) {
            (Gen::Scalar(v), _) => {
                host.arg(scalar_text(*v));
            }
            (_, Some(bytes)) => {
                let (i, o) = (tmp.join(format!("in{k}")), tmp.join(format!("out{k}")));
                std::fs::write(&i, bytes).unwrap();
                host.arg(format!("{}:{}", i.display(), o.display()));
            }
            _ => unreachable!(),
        }
    }
    let out = host.output().unwrap();
    assert!(
        out.status.success(),
        "host run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: Vec<Option<Vec<u8>>> = inputs
        .iter()
        .enumerate()
        .map(|(k, i)| {
            i.as_ref()
                .map(|_| std::fs::read(tmp.join(format!("out{k}"))).unwrap())
        })
        .collect();
    for (engine_name, engine) in engines_and_unchecked(ptx) {
        let mut bufs = inputs.clone();
        let mut launch_args: Vec<Arg> = Vec::new();
        for (g, b) in args.iter().zip(bufs.iter_mut()) {
            launch_args.push(match (g, b) {
                (Gen::Scalar(v), _) => Arg::Scalar(*v),
                (_, Some(b)) => Arg::Buffer(b.as_mut_slice()),
                _ => unreachable!(),
            });
        }
        launch(engine.as_ref(), &mut launch_args).unwrap_or_else(|e| panic!("{engine_name}: {e}"));
        drop(launch_args);
        for (k, (got, want)) in bufs.iter().zip(&expected).enumerate() {
            if let (Some(got), Some(want)) = (got, want)
                && got != want
            {
                let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap();
                panic!(
                    "{engine_name}: {name} arg{k} differs from the host at byte {at}: got {:02x?}, want {:02x?}",
                    &got[at..(at + 8).min(got.len())],
                    &want[at..(at + 8).min(want.len())]
                );
            }
        }
    }
}
