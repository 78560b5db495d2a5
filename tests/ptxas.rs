//! NVIDIA's assembler as the judge of what is PTX: every PTX file in the repository and a
//! sample of the random generator's programs (each of its three shapes) are accepted by
//! ptxas and by us; a table of malformed forms is rejected by both, ours with a located
//! error.
//!
//! ptxas comes from the pip wheel `nvidia-cuda-nvcc-cu12` (no GPU needed; see
//! `common/ptxas.rs` for how it is found and when a missing one fails).

mod common;

use common::ptxas::{self, assemble};
use ptxjit::Module;
use ptxjit::generate::{Rng, array_program, coop_program, program};
use std::path::{Path, PathBuf};

fn repository_ptx(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() && !name.starts_with('.') && name != "target" {
            repository_ptx(&path, out);
        } else if name.ends_with(".ptx") {
            out.push(path);
        }
    }
}

#[test]
fn every_ptx_file_in_the_repository_is_ptx_to_both() {
    let Some(ptxas) = ptxas::require("every_ptx_file_in_the_repository_is_ptx_to_both") else {
        return;
    };
    let mut files = Vec::new();
    repository_ptx(Path::new(env!("CARGO_MANIFEST_DIR")), &mut files);
    assert!(files.len() >= 30, "found only {} PTX files", files.len());
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let name = f.file_stem().unwrap().to_string_lossy();
        if let Err(e) = assemble(&ptxas, &text, "sm_90", &name) {
            panic!("ptxas rejects {}: {e}", f.display());
        }
        if let Err(e) = Module::parse_named(&text, &f.display().to_string()) {
            panic!("we reject {}:\n{e}", f.display());
        }
    }
}

#[test]
fn generated_programs_are_ptx_to_ptxas() {
    let Some(ptxas) = ptxas::require("generated_programs_are_ptx_to_ptxas") else {
        return;
    };
    let mut rng = Rng::new(4242);
    for i in 0..30 {
        let (kind, p) = match i % 3 {
            0 => ("per-thread", program(&mut rng, 60)),
            1 => ("array", array_program(&mut rng, 30)),
            _ => ("cooperative", coop_program(&mut rng, 40)),
        };
        let text = p.ptx();
        if let Err(e) = assemble(&ptxas, &text, "sm_90", &format!("gen{i}")) {
            panic!("ptxas rejects {kind} program {i}: {e}\n{text}");
        }
    }
}

/// Asserts that ptxas refuses `text` and that we do with an error located on `line`, the
/// line of `form` in it.
fn rejected_by_both(ptxas: &Path, text: &str, form: &str, line: usize) {
    assert!(
        assemble(ptxas, text, "sm_90", "bad").is_err(),
        "ptxas accepts `{form}`"
    );
    let e = Module::parse(text).expect_err(form).to_string();
    assert!(
        e.contains(&format!("<input>:{line}:")),
        "`{form}` is not located on its line:\n{e}"
    );
}

