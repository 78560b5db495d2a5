//! The steps of [`Jit::with_options`](super::Jit::with_options), in the order it takes them:
//! the code module (ISA and runtime symbols), the module variables, the frames and the stack
//! they need, the declarations, the kernels' lanes functions, the definition of every
//! function with its listing, and the finalized entry points.

use super::layout::{self, FrameLayout};
use super::lower::sync::{StepLayout, round_signature};
use super::lower::{
    COLD_HELPERS, GroupPlan, HELPERS, Lower, Refused, Shared, cold_name, cold_signature,
    group_signature, internal_signature, lanes_signature, lower_group, signature,
};
use super::runtime::{AreaName, JitArea, ModuleInfo, Site};
use super::{Emit, FRAME_OVERHEAD, JitOptions, SMALL_STACK, branches, compile_error, host};
use crate::ast::{FuncId, FuncKind, Function, Inst, Module, Space};
use crate::engine::{MAX_CALL_DEPTH, RunError};
use crate::memcheck::{self, Extent};
use cranelift_codegen::ir::{self, InstBuilder};
use cranelift_codegen::isa::{CallConv, OwnedTargetIsa, TargetIsa};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId as CodeId, FuncOrDataId, Linkage, Module as _, ModuleReloc};
use std::collections::HashMap;

/// What `--emit` collects, by function: (name, text).
pub(super) type Listing = Vec<(String, String)>;

/// The module the code goes into: Cranelift's flags for `options`, the host's ISA, and the
/// runtime helpers' addresses.
pub(super) fn code_module(options: &JitOptions) -> Result<JITModule, RunError> {
    let opt_level = if options.egraph { "speed" } else { "none" };
    let mut jb = JITBuilder::with_isa(
        host_isa(options, opt_level)?,
        cranelift_module::default_libcall_names(),
    );
    for (name, ptr) in runtime_symbols() {
        jb.symbol(name, ptr);
    }
    Ok(JITModule::new(jb))
}

/// The host's ISA with Cranelift's flags for `options`, optimizing at `opt_level`.
pub(super) fn host_isa(options: &JitOptions, opt_level: &str) -> Result<OwnedTargetIsa, RunError> {
    let mut flags = settings::builder();
    let set = |f: &mut settings::Builder, k: &str, v: &str| f.set(k, v).map_err(compile_error);
    set(&mut flags, "opt_level", opt_level)?;
    set(&mut flags, "is_pic", "false")?;
    // Frames can be large (.local arrays): touch every stack page in order, so that an
    // exhausted stack hits its guard page instead of skipping past it.
    set(&mut flags, "enable_probestack", "true")?;
    set(&mut flags, "probestack_strategy", "inline")?;
    set(
        &mut flags,
        "enable_verifier",
        if options.verify { "true" } else { "false" },
    )?;
    cranelift_native::builder()
        .map_err(compile_error)?
        .finish(settings::Flags::new(flags))
        .map_err(compile_error)
}

/// The runtime's symbols, by the names generated code calls.
fn runtime_symbols() -> Vec<(&'static str, *const u8)> {
    use super::runtime::*;
    vec![
        ("rt_check", rt_check as *const u8),
        ("rt_probe", rt_probe as *const u8),
        ("rt_probe_access", rt_probe_access as *const u8),
        ("rt_isspacep", rt_isspacep as *const u8),
        ("rt_enter", rt_enter as *const u8),
        ("rt_leave", rt_leave as *const u8),
        ("rt_warp", rt_warp as *const u8),
        ("rt_fault", rt_fault as *const u8),
        ("rt_call_failed", rt_call_failed as *const u8),
        ("rt_arith", rt_arith as *const u8),
        ("rt_arith_hw", rt_arith_hw as *const u8),
        ("rt_fma_hw", rt_fma_hw as *const u8),
        ("rt_sqrt_hw", rt_sqrt_hw as *const u8),
        ("rt_fma", rt_fma as *const u8),
        ("rt_unary", rt_unary as *const u8),
        ("rt_approx_ftz_f64", rt_approx_ftz_f64 as *const u8),
        ("rt_from_int", rt_from_int as *const u8),
        ("rt_to_int", rt_to_int as *const u8),
        ("rt_convert", rt_convert as *const u8),
        ("rt_round_integral", rt_round_integral as *const u8),
        ("rt_fns", rt_fns as *const u8),
        ("rt_half", rt_half as *const u8),
        ("rt_clock", rt_clock as *const u8),
        ("rt_host_enter", host::rt_host_enter as *const u8),
        ("rt_host_fault", host::rt_host_fault as *const u8),
        ("fma", host_fma as *const u8),
        ("fmaf", host_fmaf as *const u8),
    ]
}

