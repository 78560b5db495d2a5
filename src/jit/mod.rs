//! The Cranelift JIT: every function of a PTX module compiled to x86-64 when the [`Jit`] is
//! built, behind the same [`Engine`] interface as the interpreter.
//!
//! - A `.func` becomes an internal function `(ctx, args, rets) -> status` (parameters travel
//!   in byte buffers laid out by [`layout`]) and a host wrapper with the C ABI whose type
//!   follows its PTX parameters (see [`host`]).
//! - An `.entry` becomes a function `(ctx) -> status` that runs a whole thread block, looping
//!   over its threads in generated code; [`Jit::launch`] spreads blocks over all cores.
//! - Memory is checked by default (see [`crate::memcheck`]); [`JitOptions::checked`] off
//!   drops the checks.

mod branches;
mod compile;
mod groups;
pub mod host;
pub mod hwfloat;
pub mod layout;
mod lower;
pub mod runtime;
mod streams;

pub use lower::LANES;

use crate::ast::{FuncId, FuncKind, Module, Space};
use crate::block::SharedLayout;
use crate::block::schedule::{self, Round, Slot};
use crate::engine::{
    Arg, Dim3, Engine, Fault, LaunchConfig, RunError, Value, check_arg, check_arity,
    check_scalar_rets, find_function, launched_kernel, param_bytes,
};
use crate::memcheck::{self, AreaMap, Extent};
use compile::{Declared, Frames, LanesFunctions, ModuleVars};
use cranelift_jit::JITModule;
use layout::FrameLayout;
use lower::sync::StepLayout;
use lower::{GroupPlan, Shared};
use rayon::prelude::*;
use runtime::{AreaName, JitArea, ModuleInfo, PendingFault, STATUS_FAULT, ThreadCtx};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What to print of the compiled code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Emit {
    #[default]
    None,
    /// Cranelift IR of each function.
    Clif,
    /// The x86-64 code of each function (Cranelift's assembly listing).
    Asm,
}

/// How to compile.
#[derive(Clone, Copy, Debug)]
pub struct JitOptions {
    /// Check every memory access against the launch's areas (the default).
    pub checked: bool,
    pub emit: Emit,
    /// Run Cranelift's IR verifier (default: in debug builds).
    pub verify: bool,
    /// Directed rounding (`.rz .rm .rp`) on the host's hardware: `add sub mul fma` inline,
    /// from the round-to-nearest result and the sign of its exact error
    /// (`lower/float/directed.rs`), the rare cases that needs and the other operations under
    /// MXCSR rounding control (see [`hwfloat`]); off, or without the instructions, the
    /// soft-float reference computes it (the default is on).
    pub hardware_rounding: bool,
    /// Run Cranelift's e-graph optimizer (`opt_level=speed`; the default is off). The lowering
    /// already emits folded, program-ordered IR; the e-graph pass re-elaborates straight-line
    /// code depth-first from each side effect, which lengthens live ranges: on the unrolled
    /// bignum workloads it doubles the code and its spills (mul1024: 184 KB → 98 KB, 16,361
    /// → 5,954 stack accesses, 3.2× faster without it), and no loop kernel measured here gains
    /// from it (docs/performance.md, "Cranelift's e-graph pass"). The group functions of
    /// cooperative kernels (`lower/lanes/rounds.rs`) are optimized either way where their
    /// stretches of straight-line code load little (`compile::loads_stay_few`): their
    /// rounds repeat tests and loads that the pass merges (a tree reduction's group function
    /// runs 18% fewer host instructions, at the same compile time).
    pub egraph: bool,
    /// Run kernels that allow it a warp (32 threads) at a time in SIMD lanes (the default is
    /// on; see `lower/lanes/`).
    pub lanes: bool,
    /// Inline calls of small leaf functions (`frontend::inline_small_calls`; the default is
    /// on).
    pub inline: bool,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            checked: true,
            emit: Emit::None,
            verify: cfg!(debug_assertions),
            hardware_rounding: true,
            egraph: false,
            lanes: true,
            inline: true,
        }
    }
}

/// Compile-time figures of a module.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompileStats {
    pub millis: f64,
    pub functions: usize,
    pub instructions: usize,
}

