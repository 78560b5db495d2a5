//! PTX's float arithmetic gives the canonical NaN (`0x7fffffff` for `.f32`, PTX ISA 9.7.3),
//! where x86 gives its default NaN (`0xffc00000`) or an input's payload. The JIT leaves out
//! the canonical form where no instruction can see a payload (src/jit/lower/float/nan.rs):
//! these tests feed NaNs of every origin through chains whose results are observed by
//! `mov`, `neg`, `max`, comparisons and branches, against a model of the manual's rules on
//! Rust's own IEEE arithmetic, on every engine; and pin that a chain pays once.

mod common;

use common::{call3, engines, jit_with, three_operand_module};
use ptxjit::JitOptions;
use ptxjit::jit::Emit;

const HEADER: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";
const DECLS: &str = "  .reg .f32 %x, %y, %z, %w;\n  .reg .pred %p;\n";

const CANONICAL: u32 = 0x7fff_ffff;

/// The manual's result of float arithmetic: any NaN is the canonical one.
fn ptx(v: f32) -> u32 {
    if v.is_nan() { CANONICAL } else { v.to_bits() }
}

/// Bits back to a float (the model works on what PTX registers hold).
fn f(bits: u32) -> f32 {
    f32::from_bits(bits)
}

/// `max.f32` (9.7.3.11): a NaN operand gives the other; two give the canonical NaN.
fn ptx_max(a: u32, b: u32) -> u32 {
    match (f(a).is_nan(), f(b).is_nan()) {
        (true, true) => CANONICAL,
        (true, false) => b,
        (false, true) => a,
        // Rust's max orders -0.0 and +0.0 as equal; PTX's max gives +0.0.
        _ if f(a) == f(b) => a & b,
        _ => ptx(f(a).max(f(b))),
    }
}

type Model = Box<dyn Fn(u32, u32, u32) -> u32>;