/// Module `.global`/`.const` variables: storage with stable addresses, and their areas.
pub(super) struct ModuleVars {
    /// 16-byte aligned storage of each variable.
    pub memory: Vec<Box<[u128]>>,
    pub areas: Vec<JitArea>,
}

impl ModuleVars {
    pub fn of(module: &Module) -> ModuleVars {
        let mut memory: Vec<Box<[u128]>> = module
            .vars
            .iter()
            .map(|v| super::aligned_bytes(v.size).into_boxed_slice())
            .collect();
        let bases: Vec<u64> = memory.iter().map(|m| m.as_ptr() as u64).collect();
        let mut areas = Vec::new();
        for ((v, mem), &base) in module.vars.iter().zip(&mut memory).zip(&bases) {
            // The initial contents, with the addresses of other variables written in.
            let mut image = v.init[..v.init.len().min(v.size)].to_vec();
            for r in &v.relocs {
                let at = bases[r.target as usize].wrapping_add(r.addend as u64);
                image[r.offset..r.offset + 8].copy_from_slice(&at.to_le_bytes());
            }
            // SAFETY: the u128 storage holds at least `v.size` bytes and `image` is no longer.
            let bytes = unsafe {
                std::slice::from_raw_parts_mut(mem.as_mut_ptr() as *mut u8, mem.len() * 16)
            };
            bytes[..image.len()].copy_from_slice(&image);
            areas.push(JitArea {
                extent: Extent {
                    base,
                    size: v.size,
                    space: v.space,
                    writable: v.space != Space::Const,
                },
                name: AreaName::text(memcheck::variable_name(&v.name)),
            });
        }
        ModuleVars { memory, areas }
    }

    /// Each variable's address.
    pub fn bases(&self) -> Vec<u64> {
        self.areas.iter().map(|a| a.extent.base).collect()
    }
}

/// Each function's frame, and whether calls and launches need the big-stack threads.
pub(super) struct Frames {
    pub layouts: Vec<FrameLayout>,
    pub big_stack: bool,
    /// Bytes of stack the module's deepest possible call chain needs.
    pub stack_needed: usize,
}

impl Frames {
    /// Lays out every function's frame, refusing one larger than the JIT supports.
    pub fn of(module: &Module) -> Result<Frames, RunError> {
        let layouts: Vec<FrameLayout> = module
            .functions
            .iter()
            .map(|f| FrameLayout::of(module, f))
            .collect();
        for (f, l) in module.functions.iter().zip(&layouts) {
            if l.frame_size > layout::MAX_FRAME_BYTES {
                return Err(RunError::Usage(format!(
                    "`{}` uses {} bytes of .local and .param memory per thread; the JIT supports at most {} (PTX's local memory limit)",
                    f.name,
                    l.frame_size,
                    layout::MAX_FRAME_BYTES
                )));
            }
        }
        // Deep recursion with big frames needs more stack than a thread has by default:
        // launches and calls of such modules run on threads with room for the worst case.
        let has_calls = module.functions.iter().any(|f| {
            f.body
                .iter()
                .flatten()
                .any(|i| matches!(i.inst, Inst::Call { .. }))
        });
        let deepest = layouts
            .iter()
            .map(|l| l.frame_size + l.call_buf)
            .max()
            .unwrap_or(0) as usize
            + FRAME_OVERHEAD;
        let stack_needed = if has_calls {
            (MAX_CALL_DEPTH + 1) * deepest
        } else {
            deepest
        };
        Ok(Frames {
            layouts,
            big_stack: stack_needed > SMALL_STACK,
            stack_needed,
        })
    }

