//! `.func`s as native host callables: the typed handle, the raw `extern "C"` pointer, several
//! return values, array parameters and faults. Expected values come from Rust re-writings of
//! the corpus's C sources and from u128 arithmetic.

mod common;

use common::Rng;
use ptxjit::jit::host::take_fault;
use ptxjit::{Jit, Module, RunError};

fn jit(ptx: &str) -> Jit {
    Jit::new(Module::parse(ptx).expect("test PTX parses")).expect("compiles")
}

/// `mix` of tests/corpus/hash.cu, re-written in Rust.
fn mix(h: u64, k: u64) -> u64 {
    let k = k.wrapping_mul(0x87c3_7b91_1142_53d5);
    let k = k.rotate_left(31);
    let h = h ^ k.wrapping_mul(0x4cf5_ad43_2745_937f);
    h.rotate_left(27).wrapping_mul(5).wrapping_add(0x52dc_e729)
}

#[test]
fn corpus_func_through_the_typed_handle_and_the_raw_pointer() {
    let j = jit(include_str!("corpus/hash.ptx"));
    let f = j
        .func::<(u64, u64), u64>("_Z3mixmm")
        .expect("signature matches");
    let raw = j.raw_func("_Z3mixmm").expect("has a wrapper");
    // SAFETY: `.func (.param .b64 r) _Z3mixmm(.param .b64, .param .b64)` has the C type
    // `extern "C" fn(u64, u64) -> u64` (see jit::host), and `j` outlives the calls.
    let raw: extern "C" fn(u64, u64) -> u64 = unsafe { std::mem::transmute(raw) };
    let mut rng = Rng::new(7);
    for _ in 0..1000 {
        let (h, k) = (rng.next_u64(), rng.next_u64());
        assert_eq!(f.call((h, k)).unwrap(), mix(h, k), "mix({h:#x}, {k:#x})");
        assert_eq!(raw(h, k), mix(h, k), "raw mix({h:#x}, {k:#x})");
    }
}

#[test]
fn array_parameters_and_returns_go_through_pointers() {
    let j = jit(include_str!("corpus/u128_mul.ptx"));
    let raw = j.raw_func("_Z6mulaccomm").expect("has a wrapper");
    // SAFETY: `(.param .b8 r[16]) f(.param .b8 acc[16], .param .b64, .param .b64)`: an array
    // return goes through a leading out pointer and an array parameter is a pointer to its
    // bytes (jit::host docs).
    let raw: extern "C" fn(*mut [u8; 16], *const [u8; 16], u64, u64) =
        unsafe { std::mem::transmute(raw) };
    let mut rng = Rng::new(11);
    for _ in 0..1000 {
        let acc = ((rng.next_u64() as u128) << 64) | rng.next_u64() as u128;
        let (a, b) = (rng.next_u64(), rng.next_u64());
        let mut out = [0u8; 16];
        raw(&mut out, &acc.to_le_bytes(), a, b);
        let want = acc.wrapping_add(a as u128 * b as u128);
        assert_eq!(u128::from_le_bytes(out), want, "{acc:#x} + {a:#x} * {b:#x}");
    }
    // The typed handle refuses array signatures and says why.
    let e = j
        .func::<(u64, u64, u64), u64>("_Z6mulaccomm")
        .err()
        .expect("refused");
    assert!(e.to_string().contains("raw pointer"), "{e}");
}

