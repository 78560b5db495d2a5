//! The reference interpreter: the executable specification of PTX semantics.
//!
//! It runs a function one instruction at a time, one thread after another within a block,
//! blocks spread over the host's cores. The semantics of each instruction family live in
//! their own module, written after the PTX ISA's sections: [`int`] (9.7.1, 9.7.2, 9.7.8),
//! [`float`] (9.7.3), [`half`] (9.7.4, 9.7.7 of half precision), [`convert`] (9.7.7,
//! 9.7.9.21), [`video`] (9.7.18.1), [`bits`] (the pure computations); [`memory`] holds
//! the state spaces. Before any thread runs, `decode` turns each function body into a
//! compact array of instructions with their operands resolved to register-file slots (a
//! pre-pass over the AST, no semantics).
//! This file holds what ties them together: registers, operands, control flow, calls and
//! launches. It shares nothing with the JIT's lowering but the AST and the soft-float module;
//! the JIT calls two of its functions out of line (`fns`'s search and [`half`]).

pub mod atomic;
pub mod bits;
pub mod convert;
mod decode;
pub use decode::access_space;
pub mod float;
pub mod half;
pub mod int;
pub mod memory;
pub mod video;

use crate::ast::*;
use crate::block::SharedLayout;
use crate::block::schedule::{self, Round, Slot};
use crate::engine::{
    Arg, Dim3, Engine, Fault, LaunchConfig, RunError, Value, arg_bytes, check_arity,
    check_scalar_rets, find_function, launched_kernel, param_bytes,
};
use crate::memcheck::{self, Area};
use crate::softfloat::Fmt;
use decode::{Decoded, Dst, Fill, Kind, Op};
use memory::{BlockMemory, Region, SharedMemory};
use rayon::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

pub use crate::engine::MAX_CALL_DEPTH;

/// The interpreter for one module. Module `.global` and `.const` variables live as long as it
/// does and keep their contents across launches, as on a GPU.
pub struct Interpreter {
    module: Module,
    module_vars: Vec<Region>,
    /// Each function's operands, resolved to register-file slots.
    decoded: Vec<Decoded>,
    /// Each function's variables as faults name them (`.local `buf``), by variable id.
    var_names: Vec<Vec<Arc<str>>>,
    /// PTX instructions executed so far, over all threads of all calls and launches.
    executed: AtomicU64,
    /// Held for the read and write of every `atom`/`red`, by all threads of all calls and
    /// launches (memory is bytes, so one lock makes the step atomic).
    atomics: Mutex<()>,
    /// Where the `.shared` variables lie in a block's window.
    shared_layout: SharedLayout,
}

impl Interpreter {
    pub fn new(module: Module) -> Interpreter {
        let module_vars: Vec<Region> = module
            .vars
            .iter()
            .map(|v| {
                Region::new(
                    &v.init,
                    v.size,
                    v.space,
                    v.space != Space::Const,
                    memcheck::variable_name(&v.name),
                )
            })
            .collect();
        // Addresses in initialisers, now that every variable has one.
        for (v, region) in module.vars.iter().zip(&module_vars) {
            for r in &v.relocs {
                let at = module_vars[r.target as usize].base();
                region.write(r.offset, 8, at.wrapping_add(r.addend as u64));
            }
        }
        let shared_layout = SharedLayout::of(&module);
        let decoded = module
            .functions
            .iter()
            .map(|f| decode::decode(&module, f))
            .collect();
        let var_names = module
            .functions
            .iter()
            .map(|f| {
                f.vars
                    .iter()
                    .map(|v| Arc::from(memcheck::frame_var_name(v.space, &v.name)))
                    .collect()
            })
            .collect();
        Interpreter {
            module,
            module_vars,
            decoded,
            var_names,
            executed: AtomicU64::new(0),
            atomics: Mutex::new(()),
            shared_layout,
        }
    }

    pub fn module(&self) -> &Module {
        &self.module
    }

    /// How many PTX instructions this interpreter has executed, over every thread of every
    /// call and launch: each instruction a thread reaches counts once, including those its
    /// guard turns off (they are issued, as on a GPU). For throughput figures.
    pub fn executed(&self) -> u64 {
        self.executed.load(Ordering::Relaxed)
    }

    fn fault(&self, f: Fault) -> RunError {
        RunError::Fault(Box::new(f), Box::new(self.module.source.clone()))
    }
}

