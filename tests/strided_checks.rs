//! Checked loops whose accesses move by a fixed step (src/jit/lower/strided.rs): the JIT tests
//! them in one iteration and runs the iterations it proved without tests. Each case runs a
//! loop to its last valid iteration (the sum is worked out here) and one iteration further,
//! which must fault on every engine as on the interpreter: past the end, below the start, at
//! a 32-bit index that wraps (signed and unsigned), and in an inner loop entered again at an
//! address the last entry's budget would not cover. Accesses (and widened indices) that move
//! by the same step share one budget bound, the least of their rooms: the `pair` loop reads
//! two buffers at indices a fixed distance apart and faults where the first of the two
//! leaves its buffer (or wraps), whichever buffer that is.

mod common;

use common::engines;
use ptxjit::{Arg, Dim3, RunError, Value};

const PTX: &str = r#".version 7.8
.target sm_80
.address_size 64
// sum of buf[start + k * step], k < count, through base = buf + shift (bytes); 32-bit
// signed index widened by mul.wide.s32, the step a register.
.visible .entry column(.param .u64 buf, .param .u64 out, .param .s64 shift,
    .param .s32 start, .param .s32 step, .param .u32 count)
{
    .reg .u32 %s, %v, %k, %n;
    .reg .s32 %i, %d;
    .reg .u64 %b, %a, %o;
    .reg .s64 %sh;
    .reg .pred %p;
    ld.param.u64 %b, [buf];
    ld.param.s64 %sh, [shift];
    add.s64 %b, %b, %sh;
    ld.param.s32 %i, [start];
    ld.param.s32 %d, [step];
    ld.param.u32 %n, [count];
    mov.u32 %s, 0;
    mov.u32 %k, 0;
L:
    mul.wide.s32 %a, %i, 4;
    add.s64 %a, %b, %a;
    ld.global.u32 %v, [%a];
    add.u32 %s, %s, %v;
    add.s32 %i, %i, %d;
    add.u32 %k, %k, 1;
    setp.lt.u32 %p, %k, %n;
    @%p bra L;
    ld.param.u64 %o, [out];
    st.global.u32 [%o], %s;
    ret;
}
// The same with an unsigned index widened by cvt.u64.u32 and a constant step of one.
.visible .entry ucolumn(.param .u64 buf, .param .u64 out, .param .s64 shift,
    .param .u32 start, .param .u32 step, .param .u32 count)
{
    .reg .u32 %s, %v, %k, %n, %i;
    .reg .u64 %b, %a, %o;
    .reg .s64 %sh;
    .reg .pred %p;
    ld.param.u64 %b, [buf];
    ld.param.s64 %sh, [shift];
    add.s64 %b, %b, %sh;
    ld.param.u32 %i, [start];
    ld.param.u32 %n, [count];
    mov.u32 %s, 0;
    mov.u32 %k, 0;
L:
    cvt.u64.u32 %a, %i;
    shl.b64 %a, %a, 2;
    add.s64 %a, %b, %a;
    ld.global.u32 %v, [%a];
    add.u32 %s, %s, %v;
    add.u32 %i, %i, 1;
    add.u32 %k, %k, 1;
    setp.lt.u32 %p, %k, %n;
    @%p bra L;
    ld.param.u64 %o, [out];
    st.global.u32 [%o], %s;
    ret;
}
// Rows of 8 words, `rowstep` words apart: the inner loop walks a row through a pointer
// that moves by 4 bytes, entered again for each of `rows` rows.
.visible .entry rows(.param .u64 buf, .param .u64 out, .param .u64 shift,
    .param .u32 rowstep, .param .u32 unused, .param .u32 rows)
{
    .reg .u32 %s, %v, %j, %r, %n, %rs;
    .reg .u64 %b, %a, %o, %w;
    .reg .pred %p, %q;
    ld.param.u64 %b, [buf];
    ld.param.u32 %rs, [rowstep];
    ld.param.u32 %n, [rows];
    mov.u32 %s, 0;
    mov.u32 %r, 0;
ROW:
    mul.lo.u32 %v, %r, %rs;
    mul.wide.u32 %w, %v, 4;
    add.s64 %a, %b, %w;
    mov.u32 %j, 0;
L:
    ld.global.u32 %v, [%a];
    add.u32 %s, %s, %v;
    add.s64 %a, %a, 4;
    add.u32 %j, %j, 1;
    setp.lt.u32 %p, %j, 8;
    @%p bra L;
    add.u32 %r, %r, 1;
    setp.lt.u32 %q, %r, %n;
    @%q bra ROW;
    ld.param.u64 %o, [out];
    st.global.u32 [%o], %s;
    ret;
}
// s += buf[i] + 3 * buf2'[i + off] for count iterations from i = start, i += step, where
// buf2' = buf2 + shift2 bytes: both indices signed and widened, both moving by `step`. The
// loop leaves from the middle of its body, with its sum in a register it carries.
.visible .entry pair(.param .u64 buf, .param .u64 out, .param .u64 buf2,
    .param .s64 shift2, .param .s32 start, .param .s32 off, .param .s32 step,
    .param .u32 count)
{
    .reg .u32 %s, %v, %w, %k, %n;
    .reg .s32 %i, %j, %off, %d;
    .reg .u64 %b, %b2, %a, %c, %o;
    .reg .s64 %sh;
    .reg .pred %p;
    ld.param.u64 %b, [buf];
    ld.param.u64 %b2, [buf2];
    ld.param.s64 %sh, [shift2];
    add.s64 %b2, %b2, %sh;
    ld.param.s32 %i, [start];
    ld.param.s32 %off, [off];
    ld.param.s32 %d, [step];
    ld.param.u32 %n, [count];
    mov.u32 %s, 0;
    mov.u32 %k, 0;
L:
    mul.wide.s32 %a, %i, 4;
    add.s64 %a, %b, %a;
    ld.global.u32 %v, [%a];
    add.s32 %j, %i, %off;
    mul.wide.s32 %c, %j, 4;
    add.s64 %c, %b2, %c;
    ld.global.u32 %w, [%c];
    mad.lo.u32 %v, %w, 3, %v;
    add.u32 %s, %s, %v;
    add.s32 %i, %i, %d;
    add.u32 %k, %k, 1;
    setp.ge.u32 %p, %k, %n;
    @%p bra DONE;
    bra.uni L;
DONE:
    ld.param.u64 %o, [out];
    st.global.u32 [%o], %s;
    ret;
}
"#;

