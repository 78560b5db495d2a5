//! Cooperative kernels a warp at a time in SIMD lanes (`lower/lanes/rounds.rs`), unchecked and checked:
//! results against values worked out here, and the block schedule's order kept where the
//! lock step of a warp would differ from it (the block is handed to the thread-by-thread
//! rounds: a racy kernel gets the schedule's defined result, which the interpreter also
//! gives).

mod common;

use common::jit_with;
use ptxjit::{Arg, Dim3, Engine, Interpreter, JitOptions, LaunchConfig, Module, Value};

const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";
/// The start of most kernels here: `%rd0` the output, `%t` the thread, `%rd3` the address of
/// its word of the shared array `s` (`%rd1` its offset, `%rd2` the array).
const OWN_WORD: &str = "  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mul.wide.u32 %rd1, %t, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
";

fn unchecked(ptx: &str) -> ptxjit::Jit {
    jit_with(
        ptx,
        JitOptions {
            checked: false,
            verify: true,
            ..JitOptions::default()
        },
    )
}

/// Runs `kernel` (one `.u64 out` parameter) on the unchecked JIT and the interpreter;
/// returns the JIT's words (which must equal the interpreter's) and the threads it ran in
/// lanes.
fn run(ptx: &str, kernel: &str, grid: u32, block: Dim3, words: usize) -> (Vec<u32>, u64) {
    let (mut bufs, lanes) = run_args(ptx, kernel, grid, block, &[words], &[]);
    (bufs.swap_remove(0), lanes)
}

/// [`run`] for a kernel whose parameters are buffers of `buffers` words each (zeroed), then
/// `.u32` scalars; returns the JIT's buffers.
fn run_args(
    ptx: &str,
    kernel: &str,
    grid: u32,
    block: Dim3,
    buffers: &[usize],
    scalars: &[u32],
) -> (Vec<Vec<u32>>, u64) {
    let jit = unchecked(ptx);
    let checked = jit_with(
        ptx,
        JitOptions {
            verify: true,
            ..JitOptions::default()
        },
    );
    let interp = Interpreter::new(Module::parse(ptx).expect("test PTX parses"));
    let mut outs = Vec::new();
    for e in [&jit as &dyn Engine, &interp, &checked] {
        let mut bufs: Vec<Vec<u8>> = buffers.iter().map(|w| vec![0u8; w * 4]).collect();
        let config = LaunchConfig {
            grid: Dim3::x(grid),
            block,
            shared_bytes: 0,
        };
        let mut args: Vec<Arg> = bufs.iter_mut().map(|b| Arg::Buffer(b)).collect();
        args.extend(scalars.iter().map(|v| Arg::Scalar(Value::u32(*v))));
        e.launch_with(kernel, config, &mut args)
            .unwrap_or_else(|err| panic!("{kernel}: {err}"));
        let words = |b: &Vec<u8>| -> Vec<u32> {
            (b.chunks(4))
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect()
        };
        outs.push(bufs.iter().map(words).collect::<Vec<_>>());
    }
    assert_eq!(
        outs[0], outs[1],
        "{kernel}: the JIT against the interpreter"
    );
    assert_eq!(
        outs[2], outs[1],
        "{kernel}: checked against the interpreter"
    );
    // Every access is in bounds: checked, the same blocks run in lanes.
    assert_eq!(
        checked.lane_threads(),
        jit.lane_threads(),
        "{kernel}: threads in lanes, checked"
    );
    (outs.swap_remove(0), jit.lane_threads())
}

/// A tree reduction's rounds over the shared words at `%rd2` (`%rd3` the thread's own, at
/// index `%r3`, `%t` its `%tid.x`), from `%h` words apart, halving to 1; `%c` counts them.
const HALVING: &str = "LOOP:
  setp.ge.u32 %p1, %t, %h;
  @%p1 bra SKIP;
  add.u32 %r5, %r3, %h;
  mul.wide.u32 %rd4, %r5, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r6, [%rd3];
  ld.shared.u32 %r7, [%rd5];
  add.u32 %r6, %r6, %r7;
  st.shared.u32 [%rd3], %r6;
SKIP:
  bar.sync 0;
  add.u32 %c, %c, 1;
  shr.u32 %h, %h, 1;
  setp.ne.u32 %p2, %h, 0;
  @%p2 bra LOOP;
";

/// `out[t]` = the word thread t-1 stored, read without a barrier between: in the
/// schedule's order (thread after thread) each thread sees its predecessor's store; in lock
/// step no lane would. The group hands the block over and the result is the schedule's.
#[test]
fn a_racy_read_gets_the_schedules_order() {
    let ptx = format!(
        "{HEAD}.visible .entry racy(.param .u64 out) {{
  .reg .b32 %r<4>; .reg .b64 %rd<6>;
  .shared .align 4 .b32 s[65];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd1, %r0, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  add.u32 %r1, %r0, 100;
  st.shared.u32 [%rd3+4], %r1;
  ld.shared.u32 %r2, [%rd3];
  bar.sync 0;
  add.s64 %rd4, %rd0, %rd1;
  st.global.u32 [%rd4], %r2;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "racy", 1, Dim3::x(64), 64);
    let want: Vec<u32> = (0..64).map(|t| if t == 0 { 0 } else { t + 99 }).collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 0, "the block went to the thread-by-thread rounds");
}

/// A shared-memory reversal over two barriers, with the upper threads of the second warp
/// exited first and a per-thread branch around a store: in lanes, and as worked out here.
#[test]
fn exits_and_per_thread_branches_in_lanes() {
    let ptx = format!(
        "{HEAD}.visible .entry rev(.param .u64 out) {{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[64];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  setp.ge.u32 %p0, %r0, 40;
  @%p0 bra DONE;
  mul.wide.u32 %rd1, %r0, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  mul.lo.u32 %r1, %r0, 3;
  st.shared.u32 [%rd3], %r1;
  bar.sync 0;
  sub.u32 %r2, 63, %r0;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r3, [%rd5];
  setp.lt.u32 %p1, %r0, 10;
  @%p1 bra SKIP;
  add.u32 %r3, %r3, 1000;
SKIP:
  bar.sync 0;
  add.s64 %rd6, %rd0, %rd1;
  st.global.u32 [%rd6], %r3;
DONE:
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "rev", 2, Dim3::x(64), 64);
    let want: Vec<u32> = (0..64u32)
        .map(|t| match t {
            40.. => 0,
            _ => {
                let read = if 63 - t < 40 { 3 * (63 - t) } else { 0 };
                if t < 10 { read } else { read + 1000 }
            }
        })
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 2 * 64, "both blocks ran in lanes");
}

/// Warps waiting at barriers of different ids: the block cannot go on, a fault as the
/// thread-by-thread rounds give it; blocks whose rows are not whole groups (of 32 or 16)
/// run thread by thread.
#[test]
fn different_barriers_fault_and_odd_rows_run_thread_by_thread() {
    let ptx = format!(
        "{HEAD}.visible .entry split(.param .u64 out) {{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  setp.lt.u32 %p0, %r0, 32;
  @%p0 bra FIRST;
  bar.sync 2;
  bra.uni END;
FIRST:
  bar.sync 1;
END:
  mul.wide.u32 %rd1, %r0, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %r0;
  ret;
}}"
    );
    let jit = unchecked(&ptx);
    let mut out = vec![0u8; 64 * 4];
    let err = jit
        .launch(
            "split",
            Dim3::x(1),
            Dim3::x(64),
            &mut [Arg::Buffer(&mut out)],
        )
        .expect_err("warps at different barriers are stuck");
    let msg = err.to_string();
    assert!(msg.contains("cannot go on"), "{msg}");
    assert!(
        msg.contains("32 at barrier 1") && msg.contains("32 at barrier 2"),
        "{msg}"
    );
    // 40 threads a row (not whole groups of 16): the rounds run thread by thread (and the
    // block is stuck too).
    let (out_jit, out_interp) = {
        let interp = Interpreter::new(Module::parse(&ptx).unwrap());
        let mut a = vec![0u8; 40 * 4];
        let mut b = vec![0u8; 40 * 4];
        let e1 = jit
            .launch("split", Dim3::x(1), Dim3::x(40), &mut [Arg::Buffer(&mut a)])
            .unwrap_err()
            .to_string();
        let e2 = interp
            .launch("split", Dim3::x(1), Dim3::x(40), &mut [Arg::Buffer(&mut b)])
            .unwrap_err()
            .to_string();
        (e1, e2)
    };
    assert_eq!(out_jit, out_interp);
    assert_eq!(jit.lane_threads(), 0);
}

/// Rows of 16 threads (a 16×4 block, as tiled kernels have) run in groups of 16: each thread
/// writes `100 ty + tx` to a shared tile and, after the barrier, reads the element mirrored
/// in both dimensions.
#[test]
fn rows_of_sixteen_run_in_groups_of_sixteen() {
    let ptx = format!(
        "{HEAD}.visible .entry mirror(.param .u64 out) {{
  .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[64];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r1, %tid.y;
  mad.lo.u32 %r2, %r1, 16, %r0;
  mad.lo.u32 %r3, %r1, 100, %r0;
  mul.wide.u32 %rd1, %r2, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  st.shared.u32 [%rd3], %r3;
  bar.sync 0;
  sub.u32 %r4, 63, %r2;
  mul.wide.u32 %rd4, %r4, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r5, [%rd5];
  mov.u32 %r6, %ctaid.x;
  mad.lo.u32 %r7, %r6, 64, %r2;
  mul.wide.u32 %rd6, %r7, 4;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r5;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "mirror", 3, Dim3::new(16, 4, 1), 3 * 64);
    let want: Vec<u32> = (0..3 * 64u32)
        .map(|i| {
            // Thread (tx, ty) reads what thread (15 - tx, 3 - ty) wrote.
            let t = i % 64;
            let (tx, ty) = (15 - t % 16, 3 - t / 16);
            100 * ty + tx
        })
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 3 * 64, "every block ran in groups");
}

/// A hand-over in a later round, by a warp other than the last: the warps after it have not
/// run that round yet and must go on from the barrier they passed, not wait at it again.
/// Round 1 stores `s[t + 1] = t + 1` (warp 1 also makes a racy read that hands the block
/// over); round 2 reads `s[128 - t]`, which warps 2 and 3 stored in round 1 for warp 0.
#[test]
fn a_hand_over_in_a_later_round_keeps_the_warps_after_it_in_step() {
    let ptx = format!(
        "{HEAD}.visible .entry later(.param .u64 out) {{
  .reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[129];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd1, %r0, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  bar.sync 0;
  add.u32 %r1, %r0, 1;
  st.shared.u32 [%rd3+4], %r1;
  mov.u32 %r5, 0;
  shr.u32 %r4, %r0, 5;
  setp.ne.u32 %p0, %r4, 1;
  @%p0 bra SKIP;
  ld.shared.u32 %r5, [%rd3];
SKIP:
  bar.sync 0;
  sub.u32 %r2, 128, %r0;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r3, [%rd5];
  add.u32 %r3, %r3, %r5;
  add.s64 %rd6, %rd0, %rd1;
  st.global.u32 [%rd6], %r3;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "later", 1, Dim3::x(128), 128);
    assert_eq!(lanes, 0, "the block went to the thread-by-thread rounds");
    // Thread t of warp 1 also read s[t], which thread t - 1 had stored (t - 1 + 1 = t),
    // except its first, whose predecessor is in warp 0 and stored before it too.
    let want: Vec<u32> = (0..128u32)
        .map(|t| {
            let other = 128 - t;
            if t / 32 == 1 { other + t } else { other }
        })
        .collect();
    assert_eq!(out, want);
}

