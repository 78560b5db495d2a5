//! C programs built with the system compiler: one on ptxjit's C ABI (`include/ptxjit.h`),
//! one on CUDA's driver API linked against the library as `libcuda.so.1`. Each computes its
//! expected values itself, in C, and exits non-zero on any difference.

mod common;

use common::*;

#[test]
fn a_c_program_on_the_c_abi() {
    let lib = library();
    let dir = scratch("capi");
    let exe = dir.join("capi");
    run(cc()
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(runtime().join("include"))
        .arg(runtime().join("tests/c/capi.c"))
        .arg("-o")
        .arg(&exe)
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.parent().unwrap().display()))
        .arg("-lm"));
    let out = run(std::process::Command::new(&exe).arg(repo().join("examples/saxpy.ptx")));
    assert!(out.contains("capi: ok"), "{out}");
}

#[test]
fn a_c_program_on_the_driver_api_through_libcuda_so_1() {
    let cuda = cuda_dir();
    let dir = scratch("driver");
    let exe = dir.join("driver");
    run(cc()
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(runtime().join("tests/c"))
        .arg(runtime().join("tests/c/driver.c"))
        .arg("-o")
        .arg(&exe)
        .arg("-L")
        .arg(&cuda)
        .arg("-l:libcuda.so.1")
        .arg(format!("-Wl,-rpath,{}", cuda.display()))
        .arg("-lm"));
    let out = run(std::process::Command::new(&exe).arg(repo().join("examples/saxpy.ptx")));
    assert!(out.contains("driver: ok"), "{out}");
}