/// `(body, model of %d from the bits of a, b, c)`; `%x`, `%y` hold `a`, `b` as floats.
fn cases() -> Vec<(&'static str, Model)> {
    let load = "mov.b32 %x, %a; mov.b32 %y, %b;";
    let v: Vec<(&str, Model)> = vec![
        // A chain: the product is read only by the sum; the sum is observed.
        (
            "mul.rn.f32 %z, %x, %y; add.rn.f32 %w, %z, %x; mov.b32 %d, %w;",
            Box::new(|a, b, _| ptx(f(ptx(f(a) * f(b))) + f(a))),
        ),
        // Three links and an fma.
        (
            "mul.rn.f32 %z, %x, %y; add.rn.f32 %z, %z, %y; fma.rn.f32 %w, %z, %x, %y; \
             sub.rn.f32 %w, %w, %x; mov.b32 %d, %w;",
            Box::new(|a, b, _| {
                let z = f(ptx(f(ptx(f(a) * f(b))) + f(b)));
                let w = f(ptx(z.mul_add(f(a), f(b))));
                ptx(w - f(a))
            }),
        ),
        // The product itself observed by a move.
        (
            "mul.rn.f32 %z, %x, %y; mov.b32 %d, %z;",
            Box::new(|a, b, _| ptx(f(a) * f(b))),
        ),
        // `neg` flips the sign bit, but gives a NaN as the canonical NaN (as an H200:
        // tests/hardware/cases/nan_f32.ptx), whatever NaN it gets.
        (
            "mul.rn.f32 %z, %x, %y; add.rn.f32 %w, %z, %x; neg.f32 %w, %w; mov.b32 %d, %w;",
            Box::new(|a, b, _| ptx(-f(ptx(f(ptx(f(a) * f(b))) + f(a))))),
        ),
        // `abs` clears it, likewise.
        (
            "add.rn.f32 %z, %x, %y; abs.f32 %w, %z; mov.b32 %d, %w;",
            Box::new(|a, b, _| ptx(f(ptx(f(a) + f(b)) & 0x7fff_ffff))),
        ),
        // `neg` of a NaN that no arithmetic made.
        (
            "neg.f32 %w, %x; mov.b32 %d, %w;",
            Box::new(|a, _, _| ptx(-f(a))),
        ),
        // Read after a label (another block) by a move, or overwritten first.
        (
            "mul.rn.f32 %z, %x, %y; setp.eq.u32 %p, %c, 0; @%p bra DONE; \
             add.rn.f32 %z, %z, %x; DONE: mov.b32 %d, %z;",
            Box::new(|a, b, c| {
                let z = ptx(f(a) * f(b));
                if c == 0 { z } else { ptx(f(z) + f(a)) }
            }),
        ),
        // A comparison reads it (blind to payloads); a select shows the answer.
        (
            "mul.rn.f32 %z, %x, %y; setp.nan.f32 %p, %z, %z; selp.b32 %d, 1, 2, %p;",
            Box::new(|a, b, _| if (f(a) * f(b)).is_nan() { 1 } else { 2 }),
        ),
        // `max` with one NaN gives the other operand.
        (
            "mul.rn.f32 %z, %x, %y; max.f32 %w, %z, %y; mov.b32 %d, %w;",
            Box::new(|a, b, _| ptx_max(ptx(f(a) * f(b)), b)),
        ),
        // `.sat` makes a NaN +0.0.
        (
            "mul.rn.f32 %z, %x, %y; add.rn.sat.f32 %w, %z, %x; mov.b32 %d, %w;",
            Box::new(|a, b, _| {
                let s = f(ptx(f(ptx(f(a) * f(b))) + f(a)));
                if s.is_nan() || s <= 0.0 {
                    0
                } else {
                    s.min(1.0).to_bits()
                }
            }),
        ),
        // A product read by a sum under a guard, then by a move.
        (
            "mul.rn.f32 %z, %x, %y; setp.ne.u32 %p, %c, 0; @%p add.rn.f32 %w, %z, %x; \
             @!%p mov.f32 %w, %z; mov.b32 %d, %w;",
            Box::new(|a, b, c| {
                let z = ptx(f(a) * f(b));
                if c != 0 { ptx(f(z) + f(a)) } else { z }
            }),
        ),
        // An escape-time loop: its floats leave it only through comparisons.
        (ESCAPE, Box::new(|a, b, c| escape(a, b, c).0)),
        // An accumulator: made canonical where the move reads it, not in the loop.
        (
            ACCUMULATE,
            Box::new(|a, b, c| {
                let mut z = 0.0f32;
                for _ in 0..=c {
                    z += f(a) * f(b);
                }
                ptx(z)
            }),
        ),
        // The same loop, its last value observed by a move.
        (
            ESCAPE_OBSERVED,
            Box::new(|a, b, c| ptx(f32::from_bits(escape(a, b, c).1))),
        ),
    ];
    v.into_iter()
        .map(|(body, m)| {
            let text: &'static str = Box::leak(format!("{load} {body}").into_boxed_str());
            (text, m)
        })
        .collect()
}

/// `x = x * x + y` until `x > 4` or `%c` rounds have run (at least one); `%d` the count of
/// rounds that did not escape.
const ESCAPE: &str = "mov.u32 %d, 0; \
     LOOP: mul.rn.f32 %z, %x, %x; add.rn.f32 %x, %z, %y; setp.gt.f32 %p, %x, 0f40800000; \
     @%p bra DONE; add.u32 %d, %d, 1; setp.lt.u32 %p, %d, %c; @%p bra LOOP; DONE:";
const ESCAPE_OBSERVED: &str = "mov.u32 %d, 0; \
     LOOP: mul.rn.f32 %z, %x, %x; add.rn.f32 %x, %z, %y; setp.gt.f32 %p, %x, 0f40800000; \
     @%p bra DONE; add.u32 %d, %d, 1; setp.lt.u32 %p, %d, %c; @%p bra LOOP; DONE: \
     mov.b32 %d, %x;";

