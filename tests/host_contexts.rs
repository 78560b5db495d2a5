//! Host calls reuse a context per thread and Jit: results must be those of a fresh state on
//! every call (registers, `.local` and unwritten return parameters read zero, whatever the
//! previous call left), whichever Jit ran last on the thread, after faults and `exit`, and
//! from several threads at once. Expected values are worked out by hand in the comments and
//! in plain Rust.

mod common;

use ptxjit::jit::host::take_fault;
use ptxjit::{Engine, Jit, JitOptions, RunError, Value};

fn jit(ptx: &str, checked: bool) -> Jit {
    let options = JitOptions {
        checked,
        ..JitOptions::default()
    };
    common::jit_with(ptx, options)
}

/// `fresh(a)` reads `.local` words (through their address, so they live in its frame, not in
/// registers) and registers (`%z`, `%u`) before writing them, and writes
/// the return parameter `s` only when `a != 0`. Starting from zero on every call it returns
/// `r = a`, `s = a` (`s = 0` when `a == 0`); a second call that saw the first call's all-ones
/// or 1000 would return something else. `peek` faults on an address outside every area,
/// `stop` exits after writing its first return parameter, and `swap` exchanges the two
/// halves of a 16-byte array (its one array parameter and its array return lie where the
/// caller has them).
const FRESH: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u64 r, .param .u32 s) fresh(.param .u32 a)
{
    .local .align 8 .b8 buf[64];
    .reg .u64 %x, %y, %z, %b;
    .reg .u32 %w, %u;
    .reg .pred %p;
    mov.u64 %b, buf;
    ld.local.u64 %x, [%b+56];
    ld.local.u64 %y, [%b];
    or.b64 %x, %x, %y;
    or.b64 %x, %x, %z;
    ld.param.u32 %w, [a];
    add.u32 %w, %w, %u;
    cvt.u64.u32 %y, %w;
    add.u64 %x, %x, %y;
    st.local.u64 [%b+56], -1;
    st.local.u64 [%b], -1;
    mov.u64 %z, -1;
    mov.u32 %u, 1000;
    st.param.u64 [r], %x;
    setp.eq.u32 %p, %w, 0;
    @%p bra SKIP;
    st.param.u32 [s], %w;
SKIP:
    ret;
}
.visible .func (.param .u32 v) peek(.param .u64 p)
{
    .reg .u64 %a;
    .reg .u32 %v;
    ld.param.u64 %a, [p];
    ld.global.u32 %v, [%a];
    st.param.u32 [v], %v;
    ret;
}
.visible .func (.param .u32 r, .param .u32 s) stop(.param .u32 a)
{
    .reg .u32 %x;
    ld.param.u32 %x, [a];
    st.param.u32 [r], %x;
    exit;
    st.param.u32 [s], %x;
    ret;
}
.visible .func (.param .b8 out[16]) swap(.param .b8 in[16])
{
    .reg .u64 %lo, %hi;
    ld.param.u64 %lo, [in];
    ld.param.u64 %hi, [in+8];
    st.param.u64 [out], %hi;
    st.param.u64 [out+8], %lo;
    ret;
}
"#;

/// What `fresh(a)` returns from a fresh state.
fn fresh_want(a: u32) -> (u64, u32) {
    (a as u64, a)
}

#[repr(C)]
#[derive(Debug, Default, PartialEq)]
struct Fresh {
    r: u64,
    s: u32,
}

/// The raw and slot forms of `fresh`, `peek`, `stop` and `swap` of `j`.
struct Forms {
    fresh: extern "C" fn(*mut Fresh, u32),
    fresh_slots: extern "C" fn(*const u64, *mut u64),
    peek: extern "C" fn(u64) -> u32,
    stop: extern "C" fn(*mut [u32; 2], u32),
    swap: extern "C" fn(*mut [u8; 16], *const [u8; 16]),
}

