//! The `ptxjit` binary: its output formats, exit codes and located errors for every kind of
//! bad input (exit 2), and runtime faults (exit 1).

use std::io::Write;
use std::process::{Command, Stdio};

struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

fn ptxjit(args: &[&str], stdin: Option<&str>) -> Out {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptxjit"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().expect("exited normally, not by a signal"),
        stdout: String::from_utf8_lossy(&o.stdout).into(),
        stderr: String::from_utf8_lossy(&o.stderr).into(),
    }
}

fn write_tmp(name: &str, text: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_string_lossy().into_owned()
}

const HEADER: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

const ADD: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .func (.param .u32 r, .param .f64 s) add2(.param .u32 a, .param .s32 b, .param .f64 c)
{
    .reg .u32 %a, %b, %d;
    .reg .f64 %c;
    ld.param.u32 %a, [a];
    ld.param.u32 %b, [b];
    add.u32 %d, %a, %b;
    st.param.u32 [r], %d;
    ld.param.f64 %c, [c];
    add.rn.f64 %c, %c, %c;
    st.param.f64 [s], %c;
    ret;
}
"#;

#[test]
fn call_prints_typed_hex_results() {
    let f = write_tmp("add.ptx", ADD);
    let o = ptxjit(
        &["call", &f, "add2", "--engine", "interp", "40", "-2", "1.5"],
        None,
    );
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "0x00000026 0d4008000000000000\n"),
        "{}",
        o.stderr
    );
    let o = ptxjit(
        &["call", &f, "add2", "0xffffffff", "1", "0d3ff0000000000000"],
        None,
    );
    assert_eq!(o.stdout, "0x00000000 0d4000000000000000\n");
}

#[test]
fn call_batch_reads_one_line_per_call() {
    let f = write_tmp("add_batch.ptx", ADD);
    let o = ptxjit(
        &["call", &f, "add2", "--batch", "-"],
        Some("1 2 0.5\n10 -1 -1\n"),
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "0x00000003 0d3ff0000000000000\n0x00000009 0dc000000000000000\n"
    );
    let batch = write_tmp("batch.txt", "3 4 2\n");
    let o = ptxjit(&["call", &f, "add2", "--batch", &batch], None);
    assert_eq!(o.stdout, "0x00000007 0d4010000000000000\n");
}

#[test]
fn call_argument_errors_exit_2() {
    let f = write_tmp("add_args.ptx", ADD);
    for args in [
        vec!["call", &f, "add2", "1", "2"],
        vec!["call", &f, "add2", "-1", "2", "0"],
        vec!["call", &f, "add2", "0x1ffffffff", "2", "0"],
        vec!["call", &f, "add2", "x", "2", "0"],
        vec!["call", &f, "nope"],
        vec!["call", &f, "add2", "1", "2", "3", "--engine", "gpu"],
        vec!["frobnicate"],
        vec![],
    ] {
        let o = ptxjit(&args, None);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(
            o.stderr.contains("error") || o.stderr.contains("usage"),
            "{args:?}: {}",
            o.stderr
        );
    }
    // JIT-only options are refused for the interpreter.
    let o = ptxjit(
        &[
            "call", &f, "add2", "1", "2", "3", "--engine", "interp", "--emit", "clif",
        ],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("apply to the JIT"), "{}", o.stderr);
    let o = ptxjit(&["call", &f, "add2", "1", "2", "3", "--emit", "wasm"], None);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("clif or asm"), "{}", o.stderr);
}

#[test]
fn call_takes_negative_values() {
    let f = write_tmp("add_negative.ptx", ADD);
    // Decimal numbers may start with `-`; other values that do (-0x2, -inf) go after `--`.
    let o = ptxjit(&["call", &f, "add2", "40", "-2", "-1.5e1"], None);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "0x00000026 0dc03e000000000000\n"),
        "{}",
        o.stderr
    );
    let o = ptxjit(&["call", &f, "add2", "--", "40", "-0x2", "-inf"], None);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "0x00000026 0dfff0000000000000\n"),
        "{}",
        o.stderr
    );
    let o = ptxjit(&["call", &f, "add2", "40", "-0x2", "-inf"], None);
    assert_eq!(o.code, 2);
    assert!(o.stderr.contains("use '-- -0'"), "{}", o.stderr);
}

