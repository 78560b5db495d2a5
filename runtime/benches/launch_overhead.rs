//! Launch overhead through each face: nanoseconds per launch of a kernel that does nothing
//! (one block of one thread), compiled once. `cargo bench -p ptxjit-runtime`; the numbers go
//! in docs/performance.md ("Launch overhead of the C faces").

use ptxjit::{Dim3, Engine, Jit, LaunchConfig, Module};
use ptxjit_runtime::capi::{self, PtxjitDim3};
use ptxjit_runtime::driver::{self, context, launch, module};
use ptxjit_runtime::ocelot::ptx_run;
use std::ffi::{CString, c_void};
use std::hint::black_box;
use std::time::Instant;

const EMPTY: &str = ".version 7.8\n.target sm_80\n.address_size 64\n\
    .visible .entry empty()\n{\n  ret;\n}\n";
const THREE: &str = ".version 7.8\n.target sm_80\n.address_size 64\n\
    .visible .entry three(.param .u64 a, .param .u64 b, .param .u32 n)\n{\n  ret;\n}\n";

/// Median of five runs of `iters` calls of `f`, in ns per call.
fn measure(iters: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..iters / 10 {
        f();
    }
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_nanos() as f64 / iters as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[2]
}

fn main() {
    let iters = 20_000;
    let one = LaunchConfig {
        grid: Dim3::x(1),
        block: Dim3::x(1),
        shared_bytes: 0,
    };
    let mut rows = Vec::new();

    // The library's own launch, for reference.
    let jit = Jit::new(Module::parse(EMPTY).unwrap()).unwrap();
    rows.push((
        "Engine::launch_with (Rust)",
        measure(iters, || jit.launch_with("empty", one, &mut []).unwrap()),
    ));
    let two = LaunchConfig {
        grid: Dim3::x(2),
        ..one
    };
    rows.push((
        "Engine::launch_with, 2 blocks (over the thread pool)",
        measure(iters, || jit.launch_with("empty", two, &mut []).unwrap()),
    ));
    // SAFETY: no parameters, no memory touched.
    rows.push((
        "Jit::launch_raw (Rust)",
        measure(iters, || {
            unsafe { jit.launch_raw("empty", one, &[], &[]) }.unwrap()
        }),
    ));

    // ptxjit's C ABI.
    let text = CString::new(EMPTY).unwrap();
    let mut m = std::ptr::null_mut();
    // SAFETY: a NUL-terminated text and a writable handle.
    assert_eq!(
        unsafe { capi::ptxjit_module_load(text.as_ptr(), std::ptr::null(), 0, &mut m) },
        0
    );
    let name = CString::new("empty").unwrap();
    let d = || PtxjitDim3 { x: 1, y: 1, z: 1 };
    rows.push((
        "ptxjit_launch (C ABI)",
        // SAFETY: a live module, a kernel without parameters.
        measure(iters, || {
            assert_eq!(
                unsafe { capi::ptxjit_launch(m, name.as_ptr(), d(), d(), 0, std::ptr::null_mut()) },
                0
            )
        }),
    ));

    // CUDA's driver API.
    let mut ctx = std::ptr::null_mut();
    let (mut md, mut f, mut md3, mut f3) = (
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
        std::ptr::null_mut(),
    );
    let three = CString::new(THREE).unwrap();
    let name3 = CString::new("three").unwrap();
    // SAFETY: writable handles and NUL-terminated texts, as CUDA's API takes them.
    unsafe {
        assert_eq!(driver::cuInit(0), 0);
        assert_eq!(context::cuCtxCreate_v2(&mut ctx, 0, 0), 0);
        assert_eq!(
            module::cuModuleLoadData(&mut md, text.as_ptr() as *const c_void),
            0
        );
        assert_eq!(module::cuModuleGetFunction(&mut f, md, name.as_ptr()), 0);
        assert_eq!(
            module::cuModuleLoadData(&mut md3, three.as_ptr() as *const c_void),
            0
        );
        assert_eq!(module::cuModuleGetFunction(&mut f3, md3, name3.as_ptr()), 0);
    }
    let null: *mut c_void = std::ptr::null_mut();
    let no_params: *mut *mut c_void = std::ptr::null_mut();
    rows.push((
        "cuLaunchKernel, no parameters",
        // SAFETY: a live kernel without parameters.
        measure(iters, || {
            assert_eq!(
                unsafe {
                    launch::cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, null, no_params, no_params)
                },
                0
            )
        }),
    ));
    let (mut a, mut b, mut n) = (0u64, 0u64, 0u32);
    let mut params = [
        &mut a as *mut u64 as *mut c_void,
        &mut b as *mut u64 as *mut c_void,
        &mut n as *mut u32 as *mut c_void,
    ];
    rows.push((
        "cuLaunchKernel, 3 parameters (kernelParams)",
        // SAFETY: a live kernel and one pointer per parameter.
        measure(iters, || {
            assert_eq!(
                unsafe {
                    launch::cuLaunchKernel(
                        f3,
                        1,
                        1,
                        1,
                        1,
                        1,
                        1,
                        0,
                        null,
                        params.as_mut_ptr(),
                        no_params,
                    )
                },
                0
            )
        }),
    ));

    // gpuocelot's ptx_run on a cached module.
    let mut args: [*mut c_void; 3] = [std::ptr::null_mut(); 3];
    rows.push((
        "ptx_run, cached, no parameters",
        // SAFETY: a NUL-terminated text of a kernel without parameters.
        measure(iters, || unsafe {
            ptx_run(text.as_ptr(), 0, args.as_mut_ptr(), 1, 1, 1, 1, 1, 1, 0)
        }),
    ));
    rows.push((
        "ptx_run, cached, 3 parameters",
        // SAFETY: three values for a kernel that does not read them.
        measure(iters, || unsafe {
            ptx_run(
                three.as_ptr(),
                3,
                black_box(args.as_mut_ptr()),
                1,
                1,
                1,
                1,
                1,
                1,
                0,
            )
        }),
    ));

    println!("| Face | ns per launch |");
    println!("|---|---:|");
    for (what, ns) in rows {
        println!("| {what} | {ns:.0} |");
    }
}
