//! gpuocelot's C entry point, `ptx_run`, as mock GPUs call it (tinygrad's loads the library
//! `OCELOT_PATH` names): the PTX text of a module, its kernel's parameter values in a
//! `void*` array, block and grid extents, and dynamic shared bytes; no return value.
//!
//! As in gpuocelot, the kernel run is the module's (first) `.entry`, and `args[i]` *is* the
//! value of parameter `i` (an address, or an integer widened to a pointer), not a pointer to
//! it: a parameter of up to 8 bytes takes the low bytes of it. Buffers are whatever host
//! memory the caller allocated, which no registry knows, so modules compile unchecked
//! (`PTXJIT_OCELOT_CHECKED=1` checks them against memory registered through the C ABI
//! instead). A failure prints ptxjit's message to stderr and keeps it for
//! `ptxjit_last_error()`.
//!
//! Compiled modules are cached by their text: a mock GPU that sends the same PTX on every
//! launch compiles it once.

use crate::ffi::{LastError, guard, set_last_error};
use crate::program::{LoadError, Program};
use ptxjit::ast::FuncKind;
use ptxjit::{Dim3, LaunchConfig};
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Arc, LazyLock, Mutex};

/// One cached module: its text (the key, compared in full on a hit), the program and its
/// kernel.
struct Cached {
    text: Box<[u8]>,
    program: Program,
    kernel: usize,
}

/// Cached modules by a hash of their text.
static CACHE: LazyLock<Mutex<HashMap<u64, Vec<Arc<Cached>>>>> = LazyLock::new(Default::default);

/// A quick hash of PTX text, eight bytes at a time (a lookup must cost far less than a
/// launch; collisions are resolved by comparing the text).
fn text_hash(bytes: &[u8]) -> u64 {
    let mut h = bytes.len() as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
        h = (h ^ v).wrapping_mul(0x0100_0000_01b3).rotate_left(29);
    }
    for &b in words.remainder() {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn checked() -> bool {
    std::env::var("PTXJIT_OCELOT_CHECKED").is_ok_and(|v| v == "1")
}

/// The compiled module for `bytes`, compiling it on a miss.
fn program(bytes: &[u8]) -> Result<Arc<Cached>, LastError> {
    let h = text_hash(bytes);
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = cache
        .get(&h)
        .and_then(|v| v.iter().find(|c| *c.text == *bytes))
    {
        return Ok(c.clone());
    }
    let text =
        std::str::from_utf8(bytes).map_err(|_| LastError::message("the PTX text is not UTF-8"))?;
    let program = match Program::compile(text, "<ptx_run>", checked()) {
        Ok(p) => p,
        Err(LoadError::Parse(e)) => return Err(LastError::parse(&e)),
        Err(LoadError::Compile(e)) => return Err(LastError::run(&e)),
    };
    let kernel = program
        .functions
        .iter()
        .position(|f| f.kind == FuncKind::Entry)
        .ok_or_else(|| LastError::message("the module has no kernel (.entry)"))?;
    let c = Arc::new(Cached {
        text: bytes.into(),
        program,
        kernel,
    });
    cache.entry(h).or_default().push(c.clone());
    Ok(c)
}

fn report(e: LastError) {
    eprintln!("ptx_run: {}", e.text.to_string_lossy());
    set_last_error(e);
}

/// Runs the module's kernel over `grid` blocks of `blck` threads.
///
/// # Safety
///
/// `source` is NUL-terminated PTX text; `args` holds `n_args` values; every address among
/// them is host memory valid for all the kernel's accesses (nothing checks them unless
/// `PTXJIT_OCELOT_CHECKED=1`).
#[unsafe(no_mangle)]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn ptx_run(
    source: *const c_char,
    n_args: c_int,
    args: *mut *mut c_void,
    blck_x: c_int,
    blck_y: c_int,
    blck_z: c_int,
    grid_x: c_int,
    grid_y: c_int,
    grid_z: c_int,
    shared_mem_size: c_int,
) {
    guard((), || {
        if source.is_null() || (n_args > 0 && args.is_null()) || n_args < 0 {
            return report(LastError::message("null PTX text or argument array"));
        }
        // SAFETY: the caller's promise: NUL-terminated text.
        let bytes = unsafe { CStr::from_ptr(source) }.to_bytes();
        let cached = match program(bytes) {
            Ok(c) => c,
            Err(e) => return report(e),
        };
        let info = &cached.program.functions[cached.kernel];
        if info.params.len() != n_args as usize {
            return report(LastError::message(format!(
                "`{}` takes {} parameters, {n_args} given",
                info.name,
                info.params.len()
            )));
        }
        // SAFETY: the caller's promise: `n_args` values.
        let values: Vec<[u8; 8]> = (0..n_args as usize)
            .map(|i| (unsafe { *args.add(i) } as u64).to_le_bytes())
            .collect();
        let mut params = Vec::with_capacity(values.len());
        for (p, v) in info.params.iter().zip(&values) {
            if p.size > 8 {
                return report(LastError::message(format!(
                    "parameter `{}` is {} bytes; ptx_run passes each as one 64-bit value",
                    p.name, p.size
                )));
            }
            params.push(&v[..p.size]);
        }
        let dims = |x: c_int, y: c_int, z: c_int| {
            Dim3::new(x.max(0) as u32, y.max(0) as u32, z.max(0) as u32)
        };
        let config = LaunchConfig {
            grid: dims(grid_x, grid_y, grid_z),
            block: dims(blck_x, blck_y, blck_z),
            shared_bytes: shared_mem_size.max(0) as u32,
        };
        // SAFETY: the caller's promise: the addresses among the values are valid memory.
        if let Err(e) = unsafe { cached.program.launch(cached.kernel, config, &params) } {
            report(LastError::run(&e));
        }
    })
}