/// A PTX module compiled to native code.
///
/// A `Jit` is `Send + Sync`: host threads may launch kernels and call functions of one
/// compiled module at the same time (each launch and call has its own thread contexts).
/// Module variables (`.global`, `.const`) are one copy shared by all of them, as on a GPU
/// running kernels concurrently, so unsynchronized writes to them race as they would there.
pub struct Jit {
    /// Unique among the Jits of the process: host calls keep a context per thread and Jit
    /// by it (`host::rt_host_enter`).
    id: u64,
    module: Module,
    options: JitOptions,
    /// Owns the code; freed on drop.
    code: Option<FinishedCode>,
    /// Internal entry of each PTX function (None for prototypes).
    internal: Vec<Option<usize>>,
    /// Host wrapper of each `.func`.
    hosts: Vec<Option<usize>>,
    /// Slot wrapper of each `.func` without array parameters or returns.
    slot_hosts: Vec<Option<usize>>,
    /// By function: its code never reads its thread context, so it cannot record a fault.
    context_free: Vec<bool>,
    layouts: Vec<FrameLayout>,
    info: Box<ModuleInfo>,
    /// Module `.global`/`.const` variables (16-byte aligned storage).
    _module_memory: Vec<Box<[u128]>>,
    /// The areas calls see: the module variables.
    call_areas: Box<AreaMap<JitArea>>,
    module_areas: Vec<JitArea>,
    /// What `--emit` asked for, by function: (name, text).
    pub listing: Vec<(String, String)>,
    pub stats: CompileStats,
    /// Whether calls and launches need the big-stack threads.
    big_stack: bool,
    /// Bytes of stack the deepest possible call chain needs.
    stack_needed: usize,
    /// Each kernel's name and, when it runs on the thread loop only, why.
    lanes_report: Vec<(String, Option<String>)>,
    /// Threads run in lanes by all launches so far.
    lane_threads: std::sync::atomic::AtomicU64,
    /// The thread state of each cooperative kernel's round function.
    step_layouts: Vec<Option<StepLayout>>,
    /// Each cooperative kernel's group functions (entry address) and plans, where it has
    /// them: of 32 lanes, then of 16.
    groups: Vec<Vec<(usize, GroupPlan)>>,
    /// Where `.shared` variables lie in a block's window.
    shared_layout: SharedLayout,
    /// By function: the shared window of a host call of it (no dynamic shared memory),
    /// opened afresh by each.
    call_windows: Vec<Window>,
}

/// How long a launch runs blocks on the calling thread before it hands the rest to the
/// thread pool (waking the pool costs about 15 µs: see docs/performance.md).
const SEQUENTIAL_BUDGET: std::time::Duration = std::time::Duration::from_micros(20);

/// Stack the generated code may use on an ordinary thread (rayon's workers and the main
/// thread have at least 2 MiB).
const SMALL_STACK: usize = 1 << 20;
/// Stack per call level besides the frame (saved registers, spills, helper calls).
const FRAME_OVERHEAD: usize = 8 << 10;

/// Threads whose stacks hold 257 levels of the largest frame the JIT accepts.
fn big_stack_pool() -> &'static rayon::ThreadPool {
    static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let size = (crate::engine::MAX_CALL_DEPTH + 1)
            * (2 * layout::MAX_FRAME_BYTES as usize + FRAME_OVERHEAD)
            + (1 << 20);
        rayon::ThreadPoolBuilder::new()
            .stack_size(size)
            .thread_name(|i| format!("ptxjit-big-stack-{i}"))
            .build()
            .expect("a thread pool with big stacks")
    })
}

/// The code module once its definitions are finalized: from then on nothing reads or changes
/// it (the Jit keeps the entry points as plain addresses) until drop frees its memory.
struct FinishedCode(JITModule);

// SAFETY: after finalization the JITModule is never used through a shared reference (no
// method of it is called until `Jit::drop`, which owns it), so sharing `&FinishedCode`
// between threads shares nothing; sending it moves heap allocations and mapped code pages,
// which any thread may free. The finalized code itself only reads the Jit's immutable data
// and per-thread contexts, which is what makes concurrent launches and calls sound.
unsafe impl Send for FinishedCode {}
// SAFETY: as for Send: no `&self` access to the JITModule exists.
unsafe impl Sync for FinishedCode {}

impl Drop for Jit {
    fn drop(&mut self) {
        if let Some(FinishedCode(code)) = self.code.take() {
            // SAFETY: the code's pointers are only reachable through `self` (launches and
            // calls borrow it; typed handles borrow it; raw pointers are documented as valid
            // while the Jit lives), so nothing can run this code any more.
            unsafe { code.free_memory() };
        }
    }
}

fn compile_error(e: impl std::fmt::Display) -> RunError {
    RunError::Usage(format!("JIT compilation failed: {e}"))
}

impl Jit {
    /// Compiles a module with the default options (checked memory).
    pub fn new(module: Module) -> Result<Jit, RunError> {
        Jit::with_options(module, JitOptions::default())
    }