#[test]
fn malformed_forms_are_rejected_by_both() {
    let Some(ptxas) = ptxas::require("malformed_forms_are_rejected_by_both") else {
        return;
    };
    let wrap = |line: &str| {
        format!(
            ".version 8.3\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n  \
             .reg .b32 %a, %b, %c, %d;\n  .reg .b64 %rd;\n  .reg .f32 %f;\n  .reg .pred %p;\n  \
             .reg .f64 %fd; .reg .b16 %h, %g; .reg .f16x2 %hx; .reg .v2 .u32 %v; .reg .v4 .f32 %q;\n  {line}\n  ret;\n}}\n"
        )
    };
    // The wrapper itself, with a valid line, is PTX to both.
    let valid = wrap("lop3.b32 %d, %a, %b, %c, 0x96;");
    assemble(&ptxas, &valid, "sm_90", "valid").unwrap();
    Module::parse(&valid).unwrap();
    for line in [
        "sad.b32 %d, %a, %b, %c;",
        "div.rn.sat.f32 %f, %f, %f;",
        "div.rn.ftz.sat.f32 %f, %f, %f;",
        "mad24.lo.sat.s32 %d, %a, %b, %c;",
        "mul24.s32 %d, %a, %b;",
        "bfind.b32 %d, %a;",
        "bmsk.b32 %d, %a, %b;",
        "szext.clamp.b32 %d, %a, %b;",
        "dp4a.u32.b32 %d, %a, %b, %c;",
        "lop3.b32 %d, %a, %b, %c, %a;",
        "lop3.xor.b32 %d|%p, %a, %b, %c, 1, %p;",
        "cvt.pack.sat.u8.s32 %d, %a, %b;",
        "testp.normal.f16 %p, %a;",
        "prefetch.shared.L1 [%rd];",
        "prefetch.global.L2::evict_first [%rd];",
        "createpolicy.fractional.b64 %rd, 1.0;",
        "cp.async.cg.shared.global [%a], [%rd], 8;",
        "cp.async.shared.global [%a], [%rd], 4;",
        "cp.async.ca.global.shared [%a], [%rd], 4;",
        "cp.async.ca.shared.global [%a], [%rd], 2;",
        "cp.async.wait_group %a;",
        "mov.u32 %a, %smid.x;",
        "shfl.down.b32 %a, %b, 1;",
        "vote.ballot.b32 %a, %p, %b;",
        // Without .sync: not on sm_70 and later from PTX ISA 6.4 (the wrapper's 8.3, sm_90).
        "shfl.down.b32 %a|%p, %b, 1, 31;",
        "vote.any.pred %p, !%p;",
        "mov.u32 %a, %clusterid;",
        "createpolicy.fractional.L2::evict_last.b32 %a, 1.0;",
        "createpolicy.L2::evict_last.b64 %rd, 1.0;",
        "ld.global.L1::evict_first.L2::evict_last.v2.b32 {%a, %b}, [%rd];",
        "ld.global.L1::evict_last.L1::evict_first.b32 %a, [%rd];",
        "ld.global.L2::cache_hint.b32 %a, [%rd];",
        "st.global.L2::64B.b32 [%rd], %a;",
        "nanosleep.u32 %rd;",
        "ldu.shared.u32 %a, [%rd];",
        "mov.u32 %a, %clock64;",
        "add.u32 %d, %a;",
        "mul.u32 %d, %a, %b;",
        "shf.l.b32 %d, %a, %b, %c;",
        "bar.sync;",
        // Modifier order: the integer mode follows the opcode directly.
        "mad.cc.lo.cc.u32 %a, %b, %c, %d;",
        "mad.cc.hi.s64 %rd, %rd, %rd, %rd;",
        "mad.sat.hi.s32 %a, %b, %c, %d;",
        "mul.u32.lo %a, %b, %c;",
        "mul.u32.wide %rd, %b, %c;",
        "madc.cc.lo.u32 %a, %b, %c, %d;",
        // Strong orders on spaces that have none.
        "ld.volatile.local.u32 %a, [%rd];",
        "st.relaxed.gpu.local.u32 [%rd], %a;",
        // Register and immediate kinds.
        "vadd.u32.u32.u32 %f, %a, %b;",
        "add.f32 %f, %f, 1;",
        "setp.eq.f32 %p, %f, 0;",
        "mov.f32 %f, 0;",
        "ld.global.u64 %a, [%rd];",
        // Half precision: rounding, modifiers, register kinds and types as ptxas has them.
        "add.rz.f16 %h, %g, %h;",
        "fma.f16 %h, %g, %h, %g;",
        "fma.rn.sat.relu.f16 %h, %g, %h, %g;",
        "fma.rn.ftz.bf16 %h, %g, %h, %g;",
        "mul.ftz.bf16 %h, %g, %h;",
        "neg.ftz.bf16 %h, %g;",
        "add.f16x2 %f, %f, %f;",
        "add.f16 %a, %h, %g;",
        "add.f16 %h, %g, 1.0;",
        "min.relu.f16 %h, %g, %h;",
        "ex2.approx.ftz.f16 %h, %g;",
        "ex2.approx.bf16 %h, %g;",
        "setp.lo.f16 %p, %h, %g;",
        "set.lt.f32.f16 %f, %h, %g;",
        "cvt.f16.f32 %h, %f;",
        "cvt.rn.f32.f16 %f, %h;",
        "cvt.rn.f16.f16 %h, %g;",
        "cvt.rni.ftz.f16.f16 %h, %g;",
        "cvt.rm.f16x2.f32 %a, %f, %f;",
        "cvt.rn.relu.f16.f64 %h, %fd;",
        "cvt.f32.bf16 %f, %a;",
        // .sat with a .bf16; a .bf16 with 8-bit integers, or 16-bit ones in wider registers.
        "cvt.sat.f32.bf16 %f, %h;",
        "cvt.rn.sat.bf16.f32 %h, %f;",
        "cvt.rm.relu.f16.f32 %h, %f;",
        "cvt.rp.satfinite.bf16.f32 %h, %f;",
        "cvt.rzi.s8.bf16 %h, %g;",
        "cvt.rzi.s16.bf16 %a, %g;",
        "cvt.rn.bf16.u16 %h, %a;",
        "ld.global.f16 %h, [%rd];",
        "mov.f16 %h, %g;",
        "selp.f16 %h, %g, %h, %p;",
        "atom.global.add.f16 %h, [%rd], %g;",
        // ld/st register kinds: an integer type refuses a float register, a float type
        // another float type's.
        "ld.global.u32 %f, [%rd];",
        "st.global.s32 [%rd], %f;",
        "ld.global.f32 %fd, [%rd];",
        "st.global.f32 [%rd], %fd;",
        "atom.global.add.noftz.f32 %f, [%rd], %f;",
        "atom.global.exch.b16 %h, [%rd], %g;",
        // Vector registers: elements, sizes, whole registers where ptxas takes them.
        "mov.u32 %v.q, 1;",
        "mov.u32 %v.xy, 1;",
        "add.u32 %a, %v, 1;",
        "mov.u32 %v, %v;",
        "mov.u32 %a, %v;",
        "ld.global.v4.f32 %v, [%rd];",
        "ld.global.u32 %v, [%rd];",
        "ld.global.u32 %a, [%v];",
        "mov.v2.u32 %v, %q;",
        "mov.v4.u32 %q, %q;",
        "mov.v2.pred {%p, %p}, {%p, %p};",
        "mov.b64 %rd, {%v.x+1, %v.y};",
        ".reg .v4 .u64 %x;",
        ".reg .v2 .pred %x;",
        ".param .v2 .u32 x;",
        // A register plus a constant: integer registers, `+` only, not everywhere.
        "mov.u32 %a, %b-4;",
        "mov.u32 %a, 4+%b;",
        "mov.u32 %a, %b+%c;",
        "mov.u32 %a, %tid.x+1;",
        "vadd.u32.u32.u32 %a, %b+1, %c;",
        // Linkage is for module-level variables; an array of no size is `.extern .shared`.
        ".extern .shared .align 16 .b8 dyn[];",
        ".visible .shared .b8 vs[4];",
        ".shared .align 16 .b8 unsized[];",
    ] {
        let text = wrap(line);
        rejected_by_both(&ptxas, &text, line, 11);
    }
}

