//! Cooperative kernels on every engine: `.shared` memory, barriers, and warp collectives,
//! against values worked out here independently of the engines (CUDA's documented
//! semantics of `__shfl_*_sync` with a width, sums and ballots computed in Rust), the faults
//! of stuck blocks and bad shared accesses, and the front end's errors.

mod common;

use common::engines;
use ptxjit::diff::without_addresses;
use ptxjit::{Arg, Dim3, LaunchConfig, Module, RunError};

const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

/// Launches `kernel` of `body` (a kernel with one `.u64 out` parameter) on every engine with
/// an output buffer of `words` u32s; returns each engine's words or error.
fn run_out(
    ptx: &str,
    kernel: &str,
    grid: u32,
    block: Dim3,
    shared_bytes: u32,
    words: usize,
) -> Vec<(&'static str, Result<Vec<u32>, RunError>)> {
    engines(ptx)
        .into_iter()
        .map(|(name, e)| {
            let mut out = vec![0u8; words * 4];
            let config = LaunchConfig {
                grid: Dim3::x(grid),
                block,
                shared_bytes,
            };
            let r = e
                .launch_with(kernel, config, &mut [Arg::Buffer(&mut out)])
                .map(|()| {
                    out.chunks(4)
                        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                        .collect()
                });
            (name, r)
        })
        .collect()
}

