//! Kernels in SIMD lanes (`src/jit/lower/lanes/`). Results are checked against references
//! written here — Rust's IEEE-754 f32 arithmetic (`mul_add` is the single-rounding fma) with
//! the manual's `.ftz`, `.sat` and canonical-NaN rules spelled out, wrapping integer
//! arithmetic, and the one-thread-after-another order of a block written out — and against
//! the interpreter and the JIT without lanes. Each test also checks that the lanes ran (or,
//! where they must not, that they did not).

mod common;

use common::{Rng, jit_with};
use ptxjit::{Arg, Dim3, Engine, Interpreter, Jit, JitOptions, Module, RunError, Value};
use rustc_apfloat::Float;
use rustc_apfloat::ieee::Single;

const SAXPY: &str = include_str!("../examples/saxpy.ptx");

fn jit(ptx: &str, checked: bool, lanes: bool) -> Jit {
    jit_with(
        ptx,
        JitOptions {
            checked,
            lanes,
            verify: true,
            ..JitOptions::default()
        },
    )
}

fn bytes_u32(v: &[u32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn u32s(b: &[u8]) -> Vec<u32> {
    b.chunks(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// Launches `kernel(in_0, …, in_k, out, n)` over `n` threads, `block` a block, with `rows`
/// output arrays of n elements; returns them (row r at r·n).
fn run_rows(
    e: &dyn Engine,
    kernel: &str,
    inputs: &[&[u32]],
    rows: usize,
    n: u32,
    block: u32,
) -> Result<Vec<u32>, RunError> {
    let mut bufs: Vec<Vec<u8>> = inputs.iter().map(|v| bytes_u32(v)).collect();
    let mut out = vec![0u8; rows * 4 * n as usize];
    let mut args: Vec<Arg> = bufs.iter_mut().map(|b| Arg::Buffer(b)).collect();
    args.push(Arg::Buffer(&mut out));
    args.push(Arg::Scalar(Value::u32(n)));
    e.launch(
        kernel,
        Dim3::x(n.div_ceil(block)),
        Dim3::x(block),
        &mut args,
    )?;
    drop(args);
    Ok(u32s(&out))
}

/// Compares rows of n results bit for bit, naming the first difference.
fn assert_rows(name: &str, got: &[u32], want: &[u32], n: u32) {
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(
            g,
            w,
            "{name}: row {} element {}: {g:#010x} vs {w:#010x}",
            k / n as usize,
            k % n as usize
        );
    }
}

/// Runs `kernel` of `ptx` over `inputs` ([`run_rows`], blocks of `block`) on the
/// interpreter and on the JIT with memory checks on and off and, if `without_lanes`, with
/// lanes off: each gives `want`, and the unchecked JIT runs `lanes` threads in lanes.
#[allow(clippy::too_many_arguments)]
fn every_engine_gives(
    ptx: &str,
    kernel: &str,
    inputs: &[&[u32]],
    rows: usize,
    n: u32,
    block: u32,
    want: &[u32],
    lanes: u64,
    without_lanes: bool,
) {
    let module = Module::parse(ptx).expect("parses");
    let mut engines: Vec<(&str, Box<dyn Engine>)> = vec![
        ("interp", Box::new(Interpreter::new(module))),
        ("jit", Box::new(jit(ptx, true, true))),
        ("jit-unchecked", Box::new(jit(ptx, false, true))),
    ];
    if without_lanes {
        engines.push(("jit-no-lanes", Box::new(jit(ptx, true, false))));
    }
    for (name, e) in &engines {
        let got = run_rows(&**e, kernel, inputs, rows, n, block)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_rows(name, &got, want, n);
        if *name == "jit-unchecked" {
            assert_eq!(e.lane_threads(), Some(lanes), "threads in lanes");
        }
    }
}

/// f32 bit patterns that reach the corners: zeros, subnormals, the smallest normals, values
/// around 1, huge values, infinities, NaNs; else random bits.
fn edgy_f32(r: &mut Rng) -> u32 {
    const EDGES: [u32; 16] = [
        0x0000_0000,
        0x8000_0000,
        0x0000_0001,
        0x807f_ffff,
        0x0080_0000,
        0x8080_0000,
        0x3f80_0000,
        0x3f7f_ffff,
        0x3f80_0001,
        0xbf80_0000,
        0x7f7f_ffff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_1234,
        0x3e80_0000,
    ];
    match r.below(4) {
        0 => EDGES[r.below(EDGES.len() as u64) as usize],
        1 => (r.below(2000) as f32 / 100.0 - 10.0).to_bits(),
        _ => r.next_u64() as u32,
    }
}

/// PTX's NaN result: the canonical NaN.
fn canon(v: f32) -> u32 {
    if v.is_nan() { 0x7fff_ffff } else { v.to_bits() }
}

/// `.ftz`: a subnormal becomes a zero of its sign.
fn ftz(bits: u32) -> u32 {
    if bits & 0x7f80_0000 == 0 {
        bits & 0x8000_0000
    } else {
        bits
    }
}

/// `.sat`: [0.0, 1.0], NaN and -0.0 to +0.0.
fn sat(bits: u32) -> u32 {
    let v = f32::from_bits(bits);
    if v >= 1.0 {
        1.0f32.to_bits()
    } else if v > 0.0 {
        bits
    } else {
        0
    }
}

/// Threads of a 1-D launch the lanes must have run: every whole warp-sized group of a block
/// whose threads all pass the `i < n` guard, or all fail it (they leave at once).
fn whole_groups(n: u32, block: u32, grid: u32) -> u64 {
    let lanes = ptxjit::jit::LANES;
    let mut count = 0;
    for b in 0..grid {
        let mut x = 0;
        while x + lanes <= block {
            let start = b * block + x;
            if start + lanes <= n || start >= n {
                count += lanes as u64;
            }
            x += lanes;
        }
    }
    count
}

fn saxpy(
    e: &dyn Engine,
    a: f32,
    x: &[u32],
    y: &mut [u8],
    n: u32,
    block: u32,
) -> Result<(), RunError> {
    let mut xb = bytes_u32(x);
    e.launch(
        "saxpy",
        Dim3::x(n.div_ceil(block)),
        Dim3::x(block),
        &mut [
            Arg::Scalar(Value::f32(a)),
            Arg::Buffer(&mut xb),
            Arg::Buffer(y),
            Arg::Scalar(Value::u32(n)),
        ],
    )
}

#[test]
fn saxpy_in_lanes_matches_fma_for_every_size_and_block() {
    let mut r = Rng::new(11);
    let engines = [jit(SAXPY, true, true), jit(SAXPY, false, true)];
    assert_eq!(engines[0].lanes_report()[0].1, None, "saxpy runs in lanes");
    for n in [1u32, 31, 32, 33, 95, 1000, 4096] {
        for block in [32u32, 33, 64, 100, 256, 1024] {
            let x: Vec<u32> = (0..n).map(|_| edgy_f32(&mut r)).collect();
            let y: Vec<u32> = (0..n).map(|_| edgy_f32(&mut r)).collect();
            let a = f32::from_bits(edgy_f32(&mut r));
            let want: Vec<u32> = x
                .iter()
                .zip(&y)
                .map(|(xi, yi)| canon(a.mul_add(f32::from_bits(*xi), f32::from_bits(*yi))))
                .collect();
            for (k, e) in engines.iter().enumerate() {
                let before = e.lane_threads();
                let mut yb = bytes_u32(&y);
                saxpy(e, a, &x, &mut yb, n, block).expect("saxpy runs");
                assert_eq!(u32s(&yb), want, "n {n} block {block} checked {}", k == 0);
                let ran = e.lane_threads() - before;
                let whole = whole_groups(n, block, n.div_ceil(block));
                assert_eq!(ran, whole, "n {n} block {block} checked {}", k == 0);
            }
        }
    }
    // A longer launch, checked.
    let n = 1 << 16;
    let x = vec![1.0f32.to_bits(); n as usize];
    let mut yb = bytes_u32(&vec![2.0f32.to_bits(); n as usize]);
    let before = engines[0].lane_threads();
    saxpy(&engines[0], 3.0, &x, &mut yb, n, 256).expect("saxpy runs");
    assert!(engines[0].lane_threads() - before > n as u64 / 2);
    assert!(u32s(&yb).iter().all(|v| *v == 5.0f32.to_bits()));
}

/// Loads x, y, z at i and writes seven results, out[k·n + i], addresses computed before the
/// first store.
const FLOAT_OPS: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry fops(.param .u64 px, .param .u64 py, .param .u64 pz, .param .u64 pout, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<8>;
  .reg .f32 %f<16>;
  .reg .b64 %rd<24>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [px];
  ld.param.u64 %rd2, [py];
  ld.param.u64 %rd3, [pz];
  ld.param.u64 %rd4, [pout];
  mul.wide.u32 %rd5, %r5, 4;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd1, %rd5;
  add.s64 %rd8, %rd2, %rd5;
  add.s64 %rd9, %rd3, %rd5;
  add.s64 %rd10, %rd4, %rd5;
  add.s64 %rd11, %rd10, %rd6;
  add.s64 %rd12, %rd11, %rd6;
  add.s64 %rd13, %rd12, %rd6;
  add.s64 %rd14, %rd13, %rd6;
  add.s64 %rd15, %rd14, %rd6;
  add.s64 %rd16, %rd15, %rd6;
  ld.global.f32 %f1, [%rd7];
  ld.global.f32 %f2, [%rd8];
  ld.global.f32 %f3, [%rd9];
  fma.rn.ftz.sat.f32 %f4, %f1, %f2, %f3;
  add.ftz.f32 %f5, %f1, %f2;
  sub.rn.sat.f32 %f6, %f1, %f3;
  mul.rn.f32 %f7, %f2, %f3;
  neg.ftz.f32 %f8, %f1;
  abs.f32 %f9, %f2;
  fma.rn.f32 %f10, %f1, %f2, %f3;
  st.global.f32 [%rd10], %f4;
  st.global.f32 [%rd11], %f5;
  st.global.f32 [%rd12], %f6;
  st.global.f32 [%rd13], %f7;
  st.global.f32 [%rd14], %f8;
  st.global.f32 [%rd15], %f9;
  st.global.f32 [%rd16], %f10;
DONE:
  ret;
}
"#;

#[test]
fn float_operations_in_lanes_follow_ftz_sat_and_nan_rules() {
    let mut r = Rng::new(12);
    let n = 1000u32;
    let (x, y, z): (Vec<u32>, Vec<u32>, Vec<u32>) = (
        (0..n).map(|_| edgy_f32(&mut r)).collect(),
        (0..n).map(|_| edgy_f32(&mut r)).collect(),
        (0..n).map(|_| edgy_f32(&mut r)).collect(),
    );
    let f = f32::from_bits;
    let mut want = vec![0u32; 7 * n as usize];
    for i in 0..n as usize {
        let (a, b, c) = (x[i], y[i], z[i]);
        let (fa, fb, fc) = (f(ftz(a)), f(ftz(b)), f(ftz(c)));
        let rows = [
            sat(ftz(canon(fa.mul_add(fb, fc)))),
            ftz(canon(fa + fb)),
            sat(canon(f(a) - f(c))),
            canon(f(b) * f(c)),
            // neg and abs of a NaN give the canonical NaN (as on an H200).
            ftz(canon(f(a ^ 0x8000_0000))),
            canon(f(b & 0x7fff_ffff)),
            canon(f(a).mul_add(f(b), f(c))),
        ];
        for (k, v) in rows.into_iter().enumerate() {
            want[k * n as usize + i] = v;
        }
    }
    let lanes = whole_groups(n, 128, 8);
    every_engine_gives(
        FLOAT_OPS,
        "fops",
        &[&x, &y, &z],
        7,
        n,
        128,
        &want,
        lanes,
        true,
    );
}

/// Integer operations on per-thread values, with a guarded write, a combined setp and selp:
/// out[k·n + i] for k = 0..12.
const INT_OPS: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry iops(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 n)
{
  .reg .pred %p<6>;
  .reg .b32 %r<32>;
  .reg .b64 %rd<24>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r3, %r2, %r4;
  setp.lt.u32 %p1, %r5, %r1;
  @!%p1 ret;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  cvt.u64.u32 %rd4, %r5;
  shl.b64 %rd5, %rd4, 2;
  cvt.u64.u32 %rd6, %r1;
  shl.b64 %rd6, %rd6, 2;
  add.s64 %rd7, %rd1, %rd5;
  add.s64 %rd8, %rd2, %rd5;
  add.s64 %rd10, %rd3, %rd5;
  add.s64 %rd11, %rd10, %rd6;
  add.s64 %rd12, %rd11, %rd6;
  add.s64 %rd13, %rd12, %rd6;
  add.s64 %rd14, %rd13, %rd6;
  add.s64 %rd15, %rd14, %rd6;
  add.s64 %rd16, %rd15, %rd6;
  add.s64 %rd17, %rd16, %rd6;
  add.s64 %rd18, %rd17, %rd6;
  add.s64 %rd19, %rd18, %rd6;
  add.s64 %rd20, %rd19, %rd6;
  add.s64 %rd21, %rd20, %rd6;
  ld.global.u32 %r6, [%rd7];
  ld.global.u32 %r7, [%rd8];
  add.u32 %r8, %r6, %r7;
  sub.u32 %r9, %r6, %r5;
  mul.lo.u32 %r10, %r6, %r7;
  min.s32 %r11, %r6, %r7;
  max.u32 %r12, %r6, %r7;
  xor.b32 %r13, %r6, %r7;
  or.b32 %r14, %r6, 0x00f0;
  and.b32 %r14, %r14, %r7;
  shl.b32 %r15, %r6, 3;
  shr.u32 %r16, %r7, 5;
  shr.s32 %r17, %r6, 31;
  shr.u32 %r18, %r6, 40;
  setp.lt.s32 %p2, %r6, %r7;
  selp.b32 %r19, %r6, %r7, %p2;
  setp.gt.and.u32 %p3|%p4, %r6, 1000, %p2;
  selp.u32 %r20, 1, 2, %p3;
  selp.u32 %r21, 4, 8, %p4;
  add.u32 %r20, %r20, %r21;
  mov.u32 %r22, %r5;
  @%p2 mad.lo.u32 %r22, %r6, 3, %r7;
  st.global.u32 [%rd10], %r8;
  st.global.u32 [%rd11], %r9;
  st.global.u32 [%rd12], %r10;
  st.global.u32 [%rd13], %r11;
  st.global.u32 [%rd14], %r12;
  st.global.u32 [%rd15], %r13;
  st.global.u32 [%rd16], %r14;
  st.global.u32 [%rd17], %r15;
  st.global.u32 [%rd18], %r16;
  st.global.u32 [%rd19], %r17;
  st.global.u32 [%rd20], %r19;
  st.global.u32 [%rd21], %r20;
  add.s64 %rd22, %rd21, %rd6;
  ret;
}
"#;

#[test]
fn integer_operations_in_lanes_match_wrapping_arithmetic() {
    let mut r = Rng::new(13);
    let n = 777u32;
    let a: Vec<u32> = (0..n).map(|_| r.next_u64() as u32 >> r.below(32)).collect();
    let b: Vec<u32> = (0..n).map(|_| r.next_u64() as u32 >> r.below(32)).collect();
    let rows = 12usize;
    let mut want = vec![0u32; rows * n as usize];
    for i in 0..n as usize {
        let (x, y) = (a[i], b[i]);
        let lt = (x as i32) < (y as i32);
        let p3 = x > 1000 && lt;
        let p4 = x <= 1000 && lt;
        let v = [
            x.wrapping_add(y),
            x.wrapping_sub(i as u32),
            x.wrapping_mul(y),
            (x as i32).min(y as i32) as u32,
            x.max(y),
            x ^ y,
            (x | 0xf0) & y,
            x << 3,
            y >> 5,
            ((x as i32) >> 31) as u32,
            if lt { x } else { y },
            (if p3 { 1 } else { 2 }) + (if p4 { 4 } else { 8 }),
        ];
        for (k, v) in v.into_iter().enumerate() {
            want[k * n as usize + i] = v;
        }
        // The guarded mad (%r22) is not stored: it only has to lower.
    }
    let lanes = whole_groups(n, 64, n.div_ceil(64));
    every_engine_gives(INT_OPS, "iops", &[&a, &b], rows, n, 64, &want, lanes, false);
}

/// `y[i + d] = y[i] + 1` for i + d < n, one block: with d = 1 each thread reads what the one
/// before it wrote (the threads of a block run one after another), so lanes must not run it;
/// with d = 64 no group reads what it writes, so they may.
const SHIFTED: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry shifted(.param .u64 py, .param .u32 n, .param .u32 d)
{
  .reg .pred %p<2>;
  .reg .b32 %r<10>;
  .reg .b64 %rd<8>;
  ld.param.u32 %r1, [n];
  ld.param.u32 %r2, [d];
  mov.u32 %r4, %tid.x;
  add.u32 %r5, %r4, %r2;
  setp.ge.u32 %p1, %r5, %r1;
  @%p1 bra END;
  ld.param.u64 %rd1, [py];
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;
  mul.wide.u32 %rd4, %r5, 4;
  add.s64 %rd5, %rd1, %rd4;
  ld.global.u32 %r6, [%rd3];
  add.u32 %r7, %r6, 1;
  st.global.u32 [%rd5], %r7;
END:
  exit;
}
"#;

#[test]
fn lanes_keep_the_order_of_threads_that_share_memory() {
    for d in [1u32, 5, 31, 32, 33, 64, 100] {
        let n = 1024u32;
        let y0: Vec<u32> = (0..n).map(|i| i * 7 + 3).collect();
        // The threads of the block one after another.
        let mut want = y0.clone();
        for i in 0..(n - d) as usize {
            want[i + d as usize] = want[i].wrapping_add(1);
        }
        for (checked, lanes) in [(true, true), (false, true), (true, false)] {
            let e = jit(SHIFTED, checked, lanes);
            let mut yb = bytes_u32(&y0);
            e.launch(
                "shifted",
                Dim3::x(1),
                Dim3::x(n),
                &mut [
                    Arg::Buffer(&mut yb),
                    Arg::Scalar(Value::u32(n)),
                    Arg::Scalar(Value::u32(d)),
                ],
            )
            .expect("runs");
            assert_eq!(u32s(&yb), want, "d {d} checked {checked} lanes {lanes}");
            if !checked && d < ptxjit::jit::LANES {
                assert_eq!(e.lane_threads(), 0, "d {d}: the groups overlap");
            }
            if !checked && d >= ptxjit::jit::LANES {
                assert!(e.lane_threads() > 0, "d {d}: the groups are apart");
            }
        }
    }
}

/// A 2-D block: tid.y is the same in a group. out[y·w + x] = in[y·w + x] · (y + 1) + x.
const TWO_D: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry twod(.param .u64 pin, .param .u64 pout, .param .u32 w)
{
  .reg .b32 %r<12>;
  .reg .b64 %rd<8>;
  ld.param.u32 %r1, [w];
  mov.u32 %r2, %tid.x;
  mov.u32 %r3, %tid.y;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %ctaid.x;
  mad.lo.u32 %r6, %r5, %r4, %r2;
  mad.lo.u32 %r7, %r3, %r1, %r6;
  ld.param.u64 %rd1, [pin];
  ld.param.u64 %rd2, [pout];
  mul.wide.u32 %rd3, %r7, 4;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.u32 %r8, [%rd4];
  add.u32 %r9, %r3, 1;
  mul.lo.u32 %r10, %r8, %r9;
  add.u32 %r11, %r10, %r6;
  st.global.u32 [%rd5], %r11;
  ret;
}
"#;

#[test]
fn two_dimensional_blocks_run_in_lanes_row_by_row() {
    let (bx, by, gx) = (96u32, 3u32, 2u32);
    let w = bx * gx;
    let input: Vec<u32> = (0..w * by).map(|i| i.wrapping_mul(2654435761)).collect();
    let want: Vec<u32> = (0..w * by)
        .map(|k| {
            let (y, x) = (k / w, k % w);
            input[k as usize].wrapping_mul(y + 1).wrapping_add(x)
        })
        .collect();
    for checked in [true, false] {
        let e = jit(TWO_D, checked, true);
        let mut inb = bytes_u32(&input);
        let mut out = vec![0u8; input.len() * 4];
        e.launch(
            "twod",
            Dim3::x(gx),
            Dim3::new(bx, by, 1),
            &mut [
                Arg::Buffer(&mut inb),
                Arg::Buffer(&mut out),
                Arg::Scalar(Value::u32(w)),
            ],
        )
        .expect("runs");
        assert_eq!(u32s(&out), want, "checked {checked}");
        if !checked {
            assert_eq!(e.lane_threads(), (gx * by * 96) as u64);
        }
    }
}

#[test]
fn faults_are_reported_as_without_lanes() {
    // n beyond the buffers: thread 1000 reads past x.
    let n = 1024u32;
    let x = vec![1.0f32.to_bits(); 1000];
    let faults: Vec<_> = [
        Box::new(Interpreter::new(Module::parse(SAXPY).unwrap())) as Box<dyn Engine>,
        Box::new(jit(SAXPY, true, true)),
        Box::new(jit(SAXPY, true, false)),
    ]
    .iter()
    .map(|e| {
        let mut yb = bytes_u32(&[0; 1000]);
        match saxpy(&**e, 2.0, &x, &mut yb, n, 64) {
            // The buffers are each engine's own: the message without the address.
            Err(RunError::Fault(f, _)) => {
                let words: Vec<String> = f
                    .message
                    .split_whitespace()
                    .filter(|w| !w.starts_with("0x"))
                    .map(String::from)
                    .collect();
                (words, f.ctaid, f.tid, f.line, f.address.is_some())
            }
            other => panic!("expected a fault, got {other:?}"),
        }
    })
    .collect();
    assert_eq!(faults[0].1, [15, 0, 0]);
    assert_eq!(faults[0].2, [40, 0, 0]);
    assert_eq!(faults[1], faults[0]);
    assert_eq!(faults[2], faults[0]);
}

#[test]
fn kernels_outside_the_lanes_say_why() {
    let looping = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry spin(.param .u64 p)
{
  .reg .pred %p<2>;
  .reg .b32 %r<4>;
  mov.u32 %r1, 0;
LOOP:
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 10;
  @%p1 bra LOOP;
  ret;
}
"#;
    let e = jit(looping, true, true);
    let why = e.lanes_report()[0].1.clone().expect("refused");
    assert!(why.contains("bra LOOP") && why.contains("branch"), "{why}");
    let e = jit(SAXPY, true, false);
    assert_eq!(e.lanes_report()[0].1.as_deref(), Some("lanes are off"));
}

/// An array of structures: thread i reads fields 0 and 1 of `s[i]` (12 bytes each), stores
/// their sum in field 2 and then reads field 2 of `s[i+d]` into field 0 of `t[i]` (which the
/// thread loop gives as not yet written: thread i+d runs later).
const STRUCTS: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry structs(.param .u64 ps, .param .u64 pt, .param .u32 n, .param .u32 d)
{
  .reg .pred %p<2>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<12>;
  ld.param.u32 %r1, [n];
  ld.param.u32 %r9, [d];
  mov.u32 %r2, %tid.x;
  setp.ge.u32 %p1, %r2, %r1;
  @%p1 bra END;
  ld.param.u64 %rd1, [ps];
  ld.param.u64 %rd2, [pt];
  mul.wide.u32 %rd3, %r2, 12;
  add.s64 %rd4, %rd1, %rd3;
  add.s64 %rd5, %rd2, %rd3;
  ld.global.u32 %r3, [%rd4];
  ld.global.u32 %r4, [%rd4+4];
  add.u32 %r5, %r3, %r4;
  st.global.u32 [%rd4+8], %r5;
  add.u32 %r6, %r2, %r9;
  mul.wide.u32 %rd6, %r6, 12;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u32 %r7, [%rd7+8];
  st.global.u32 [%rd5], %r7;
END:
  ret;
}
"#;

#[test]
fn arrays_of_structures_run_lane_by_lane_in_thread_order() {
    let n = 256u32;
    for d in [1u32, 40] {
        let s0: Vec<u32> = (0..3 * (n + 64))
            .map(|i| i.wrapping_mul(0x9e37_79b9))
            .collect();
        // The threads one after another.
        let mut s = s0.clone();
        let mut t = vec![0u32; 3 * n as usize];
        for i in 0..n as usize {
            s[3 * i + 2] = s[3 * i].wrapping_add(s[3 * i + 1]);
            t[3 * i] = s[3 * (i + d as usize) + 2];
        }
        for (checked, lanes) in [(true, true), (false, true), (true, false)] {
            let e = jit(STRUCTS, checked, lanes);
            let (mut sb, mut tb) = (bytes_u32(&s0), vec![0u8; 12 * n as usize]);
            e.launch(
                "structs",
                Dim3::x(1),
                Dim3::x(n),
                &mut [
                    Arg::Buffer(&mut sb),
                    Arg::Buffer(&mut tb),
                    Arg::Scalar(Value::u32(n)),
                    Arg::Scalar(Value::u32(d)),
                ],
            )
            .expect("runs");
            assert_eq!(u32s(&sb), s, "d {d} checked {checked} lanes {lanes}");
            assert_eq!(u32s(&tb), t, "d {d} checked {checked} lanes {lanes}");
            if lanes {
                // d = 1: after its store a lane reads bytes another lane stores: every group
                // goes back to the thread loop. d = 40: it reads later groups' elements only.
                let want = if d == 1 { 0 } else { n as u64 };
                assert_eq!(e.lane_threads(), want, "d {d} checked {checked}");
            }
        }
    }
}

#[test]
fn exits_after_a_store_keep_a_kernel_on_the_thread_loop() {
    let ptx = SAXPY.replace(
        "\tst.global.f32 \t[%rd1], %f4;\n",
        "\tst.global.f32 \t[%rd1], %f4;\n\t@%p1 bra \t$L__BB0_2;\n\tst.global.f32 \t[%rd2], %f4;\n",
    );
    assert_ne!(ptx, SAXPY, "the edit applies");
    let e = jit(&ptx, true, true);
    let why = e.lanes_report()[0].1.clone().expect("refused");
    assert!(why.contains("an exit after a store"), "{why}");
}

/// Nine input buffers, each through its own base register: more than the thread's recent-area
/// slots, so checked groups find slots taken by other buffers (they ask the runtime, start
/// again a bounded number of times, or go to the thread loop). out[i] = Σ in_k[i] · (k + 1).
#[test]
fn more_buffers_than_recent_area_slots() {
    let k = 9;
    let mut ptx =
        String::from(".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry many(");
    for j in 0..k {
        ptx += &format!(".param .u64 p{j}, ");
    }
    ptx += ".param .u64 pout, .param .u32 n)\n{\n  .reg .pred %p<2>;\n  .reg .b32 %r<40>;\n  \
            .reg .b64 %rd<40>;\n  ld.param.u32 %r1, [n];\n  mov.u32 %r2, %tid.x;\n  \
            mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mad.lo.s32 %r5, %r3, %r4, %r2;\n  \
            setp.ge.u32 %p1, %r5, %r1;\n  @%p1 bra END;\n  mul.wide.u32 %rd1, %r5, 4;\n  \
            mov.u32 %r6, 0;\n";
    for j in 0..k {
        ptx += &format!(
            "  ld.param.u64 %rd{a}, [p{j}];\n  add.s64 %rd{b}, %rd{a}, %rd1;\n  \
             ld.global.u32 %r{c}, [%rd{b}];\n  mad.lo.u32 %r6, %r{c}, {m}, %r6;\n",
            a = 2 + 2 * j,
            b = 3 + 2 * j,
            c = 10 + j,
            m = j + 1
        );
    }
    ptx += "  ld.param.u64 %rd30, [pout];\n  add.s64 %rd31, %rd30, %rd1;\n  \
            st.global.u32 [%rd31], %r6;\nEND:\n  ret;\n}\n";
    let n = 2000u32;
    let inputs: Vec<Vec<u32>> = (0..k)
        .map(|j| (0..n).map(|i| i * 31 + j as u32 * 7).collect())
        .collect();
    let want: Vec<u32> = (0..n as usize)
        .map(|i| {
            (0..k).fold(0u32, |acc, j| {
                acc.wrapping_add(inputs[j][i].wrapping_mul(j as u32 + 1))
            })
        })
        .collect();
    for checked in [true, false] {
        let e = jit(&ptx, checked, true);
        assert_eq!(e.lanes_report()[0].1, None);
        let refs: Vec<&[u32]> = inputs.iter().map(|v| v.as_slice()).collect();
        let got = run_rows(&e, "many", &refs, 1, n, 128).expect("runs");
        assert_rows("many", &got, &want, n);
        if !checked {
            assert_eq!(e.lane_threads(), whole_groups(n, 128, n.div_ceil(128)));
        }
    }
}

/// Division on per-thread values: `div`/`rem` of two loaded words, unsigned and signed, by
/// a uniform power of two (a shift or a mask of the lanes), of a sequence by a uniform 3, and
/// `div.rn.f32` with and without `.ftz`: out[k·n + i] for k = 0..10.
const DIV_OPS: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry divs(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<32>;
  .reg .f32 %f<8>;
  .reg .b64 %rd<24>;
  ld.param.u32 %r1, [n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r3, %r2, %r4;
  setp.lt.u32 %p1, %r5, %r1;
  @!%p1 ret;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  mul.wide.u32 %rd5, %r5, 4;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd1, %rd5;
  add.s64 %rd8, %rd2, %rd5;
  add.s64 %rd10, %rd3, %rd5;
  add.s64 %rd11, %rd10, %rd6;
  add.s64 %rd12, %rd11, %rd6;
  add.s64 %rd13, %rd12, %rd6;
  add.s64 %rd14, %rd13, %rd6;
  add.s64 %rd15, %rd14, %rd6;
  add.s64 %rd16, %rd15, %rd6;
  add.s64 %rd17, %rd16, %rd6;
  add.s64 %rd18, %rd17, %rd6;
  add.s64 %rd19, %rd18, %rd6;
  ld.global.u32 %r6, [%rd7];
  ld.global.u32 %r7, [%rd8];
  div.u32 %r8, %r6, %r7;
  rem.u32 %r9, %r6, %r7;
  div.s32 %r10, %r6, %r7;
  rem.s32 %r11, %r6, %r7;
  div.u32 %r12, %r6, 8;
  rem.u32 %r13, %r6, 8;
  div.u32 %r14, %r5, 3;
  rem.s32 %r15, %r6, -7;
  mov.b32 %f1, %r6;
  mov.b32 %f2, %r7;
  div.rn.f32 %f3, %f1, %f2;
  div.rn.ftz.f32 %f4, %f1, %f2;
  st.global.u32 [%rd10], %r8;
  st.global.u32 [%rd11], %r9;
  st.global.u32 [%rd12], %r10;
  st.global.u32 [%rd13], %r11;
  st.global.u32 [%rd14], %r12;
  st.global.u32 [%rd15], %r13;
  st.global.u32 [%rd16], %r14;
  st.global.u32 [%rd17], %r15;
  st.global.f32 [%rd18], %f3;
  st.global.f32 [%rd19], %f4;
  ret;
}
"#;

/// PTX's `div`/`rem` (9.7.1.7–8) with the defined results where the manual leaves them
/// open (docs/semantics.md, "Integer division by zero"): all ones by zero, MININT / -1 =
/// MININT, MININT % -1 = 0; the remainder takes the dividend's sign.
fn ptx_div(x: u32, y: u32, signed: bool, rem: bool) -> u32 {
    match (y, signed) {
        (0, _) => u32::MAX,
        (_, false) if rem => x % y,
        (_, false) => x / y,
        _ => {
            let (x, y) = (x as i32, y as i32);
            (if rem {
                x.wrapping_rem(y)
            } else {
                x.wrapping_div(y)
            }) as u32
        }
    }
}

#[test]
fn division_in_lanes_has_the_defined_results() {
    let mut r = Rng::new(14);
    let n = 700u32;
    // Every fourth pair an edge: zero divisors, MININT by -1, divisors of one, floats at
    // their corners; else random words of random widths.
    let edges = [
        (7, 0),
        (0x8000_0000, 0xffff_ffff),
        (0x8000_0000, 1),
        (0xffff_fff9, 2),
        (5, 0xffff_fffe),
    ];
    let (a, b): (Vec<u32>, Vec<u32>) = (0..n as usize)
        .map(|i| match i % 4 {
            0 => edges[r.below(edges.len() as u64) as usize],
            1 => (edgy_f32(&mut r), edgy_f32(&mut r)),
            _ => (
                r.next_u64() as u32 >> r.below(32),
                r.next_u64() as u32 >> r.below(32),
            ),
        })
        .unzip();
    let rows = 10usize;
    let mut want = vec![0u32; rows * n as usize];
    for i in 0..n as usize {
        let (x, y) = (a[i], b[i]);
        let quotient = |x: u32, y: u32| {
            let q = (Single::from_bits(x as u128) / Single::from_bits(y as u128)).value;
            if q.is_nan() {
                0x7fff_ffff
            } else {
                q.to_bits() as u32
            }
        };
        let v = [
            ptx_div(x, y, false, false),
            ptx_div(x, y, false, true),
            ptx_div(x, y, true, false),
            ptx_div(x, y, true, true),
            x >> 3,
            x & 7,
            i as u32 / 3,
            ptx_div(x, -7i32 as u32, true, true),
            quotient(x, y),
            ftz(quotient(ftz(x), ftz(y))),
        ];
        for (k, v) in v.into_iter().enumerate() {
            want[k * n as usize + i] = v;
        }
    }
    let lanes = whole_groups(n, 64, n.div_ceil(64));
    every_engine_gives(DIV_OPS, "divs", &[&a, &b], rows, n, 64, &want, lanes, true);
}

/// Division by a uniform register (each of 0, 1, -1, 8, 2^31, 3, 7, -8 in turn), signed by a
/// power of two (no shift: negative dividends round toward zero), by 1 and by 2^31, of
/// MININT by a sequence that passes 0 and -1, under a guard that leaves out the lanes whose
/// divisor is 0 (their registers keep what they held), of the thread index by 32 (`shr` and
/// `and`, which keep its shapes), and of a uniform by a constant under a guard:
/// out[k·n + i] for k = 0..16, against [`ptx_div`].
const DIV_UNIFORM: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 pa, .param .u64 pb, .param .u64 pout, .param .u32 n, .param .u32 d)
{
  .reg .pred %p<4>;
  .reg .b32 %r<40>;
  .reg .b64 %rd<40>;
  ld.param.u32 %r1, [n];
  ld.param.u32 %r20, [d];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r3, %r2, %r4;
  setp.lt.u32 %p1, %r5, %r1;
  @!%p1 ret;
  ld.param.u64 %rd1, [pa];
  ld.param.u64 %rd2, [pb];
  ld.param.u64 %rd3, [pout];
  mul.wide.u32 %rd5, %r5, 4;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd1, %rd5;
  add.s64 %rd8, %rd2, %rd5;
  add.s64 %rd10, %rd3, %rd5;
  ld.global.u32 %r6, [%rd7];
  ld.global.u32 %r7, [%rd8];
  div.u32 %r8, %r6, %r20;
  rem.s32 %r9, %r6, %r20;
  div.s32 %r10, %r6, %r20;
  div.s32 %r11, %r6, 8;
  rem.s32 %r12, %r6, 8;
  div.u32 %r13, %r6, 1;
  rem.u32 %r14, %r6, 1;
  rem.u32 %r15, %r6, 0x80000000;
  setp.ne.u32 %p2, %r7, 0;
  mov.u32 %r16, 12345;
  @%p2 div.s32 %r16, -2147483648, %r7;
  sub.u32 %r18, %r5, 5;
  div.u32 %r17, %r6, %r18;
  div.s32 %r19, -2147483648, %r18;
  div.u32 %r23, %r5, 32;
  rem.u32 %r24, %r5, 32;
  mov.u32 %r21, 5;
  @%p2 rem.u32 %r21, %r20, 7;
  div.u32 %r22, %r6, -8;
  st.global.u32 [%rd10], %r8;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r9;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r10;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r11;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r12;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r13;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r14;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r15;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r16;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r17;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r19;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r23;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r24;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r21;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r22;
  add.s64 %rd10, %rd10, %rd6;
  st.global.u32 [%rd10], %r18;
  ret;
}
"#;

#[test]
fn division_by_uniform_registers_guards_and_sequences() {
    let mut r = Rng::new(99);
    let n = 512u32;
    let edges = [
        0u32,
        1,
        0xffff_ffff,
        0x8000_0000,
        0x7fff_ffff,
        8,
        0xffff_fff8,
        0x0080_0000,
    ];
    let mut pick = |i: u32, every: u32| {
        if i.is_multiple_of(every) {
            edges[r.below(edges.len() as u64) as usize]
        } else {
            r.next_u64() as u32 >> r.below(32)
        }
    };
    let a: Vec<u32> = (0..n).map(|i| pick(i, 3)).collect();
    let b: Vec<u32> = (0..n).map(|i| pick(i, 2)).collect();
    let module = Module::parse(DIV_UNIFORM).expect("parses");
    let engines: Vec<(&str, Box<dyn Engine>)> = vec![
        ("interp", Box::new(Interpreter::new(module))),
        ("jit", Box::new(jit(DIV_UNIFORM, true, true))),
        ("jit-unchecked", Box::new(jit(DIV_UNIFORM, false, true))),
        ("jit-no-lanes", Box::new(jit(DIV_UNIFORM, true, false))),
    ];
    let rows = 16usize;
    for d in [0u32, 1, 0xffff_ffff, 8, 0x8000_0000, 3, 7, 0xffff_fff8] {
        let mut want = vec![0u32; rows * n as usize];
        for i in 0..n as usize {
            let (x, y) = (a[i], b[i]);
            let s = (i as u32).wrapping_sub(5);
            let v = [
                ptx_div(x, d, false, false),
                ptx_div(x, d, true, true),
                ptx_div(x, d, true, false),
                ptx_div(x, 8, true, false),
                ptx_div(x, 8, true, true),
                x,
                0,
                x & 0x7fff_ffff,
                if y != 0 {
                    ptx_div(0x8000_0000, y, true, false)
                } else {
                    12345
                },
                ptx_div(x, s, false, false),
                ptx_div(0x8000_0000, s, true, false),
                i as u32 / 32,
                i as u32 % 32,
                if y != 0 { d % 7 } else { 5 },
                x / 0xffff_fff8,
                s,
            ];
            for (k, v) in v.into_iter().enumerate() {
                want[k * n as usize + i] = v;
            }
        }
        for (name, e) in &engines {
            let mut bufs = [bytes_u32(&a), bytes_u32(&b)];
            let mut out = vec![0u8; rows * 4 * n as usize];
            let [ba, bb] = &mut bufs;
            let mut args = [
                Arg::Buffer(ba),
                Arg::Buffer(bb),
                Arg::Buffer(&mut out),
                Arg::Scalar(Value::u32(n)),
                Arg::Scalar(Value::u32(d)),
            ];
            let before = e.lane_threads();
            e.launch("k", Dim3::x(n / 64), Dim3::x(64), &mut args)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_rows(&format!("{name}, d = {d:#x}"), &u32s(&out), &want, n);
            if *name == "jit-unchecked" {
                let ran = e.lane_threads().unwrap() - before.unwrap();
                assert_eq!(ran, n as u64, "every thread in lanes");
            }
        }
    }
}

/// Division in a cooperative kernel's group function: threads from 40 on exit, a per-thread
/// branch skips the divisions where the neighbour's divisor is 0 or -1 (the dividend
/// MININT there), a guarded division leaves the same lanes out, and `div.rn.f32`. Every lane
/// still divides something (its registers' values where it does not run): none may trap.
const DIV_GROUP: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry g(.param .u64 out, .param .u64 in) {
  .reg .pred %p<6>; .reg .b32 %r<16>; .reg .b64 %rd<10>; .reg .f32 %f<4>;
  .shared .align 4 .b32 s[64];
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd6, [in];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd1, %r0, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  add.s64 %rd7, %rd6, %rd1;
  ld.global.u32 %r1, [%rd7];
  st.shared.u32 [%rd3], %r1;
  bar.sync 0;
  setp.ge.u32 %p0, %r0, 40;
  @%p0 bra DONE;
  add.u32 %r2, %r0, 1;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r3, [%rd5];
  setp.eq.u32 %p1, %r3, 0;
  setp.eq.u32 %p2, %r3, -1;
  or.pred %p3, %p1, %p2;
  mov.u32 %r4, 77;
  mov.u32 %r5, 88;
  @%p3 bra SKIP;
  div.s32 %r4, -2147483648, %r3;
  rem.s32 %r5, %r1, %r3;
SKIP:
  mov.u32 %r6, 99;
  @!%p3 div.u32 %r6, %r1, %r3;
  mov.b32 %f1, %r1;
  mov.b32 %f2, %r3;
  div.rn.f32 %f3, %f1, %f2;
  mov.b32 %r7, %f3;
  mul.wide.u32 %rd8, %r0, 4;
  add.s64 %rd9, %rd0, %rd8;
  st.global.u32 [%rd9], %r4;
  st.global.u32 [%rd9+256], %r5;
  st.global.u32 [%rd9+512], %r6;
  st.global.u32 [%rd9+768], %r7;
DONE:
  ret;
}
"#;

#[test]
fn division_in_a_group_function() {
    let mut r = Rng::new(5);
    let mut input: Vec<u32> = (0..64)
        .map(|t| match t % 4 {
            0 => 0,
            1 => 0xffff_ffff,
            _ => r.next_u64() as u32 >> r.below(32),
        })
        .collect();
    input[2] = 0x8000_0000;
    let mut want = vec![0u32; 64 * 4];
    for t in 0..40usize {
        let (x, y) = (input[t], input[t + 1]);
        let skip = y == 0 || y == u32::MAX;
        want[t] = if skip {
            77
        } else {
            ptx_div(0x8000_0000, y, true, false)
        };
        want[64 + t] = if skip { 88 } else { ptx_div(x, y, true, true) };
        want[128 + t] = if skip {
            99
        } else {
            ptx_div(x, y, false, false)
        };
        let q = (Single::from_bits(x as u128) / Single::from_bits(y as u128)).value;
        want[192 + t] = if q.is_nan() {
            0x7fff_ffff
        } else {
            q.to_bits() as u32
        };
    }
    let module = Module::parse(DIV_GROUP).expect("parses");
    let engines: Vec<(&str, Box<dyn Engine>)> = vec![
        ("interp", Box::new(Interpreter::new(module))),
        ("jit", Box::new(jit(DIV_GROUP, true, true))),
        ("jit-unchecked", Box::new(jit(DIV_GROUP, false, true))),
    ];
    for (name, e) in &engines {
        let mut out = vec![0u8; 64 * 16];
        let mut inb = bytes_u32(&input);
        let mut args = [Arg::Buffer(&mut out), Arg::Buffer(&mut inb)];
        e.launch("g", Dim3::x(2), Dim3::x(64), &mut args)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(u32s(&out), want, "{name}");
        if *name != "interp" {
            assert_eq!(e.lane_threads(), Some(128), "{name}: both blocks in lanes");
        }
    }
}

/// `div.u32`/`rem.u32` by constants that are no power of two (a multiplication by the
/// inverse in the lowering), in lanes and on the thread loop, over edge and random dividends:
/// out[i] = x / D, out[n + i] = x % D, against Rust's integer division.
#[test]
fn unsigned_division_by_constants() {
    let mut r = Rng::new(15);
    let mut divisors = vec![
        3u32,
        5,
        6,
        7,
        10,
        11,
        12,
        13,
        100,
        641,
        1000,
        65_537,
        0x7fff_ffff,
        0x8000_0001,
        0xaaaa_aaab,
        0xffff_fffe,
        0xffff_ffff,
    ];
    divisors.extend((0..8).map(|_| (r.next_u64() as u32 >> r.below(30)) | 3));
    for d in divisors {
        let ptx = format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n\
             .visible .entry q(.param .u64 px, .param .u64 pout, .param .u32 n)\n{{\n  \
             .reg .pred %p;\n  .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n  \
             ld.param.u32 %r1, [n];\n  mov.u32 %r2, %ctaid.x;\n  mov.u32 %r3, %ntid.x;\n  \
             mov.u32 %r4, %tid.x;\n  mad.lo.s32 %r5, %r2, %r3, %r4;\n  \
             setp.ge.u32 %p, %r5, %r1;\n  @%p bra DONE;\n  \
             ld.param.u64 %rd1, [px];\n  ld.param.u64 %rd2, [pout];\n  \
             mul.wide.u32 %rd3, %r5, 4;\n  mul.wide.u32 %rd4, %r1, 4;\n  \
             add.s64 %rd5, %rd1, %rd3;\n  add.s64 %rd6, %rd2, %rd3;\n  \
             add.s64 %rd7, %rd6, %rd4;\n  ld.global.u32 %r6, [%rd5];\n  \
             div.u32 %r7, %r6, {d};\n  st.global.u32 [%rd6], %r7;\n  \
             rem.u32 %r7, %r6, {d};\n  st.global.u32 [%rd7], %r7;\n\
             DONE:\n  ret;\n}}\n"
        );
        let near = [
            0,
            1,
            d - 1,
            d,
            d.wrapping_add(1),
            d.wrapping_mul(2).wrapping_sub(1),
        ];
        let mut x: Vec<u32> = near.to_vec();
        x.extend([
            u32::MAX,
            u32::MAX - 1,
            u32::MAX / d * d,
            (u32::MAX / d * d).wrapping_sub(1),
        ]);
        x.extend((0..1014).map(|_| r.next_u64() as u32 >> r.below(32)));
        let n = x.len() as u32;
        let want: Vec<u32> = x
            .iter()
            .map(|v| v / d)
            .chain(x.iter().map(|v| v % d))
            .collect();
        let lanes = whole_groups(n, 128, n.div_ceil(128));
        every_engine_gives(&ptx, "q", &[&x], 2, n, 128, &want, lanes, true);
    }
}
