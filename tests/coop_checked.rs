//! Cooperative kernels in SIMD lanes with memory checks on (`lanes/rounds/checked.rs`): a
//! group tests the bytes its running lanes touch and hands the block to the thread-by-thread
//! schedule where they fail, so a fault names the thread the schedule meets it in, as
//! without lanes. Faults are checked for the parts the rule gives (worked out here) and
//! against the interpreter's report; in-bounds launches for their values and for running in
//! lanes.

mod common;

use common::jit_with;
use ptxjit::diff::without_addresses;
use ptxjit::{Arg, Dim3, Engine, Interpreter, Jit, JitOptions, Module, RunError, Value};

const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

fn checked(ptx: &str) -> Jit {
    jit_with(
        ptx,
        JitOptions {
            verify: true,
            ..JitOptions::default()
        },
    )
}

/// A kernel `k(.param .u64 inp, .param .u64 out, .param .u32 n)` of 64-word shared array
/// `s`: each thread stores its `%tid.x` (`%t`) into `s[t]` and waits at a barrier, then
/// runs `body` (`%rd1` is `inp`, `%rd2` `out`, `%rd3` the address of `s[t]`, `%rd4` its
/// offset `4 * t`, `%n` the scalar).
fn kernel(body: &str) -> String {
    kernel_with(".shared .align 4 .b32 s[64];", body)
}

/// [`kernel`] with another declaration of `s` (at least 64 words).
fn kernel_with(shared: &str, body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 inp, .param .u64 out, .param .u32 n)\n{{\n  \
         .reg .b32 %r<20>;\n  .reg .b32 %t, %n;\n  .reg .b64 %rd<20>;\n  .reg .pred %p<4>;\n  \
         {shared}\n  \
         ld.param.u64 %rd1, [inp];\n  ld.param.u64 %rd2, [out];\n  ld.param.u32 %n, [n];\n  \
         mov.u32 %t, %tid.x;\n  mul.wide.u32 %rd4, %t, 4;\n  mov.u64 %rd5, s;\n  \
         add.s64 %rd3, %rd5, %rd4;\n  st.shared.u32 [%rd3], %t;\n  bar.sync 0;\n{body}\n  \
         ret;\n}}\n"
    )
}

/// Launches `k` on the checked JIT and the interpreter, `grid` blocks of 64 threads, with
/// `inp` of `words` words holding their indices and `out` of 128 zeroed words; both must
/// give the same result. The JIT's outcome and the threads it ran in lanes.
fn launch(ptx: &str, grid: u32, words: usize, n: u32) -> (Result<Vec<u32>, String>, u64) {
    let jit = checked(ptx);
    let interp = Interpreter::new(Module::parse(ptx).expect("test PTX parses"));
    let mut got = Vec::new();
    for e in [&jit as &dyn Engine, &interp] {
        let mut inp: Vec<u8> = (0..words as u32).flat_map(u32::to_le_bytes).collect();
        let mut out = vec![0u8; 128 * 4];
        let mut args = [
            Arg::Buffer(&mut inp),
            Arg::Buffer(&mut out),
            Arg::Scalar(Value::u32(n)),
        ];
        let r = match e.launch("k", Dim3::x(grid), Dim3::x(64), &mut args) {
            Ok(()) => Ok(out
                .chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect()),
            Err(err @ RunError::Fault(..)) => Err(without_addresses(&err.to_string())),
            Err(other) => panic!("not a fault: {other}"),
        };
        got.push(r);
    }
    assert_eq!(got[0], got[1], "the checked JIT against the interpreter");
    (got.swap_remove(0), jit.lane_threads())
}

/// [`launch`] in bounds: the words of `out` are `want`, and every block ran in lanes.
fn in_lanes(ptx: &str, grid: u32, words: usize, n: u32, want: impl Iterator<Item = u32>) {
    let (r, lanes) = launch(ptx, grid, words, n);
    assert_eq!(r.expect("in bounds"), want.collect::<Vec<u32>>());
    assert_eq!(lanes, 64 * grid as u64, "every block ran in lanes");
}

fn fault(r: Result<Vec<u32>, String>, parts: &[&str]) {
    let msg = r.expect_err("a fault");
    for p in parts {
        assert!(msg.contains(p), "`{p}` not in\n{msg}");
    }
}

/// `s[t + n]` after the barrier: in bounds for `n = 0` (each thread reads its own index,
/// every block in lanes); for `n = 1` thread 63 of block 0 reads past `s`, the first thread
/// in the schedule's order to do so (warp 0 reads `s[1..=32]`).
#[test]
fn a_shared_load_past_the_array_names_the_thread() {
    let ptx = kernel(
        "  add.u32 %r1, %t, %n;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd5, %rd6;
  ld.shared.u32 %r2, [%rd7];
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r2;",
    );
    in_lanes(&ptx, 2, 64, 0, (0..64).chain(std::iter::repeat_n(0, 64)));
    let (r, _) = launch(&ptx, 2, 64, 1);
    fault(
        r,
        &[
            "shared load of 4 bytes",
            "out of bounds",
            "`s`",
            "thread (63,0,0)",
            "block (0,0,0)",
        ],
    );
}

