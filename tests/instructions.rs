//! Every supported instruction on every engine, with results worked out by hand from the PTX
//! ISA manual (the section is named beside each group). Values are never taken from an engine.

mod common;

use common::engines;
use ptxjit::ast::Type;
use ptxjit::{Arg, Dim3, Engine, RunError, Value};

/// Wraps `body` in a `.func` whose parameters `p0, p1, …` of the given types are loaded into
/// `%a0, %a1, …`; the body leaves its result in `%d` of type `ret`. Scratch registers: `%p<4>`
/// (pred), `%t<4>` (b32), `%w<4>` (b64), `%f<4>` (f32), `%g<4>` (f64), `%h<4>` (b16).
fn func_ptx(params: &[Type], ret: Type, body: &str) -> String {
    let decl: Vec<String> = params
        .iter()
        .enumerate()
        .map(|(i, t)| format!(".param {t} p{i}"))
        .collect();
    let regs: String = params
        .iter()
        .enumerate()
        .map(|(i, t)| format!("  .reg {t} %a{i};\n"))
        .collect();
    let loads: String = params
        .iter()
        .enumerate()
        .map(|(i, t)| format!("  ld.param{t} %a{i}, [p{i}];\n"))
        .collect();
    format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n\
         .visible .func (.param {ret} r) f({})\n{{\n{regs}  .reg {ret} %d;\n  .reg .pred %p<4>;\n  \
         .reg .b32 %t<4>;\n  .reg .b64 %w<4>;\n  .reg .f32 %f<4>;\n  .reg .f64 %g<4>;\n  .reg .b16 %h<4>;\n\
         {loads}{body}\n  st.param{ret} [r], %d;\n  ret;\n}}\n",
        decl.join(", ")
    )
}

/// Runs the body on every engine and checks the result (NaN equals NaN).
fn check(params: &[Type], ret: Type, body: &str, args: &[u64], want: u64) {
    let ptx = func_ptx(params, ret, body);
    let values: Vec<Value> = params
        .iter()
        .zip(args)
        .map(|(t, a)| Value::new(*t, *a))
        .collect();
    let want = Value::new(ret, want);
    for (name, engine) in engines(&ptx) {
        let got = engine
            .call("f", &values)
            .unwrap_or_else(|e| panic!("{name}: {e}\n{ptx}"));
        assert!(
            got[0].same_as(want),
            "{name}: `{}` with {args:x?} gave {} instead of {want}",
            body.trim(),
            got[0]
        );
    }
}

use Type::*;

fn f32b(v: f32) -> u64 {
    v.to_bits() as u64
}
fn f64b(v: f64) -> u64 {
    v.to_bits()
}
fn neg32(v: i32) -> u64 {
    v as u32 as u64
}

// ---- 9.7.1 integer arithmetic ------------------------------------------------------------

#[test]
fn add_sub_wrap_and_saturate() {
    check(
        &[S32, S32],
        S32,
        "add.s32 %d, %a0, %a1;",
        &[0x7fff_ffff, 1],
        0x8000_0000,
    );
    check(
        &[S32, S32],
        S32,
        "add.sat.s32 %d, %a0, %a1;",
        &[0x7fff_ffff, 1],
        0x7fff_ffff,
    );
    check(
        &[S32, S32],
        S32,
        "sub.sat.s32 %d, %a0, %a1;",
        &[0x8000_0000, 1],
        0x8000_0000,
    );
    check(
        &[S32, S32],
        S32,
        "sub.s32 %d, %a0, %a1;",
        &[0x8000_0000, 1],
        0x7fff_ffff,
    );
    check(&[U16, U16], U16, "add.u16 %d, %a0, %a1;", &[0xffff, 2], 1);
    check(&[U64, U64], U64, "sub.u64 %d, %a0, %a1;", &[0, 1], u64::MAX);
    check(&[U32], U32, "add.u32 %d, %a0, -1;", &[5], 4);
}

#[test]
fn mul_lo_hi_wide() {
    check(
        &[S32, S32],
        S32,
        "mul.lo.s32 %d, %a0, %a1;",
        &[neg32(-3), 7],
        neg32(-21),
    );
    check(
        &[U32, U32],
        U32,
        "mul.hi.u32 %d, %a0, %a1;",
        &[0xffff_ffff, 0xffff_ffff],
        0xffff_fffe,
    );
    check(
        &[S32, S32],
        S32,
        "mul.hi.s32 %d, %a0, %a1;",
        &[neg32(-1), neg32(-1)],
        0,
    );
    check(
        &[S32, S32],
        S32,
        "mul.hi.s32 %d, %a0, %a1;",
        &[0x8000_0000, 2],
        neg32(-1),
    );
    check(
        &[S32, S32],
        S64,
        "mul.wide.s32 %d, %a0, %a1;",
        &[neg32(-2), 3],
        (-6i64) as u64,
    );
    check(
        &[U32, U32],
        U64,
        "mul.wide.u32 %d, %a0, %a1;",
        &[0xffff_ffff, 0xffff_ffff],
        0xffff_fffe_0000_0001,
    );
    check(
        &[U16, U16],
        U32,
        "mul.wide.u16 %d, %a0, %a1;",
        &[0xffff, 0xffff],
        0xfffe_0001,
    );
    check(
        &[U64, U64],
        U64,
        "mul.hi.u64 %d, %a0, %a1;",
        &[u64::MAX, 3],
        2,
    );
    check(
        &[S64, S64],
        S64,
        "mul.hi.s64 %d, %a0, %a1;",
        &[(-1i64) as u64, 5],
        u64::MAX,
    );
}

