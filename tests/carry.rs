//! Extended-precision arithmetic (PTX ISA 9.7.2) on every engine, checked against wide-integer
//! models written here from the manual, never against an engine.

mod common;

use common::{Rng, engines};
use ptxjit::ast::Type;
use ptxjit::jit::Emit;
use ptxjit::{Arg, Dim3, JitOptions, Value};

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
fn model(steps: &[Step], bits: u32, signed: bool, regs: &mut [u128], p: bool) {
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

/// The PTX text of `steps`, a line each, on registers `%x<k>` (guards on `%p`).
fn steps_text(steps: &[Step], ty: &str) -> String {
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
    body
}

/// `zeroed`: %x2 and %x3 start as the constant 0 (`mov %x, 0`, as bignum code clears its
/// accumulator limbs), so that steps meet operands the JIT knows to be zero.
fn text(steps: &[Step], ty: &str, zeroed: bool) -> String {
    let body = steps_text(steps, ty);
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

// ---- product rows ---------------------------------------------------------------------------

/// A product added into limbs as GPU bignum code writes it (the JIT forms each product once
/// there: src/jit/lower/rows.rs): registers `%x0..` are the limbs `t` (`n + lo_tail`), then
/// the factors `y` (`n`), then `x`. The `mad.lo` row with `lo_tail` `addc` steps (the last
/// with `.cc` when `lo_last_cc`), then the `mad.hi` row one limb up with `hi_tail` steps (the
/// chain's last step with `.cc` when `hi_last_cc`).
struct Rows {
    n: usize,
    lo_tail: usize,
    lo_last_cc: bool,
    hi_tail: usize,
    hi_last_cc: bool,
}

impl Rows {
    fn limbs(&self) -> usize {
        self.n + self.lo_tail
    }

    fn registers(&self) -> usize {
        self.limbs() + self.n + 1
    }

    fn steps(&self) -> Vec<Step> {
        let (n, limbs) = (self.n, self.limbs());
        let x = limbs + n;
        let mad = |hi: bool, j: usize, d: usize, last: bool, last_cc: bool| Step {
            op: Op::Mad {
                hi,
                cin: j > 0,
                cout: !last || last_cc,
            },
            d,
            a: limbs + j,
            b: x,
            b_imm: None,
            c: d,
            guard: None,
        };
        let addc = |d: usize, last: bool, last_cc: bool| Step {
            op: Op::AddSub {
                sub: false,
                cin: true,
                cout: !last || last_cc,
            },
            d,
            a: d,
            b: 0,
            b_imm: Some(0),
            c: 0,
            guard: None,
        };
        let mut s = Vec::new();
        for j in 0..n {
            s.push(mad(false, j, j, false, true));
        }
        for k in 0..self.lo_tail {
            s.push(addc(n + k, k + 1 == self.lo_tail, self.lo_last_cc));
        }
        for j in 0..n {
            let last = j + 1 == n && self.hi_tail == 0;
            s.push(mad(true, j, j + 1, last, self.hi_last_cc));
        }
        for k in 0..self.hi_tail {
            let last = k + 1 == self.hi_tail;
            s.push(addc(n + 1 + k, last, self.hi_last_cc));
        }
        s
    }
}

/// A `.func f` taking and returning registers `%x0..%x{count-1}`, running `steps` on them.
fn registers_func(steps: &[Step], ty: &str, count: usize) -> String {
    let list = |p: &str| -> String {
        (0..count)
            .map(|k| format!(".reg {ty} %{p}{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n.visible .func ({}) f({})\n{{\n\
         .reg {ty} %x<{count}>;\n.reg .pred %p;\n",
        list("r"),
        list("i")
    );
    for k in 0..count {
        s += &format!("mov{ty} %x{k}, %i{k};\n");
    }
    s += &steps_text(steps, ty);
    for k in 0..count {
        s += &format!("mov{ty} %r{k}, %x{k};\n");
    }
    s + "ret;\n}\n"
}

/// How many times each CLIF operation of `ops` occurs in the function `f` of `ptx`.
fn clif_counts<const N: usize>(ptx: &str, ops: [&str; N]) -> [usize; N] {
    let options = JitOptions {
        emit: Emit::Clif,
        checked: false,
        lanes: false,
        ..JitOptions::default()
    };
    let jit = common::jit_with(ptx, options);
    let (_, clif) = (jit.listing.iter())
        .find(|(name, _)| name == "f")
        .expect("a listing of f");
    ops.map(|op| clif.matches(&format!(" = {op} ")).count())
}

/// Product rows of several shapes and widths against the manual's model, on every engine; the
/// shapes the JIT takes as one chain form each product once, the others twice.
#[test]
fn product_rows_match_the_wide_model() {
    let mut rng = Rng::new(11);
    let edge = [0u64, 1, u64::MAX, u64::MAX - 1, 1 << 63, (1 << 32) - 1];
    let shape = |n, lo_tail, lo_last_cc, hi_tail, hi_last_cc| Rows {
        n,
        lo_tail,
        lo_last_cc,
        hi_tail,
        hi_last_cc,
    };
    // (shape, what follows the rows, whether the JIT forms each product once)
    let cf_read = |limbs: usize| Step {
        op: Op::AddSub {
            sub: false,
            cin: true,
            cout: false,
        },
        d: limbs - 1,
        a: limbs - 1,
        b: 0,
        b_imm: Some(0),
        c: 0,
        guard: None,
    };
    let cases: Vec<(Rows, bool, bool)> = vec![
        // The benchmark's shape: two limbs above the row.
        (shape(4, 2, false, 1, false), false, true),
        (shape(1, 1, false, 0, false), false, true),
        (shape(3, 1, true, 0, true), false, true),
        (shape(5, 3, true, 2, true), false, true),
        // CC.CF read after the rows: as written.
        (shape(4, 2, false, 1, true), true, false),
        (shape(4, 2, false, 1, false), true, false),
        // The chains end at different limbs: as written.
        (shape(3, 2, false, 0, false), false, false),
    ];
    for (ty, bits) in [(".u32", 32u32), (".u64", 64)] {
        let mask = u64::MAX >> (64 - bits);
        let vty = if bits == 32 { Type::U32 } else { Type::U64 };
        for (rows, read_cf, once) in &cases {
            let mut steps = rows.steps();
            if *read_cf {
                steps.push(cf_read(rows.limbs()));
            }
            let count = rows.registers();
            let ptx = registers_func(&steps, ty, count);
            let [imul, umulhi] = clif_counts(&ptx, ["imul", "umulhi"]);
            // Taken as one chain, a u32 row multiplies two limbs at a time (32×64 bits).
            let once_products = if bits == 32 {
                rows.n.div_ceil(2)
            } else {
                rows.n
            };
            let want_shape = if *once {
                (once_products, 0)
            } else {
                (rows.n, rows.n)
            };
            assert_eq!((imul, umulhi), want_shape, "products formed\n{ptx}");
            for (name, engine) in engines(&ptx) {
                for _ in 0..64 {
                    let inputs: Vec<u64> = (0..count)
                        .map(|_| match rng.below(3) {
                            0 => edge[rng.below(edge.len() as u64) as usize],
                            _ => rng.next_u64(),
                        } & mask)
                        .collect();
                    let args: Vec<Value> = inputs.iter().map(|v| Value::new(vty, *v)).collect();
                    let got = engine
                        .call("f", &args)
                        .unwrap_or_else(|e| panic!("{name}: {e}\n{ptx}"));
                    let mut regs: Vec<u128> = inputs.iter().map(|&v| v as u128).collect();
                    model(&steps, bits, false, &mut regs, false);
                    let want: Vec<Value> =
                        regs.iter().map(|r| Value::new(vty, *r as u64)).collect();
                    assert_eq!(got, want, "{name}: inputs {inputs:x?}\n{ptx}");
                }
            }
        }
    }
}

/// A schoolbook product of two n-limb numbers in the shape of GPU code: per limb of `b`, a
/// pair of product rows into n + 2 accumulator limbs, the low limb out, the limbs moved down
/// one. Rows follow rows, so the JIT's packed limb pairs pass from one to the next, at both
/// parities (odd and even n). Checked against num-bigint on every engine.
fn schoolbook_ptx(ty: &str, n: usize) -> String {
    let list = |p: &str, count: usize| -> String {
        (0..count)
            .map(|k| format!(".reg {ty} %{p}{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut s = format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n.visible .func ({}) f({}, {})\n{{\n\
         .reg {ty} %t<{}>;\n",
        list("r", 2 * n),
        list("a", n),
        list("b", n),
        n + 2
    );
    for j in 0..n + 2 {
        s += &format!("mov{ty} %t{j}, 0;\n");
    }
    for i in 0..n {
        for j in 0..n {
            let op = if j == 0 { "mad.lo.cc" } else { "madc.lo.cc" };
            s += &format!("{op}{ty} %t{j}, %a{j}, %b{i}, %t{j};\n");
        }
        s += &format!(
            "addc.cc{ty} %t{n}, %t{n}, 0;\naddc{ty} %t{}, %t{}, 0;\n",
            n + 1,
            n + 1
        );
        for j in 0..n {
            let op = if j == 0 { "mad.hi.cc" } else { "madc.hi.cc" };
            s += &format!("{op}{ty} %t{}, %a{j}, %b{i}, %t{};\n", j + 1, j + 1);
        }
        s += &format!("addc{ty} %t{}, %t{}, 0;\n", n + 1, n + 1);
        s += &format!("mov{ty} %r{i}, %t0;\n");
        for j in 0..n + 1 {
            s += &format!("mov{ty} %t{j}, %t{};\n", j + 1);
        }
        s += &format!("mov{ty} %t{}, 0;\n", n + 1);
    }
    for j in 0..n {
        s += &format!("mov{ty} %r{}, %t{j};\n", n + j);
    }
    s + "ret;\n}\n"
}

#[test]
fn schoolbook_products_match_num_bigint() {
    use num_bigint::BigUint;
    let mut rng = Rng::new(12);
    for (ty, bits, sizes) in [
        (".u32", 32u32, &[1usize, 2, 3, 5, 8][..]),
        (".u64", 64, &[1, 3, 4]),
    ] {
        let mask = u64::MAX >> (64 - bits);
        let vty = if bits == 32 { Type::U32 } else { Type::U64 };
        let number = |limbs: &[u64]| {
            (limbs.iter().rev()).fold(BigUint::default(), |acc, &l| (acc << bits) + l)
        };
        for &n in sizes {
            let ptx = schoolbook_ptx(ty, n);
            // Each product formed once (u32: two limbs at a time, so fewer than n·n), and no
            // accumulator pair packed again: only the factors are, once for each parity.
            let [imul, umulhi, bor] = clif_counts(&ptx, ["imul", "umulhi", "bor"]);
            assert_eq!(umulhi, 0, "{ty} n={n}");
            assert!(
                imul <= n * n && (bits == 64 || n == 1 || imul < n * n),
                "{ty} n={n}: {imul}"
            );
            assert!(bor < n.max(2), "{ty} n={n}: {bor} packed pairs");
            for (name, engine) in engines(&ptx) {
                for case in 0..48 {
                    let limb = |rng: &mut Rng| match case {
                        0 => mask,
                        _ if rng.below(4) == 0 => mask,
                        _ => rng.next_u64() & mask,
                    };
                    let inputs: Vec<u64> = (0..2 * n).map(|_| limb(&mut rng)).collect();
                    let args: Vec<Value> = inputs.iter().map(|v| Value::new(vty, *v)).collect();
                    let got = engine
                        .call("f", &args)
                        .unwrap_or_else(|e| panic!("{name}: {e}\n{ptx}"));
                    let got: Vec<u64> = got.iter().map(|v| v.bits).collect();
                    let product = number(&inputs[..n]) * number(&inputs[n..]);
                    assert_eq!(number(&got), product, "{name}: {ty} n={n} {inputs:x?}");
                }
            }
        }
    }
}

/// The same u32 row in two blocks that do not dominate each other (a branch skips the first;
/// both read their factors through the kernel's parameters, which are loaded once for the
/// block, so the factors are the same values in both): the second row must not use what the
/// first packed. Against the wide model, the row applied once or twice.
#[test]
fn rows_in_sibling_blocks_pack_their_own_factors() {
    let ptx = "\
.version 7.8\n.target sm_80\n.address_size 64\n\
.visible .entry k(.param .u64 out, .param .u32 pa, .param .u32 pb)\n{\n\
  .reg .b64 %p;\n  .reg .b32 %x, %a0, %a1, %t<3>;\n  .reg .pred %c;\n\
  ld.param.u64 %p, [out];\n  ld.global.v4.u32 {%x, %t0, %t1, %t2}, [%p];\n\
  setp.lt.u32 %c, %x, 100;\n  @%c bra ELSE;\n\
  ld.param.u32 %a0, [pa];\n  ld.param.u32 %a1, [pb];\n\
  mad.lo.cc.u32 %t0, %a0, %x, %t0;\n  madc.lo.cc.u32 %t1, %a1, %x, %t1;\n  addc.u32 %t2, %t2, 0;\n\
  mad.hi.cc.u32 %t1, %a0, %x, %t1;\n  madc.hi.u32 %t2, %a1, %x, %t2;\n\
ELSE:\n\
  ld.param.u32 %a0, [pa];\n  ld.param.u32 %a1, [pb];\n\
  mad.lo.cc.u32 %t0, %a0, %x, %t0;\n  madc.lo.cc.u32 %t1, %a1, %x, %t1;\n  addc.u32 %t2, %t2, 0;\n\
  mad.hi.cc.u32 %t1, %a0, %x, %t1;\n  madc.hi.u32 %t2, %a1, %x, %t2;\n\
  st.global.v2.u32 [%p], {%t0, %t1};\n  st.global.u32 [%p+8], %t2;\n  ret;\n}\n";
    let mut rng = Rng::new(13);
    for (name, engine) in engines(ptx) {
        for case in 0..40 {
            let x = if case % 2 == 0 {
                rng.below(100) as u32
            } else {
                rng.next_u64() as u32 | 128
            };
            let t: [u32; 3] = std::array::from_fn(|_| rng.next_u64() as u32);
            let (pa, pb) = (rng.next_u64() as u32, rng.next_u64() as u32);
            let mut buf: Vec<u8> = [x, t[0], t[1], t[2]]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            engine
                .launch(
                    "k",
                    Dim3::x(1),
                    Dim3::x(1),
                    &mut [
                        Arg::Buffer(&mut buf),
                        Arg::Scalar(Value::u32(pa)),
                        Arg::Scalar(Value::u32(pb)),
                    ],
                )
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let wide = |w: [u32; 3]| w[0] as u128 | (w[1] as u128) << 32 | (w[2] as u128) << 64;
            let a = pa as u128 | (pb as u128) << 32;
            let times = if x < 100 { 1 } else { 2 };
            let mut want = wide(t);
            for _ in 0..times {
                want = (want + a * x as u128) & ((1u128 << 96) - 1);
            }
            let got: Vec<u32> = (0..3)
                .map(|k| u32::from_le_bytes(buf[4 * k..4 * k + 4].try_into().unwrap()))
                .collect();
            assert_eq!(wide([got[0], got[1], got[2]]), want, "{name}: x={x}");
        }
    }
}

/// CC.CF is each function's own (docs/semantics.md): the callee starts at 0 and the caller's
/// flag is what it was after the call, whether the call is inlined or not. The caller sets
/// CF = 1 (0xffffffff + 1); the callee returns the CF it starts with plus 2·(its own
/// carry out of x + x); the caller then adds its CF to the result.
#[test]
fn the_carry_flag_is_each_calls_own() {
    let ptx = "\
.version 7.8\n.target sm_80\n.address_size 64\n\
.func (.reg .b32 r) g(.reg .b32 a)\n{\n  .reg .b32 %c, %d;\n\
  addc.u32 %c, 0, 0;\n  add.cc.u32 %d, a, a;\n  addc.u32 %d, 0, 0;\n\
  shl.b32 %d, %d, 1;\n  add.u32 r, %c, %d;\n  ret;\n}\n\
.visible .entry k(.param .u64 out)\n{\n  .reg .b64 %p;\n  .reg .b32 %x, %y, %z;\n\
  ld.param.u64 %p, [out];\n  ld.global.u32 %x, [%p];\n\
  add.cc.u32 %z, %x, 1;\n  call (%y), g, (%x);\n  addc.u32 %y, %y, 0;\n\
  st.global.u32 [%p], %y;\n  ret;\n}\n";
    for (name, engine) in engines(ptx) {
        for x in [0xffff_ffffu32, 0x8000_0000, 5] {
            let mut buf = x.to_le_bytes().to_vec();
            engine
                .launch("k", Dim3::x(1), Dim3::x(1), &mut [Arg::Buffer(&mut buf)])
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let caller_cf = (x == u32::MAX) as u32;
            let callee_cf = ((x as u64 + x as u64) >> 32) as u32;
            let want = 2 * callee_cf + caller_cf;
            assert_eq!(
                u32::from_le_bytes(buf[..4].try_into().unwrap()),
                want,
                "{name}: x={x:#x}"
            );
        }
    }
}
