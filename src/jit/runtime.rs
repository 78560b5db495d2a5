//! What generated code calls: the per-thread context, access checks against the shared
//! memory model ([`crate::memcheck`]), fault records, and the float operations the lowering
//! does not inline (directed rounding and the approximate functions, through the soft-float
//! reference).
//!
//! Every helper is `extern "C"` and registered with the JIT under its Rust name; the lowering
//! declares it with the signature written beside it.

use super::hwfloat as hw;
use super::streams::Streams;
use crate::ast::{FloatBinOp, FloatUnOp, Rounding, Space, SyncOp};
use crate::block::schedule::{self, Slot};
use crate::memcheck::{self, Area, AreaMap, Extent};
use crate::softfloat::{self as sf, Fmt};
use std::sync::Arc;

/// A memory area of a JIT launch or call: a caller's buffer, a module variable, a kernel
/// parameter, or a variable in a function's frame.
#[derive(Clone, Debug)]
pub struct JitArea {
    pub extent: Extent,
    pub name: AreaName,
}

/// How a fault names an area: by its own text (buffers, parameters, module variables), or by
/// the frame variable it is (frames are registered on every call in checked mode; copying a
/// pointer is free where cloning an `Arc` is an atomic add on a cache line that every thread
/// of a launch shares).
#[derive(Clone, Debug)]
pub enum AreaName {
    Text(Arc<str>),
    Frame(*const FrameVar),
}

// SAFETY: `Frame` points to a `FrameVar` of the `ModuleInfo` of the Jit whose code registered
// it; a ModuleInfo is never changed after it is built and outlives every launch and call of
// its Jit. Frame areas live only in a thread's context and are removed when their frame
// returns (after a fault or `exit` too); a launch clears its contexts' areas before each
// block, and a host-call context belongs to one Jit and is cleared after a fault (see
// `host::rt_host_enter`), so the pointer is only read while it is valid, and reading
// immutable data from several threads is sound.
unsafe impl Send for AreaName {}
unsafe impl Sync for AreaName {}

impl AreaName {
    pub fn text(s: String) -> AreaName {
        AreaName::Text(Arc::from(s))
    }
}

impl Area for JitArea {
    fn extent(&self) -> Extent {
        self.extent
    }
    fn name(&self) -> &str {
        match &self.name {
            AreaName::Text(t) => t,
            // SAFETY: valid while the area is registered (see `AreaName`).
            AreaName::Frame(v) => unsafe { &(**v).name },
        }
    }
}

/// A variable in a function's frame: offset from the frame base, size, space, name.
#[derive(Clone, Debug)]
pub struct FrameVar {
    pub offset: u32,
    pub size: usize,
    pub space: Space,
    pub name: Arc<str>,
}

/// What helpers need to know of the compiled module, by function index.
#[derive(Debug, Default)]
pub struct ModuleInfo {
    pub names: Vec<String>,
    /// The variables of each function's frame.
    pub frames: Vec<Vec<FrameVar>>,
    /// The source line of each instruction.
    pub lines: Vec<Vec<u32>>,
    /// The operation of each warp collective with its packed [`Site`], in site order.
    pub collectives: Vec<(u64, SyncOp)>,
}

/// Where in the PTX a fault happened: function index and instruction index, packed into one
/// u64 for generated code (`func << 32 | inst`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site {
    pub func: u32,
    pub inst: u32,
}

impl Site {
    pub fn pack(self) -> u64 {
        ((self.func as u64) << 32) | self.inst as u64
    }
    pub fn unpack(v: u64) -> Site {
        Site {
            func: (v >> 32) as u32,
            inst: v as u32,
        }
    }
}

/// A fault recorded by a helper, located when the launch or call returns.
#[derive(Clone, Debug)]
pub struct PendingFault {
    pub message: String,
    pub address: Option<u64>,
    pub site: Site,
}