/// `s[63 - t]`: the lanes' addresses fall, the first lane's the highest; in bounds, in lanes.
#[test]
fn falling_addresses_are_tested_from_the_last_lane() {
    let ptx = kernel(
        "  sub.u32 %r1, 63, %t;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd7, %rd5, %rd6;
  ld.shared.u32 %r2, [%rd7];
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r2;",
    );
    in_lanes(
        &ptx,
        2,
        64,
        0,
        (0..64).rev().chain(std::iter::repeat_n(0, 64)),
    );
}

/// A store two bytes past each thread's word: misaligned from the first thread on.
#[test]
fn a_misaligned_shared_store_faults_at_the_first_thread() {
    let ptx = kernel("  st.shared.u32 [%rd3+2], %t;");
    let (r, _) = launch(&ptx, 1, 64, 0);
    fault(
        r,
        &["shared store of 4 bytes", "misaligned", "thread (0,0,0)"],
    );
}

/// `if (t < n) out[t] = inp[t + 1]` after the barrier, `inp` of 40 words: with `n = 39`
/// every running lane reads inside `inp` though the lanes from 39 on would not (they do
/// not run, and the test of the range takes the running lanes only: both blocks in lanes);
/// with `n = 40` thread 39 reads one word past it. Likewise where the running lanes are the
/// last ones of a warp.
#[test]
fn only_the_running_lanes_are_tested() {
    let ptx = kernel(
        "  setp.ge.u32 %p1, %t, %n;
  @%p1 bra DONE;
  add.s64 %rd6, %rd1, %rd4;
  ld.global.u32 %r1, [%rd6+4];
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r1;
DONE:",
    );
    in_lanes(&ptx, 2, 40, 39, (1..40).chain(std::iter::repeat_n(0, 89)));
    // The other side: `if (t >= n) out[t] = inp[t - n]`, the lanes below `n` (whose
    // addresses lie before `inp`) waiting.
    let above = kernel(
        "  setp.lt.u32 %p1, %t, %n;
  @%p1 bra DONE;
  sub.s32 %r1, %t, %n;
  mul.wide.s32 %rd6, %r1, 4;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u32 %r2, [%rd7];
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r2;
DONE:",
    );
    in_lanes(
        &above,
        2,
        40,
        24,
        (std::iter::repeat_n(0, 24))
            .chain(0..40)
            .chain(std::iter::repeat_n(0, 64)),
    );
    let (r, _) = launch(&ptx, 2, 40, 40);
    fault(
        r,
        &[
            "global load of 4 bytes",
            "out of bounds",
            "0 bytes past the end",
            "thread (39,0,0)",
            "block (0,0,0)",
        ],
    );
}

/// A load of a variable that may fault is not made by a group: a misaligned vector load of
/// `.const` words behind a branch of the threads below 3, and one of 8 bytes of the 4-byte
/// parameter `n` behind a branch of those below 5, name the first thread past the branch.
#[test]
fn a_variable_load_that_may_fault_names_the_thread_past_the_branch() {
    let misaligned = kernel(
        "  setp.lt.u32 %p1, %t, 3;
  @%p1 bra DONE;
  ld.const.v2.u32 {%r1, %r2}, [cv+4];
DONE:",
    )
    .replace(
        ".visible .entry",
        ".const .align 16 .b32 cv[4];\n.visible .entry",
    );
    let (r, _) = launch(&misaligned, 1, 64, 0);
    fault(
        r,
        &["const load of 8 bytes", "misaligned", "thread (3,0,0)"],
    );
    let past = kernel(
        "  setp.lt.u32 %p1, %t, 5;
  @%p1 bra DONE;
  ld.param.v2.u32 {%r1, %r2}, [n];
DONE:",
    );
    let (r, _) = launch(&past, 1, 64, 0);
    fault(
        r,
        &["param load of 8 bytes", "out of bounds", "thread (5,0,0)"],
    );
}