/// Every engine's output, which must be `want`.
fn expect_out(ptx: &str, kernel: &str, grid: u32, block: Dim3, shared: u32, want: &[u32]) {
    for (name, got) in run_out(ptx, kernel, grid, block, shared, want.len()) {
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

/// Every engine's fault message (the same on all of them but for host addresses), rendered.
fn expect_fault(ptx: &str, kernel: &str, block: Dim3, words: usize, parts: &[&str]) -> String {
    let mut first: Option<String> = None;
    for (name, got) in run_out(ptx, kernel, 1, block, 0, words) {
        let msg = match got {
            Err(e @ RunError::Fault(..)) => without_addresses(&e.to_string()),
            other => panic!("{name}: expected a fault, got {other:?}"),
        };
        for p in parts {
            assert!(msg.contains(p), "{name}: `{p}` not in\n{msg}");
        }
        match &first {
            Some(f) => assert_eq!(&msg, f, "{name} reports another fault"),
            None => first = Some(msg),
        }
    }
    first.unwrap()
}

/// A kernel `k(.param .u64 out)` with the given declarations and body; `%rd0` holds `out`,
/// `%r0` `%tid.x`, `%rd1` `out + 4 * linear thread index`.
fn kernel(decls: &str, body: &str) -> String {
    format!(
        "{HEAD}.visible .entry k(.param .u64 out)\n{{\n  .reg .b32 %r<40>;\n  .reg .b64 %rd<20>;\n  \
         .reg .pred %p<10>;\n{decls}\n  ld.param.u64 %rd0, [out];\n  mov.u32 %r0, %tid.x;\n  \
         mov.u32 %r39, %tid.y;\n  mov.u32 %r38, %ntid.x;\n  mad.lo.u32 %r37, %r39, %r38, %r0;\n  \
         mul.wide.u32 %rd19, %r37, 4;\n  add.s64 %rd1, %rd0, %rd19;\n{body}\n  ret;\n}}\n"
    )
}

/// A tree reduction of `tid + 1` over each block in shared memory, then thread 0 writes the
/// block's sum (the `__syncthreads` loop every CUDA course starts with).
#[test]
fn shared_memory_tree_reduction() {
    let ptx = kernel(
        "  .shared .align 4 .b32 sdata[256];",
        "  add.u32 %r3, %r0, 1;
  mov.u32 %r4, %ctaid.x;
  mad.lo.u32 %r3, %r4, 1000, %r3;
  mov.u32 %r5, sdata;
  shl.b32 %r6, %r0, 2;
  add.s32 %r6, %r5, %r6;
  st.shared.u32 [%r6], %r3;
  bar.sync 0;
  shr.u32 %r7, %r38, 1;
LOOP:
  setp.eq.u32 %p1, %r7, 0;
  @%p1 bra DONE;
  setp.lt.u32 %p2, %r0, %r7;
  shl.b32 %r8, %r7, 2;
  add.s32 %r9, %r6, %r8;
  @%p2 ld.shared.u32 %r10, [%r9];
  @%p2 ld.shared.u32 %r11, [%r6];
  @%p2 add.s32 %r11, %r11, %r10;
  @%p2 st.shared.u32 [%r6], %r11;
  bar.sync 0;
  shr.u32 %r7, %r7, 1;
  bra LOOP;
DONE:
  setp.ne.u32 %p3, %r0, 0;
  @%p3 ret;
  ld.shared.u32 %r12, [sdata];
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd2, %rd0, %rd2;
  st.global.u32 [%rd2], %r12;",
    );
    let want: Vec<u32> = (0..3u32)
        .map(|b| (1..=256u32).map(|t| b * 1000 + t).sum())
        .collect();
    expect_out(&ptx, "k", 3, Dim3::x(256), 0, &want);
}

/// What CUDA documents for `__shfl_*_sync(mask, v, x, width)` on lane `lane`: the source
/// lane and whether it is in range (CUDA Programming Guide, Warp Shuffle Functions).
fn cuda_shuffle(mode: &str, lane: u32, x: u32, width: u32) -> (u32, bool) {
    let base = lane / width * width;
    match mode {
        "up" => match (lane % width).checked_sub(x) {
            Some(_) => (lane - x, true),
            None => (lane, false),
        },
        "down" => {
            if lane % width + x < width {
                (lane + x, true)
            } else {
                (lane, false)
            }
        }
        "bfly" => {
            let j = lane ^ x;
            if j < base + width {
                (j, true)
            } else {
                (lane, false)
            }
        }
        _ => (base + x % width, true),
    }
}

/// Every mode of `shfl.sync` with widths 32, 16 and 8 and several offsets, the `c` operand
/// built as CUDA's headers build it, against [`cuda_shuffle`].
#[test]
fn shuffles_follow_cuda_widths_and_clamps() {
    let cases: &[(&str, u32, u32)] = &[
        ("up", 1, 32),
        ("up", 3, 8),
        ("down", 1, 32),
        ("down", 5, 16),
        ("down", 2, 8),
        ("bfly", 1, 32),
        ("bfly", 4, 8),
        ("bfly", 16, 16),
        ("idx", 7, 32),
        ("idx", 3, 8),
        ("idx", 35, 16),
    ];
    let mut body = String::from("  mul.lo.u32 %r3, %r0, 7;\n  add.u32 %r3, %r3, 100;\n");
    for (k, (mode, x, width)) in cases.iter().enumerate() {
        // up: c = (32 - width) << 8; the others: c = ((32 - width) << 8) | 31.
        let c = ((32 - width) << 8) | if *mode == "up" { 0 } else { 31 };
        body += &format!(
            "  shfl.sync.{mode}.b32 %r4|%p1, %r3, {x}, {c}, -1;\n  selp.u32 %r5, 1, 0, %p1;\n  \
             st.global.u32 [%rd1+{}], %r4;\n  st.global.u32 [%rd1+{}], %r5;\n",
            k * 256,
            k * 256 + 128
        );
    }
    let ptx = kernel("", &body);
    let mut want = vec![0u32; cases.len() * 64];
    for (k, (mode, x, width)) in cases.iter().enumerate() {
        for lane in 0..32 {
            let (src, ok) = cuda_shuffle(mode, lane, *x, *width);
            want[k * 64 + lane as usize] = src * 7 + 100;
            want[k * 64 + 32 + lane as usize] = ok as u32;
        }
    }
    expect_out(&ptx, "k", 1, Dim3::x(32), 0, &want);
}

/// A 64-bit value shuffled as two halves (what compilers emit for `double` and `long`), and
/// a butterfly sum over the warp.
#[test]
fn warp_sum_by_butterfly_and_64_bit_shuffles() {
    let ptx = kernel(
        "",
        "  cvt.u64.u32 %rd2, %r0;
  mul.lo.u64 %rd2, %rd2, 0x100000001;
  mov.b64 {%r3, %r4}, %rd2;
  shfl.sync.idx.b32 %r5, %r3, 31, 31, -1;
  shfl.sync.idx.b32 %r6, %r4, 31, 31, -1;
  mov.b64 %rd3, {%r5, %r6};
  add.u32 %r7, %r0, 1;
  shfl.sync.bfly.b32 %r8, %r7, 16, 31, -1;
  add.u32 %r7, %r7, %r8;
  shfl.sync.bfly.b32 %r8, %r7, 8, 31, -1;
  add.u32 %r7, %r7, %r8;
  shfl.sync.bfly.b32 %r8, %r7, 4, 31, -1;
  add.u32 %r7, %r7, %r8;
  shfl.sync.bfly.b32 %r8, %r7, 2, 31, -1;
  add.u32 %r7, %r7, %r8;
  shfl.sync.bfly.b32 %r8, %r7, 1, 31, -1;
  add.u32 %r7, %r7, %r8;
  mul.wide.u32 %rd4, %r0, 12;
  add.s64 %rd4, %rd0, %rd4;
  st.global.u32 [%rd4], %r7;
  st.global.u32 [%rd4+4], %r5;
  st.global.u32 [%rd4+8], %r6;",
    );
    let want: Vec<u32> = (0..32).flat_map(|_| [528, 31, 31]).collect();
    expect_out(&ptx, "k", 1, Dim3::x(32), 0, &want);
}

/// Votes, ballot, activemask, `%lanemask_lt`, match, redux and elect in a block of 48: its
/// second warp has 16 lanes, and absent lanes take no part.
#[test]
fn votes_and_reductions_in_a_partial_warp() {
    let ptx = kernel(
        "",
        "  and.b32 %r3, %r0, 3;
  setp.eq.u32 %p1, %r3, 0;
  vote.sync.ballot.b32 %r4, %p1, -1;
  vote.sync.all.pred %p2, %p1, -1;
  vote.sync.any.pred %p3, %p1, -1;
  vote.sync.uni.pred %p4, !%p1, -1;
  activemask.b32 %r5;
  mov.u32 %r6, %lanemask_lt;
  and.b32 %r6, %r6, %r4;
  popc.b32 %r6, %r6;
  match.any.sync.b32 %r7, %r3, -1;
  redux.sync.add.u32 %r8, %r0, -1;
  sub.s32 %r9, 20, %r0;
  redux.sync.min.s32 %r10, %r9, -1;
  redux.sync.max.u32 %r11, %r9, -1;
  elect.sync %r12|%p5, -1;
  selp.u32 %r13, 1, 0, %p2;
  selp.u32 %r14, 1, 0, %p3;
  selp.u32 %r15, 1, 0, %p4;
  selp.u32 %r16, 1, 0, %p5;
  mul.wide.u32 %rd4, %r0, 48;
  add.s64 %rd4, %rd0, %rd4;
  st.global.u32 [%rd4], %r4;
  st.global.u32 [%rd4+4], %r13;
  st.global.u32 [%rd4+8], %r14;
  st.global.u32 [%rd4+12], %r15;
  st.global.u32 [%rd4+16], %r5;
  st.global.u32 [%rd4+20], %r6;
  st.global.u32 [%rd4+24], %r7;
  st.global.u32 [%rd4+28], %r8;
  st.global.u32 [%rd4+32], %r10;
  st.global.u32 [%rd4+36], %r11;
  st.global.u32 [%rd4+40], %r12;
  st.global.u32 [%rd4+44], %r16;",
    );
    let mut want = Vec::new();
    for t in 0..48u32 {
        let (lane, warp_lanes) = (t % 32, if t < 32 { 0..32u32 } else { 32..48 });
        let members: Vec<u32> = warp_lanes.clone().collect();
        let ballot: u32 = members
            .iter()
            .filter(|&&u| u % 4 == 0)
            .fold(0, |m, &u| m | 1 << (u % 32));
        let active: u32 = members.iter().fold(0, |m, &u| m | 1 << (u % 32));
        let same: u32 = members
            .iter()
            .filter(|&&u| u % 4 == t % 4)
            .fold(0, |m, &u| m | 1 << (u % 32));
        let sum: u32 = members.iter().sum();
        let vals: Vec<i32> = members.iter().map(|&u| 20 - u as i32).collect();
        let below = (ballot & ((1u32 << lane) - 1)).count_ones();
        want.extend([
            ballot,
            0,
            1,
            0,
            active,
            below,
            same,
            sum,
            *vals.iter().min().unwrap() as u32,
            vals.iter().map(|&v| v as u32).max().unwrap(),
            members[0] % 32,
            (lane == 0) as u32,
        ]);
    }
    expect_out(&ptx, "k", 1, Dim3::x(48), 0, &want);
}

/// `bar.red` (`__syncthreads_count/and/or`) over 100 threads, and a barrier that threads
/// which exited before it no longer hold up.
#[test]
fn barrier_reductions_and_exited_threads() {
    let ptx = kernel(
        "  .shared .align 4 .b32 seen[100];",
        "  setp.ge.u32 %p9, %r0, 90;
  @%p9 exit;
  rem.u32 %r3, %r0, 3;
  setp.eq.u32 %p1, %r3, 0;
  bar.red.popc.u32 %r4, 0, %p1;
  setp.lt.u32 %p2, %r0, 200;
  bar.red.and.pred %p3, 1, %p2;
  setp.eq.u32 %p4, %r0, 77;
  bar.red.or.pred %p5, 2, %p4;
  bar.red.and.pred %p6, 3, %p4;
  selp.u32 %r5, 1, 0, %p3;
  selp.u32 %r6, 1, 0, %p5;
  selp.u32 %r7, 1, 0, %p6;
  mov.u32 %r8, seen;
  shl.b32 %r9, %r0, 2;
  add.s32 %r9, %r8, %r9;
  st.shared.u32 [%r9], %r0;
  bar.sync 0;
  sub.u32 %r10, 89, %r0;
  shl.b32 %r10, %r10, 2;
  add.s32 %r10, %r8, %r10;
  ld.shared.u32 %r11, [%r10];
  mul.wide.u32 %rd4, %r0, 20;
  add.s64 %rd4, %rd0, %rd4;
  st.global.u32 [%rd4], %r4;
  st.global.u32 [%rd4+4], %r5;
  st.global.u32 [%rd4+8], %r6;
  st.global.u32 [%rd4+12], %r7;
  st.global.u32 [%rd4+16], %r11;",
    );
    let mut want = vec![0u32; 100 * 5];
    for t in 0..90u32 {
        let count = (0..90).filter(|u| u % 3 == 0).count() as u32;
        want[t as usize * 5..t as usize * 5 + 5].copy_from_slice(&[count, 1, 1, 0, 89 - t]);
    }
    expect_out(&ptx, "k", 1, Dim3::x(100), 0, &want);
}

/// An inclusive Hillis–Steele scan of 64 values in a 2-D block (32 × 2): a barrier in a
/// loop, reads of what other threads wrote before it.
#[test]
fn scan_with_a_barrier_in_a_loop() {
    let ptx = kernel(
        "  .shared .align 4 .b32 buf[64];",
        "  mul.lo.u32 %r3, %r37, %r37;
  add.u32 %r3, %r3, 1;
  mov.u32 %r4, buf;
  shl.b32 %r5, %r37, 2;
  add.s32 %r5, %r4, %r5;
  st.shared.u32 [%r5], %r3;
  bar.sync 0;
  mov.u32 %r6, 1;
LOOP:
  setp.ge.u32 %p1, %r6, 64;
  @%p1 bra DONE;
  setp.ge.u32 %p2, %r37, %r6;
  shl.b32 %r7, %r6, 2;
  sub.s32 %r7, %r5, %r7;
  mov.u32 %r8, 0;
  @%p2 ld.shared.u32 %r8, [%r7];
  bar.sync 0;
  ld.shared.u32 %r9, [%r5];
  add.u32 %r9, %r9, %r8;
  st.shared.u32 [%r5], %r9;
  bar.sync 0;
  shl.b32 %r6, %r6, 1;
  bra LOOP;
DONE:
  ld.shared.u32 %r10, [%r5];
  st.global.u32 [%rd1], %r10;",
    );
    let mut acc = 0u32;
    let want: Vec<u32> = (0..64u32)
        .map(|i| {
            acc += i * i + 1;
            acc
        })
        .collect();
    expect_out(&ptx, "k", 1, Dim3::new(32, 2, 1), 0, &want);
}

/// Dynamic shared memory sized per launch, its special registers, generic addresses into
/// shared memory (`cvta`, `isspacep`), and shared atomics.
#[test]
fn dynamic_shared_memory_and_generic_addresses() {
    // (An `.extern` array is declared at module level: ptxas takes no linkage in a body.)
    let ptx = kernel(
        "  .shared .align 8 .b64 fixed[3];",
        "  mov.u32 %r3, %dynamic_smem_size;
  mov.u32 %r4, %total_smem_size;
  mov.u64 %rd2, dyn;
  cvta.shared.u64 %rd3, %rd2;
  cvta.to.shared.u64 %rd4, %rd3;
  setp.eq.u64 %p1, %rd4, %rd2;
  isspacep.shared %p2, %rd3;
  isspacep.global %p3, %rd3;
  isspacep.global %p4, %rd0;
  isspacep.shared %p5, %rd0;
  and.b32 %r5, %r0, 7;
  cvt.u64.u32 %rd5, %r5;
  shl.b64 %rd5, %rd5, 2;
  add.s64 %rd6, %rd3, %rd5;
  atom.add.u32 %r6, [%rd6], 1;
  atom.shared.add.u32 %r6, [fixed+4], %r0;
  bar.sync 0;
  ld.shared.u32 %r7, [dyn+12];
  ld.shared.u32 %r8, [fixed+4];
  selp.u32 %r9, 1, 0, %p1;
  selp.u32 %r10, 1, 0, %p2;
  selp.u32 %r11, 1, 0, %p3;
  selp.u32 %r12, 1, 0, %p4;
  selp.u32 %r13, 1, 0, %p5;
  setp.ne.u32 %p6, %r0, 0;
  @%p6 ret;
  st.global.u32 [%rd0], %r3;
  st.global.u32 [%rd0+4], %r4;
  st.global.u32 [%rd0+8], %r7;
  st.global.u32 [%rd0+12], %r8;
  st.global.u32 [%rd0+16], %r9;
  st.global.u32 [%rd0+20], %r10;
  st.global.u32 [%rd0+24], %r11;
  st.global.u32 [%rd0+28], %r12;
  st.global.u32 [%rd0+32], %r13;",
    )
    .replacen(
        ".visible .entry",
        ".extern .shared .align 16 .b8 dyn[];\n.visible .entry",
        1,
    );
    // 40 threads: 5 of them (3, 11, 19, 27, 35) count into dyn[3]; fixed's upper word of
    // element 0 sums every tid. `%total_smem_size`: the 24 static bytes aligned to the
    // dynamic array's 16 (32) plus the 64 dynamic ones, rounded up to 128 (as an H200 counts:
    // tests/hardware/cases/smem_sizes*.ptx).
    let want = [64, 128, 5, (0..40).sum(), 1, 1, 0, 1, 0];
    expect_out(&ptx, "k", 1, Dim3::x(40), 64, &want);
}

#[test]
fn shared_memory_faults_name_the_variable() {
    let ptx = kernel(
        "  .shared .align 4 .b32 tile[16];",
        "  mov.u32 %r3, tile;
  shl.b32 %r4, %r0, 2;
  add.s32 %r4, %r3, %r4;
  st.shared.u32 [%r4], %r0;",
    );
    expect_fault(
        &ptx,
        "k",
        Dim3::x(17),
        1,
        &[
            "out of bounds",
            ".shared variable `tile`",
            "thread (16,0,0)",
        ],
    );
    let ptx = kernel(
        "  .shared .align 4 .b32 tile[16];",
        "  ld.shared.u32 %r3, [tile+2];",
    );
    expect_fault(&ptx, "k", Dim3::x(1), 1, &["align"]);
    // Each block has its own zeroed copy: block 1 does not see block 0's store.
    let ptx = kernel(
        "  .shared .align 4 .b32 cell;",
        "  ld.shared.u32 %r3, [cell];
  mov.u32 %r4, %ctaid.x;
  add.u32 %r5, %r4, 10;
  st.shared.u32 [cell], %r5;
  mul.wide.u32 %rd2, %r4, 4;
  add.s64 %rd2, %rd0, %rd2;
  st.global.u32 [%rd2], %r3;",
    );
    expect_out(&ptx, "k", 4, Dim3::x(1), 0, &[0, 0, 0, 0]);
}

/// Every shape of a block that cannot go on is a fault naming where the threads stand.
#[test]
fn stuck_blocks_fault_instead_of_hanging() {
    // Threads waiting at different barriers.
    let ptx = kernel(
        "",
        "  setp.lt.u32 %p1, %r0, 32;
  @%p1 bar.sync 1;
  @!%p1 bar.sync 2;",
    );
    expect_fault(
        &ptx,
        "k",
        Dim3::x(64),
        1,
        &["cannot go on", "32 at barrier 1", "32 at barrier 2"],
    );
    // A count that cannot be met: the other threads exited.
    let ptx = kernel(
        "",
        "  setp.ge.u32 %p1, %r0, 32;
  @%p1 exit;
  bar.sync 1, 64;",
    );
    expect_fault(&ptx, "k", Dim3::x(64), 1, &["32 at barrier 1", "32 exited"]);
    // A shuffle whose membermask names lanes that wait at a barrier.
    let ptx = kernel(
        "",
        "  setp.lt.u32 %p1, %r0, 16;
  @%p1 shfl.sync.idx.b32 %r3, %r0, 0, 31, -1;
  @!%p1 bar.sync 0;",
    );
    expect_fault(
        &ptx,
        "k",
        Dim3::x(32),
        1,
        &["16 at a warp collective", "16 at barrier 0"],
    );
    // A barrier id out of range in a register.
    let ptx = kernel("", "  mov.u32 %r3, 16;\n  bar.sync %r3;");
    expect_fault(&ptx, "k", Dim3::x(1), 1, &["barrier id 16"]);
}

/// With a thread count, the first threads to arrive pass; `bar.arrive` counts without
/// waiting (a producer/consumer pair of warps).
#[test]
fn counted_barriers_and_arrive() {
    let ptx = kernel(
        "  .shared .align 4 .b32 box[32];",
        "  mov.u32 %r3, box;
  shl.b32 %r4, %r0, 2;
  setp.lt.u32 %p1, %r0, 32;
  @!%p1 bra CONSUMER;
  add.s32 %r5, %r3, %r4;
  mul.lo.u32 %r6, %r0, 3;
  st.shared.u32 [%r5], %r6;
  bar.arrive 1, 64;
  bra END;
CONSUMER:
  bar.sync 1, 64;
  sub.s32 %r5, %r4, 128;
  add.s32 %r5, %r3, %r5;
  ld.shared.u32 %r6, [%r5];
  st.global.u32 [%rd1], %r6;
END:",
    );
    let want: Vec<u32> = (0..64)
        .map(|t| if t < 32 { 0 } else { (t - 32) * 3 })
        .collect();
    expect_out(&ptx, "k", 1, Dim3::x(64), 0, &want);
}

#[test]
fn malformed_cooperative_forms_are_located_errors() {
    let cases = [
        ("bar.sync 16;", "barrier ids are 0 to 15"),
        ("shfl.sync.b32 %r1, %r2, 1, 31, -1;", "needs .up, .down"),
        ("vote.sync.ballot.pred %p1, %p2, -1;", "ballot"),
        ("bar.arrive 0;", "needs a thread count"),
        ("redux.sync.add.b32 %r1, %r2, -1;", "redux"),
        ("elect.sync %r1, -1;", "d|p"),
        ("activemask.b32 %r1, %r2;", "operands"),
    ];
    for (line, want) in cases {
        let ptx = format!(
            "{HEAD}.visible .entry k()\n{{\n  .reg .b32 %r<4>;\n  .reg .pred %p<4>;\n  {line}\n  ret;\n}}\n"
        );
        let err = Module::parse(&ptx).expect_err(line).to_string();
        assert!(err.contains(":8:"), "{line}: {err}");
        assert!(err.contains(want), "{line}: `{want}` not in {err}");
    }
    // Valid PTX that is not supported yet refuses its function, located; the module loads.
    for (text, want) in [
        (
            format!("{HEAD}.visible .func f()\n{{\n  bar.sync 0;\n  ret;\n}}\n"),
            ("runs inlined into the kernels", 6),
        ),
        (
            format!(
                "{HEAD}.visible .entry f()\n{{\n  .reg .b32 %r<4>;\n  mbarrier.init.shared.b64 [%r1], 32;\n  ret;\n}}\n"
            ),
            ("unsupported instruction `mbarrier`", 7),
        ),
    ] {
        let (want, line) = want;
        let m = Module::parse(&text).unwrap();
        let f = &m.functions[0];
        assert!(f.body.is_none() && f.refused.len() == 1, "{want}");
        assert!(f.refused[0].message.contains(want), "{want}");
        assert_eq!(m.source.line_col(f.refused[0].span.start).0, line, "{want}");
    }
}

/// What lives across a barrier survives it: registers written before and read after (also
/// in a loop), CC.CF between `add.cc` and `addc`, and `.local` memory.
#[test]
fn thread_state_survives_barriers() {
    let ptx = kernel(
        "  .local .align 4 .b32 mine[4];",
        "  add.u32 %r3, %r0, 0xfffffff0;
  st.local.u32 [mine+8], %r0;
  mov.u32 %r4, 0;
  mov.u32 %r5, 0;
LOOP:
  add.cc.u32 %r6, %r3, 0x20;
  bar.sync 0;
  addc.u32 %r7, 0, 0;
  add.u32 %r5, %r5, %r7;
  add.u32 %r4, %r4, 1;
  setp.lt.u32 %p1, %r4, 3;
  @%p1 bra LOOP;
  ld.local.u32 %r8, [mine+8];
  mad.lo.u32 %r9, %r8, 100, %r5;
  st.global.u32 [%rd1], %r9;",
    );
    // r3 = 0xfffffff0 + tid wraps for tid >= 16 (to tid - 16, which + 0x20 does not carry);
    // below 16, r3 + 0x20 carries, and each of the 3 iterations adds 1.
    let want: Vec<u32> = (0..40)
        .map(|t| t * 100 + if t < 16 { 3 } else { 0 })
        .collect();
    expect_out(&ptx, "k", 1, Dim3::x(40), 0, &want);
}

/// `isspacep.local` knows a thread's `.local` memory in every mode, unchecked too (the
/// differential generator found the unchecked JIT answering false).
#[test]
fn isspacep_knows_local_memory_unchecked_too() {
    let ptx = kernel(
        "  .local .align 8 .b8 loc[32];",
        "  mov.u64 %rd2, loc;
  cvta.local.u64 %rd3, %rd2;
  isspacep.local %p1, %rd3;
  isspacep.global %p2, %rd3;
  selp.u32 %r3, 1, 0, %p1;
  selp.u32 %r4, 1, 0, %p2;
  st.global.u32 [%rd0], %r3;
  st.global.u32 [%rd0+4], %r4;",
    );
    expect_out(&ptx, "k", 1, Dim3::x(1), 0, &[1, 0]);
    let unchecked = common::jit_with(
        &ptx,
        ptxjit::JitOptions {
            checked: false,
            ..Default::default()
        },
    );
    let mut out = vec![0u8; 8];
    ptxjit::Engine::launch(
        &unchecked,
        "k",
        Dim3::x(1),
        Dim3::x(1),
        &mut [Arg::Buffer(&mut out)],
    )
    .unwrap();
    assert_eq!(out, [1, 0, 0, 0, 0, 0, 0, 0]);
}

/// A `.func` called from the host runs as the one thread of a block of its own: it has a
/// zeroed shared window, and its shared accesses are checked like a kernel's.
#[test]
fn host_calls_have_a_shared_window() {
    let ptx = format!(
        "{HEAD}.shared .align 4 .b32 box[4];\n.visible .func (.param .b32 r) f(.param .b32 a)\n{{\n  \
         .reg .b32 %r<6>;\n  ld.param.b32 %r1, [a];\n  ld.shared.b32 %r2, [box+8];\n  \
         st.shared.b32 [box+8], %r1;\n  ld.shared.b32 %r3, [box+8];\n  \
         mov.u32 %r4, %total_smem_size;\n  mad.lo.u32 %r5, %r4, 1000, %r3;\n  add.u32 %r5, %r5, %r2;\n  \
         st.param.b32 [r], %r5;\n  ret;\n}}\n\
         .visible .func (.param .b32 r) g(.param .b32 a)\n{{\n  .reg .b32 %r<3>;\n  \
         ld.param.b32 %r1, [a];\n  mov.u32 %r2, box;\n  add.u32 %r2, %r2, %r1;\n  \
         st.shared.b32 [%r2], %r1;\n  st.param.b32 [r], %r1;\n  ret;\n}}\n"
    );
    for (name, e) in engines(&ptx) {
        // Each call starts from zeros: 16 bytes of shared memory (`%total_smem_size` rounds
        // them up to 128), then 7 stored and read.
        for _ in 0..2 {
            let r = e.call("f", &[ptxjit::Value::u32(7)]).unwrap();
            assert_eq!(
                r,
                [ptxjit::Value::new(ptxjit::ast::Type::B32, 128_007)],
                "{name}"
            );
        }
        // Past `box` (16 bytes, which `g` names: a call's window holds the variables its
        // function uses) is out of bounds.
        let err = e
            .call("g", &[ptxjit::Value::u32(16)])
            .unwrap_err()
            .to_string();
        assert!(err.contains(".shared variable `box`"), "{name}: {err}");
    }
}

/// `elect.sync _|%p`: the leader's lane number may be discarded (ptxas accepts the sink).
#[test]
fn elect_with_a_discarded_leader() {
    let ptx = kernel(
        "",
        "  setp.ge.u32 %p1, %r0, 5;
  @%p1 elect.sync _|%p2, -1;
  selp.u32 %r3, 1, 0, %p2;
  st.global.u32 [%rd1], %r3;",
    );
    // Lanes 5..39 of two warps run the elect; lane 5 leads the first, lane 32 the second.
    let want: Vec<u32> = (0..40).map(|t| (t == 5 || t == 32) as u32).collect();
    expect_out(&ptx, "k", 1, Dim3::x(40), 0, &want);
}

/// Where a round's threads did not all stop at one barrier or one warp-wide collective, the
/// schedule's shortcuts (src/block/schedule.rs) must not apply: a warp resolved early beside
/// a warp at a barrier, and two halves of a warp at two different shuffles.
#[test]
fn shortcuts_leave_mixed_rounds_to_the_schedule() {
    // Warp 0 shuffles (all 32 lanes, full mask) while warp 1 is already at the barrier;
    // after it, each thread reads what its mirror thread stored before.
    let ptx = kernel(
        "  .shared .align 4 .b32 box[64];",
        "  mov.u32 %r3, box;
  shl.b32 %r4, %r0, 2;
  add.s32 %r5, %r3, %r4;
  mul.lo.u32 %r6, %r0, 7;
  st.shared.u32 [%r5], %r6;
  setp.lt.u32 %p1, %r0, 32;
  mov.u32 %r7, 0;
  @%p1 shfl.sync.bfly.b32 %r7, %r0, 1, 31, -1;
  bar.sync 0;
  xor.b32 %r8, %r0, 63;
  shl.b32 %r9, %r8, 2;
  add.s32 %r9, %r3, %r9;
  ld.shared.u32 %r10, [%r9];
  add.u32 %r11, %r10, %r7;
  st.global.u32 [%rd1], %r11;",
    );
    let want: Vec<u32> = (0..64u32)
        .map(|t| 7 * (63 - t) + if t < 32 { t ^ 1 } else { 0 })
        .collect();
    expect_out(&ptx, "k", 1, Dim3::x(64), 0, &want);

    // Lanes 16–31 shuffle down among themselves, lanes 0–15 up, at two instructions.
    let ptx = kernel(
        "",
        "  setp.lt.u32 %p1, %r0, 16;
  @%p1 bra LOW;
  shfl.sync.down.b32 %r7, %r0, 1, 31, 0xffff0000;
  bra DONE;
LOW:
  shfl.sync.up.b32 %r7, %r0, 1, 0, 0x0000ffff;
DONE:
  st.global.u32 [%rd1], %r7;",
    );
    // `.down` by 1 with clamp 31: lane 31 keeps its own value; `.up` by 1: lane 0 does.
    let want: Vec<u32> = (0..32u32)
        .map(|t| match t {
            0 | 31 => t,
            1..16 => t - 1,
            _ => t + 1,
        })
        .collect();
    expect_out(&ptx, "k", 1, Dim3::x(32), 0, &want);
}

/// A fault after a barrier names the faulting thread; a function called after a barrier
/// reads its caller's `%tid`.
#[test]
fn threads_keep_their_names_across_barriers() {
    let ptx = kernel(
        "  .shared .align 4 .b32 tile[16];",
        "  bar.sync 0;
  mov.u32 %r3, tile;
  shl.b32 %r4, %r37, 2;
  add.s32 %r4, %r3, %r4;
  st.shared.u32 [%r4], %r0;
  bar.sync 0;",
    );
    // The thread of linear index 16 faults first.
    expect_fault(
        &ptx,
        "k",
        Dim3::x(20),
        1,
        &[".shared variable `tile`", "thread (16,0,0)"],
    );
    expect_fault(
        &ptx,
        "k",
        Dim3::new(3, 7, 1),
        1,
        &[".shared variable `tile`", "thread (1,5,0)"],
    );
    let ptx = format!(
        "{HEAD}.func (.reg .b32 r) twice_tid()\n{{\n  mov.u32 r, %tid.x;\n  add.u32 r, r, r;\n  ret;\n}}\n{}",
        kernel(
            "",
            "  bar.sync 0;
  call (%r3), twice_tid;
  bar.sync 0;
  st.global.u32 [%rd1], %r3;",
        )
        .trim_start_matches(HEAD)
    );
    let want: Vec<u32> = (0..40).map(|t| 2 * t).collect();
    expect_out(&ptx, "k", 1, Dim3::x(40), 0, &want);
}

/// Barriers and collectives inside `.func`s run inlined into the kernels that call them:
/// `.param` and `.reg` parameters and results, a call in a loop, nested calls, `ret` in
/// the middle, the callee's registers and `.local` word at zero on every call, guarded
/// calls; the function itself is refused for host calls, and recursion refuses the kernel.
#[test]
fn barriers_inside_functions_run_inlined() {
    let funcs = "
.shared .align 4 .b32 box[64];
// Stores v at box[t], waits, reads box[63 - t], waits again (race-free).
.func (.param .b32 r) mirror(.param .b32 v, .param .b32 t)
{
  .reg .b32 %v, %t, %a, %o;
  ld.param.b32 %v, [v];
  ld.param.b32 %t, [t];
  mov.u32 %a, box;
  shl.b32 %o, %t, 2;
  add.u32 %a, %a, %o;
  st.shared.u32 [%a], %v;
  bar.sync 0;
  xor.b32 %o, %t, 63;
  shl.b32 %o, %o, 2;
  mov.u32 %a, box;
  add.u32 %a, %a, %o;
  ld.shared.u32 %v, [%a];
  bar.sync 0;
  st.param.b32 [r], %v;
  ret;
}
// x plus its butterfly partner's x; its .local word and %acc read 0 on every call.
.func (.reg .b32 out) pair_sum(.reg .b32 x)
{
  .local .align 4 .b32 scratch;
  .reg .b32 %s, %acc, %y;
  .reg .pred %q;
  ld.local.u32 %s, [scratch];
  add.u32 %acc, %acc, %s;
  st.local.u32 [scratch], 1000;
  shfl.sync.bfly.b32 %y, x, 1, 31, -1;
  add.u32 %acc, %acc, %y;
  add.u32 out, %acc, x;
  setp.eq.u32 %q, x, 7;
  @%q ret;
  add.u32 %acc, %acc, 0;
  ret;
}
// No sync point of its own; calls one that has.
.func (.reg .b32 out) twice(.reg .b32 x)
{
  .reg .b32 %a;
  call (%a), pair_sum, (x);
  call (out), pair_sum, (%a);
  ret;
}
";
    let body = "  mul.lo.u32 %r1, %r0, 10;
  mov.u32 %r2, 0;
LOOP:
  {
    .param .b32 p0;
    .param .b32 p1;
    .param .b32 r0;
    st.param.b32 [p0], %r1;
    st.param.b32 [p1], %r0;
    call (r0), mirror, (p0, p1);
    ld.param.b32 %r3, [r0];
  }
  call (%r8), pair_sum, (%r0);
  add.u32 %r9, %r9, %r8;
  add.u32 %r1, %r3, 1;
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p1, %r2, 3;
  @%p1 bra LOOP;
  st.global.u32 [%rd1], %r1;
  st.global.u32 [%rd1+1024], %r9;
  call (%r4), twice, (%r0);
  st.global.u32 [%rd1+256], %r4;
  mov.u32 %r5, 77;
  mov.u32 %r6, 77;
  mov.u32 %r7, %ntid.x;
  setp.ne.u32 %p2, %r7, 0;
  @%p2 call (%r5), pair_sum, (%r0);
  @!%p2 call (%r6), pair_sum, (%r0);
  st.global.u32 [%rd1+512], %r5;
  st.global.u32 [%rd1+768], %r6;";
    let ptx = format!("{HEAD}{funcs}{}", kernel("", body).trim_start_matches(HEAD));
    // mirror three times: 10(63 - t) + 1, then 10t + 2, then 10(63 - t) + 3.
    let pair = |t: u32| t + (t ^ 1);
    let mut want = vec![0u32; 320];
    for t in 0..64u32 {
        let i = t as usize;
        want[i] = 10 * (63 - t) + 3;
        want[64 + i] = pair(t) + pair(t ^ 1);
        want[128 + i] = pair(t);
        want[192 + i] = 77;
        want[256 + i] = 3 * pair(t);
    }
    expect_out(&ptx, "k", 1, Dim3::x(64), 0, &want);

    // The functions alone: refused, with the reason.
    let module = Module::parse(&ptx).expect("the module parses");
    let mirror = module.signature("mirror").expect("mirror is declared");
    assert!(!mirror.has_body);
    for (name, e) in engines(&ptx) {
        let err = e
            .call("twice", &[ptxjit::Value::new(ptxjit::ast::Type::U32, 1)])
            .expect_err("a .func with barriers is not called from the host");
        assert!(err.to_string().contains("runs inlined"), "{name}: {err}");
    }

    // Recursion through such a function refuses the kernel.
    let ptx = format!(
        "{HEAD}.func f()\n{{\n  bar.sync 0;\n  call f;\n  ret;\n}}\n{}",
        kernel("", "  call f;").trim_start_matches(HEAD)
    );
    for (name, e) in engines(&ptx) {
        let mut out = [0u8; 4];
        let err = e
            .launch("k", Dim3::x(1), Dim3::x(1), &mut [Arg::Buffer(&mut out)])
            .expect_err("recursion cannot be inlined");
        assert!(err.to_string().contains("recursively"), "{name}: {err}");
    }
}

/// Checked mode tests a run of accesses through one register once, at its first access; a
/// run must not reach past a sync point, where the next thread to run may be another one
/// (here warp 1 resumes right after warp 0 tested its own run). The last thread's second
/// load is past the buffer: every engine reports it.
#[test]
fn span_checks_do_not_reach_across_sync_points() {
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 inp, .param .u64 out)\n{{\n  \
         .reg .b32 %r<8>;\n  .reg .b64 %rd<8>;\n  .reg .pred %p;\n  \
         ld.param.u64 %rd1, [inp];\n  ld.param.u64 %rd5, [out];\n  mov.u32 %r1, %tid.x;\n  \
         setp.lt.u32 %p, %r1, 32;\n  mul.wide.u32 %rd3, %r1, 4;\n  add.s64 %rd2, %rd1, %rd3;\n  \
         @%p shfl.sync.idx.b32 %r5, %r1, 0, 31, -1;\n  ld.global.u32 %r2, [%rd2];\n  \
         @!%p shfl.sync.idx.b32 %r6, %r1, 0, 31, -1;\n  ld.global.u32 %r3, [%rd2+4];\n  \
         add.u32 %r4, %r2, %r3;\n  add.s64 %rd6, %rd5, %rd3;\n  st.global.u32 [%rd6], %r4;\n  \
         ret;\n}}\n"
    );
    for (name, e) in engines(&ptx) {
        let (mut inp, mut out) = (vec![0u8; 256], vec![0u8; 256]);
        let mut args = [Arg::Buffer(&mut inp), Arg::Buffer(&mut out)];
        let err = e
            .launch("k", Dim3::x(1), Dim3::x(64), &mut args)
            .expect_err("the last thread reads past the buffer");
        let msg = err.to_string();
        assert!(
            msg.contains("out of bounds") && msg.contains("thread (63,0,0)"),
            "{name}: {msg}"
        );
    }
}