/// Status codes generated functions return.
pub const STATUS_OK: i32 = 0;
pub const STATUS_FAULT: i32 = 1;
/// The thread executed `exit` inside a called function.
pub const STATUS_EXIT: i32 = 2;

/// How many recently checked areas a thread keeps for generated code to test inline. Each
/// access site tests one of them, its slot, chosen when compiled by the site's base register
/// (`memory.rs`), and `rt_check` fills the slot of the site it checked: a kernel streaming
/// through `a`, `b` and `out` tests each access against its own buffer only. (A shared
/// round-robin cache of two made that kernel evict each area just before its next use and
/// call `rt_check` on every access.)
pub const HIT_AREAS: usize = 8;
/// As many slots again, after those, for `.shared`-space access sites: they hold the block's
/// shared variables (an access naming `.shared` can only be allowed in one), so a shared
/// area never sits in a slot a global or generic site tests.
pub const SHARED_HITS: usize = 8;

/// Per-thread state that generated code reads and helpers update. The first fields are read
/// by generated code at the offsets `std::mem::offset_of!` gives; the rest is Rust's.
#[repr(C)]
pub struct ThreadCtx {
    pub tid: [u32; 3],
    pub ctaid: [u32; 3],
    pub ntid: [u32; 3],
    pub nctaid: [u32; 3],
    /// Address of the kernel's parameter block.
    pub params: u64,
    /// Depth of PTX calls.
    pub depth: u32,
    /// Writable global areas recent accesses were checked in, `[lo, hi)` each, by slot:
    /// generated code lets aligned global and generic accesses inside their slot's area
    /// through without calling `rt_check` (the check would find the same area and allow
    /// them).
    pub hits: [[u64; 2]; HIT_AREAS + SHARED_HITS],
    /// Threads a kernel's lanes function has run (see `lower/lanes/`); the launch adds
    /// them up.
    pub lane_threads: u64,
    /// Host address of offset 0 of the block's shared-memory window (see [`crate::block`]).
    pub shared_base: u64,
    /// `%dynamic_smem_size` and `%total_smem_size` of the launch.
    pub dynamic_smem: u32,
    pub total_smem: u32,
    /// The global load addresses of the blocks a group function ran (see
    /// [`super::streams`]).
    pub streams: Streams,
    /// Areas shared by the launch (buffers, module variables, kernel parameters). Points to a
    /// map that outlives every use of this context (the launch or call owns both).
    pub shared: *const AreaMap<JitArea>,
    /// What helpers need to know of the module; same lifetime as `shared`.
    pub info: *const ModuleInfo,
    /// Areas of the frames of the functions now running (checked mode).
    pub own: Vec<JitArea>,
    pub fault: Option<PendingFault>,
}

impl ThreadCtx {
    pub fn new(shared: &AreaMap<JitArea>, info: &ModuleInfo) -> ThreadCtx {
        ThreadCtx {
            tid: [0; 3],
            ctaid: [0; 3],
            ntid: [1; 3],
            nctaid: [1; 3],
            params: 0,
            depth: 0,
            hits: [[0; 2]; HIT_AREAS + SHARED_HITS],
            lane_threads: 0,
            shared_base: 0,
            dynamic_smem: 0,
            total_smem: 0,
            streams: Streams::default(),
            shared,
            info,
            own: Vec::new(),
            fault: None,
        }
    }

    /// The context as [`ThreadCtx::new`] made it for the same module areas and info, keeping
    /// the allocation of `own`. Field by field, in place: moving a whole new context in cost
    /// host calls ~15 ns (the copy read back stack slots the constructor had just written in
    /// narrower pieces).
    pub fn clear(&mut self) {
        // Destructured, so that a new field cannot be forgotten here.
        let ThreadCtx {
            tid,
            ctaid,
            ntid,
            nctaid,
            params,
            depth,
            hits,
            lane_threads,
            shared_base,
            dynamic_smem,
            total_smem,
            streams,
            shared: _,
            info: _,
            own,
            fault,
        } = self;
        *tid = [0; 3];
        *ctaid = [0; 3];
        *ntid = [1; 3];
        *nctaid = [1; 3];
        *params = 0;
        *depth = 0;
        *hits = [[0; 2]; HIT_AREAS + SHARED_HITS];
        *lane_threads = 0;
        *shared_base = 0;
        *dynamic_smem = 0;
        *total_smem = 0;
        *streams = Streams::default();
        own.clear();
        *fault = None;
    }