    /// Compiles a module: the code module, the module variables, the frames, the
    /// declarations, the kernels' lanes functions, every function's code with its listing,
    /// the host wrappers, and the finalized entry points (the steps are in `compile.rs`).
    pub fn with_options(module: Module, options: JitOptions) -> Result<Jit, RunError> {
        let start = Instant::now();
        let module = if options.inline {
            crate::frontend::inline_small_calls(module)
        } else {
            module
        };
        let mut jm = compile::code_module(&options)?;
        let vars = ModuleVars::of(&module);
        let module_vars = vars.bases();
        let frames = Frames::of(&module)?;
        let info = frames.info(&module);
        let call_areas = Box::new(AreaMap::new(vars.areas.clone()));
        let declared = Declared::of(&mut jm, &module)?;
        let shared_layout = SharedLayout::of(&module);
        let shared = Shared {
            ptx: &module,
            layouts: &frames.layouts,
            internal: &declared.internal,
            helpers: &declared.helpers,
            module_vars: &module_vars,
            checked: options.checked,
            frames_known: options.checked
                || module
                    .functions
                    .iter()
                    .flat_map(|f| f.body.iter().flatten())
                    .any(|i| matches!(i.inst, crate::ast::Inst::Isspacep { .. })),
            hw_arith: options.hardware_rounding,
            hw_fma: options.hardware_rounding && hwfloat::has_fma(),
            lanes: &vec![None; module.functions.len()],
            shared_layout: &shared_layout,
            cooperative: &declared.cooperative,
        };
        let mut lanes = LanesFunctions::lower(&mut jm, &shared, &options)?;
        let lane_ids = lanes.ids.clone();
        let shared = Shared {
            lanes: &lane_ids,
            ..shared
        };
        let mut listing = Vec::new();
        let group_plans: Vec<Vec<GroupPlan>> = (lanes.groups.iter())
            .map(|gs| gs.iter().map(|(_, plan)| plan.clone()).collect())
            .collect();
        // Group functions gain from the e-graph pass where the rest does not (see `egraph`);
        // its ISA is made only for a module that has some.
        let has_groups = group_plans.iter().any(|plans| !plans.is_empty());
        let group_isa = if has_groups && !options.egraph {
            Some(compile::host_isa(&options, "speed")?)
        } else {
            None
        };
        let defined = compile::define_functions(
            &mut jm,
            &shared,
            &declared,
            &mut lanes,
            group_isa.as_deref(),
            options.emit,
            &mut listing,
        )?;
        let id = host::new_jit_id();
        let wrapper_module = host::WrapperModule {
            jit_id: id,
            call_areas: &*call_areas as *const _ as u64,
            info: &*info as *const _ as u64,
        };
        let wrappers = host::define_wrappers(
            &mut jm,
            &shared,
            &defined.context_free,
            &wrapper_module,
            options.emit,
            &mut listing,
        )?;
        compile::define_cold_trampolines(&mut jm, &declared, options.emit, &mut listing)?;
        jm.finalize_definitions().map_err(compile_error)?;
        let stats = CompileStats {
            millis: start.elapsed().as_secs_f64() * 1e3,
            functions: declared.internal.iter().flatten().count(),
            instructions: defined.instructions,
        };
        let internal = compile::finalized(&jm, &declared.internal);
        let groups = (lanes.group_ids.iter().zip(group_plans))
            .map(|(ids, plans)| {
                (ids.iter().zip(plans))
                    .map(|(&id, plan)| (jm.get_finalized_function(id) as usize, plan))
                    .collect()
            })
            .collect();
        let hosts = compile::finalized(&jm, &wrappers.typed);
        let slot_hosts = compile::finalized(&jm, &wrappers.slots);
        let step_layouts = frames.step_layouts(&module, &declared.cooperative);
        let call_windows = (0..module.functions.len() as u32)
            .map(|f| Window::of(&shared_layout, FuncId(f), 0))
            .collect();
        Ok(Jit {
            id,
            module,
            options,
            code: Some(FinishedCode(jm)),
            internal,
            hosts,
            slot_hosts,
            context_free: defined.context_free,
            layouts: frames.layouts,
            info,
            _module_memory: vars.memory,
            call_areas,
            module_areas: vars.areas,
            listing,
            stats,
            big_stack: frames.big_stack,
            stack_needed: frames.stack_needed,
            lanes_report: lanes.report,
            lane_threads: Default::default(),
            step_layouts,
            groups,
            shared_layout,
            call_windows,
        })
    }

