//! The benchmark workloads: bignum PTX in the shapes GPU code uses (row-wise
//! `mad.lo.cc`/`madc.hi.cc` carry chains, CIOS Montgomery multiplication with a `sub.cc`/`subc`
//! final subtraction), each as a `.func` taking and returning limb arrays by value and as an
//! `.entry` over arrays of independent operands; and the same algorithms in Rust.
#![allow(dead_code)]

use ptxjit::{Arg, Dim3, Engine, Jit, JitOptions, Module, Value};

/// Limb width of a workload.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Limb {
    U32,
    U64,
}

impl Limb {
    pub fn bytes(self) -> usize {
        match self {
            Limb::U32 => 4,
            Limb::U64 => 8,
        }
    }
    fn ty(self) -> &'static str {
        match self {
            Limb::U32 => "u32",
            Limb::U64 => "u64",
        }
    }
}

/// A workload: `n` limbs; Montgomery (with modulus and -p^-1 mod 2^32) or a full product.
#[derive(Clone, Debug)]
pub struct Workload {
    pub name: &'static str,
    pub limb: Limb,
    pub n: usize,
    /// Montgomery modulus, little-endian u32 limbs (None: full product).
    pub modulus: Option<Vec<u32>>,
}

impl Workload {
    pub fn in_bytes(&self) -> usize {
        self.n * self.limb.bytes()
    }
    pub fn out_bytes(&self) -> usize {
        if self.modulus.is_some() {
            self.in_bytes()
        } else {
            2 * self.in_bytes()
        }
    }
}

/// BN254 and BLS12-381 base-field moduli, as hex.
pub const BN254_P: &str = "30644e72e131a029b85045b68181585d97816a916871ca8d3c208c16d87cfd47";
pub const BLS12_381_P: &str = "1a0111ea397fe69a4b1ba7b6434bacd764774b84f38512bf6730d2a0f6b0f6241eabfffeb153ffffb9feffffffffaaab";

/// Little-endian u32 limbs of a hex number.
pub fn limbs_of_hex(hex: &str, n: usize) -> Vec<u32> {
    let mut limbs = vec![0u32; n];
    for (k, chunk) in hex.as_bytes().rchunks(8).enumerate() {
        limbs[k] = u32::from_str_radix(std::str::from_utf8(chunk).unwrap(), 16).unwrap();
    }
    limbs
}

/// -p^-1 mod 2^32.
pub fn n0_inverse(p0: u32) -> u32 {
    let mut x: u32 = 1;
    for _ in 0..5 {
        x = x.wrapping_mul(2u32.wrapping_sub(p0.wrapping_mul(x)));
    }
    x.wrapping_neg()
}

pub fn all() -> Vec<Workload> {
    vec![
        Workload {
            name: "mul256_u32",
            limb: Limb::U32,
            n: 8,
            modulus: None,
        },
        Workload {
            name: "mont256_u32",
            limb: Limb::U32,
            n: 8,
            modulus: Some(limbs_of_hex(BN254_P, 8)),
        },
        Workload {
            name: "mont384_u32",
            limb: Limb::U32,
            n: 12,
            modulus: Some(limbs_of_hex(BLS12_381_P, 12)),
        },
        Workload {
            name: "mul1024_u32",
            limb: Limb::U32,
            n: 32,
            modulus: None,
        },
        Workload {
            name: "mul256_u64",
            limb: Limb::U64,
            n: 4,
            modulus: None,
        },
    ]
}