impl Engine for Interpreter {
    fn call(&self, name: &str, args: &[Value]) -> Result<Vec<Value>, RunError> {
        let (id, func) = find_function(&self.module, name, FuncKind::Func)?;
        check_arity(func, args.len())?;
        (self.shared_layout.check_launch(id, 0)).map_err(RunError::Usage)?;
        let mut io = Vec::new();
        for (p, v) in func.params.iter().zip(args) {
            io.extend(arg_bytes(func, p, *v)?);
        }
        check_scalar_rets(func)?;
        let shared = SharedMemory::new(self.module_vars.iter().collect());
        let launch = LaunchCtx {
            module: &self.module,
            decoded: &self.decoded,
            var_names: &self.var_names,
            shared,
            kernel_params: Vec::new(),
            module_var_bases: self.module_vars.iter().map(Region::base).collect(),
            grid: Dim3::x(1),
            block: Dim3::x(1),
            atomics: &self.atomics,
            layout: &self.shared_layout,
            shared_bytes: 0,
            total_smem: self.shared_layout.total_smem_size(id, 0),
        };
        // A host call runs as the one thread of a block of its own.
        let block_memory = BlockMemory::new(&self.shared_layout, id, 0);
        let mut thread = Thread::new(&launch, &block_memory, [0; 3], [0; 3]);
        let ended = thread.run(id, &mut io);
        self.executed.fetch_add(thread.executed, Ordering::Relaxed);
        ended.map_err(|f| self.fault(f))?;
        let mut rets = ParamBytes::new(func, &func.rets, &io);
        Ok(func
            .rets
            .iter()
            .map(|p| Value::from_le_bytes(func.param_type(p), rets.next_param()))
            .collect())
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
        let LaunchConfig {
            grid,
            block,
            shared_bytes,
        } = config;
        // Buffers become global regions; every parameter becomes a read-only param region.
        let mut buffers = Vec::new();
        let mut params = Vec::new();
        for (i, (p, a)) in func.params.iter().zip(args.iter_mut()).enumerate() {
            let bytes = param_bytes(func, p, a, |b| {
                let r = Region::new(b, b.len(), Space::Global, true, memcheck::buffer_name(i));
                let base = r.base();
                buffers.push((i, r));
                base
            })?;
            let size = func.param_size(p);
            params.push(Region::new(
                &bytes,
                size,
                Space::Param,
                false,
                memcheck::param_name(func.param_name(p)),
            ));
        }
        let mut regions: Vec<&Region> = self.module_vars.iter().collect();
        regions.extend(buffers.iter().map(|(_, r)| r));
        regions.extend(params.iter());
        let launch = LaunchCtx {
            module: &self.module,
            decoded: &self.decoded,
            var_names: &self.var_names,
            shared: SharedMemory::new(regions),
            kernel_params: params.iter().map(|r| r.base()).collect(),
            module_var_bases: self.module_vars.iter().map(Region::base).collect(),
            grid,
            block,
            atomics: &self.atomics,
            layout: &self.shared_layout,
            shared_bytes,
            total_smem: self.shared_layout.total_smem_size(id, shared_bytes),
        };
        let cooperative = has_sync_points(func);
        // Every block runs; the fault reported is that of the lowest-numbered block, so a
        // faulting launch reports the same fault whatever the scheduling.
        let skipped = AtomicBool::new(false);
        let results: Vec<Result<(), Fault>> = (0..grid.count())
            .into_par_iter()
            .map(|b| {
                if stop.load(Ordering::Relaxed) {
                    skipped.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                let block_memory = BlockMemory::new(&self.shared_layout, id, shared_bytes);
                let ctaid = grid.point(b);
                if cooperative {
                    return self.run_cooperative(&launch, &block_memory, id, ctaid);
                }
                // One Thread value runs the block's threads one after another, so they share
                // its spare frames.
                let mut thread = Thread::new(&launch, &block_memory, ctaid, [0; 3]);
                let mut ended = Ok(());
                for t in 0..block.count() {
                    thread.start(block.point(t));
                    ended = thread.run(id, &mut Vec::new());
                    if ended.is_err() {
                        break;
                    }
                }
                self.executed.fetch_add(thread.executed, Ordering::Relaxed);
                ended
            })
            .collect();
        for (i, r) in buffers {
            if let Arg::Buffer(b) = &mut args[i] {
                b.copy_from_slice(&r.to_vec());
            }
        }
        match results.into_iter().find_map(Result::err) {
            Some(f) => Err(self.fault(f)),
            None if skipped.load(Ordering::Relaxed) => Err(RunError::Interrupted),
            None => Ok(()),
        }
    }
}

/// The clocks (PTX ISA, Special Registers: %clock, %clock_hi, %clock64, %globaltimer):
/// `%clock64` counts nanoseconds of the host's monotonic clock since the first reading in the
/// process (a 1 GHz cycle counter, the same for every thread), `%clock` and `%clock_hi` are
/// its low and high 32 bits; `%globaltimer` is nanoseconds since the Unix epoch, with its
/// halves `%globaltimer_lo`/`_hi`. Both only grow within a thread, as on hardware; their
/// values differ from run to run, so `diff` and the generator leave them out.
pub fn clock(kind: SpecialRegKind) -> u64 {
    use std::time::{Instant, SystemTime, UNIX_EPOCH};
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let cycles = || START.get_or_init(Instant::now).elapsed().as_nanos() as u64;
    let timer = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    };
    match kind {
        SpecialRegKind::Clock64 => cycles(),
        SpecialRegKind::Clock => cycles() & 0xffff_ffff,
        SpecialRegKind::ClockHi => cycles() >> 32,
        SpecialRegKind::Globaltimer => timer(),
        SpecialRegKind::GlobaltimerLo => timer() & 0xffff_ffff,
        SpecialRegKind::GlobaltimerHi => timer() >> 32,
        other => unreachable!("%{} is not a clock", other.ptx()),
    }
}

impl Interpreter {
    /// Runs a block of a kernel with barriers or warp collectives: every thread is a
    /// resumable activation, and the block schedule ([`schedule`]) decides who runs.
    fn run_cooperative<'a>(
        &self,
        launch: &'a LaunchCtx<'a>,
        memory: &'a BlockMemory,
        kernel: FuncId,
        ctaid: [u32; 3],
    ) -> Result<(), Fault> {
        let block = launch.block;
        let mut threads = BlockThreads {
            kernel,
            body: launch.module.func(kernel).body.as_deref().unwrap_or(&[]),
            threads: (0..block.count())
                .map(|t| (Thread::new(launch, memory, ctaid, block.point(t)), None))
                .collect(),
        };
        let ended = schedule::run_block(launch.module.func(kernel), block, ctaid, &mut threads);
        let executed: u64 = threads.threads.iter().map(|(t, _)| t.executed).sum();
        self.executed.fetch_add(executed, Ordering::Relaxed);
        ended
    }
}

/// Whether a function has barriers or warp collectives.
fn has_sync_points(f: &Function) -> bool {
    f.body
        .iter()
        .flatten()
        .any(|i| matches!(i.inst, Inst::Sync { .. }))
}