    /// Runs `f` on a thread with room for this module's deepest call chain.
    fn on_stack<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        if self.big_stack {
            big_stack_pool().install(f)
        } else {
            f()
        }
    }

    /// Runs the call `f` on this thread if its stack has twice the room this module's
    /// deepest call chain needs (the margin `SMALL_STACK` keeps on the 2 MiB threads), else
    /// on a big-stack thread: handing a call to another thread costs ~15 µs, and every
    /// module with calls needs more than 1 MiB in the worst case, which the main thread's
    /// 8 MiB holds twice over when frames are small.
    fn call_on_stack<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let room = stacker::remaining_stack().is_some_and(|r| r / 2 >= self.stack_needed);
        if room { f() } else { self.on_stack(f) }
    }

    /// Each kernel's name and, when it runs on the thread loop only, why (else it runs a warp
    /// (32 threads) at a time in SIMD lanes where it can: see `lower/lanes/`).
    pub fn lanes_report(&self) -> &[(String, Option<String>)] {
        &self.lanes_report
    }

    /// How many threads all launches so far have run in SIMD lanes (the rest ran on the
    /// thread loop: blocks' last threads short of a group, groups whose threads would not all
    /// agree on an exit, whose accesses overlap or, checked, fail the inline area test).
    pub fn lane_threads(&self) -> u64 {
        self.lane_threads.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn module(&self) -> &Module {
        &self.module
    }

    pub fn options(&self) -> JitOptions {
        self.options
    }

    /// Locates a fault recorded by generated code.
    fn locate(&self, f: PendingFault, ctaid: [u32; 3], tid: [u32; 3]) -> RunError {
        self.run_error(locate(&self.module, f, ctaid, tid))
    }

    fn run_error(&self, f: Fault) -> RunError {
        RunError::Fault(Box::new(f), Box::new(self.module.source.clone()))
    }
}

/// A block's shared window as a launch or call lays it out (see [`crate::block`]): its
/// variables' areas at offsets from the window's base, its size, and the special registers
/// that tell them.
struct Window {
    areas: Vec<JitArea>,
    /// None when the module has no shared memory.
    size: Option<usize>,
    dynamic: u32,
    total: u32,
}

impl Window {
    /// The window of a launch of `f` with `dynamic` bytes of dynamic shared memory.
    fn of(layout: &SharedLayout, f: FuncId, dynamic: u32) -> Window {
        let areas: Vec<JitArea> = layout
            .sized(f, dynamic)
            .map(|v| JitArea {
                extent: Extent {
                    base: v.offset as u64,
                    size: v.size as usize,
                    space: Space::Shared,
                    writable: true,
                },
                name: AreaName::text(v.name),
            })
            .collect();
        Window {
            size: (!areas.is_empty()).then(|| layout.window_size(f, dynamic) as usize),
            areas,
            dynamic,
            total: layout.total_smem_size(f, dynamic),
        }
    }

    /// A zeroed window for the block `ctx` runs, in `storage` (a worker's, reused from
    /// block to block so that a block costs a `memset`, not an allocation): its variables
    /// become the bottom of the context's own areas (frames come and go above them).
    /// `storage` must not be touched while the block runs.
    fn open(&self, ctx: &mut ThreadCtx, storage: &mut Vec<u128>) {
        ctx.shared_base = match self.size {
            Some(size) => {
                storage.clear();
                storage.resize(aligned_words(size), 0);
                storage.as_ptr() as u64
            }
            None => 0,
        };
        ctx.dynamic_smem = self.dynamic;
        ctx.total_smem = self.total;
        // The last block of this worker registered the same areas where the storage was
        // reused: keep them (their names are `Arc`s, whose clone is an atomic add on a line
        // every worker shares), dropping what lay above them.
        let n = self.areas.len();
        let same = ctx.own.len() >= n
            && (ctx.own.iter().zip(&self.areas))
                .all(|(o, a)| o.extent.base == ctx.shared_base + a.extent.base);
        if same {
            ctx.own.truncate(n);
            return;
        }
        // The shared-space recent-area slots may hold the last window's variables (where
        // the window is the same, they hold this one's).
        ctx.hits[runtime::HIT_AREAS..].fill([0; 2]);
        ctx.own.clear();
        for a in &self.areas {
            ctx.own.push(JitArea {
                extent: Extent {
                    base: ctx.shared_base + a.extent.base,
                    ..a.extent
                },
                name: a.name.clone(),
            });
        }
    }
}

/// The fault a helper recorded, at its PTX instruction; inside an inlined call, at the call
/// "in call to" the callee, as the interpreter reports a fault that a call returns.
fn locate(module: &Module, f: PendingFault, ctaid: [u32; 3], tid: [u32; 3]) -> Fault {
    let func = module.func(FuncId(f.site.func));
    let at = f.site.inst as usize;
    let ins = &func.body.as_ref().expect("faults come from bodies")[at];
    let (mut message, mut span, mut line) = (f.message, ins.span, ins.line);
    // Innermost call first: inlined calls nest, and the inner one starts later.
    let mut calls: Vec<_> = (func.inlined_calls.iter())
        .filter(|c| c.body.contains(&at))
        .collect();
    calls.sort_by_key(|c| std::cmp::Reverse(c.body.start));
    for call in calls {
        let callee = &module.func(call.callee).name;
        message = format!("{message}\n  = in call to `{callee}` (fault at line {line})");
        (span, line) = (call.span, call.line);
    }
    Fault {
        message,
        function: func.name.clone(),
        ctaid,
        tid,
        span,
        line,
        address: f.address,
    }
}

