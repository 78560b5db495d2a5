//! Faults and thread endings across calls, on every engine: a fault inside a callee is
//! reported at the call with the callee's line, runaway recursion stops at the depth limit,
//! calls to prototypes fault, `exit` in a callee ends the thread, parameters of a kernel are
//! read-only, local arrays are bounded. Lines and messages are written out by hand.

mod common;

use common::engines;
use ptxjit::{Arg, Dim3, Fault, RunError, Value};

const CALLS: &str = r#".version 7.8
.target sm_80
.address_size 64
.extern .func (.param .u32 r) missing(.param .u32 a);
.func (.param .u32 r) deep(.param .u32 a)
{
    .reg .u32 %a;
    ld.param.u32 %a, [a];
    add.u32 %a, %a, 1;
    {
        .param .u32 x;
        .param .u32 y;
        st.param.u32 [x], %a;
        call (y), deep, (x);
        ld.param.u32 %a, [y];
    }
    st.param.u32 [r], %a;
    ret;
}
.func poke(.param .u64 p)
{
    .reg .u64 %p;
    ld.param.u64 %p, [p];
    st.global.u32 [%p+64], 1;
    ret;
}
.func quit()
{
    exit;
}
.visible .entry k(.param .u64 out, .param .u32 mode)
{
    .reg .u32 %m, %t, %v;
    .reg .u64 %o, %a;
    .reg .pred %p;
    .local .u32 arr[4];
    ld.param.u64 %o, [out];
    ld.param.u32 %m, [mode];
    mov.u32 %t, %tid.x;
    mul.wide.u32 %a, %t, 4;
    add.u64 %a, %o, %a;
    st.global.u32 [%a], 7;
    setp.eq.u32 %p, %m, 1;
    @%p call poke, (%o);
    setp.eq.u32 %p, %m, 2;
    @%p call quit, ();
    setp.eq.u32 %p, %m, 3;
    @%p call (%v), deep, (%m);
    setp.eq.u32 %p, %m, 4;
    @%p call (%v), missing, (%m);
    setp.eq.u32 %p, %m, 5;
    mov.u64 %a, mode;
    @%p st.u32 [%a], 9;
    setp.eq.u32 %p, %m, 6;
    mov.u64 %a, arr;
    cvta.local.u64 %a, %a;
    @%p st.u32 [%a+16], 1;
    st.global.u32 [%a], 1;
    ret;
}
"#;