/// How the engines describe an address far from the buffer (which memory lies near it
/// differs between them).
const WILD: &[&str] = &["no memory there", "out of bounds"];

/// Words 0, 1, 2, ... of the buffer the loops read.
const WORDS: usize = 64;

/// Launches `kernel` on one thread over the buffer of `WORDS` words `i` (word `i` holds
/// `i * i + 1`): the sum, or the fault's message.
fn run(
    kernel: &str,
    shift: i64,
    a: u32,
    b: u32,
    count: u32,
) -> Vec<(&'static str, Result<u32, String>)> {
    let words: Vec<u8> = (0..WORDS as u32)
        .flat_map(|i| (i * i + 1).to_le_bytes())
        .collect();
    engines(PTX)
        .into_iter()
        .map(|(name, e)| {
            let (mut buf, mut out) = (words.clone(), vec![0u8; 4]);
            let r = e.launch(
                kernel,
                Dim3::x(1),
                Dim3::x(1),
                &mut [
                    Arg::Buffer(&mut buf),
                    Arg::Buffer(&mut out),
                    Arg::Scalar(Value::u64(shift as u64)),
                    Arg::Scalar(Value::u32(a)),
                    Arg::Scalar(Value::u32(b)),
                    Arg::Scalar(Value::u32(count)),
                ],
            );
            (name, outcome(name, r, &out))
        })
        .collect()
}