/// The threads of one block of a cooperative kernel: a state area each, run a round at a
/// time by the kernel's round function (see `lower/sync.rs`) as the block schedule says.
struct StepThreads<'a> {
    module: &'a Module,
    ctx: &'a mut ThreadCtx,
    round: RoundFunc,
    /// Every thread's state area, one after another.
    states: &'a mut Vec<u128>,
}

impl<'a> StepThreads<'a> {
    /// The threads of a block at their start, in `states` (a worker's, reused from block to
    /// block): each thread's resume number 0, its `%tid`, its frame zeroed; its registers
    /// are set when it starts.
    fn new(
        module: &'a Module,
        ctx: &'a mut ThreadCtx,
        round: RoundFunc,
        layout: StepLayout,
        block: Dim3,
        states: &'a mut Vec<u128>,
    ) -> Self {
        let size = layout.size as usize;
        states.resize(aligned_words(size * block.count() as usize), 0);
        let bytes = as_bytes(states);
        for t in 0..block.count() {
            let at = t as usize * size;
            let [x, y, z] = block.point(t);
            for (k, v) in [0, x, y, z].into_iter().enumerate() {
                bytes[at + 4 * k..at + 4 * k + 4].copy_from_slice(&v.to_le_bytes());
            }
            bytes[at + layout.frame as usize..at + size].fill(0);
        }
        StepThreads {
            module,
            ctx,
            round,
            states,
        }
    }
}

impl schedule::Threads for StepThreads<'_> {
    fn run_round(&mut self, slots: &mut [Slot], waiting_too: bool) -> Result<Round, Fault> {
        let mut round = Round::default();
        // SAFETY: `round` is this kernel's finalized round function, compiled with the
        // signature `RoundFunc`; `slots` holds one `repr(C)` slot per thread and `states`
        // one state area of the kernel's `StepLayout::size` per thread (16-byte aligned),
        // which nothing else uses during the call, and the `Round` it writes is a local; the context is this worker's own and its
        // pointers outlive the launch.
        let status = unsafe {
            (self.round)(
                self.ctx,
                slots.as_mut_ptr(),
                as_bytes(self.states).as_mut_ptr(),
                slots.len() as u32,
                waiting_too as u32,
                &mut round,
            )
        };
        if status == STATUS_FAULT {
            let f = self
                .ctx
                .fault
                .take()
                .expect("a faulting round records its fault");
            // A round function leaves the faulting thread's index in the block in `tid[0]`.
            let [x, y, z] = self.ctx.ntid;
            let tid = Dim3::new(x, y, z).point(self.ctx.tid[0] as u64);
            return Err(locate(self.module, f, self.ctx.ctaid, tid));
        }
        Ok(round)
    }
}

/// An internal `.func`: `(ctx, args, rets) -> status`.
type InternalFunc = unsafe extern "C" fn(*mut ThreadCtx, *mut u8, *mut u8) -> i32;
/// A kernel's block function: `(ctx) -> status`.
type BlockFunc = unsafe extern "C" fn(*mut ThreadCtx) -> i32;
/// A cooperative kernel's round function: `(ctx, slots, states, threads, waiting_too,
/// round) -> status`.
type RoundFunc =
    unsafe extern "C" fn(*mut ThreadCtx, *mut Slot, *mut u8, u32, u32, *mut Round) -> i32;

/// Bytes for a buffer, 16-byte aligned.
fn aligned_bytes(n: usize) -> Vec<u128> {
    vec![0u128; aligned_words(n)]
}

/// The 16-byte words that hold `n` bytes (at least one, so that the storage has an address).
fn aligned_words(n: usize) -> usize {
    n.div_ceil(16).max(1)
}

fn as_bytes(v: &mut [u128]) -> &mut [u8] {
    // SAFETY: u128 storage reinterpreted as its bytes (no padding, any bit pattern valid).
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 16) }
}

/// A region of host memory that a kernel launched with [`Jit::launch_raw`] may reach through
/// an address among its parameters (or one it computes): checked mode allows accesses inside
/// it (as `.global` memory) and reports any other access as a fault naming the nearest one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostArea {
    /// Address of its first byte.
    pub base: u64,
    /// Size in bytes.
    pub size: usize,
    /// How faults name it (`allocation 0x7f00…`).
    pub name: Arc<str>,
    /// Whether stores may write it.
    pub writable: bool,
}