/// The body: t (n + 2 limbs) accumulates rows `t += x · y[0..n]`; after each row of a
/// product the low limb is an output limb and t shifts down; Montgomery adds `m · p` first.
/// `emit(limb_index, register)` stores an output limb.
fn body(w: &Workload, store: &dyn Fn(usize, &str) -> String) -> Vec<String> {
    let ty = w.limb.ty();
    let n = w.n;
    let mut s = Vec::new();
    for j in 0..n + 2 {
        s.push(format!("mov.{ty} %t{j}, 0;"));
    }
    let row = |s: &mut Vec<String>, x: &str, y: &str| {
        for j in 0..n {
            let op = if j == 0 { "mad.lo.cc" } else { "madc.lo.cc" };
            s.push(format!("{op}.{ty} %t{j}, {y}{j}, {x}, %t{j};"));
        }
        s.push(format!("addc.cc.{ty} %t{n}, %t{n}, 0;"));
        s.push(format!("addc.{ty} %t{}, %t{}, 0;", n + 1, n + 1));
        for j in 0..n {
            let op = if j == 0 { "mad.hi.cc" } else { "madc.hi.cc" };
            s.push(format!("{op}.{ty} %t{}, {y}{j}, {x}, %t{};", j + 1, j + 1));
        }
        s.push(format!("addc.{ty} %t{}, %t{}, 0;", n + 1, n + 1));
    };
    for i in 0..n {
        row(&mut s, &format!("%b{i}"), "%a");
        if w.modulus.is_some() {
            s.push(format!("mul.lo.{ty} %m, %t0, %n0;"));
            row(&mut s, "%m", "%p");
        } else {
            s.push(store(i, "%t0"));
        }
        for j in 0..n + 1 {
            s.push(format!("mov.{ty} %t{j}, %t{};", j + 1));
        }
        s.push(format!("mov.{ty} %t{}, 0;", n + 1));
    }
    if w.modulus.is_some() {
        // Final subtraction: s = t - p; keep it unless it borrowed (CC.CF is NOT borrow).
        for j in 0..n {
            let op = if j == 0 { "sub.cc" } else { "subc.cc" };
            s.push(format!("{op}.{ty} %s{j}, %t{j}, %p{j};"));
        }
        s.push(format!("subc.cc.{ty} %s{n}, %t{n}, 0;"));
        s.push(format!("subc.{ty} %flag, 0, 0;"));
        s.push(format!("setp.eq.{ty} %q, %flag, 0;"));
        for j in 0..n {
            s.push(format!("@%q mov.{ty} %t{j}, %s{j};"));
            s.push(store(j, &format!("%t{j}")));
        }
    } else {
        for j in 0..n {
            s.push(store(n + j, &format!("%t{j}")));
        }
    }
    s
}

fn regs(w: &Workload) -> String {
    let ty = w.limb.ty();
    let n = w.n;
    format!(
        "  .reg .{ty} %a<{n}>, %b<{n}>, %p<{n}>, %t<{}>, %s<{}>, %m, %n0, %flag;\n  .reg .pred %q;\n",
        n + 2,
        n + 1
    )
}

/// The module of a workload: `.func NAME` (arrays by value) and `.entry NAME_k`.
pub fn ptx(w: &Workload) -> String {
    let ty = w.limb.ty();
    let lb = w.limb.bytes();
    let (inb, outb) = (w.in_bytes(), w.out_bytes());
    let n = w.n;
    let mut s = String::from(".version 7.8\n.target sm_80\n.address_size 64\n");
    let modulus = |s: &mut String, from: &dyn Fn(usize) -> String| {
        if let Some(p) = &w.modulus {
            for j in 0..n {
                let v = match w.limb {
                    Limb::U32 => p[j] as u64,
                    Limb::U64 => p[2 * j] as u64 | (p[2 * j + 1] as u64) << 32,
                };
                *s += &format!("  mov.{ty} %p{j}, {v};\n");
            }
            *s += &format!("  mov.{ty} %n0, {};\n", from(0));
        }
    };
    let n0 = w.modulus.as_ref().map_or(0, |p| n0_inverse(p[0]) as u64);
    // The .func.
    s += &format!(
        ".visible .func (.param .align 8 .b8 r[{outb}]) {}(.param .align 8 .b8 a[{inb}], .param .align 8 .b8 b[{inb}])\n{{\n",
        w.name
    );
    s += &regs(w);
    for j in 0..n {
        s += &format!(
            "  ld.param.{ty} %a{j}, [a+{}];\n  ld.param.{ty} %b{j}, [b+{}];\n",
            j * lb,
            j * lb
        );
    }
    modulus(&mut s, &|_| n0.to_string());
    for line in body(w, &|k, r| format!("st.param.{ty} [r+{}], {r};", k * lb)) {
        s += &format!("  {line}\n");
    }
    s += "  ret;\n}\n";
    // The kernel.
    s += &format!(
        ".visible .entry {}_k(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 count)\n{{\n",
        w.name
    );
    s += &regs(w);
    s += "  .reg .u32 %i, %c, %nt;\n  .reg .u64 %ra, %rb, %ro, %off;\n  .reg .pred %done;\n";
    s += "  mov.u32 %i, %ctaid.x;\n  mov.u32 %nt, %ntid.x;\n  mov.u32 %c, %tid.x;\n  mad.lo.u32 %i, %i, %nt, %c;\n";
    s += "  ld.param.u32 %c, [count];\n  setp.ge.u32 %done, %i, %c;\n  @%done ret;\n";
    s += &format!(
        "  ld.param.u64 %ra, [pa];\n  ld.param.u64 %rb, [pb];\n  ld.param.u64 %ro, [pout];\n  \
         mul.wide.u32 %off, %i, {inb};\n  add.u64 %ra, %ra, %off;\n  add.u64 %rb, %rb, %off;\n  \
         mul.wide.u32 %off, %i, {outb};\n  add.u64 %ro, %ro, %off;\n"
    );
    for j in 0..n {
        s += &format!(
            "  ld.global.{ty} %a{j}, [%ra+{}];\n  ld.global.{ty} %b{j}, [%rb+{}];\n",
            j * lb,
            j * lb
        );
    }
    modulus(&mut s, &|_| n0.to_string());
    for line in body(w, &|k, r| format!("st.global.{ty} [%ro+{}], {r};", k * lb)) {
        s += &format!("  {line}\n");
    }
    s += "  ret;\n}\n";
    s
}