/// `cp.async` copies global memory into shared memory (here when it runs), zero-filling past
/// `src_size` or everything when `ignore_src` holds, and never reads the bytes it does not
/// copy (the source of a zero-size copy is past the buffer); a guarded copy that does not
/// run leaves shared memory alone. Each thread copies 16 bytes, then its 8-byte and 4-byte
/// forms, and reads back its 28 bytes after the barrier.
#[test]
fn cp_async_copies_and_zero_fills() {
    let body = "  ld.param.u64 %rd2, [out];
  mov.u32 %r1, sh;
  shl.b32 %r2, %r0, 5;
  add.u32 %r3, %r1, %r2;
  cvt.u64.u32 %rd3, %r2;
  ld.param.u64 %rd4, [inp];
  add.s64 %rd5, %rd4, %rd3;
  rem.u32 %r4, %r0, 18;
  setp.eq.u32 %p1, %r4, 0;
  mov.u64 %rd7, %rd5;
  @%p1 add.s64 %rd7, %rd7, 100000;
  cp.async.cg.shared.global [%r3], [%rd7], 16, %r4;
  and.b32 %r5, %r0, 1;
  setp.eq.u32 %p2, %r5, 1;
  cp.async.ca.shared.global [%r3+16], [%rd5+16], 8, %p2;
  setp.lt.u32 %p3, %r0, 8;
  @%p3 cp.async.ca.shared.global.L2::128B [%r3+24], [%rd5+24], 4;
  cp.async.commit_group;
  cp.async.wait_group 0;
  cp.async.wait_all;
  bar.sync 0;
  mul.wide.u32 %rd6, %r0, 32;
  add.s64 %rd6, %rd2, %rd6;
  ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r3];
  st.global.v4.u32 [%rd6], {%r10, %r11, %r12, %r13};
  ld.shared.v2.u32 {%r14, %r15}, [%r3+16];
  st.global.v2.u32 [%rd6+16], {%r14, %r15};
  ld.shared.u32 %r16, [%r3+24];
  st.global.u32 [%rd6+24], %r16;";
    let ptx = format!(
        "{HEAD}.visible .entry k(.param .u64 inp, .param .u64 out)\n{{\n  .reg .b32 %r<20>;\n  \
         .reg .b64 %rd<8>;\n  .reg .pred %p<4>;\n  .shared .align 16 .b8 sh[1024];\n  \
         mov.u32 %r0, %tid.x;\n{body}\n  ret;\n}}\n"
    );
    let threads = 32usize;
    let inp: Vec<u8> = (0..threads * 32).map(|i| (i * 7 + 3) as u8).collect();
    let mut want = vec![0u8; threads * 32];
    for t in 0..threads {
        let (src, dst) = (&inp[t * 32..], &mut want[t * 32..]);
        let n = t % 18;
        // 16 bytes, the first n from src (none from the far address when n is 0).
        dst[..n.min(16)].copy_from_slice(&src[..n.min(16)]);
        // 8 bytes unless ignore_src (odd threads).
        if t % 2 == 0 {
            dst[16..24].copy_from_slice(&src[16..24]);
        }
        // 4 bytes for threads below 8; shared memory keeps its zeros for the others.
        if t < 8 {
            dst[24..28].copy_from_slice(&src[24..28]);
        }
    }
    for (name, e) in engines(&ptx) {
        let (mut i, mut o) = (inp.clone(), vec![0u8; threads * 32]);
        let mut args = [Arg::Buffer(&mut i), Arg::Buffer(&mut o)];
        e.launch("k", Dim3::x(1), Dim3::x(threads as u32), &mut args)
            .unwrap_or_else(|err| panic!("{name}: {err}"));
        assert_eq!(o, want, "{name}");
    }
}