#[test]
fn help_version_and_suggestions() {
    let o = ptxjit(&["help"], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    for word in [
        "Usage: ptxjit <COMMAND>",
        "check",
        "call",
        "launch",
        "diff",
        "Exit codes",
    ] {
        assert!(o.stdout.contains(word), "{word}: {}", o.stdout);
    }
    for args in [["help", "launch"], ["launch", "--help"]] {
        let o = ptxjit(&args, None);
        assert_eq!(o.code, 0, "{args:?}: {}", o.stderr);
        for word in [
            "--grid",
            "--block",
            "--arg <SPEC>",
            "TYPE[]:@PATH",
            "--out <K[,K...]>",
            "--out-dir",
            "--format <FORMAT>",
            "--no-lanes",
        ] {
            assert!(o.stdout.contains(word), "{args:?}, {word}: {}", o.stdout);
        }
    }
    let o = ptxjit(&["call", "-h"], None);
    assert_eq!(o.code, 0);
    assert!(o.stdout.contains("--batch"), "{}", o.stdout);
    let o = ptxjit(&["--version"], None);
    assert_eq!(o.code, 0);
    assert_eq!(o.stdout, format!("ptxjit {}\n", env!("CARGO_PKG_VERSION")));
    let o = ptxjit(&["lanch"], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("a similar subcommand exists: 'launch'"),
        "{}",
        o.stderr
    );
    let o = ptxjit(
        &["launch", "k.ptx", "k", "--gird", "1", "--block", "1"],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("a similar argument exists: '--grid'"),
        "{}",
        o.stderr
    );
}

const KERNEL: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .entry scale(.param .u64 p, .param .u32 k, .param .u32 n)
{
    .reg .u32 %r<6>;
    .reg .u64 %rd<4>;
    .reg .pred %p;
    ld.param.u64 %rd1, [p];
    ld.param.u32 %r1, [k];
    ld.param.u32 %r5, [n];
    mov.u32 %r2, %tid.x;
    setp.ge.u32 %p, %r2, %r5;
    @%p ret;
    mul.wide.u32 %rd2, %r2, 4;
    add.u64 %rd3, %rd1, %rd2;
    ld.global.u32 %r3, [%rd3];
    mul.lo.u32 %r4, %r3, %r1;
    st.global.u32 [%rd3], %r4;
    ret;
}
"#;

#[test]
fn launch_prints_buffers_or_writes_files() {
    let f = write_tmp("scale.ptx", KERNEL);
    let o = ptxjit(
        &[
            "launch",
            &f,
            "scale",
            "--grid",
            "1",
            "--block",
            "4",
            "--arg",
            "u32[]:1,2,3,4",
            "--arg",
            "u32:3",
            "--arg",
            "u32:4",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "arg0: 0x00000003 0x00000006 0x00000009 0x0000000c\n"
    );
    let input = write_tmp("scale_in.bin", "");
    std::fs::write(&input, [1u8, 0, 0, 0, 2, 0, 0, 0]).unwrap();
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli/outdir");
    let o = ptxjit(
        &[
            "launch",
            &f,
            "scale",
            "--grid",
            "1,1,1",
            "--block",
            "2,1",
            "--arg",
            &format!("u32[]:@{input}"),
            "--arg",
            "u32:5",
            "--arg",
            "u32:2",
            "--out-dir",
            dir.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        std::fs::read(dir.join("arg0.bin")).unwrap(),
        vec![5, 0, 0, 0, 10, 0, 0, 0]
    );
}

#[test]
fn launch_fault_exits_1_with_thread_and_line() {
    let f = write_tmp("scale_oob.ptx", KERNEL);
    // n = 8 but the buffer holds 4 elements: thread 4 stores past the end. Both engines
    // report the same fault, apart from the buffer's host address.
    let mut reports = Vec::new();
    for engine in ["jit", "interp"] {
        let o = ptxjit(
            &[
                "launch", &f, "scale", "--grid", "1", "--block", "8", "--arg", "u32[4]", "--arg",
                "u32:1", "--arg", "u32:8", "--engine", engine,
            ],
            None,
        );
        assert_eq!(o.code, 1, "{engine}: {}", o.stderr);
        assert!(o.stderr.contains("out of bounds"), "{}", o.stderr);
        assert!(o.stderr.contains("scale_oob.ptx:17:"), "{}", o.stderr);
        assert!(o.stderr.contains("thread (4,0,0)"), "{}", o.stderr);
        assert!(
            o.stderr.contains("ld.global.u32 %r3, [%rd3];"),
            "{}",
            o.stderr
        );
        let without_addresses: String = o
            .stderr
            .split("0x")
            .enumerate()
            .map(|(k, part)| {
                if k == 0 {
                    part.to_string()
                } else {
                    part.trim_start_matches(|c: char| c.is_ascii_hexdigit())
                        .to_string()
                }
            })
            .collect();
        reports.push(without_addresses);
    }
    assert_eq!(reports[0], reports[1]);
}

/// The scale kernel's launch arguments (4 threads, in bounds).
fn scale_args(f: &str) -> Vec<&str> {
    vec![
        "launch",
        f,
        "scale",
        "--grid",
        "1",
        "--block",
        "4",
        "--arg",
        "u32[]:1,2,3,4",
        "--arg",
        "u32:3",
        "--arg",
        "u32:4",
    ]
}

#[test]
fn emit_shows_the_compiled_code_and_stats_the_times() {
    let f = write_tmp("scale_emit.ptx", KERNEL);
    let want = "arg0: 0x00000003 0x00000006 0x00000009 0x0000000c\n";
    let mut args = scale_args(&f);
    args.extend(["--emit", "clif"]);
    let o = ptxjit(&args, None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.starts_with("; ---- scale\n"), "{}", o.stdout);
    assert!(o.stdout.contains("function "), "{}", o.stdout);
    assert!(
        o.stdout.contains("call fn"),
        "checked accesses call rt_check: {}",
        o.stdout
    );
    assert!(o.stdout.ends_with(want), "{}", o.stdout);

    let mut args = scale_args(&f);
    args.extend(["--emit", "asm", "--unchecked"]);
    let o = ptxjit(&args, None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("ret"), "{}", o.stdout);
    assert!(o.stdout.contains("movl"), "{}", o.stdout);
    assert!(o.stdout.ends_with(want), "{}", o.stdout);

    let mut args = scale_args(&f);
    args.push("--stats");
    let o = ptxjit(&args, None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, want);
    assert!(o.stderr.contains("compile: "), "{}", o.stderr);
    assert!(o.stderr.contains("us/instruction"), "{}", o.stderr);
    assert!(o.stderr.contains("threads/s"), "{}", o.stderr);
}

#[test]
fn unchecked_drops_the_checks_from_the_code() {
    let f = write_tmp("scale_unchecked.ptx", KERNEL);
    let mut args = scale_args(&f);
    // Without lanes: the thread loop would call the kernel's lanes function.
    args.extend(["--emit", "clif", "--unchecked", "--no-lanes"]);
    let o = ptxjit(&args, None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(!o.stdout.contains("call fn"), "{}", o.stdout);
    assert!(
        o.stdout
            .ends_with("arg0: 0x00000003 0x00000006 0x00000009 0x0000000c\n")
    );
}

#[test]
fn launch_argument_errors_exit_2() {
    let f = write_tmp("scale_args.ptx", KERNEL);
    for extra in [
        vec!["--grid", "1"],
        vec![
            "--grid", "1", "--block", "0", "--arg", "u32[4]", "--arg", "u32:1", "--arg", "u32:1",
        ],
        vec![
            "--grid", "1", "--block", "2000", "--arg", "u32[4]", "--arg", "u32:1", "--arg", "u32:1",
        ],
        vec!["--grid", "1", "--block", "1", "--arg", "u32[4]"],
        vec![
            "--grid", "1", "--block", "1", "--arg", "q9:1", "--arg", "u32:1", "--arg", "u32:1",
        ],
        vec![
            "--grid", "1", "--block", "1", "--arg", "u32:1", "--arg", "u32:1", "--arg", "u32:1",
        ],
        vec![
            "--grid",
            "1",
            "--block",
            "1",
            "--arg",
            "u32[]:@/nonexistent",
            "--arg",
            "u32:1",
            "--arg",
            "u32:1",
        ],
        vec!["--grid", "x", "--block", "1"],
    ] {
        let mut args = vec!["launch", f.as_str(), "scale"];
        args.extend(extra.iter());
        let o = ptxjit(&args, None);
        assert_eq!(o.code, 2, "{args:?}: {}", o.stderr);
        assert!(o.stderr.starts_with("error"), "{args:?}: {}", o.stderr);
    }
}

/// A kernel that leaves its buffers as they are, a signed `.func` and an f16 `.func`.
const PRINT: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .entry keep(.param .u64 a, .param .u64 b, .param .u64 c, .param .u32 n)
{
    ret;
}
.visible .func (.param .s32 r) negate(.param .s32 a)
{
    .reg .s32 %a;
    ld.param.s32 %a, [a];
    neg.s32 %a, %a;
    st.param.s32 [r], %a;
    ret;
}
.visible .func (.param .f16 r) half(.param .f16 a)
{
    .reg .b16 %a;
    ld.param.b16 %a, [a];
    st.param.b16 [r], %a;
    ret;
}
"#;

fn keep(f: &str, buffers: [&str; 3], extra: &[&str]) -> Out {
    let mut args = vec!["launch", f, "keep", "--grid", "1", "--block", "1"];
    for b in buffers {
        args.extend(["--arg", b]);
    }
    args.extend(["--arg", "u32:0"]);
    args.extend(extra);
    ptxjit(&args, None)
}

#[test]
fn dec_format_prints_plain_integers_and_shortest_floats() {
    let f = write_tmp("print.ptx", PRINT);
    // f32: 0.1 and 1e20 are the shortest decimals of their f32s (1e20 is 100000002004087734272);
    // 0f7f7fffff is f32::MAX; 1e-45 reads as the least subnormal, 2^-149; 0.0001 as an f32
    // is 9.99999974737875e-5, below 1e-4, so it takes the exponent form. NaNs keep their
    // sign, the payload goes.
    let o = keep(
        &f,
        [
            "f32[]:1.5,-0,0.1,1e20,1e-45,0f7fc00000,0fffc00001,0f7f800000,0fff800000,0f7f7fffff,0.0001",
            "f64[]:0.1,123456789012345680,0d0000000000000001,-2.5,-1e-5,100",
            "s8[]:-128,-1,127",
        ],
        &["--format", "dec"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "arg0: 1.5 -0 0.1 1e20 1e-45 nan -nan inf -inf 3.4028235e38 1e-4\n\
         arg1: 0.1 1.2345678901234568e17 5e-324 -2.5 -1e-5 100\n\
         arg2: -128 -1 127\n"
    );
    let o = keep(
        &f,
        [
            "u64[]:0xffffffffffffffff,0",
            "s64[]:-0x8000000000000000,0x7fffffffffffffff",
            "b16[]:0xffff,0x8000",
        ],
        &["--format", "dec"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "arg0: 18446744073709551615 0\n\
         arg1: -9223372036854775808 9223372036854775807\n\
         arg2: 65535 32768\n"
    );
    // hex is the default.
    let o = keep(&f, ["u8[]:255", "s8[]:-1", "f32[]:1"], &[]);
    let hex = "arg0: 0xff\narg1: 0xff\narg2: 0f3f800000\n";
    assert_eq!(o.stdout, hex);
    assert_eq!(
        keep(&f, ["u8[]:255", "s8[]:-1", "f32[]:1"], &["--format", "hex"]).stdout,
        hex
    );

    let call = |args: &[&str]| {
        let mut all = vec!["call", f.as_str()];
        all.extend(args);
        ptxjit(&all, None)
    };
    assert_eq!(call(&["negate", "5", "--format", "dec"]).stdout, "-5\n");
    assert_eq!(call(&["negate", "5"]).stdout, "0xfffffffb\n");
    // f16 bits 0x2e66 are 0.0999755859375, the f16 nearest 0.1; 0x3555 is 0.333251953125
    // (0.3333 rounds to it, 0.333 does not); 0x7bff is 65504, the f16 nearest 65500;
    // 0x0001 is 2^-24 = 5.96e-8, the f16 nearest 6e-8. Each decimal reads back as its bits.
    for (bits, dec) in [
        ("0x2e66", "0.1"),
        ("0x3555", "0.3333"),
        ("0x7bff", "65500"),
        ("0x0001", "6e-8"),
        ("0x8000", "-0"),
        ("0xfc00", "-inf"),
    ] {
        let o = call(&["half", bits, "--format", "dec"]);
        assert_eq!(o.stdout, format!("{dec}\n"), "{bits}: {}", o.stderr);
        let o = call(&["half", "--", dec]);
        assert_eq!(o.stdout, format!("{bits}\n"), "{dec}: {}", o.stderr);
    }
    // Decimal output reads back as input.
    let g = write_tmp("add_dec.ptx", ADD);
    let o = ptxjit(
        &["call", &g, "add2", "7", "-9", "0.1", "--format", "dec"],
        None,
    );
    assert_eq!(o.stdout, "4294967294 0.2\n");
    let o = ptxjit(&["call", &g, "add2", "4294967294", "0", "0.2"], None);
    assert_eq!(o.stdout, "0xfffffffe 0d3fd999999999999a\n");
    let o = ptxjit(
        &["call", &g, "add2", "1", "1", "x", "--format", "oct"],
        None,
    );
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("[possible values: hex, dec]"),
        "{}",
        o.stderr
    );
}

#[test]
fn launch_out_picks_the_buffers_given_back() {
    let f = write_tmp("print_out.ptx", PRINT);
    let buffers = ["u32[]:1,2", "f32[]:1", "s8[]:-1"];
    let o = keep(&f, buffers, &["--out", "1"]);
    assert_eq!(
        (o.code, o.stdout.as_str()),
        (0, "arg1: 0f3f800000\n"),
        "{}",
        o.stderr
    );
    // By index or name, commas or repeats; printed in parameter order, each once.
    for picks in [
        vec!["--out", "c,0"],
        vec!["--out", "c", "--out", "a"],
        vec!["--out", "2,a,2", "--format", "dec"],
    ] {
        let o = keep(&f, buffers, &picks);
        assert_eq!(o.code, 0, "{picks:?}: {}", o.stderr);
        let want = if picks.contains(&"dec") {
            "arg0: 1 2\narg2: -1\n"
        } else {
            "arg0: 0x00000001 0x00000002\narg2: 0xff\n"
        };
        assert_eq!(o.stdout, want, "{picks:?}");
    }
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli/out_picked");
    let _ = std::fs::remove_dir_all(&dir);
    let o = keep(
        &f,
        buffers,
        &["--out", "b", "--out-dir", dir.to_str().unwrap()],
    );
    assert_eq!((o.code, o.stdout.as_str()), (0, ""), "{}", o.stderr);
    let written: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(written, ["arg1.bin"]);
    assert_eq!(
        std::fs::read(dir.join("arg1.bin")).unwrap(),
        1f32.to_le_bytes()
    );
    for (pick, msg) in [
        ("n", "argument 3 is a scalar, not a buffer"),
        ("4", "no parameter 4 (`keep` has 4)"),
        ("x", "`keep` has no parameter named `x`"),
    ] {
        let o = keep(&f, buffers, &["--out", pick]);
        assert_eq!(o.code, 2, "{pick}: {}", o.stderr);
        assert!(o.stderr.starts_with("error: --out"), "{pick}: {}", o.stderr);
        assert!(o.stderr.contains(msg), "{pick}: {}", o.stderr);
    }
}

/// Each malformed module gives exit 2 and an error naming file:line:col, the line and the
/// offending text.
#[test]
fn malformed_input_is_located() {
    let cases: &[(&str, &str, &str)] = &[
        ("syntax", "add.u32 %r1 %r2;", "syntax error"),
        (
            "undefined register",
            "add.u32 %r1, %r1, %q9;",
            "undefined register `%q9`",
        ),
        (
            "undefined label",
            "bra NOWHERE;",
            "undefined name `NOWHERE`",
        ),
        (
            "undefined variable",
            "ld.global.u32 %r1, [missing];",
            "undefined register or variable `missing`",
        ),
        (
            "duplicate label",
            "L1: ret; L1: ret;",
            "duplicate label `L1`",
        ),
        ("type mismatch", "add.u32 %r1, %f1, 1;", "does not fit .u32"),
        (
            "width mismatch",
            "add.u64 %r1, %r1, 1;",
            "does not fit .u64",
        ),
        (
            "unexpected modifier",
            "add.foo.u32 %r1, %r1, 1;",
            "unexpected modifier `.foo`",
        ),
        (
            "forbidden combination",
            "add.sat.u32 %r1, %r1, 1;",
            "applies to add.s32 and sub.s32 only",
        ),
        (
            "missing rounding",
            "cvt.s32.f32 %r1, %f1;",
            "needs an integer rounding",
        ),
        ("missing type", "add %r1, %r1, 1;", "needs a type modifier"),
        (
            "immediate range",
            "mov.u32 %r1, 0x1ffffffffffffffff;",
            "does not fit in 64 bits",
        ),
        (
            "integer immediate for a float",
            "add.f32 %f1, %f1, 1;",
            "cannot be a .f32 operand",
        ),
        (
            "float immediate for int",
            "add.u32 %r1, %r1, 0f3f800000;",
            "cannot be used as .u32",
        ),
        ("operand count", "add.u32 %r1, %r1;", "takes 3 operands"),
        ("read-only const", "st.const.u32 [%rd1], %r1;", "read-only"),
        (
            "f64 ftz",
            "add.ftz.f64 %fd1, %fd1, %fd1;",
            "applies to .f32 only",
        ),
        (
            "mad.f32 without rounding",
            "mad.f32 %f1, %f1, %f1, %f1;",
            "needs a rounding modifier",
        ),
        (
            "fma without rounding",
            "fma.f64 %fd1, %fd1, %fd1, %fd1;",
            "needs a rounding modifier",
        ),
        ("guard not pred", "@%r1 ret;", "is not a .pred register"),
        (
            "satfinite before PTX 8.1",
            "cvt.rn.satfinite.f16x2.f32 %r1, %f1, %f2;",
            "needs PTX ISA .version 8.1",
        ),
    ];
    for (what, line, msg) in cases {
        let text = format!(
            "{HEADER}.visible .func f()\n{{\n    .reg .u32 %r<4>;\n    .reg .f32 %f<4>;\n    .reg .f64 %fd<4>;\n    .reg .u64 %rd<4>;\n    {line}\n    ret;\n}}\n"
        );
        let f = write_tmp(&format!("bad_{}.ptx", what.replace(' ', "_")), &text);
        let o = ptxjit(&["check", &f], None);
        assert_eq!(o.code, 2, "{what}: {}", o.stderr);
        assert!(
            o.stderr.contains(msg),
            "{what}: expected `{msg}` in\n{}",
            o.stderr
        );
        assert!(
            o.stderr.contains(&format!("{f}:10:")),
            "{what}: no location in\n{}",
            o.stderr
        );
        assert!(
            o.stderr.contains(line.trim()),
            "{what}: no source line in\n{}",
            o.stderr
        );
        assert!(o.stderr.contains('^'), "{what}: no caret in\n{}", o.stderr);
    }
}

#[test]
fn hostile_input_never_crashes() {
    let deep = format!("{HEADER}.visible .func f()\n{}", "{".repeat(100_000));
    let cases = [
        ("deep", deep),
        (
            "binary",
            String::from_utf8_lossy(&[0xff, 0xfe, 0, 1, 2]).into_owned(),
        ),
        ("empty", String::new()),
        (
            "huge array",
            format!("{HEADER}.global .u32 x[99999999999];"),
        ),
        (
            "huge range",
            format!("{HEADER}.func f() {{ .reg .u32 %r<99999999>; ret; }}"),
        ),
    ];
    for (what, text) in cases {
        let f = write_tmp(&format!("hostile_{what}.ptx").replace(' ', "_"), &text);
        let o = ptxjit(&["check", &f], None);
        // An empty file too: ptxas wants a `.version` first.
        assert_eq!(o.code, 2, "{what}: {}", o.stderr);
    }
    let o = ptxjit(&["check", "/nonexistent.ptx"], None);
    assert_eq!(o.code, 2);
    let p = write_tmp("nonutf8.ptx", "");
    std::fs::write(&p, [b'.', 0xff, 0xfe]).unwrap();
    let o = ptxjit(&["check", &p], None);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("not UTF-8"), "{}", o.stderr);
}

#[test]
fn corpus_checks_clean() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "ptx") {
            let o = ptxjit(&["check", p.to_str().unwrap()], None);
            assert_eq!(o.code, 0, "{}: {}", p.display(), o.stderr);
            n += 1;
        }
    }
    assert!(n >= 15, "the corpus has at least 15 kernels");
}

#[test]
fn min_nan_on_f64_is_refused_as_ptxas_refuses_it() {
    let f = write_tmp(
        "min_nan.ptx",
        &format!(
            "{HEADER}.visible .func f()\n{{\n    .reg .f64 %d<3>;\n    min.NaN.f64 %d1, %d1, %d2;\n    ret;\n}}\n"
        ),
    );
    let o = ptxjit(&["check", &f], None);
    assert_eq!(o.code, 2);
    assert!(
        o.stderr.contains("unexpected modifier `.NaN`"),
        "{}",
        o.stderr
    );
}

#[test]
fn diff_runs_both_engines_and_verify_checks_them() {
    let f = write_tmp("diff_scale.ptx", KERNEL);
    let o = ptxjit(
        &[
            "diff",
            &f,
            "scale",
            // One block: `scale` indexes by %tid.x, so two blocks would race on the buffer.
            "--grid",
            "1",
            "--block",
            "8",
            "--arg",
            "u32[8]:random",
            "--arg",
            "u32:random",
            "--arg",
            "u32:8",
            "--iterations",
            "30",
            "--seed",
            "3",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "30 runs, 0 mismatches\n");
    // n = 9 over 8 elements: both engines fault the same way, which is agreement.
    let o = ptxjit(
        &[
            "diff",
            &f,
            "scale",
            "--grid",
            "1",
            "--block",
            "9",
            "--arg",
            "u32[8]:random",
            "--arg",
            "u32:2",
            "--arg",
            "u32:9",
            "--iterations",
            "3",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let g = write_tmp("diff_add.ptx", ADD);
    let o = ptxjit(&["diff", &g, "add2", "--iterations", "50"], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(o.stdout, "50 runs, 0 mismatches\n");
    for bad in [
        vec!["diff", &g, "add2", "--grid", "1"],
        vec!["diff", &f, "scale", "--arg", "u32:1"],
        vec!["diff", &g, "add2", "--iterations", "x"],
        vec![
            "launch",
            &f,
            "scale",
            "--grid",
            "1",
            "--block",
            "1",
            "--arg",
            "u32:random",
        ],
    ] {
        let o = ptxjit(&bad, None);
        assert_eq!(o.code, 2, "{bad:?}: {}", o.stderr);
    }
    let mut args = scale_args(&f);
    args.push("--verify");
    let o = ptxjit(&args, None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.stdout,
        "arg0: 0x00000003 0x00000006 0x00000009 0x0000000c\n"
    );
    let o = ptxjit(&["call", &g, "add2", "40", "-2", "1.5", "--verify"], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = ptxjit(
        &[
            "call", &g, "add2", "40", "-2", "1.5", "--verify", "--engine", "interp",
        ],
        None,
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
}

#[test]
fn stats_say_which_kernels_run_in_simd_lanes_and_how_many_threads_did() {
    let saxpy = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/saxpy.ptx");
    let args = [
        "launch",
        saxpy,
        "saxpy",
        "--grid",
        "4",
        "--block",
        "256",
        "--stats",
        "--arg",
        "f32:2",
        "--arg",
        "f32[1000]",
        "--arg",
        "f32[1000]",
        "--arg",
        "u32:1000",
    ];
    let o = ptxjit(&args, None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("kernel saxpy: SIMD lanes, 32 threads at a time"),
        "{}",
        o.stderr
    );
    // Whole groups of 32 below n = 1000 (the group at 992 has threads past n).
    assert!(
        o.stderr.contains("run: 992 of 1024 threads in SIMD lanes"),
        "{}",
        o.stderr
    );
    let mut off = args.to_vec();
    off.push("--no-lanes");
    let o = ptxjit(&off, None);
    assert!(
        o.stderr
            .contains("kernel saxpy: one thread at a time (lanes are off)"),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("run: 0 of 1024 threads"), "{}", o.stderr);
    let f = write_tmp("scale_lanes.ptx", KERNEL);
    let mut interp = scale_args(&f);
    interp.extend(["--engine", "interp", "--no-lanes"]);
    let o = ptxjit(&interp, None);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("--no-lanes and --no-inline apply to the JIT"),
        "{}",
        o.stderr
    );
}

/// `--shared-bytes` sizes the dynamic shared memory of `launch` and `diff`; too much is a usage
/// error.
#[test]
fn shared_bytes_size_dynamic_shared_memory() {
    let text = format!(
        "{HEADER}.extern .shared .align 16 .b8 dyn[];\n.visible .entry k(.param .u64 out)\n{{\n    \
         .reg .b32 %r<4>;\n    .reg .b64 %rd<2>;\n    ld.param.u64 %rd1, [out];\n    \
         mov.u32 %r1, %dynamic_smem_size;\n    st.shared.u32 [dyn+96], %r1;\n    \
         ld.shared.u32 %r2, [dyn+96];\n    st.global.u32 [%rd1], %r2;\n    ret;\n}}\n"
    );
    let f = write_tmp("dynamic_shared.ptx", &text);
    for engine in ["jit", "interp"] {
        let o = ptxjit(
            &[
                "launch",
                &f,
                "k",
                "--grid",
                "2",
                "--block",
                "3",
                "--shared-bytes",
                "100",
                "--engine",
                engine,
                "--arg",
                "u32[1]",
            ],
            None,
        );
        assert_eq!(o.code, 0, "{engine}: {}", o.stderr);
        assert_eq!(o.stdout.trim(), "arg0: 0x00000064", "{engine}");
    }
    // 96 + 4 bytes do not fit in 64 bytes: the store faults.
    let o = ptxjit(
        &[
            "launch",
            &f,
            "k",
            "--grid",
            "1",
            "--block",
            "1",
            "--shared-bytes",
            "64",
            "--arg",
            "u32[1]",
        ],
        None,
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(o.stderr.contains(".shared variable `dyn`"), "{}", o.stderr);
    let o = ptxjit(
        &[
            "diff",
            &f,
            "k",
            "--grid",
            "2",
            "--block",
            "3",
            "--shared-bytes",
            "100",
            "--arg",
            "u32[1]",
            "--iterations",
            "3",
        ],
        None,
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    let o = ptxjit(
        &[
            "launch",
            &f,
            "k",
            "--grid",
            "1",
            "--block",
            "1",
            "--shared-bytes",
            "300000",
            "--arg",
            "u32[1]",
        ],
        None,
    );
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(o.stderr.contains("shared memory"), "{}", o.stderr);
}

/// A function using something not supported yet (an unknown instruction, one without a
/// grammar here, a barrier in a `.func`, a vector register) is refused alone: `check` lists it
/// and exits 0, calling it fails with the located reason (exit 2), the rest runs.
#[test]
fn unsupported_code_refuses_its_function_only() {
    let text = format!(
        "{HEADER}.visible .func (.reg .u32 r) good(.reg .u32 a)\n{{\n    add.u32 r, a, 1;\n    ret;\n}}\n\
         .visible .func (.reg .u32 r) bad(.reg .u32 a)\n{{\n    brkpt;\n    mov.u32 r, a;\n    ret;\n}}\n\
         .visible .func (.reg .u32 r) uses_bad(.reg .u32 a)\n{{\n    call (r), bad, (a);\n    ret;\n}}\n\
         .visible .func sync()\n{{\n    bar.sync 0;\n    ret;\n}}\n\
         .visible .func tex(.reg .u64 t)\n{{\n    .reg .f32 %f<4>;\n    .reg .s32 %i;\n    \
         tex.1d.v4.f32.s32 {{%f0, %f1, %f2, %f3}}, [t, {{%i}}];\n    ret;\n}}\n"
    );
    let f = write_tmp("refused.ptx", &text);
    let o = ptxjit(&["check", &f], None);
    assert_eq!(o.code, 0, "{}", o.stderr);
    // `sync` (a barrier in a .func) runs inlined into kernels: counted, not a refusal.
    assert!(
        o.stdout.contains(
            "ok (5 functions, 3 of them refused, 1 inlined into the kernels that call them)"
        ),
        "{}",
        o.stdout
    );
    assert!(!o.stderr.contains("`sync` cannot run"), "{}", o.stderr);
    for (name, why) in [
        ("bad", "unsupported instruction `brkpt`"),
        ("uses_bad", "calls `bad`, which cannot run"),
        ("tex", "unsupported instruction `tex`"),
    ] {
        assert!(
            o.stderr
                .contains(&format!("note: `{name}` cannot run here")),
            "{name}: {}",
            o.stderr
        );
        assert!(o.stderr.contains(why), "{name}: {why} in\n{}", o.stderr);
    }
    let good = ptxjit(&["call", &f, "good", "41"], None);
    assert_eq!(
        (good.code, good.stdout.trim()),
        (0, "0x0000002a"),
        "{}",
        good.stderr
    );
    for engine in ["jit", "interp"] {
        let bad = ptxjit(&["call", &f, "uses_bad", "1", "--engine", engine], None);
        assert_eq!(bad.code, 2, "{}", bad.stderr);
        assert!(
            bad.stderr.contains("`uses_bad` cannot run"),
            "{}",
            bad.stderr
        );
        assert!(bad.stderr.contains(&format!("{f}:17:")), "{}", bad.stderr);
    }
}

/// A syntax error no longer hides the rest of the module: parsing resumes at the next
/// statement and every error is reported, each located.
#[test]
fn every_syntax_error_is_reported() {
    let text = format!(
        "{HEADER}.visible .func f()\n{{\n    .reg .u32 %r<4>;\n    add.u32 %r1 %r2;\n    \
         mov.u32 %r1, 1;\n    sub.u32 %r1, %r1, , 2;\n    mul.lo.u32 %r1, %r1;\n    ret;\n}}\n"
    );
    let f = write_tmp("syntax_errors.ptx", &text);
    let o = ptxjit(&["check", &f], None);
    assert_eq!(o.code, 2, "{}", o.stderr);
    for line in [7, 9, 10] {
        assert!(
            o.stderr.contains(&format!("{f}:{line}:")),
            "line {line}:\n{}",
            o.stderr
        );
    }
    assert!(o.stderr.contains("takes 3 operands"), "{}", o.stderr);
}