#[test]
fn mad_forms() {
    check(
        &[S32, S32, S32],
        S32,
        "mad.lo.s32 %d, %a0, %a1, %a2;",
        &[2, 3, 4],
        10,
    );
    check(
        &[U32, U32, U32],
        U32,
        "mad.hi.u32 %d, %a0, %a1, %a2;",
        &[0xffff_ffff, 0xffff_ffff, 2],
        0,
    );
    check(
        &[U32, U32, U64],
        U64,
        "mad.wide.u32 %d, %a0, %a1, %a2;",
        &[0xffff_ffff, 0xffff_ffff, 1],
        0xffff_fffe_0000_0002,
    );
    // hi(0x7fffffff²) = 0x3fffffff; + 0x7fffffff overflows s32 and saturates.
    check(
        &[S32, S32, S32],
        S32,
        "mad.hi.sat.s32 %d, %a0, %a1, %a2;",
        &[0x7fff_ffff, 0x7fff_ffff, 0x7fff_ffff],
        0x7fff_ffff,
    );
    check(
        &[S32, S32, S32],
        S32,
        "mad.hi.s32 %d, %a0, %a1, %a2;",
        &[0x7fff_ffff, 0x7fff_ffff, 0x7fff_ffff],
        0xbfff_fffe,
    );
}

#[test]
fn div_rem_including_the_defined_cases() {
    check(
        &[S32, S32],
        S32,
        "div.s32 %d, %a0, %a1;",
        &[neg32(-7), 2],
        neg32(-3),
    );
    check(
        &[S32, S32],
        S32,
        "rem.s32 %d, %a0, %a1;",
        &[neg32(-7), 2],
        neg32(-1),
    );
    check(
        &[U32, U32],
        U32,
        "div.u32 %d, %a0, %a1;",
        &[7, 0],
        0xffff_ffff,
    );
    // By zero: all ones, signed or not (tests/hardware/records: an H200's results).
    check(
        &[U32, U32],
        U32,
        "rem.u32 %d, %a0, %a1;",
        &[7, 0],
        0xffff_ffff,
    );
    check(
        &[S32, S32],
        S32,
        "div.s32 %d, %a0, %a1;",
        &[7, 0],
        neg32(-1),
    );
    check(
        &[S32, S32],
        S32,
        "div.s32 %d, %a0, %a1;",
        &[neg32(-7), 0],
        neg32(-1),
    );
    check(
        &[S32, S32],
        S32,
        "rem.s32 %d, %a0, %a1;",
        &[neg32(-7), 0],
        neg32(-1),
    );
    check(
        &[S32, S32],
        S32,
        "div.s32 %d, %a0, %a1;",
        &[0x8000_0000, neg32(-1)],
        0x8000_0000,
    );
    check(
        &[S32, S32],
        S32,
        "rem.s32 %d, %a0, %a1;",
        &[0x8000_0000, neg32(-1)],
        0,
    );
    check(
        &[U64, U64],
        U64,
        "div.u64 %d, %a0, %a1;",
        &[u64::MAX, 16],
        u64::MAX >> 4,
    );
    check(
        &[S64, S64],
        S64,
        "rem.s64 %d, %a0, %a1;",
        &[(-17i64) as u64, 5],
        (-2i64) as u64,
    );
}

#[test]
fn neg_abs_min_max() {
    check(&[S32], S32, "neg.s32 %d, %a0;", &[0x8000_0000], 0x8000_0000);
    check(&[S32], S32, "neg.s32 %d, %a0;", &[5], neg32(-5));
    check(&[S32], S32, "abs.s32 %d, %a0;", &[neg32(-5)], 5);
    check(&[S32], S32, "abs.s32 %d, %a0;", &[0x8000_0000], 0x8000_0000);
    check(&[S16], S16, "abs.s16 %d, %a0;", &[0xffff], 1);
    check(
        &[S32, S32],
        S32,
        "min.s32 %d, %a0, %a1;",
        &[neg32(-1), 1],
        neg32(-1),
    );
    check(
        &[U32, U32],
        U32,
        "min.u32 %d, %a0, %a1;",
        &[0xffff_ffff, 1],
        1,
    );
    check(&[S64, S64], S64, "max.s64 %d, %a0, %a1;", &[u64::MAX, 3], 3);
    check(
        &[U64, U64],
        U64,
        "max.u64 %d, %a0, %a1;",
        &[u64::MAX, 3],
        u64::MAX,
    );
}

#[test]
fn bit_counting_and_fields() {
    check(&[B32], U32, "popc.b32 %d, %a0;", &[0xf0f0], 8);
    check(&[B64], U32, "popc.b64 %d, %a0;", &[u64::MAX], 64);
    check(&[B32], U32, "clz.b32 %d, %a0;", &[0x0001_0000], 15);
    check(&[B32], U32, "clz.b32 %d, %a0;", &[0], 32);
    check(&[B64], U32, "clz.b64 %d, %a0;", &[1], 63);
    check(&[B32], B32, "brev.b32 %d, %a0;", &[1], 0x8000_0000);
    check(
        &[B64],
        B64,
        "brev.b64 %d, %a0;",
        &[0x0000_0000_0000_00f1],
        0x8f00_0000_0000_0000,
    );
    check(&[U32], U32, "bfe.u32 %d, %a0, 8, 8;", &[0x1234_5678], 0x56);
    check(
        &[S32],
        S32,
        "bfe.s32 %d, %a0, 8, 8;",
        &[0x0000_ff00],
        0xffff_ffff,
    );
    // Field runs past bit 31: bits 28..31 then the sign a[31].
    check(
        &[S32],
        S32,
        "bfe.s32 %d, %a0, 28, 8;",
        &[0x8000_0000],
        0xffff_fff8,
    );
    check(&[U32], U32, "bfe.u32 %d, %a0, 8, 0;", &[0xffff_ffff], 0);
    check(&[U32], U32, "bfe.u32 %d, %a0, 40, 8;", &[0xffff_ffff], 0);
    check(
        &[U64],
        U64,
        "bfe.u64 %d, %a0, 60, 8;",
        &[0xf000_0000_0000_0000],
        0xf,
    );
    check(
        &[B32, B32],
        B32,
        "bfi.b32 %d, %a0, %a1, 8, 4;",
        &[0xff, 0x1234_5678],
        0x1234_5f78,
    );
    check(
        &[B32, B32],
        B32,
        "bfi.b32 %d, %a0, %a1, 30, 8;",
        &[0xff, 0],
        0xc000_0000,
    );
    check(
        &[B32, B32],
        B32,
        "prmt.b32 %d, %a0, %a1, 0x7531;",
        &[0x3322_1100, 0x7766_5544],
        0x7755_3311,
    );
    check(
        &[B32, B32],
        B32,
        "prmt.b32.f4e %d, %a0, %a1, 2;",
        &[0x3322_1100, 0x7766_5544],
        0x5544_3322,
    );
}