/// Launches `kernel(buffer, scalar)` of `ptx` on one block of 2 threads with the buffer
/// holding `words`; returns the buffer's words afterwards, or the fault, of each engine.
fn launch_2_threads(
    ptx: &str,
    kernel: &str,
    words: &[u32],
    scalar: u32,
) -> Vec<(&'static str, Result<Vec<u32>, Fault>)> {
    engines(ptx)
        .into_iter()
        .map(|(name, e)| {
            let mut buf: Vec<u8> = words.iter().flat_map(|v| v.to_le_bytes()).collect();
            let r = e.launch(
                kernel,
                Dim3::x(1),
                Dim3::x(2),
                &mut [Arg::Buffer(&mut buf), Arg::Scalar(Value::u32(scalar))],
            );
            let r = match r {
                Ok(()) => Ok(buf
                    .chunks(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                    .collect()),
                Err(RunError::Fault(f, _)) => Err(*f),
                Err(e) => panic!("{name}: {e}"),
            };
            (name, r)
        })
        .collect()
}

/// Launches `k` with `mode` over a zeroed 4-word buffer.
fn run(mode: u32) -> Vec<(&'static str, Result<Vec<u32>, Fault>)> {
    launch_2_threads(CALLS, "k", &[0; 4], mode)
}

fn fault(mode: u32) -> Vec<(&'static str, Fault)> {
    run(mode)
        .into_iter()
        .map(|(n, r)| (n, r.expect_err("faults")))
        .collect()
}

#[test]
fn a_callee_fault_is_reported_at_the_call() {
    for (name, f) in fault(1) {
        assert_eq!(f.function, "k", "{name}");
        assert_eq!(f.line, 44, "{name}: the call line");
        assert_eq!(f.tid, [0, 0, 0], "{name}");
        assert!(f.message.contains("out of bounds"), "{name}: {}", f.message);
        assert!(
            f.message.contains("in call to `poke` (fault at line 24)"),
            "{name}: {}",
            f.message
        );
    }
}

#[test]
fn exit_in_a_callee_ends_the_thread() {
    // Each thread stores 7, calls quit, and never reaches the final store.
    for (name, r) in run(2) {
        assert_eq!(r.unwrap(), vec![7, 7, 0, 0], "{name}");
    }
    // Mode 0: the final store through the local address is refused (global store to a
    // .local area).
    for (name, f) in fault(0) {
        assert_eq!(f.line, 58, "{name}");
        assert!(f.message.contains(".local `arr`"), "{name}: {}", f.message);
    }
}

#[test]
fn runaway_recursion_stops_at_the_depth_limit() {
    for (name, f) in fault(3) {
        assert_eq!(f.line, 48, "{name}");
        assert!(
            f.message.starts_with("call depth exceeds 256"),
            "{name}: {}",
            f.message
        );
        // 256 nested calls each add their location.
        assert_eq!(
            f.message.matches("in call to `deep`").count(),
            256,
            "{name}"
        );
    }
}

#[test]
fn calling_a_prototype_faults() {
    for (name, f) in fault(4) {
        assert_eq!(f.line, 50, "{name}");
        assert!(
            f.message.contains("call to `missing`, which has no body"),
            "{name}: {}",
            f.message
        );
    }
}

#[test]
fn kernel_parameters_are_read_only_and_locals_bounded() {
    for (name, f) in fault(5) {
        assert_eq!(f.line, 53, "{name}");
        assert!(
            f.message.contains("parameter `mode` is read-only"),
            "{name}: {}",
            f.message
        );
    }
    for (name, f) in fault(6) {
        assert_eq!(f.line, 57, "{name}");
        assert!(f.message.contains("out of bounds"), "{name}: {}", f.message);
        assert!(f.message.contains(".local `arr`"), "{name}: {}", f.message);
    }
}

/// 256 nested calls of a function with a 32 KiB local array need 8 MiB of stack: the JIT
/// runs such modules on big-stack threads, so the depth limit faults instead of the host
/// overflowing its stack. Frames beyond PTX's 512 KiB local limit are refused by the JIT.
#[test]
fn deep_recursion_with_big_frames_faults_without_overflowing() {
    let ptx = |bytes: usize| {
        format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n\
             .visible .func (.param .u32 r) deep(.param .u32 a)\n{{\n  .reg .u32 %a;\n  \
             .local .align 8 .b8 big[{bytes}];\n  ld.param.u32 %a, [a];\n  st.local.u32 [big], %a;\n  \
             add.u32 %a, %a, 1;\n  {{\n    .param .u32 x;\n    .param .u32 y;\n    st.param.u32 [x], %a;\n    \
             call (y), deep, (x);\n    ld.param.u32 %a, [y];\n  }}\n  st.param.u32 [r], %a;\n  ret;\n}}\n\
             .visible .entry k(.param .u64 out)\n{{\n  .reg .u32 %v;\n  .reg .u64 %o;\n  {{\n    \
             .param .u32 x;\n    .param .u32 y;\n    st.param.u32 [x], 0;\n    call (y), deep, (x);\n    \
             ld.param.u32 %v, [y];\n  }}\n  ld.param.u64 %o, [out];\n  st.global.u32 [%o], %v;\n  ret;\n}}\n"
        )
    };
    for (name, e) in engines(&ptx(32 << 10)) {
        let err = e.call("deep", &[Value::u32(0)]).unwrap_err().to_string();
        assert!(err.contains("call depth exceeds 256"), "{name}: {err}");
        let mut out = vec![0u8; 4];
        let err = e
            .launch("k", Dim3::x(2), Dim3::x(2), &mut [Arg::Buffer(&mut out)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("call depth exceeds 256"), "{name}: {err}");
    }
    let m = ptxjit::Module::parse(&ptx(600_000)).unwrap();
    let e = ptxjit::Jit::new(m).err().expect("refused").to_string();
    assert!(e.contains("at most 524288"), "{e}");
}

/// A run of loads through one base register (one span check in the JIT), with a store in
/// the middle. `shift` moves each thread's base by that many bytes.
const RUN: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .entry sum4(.param .u64 buf, .param .u32 shift)
{
    .reg .u32 %t, %s, %x, %y;
    .reg .u64 %b, %o;
    ld.param.u64 %b, [buf];
    ld.param.u32 %s, [shift];
    mov.u32 %t, %tid.x;
    mul.lo.u32 %t, %t, %s;
    cvt.u64.u32 %o, %t;
    add.u64 %b, %b, %o;
    ld.global.u32 %x, [%b];
    ld.global.u32 %y, [%b+4];
    add.u32 %x, %x, %y;
    st.global.u32 [%b+8], %x;
    ld.global.u32 %y, [%b+12];
    add.u32 %x, %x, %y;
    ret;
}
"#;

fn run_sum4(shift: u32) -> Vec<(&'static str, Result<Vec<u32>, Fault>)> {
    launch_2_threads(RUN, "sum4", &[1, 2, 3, 4, 5, 6], shift)
}

#[test]
fn accesses_sharing_a_base_register_fault_one_by_one() {
    // 24 bytes: with a shift of 8 both threads fit (thread 1 reads 8..24) and each stores
    // the sum of its first two words at +8: thread 0 writes 1+2 into word 2, then thread 1
    // (the same block, after it) reads 3 and 4... as written by thread 0: 3 + 4 = 7.
    for (name, r) in run_sum4(8) {
        assert_eq!(r.unwrap(), vec![1, 2, 3, 4, 7, 6], "{name}");
    }
    // A shift of 12: thread 1's third access (the store at +8 = byte 20) fits, its last
    // load (+12 = byte 24) is past the end: that load faults, after the store happened.
    for (name, r) in run_sum4(12) {
        let f = r.expect_err("faults");
        assert_eq!((f.tid, f.line), ([1, 0, 0], 18), "{name}");
        assert!(
            f.message
                .contains("out of bounds, 0 bytes past the end of buffer arg0"),
            "{name}: {}",
            f.message
        );
    }
    // A shift of 2: thread 1's base is misaligned; its first load faults.
    for (name, r) in run_sum4(2) {
        let f = r.expect_err("faults");
        assert_eq!((f.tid, f.line), ([1, 0, 0], 14), "{name}");
        assert!(f.message.contains("misaligned"), "{name}: {}", f.message);
    }
}

/// A function's only `.local` variable (a local depot, as CUDA compilers emit) indexed by a
/// register: the JIT tests such accesses inline against the variable. Each thread writes its
/// number to byte offset `4 * tid + shift` of a 32-byte depot, reads it back and stores it.
const DEPOT: &str = r#".version 7.8
.target sm_80
.address_size 64
.visible .entry k(.param .u64 out, .param .u32 shift)
{
    .reg .u32 %t, %s, %v;
    .reg .u64 %o, %a, %d;
    .local .align 8 .b8 depot[32];
    ld.param.u64 %o, [out];
    ld.param.u32 %s, [shift];
    mov.u32 %t, %tid.x;
    mov.u64 %d, depot;
    mad.lo.u32 %v, %t, 4, %s;
    cvt.u64.u32 %a, %v;
    add.u64 %a, %d, %a;
    st.local.u32 [%a], %t;
    ld.local.u32 %v, [%a];
    mul.wide.u32 %a, %t, 4;
    add.u64 %a, %o, %a;
    st.global.u32 [%a], %v;
    ret;
}
"#;

#[test]
fn a_local_depot_indexed_by_a_register_is_bounded() {
    for (name, e) in engines(DEPOT) {
        let run = |threads: u32, shift: u32| {
            let mut out = vec![0u8; 4 * threads as usize];
            let r = e.launch(
                "k",
                Dim3::x(1),
                Dim3::x(threads),
                &mut [Arg::Buffer(&mut out), Arg::Scalar(Value::u32(shift))],
            );
            r.map(|()| out)
        };
        // Eight threads fill the depot exactly: each reads back its own number.
        let out = run(8, 0).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want: Vec<u8> = (0..8u32).flat_map(|t| t.to_le_bytes()).collect();
        assert_eq!(out, want, "{name}");
        // A ninth thread writes at byte 32, just past the end.
        let err = run(9, 0).unwrap_err().to_string();
        assert!(err.contains("out of bounds"), "{name}: {err}");
        assert!(err.contains(".local `depot`"), "{name}: {err}");
        // Thread 7 at byte 30 straddles the end; at byte 2, every access is misaligned.
        let err = run(8, 2).unwrap_err().to_string();
        assert!(
            err.contains("misaligned") || err.contains("out of bounds"),
            "{name}: {err}"
        );
        let err = run(1, 2).unwrap_err().to_string();
        assert!(err.contains("misaligned"), "{name}: {err}");
        // An offset of 2^32 - 4 (a 32-bit -4, zero-extended): nowhere near the depot.
        let err = run(1, u32::MAX - 3).unwrap_err().to_string();
        assert!(
            err.contains("no memory there") || err.contains("out of bounds"),
            "{name}: {err}"
        );
    }
}