/// Shared accesses through one register share one span test in checked mode; when the span
/// leaves the variable, each access is checked on its own and the fault names the one that
/// is out of bounds (here the second, for the last thread only).
#[test]
fn shared_span_tests_report_the_faulting_access() {
    let ptx = kernel(
        "  .shared .align 4 .b32 tile[17];",
        "  mov.u32 %r3, tile;
  shl.b32 %r4, %r0, 2;
  add.s32 %r4, %r3, %r4;
  st.shared.u32 [%r4], %r0;
  st.shared.u32 [%r4+4], %r0;
  bar.sync 0;",
    );
    expect_out(&ptx, "k", 1, Dim3::x(16), 0, &[0; 16]);
    expect_fault(
        &ptx,
        "k",
        Dim3::x(17),
        1,
        &[
            ".shared variable `tile`",
            "thread (16,0,0)",
            "st.shared.u32 [%r4+4]",
        ],
    );
}

/// `shfl` and `vote` without `.sync` (before sm_70; ptxas takes them for sm_60 as written
/// here) act among the lanes that run them together: all 32 lanes in converged code, the
/// lanes of a divergent branch inside it.
#[test]
fn shuffles_and_votes_without_sync() {
    let old = ".version 6.0\n.target sm_60\n.address_size 64\n";
    let ptx = kernel(
        "",
        "  and.b32 %r1, %r0, 1;
  setp.eq.u32 %p1, %r1, 1;
  shfl.down.b32 %r2|%p2, %r0, 1, 31;
  selp.u32 %r3, 1000, 0, %p2;
  add.u32 %r2, %r2, %r3;
  vote.ballot.b32 %r4, %p1;
  mov.u32 %r5, 0;
  mov.u32 %r6, 0;
  setp.lt.u32 %p3, %r0, 16;
  @!%p3 bra SKIP;
  shfl.idx.b32 %r5, %r0, 3, 31;
  vote.ballot.b32 %r6, %p1;
SKIP:
  mul.wide.u32 %rd2, %r0, 16;
  add.s64 %rd2, %rd0, %rd2;
  st.global.v4.u32 [%rd2], {%r2, %r4, %r5, %r6};",
    )
    .replace(HEAD, old);
    let want: Vec<u32> = (0..32u32)
        .flat_map(|t| {
            // down by 1: lane t reads t + 1 (valid below 31); lane 31 keeps its own value.
            let down = if t < 31 { t + 1 + 1000 } else { t };
            let (idx, inner) = if t < 16 { (3, 0x0000_aaaa) } else { (0, 0) };
            [down, 0xaaaa_aaaa, idx, inner]
        })
        .collect();
    expect_out(&ptx, "k", 1, Dim3::x(32), 0, &want);
}

