//! Vector registers (`.reg .v2 .u32 %v`, `.reg .v4 .f32 %q<4>`), vector parameters,
//! `.func`s returning several values and `%r+4` source operands, on every engine, with
//! values worked out by hand; and the forms ptxas refuses, refused here with a located error.
//! What ptxas takes is written down in docs/semantics.md ("Vector registers").

mod common;

use common::ptxas::{self, assemble};
use common::{engines, jit_with};
use ptxjit::{Arg, Dim3, JitOptions, Module, Value};

const HEAD: &str = ".version 8.3\n.target sm_80\n.address_size 64\n";

/// Runs kernel `k(out)` (one thread) on every engine with `out` holding `init`; returns the
/// words each left there.
fn run(ptx: &str, init: &[u32]) -> Vec<(&'static str, Vec<u32>)> {
    engines(ptx)
        .into_iter()
        .map(|(name, e)| {
            let mut out: Vec<u8> = init.iter().flat_map(|w| w.to_le_bytes()).collect();
            e.launch("k", Dim3::x(1), Dim3::x(1), &mut [Arg::Buffer(&mut out)])
                .unwrap_or_else(|err| panic!("{name}: {err}"));
            let words = out
                .chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            (name, words)
        })
        .collect()
}

/// ptxas's verdict on `ptx` (None without ptxas; see `common/ptxas.rs`).
fn ptxas_accepts(ptx: &str, test: &str) -> Option<bool> {
    let ptxas = ptxas::require(test)?;
    Some(assemble(&ptxas, ptx, "sm_80", test).is_ok())
}

fn expect(ptx: &str, init: &[u32], want: &[u32]) {
    assert_ne!(
        ptxas_accepts(ptx, "vector_regs"),
        Some(false),
        "ptxas rejects:\n{ptx}"
    );
    for (name, got) in run(ptx, init) {
        assert_eq!(got, want, "{name}");
    }
}

fn kernel(decls: &str, body: &str) -> String {
    format!(
        "{HEAD}{decls}.visible .entry k(.param .u64 out)\n{{\n  .reg .b32 %r<8>;\n  \
         .reg .b64 %rd<8>;\n  .reg .pred %p;\n  ld.param.u64 %rd1, [out];\n{body}\n  ret;\n}}\n"
    )
}