/// Per-thread branches on comparisons of `%tid.x` sequences with uniform values, alone and
/// or-ed or and-ed with a uniform predicate: taken by every lane of a warp, by none, or by
/// some (and a sequence that wraps), against the bits worked out here for each thread.
#[test]
fn branches_on_sequence_comparisons() {
    let ptx = format!(
        "{HEAD}.visible .entry seqs(.param .u64 out) {{
  .reg .pred %p<8>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r4, %ctaid.x;
  mov.u32 %r9, 0;
  setp.ge.u32 %p0, %r0, 64;
  @%p0 bra L1;
  or.b32 %r9, %r9, 1;
L1:
  setp.lt.s32 %p1, %r0, 40;
  @!%p1 bra L2;
  or.b32 %r9, %r9, 2;
L2:
  sub.u32 %r2, %r0, 16;
  setp.lt.u32 %p2, %r2, 50;
  @%p2 bra L3;
  or.b32 %r9, %r9, 4;
L3:
  setp.eq.u32 %p3, %r4, 1;
  setp.gt.u32 %p4, %r0, 100;
  or.pred %p5, %p4, %p3;
  @%p5 bra L4;
  or.b32 %r9, %r9, 8;
L4:
  sub.u32 %r5, 200, %r0;
  setp.ge.u32 %p6, %r5, 150;
  and.pred %p7, %p3, %p6;
  @%p7 bra L5;
  or.b32 %r9, %r9, 16;
L5:
  setp.ne.u32 %p0, %r0, 70;
  @%p0 bra L6;
  or.b32 %r9, %r9, 32;
L6:
  mul.lo.u32 %r7, %r0, 3;
  setp.eq.u32 %p1, %r7, 33;
  @!%p1 bra L7;
  or.b32 %r9, %r9, 64;
L7:
  setp.eq.u32 %p2, %r7, 34;
  @%p2 bra L8;
  or.b32 %r9, %r9, 128;
L8:
  bar.sync 0;
  mad.lo.u32 %r6, %r4, 128, %r0;
  mul.wide.u32 %rd1, %r6, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %r9;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "seqs", 2, Dim3::x(128), 256);
    let want: Vec<u32> = (0..256u32)
        .map(|i| {
            let (b, t) = (i / 128, i % 128);
            let bit = |on: bool, k: u32| if on { 1 << k } else { 0 };
            bit(t < 64, 0)
                | bit(t < 40, 1)
                | bit(!(16..66).contains(&t), 2)
                | bit(!(t > 100 || b == 1), 3)
                | bit(!(b == 1 && t <= 50), 4)
                | bit(t == 70, 5)
                | bit(3 * t == 33, 6)
                | bit(true, 7)
        })
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 256, "both blocks ran in lanes");
}

/// A load and a store through one register that moves between them: each thread reads its
/// word and writes the next, so in the threads' order each reads what the one before it
/// wrote (`s[k] = k` in the end), where a warp in lock step would read the old words
/// (`10 t + 1`). The gate must test the two accesses as two addresses.
#[test]
fn a_register_moved_between_a_load_and_a_store_keeps_the_threads_order() {
    let ptx = format!(
        "{HEAD}.visible .entry chain(.param .u64 out) {{
  .shared .align 4 .b32 s[65];
  .reg .b32 %t, %r<4>; .reg .b64 %rd<6>;
{OWN_WORD}  mul.lo.u32 %r0, %t, 10;
  st.shared.u32 [%rd3], %r0;
  bar.sync 0;
  ld.shared.u32 %r1, [%rd3];
  add.s64 %rd3, %rd3, 4;
  add.u32 %r1, %r1, 1;
  st.shared.u32 [%rd3], %r1;
  bar.sync 0;
  sub.s64 %rd3, %rd3, 4;
  ld.shared.u32 %r2, [%rd3];
  add.s64 %rd4, %rd0, %rd1;
  st.global.u32 [%rd4], %r2;
  ret;
}}"
    );
    let (out, _) = run(&ptx, "chain", 1, Dim3::x(64), 64);
    let want: Vec<u32> = (0..64).collect();
    assert_eq!(out, want);
}

/// Every thread adds 1 to one shared word and 2 to another (a load and a store of one
/// address, every lane at it, named by the variable and through a register computed from
/// `%ntid.x`): in the
/// threads' order each reads what the one before stored, so the words end at the block's
/// size and twice it, where a warp in lock step would add once.
#[test]
fn every_thread_adding_to_one_word_keeps_the_threads_order() {
    let ptx = format!(
        "{HEAD}.visible .entry count(.param .u64 out) {{
  .shared .align 4 .b32 c;
  .shared .align 4 .b32 d;
  .reg .pred %p; .reg .b32 %t, %r<3>; .reg .b64 %rd<3>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mov.u32 %r2, %ntid.x;
  shr.u32 %r2, %r2, 7;
  mul.wide.u32 %rd2, %r2, 4;
  mov.u64 %rd1, d;
  add.s64 %rd1, %rd1, %rd2;
  bar.sync 0;
  ld.shared.u32 %r0, [%rd1];
  add.u32 %r1, %r0, 2;
  st.shared.u32 [%rd1], %r1;
  bar.sync 0;
  ld.shared.u32 %r0, [c];
  add.u32 %r1, %r0, 1;
  st.shared.u32 [c], %r1;
  bar.sync 0;
  setp.ne.u32 %p, %t, 0;
  @%p bra END;
  ld.shared.u32 %r0, [c];
  st.global.u32 [%rd0], %r0;
  ld.shared.u32 %r0, [%rd1];
  st.global.u32 [%rd0+4], %r0;
END:
  ret;
}}"
    );
    let (out, _) = run(&ptx, "count", 1, Dim3::x(64), 2);
    assert_eq!(out, [64, 128]);
}

/// Comparisons of sequences that split warps, whose lanes the group function finds from
/// the first lane's distance to the bound (`Lanes::seq_order_bits`): strides of 4 and 2,
/// a falling sequence compared signed, the sequence on the right, a bound or-ed and and-ed
/// with a uniform predicate; and where that cannot be, from vectors of the lanes: a
/// falling sequence that wraps below 0 unsigned, a stride of 3.
#[test]
fn lanes_split_by_bounds_on_rising_and_falling_sequences() {
    let ptx = format!(
        "{HEAD}.visible .entry bounds(.param .u64 out) {{
  .reg .pred %p<10>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r6, %ctaid.x;
  setp.eq.u32 %p6, %r6, 1;
  mov.u32 %r9, 0;
  shl.b32 %r1, %r0, 2;
  setp.le.u32 %p0, %r1, 150;
  @%p0 bra A;
  or.b32 %r9, %r9, 1;
A:
  sub.u32 %r2, 50, %r0;
  setp.gt.s32 %p1, %r2, -7;
  @%p1 bra B;
  or.b32 %r9, %r9, 2;
B:
  setp.le.s32 %p2, %r2, 10;
  @!%p2 bra C;
  or.b32 %r9, %r9, 4;
C:
  mad.lo.u32 %r3, %r0, 2, 5;
  setp.ge.u32 %p3, %r3, 200;
  @%p3 bra D;
  or.b32 %r9, %r9, 8;
D:
  mov.u32 %r4, %ntid.x;
  setp.lt.u32 %p4, %r4, %r3;
  @%p4 bra E;
  or.b32 %r9, %r9, 16;
E:
  sub.u32 %r5, 20, %r0;
  setp.lt.u32 %p5, %r5, 10;
  @%p5 bra F;
  or.b32 %r9, %r9, 32;
F:
  setp.lt.s32 %p7, %r2, 0;
  or.pred %p7, %p7, %p6;
  @%p7 bra G;
  or.b32 %r9, %r9, 64;
G:
  setp.ge.u32 %p8, %r1, 100;
  and.pred %p8, %p8, %p6;
  @%p8 bra H;
  or.b32 %r9, %r9, 128;
H:
  mul.lo.u32 %r7, %r0, 3;
  setp.gt.u32 %p9, %r7, 100;
  @%p9 bra I;
  or.b32 %r9, %r9, 256;
I:
  bar.sync 0;
  mad.lo.u32 %r8, %r6, 128, %r0;
  mul.wide.u32 %rd1, %r8, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %r9;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "bounds", 2, Dim3::x(128), 256);
    let want: Vec<u32> = (0..256u32)
        .map(|i| {
            let (block_one, t) = (i / 128 == 1, i % 128);
            // Bit k where branch k is not taken (where it is, for the `@!` one).
            let bit = |on: bool, k: u32| if on { 1 << k } else { 0 };
            let falling = 50u32.wrapping_sub(t) as i32;
            bit(4 * t > 150, 0)
                | bit(falling <= -7, 1)
                | bit(falling <= 10, 2)
                | bit(2 * t + 5 < 200, 3)
                | bit(128 >= 2 * t + 5, 4)
                | bit(20u32.wrapping_sub(t) >= 10, 5)
                | bit(!(falling < 0 || block_one), 6)
                | bit(!(4 * t >= 100 && block_one), 7)
                | bit(3 * t <= 100, 8)
        })
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 256, "both blocks ran in lanes");
}

/// The block's rounds in one call of the group function: the last warp exits before the
/// first barrier while the others go round a loop of two barriers three times, reading
/// `s[95 - t]` and storing `s[t] = r + 1` (so `98 - t` in the end; exited threads write
/// nothing).
#[test]
fn warps_go_round_a_loop_after_one_exited() {
    let ptx = format!(
        "{HEAD}.visible .entry rounds(.param .u64 out) {{
  .reg .pred %p<2>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[96];
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  setp.ge.u32 %p0, %r0, 96;
  @%p0 exit;
  mul.wide.u32 %rd1, %r0, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  st.shared.u32 [%rd3], %r0;
  sub.u32 %r1, 95, %r0;
  mul.wide.u32 %rd4, %r1, 4;
  add.s64 %rd5, %rd2, %rd4;
  mov.u32 %r7, 0;
  bar.sync 0;
LOOP:
  ld.shared.u32 %r3, [%rd5];
  bar.sync 0;
  add.u32 %r3, %r3, 1;
  st.shared.u32 [%rd3], %r3;
  bar.sync 0;
  add.u32 %r7, %r7, 1;
  setp.lt.u32 %p1, %r7, 3;
  @%p1 bra LOOP;
  mov.u32 %r4, %ctaid.x;
  mad.lo.u32 %r5, %r4, 128, %r0;
  mul.wide.u32 %rd6, %r5, 4;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r3;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "rounds", 2, Dim3::x(128), 256);
    let want: Vec<u32> = (0..256u32)
        .map(|i| match i % 128 {
            t @ 0..96 => 98 - t,
            _ => 0,
        })
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 256, "both blocks ran in lanes");
}