fn forms(j: &Jit) -> Forms {
    // SAFETY: the C types follow jit::host's mapping: two returns go through a leading out
    // pointer to their #[repr(C)] struct (u64 then u32; u32 then u32), one scalar return is
    // the result, an array parameter is a pointer to its bytes and an array return an out
    // pointer to them; slot wrappers are all `fn(*const u64, *mut u64)`. `j` outlives every
    // use of the pointers in these tests.
    unsafe {
        Forms {
            fresh: std::mem::transmute::<*const u8, extern "C" fn(*mut Fresh, u32)>(
                j.raw_func("fresh").unwrap(),
            ),
            fresh_slots: std::mem::transmute::<*const u8, extern "C" fn(*const u64, *mut u64)>(
                j.slot_func("fresh").unwrap(),
            ),
            peek: std::mem::transmute::<*const u8, extern "C" fn(u64) -> u32>(
                j.raw_func("peek").unwrap(),
            ),
            stop: std::mem::transmute::<*const u8, extern "C" fn(*mut [u32; 2], u32)>(
                j.raw_func("stop").unwrap(),
            ),
            swap: std::mem::transmute::<*const u8, extern "C" fn(*mut [u8; 16], *const [u8; 16])>(
                j.raw_func("swap").unwrap(),
            ),
        }
    }
}

/// Calls `fresh(a)` through every host form of `j` and `Engine::call`, and checks each
/// against a fresh state's result.
fn check_fresh(j: &Jit, f: &Forms, a: u32) {
    let want = fresh_want(a);
    let typed = j.func::<(u32,), (u64, u32)>("fresh").unwrap();
    assert_eq!(typed.call((a,)).unwrap(), want, "typed fresh({a})");
    // The out struct starts dirty: every field is written.
    let mut out = Fresh { r: 77, s: 77 };
    (f.fresh)(&mut out, a);
    assert_eq!((out.r, out.s), want, "raw fresh({a})");
    let mut slots = [u64::MAX; 2];
    (f.fresh_slots)([a as u64].as_ptr(), slots.as_mut_ptr());
    assert_eq!((slots[0], slots[1] as u32), want, "slot fresh({a})");
    assert_eq!(
        slots[1] >> 32,
        0xffff_ffff,
        "a slot's bytes past the value stay"
    );
    let got = j.call("fresh", &[Value::u32(a)]).unwrap();
    assert_eq!(
        (got[0].bits, got[1].bits as u32),
        want,
        "Engine::call fresh({a})"
    );
}

#[test]
fn every_call_starts_from_zeroed_registers_and_locals() {
    for checked in [true, false] {
        let j = jit(FRESH, checked);
        let f = forms(&j);
        for a in [5, 0, 1, 0, u32::MAX, 7, 7] {
            check_fresh(&j, &f, a);
        }
    }
}

#[test]
fn a_fault_or_an_exit_leaves_nothing_for_the_next_call() {
    let j = jit(FRESH, true);
    let f = forms(&j);
    for round in 0..3u32 {
        // A fault: zero back, the fault kept for this Jit, then a clean call.
        assert_eq!((f.peek)(0x10 + round as u64), 0);
        match take_fault(&j) {
            Some(RunError::Fault(fault, _)) => {
                assert_eq!(fault.function, "peek");
                assert_eq!(fault.address, Some(0x10 + round as u64));
            }
            other => panic!("expected a fault, got {other:?}"),
        }
        assert!(take_fault(&j).is_none(), "taken once");
        check_fresh(&j, &f, round + 3);
        // The typed handle reports a fault as an error, and the next call succeeds.
        let peek = j.func::<(u64,), u32>("peek").unwrap();
        assert!(matches!(peek.call((8,)), Err(RunError::Fault(..))));
        check_fresh(&j, &f, round + 4);
        // `exit` returns what was written before it: r = a, s never written (0).
        let mut out = [9u32; 2];
        (f.stop)(&mut out, 40 + round);
        assert_eq!(out, [40 + round, 0]);
        assert!(take_fault(&j).is_none(), "exit is no fault");
        check_fresh(&j, &f, 0);
    }
    // A fault through a raw pointer is forgotten by the next typed call, which succeeds.
    assert_eq!((f.peek)(0x30), 0);
    let typed = j.func::<(u32,), (u64, u32)>("fresh").unwrap();
    assert_eq!(typed.call((6,)).unwrap(), fresh_want(6));
    assert!(take_fault(&j).is_none());
}

