//! Calls of small leaf functions inlined by the JIT (`frontend::inline_small_calls`), their
//! `.param` variables kept in registers (`jit::layout::in_registers`): results against values
//! worked out here, faults reported as the interpreter reports a fault in a call, and the
//! code shape (no call, no frame) pinned.

mod common;

use common::{engines, jit_with};
use ptxjit::jit::Emit;
use ptxjit::{Arg, Dim3, Engine, Interpreter, JitOptions, Module, RunError};

const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

/// Callees of every kind the inliner takes: 64-bit and float parameters through `.param`
/// variables, a one-byte parameter, a fresh `.local` counter per call, `ret` under a guard
/// with the result written twice, and a video instruction with a secondary operand (its
/// register must be renamed with the rest); `nothing` has no parameters.
const CALLEES: &str = r#"
.func (.param .b64 r) mix(.param .b64 h, .param .b64 k)
{
  .reg .b64 %a<6>;
  ld.param.b64 %a0, [h];
  ld.param.b64 %a1, [k];
  mul.lo.u64 %a2, %a1, 3;
  xor.b64 %a3, %a0, %a2;
  shl.b64 %a4, %a3, 5;
  shr.b64 %a5, %a3, 59;
  or.b64 %a4, %a4, %a5;
  add.u64 %a4, %a4, 1;
  st.param.b64 [r], %a4;
  ret;
}
.func (.param .f32 r) halve(.param .f32 x)
{
  .reg .f32 %f<2>;
  ld.param.f32 %f0, [x];
  mul.rn.f32 %f1, %f0, 0f3F000000;
  st.param.f32 [r], %f1;
  ret;
}
.func (.param .b32 r) bump(.param .b8 x)
{
  .local .align 4 .b8 seen[8];
  .reg .b32 %c<3>;
  ld.local.u32 %c0, [seen+4];
  add.u32 %c0, %c0, 1;
  st.local.u32 [seen+4], %c0;
  ld.param.u8 %c1, [x];
  add.u32 %c2, %c1, %c0;
  st.param.b32 [r], %c2;
  ret;
}
.func (.param .b32 r) pick(.param .b32 x)
{
  .reg .b32 %x;
  .reg .pred %p;
  ld.param.b32 %x, [x];
  st.param.b32 [r], 7;
  setp.eq.u32 %p, %x, 0;
  @%p ret;
  st.param.b32 [r], 9;
  ret;
}
.func (.param .b32 r) vsum(.param .b32 x, .param .b32 y)
{
  .reg .b32 %v<3>;
  ld.param.b32 %v0, [x];
  ld.param.b32 %v1, [y];
  vadd.u32.u32.u32.add %v2, %v0, %v1, %v0;
  st.param.b32 [r], %v2;
  ret;
}
.func nothing()
{
  ret;
}
"#;

