//! PTX as compilers write it, on every engine: the operand forms and register rules ptxas
//! accepts beyond the manual's strict reading, each with a value worked out by hand (what
//! ptxas's own code computes, where its disassembly was the evidence: `var[2]` is two
//! elements on, `var+2` two bytes).

mod common;

use common::engines;
use ptxjit::{Arg, Dim3};

const HEAD: &str = ".version 8.3\n.target sm_90\n.address_size 64\n";

/// Runs kernel `k` (one thread; parameter `out`, a buffer of `words` u64s) on every engine;
/// returns the words each wrote.
fn run(body: &str, decls: &str, words: usize) -> Vec<(&'static str, Vec<u64>)> {
    let ptx = format!(
        "{HEAD}{decls}.visible .entry k(.param .u64 out)\n{{\n  .reg .b32 %r<8>;\n  \
         .reg .b64 %rd<8>;\n  .reg .f32 %f<4>;\n  .reg .f64 %fd<4>;\n  \
         ld.param.u64 %rd1, [out];\n{body}\n  ret;\n}}\n"
    );
    engines(&ptx)
        .into_iter()
        .map(|(name, e)| {
            let mut out = vec![0u8; words * 8];
            e.launch("k", Dim3::x(1), Dim3::x(1), &mut [Arg::Buffer(&mut out)])
                .unwrap_or_else(|err| panic!("{name}: {err}"));
            let w = out
                .chunks(8)
                .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                .collect();
            (name, w)
        })
        .collect()
}

fn expect(body: &str, decls: &str, want: &[u64]) {
    for (name, got) in run(body, decls, want.len()) {
        assert_eq!(got, want, "{name}:\n{body}");
    }
}

#[test]
fn integer_literals_are_truncated_to_the_operand() {
    // ptxas reads a literal as a 64-bit value and keeps the operand's low bits.
    expect(
        "  mov.b32 %r1, 4294967296;\n  add.u32 %r2, %r1, 4294967297;\n  \
         mov.b32 %r3, -1;\n  cvt.u64.u32 %rd2, %r2;\n  cvt.u64.u32 %rd3, %r3;\n  \
         st.global.v2.u64 [%rd1], {%rd2, %rd3};",
        "",
        &[1, 0xffff_ffff],
    );
}

#[test]
fn warp_sz_is_32() {
    expect(
        "  mov.u32 %r1, WARP_SZ;\n  add.u32 %r1, %r1, WARP_SZ;\n  cvt.u64.u32 %rd2, %r1;\n  \
         st.global.u64 [%rd1], %rd2;",
        "",
        &[64],
    );
}

#[test]
fn loads_and_stores_take_wider_registers() {
    // ld.f32 into a .b64 register: the float's bits in the low half, zeros above; st.b32 of
    // an .f64 register: its low 32 bits; st.f32 of a .b64 register: its low 32 bits.
    let one_f32 = 0x3f80_0000u64;
    let two_f64 = 2.0f64.to_bits();
    expect(
        "  mov.b64 %rd2, 0x123456783f800000;\n  st.global.u64 [%rd1], %rd2;\n  \
         ld.global.f32 %rd3, [%rd1];\n  st.global.u64 [%rd1+8], %rd3;\n  \
         mov.f64 %fd1, 0d4000000000000001;\n  st.global.u64 [%rd1+16], 0;\n  \
         st.global.b32 [%rd1+16], %fd1;\n  st.global.u64 [%rd1+24], 0;\n  \
         st.global.f32 [%rd1+24], %rd2;",
        "",
        &[
            0x1234_5678_3f80_0000,
            one_f32,
            (two_f64 + 1) & 0xffff_ffff,
            one_f32,
        ],
    );
}

#[test]
fn variable_addresses_with_offsets() {
    // tbl[2] is two .u32 elements on (8 bytes), tbl+2 two bytes; the same for a .local
    // array of .u64 and a .shared one.
    let decls = ".global .u32 tbl[4] = {10, 20, 30, 40};\n";
    expect(
        "  .local .u64 loc[4];\n  .shared .u16 sh[8];\n  mov.u64 %rd2, tbl;\n  \
         mov.u64 %rd3, tbl[2];\n  sub.u64 %rd4, %rd3, %rd2;\n  mov.u64 %rd5, tbl+2;\n  \
         sub.u64 %rd5, %rd5, %rd2;\n  st.global.v2.u64 [%rd1], {%rd4, %rd5};\n  \
         ld.global.u32 %r1, [%rd3];\n  cvt.u64.u32 %rd6, %r1;\n  st.global.u64 [%rd1+16], %rd6;\n  \
         mov.u64 %rd2, loc;\n  mov.u64 %rd3, loc[3];\n  sub.u64 %rd4, %rd3, %rd2;\n  \
         st.global.u64 [%rd1+24], %rd4;\n  mov.u32 %r2, sh;\n  mov.u32 %r3, sh[3];\n  \
         sub.u32 %r4, %r3, %r2;\n  cvt.u64.u32 %rd4, %r4;\n  st.global.u64 [%rd1+32], %rd4;\n  \
         cvta.global.u64 %rd4, tbl+4;\n  ld.u32 %r5, [%rd4];\n  cvt.u64.u32 %rd4, %r5;\n  \
         st.global.u64 [%rd1+40], %rd4;",
        decls,
        &[8, 2, 30, 24, 6, 20],
    );
}

