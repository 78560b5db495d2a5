//! What NVIDIA hardware gives, word for word: the kernels in tests/hardware/cases/ (points PTX
//! leaves open or where the manual and the hardware may differ: NaN payloads, division by
//! zero, conversions of NaN, video instructions, warp collectives with absent lanes, ...) were
//! run on a GPU by `tests/hardware/run_on_gpu.py`, and their output buffers are recorded in
//! tests/hardware/records/. Every engine (and the JIT's soft-float fallback) must produce the
//! recorded words, except where [`NOT_FOLLOWED`] says why not.
//!
//! A case's header says how it was launched (`// block:`, `// in:`, `// out:`, and
//! `// shared:` for dynamic shared memory); the generated
//! cases (tests/hardware/make_cases.py) store each instruction's result in a slot of their
//! own, so a difference is reported with the instruction that made it.

mod common;

use ptxjit::{Arg, Dim3, Engine, JitOptions, LaunchConfig};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Instructions whose recorded results ptxjit does not give, each with the reason: a case
/// and the start of an instruction's text (the whole text for one instruction; empty: every
/// word of the case).
const NOT_FOLLOWED: &[(&str, &str, &str)] = &[
    (
        "nan_f32",
        "sin.approx",
        "`.approx` functions: ptxjit's defined result (docs/semantics.md, \".approx functions\")",
    ),
    ("nan_f32", "tanh.approx", "`.approx` functions, as above"),
    (
        "approx_special",
        "ex2.approx",
        "`.approx` functions, as above (they agree at the specials)",
    ),
    (
        "approx_special",
        "lg2.approx",
        "`.approx` functions, as above",
    ),
    (
        "approx_special",
        "sin.approx",
        "`.approx` functions, as above",
    ),
    (
        "approx_special",
        "cos.approx",
        "`.approx` functions, as above",
    ),
    (
        "approx_special",
        "rsqrt.approx",
        "`.approx` functions, as above",
    ),
    (
        "approx_special",
        "tanh.approx",
        "`.approx` functions, as above",
    ),
    (
        "approx_sweep",
        "",
        "`.approx` functions: bounded by `approximations_stay_near_the_hardwares`",
    ),
    ("nan_f16", "tanh.approx", "`.approx` functions, as above"),
    ("nan_bf16", "tanh.approx", "`.approx` functions, as above"),
    (
        "float_nan",
        "max.f64 %d, %dnegnan, %dnan;",
        "two NaN operands: ptxas's code for min/max.f64 gives either (nan_f64 has b's for this max)",
    ),
];

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hardware")
}

/// A case's launch, from its header comments.
struct Case {
    name: String,
    ptx: String,
    block: u32,
    words_in: Vec<u32>,
    words_out: usize,
    shared_bytes: u32,
}

fn number(text: &str) -> u32 {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    }
    .unwrap_or_else(|e| panic!("`{text}` in a case header: {e}"));
    let value = value as u32;
    if negative {
        value.wrapping_neg()
    } else {
        value
    }
}

fn case(path: &Path) -> Case {
    let ptx = std::fs::read_to_string(path).unwrap();
    let (mut block, mut words_in, mut words_out, mut shared_bytes) = (None, Vec::new(), None, 0);
    for line in ptx.lines() {
        let Some(comment) = line.trim().strip_prefix("//") else {
            continue;
        };
        match comment.trim().split_once(':') {
            Some(("block", v)) => block = Some(number(v.trim())),
            Some(("in", v)) => words_in.extend(v.split_whitespace().map(number)),
            Some(("out", v)) => words_out = Some(number(v.trim()) as usize),
            Some(("shared", v)) => shared_bytes = number(v.trim()),
            _ => {}
        }
    }
    Case {
        name: path.file_stem().unwrap().to_string_lossy().into_owned(),
        block: block.expect("a `// block:` line"),
        words_out: words_out.expect("an `// out:` line"),
        words_in,
        shared_bytes,
        ptx,
    }
}