/// Thread t writes five words: mix folded over k = 0..4 from h = t (low and high halves),
/// halve(t) as f32 bits for odd t (the call is guarded; even threads keep 1.0), bump(t+250)
/// twice summed (each call sees a fresh counter: (t+250) mod 256 + 1 each), pick(t mod 2),
/// vsum(t, 5).
const KERNEL: &str = r#"
.visible .entry k(.param .u64 out)
{
  .reg .b32 %t, %j, %w, %u;
  .reg .b64 %h, %o, %k;
  .reg .f32 %f;
  .reg .pred %odd, %more;
  ld.param.u64 %o, [out];
  mov.u32 %t, %tid.x;
  mul.wide.u32 %k, %t, 32;
  add.u64 %o, %o, %k;
  cvt.u64.u32 %h, %t;
  mov.u32 %j, 0;
LOOP:
  cvt.u64.u32 %k, %j;
  {
    .param .b64 p0;
    .param .b64 p1;
    .param .b64 q;
    st.param.b64 [p0], %h;
    st.param.b64 [p1], %k;
    call.uni (q), mix, (p0, p1);
    ld.param.b64 %h, [q];
  }
  add.u32 %j, %j, 1;
  setp.lt.u32 %more, %j, 4;
  @%more bra LOOP;
  st.global.u64 [%o], %h;
  and.b32 %w, %t, 1;
  setp.ne.u32 %odd, %w, 0;
  mov.f32 %f, 0f3F800000;
  cvt.rn.f32.u32 %f, %t;
  @!%odd mov.f32 %f, 0f3F800000;
  {
    .param .f32 x;
    .param .f32 y;
    st.param.f32 [x], %f;
    @%odd call (y), halve, (x);
    @%odd ld.param.f32 %f, [y];
  }
  st.global.f32 [%o+8], %f;
  add.u32 %w, %t, 250;
  {
    .param .b8 x;
    .param .b32 y;
    st.param.b8 [x], %w;
    call (y), bump, (x);
    ld.param.b32 %u, [y];
    call (y), bump, (x);
    ld.param.b32 %w, [y];
  }
  add.u32 %u, %u, %w;
  st.global.u32 [%o+12], %u;
  and.b32 %w, %t, 1;
  {
    .param .b32 x;
    .param .b32 y;
    st.param.b32 [x], %w;
    call (y), pick, (x);
    ld.param.b32 %u, [y];
  }
  st.global.u32 [%o+16], %u;
  {
    .param .b32 x;
    .param .b32 y;
    .param .b32 z;
    st.param.b32 [x], %t;
    st.param.b32 [y], 5;
    call (z), vsum, (x, y);
    ld.param.b32 %u, [z];
  }
  st.global.u32 [%o+20], %u;
  {
    call.uni nothing, ();
  }
  ret;
}
"#;

/// The five results of thread `t`, worked out from the PTX above.
fn expected(t: u32) -> [u32; 6] {
    let mut h = t as u64;
    for k in 0..4u64 {
        let x = h ^ k.wrapping_mul(3);
        h = x.rotate_left(5).wrapping_add(1);
    }
    let f = if t % 2 == 1 { t as f32 * 0.5 } else { 1.0 };
    let b = (t + 250) % 256 + 1;
    let pick = if t.is_multiple_of(2) { 7 } else { 9 };
    // vadd with the secondary add: (t + 5) + t.
    let v = t.wrapping_add(5).wrapping_add(t);
    [h as u32, (h >> 32) as u32, f.to_bits(), 2 * b, pick, v]
}

fn module() -> String {
    format!("{HEAD}{CALLEES}{KERNEL}")
}

#[test]
fn inlined_calls_give_the_callees_results() {
    let ptx = module();
    const THREADS: u32 = 64;
    for (name, e) in engines(&ptx) {
        let mut out = vec![0u8; 32 * THREADS as usize];
        e.launch(
            "k",
            Dim3::x(1),
            Dim3::x(THREADS),
            &mut [Arg::Buffer(&mut out)],
        )
        .unwrap_or_else(|err| panic!("{name}: {err}"));
        for t in 0..THREADS {
            let at = 32 * t as usize;
            let got: Vec<u32> = (0..6)
                .map(|k| u32::from_le_bytes(out[at + 4 * k..at + 4 * k + 4].try_into().unwrap()))
                .collect();
            assert_eq!(got, expected(t), "{name}: thread {t}");
        }
    }
}

#[test]
fn an_inlined_kernel_has_no_calls_and_no_frame() {
    let options = JitOptions {
        emit: Emit::Clif,
        checked: false,
        verify: true,
        ..JitOptions::default()
    };
    // `bump`'s counter read and written whole, so that it too can live in a register.
    let ptx = module()
        .replace("seen[8]", "seen[4]")
        .replace("[seen+4]", "[seen]");
    let jit = jit_with(&ptx, options);
    let (_, clif) = (jit.listing.iter())
        .find(|(n, _)| n == "k")
        .expect("the kernel is listed");
    // No call is left (helpers would show as `call fn` too; the kernel, unchecked, needs
    // none), and no stack slot holds a variable.
    assert!(!clif.contains("call fn"), "a call is left:\n{clif}");
    assert!(!clif.contains("stack_addr"), "a frame is left:\n{clif}");
    // Without inlining the calls stay.
    let plain = jit_with(
        &ptx,
        JitOptions {
            inline: false,
            ..options
        },
    );
    let (_, clif) = plain.listing.iter().find(|(n, _)| n == "k").unwrap();
    assert!(clif.contains("call fn"), "calls expected:\n{clif}");
}