/// The number of PTX instructions one kernel thread executes (straight-line code).
pub fn kernel_instructions(w: &Workload) -> usize {
    let text = ptx(w);
    let kernel = &text[text.find(".entry").unwrap()..];
    kernel
        .lines()
        .filter(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('.') && !t.starts_with('{') && !t.starts_with('}')
        })
        .count()
}

// ---- the same algorithms in Rust ---------------------------------------------------------

/// Schoolbook product of u32 limbs with u64 intermediates.
pub fn rust_mul_u32(a: &[u32], b: &[u32], r: &mut [u32]) {
    let n = a.len();
    r[..2 * n].fill(0);
    for i in 0..n {
        let mut carry = 0u64;
        for j in 0..n {
            let t = a[j] as u64 * b[i] as u64 + r[i + j] as u64 + carry;
            r[i + j] = t as u32;
            carry = t >> 32;
        }
        r[i + n] = carry as u32;
    }
}

/// Schoolbook product of u64 limbs with u128 intermediates.
pub fn rust_mul_u64(a: &[u64], b: &[u64], r: &mut [u64]) {
    let n = a.len();
    r[..2 * n].fill(0);
    for i in 0..n {
        let mut carry = 0u128;
        for j in 0..n {
            let t = a[j] as u128 * b[i] as u128 + r[i + j] as u128 + carry;
            r[i + j] = t as u64;
            carry = t >> 64;
        }
        r[i + n] = carry as u64;
    }
}

/// CIOS Montgomery multiplication over u32 limbs (N ≤ 12), u64 intermediates.
pub fn rust_mont_u32(a: &[u32], b: &[u32], p: &[u32], n0: u32, r: &mut [u32]) {
    let n = a.len();
    let mut t = [0u32; 14];
    for &bi in &b[..n] {
        let mut c = 0u64;
        for j in 0..n {
            let x = t[j] as u64 + a[j] as u64 * bi as u64 + c;
            t[j] = x as u32;
            c = x >> 32;
        }
        let x = t[n] as u64 + c;
        t[n] = x as u32;
        t[n + 1] = (x >> 32) as u32;
        let m = t[0].wrapping_mul(n0);
        let x = t[0] as u64 + m as u64 * p[0] as u64;
        let mut c = x >> 32;
        for j in 1..n {
            let x = t[j] as u64 + m as u64 * p[j] as u64 + c;
            t[j - 1] = x as u32;
            c = x >> 32;
        }
        let x = t[n] as u64 + c;
        t[n - 1] = x as u32;
        t[n] = t[n + 1] + (x >> 32) as u32;
    }
    // t - p, kept unless it borrows.
    let mut s = [0u32; 13];
    let mut borrow = 0i64;
    for j in 0..n {
        let x = t[j] as i64 - p[j] as i64 - borrow;
        s[j] = x as u32;
        borrow = (x < 0) as i64;
    }
    let keep_t = (t[n] as i64 - borrow) < 0;
    for j in 0..n {
        r[j] = if keep_t { t[j] } else { s[j] };
    }
}

// ---- running them ------------------------------------------------------------------------