    /// Makes the context as new after a call of a `.func` on it: what such a call can leave
    /// is its shared window (areas, base, sizes, the shared-space recent-area slots) and a
    /// fault; frames and the depth are undone by the code itself, and the launch fields are
    /// a kernel's only. The other recent-area slots keep the module variables they hold.
    pub fn end_call(&mut self) {
        self.own.clear();
        self.fault = None;
        self.depth = 0;
        self.shared_base = 0;
        self.dynamic_smem = 0;
        self.total_smem = 0;
        self.hits[HIT_AREAS..].fill([0; 2]);
    }

    /// Puts area `e`, which an access `d` passed in, into the access's recent-area slot, if
    /// the slot keeps such areas: a global-space or generic site's writable global ones, a
    /// shared-space site's shared ones (an inline test against the slot then passes loads
    /// and stores alike).
    fn remember(&mut self, d: AccessDesc, e: Extent) {
        let shared_site = d.space == Some(Space::Shared);
        if e.writable && e.space == Space::Global && !shared_site
            || e.space == Space::Shared && shared_site
        {
            self.hits[d.slot] = [e.base, e.base + e.size as u64];
        }
    }

    fn record(&mut self, message: String, address: Option<u64>, site: u64) {
        self.fault = Some(PendingFault {
            message,
            address,
            site: Site::unpack(site),
        });
    }
}

/// What generated code tells [`rt_check`] of an access, packed into a u32: size in bytes
/// (bits 0–15), space (bits 16–23: 0 generic, else 1 + index in `Space::ALL`), store (bit
/// 24), and the `hits` slot of the access site (bits 25–31).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AccessDesc {
    pub size: usize,
    pub space: Option<Space>,
    pub store: bool,
    pub slot: usize,
}

impl AccessDesc {
    pub fn pack(self) -> u32 {
        let sp = self.space.map_or(0, |s| {
            1 + Space::ALL.iter().position(|x| *x == s).unwrap_or(0)
        });
        self.size as u32 | (sp as u32) << 16 | (self.store as u32) << 24 | (self.slot as u32) << 25
    }

    fn unpack(desc: u32) -> AccessDesc {
        let sp = ((desc >> 16) & 0xff) as usize;
        AccessDesc {
            size: (desc & 0xffff) as usize,
            space: (sp > 0).then(|| Space::ALL[sp - 1]),
            store: (desc >> 24) & 1 != 0,
            slot: (desc >> 25) as usize % (HIT_AREAS + SHARED_HITS),
        }
    }
}

/// `rt_check(ctx, addr, desc, site) -> i32`: checks an access; on a violation records the
/// fault and returns 1.
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher or call.
pub unsafe extern "C" fn rt_check(ctx: *mut ThreadCtx, addr: u64, desc: u32, site: u64) -> i32 {
    // SAFETY: generated code passes the context of the running thread, which the launcher
    // created and nothing else borrows while generated code runs; `shared` points to the
    // launch's map, which outlives the launch.
    let ctx = unsafe { &mut *ctx };
    let shared = unsafe { &*ctx.shared };
    let d = AccessDesc::unpack(desc);
    match memcheck::check_in(&ctx.own, shared, addr, d.size, d.space, d.store) {
        Ok((area, _)) => {
            ctx.remember(d, area.extent);
            0
        }
        Err(v) => {
            ctx.record(v.message, Some(v.address), site);
            1
        }
    }
}