/// `%z += %x * %y`, `%c + 1` times; `%d` the sum's bits.
const ACCUMULATE: &str = "mov.f32 %z, 0f00000000; mov.u32 %d, 0; \
     LOOP: mul.rn.f32 %w, %x, %y; add.rn.f32 %z, %z, %w; add.u32 %d, %d, 1; \
     setp.le.u32 %p, %d, %c; @%p bra LOOP; mov.b32 %d, %z;";

/// The escape loop on Rust floats: (count, bits of the last x).
fn escape(a: u32, b: u32, c: u32) -> (u32, u32) {
    let (mut x, mut d) = (f(a), 0);
    loop {
        x = x * x + f(b);
        if x > 4.0 {
            break;
        }
        d += 1;
        if d >= c {
            break;
        }
    }
    (d, x.to_bits())
}

/// Values whose products and sums reach every NaN origin: inf × 0 (x86's default NaN),
/// inf − inf, quiet NaNs with payloads of either sign, a signalling NaN.
const INPUTS: [u32; 9] = [
    0x7f80_0000, // +inf
    0xff80_0000, // -inf
    0,
    0x3f80_0000, // 1.0
    0xc020_0000, // -2.5
    0x7fc1_2345, // quiet NaN, payload
    0xffc0_dead, // negative quiet NaN, payload
    0x7fa0_0001, // signalling NaN
    CANONICAL,
];

#[test]
fn nan_results_are_canonical_wherever_observed() {
    let cases = cases();
    let ptx = three_operand_module(HEADER, DECLS, 0, cases.iter().map(|(t, _)| t.to_string()));
    for (engine, e) in engines(&ptx) {
        for (k, (text, model)) in cases.iter().enumerate() {
            for &a in &INPUTS {
                for &b in &INPUTS {
                    for c in [0, 1] {
                        let got = call3(e.as_ref(), &format!("f{k}"), a, b, c);
                        let want = model(a, b, c);
                        assert_eq!(
                            got, want,
                            "{engine}: `{text}` with a={a:#x} b={b:#x} c={c}: {got:#x}, want {want:#x}"
                        );
                    }
                }
            }
        }
    }
}

/// The unordered comparisons (the canonical-NaN tests) in a function's CLIF.
fn nan_tests(ptx: &str) -> usize {
    let jit = jit_with(
        ptx,
        JitOptions {
            emit: Emit::Clif,
            ..JitOptions::default()
        },
    );
    let (_, clif) = jit
        .listing
        .iter()
        .find(|(n, _)| n == "f0")
        .unwrap_or_else(|| panic!("no listing of f0"));
    clif.matches("fcmp uno").count()
}

#[test]
fn a_chain_makes_its_nan_canonical_once() {
    // A dot product of four terms: seven operations, one result observed.
    let chain = "mov.b32 %x, %a; mov.b32 %y, %b; mul.rn.f32 %z, %x, %y; \
                 mul.rn.f32 %w, %y, %y; add.rn.f32 %z, %z, %w; mul.rn.f32 %w, %x, %x; \
                 add.rn.f32 %z, %z, %w; fma.rn.f32 %z, %x, %y, %z; mov.b32 %d, %z;";
    let ptx = three_operand_module(HEADER, DECLS, 0, [chain.to_string()]);
    assert_eq!(nan_tests(&ptx), 1, "one canonical NaN for the chain");
    // Each result observed by a move: every one pays.
    let observed = "mov.b32 %x, %a; mov.b32 %y, %b; mul.rn.f32 %z, %x, %y; mov.b32 %c, %z; \
                    add.rn.f32 %z, %z, %y; mov.b32 %d, %z; add.u32 %d, %d, %c;";
    let ptx = three_operand_module(HEADER, DECLS, 0, [observed.to_string()]);
    assert_eq!(nan_tests(&ptx), 2, "both results observed");
}

#[test]
fn loops_make_their_nans_canonical_where_observed() {
    let load = "mov.b32 %x, %a; mov.b32 %y, %b;";
    let ptx = three_operand_module(HEADER, DECLS, 0, [format!("{load} {ESCAPE}")]);
    assert_eq!(
        nan_tests(&ptx),
        0,
        "the loop's values meet only arithmetic and setp"
    );
    let ptx = three_operand_module(HEADER, DECLS, 0, [format!("{load} {ESCAPE_OBSERVED}")]);
    assert!(nan_tests(&ptx) > 0, "the last value is observed");
    let ptx = three_operand_module(HEADER, DECLS, 0, [format!("{load} {ACCUMULATE}")]);
    assert_eq!(
        nan_tests(&ptx),
        1,
        "the sum made canonical once, where it is read"
    );
}