impl Jit {
    /// Launches an `.entry` whose parameters are given as raw bytes, one slice per parameter
    /// holding exactly the parameter's size (as CUDA's `cuLaunchKernel` takes them: an
    /// address is its 8 little-endian bytes, a structure its bytes), with `areas` the host
    /// memory the kernel may access besides the module's variables. Checked mode (the
    /// default) checks every access against the areas and reports an access outside them as
    /// a [`RunError::Fault`]; unchecked mode lets the kernel touch any address.
    ///
    /// The run is the same as [`Engine::launch_with`]'s (blocks spread over all cores, the
    /// lowest-numbered faulting block reported); a grid of one block runs on the calling
    /// thread.
    ///
    /// # Safety
    ///
    /// Every area must be memory the caller owns, valid for reads (and for writes where
    /// `writable`) for its whole size until this returns, and not accessed by anything else
    /// during the launch other than through atomics that the kernel's accesses may race with.
    /// Unchecked, every address the kernel reaches must satisfy the same promise, since
    /// nothing checks it.
    pub unsafe fn launch_raw(
        &self,
        kernel: &str,
        config: LaunchConfig,
        params: &[&[u8]],
        areas: &[HostArea],
    ) -> Result<(), RunError> {
        let (id, func) = launched_kernel(
            &self.module,
            kernel,
            config,
            &self.shared_layout,
            params.len(),
        )?;
        let layout = &self.layouts[id.0 as usize];
        let mut block_params = aligned_bytes(layout.kernel_params_size as usize);
        let params_base = block_params.as_ptr() as u64;
        let mut all = Vec::with_capacity(self.module_areas.len() + areas.len() + params.len());
        all.extend(self.module_areas.iter().cloned());
        all.extend(areas.iter().map(|a| JitArea {
            extent: Extent {
                base: a.base,
                size: a.size,
                space: Space::Global,
                writable: a.writable,
            },
            name: AreaName::Text(a.name.clone()),
        }));
        let bytes = as_bytes(&mut block_params);
        for ((p, b), off) in func.params.iter().zip(params).zip(&layout.kernel_params) {
            let size = func.param_size(p);
            if b.len() != size {
                return Err(RunError::Usage(format!(
                    "parameter `{}` of `{kernel}` is {size} bytes, {} given",
                    func.param_name(p),
                    b.len()
                )));
            }
            let off = *off as usize;
            bytes[off..off + size].copy_from_slice(b);
            all.push(JitArea {
                extent: Extent {
                    base: params_base + off as u64,
                    size,
                    space: Space::Param,
                    writable: false,
                },
                name: AreaName::text(memcheck::param_name(func.param_name(p))),
            });
        }
        let ended = self.run_grid(id, config, params_base, all, &AtomicBool::new(false));
        drop(block_params);
        ended
    }

    /// The address and size of a module variable (`.global` or `.const`): one copy for the
    /// Jit's life, which host code may read and write between launches (what CUDA's
    /// `cuModuleGetGlobal` gives).
    pub fn global(&self, name: &str) -> Option<(u64, usize)> {
        let i = self.module.vars.iter().position(|v| v.name == name)?;
        let a = &self.module_areas[i];
        Some((a.extent.base, a.extent.size))
    }

    /// Bytes of static `.shared` memory a block of kernel `name` uses, as ptxas counts them
    /// (CUDA's `CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES`; 0 for a name the module lacks);
    /// dynamic shared memory may add up to [`crate::block::MAX_SHARED_BYTES`] in all.
    pub fn static_shared_bytes(&self, name: &str) -> u32 {
        let f = (self.module.functions.iter()).position(|f| f.name == name);
        f.map_or(0, |f| self.shared_layout.static_bytes(FuncId(f as u32)))
    }