// ---- 9.7.8 logic and shift ----------------------------------------------------------------

#[test]
fn logic_and_shifts() {
    check(
        &[B32, B32],
        B32,
        "and.b32 %d, %a0, %a1;",
        &[0xff00_ff00, 0x0ff0_0ff0],
        0x0f00_0f00,
    );
    check(
        &[B32, B32],
        B32,
        "or.b32 %d, %a0, %a1;",
        &[0xff00_0000, 0x0000_00ff],
        0xff00_00ff,
    );
    check(
        &[B64, B64],
        B64,
        "xor.b64 %d, %a0, %a1;",
        &[u64::MAX, 1],
        u64::MAX - 1,
    );
    check(&[B16], B16, "not.b16 %d, %a0;", &[0x00ff], 0xff00);
    check(&[B32], B32, "cnot.b32 %d, %a0;", &[0], 1);
    check(&[B32], B32, "cnot.b32 %d, %a0;", &[7], 0);
    check(
        &[B32, U32],
        B32,
        "shl.b32 %d, %a0, %a1;",
        &[1, 31],
        0x8000_0000,
    );
    check(&[B32, U32], B32, "shl.b32 %d, %a0, %a1;", &[1, 32], 0);
    check(
        &[S32, U32],
        S32,
        "shr.s32 %d, %a0, %a1;",
        &[0x8000_0000, 40],
        0xffff_ffff,
    );
    check(
        &[U32, U32],
        U32,
        "shr.u32 %d, %a0, %a1;",
        &[0x8000_0000, 40],
        0,
    );
    check(
        &[B32, U32],
        B32,
        "shr.b32 %d, %a0, %a1;",
        &[0x8000_0000, 4],
        0x0800_0000,
    );
    check(
        &[B64, U32],
        B64,
        "shl.b64 %d, %a0, %a1;",
        &[3, 62],
        0xc000_0000_0000_0000,
    );
    check(
        &[B32, B32, U32],
        B32,
        "shf.l.wrap.b32 %d, %a0, %a1, %a2;",
        &[0x89ab_cdef, 0x0123_4567, 4],
        0x1234_5678,
    );
    check(
        &[B32, B32, U32],
        B32,
        "shf.l.wrap.b32 %d, %a0, %a1, %a2;",
        &[0x89ab_cdef, 0x0123_4567, 36],
        0x1234_5678,
    );
    check(
        &[B32, B32, U32],
        B32,
        "shf.r.wrap.b32 %d, %a0, %a1, %a2;",
        &[0x89ab_cdef, 0x0123_4567, 8],
        0x6789_abcd,
    );
    check(
        &[B32, B32, U32],
        B32,
        "shf.r.clamp.b32 %d, %a0, %a1, %a2;",
        &[0x89ab_cdef, 0x0123_4567, 40],
        0x0123_4567,
    );
    check(
        &[B32, B32, U32],
        B32,
        "shf.l.clamp.b32 %d, %a0, %a1, %a2;",
        &[0x89ab_cdef, 0x0123_4567, 40],
        0x89ab_cdef,
    );
    // Predicate logic (9.7.8.1–4 on .pred).
    check(
        &[U32, U32],
        U32,
        "setp.ne.u32 %p1, %a0, 0;\n setp.ne.u32 %p2, %a1, 0;\n xor.pred %p3, %p1, %p2;\n not.pred %p3, %p3;\n selp.u32 %d, 1, 0, %p3;",
        &[5, 0],
        0,
    );
}

// ---- 9.7.2 extended precision -------------------------------------------------------------

#[test]
fn carry_chain_128_bit_add_and_sub() {
    // (2^64 - 1) + 1 = 2^64: low limb 0, high limb 1.
    let add = "mov.b64 %w0, 0;\n add.cc.u64 %w1, %a0, %a1;\n addc.u64 %d, %w0, 0;";
    check(&[U64, U64], U64, add, &[u64::MAX, 1], 1);
    // 0 - 1 borrows: subc of 0 - 0 with CF = NOT borrow = 0 gives all ones.
    let sub = "sub.cc.u32 %t0, %a0, %a1;\n subc.u32 %d, 0, 0;";
    check(&[U32, U32], U32, sub, &[0, 1], 0xffff_ffff);
    check(&[U32, U32], U32, sub, &[1, 1], 0);
    // mad.lo.cc + madc.hi: low and high halves of a*b + c with the carry between them.
    let madc = "mad.lo.cc.u32 %t0, %a0, %a0, %a1;\n madc.hi.u32 %d, %a0, %a0, 0;";
    check(
        &[U32, U32],
        U32,
        madc,
        &[0xffff_ffff, 0xffff_ffff],
        0xffff_ffff,
    );
}

// ---- 9.7.7 comparison and selection -------------------------------------------------------

#[test]
fn setp_selp_slct() {
    let sel = |cmp: &str, ty: Type, a: u64, b: u64, want: u64| {
        let body = format!("setp.{cmp}{ty} %p1, %a0, %a1;\n selp.u32 %d, 1, 0, %p1;");
        check(&[ty, ty], U32, &body, &[a, b], want);
    };
    sel("lt", S32, neg32(-1), 0, 1);
    sel("lt", U32, neg32(-1), 0, 0);
    sel("lo", U32, 1, 2, 1);
    sel("hs", U32, 2, 2, 1);
    sel("eq", B64, 5, 5, 1);
    let nan = 0x7fc0_0000u64;
    sel("lt", F32, nan, f32b(1.0), 0);
    sel("ltu", F32, nan, f32b(1.0), 1);
    sel("ne", F32, nan, f32b(1.0), 0);
    sel("neu", F32, nan, f32b(1.0), 1);
    sel("num", F32, f32b(1.0), f32b(2.0), 1);
    sel("nan", F64, f64b(f64::NAN), f64b(2.0), 1);
    sel("ge", F64, f64b(-0.0), f64b(0.0), 1);
    // .and with a predicate, and the p|q form.
    check(
        &[S32, S32],
        U32,
        "setp.ne.s32 %p2, %a1, 0;\n setp.gt.and.s32 %p1, %a0, 0, %p2;\n selp.u32 %d, 1, 0, %p1;",
        &[5, 0],
        0,
    );
    check(
        &[S32, S32],
        U32,
        "setp.gt.s32 %p1|%p2, %a0, %a1;\n selp.u32 %d, 7, 9, %p2;",
        &[1, 2],
        7,
    );
    // p and q the same register: it ends holding p = (1 > 2), as on an H200
    // (tests/hardware/cases/setp_same.ptx).
    check(
        &[S32, S32],
        U32,
        "setp.gt.s32 %p1|%p1, %a0, %a1;\n selp.u32 %d, 7, 9, %p1;",
        &[1, 2],
        9,
    );
    check(
        &[S32, S32, S32],
        S32,
        "slct.s32.s32 %d, %a0, %a1, %a2;",
        &[1, 2, neg32(-1)],
        2,
    );
    check(
        &[S32, S32, F32],
        S32,
        "slct.s32.f32 %d, %a0, %a1, %a2;",
        &[1, 2, f32b(-0.0)],
        1,
    );
    check(
        &[F32, F32, S32],
        F32,
        "slct.f32.s32 %d, %a0, %a1, %a2;",
        &[f32b(1.5), f32b(2.5), 0],
        f32b(1.5),
    );
}

