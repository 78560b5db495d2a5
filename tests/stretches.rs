//! Checked straight-line code whose runs of accesses are tested together, once, at the
//! start of a stretch (src/jit/lower/stretches.rs): when every span passes, no access of
//! the runs is tested; when one fails, a tested copy of the stretch checks each access on
//! its own. Either way the results, the stores made before a fault, and the fault itself
//! (thread, line, message) must be the interpreter's. The kernel copies a row of 8 words
//! per thread, loads and stores interleaved, then makes a guarded store and two stores
//! through a register written inside the stretch (a run the stretch cannot test up front).

mod common;

use common::engines;
use ptxjit::{Arg, Dim3, RunError, Value};

const PTX: &str = r#".version 7.8
.target sm_80
.address_size 64
// dst[t * 18 + j] = src[t * 9 + j] + t for j < 8; dst[t * 18 + 8] = t when `extra`;
// dst[t * 18 + 16] and [+ 17] = the first two source words.
.visible .entry rows(.param .u64 src, .param .u64 dst, .param .u32 extra)
{
    .reg .u32 %t, %e, %k, %a<8>;
    .reg .u64 %ps, %pd, %q, %x;
    .reg .pred %g;
    ld.param.u64 %ps, [src];
    ld.param.u64 %pd, [dst];
    ld.param.u32 %e, [extra];
    mov.u32 %t, %tid.x;
    mul.lo.u32 %k, %t, 36;
    cvt.u64.u32 %x, %k;
    add.s64 %ps, %ps, %x;
    mul.lo.u32 %k, %t, 72;
    cvt.u64.u32 %x, %k;
    add.s64 %pd, %pd, %x;
    ld.global.u32 %a0, [%ps];
    ld.global.u32 %a1, [%ps+4];
    add.u32 %a0, %a0, %t;
    st.global.u32 [%pd], %a0;
    ld.global.u32 %a2, [%ps+8];
    ld.global.u32 %a3, [%ps+12];
    add.u32 %a1, %a1, %t;
    st.global.u32 [%pd+4], %a1;
    ld.global.u32 %a4, [%ps+16];
    ld.global.u32 %a5, [%ps+20];
    ld.global.u32 %a6, [%ps+24];
    ld.global.u32 %a7, [%ps+28];
    add.u32 %a2, %a2, %t;
    add.u32 %a3, %a3, %t;
    add.u32 %a4, %a4, %t;
    add.u32 %a5, %a5, %t;
    add.u32 %a6, %a6, %t;
    add.u32 %a7, %a7, %t;
    st.global.u32 [%pd+8], %a2;
    st.global.u32 [%pd+12], %a3;
    st.global.u32 [%pd+16], %a4;
    st.global.u32 [%pd+20], %a5;
    st.global.u32 [%pd+24], %a6;
    st.global.u32 [%pd+28], %a7;
    setp.ne.u32 %g, %e, 0;
    @%g st.global.u32 [%pd+32], %t;
    add.s64 %q, %pd, 64;
    sub.u32 %a0, %a0, %t;
    sub.u32 %a1, %a1, %t;
    st.global.u32 [%q], %a0;
    st.global.u32 [%q+4], %a1;
    ret;
}
"#;

/// Lines of the kernel's accesses, as the engines report them.
const LOAD_A6: u32 = 31;
const STORE_A3: u32 = 40;
const GUARDED_STORE: u32 = 46;
const STORE_Q: u32 = 50;

/// Source word `i` holds `1000 + i`.
fn source(words: usize) -> Vec<u8> {
    (0..words as u32)
        .flat_map(|i| (1000 + i).to_le_bytes())
        .collect()
}