/// The threads of one block of a cooperative kernel, each with its activation of the
/// kernel once it has started (and until it ends).
struct BlockThreads<'a> {
    kernel: FuncId,
    /// The kernel's instructions (where the threads stop).
    body: &'a [Instruction],
    threads: Vec<(Thread<'a>, Option<Activation<'a>>)>,
}

impl schedule::Threads for BlockThreads<'_> {
    fn run_round(&mut self, slots: &mut [Slot], waiting_too: bool) -> Result<Round, Fault> {
        let mut round = Round::default();
        for (slot, (thread, activation)) in slots.iter_mut().zip(&mut self.threads) {
            let runs =
                slot.status == schedule::READY || (waiting_too && slot.status == schedule::WAITING);
            if !runs {
                continue;
            }
            let act = match activation.take() {
                Some(mut act) => {
                    // The point's results go to its destinations.
                    let op = &thread.l.decoded[act.id.0 as usize].ops[act.pc - 1];
                    op.dst[0].write(&mut act.frame.regs, slot.d);
                    op.dst[1].write(&mut act.frame.regs, slot.p);
                    act
                }
                None => thread.enter(self.kernel, &[]),
            };
            match thread.resume(act)? {
                (act, Some((point, args))) => {
                    round.stopped_at(&self.body[point as usize].inst);
                    *activation = Some(act);
                    *slot = Slot {
                        status: schedule::WAITING,
                        point,
                        args,
                        ..*slot
                    };
                }
                (act, None) => {
                    thread.leave(act, &mut Vec::new());
                    slot.status = schedule::ENDED;
                }
            }
        }
        Ok(round)
    }
}

/// What all threads of one launch (or call) share.
struct LaunchCtx<'a> {
    module: &'a Module,
    decoded: &'a [Decoded],
    var_names: &'a [Vec<Arc<str>>],
    shared: SharedMemory<'a>,
    /// Base address of each kernel parameter's region.
    kernel_params: Vec<u64>,
    /// Base address of each module variable.
    module_var_bases: Vec<u64>,
    grid: Dim3,
    block: Dim3,
    atomics: &'a Mutex<()>,
    layout: &'a SharedLayout,
    /// Dynamic shared memory per block, and `%total_smem_size`.
    shared_bytes: u32,
    total_smem: u32,
}

/// One activation of a function.
struct Frame<'a> {
    /// The register file: registers by id, then the slots of [`decode`] (constants, special
    /// registers, variable addresses, the sink).
    regs: Vec<u64>,
    func: &'a Function,
    /// Base address of each of the function's variables.
    var_base: Vec<u64>,
}

/// A fault before it is located (the interpreter adds function, thread and instruction).
struct Trap {
    message: String,
    address: Option<u64>,
}

/// Takes the lock of the atomics. A panic elsewhere while holding it leaves memory as valid
/// as ever, so a poisoned lock is taken as it is.
fn lock(m: &Mutex<()>) -> std::sync::MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn trap<T>(message: impl Into<String>, address: Option<u64>) -> Result<T, Trap> {
    Err(Trap {
        message: message.into(),
        address,
    })
}

/// A function running in a thread: its frame and where it stands, so that a kernel can
/// stop at a sync point and go on later.
struct Activation<'a> {
    id: FuncId,
    frame: Frame<'a>,
    /// The next instruction.
    pc: usize,
    /// The thread's own regions from this one on are the activation's.
    own_mark: usize,
}

/// A sync point a thread stopped at: its instruction index and sources.
type Point = (u32, [u64; 4]);

/// How a function's execution ended.
enum Flow {
    Return,
    Exit,
}

/// Stack left below which a PTX call runs on a new stack segment, and that segment's size.
const STACK_RED_ZONE: usize = 128 << 10;
const STACK_GROWTH: usize = 2 << 20;

/// How many recently found areas a thread remembers.
const RECENT: usize = 8;

/// One PTX thread.
struct Thread<'a> {
    l: &'a LaunchCtx<'a>,
    /// The block's shared memory.
    block: &'a BlockMemory,
    ctaid: [u32; 3],
    tid: [u32; 3],
    /// CC.CF (PTX ISA 9.7.2). Undefined at entry in PTX; we define it as 0.
    cf: bool,
    /// The thread's own regions: `.local` arrays and `.param` variables of active frames.
    own: Vec<Region>,
    depth: usize,
    /// Set by `exit` in a callee: the whole thread stops.
    exited: bool,
    /// Instructions this thread has reached (see [`Interpreter::executed`]).
    executed: u64,
    /// The launch's areas that recent accesses found, by the slot of their base register
    /// modulo [`RECENT`]: accesses through one base register mostly stay in one buffer.
    recent: [Cell<Option<&'a Region>>; RECENT],
    /// Register files and variable-base tables of ended frames, and regions of their
    /// variables, for the next frames: once warm, a call or a thread allocates nothing.
    spare_words: Vec<Vec<u64>>,
    spare_regions: Vec<Region>,
    /// Parameter buffers of ended calls.
    spare_bytes: Vec<Vec<u8>>,
}

impl<'a> Thread<'a> {
    fn new(l: &'a LaunchCtx<'a>, block: &'a BlockMemory, ctaid: [u32; 3], tid: [u32; 3]) -> Self {
        Thread {
            l,
            block,
            ctaid,
            tid,
            cf: false,
            own: Vec::new(),
            depth: 0,
            exited: false,
            executed: 0,
            recent: Default::default(),
            spare_words: Vec::new(),
            spare_regions: Vec::new(),
            spare_bytes: Vec::new(),
        }
    }

    /// Makes this the thread `tid` of the same block, at its start.
    fn start(&mut self, tid: [u32; 3]) {
        debug_assert!(self.own.is_empty() && self.depth == 0);
        self.tid = tid;
        self.cf = false;
        self.exited = false;
    }

