//! Extended-precision arithmetic (PTX ISA 9.7.2) on every engine, checked against wide-integer
//! models written here from the manual, never against an engine.

mod common;

use common::{Rng, engines};
use ptxjit::Value;

/// The manual's example for `madc` (9.7.2.6), verbatim: [r3,r2,r1,r0] = [r5,r4] * [r7,r6].
const MANUAL_MULTIWORD: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .func (.reg .u32 r0, .reg .u32 r1, .reg .u32 r2, .reg .u32 r3)
    mul64(.reg .u32 r4, .reg .u32 r5, .reg .u32 r6, .reg .u32 r7)
{
    mul.lo.u32     r0,r4,r6;      // r0=(r4*r6).[31:0], no carry-out
    mul.hi.u32     r1,r4,r6;      // r1=(r4*r6).[63:32], no carry-out
    mad.lo.cc.u32  r1,r5,r6,r1;   // r1+=(r5*r6).[31:0], may carry-out
    madc.hi.u32    r2,r5,r6,0;    // r2 =(r5*r6).[63:32]+carry-in,
                                  // no carry-out
    mad.lo.cc.u32   r1,r4,r7,r1;  // r1+=(r4*r7).[31:0], may carry-out
    madc.hi.cc.u32  r2,r4,r7,r2;  // r2+=(r4*r7).[63:32]+carry-in,
                                  // may carry-out
    addc.u32        r3,0,0;       // r3 = carry-in, no carry-out
    mad.lo.cc.u32   r2,r5,r7,r2;  // r2+=(r5*r7).[31:0], may carry-out
    madc.hi.u32     r3,r5,r7,r3;  // r3+=(r5*r7).[63:32]+carry-in
    ret;
}
"#;

#[test]
fn manual_multiword_multiply_matches_u128() {
    let mut rng = Rng::new(42);
    for (name, engine) in engines(MANUAL_MULTIWORD) {
        for i in 0..2000 {
            let (x, y) = match i {
                0 => (u64::MAX, u64::MAX),
                1 => (0, u64::MAX),
                2 => (1 << 32, (1 << 32) - 1),
                _ => (
                    rng.next_u64() >> rng.below(64),
                    rng.next_u64() >> rng.below(64),
                ),
            };
            let words = [x as u32, (x >> 32) as u32, y as u32, (y >> 32) as u32];
            let args: Vec<Value> = words.iter().map(|w| Value::u32(*w)).collect();
            let got = engine
                .call("mul64", &args)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let product = x as u128 * y as u128;
            let want: Vec<Value> = (0..4)
                .map(|k| Value::u32((product >> (32 * k)) as u32))
                .collect();
            assert_eq!(got, want, "{name}: {x:#x} * {y:#x}");
        }
    }
}

/// One step of a random carry chain.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// add.cc / addc{.cc} / sub.cc / subc{.cc}
    AddSub { sub: bool, cin: bool, cout: bool },
    /// mad{c}.lo/.hi{.cc}
    Mad { hi: bool, cin: bool, cout: bool },
}

struct Step {
    op: Op,
    d: usize,
    a: usize,
    /// Register index, or an immediate when `b_imm` is set.
    b: usize,
    b_imm: Option<u64>,
    c: usize,
    /// Guarded by `@%p` (`Some(false)`) or `@!%p` (`Some(true)`).
    guard: Option<bool>,
}

/// The model: the manual's semantics in u128, CF as NOT borrow for subtraction; `mad.hi` of
/// a signed type takes the high half of the signed product.
fn model(steps: &[Step], bits: u32, signed: bool, regs: &mut [u128; 4], p: bool) {
    let sext = |v: u128| -> i128 { ((v << (128 - bits)) as i128) >> (128 - bits) };
    let m = (1u128 << bits) - 1;
    let mut cf = 0u128;
    for s in steps {
        if let Some(neg) = s.guard
            && p == neg
        {
            continue;
        }
        let a = regs[s.a];
        let b = s.b_imm.map_or(regs[s.b], |v| v as u128 & m);
        let (sum, cout) = match s.op {
            Op::AddSub {
                sub: false,
                cin,
                cout,
            } => (a + b + if cin { cf } else { 0 }, cout),
            Op::AddSub {
                sub: true,
                cin,
                cout,
            } => (a + (!b & m) + if cin { cf } else { 1 }, cout),
            Op::Mad { hi, cin, cout } => {
                let prod = if signed {
                    (sext(a) * sext(b)) as u128
                } else {
                    a * b
                };
                let half = if hi { (prod >> bits) & m } else { prod & m };
                (half + regs[s.c] + if cin { cf } else { 0 }, cout)
            }
        };
        regs[s.d] = sum & m;
        if cout {
            cf = (sum >> bits) & 1;
        }
    }
}