/// `.common` (numba's PTX declares its environment pointers so): a module-level `.global`
/// variable, initialised or not, with no other linkage beside it.
#[test]
fn common_variables_as_ptxas_takes_them() {
    let Some(ptxas) = ptxas::require("common_variables_as_ptxas_takes_them") else {
        return;
    };
    let module = |decl: &str| {
        format!(
            ".version 8.3\n.target sm_90\n.address_size 64\n{decl}\n.visible .entry k() {{ ret; }}\n"
        )
    };
    for decl in [
        ".common .global .align 8 .u64 env;",
        ".common .global .u32 table[4] = {1, 2, 3, 4};",
    ] {
        let text = module(decl);
        assemble(&ptxas, &text, "sm_90", "common").unwrap();
        Module::parse(&text).unwrap_or_else(|e| panic!("`{decl}`: {e}"));
    }
    for decl in [
        ".common .shared .u32 x;",
        ".common .const .u32 x;",
        ".common .func f() { ret; }",
        ".common .visible .global .u32 x;",
        ".visible .common .global .u32 x;",
    ] {
        let text = module(decl);
        rejected_by_both(&ptxas, &text, decl, 4);
    }
}

#[test]
fn forms_ptxas_accepts_are_accepted() {
    let Some(ptxas) = ptxas::require("forms_ptxas_accepts_are_accepted") else {
        return;
    };
    for line in [
        // Cache-eviction priorities and cache hints (Triton writes them), a scalar in braces.
        "ld.global.L1::evict_last.b32 %a, [%rd];",
        "ld.global.L1::evict_first.v2.b32 {%a, %b}, [%rd];",
        "ld.global.L1::no_allocate.L2::256B.b32 {%a}, [%rd+4];",
        "ld.global.L2::cache_hint.b32 %a, [%rd], %rd;",
        "st.global.L1::evict_first.b32 [%rd], {%a};",
        "st.global.L2::cache_hint.b32 [%rd], %a, %rd;",
        "prefetch.global.L2::evict_last [%rd];",
        "prefetch.global.L2::evict_normal [%rd];",
        "prefetch.L2::evict_last [%rd];",
        "createpolicy.fractional.L2::evict_last.b64 %rd, 1.0;",
        "createpolicy.fractional.L2::evict_last.L2::evict_unchanged.b64 %rd, 0.5;",
        "createpolicy.fractional.L2::evict_first.b64 %rd;",
        "createpolicy.range.L2::evict_last.L2::evict_first.b64 %rd, [%rd], 16, 32;",
        "createpolicy.cvt.L2.b64 %rd, %rd;",
        // Special registers with values fixed by how grids run here.
        "mov.u32 %a, %smid;",
        "mov.u32 %a, %nsmid;",
        "mov.u64 %rd, %gridid;",
        "mov.u32 %a, %clusterid.x;",
        "mov.u32 %a, %nclusterid.z;",
        "mov.u32 %a, %cluster_ctaid.y;",
        "mov.u32 %a, %cluster_ctarank;",
        "mov.pred %p, %is_explicit_cluster;",
        // `.shared::cta` is `.shared`.
        "ld.shared::cta.u32 %a, [%a];",
        "st.shared::cta.u32 [%a], %b;",
        "atom.shared::cta.add.u32 %a, [%a], 2;",
        "cvta.shared::cta.u64 %rd, %rd;",
        "isspacep.shared::cta %p, %rd;",
        // cp.async and its groups (each copy a shared-space window offset).
        "cp.async.cg.shared.global [%a], [%rd], 16, %b;",
        "cp.async.ca.shared.global [%a], [%rd], 8, %p;",
        "cp.async.ca.shared::cta.global.L2::cache_hint [%a], [%rd], 4, %rd;",
        "cp.async.ca.shared.global.L2::128B [%a+4], [%rd+4], 4;",
        "cp.async.commit_group;",
        "cp.async.wait_group 1;",
        "cp.async.wait_all;",
        // ld and st take any register at least as wide as the type.
        "ld.global.f32 %rd, [%rd];",
        "ld.global.u32 %rd, [%rd];",
        "ld.global.f32 %a, [%rd];",
        "st.global.b32 [%rd], %fd;",
        "st.global.f32 [%rd], %rd;",
        // Integer literals are 64-bit values, truncated to the operand.
        "mov.b32 %a, 4294967296;",
        "add.u32 %a, %b, 4294967297;",
        "lop3.b32 %a, %b, %c, %d, 0x1ff;",
        "mov.u32 %a, WARP_SZ;",
        // A variable's address with a byte offset or an element index.
        "mov.u64 %rd, tbl+8;",
        "mov.u64 %rd, tbl[2];",
        "cvta.global.u64 %rd, tbl+4;",
        // Scalar video operands may be immediates.
        "vshr.u32.u32.u32.clamp.add %a, %b, 32, %c;",
        "vmad.u32.u32.u32 %a, %b, 5, 3;",
        // Initialisers holding addresses are in the module part of the wrapper.
        "ld.global.u64 %rd, [ptrs];",
        // Vector operands holding immediates.
        "mov.b64 %rd, {1, %a};",
        "st.global.v2.u32 [%rd], {0xdead, %a};",
        // Where ptxas is lenient about modifier order, so are we.
        "shf.l.b32.wrap %a, %b, %c, %d;",
        "mad.hi.s32.sat %a, %b, %c, %d;",
        "mad.lo.u32.cc %a, %b, %c, %d;",
        "add.cc.cc.u32 %a, %b, %c;",
        "ld.u32.global %a, [%rd];",
        "cvt.f32.s32.rn %f, %a;",
        "ld.volatile.shared.u32 %a, [%rd];",
        // Half precision.
        "add.f16 %h, %g, %h;",
        "add.rn.ftz.sat.f16x2 %a, %b, %c;",
        "add.bf16 %h, %g, %h;",
        "fma.rn.relu.bf16x2 %a, %b, %c, %d;",
        "fma.rn.ftz.sat.f16 %h, %g, %h, %g;",
        "min.NaN.xorsign.abs.f16 %h, %g, %h;",
        "max.bf16x2 %a, %b, %c;",
        "neg.bf16 %h, %g;",
        "abs.ftz.f16x2 %hx, %hx;",
        "ex2.approx.f16x2 %a, %b;",
        "ex2.approx.ftz.bf16 %h, %g;",
        "tanh.approx.f32 %f, %f;",
        "tanh.approx.bf16x2 %a, %b;",
        "setp.ltu.and.f16x2 %p|%pq, %a, %b, !%pq;",
        "setp.num.bf16 %p, %h, %g;",
        "set.gt.u32.f16x2 %a, %b, %c;",
        "set.lt.f16.f32 %h, %f, %f;",
        "set.eq.or.f32.u32 %f, %a, %b, %p;",
        "cvt.rn.f16.f32 %h, %f;",
        "cvt.rn.f16.f32 %a, %f;",
        "cvt.f32.f16 %f, %a;",
        "cvt.rz.relu.satfinite.bf16x2.f32 %a, %f, %f;",
        "cvt.rni.s32.f16 %a, %h;",
        "cvt.rni.sat.u8.f16 %h, %g;",
        "cvt.rn.f16.u64 %h, %rd;",
        "cvt.rni.f16.f16 %h, %g;",
        "cvt.rn.bf16.f64 %h, %fd;",
        "cvt.f64.bf16 %fd, %h;",
        "mov.b32 %hx, {%h, %g};",
        "ld.global.b16 %h, [%rd];",
        "atom.global.add.noftz.f16x2 %a, [%rd], %b;",
        "red.global.add.noftz.bf16x2 [%rd], %a;",
        "atom.shared.add.noftz.f16 %h, [%rd], %g;",
        "atom.global.cas.b16 %h, [%rd], %g, %h;",
        // Vector registers: elements wherever a scalar goes, whole ones in ld, st and mov.
        "add.f32 %q.x, %q.y, %q.a;",
        "ld.global.v4.f32 %q, [%rd];",
        "st.global.v2.u32 [%rd], %v;",
        "ld.global.v2.u16 %v, [%rd];",
        "mov.b64 %rd, %v;",
        "mov.b64 %v, %rd;",
        "mov.v2.u32 %v, {%v.y, %v.x};",
        "mov.v4.f32 %q, {1.0, 2.0, 3.0, 4.0};",
        "mov.v2.f32 {%a, _}, %v;",
        "mov.b64 %rd, {%v.x, %v.y};",
        // A register plus a constant as a source value.
        "mov.u32 %a, %b+4;",
        "add.u32 %a, %b+0x100000001, %c + -1;",
        "st.global.u32 [%rd], %a+4;",
        "cvt.u64.u32 %rd, %a+1+2;",
        "shfl.sync.idx.b32 %a, %b+1, 0, 31, -1;",
        "atom.global.cas.b32 %a, [%rd], %b+1, %c+2;",
        "lop3.b32 %a, %b+1, %c, %d, 0x96;",
    ] {
        let text = format!(
            ".version 8.3\n.target sm_90\n.address_size 64\n.global .u32 tbl[4];\n\
             .global .u64 ptrs[2] = {{tbl, generic(tbl)+4}};\n\
             .visible .entry k()\n{{\n  .reg .b32 %a, %b, %c, %d;\n  .reg .b64 %rd;\n  \
             .reg .f32 %f;\n  .reg .f64 %fd;\n  .reg .b16 %h, %g;\n  .reg .f16x2 %hx;\n  \
             .reg .v2 .u32 %v;\n  .reg .v4 .f32 %q;\n  .reg .pred %p, %pq;\n  {line}\n  ret;\n}}\n"
        );
        if let Err(e) = assemble(&ptxas, &text, "sm_90", "good") {
            panic!("ptxas rejects `{line}`: {e}");
        }
        if let Err(e) = Module::parse(&text) {
            panic!("we reject `{line}`:\n{e}");
        }
    }
}