#[test]
fn element_indices_need_a_variable() {
    // `%rd2+8` is a register plus a constant (tests/vector_regs.rs); `[1]` needs a variable.
    let ptx = format!(
        "{HEAD}.visible .entry k()\n{{\n  .reg .b64 %rd<4>;\n  mov.u64 %rd1, nothing[1];\n  ret;\n}}\n"
    );
    let e = ptxjit::Module::parse(&ptx).unwrap_err().to_string();
    assert!(
        e.contains("`nothing` is not a variable") && e.contains(":7:"),
        "{e}"
    );
}

#[test]
fn vector_operands_hold_immediates_and_plain_names() {
    // {lo, hi} packing with an immediate, a store of immediates, registers without `%`.
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n  .reg .b32 r<4>;\n  .reg .b64 rd<4>;\n  \
         ld.param.u64 rd1, [out];\n  mov.u32 r1, 7;\n  mov.b64 rd2, {{1, r1}};\n  \
         st.global.u64 [rd1], rd2;\n  st.global.v2.u32 [rd1+8], {{0xdead, r1}};\n  \
         st.global.v4.u16 [rd1+16], {{1, 2, 3, -1}};\n  ld.global.v2.u32 {{_, r2}}, [rd1+8];\n  \
         mov.b64 {{r3, _}}, rd2;\n  add.u32 r2, r2, r3;\n  st.global.u32 [rd1+24], r2;\n  ret;\n}}\n"
    );
    for (name, e) in engines(&ptx) {
        let mut out = vec![0u8; 32];
        e.launch("k", Dim3::x(1), Dim3::x(1), &mut [Arg::Buffer(&mut out)])
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        let w: Vec<u64> = out
            .chunks(8)
            .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            w,
            [7 << 32 | 1, 7 << 32 | 0xdead, 0xffff_0003_0002_0001, 8],
            "{name}"
        );
    }
    // An immediate cannot be written to, nor `_` read.
    for (line, msg) in [
        (
            "ld.global.v2.u32 {1, r1}, [rd1];",
            "cannot be a destination",
        ),
        ("st.global.v2.u32 [rd1], {_, r1};", "cannot be a source"),
    ] {
        let ptx = format!(
            "{HEAD}.visible .entry k()\n{{\n  .reg .b32 r<4>;\n  .reg .b64 rd<4>;\n  {line}\n  ret;\n}}\n"
        );
        let e = ptxjit::Module::parse(&ptx).expect_err(line).to_string();
        assert!(e.contains(msg) && e.contains(":8:"), "{line}: {e}");
    }
}

#[test]
fn initialisers_hold_other_variables_addresses() {
    // ptrs = {tbl, generic(tbl)+8}: loads through them reach tbl[0] and tbl[2]; a .const
    // table of addresses too.
    let decls = ".global .u32 tbl[4] = {10, 20, 30, 40};\n\
                 .global .u64 ptrs[3] = {tbl, generic(tbl)+8, 0};\n\
                 .const .u64 cptr = tbl+12;\n";
    expect(
        "  ld.global.u64 %rd2, [ptrs];\n  ld.global.u64 %rd3, [ptrs+8];\n  \
         ld.const.u64 %rd4, [cptr];\n  ld.u32 %r1, [%rd2];\n  ld.u32 %r2, [%rd3];\n  \
         ld.u32 %r3, [%rd4];\n  cvt.u64.u32 %rd5, %r1;\n  cvt.u64.u32 %rd6, %r2;\n  \
         cvt.u64.u32 %rd7, %r3;\n  st.global.v2.u64 [%rd1], {%rd5, %rd6};\n  \
         st.global.u64 [%rd1+16], %rd7;\n  ld.global.u64 %rd2, [ptrs+16];\n  \
         st.global.u64 [%rd1+24], %rd2;",
        decls,
        &[10, 30, 40, 0],
    );
    for (decls, msg) in [
        (
            ".global .u32 p = tbl;\n.global .u32 tbl;\n",
            "declared before",
        ),
        (
            ".global .u32 tbl;\n.global .u32 p = tbl;\n",
            "needs a 64-bit integer type",
        ),
        (
            ".shared .u32 s;\n.global .u64 p = s;\n",
            "only .global and .const variables",
        ),
    ] {
        let ptx = format!("{HEAD}{decls}");
        let e = ptxjit::Module::parse(&ptx).expect_err(decls).to_string();
        assert!(e.contains(msg), "{decls}: {e}");
    }
}