/// Control flow inside per-thread branches, as compilers write it: an if/else (the `if`
/// side ends in `bra.uni` past the `else`), overlapping branches whose second takes every
/// lane left, and an exit (or a branch to the end) inside a branch before a barrier.
/// Values worked out here for each thread.
#[test]
fn if_else_and_exits_inside_per_thread_branches() {
    // Thread (x, y) decides on x and writes word y × %ntid.x + x.
    let head = "  .reg .pred %p, %q; .reg .b32 %r<6>; .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  mov.u32 %r3, %tid.y;
  mov.u32 %r5, %ntid.x;
  mul.lo.u32 %r3, %r3, %r5;
  add.u32 %r4, %r3, %r1;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd3, %rd1, %rd2;";
    let kernel =
        |body: &str| format!("{HEAD}.visible .entry k(.param .u64 out) {{\n{head}\n{body}\n}}");
    // Each body, with what thread x of a row writes.
    type Case = (&'static str, fn(u32) -> u32);
    let cases: [Case; 5] = [
        // if (t odd) out = 1; else out = 2;
        (
            "  and.b32 %r2, %r1, 1;
  setp.eq.u32 %p, %r2, 0;
  @%p bra ELSE;
  st.global.u32 [%rd3], 1;
  bra.uni END;
ELSE:
  st.global.u32 [%rd3], 2;
END:
  bar.sync 0;
  ret;",
            |t| if t % 2 == 1 { 1 } else { 2 },
        ),
        // Lanes with bit 3 clear wait at T1, all the others at T2: T1's code still runs.
        (
            "  and.b32 %r2, %r1, 8;
  setp.eq.u32 %p, %r2, 0;
  setp.ge.u32 %q, %r1, 0;
  @%p bra T1;
  @%q bra T2;
  st.global.u32 [%rd3], 5;
T1:
  st.global.u32 [%rd3], 1;
T2:
  bar.sync 0;
  ret;",
            |t| if t & 8 == 0 { 1 } else { 0 },
        ),
        // Threads 5 and up store 7 and exit inside the branch; the store is kept.
        (
            "  setp.lt.u32 %p, %r1, 5;
  @%p bra L;
  st.global.u32 [%rd3], 7;
  exit;
L:
  bar.sync 0;
  ret;",
            |t| if t < 5 { 0 } else { 7 },
        ),
        // Threads 5 and up exit inside the branch after a barrier; they stay out.
        (
            "  bar.sync 0;
  setp.lt.u32 %p, %r1, 5;
  @%p bra L;
  exit;
L:
  bar.sync 0;
  st.global.u32 [%rd3], 9;
  ret;",
            |t| if t < 5 { 9 } else { 0 },
        ),
        // The same with a branch to the end (as nvcc writes `return;`).
        (
            "  bar.sync 0;
  setp.lt.u32 %p, %r1, 5;
  @%p bra L;
  bra.uni END;
L:
  bar.sync 0;
  st.global.u32 [%rd3], 9;
END:
  ret;",
            |t| if t < 5 { 9 } else { 0 },
        ),
    ];
    for (body, want) in cases {
        let ptx = kernel(body);
        for block in [Dim3::x(32), Dim3::x(64), Dim3::new(16, 2, 1)] {
            let n = block.count() as usize;
            let (out, lanes) = run(&ptx, "k", 1, block, n);
            let expected: Vec<u32> = (0..n).map(|k| want(k as u32 % block.x)).collect();
            assert_eq!(out, expected, "{body}\nblock {block:?}");
            assert_eq!(lanes, n as u64, "in lanes: {body}");
        }
    }
}

/// Each thread stores the four words of its slot of an array of slots: the stores of one
/// word and the next, a slot apart from lane to lane, never meet, so the block stays in
/// lanes (it handed over before the gate saw that).
#[test]
fn stores_into_slots_stay_in_lanes() {
    let ptx = format!(
        "{HEAD}.visible .entry slots(.param .u64 out) {{
  .reg .b32 %r<4>; .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mul.wide.u32 %rd1, %r0, 16;
  add.s64 %rd2, %rd0, %rd1;
  bar.sync 0;
  st.global.u32 [%rd2], %r0;
  add.u32 %r1, %r0, 1000;
  st.global.u32 [%rd2+4], %r1;
  add.u32 %r2, %r0, 2000;
  st.global.u32 [%rd2+8], %r2;
  st.global.u32 [%rd2+12], 7;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "slots", 1, Dim3::x(64), 4 * 64);
    let want: Vec<u32> = (0..64u32)
        .flat_map(|t| [t, t + 1000, t + 2000, 7])
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// `shfl.sync` by the manual's pseudocode (PTX ISA, Data Movement and Conversion
/// Instructions: shfl.sync) for lane `lane` of a warp whose lanes hold `a` (None: the lane
/// exited, which reads as 0 here): the result and the predicate.
fn shfl_manual(mode: &str, lane: u32, b: u32, c: u32, a: &[Option<u32>]) -> (u32, bool) {
    let (lane, bval, cval, segmask) = (
        lane as i64,
        (b & 31) as i64,
        (c & 31) as i64,
        ((c >> 8) & 31) as i64,
    );
    let max_lane = (lane & segmask) | (cval & !segmask);
    let min_lane = lane & segmask;
    let (j, pval) = match mode {
        "up" => (lane - bval, lane - bval >= max_lane),
        "down" => (lane + bval, lane + bval <= max_lane),
        "bfly" => (lane ^ bval, (lane ^ bval) <= max_lane),
        _ => {
            let j = min_lane | (bval & !segmask);
            (j, j <= max_lane)
        }
    };
    let j = if pval { j } else { lane };
    (a[j as usize].unwrap_or(0), pval)
}

/// Shuffles of every mode in the group functions (lane and clamp operands constants in
/// registers written once, immediates, or per-thread), after some threads exited: results
/// and predicates as the manual's pseudocode gives them, exited lanes reading 0.
#[test]
fn shuffles_in_lanes_follow_the_manual() {
    // (mode, b as PTX, b of thread t, c)
    type Case = (&'static str, &'static str, fn(u32) -> u32, u32);
    let cases: [Case; 6] = [
        ("down", "%k0", |_| 16, 31),
        ("up", "3", |_| 3, 0),
        ("bfly", "5", |_| 5, 0x181f),
        ("idx", "9", |_| 9, 0x181f),
        ("down", "%b", |t| t & 7, 0x101f),
        ("idx", "%k1", |_| 31, 31),
    ];
    let mut body = String::new();
    for (j, (mode, b, _, c)) in cases.iter().enumerate() {
        body += &format!(
            "  shfl.sync.{mode}.b32 %d|%q, %v, {b}, {c}, -1;\n  \
             selp.u32 %e, 1, 0, %q;\n  \
             st.global.u32 [%rd2+{}], %d;\n  st.global.u32 [%rd2+{}], %e;\n",
            8 * j,
            8 * j + 4
        );
    }
    let ptx = format!(
        "{HEAD}.visible .entry shuffles(.param .u64 out) {{
  .reg .pred %p, %q; .reg .b32 %t, %v, %b, %d, %e, %k<2>; .reg .b64 %rd<3>;
  mov.u32 %k0, 16;
  mov.u32 %k1, 31;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mul.wide.u32 %rd1, %t, 48;
  add.s64 %rd2, %rd0, %rd1;
  and.b32 %e, %t, 15;
  setp.eq.u32 %p, %e, 13;
  @%p exit;
  mul.lo.u32 %v, %t, 7919;
  add.u32 %v, %v, 3;
  and.b32 %b, %t, 7;
{body}  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "shuffles", 1, Dim3::x(64), 64 * 12);
    let alive = |t: u32| t & 15 != 13;
    for t in 0..64u32 {
        let warp: Vec<Option<u32>> = (0..32)
            .map(|l| {
                let u = t / 32 * 32 + l;
                alive(u).then(|| u.wrapping_mul(7919).wrapping_add(3))
            })
            .collect();
        for (j, (mode, _, b, c)) in cases.iter().enumerate() {
            let want = if alive(t) {
                let (d, p) = shfl_manual(mode, t % 32, b(t), *c, &warp);
                [d, p as u32]
            } else {
                [0, 0]
            };
            let at = (12 * t) as usize + 2 * j;
            assert_eq!(out[at..at + 2], want, "thread {t}, shfl.{mode} (case {j})");
        }
    }
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// A warp hands the block over in a round that runs only the warps standing at a shuffle
/// (each lane stores a word and reads the one the lane before it stored, which the lock
/// step would read too early): the warps after it go on with the shuffle's results, as the
/// schedule has them.
#[test]
fn a_hand_over_after_a_shuffle_keeps_its_results() {
    let ptx = format!(
        "{HEAD}.visible .entry after(.param .u64 out) {{
  .reg .b32 %t, %v, %d, %y; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[65];
{OWN_WORD}  add.u32 %v, %t, 1000;
  st.shared.u32 [%rd3+4], %v;
  shfl.sync.down.b32 %d, %v, 1, 31, -1;
  st.shared.u32 [%rd3+4], %d;
  ld.shared.u32 %y, [%rd3];
  bar.sync 0;
  mul.wide.u32 %rd6, %t, 8;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %d;
  st.global.u32 [%rd7+4], %y;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "after", 1, Dim3::x(64), 128);
    let v = |t: u32| t + 1000;
    let d = |t: u32| if t % 32 == 31 { v(t) } else { v(t + 1) };
    for t in 0..64u32 {
        // Thread t runs after thread t-1 stored its result.
        let y = if t == 0 { 0 } else { d(t - 1) };
        let at = 2 * t as usize;
        assert_eq!(out[at..at + 2], [d(t), y], "thread {t}");
    }
    assert_eq!(lanes, 0, "the block went to the thread-by-thread rounds");
}

/// The second warp hands the block over in the round in which the first stopped at a
/// shuffle: the first waits there with its sources, and the schedule resolves it. (The
/// load of `out` before the shuffle makes it a stop: the stores after it may write there.)
#[test]
fn a_hand_over_beside_a_warp_at_a_shuffle() {
    let ptx = format!(
        "{HEAD}.visible .entry beside(.param .u64 out) {{
  .reg .pred %p; .reg .b32 %t, %v, %d, %e, %y; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[65];
{OWN_WORD}  add.u32 %v, %t, 1000;
  mov.u32 %y, 7;
  ld.global.u32 %e, [%rd0];
  setp.lt.u32 %p, %t, 32;
  @%p bra SKIP;
  st.shared.u32 [%rd3+4], %v;
  ld.shared.u32 %y, [%rd3];
SKIP:
  shfl.sync.down.b32 %d, %v, 2, 31, -1;
  mul.wide.u32 %rd6, %t, 8;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %d;
  st.global.u32 [%rd7+4], %y;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "beside", 1, Dim3::x(64), 128);
    let v = |t: u32| t + 1000;
    for t in 0..64u32 {
        let d = if t % 32 >= 30 { v(t) } else { v(t + 2) };
        let y = match t {
            ..32 => 7,
            32 => 0,
            _ => v(t - 1),
        };
        let at = 2 * t as usize;
        assert_eq!(out[at..at + 2], [d, y], "thread {t}");
    }
    assert_eq!(lanes, 0, "the block went to the thread-by-thread rounds");
}

/// Each warp reads the other warp's words before a shuffle and stores its own after it:
/// the schedule runs every warp to the shuffle before any goes on, so every read sees the
/// words as they were, and the group stops at the shuffle to keep that order (running the
/// first warp through it would let the second read the first's new words).
#[test]
fn a_shuffle_between_a_read_and_a_store_of_other_warps_words() {
    let ptx = format!(
        "{HEAD}.visible .entry swap(.param .u64 out) {{
  .reg .b32 %t, %v, %r, %d, %y; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[64];
{OWN_WORD}  add.u32 %v, %t, 1;
  st.shared.u32 [%rd3], %v;
  bar.sync 0;
  sub.u32 %r, 63, %t;
  mul.wide.u32 %rd4, %r, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %y, [%rd5];
  shfl.sync.bfly.b32 %d, %v, 1, 31, -1;
  st.shared.u32 [%rd3], %d;
  bar.sync 0;
  ld.shared.u32 %v, [%rd3];
  mul.wide.u32 %rd6, %t, 8;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %v;
  st.global.u32 [%rd7+4], %y;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "swap", 1, Dim3::x(64), 128);
    for t in 0..64u32 {
        let at = 2 * t as usize;
        assert_eq!(out[at..at + 2], [(t ^ 1) + 1, 64 - t], "thread {t}");
    }
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// A warp that ran through a shuffle to a later one, with the next warp handing the block
/// over in that round: it would stand a round of the schedule ahead and store its results
/// before the next warp read the words as they were. So a segment that ends at a shuffle
/// runs through none, and every read sees the words as they were.
#[test]
fn no_warp_runs_ahead_through_shuffles_of_a_round_handed_over() {
    let ptx = format!(
        "{HEAD}.visible .entry ahead(.param .u64 out) {{
  .reg .pred %p; .reg .b32 %t, %v, %d, %e, %r, %y, %z; .reg .b64 %rd<10>;
  .shared .align 4 .b32 s[65];
{OWN_WORD}  add.u32 %v, %t, 1;
  mov.u32 %z, 0;
  setp.lt.u32 %p, %t, 32;
  @%p bra SKIP;
  st.shared.u32 [%rd3+4], %v;
  ld.shared.u32 %z, [%rd3];
SKIP:
  shfl.sync.bfly.b32 %d, %v, 1, 31, -1;
  sub.u32 %r, 63, %t;
  mul.wide.u32 %rd4, %r, 4;
  add.s64 %rd5, %rd0, %rd4;
  ld.global.u32 %y, [%rd5];
  shfl.sync.bfly.b32 %e, %d, 2, 31, -1;
  add.s64 %rd6, %rd0, %rd1;
  st.global.u32 [%rd6], %e;
  st.global.u32 [%rd6+256], %y;
  st.global.u32 [%rd6+512], %z;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "ahead", 1, Dim3::x(64), 192);
    for t in 0..64usize {
        let z = if t > 32 { t as u32 } else { 0 };
        let got = [out[t], out[64 + t], out[128 + t]];
        assert_eq!(got, [(t as u32 ^ 3) + 1, 0, z], "thread {t}");
    }
    assert_eq!(lanes, 0, "the block went to the thread-by-thread rounds");
}

/// Only the first warp shuffles (a branch on the warp's number, uniform in each warp): the
/// second runs on to the barrier in the round the first stops at the shuffle, so its stores
/// come first and the first warp reads them. The group stops at a shuffle a branch may jump
/// over.
#[test]
fn a_shuffle_only_some_warps_pass() {
    let ptx = format!(
        "{HEAD}.visible .entry some(.param .u64 out) {{
  .reg .pred %p; .reg .b32 %t, %w, %v, %r, %y; .reg .b64 %rd<10>;
  .shared .align 4 .b32 s[64];
{OWN_WORD}  add.u32 %v, %t, 1;
  shr.u32 %w, %t, 5;
  setp.ne.u32 %p, %w, 0;
  @%p bra ON;
  shfl.sync.bfly.b32 %v, %v, 1, 31, -1;
ON:
  sub.u32 %r, 63, %t;
  mul.wide.u32 %rd4, %r, 4;
  add.s64 %rd5, %rd2, %rd4;
  st.shared.u32 [%rd5], %v;
  ld.shared.u32 %y, [%rd3];
  bar.sync 0;
  mul.wide.u32 %rd6, %t, 8;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %v;
  st.global.u32 [%rd7+4], %y;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "some", 1, Dim3::x(64), 128);
    for t in 0..64u32 {
        // The second warp stored s[63 - t] = t + 1 a round before the first read s[t].
        let want = if t < 32 {
            [(t ^ 1) + 1, 64 - t]
        } else {
            [t + 1, 0]
        };
        let at = 2 * t as usize;
        assert_eq!(out[at..at + 2], want, "thread {t}");
    }
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// Votes, `activemask`, `redux` and `bar.warp.sync` in the group functions, after some
/// threads exited, with the full membermask and a partial one: each as the manual defines
/// it for the lanes still there (computed here), a lane's membermask limiting the lanes its
/// result covers.
#[test]
fn votes_and_reductions_in_lanes() {
    const HALF: u32 = 0x0f0f_f0f0;
    let ptx = format!(
        "{HEAD}.visible .entry votes(.param .u64 out) {{
  .reg .pred %p, %q, %r; .reg .b32 %t, %e, %v, %d; .reg .b64 %rd<3>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mul.wide.u32 %rd1, %t, 64;
  add.s64 %rd2, %rd0, %rd1;
  and.b32 %e, %t, 15;
  setp.eq.u32 %p, %e, 13;
  @%p exit;
  mul.lo.u32 %v, %t, 7919;
  add.u32 %v, %v, 3;
  and.b32 %e, %v, 4;
  setp.ne.u32 %q, %e, 0;
  vote.sync.ballot.b32 %d, %q, -1;
  st.global.u32 [%rd2], %d;
  vote.sync.all.pred %r, %q, -1;
  selp.u32 %d, 1, 0, %r;
  st.global.u32 [%rd2+4], %d;
  vote.sync.any.pred %r, %q, {HALF};
  selp.u32 %d, 1, 0, %r;
  st.global.u32 [%rd2+8], %d;
  vote.sync.uni.pred %r, %q, -1;
  selp.u32 %d, 1, 0, %r;
  st.global.u32 [%rd2+12], %d;
  vote.sync.ballot.b32 %d, %q, {HALF};
  st.global.u32 [%rd2+16], %d;
  setp.ne.u32 %r, %t, 1000;
  vote.sync.all.pred %r, %r, {HALF};
  selp.u32 %d, 1, 0, %r;
  st.global.u32 [%rd2+20], %d;
  activemask.b32 %d;
  st.global.u32 [%rd2+24], %d;
  redux.sync.add.u32 %d, %v, -1;
  st.global.u32 [%rd2+28], %d;
  redux.sync.min.s32 %d, %v, -1;
  st.global.u32 [%rd2+32], %d;
  redux.sync.max.u32 %d, %v, {HALF};
  st.global.u32 [%rd2+36], %d;
  redux.sync.and.b32 %d, %v, -1;
  st.global.u32 [%rd2+40], %d;
  redux.sync.or.b32 %d, %v, {HALF};
  st.global.u32 [%rd2+44], %d;
  redux.sync.xor.b32 %d, %v, -1;
  st.global.u32 [%rd2+48], %d;
  bar.warp.sync -1;
  redux.sync.max.s32 %d, %v, {HALF};
  st.global.u32 [%rd2+52], %d;
  redux.sync.min.u32 %d, %v, -1;
  st.global.u32 [%rd2+56], %d;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "votes", 1, Dim3::x(64), 64 * 16);
    let alive = |t: u32| t & 15 != 13;
    let v = |t: u32| t.wrapping_mul(7919).wrapping_add(3);
    for t in (0..64u32).filter(|&t| alive(t)) {
        let warp = t / 32 * 32;
        // The lanes still there in the mask, and those of them whose predicate holds.
        let lanes = |mask: u32| (0..32).filter(move |&l| alive(warp + l) && mask >> l & 1 != 0);
        let bits = |it: &mut dyn Iterator<Item = u32>| it.fold(0u32, |m, l| m | 1 << l);
        let yes = |mask: u32| bits(&mut lanes(mask).filter(|&l| v(warp + l) & 4 != 0));
        let all = |mask: u32| bits(&mut lanes(mask));
        let vals = |mask: u32| lanes(mask).map(|l| v(warp + l));
        let want = [
            yes(!0),
            (yes(!0) == all(!0)) as u32,
            (yes(HALF) != 0) as u32,
            (yes(!0) == 0 || yes(!0) == all(!0)) as u32,
            yes(HALF),
            1,
            all(!0),
            vals(!0).fold(0, u32::wrapping_add),
            vals(!0).map(|x| x as i32).min().unwrap() as u32,
            vals(HALF).max().unwrap_or(0),
            vals(!0).fold(!0, |a, x| a & x),
            vals(HALF).fold(0, |a, x| a | x),
            vals(!0).fold(0, |a, x| a ^ x),
            vals(HALF).map(|x| x as i32).max().unwrap_or(0) as u32,
            vals(!0).min().unwrap(),
        ];
        let at = 16 * t as usize;
        assert_eq!(out[at..at + 15], want, "thread {t}");
    }
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// `elect.sync` (sm_90) in the group functions after the lowest lanes exited: the leader
/// is the lowest lane still there in the membermask, and only it gets the predicate.
#[test]
fn elect_in_lanes() {
    let ptx = ".version 8.0\n.target sm_90\n.address_size 64\n\
.visible .entry elect(.param .u64 out) {
  .reg .pred %p, %q; .reg .b32 %t, %d, %e; .reg .b64 %rd<3>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mul.wide.u32 %rd1, %t, 16;
  add.s64 %rd2, %rd0, %rd1;
  and.b32 %e, %t, 31;
  setp.lt.u32 %p, %e, 3;
  @%p exit;
  elect.sync %d|%q, -1;
  selp.u32 %e, 1, 0, %q;
  st.global.u32 [%rd2], %d;
  st.global.u32 [%rd2+4], %e;
  elect.sync %d|%q, 0xfffff000;
  selp.u32 %e, 1, 0, %q;
  st.global.u32 [%rd2+8], %d;
  st.global.u32 [%rd2+12], %e;
  ret;
}";
    let (out, lanes) = run(ptx, "elect", 1, Dim3::x(64), 64 * 4);
    for t in 0..64u32 {
        let lane = t % 32;
        let want = if lane < 3 {
            [0; 4]
        } else {
            [3, (lane == 3) as u32, 12, (lane == 12) as u32]
        };
        let at = 4 * t as usize;
        assert_eq!(out[at..at + 4], want, "thread {t}");
    }
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// Shifts by amounts in registers in the group functions, uniform (past the width too) and
/// per-thread, and collectives whose membermask each thread computes: the same in every lane
/// (`(lane & 32) - 1`, all ones), or not (the block is handed over). Values worked out
/// here.
#[test]
fn shifts_by_registers_and_computed_membermasks() {
    let ptx = format!(
        "{HEAD}.visible .entry shifts(.param .u64 out) {{
  .reg .pred %q; .reg .b32 %t, %v, %k, %l, %m, %d; .reg .b64 %rd<3>;
  ld.param.u64 %rd0, [out];
  mov.u32 %k, K;
  mov.u32 %t, %tid.x;
  mul.wide.u32 %rd1, %t, 32;
  add.s64 %rd2, %rd0, %rd1;
  mul.lo.u32 %v, %t, -1640531535;
  and.b32 %l, %t, 31;
  shl.b32 %d, %v, %k;
  st.global.u32 [%rd2], %d;
  shr.s32 %d, %v, %k;
  st.global.u32 [%rd2+4], %d;
  shr.u32 %d, %v, %l;
  st.global.u32 [%rd2+8], %d;
  add.u32 %m, %l, 20;
  shl.b32 %d, %v, %m;
  st.global.u32 [%rd2+12], %d;
  shr.s32 %d, %v, %m;
  st.global.u32 [%rd2+16], %d;
  and.b32 %m, %l, 32;
  sub.u32 %m, %m, 1;
  setp.lt.u32 %q, %l, 10;
  vote.sync.ballot.b32 %d, %q, %m;
  st.global.u32 [%rd2+20], %d;
  shl.b32 %m, 1, %l;
  or.b32 %m, %m, 1;
  redux.sync.add.u32 %d, %l, %m;
  st.global.u32 [%rd2+24], %d;
  ret;
}}"
    );
    for k in [3u32, 31, 32, 40] {
        let ptx = ptx.replace("%k, K;", &format!("%k, {k};"));
        let (out, lanes) = run(&ptx, "shifts", 1, Dim3::x(64), 64 * 8);
        for t in 0..64u32 {
            let v = t.wrapping_mul(2_654_435_761);
            let l = t % 32;
            let shl = |n: u32| if n >= 32 { 0 } else { v << n };
            let shr_u = |n: u32| if n >= 32 { 0 } else { v >> n };
            let shr_s = |n: u32| ((v as i32) >> n.min(31)) as u32;
            // The second membermask differs between lanes: the schedule's result, each lane
            // adding the lane numbers of lanes 0 and its own.
            let want = [
                shl(k),
                shr_s(k),
                shr_u(l),
                shl(l + 20),
                shr_s(l + 20),
                0x3ff,
                l,
            ];
            let at = 8 * t as usize;
            assert_eq!(out[at..at + 7], want, "k = {k}, thread {t}");
        }
        assert_eq!(lanes, 0, "the differing membermasks hand the block over");
    }
    let same = ptx
        .replace("%k, K;", "%k, 5;")
        .replace("  shl.b32 %m, 1, %l;\n  or.b32 %m, %m, 1;\n", "");
    let (out, lanes) = run(&same, "shifts", 1, Dim3::x(64), 64 * 8);
    assert_eq!(out[6], (0..32).sum::<u32>(), "redux over the warp");
    assert_eq!(lanes, 64, "with one membermask the block runs in lanes");
}

/// Uniform branches over barriers around collectives (found in review): the accesses a
/// collective's paths meet, not those that lie between it and its neighbours in the body,
/// decide whether a warp runs through it. Each warp stores its words, passes a
/// `bar.warp.sync` (a barrier before or after it jumped over), and reads a word another
/// lane or warp stored, which the schedule has stored first; in the third kernel a vote
/// whose membermask differs between lanes hands the block over before that.
#[test]
fn collectives_beside_barriers_a_branch_jumps_over() {
    let head = |body: &str, words: u32| {
        format!(
            "{HEAD}.visible .entry k(.param .u64 out) {{
  .reg .u32 %r<20>; .reg .u64 %rd<8>; .reg .pred %p<5>;
  .shared .align 4 .b32 buf[{words}];
  ld.param.u64 %rd1, [out];
  mov.u32 %r9, 1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  mov.u64 %rd4, buf;
  add.u64 %rd5, %rd4, %rd2;
  add.u32 %r5, %r1, 100;
{body}  add.u64 %rd3, %rd1, %rd2;
  st.global.u32 [%rd3], %r8;
  ret;
}}"
        )
    };
    let skip = "  setp.ne.u32 %p1, %r9, 0;\n  @%p1 bra SKIP;\n  bar.sync 0;\nSKIP:\n";
    let store = "  st.shared.u32 [%rd5], %r5;\n";
    let sync = "  bar.warp.sync -1;\n";
    let next = "  ld.shared.u32 %r8, [%rd5+4];\n";
    let neighbour = |t: u32| if t < 31 { t + 101 } else { 0 };
    for body in [
        format!("{store}{skip}{sync}{next}"),
        format!("{store}{sync}{skip}{next}"),
    ] {
        let (out, lanes) = run(&head(&body, 33), "k", 1, Dim3::x(32), 32);
        assert_eq!(out, (0..32).map(neighbour).collect::<Vec<_>>(), "{body}");
        assert_eq!(lanes, 32, "{body}");
    }
    let vote = "  setp.lt.u32 %p2, %r1, 48;\n  selp.b32 %r2, -1, 0xffff0000, %p2;\n  \
                vote.sync.ballot.b32 %r3, %p2, %r2;\n";
    let other_warp = "  shr.u32 %r6, %r1, 5;\n  mul.lo.u32 %r7, %r6, 256;\n  \
                      cvt.u64.u32 %rd6, %r7;\n  sub.u64 %rd7, %rd5, %rd6;\n  \
                      ld.shared.u32 %r8, [%rd7+128];\n";
    let body = format!("{vote}{skip}{store}{sync}{other_warp}");
    let (out, lanes) = run(&head(&body, 64), "k", 1, Dim3::x(64), 64);
    let want: Vec<u32> = (0..64).map(|t| (t + 32) % 64 + 100).collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 0, "the vote's membermasks hand the block over");
}

/// A thread's lane (`%tid.x & 31`) as a sequence: addresses in a warp's own 32 words run in
/// lanes. With an offset the lanes straddle a multiple of 32 (`(%tid.x + 5) & 31` wraps to
/// 0 within a warp) and the block is handed over; either way the values worked out here.
#[test]
fn a_threads_lane_is_a_sequence() {
    for offset in [0u32, 5] {
        let ptx = format!(
            "{HEAD}.visible .entry lane(.param .u64 out) {{
  .reg .b32 %t, %u, %l, %w; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[32];
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  add.u32 %u, %t, {offset};
  and.b32 %l, %u, 31;
  mul.wide.u32 %rd1, %l, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  shr.u32 %w, %t, 5;
  setp.eq.u32 %p, %w, 1;
  @%p st.shared.u32 [%rd3], %t;
  bar.sync 0;
  ld.shared.u32 %w, [%rd3];
  mul.wide.u32 %rd4, %t, 4;
  add.s64 %rd5, %rd0, %rd4;
  st.global.u32 [%rd5], %w;
  ret;
}}"
        )
        .replace(".reg .b32 %t,", ".reg .pred %p; .reg .b32 %t,");
        let (out, lanes) = run(&ptx, "lane", 1, Dim3::x(64), 64);
        // Warp 1's thread t stored itself in word (t + offset) & 31.
        let want: Vec<u32> = (0..64)
            .map(|t: u32| {
                let l = (t + offset) & 31;
                (32..64).find(|u| (u + offset) & 31 == l).unwrap()
            })
            .collect();
        assert_eq!(out, want, "offset {offset}");
        let expected_lanes = if offset == 0 { 64 } else { 0 };
        assert_eq!(lanes, expected_lanes, "offset {offset}");
    }
}