#[test]
fn a_call_before_the_declaration_is_rejected_by_both() {
    let Some(ptxas) = ptxas::require("a_call_before_the_declaration_is_rejected_by_both") else {
        return;
    };
    let callee = ".func (.param .b32 r) g(.param .b32 a)\n{\n  .reg .b32 %x;\n  \
                  ld.param.b32 %x, [a];\n  st.param.b32 [r], %x;\n  ret;\n}\n";
    let kernel = ".visible .entry k()\n{\n  .reg .b32 %r;\n  call (%r), g, (5);\n  ret;\n}\n";
    let header = ".version 8.3\n.target sm_80\n.address_size 64\n";
    let prototype = ".func (.param .b32 r) g(.param .b32 a);\n";
    let late = format!("{header}{kernel}{callee}");
    assert!(
        assemble(&ptxas, &late, "sm_80", "late").is_err(),
        "ptxas takes a late callee"
    );
    let e = Module::parse(&late).expect_err("late callee").to_string();
    assert!(
        e.contains("before it is declared") && e.contains("<input>:7:"),
        "{e}"
    );
    // A prototype above the caller is enough for both.
    let declared = format!("{header}{prototype}{kernel}{callee}");
    assemble(&ptxas, &declared, "sm_80", "declared").unwrap();
    Module::parse(&declared).unwrap();
}