    /// What faults need to be located: function names, frame variables, source lines.
    pub fn info(&self, module: &Module) -> Box<ModuleInfo> {
        Box::new(ModuleInfo {
            names: module.functions.iter().map(|f| f.name.clone()).collect(),
            frames: self.layouts.iter().map(|l| l.frame_vars.clone()).collect(),
            lines: module
                .functions
                .iter()
                .map(|f| f.body.iter().flatten().map(|i| i.line).collect())
                .collect(),
            collectives: module
                .functions
                .iter()
                .enumerate()
                .flat_map(|(fi, f)| {
                    f.body
                        .iter()
                        .flatten()
                        .enumerate()
                        .filter_map(move |(i, ins)| {
                            let site = Site {
                                func: fi as u32,
                                inst: i as u32,
                            };
                            match ins.inst {
                                Inst::Sync { op, .. } if !op.is_barrier() => {
                                    Some((site.pack(), op))
                                }
                                _ => None,
                            }
                        })
                })
                .collect(),
        })
    }

    /// The thread state of each cooperative kernel's round function.
    pub fn step_layouts(&self, module: &Module, cooperative: &[bool]) -> Vec<Option<StepLayout>> {
        module
            .functions
            .iter()
            .zip(&self.layouts)
            .zip(cooperative)
            .map(|((f, l), &c)| c.then(|| StepLayout::of(f, l.frame_size)))
            .collect()
    }
}

/// What is declared before any function is lowered: the runtime helpers and each function's
/// code.
pub(super) struct Declared {
    pub cc: CallConv,
    pub helpers: HashMap<&'static str, CodeId>,
    /// Which functions are kernels with barriers or warp collectives, compiled as round
    /// functions.
    pub cooperative: Vec<bool>,
    /// Each function's code (None for prototypes).
    pub internal: Vec<Option<CodeId>>,
}

impl Declared {
    pub fn of(jm: &mut JITModule, module: &Module) -> Result<Declared, RunError> {
        let cc = jm.isa().default_call_conv();
        let mut helpers = HashMap::new();
        for (name, params, rets) in HELPERS {
            let id = jm
                .declare_function(name, Linkage::Import, &signature(cc, params, rets))
                .map_err(compile_error)?;
            helpers.insert(*name, id);
        }
        let cooperative: Vec<bool> = module
            .functions
            .iter()
            .map(|f| {
                f.kind == FuncKind::Entry
                    && f.body
                        .iter()
                        .flatten()
                        .any(|i| matches!(i.inst, Inst::Sync { .. }))
            })
            .collect();
        let mut declared = Declared {
            cc,
            helpers,
            cooperative,
            internal: Vec::new(),
        };
        for (i, f) in module.functions.iter().enumerate() {
            let id = match f.body {
                Some(_) => Some(
                    jm.declare_function(
                        &format!("ptx{i}.{}", f.name),
                        Linkage::Local,
                        &declared.code_signature(i, f.kind),
                    )
                    .map_err(compile_error)?,
                ),
                None => None,
            };
            declared.internal.push(id);
        }
        Ok(declared)
    }

    /// The signature of function `i`'s code: a round function for a cooperative kernel.
    pub fn code_signature(&self, i: usize, kind: FuncKind) -> ir::Signature {
        if self.cooperative[i] {
            round_signature(self.cc)
        } else {
            internal_signature(self.cc, kind)
        }
    }
}

/// The kernels that run in lanes: their lanes functions, lowered (not yet defined), and why
/// the others do not.
pub(super) struct LanesFunctions {
    pub code: Vec<Option<ir::Function>>,
    pub ids: Vec<Option<CodeId>>,
    /// Cooperative kernels' group functions (see `lower/lanes/rounds.rs`), with their plans:
    /// of 32 lanes, then of 16 (for rows of 16 threads), or none.
    pub groups: Vec<Vec<(ir::Function, GroupPlan)>>,
    pub group_ids: Vec<Vec<CodeId>>,
    /// Each kernel's name and, when it runs on the thread loop only, why.
    pub report: Vec<(String, Option<String>)>,
}