/// Stores held back to the barrier are tested where they are made: each thread stores
/// `out[t + n]`, `out` of 128 words; for `n = 65`, thread 63 of block 0 writes past it, and
/// nothing is written by the block's other threads' group before the hand-over (the
/// interpreter's buffer, compared in `launch`, has no such word either way).
#[test]
fn a_held_store_past_the_buffer_faults_before_anything_is_written() {
    let ptx = kernel(
        "  add.u32 %r1, %t, %n;
  mul.wide.u32 %rd6, %r1, 4;
  add.s64 %rd8, %rd2, %rd6;
  st.global.u32 [%rd8], %t;
  bar.sync 0;",
    );
    in_lanes(&ptx, 1, 64, 64, std::iter::repeat_n(0, 64).chain(0..64));
    let (r, _) = launch(&ptx, 1, 64, 65);
    fault(
        r,
        &[
            "global store of 4 bytes",
            "out of bounds",
            "thread (63,0,0)",
        ],
    );
}

/// The NVRTC corpus' tree reduction, checked, runs in lanes and sums right (the sum worked
/// out here).
#[test]
fn the_corpus_reduction_runs_in_lanes_checked() {
    let ptx = include_str!("corpus/coop/reduce_sum.ptx");
    let jit = checked(ptx);
    assert_eq!(jit.lanes_report()[0].1, None, "reduce_sum in lanes");
    let n: usize = 512 * 8 + 300;
    let input: Vec<u32> = (0..n as u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut inp: Vec<u8> = input.iter().flat_map(|x| x.to_le_bytes()).collect();
    let blocks = n.div_ceil(512);
    let (mut sums, mut total) = (vec![0u8; 4 * blocks], vec![0u8; 8]);
    jit.launch(
        "reduce_sum",
        Dim3::x(blocks as u32),
        Dim3::x(256),
        &mut [
            Arg::Buffer(&mut inp),
            Arg::Buffer(&mut sums),
            Arg::Buffer(&mut total),
            Arg::Scalar(Value::u32(n as u32)),
        ],
    )
    .expect("reduce_sum runs");
    let want: u64 = (input.chunks(512))
        .map(|c| c.iter().fold(0u32, |a, x| a.wrapping_add(*x)) as u64)
        .sum();
    assert_eq!(u64::from_le_bytes(total.try_into().unwrap()), want);
    assert_eq!(
        jit.lane_threads(),
        256 * blocks as u64,
        "every block in lanes"
    );
}

/// Three loads through one base register (`inp[t]`, `inp[t + 1]`, `inp[t + 2]`: one run,
/// tested as one span): in bounds with 66 words, every block in lanes; with 65 the third
/// load of thread 63 of block 0 reads past `inp`, the first access in the schedule's order
/// to do so (the interpreter, compared in `launch`, names the same line).
#[test]
fn a_run_of_loads_faults_at_the_member_past_the_buffer() {
    let ptx = kernel(
        "  add.s64 %rd7, %rd1, %rd4;
  ld.global.u32 %r1, [%rd7];
  ld.global.u32 %r2, [%rd7+4];
  ld.global.u32 %r3, [%rd7+8];
  add.u32 %r4, %r1, %r2;
  add.u32 %r4, %r4, %r3;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r4;",
    );
    let sums = (0..64).map(|t| 3 * t + 3);
    in_lanes(&ptx, 2, 66, 0, sums.chain(std::iter::repeat_n(0, 64)));
    let (r, _) = launch(&ptx, 2, 65, 0);
    fault(
        r,
        &[
            "global load of 4 bytes",
            "out of bounds",
            "thread (63,0,0)",
            "block (0,0,0)",
            "<input>:23:3",
        ],
    );
}

/// The run above with its third load guarded off in thread 63: the run's span (over every
/// running lane) reaches past `inp` with 65 words, so each load tests its own lanes, and
/// they pass. The block stays in lanes; thread 63 keeps 0 in `%r3`.
#[test]
fn a_run_that_fails_as_a_whole_tests_each_member() {
    let ptx = kernel(
        "  add.s64 %rd7, %rd1, %rd4;
  setp.lt.u32 %p1, %t, 63;
  ld.global.u32 %r1, [%rd7];
  ld.global.u32 %r2, [%rd7+4];
  @%p1 ld.global.u32 %r3, [%rd7+8];
  add.u32 %r4, %r1, %r2;
  add.u32 %r4, %r4, %r3;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r4;",
    );
    let sums = (0..64).map(|t| if t < 63 { 3 * t + 3 } else { 127 });
    in_lanes(&ptx, 2, 65, 0, sums.chain(std::iter::repeat_n(0, 64)));
}

/// A run through falling addresses (`inp[63 - t]` and `inp[64 - t]`): in bounds with 65
/// words; with 64, thread 0's second load reads past `inp`.
#[test]
fn a_run_through_falling_addresses_spans_from_the_last_lane() {
    let ptx = kernel(
        "  sub.u32 %r5, 63, %t;
  mul.wide.u32 %rd6, %r5, 4;
  add.s64 %rd7, %rd1, %rd6;
  ld.global.u32 %r1, [%rd7];
  ld.global.u32 %r2, [%rd7+4];
  add.u32 %r4, %r1, %r2;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r4;",
    );
    let sums = (0..64).map(|t| 127 - 2 * t);
    in_lanes(&ptx, 2, 65, 0, sums.chain(std::iter::repeat_n(0, 64)));
    let (r, _) = launch(&ptx, 2, 64, 0);
    fault(
        r,
        &["global load of 4 bytes", "out of bounds", "thread (0,0,0)"],
    );
}

/// Lane 63 leaves the group at a per-thread branch before a run and joins it again at the
/// label after it, where a second run reads `inp[t]` and `inp[t + 1]`: with 64 words only
/// lane 63 reads past `inp`, in the run after the label, which tests the lanes running there.
#[test]
fn a_run_after_lanes_join_again_tests_them_too() {
    let ptx = kernel(
        "  setp.eq.u32 %p1, %t, 63;
  add.s64 %rd7, %rd1, %rd4;
  add.s64 %rd8, %rd2, %rd4;
  @%p1 bra J;
  ld.global.u32 %r1, [%rd7];
  ld.global.u32 %r2, [%rd7+4];
  add.u32 %r4, %r1, %r2;
  st.global.u32 [%rd8], %r4;
J:
  ld.global.u32 %r5, [%rd7];
  ld.global.u32 %r6, [%rd7+4];
  add.u32 %r5, %r5, %r6;
  st.global.u32 [%rd8+256], %r5;",
    );
    let first = (0..64).map(|t| if t < 63 { 2 * t + 1 } else { 0 });
    in_lanes(&ptx, 2, 65, 0, first.chain((0..64).map(|t| 2 * t + 1)));
    let (r, _) = launch(&ptx, 2, 64, 0);
    fault(
        r,
        &["global load of 4 bytes", "out of bounds", "thread (63,0,0)"],
    );
}

/// A run through a uniform base (`inp[n]`, `inp[n + 1]` in every lane): in bounds for
/// n = 62 of 64 words; for n = 63 the first thread reads past `inp`.
#[test]
fn a_run_through_a_uniform_base() {
    let ptx = kernel(
        "  mul.wide.u32 %rd9, %n, 4;
  add.s64 %rd7, %rd1, %rd9;
  ld.global.u32 %r1, [%rd7];
  ld.global.u32 %r2, [%rd7+4];
  add.u32 %r4, %r1, %r2;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r4;",
    );
    in_lanes(
        &ptx,
        2,
        64,
        62,
        std::iter::repeat_n(125, 64).chain(std::iter::repeat_n(0, 64)),
    );
    let (r, _) = launch(&ptx, 2, 64, 63);
    fault(
        r,
        &["global load of 4 bytes", "out of bounds", "thread (0,0,0)"],
    );
}

/// A shared run of 1-, 2- and 4-byte loads at negative and positive offsets from `s + 4t +
/// 4` (thread t stored t at `s + 4t`): in bounds with 260 bytes of `s`; with 259, thread
/// 63's byte load at `+3` is the first access past `s`; with the base 2 bytes further, the
/// first thread's first load is misaligned.
#[test]
fn a_shared_run_of_mixed_sizes() {
    let body = "  add.s64 %rd7, %rd3, 4;
  ld.shared.u32 %r1, [%rd7+-4];
  ld.shared.u16 %r2, [%rd7+-2];
  ld.shared.u8 %r3, [%rd7+3];
  ld.shared.u32 %r4, [%rd7];
  add.u32 %r1, %r1, %r2;
  add.u32 %r1, %r1, %r3;
  add.u32 %r1, %r1, %r4;
  add.s64 %rd8, %rd2, %rd4;
  st.global.u32 [%rd8], %r1;";
    // t + (t + 1): the u16 and the u8 read the zero high bytes of small words; past thread
    // 63's word the window is zero.
    let sums = (0..64).map(|t| if t < 63 { 2 * t + 1 } else { 63 });
    let ptx = kernel_with(".shared .align 4 .b8 s[260];", body);
    in_lanes(&ptx, 2, 64, 0, sums.chain(std::iter::repeat_n(0, 64)));
    let short = kernel_with(".shared .align 4 .b8 s[259];", body);
    let (r, _) = launch(&short, 2, 64, 0);
    fault(
        r,
        &["shared load of 1 byte", "out of bounds", "thread (63,0,0)"],
    );
    let shifted = kernel_with(
        ".shared .align 4 .b8 s[260];",
        &body.replace("add.s64 %rd7, %rd3, 4;", "add.s64 %rd7, %rd3, 6;"),
    );
    let (r, _) = launch(&shifted, 2, 64, 0);
    fault(
        r,
        &["shared load of 4 bytes", "misaligned", "thread (0,0,0)"],
    );
}