/// The first warp jumps over a store and a vote that the second makes (a branch on the
/// warp's number), then both shuffle and read a word of the second warp's: the schedule runs
/// the second warp's store (before its vote) in the round in which the first stops at the
/// shuffle, so the first reads it. A warp touching memory after a collective stops there.
#[test]
fn a_warp_reads_what_another_stored_on_another_path() {
    let ptx = format!(
        "{HEAD}.visible .entry paths(.param .u64 out) {{
  .reg .pred %p, %q; .reg .b32 %t, %w, %v, %d, %y; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[96];
{OWN_WORD}  shr.u32 %w, %t, 5;
  setp.eq.u32 %p, %w, 0;
  @%p bra J;
  add.u32 %v, %t, 1000;
  st.shared.u32 [%rd3], %v;
  vote.sync.all.pred %q, %p, -1;
J:
  shfl.sync.bfly.b32 %d, %t, 1, 31, -1;
  ld.shared.u32 %y, [%rd3+128];
  add.s64 %rd4, %rd0, %rd1;
  st.global.u32 [%rd4], %y;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "paths", 1, Dim3::x(64), 64);
    let want: Vec<u32> = (0..64).map(|t| if t < 32 { t + 1032 } else { 0 }).collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 64, "the block ran in lanes");
}