/// A kernel `name` that stores to each of `vars` and calls each of `calls`.
fn shared_kernel(name: &str, vars: &[&str], calls: &[&str]) -> String {
    let stores: String = (vars.iter())
        .map(|v| format!("  st.shared.u8 [{v}], %r;\n"))
        .collect();
    let calls: String = calls.iter().map(|f| format!("  call {f}, ();\n")).collect();
    format!(
        ".visible .entry {name}()\n{{\n  .reg .b32 %r;\n  mov.u32 %r, %tid.x;\n{stores}{calls}  \
         ret;\n}}\n"
    )
}

/// A `.func` `name` with its own `.shared` array `own` (`decl`), storing to it and to each
/// module variable of `names`, with a barrier if `barrier` (it is then inlined).
fn shared_func(name: &str, decl: &str, names: &[&str], barrier: bool) -> String {
    let stores: String = (names.iter())
        .map(|v| format!("  st.shared.u8 [{v}], %r;\n"))
        .collect();
    let bar = if barrier { "  bar.sync 0;\n" } else { "" };
    format!(
        ".func {name}()\n{{\n  .shared {decl};\n  .reg .b32 %r;\n  mov.u32 %r, %tid.x;\n  \
         st.shared.u8 [own_{name}], %r;\n{stores}{bar}  ret;\n}}\n"
    )
}

