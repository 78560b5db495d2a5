//! Python callers: gpuocelot's `ptx_run` through ctypes as a mock GPU drives it (needs only
//! python3), NVIDIA's cuda-python bindings on the library as `libcuda.so.1` (needs the
//! `cuda-python` and `nvidia-cuda-nvrtc-cu12` wheels) and numba-cuda's kernels on it (needs
//! `numba-cuda` and `nvidia-cuda-runtime-cu12`, and NVVM from `nvidia-cuda-nvcc-cu12`).
//! Without its wheels a script prints "SKIPPED …", which its test repeats on stderr, and
//! fails instead when `PTXJIT_REQUIRE_CUDA_PYTHON=1` (or `PTXJIT_REQUIRE_NUMBA=1`), as CI
//! sets once it has installed them.

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

/// Runs `script` with the library as `libcuda.so.1`; it passes when it prints `ok`, and may
/// skip unless the variable `require` is 1.
fn on_libcuda(script: &str, require: &str, ok: &str) {
    let out = run(python()
        .arg(runtime().join("tests/python").join(script))
        .env("LD_LIBRARY_PATH", cuda_dir()));
    if out.contains("SKIPPED") {
        assert!(
            std::env::var(require).as_deref() != Ok("1"),
            "the wheels were installed but the test skipped: {out}"
        );
        eprintln!("{out}");
        return;
    }
    assert!(out.contains(ok), "{out}");
}

#[test]
fn cuda_python_with_nvrtc_kernels() {
    on_libcuda(
        "cuda_python_driver.py",
        "PTXJIT_REQUIRE_CUDA_PYTHON",
        "cuda-python: ok",
    );
}

#[test]
fn numba_cuda_kernels() {
    on_libcuda("numba_kernels.py", "PTXJIT_REQUIRE_NUMBA", "numba-cuda: ok");
}