/// `%laneid` in lanes: a sequence in a group that is a warp (here the address of a warp's
/// word and a bound), and where a row's length is no multiple of 32 a group that straddles
/// two warps goes back to the threads one at a time; the values are the linear index
/// modulo 32 either way.
#[test]
fn laneid_in_lanes() {
    let ptx = format!(
        "{HEAD}.visible .entry lanes(.param .u64 out) {{
  .reg .pred %p; .reg .b32 %t, %y, %n, %l, %v; .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mov.u32 %y, %tid.y;
  mov.u32 %n, %ntid.x;
  mad.lo.u32 %t, %y, %n, %t;
  mov.u32 %l, %laneid;
  mul.lo.u32 %v, %l, 3;
  setp.lt.u32 %p, %l, 7;
  @%p add.u32 %v, %v, 1000;
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %v;
  ret;
}}"
    );
    for block in [Dim3::x(64), Dim3::new(48, 2, 1)] {
        let n = block.count() as usize;
        let (out, lanes) = run(&ptx, "lanes", 1, block, n);
        let want: Vec<u32> = (0..n as u32)
            .map(|t| 3 * (t % 32) + if t % 32 < 7 { 1000 } else { 0 })
            .collect();
        assert_eq!(out, want, "{block:?}");
        // Rows of 48: the first row's first 32 run in lanes, the second row's would
        // straddle warps 1 and 2.
        let expected = if block.x == 64 { 64 } else { 32 };
        assert_eq!(lanes, expected, "{block:?}");
    }
}