// ---- 9.7.9.21 cvt --------------------------------------------------------------------------

#[test]
fn cvt_integer_widths_and_saturation() {
    check(&[S32], S16, "cvt.s8.s32 %d, %a0;", &[300], 44);
    check(&[S32], S16, "cvt.s8.s32 %d, %a0;", &[200], 0xffc8);
    check(&[S32], S32, "cvt.s32.s8 %d, %a0;", &[0x80], 0xffff_ff80);
    check(&[S32], U32, "cvt.u32.u8 %d, %a0;", &[0x1ff], 0xff);
    check(&[S32], U16, "cvt.sat.u8.s32 %d, %a0;", &[neg32(-5)], 0);
    check(&[S32], S16, "cvt.sat.s8.s32 %d, %a0;", &[300], 127);
    check(
        &[U32],
        U64,
        "cvt.u64.u32 %d, %a0;",
        &[0xffff_ffff],
        0xffff_ffff,
    );
    check(
        &[S32],
        S64,
        "cvt.s64.s32 %d, %a0;",
        &[neg32(-2)],
        (-2i64) as u64,
    );
    check(
        &[U64],
        U32,
        "cvt.u32.u64 %d, %a0;",
        &[0x1_2345_6789],
        0x2345_6789,
    );
    check(
        &[U64],
        U32,
        "cvt.sat.u32.u64 %d, %a0;",
        &[0x1_2345_6789],
        0xffff_ffff,
    );
}

#[test]
fn cvt_float_to_integer_rounds_and_saturates() {
    check(
        &[F32],
        S32,
        "cvt.rzi.s32.f32 %d, %a0;",
        &[f32b(-2.7)],
        neg32(-2),
    );
    check(&[F32], S32, "cvt.rni.s32.f32 %d, %a0;", &[f32b(2.5)], 2);
    check(&[F32], S32, "cvt.rni.s32.f32 %d, %a0;", &[f32b(3.5)], 4);
    check(
        &[F32],
        S32,
        "cvt.rmi.s32.f32 %d, %a0;",
        &[f32b(-2.5)],
        neg32(-3),
    );
    check(
        &[F32],
        S32,
        "cvt.rpi.s32.f32 %d, %a0;",
        &[f32b(-2.5)],
        neg32(-2),
    );
    check(&[F32], U32, "cvt.rpi.u32.f32 %d, %a0;", &[f32b(-0.5)], 0);
    check(&[F32], S32, "cvt.rzi.s32.f32 %d, %a0;", &[0x7fc0_0000], 0);
    check(
        &[F32],
        S32,
        "cvt.rzi.s32.f32 %d, %a0;",
        &[f32b(3e9)],
        0x7fff_ffff,
    );
    check(
        &[F32],
        S32,
        "cvt.rzi.s32.f32 %d, %a0;",
        &[f32b(-3e9)],
        0x8000_0000,
    );
    check(
        &[F64],
        U64,
        "cvt.rzi.u64.f64 %d, %a0;",
        &[f64b(1e30)],
        u64::MAX,
    );
    check(
        &[F64],
        S64,
        "cvt.rmi.s64.f64 %d, %a0;",
        &[f64b(-1e-300)],
        u64::MAX,
    );
}

#[test]
fn cvt_to_float_and_between_floats() {
    // 2^24 + 1 is not an f32: ties to even gives 2^24, .rp gives 2^24 + 2.
    check(
        &[S32],
        F32,
        "cvt.rn.f32.s32 %d, %a0;",
        &[16_777_217],
        0x4b80_0000,
    );
    check(
        &[U32],
        F32,
        "cvt.rp.f32.u32 %d, %a0;",
        &[16_777_217],
        0x4b80_0001,
    );
    check(
        &[U32],
        F32,
        "cvt.rz.f32.u32 %d, %a0;",
        &[0xffff_ffff],
        0x4f7f_ffff,
    );
    check(
        &[U32],
        F32,
        "cvt.rn.f32.u32 %d, %a0;",
        &[0xffff_ffff],
        0x4f80_0000,
    );
    check(
        &[S64],
        F64,
        "cvt.rm.f64.s64 %d, %a0;",
        &[(-(1i64 << 53) - 1) as u64],
        f64b(-9007199254740994.0),
    );
    // 1 + 2^-24 in f64 is halfway between two f32s: .rn picks the even one (1.0).
    let x = f64b(1.0 + 2f64.powi(-24));
    check(&[F64], F32, "cvt.rn.f32.f64 %d, %a0;", &[x], 0x3f80_0000);
    check(&[F64], F32, "cvt.rp.f32.f64 %d, %a0;", &[x], 0x3f80_0001);
    check(
        &[F64],
        F32,
        "cvt.rn.f32.f64 %d, %a0;",
        &[f64b(1e300)],
        f32b(f32::INFINITY),
    );
    check(
        &[F64],
        F32,
        "cvt.rz.f32.f64 %d, %a0;",
        &[f64b(1e300)],
        0x7f7f_ffff,
    );
    check(
        &[F32],
        F64,
        "cvt.f64.f32 %d, %a0;",
        &[f32b(0.1)],
        f64b(0.1f32 as f64),
    );
    check(
        &[F32],
        F32,
        "cvt.rni.f32.f32 %d, %a0;",
        &[f32b(2.5)],
        f32b(2.0),
    );
    check(
        &[F32],
        F32,
        "cvt.rpi.f32.f32 %d, %a0;",
        &[f32b(2.1)],
        f32b(3.0),
    );
    check(
        &[F32],
        F32,
        "cvt.ftz.f32.f32 %d, %a0;",
        &[0x8000_0001],
        0x8000_0000,
    );
    check(
        &[F32],
        F32,
        "cvt.sat.f32.f32 %d, %a0;",
        &[f32b(2.0)],
        f32b(1.0),
    );
}