fn words(bytes: &[u8]) -> Vec<u32> {
    (bytes.chunks(4))
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

/// The destination after threads `0..threads` ran whole, thread `threads` (if any) made
/// its first `partial` of the row's stores, in the kernel's order: row words 0, 1, 2, ...,
/// 7, then 8 (when `extra`), 16, 17.
fn expected(dst_words: usize, threads: u32, partial: usize, extra: bool) -> Vec<u32> {
    let mut d = vec![0u32; dst_words];
    for t in 0..=threads {
        let s = |j: u32| 1000 + 9 * t + j;
        let mut stores: Vec<(u32, u32)> = (0..8).map(|j| (j, s(j) + t)).collect();
        if extra {
            stores.push((8, t));
        }
        stores.push((16, s(0)));
        stores.push((17, s(1)));
        let n = if t < threads { stores.len() } else { partial };
        for &(j, v) in stores.iter().take(n) {
            d[(18 * t + j) as usize] = v;
        }
    }
    d
}

/// A fault as the tests compare it: thread, line, message.
type Where = ([u32; 3], u32, String);

/// Launches `rows` on one block of `threads` threads: for each engine, the destination
/// words and the fault (thread, line, message), if any.
fn run(
    threads: u32,
    src_words: usize,
    dst_words: usize,
    extra: bool,
) -> Vec<(&'static str, Vec<u32>, Option<Where>)> {
    engines(PTX)
        .into_iter()
        .map(|(name, e)| {
            let (mut src, mut dst) = (source(src_words), vec![0u8; 4 * dst_words]);
            let r = e.launch(
                "rows",
                Dim3::x(1),
                Dim3::x(threads),
                &mut [
                    Arg::Buffer(&mut src),
                    Arg::Buffer(&mut dst),
                    Arg::Scalar(Value::u32(extra as u32)),
                ],
            );
            let fault = match r {
                Ok(()) => None,
                Err(RunError::Fault(f, _)) => Some((f.tid, f.line, f.message)),
                Err(e) => panic!("{name}: {e}"),
            };
            (name, words(&dst), fault)
        })
        .collect()
}

#[test]
fn rows_inside_their_buffers_run_untested_and_match() {
    for extra in [false, true] {
        for (name, dst, fault) in run(6, 9 * 6, 18 * 6, extra) {
            assert_eq!(fault, None, "{name}");
            assert_eq!(dst, expected(18 * 6, 6, 0, extra), "{name}, extra {extra}");
        }
    }
}

#[test]
fn a_load_past_the_source_faults_after_the_stores_before_it() {
    // Thread 5's source row starts at word 45 of 51: its load of word 6 (51) is the
    // first past the end, after its stores of words 0 and 1.
    for (name, dst, fault) in run(6, 51, 18 * 6, false) {
        let (tid, line, message) = fault.expect("faults");
        assert_eq!((tid, line), ([5, 0, 0], LOAD_A6), "{name}: {message}");
        assert!(
            message.contains("0 bytes past the end"),
            "{name}: {message}"
        );
        assert_eq!(dst, expected(18 * 6, 5, 2, false), "{name}");
    }
}

#[test]
fn a_store_past_the_destination_faults_where_it_is() {
    // Thread 5's row starts at word 90 of 93: its store of row word 3 (93) is the first
    // past the end.
    for (name, dst, fault) in run(6, 9 * 6, 93, false) {
        let (tid, line, message) = fault.expect("faults");
        assert_eq!((tid, line), ([5, 0, 0], STORE_A3), "{name}: {message}");
        assert!(
            message.contains("0 bytes past the end"),
            "{name}: {message}"
        );
        assert_eq!(dst, expected(93, 5, 3, false), "{name}");
    }
}

#[test]
fn a_guarded_store_faults_only_when_it_runs() {
    // Thread 5's row has its 8 words and no more: the guarded store of row word 8 is past
    // the end, so the span test of the destination fails for thread 5 whether it runs or
    // not. Off, the stores through the moved register fault (row word 16); on, it does.
    let (off, on) = (run(6, 9 * 6, 98, false), run(6, 9 * 6, 98, true));
    for (name, dst, fault) in off {
        let (tid, line, message) = fault.expect("faults");
        assert_eq!((tid, line), ([5, 0, 0], STORE_Q), "{name}: {message}");
        assert_eq!(dst, expected(98, 5, 8, false), "{name}");
    }
    for (name, dst, fault) in on {
        let (tid, line, message) = fault.expect("faults");
        assert_eq!((tid, line), ([5, 0, 0], GUARDED_STORE), "{name}: {message}");
        assert_eq!(dst, expected(98, 5, 8, true), "{name}");
    }
}

/// A run whose base register is written after the stretch starts is not tested with the
/// stretch's runs; it starts inside the stretch, so the stretch must reach its last
/// member: thread 0 takes the tested copy (nothing in the recent areas yet), thread 1 the
/// proved one (which tests the left-out run's span for its own base), thread 2 the tested
/// one again (its first base is another buffer), whose load past `b` must be tested.
const LEFT_OUT: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 a1, .param .u64 a2, .param .u64 b, .param .u64 out)
{
    .reg .u32 %t, %r<5>;
    .reg .u64 %pa, %pa2, %pb, %po, %x;
    .reg .pred %g;
    ld.param.u64 %pa, [a1];
    ld.param.u64 %pa2, [a2];
    ld.param.u64 %po, [out];
    mov.u32 %t, %tid.x;
    setp.ge.u32 %g, %t, 2;
    selp.b64 %pa, %pa2, %pa, %g;
    mul.wide.u32 %x, %t, 4;
    ld.global.u32 %r1, [%pa];
    ld.param.u64 %pb, [b];
    add.s64 %pb, %pb, %x;
    ld.global.u32 %r2, [%pb];
    ld.global.u32 %r3, [%pa+4];
    ld.global.u32 %r4, [%pb+4];
    add.s64 %po, %po, %x;
    st.global.u32 [%po], %r4;
    ret;
}
"#;

#[test]
fn a_run_left_out_of_a_stretch_is_tested_in_both_copies() {
    for (name, e) in engines(LEFT_OUT) {
        let (mut a1, mut a2) = (vec![1u8; 8], vec![2u8; 8]);
        let (mut b, mut out) = (vec![3u8; 12], vec![0u8; 16]);
        let r = e.launch(
            "k",
            Dim3::x(1),
            Dim3::x(3),
            &mut [
                Arg::Buffer(&mut a1),
                Arg::Buffer(&mut a2),
                Arg::Buffer(&mut b),
                Arg::Buffer(&mut out),
            ],
        );
        let Err(RunError::Fault(f, _)) = r else {
            panic!("{name}: thread 2's load past `b` must fault, got {r:?}");
        };
        assert_eq!((f.tid, f.line), ([2, 0, 0], 21), "{name}: {}", f.message);
        assert!(
            f.message.contains("0 bytes past the end of buffer arg2"),
            "{name}: {}",
            f.message
        );
        // Threads 0 and 1 stored their words of `b` (bytes 4..8 and 8..12).
        assert_eq!(words(&out)[..2], [0x0303_0303, 0x0303_0303], "{name}");
    }
}