    fn spare_words(&mut self) -> Vec<u64> {
        let mut v = self.spare_words.pop().unwrap_or_default();
        v.clear();
        v
    }

    /// Runs a function to its end. `io` holds the parameters' bytes one after another (for a
    /// kernel: none, its parameters are the launch's); at the end it holds the return
    /// parameters' bytes the same way.
    fn run(&mut self, id: FuncId, io: &mut Vec<u8>) -> Result<(), Fault> {
        let act = self.enter(id, io);
        let (act, stop) = self.resume(act)?;
        debug_assert!(
            stop.is_none(),
            "only cooperative kernels stop, and not through run"
        );
        self.leave(act, io);
        Ok(())
    }

    /// Starts function `id` with the parameters' bytes `io` (see [`Thread::run`]).
    fn enter(&mut self, id: FuncId, io: &[u8]) -> Activation<'a> {
        let func = self.l.module.func(id);
        let args = ParamBytes::new(func, &func.params, io);
        let own_mark = self.own.len();
        let decoded = &self.l.decoded[id.0 as usize];
        let mut frame = Frame {
            regs: self.spare_words(),
            func,
            var_base: self.spare_words(),
        };
        frame.regs.extend_from_slice(&decoded.slots);
        for (i, v) in func.vars.iter().enumerate() {
            let base = match v.role {
                VarRole::Param(k) if func.kind == FuncKind::Entry => {
                    self.l.kernel_params[k as usize]
                }
                VarRole::Param(k) => {
                    let init = args.param(k as usize);
                    self.alloc(v, &self.l.var_names[id.0 as usize][i], init)
                }
                // A .shared variable's address is its offset in the block's window.
                _ if v.space == Space::Shared => {
                    let w = self
                        .l
                        .layout
                        .offset(id.0 as usize, VarId::Function(i as u32));
                    w.expect("shared variables are in the layout") as u64
                }
                _ => self.alloc(v, &self.l.var_names[id.0 as usize][i], &[]),
            };
            debug_assert_eq!(frame.var_base.len(), i);
            frame.var_base.push(base);
        }
        for (k, p) in func.params.iter().enumerate() {
            if let Param::Reg(r) = p {
                frame.regs[r.0 as usize] = le_bits(args.param(k)) & func.reg(*r).ty.mask();
            }
        }
        for &(slot, fill) in &decoded.fills {
            frame.regs[slot as usize] = match fill {
                Fill::Special(s) => self.special(s),
                Fill::Var(v, off) => self.var_addr(&frame, v).wrapping_add(off as u64),
            };
        }
        Activation {
            id,
            frame,
            pc: 0,
            own_mark,
        }
    }

    /// Runs an activation until it ends (`None`) or stops at a sync point.
    fn resume(&mut self, act: Activation<'a>) -> Result<(Activation<'a>, Option<Point>), Fault> {
        let Activation {
            id,
            mut frame,
            mut pc,
            own_mark,
        } = act;
        let func = frame.func;
        let decoded = &self.l.decoded[id.0 as usize];
        let body = func
            .body
            .as_ref()
            .expect("callers check that the function has a body");
        // Counted here, added to the thread's count when the function ends or stops.
        let mut executed = 0;
        let mut stop = None;
        while let Some(op) = decoded.ops.get(pc) {
            pc += 1;
            executed += 1;
            if !op.guard.holds(&frame.regs) {
                continue;
            }
            match self.exec(&mut frame, op, &body[pc - 1]) {
                Ok(Next::Continue) => {}
                Ok(Next::Jump(target)) => pc = target as usize,
                Ok(Next::End(Flow::Return)) => break,
                Ok(Next::End(Flow::Exit)) => {
                    self.exited = true;
                    break;
                }
                Ok(Next::Stop(args)) => {
                    stop = Some(((pc - 1) as u32, args));
                    break;
                }
                Err(t) => {
                    self.executed += executed;
                    let ins = &body[pc - 1];
                    return Err(Fault {
                        message: t.message,
                        function: func.name.clone(),
                        ctaid: self.ctaid,
                        tid: self.tid,
                        span: ins.span,
                        line: ins.line,
                        address: t.address,
                    });
                }
            }
        }
        self.executed += executed;
        let act = Activation {
            id,
            frame,
            pc,
            own_mark,
        };
        Ok((act, stop))
    }

    /// Ends an activation: its return parameters' bytes into `io`, its memory kept for the
    /// next ones.
    fn leave(&mut self, act: Activation<'a>, io: &mut Vec<u8>) {
        let Activation {
            frame, own_mark, ..
        } = act;
        let func = frame.func;
        io.clear();
        for p in &func.rets {
            match p {
                Param::Mem(VarId::Function(i)) => {
                    let base = frame.var_base[*i as usize];
                    let r = self.own[own_mark..]
                        .iter()
                        .find(|r| r.base() == base)
                        .expect("own region");
                    r.append_to(io);
                }
                Param::Reg(r) => io.extend_from_slice(
                    &frame.regs[r.0 as usize].to_le_bytes()[..func.reg(*r).ty.bytes()],
                ),
                Param::Mem(VarId::Module(_)) => unreachable!(),
            }
        }
        self.spare_regions.extend(self.own.drain(own_mark..));
        self.spare_words.extend([frame.regs, frame.var_base]);
    }

    /// A region for a frame's variable: a spare one large enough (preferably the one this
    /// variable had last time, whose name needs no new reference), or a new one.
    fn alloc(&mut self, v: &VarDecl, name: &Arc<str>, init: &[u8]) -> u64 {
        let fits = |r: &Region| r.capacity() >= v.size;
        let spare = self
            .spare_regions
            .iter()
            .rposition(|r| fits(r) && Arc::ptr_eq(&r.name, name))
            .or_else(|| self.spare_regions.iter().rposition(fits));
        let r = match spare {
            Some(i) => {
                let mut r = self.spare_regions.swap_remove(i);
                r.refill(init, v.size, v.space, true, name);
                r
            }
            None => Region::new(init, v.size, v.space, true, name.clone()),
        };
        let base = r.base();
        self.own.push(r);
        base
    }

    // ---- operands ----------------------------------------------------------------------

    fn special(&self, s: SpecialReg) -> u64 {
        let b = self.l.block;
        let linear = self.tid[0] as u64
            + b.x as u64 * (self.tid[1] as u64 + b.y as u64 * self.tid[2] as u64);
        let dim = |d: Dim3| [d.x, d.y, d.z][s.dim as usize] as u64;
        match s.kind {
            SpecialRegKind::Tid => self.tid[s.dim as usize] as u64,
            SpecialRegKind::Ntid => dim(b),
            SpecialRegKind::Ctaid => self.ctaid[s.dim as usize] as u64,
            SpecialRegKind::Nctaid => dim(self.l.grid),
            SpecialRegKind::Laneid => linear % 32,
            SpecialRegKind::Warpid => linear / 32,
            SpecialRegKind::Nwarpid => crate::block::NWARPID as u64,
            // PTX ISA 10: the lanes below, at or above this one's.
            SpecialRegKind::LanemaskEq => 1 << (linear % 32),
            SpecialRegKind::LanemaskLe => (2u64 << (linear % 32)) - 1,
            SpecialRegKind::LanemaskLt => (1u64 << (linear % 32)) - 1,
            SpecialRegKind::LanemaskGe => (u32::MAX as u64) & !((1u64 << (linear % 32)) - 1),
            SpecialRegKind::LanemaskGt => (u32::MAX as u64) & !((2u64 << (linear % 32)) - 1),
            SpecialRegKind::DynamicSmemSize => self.l.shared_bytes as u64,
            SpecialRegKind::TotalSmemSize => self.l.total_smem as u64,
            kind => clock(kind),
        }
    }

    fn var_addr(&self, fr: &Frame, v: VarId) -> u64 {
        match v {
            VarId::Function(i) => fr.var_base[i as usize],
            VarId::Module(i) => self.l.shared_module_var(i),
        }
    }

    /// Reads a call argument as `ty` (its low `ty.bits()` bits). Instructions read their
    /// scalar operands decoded; calls take theirs from the AST.
    fn get(fr: &Frame, op: &Operand, ty: Type) -> u64 {
        match op {
            Operand::Reg(r) => fr.regs[r.0 as usize] & ty.mask(),
            Operand::NotPred(r) => (fr.regs[r.0 as usize] ^ 1) & 1,
            Operand::Imm(i) => i.bits_for(ty),
            other => unreachable!("validated: {other:?} is not a call argument"),
        }
    }

    /// Writes a call's returned value into a register of type `ty` (or the sink).
    fn set(&self, fr: &mut Frame, op: &Operand, ty: Type, v: u64) {
        match op {
            Operand::Reg(r) => set_reg(fr, *r, ty, v),
            Operand::Sink => {}
            other => unreachable!("validated: {other:?} is not a destination"),
        }
    }

    /// Finds the region for an access of `size` bytes at `addr` in `space`, checking bounds,
    /// space, alignment and (for stores) writability. `base` is the slot the address came
    /// from (it picks the entry of [`Thread::recent`]).
    fn region(
        &self,
        base: u32,
        addr: u64,
        size: usize,
        space: Option<Space>,
        store: bool,
    ) -> Result<(&Region, usize), Trap> {
        let recent = &self.recent[base as usize % RECENT];
        // Areas do not overlap: the first area found containing `addr` is the only one.
        let checked = if let Some(r) = recent.get().filter(|r| r.contains(addr)) {
            memcheck::check_within(r, addr, size, space, store)
        } else if let Some(r) = self.own.iter().rev().find(|r| r.contains(addr)) {
            memcheck::check_within(r, addr, size, space, store)
        } else if let Some(r) = self.block.find(addr) {
            memcheck::check_within(r, addr, size, space, store)
        } else if let Some(r) = self.l.shared.find(addr) {
            recent.set(Some(*r));
            memcheck::check_within(*r, addr, size, space, store)
        } else {
            // In no area: the rule's messages name the nearest one, the block's shared
            // variables counted among the thread's own (as the JIT keeps them).
            let own: Vec<&Region> = self.block.regions().chain(&self.own).collect();
            memcheck::check_in(&own, &self.l.shared, addr, size, space, store)
                .map(|(r, off)| (*r, off))
        };
        checked.map_err(|v| Trap {
            message: v.message,
            address: Some(v.address),
        })
    }

    // ---- instructions ------------------------------------------------------------------

    /// Executes one instruction whose guard holds.
    #[inline(always)]
    fn exec(&mut self, fr: &mut Frame<'a>, op: &Op, ins: &Instruction) -> Result<Next, Trap> {
        // Decoded source k, read where a handler needs it.
        macro_rules! src {
            ($k:literal) => {
                op.src[$k].read(&fr.regs)
            };
        }
        let d = op.dst[0];
        let v = match op.kind {
            Kind::Mov => src!(0),
            Kind::Ld { space, ty } => {
                let n = ty.bytes();
                let (r, off) = self.access_region(fr, op, n, space, false)?;
                r.read(off, n)
            }
            Kind::Atom { op: aop, space, ty } => {
                let n = ty.bytes();
                let (r, off) = self.access_region(fr, op, n, space, true)?;
                let _held = lock(self.l.atomics);
                let old = r.read(off, n);
                r.write(off, n, atomic::new_value(aop, ty, old, src!(2), src!(3)));
                old
            }
            Kind::St { space, ty } => {
                let n = ty.bytes();
                let (r, off) = self.access_region(fr, op, n, space, true)?;
                r.write(off, n, src!(2));
                return Ok(Next::Continue);
            }
            Kind::IntBin { op, ty, sat, carry } => {
                let (a, b) = (src!(0), src!(1));
                match op {
                    IntBinOp::Add | IntBinOp::Sub => {
                        let cin = carry.carry_in.then_some(self.cf);
                        let (v, cout) = int::add_sub(op, ty, sat, a, b, cin);
                        if carry.carry_out {
                            self.cf = cout;
                        }
                        v
                    }
                    IntBinOp::Min | IntBinOp::Max => int::min_max(op, ty, a, b),
                    IntBinOp::Div | IntBinOp::Rem => int::div_rem(op, ty, a, b),
                    IntBinOp::And | IntBinOp::Or | IntBinOp::Xor => int::logic(op, a, b),
                    IntBinOp::Shl | IntBinOp::Shr => int::shift(op, ty, a, b),
                }
            }
            Kind::IntUn { op, ty } => int::unary(op, ty, src!(0)),
            Kind::Mul { mode, ty } => int::mul(mode, ty, src!(0), src!(1)),
            Kind::Mad {
                mode,
                ty,
                sat,
                carry,
            } => {
                let cin = carry.carry_in.then_some(self.cf);
                let (v, cout) = int::mad(mode, ty, sat, src!(0), src!(1), src!(2), cin);
                if carry.carry_out {
                    self.cf = cout;
                }
                v
            }
            Kind::Shf { dir, mode } => int::shf(dir, mode, src!(0), src!(1), src!(2)),
            Kind::Bfe { ty } => int::bfe(ty, src!(0), src!(1), src!(2)),
            Kind::Bfi { ty } => int::bfi(ty, src!(0), src!(1), src!(2), src!(3)),
            Kind::Prmt { mode } => int::prmt(mode, src!(0), src!(1), src!(2)),
            Kind::Setp {
                cmp,
                combine,
                ftz,
                ty,
            } => {
                let t = convert::compare(cmp, ty, ftz, src!(0), src!(1));
                let (p, q) = convert::combine(combine, t, src!(2) != 0);
                // q first: `setp %p|%p` leaves p in the register, as on NVIDIA hardware
                // (docs/semantics.md).
                op.dst[1].write(&mut fr.regs, q as u64);
                d.write(&mut fr.regs, p as u64);
                return Ok(Next::Continue);
            }
            Kind::Selp => {
                if src!(2) != 0 {
                    src!(0)
                } else {
                    src!(1)
                }
            }
            Kind::Slct { cty, ftz } => {
                if convert::slct_takes_a(cty, ftz, src!(2)) {
                    src!(0)
                } else {
                    src!(1)
                }
            }
            Kind::Cvt {
                dty,
                aty,
                rnd,
                ftz,
                sat,
            } => convert::cvt(dty, aty, rnd, ftz, sat, src!(0)),
            Kind::FloatBin {
                op,
                ty,
                prec,
                ftz,
                sat,
            } => float::binary(op, Fmt::of(ty), prec, ftz, sat, src!(0), src!(1)),
            Kind::FloatUn { op, ty, prec, ftz } => {
                float::unary(op, Fmt::of(ty), prec, ftz, src!(0))
            }
            Kind::Fma { ty, rnd, ftz, sat } => {
                float::fma(Fmt::of(ty), rnd, ftz, sat, src!(0), src!(1), src!(2))
            }
            Kind::CvtaShared { to_generic: true } => self.block.host(src!(0)),
            Kind::CvtaShared { to_generic: false } => self.block.window(src!(0)),
            Kind::Isspacep { space } => self.is_in_space(src!(0), space) as u64,
            Kind::Sync { .. } => {
                return Ok(Next::Stop([src!(0), src!(1), src!(2), src!(3)]));
            }
            Kind::Compute { op: c } => {
                let (v, p) = bits::compute(c, [src!(0), src!(1), src!(2), src!(3)]);
                // The second destination first, so a half `setp %p|%p` leaves p, as `setp`.
                op.dst[1].write(&mut fr.regs, p as u64);
                d.write(&mut fr.regs, v);
                return Ok(Next::Continue);
            }
            Kind::Hint => return Ok(Next::Continue),
            Kind::Bra { target } => return Ok(Next::Jump(target)),
            Kind::Fence => {
                // Orders this thread's accesses (relaxed atomic bytes) against other
                // threads' as PTX's strongest fence does.
                std::sync::atomic::fence(Ordering::SeqCst);
                return Ok(Next::Continue);
            }
            Kind::Ret => return Ok(Next::End(Flow::Return)),
            Kind::Exit => return Ok(Next::End(Flow::Exit)),
            Kind::Ast => return self.exec_ast(fr, op, ins),
        };
        d.write(&mut fr.regs, v);
        Ok(Next::Continue)
    }

    /// The instructions whose operands are taken from the AST: vector moves, vector and
    /// strong (`.volatile`, `.relaxed`, `.acquire`, `.release`) loads and stores (their
    /// scalar side and address decoded), video instructions and calls.
    #[inline(never)]
    fn exec_ast(&mut self, fr: &mut Frame<'a>, op: &Op, ins: &Instruction) -> Result<Next, Trap> {
        use Inst::*;
        match &ins.inst {
            Mov { ty, d, a } => {
                Self::mov_vector(fr, *ty, d, a, op.src[0].read(&fr.regs), op.dst[0])
            }
            Ld { ty, d, .. } => {
                let n = ty.bytes();
                let (r, off, _held) = self.ast_access(fr, op, &ins.inst)?;
                match d {
                    Operand::Vector(parts) => {
                        for (k, part) in parts.iter().enumerate() {
                            if let Operand::Reg(reg) = part {
                                set_reg(fr, *reg, *ty, r.read(off + k * n, n));
                            }
                        }
                    }
                    _ => op.dst[0].write(&mut fr.regs, r.read(off, n)),
                }
            }
            St { ty, a, .. } => {
                let n = ty.bytes();
                let (r, off, _held) = self.ast_access(fr, op, &ins.inst)?;
                match a {
                    Operand::Vector(parts) => {
                        for (k, part) in parts.iter().enumerate() {
                            r.write(off + k * n, n, element(fr, part, *ty));
                        }
                    }
                    _ => r.write(off, n, op.src[2].read(&fr.regs)),
                }
            }
            Video { form, d, a, b } => {
                let s = self.video_sources(fr, *a, *b, form.tail);
                set_reg(fr, *d, Type::B32, video::video(*form, s));
            }
            Vset {
                aty,
                bty,
                cmp,
                tail,
                d,
                a,
                b,
            } => {
                let s = self.video_sources(fr, *a, *b, *tail);
                set_reg(fr, *d, Type::B32, video::vset(*aty, *bty, *cmp, *tail, s));
            }
            Vmad { form, d, a, b, c } => {
                let s = video::Sources {
                    c: video_value(fr, *c),
                    ..self.video_sources(fr, *a, *b, VideoTail::None)
                };
                set_reg(fr, *d, Type::B32, video::vmad(*form, s));
            }
            VideoSimd { form, d, a, b, c } => {
                let reg = |r: &RegId| fr.regs[r.0 as usize];
                let v = video::simd(*form, reg(a), reg(b), reg(c));
                set_reg(fr, *d, Type::B32, v);
            }
            Call {
                func, rets, args, ..
            } => {
                self.call(fr, *func, rets, args)?;
                if self.exited {
                    return Ok(Next::End(Flow::Exit));
                }
            }
            other => unreachable!("decoded: {other:?} is not executed from the AST"),
        }
        Ok(Next::Continue)
    }

    /// The region and offset of a vector or strong load or store run from the AST
    /// (`exec_ast`), and for a strong access the lock of the atomics, held while it happens: a
    /// strong access is single-copy atomic and ordered (memory is bytes).
    fn ast_access(
        &self,
        fr: &Frame,
        op: &Op,
        inst: &Inst,
    ) -> Result<(&Region, usize, Option<std::sync::MutexGuard<'a, ()>>), Trap> {
        let (Inst::Ld {
            space,
            vec,
            ty,
            order,
            addr,
            ..
        }
        | Inst::St {
            space,
            vec,
            ty,
            order,
            addr,
            ..
        }) = inst
        else {
            unreachable!("a load or store");
        };
        let space = decode::access_space(self.l.module, fr.func, *space, addr);
        let store = matches!(inst, Inst::St { .. });
        let (r, off) = self.access_region(fr, op, ty.bytes() * *vec as usize, space, store)?;
        Ok((r, off, order.is_strong().then(|| lock(self.l.atomics))))
    }

    /// The region of a load or store of `size` bytes at its decoded address (`src[0]` +
    /// `src[1]`; a `.shared` address is in the block's window).
    fn access_region(
        &self,
        fr: &Frame,
        op: &Op,
        size: usize,
        space: Option<Space>,
        store: bool,
    ) -> Result<(&Region, usize), Trap> {
        let [base, offset, ..] = op.src;
        let mut at = base.read(&fr.regs).wrapping_add(offset.read(&fr.regs));
        if space == Some(Space::Shared) {
            at = self.block.host(at);
        }
        self.region(base.slot(), at, size, space, store)
    }

    /// `isspacep` (PTX ISA, Data Movement and Conversion Instructions: isspacep): whether
    /// the generic address `a` is in an area of `space`. An address in no area counts as
    /// global, as the generic addresses outside the shared and local windows are on a GPU.
    fn is_in_space(&self, a: u64, space: Space) -> bool {
        let found = self
            .own
            .iter()
            .find(|r| r.contains(a))
            .or_else(|| self.block.find(a))
            .or_else(|| self.l.shared.find(a).copied());
        match found {
            Some(r) => r.space() == space,
            None => space == Space::Global,
        }
    }

    /// The 32-bit sources of a video instruction (c is 0 when there is none).
    fn video_sources(
        &self,
        fr: &Frame,
        a: VideoSrc,
        b: VideoSrc,
        tail: VideoTail,
    ) -> video::Sources {
        let c = match tail {
            VideoTail::None => 0,
            VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) => video_value(fr, c),
        };
        video::Sources {
            a: video_value(fr, a.value),
            asel: a.sel,
            b: video_value(fr, b.value),
            bsel: b.sel,
            c,
        }
    }

    /// `mov` (9.7.9.1) packing or unpacking vector operands: `a` is the value of the scalar
    /// source when the destination is a vector, `d` the scalar destination otherwise.
    fn mov_vector(fr: &mut Frame, ty: Type, dv: &Operand, av: &Operand, a: u64, d: Dst) {
        match (dv, av) {
            (Operand::Vector(parts), _) => {
                let w = ty.bits() / parts.len() as u32;
                for (k, p) in parts.iter().enumerate() {
                    if let Operand::Reg(r) = p {
                        let t = Type::from_ptx(&format!("b{w}")).expect("8/16/32-bit parts");
                        set_reg(fr, *r, t, a >> (w * k as u32));
                    }
                }
            }
            (_, Operand::Vector(parts)) => {
                let w = ty.bits() / parts.len() as u32;
                let mask = (1u64 << w) - 1;
                let t = Type::from_ptx(&format!("b{w}")).expect("8/16/32-bit parts");
                let v = parts.iter().enumerate().fold(0u64, |acc, (k, p)| {
                    acc | ((element(fr, p, t) & mask) << (w * k as u32))
                });
                d.write(&mut fr.regs, v);
            }
            _ => unreachable!("callers pass a vector operand"),
        }
    }

    /// `call` (9.7.13.5): arguments are copied into the callee's parameters, return
    /// parameters back into the caller's variables or registers.
    fn call(
        &mut self,
        fr: &mut Frame<'a>,
        id: FuncId,
        rets: &[Operand],
        args: &[Operand],
    ) -> Result<(), Trap> {
        let callee = self.l.module.func(id);
        if callee.body.is_none() {
            return trap(
                format!(
                    "call to `{}`, which has no body in this module",
                    callee.name
                ),
                None,
            );
        }
        if self.depth >= MAX_CALL_DEPTH {
            return trap(format!("call depth exceeds {MAX_CALL_DEPTH}"), None);
        }
        let mut io = self.spare_bytes.pop().unwrap_or_default();
        io.clear();
        for (a, p) in args.iter().zip(&callee.params) {
            let size = callee.param_size(p);
            match a {
                Operand::Var(v) => {
                    let base = self.var_addr(fr, *v);
                    let (r, _) = self.region(0, base, 1, Some(Space::Param), false)?;
                    r.append_to(&mut io);
                }
                _ => io.extend_from_slice(
                    &Self::get(fr, a, callee.param_type(p)).to_le_bytes()[..size],
                ),
            }
        }
        self.depth += 1;
        // CC.CF is the function's own: 0 at the callee's entry, and the caller's again after
        // the call (PTX: not preserved across calls; docs/semantics.md).
        let caller_cf = std::mem::replace(&mut self.cf, false);
        // PTX recursion is host recursion here: 256 levels of run/exec frames need more than
        // a host thread's stack holds in debug builds, so the stack grows on the heap when
        // little is left.
        let result = stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || self.run(id, &mut io));
        self.cf = caller_cf;
        self.depth -= 1;
        match result {
            Ok(()) => {}
            Err(f) => {
                // Propagate the callee's located fault unchanged.
                return Err(Trap {
                    message: format!(
                        "{}\n  = in call to `{}` (fault at line {})",
                        f.message, callee.name, f.line
                    ),
                    address: f.address,
                });
            }
        }
        let mut out = ParamBytes::new(callee, &callee.rets, &io);
        for (o, p) in rets.iter().zip(&callee.rets) {
            let b = out.next_param();
            match o {
                Operand::Var(v) => {
                    let base = self.var_addr(fr, *v);
                    let (r, off) = self.region(0, base, 1, Some(Space::Param), true)?;
                    r.write_bytes(off, b);
                }
                _ => self.set(fr, o, callee.param_type(p), le_bits(b)),
            }
        }
        self.spare_bytes.push(io);
        Ok(())
    }
}