/// The Rust baseline for one operand pair, into `out` (no allocation).
pub fn rust_one(w: &Workload, a: &[u8], b: &[u8], out: &mut [u8]) {
    let n = w.n;
    match (w.limb, &w.modulus) {
        (Limb::U64, _) => {
            let (mut x, mut y, mut r) = ([0u64; 16], [0u64; 16], [0u64; 32]);
            read_limbs(a, &mut x[..n]);
            read_limbs(b, &mut y[..n]);
            rust_mul_u64(&x[..n], &y[..n], &mut r[..2 * n]);
            write_limbs(&r[..2 * n], out);
        }
        (Limb::U32, modulus) => {
            let (mut x, mut y, mut r) = ([0u32; 32], [0u32; 32], [0u32; 64]);
            read_limbs(a, &mut x[..n]);
            read_limbs(b, &mut y[..n]);
            match modulus {
                None => {
                    rust_mul_u32(&x[..n], &y[..n], &mut r[..2 * n]);
                    write_limbs(&r[..2 * n], out);
                }
                Some(p) => {
                    let n0 = n0_inverse(p[0]);
                    rust_mont_u32(&x[..n], &y[..n], p, n0, &mut r[..n]);
                    write_limbs(&r[..n], out);
                }
            }
        }
    }
}

/// Little-endian limbs from bytes.
fn read_limbs<T: Limbs>(bytes: &[u8], out: &mut [T]) {
    for (k, o) in out.iter_mut().enumerate() {
        *o = T::read(&bytes[k * T::SIZE..]);
    }
}

fn write_limbs<T: Limbs>(limbs: &[T], out: &mut [u8]) {
    for (k, v) in limbs.iter().enumerate() {
        v.write(&mut out[k * T::SIZE..]);
    }
}

trait Limbs: Copy {
    const SIZE: usize;
    fn read(b: &[u8]) -> Self;
    fn write(self, b: &mut [u8]);
}

impl Limbs for u32 {
    const SIZE: usize = 4;
    fn read(b: &[u8]) -> u32 {
        u32::from_le_bytes(b[..4].try_into().unwrap())
    }
    fn write(self, b: &mut [u8]) {
        b[..4].copy_from_slice(&self.to_le_bytes());
    }
}

impl Limbs for u64 {
    const SIZE: usize = 8;
    fn read(b: &[u8]) -> u64 {
        u64::from_le_bytes(b[..8].try_into().unwrap())
    }
    fn write(self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.to_le_bytes());
    }
}

/// The JIT for `ptx`, with or without memory checks.
pub fn jit(ptx: &str, checked: bool) -> Jit {
    let module = Module::parse(ptx).expect("benchmark PTX parses");
    Jit::with_options(
        module,
        JitOptions {
            checked,
            ..JitOptions::default()
        },
    )
    .expect("compiles")
}

/// `examples/saxpy.ptx`, which `saxpy_launch` runs.
pub const SAXPY_PTX: &str = include_str!("../../examples/saxpy.ptx");

/// Launches saxpy (`y = 2x + y`, n elements, 256 threads a block) on `e`.
pub fn saxpy_launch(e: &dyn Engine, x: &mut [u8], y: &mut [u8], n: usize) {
    e.launch(
        "saxpy",
        Dim3::x((n as u32).div_ceil(256)),
        Dim3::x(256),
        &mut [
            Arg::Scalar(Value::f32(2.0)),
            Arg::Buffer(x),
            Arg::Buffer(y),
            Arg::Scalar(Value::u32(n as u32)),
        ],
    )
    .expect("saxpy runs");
}

/// Launches the workload's `.entry` over `count` operand pairs, 128 threads a block.
pub fn launch(
    e: &dyn Engine,
    w: &Workload,
    a: &mut [u8],
    b: &mut [u8],
    out: &mut [u8],
    count: usize,
) {
    let block = 128u32;
    let grid = (count as u32).div_ceil(block);
    e.launch(
        &format!("{}_k", w.name),
        Dim3::x(grid),
        Dim3::x(block),
        &mut [
            Arg::Buffer(a),
            Arg::Buffer(b),
            Arg::Buffer(out),
            Arg::Scalar(Value::u32(count as u32)),
        ],
    )
    .expect("the workload runs");
}

/// `y = fma(a, x, y)` compiled for the host's FMA unit when it has one, as the JIT's code
/// is: built for baseline x86-64, `mul_add` would be a libm call per element.
pub fn saxpy_native(a: f32, x: &[f32], y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: the CPU running this has the features the function is compiled for.
        unsafe { saxpy_avx2_fma(a, x, y) };
        return;
    }
    for (y, x) in y.iter_mut().zip(x) {
        *y = a.mul_add(*x, *y);
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn saxpy_avx2_fma(a: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y = a.mul_add(*x, *y);
    }
}