/// `%lanemask_*`, `popc`, `clz` and `brev` in lanes: a thread's rank among the lanes of its
/// warp whose predicate holds (`popc(ballot & lanemask_lt)`, as stream compaction computes
/// it), in the group functions; and the masks and counts in the plain lanes function, whose
/// groups in rows of 48 straddle warps (those go back). Values worked out here.
#[test]
fn lane_masks_and_bit_counts_in_lanes() {
    let kernel = |ballot: &str| {
        format!(
            "{HEAD}.visible .entry masks(.param .u64 out) {{
  .reg .pred %p; .reg .b32 %t, %y, %n, %v, %b, %m, %r; .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mov.u32 %y, %tid.y;
  mov.u32 %n, %ntid.x;
  mad.lo.u32 %t, %y, %n, %t;
  mul.lo.u32 %v, %t, -1640531535;
  setp.lt.u32 %p, %v, 0x80000000;
{ballot}  mov.u32 %m, %lanemask_lt;
  and.b32 %r, %b, %m;
  popc.b32 %r, %r;
  mul.wide.u32 %rd1, %t, 32;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %r;
  clz.b32 %r, %v;
  st.global.u32 [%rd2+4], %r;
  brev.b32 %r, %v;
  st.global.u32 [%rd2+8], %r;
  mov.u32 %r, %lanemask_eq;
  st.global.u32 [%rd2+12], %r;
  mov.u32 %r, %lanemask_le;
  st.global.u32 [%rd2+16], %r;
  mov.u32 %r, %lanemask_ge;
  st.global.u32 [%rd2+20], %r;
  mov.u32 %r, %lanemask_gt;
  st.global.u32 [%rd2+24], %r;
  ret;
}}"
        )
    };
    let v = |t: u32| t.wrapping_mul(2_654_435_761);
    let check = |ptx: &str, block: Dim3, ballot: bool| {
        let n = block.count() as u32;
        let (out, lanes) = run(ptx, "masks", 1, block, 8 * n as usize);
        for t in 0..n {
            let (l, warp) = (t % 32, t / 32 * 32);
            let below = (1u64 << l) as u32 - 1;
            let upto = ((2u64 << l) - 1) as u32;
            // With the ballot, the lanes below this one whose value is small; without it
            // %b is 0 (never written).
            let rank = (0..l).filter(|&k| ballot && v(warp + k) < 1 << 31).count() as u32;
            let want = [
                rank,
                v(t).leading_zeros(),
                v(t).reverse_bits(),
                1 << l,
                upto,
                !below,
                !upto,
            ];
            let at = 8 * t as usize;
            assert_eq!(out[at..at + 7], want, "{block:?}, thread {t}");
        }
        lanes
    };
    let vote = "  vote.sync.ballot.b32 %b, %p, -1;\n";
    assert_eq!(
        check(&kernel(vote), Dim3::x(64), true),
        64,
        "the group function"
    );
    let plain = kernel("  mov.u32 %b, 0;\n");
    assert_eq!(check(&plain, Dim3::new(48, 2, 1), false), 32, "rows of 48");
}

/// NVRTC's warp-shuffle reduction (the corpus' `warp_sum`: five `shfl.down`s, a store by
/// each warp's lane 0 at `%tid >> 5`) runs in lanes, each warp's sum as Rust adds it.
#[test]
fn nvrtc_warp_sum_runs_in_lanes() {
    let ptx = include_str!("corpus/coop/warp_sum.ptx");
    let jit = unchecked(ptx);
    let n = 1000u32;
    let input: Vec<u32> = (0..n)
        .map(|i| i.wrapping_mul(2_654_435_761) ^ (i >> 3))
        .collect();
    let mut inb: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut outb = vec![0u8; 32 * 4];
    let config = LaunchConfig {
        grid: Dim3::x(4),
        block: Dim3::x(256),
        shared_bytes: 0,
    };
    jit.launch_with(
        "warp_sum",
        config,
        &mut [
            Arg::Buffer(&mut inb),
            Arg::Buffer(&mut outb),
            Arg::Scalar(Value::u32(n)),
        ],
    )
    .expect("warp_sum runs");
    for (w, got) in outb.chunks(4).enumerate() {
        let want = (input.iter().skip(32 * w).take(32)).fold(0u32, |s, v| s.wrapping_add(*v));
        assert_eq!(
            u32::from_le_bytes(got.try_into().unwrap()),
            want,
            "warp {w}"
        );
    }
    assert_eq!(jit.lane_threads(), 1024, "every block ran in lanes");
}

/// Rounds where most warps have nothing to do (their quiet paths, `rounds/quiet.rs`): a tree
/// reduction whose loop also updates a per-thread value (`%x`), a sequence (`%y`) and a
/// counter in every warp, then a second loop whose bound leaves warps out from its first
/// round, so that a warp goes quietly from the first loop's barrier to the second's. The
/// threads from 200 on exit first (a warp with some lanes left, a warp with none).
#[test]
fn quiet_rounds_keep_what_they_compute() {
    let ptx = format!(
        "{HEAD}.visible .entry quiet(.param .u64 out) {{
  .reg .pred %p<6>; .reg .b32 %r<8>; .reg .b32 %t; .reg .b32 %h; .reg .b32 %m;
  .reg .b32 %x; .reg .b32 %y; .reg .b64 %rd<10>;
  .shared .align 4 .b32 s[256];
{OWN_WORD}  mov.u32 %r0, %ctaid.x;
  setp.ge.u32 %p0, %t, 200;
  @%p0 bra DONE;
  mad.lo.u32 %r1, %r0, 1000, %t;
  st.shared.u32 [%rd3], %r1;
  mul.lo.u32 %x, %t, %t;
  mov.u32 %y, %t;
  mov.u32 %h, 128;
  bar.sync 0;
LOOPA:
  setp.ge.u32 %p1, %t, %h;
  @%p1 bra SKIPA;
  add.u32 %r2, %t, %h;
  mul.wide.u32 %rd4, %r2, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r3, [%rd3];
  ld.shared.u32 %r4, [%rd5];
  add.u32 %r3, %r3, %r4;
  st.shared.u32 [%rd3], %r3;
SKIPA:
  bar.sync 0;
  mad.lo.u32 %x, %x, 5, %t;
  add.u32 %y, %y, 3;
  shr.u32 %h, %h, 1;
  setp.ne.u32 %p2, %h, 0;
  @%p2 bra LOOPA;
  mov.u32 %m, 160;
LOOPB:
  setp.ge.u32 %p3, %t, %m;
  @%p3 bra SKIPB;
  ld.shared.u32 %r5, [%rd3];
  add.u32 %r5, %r5, %m;
  st.shared.u32 [%rd3], %r5;
SKIPB:
  bar.sync 0;
  add.u32 %y, %y, %m;
  sub.u32 %m, %m, 40;
  setp.ne.u32 %p4, %m, 0;
  @%p4 bra LOOPB;
  mul.wide.u32 %rd6, %r0, 3072;
  add.s64 %rd7, %rd0, %rd6;
  add.s64 %rd8, %rd7, %rd1;
  st.global.u32 [%rd8], %x;
  st.global.u32 [%rd8+1024], %y;
  ld.shared.u32 %r6, [%rd3];
  st.global.u32 [%rd8+2048], %r6;
DONE:
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "quiet", 2, Dim3::x(256), 2 * 768);
    for block in 0..2u32 {
        let mut s: Vec<u32> = (0..256)
            .map(|t| if t < 200 { block * 1000 + t } else { 0 })
            .collect();
        let mut h = 128;
        while h > 0 {
            for t in 0..h {
                s[t] = s[t].wrapping_add(s[t + h]);
            }
            h /= 2;
        }
        for m in [160u32, 120, 80, 40] {
            for v in s.iter_mut().take(m as usize) {
                *v += m;
            }
        }
        for t in 0..256u32 {
            let at = (768 * block + t) as usize;
            let got = [out[at], out[at + 256], out[at + 512]];
            if t >= 200 {
                assert_eq!(got, [0; 3], "block {block}, thread {t} exited");
                continue;
            }
            let x = (0..8).fold(t * t, |x: u32, _| x.wrapping_mul(5).wrapping_add(t));
            let y = t + 3 * 8 + 160 + 120 + 80 + 40;
            assert_eq!(got, [x, y, s[t as usize]], "block {block}, thread {t}");
        }
    }
    assert_eq!(lanes, 2 * 256, "both blocks ran in lanes");
}

/// A quiet round over a sequence that wraps within a warp (`%t - 16`): the branch it
/// decides skips every store, and the warp goes on as the schedule has it.
#[test]
fn a_quiet_round_over_a_wrapping_sequence() {
    let ptx = format!(
        "{HEAD}.visible .entry wrap(.param .u64 out) {{
  .reg .pred %p<4>; .reg .b32 %r<4>; .reg .b32 %t; .reg .b32 %w; .reg .b32 %c;
  .reg .b32 %x; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[64];
{OWN_WORD}  add.u32 %w, %t, 0xfffffff0;
  mul.lo.u32 %x, %t, %t;
  mov.u32 %c, 0;
  st.shared.u32 [%rd3], %t;
  bar.sync 0;
LOOP:
  setp.ne.u32 %p1, %w, 0x80000000;
  @%p1 bra SKIP;
  ld.shared.u32 %r1, [%rd3];
  add.u32 %r1, %r1, 1;
  st.shared.u32 [%rd3], %r1;
SKIP:
  bar.sync 0;
  mad.lo.u32 %x, %x, 3, %w;
  add.u32 %c, %c, 1;
  setp.lt.u32 %p2, %c, 3;
  @%p2 bra LOOP;
  add.s64 %rd4, %rd0, %rd1;
  st.global.u32 [%rd4], %x;
  ld.shared.u32 %r2, [%rd3];
  st.global.u32 [%rd4+256], %r2;
  ret;
}}"
    );
    let (out, _) = run(&ptx, "wrap", 1, Dim3::x(64), 128);
    for t in 0..64u32 {
        let w = t.wrapping_sub(16);
        let x = (0..3).fold(t * t, |x: u32, _| x.wrapping_mul(3).wrapping_add(w));
        assert_eq!(
            [out[t as usize], out[64 + t as usize]],
            [x, t],
            "thread {t}"
        );
    }
}

