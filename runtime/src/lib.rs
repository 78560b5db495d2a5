//! ptxjit from C: one shared library (`libptxjit_runtime.so`) with three faces on one
//! implementation.
//!
//! - [`capi`]: ptxjit's own C ABI (`include/ptxjit.h`): modules from PTX text with located
//!   diagnostics, their functions and parameters, launches with `void**` parameters as
//!   `cuLaunchKernel` takes them, `.func` calls, registered host memory, faults.
//! - [`driver`]: CUDA's driver API on the CPU, with its ABI (the `_v2` names, `CUresult`
//!   codes, `cuGetProcAddress`), so that the library serves as `libcuda.so.1`.
//! - [`ocelot`]: gpuocelot's `ptx_run`, for mock GPUs that drove gpuocelot.
//!
//! All three compile with the JIT ([`ptxjit::Jit`]) and launch through
//! [`ptxjit::Jit::launch_raw`] on host addresses: device pointers are the host addresses of
//! allocations the [`registry`] knows, which checked mode (the default) checks every access
//! against. The interpreter is not used here: it copies buffers into memory of its own,
//! where these faces need kernels to work on the caller's memory in place.
//!
//! Architecture invariant: nothing panics across the C boundary. Every exported function
//! runs its body under [`ffi::guard`], which turns a panic into an error code.

pub mod capi;
pub mod driver;
pub mod ffi;
pub mod ocelot;
pub mod program;
pub mod registry;
