//! What a host call of a `.func` costs: a trivial function (`add.u32`) through the typed
//! handle, the raw `extern "C"` pointer and the slot wrapper, against a native Rust function
//! called through a pointer; `Engine::call` of the same function; and `mul256_u64` as a host
//! call against the Rust u128 loop and GMP's `mpn_mul_n` (from the system's `libgmp.so.10`,
//! loaded at run time; without it that row is left out and the bench says so).
//!
//! cargo bench --bench host_calls [-- FILTER]

mod workloads;

use criterion::{Criterion, criterion_group, criterion_main};
use ptxjit::{Engine, Value};
use std::hint::black_box;
use workloads::jit;

const ADD: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u32 r) add(.param .u32 a, .param .u32 b)
{
    .reg .u32 %r<4>;
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    add.u32 %r3, %r1, %r2;
    st.param.u32 [r], %r3;
    ret;
}
"#;

#[inline(never)]
extern "C" fn native_add(a: u32, b: u32) -> u32 {
    a.wrapping_add(b)
}

fn trivial(c: &mut Criterion) {
    let mut group = c.benchmark_group("trivial call");
    let native: extern "C" fn(u32, u32) -> u32 = black_box(native_add);
    group.bench_function("native", |bench| {
        bench.iter(|| native(black_box(2), black_box(3)))
    });
    for checked in [false, true] {
        let suffix = if checked { "" } else { " unchecked" };
        let j = jit(ADD, checked);
        let f = j.func::<(u32, u32), u32>("add").expect("signature matches");
        assert_eq!(f.call((2, 3)).unwrap(), 5);
        group.bench_function(format!("typed handle{suffix}"), |bench| {
            bench.iter(|| f.call(black_box((2, 3))).unwrap())
        });
        // SAFETY: `(.param .u32 r) add(.param .u32 a, .param .u32 b)` has the C type
        // `extern "C" fn(u32, u32) -> u32` (jit::host), and `j` outlives the calls.
        let raw: extern "C" fn(u32, u32) -> u32 =
            unsafe { std::mem::transmute(j.raw_func("add").unwrap()) };
        assert_eq!(raw(2, 3), 5);
        group.bench_function(format!("raw pointer{suffix}"), |bench| {
            bench.iter(|| raw(black_box(2), black_box(3)))
        });
        // SAFETY: every slot wrapper is `extern "C" fn(*const u64, *mut u64)` (jit::host).
        let slots: extern "C" fn(*const u64, *mut u64) =
            unsafe { std::mem::transmute(j.slot_func("add").unwrap()) };
        let (args, mut ret) = ([2u64, 3], [0u64]);
        group.bench_function(format!("slot wrapper{suffix}"), |bench| {
            bench.iter(|| slots(black_box(args.as_ptr()), black_box(ret.as_mut_ptr())))
        });
        let args = [Value::u32(2), Value::u32(3)];
        assert_eq!(j.call("add", &args).unwrap()[0].bits, 5);
        group.bench_function(format!("Engine::call{suffix}"), |bench| {
            bench.iter(|| j.call("add", black_box(&args)).unwrap())
        });
    }
    // A module with calls (hash.ptx's kernel calls `mix`): its deepest possible call chain
    // needs more than 1 MiB of stack, so `Engine::call` may hand the call to a big-stack
    // thread.
    let j = jit(include_str!("../tests/corpus/hash.ptx"), true);
    let args = [Value::u64(1), Value::u64(2)];
    group.bench_function("Engine::call, module with calls", |bench| {
        bench.iter(|| j.call("_Z3mixmm", black_box(&args)).unwrap())
    });
    group.finish();
}

/// `mpn_mul_n(rp, s1p, s2p, n)` of the system's GMP, if it can be loaded.
type MulN = unsafe extern "C" fn(*mut u64, *const u64, *const u64, i64);

unsafe extern "C" {
    fn dlopen(file: *const std::ffi::c_char, mode: i32) -> *mut std::ffi::c_void;
    fn dlsym(handle: *mut std::ffi::c_void, name: *const std::ffi::c_char)
    -> *mut std::ffi::c_void;
}

fn gmp_mul_n() -> Option<MulN> {
    const RTLD_NOW: i32 = 2;
    // SAFETY: both names are NUL-terminated; loading GMP runs no code of ours, and the
    // symbol, when found, is GMP's `mpn_mul_n`, whose C type is `MulN`.
    unsafe {
        let h = dlopen(c"libgmp.so.10".as_ptr(), RTLD_NOW);
        if h.is_null() {
            return None;
        }
        let f = dlsym(h, c"__gmpn_mul_n".as_ptr());
        (!f.is_null()).then(|| std::mem::transmute::<*mut std::ffi::c_void, MulN>(f))
    }
}

fn mul256(c: &mut Criterion) {
    let w = workloads::all()
        .into_iter()
        .find(|w| w.name == "mul256_u64")
        .expect("the workload exists");
    let ptx = workloads::ptx(&w);
    let limbs: Vec<u64> = (0..8u64)
        .map(|k| k.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef)
        .collect();
    let (x, y) = (limbs[..4].to_vec(), limbs[4..].to_vec());
    let mut want = [0u64; 8];
    workloads::rust_mul_u64(&x, &y, &mut want);
    let mut group = c.benchmark_group("mul256_u64 call");
    for checked in [false, true] {
        let j = jit(&ptx, checked);
        // SAFETY: `(.param .b8 r[64]) f(.param .b8 a[32], .param .b8 b[32])` is
        // `extern "C" fn(out, a, b)` with byte pointers (jit::host); the buffers have those
        // sizes and `j` outlives the calls.
        let f: extern "C" fn(*mut u64, *const u64, *const u64) =
            unsafe { std::mem::transmute(j.raw_func(w.name).unwrap()) };
        let mut r = [0u64; 8];
        f(r.as_mut_ptr(), x.as_ptr(), y.as_ptr());
        assert_eq!(r, want, "the JIT agrees with Rust");
        let name = if checked { "jit" } else { "jit unchecked" };
        group.bench_function(name, |bench| {
            bench.iter(|| {
                f(
                    black_box(r.as_mut_ptr()),
                    black_box(x.as_ptr()),
                    black_box(y.as_ptr()),
                )
            })
        });
    }
    let mut r = [0u64; 8];
    group.bench_function("rust", |bench| {
        bench.iter(|| workloads::rust_mul_u64(black_box(&x), black_box(&y), black_box(&mut r)))
    });
    match gmp_mul_n() {
        Some(mul_n) => {
            // SAFETY: rp holds 2n limbs and s1p, s2p n limbs each; rp overlaps neither.
            unsafe { mul_n(r.as_mut_ptr(), x.as_ptr(), y.as_ptr(), 4) };
            assert_eq!(r, want, "GMP agrees with Rust");
            group.bench_function("gmp mpn_mul_n", |bench| {
                bench.iter(|| {
                    // SAFETY: as above.
                    unsafe {
                        mul_n(
                            black_box(r.as_mut_ptr()),
                            black_box(x.as_ptr()),
                            black_box(y.as_ptr()),
                            4,
                        )
                    }
                })
            });
        }
        None => println!("libgmp.so.10 not found: no GMP row"),
    }
    group.finish();
}

criterion_group!(benches, trivial, mul256);
criterion_main!(benches);
