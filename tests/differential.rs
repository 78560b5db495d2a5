//! Random PTX programs (src/generate/) on both engines, outputs compared bit for bit. A
//! bounded count runs here; `cargo run --release --example diff_fuzz -- --seconds N` runs
//! the same check for as long as asked (see the README). Each disagreement is reported
//! shrunk, with its input, and becomes a regression test below.

use ptxjit::diff::check_program;
use ptxjit::generate::{Layout, Rng, array_program, program};

#[test]
fn random_programs_agree_on_both_engines() {
    let programs: usize = std::env::var("PTXJIT_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng::new(7);
    let (mut calls, mut locals, mut video, mut loops, mut atomics) = (0, 0, 0, 0, 0);
    for n in 0..programs {
        let size = 10 + rng.below(40) as usize;
        let p = program(&mut rng, size);
        let body = p.body.concat();
        calls += body.contains("call (pr), h") as usize;
        locals += body.contains("[loc+") as usize;
        video += body.contains("vmad") as usize;
        loops += body.contains("@%lp bra") as usize;
        atomics += (body.contains("atom") || body.contains("red.")) as usize;
        if let Some(d) = check_program(&p, &mut rng, 32).disagreement {
            panic!(
                "program {n}: {}\n--- shrunk program:\n{}\n--- inputs: {}",
                d.difference,
                d.program.ptx(),
                ptxjit::diff::describe_inputs(&d.input)
            );
        }
    }
    // The generator reaches every shape it promises.
    for (what, n) in [
        ("calls", calls),
        ("locals", locals),
        ("vmad", video),
        ("loops", loops),
        ("atomics", atomics),
    ] {
        assert!(
            n > programs / 10,
            "only {n} of {programs} programs have {what}"
        );
    }
}

/// Element-wise programs for the JIT's SIMD lanes (`generate/arrays.rs`): groups that leave
/// part way, stores onto other threads' elements and into the arrays being read, checked and
/// unchecked. Most must run (at least partly) in lanes, or this would test the thread loop
/// only.
#[test]
fn random_array_programs_agree_and_run_in_lanes() {
    let programs: usize = std::env::var("PTXJIT_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
        / 2;
    let mut rng = Rng::new(8);
    let (mut in_lanes, mut blocks, mut rows) = (0, 0, 0);
    for n in 0..programs {
        let size = 5 + rng.below(30) as usize;
        let p = array_program(&mut rng, size);
        if let Layout::Arrays { grid, block } = p.layout {
            blocks += (grid.x > 1) as usize;
            rows += (block.y > 1) as usize;
        }
        let report = check_program(&p, &mut rng, 8);
        if let Some(d) = report.disagreement {
            panic!(
                "array program {n}: {}\n--- shrunk program:\n{}\n--- inputs: {}",
                d.difference,
                d.program.ptx(),
                ptxjit::diff::describe_inputs(&d.input)
            );
        }
        in_lanes += (report.lane_threads > 0) as usize;
    }
    assert!(
        in_lanes > programs / 2,
        "only {in_lanes} of {programs} array programs ran in lanes"
    );
    // The launches vary: several blocks, and 2-D blocks whose rows are not whole groups.
    assert!(
        blocks > programs / 20 && rows > programs / 20,
        "{blocks} of {programs} array programs launch several blocks, {rows} 2-D blocks"
    );
}