/// A barrier kernel run a warp at a time in SIMD lanes (unchecked): each thread works out
/// `z = x * y`, `w = z + x`, `v = w * y` and stores `v` and the bits of `z` (through a
/// `mov`, which sees a payload).
const LANES: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a, .param .u64 b, .param .u64 out)
{
    .reg .u32 %t, %r;
    .reg .u64 %pa, %pb, %po, %x4, %x8, %qa, %qb, %qo;
    .reg .f32 %x, %y, %z, %w, %v;
    ld.param.u64 %pa, [a];
    ld.param.u64 %pb, [b];
    ld.param.u64 %po, [out];
    mov.u32 %t, %tid.x;
    mul.wide.u32 %x4, %t, 4;
    add.s64 %qa, %pa, %x4;
    add.s64 %qb, %pb, %x4;
    mul.wide.u32 %x8, %t, 8;
    add.s64 %qo, %po, %x8;
    ld.global.f32 %x, [%qa];
    ld.global.f32 %y, [%qb];
    bar.sync 0;
    mul.rn.f32 %z, %x, %y;
    add.rn.f32 %w, %z, %x;
    mul.rn.f32 %v, %w, %y;
    mov.b32 %r, %z;
    st.global.f32 [%qo], %v;
    st.global.u32 [%qo+4], %r;
    ret;
}
"#;

#[test]
fn lanes_make_nans_canonical_where_observed() {
    // 32 threads: every pair of the inputs, NaNs of each kind among them.
    let pairs: Vec<(u32, u32)> = (0..32)
        .map(|i| {
            (
                INPUTS[i % INPUTS.len()],
                INPUTS[(i / INPUTS.len() + i) % INPUTS.len()],
            )
        })
        .collect();
    let bytes = |v: Vec<u32>| -> Vec<u8> { v.into_iter().flat_map(u32::to_le_bytes).collect() };
    let want: Vec<u32> = (pairs.iter())
        .flat_map(|&(a, b)| {
            let z = ptx(f(a) * f(b));
            let w = ptx(f(z) + f(a));
            [ptx(f(w) * f(b)), z]
        })
        .collect();
    for (engine, e) in common::engines_and_unchecked(LANES) {
        let mut a = bytes(pairs.iter().map(|p| p.0).collect());
        let mut b = bytes(pairs.iter().map(|p| p.1).collect());
        let mut out = vec![0u8; 8 * 32];
        e.launch(
            "k",
            ptxjit::Dim3::x(1),
            ptxjit::Dim3::x(32),
            &mut [
                ptxjit::Arg::Buffer(&mut a),
                ptxjit::Arg::Buffer(&mut b),
                ptxjit::Arg::Buffer(&mut out),
            ],
        )
        .unwrap_or_else(|err| panic!("{engine}: {err}"));
        let got: Vec<u32> = (out.chunks(4))
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, want, "{engine}");
    }
    // In the group function, `z` is made canonical where the `mov` reads it and `v` where
    // the store reads it, `w` nowhere: two tests per vector of lanes (8 vectors for 32
    // lanes, 4 for 16), where every result made canonical would be three.
    let jit = jit_with(
        LANES,
        JitOptions {
            checked: false,
            emit: Emit::Clif,
            ..JitOptions::default()
        },
    );
    for (lanes, want) in [(32, 16), (16, 8)] {
        let (_, clif) = (jit.listing.iter())
            .find(|(n, _)| *n == format!("k.groups{lanes}"))
            .unwrap_or_else(|| panic!("no group function of {lanes} lanes"));
        assert_eq!(clif.matches("fcmp uno").count(), want, "{lanes} lanes");
    }
}