impl LanesFunctions {
    /// Lowers every kernel it can as a lanes function: first, to learn which ones can be.
    /// `shared` has no lanes functions yet.
    pub fn lower(
        jm: &mut JITModule,
        shared: &Shared,
        options: &JitOptions,
    ) -> Result<LanesFunctions, RunError> {
        let module = shared.ptx;
        let cc = jm.isa().default_call_conv();
        let mut code: Vec<Option<ir::Function>> = vec![None; module.functions.len()];
        let mut groups: Vec<Vec<(ir::Function, GroupPlan)>> =
            (0..module.functions.len()).map(|_| Vec::new()).collect();
        let mut report = Vec::new();
        for (i, f) in module.functions.iter().enumerate() {
            if f.kind != FuncKind::Entry || f.body.is_none() {
                continue;
            }
            let why = if shared.cooperative[i] {
                if !options.lanes {
                    Some("lanes are off".to_string())
                } else {
                    let id = FuncId(i as u32);
                    match lower_group::<8>(jm, shared, id) {
                        Ok(g) => {
                            groups[i].push(g);
                            // The same kernel in groups of 16: what one refuses, so would
                            // the other.
                            groups[i].extend(lower_group::<4>(jm, shared, id).ok());
                            None
                        }
                        Err(Refused(why)) => Some(why),
                    }
                }
            } else if options.lanes {
                let mut func = ir::Function::with_name_signature(
                    ir::UserFuncName::default(),
                    lanes_signature(cc),
                );
                let mut fc = FunctionBuilderContext::new();
                let b = FunctionBuilder::new(&mut func, &mut fc);
                match Lower::lanes_function(b, shared, jm, FuncId(i as u32)) {
                    Ok(()) => {
                        code[i] = Some(func);
                        None
                    }
                    Err(Refused(why)) => Some(why),
                }
            } else {
                Some("lanes are off".to_string())
            };
            report.push((f.name.clone(), why));
        }
        let mut ids = Vec::new();
        for (i, c) in code.iter().enumerate() {
            ids.push(match c {
                Some(_) => Some(
                    jm.declare_function(
                        &format!("ptx{i}.{}.lanes", module.functions[i].name),
                        Linkage::Local,
                        &lanes_signature(cc),
                    )
                    .map_err(compile_error)?,
                ),
                None => None,
            });
        }
        let mut group_ids = Vec::new();
        for (i, gs) in groups.iter().enumerate() {
            let mut ids = Vec::new();
            for (_, plan) in gs {
                let name = format!("ptx{i}.{}.groups{}", module.functions[i].name, plan.lanes);
                ids.push(
                    jm.declare_function(&name, Linkage::Local, &group_signature(cc))
                        .map_err(compile_error)?,
                );
            }
            group_ids.push(ids);
        }
        Ok(LanesFunctions {
            code,
            ids,
            groups,
            group_ids,
            report,
        })
    }
}

/// The most loads in a stretch of a body that no label, branch or sync point breaks,
/// above which a group function is not given to the e-graph pass.
///
/// The pass leaves loads where they are (they may trap) and moves pure arithmetic down to
/// its first use by a side effect: in a stretch of many loads, the arithmetic on them (a
/// tiled product's sixteen multiply-adds, whose sum is next used at the barrier's save)
/// comes after the last load, and every loaded vector lives until then, spilled. The tiled
/// product ran 25% slower so (32 loads in a stretch), in fewer host instructions; the
/// other cooperative kernels of the corpus have at most 4.
const FEW_LOADS: usize = 8;

/// Whether no stretch of `f`'s body between labels, branches and sync points holds more
/// than [`FEW_LOADS`] loads.
pub(super) fn loads_stay_few(f: &Function) -> bool {
    let Some(body) = &f.body else {
        return true;
    };
    let mut labelled = vec![false; body.len() + 1];
    for &at in &f.labels {
        if let Some(l) = labelled.get_mut(at) {
            *l = true;
        }
    }
    let mut loads = 0;
    for (at, i) in body.iter().enumerate() {
        if labelled[at] {
            loads = 0;
        }
        match i.inst {
            // Parameters are read once, at the top.
            Inst::Ld {
                space: Some(Space::Param),
                ..
            } => {}
            Inst::Ld { .. } => loads += 1,
            Inst::Bra { .. } | Inst::Sync { .. } | Inst::Ret | Inst::Exit => loads = 0,
            _ => {}
        }
        if loads > FEW_LOADS {
            return false;
        }
    }
    true
}