/// The converged version of a segment (`rounds/converged.rs`) with a held store and a held
/// atomic before a bounds test that splits the last warp in range (`%n` = 300): that warp
/// goes to the full segment, which must store and count once; thread 77 exits first. Each
/// thread then reads the word of thread 127 - t.
#[test]
fn a_warp_that_parts_after_its_held_accesses() {
    let ptx = format!(
        "{HEAD}.visible .entry parts(.param .u64 out, .param .u64 cnt, .param .u32 n) {{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b32 %t; .reg .b32 %i; .reg .b32 %n;
  .reg .b64 %rd<10>;
  .shared .align 4 .b32 s[128];
  ld.param.u64 %rd0, [out];
  ld.param.u64 %rd9, [cnt];
  ld.param.u32 %n, [n];
  mov.u32 %t, %tid.x;
  mov.u32 %r0, %ctaid.x;
  mad.lo.u32 %i, %r0, 128, %t;
  setp.eq.u32 %p0, %t, 77;
  @%p0 exit;
  mul.wide.u32 %rd1, %t, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  st.shared.u32 [%rd3], %i;
  atom.global.add.u32 %r1, [%rd9], 1;
  setp.ge.u32 %p1, %i, %n;
  @%p1 bra SKIP;
  mul.lo.u32 %r2, %i, 3;
  st.shared.u32 [%rd3], %r2;
SKIP:
  bar.sync 0;
  sub.u32 %r3, 127, %t;
  mul.wide.u32 %rd4, %r3, 4;
  add.s64 %rd5, %rd2, %rd4;
  ld.shared.u32 %r4, [%rd5];
  mul.wide.u32 %rd6, %i, 4;
  add.s64 %rd7, %rd0, %rd6;
  st.global.u32 [%rd7], %r4;
  ret;
}}"
    );
    let n = 300u32;
    let (bufs, lanes) = run_args(&ptx, "parts", 3, Dim3::x(128), &[384, 1], &[n]);
    let (out, cnt) = (&bufs[0], bufs[1][0]);
    assert_eq!(cnt, 3 * 127, "one count for each thread that did not exit");
    for i in 0..384u32 {
        let (b, t) = (i / 128, i % 128);
        let next = 127 - t;
        let j = 128 * b + next;
        let s_next = match (next, j < n) {
            (77, _) => 0,
            (_, true) => 3 * j,
            (_, false) => j,
        };
        let want = if t == 77 { 0 } else { s_next };
        assert_eq!(out[i as usize], want, "block {b}, thread {t}");
    }
    assert_eq!(lanes, 384, "every block ran in lanes");
}

/// Shapes an independent review of the quiet paths found: a kernel whose last instruction
/// is a uniform branch back to a barrier (the quiet path fell off the end: a compiler
/// panic), a uniform-guarded `ld.param` and `div` of uniform values into a per-thread
/// register inside a per-thread branch (the quiet path refused them, sending the kernel
/// thread by thread), and a generic load of a `.global` variable after a store to it (read
/// before the held store was written: an older bug of the group functions).
#[test]
fn quiet_paths_take_what_the_full_segment_takes() {
    let end = format!(
        "{HEAD}.visible .entry k(.param .u64 out) {{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, 0;
LOOP:
  bar.sync 0;
  add.u32 %r1, %r1, 1;
  setp.lt.u32 %p1, %r1, 3;
  @%p1 bra LOOP;
}}"
    );
    let (out, lanes) = run(&end, "k", 1, Dim3::x(64), 64);
    assert_eq!((out, lanes), (vec![0; 64], 64));
    for op in ["ld.param.u32 %v, [n]", "div.u32 %v, %r0, 3"] {
        let ptx = format!(
            "{HEAD}.visible .entry k(.param .u64 out, .param .u32 n) {{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b32 %t; .reg .b32 %t2; .reg .b32 %v;
  .reg .b64 %rd<8>; .reg .pred %pu;
  ld.param.u64 %rd0, [out];
  ld.param.u32 %r0, [n];
  mov.u32 %t, %tid.x;
  setp.ne.u32 %pu, %r0, 0;
  mov.u32 %v, %t;
  bar.sync 0;
  mov.u32 %t2, %tid.x;
  setp.lt.u32 %p1, %t2, 40;
  @%p1 bra SKIP;
  @%pu {op};
SKIP:
  bar.sync 0;
  mul.wide.u32 %rd1, %t2, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %v;
  ret;
}}"
        );
        let (bufs, lanes) = run_args(&ptx, "k", 1, Dim3::x(64), &[64], &[30]);
        let want = if op.starts_with("ld") { 30 } else { 10 };
        for (t, &got) in bufs[0].iter().enumerate() {
            let t = t as u32;
            assert_eq!(got, if t < 40 { t } else { want }, "{op}: thread {t}");
        }
        assert_eq!(lanes, 64, "{op}: in lanes");
    }
    let global = format!(
        "{HEAD}.global .align 4 .u32 gv;
.visible .entry k(.param .u64 out) {{
  .reg .b32 %r<8>; .reg .b32 %t; .reg .b64 %rd<8>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mov.u64 %rd5, gv;
  bar.sync 0;
  st.global.u32 [%rd5], %t;
  ld.u32 %r1, [gv];
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %r1;
  bar.sync 0;
  ret;
}}"
    );
    // Thread after thread, each reads what it stored itself.
    let (out, _) = run(&global, "k", 1, Dim3::x(64), 64);
    assert_eq!(out, (0..64).collect::<Vec<u32>>());
}

/// A tree reduction whose idle warps only halve `%h` and count rounds in `%c` (both
/// block-uniform): a warp that finds itself idle takes the warps after it at once (the
/// quiet path's skip), in blocks of one row; in rows of a 2-D block the warps after it are
/// other rows, whose threads start again at `%tid.x` = 0, and nothing is skipped. After the
/// loop each thread hands `1000 × %c + %tid.x` to the warp before it through the shared
/// array (a warp left behind in the rounds would miss it); then the threads from `%tid.x` =
/// `cut` leave (an idle warp ends and takes the warps after it along), the others write
/// what they got, and each warp's lane 0 its sum plus `%c`.
#[test]
fn groups_that_would_repeat_a_quiet_round_are_taken_at_once() {
    let ptx = format!(
        "{HEAD}.visible .entry alike(.param .u64 out, .param .u32 start, .param .u32 cut) {{
  .reg .pred %p<6>; .reg .b32 %r<16>; .reg .b32 %t; .reg .b32 %h; .reg .b32 %c;
  .reg .b64 %rd<10>;
  .shared .align 4 .b32 s[512];
  ld.param.u64 %rd0, [out];
  ld.param.u32 %r9, [start];
  ld.param.u32 %r10, [cut];
  mov.u32 %t, %tid.x;
  mov.u32 %r1, %tid.y;
  mov.u32 %r2, %ntid.x;
  mad.lo.u32 %r3, %r1, %r2, %t;
  mul.wide.u32 %rd1, %r3, 4;
  mov.u64 %rd2, s;
  add.s64 %rd3, %rd2, %rd1;
  mad.lo.u32 %r4, %r3, 3, %r9;
  st.shared.u32 [%rd3], %r4;
  shr.u32 %h, %r2, 1;
  mov.u32 %c, 0;
  bar.sync 0;
{HALVING}  ld.shared.u32 %r8, [%rd3];
  mad.lo.u32 %r12, %c, 1000, %t;
  bar.sync 0;
  st.shared.u32 [%rd3], %r12;
  bar.sync 0;
  add.u32 %r13, %r3, 32;
  mul.wide.u32 %rd8, %r13, 4;
  add.s64 %rd9, %rd2, %rd8;
  ld.shared.u32 %r14, [%rd9];
  setp.ge.u32 %p4, %t, %r10;
  @%p4 bra DONE;
  mul.wide.u32 %rd6, %r3, 4;
  add.s64 %rd7, %rd0, %rd6;
  add.s64 %rd8, %rd7, 2048;
  st.global.u32 [%rd8], %r14;
  and.b32 %r11, %t, 31;
  setp.ne.u32 %p3, %r11, 0;
  @%p3 bra DONE;
  add.u32 %r8, %r8, %c;
  st.global.u32 [%rd7], %r8;
DONE:
  ret;
}}"
    );
    for (x, y) in [(256u32, 1u32), (96, 1), (64, 4), (128, 2)] {
        for (start, cut) in [(7u32, u32::MAX), (0xffff_ff00, 64), (5, 0)] {
            let n = (x * y) as usize;
            let block = Dim3::new(x, y, 1);
            let (out, lanes) = run_args(&ptx, "alike", 2, block, &[1024], &[start, cut]);
            // Each row reduces on its own.
            let mut want = vec![0u32; 1024];
            for row in 0..y {
                let base = row * x;
                let mut s: Vec<u32> = (0..x)
                    .map(|t| (3 * (base + t)).wrapping_add(start))
                    .collect();
                let (mut h, mut c) = (x / 2, 0u32);
                while h > 0 {
                    for t in 0..h as usize {
                        s[t] = s[t].wrapping_add(s[t + h as usize]);
                    }
                    c += 1;
                    h /= 2;
                }
                for t in (0..x.min(cut)).step_by(32) {
                    want[(base + t) as usize] = s[t as usize].wrapping_add(c);
                }
                for t in 0..x.min(cut) {
                    let other = base + t + 32;
                    // No thread writes the words after the block's.
                    let got = (other < x * y).then(|| 1000 * c + other % x);
                    want[(512 + base + t) as usize] = got.unwrap_or(0);
                }
            }
            let what = format!("{x}×{y}, start {start:#x}, cut {cut}");
            assert_eq!(out[0][..n], want[..n], "{what}: sums");
            assert_eq!(out[0][512..512 + n], want[512..512 + n], "{what}: handed");
            assert_eq!(lanes, 2 * n as u64, "{what}: in lanes");
        }
    }
}

/// A warp whose bounds test is decided for its own lanes but not for the threads after it:
/// `(t << 24) + 2^31` wraps between threads 127 and 128, so `>= 2^30` holds for threads
/// 0–127 and 192–255 (the first and the last alike) but not for 128–191. The idle warp 0
/// must not take the others for idle.
#[test]
fn a_sequence_that_wraps_after_the_warp_takes_no_other_warp() {
    let ptx = format!(
        "{HEAD}.visible .entry wraps(.param .u64 out) {{
  .reg .pred %p<4>; .reg .b32 %r<8>; .reg .b32 %t; .reg .b32 %k; .reg .b64 %rd<8>;
  .shared .align 4 .b32 s[256];
{OWN_WORD}  st.shared.u32 [%rd3], %t;
  mov.u32 %k, 0;
  bar.sync 0;
LOOP:
  shl.b32 %r1, %t, 24;
  add.u32 %r1, %r1, -2147483648;
  setp.ge.u32 %p1, %r1, 1073741824;
  @%p1 bra IDLE;
  ld.shared.u32 %r2, [%rd3];
  add.u32 %r2, %r2, 1000;
  st.shared.u32 [%rd3], %r2;
IDLE:
  bar.sync 0;
  add.u32 %k, %k, 1;
  setp.lt.u32 %p2, %k, 3;
  @%p2 bra LOOP;
  ld.shared.u32 %r3, [%rd3];
  add.s64 %rd4, %rd0, %rd1;
  st.global.u32 [%rd4], %r3;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "wraps", 1, Dim3::x(256), 256);
    let want: Vec<u32> = (0..256)
        .map(|t| if (128..192).contains(&t) { t + 3000 } else { t })
        .collect();
    assert_eq!(out, want);
    assert_eq!(lanes, 256, "in lanes");
}