#[test]
fn array_parameter_and_return_on_the_callers_memory() {
    for checked in [true, false] {
        let j = jit(FRESH, checked);
        let f = forms(&j);
        let input: [u8; 16] = std::array::from_fn(|k| k as u8);
        // Halves exchanged: bytes 8..16 then 0..8.
        let want: [u8; 16] = std::array::from_fn(|k| ((k + 8) % 16) as u8);
        let mut out = [0xaa; 16];
        (f.swap)(&mut out, &input);
        assert_eq!(out, want);
        // The same buffer in and out: the parameter is copied in before the return is
        // written.
        let mut both = input;
        let p = &mut both as *mut [u8; 16];
        (f.swap)(p, p);
        assert_eq!(both, want);
    }
}

/// A second module: `mul(a, b) = a * b` (wrapping), and `get`, which reads the first word of
/// the module variable `g` (initialised to 41) through a generic address, so that checked
/// mode records `g` in the context's recent areas.
const OTHER: &str = r#".version 7.8
.target sm_80
.address_size 64
.global .align 8 .u32 g[16] = {41};
.visible .func (.param .u64 r) mul(.param .u64 a, .param .u64 b)
{
    .reg .u64 %a, %b;
    ld.param.u64 %a, [a];
    ld.param.u64 %b, [b];
    mul.lo.u64 %a, %a, %b;
    st.param.u64 [r], %a;
    ret;
}
.visible .func (.param .u64 r) addr()
{
    .reg .u64 %a;
    mov.u64 %a, g;
    st.param.u64 [r], %a;
    ret;
}
.visible .func (.param .u32 v) get(.param .u64 p)
{
    .reg .u64 %a;
    .reg .u32 %v;
    ld.param.u64 %a, [p];
    ld.u32 %v, [%a];
    st.param.u32 [v], %v;
    ret;
}
"#;

#[test]
fn two_jits_alternating_on_one_thread() {
    for checked in [true, false] {
        let (a, b) = (jit(FRESH, checked), jit(OTHER, checked));
        let fa = forms(&a);
        let mul = b.func::<(u64, u64), u64>("mul").unwrap();
        let g = b.func::<(), u64>("addr").unwrap().call(()).unwrap();
        let get = b.func::<(u64,), u32>("get").unwrap();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for k in 0..200u32 {
            check_fresh(&a, &fa, k);
            x = x.rotate_left(7) ^ k as u64;
            assert_eq!(
                mul.call((x, k as u64 + 3)).unwrap(),
                x.wrapping_mul(k as u64 + 3)
            );
            assert_eq!(get.call((g,)).unwrap(), 41);
            let got = b.call("mul", &[Value::u64(x), Value::u64(5)]).unwrap();
            assert_eq!(got[0].bits, x.wrapping_mul(5));
        }
        if !checked {
            continue;
        }
        // A fault of one Jit is not the other's.
        assert_eq!((fa.peek)(0x40), 0);
        assert_eq!(mul.call((6, 7)).unwrap(), 42);
        assert!(take_fault(&b).is_none(), "b did not fault");
        assert!(
            matches!(take_fault(&a), Some(RunError::Fault(f, _)) if f.address == Some(0x40)),
            "a's fault waits for a"
        );
    }
}

#[test]
fn more_jits_than_a_thread_keeps_contexts_of() {
    // Twelve Jits called round-robin: each call after the first round may find its context
    // gone (a thread keeps eight) and make a new one.
    let jits: Vec<Jit> = (0..12).map(|k| jit(FRESH, k % 2 == 0)).collect();
    let all: Vec<Forms> = jits.iter().map(forms).collect();
    for round in 0..4u32 {
        for (k, (j, f)) in jits.iter().zip(&all).enumerate() {
            check_fresh(j, f, round * 100 + k as u32);
        }
    }
}