/// Lowers and defines every function with a body, and each kernel's lanes function after it;
/// returns how many PTX instructions were compiled.
pub(super) fn define_functions(
    jm: &mut JITModule,
    shared: &Shared,
    declared: &Declared,
    lanes: &mut LanesFunctions,
    group_isa: Option<&dyn TargetIsa>,
    emit: Emit,
    listing: &mut Listing,
) -> Result<Defined, RunError> {
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = jm.make_context();
    ctx.set_disasm(emit == Emit::Asm);
    let mut instructions = 0;
    let mut context_free = vec![false; shared.ptx.functions.len()];
    for (i, f) in shared.ptx.functions.iter().enumerate() {
        let Some(id) = declared.internal[i] else {
            continue;
        };
        instructions += f.body.as_ref().map_or(0, Vec::len);
        ctx.func.signature = declared.code_signature(i, f.kind);
        let b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        Lower::function(b, shared, jm, FuncId(i as u32));
        context_free[i] = !reads_first_param(&ctx.func);
        let what = format!("`{}`", f.name);
        define(jm, None, &mut ctx, id, &f.name, &what, emit, listing)?;
        if let (Some(id), Some(code)) = (shared.lanes[i], lanes.code[i].take()) {
            let name = format!("{}.lanes", f.name);
            ctx.func = code;
            let what = format!("`{name}`");
            define(jm, None, &mut ctx, id, &name, &what, emit, listing)?;
        }
        let groups = std::mem::take(&mut lanes.groups[i]);
        let group_isa = group_isa.filter(|_| loads_stay_few(f));
        for (&id, (code, plan)) in lanes.group_ids[i].iter().zip(groups) {
            let name = format!("{}.groups{}", f.name, plan.lanes);
            ctx.func = code;
            let what = format!("`{name}`");
            // Optimized code (here or with `--egraph`) has the e-graph pass fold them.
            if group_isa.is_none() && jm.isa().flags().opt_level() == settings::OptLevel::None {
                branches::fold(&mut ctx, jm.isa())
                    .map_err(|e| compile_error(format!("{what}: {e:?}")))?;
            }
            define(jm, group_isa, &mut ctx, id, &name, &what, emit, listing)?;
        }
    }
    Ok(Defined {
        instructions,
        context_free,
    })
}

/// Defines the trampoline of each cold helper that compiled code uses (declared there): it
/// calls the helper and stores its result (if any) at its first argument. Being of the
/// `preserve_all` convention, it saves and restores every register the helper's call may
/// clobber.
pub(super) fn define_cold_trampolines(
    jm: &mut JITModule,
    declared: &Declared,
    emit: Emit,
    listing: &mut Listing,
) -> Result<(), RunError> {
    let mut fctx = FunctionBuilderContext::new();
    let mut ctx = jm.make_context();
    ctx.set_disasm(emit == Emit::Asm);
    for name in COLD_HELPERS {
        let full = cold_name(name);
        let Some(FuncOrDataId::Func(id)) = jm.get_name(&full) else {
            continue;
        };
        ctx.func.signature = cold_signature(name);
        let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let params = b.block_params(entry).to_vec();
        let helper = jm.declare_func_in_func(declared.helpers[name], b.func);
        let call = b.ins().call(helper, &params[1..]);
        if let Some(&r) = b.inst_results(call).first() {
            b.ins().store(ir::MemFlagsData::trusted(), r, params[0], 0);
        }
        b.ins().return_(&[]);
        b.finalize(jm.isa().frontend_config());
        define(jm, None, &mut ctx, id, &full, &full, emit, listing)?;
    }
    Ok(())
}

/// What [`define_functions`] found.
pub(super) struct Defined {
    /// PTX instructions compiled.
    pub instructions: usize,
    /// By function: its code never reads the thread context it is given (no checked access,
    /// helper, call, frame or special register needs it), so a host call may pass none.
    pub context_free: Vec<bool>,
}

/// Whether any instruction of `func` uses its first parameter.
fn reads_first_param(func: &ir::Function) -> bool {
    let Some(entry) = func.layout.entry_block() else {
        return false;
    };
    let first = func.dfg.block_params(entry)[0];
    func.layout
        .blocks()
        .flat_map(|b| func.layout.block_insts(b))
        .any(|inst| func.dfg.inst_values(inst).any(|v| v == first))
}

