//! Random PTX programs (src/generate.rs) on both engines, outputs compared bit for bit. A
//! bounded count runs here; `cargo run --release --example diff_fuzz -- --seconds N` runs
//! the same check for as long as asked (see the README). Each disagreement is reported
//! shrunk, with its input, and becomes a regression test below.

use ptxjit::diff::check_program;
use ptxjit::generate::{Rng, program};

#[test]
fn random_programs_agree_on_both_engines() {
    let programs: usize = std::env::var("PTXJIT_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng::new(7);
    let (mut calls, mut locals, mut video, mut loops) = (0, 0, 0, 0);
    for n in 0..programs {
        let size = 10 + rng.below(40) as usize;
        let p = program(&mut rng, size);
        let body = p.body.concat();
        calls += body.contains("call (pr), h") as usize;
        locals += body.contains("[loc+") as usize;
        video += body.contains("vmad") as usize;
        loops += body.contains("@%lp bra") as usize;
        if let Some(d) = check_program(&p, &mut rng, 32) {
            panic!(
                "program {n}: {}\n--- shrunk program:\n{}\n--- input bytes: {:02x?}",
                d.difference,
                d.program.ptx(),
                d.input
            );
        }
    }
    // The generator reaches every shape it promises.
    for (what, n) in [
        ("calls", calls),
        ("locals", locals),
        ("vmad", video),
        ("loops", loops),
    ] {
        assert!(
            n > programs / 10,
            "only {n} of {programs} programs have {what}"
        );
    }
}