const TWO_RETURNS: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u32 q, .param .f64 r, .param .u8 s) divmod(.param .u32 a, .param .u32 b)
{
    .reg .u32 %r<4>;
    .reg .f64 %d;
    .reg .u16 %h;
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    div.u32 %r3, %r1, %r2;
    st.param.u32 [q], %r3;
    rem.u32 %r3, %r1, %r2;
    cvt.rn.f64.u32 %d, %r3;
    st.param.f64 [r], %d;
    cvt.u16.u32 %h, %r1;
    st.param.u8 [s], %h;
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
"#;

#[test]
fn several_returns_come_back_as_a_tuple_or_a_repr_c_struct() {
    let j = jit(TWO_RETURNS);
    let f = j.func::<(u32, u32), (u32, f64, u8)>("divmod").unwrap();
    assert_eq!(f.call((17, 5)).unwrap(), (3, 2.0, 17));
    // By zero: quotient and remainder all ones (as NVIDIA hardware).
    assert_eq!(f.call((300, 0)).unwrap(), (u32::MAX, u32::MAX as f64, 44));

    #[repr(C)]
    #[derive(Default)]
    struct Out {
        q: u32,
        r: f64,
        s: u8,
    }
    let raw = j.raw_func("divmod").unwrap();
    // SAFETY: three returns → `extern "C" fn(*mut Out, u32, u32)` with `Out` the #[repr(C)]
    // struct of (u32, f64, u8) (jit::host docs).
    let raw: extern "C" fn(*mut Out, u32, u32) = unsafe { std::mem::transmute(raw) };
    let mut out = Out::default();
    raw(&mut out, 100, 7);
    assert_eq!((out.q, out.r, out.s), (14, 2.0, 100));

    // Types that do not fit the PTX signature are refused when the handle is made.
    assert!(j.func::<(u32, u32), u32>("divmod").is_err());
    assert!(j.func::<(f32, u32), (u32, f64, u8)>("divmod").is_err());
    assert!(j.func::<(u32,), (u32, f64, u8)>("divmod").is_err());
}

#[test]
fn a_fault_in_a_host_call_is_an_error_not_a_crash() {
    let j = jit(TWO_RETURNS);
    let f = j.func::<(u64,), u32>("peek").unwrap();
    match f.call((0x10,)) {
        Err(RunError::Fault(fault, _)) => {
            assert_eq!(fault.function, "peek");
            assert_eq!(fault.line, 25);
            assert_eq!(fault.address, Some(0x10));
            assert!(
                fault.message.contains("no memory there"),
                "{}",
                fault.message
            );
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // Through the raw pointer: zero comes back and the fault waits to be taken.
    let raw = j.raw_func("peek").unwrap();
    // SAFETY: `(.param .u32 v) peek(.param .u64 p)` is `extern "C" fn(u64) -> u32`.
    let raw: extern "C" fn(u64) -> u32 = unsafe { std::mem::transmute(raw) };
    assert_eq!(raw(0x20), 0);
    let e = take_fault(&j).expect("the fault was recorded");
    assert!(
        e.to_string()
            .contains("global load of 4 bytes at address 0x20"),
        "{e}"
    );
    assert!(take_fault(&j).is_none());
}

const EXITS: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u32 r, .param .u32 s) stop(.param .u32 a)
{
    .reg .u32 %x;
    ld.param.u32 %x, [a];
    st.param.u32 [r], %x;
    exit;
    st.param.u32 [s], %x;
    ret;
}
"#;

#[test]
fn exit_in_a_host_call_returns_what_was_written_before_it() {
    // `r` was written before `exit`, `s` never (zero, as every unwritten return parameter).
    for (name, e) in common::engines(EXITS) {
        let got = e.call("stop", &[ptxjit::Value::u32(7)]).unwrap();
        let bits: Vec<u64> = got.iter().map(|v| v.bits).collect();
        assert_eq!(bits, vec![7, 0], "{name}");
    }
    let j = jit(EXITS);
    let f = j.func::<(u32,), (u32, u32)>("stop").unwrap();
    assert_eq!(f.call((9,)).unwrap(), (9, 0));
}

const ZEROED: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u64 r) fresh(.param .b8 a[12])
{
    .local .align 8 .b8 buf[296];
    .reg .u64 %x, %y;
    .reg .u32 %w;
    ld.local.u64 %x, [buf+288];
    ld.local.u64 %y, [buf+8];
    or.b64 %x, %x, %y;
    ld.param.u32 %w, [a+8];
    cvt.u64.u32 %y, %w;
    add.u64 %x, %x, %y;
    st.local.u64 [buf+288], -1;
    st.local.u64 [buf+8], -1;
    st.param.u64 [r], %x;
    ret;
}
"#;

#[test]
fn locals_start_zeroed_on_every_call_beside_copied_parameters() {
    // The second call finds zeros again where the first stored all-ones.
    let mut a = [0u8; 12];
    a[8..].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    let j = jit(ZEROED);
    let raw = j.raw_func("fresh").unwrap();
    // SAFETY: `(.param .u64 r) fresh(.param .b8 a[12])` is `extern "C" fn(*const u8) -> u64`
    // and `a` holds 12 bytes.
    let f: extern "C" fn(*const u8) -> u64 = unsafe { std::mem::transmute(raw) };
    for _ in 0..2 {
        assert_eq!(f(a.as_ptr()), 0x1234_5678);
    }
}

#[test]
fn slot_wrappers_take_and_give_one_8_byte_slot_per_value() {
    type Slots = extern "C" fn(*const u64, *mut u64);
    let j = jit(TWO_RETURNS);
    // SAFETY: every slot wrapper has the C type `fn(*const u64, *mut u64)` (jit::host docs),
    // and `j` outlives the calls.
    let divmod: Slots = unsafe { std::mem::transmute(j.slot_func("divmod").unwrap()) };
    // Slots past a value's width are ignored on the way in and left alone on the way out.
    let args = [0xdead_0000_0000_0000 | 100u64, 7];
    let mut rets = [u64::MAX; 3];
    divmod(args.as_ptr(), rets.as_mut_ptr());
    assert_eq!(rets[0] as u32, 14);
    assert_eq!(f64::from_bits(rets[1]), 2.0);
    assert_eq!(rets[2] as u8, 100);
    // A fault zeroes the results and is kept for the thread, as for the typed wrapper.
    // SAFETY: as above.
    let peek: Slots = unsafe { std::mem::transmute(j.slot_func("peek").unwrap()) };
    let mut rets = [7u64];
    peek([0x10u64].as_ptr(), rets.as_mut_ptr());
    assert_eq!(rets[0] as u32, 0);
    match take_fault(&j) {
        Some(RunError::Fault(fault, _)) => assert_eq!(fault.address, Some(0x10)),
        other => panic!("expected a fault, got {other:?}"),
    }
    // The corpus's `mix` against its Rust re-writing.
    let j = jit(include_str!("corpus/hash.ptx"));
    // SAFETY: as above.
    let f: Slots = unsafe { std::mem::transmute(j.slot_func("_Z3mixmm").unwrap()) };
    let mut rng = Rng::new(3);
    for _ in 0..100 {
        let args = [rng.next_u64(), rng.next_u64()];
        let mut ret = [0u64];
        f(args.as_ptr(), ret.as_mut_ptr());
        assert_eq!(ret[0], mix(args[0], args[1]));
    }
    // No slot form for array signatures or missing functions.
    let j = jit(include_str!("corpus/u128_mul.ptx"));
    assert!(j.slot_func("_Z6mulaccomm").is_none());
    assert!(j.slot_func("nope").is_none());
}

/// Functions that never read their thread context (no checked access or frame, helper, call
/// or special register) with scalar parameters and results: their typed wrappers are the
/// functions themselves, lowered for the C ABI (`Lower::direct_host_function`). Floats
/// pass as floats, a one-byte parameter as a byte, a parameter read in halves through the
/// frame, a result written before `exit`; every value against Rust.
const DIRECT: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .f64 r) fmix(.param .f32 a, .param .f64 b)
{
  .reg .f32 %f;
  .reg .f64 %d<3>;
  ld.param.f32 %f, [a];
  ld.param.f64 %d0, [b];
  cvt.f64.f32 %d1, %f;
  mul.rn.f64 %d2, %d1, %d0;
  st.param.f64 [r], %d2;
  ret;
}
.visible .func (.param .u32 r) halves(.param .u32 a, .param .u8 k)
{
  .reg .u16 %h<2>;
  .reg .u32 %w<3>;
  ld.param.u16 %h0, [a];
  ld.param.u16 %h1, [a+2];
  cvt.u32.u16 %w0, %h0;
  cvt.u32.u16 %w1, %h1;
  ld.param.u8 %w2, [k];
  mad.lo.u32 %w0, %w1, %w2, %w0;
  st.param.u32 [r], %w0;
  ret;
}
.visible .func (.param .u32 r) leave(.param .u32 a)
{
  .reg .u32 %a;
  .reg .pred %p;
  ld.param.u32 %a, [a];
  st.param.u32 [r], %a;
  setp.gt.u32 %p, %a, 100;
  @%p exit;
  st.param.u32 [r], 7;
  ret;
}
"#;