/// Compiles the function in `ctx` as `id` and clears `ctx` for the next one; `name` is its
/// listing's title (when `emit` asks for one), `what` names it in an error. Where an `isa` is
/// given, it compiles with that one instead of the module's own (whose flags it must share
/// but for the optimization level).
#[allow(clippy::too_many_arguments)]
pub(super) fn define(
    jm: &mut JITModule,
    isa: Option<&dyn TargetIsa>,
    ctx: &mut cranelift_codegen::Context,
    id: CodeId,
    name: &str,
    what: &str,
    emit: Emit,
    listing: &mut Listing,
) -> Result<(), RunError> {
    if emit == Emit::Clif {
        listing.push((name.to_string(), ctx.func.display().to_string()));
    }
    let failed = |e: String| compile_error(format!("{what}: {e}"));
    match isa {
        None => jm
            .define_function(id, ctx)
            .map_err(|e| failed(format!("{e:?}")))?,
        Some(isa) => {
            let mut plane = Default::default();
            ctx.compile(isa, &mut plane)
                .map_err(|e| failed(format!("{:?}", e.inner)))?;
            let code = ctx.compiled_code().expect("compiled just now");
            let align = (code.buffer.alignment as u64)
                .max(isa.function_alignment().minimum as u64)
                .max(isa.symbol_alignment());
            let relocs: Vec<_> = (code.buffer.relocs().iter())
                .map(|r| ModuleReloc::from_mach_reloc(r, &ctx.func, id))
                .collect();
            jm.define_function_bytes(id, align, code.code_buffer(), &relocs)
                .map_err(|e| failed(format!("{e:?}")))?;
        }
    }
    if emit == Emit::Asm {
        let text = ctx
            .compiled_code()
            .and_then(|c| c.vcode.clone())
            .unwrap_or_default();
        listing.push((name.to_string(), text));
    }
    jm.clear_context(ctx);
    // clear_context also resets the listing flag.
    ctx.set_disasm(emit == Emit::Asm);
    Ok(())
}

/// The address of each declared function's finalized code.
pub(super) fn finalized(jm: &JITModule, ids: &[Option<CodeId>]) -> Vec<Option<usize>> {
    ids.iter()
        .map(|id| id.map(|id| jm.get_finalized_function(id) as usize))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel whose body loads `n` words of shared memory in a row, then again after a
    /// barrier (parameters are not counted).
    fn loads(n: usize) -> Module {
        let step: String = (0..n)
            .map(|k| format!("ld.shared.u32 %r{k}, [s+{}];\n", 4 * k))
            .collect();
        Module::parse(&format!(
            ".version 8.0\n.target sm_80\n.address_size 64\n\
             .visible .entry k(.param .u64 a, .param .u64 b, .param .u64 c, .param .u64 d,\n\
             .param .u64 e, .param .u64 f, .param .u64 g, .param .u64 h, .param .u64 i)\n{{\n\
             .reg .b32 %r<40>;\n.reg .b64 %rd<10>;\n.shared .align 4 .b8 s[256];\n\
             ld.param.u64 %rd1, [a];\nld.param.u64 %rd2, [b];\nld.param.u64 %rd3, [c];\n\
             ld.param.u64 %rd4, [d];\nld.param.u64 %rd5, [e];\nld.param.u64 %rd6, [f];\n\
             ld.param.u64 %rd7, [g];\nld.param.u64 %rd8, [h];\nld.param.u64 %rd9, [i];\n\
             {step}bar.sync 0;\n{step}ret;\n}}\n"
        ))
        .expect("the test kernel parses")
    }

    #[test]
    fn group_functions_that_load_much_in_a_stretch_are_not_optimized() {
        assert!(loads_stay_few(&loads(FEW_LOADS).functions[0]));
        assert!(!loads_stay_few(&loads(FEW_LOADS + 1).functions[0]));
        // The tiled product's 32 loads in a stretch, the tree reduction's 2.
        let corpus = |name| {
            let path = format!(
                "{}/tests/corpus/coop/{name}.ptx",
                env!("CARGO_MANIFEST_DIR")
            );
            Module::parse(&std::fs::read_to_string(path).expect("corpus file")).expect("parses")
        };
        assert!(!loads_stay_few(&corpus("matmul_tiled").functions[0]));
        assert!(loads_stay_few(&corpus("reduce_sum").functions[0]));
    }
}