/// `zeroed`: %x2 and %x3 start as the constant 0 (`mov %x, 0`, as bignum code clears its
/// accumulator limbs), so that steps meet operands the JIT knows to be zero.
fn text(steps: &[Step], ty: &str, zeroed: bool) -> String {
    let mut body = String::new();
    for s in steps {
        let guard = match s.guard {
            None => "",
            Some(false) => "@%p ",
            Some(true) => "@!%p ",
        };
        let b = s.b_imm.map_or(format!("%x{}", s.b), |v| v.to_string());
        let line = match s.op {
            Op::AddSub { sub, cin, cout } => {
                let base = if sub { "sub" } else { "add" };
                let name = match (cin, cout) {
                    (false, _) => format!("{base}.cc"),
                    (true, true) => format!("{base}c.cc"),
                    (true, false) => format!("{base}c"),
                };
                format!("{guard}{name}{ty} %x{}, %x{}, {b};", s.d, s.a)
            }
            Op::Mad { hi, cin, cout } => {
                let half = if hi { ".hi" } else { ".lo" };
                let name = if cin { "madc" } else { "mad" };
                let cc = if cout { ".cc" } else { "" };
                format!(
                    "{guard}{name}{half}{cc}{ty} %x{}, %x{}, {b}, %x{};",
                    s.d, s.a, s.c
                )
            }
        };
        body.push_str("    ");
        body.push_str(&line);
        body.push('\n');
    }
    let (x2, x3) = if zeroed { ("0", "0") } else { ("%i2", "%i3") };
    format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n\
         .visible .func (.reg {ty} %r0, .reg {ty} %r1, .reg {ty} %r2, .reg {ty} %r3)\n\
         f(.reg {ty} %i0, .reg {ty} %i1, .reg {ty} %i2, .reg {ty} %i3, .reg .u32 %flag)\n{{\n\
         .reg {ty} %x<4>;\n.reg .pred %p;\n\
         mov{ty} %x0, %i0;\nmov{ty} %x1, %i1;\nmov{ty} %x2, {x2};\nmov{ty} %x3, {x3};\n\
         setp.ne.u32 %p, %flag, 0;\n\
         add.cc{ty} %x0, %x0, 0;\n\
         {body}\
         mov{ty} %r0, %x0;\nmov{ty} %r1, %x1;\nmov{ty} %r2, %x2;\nmov{ty} %r3, %x3;\nret;\n}}\n"
    )
}

#[test]
fn random_carry_chains_match_the_wide_model() {
    let mut rng = Rng::new(7);
    let edge = [
        0u64,
        1,
        u64::MAX,
        u64::MAX - 1,
        1 << 31,
        (1 << 32) - 1,
        1 << 63,
    ];
    for program in 0..120 {
        let (ty, bits) = match program % 4 {
            0 => (".u32", 32),
            1 => (".s32", 32),
            2 => (".u64", 64),
            _ => (".s64", 64),
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let steps: Vec<Step> = (0..14)
            .map(|_| {
                let (cin, cout) = (rng.below(2) == 1, rng.below(3) != 0);
                let op = if rng.below(3) == 0 {
                    Op::Mad {
                        hi: rng.below(2) == 1,
                        cin,
                        cout: cout || !cin,
                    }
                } else {
                    // add.cc and sub.cc always write CF; addc/subc may not.
                    Op::AddSub {
                        sub: rng.below(2) == 1,
                        cin,
                        cout: cout || !cin,
                    }
                };
                Step {
                    op,
                    d: rng.below(4) as usize,
                    a: rng.below(4) as usize,
                    b: rng.below(4) as usize,
                    b_imm: (rng.below(5) == 0)
                        .then(|| edge[rng.below(edge.len() as u64) as usize] & mask),
                    c: rng.below(4) as usize,
                    guard: match rng.below(6) {
                        0 => Some(false),
                        1 => Some(true),
                        _ => None,
                    },
                }
            })
            .collect();
        // Immediates must fit the type: for signed types, keep them within the signed range.
        let steps: Vec<Step> = steps
            .into_iter()
            .map(|mut s| {
                if ty.starts_with(".s") {
                    s.b_imm = s.b_imm.map(|v| v & (mask >> 1));
                }
                s
            })
            .collect();
        let zeroed = program % 3 == 0;
        let ptx = text(&steps, ty, zeroed);
        for (name, engine) in engines(&ptx) {
            for _ in 0..16 {
                let inputs: Vec<u64> = (0..4)
                    .map(|_| if rng.below(3) == 0 { edge[rng.below(edge.len() as u64) as usize] } else { rng.next_u64() } & mask)
                    .collect();
                let flag = rng.below(2);
                let vty = match ty {
                    ".u32" => ptxjit::ast::Type::U32,
                    ".s32" => ptxjit::ast::Type::S32,
                    ".u64" => ptxjit::ast::Type::U64,
                    _ => ptxjit::ast::Type::S64,
                };
                let mut args: Vec<Value> = inputs.iter().map(|v| Value::new(vty, *v)).collect();
                args.push(Value::u32(flag as u32));
                let got = engine
                    .call("f", &args)
                    .unwrap_or_else(|e| panic!("{name}: {e}\n{ptx}"));
                let mut regs = [0u128; 4];
                for k in 0..4 {
                    regs[k] = if zeroed && k >= 2 {
                        0
                    } else {
                        inputs[k] as u128
                    };
                }
                model(&steps, bits, ty.starts_with(".s"), &mut regs, flag != 0);
                let want: Vec<Value> = regs.iter().map(|r| Value::new(vty, *r as u64)).collect();
                assert_eq!(got, want, "{name}: inputs {inputs:x?} flag {flag}\n{ptx}");
            }
        }
    }
}