// ---- 9.7.3 floating point -------------------------------------------------------------------

#[test]
fn float_add_sub_mul_rounding_modes() {
    let tiny = f32b(2f32.powi(-24));
    check(
        &[F32, F32],
        F32,
        "add.rn.f32 %d, %a0, %a1;",
        &[f32b(1.0), tiny],
        f32b(1.0),
    );
    check(
        &[F32, F32],
        F32,
        "add.rp.f32 %d, %a0, %a1;",
        &[f32b(1.0), tiny],
        0x3f80_0001,
    );
    check(
        &[F32, F32],
        F32,
        "add.f32 %d, %a0, %a1;",
        &[f32b(1.0), tiny],
        f32b(1.0),
    );
    let half_ulp_below = f32b(-(2f32.powi(-25)));
    check(
        &[F32, F32],
        F32,
        "add.rz.f32 %d, %a0, %a1;",
        &[f32b(1.0), half_ulp_below],
        0x3f7f_ffff,
    );
    check(
        &[F32, F32],
        F32,
        "add.rn.f32 %d, %a0, %a1;",
        &[f32b(1.0), half_ulp_below],
        f32b(1.0),
    );
    // x - x is +0 in every mode but .rm, where it is -0.
    check(
        &[F32, F32],
        F32,
        "sub.rm.f32 %d, %a0, %a1;",
        &[f32b(3.0), f32b(3.0)],
        0x8000_0000,
    );
    check(
        &[F32, F32],
        F32,
        "sub.rn.f32 %d, %a0, %a1;",
        &[f32b(3.0), f32b(3.0)],
        0,
    );
    check(
        &[F64, F64],
        F64,
        "mul.rz.f64 %d, %a0, %a1;",
        &[f64b(1.0 / 3.0), f64b(3.0)],
        0x3fef_ffff_ffff_ffff,
    );
    check(
        &[F64, F64],
        F64,
        "mul.rn.f64 %d, %a0, %a1;",
        &[f64b(1.0 / 3.0), f64b(3.0)],
        f64b(1.0),
    );
    // .ftz flushes subnormal inputs and results; without it they are kept.
    check(&[F32, F32], F32, "add.ftz.f32 %d, %a0, %a1;", &[1, 0], 0);
    check(&[F32, F32], F32, "add.f32 %d, %a0, %a1;", &[1, 0], 1);
    check(
        &[F32, F32],
        F32,
        "mul.rn.ftz.f32 %d, %a0, %a1;",
        &[f32b(1e-30), f32b(1e-10)],
        0,
    );
    // .sat clamps to [0, 1]; NaN becomes +0.
    check(
        &[F32, F32],
        F32,
        "add.sat.f32 %d, %a0, %a1;",
        &[f32b(2.0), f32b(3.0)],
        f32b(1.0),
    );
    check(
        &[F32, F32],
        F32,
        "add.sat.f32 %d, %a0, %a1;",
        &[0x7fc0_0000, f32b(3.0)],
        0,
    );
    // NaN results are canonical.
    check(
        &[F32, F32],
        F32,
        "add.f32 %d, %a0, %a1;",
        &[0xffc0_1234, f32b(1.0)],
        0x7fff_ffff,
    );
}

#[test]
fn float_div_rcp_sqrt() {
    check(
        &[F32, F32],
        F32,
        "div.rn.f32 %d, %a0, %a1;",
        &[f32b(1.0), f32b(3.0)],
        0x3eaa_aaab,
    );
    check(
        &[F32, F32],
        F32,
        "div.rz.f32 %d, %a0, %a1;",
        &[f32b(1.0), f32b(3.0)],
        0x3eaa_aaaa,
    );
    check(
        &[F32, F32],
        F32,
        "div.full.f32 %d, %a0, %a1;",
        &[f32b(1.0), f32b(3.0)],
        0x3eaa_aaab,
    );
    check(
        &[F32, F32],
        F32,
        "div.approx.f32 %d, %a0, %a1;",
        &[f32b(6.0), f32b(3.0)],
        f32b(2.0),
    );
    check(
        &[F64, F64],
        F64,
        "div.rm.f64 %d, %a0, %a1;",
        &[f64b(-1.0), f64b(3.0)],
        0xbfd5_5555_5555_5556,
    );
    check(
        &[F32],
        F32,
        "rcp.rn.f32 %d, %a0;",
        &[f32b(3.0)],
        0x3eaa_aaab,
    );
    check(
        &[F64],
        F64,
        "rcp.rz.f64 %d, %a0;",
        &[f64b(3.0)],
        0x3fd5_5555_5555_5555,
    );
    check(
        &[F64],
        F64,
        "rcp.rp.f64 %d, %a0;",
        &[f64b(3.0)],
        0x3fd5_5555_5555_5556,
    );
    check(
        &[F32],
        F32,
        "sqrt.rn.f32 %d, %a0;",
        &[f32b(2.0)],
        0x3fb5_04f3,
    );
    check(
        &[F32],
        F32,
        "sqrt.rz.f32 %d, %a0;",
        &[f32b(2.0)],
        0x3fb5_04f3,
    );
    check(
        &[F32],
        F32,
        "sqrt.rp.f32 %d, %a0;",
        &[f32b(2.0)],
        0x3fb5_04f4,
    );
    check(
        &[F64],
        F64,
        "sqrt.rn.f64 %d, %a0;",
        &[f64b(16.0)],
        f64b(4.0),
    );
    check(
        &[F32],
        F32,
        "sqrt.approx.f32 %d, %a0;",
        &[f32b(-1.0)],
        0x7fff_ffff,
    );
    check(
        &[F32],
        F32,
        "ex2.approx.f32 %d, %a0;",
        &[f32b(3.0)],
        f32b(8.0),
    );
    check(
        &[F32],
        F32,
        "lg2.approx.f32 %d, %a0;",
        &[f32b(1024.0)],
        f32b(10.0),
    );
}