/// `rt_isspacep(ctx, addr, space) -> i32`: 1 if `addr` lies in an area of `space` (an index
/// in `Space::ALL`); an address in no area counts as global (see the interpreter's
/// `is_in_space`).
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher or call.
pub unsafe extern "C" fn rt_isspacep(ctx: *mut ThreadCtx, addr: u64, space: u32) -> i32 {
    // SAFETY: as for `rt_check`.
    let ctx = unsafe { &*ctx };
    let shared = unsafe { &*ctx.shared };
    let space = Space::ALL[space as usize];
    let found = ctx
        .own
        .iter()
        .rev()
        .find(|a| a.contains(addr))
        .or_else(|| shared.find(addr));
    match found {
        Some(a) => (a.extent.space == space) as i32,
        None => (space == Space::Global) as i32,
    }
}

/// `rt_probe(ctx, lo, hi, slot_align) -> i32`: 1 if `[lo, hi)` is non-empty, lies inside one
/// writable global area of the launch and `lo` is a multiple of `align` (bits 8 and up of
/// `slot_align`), and then the area goes into the thread's recent-area slot (bits 0–7), as
/// `rt_check` would put it there; else 0. Records nothing: the SIMD lanes ask it when the
/// inline test of a group's range fails, and on 0 the group runs on the thread loop, whose
/// own checks report any fault.
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher.
pub unsafe extern "C" fn rt_probe(ctx: *mut ThreadCtx, lo: u64, hi: u64, slot_align: u32) -> i32 {
    // SAFETY: as for `rt_check`: the launcher's context of the running thread, whose `shared`
    // map outlives the launch.
    let ctx = unsafe { &mut *ctx };
    let shared = unsafe { &*ctx.shared };
    let (slot, align) = ((slot_align & 0xff) as usize, (slot_align >> 8) as u64);
    let inside = shared.find(lo).map(|a| a.extent).filter(|e| {
        e.space == Space::Global
            && e.writable
            && hi > lo
            && hi <= e.base + e.size as u64
            && lo.is_multiple_of(align.max(1))
    });
    match inside {
        Some(e) => {
            ctx.hits[slot % HIT_AREAS] = [e.base, e.base + e.size as u64];
            1
        }
        None => 0,
    }
}

/// `rt_probe_access(ctx, lo, hi, desc) -> i32`: for an access of a group function (a
/// cooperative kernel in SIMD lanes, checked mode) whose running lanes touch `[lo, hi)`,
/// elements of `desc`'s size at a multiple of it apart: 1 if every one of them passes
/// [`rt_check`]'s test, that is if `[lo, hi)` is non-empty and lies in the area the test
/// finds for `lo`, which passes for an access at `lo`; then the area goes into the access's
/// recent-area slot where `rt_check` would put it. Else 0, recording nothing: the group
/// hands its block over to the thread-by-thread schedule, whose own checks report any fault.
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher.
pub unsafe extern "C" fn rt_probe_access(ctx: *mut ThreadCtx, lo: u64, hi: u64, desc: u32) -> i32 {
    // SAFETY: as for `rt_check`.
    let ctx = unsafe { &mut *ctx };
    let shared = unsafe { &*ctx.shared };
    let d = AccessDesc::unpack(desc);
    let Ok((area, _)) = memcheck::check_in(&ctx.own, shared, lo, d.size, d.space, d.store) else {
        return 0;
    };
    let e = area.extent;
    if hi <= lo || hi > e.base + e.size as u64 {
        return 0;
    }
    ctx.remember(d, e);
    1
}