    /// Runs every block of kernel `id` with its parameter block at `params_base` and
    /// `areas` the memory it may access; the parameter block must outlive the call.
    fn run_grid(
        &self,
        id: FuncId,
        config: LaunchConfig,
        params_base: u64,
        areas: Vec<JitArea>,
        stop: &AtomicBool,
    ) -> Result<(), RunError> {
        let LaunchConfig {
            grid,
            block,
            shared_bytes,
        } = config;
        let shared = AreaMap::new(areas);
        let entry = self.internal[id.0 as usize].expect("find_function checks the body");
        let info: &ModuleInfo = &self.info;
        let shared_ref = &shared;
        let lanes_ref = &self.lane_threads;
        let module = &self.module;
        let step = self.step_layouts[id.0 as usize];
        let group = self.groups[id.0 as usize]
            .iter()
            .find(|(_, plan)| groups::Groups::fits(plan, block));
        let firsts = group.map_or_else(Vec::new, |(_, plan)| groups::Groups::firsts(plan, block));
        let firsts = &firsts;
        let window = Window::of(&self.shared_layout, id, shared_bytes);
        let window = &window;
        // Every block runs; the fault reported is that of the lowest-numbered block, so a
        // faulting launch reports the same fault whatever the scheduling (as the interpreter).
        let skipped = &AtomicBool::new(false);
        let run_block =
            |ctx: &mut ThreadCtx, states: &mut Vec<u128>, shared: &mut Vec<u128>, b: u64| {
                if stop.load(Ordering::Relaxed) {
                    skipped.store(true, Ordering::Relaxed);
                    return None;
                }
                let ctaid = grid.point(b);
                ctx.ctaid = ctaid;
                ctx.ntid = [block.x, block.y, block.z];
                ctx.nctaid = [grid.x, grid.y, grid.z];
                ctx.params = params_base;
                ctx.depth = 0;
                window.open(ctx, shared);
                let ended = match step {
                    Some(layout) if group.is_some() => {
                        let (entry_g, plan) = group.expect("checked");
                        // SAFETY: `entry` is this kernel's finalized round function and
                        // `entry_g` its group function, compiled with the signatures
                        // `RoundFunc` and `GroupFunc`.
                        let (round, func) = unsafe {
                            (
                                std::mem::transmute::<usize, RoundFunc>(entry),
                                std::mem::transmute::<usize, groups::GroupFunc>(*entry_g),
                            )
                        };
                        groups::Groups {
                            module,
                            id,
                            group: func,
                            plan,
                            round,
                            layout,
                            block,
                            ctaid,
                            firsts,
                        }
                        .run(ctx, states)
                    }
                    Some(layout) => {
                        // SAFETY: `entry` is this kernel's finalized round function
                        // (cooperative kernels are compiled as one), whose signature
                        // is `RoundFunc`.
                        let round = unsafe { std::mem::transmute::<usize, RoundFunc>(entry) };
                        let mut threads =
                            StepThreads::new(module, &mut *ctx, round, layout, block, states);
                        schedule::run_block(module.func(id), block, ctaid, &mut threads)
                    }
                    None => {
                        // SAFETY: `entry` is this kernel's finalized block
                        // function, compiled with the signature `BlockFunc`; the
                        // context is this worker's own, and its pointers (areas,
                        // module info, parameter block, shared window) outlive the
                        // call.
                        let status = unsafe {
                            let f: BlockFunc = std::mem::transmute(entry);
                            f(ctx)
                        };
                        if status == STATUS_FAULT {
                            let f = ctx
                                .fault
                                .take()
                                .expect("a faulting block records its fault");
                            Err(locate(module, f, ctx.ctaid, ctx.tid))
                        } else {
                            Ok(())
                        }
                    }
                };
                if ctx.lane_threads > 0 {
                    lanes_ref.fetch_add(ctx.lane_threads, Ordering::Relaxed);
                    ctx.lane_threads = 0;
                }
                // Boxed: the pool folds one result a block, and a fault inline made each a
                // copy of its whole size (10% of saxpy's time, depending on how rustc inlined
                // the fold).
                ended.err().map(|f| (b, Box::new(f)))
            };
        let pool = |blocks: std::ops::Range<u64>| {
            blocks
                .into_par_iter()
                .map_init(
                    || (ThreadCtx::new(shared_ref, info), Vec::new(), Vec::new()),
                    |(ctx, states, shared), b| run_block(ctx, states, shared, b),
                )
                .flatten()
                .min_by_key(|(b, _)| *b)
        };
        let fault = if self.big_stack {
            self.on_stack(|| pool(0..grid.count()))
        } else {
            // Blocks run on the calling thread while they are quick: a launch whose blocks
            // all end within `SEQUENTIAL_BUDGET` never wakes the pool (whose hand-off costs
            // more than small launches take); what is left of a longer one goes to the pool.
            let (mut ctx, mut states, mut shared) =
                (ThreadCtx::new(shared_ref, info), Vec::new(), Vec::new());
            let mut first_fault = run_block(&mut ctx, &mut states, &mut shared, 0);
            let mut next = 1;
            if next < grid.count() {
                let start = Instant::now();
                while next < grid.count() && start.elapsed() < SEQUENTIAL_BUDGET {
                    let fault = run_block(&mut ctx, &mut states, &mut shared, next);
                    first_fault = first_fault.or(fault);
                    next += 1;
                }
            }
            let rest = (next < grid.count())
                .then(|| pool(next..grid.count()))
                .flatten();
            first_fault.or(rest)
        };
        match fault {
            Some((_, f)) => Err(self.run_error(*f)),
            None if skipped.load(Ordering::Relaxed) => Err(RunError::Interrupted),
            None => Ok(()),
        }
    }
}