#[test]
fn a_new_jit_does_not_inherit_a_dropped_ones_areas() {
    // Checked: `get` through `g`'s address passes while its Jit lives. A Jit made after it
    // has no module variables, so the same address must fault there, whatever the first
    // Jit's calls left in this thread's contexts.
    let first = jit(OTHER, true);
    let g = first.func::<(), u64>("addr").unwrap().call(()).unwrap();
    let get = first.func::<(u64,), u32>("get").unwrap();
    assert_eq!(get.call((g,)).unwrap(), 41);
    drop(get);
    drop(first);
    let second = jit(FRESH, true);
    let peek = second.func::<(u64,), u32>("peek").unwrap();
    match peek.call((g,)) {
        Err(RunError::Fault(f, _)) => assert_eq!(f.address, Some(g)),
        other => panic!("expected a fault, got {other:?}"),
    }
}

#[test]
fn calls_from_several_threads_at_once() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Jit>();
    let (a, b) = (jit(FRESH, true), jit(OTHER, false));
    std::thread::scope(|s| {
        for t in 0..4u32 {
            let (a, b) = (&a, &b);
            s.spawn(move || {
                let fa = forms(a);
                let mul = b.func::<(u64, u64), u64>("mul").unwrap();
                for k in 0..500u32 {
                    let x = t * 1_000_000 + k;
                    check_fresh(a, &fa, x);
                    assert_eq!(mul.call((x as u64, 3)).unwrap(), 3 * x as u64);
                    if k % 50 == t {
                        // This thread's fault is this thread's only.
                        assert_eq!((fa.peek)(0x100 + t as u64), 0);
                        match take_fault(a) {
                            Some(RunError::Fault(f, _)) => {
                                assert_eq!(f.address, Some(0x100 + t as u64))
                            }
                            other => panic!("thread {t}: expected a fault, got {other:?}"),
                        }
                    }
                    assert!(take_fault(a).is_none(), "thread {t}");
                }
            });
        }
    });
    // Short-lived threads: each makes its contexts and leaves them behind when it ends.
    for t in 0..16u32 {
        std::thread::scope(|s| {
            s.spawn(|| {
                let f = forms(&a);
                check_fresh(&a, &f, t);
            });
        });
    }
}

/// `sum(n) = n + sum(n - 1)`, `sum(0) = 0`, by recursion: a module with calls, whose
/// deepest possible call chain (257 levels) needs more stack than 1 MiB.
const RECURSIVE: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u64 r) sum(.param .u64 n)
{
    .reg .u64 %n, %m, %s;
    .reg .pred %p;
    ld.param.u64 %n, [n];
    setp.eq.u64 %p, %n, 0;
    @%p bra DONE;
    sub.u64 %m, %n, 1;
    {
        .param .u64 x;
        .param .u64 y;
        st.param.u64 [x], %m;
        call (y), sum, (x);
        ld.param.u64 %s, [y];
    }
    add.u64 %n, %n, %s;
DONE:
    st.param.u64 [r], %n;
    ret;
}
"#;

#[test]
fn engine_calls_of_a_module_with_calls_on_small_and_big_stacks() {
    let j = jit(RECURSIVE, true);
    let run = || {
        for n in [0u64, 1, 10, 255] {
            let got = j.call("sum", &[Value::u64(n)]).unwrap();
            assert_eq!(got[0].bits, n * (n + 1) / 2, "sum({n})");
        }
        match j.call("sum", &[Value::u64(1000)]) {
            Err(RunError::Fault(f, _)) => {
                assert!(
                    f.message.starts_with("call depth exceeds 256"),
                    "{}",
                    f.message
                )
            }
            other => panic!("expected the depth fault, got {other:?}"),
        }
    };
    // A thread with little stack hands the calls to a big-stack thread; one with plenty
    // runs them itself.
    for stack in [256 << 10, 64 << 20] {
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(stack)
                .spawn_scoped(s, run)
                .unwrap()
                .join()
                .unwrap()
        });
    }
}