/// Each kernel counts the `.shared` variables it uses, as ptxas does and an H200's
/// `%total_smem_size` tells (`tests/hardware/cases/smem_sizes_other_kernel.ptx`): six kernels
/// of one module each use a 40 KiB array of their own, 240 KiB together, more than a block
/// may have. Each launches and reads 40,960; a kernel using one of them and an 8-byte
/// variable reads 41,088 (40,968 rounded up to 128).
#[test]
fn each_kernel_counts_the_shared_memory_it_uses() {
    let mut ptx = String::from(".version 7.8\n.target sm_80\n.address_size 64\n");
    for k in 0..6 {
        ptx += &format!(".shared .align 4 .b8 s{k}[40960];\n");
    }
    ptx += ".shared .align 8 .b8 t[8];\n";
    let body = |uses: &[&str]| {
        let touch: String = (uses.iter())
            .map(|v| format!("  st.shared.u32 [{v}], %r;\n"))
            .collect();
        format!(
            "{{\n  .reg .b32 %r, %t;\n  .reg .b64 %rd;\n  ld.param.u64 %rd, [out];\n  \
             mov.u32 %r, 7;\n{touch}  mov.u32 %t, %total_smem_size;\n  \
             st.global.u32 [%rd], %t;\n  ret;\n}}\n"
        )
    };
    for k in 0..6 {
        let array = format!("s{k}+40956");
        ptx += &format!(".visible .entry k{k}(.param .u64 out)\n{}", body(&[&array]));
    }
    ptx += &format!(
        ".visible .entry both(.param .u64 out)\n{}",
        body(&["s1", "t+4"])
    );
    for k in 0..6 {
        expect_out(&ptx, &format!("k{k}"), 2, Dim3::x(32), 0, &[40_960]);
    }
    expect_out(&ptx, "both", 1, Dim3::x(32), 0, &[41_088]);
}