/// A launch's sum (the first word of `out`), or its fault's message.
fn outcome(name: &str, r: Result<(), RunError>, out: &[u8]) -> Result<u32, String> {
    match r {
        Ok(()) => Ok(u32::from_le_bytes(out[..4].try_into().unwrap())),
        Err(RunError::Fault(f, _)) => Err(f.message),
        Err(e) => panic!("{name}: {e}"),
    }
}

/// The sum of words at `indices` (word `i` holds `i * i + 1`).
fn sum(indices: impl Iterator<Item = i64>) -> u32 {
    indices.fold(0u32, |s, i| s.wrapping_add((i * i + 1) as u32))
}

/// Every engine sums `want`; one iteration more faults with a message holding `fault`.
fn last_valid_then_fault(
    kernel: &str,
    shift: i64,
    a: u32,
    b: u32,
    count: u32,
    want: u32,
    fault: &[&str],
) {
    sums_then_faults(|n| run(kernel, shift, a, b, n), count, want, fault);
}

/// Every engine's launch of `count` iterations (`launch`) sums `want`; one iteration more
/// faults with a message holding one of `fault`.
fn sums_then_faults(
    launch: impl Fn(u32) -> Vec<(&'static str, Result<u32, String>)>,
    count: u32,
    want: u32,
    fault: &[&str],
) {
    for (name, r) in launch(count) {
        assert_eq!(r, Ok(want), "{name}: {count} iterations");
    }
    for (name, r) in launch(count + 1) {
        let message = r.expect_err(&format!("{name}: {} iterations fault", count + 1));
        assert!(
            fault.iter().any(|f| message.contains(f)),
            "{name}: {message}"
        );
    }
}

#[test]
fn a_column_walk_faults_at_the_first_word_past_the_end() {
    // Indices 3, 8, ..., 63 (13 iterations); the 14th reads index 68, 16 bytes past the end.
    let want = sum((0..13).map(|k| 3 + 5 * k));
    last_valid_then_fault("column", 0, 3, 5, 13, want, &["16 bytes past the end"]);
    // Longer strides in a longer walk from the start.
    let want = sum((0..8).map(|k| 9 * k));
    last_valid_then_fault("column", 0, 0, 9, 8, want, &["out of bounds"]);
}

#[test]
fn a_walk_down_faults_below_the_start() {
    // Through base = buf + 32 (index i reads word i + 8): indices 52 down to -8 in steps of
    // 6 read words 60 down to 0 (11 iterations); the 12th reads 24 bytes below the start.
    let want = sum((0..11).map(|k| 60 - 6 * k));
    last_valid_then_fault("column", 32, 52, (-6i32) as u32, 11, want, WILD);
}

#[test]
fn a_signed_index_that_wraps_faults_where_it_wraps() {
    // base = buf - 4 * (2^31 - 4): indices 2^31 - 4 .. 2^31 - 1 are words 0 to 3; the next
    // index is -2^31, 16 GiB below.
    let shift = -4 * ((1i64 << 31) - 4);
    let want = sum(0..4);
    last_valid_then_fault("column", shift, (1u32 << 31) - 4, 1, 4, want, WILD);
}

#[test]
fn an_unsigned_index_that_wraps_faults_where_it_wraps() {
    // base = buf - 4 * (2^32 - 3): indices 2^32 - 3 .. 2^32 - 1 are words 0 to 2; the next
    // index is 0, 16 GiB below.
    let shift = -4 * ((1i64 << 32) - 3);
    let want = sum(0..3);
    last_valid_then_fault("ucolumn", shift, u32::MAX - 2, 1, 3, want, WILD);
}

#[test]
fn an_inner_loop_entered_again_is_tested_again() {
    // Rows 16 words apart: rows 0 to 3 (words 0-7, 16-23, 32-39, 48-55) lie inside; row 4
    // starts at word 64, the first past the end, while a budget carried over from row 0's
    // first test would still count 31 proved iterations.
    let want = sum((0..4).flat_map(|r| (0..8).map(move |j| 16 * r + j)));
    last_valid_then_fault("rows", 0, 16, 0, 4, want, &["0 bytes past the end"]);
}

/// Words in the second buffer of `pair` (word `i` holds `1000 + i`).
const WORDS2: usize = 40;

/// Launches `pair` on one thread: the sum, or the fault's message.
fn run_pair(
    shift2: i64,
    start: i32,
    off: i32,
    step: i32,
    count: u32,
) -> Vec<(&'static str, Result<u32, String>)> {
    let words: Vec<u8> = (0..WORDS as u32)
        .flat_map(|i| (i * i + 1).to_le_bytes())
        .collect();
    let words2: Vec<u8> = (0..WORDS2 as u32)
        .flat_map(|i| (1000 + i).to_le_bytes())
        .collect();
    engines(PTX)
        .into_iter()
        .map(|(name, e)| {
            let (mut buf, mut out, mut buf2) = (words.clone(), vec![0u8; 4], words2.clone());
            let r = e.launch(
                "pair",
                Dim3::x(1),
                Dim3::x(1),
                &mut [
                    Arg::Buffer(&mut buf),
                    Arg::Buffer(&mut out),
                    Arg::Buffer(&mut buf2),
                    Arg::Scalar(Value::u64(shift2 as u64)),
                    Arg::Scalar(Value::u32(start as u32)),
                    Arg::Scalar(Value::u32(off as u32)),
                    Arg::Scalar(Value::u32(step as u32)),
                    Arg::Scalar(Value::u32(count)),
                ],
            );
            (name, outcome(name, r, &out))
        })
        .collect()
}

/// `pair`'s sum over indices `i` of the first buffer and `j` of the second (word `j` of
/// the second buffer as it lies after `shift2`).
fn pair_sum(pairs: impl Iterator<Item = (i64, i64)>) -> u32 {
    pairs.fold(0u32, |s, (i, j)| {
        let w = 1000 + j as u32;
        s.wrapping_add((i * i + 1) as u32).wrapping_add(3 * w)
    })
}

/// [`sums_then_faults`] for `pair`.
fn pair_last_valid_then_fault(
    (shift2, start, off, step): (i64, i32, i32, i32),
    count: u32,
    want: u32,
    fault: &[&str],
) {
    sums_then_faults(
        |n| run_pair(shift2, start, off, step, n),
        count,
        want,
        fault,
    );
}

#[test]
fn two_accesses_with_one_step_fault_where_the_first_leaves_its_buffer() {
    // Upwards, the shorter second buffer runs out first: j = i + 2 reaches word 40 (its
    // end) at i = 38, while the first buffer has 26 words left.
    let want = pair_sum((0..38).map(|i| (i, i + 2)));
    pair_last_valid_then_fault((0, 0, 2, 1), 38, want, &["0 bytes past the end"]);
    // The first buffer runs out first when the second is read further back: i = 3, 6, ...,
    // 63 reads j = i - 30 (words 0 to 33 of the second buffer after i = 30); i = 66 is past
    // the first buffer's end. Counting from i = 30 so that j starts at 0.
    let want = pair_sum((0..12).map(|k| (30 + 3 * k, 3 * k)));
    pair_last_valid_then_fault((0, 30, -30, 3), 12, want, &["8 bytes past the end"]);
    // Downwards, by a step known only at run time: the second buffer's start is reached
    // first (j = i - 24 is below 0 at i = 23), the first's index is still 23.
    let want = pair_sum((0..40).map(|k| (63 - k, 39 - k)));
    pair_last_valid_then_fault((0, 63, -24, -1), 40, want, WILD);
}

#[test]
fn two_widened_indices_with_one_step_fault_where_the_first_wraps() {
    // j = i + 2^31 - 4 reaches 2^31 - 1 at i = 3 and wraps to -2^31 at i = 4, while i is
    // small: the second buffer, shifted down by 4 * (2^31 - 4) bytes, is read at words 0
    // to 3, and the wrapped index lies 16 GiB below it.
    let off = (1i32 << 30) - 2 + ((1i32 << 30) - 2);
    let shift2 = -4 * i64::from(off);
    let want = pair_sum((0..4).map(|i| (i, i)));
    pair_last_valid_then_fault((shift2, 0, off, 1), 4, want, WILD);
}
