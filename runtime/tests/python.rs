//! Python callers: gpuocelot's `ptx_run` through ctypes as a mock GPU drives it (needs only
//! python3), and NVIDIA's cuda-python bindings on the library as `libcuda.so.1` (needs the
//! `cuda-python` and `nvidia-cuda-nvrtc-cu12` wheels; without them the script prints
//! "SKIPPED …", which this test repeats on stderr, and fails instead when
//! `PTXJIT_REQUIRE_CUDA_PYTHON=1`, as CI sets once it has installed them).

mod common;

use common::*;
use std::process::Command;

fn python() -> Command {
    Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
}

#[test]
fn ptx_run_as_a_mock_gpu_calls_it() {
    let out = run(python()
        .arg(runtime().join("tests/python/ptx_run_mock.py"))
        .env("OCELOT_PATH", library()));
    assert!(out.contains("ptx_run: ok"), "{out}");
}

#[test]
fn cuda_python_with_nvrtc_kernels() {
    let out = run(python()
        .arg(runtime().join("tests/python/cuda_python_driver.py"))
        .env("LD_LIBRARY_PATH", cuda_dir()));
    if out.contains("SKIPPED") {
        assert!(
            std::env::var("PTXJIT_REQUIRE_CUDA_PYTHON").as_deref() != Ok("1"),
            "the wheels were installed but the test skipped: {out}"
        );
        eprintln!("{out}");
        return;
    }
    assert!(out.contains("cuda-python: ok"), "{out}");
}