#[test]
fn static_shared_bytes_are_counted_as_ptxas_counts_them() {
    let Some(ptxas) = ptxas::require("static_shared_bytes_are_counted_as_ptxas_counts_them") else {
        return;
    };
    let header = ".version 8.3\n.target sm_80\n.address_size 64\n";
    let modules = [
        // ptxas lays out the kernel's own variables, then the module's that it and its
        // callees name, then the callees' own: 2, then 8 at 8, then 4 at 16 (20 bytes),
        // with the callee inlined (a barrier) or called.
        ".shared .align 8 .b8 m[8];\n".to_string()
            + &shared_func("f", ".align 4 .b8 own_f[4]", &[], true)
            + ".visible .entry k()\n{\n  .shared .align 1 .b8 a[2];\n  .reg .b32 %r;\n  \
               st.shared.u8 [a], %r;\n  st.shared.u8 [m], %r;\n  call f, ();\n  ret;\n}\n",
        ".shared .align 8 .b8 m[8];\n".to_string()
            + &shared_func("f", ".align 4 .b8 own_f[4]", &[], false)
            + ".visible .entry k()\n{\n  .shared .align 1 .b8 a[2];\n  .reg .b32 %r;\n  \
               st.shared.u8 [a], %r;\n  st.shared.u8 [m], %r;\n  call f, ();\n  ret;\n}\n",
        // Module variables a callee names; two callees in the kernel and another order.
        ".shared .align 2 .b8 m1[3];\n.shared .align 16 .b8 m2[5];\n".to_string()
            + &shared_func("g", ".align 8 .b8 own_g[9]", &["m2"], false)
            + &shared_func("h", ".align 4 .b8 own_h[1]", &["m1"], true)
            + &shared_kernel("k1", &[], &["h", "g"])
            + &shared_kernel("k2", &["m1"], &["g"]),
        // A dynamic array aligns every kernel's static end, named or not.
        ".extern .shared .align 64 .b8 dyn[];\n.shared .align 1 .b8 x[3];\n".to_string()
            + &shared_kernel("named", &["x", "dyn"], &[])
            + &shared_kernel("unnamed", &["x"], &[]),
        // Kernels that each use their own module arrays.
        ".shared .align 4 .b8 a[40000];\n.shared .align 4 .b8 b[4000];\n".to_string()
            + &shared_kernel("ka", &["a"], &[])
            + &shared_kernel("kab", &["a", "b"], &[]),
    ];
    for (i, body) in modules.iter().enumerate() {
        let text = format!("{header}{body}");
        let theirs = ptxas::smem_bytes(&ptxas, &text, "sm_80", &format!("smem{i}"))
            .unwrap_or_else(|e| panic!("ptxas rejects module {i}: {e}\n{text}"));
        assert!(!theirs.is_empty(), "no kernels in module {i}");
        let m = Module::parse(&text).unwrap_or_else(|e| panic!("module {i}:\n{e}"));
        for (name, bytes) in theirs {
            let f = m.functions.iter().find(|f| f.name == name).expect("kernel");
            assert_eq!(f.static_shared, bytes, "module {i}, kernel {name}:\n{text}");
        }
    }
}