#[test]
fn fma_and_mad_round_once() {
    // (1+2^-23)(1-2^-23) = 1 - 2^-46 exactly; adding -1 leaves -2^-46, which an unfused
    // multiply-then-add would lose.
    let a = f32b(1.0 + 2f32.powi(-23));
    let b = f32b(1.0 - 2f32.powi(-23));
    check(
        &[F32, F32, F32],
        F32,
        "fma.rn.f32 %d, %a0, %a1, %a2;",
        &[a, b, f32b(-1.0)],
        f32b(-(2f32.powi(-46))),
    );
    check(
        &[F32, F32, F32],
        F32,
        "mad.rn.f32 %d, %a0, %a1, %a2;",
        &[a, b, f32b(-1.0)],
        f32b(-(2f32.powi(-46))),
    );
    check(
        &[F32, F32, F32],
        F32,
        "mul.rn.f32 %f1, %a0, %a1;\n add.rn.f32 %d, %f1, %a2;",
        &[a, b, f32b(-1.0)],
        0,
    );
    // 1 * 1 + 2^-30 rounds up only under .rp.
    let t = f32b(2f32.powi(-30));
    check(
        &[F32, F32, F32],
        F32,
        "fma.rz.f32 %d, %a0, %a1, %a2;",
        &[f32b(1.0), f32b(1.0), t],
        f32b(1.0),
    );
    check(
        &[F32, F32, F32],
        F32,
        "fma.rp.f32 %d, %a0, %a1, %a2;",
        &[f32b(1.0), f32b(1.0), t],
        0x3f80_0001,
    );
    check(
        &[F64, F64, F64],
        F64,
        "mad.rm.f64 %d, %a0, %a1, %a2;",
        &[f64b(1.0), f64b(1.0), f64b(-(2f64.powi(-60)))],
        0x3fef_ffff_ffff_ffff,
    );
    check(
        &[F32, F32, F32],
        F32,
        "fma.rn.sat.f32 %d, %a0, %a1, %a2;",
        &[f32b(2.0), f32b(2.0), f32b(-5.0)],
        0,
    );
}

#[test]
fn float_min_max_neg_abs() {
    check(
        &[F32, F32],
        F32,
        "min.f32 %d, %a0, %a1;",
        &[0x7fc0_0000, f32b(1.0)],
        f32b(1.0),
    );
    check(
        &[F32, F32],
        F32,
        "max.f32 %d, %a0, %a1;",
        &[0x7fc0_0000, 0x7fc0_0000],
        0x7fff_ffff,
    );
    check(
        &[F32, F32],
        F32,
        "min.f32 %d, %a0, %a1;",
        &[f32b(0.0), f32b(-0.0)],
        0x8000_0000,
    );
    check(
        &[F32, F32],
        F32,
        "max.f32 %d, %a0, %a1;",
        &[f32b(-0.0), f32b(0.0)],
        0,
    );
    check(
        &[F64, F64],
        F64,
        "max.f64 %d, %a0, %a1;",
        &[f64b(-3.0), f64b(2.0)],
        f64b(2.0),
    );
    check(&[F32], F32, "neg.f32 %d, %a0;", &[f32b(1.5)], f32b(-1.5));
    check(&[F64], F64, "abs.f64 %d, %a0;", &[f64b(-0.0)], 0);
    check(&[F32], F32, "abs.ftz.f32 %d, %a0;", &[0x8000_0001], 0);
}

// ---- 9.7.9 data movement -------------------------------------------------------------------

#[test]
fn mov_packing_and_immediates() {
    check(
        &[B32, B32],
        B64,
        "mov.b64 %d, {%a0, %a1};",
        &[0x1111_2222, 0x3333_4444],
        0x3333_4444_1111_2222,
    );
    check(
        &[B64],
        B32,
        "mov.b64 {%t0, %t1}, %a0;\n mov.b32 %d, %t1;",
        &[0x3333_4444_1111_2222],
        0x3333_4444,
    );
    check(
        &[B32],
        B32,
        "mov.b32 {%h0, %h1}, %a0;\n mov.b32 %d, {%h1, %h0};",
        &[0xaaaa_bbbb],
        0xbbbb_aaaa,
    );
    check(&[], F32, "mov.f32 %d, 0f3FC00000;", &[], f32b(1.5));
    check(&[], F64, "mov.f64 %d, 0d3FF8000000000000;", &[], f64b(1.5));
    check(&[], F64, "mov.f64 %d, 2.5;", &[], f64b(2.5));
    check(&[], U32, "mov.u32 %d, 0b1010;", &[], 10);
    check(&[], S32, "mov.s32 %d, -017;", &[], neg32(-15));
    check(
        &[U32, U32],
        U32,
        "setp.lt.u32 %p1, %a0, %a1;\n mov.u32 %d, 1;\n @%p1 mov.u32 %d, 2;\n @!%p1 mov.u32 %d, 3;",
        &[1, 2],
        2,
    );
}