/// A branch on the warp's number (`%tid.x >> 5`: alike in a warp's lanes, not in the
/// block's): warp 0 goes idle to the second barrier, warps 1–3 store (or leave) on the
/// other side. The idle warp 0 must not take them along.
#[test]
fn a_branch_on_the_warps_number_takes_no_other_warp() {
    for leave in [false, true] {
        let (side, after) = match leave {
            false => ("  st.global.u32 [%rd4], %r3;\n", ""),
            true => ("  ret;\n", "  st.global.u32 [%rd4], %r3;\n"),
        };
        let ptx = format!(
            "{HEAD}.visible .entry warps(.param .u64 out) {{
  .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b32 %t; .reg .b64 %rd<6>;
  .shared .align 4 .b32 s[4];
{OWN_WORD}  add.s64 %rd4, %rd0, %rd1;
  mov.u32 %r3, 7;
  bar.sync 0;
  shr.u32 %r2, %t, 5;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra SKIP;
{side}SKIP:
  bar.sync 0;
{after}  ret;
}}"
        );
        let (out, lanes) = run(&ptx, "warps", 1, Dim3::x(128), 128);
        let want: Vec<u32> = (0..128).map(|t| 7 * ((t < 32) == leave) as u32).collect();
        assert_eq!(out, want, "leave: {leave}");
        assert_eq!(lanes, 128, "in lanes");
    }
}

/// A loop whose count is tested right after its barrier, by a uniform branch to the exit:
/// the quiet path ends the warps there (and takes the warps after it along) instead of
/// leaving for the full segment. Threads from `n` on leave at once; the others store the
/// count each round, `stop` at the end.
#[test]
fn a_uniform_branch_to_the_exit_ends_quiet_warps() {
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 out, .param .u32 n, .param .u32 stop) {{
  .reg .pred %p<5>; .reg .b32 %r<12>; .reg .b64 %rd<6>;
  .shared .align 4 .b32 s[256];
  ld.param.u64 %rd1, [out];
  ld.param.u32 %r2, [n];
  ld.param.u32 %r9, [stop];
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd2, %r1, 4;
  add.u64 %rd3, %rd1, %rd2;
  mov.u64 %rd4, s;
  add.u64 %rd5, %rd4, %rd2;
  st.shared.u32 [%rd5], %r1;
  mov.u32 %r3, 0;
LOOP:
  bar.sync 0;
  setp.ge.u32 %p3, %r3, %r9;
  @%p3 bra EXIT;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra EXIT;
  add.u32 %r3, %r3, 1;
  setp.lt.u32 %p2, %r1, 16;
  @%p2 bra SKIP;
  ld.shared.u32 %r4, [%rd5];
  add.u32 %r4, %r4, %r3;
  st.shared.u32 [%rd5], %r4;
SKIP:
  st.global.u32 [%rd3], %r3;
  bra.uni LOOP;
EXIT:
  ret;
}}"
    );
    for (n, stop) in [(200u32, 7u32), (256, 1), (40, 0)] {
        let (out, lanes) = run_args(&ptx, "k", 2, Dim3::x(256), &[256], &[n, stop]);
        let want: Vec<u32> = (0..256).map(|t| if t < n { stop } else { 0 }).collect();
        assert_eq!(out[0], want, "n {n}, stop {stop}");
        assert_eq!(lanes, 2 * 256, "in lanes");
    }
}

/// A tree reduction's last rounds leave the warps after the working one owing their stop
/// (the tail, `rounds/tail.rs`); then every thread stores its `%tid.x` to one shared word
/// and reads it back (its own, in the threads' order: in lock step the loads would run
/// first, so the block is handed over), adding 1000 × the rounds it counted. The hand-over
/// reads every warp's state, so the tail's warps must have been paid what they owe: where
/// they stand and their count (a warp left standing at an earlier round's barrier would
/// wait at barrier 0 while the others wait at barrier 1).
#[test]
fn a_hand_over_pays_the_tail_what_it_owes() {
    let ptx = format!(
        "{HEAD}.visible .entry tail(.param .u64 out) {{
  .reg .pred %p<4>; .reg .b32 %r<12>; .reg .b32 %t; .reg .b32 %h; .reg .b32 %c;
  .reg .b64 %rd<10>;
  .shared .align 4 .b32 s[1024];
{OWN_WORD}  mov.u32 %r3, %t;
  mov.u32 %r2, %ntid.x;
  st.shared.u32 [%rd3], %t;
  shr.u32 %h, %r2, 1;
  mov.u32 %c, 0;
  bar.sync 0;
{HALVING}  st.shared.u32 [s+4], %t;
  ld.shared.u32 %r8, [s+4];
  bar.sync 1;
  ld.shared.u32 %r9, [s];
  mad.lo.u32 %r10, %c, 1000, %r8;
  add.s64 %rd6, %rd0, %rd1;
  st.global.u32 [%rd6], %r10;
  setp.ne.u32 %p3, %t, 0;
  @%p3 bra DONE;
  st.global.u32 [%rd0+4096], %r9;
DONE:
  ret;
}}"
    );
    for x in [1024u32, 256, 96, 64] {
        let (out, _) = run_args(&ptx, "tail", 1, Dim3::x(x), &[1025], &[]);
        let rounds = (x / 2).ilog2() + 1;
        let want: Vec<u32> = (0..x).map(|t| 1000 * rounds + t).collect();
        assert_eq!(
            out[0][..x as usize],
            want[..],
            "{x} threads: the word read and count"
        );
        // Word 0 after the rounds: the sum over the halving tree (every word when `x` is a
        // power of two; 96 halves to 48, 24, 12, 6, 3, 1 and drops the odd ones out).
        let mut s: Vec<u32> = (0..x).collect();
        let mut h = x / 2;
        while h > 0 {
            for t in 0..h as usize {
                s[t] = s[t].wrapping_add(s[t + h as usize]);
            }
            h /= 2;
        }
        assert_eq!(out[0][1024], s[0], "{x} threads: the sum");
    }
}

/// A guarded load no lane runs, whose lane 0 address (never loaded) lies just below 2^64
/// and steps by 4 from block to block: the prefetcher must not wrap past the address
/// space's end (it once looped there for ever).
#[test]
fn a_wild_address_no_lane_loads_prefetches_nothing() {
    let ptx = format!(
        "{HEAD}.visible .entry wild(.param .u64 out) {{
  .reg .pred %p; .reg .b32 %t, %r<4>; .reg .b64 %rd<6>;
  ld.param.u64 %rd0, [out];
  mov.u32 %t, %tid.x;
  mov.u32 %r0, %ctaid.x;
  add.u32 %r1, %r0, %t;
  sub.u32 %r1, %r1, 300;
  mul.wide.s32 %rd1, %r1, 4;
  setp.gt.u32 %p, %t, 1000;
  @%p ld.global.u32 %r2, [%rd1];
  bar.sync 0;
  mad.lo.u32 %r3, %r0, 32, %t;
  mul.wide.u32 %rd2, %r3, 4;
  add.s64 %rd3, %rd0, %rd2;
  st.global.u32 [%rd3], %t;
  ret;
}}"
    );
    let (out, lanes) = run(&ptx, "wild", 400, Dim3::x(32), 400 * 32);
    assert_eq!(out[33], 1);
    assert_eq!(lanes, 400 * 32);
}

/// setp's q (the comparison's negation) as a split bound's guard, in groups of 32 and of
/// 16.
#[test]
fn split_bounds_on_setps_second_predicate() {
    let ptx = format!(
        "{HEAD}.visible .entry q(.param .u64 out) {{
  .reg .pred %p<8>; .reg .b32 %r<12>; .reg .b64 %rd<4>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r0, %tid.x;
  mov.u32 %r9, 0;
  shl.b32 %r1, %r0, 1;
  setp.lt.u32 %p0|%p1, %r1, 21;
  @%p1 bra A;
  or.b32 %r9, %r9, 1;
A:
  sub.u32 %r2, 40, %r0;
  setp.gt.s32 %p2|%p3, %r2, 33;
  @!%p3 bra B;
  or.b32 %r9, %r9, 2;
B:
  setp.ge.u32 %p4|%p5, 9, %r0;
  @%p5 bra C;
  or.b32 %r9, %r9, 4;
C:
  bar.sync 0;
  mov.u32 %r6, %ctaid.x;
  mov.u32 %r7, %ntid.x;
  mad.lo.u32 %r8, %r6, %r7, %r0;
  mul.wide.u32 %rd1, %r8, 4;
  add.s64 %rd2, %rd0, %rd1;
  st.global.u32 [%rd2], %r9;
  ret;
}}"
    );
    for x in [16u32, 32, 64] {
        let (out, lanes) = run(&ptx, "q", 2, Dim3::x(x), 2 * x as usize);
        let want: Vec<u32> = (0..2 * x)
            .map(|i| {
                let t = i % x;
                let bit = |on: bool, k: u32| if on { 1 << k } else { 0 };
                bit(2 * t < 21, 0) | bit(40 - t as i32 <= 33, 1) | bit(9 >= t, 2)
            })
            .collect();
        assert_eq!(out, want, "blocks of {x}");
        assert_eq!(lanes, 2 * x as u64, "in lanes");
    }
}

/// A loop that comes back over its barrier in two hops after an exit: from after the exit to
/// a point between the barrier and the exit, and from there back over the barrier. Lane k of
/// each warp exits in pass k; the lanes left shuffle with their neighbours, where an exited
/// neighbour gives 0 (semantics.md, "Warp collectives"), and those still there after four
/// passes store their sums. Values worked out here for each thread.
#[test]
fn lanes_that_exited_stay_out_of_a_loop_entered_again_in_two_hops() {
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 out) {{
  .reg .u32 %r<30>; .reg .pred %p<8>; .reg .u64 %rd<8>;
  ld.param.u64 %rd0, [out];
  mov.u32 %r1, %tid.x;
  mul.lo.u32 %r2, %r1, 2654435761;
  add.u32 %r2, %r2, 12345;
  mul.wide.u32 %rd1, %r1, 4;
  add.s64 %rd2, %rd0, %rd1;
  and.b32 %r22, %r1, 31;
  mov.u32 %r8, 0;
  mov.u32 %r9, 0;
L:
  bar.sync 0;
  shfl.sync.bfly.b32 %r3, %r2, 1, 31, -1;
  add.u32 %r9, %r9, %r3;
  bra.uni M;
K:
  add.u32 %r8, %r8, 1;
  setp.lt.u32 %p1, %r8, 4;
  @%p1 bra L;
  st.global.u32 [%rd2], %r9;
  ret;
M:
  setp.eq.u32 %p2, %r22, %r8;
  @%p2 exit;
  bra.uni K;
}}"
    );
    let value = |t: u32| t.wrapping_mul(2654435761).wrapping_add(12345);
    let want: Vec<u32> = (0..64u32)
        .map(|t| match t % 32 {
            0..4 => 0,
            _ => (0..4u32)
                .map(|pass| match (t ^ 1) % 32 >= pass {
                    true => value(t ^ 1),
                    false => 0,
                })
                .fold(0u32, u32::wrapping_add),
        })
        .collect();
    let (out, lanes) = run(&ptx, "k", 1, Dim3::x(64), 64);
    assert_eq!(out, want);
    assert_eq!(lanes, 64, "in lanes");
}