/// `rt_enter(ctx, func, frame)`: makes the variables of a frame addressable (checked mode).
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher or call.
pub unsafe extern "C" fn rt_enter(ctx: *mut ThreadCtx, func: u32, frame: u64) {
    // SAFETY: as in `rt_check`; `info` outlives the launch.
    let ctx = unsafe { &mut *ctx };
    let info = unsafe { &*ctx.info };
    // One `extend` of known length: one capacity check, not one per variable.
    ctx.own
        .extend(info.frames[func as usize].iter().map(|v| JitArea {
            extent: Extent {
                base: frame + v.offset as u64,
                size: v.size,
                space: v.space,
                writable: true,
            },
            name: AreaName::Frame(v),
        }));
}

/// `rt_leave(ctx, func)`: forgets the variables of the innermost frame.
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher or call.
pub unsafe extern "C" fn rt_leave(ctx: *mut ThreadCtx, func: u32) {
    // SAFETY: as in `rt_enter`.
    let ctx = unsafe { &mut *ctx };
    let info = unsafe { &*ctx.info };
    let n = info.frames[func as usize].len();
    let keep = ctx.own.len().saturating_sub(n);
    ctx.own.truncate(keep);
}

/// `rt_warp(ctx, lanes, site) -> resolved`: resolves the warp collective at `site` for the
/// warp whose 32 slots start at `lanes` if all of them wait there, each naming all 32
/// ([`schedule::resolve_full_warp`]); 32 if it did, else 0. Called by a round function
/// when lane 31 of a warp stops at a collective.
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher, and `lanes` the first
/// of 32 consecutive slots of the block's threads that nothing else uses during the call.
pub unsafe extern "C" fn rt_warp(ctx: *mut ThreadCtx, lanes: *mut Slot, site: u64) -> u32 {
    // SAFETY: the context and its module information outlive the launch (as in
    // `rt_enter`); the caller hands over the 32 slots for the call.
    let (info, lanes) = unsafe { (&*(*ctx).info, std::slice::from_raw_parts_mut(lanes, 32)) };
    let at = info
        .collectives
        .binary_search_by_key(&site, |&(s, _)| s)
        .expect("a round function calls rt_warp at its warp collectives");
    let op = info.collectives[at].1;
    let point = Site::unpack(site).inst;
    if schedule::resolve_full_warp(op, point, lanes) {
        32
    } else {
        0
    }
}

/// Faults [`rt_fault`] records.
pub const FAULT_DEPTH: u32 = 0;
pub const FAULT_NO_BODY: u32 = 1;

/// `rt_fault(ctx, site, kind, callee)`: records a fault that is not a memory access.
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher or call.
pub unsafe extern "C" fn rt_fault(ctx: *mut ThreadCtx, site: u64, kind: u32, callee: u32) {
    // SAFETY: as in `rt_enter`.
    let ctx = unsafe { &mut *ctx };
    let info = unsafe { &*ctx.info };
    let message = match kind {
        FAULT_DEPTH => format!("call depth exceeds {}", crate::engine::MAX_CALL_DEPTH),
        _ => format!(
            "call to `{}`, which has no body in this module",
            info.names[callee as usize]
        ),
    };
    ctx.record(message, None, site);
}

/// `rt_call_failed(ctx, site, callee)`: a called function faulted; the fault is re-located
/// at the call, naming the callee and the line where it happened (as the interpreter does).
///
/// # Safety
/// `ctx` must be the running thread's context, made by the launcher or call.
pub unsafe extern "C" fn rt_call_failed(ctx: *mut ThreadCtx, site: u64, callee: u32) {
    // SAFETY: as in `rt_enter`.
    let ctx = unsafe { &mut *ctx };
    let info = unsafe { &*ctx.info };
    if let Some(f) = ctx.fault.as_mut() {
        let line = info.lines[f.site.func as usize][f.site.inst as usize];
        f.message = format!(
            "{}\n  = in call to `{}` (fault at line {line})",
            f.message, info.names[callee as usize]
        );
        f.site = Site::unpack(site);
    }
}