/// The bytes of a parameter list, each parameter's after the one before (how arguments go
/// into [`Thread::run`] and return values come out).
struct ParamBytes<'b> {
    func: &'b Function,
    params: &'b [Param],
    bytes: &'b [u8],
    /// The parameter [`ParamBytes::next_param`] gives.
    next: usize,
}

impl<'b> ParamBytes<'b> {
    fn new(func: &'b Function, params: &'b [Param], bytes: &'b [u8]) -> Self {
        ParamBytes {
            func,
            params,
            bytes,
            next: 0,
        }
    }
    /// Parameter `k`'s bytes (empty when there are none: a kernel's, which the launch holds).
    fn param(&self, k: usize) -> &'b [u8] {
        let size = |p| self.func.param_size(p);
        let start: usize = self.params[..k].iter().map(size).sum();
        let end = start + size(&self.params[k]);
        self.bytes.get(start..end).unwrap_or(&[])
    }
    /// The next parameter's bytes.
    fn next_param(&mut self) -> &'b [u8] {
        self.next += 1;
        self.param(self.next - 1)
    }
}

/// What to do after an instruction.
enum Next {
    Continue,
    /// At a sync point, with the values of its sources.
    Stop([u64; 4]),
    /// To the instruction with this index.
    Jump(u32),
    End(Flow),
}