/// A callee that reads a word at its argument.
const FAULTING: &str = r#"
.func (.param .b32 r) peek(.param .b64 a)
{
  .reg .b64 %a;
  .reg .b32 %v;
  ld.param.b64 %a, [a];
  ld.global.u32 %v, [%a];
  st.param.b32 [r], %v;
  ret;
}
.visible .entry k(.param .u64 buf, .param .u64 far)
{
  .reg .b64 %b, %d;
  .reg .b32 %v;
  ld.param.u64 %b, [buf];
  ld.param.u64 %d, [far];
  add.u64 %b, %b, %d;
  {
    .param .b64 x;
    .param .b32 y;
    st.param.b64 [x], %b;
    call (y), peek, (x);
    ld.param.b32 %v, [y];
  }
  st.global.u32 [%b], %v;
  ret;
}
"#;

#[test]
fn a_fault_in_an_inlined_call_is_reported_at_the_call() {
    let ptx = format!("{HEAD}{FAULTING}");
    let interp = Interpreter::new(Module::parse(&ptx).unwrap());
    let inlined = jit_with(&ptx, JitOptions::default());
    let plain = jit_with(
        &ptx,
        JitOptions {
            inline: false,
            ..JitOptions::default()
        },
    );
    let mut errors = Vec::new();
    for e in [&interp as &dyn Engine, &inlined, &plain] {
        let mut buf = vec![0u8; 16];
        let far = Arg::Scalar(ptxjit::Value::u64(64));
        let err = e
            .launch(
                "k",
                Dim3::x(1),
                Dim3::x(1),
                &mut [Arg::Buffer(&mut buf), far],
            )
            .expect_err("the load is out of bounds");
        let RunError::Fault(fault, _) = &err else {
            panic!("a fault expected: {err}");
        };
        errors.push((fault.function.clone(), fault.line, fault.message.clone()));
    }
    let call = ptx_line(&ptx, "call (y), peek, (x);");
    let load = ptx_line(&ptx, "ld.global.u32 %v, [%a];");
    for (function, line, message) in &errors {
        assert_eq!(function, "k");
        assert_eq!(*line as usize, call);
        let tail = format!("\n  = in call to `peek` (fault at line {load})");
        assert!(message.ends_with(&tail), "{message}");
    }
    // The same words from every engine, buffer addresses aside.
    let words = |m: &str| {
        m.split_whitespace()
            .filter(|w| !w.starts_with("0x"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(words(&errors[1].2), words(&errors[0].2));
    assert_eq!(words(&errors[1].2), words(&errors[2].2));
}

/// The 1-based line of `text` in `ptx`.
fn ptx_line(ptx: &str, text: &str) -> usize {
    1 + ptx
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no `{text}`"))
}

#[test]
fn a_module_with_recursion_is_not_inlined() {
    // `down` calls itself: its depth is counted as the interpreter counts it, so nothing
    // in the module is inlined (`mix` stays a call), and the results are the same.
    let kernel = KERNEL.replace("call.uni nothing, ();", "call.uni down, ();");
    let down = ".func down()\n{\n  ret;\n  call.uni down, ();\n}\n";
    let ptx = format!("{HEAD}{CALLEES}{down}{kernel}");
    let options = JitOptions {
        emit: Emit::Clif,
        checked: false,
        verify: true,
        ..JitOptions::default()
    };
    let jit = jit_with(&ptx, options);
    let (_, clif) = jit.listing.iter().find(|(n, _)| n == "k").unwrap();
    assert!(clif.contains("call fn"), "calls expected:\n{clif}");
    let mut out = vec![0u8; 32 * 4];
    jit.launch("k", Dim3::x(1), Dim3::x(4), &mut [Arg::Buffer(&mut out)])
        .unwrap();
    for t in 0..4 {
        let at = 32 * t as usize;
        let got: Vec<u32> = (0..6)
            .map(|k| u32::from_le_bytes(out[at + 4 * k..at + 4 * k + 4].try_into().unwrap()))
            .collect();
        assert_eq!(got, expected(t), "thread {t}");
    }
}