/// Float operation codes the lowering passes to the helpers below.
pub fn fmt_code(f: Fmt) -> u32 {
    match f {
        Fmt::F32 => 0,
        Fmt::F64 => 1,
    }
}
fn fmt_of(code: u32) -> Fmt {
    if code & 1 == 0 { Fmt::F32 } else { Fmt::F64 }
}
fn index_of<T: PartialEq>(all: &[T], v: &T) -> u32 {
    all.iter().position(|x| x == v).unwrap_or(0) as u32
}
/// `fmt | rnd << 1 | op << 4`.
pub fn float_code(f: Fmt, r: Rounding, op: u32) -> u32 {
    fmt_code(f) | index_of(Rounding::ALL, &r) << 1 | op << 4
}
pub fn bin_op_code(op: FloatBinOp) -> u32 {
    index_of(FloatBinOp::ALL, &op)
}
pub fn un_op_code(op: FloatUnOp) -> u32 {
    index_of(FloatUnOp::ALL, &op)
}
fn decode_float(code: u32) -> (Fmt, Rounding, u32) {
    (
        fmt_of(code),
        Rounding::ALL[((code >> 1) & 7) as usize],
        code >> 4,
    )
}

/// `rt_arith(code, a, b) -> bits`: a directed-rounding add, sub, mul or div.
pub extern "C" fn rt_arith(code: u32, a: u64, b: u64) -> u64 {
    let (f, r, op) = decode_float(code);
    sf::arith(f, FloatBinOp::ALL[op as usize], r, a, b)
}

/// `rt_fma(code, a, b, c) -> bits`: a directed-rounding fused multiply-add.
pub extern "C" fn rt_fma(code: u32, a: u64, b: u64, c: u64) -> u64 {
    let (f, r, _) = decode_float(code);
    sf::fma(f, r, a, b, c)
}

/// `rt_arith_hw(code, a, b) -> bits`: [`rt_arith`] on the host's hardware.
pub extern "C" fn rt_arith_hw(code: u32, a: u64, b: u64) -> u64 {
    let (f, r, op) = decode_float(code);
    let op = FloatBinOp::ALL[op as usize];
    match f {
        Fmt::F32 => {
            let (x, y) = (f32::from_bits(a as u32), f32::from_bits(b as u32));
            hw::arith_f32(op, r, x, y).to_bits() as u64
        }
        Fmt::F64 => hw::arith_f64(op, r, f64::from_bits(a), f64::from_bits(b)).to_bits(),
    }
}

/// `rt_fma_hw(code, a, b, c) -> bits`: [`rt_fma`] on the host's FMA unit.
pub extern "C" fn rt_fma_hw(code: u32, a: u64, b: u64, c: u64) -> u64 {
    let (f, r, _) = decode_float(code);
    match f {
        Fmt::F32 => {
            let v = [a, b, c].map(|x| f32::from_bits(x as u32));
            hw::fma_f32(r, v[0], v[1], v[2]).to_bits() as u64
        }
        Fmt::F64 => {
            let v = [a, b, c].map(f64::from_bits);
            hw::fma_f64(r, v[0], v[1], v[2]).to_bits()
        }
    }
}

/// `rt_sqrt_hw(code, a) -> bits`: a directed square root on the host's hardware.
pub extern "C" fn rt_sqrt_hw(code: u32, a: u64) -> u64 {
    let (f, r, _) = decode_float(code);
    match f {
        Fmt::F32 => hw::sqrt_f32(r, f32::from_bits(a as u32)).to_bits() as u64,
        Fmt::F64 => hw::sqrt_f64(r, f64::from_bits(a)).to_bits(),
    }
}