impl Engine for Jit {
    fn call(&self, name: &str, args: &[Value]) -> Result<Vec<Value>, RunError> {
        let (id, func) = find_function(&self.module, name, FuncKind::Func)?;
        check_arity(func, args.len())?;
        (self.shared_layout.check_launch(id, 0)).map_err(RunError::Usage)?;
        check_scalar_rets(func)?;
        let layout = &self.layouts[id.0 as usize];
        // The argument and return buffers, on the stack when they are small.
        let size = (layout.args_size + layout.rets_size) as usize;
        let mut small = [0u128; 8];
        let mut big: Vec<u128>;
        let buf: &mut [u128] = if size <= 8 * 16 {
            &mut small
        } else {
            big = aligned_bytes(size);
            &mut big
        };
        let bytes = as_bytes(buf);
        for ((p, v), off) in func.params.iter().zip(args).zip(&layout.args) {
            check_arg(func, p, *v)?;
            let n = v.ty.bytes();
            bytes[*off as usize..*off as usize + n].copy_from_slice(&v.bits.to_le_bytes()[..n]);
        }
        let entry = self.internal[id.0 as usize].expect("find_function checks the body");
        let args_at = bytes.as_mut_ptr() as usize;
        let rets_at = args_at + layout.args_size as usize;
        // A call runs as the one thread of a block of its own, with a shared window, on this
        // thread's host-call context of this Jit (see `host::rt_host_enter`).
        let window = &self.call_windows[id.0 as usize];
        let fault = self.call_on_stack(move || {
            host::with_host_ctx(self, |ctx| {
                let mut storage = Vec::new();
                window.open(ctx, &mut storage);
                // SAFETY: `entry` is the finalized internal function of this `.func`,
                // compiled with the signature `InternalFunc`; the two buffers lie in `buf`,
                // which has the sizes its layout needs and outlives this closure (the caller
                // waits for it); the context is this thread's own and its pointers refer to
                // `self`, which outlives the call.
                let status = unsafe {
                    let f: InternalFunc = std::mem::transmute(entry);
                    f(ctx, args_at as *mut u8, rets_at as *mut u8)
                };
                (status == STATUS_FAULT).then(|| {
                    ctx.fault
                        .take()
                        .expect("a faulting function records its fault")
                })
            })
        });
        if let Some(f) = fault {
            return Err(self.locate(f, [0; 3], [0; 3]));
        }
        let bytes = as_bytes(buf);
        Ok(func
            .rets
            .iter()
            .zip(&layout.rets)
            .map(|(p, off)| {
                let ty = func.param_type(p);
                let at = (layout.args_size + off) as usize;
                Value::from_le_bytes(ty, &bytes[at..at + ty.bytes()])
            })
            .collect())
    }

    fn lane_threads(&self) -> Option<u64> {
        Some(Jit::lane_threads(self))
    }

    fn launch_until(
        &self,
        name: &str,
        config: LaunchConfig,
        args: &mut [Arg],
        stop: &AtomicBool,
    ) -> Result<(), RunError> {
        let (id, func) =
            launched_kernel(&self.module, name, config, &self.shared_layout, args.len())?;
        let layout = &self.layouts[id.0 as usize];
        let mut block_params = aligned_bytes(layout.kernel_params_size as usize);
        let params_base = block_params.as_ptr() as u64;
        let mut areas = self.module_areas.clone();
        {
            let bytes = as_bytes(&mut block_params);
            for (i, ((p, a), off)) in func
                .params
                .iter()
                .zip(args.iter_mut())
                .zip(&layout.kernel_params)
                .enumerate()
            {
                let b = param_bytes(func, p, a, |buf| {
                    // Generated code reads and writes the caller's buffer in place: it is
                    // exclusively borrowed for the whole launch and Rust does not touch it
                    // until every block has finished.
                    let base = buf.as_mut_ptr() as u64;
                    areas.push(JitArea {
                        extent: Extent {
                            base,
                            size: buf.len(),
                            space: Space::Global,
                            writable: true,
                        },
                        name: AreaName::text(memcheck::buffer_name(i)),
                    });
                    base
                })?;
                let off = *off as usize;
                bytes[off..off + b.len()].copy_from_slice(&b);
                areas.push(JitArea {
                    extent: Extent {
                        base: params_base + off as u64,
                        size: func.param_size(p),
                        space: Space::Param,
                        writable: false,
                    },
                    name: AreaName::text(memcheck::param_name(func.param_name(p))),
                });
            }
        }
        let ended = self.run_grid(id, config, params_base, areas, stop);
        drop(block_params);
        ended
    }
}