#[test]
fn context_free_functions_are_their_own_wrappers() {
    for checked in [true, false] {
        let options = ptxjit::JitOptions {
            checked,
            emit: ptxjit::jit::Emit::Asm,
            ..ptxjit::JitOptions::default()
        };
        let j = Jit::with_options(Module::parse(DIRECT).unwrap(), options).unwrap();
        // `halves` reads its parameter as two halves: two pieces in registers, no frame to
        // register with the context even when checked.
        for (name, direct) in [("fmix", true), ("halves", true), ("leave", true)] {
            let wrapper = format!("{name} (host wrapper)");
            let (_, code) = (j.listing.iter())
                .find(|(n, _)| *n == wrapper)
                .expect("listed");
            let calls = code.lines().any(|l| l.trim_start().starts_with("call"));
            assert_eq!(calls, !direct, "{wrapper}, checked {checked}:\n{code}");
        }
        let fmix = j.func::<(f32, f64), f64>("fmix").unwrap();
        let halves = j.func::<(u32, u8), u32>("halves").unwrap();
        let leave = j.func::<(u32,), u32>("leave").unwrap();
        let mut rng = Rng::new(3);
        for _ in 0..500 {
            let (a, b) = (f32::from_bits(rng.next_u64() as u32), rng.next_u64() as f64);
            let (got, want) = (fmix.call((a, b)).unwrap(), a as f64 * b);
            assert!(got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()));
            let (w, k) = (rng.next_u64() as u32, rng.next_u64() as u8);
            let want = (w & 0xffff).wrapping_add((w >> 16).wrapping_mul(k as u32));
            assert_eq!(halves.call((w, k)).unwrap(), want, "halves({w:#x}, {k})");
            let a = rng.next_u64() as u32 % 200;
            let want = if a > 100 { a } else { 7 };
            assert_eq!(leave.call((a,)).unwrap(), want, "leave({a})");
        }
    }
}