/// A `.common` variable is, within its module, a `.global` definition like any other.
#[test]
fn common_variables_are_global_variables() {
    expect(
        "  ld.global.u32 %r1, [pair+4];\n  add.u32 %r1, %r1, 1;\n  \
         st.global.u32 [pair], %r1;\n  ld.global.v2.u32 {%r2, %r3}, [pair];\n  \
         cvt.u64.u32 %rd2, %r2;\n  cvt.u64.u32 %rd3, %r3;\n  \
         st.global.v2.u64 [%rd1], {%rd2, %rd3};",
        ".common .global .align 8 .u32 pair[2] = {5, 6};\n",
        &[7, 6],
    );
}

/// Line information as `-lineinfo`, `-G` and Triton write it: `.loc` between instructions
/// (with `function_name` and `inlined_at` parts), labels the debug sections name, `.file`
/// entries with a timestamp and size, and `.section` blocks of DWARF data. They change
/// nothing.
#[test]
fn line_information_is_accepted_and_ignored() {
    let body = "  .loc 1 5 0
$L__func_begin0:
  .loc 1 7 3
  mov.u32 %r1, 40;
$L__tmp0:
  .loc 1 8 3, function_name $L__info_string0, inlined_at 1 5 3
  add.u32 %r1, %r1, 2;
  .loc\t2 9 1 // a comment after it
  cvt.u64.u32 %rd2, %r1;
  st.global.u64 [%rd1], %rd2;";
    expect(body, "", &[42]);
    let ptx = format!(
        "{}.visible .entry k()\n{{\n  .loc 1 3 0\n  ret;\n}}\n\
         .file 1 \"/src/k.cu\", 1700000000, 1234\n.file 2 \"k.h\"\n\
         .section .debug_str\n{{\n$L__info_string0:\n.b8 107,0\n}}\n\
         .section .debug_abbrev\n{{\n.b8 1\n.b32 .debug_str+4\n.b64 $L__func_begin0\n}}\n",
        HEAD.replace("sm_90", "sm_90, debug")
    );
    ptxjit::Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}"));
}

/// Loads and stores as Triton writes them: cache-eviction priorities, a cache policy
/// operand, a scalar in braces, spaces inside the address. They move the same bytes.
#[test]
fn cache_hints_and_braced_scalars() {
    let body = "  mov.u32 %r1, 40;
  st.global.L1::evict_first.b32 [ %rd1 + 0 ], { %r1 };
  ld.global.L1::evict_last.L2::256B.b32 { %r2 }, [ %rd1 + 0 ];
  add.u32 %r2, %r2, 2;
  createpolicy.fractional.L2::evict_last.b64 %rd2, 1.0;
  st.global.L2::cache_hint.b32 [%rd1+8], %r2, %rd2;
  prefetch.global.L2::evict_last [%rd1];";
    expect(body, "", &[40, 42]);
}

/// `.shared::cta` names the block's own shared memory, as `.shared` does.
#[test]
fn shared_cta_is_shared() {
    let body = "  mov.u32 %r1, box;
  st.shared::cta.u32 [%r1], 40;
  atom.shared::cta.add.u32 %r3, [%r1], 2;
  ld.shared.u32 %r2, [%r1];
  cvt.u64.u32 %rd2, %r2;
  st.global.u64 [%rd1], %rd2;";
    expect(body, ".shared .align 4 .b32 box[4];\n", &[42]);
}

/// Special registers whose values follow from how ptxjit runs grids: one SM, launch 0, and
/// every block a cluster of one (docs/semantics.md).
#[test]
fn sm_and_cluster_registers() {
    let body = "  mov.u32 %r1, %smid;
  mov.u32 %r2, %nsmid;
  mov.u32 %r3, %clusterid.x;
  mov.u32 %r4, %nclusterid.x;
  mov.u32 %r5, %cluster_nctaid.z;
  mov.u32 %r6, %cluster_ctarank;
  mad.lo.u32 %r7, %r2, 10, %r1;
  mad.lo.u32 %r7, %r7, 10, %r3;
  mad.lo.u32 %r7, %r7, 10, %r4;
  mad.lo.u32 %r7, %r7, 10, %r5;
  mad.lo.u32 %r7, %r7, 10, %r6;
  cvt.u64.u32 %rd2, %r7;
  st.global.u64 [%rd1], %rd2;
  mov.u64 %rd3, %gridid;
  st.global.u64 [%rd1+8], %rd3;";
    // nsmid 1, smid 0, clusterid.x 0 (block 0), nclusterid.x 1 (one block), 1, 0.
    expect(body, "", &[100110, 0]);
}
