//! The reference interpreter: the executable specification of PTX semantics.
//!
//! It walks the typed AST one instruction at a time, one thread after another within a block,
//! blocks spread over the host's cores. The semantics of each instruction family live in
//! their own module, written after the PTX ISA's sections: [`int`] (9.7.1, 9.7.2, 9.7.8),
//! [`float`] (9.7.3), [`convert`] (9.7.7, 9.7.9.21), [`video`] (9.7.18.1); [`memory`] holds
//! the state spaces.
//! This file holds what ties them together: registers, operands, control flow, calls and
//! launches. It shares nothing with the JIT's lowering but the AST and the soft-float module.

pub mod convert;
pub mod float;
pub mod int;
pub mod memory;
pub mod video;

use crate::ast::*;
use crate::engine::{
    Arg, Dim3, Engine, Fault, RunError, Value, arg_bytes, check_arity, check_buffer_param,
    check_dims, check_scalar_rets, find_function,
};
use crate::memcheck::{self, Area};
use crate::softfloat::Fmt;
use memory::{Region, SharedMemory};
use rayon::prelude::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

pub use crate::engine::MAX_CALL_DEPTH;

/// The interpreter for one module. Module `.global` and `.const` variables live as long as it
/// does and keep their contents across launches, as on a GPU.
pub struct Interpreter {
    module: Module,
    module_vars: Vec<Region>,
    /// Each function's register types, by register id: a compact copy of its declarations
    /// for the register writes of every instruction.
    reg_types: Vec<Vec<Type>>,
    /// Each function's variables as faults name them (`.local `buf``), by variable id.
    var_names: Vec<Vec<Arc<str>>>,
    /// PTX instructions executed so far, over all threads of all calls and launches.
    executed: AtomicU64,
}

impl Interpreter {
    pub fn new(module: Module) -> Interpreter {
        let module_vars = module
            .vars
            .iter()
            .map(|v| {
                Region::new(
                    &v.init,
                    v.size,
                    v.space,
                    v.space != Space::Const,
                    format!("variable `{}`", v.name),
                )
            })
            .collect();
        let reg_types = module
            .functions
            .iter()
            .map(|f| f.regs.iter().map(|r| r.ty).collect())
            .collect();
        let var_names = module
            .functions
            .iter()
            .map(|f| {
                f.vars
                    .iter()
                    .map(|v| Arc::from(format!("{} `{}`", v.space, v.name)))
                    .collect()
            })
            .collect();
        Interpreter {
            module,
            module_vars,
            reg_types,
            var_names,
            executed: AtomicU64::new(0),
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
        let mut bytes = Vec::new();
        for (p, v) in func.params.iter().zip(args) {
            bytes.push(arg_bytes(func, p, *v)?);
        }
        check_scalar_rets(func)?;
        let shared = SharedMemory::new(self.module_vars.iter().collect());
        let launch = LaunchCtx {
            module: &self.module,
            reg_types: &self.reg_types,
            var_names: &self.var_names,
            shared,
            kernel_params: Vec::new(),
            module_var_bases: self.module_vars.iter().map(Region::base).collect(),
            grid: Dim3::x(1),
            block: Dim3::x(1),
        };
        let mut thread = Thread::new(&launch, [0; 3], [0; 3]);
        let rets = thread.run(id, bytes);
        self.executed.fetch_add(thread.executed, Ordering::Relaxed);
        let rets = rets.map_err(|f| self.fault(f))?;
        Ok(func
            .rets
            .iter()
            .zip(rets)
            .map(|(p, b)| Value::from_le_bytes(func.param_type(p), &b))
            .collect())
    }

    fn launch(
        &self,
        name: &str,
        grid: Dim3,
        block: Dim3,
        args: &mut [Arg],
    ) -> Result<(), RunError> {
        let (id, func) = find_function(&self.module, name, FuncKind::Entry)?;
        check_dims(grid, block)?;
        check_arity(func, args.len())?;
        // Buffers become global regions; every parameter becomes a read-only param region.
        let mut buffers = Vec::new();
        let mut params = Vec::new();
        for (i, (p, a)) in func.params.iter().zip(args.iter()).enumerate() {
            let bytes = match a {
                Arg::Scalar(v) => arg_bytes(func, p, *v)?,
                Arg::Buffer(b) => {
                    check_buffer_param(func, p)?;
                    let r = Region::new(b, b.len(), Space::Global, true, format!("buffer arg{i}"));
                    let addr = r.base().to_le_bytes().to_vec();
                    buffers.push((i, r));
                    addr
                }
            };
            let size = func.param_size(p);
            params.push(Region::new(
                &bytes,
                size,
                Space::Param,
                false,
                format!("parameter `{}`", func.param_name(p)),
            ));
        }
        let mut regions: Vec<&Region> = self.module_vars.iter().collect();
        regions.extend(buffers.iter().map(|(_, r)| r));
        regions.extend(params.iter());
        let launch = LaunchCtx {
            module: &self.module,
            reg_types: &self.reg_types,
            var_names: &self.var_names,
            shared: SharedMemory::new(regions),
            kernel_params: params.iter().map(|r| r.base()).collect(),
            module_var_bases: self.module_vars.iter().map(Region::base).collect(),
            grid,
            block,
        };
        // Every block runs; the fault reported is that of the lowest-numbered block, so a
        // faulting launch reports the same fault whatever the scheduling.
        let results: Vec<Result<(), Fault>> = (0..grid.count())
            .into_par_iter()
            .map(|b| {
                let ctaid = grid.point(b);
                for t in 0..block.count() {
                    let mut thread = Thread::new(&launch, ctaid, block.point(t));
                    let ended = thread.run(id, Vec::new());
                    self.executed.fetch_add(thread.executed, Ordering::Relaxed);
                    ended?;
                }
                Ok(())
            })
            .collect();
        for (i, r) in buffers {
            if let Arg::Buffer(b) = &mut args[i] {
                b.copy_from_slice(&r.to_vec());
            }
        }
        match results.into_iter().find_map(Result::err) {
            Some(f) => Err(self.fault(f)),
            None => Ok(()),
        }
    }
}

/// What all threads of one launch (or call) share.
struct LaunchCtx<'a> {
    module: &'a Module,
    reg_types: &'a [Vec<Type>],
    var_names: &'a [Vec<Arc<str>>],
    shared: SharedMemory<'a>,
    /// Base address of each kernel parameter's region.
    kernel_params: Vec<u64>,
    /// Base address of each module variable.
    module_var_bases: Vec<u64>,
    grid: Dim3,
    block: Dim3,
}