#[test]
fn local_arrays_and_calls() {
    let ptx = r#"
.version 7.8
.target sm_80
.address_size 64
.global .align 4 .u32 table[4] = {10, 20, 30, 40};
.const .align 8 .u64 k = 1000;
.func (.reg .u32 r) sq(.reg .u32 x)
{
    mul.lo.u32 r, x, x;
    ret;
}
.func (.param .u32 r) fact(.param .u32 n)
{
    .reg .u32 %n, %m, %s;
    .reg .pred %p;
    ld.param.u32 %n, [n];
    setp.le.u32 %p, %n, 1;
    @%p bra BASE;
    sub.u32 %m, %n, 1;
    {
        .param .u32 a;
        .param .u32 b;
        st.param.u32 [a], %m;
        call (b), fact, (a);
        ld.param.u32 %s, [b];
    }
    mul.lo.u32 %s, %s, %n;
    st.param.u32 [r], %s;
    ret;
BASE:
    st.param.u32 [r], 1;
    ret;
}
.visible .func (.param .u64 r) f(.param .u32 i)
{
    .local .align 4 .b8 depot[16];
    .reg .u32 %i, %v, %q;
    .reg .u64 %a, %b, %o, %kk;
    ld.param.u32 %i, [i];
    mov.u64 %a, depot;
    st.local.u32 [%a+12], %i;
    ld.local.u32 %v, [depot+12];
    mov.u64 %b, table;
    cvta.global.u64 %b, %b;
    mul.wide.u32 %o, %v, 4;
    add.u64 %b, %b, %o;
    ld.u32 %v, [%b];
    call (%q), sq, (%v);
    {
        .param .u32 a;
        .param .u32 b;
        st.param.u32 [a], 5;
        call.uni (b), fact, (a);
        ld.param.u32 %v, [b];
    }
    add.u32 %q, %q, %v;
    ld.const.u64 %kk, [k];
    cvt.u64.u32 %o, %q;
    add.u64 %o, %o, %kk;
    st.param.u64 [r], %o;
    ret;
}
"#;
    for (name, engine) in engines(ptx) {
        // table[2]² + 5! + k = 900 + 120 + 1000.
        let got = engine
            .call("f", &[Value::u32(2)])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, vec![Value::u64(2020)], "{name}");
    }
}

#[test]
fn special_registers_over_a_2d_grid() {
    let ptx = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .u32 %r<12>;
    .reg .u64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;   mov.u32 %r2, %tid.y;
    mov.u32 %r3, %ntid.x;  mov.u32 %r4, %ntid.y;
    mov.u32 %r5, %ctaid.x; mov.u32 %r6, %ctaid.y;
    mov.u32 %r7, %nctaid.x;
    mad.lo.u32 %r8, %r2, %r3, %r1;          // linear thread id in the block
    mul.lo.u32 %r9, %r3, %r4;               // threads per block
    mad.lo.u32 %r10, %r6, %r7, %r5;         // linear block id
    mad.lo.u32 %r10, %r10, %r9, %r8;        // global linear id
    mov.u32 %r11, %laneid;
    shl.b32 %r11, %r11, 16;
    mov.u32 %r9, %warpid;
    shl.b32 %r9, %r9, 24;
    or.b32 %r11, %r11, %r9;
    or.b32 %r11, %r11, %r10;
    mul.wide.u32 %rd2, %r10, 4;
    add.u64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r11;
    ret;
}
"#;
    for (name, engine) in engines(ptx) {
        let (grid, block) = (Dim3::new(2, 3, 1), Dim3::new(8, 5, 1));
        let n = (grid.count() * block.count()) as usize;
        let mut out = vec![0u8; 4 * n];
        engine
            .launch("k", grid, block, &mut [Arg::Buffer(&mut out)])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        for id in 0..n {
            let got = u32::from_le_bytes(out[4 * id..4 * id + 4].try_into().unwrap());
            let in_block = id % 40;
            let want =
                (id as u32) | ((in_block as u32 % 32) << 16) | ((in_block as u32 / 32) << 24);
            assert_eq!(got, want, "{name}: thread {id}");
        }
    }
}

#[test]
fn predicated_off_instructions_write_nothing() {
    let ptx = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out)
{
    .reg .u32 %r<4>;
    .reg .u64 %rd<2>;
    .reg .pred %p;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p, %r1, 1;
    mov.u32 %r2, 7;
    @%p mov.u32 %r2, 9;
    @!%p st.global.u32 [%rd1], %r2;
    @%p st.global.u32 [%rd1+4], %r2;
    @%p exit;
    st.global.u32 [%rd1+8], %r1;
    ret;
}
"#;
    for (name, engine) in engines(ptx) {
        let mut out = vec![0u8; 12];
        engine
            .launch("k", Dim3::x(1), Dim3::x(2), &mut [Arg::Buffer(&mut out)])
            .unwrap();
        let w = |i: usize| u32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
        // Thread 0 stores 7 at [0] and its tid (0) at [8]; thread 1 stores 9 at [4] and exits.
        assert_eq!((w(0), w(1), w(2)), (7, 9, 0), "{name}");
    }
}

#[test]
fn kernel_parameters_read_in_parts_and_under_guards() {
    // Parts of a kernel's parameters at their own widths, sign-extended, and under guards
    // that differ between threads (hoisting these loads out of the JIT's thread loop was
    // tried and dropped; this is the test it was checked with).
    let ptx = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 n, .param .s16 s)
{
    .reg .u64 %rd<3>;
    .reg .u32 %r<6>;
    .reg .s32 %x;
    .reg .pred %p;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 16;
    add.u64 %rd1, %rd1, %rd2;
    setp.eq.u32 %p, %r1, 1;
    mov.u32 %r2, 5;
    @%p ld.param.u32 %r2, [n];
    ld.param.u16 %r3, [n+2];
    ld.param.s16 %x, [s];
    ld.param.u8 %r4, [n];
    st.global.u32 [%rd1], %r2;
    st.global.u32 [%rd1+4], %r3;
    st.global.s32 [%rd1+8], %x;
    st.global.u32 [%rd1+12], %r4;
    ret;
}
"#;
    for (name, engine) in engines(ptx) {
        let mut out = vec![0u8; 32];
        engine
            .launch(
                "k",
                Dim3::x(1),
                Dim3::x(2),
                &mut [
                    Arg::Buffer(&mut out),
                    Arg::Scalar(Value::u32(0xabcd_1234)),
                    Arg::Scalar(Value::new(S16, 0xfff6)),
                ],
            )
            .unwrap();
        let w = |i: usize| u32::from_le_bytes(out[4 * i..4 * i + 4].try_into().unwrap());
        // Thread 0 keeps 5 (its guarded load is skipped), thread 1 loads n; both read n's
        // upper half 0xabcd, s = -10 sign-extended, and n's low byte 0x34.
        let want = [
            5,
            0xabcd,
            (-10i32) as u32,
            0x34,
            0xabcd_1234,
            0xabcd,
            (-10i32) as u32,
            0x34,
        ];
        assert_eq!((0..8).map(w).collect::<Vec<_>>(), want, "{name}");
    }
}