/// `rt_unary(code, a) -> bits`: directed `sqrt`, and the approximate functions.
pub extern "C" fn rt_unary(code: u32, a: u64) -> u64 {
    let (f, r, op) = decode_float(code);
    match FloatUnOp::ALL[op as usize] {
        FloatUnOp::Sqrt => sf::sqrt(f, r, a),
        FloatUnOp::Rsqrt => sf::rsqrt_approx(f, a),
        FloatUnOp::Ex2 => sf::ex2_approx(f, a),
        FloatUnOp::Lg2 => sf::lg2_approx(f, a),
        FloatUnOp::Sin => sf::sin_approx(f, a),
        FloatUnOp::Cos => sf::cos_approx(f, a),
        other => unreachable!("{other:?} is lowered inline"),
    }
}

/// `rt_approx_ftz_f64(rsqrt, a) -> bits`: `rcp.approx.ftz.f64` (0) or `rsqrt.approx.ftz.f64`
/// (1), from the operand's high word as the hardware computes them.
pub extern "C" fn rt_approx_ftz_f64(rsqrt: u32, a: u64) -> u64 {
    sf::approx_ftz_f64_high(rsqrt != 0, a)
}

/// `rt_from_int(code, v, signed) -> bits`: integer → float in a directed mode.
pub extern "C" fn rt_from_int(code: u32, v: u64, signed: u32) -> u64 {
    let (f, r, _) = decode_float(code);
    let v = if signed != 0 {
        v as i64 as i128
    } else {
        v as i128
    };
    sf::from_int(f, r, v)
}

/// `rt_to_int(code, bits, signed_width) -> v`: float → integer, saturating, NaN → 0;
/// `signed_width` is the width in bits, plus 256 for a signed result.
pub extern "C" fn rt_to_int(code: u32, bits: u64, signed_width: u32) -> u64 {
    let (f, r, _) = decode_float(code);
    sf::to_int(f, r, bits, signed_width & 256 != 0, signed_width & 255)
}

/// `rt_convert(code, bits) -> bits`: f64 → f32 in a directed mode (the code's format is the
/// source's).
pub extern "C" fn rt_convert(code: u32, bits: u64) -> u64 {
    let (from, r, _) = decode_float(code);
    let to = if from == Fmt::F64 { Fmt::F32 } else { Fmt::F64 };
    sf::convert(from, to, r, bits)
}

/// `rt_round_integral(code, bits) -> bits`: round to an integral value in the same format.
pub extern "C" fn rt_round_integral(code: u32, bits: u64) -> u64 {
    let (f, r, _) = decode_float(code);
    sf::round_integral(f, r, bits)
}

/// `rt_fns(mask, base, offset) -> d`: `fns.b32` (a search, kept out of line).
pub extern "C" fn rt_fns(mask: u32, base: u32, offset: i32) -> u32 {
    crate::interp::bits::fns(mask, base, offset)
}

/// `rt_clock(kind) -> value`: a clock special register (`kind` is its `SpecialRegKind`).
pub extern "C" fn rt_clock(kind: u32) -> u64 {
    let kind = crate::ast::SpecialRegKind::ALL[kind as usize];
    crate::interp::clock(kind)
}

/// `rt_half(op, a, b, c) -> d`: a half-precision computation (`op` a [`HalfOp`] as
/// `interp::half::code` packs it), the interpreter's own; `setp` returns p | q << 1.
///
/// [`HalfOp`]: crate::ast::HalfOp
pub extern "C" fn rt_half(op: u64, a: u64, b: u64, c: u64) -> u64 {
    let op = crate::interp::half::code::decode(op);
    let (d, p) = crate::interp::half::compute(op, [a, b, c, 0]);
    if matches!(op, crate::ast::HalfOp::Setp { .. }) {
        d | (p as u64) << 1
    } else {
        d
    }
}

/// `fma`/`fmaf`: the libcalls Cranelift emits for `fma` on hosts without the FMA extension.
pub extern "C" fn host_fma(a: f64, b: f64, c: f64) -> f64 {
    a.mul_add(b, c)
}
pub extern "C" fn host_fmaf(a: f32, b: f32, c: f32) -> f32 {
    a.mul_add(b, c)
}