#[test]
fn kernels_over_48_kib_of_static_shared_memory_are_rejected_by_both() {
    let Some(ptxas) = ptxas::require("kernels_over_48_kib_of_static_shared_memory_are_rejected")
    else {
        return;
    };
    let header = ".version 8.3\n.target sm_80\n.address_size 64\n";
    let own = |n: usize| {
        format!(
            ".visible .entry k()\n{{\n  .shared .align 4 .b8 s[{n}];\n  .reg .b32 %r;\n  \
             st.shared.u32 [s], %r;\n  ret;\n}}\n"
        )
    };
    let with_callee = |barrier: bool| {
        ".shared .align 4 .b8 s[30000];\n".to_string()
            + &shared_func("f", ".align 4 .b8 own_f[20000]", &[], barrier)
            + &shared_kernel("k", &["s"], &["f"])
    };
    // A kernel refused for an instruction ptxjit does not run is still counted (its own
    // variables) and refused for its size, as ptxas refuses the module.
    let refused = ".visible .entry k()\n{\n  .shared .align 8 .b8 tile[49152];\n  \
                   .shared .align 8 .b64 bar;\n  mbarrier.init.shared.b64 [bar], 32;\n  \
                   ret;\n}\n"
        .to_string();
    // A `.func` over the limit by itself is not a kernel: both take it.
    let lone_func =
        shared_func("f", ".align 4 .b8 own_f[50000]", &[], false) + &shared_kernel("k", &[], &[]);
    for (body, over) in [
        (own(49152), false),
        (own(49153), true),
        (with_callee(false), true),
        (with_callee(true), true),
        (refused, true),
        (lone_func, false),
    ] {
        let text = format!("{header}{body}");
        let theirs = assemble(&ptxas, &text, "sm_80", "smem_limit");
        let ours = Module::parse(&text);
        if !over {
            theirs.unwrap_or_else(|e| panic!("ptxas rejects:\n{text}\n{e}"));
            ours.unwrap_or_else(|e| panic!("we reject:\n{text}\n{e}"));
            continue;
        }
        let e = theirs.expect_err("ptxas takes a kernel over 48 KiB");
        assert!(e.contains("too much shared data"), "{e}");
        let e = ours.expect_err("a kernel over 48 KiB").to_string();
        let line = text.lines().position(|l| l.contains(".entry k")).unwrap() + 1;
        assert!(
            e.contains(&format!("<input>:{line}:")) && e.contains("allows 49152"),
            "{e}"
        );
    }
}