/// The error text for a module, which must not parse.
fn error_of(ptx: &str) -> String {
    match Module::parse(ptx) {
        Ok(m) if m.functions.iter().all(|f| f.refused.is_empty()) => {
            panic!("accepted:\n{ptx}")
        }
        Ok(m) => m
            .functions
            .iter()
            .flat_map(|f| &f.refused)
            .fold(String::new(), |acc, d| acc + &d.message + "\n"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn elements_are_registers_of_the_element_type() {
    // in = 1.0, 2.0, 3.0, 4.0; q1 = (x+w, y*2, z, 1.0) = (5, 4, 3, 1); the .r .g .b .a
    // spellings name the same registers as .x .y .z .w.
    let f = |x: f32| x.to_bits();
    let ptx = kernel(
        "",
        "  .reg .v4 .f32 %q<2>;\n  .reg .v2 .u32 %v;\n  .reg .v2 .u64 %d;\n  \
         .reg .v4 .b16 %h;\n  ld.global.v4.f32 %q0, [%rd1];\n  \
         add.f32 %q1.x, %q0.x, %q0.w;\n  mul.f32 %q1.g, %q0.y, 0f40000000;\n  \
         mov.f32 %q1.b, %q0.z;\n  mov.f32 %q1.a, 0f3F800000;\n  st.global.v4.f32 [%rd1], %q1;\n  \
         mov.u32 %v.x, 7;\n  add.u32 %v.y, %v.r, 5;\n  setp.lt.u32 %p, %v.x, %v.g;\n  \
         selp.u32 %r1, %v.y, %v.x, %p;\n  st.global.v2.u32 [%rd1+16], %v;\n  \
         st.global.u32 [%rd1+24], %r1;\n  cvt.u64.u32 %d.x, %v.y;\n  shl.b64 %d.y, %d.x, 33;\n  \
         st.global.v2.u64 [%rd1+32], %d;\n  mov.b16 %h.x, 0x1234;\n  mov.b16 %h.w, 0xabcd;\n  \
         mov.b16 %h.y, 0;\n  mov.b16 %h.z, 0;\n  st.global.v4.b16 [%rd1+48], %h;",
    );
    let mut init = vec![0u32; 14];
    init[..4].copy_from_slice(&[f(1.0), f(2.0), f(3.0), f(4.0)]);
    let twelve_shifted = 12u64 << 33;
    expect(
        &ptx,
        &init,
        &[
            f(5.0),
            f(4.0),
            f(3.0),
            f(1.0),
            7,
            12,
            12,
            0,
            12,
            0,
            twelve_shifted as u32,
            (twelve_shifted >> 32) as u32,
            0x1234,
            0xabcd_0000,
        ],
    );
}

#[test]
fn whole_vector_registers_in_loads_stores_and_moves() {
    // in = 5, 6. v = (5, 6); w = (v.y, v.x) = (6, 5); v = w; {a, b} = (v.y, v.x) = (5, 6)
    // and then swapped in one move: (6, 5). mov.b64 packs the low element first; mov.b64
    // %v, %rd unpacks. A .v2 .u16 load into a .v2 .u32 register zero-extends each element.
    let ptx = kernel(
        "",
        "  .reg .v2 .u32 %v, %w;\n  .reg .v4 .b16 %h;\n  .reg .b32 %a, %b;\n  \
         .reg .v2 .f32 %f;\n  ld.global.v2.u32 %v, [%rd1];\n  mov.v2.u32 %w, {%v.y, %v.x};\n  \
         mov.v2.u32 %v, %w;\n  mov.v2.u32 {%a, %b}, {%v.y, %v.x};\n  \
         mov.v2.u32 {%a, %b}, {%b, %a};\n  st.global.v2.u32 [%rd1], %v;\n  \
         st.global.v2.u32 [%rd1+8], {%a, %b};\n  mov.v4.b16 %h, {1, 2, 3, 0xffff};\n  \
         mov.b64 %rd2, %h;\n  st.global.u64 [%rd1+16], %rd2;\n  mov.v2.f32 %f, {1.0, -2.5};\n  \
         mov.v2.f32 {%a, _}, %f;\n  mov.v2.b32 %w, %f;\n  st.global.v2.u32 [%rd1+24], %w;\n  \
         mov.b64 %rd3, 0x0000000900000008;\n  mov.b64 %w, %rd3;\n  \
         st.global.v2.u32 [%rd1+32], %w;\n  mov.b64 %rd4, %w;\n  add.u64 %rd4, %rd4, 1;\n  \
         st.global.u64 [%rd1+40], %rd4;\n  ld.global.v2.u16 %w, [%rd1+56];\n  \
         st.global.v2.u32 [%rd1+48], %w;\n  setp.eq.u32 %p, %w.x, 0;\n  \
         @%p mov.v2.u32 %w, {100, 200};\n  @!%p mov.v2.u32 %w, {300, 400};\n  \
         st.global.v2.u32 [%rd1+56], %w;",
    );
    let mut init = vec![0u32; 16];
    init[..2].copy_from_slice(&[5, 6]);
    init[14] = 0x8001_0002;
    expect(
        &ptx,
        &init,
        &[
            6,
            5,
            6,
            5,
            0x0002_0001,
            0xffff_0003,
            1.0f32.to_bits(),
            (-2.5f32).to_bits(),
            8,
            9,
            9,
            9,
            2,
            0x8001,
            300,
            400,
        ],
    );
}

#[test]
fn vector_register_parameters_and_several_return_values() {
    // two(7) = (8, 21); swap2(%a = (10, 20)) = ((20, 10) as .f32 bits, 11); the .param
    // array of vectors is read with ld.param.v2 at its second element.
    let ptx = format!(
        "{HEAD}.visible .func (.reg .b32 a, .reg .b32 b) two(.param .b32 x)\n{{\n  \
         .reg .b32 %r;\n  ld.param.b32 %r, [x];\n  add.u32 a, %r, 1;\n  mul.lo.u32 b, %r, 3;\n  \
         ret;\n}}\n.visible .func (.reg .v2 .f32 %o, .reg .b32 s) swap2(.reg .v2 .s32 %q)\n{{\n  \
         mov.v2.f32 %o, {{%q.y, %q.x}};\n  add.u32 s, %q.x, 1;\n  ret;\n}}\n\
         .visible .func (.reg .b32 s) second(.param .v2 .u32 arr[2])\n{{\n  \
         .reg .v2 .b32 %t;\n  ld.param.v2.u32 %t, [arr+8];\n  sub.u32 s, %t.y, %t.x;\n  \
         ret;\n}}\n.visible .entry k(.param .u64 out)\n{{\n  .reg .v2 .u32 %a, %b;\n  \
         .reg .b32 %r<4>;\n  .reg .b64 %rd1;\n  ld.param.u64 %rd1, [out];\n  \
         call (%r1, %r2), two, (7);\n  st.global.v2.u32 [%rd1], {{%r1, %r2}};\n  \
         mov.v2.u32 %a, {{10, 20}};\n  call (%b, %r3), swap2, (%a);\n  \
         st.global.v2.u32 [%rd1+8], %b;\n  st.global.u32 [%rd1+16], %r3;\n  ret;\n}}\n"
    );
    expect(&ptx, &[0; 5], &[8, 21, 20, 10, 11]);
    let kernel_array = format!(
        "{HEAD}.visible .entry k(.param .v4 .u32 q[2])\n{{\n  .reg .v4 .u32 %v;\n  \
         ld.param.v4.u32 %v, [q+16];\n  ret;\n}}\n"
    );
    assert_ne!(ptxas_accepts(&kernel_array, "vector_regs"), Some(false));
    Module::parse(&kernel_array).unwrap();
    // Called from the host: the vector parameter is one argument per element, the
    // returns come back in order.
    for (name, e) in engines(&ptx) {
        let got = e
            .call("swap2", &[Value::u32(3), Value::u32(4)])
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let bits: Vec<u64> = got.iter().map(|v| v.bits).collect();
        assert_eq!(bits, [4, 3, 4], "{name}");
        let got = e
            .call("two", &[Value::u32(5)])
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let bits: Vec<u64> = got.iter().map(|v| v.bits).collect();
        assert_eq!(bits, [6, 15], "{name}");
    }
    let j = jit_with(&ptx, JitOptions::default());
    let f = j.func::<(u32,), (u32, u32)>("two").unwrap();
    assert_eq!(f.call((100,)).unwrap(), (101, 300));
    let f = j.func::<(i32, i32), (f32, f32, u32)>("swap2").unwrap();
    let (x, y, s) = f.call((1, 2)).unwrap();
    assert_eq!((x.to_bits(), y.to_bits(), s), (2, 1, 2));
    let sig = Module::parse(&ptx).unwrap().signature("second").unwrap();
    assert_eq!(sig.params[0].size, 16);
}

#[test]
fn a_register_plus_a_constant_is_a_source_value() {
    // The sum wraps at the register's width, the constant truncated to it (ptxas's code
    // for `%r+0x100000001` adds 1 to a 32-bit register).
    let ptx = kernel(
        "",
        "  .reg .u16 %h;\n  .reg .s32 %s;\n  mov.u32 %r1, 0xffffffff;\n  \
         mov.u32 %r2, %r1+1;\n  add.u32 %r3, %r1+0x100000001, 10;\n  mov.u32 %r4, %r1 + -1;\n  \
         mov.u32 %r5, %r3+1+2;\n  st.global.v4.u32 [%rd1], {%r2, %r3, %r4, %r5};\n  \
         mov.u64 %rd2, 0x100000000;\n  mov.u64 %rd3, %rd2+0xffffffff;\n  \
         st.global.u64 [%rd1+16], %rd3;\n  cvt.u64.u32 %rd4, %r1+4;\n  \
         st.global.u64 [%rd1+24], %rd4;\n  mov.u16 %h, 0xffff;\n  mov.u16 %h, %h+2;\n  \
         cvt.u32.u16 %r6, %h;\n  mov.s32 %s, -5;\n  setp.eq.s32 %p, %s+5, 0;\n  \
         selp.u32 %r7, %r6+10, 0, %p;\n  st.global.u32 [%rd1+32], %r7;\n  \
         mad.lo.u32 %r7, %r6+1, 3, %r6+2;\n  st.global.u32 [%rd1+36], %r7;\n  \
         st.global.u32 [%rd1+40], %r6+0x20;\n  mov.u32 %r1, 0;\n  \
         atom.global.add.u32 %r2, [%rd1+40], %r1+7;",
    );
    expect(
        &ptx,
        &[0; 11],
        &[
            0,
            10,
            0xffff_fffe,
            13,
            0xffff_ffff,
            1,
            3,
            0,
            11,
            9,
            0x21 + 7,
        ],
    );
}

#[test]
fn forms_ptxas_refuses_are_refused_where_they_are() {
    let decls = "  .reg .v2 .u32 %v;\n  .reg .v4 .u32 %w;\n  .reg .v4 .f32 %q;\n  \
                 .reg .f32 %f;\n";
    for (line, msg) in [
        ("mov.u32 %v.z, 1;", "has no element `.z`"),
        ("mov.u32 %v.q, 1;", "unknown vector element"),
        ("add.u32 %r1, %v, 1;", "vector register"),
        ("mov.u32 %v, %v;", "needs .v2 or .v4"),
        ("mov.u32 %r1, %v;", "vector mov needs a bit-size type"),
        (
            "ld.global.v2.u32 %w, [%rd1];",
            "expected a vector of 2 elements, found 4",
        ),
        ("ld.global.u32 %v, [%rd1];", "vector register"),
        ("ld.global.u32 %r1, [%v];", "an address needs a scalar one"),
        ("mov.v2.u32 %v, %w;", "found 4"),
        ("mov.v2.u32 %v.x, %v;", "moves a vector to a vector"),
        ("mov.v2.u16 %v, %v;", "does not fit"),
        ("mov.v4.u32 %q, %q;", "does not fit"),
        ("mov.v2.u32 %v, {%f, %v.x};", "does not fit"),
        ("mov.v2.f32 %v, {%f, %v.x};", "cannot hold both float and"),
        (
            "mov.v2.f32 {_, _}, %v;",
            "needs a register among its destinations",
        ),
        ("mov.v2.pred {%p, %p}, {%p, %p};", "does not take .pred"),
        (".reg .v4 .u64 %x;", "wider than the 128 bits"),
        (".reg .v2 .pred %x;", "cannot be a vector"),
        (".param .v2 .u32 pa;", "must be an array"),
        ("mov.f32 %f, %f+1;", "integer register"),
        ("mov.pred %p, %p+1;", "integer register"),
        (
            "vadd.u32.u32.u32 %r1, %r2+1, %r3;",
            "does not take a register plus",
        ),
        ("mov.u32 %r1, %v.x+1;", "syntax error"),
    ] {
        let ptx = kernel("", &format!("{decls}  {line}"));
        // ptxas takes `.z` of a .v2 register (as no register of its own), and a float or
        // predicate register plus a constant as long as nothing reads the result (it
        // crashes when something does).
        if !(line.contains("%v.z") || line.contains("%f+1") || line.contains("%p+1")) {
            assert_ne!(
                ptxas_accepts(&ptx, "vector_regs"),
                Some(true),
                "ptxas takes `{line}`"
            );
        }
        let e = error_of(&ptx);
        assert!(e.contains(msg), "`{line}`: {e}");
        // Located on its line (the statement is line 14), where the message is located.
        if !e.contains("cannot run") && e.contains("-->") {
            assert!(e.contains(":14:"), "`{line}` not located on its line: {e}");
        }
    }
}

#[test]
fn calls_check_vector_parameters() {
    let callee = ".visible .func (.reg .v2 .u32 %o) f(.reg .v2 .u32 %q, .reg .b32 s)\n{\n  \
                  mov.v2.u32 %o, %q;\n  ret;\n}\n\
                  .visible .func g(.param .v2 .u32 arr[1])\n{\n  ret;\n}\n";
    for (line, msg) in [
        ("call (%v), f, (%w, %r1);", "pass a .v2 vector register"),
        ("call (%v), f, (%v.x, %r1);", "pass a .v2 vector register"),
        ("call (%v), f, (%v, %v.x);", "vector element"),
        ("call (%v), f, (%h, %r1);", "does not fit"),
        ("call (%r1), f, (%v, %r1);", "pass a .v2 vector register"),
        ("call g, (pa);", "ptxas takes no argument"),
        (
            "call (%v), f, (%v, %r1+1);",
            "does not take a register plus",
        ),
    ] {
        let ptx = kernel(
            callee,
            &format!(
                "  .reg .v2 .u32 %v;\n  .reg .v4 .u32 %w;\n  .reg .v2 .u16 %h;\n  \
                 .param .v2 .u32 pa[1];\n  {line}"
            ),
        );
        assert_ne!(
            ptxas_accepts(&ptx, "vector_regs"),
            Some(true),
            "ptxas takes `{line}`"
        );
        let e = error_of(&ptx);
        assert!(e.contains(msg), "`{line}`: {e}");
    }
}

#[test]
fn an_error_in_a_header_is_reported_once() {
    // A parameter list that does not parse: its one error, not one per body statement, and
    // the next function (with its own, different error) still checked; a call of the broken
    // function adds nothing.
    let ptx = format!(
        "{HEAD}.visible .func (.reg .b32 r) f(.param .u64 out, .param .u33 q)\n{{\n  \
         .reg .b32 %r<3>;\n  ld.param.u32 %r1, [q];\n  mov.u32 r, %r1;\n  ret;\n}}\n\
         .visible .entry k2(.param .v2 .u32 q)\n{{\n  .reg .b32 %r<3>;\n  \
         ld.param.u32 %r1, [q];\n  call (%r2), f, (%r1, 3, 4);\n  ret;\n}}\n"
    );
    assert_ne!(ptxas_accepts(&ptx, "vector_regs"), Some(true));
    let e = Module::parse_named(&ptx, "h.ptx").unwrap_err();
    let lines: Vec<String> = e
        .diagnostics
        .iter()
        .map(|d| {
            let (line, col) = e.source.line_col(d.span.start);
            format!("{line}:{col}: {}", d.message)
        })
        .collect();
    assert_eq!(lines.len(), 2, "{lines:#?}");
    assert!(
        lines[0].starts_with("4:56: syntax error: unexpected `.u33`"),
        "{lines:#?}"
    );
    assert!(
        lines[1].starts_with("11:20: a vector .param variable must be an array"),
        "{lines:#?}"
    );
}
