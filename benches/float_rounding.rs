//! ns per float instruction in JIT code, directed rounding against `mad.rn`: one thread runs
//! a loop of 8 independent instructions per iteration (`%a_k = op(%a_k, %x[, %y])`), so the
//! figure is throughput, loop overhead included; each figure is the best of 5 launches.
//! Directed rounding is measured on the default path (computed inline, see
//! `src/jit/lower/float/directed.rs`) and, for `mad`, on the soft-float fallback
//! (`JitOptions { hardware_rounding: false, .. }`). Ratios compare figures from this one run.
//!
//! cargo bench --bench float_rounding

use ptxjit::{Arg, Dim3, Engine, Jit, JitOptions, Module, Value};
use std::time::Instant;

fn kernel(op: &str, ty: &str) -> String {
    let third = if op.starts_with("mad") || op.starts_with("fma") {
        ", %y"
    } else {
        ""
    };
    let body: String = (0..8)
        .map(|k| format!("    {op}.{ty} %a{k}, %a{k}, %x{third};\n"))
        .collect();
    let store: String = (0..8)
        .map(|k| format!("    st.global.{ty} [%o+{}], %a{k};\n", k * 8))
        .collect();
    format!(
        ".version 7.8\n.target sm_80\n.address_size 64\n\
         .visible .entry k(.param .u64 out, .param .u32 n)\n{{\n\
         \x20   .reg .{ty} %a<8>, %x, %y;\n    .reg .u32 %i, %n;\n    .reg .u64 %o;\n    .reg .pred %p;\n\
         \x20   ld.param.u64 %o, [out];\n    ld.param.u32 %n, [n];\n\
         {init}    mov.{ty} %x, 0{x};\n    mov.{ty} %y, 0{y};\n    mov.u32 %i, 0;\nL:\n{body}\
         \x20   add.u32 %i, %i, 1;\n    setp.lt.u32 %p, %i, %n;\n    @%p bra L;\n{store}    ret;\n}}\n",
        init = (0..8)
            .map(|k| format!("    cvt.rn.{ty}.u32 %a{k}, {};\n", k + 1))
            .collect::<String>(),
        x = if ty == "f64" {
            "d3fefffffffffffff"
        } else {
            "f3f7fffff"
        },
        y = if ty == "f64" {
            "d3fb999999999999a"
        } else {
            "f3dcccccd"
        },
    )
}

fn ns_per_op(ptx: &str, hardware_rounding: bool) -> f64 {
    let module = Module::parse(ptx).expect("bench PTX parses");
    let jit = Jit::with_options(
        module,
        JitOptions {
            hardware_rounding,
            ..JitOptions::default()
        },
    )
    .expect("compiles");
    let n = 500_000u32;
    let mut out = vec![0u8; 64];
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        jit.launch(
            "k",
            Dim3::x(1),
            Dim3::x(1),
            &mut [Arg::Buffer(&mut out), Arg::Scalar(Value::u32(n))],
        )
        .expect("runs");
        best = best.min(t.elapsed().as_secs_f64() * 1e9 / (8.0 * n as f64));
    }
    best
}

fn main() {
    println!("{:<16} {:>10} {:>10}", "instruction", "ns/op", "vs .rn");
    for ty in ["f64", "f32"] {
        let rn = ns_per_op(&kernel("mad.rn", ty), true);
        println!("{:<16} {rn:>10.2} {:>10.1}", format!("mad.rn.{ty}"), 1.0);
        for op in [
            "mad.rz", "mad.rm", "mad.rp", "fma.rz", "add.rz", "add.rm", "sub.rp", "mul.rz",
            "mul.rm", "mul.rp",
        ] {
            let t = ns_per_op(&kernel(op, ty), true);
            println!("{:<16} {t:>10.2} {:>10.1}", format!("{op}.{ty}"), t / rn);
        }
        let soft = ns_per_op(&kernel("mad.rz", ty), false);
        println!("{:<16} {soft:>10.2} {:>10.1}", "mad.rz soft", soft / rn);
    }
}
