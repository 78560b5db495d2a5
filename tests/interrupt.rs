//! A launch's `stop` flag: once set, no further block starts and the launch reports
//! `RunError::Interrupted` (what a host's Ctrl-C handler relies on), on every engine.

mod common;

use common::engines;
use ptxjit::{Arg, Dim3, LaunchConfig, RunError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Each block's thread 0 spins `n` times, then writes 1 into its block's word.
const SPIN: &str = ".version 7.8\n.target sm_80\n.address_size 64\n\
.visible .entry spin(.param .u64 out, .param .u32 n)\n{\n\
  .reg .u32 %r<4>;\n  .reg .u64 %rd<4>;\n  .reg .pred %p;\n\
  ld.param.u64 %rd1, [out];\n  ld.param.u32 %r1, [n];\n\
  mov.u32 %r2, 0;\n\
LOOP:\n  add.u32 %r2, %r2, 1;\n  setp.lt.u32 %p, %r2, %r1;\n  @%p bra LOOP;\n\
  mov.u32 %r3, %ctaid.x;\n  mul.wide.u32 %rd2, %r3, 4;\n  add.u64 %rd3, %rd1, %rd2;\n\
  st.global.u32 [%rd3], 1;\n  ret;\n}\n";

fn config(blocks: u32) -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::x(blocks),
        block: Dim3::x(1),
        shared_bytes: 0,
    }
}

#[test]
fn a_flag_set_before_the_launch_runs_no_block() {
    for (name, e) in engines(SPIN) {
        let mut out = vec![0u8; 64 * 4];
        let stop = AtomicBool::new(true);
        let args = &mut [Arg::Buffer(&mut out), Arg::Scalar(ptxjit::Value::u32(1))];
        let r = e.launch_until("spin", config(64), args, &stop);
        assert_eq!(r, Err(RunError::Interrupted), "{name}");
        assert!(out.iter().all(|&b| b == 0), "{name}: a block ran");
        assert_eq!(
            RunError::Interrupted.to_string(),
            "error: the launch was interrupted"
        );
    }
}

#[test]
fn a_flag_set_during_the_launch_stops_it_between_blocks() {
    for (name, e) in engines(SPIN) {
        // 4096 blocks of a 10^6-iteration spin would take minutes in the interpreter and
        // seconds in the JIT: the flag, set after 50 ms, ends it early.
        let blocks = 4096;
        let mut out = vec![0u8; blocks * 4];
        let stop = AtomicBool::new(false);
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            });
            let args = &mut [
                Arg::Buffer(&mut out),
                Arg::Scalar(ptxjit::Value::u32(1 << 20)),
            ];
            e.launch_until("spin", config(blocks as u32), args, &stop)
        });
        assert_eq!(r, Err(RunError::Interrupted), "{name}");
        let ran = out.chunks(4).filter(|w| w[0] == 1).count();
        assert!(ran < blocks, "{name}: every block ran");
    }
}

#[test]
fn an_unset_flag_runs_every_block() {
    for (name, e) in engines(SPIN) {
        let mut out = vec![0u8; 8 * 4];
        let stop = AtomicBool::new(false);
        let args = &mut [Arg::Buffer(&mut out), Arg::Scalar(ptxjit::Value::u32(3))];
        e.launch_until("spin", config(8), args, &stop).unwrap();
        assert!(out.chunks(4).all(|w| w == [1, 0, 0, 0]), "{name}");
    }
}

/// Host programs share one compiled module between threads.
#[test]
fn engines_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ptxjit::Jit>();
    shareable::<ptxjit::Interpreter>();
}