/// Writes register `r` at the instruction type `ty` (the rule of [`Dst`]), for the
/// instructions that name their registers in the AST.
/// A scalar video operand's 32 bits.
fn video_value(fr: &Frame, v: VideoValue) -> u64 {
    match v {
        VideoValue::Reg(r) => fr.regs[r.0 as usize] & 0xffff_ffff,
        VideoValue::Imm(x) => x as u64,
    }
}

/// A source vector's element: a register's bits or an immediate's at `ty`.
fn element(fr: &Frame, part: &Operand, ty: Type) -> u64 {
    match part {
        Operand::Reg(r) => fr.regs[r.0 as usize],
        Operand::Imm(i) => i.bits_for(ty),
        other => unreachable!("validated: {other:?} is not a source element"),
    }
}

fn set_reg(fr: &mut Frame, r: RegId, ty: Type, v: u64) {
    Dst::new(r, fr.func.reg(r).ty, ty).write(&mut fr.regs, v);
}

fn le_bits(b: &[u8]) -> u64 {
    Value::from_le_bytes(Type::B64, b).bits
}

impl LaunchCtx<'_> {
    /// A module variable's address: a host address, or for a `.shared` one its offset in
    /// the block's window.
    fn shared_module_var(&self, i: u32) -> u64 {
        match self.layout.offset(0, VarId::Module(i)) {
            Some(w) => w as u64,
            None => self.module_var_bases[i as usize],
        }
    }
}
