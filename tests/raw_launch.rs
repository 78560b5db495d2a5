//! `Jit::launch_raw`: parameters as raw bytes on host memory the caller registers, checked
//! against those areas (what the C ABI and the driver API launch through); and the
//! structured form of errors.

use ptxjit::{Dim3, ErrorKind, HostArea, Jit, JitOptions, LaunchConfig, Module};
use std::sync::Arc;

fn saxpy() -> Jit {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/saxpy.ptx"));
    Jit::new(Module::parse_named(&text.unwrap(), "saxpy.ptx").unwrap()).unwrap()
}

fn area(buf: &mut [f32], name: &str) -> HostArea {
    HostArea {
        base: buf.as_mut_ptr() as u64,
        size: std::mem::size_of_val(buf),
        name: Arc::from(name),
        writable: true,
    }
}

fn config(blocks: u32, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid: Dim3::x(blocks),
        block: Dim3::x(threads),
        shared_bytes: 0,
    }
}

#[test]
fn saxpy_on_registered_host_memory() {
    let jit = saxpy();
    for blocks in [1, 3] {
        let n = 100u32;
        let mut x: Vec<f32> = (0..n).map(|i| i as f32 * 0.5).collect();
        let mut y: Vec<f32> = (0..n).map(|i| 1.0 - i as f32).collect();
        // The reference: the host's fused multiply-add, as `fma.rn.f32` computes it.
        let want: Vec<f32> = x
            .iter()
            .zip(&y)
            .map(|(a, b)| 3.0f32.mul_add(*a, *b))
            .collect();
        let areas = [area(&mut x, "x"), area(&mut y, "y")];
        let (xa, ya) = (areas[0].base.to_le_bytes(), areas[1].base.to_le_bytes());
        let (a, count) = (3.0f32.to_le_bytes(), n.to_le_bytes());
        let params: [&[u8]; 4] = [&a, &xa, &ya, &count];
        // SAFETY: both areas are live vectors owned here and untouched during the launch.
        unsafe {
            jit.launch_raw(
                "saxpy",
                config(blocks, 64.max(n / blocks + 1)),
                &params,
                &areas,
            )
        }
        .unwrap();
        assert_eq!(y, want);
    }
}

#[test]
fn an_access_past_a_registered_area_is_a_located_fault() {
    let jit = saxpy();
    let mut x = vec![1.0f32; 8];
    let mut y = vec![2.0f32; 8];
    let areas = [area(&mut x, "allocation x"), area(&mut y, "allocation y")];
    let (xa, ya) = (areas[0].base.to_le_bytes(), areas[1].base.to_le_bytes());
    let (a, count) = (1.0f32.to_le_bytes(), 9u32.to_le_bytes());
    let params: [&[u8]; 4] = [&a, &xa, &ya, &count];
    // SAFETY: as above; checked mode stops the ninth thread's access.
    let err = unsafe { jit.launch_raw("saxpy", config(1, 16), &params, &areas) }.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Fault);
    assert!(err.message().contains("out of bounds"), "{err}");
    assert!(err.message().contains("allocation"), "{err}");
    let at = err.location().unwrap();
    assert_eq!((at.path.as_str(), at.line), ("saxpy.ptx", 38));
    assert_eq!(err.fault().unwrap().tid, [8, 0, 0]);
    // Unregistered memory is refused (as no memory, or as past the nearest known area).
    // SAFETY: nothing is registered, so checked mode refuses every buffer access.
    let err = unsafe { jit.launch_raw("saxpy", config(1, 1), &params, &[]) }.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Fault);
    assert!(
        err.message().starts_with(".global load of 4 bytes"),
        "{err}"
    );
    assert!(!err.message().contains("allocation"), "{err}");
}

#[test]
fn unchecked_raw_launches_need_no_areas() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/saxpy.ptx"));
    let module = Module::parse(&text.unwrap()).unwrap();
    let options = JitOptions {
        checked: false,
        ..JitOptions::default()
    };
    let jit = Jit::with_options(module, options).unwrap();
    let x = [2.0f32; 4];
    let mut y = [1.0f32; 4];
    let (xa, ya) = (
        (x.as_ptr() as u64).to_le_bytes(),
        (y.as_mut_ptr() as u64).to_le_bytes(),
    );
    let (a, count) = (0.5f32.to_le_bytes(), 4u32.to_le_bytes());
    let params: [&[u8]; 4] = [&a, &xa, &ya, &count];
    // SAFETY: the kernel reads x[0..4] and writes y[0..4], both live arrays here.
    unsafe { jit.launch_raw("saxpy", config(1, 4), &params, &[]) }.unwrap();
    assert_eq!(y, [2.0; 4]);
}

#[test]
fn wrong_parameter_sizes_and_counts_are_usage_errors() {
    let jit = saxpy();
    let short = [0u8; 4];
    let params: [&[u8]; 4] = [&short, &short, &short, &short];
    // SAFETY: the launch is refused before any block runs.
    let err = unsafe { jit.launch_raw("saxpy", config(1, 1), &params, &[]) }.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Usage);
    assert!(err.message().contains("is 8 bytes, 4 given"), "{err}");
    // SAFETY: as above.
    let err = unsafe { jit.launch_raw("saxpy", config(1, 1), &params[..2], &[]) }.unwrap_err();
    assert!(err.message().contains("takes 4 arguments"), "{err}");
}

#[test]
fn module_variables_have_host_addresses() {
    let m = Module::parse(
        ".version 7.8\n.target sm_80\n.address_size 64\n\
         .visible .global .align 4 .u32 counter[4] = {1, 2, 3, 4};\n\
         .visible .entry bump()\n{\n  .reg .u32 %r;\n  ld.global.u32 %r, [counter+4];\n\
           add.u32 %r, %r, 40;\n  st.global.u32 [counter+4], %r;\n  ret;\n}\n",
    )
    .unwrap();
    let jit = Jit::new(m).unwrap();
    let (addr, size) = jit.global("counter").unwrap();
    assert_eq!(size, 16);
    // SAFETY: no parameters and no areas; the kernel touches its module variable only.
    unsafe { jit.launch_raw("bump", config(1, 1), &[], &[]) }.unwrap();
    // SAFETY: the variable's storage lives as long as `jit` and no launch is running.
    let words = unsafe { std::slice::from_raw_parts(addr as *const u32, 4) };
    assert_eq!(words, [1, 42, 3, 4]);
    assert!(jit.global("nope").is_none());
}

#[test]
fn parse_errors_give_their_locations() {
    let err = Module::parse_named(
        ".version 7.8\n.target sm_80\n.address_size 64\n.entry k() { .reg .u32 %r1; mov.u32 %r1 2; }\n",
        "k.ptx",
    )
    .unwrap_err();
    let located = err.located();
    assert!(!located.is_empty());
    let (at, message) = &located[0];
    assert_eq!((at.path.as_str(), at.line), ("k.ptx", 4));
    assert!(at.column > 1 && !message.is_empty());
    assert_eq!(at.to_string(), format!("k.ptx:4:{}", at.column));
}