// ---- faults -------------------------------------------------------------------------------

const STORE_AT: &str = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u64 off)
{
    .reg .u64 %rd<4>;
    .reg .u32 %r1;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd2, [off];
    add.u64 %rd3, %rd1, %rd2;
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd3], %r1;
    ret;
}
"#;

fn store_at(off: u64) -> Result<Vec<u8>, Vec<(String, RunError)>> {
    let mut errs = Vec::new();
    let mut last = Vec::new();
    for (name, engine) in engines(STORE_AT) {
        let mut out = vec![0u8; 16];
        match engine.launch(
            "k",
            Dim3::x(1),
            Dim3::x(1),
            &mut [Arg::Buffer(&mut out), Arg::Scalar(Value::u64(off))],
        ) {
            Ok(()) => last = out,
            Err(e) => errs.push((name.to_string(), e)),
        }
    }
    if errs.is_empty() { Ok(last) } else { Err(errs) }
}

#[test]
fn out_of_bounds_and_misaligned_stores_fault_with_location() {
    assert!(store_at(12).is_ok());
    for (off, what) in [
        (16, "out of bounds"),
        (14, "out of bounds"),
        (2, "misaligned"),
        (1 << 40, "no memory"),
    ] {
        let errs = store_at(off).unwrap_err();
        for (name, e) in errs {
            let RunError::Fault(f, _) = &e else {
                panic!("{name}: {e}")
            };
            assert!(f.message.contains(what), "{name}: {}", f.message);
            assert_eq!(f.line, 13, "{name}: the st.global line");
            assert_eq!(f.function, "k");
            assert!(e.to_string().contains("st.global.u32 [%rd3], %r1;"), "{e}");
        }
    }
}

#[test]
fn wrong_space_access_faults() {
    let ptx = r#"
.version 7.8
.target sm_80
.address_size 64
.visible .entry k()
{
    .local .align 4 .b8 buf[8];
    .reg .u64 %a;
    .reg .u32 %v;
    mov.u64 %a, buf;
    ld.global.u32 %v, [%a];
    ret;
}
"#;
    for (name, engine) in engines(ptx) {
        let e = engine
            .launch("k", Dim3::x(1), Dim3::x(1), &mut [])
            .unwrap_err();
        assert!(e.to_string().contains("local"), "{name}: {e}");
    }
}

#[test]
fn ld_st_vectors_volatile_and_variable_addresses() {
    let ptx = r#"
.version 7.8
.target sm_80
.address_size 64
.global .align 16 .u32 g[4] = {1, 2, 3, 4};
.visible .entry k(.param .u64 out)
{
    .reg .u32 %r<8>;
    .reg .u64 %rd<4>;
    .reg .f32 %f<2>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.global.v4.u32 {%r1, %r2, %r3, %r4}, [g];
    st.global.v2.u32 [%rd1], {%r4, %r3};
    ld.volatile.global.u32 %r5, [g+8];
    st.volatile.global.u32 [%rd1+8], %r5;
    ld.global.v2.u32 {%r6, _}, [g+8];
    st.global.u32 [%rd1+12], %r6;
    st.global.u32 [g], 99;
    ld.global.u32 %r7, [g];
    st.global.u32 [%rd1+16], %r7;
    ld.global.u8 %r7, [g+4];
    st.global.u8 [%rd1+20], %r7;
    ld.global.s8 %r7, [%rd1+20];
    st.global.u32 [%rd1+24], %r7;
    mov.f32 %f1, 0fbf800000;
    st.global.f32 [%rd1+28], %f1;
    ld.global.s8 %r7, [%rd1+31];
    st.global.u32 [%rd1+20], %r7;
    ret;
}
"#;
    for (name, engine) in engines(ptx) {
        let mut out = vec![0u8; 32];
        engine
            .launch("k", Dim3::x(1), Dim3::x(1), &mut [Arg::Buffer(&mut out)])
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let w: Vec<u32> = out
            .chunks(4)
            .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        // ld.s8 of 0xbf (top byte of -1.0f) sign-extends to 0xffffffbf.
        assert_eq!(
            w,
            vec![4, 3, 3, 3, 99, 0xffff_ffbf, 2, 0xbf80_0000],
            "{name}"
        );
    }
}

/// The interpreter's instruction count (for throughput figures), counted by hand: every
/// instruction a thread reaches counts once, guarded-off ones and callees' included.
#[test]
fn the_interpreter_counts_the_instructions_it_executes() {
    let ptx = r#".version 7.8
.target sm_80
.address_size 64
.func (.param .u32 r) twice(.param .u32 a)
{
    .reg .u32 %x;
    ld.param.u32 %x, [a];
    add.u32 %x, %x, %x;
    st.param.u32 [r], %x;
    ret;
}
.visible .entry k(.param .u64 out, .param .u32 n)
{
    .reg .u32 %i, %n, %s;
    .reg .u64 %o;
    .reg .pred %p;
    ld.param.u64 %o, [out];
    ld.param.u32 %n, [n];
    mov.u32 %i, 0;
L:
    add.u32 %i, %i, 1;
    setp.lt.u32 %p, %i, %n;
    @%p bra L;
    call (%s), twice, (%i);
    st.global.u32 [%o], %s;
    ret;
}
"#;
    let interp = ptxjit::Interpreter::new(ptxjit::Module::parse(ptx).unwrap());
    let mut out = [0u8; 4];
    interp
        .launch(
            "k",
            Dim3::x(1),
            Dim3::x(1),
            &mut [Arg::Buffer(&mut out), Arg::Scalar(Value::u32(3))],
        )
        .unwrap();
    // 3 before the loop, 3 loop iterations of 3 (the last `bra` reached but off), the call,
    // its 4, the store and `ret`: 3 + 9 + 1 + 4 + 2.
    assert_eq!(interp.executed(), 19);
    assert_eq!(u32::from_le_bytes(out), 6);
    // A host call adds the callee's 4.
    interp.call("twice", &[Value::u32(5)]).unwrap();
    assert_eq!(interp.executed(), 23);
}