/// The recorded words of each case, and the device they came from.
fn records() -> (String, BTreeMap<String, Vec<u32>>) {
    let path = here().join("records/h200.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut device = String::new();
    let mut cases = BTreeMap::new();
    for line in text.lines() {
        if let Some(comment) = line.strip_prefix('#') {
            device += comment.trim();
            continue;
        }
        let mut fields = line.split_whitespace();
        let name = fields.next().unwrap().to_string();
        let words: Result<Vec<u32>, _> = fields.map(|w| u32::from_str_radix(w, 16)).collect();
        let words = words.unwrap_or_else(|_| panic!("{name}: the GPU reported {line}"));
        cases.insert(name, words);
    }
    (device, cases)
}

/// Launches a case's kernel as its header says (one block, the output buffer zeroed, its
/// dynamic shared memory): the output words.
fn launch(engine: &dyn Engine, engine_name: &str, case: &Case) -> Vec<u32> {
    let mut out = vec![0u8; 4 * case.words_out];
    let mut input: Vec<u8> = case.words_in.iter().flat_map(|w| w.to_le_bytes()).collect();
    if input.is_empty() {
        input = vec![0; 4];
    }
    let mut args = [Arg::Buffer(&mut out), Arg::Buffer(&mut input)];
    let config = LaunchConfig {
        grid: Dim3::x(1),
        block: Dim3::x(case.block),
        shared_bytes: case.shared_bytes,
    };
    engine
        .launch_with("k", config, &mut args)
        .unwrap_or_else(|e| panic!("{} on {engine_name}: {e}", case.name));
    out.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Which instruction wrote each output word of one thread, for the generated cases: their
/// kernels end in `op; st.global.tN [%o+offset], %reg;` pairs after `add.u64 %o, %o, %off;`
/// (or after their loads, where each thread has an output of its own).
fn slot_ops(ptx: &str) -> Vec<(usize, usize, String)> {
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let start = lines.iter().rposition(|l| *l == "add.u64 %o, %o, %off;");
    let Some(start) = start.or_else(|| lines.iter().rposition(|l| l.starts_with("ld."))) else {
        return Vec::new();
    };
    let (mut slots, mut op) = (Vec::new(), String::new());
    for line in &lines[start + 1..] {
        if let Some(store) = line.strip_prefix("st.global.") {
            let ty = store.split(' ').next().unwrap();
            let Ok(bits) = ty[1..].parse::<usize>() else {
                continue; // a vector store: not a generated case's
            };
            let Some((_, rest)) = store.split_once("[%o+") else {
                continue;
            };
            let offset: usize = rest.split(']').next().unwrap().parse().unwrap();
            slots.push((offset / 4, (offset + bits / 8).div_ceil(4), op.clone()));
        } else if !line.starts_with("mov.b32 %d, 0x5a5a5a5a") {
            op = line.to_string();
        }
    }
    slots
}

#[test]
fn every_engine_gives_what_the_hardware_gave() {
    let (device, recorded) = records();
    let mut paths: Vec<_> = std::fs::read_dir(here().join("cases"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "ptx"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 20, "the cases are missing");
    let mut failures = Vec::new();
    let mut not_followed_used = vec![0usize; NOT_FOLLOWED.len()];
    for path in paths {
        let case = case(&path);
        let expected = recorded
            .get(&case.name)
            .unwrap_or_else(|| panic!("{}: no record from {device}", case.name));
        assert_eq!(expected.len(), case.words_out, "{}: record size", case.name);
        let slots = slot_ops(&case.ptx);
        let per_thread = case.words_out / case.block as usize;
        let op_of = |word: usize| {
            let within = word % per_thread;
            slots
                .iter()
                .find(|(lo, hi, _)| (*lo..*hi).contains(&within))
                .map(|(_, _, op)| op.as_str())
        };
        let mut engines = common::engines_and_unchecked(&case.ptx);
        let soft_float = JitOptions {
            hardware_rounding: false,
            verify: true,
            ..JitOptions::default()
        };
        let soft_float = common::jit_with(&case.ptx, soft_float);
        engines.push(("jit (soft-float)", Box::new(soft_float)));
        for (engine_name, engine) in engines {
            let out = launch(engine.as_ref(), engine_name, &case);
            for (word, &got) in out.iter().enumerate() {
                if got == expected[word] {
                    continue;
                }
                let op = op_of(word).unwrap_or("");
                let excused = NOT_FOLLOWED
                    .iter()
                    .position(|(name, prefix, _)| *name == case.name && op.starts_with(prefix));
                match excused {
                    Some(k) => not_followed_used[k] += 1,
                    None => failures.push((
                        case.name.clone(),
                        op.to_string(),
                        format!(
                            "{} on {engine_name}: word {word} (thread {}, `{op}`): {got:#010x}, the GPU gave {:#010x}",
                            case.name,
                            word / per_thread,
                            expected[word]
                        ),
                    )),
                }
            }
        }
    }
    for ((name, prefix, _), used) in NOT_FOLLOWED.iter().zip(&not_followed_used) {
        assert!(
            *used > 0,
            "{name} `{prefix}` now agrees with the hardware: drop it from NOT_FOLLOWED"
        );
    }
    // One line for each instruction that differs: how many words, and the first of them.
    let mut by_op: BTreeMap<(String, String), (usize, String)> = BTreeMap::new();
    for (case, op, line) in &failures {
        let entry = by_op.entry((case.clone(), op.clone()));
        entry.or_insert((0, line.clone())).0 += 1;
    }
    let summary: Vec<_> = by_op
        .values()
        .map(|(n, first)| format!("{n:5} x {first}"))
        .collect();
    assert!(
        failures.is_empty(),
        "{} words differ from {device}:\n{}",
        failures.len(),
        summary.join("\n")
    );
}

/// Ours are not the hardware's approximations, but they stay close to them: on
/// tests/hardware/cases/approx_sweep.ptx (512 operands for each function, over its useful
/// range) every engine is within these distances of the H200, in units in the last place
/// (the f32 bit patterns' distance), or for sin and cos in absolute error (near their zeros
/// the units in the last place grow without meaning). The bounds are the measured maxima.
#[test]
fn approximations_stay_near_the_hardwares() {
    let (device, recorded) = records();
    let case = case(&here().join("cases/approx_sweep.ptx"));
    let expected = &recorded["approx_sweep"];
    // (function, bound, whether the bound is absolute rather than in units in the last place)
    let bounds = [
        ("ex2", 2.0, false),
        ("lg2", 3.0, false),
        ("sin", 1e-5, true),
        ("cos", 1e-5, true),
        ("rsqrt", 1.0, false),
        ("rcp", 1.0, false),
        ("sqrt", 1.0, false),
        ("tanh", 128.0, false),
    ];
    // A float's bits as a number that counts up through the floats, so the difference of two
    // is their distance in units in the last place.
    let ordered = |bits: u32| -> i64 {
        if bits >> 31 == 1 {
            -((bits & 0x7fff_ffff) as i64)
        } else {
            bits as i64
        }
    };
    for (engine_name, engine) in common::engines(&case.ptx) {
        let out = launch(engine.as_ref(), engine_name, &case);
        for (word, &got) in out.iter().enumerate() {
            let want = expected[word];
            let (name, bound, absolute) = bounds[word % bounds.len()];
            let distance = if absolute {
                (f32::from_bits(got) as f64 - f32::from_bits(want) as f64).abs()
            } else {
                (ordered(got) - ordered(want)).abs() as f64
            };
            assert!(
                distance <= bound,
                "{engine_name}: {name}.approx of {:#010x}: {got:#010x}, {device} gave {want:#010x}",
                case.words_in[word]
            );
        }
    }
}
