//! Random PTX programs (src/generate/) of the three shapes (per-thread slots, element-wise
//! arrays, cooperative kernels) on both engines, outputs compared bit for bit. A
//! bounded count runs here; `cargo run --release --example diff_fuzz -- --seconds N` runs
//! the same check for as long as asked (see docs/testing.md). Each disagreement is reported
//! shrunk, with its input, and becomes a regression test below.

use ptxjit::diff::check_program;
use ptxjit::generate::{Layout, Rng, array_program, coop_program, program};

#[test]
fn random_programs_agree_on_both_engines() {
    let programs: usize = std::env::var("PTXJIT_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng::new(7);
    let (mut calls, mut locals, mut video, mut loops, mut atomics) = (0, 0, 0, 0, 0);
    let mut product_rows = 0;
    for n in 0..programs {
        let size = 10 + rng.below(40) as usize;
        let p = program(&mut rng, size);
        let body = p.body.concat();
        calls += body.contains("call (pr), h") as usize;
        locals += body.contains("[loc+") as usize;
        video += body.contains("vmad") as usize;
        loops += body.contains("@%lp bra") as usize;
        atomics += (body.contains("atom") || body.contains("red.")) as usize;
        // Only product rows add an immediate 0 with carry (`addc t, t, 0`).
        product_rows += (p.body.iter())
            .any(|l| l.trim_start().starts_with("addc") && l.trim_end().ends_with(", 0;"))
            as usize;
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
        ("product rows", product_rows),
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

/// Whether body line `l` holds a barrier that waits (`bar.sync`, `barrier.sync`, with `.cta`
/// or not).
fn waits_at_barrier(l: &str) -> bool {
    [
        "bar.sync",
        "barrier.sync",
        "bar.cta.sync",
        "barrier.cta.sync",
    ]
    .iter()
    .any(|b| l.contains(b))
}

/// A test of a program's body lines.
type Has = dyn Fn(&[String]) -> bool;

/// Whether a barrier stands inside one of the body's loops.
fn barrier_in_loop(body: &[String]) -> bool {
    let mut in_loop = false;
    for l in body {
        if l.contains("mov.u32 %lc,") {
            in_loop = true;
        } else if l.contains("@%lp bra") {
            in_loop = false;
        } else if in_loop && waits_at_barrier(l) {
            return true;
        }
    }
    false
}

/// Cooperative kernels (`generate/coop.rs`): shared memory, barriers and warp collectives in
/// blocks with partial warps, sometimes several blocks and dynamic shared memory. Most must
/// complete; a block that cannot go on (a collective with the full mask under a divergent
/// guard, say) must fault alike on both engines, and no other fault may happen (every
/// access the generator makes is in bounds). Every family of instructions must appear.
#[test]
fn random_cooperative_programs_agree() {
    let programs: usize = std::env::var("PTXJIT_PROGRAMS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
        / 4;
    let mut rng = Rng::new(9);
    let families: &[(&str, &Has)] = &[
        ("barriers", &|b| b.iter().any(|l| waits_at_barrier(l))),
        ("barriers in loops", &barrier_in_loop),
        ("bar.arrive", &|b| b.concat().contains("bar.arrive")),
        ("bar.red", &|b| b.concat().contains("bar.red.")),
        ("bar.warp.sync", &|b| b.concat().contains("bar.warp.sync")),
        ("shfl.up", &|b| b.concat().contains("shfl.sync.up")),
        ("shfl.down", &|b| b.concat().contains("shfl.sync.down")),
        ("shfl.bfly", &|b| b.concat().contains("shfl.sync.bfly")),
        ("shfl.idx", &|b| b.concat().contains("shfl.sync.idx")),
        ("vote all/any/uni", &|b| {
            let b = b.concat();
            ["all", "any", "uni"]
                .iter()
                .any(|m| b.contains(&format!("vote.sync.{m}")))
        }),
        ("ballot", &|b| b.concat().contains("vote.sync.ballot")),
        ("match.any", &|b| b.concat().contains("match.any.sync")),
        ("match.all", &|b| b.concat().contains("match.all.sync")),
        ("redux", &|b| b.concat().contains("redux.sync")),
        ("activemask", &|b| b.concat().contains("activemask.b32")),
        ("elect", &|b| b.concat().contains("elect.sync")),
        ("lanemask", &|b| b.concat().contains("%lanemask_")),
        ("atom.shared", &|b| b.concat().contains("atom.shared")),
        ("red.shared", &|b| b.concat().contains("red.shared")),
        ("cvta.shared", &|b| b.concat().contains("cvta.shared")),
        ("cvta.to.shared", &|b| b.concat().contains("cvta.to.shared")),
        ("isspacep", &|b| b.concat().contains("isspacep")),
        ("exits", &|b| {
            let b = b.concat();
            b.contains("@%q exit") || b.contains("@%q ret") || b.contains("@%q bra $DONE")
        }),
        ("divergent collectives", &|b| {
            b.iter()
                .any(|l| l.contains("@%q activemask") || l.contains("@!%q bra"))
        }),
        ("dynamic shared", &|b| b.concat().contains("%db")),
        ("dynamic_smem_size", &|b| {
            b.concat().contains("%dynamic_smem_size")
        }),
    ];
    let mut seen = vec![0usize; families.len()];
    let (mut completed, mut stuck, mut blocks, mut partial, mut rows, mut dynamic) =
        (0, 0, 0, 0, 0, 0);
    for n in 0..programs {
        let size = 10 + rng.below(40) as usize;
        let p = coop_program(&mut rng, size);
        for (k, (_, has)) in families.iter().enumerate() {
            seen[k] += has(&p.body) as usize;
        }
        if let Layout::Coop {
            grid,
            block,
            shared_bytes,
            ..
        } = p.layout
        {
            blocks += (grid.x > 1) as usize;
            partial += !block.count().is_multiple_of(32) as usize;
            rows += (block.y > 1) as usize;
            dynamic += (shared_bytes > 0) as usize;
        }
        let report = check_program(&p, &mut rng, 8);
        if let Some(d) = report.disagreement {
            panic!(
                "cooperative program {n}: {}\n--- shrunk program:\n{}\n--- inputs: {}",
                d.difference,
                d.program.ptx(),
                ptxjit::diff::describe_inputs(&d.input)
            );
        }
        match report.fault {
            None => completed += 1,
            Some(f) if f.contains("the block cannot go on") => stuck += 1,
            Some(f) => panic!(
                "cooperative program {n} faults (but not by a stuck block):\n{f}\n{}",
                p.ptx()
            ),
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / programs as f64;
    eprintln!(
        "{programs} cooperative programs: {completed} completed, {stuck} with a stuck block; \
         launches: {:.0}% several blocks, {:.0}% partial warps, {:.0}% 2-D or 3-D blocks, \
         {:.0}% dynamic shared memory",
        pct(blocks),
        pct(partial),
        pct(rows),
        pct(dynamic)
    );
    for ((what, _), n) in families.iter().zip(&seen) {
        eprintln!("  {what}: {:.0}%", pct(*n));
        assert!(
            *n > programs / 25,
            "only {n} of {programs} cooperative programs have {what}"
        );
    }
    assert!(
        completed > programs * 4 / 5 && stuck > 0,
        "{completed} of {programs} cooperative programs completed, {stuck} had a stuck block"
    );
    assert!(
        blocks > programs / 10 && partial > programs / 5 && rows > programs / 10,
        "launches: {blocks} of {programs} with several blocks, {partial} with partial warps, \
         {rows} with 2-D blocks"
    );
    assert!(
        dynamic > programs / 5,
        "{dynamic} of {programs} have dynamic shared memory"
    );
}
