//! A bignum kernel in the shape of real GPU code: 256-bit Montgomery multiplication over 8
//! 32-bit limbs (CIOS, as in sppark and CGBN), written with `mad.lo.cc`/`madc.hi.cc` carry
//! chains and a `sub.cc`/`subc` final subtraction, modulo the BN254 base-field prime. Every
//! result is checked on every engine against `num-bigint`: out < p and out·2^256 ≡ a·b (mod p).

mod common;

use common::{Rng, engines};
use num_bigint::BigUint;
use ptxjit::{Arg, Dim3, Value};

const LIMBS: usize = 8;
/// BN254's base-field modulus.
const P_HEX: &str = "30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47";

/// The PTX of `mont(a, b, p, out, n0inv)`: thread i multiplies a[i] by b[i].
fn montgomery_ptx() -> String {
    let mut s = String::from(
        ".version 7.8\n.target sm_80\n.address_size 64\n\
         .visible .entry mont(.param .u64 pa, .param .u64 pb, .param .u64 pp, .param .u64 pout, .param .u32 pn0)\n{\n\
         \x20 .reg .u32 %a<8>, %b<8>, %p<8>, %t<10>, %s<9>, %bi, %m, %n0, %i, %flag;\n\
         \x20 .reg .u64 %ra, %rb, %rp, %ro, %off;\n  .reg .pred %q;\n\
         \x20 ld.param.u64 %ra, [pa];\n  ld.param.u64 %rb, [pb];\n  ld.param.u64 %rp, [pp];\n\
         \x20 ld.param.u64 %ro, [pout];\n  ld.param.u32 %n0, [pn0];\n\
         \x20 mov.u32 %i, %tid.x;\n  mul.wide.u32 %off, %i, 32;\n\
         \x20 add.u64 %ra, %ra, %off;\n  add.u64 %rb, %rb, %off;\n  add.u64 %ro, %ro, %off;\n",
    );
    for j in 0..LIMBS {
        s += &format!("  ld.global.u32 %a{j}, [%ra+{}];\n", 4 * j);
        s += &format!("  ld.global.u32 %b{j}, [%rb+{}];\n", 4 * j);
        s += &format!("  ld.global.u32 %p{j}, [%rp+{}];\n", 4 * j);
    }
    for j in 0..10 {
        s += &format!("  mov.u32 %t{j}, 0;\n");
    }
    // t += x * y[0..8] (lo chain into t0..t7, hi chain into t1..t8), carries into t8, t9.
    let row = |s: &mut String, x: &str, y: &str| {
        for j in 0..LIMBS {
            let op = if j == 0 { "mad.lo.cc" } else { "madc.lo.cc" };
            *s += &format!("  {op}.u32 %t{j}, {y}{j}, {x}, %t{j};\n");
        }
        *s += "  addc.cc.u32 %t8, %t8, 0;\n  addc.u32 %t9, %t9, 0;\n";
        for j in 0..LIMBS {
            let op = if j == 0 { "mad.hi.cc" } else { "madc.hi.cc" };
            *s += &format!("  {op}.u32 %t{}, {y}{j}, {x}, %t{};\n", j + 1, j + 1);
        }
        *s += "  addc.u32 %t9, %t9, 0;\n";
    };
    for i in 0..LIMBS {
        s += &format!("  mov.u32 %bi, %b{i};\n");
        row(&mut s, "%bi", "%a");
        s += "  mul.lo.u32 %m, %t0, %n0;\n";
        row(&mut s, "%m", "%p");
        // t0 is now 0: shift down one limb.
        for j in 0..9 {
            s += &format!("  mov.u32 %t{j}, %t{};\n", j + 1);
        }
        s += "  mov.u32 %t9, 0;\n";
    }
    // Final subtraction: s = t - p; keep it unless it borrowed (CF = NOT borrow).
    for j in 0..LIMBS {
        let op = if j == 0 { "sub.cc" } else { "subc.cc" };
        s += &format!("  {op}.u32 %s{j}, %t{j}, %p{j};\n");
    }
    s += "  subc.cc.u32 %s8, %t8, 0;\n  subc.u32 %flag, 0, 0;\n  setp.eq.u32 %q, %flag, 0;\n";
    for j in 0..LIMBS {
        s += &format!("  selp.b32 %t{j}, %s{j}, %t{j}, %q;\n");
        s += &format!("  st.global.u32 [%ro+{}], %t{j};\n", 4 * j);
    }
    s += "  ret;\n}\n";
    s
}

fn limbs(v: &BigUint) -> Vec<u8> {
    let mut b = v.to_bytes_le();
    b.resize(4 * LIMBS, 0);
    b
}

/// -p^{-1} mod 2^32 by Newton's iteration.
fn n0_inverse(p0: u32) -> u32 {
    let mut x: u32 = 1;
    for _ in 0..5 {
        x = x.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(x)));
    }
    x.wrapping_neg()
}

#[test]
fn montgomery_multiplication_matches_num_bigint() {
    let p = BigUint::parse_bytes(P_HEX.as_bytes(), 16).unwrap();
    let p_bytes = limbs(&p);
    let n0 = n0_inverse(u32::from_le_bytes(p_bytes[..4].try_into().unwrap()));
    let threads = 64;
    let mut rng = Rng::new(254);
    let random = |rng: &mut Rng| {
        let bytes: Vec<u8> = (0..4).flat_map(|_| rng.next_u64().to_le_bytes()).collect();
        BigUint::from_bytes_le(&bytes) % &p
    };
    let mut xs: Vec<BigUint> = (0..threads).map(|_| random(&mut rng)).collect();
    let mut ys: Vec<BigUint> = (0..threads).map(|_| random(&mut rng)).collect();
    // Edge cases: 0, 1, p - 1 squared.
    let one = BigUint::from(1u32);
    xs[0] = BigUint::from(0u32);
    (xs[1], ys[1]) = (one.clone(), one.clone());
    (xs[2], ys[2]) = (&p - &one, &p - &one);
    let a: Vec<u8> = xs.iter().flat_map(limbs).collect();
    let b: Vec<u8> = ys.iter().flat_map(limbs).collect();
    let ptx = montgomery_ptx();
    for (name, engine) in engines(&ptx) {
        let (mut a, mut b, mut pp) = (a.clone(), b.clone(), p_bytes.clone());
        let mut out = vec![0u8; 32 * threads];
        engine
            .launch(
                "mont",
                Dim3::x(1),
                Dim3::x(threads as u32),
                &mut [
                    Arg::Buffer(&mut a),
                    Arg::Buffer(&mut b),
                    Arg::Buffer(&mut pp),
                    Arg::Buffer(&mut out),
                    Arg::Scalar(Value::u32(n0)),
                ],
            )
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for i in 0..threads {
            let r = BigUint::from_bytes_le(&out[32 * i..32 * i + 32]);
            assert!(r < p, "{name}: thread {i}: result {r:x} not reduced");
            assert_eq!(
                (&r << 256) % &p,
                (&xs[i] * &ys[i]) % &p,
                "{name}: thread {i}: {:x} * {:x}",
                xs[i],
                ys[i]
            );
        }
    }
}