/// One activation of a function.
struct Frame<'a> {
    regs: Vec<u64>,
    reg_types: &'a [Type],
    /// Base address of each of the function's variables.
    var_base: Vec<u64>,
}

/// A fault before it is located (the interpreter adds function, thread and instruction).
struct Trap {
    message: String,
    address: Option<u64>,
}

fn trap<T>(message: impl Into<String>, address: Option<u64>) -> Result<T, Trap> {
    Err(Trap {
        message: message.into(),
        address,
    })
}

/// How a function's execution ended.
enum Flow {
    Return,
    Exit,
}

/// One PTX thread.
struct Thread<'a> {
    l: &'a LaunchCtx<'a>,
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
}

impl<'a> Thread<'a> {
    fn new(l: &'a LaunchCtx<'a>, ctaid: [u32; 3], tid: [u32; 3]) -> Self {
        Thread {
            l,
            ctaid,
            tid,
            cf: false,
            own: Vec::new(),
            depth: 0,
            exited: false,
            executed: 0,
        }
    }

    /// Runs a function to its end with the given parameter bytes (for a kernel: none, its
    /// parameters are the launch's); returns the return parameters' bytes.
    fn run(&mut self, id: FuncId, args: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, Fault> {
        let func = self.l.module.func(id);
        let own_mark = self.own.len();
        let mut frame = Frame {
            regs: vec![0; func.regs.len()],
            reg_types: &self.l.reg_types[id.0 as usize],
            var_base: Vec::with_capacity(func.vars.len()),
        };
        for (i, v) in func.vars.iter().enumerate() {
            let base = match v.role {
                VarRole::Param(k) if func.kind == FuncKind::Entry => {
                    self.l.kernel_params[k as usize]
                }
                VarRole::Param(k) => {
                    self.alloc(v, &self.l.var_names[id.0 as usize][i], &args[k as usize])
                }
                _ => self.alloc(v, &self.l.var_names[id.0 as usize][i], &[]),
            };
            debug_assert_eq!(frame.var_base.len(), i);
            frame.var_base.push(base);
        }
        for (k, p) in func.params.iter().enumerate() {
            if let Param::Reg(r) = p {
                frame.regs[r.0 as usize] = le_bits(&args[k]) & func.reg(*r).ty.mask();
            }
        }
        let body = func
            .body
            .as_ref()
            .expect("callers check that the function has a body");
        let mut pc = 0;
        while pc < body.len() {
            let ins = &body[pc];
            pc += 1;
            self.executed += 1;
            if let Some(g) = ins.guard
                && (frame.regs[g.reg.0 as usize] != 0) == g.negated
            {
                continue;
            }
            match self.exec(&mut frame, ins) {
                Ok(Next::Continue) => {}
                Ok(Next::Jump(l)) => pc = func.labels[l.0 as usize],
                Ok(Next::End(Flow::Return)) => break,
                Ok(Next::End(Flow::Exit)) => {
                    self.exited = true;
                    break;
                }
                Err(t) => {
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
            if self.exited {
                break;
            }
        }
        let rets = func
            .rets
            .iter()
            .map(|p| match p {
                Param::Mem(VarId::Function(i)) => {
                    let base = frame.var_base[*i as usize];
                    let r = self
                        .own
                        .iter()
                        .rev()
                        .find(|r| r.base() == base)
                        .expect("own region");
                    r.to_vec()
                }
                Param::Reg(r) => {
                    frame.regs[r.0 as usize].to_le_bytes()[..func.reg(*r).ty.bytes()].to_vec()
                }
                Param::Mem(VarId::Module(_)) => unreachable!(),
            })
            .collect();
        self.own.truncate(own_mark);
        Ok(rets)
    }

    fn alloc(&mut self, v: &VarDecl, name: &Arc<str>, init: &[u8]) -> u64 {
        let r = Region::new(init, v.size, v.space, true, name.clone());
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
            SpecialRegKind::Nwarpid => b.count().div_ceil(32),
        }
    }

    fn var_addr(&self, fr: &Frame, v: VarId) -> u64 {
        match v {
            VarId::Function(i) => fr.var_base[i as usize],
            VarId::Module(i) => self.l.shared_module_var(i),
        }
    }

    /// Reads a source operand as `ty` (its low `ty.bits()` bits).
    #[inline(always)]
    fn get(&self, fr: &Frame, op: &Operand, ty: Type) -> u64 {
        // Registers first: most operands are, and a tested branch predicts better than the
        // jump table of the whole match.
        if let Operand::Reg(r) = op {
            return fr.regs[r.0 as usize] & ty.mask();
        }
        self.get_other(fr, op, ty)
    }

    #[inline(never)]
    fn get_other(&self, fr: &Frame, op: &Operand, ty: Type) -> u64 {
        match op {
            Operand::Reg(r) => fr.regs[r.0 as usize] & ty.mask(),
            Operand::NotPred(r) => (fr.regs[r.0 as usize] ^ 1) & 1,
            Operand::Imm(i) => i.bits_for(ty),
            Operand::Special(s) => self.special(*s) & ty.mask(),
            Operand::Var(v) => self.var_addr(fr, *v),
            other => unreachable!("validated: {other:?} is not a scalar source"),
        }
    }

    /// Writes a destination register of instruction type `ty`; a wider register (ld, cvt)
    /// receives the value sign-extended for signed types, zero-extended otherwise.
    #[inline(always)]
    fn set(&self, fr: &mut Frame, op: &Operand, ty: Type, v: u64) {
        if let Operand::Reg(r) = op {
            return set_reg(fr, *r, ty, v);
        }
        match op {
            Operand::Reg(r) => set_reg(fr, *r, ty, v),
            Operand::Sink => {}
            other => unreachable!("validated: {other:?} is not a destination"),
        }
    }

    fn addr(&self, fr: &Frame, a: &Address) -> u64 {
        let base = match a.base {
            AddrBase::Reg(r) => fr.regs[r.0 as usize],
            AddrBase::Var(v) => self.var_addr(fr, v),
            AddrBase::None => 0,
        };
        base.wrapping_add(a.offset as u64)
    }

    /// Finds the region for an access of `size` bytes at `addr` in `space`, checking bounds,
    /// space, alignment and (for stores) writability.
    fn region(
        &self,
        addr: u64,
        size: usize,
        space: Option<Space>,
        store: bool,
    ) -> Result<(&Region, usize), Trap> {
        memcheck::check_in(&self.own, &self.l.shared, addr, size, space, store).map_err(|v| Trap {
            message: v.message,
            address: Some(v.address),
        })
    }

    // ---- instructions ------------------------------------------------------------------

    fn exec(&mut self, fr: &mut Frame<'a>, ins: &Instruction) -> Result<Next, Trap> {
        use Inst::*;
        match &ins.inst {
            Mov { ty, d, a } => self.mov(fr, *ty, d, a),
            Ld {
                space,
                vec,
                ty,
                d,
                addr,
                ..
            } => {
                let base = self.addr(fr, addr);
                let n = ty.bytes();
                let (r, off) = self.region(base, n * *vec as usize, *space, false)?;
                match d {
                    Operand::Vector(regs) => {
                        for (k, reg) in regs.iter().enumerate() {
                            if let Some(reg) = reg {
                                set_reg(fr, *reg, *ty, r.read(off + k * n, n));
                            }
                        }
                    }
                    _ => {
                        let v = r.read(off, n);
                        self.set(fr, d, *ty, v);
                    }
                }
            }
            St {
                space,
                vec,
                ty,
                addr,
                a,
                ..
            } => {
                let base = self.addr(fr, addr);
                let n = ty.bytes();
                let values: Vec<u64> = match a {
                    Operand::Vector(regs) => regs
                        .iter()
                        .map(|r| fr.regs[r.expect("validated: no sink in a store").0 as usize])
                        .collect(),
                    _ => vec![self.get(fr, a, *ty)],
                };
                let (r, off) = self.region(base, n * *vec as usize, *space, true)?;
                for (k, v) in values.iter().enumerate() {
                    r.write(off + k * n, n, *v);
                }
            }
            // Space and generic addresses coincide (see memory.rs): cvta is the identity.
            Cvta { ty, d, a, .. } => {
                let v = self.get(fr, a, *ty);
                self.set(fr, d, *ty, v);
            }
            IntBin {
                op,
                ty,
                sat,
                carry,
                d,
                a,
                b,
            } => {
                let (x, y) = (
                    self.get(fr, a, *ty),
                    self.get(
                        fr,
                        b,
                        if matches!(op, IntBinOp::Shl | IntBinOp::Shr) {
                            Type::U32
                        } else {
                            *ty
                        },
                    ),
                );
                let v = match op {
                    IntBinOp::Add | IntBinOp::Sub => {
                        let cin = carry.carry_in.then_some(self.cf);
                        let (v, cout) = int::add_sub(*op, *ty, *sat, x, y, cin);
                        if carry.carry_out {
                            self.cf = cout;
                        }
                        v
                    }
                    IntBinOp::Min | IntBinOp::Max => int::min_max(*op, *ty, x, y),
                    IntBinOp::Div | IntBinOp::Rem => int::div_rem(*op, *ty, x, y),
                    IntBinOp::And | IntBinOp::Or | IntBinOp::Xor => int::logic(*op, x, y),
                    IntBinOp::Shl | IntBinOp::Shr => int::shift(*op, *ty, x, y),
                };
                self.set(fr, d, *ty, v);
            }
            IntUn { op, ty, d, a } => {
                let v = int::unary(*op, *ty, self.get(fr, a, *ty));
                let dty = if matches!(op, IntUnOp::Popc | IntUnOp::Clz) {
                    Type::U32
                } else {
                    *ty
                };
                self.set(fr, d, dty, v);
            }
            Mul { mode, ty, d, a, b } => {
                let v = int::mul(*mode, *ty, self.get(fr, a, *ty), self.get(fr, b, *ty));
                self.set(fr, d, wide_if(*mode, *ty), v);
            }
            Mad {
                mode,
                ty,
                sat,
                carry,
                d,
                a,
                b,
                c,
            } => {
                let dty = wide_if(*mode, *ty);
                let cin = carry.carry_in.then_some(self.cf);
                let (v, cout) = int::mad(
                    *mode,
                    *ty,
                    *sat,
                    self.get(fr, a, *ty),
                    self.get(fr, b, *ty),
                    self.get(fr, c, dty),
                    cin,
                );
                if carry.carry_out {
                    self.cf = cout;
                }
                self.set(fr, d, dty, v);
            }
            Shf {
                dir,
                mode,
                d,
                a,
                b,
                c,
            } => {
                let v = int::shf(
                    *dir,
                    *mode,
                    self.get(fr, a, Type::B32),
                    self.get(fr, b, Type::B32),
                    self.get(fr, c, Type::U32),
                );
                self.set(fr, d, Type::B32, v);
            }
            Bfe { ty, d, a, pos, len } => {
                let v = int::bfe(
                    *ty,
                    self.get(fr, a, *ty),
                    self.get(fr, pos, Type::U32),
                    self.get(fr, len, Type::U32),
                );
                self.set(fr, d, *ty, v);
            }
            Bfi {
                ty,
                d,
                a,
                b,
                pos,
                len,
            } => {
                let v = int::bfi(
                    *ty,
                    self.get(fr, a, *ty),
                    self.get(fr, b, *ty),
                    self.get(fr, pos, Type::U32),
                    self.get(fr, len, Type::U32),
                );
                self.set(fr, d, *ty, v);
            }
            Prmt { mode, d, a, b, c } => {
                let v = int::prmt(
                    *mode,
                    self.get(fr, a, Type::B32),
                    self.get(fr, b, Type::B32),
                    self.get(fr, c, Type::B32),
                );
                self.set(fr, d, Type::B32, v);
            }
            Setp {
                cmp,
                combine,
                ftz,
                ty,
                p,
                q,
                a,
                b,
                c,
            } => {
                let t =
                    convert::compare(*cmp, *ty, *ftz, self.get(fr, a, *ty), self.get(fr, b, *ty));
                let cv = c.as_ref().is_some_and(|c| self.get(fr, c, Type::Pred) != 0);
                let (pv, qv) = convert::combine(*combine, t, cv);
                self.set(fr, p, Type::Pred, pv as u64);
                self.set(fr, q, Type::Pred, qv as u64);
            }
            Selp { ty, d, a, b, c } => {
                let v = if self.get(fr, c, Type::Pred) != 0 {
                    self.get(fr, a, *ty)
                } else {
                    self.get(fr, b, *ty)
                };
                self.set(fr, d, *ty, v);
            }
            Slct {
                ty,
                cty,
                ftz,
                d,
                a,
                b,
                c,
            } => {
                let take_a = convert::slct_takes_a(*cty, *ftz, self.get(fr, c, *cty));
                let v = if take_a {
                    self.get(fr, a, *ty)
                } else {
                    self.get(fr, b, *ty)
                };
                self.set(fr, d, *ty, v);
            }
            Cvt {
                dty,
                aty,
                rnd,
                ftz,
                sat,
                d,
                a,
            } => {
                let v = convert::cvt(*dty, *aty, *rnd, *ftz, *sat, self.get(fr, a, *aty));
                self.set(fr, d, *dty, v);
            }
            FloatBin {
                op,
                ty,
                prec,
                ftz,
                sat,
                d,
                a,
                b,
            } => {
                let v = float::binary(
                    *op,
                    Fmt::of(*ty),
                    *prec,
                    *ftz,
                    *sat,
                    self.get(fr, a, *ty),
                    self.get(fr, b, *ty),
                );
                self.set(fr, d, *ty, v);
            }
            FloatUn {
                op,
                ty,
                prec,
                ftz,
                d,
                a,
            } => {
                let v = float::unary(*op, Fmt::of(*ty), *prec, *ftz, self.get(fr, a, *ty));
                self.set(fr, d, *ty, v);
            }
            Fma {
                ty,
                rnd,
                ftz,
                sat,
                d,
                a,
                b,
                c,
            } => {
                let v = float::fma(
                    Fmt::of(*ty),
                    *rnd,
                    *ftz,
                    *sat,
                    self.get(fr, a, *ty),
                    self.get(fr, b, *ty),
                    self.get(fr, c, *ty),
                );
                self.set(fr, d, *ty, v);
            }
            Video {
                op,
                dty,
                aty,
                bty,
                sat,
                mode,
                tail,
                d,
                a,
                b,
            } => {
                let s = self.video_sources(fr, *a, *b, *tail);
                let form = video::Form {
                    op: *op,
                    dty: *dty,
                    aty: *aty,
                    bty: *bty,
                    sat: *sat,
                    mode: *mode,
                    tail: *tail,
                };
                let v = video::video(form, s);
                set_reg(fr, *d, Type::B32, v);
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
            Vmad {
                aty,
                bty,
                po,
                sat,
                scale,
                neg_product,
                neg_c,
                d,
                a,
                b,
                c,
                ..
            } => {
                let s = video::Sources {
                    c: fr.regs[c.0 as usize],
                    ..self.video_sources(fr, *a, *b, VideoTail::None)
                };
                let m = video::Vmad {
                    aty: *aty,
                    bty: *bty,
                    po: *po,
                    sat: *sat,
                    scale: *scale,
                    neg_product: *neg_product,
                    neg_c: *neg_c,
                };
                set_reg(fr, *d, Type::B32, video::vmad(m, s));
            }
            Bra { target, .. } => return Ok(Next::Jump(*target)),
            Call {
                func, rets, args, ..
            } => self.call(fr, *func, rets, args)?,
            Ret => return Ok(Next::End(Flow::Return)),
            Exit => return Ok(Next::End(Flow::Exit)),
        }
        Ok(Next::Continue)
    }

    /// The 32-bit sources of a video instruction (c is 0 when there is none).
    fn video_sources(
        &self,
        fr: &Frame,
        a: VideoSrc,
        b: VideoSrc,
        tail: VideoTail,
    ) -> video::Sources {
        let reg = |r: RegId| fr.regs[r.0 as usize] & 0xffff_ffff;
        let c = match tail {
            VideoTail::None => 0,
            VideoTail::Secondary(_, c) | VideoTail::Merge(_, c) => reg(c),
        };
        video::Sources {
            a: reg(a.reg),
            asel: a.sel,
            b: reg(b.reg),
            bsel: b.sel,
            c,
        }
    }

    /// `mov` (9.7.9.1), including packing/unpacking with vector operands.
    fn mov(&self, fr: &mut Frame, ty: Type, d: &Operand, a: &Operand) {
        match (d, a) {
            (Operand::Vector(parts), _) => {
                let v = self.get(fr, a, ty);
                let w = ty.bits() / parts.len() as u32;
                for (k, p) in parts.iter().enumerate() {
                    if let Some(r) = p {
                        let t = Type::from_ptx(&format!("b{w}")).expect("8/16/32-bit parts");
                        set_reg(fr, *r, t, v >> (w * k as u32));
                    }
                }
            }
            (_, Operand::Vector(parts)) => {
                let w = ty.bits() / parts.len() as u32;
                let mask = (1u64 << w) - 1;
                let v = parts.iter().enumerate().fold(0u64, |acc, (k, p)| {
                    let r = p.expect("validated: no sink in a source vector");
                    acc | ((fr.regs[r.0 as usize] & mask) << (w * k as u32))
                });
                self.set(fr, d, ty, v);
            }
            _ => {
                let v = self.get(fr, a, ty);
                self.set(fr, d, ty, v);
            }
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
        let mut bytes = Vec::with_capacity(args.len());
        for (a, p) in args.iter().zip(&callee.params) {
            let size = callee.param_size(p);
            bytes.push(match a {
                Operand::Var(v) => {
                    let base = self.var_addr(fr, *v);
                    let (r, off) = self.region(base, 1, Some(Space::Param), false)?;
                    r.read_bytes(off, size)
                }
                _ => self.get(fr, a, callee.param_type(p)).to_le_bytes()[..size].to_vec(),
            });
        }
        self.depth += 1;
        let result = self.run(id, bytes);
        self.depth -= 1;
        let out = match result {
            Ok(out) => out,
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
        };
        for ((o, p), b) in rets.iter().zip(&callee.rets).zip(out) {
            match o {
                Operand::Var(v) => {
                    let base = self.var_addr(fr, *v);
                    let (r, off) = self.region(base, 1, Some(Space::Param), true)?;
                    r.write_bytes(off, &b);
                }
                _ => self.set(fr, o, callee.param_type(p), le_bits(&b)),
            }
        }
        Ok(())
    }
}

/// What to do after an instruction.
enum Next {
    Continue,
    Jump(LabelId),
    End(Flow),
}

/// The destination type of `mul`/`mad`: widened for `.wide`.
fn wide_if(mode: MulMode, ty: Type) -> Type {
    if mode == MulMode::Wide {
        ty.widened()
    } else {
        ty
    }
}

#[inline(always)]
fn set_reg(fr: &mut Frame, r: RegId, ty: Type, v: u64) {
    let rty = fr.reg_types[r.0 as usize];
    let v = if rty.bits() > ty.bits() && ty.is_signed() {
        int::sext(v, ty.bits()) as u64
    } else {
        v & ty.mask()
    };
    fr.regs[r.0 as usize] = v & rty.mask();
}

fn le_bits(b: &[u8]) -> u64 {
    Value::from_le_bytes(Type::B64, b).bits
}

impl LaunchCtx<'_> {
    fn shared_module_var(&self, i: u32) -> u64 {
        self.module_var_bases[i as usize]
    }
}
