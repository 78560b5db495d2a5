//! What the threads of a block share, the same for both engines: the shared-memory window
//! (this file), the order in which the threads run and meet at barriers and warp
//! collectives ([`schedule`]), and what those collectives compute ([`warp`]).
//!
//! **Shared memory** (PTX ISA 5.1.5, the shared state space). Every block has its own copy of
//! each `.shared` variable its launch uses (module-level and function-level: see
//! [`SharedLayout::of`]), zeroed at block start. A `.shared` address is an offset into the
//! block's *window*: each variable is aligned and followed by [`GAP`] bytes that belong to no
//! variable, so that an access a little past a variable's end is out of bounds in both
//! engines (never an access to its neighbour); variables that no launch uses together may
//! share offsets. The dynamic shared memory of a launch (the `.extern .shared` arrays of
//! unspecified size, which all name it) starts after the static variables. A generic address
//! into shared memory is a host address: `cvta.shared` adds the block's base,
//! `cvta.to.shared` takes it away (each engine has its own way of mapping the window onto
//! host memory; the offsets are the same).

pub mod schedule;
pub mod warp;

use crate::ast::{FuncId, Inst, Module, Space, VarDecl, VarId};
use std::collections::HashMap;

/// Bytes after each shared variable that belong to none.
pub const GAP: u32 = 64;

/// Most shared memory a block may have, static and dynamic together (sm_80's limit).
pub const MAX_SHARED_BYTES: u32 = 227 << 10;

/// Most static shared memory a kernel may have, as ptxas counts it (its `.shared`
/// variables and those of the functions it calls): more is refused ("uses too much shared
/// data (0xc001 bytes, 0xc000 max)", sm_80 and sm_90 alike).
pub const MAX_STATIC_SHARED_BYTES: u32 = 48 << 10;

/// `%nwarpid`: the warp identifiers an SM has (64 on sm_80 and sm_90), as an H200 gives it
/// (`tests/hardware/cases/warp_ids.ptx`), whatever the block's size.
pub const NWARPID: u32 = 64;

/// One shared variable in the window.
#[derive(Clone, Debug, PartialEq)]
pub struct SharedVar {
    pub offset: u32,
    pub size: u32,
    /// As faults name it: `.shared variable `tile``.
    pub name: String,
    /// The dynamic shared memory, sized per launch.
    pub dynamic: bool,
}

/// Where each `.shared` variable of a module lies in a block's window, and what each
/// function's launch (or host call) uses of it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SharedLayout {
    /// The static variables that some function uses, then the dynamic one if the module has
    /// any.
    vars: Vec<SharedVar>,
    /// Window offset of each module variable that is `.shared`.
    module: Vec<Option<u32>>,
    /// Window offset of each function's `.shared` variables, by function and variable.
    func: Vec<Vec<Option<u32>>>,
    /// By function: what a launch of it uses (none for a function without a body).
    uses: Vec<Option<Uses>>,
}

/// The shared memory a launch of one function (or a host call of it) uses: the variables
/// it and the functions it calls declare or name.
#[derive(Clone, Debug, Default, PartialEq)]
struct Uses {
    /// Indices into [`SharedLayout::vars`], in window order.
    vars: Vec<usize>,
    /// Where its static variables end (with their gaps), aligned to 16; where it names the
    /// dynamic memory, where that starts. At most [`MAX_WINDOW`] (else `too_big`).
    end: u64,
    /// Its window would pass [`MAX_WINDOW`] (a launch is refused).
    too_big: bool,
    /// The static bytes as ptxas lays them out ([`ptxas_static_bytes`]). What CUDA reports
    /// as a kernel's static shared memory and `%total_smem_size` counts.
    ptxas_bytes: u32,
}

/// `%total_smem_size` is a multiple of this (the hardware's shared memory allocation unit).
const SMEM_UNIT: u64 = 128;

/// The most bytes a block's window may span before its dynamic memory: the variables at
/// their offsets, with their gaps. Past it a launch is refused. (A kernel has at most
/// [`MAX_STATIC_SHARED_BYTES`]; a host-called `.func` has no such limit, and this one keeps
/// its offsets far from wrapping.)
const MAX_WINDOW: u64 = 1 << 30;

/// What each function's body calls and which module variables it names, gathered once a
/// module (so that what a launch reaches is a walk over these lists, not over bodies).
struct Bodies {
    calls: Vec<Vec<FuncId>>,
    named: Vec<Vec<u32>>,
}

impl Bodies {
    fn of(m: &Module) -> Bodies {
        let mut calls = Vec::with_capacity(m.functions.len());
        let mut named = Vec::with_capacity(m.functions.len());
        for f in &m.functions {
            let (mut c, mut v) = (Vec::new(), Vec::new());
            for ins in f.body.iter().flatten() {
                if let Inst::Call { func, .. } = ins.inst {
                    c.push(func);
                }
                for var in ins.vars() {
                    if let VarId::Module(i) = var {
                        v.push(i);
                    }
                }
            }
            v.sort_unstable();
            v.dedup();
            calls.push(c);
            named.push(v);
        }
        Bodies { calls, named }
    }

    /// The functions a launch of `f` runs (`f` first, then in the order calls reach them),
    /// those with a body.
    fn reached(&self, m: &Module, f: FuncId) -> Vec<FuncId> {
        let mut runs = vec![f];
        let mut seen = vec![false; m.functions.len()];
        seen[f.0 as usize] = true;
        let mut k = 0;
        while let Some(&g) = runs.get(k) {
            k += 1;
            for &func in &self.calls[g.0 as usize] {
                if !std::mem::replace(&mut seen[func.0 as usize], true) {
                    runs.push(func);
                }
            }
        }
        runs.retain(|&g| m.func(g).body.is_some());
        runs
    }
}

/// A `.shared` variable of a module: a module variable (no function) or a function's.
type Decl = (Option<FuncId>, u32);

/// The declaration of `d`.
fn decl(m: &Module, d: Decl) -> &VarDecl {
    match d {
        (None, i) => &m.vars[i as usize],
        (Some(f), i) => &m.func(f).vars[i as usize],
    }
}

/// The `.shared` variables a launch of `f` uses, in the order ptxas lays them out (`ptxas
/// -v` on kernels with callees): `f`'s own, the module variables that the functions it runs
/// ([`Bodies::reached`]) name, then those functions' own, each in declaration order.
fn used_vars(m: &Module, bodies: &Bodies, f: FuncId) -> Vec<Decl> {
    let mut runs = bodies.reached(m, f);
    let mut named = vec![false; m.vars.len()];
    for &g in &runs {
        for &i in &bodies.named[g.0 as usize] {
            named[i as usize] = true;
        }
    }
    runs[1..].sort_unstable_by_key(|g| g.0);
    let own = |g: FuncId| (0..m.func(g).vars.len() as u32).map(move |i| (Some(g), i));
    let module = (0..m.vars.len() as u32)
        .filter(|&i| named[i as usize])
        .map(|i| (None, i));
    (own(f).chain(module))
        .chain(runs[1..].iter().flat_map(|&g| own(g)))
        .filter(|&d| decl(m, d).space == Space::Shared)
        .collect()
}

/// The static `.shared` bytes of the variables `used` as ptxas lays them out and an H200
/// counts them in `%total_smem_size` (`tests/hardware/cases/smem_sizes*.ptx`): in order,
/// each at its own alignment; where the module has dynamic arrays (named or not), the end
/// aligned to 16 or their largest alignment, `dynamic_align`. Saturates at `u32::MAX` (a
/// launch then fails the size check).
fn ptxas_static_bytes(m: &Module, used: &[Decl], dynamic_align: Option<u32>) -> u32 {
    let end = (used.iter().map(|&d| decl(m, d)))
        .filter(|v| !v.dynamic)
        .fold(0u64, |end, v| {
            end.next_multiple_of(v.align.max(1) as u64)
                .saturating_add(v.size as u64)
        });
    let end = match dynamic_align {
        Some(align) => end.next_multiple_of(align.max(16) as u64),
        None => end,
    };
    end.min(u32::MAX as u64) as u32
}

/// The largest alignment of the module's dynamic shared arrays (in functions with a body,
/// or at module level), which ptxas aligns every kernel's static end to.
fn dynamic_align(m: &Module) -> Option<u32> {
    let in_bodies = (m.functions.iter())
        .filter(|f| f.body.is_some())
        .flat_map(|f| &f.vars);
    (m.vars.iter().chain(in_bodies))
        .filter(|v| v.space == Space::Shared && v.dynamic)
        .map(|v| v.align)
        .max()
}

/// Whether any variable of the module, at module level or in a function, is `.shared`.
fn has_shared(m: &Module) -> bool {
    (m.functions.iter().flat_map(|f| &f.vars).chain(&m.vars)).any(|v| v.space == Space::Shared)
}

/// The static `.shared` bytes a launch of each function uses as ptxas counts them
/// ([`ptxas_static_bytes`] of [`used_vars`]). A function without a body (a prototype, or
/// one refused for what it uses) counts its own variables, which ptxas counts too. The front
/// end keeps them in [`crate::ast::Function::static_shared`], counted before it inlines
/// the functions with barriers.
pub fn ptxas_counts(m: &Module) -> Vec<u32> {
    if !has_shared(m) {
        return vec![0; m.functions.len()];
    }
    let dynamic_align = dynamic_align(m);
    let bodies = Bodies::of(m);
    (0..m.functions.len() as u32)
        .map(FuncId)
        .map(|f| {
            let used = match m.func(f).body {
                Some(_) => used_vars(m, &bodies, f),
                None => (0..m.func(f).vars.len() as u32)
                    .map(|i| (Some(f), i))
                    .filter(|&d| decl(m, d).space == Space::Shared)
                    .collect(),
            };
            ptxas_static_bytes(m, &used, dynamic_align)
        })
        .collect()
}

impl SharedLayout {
    /// Lays out the module's `.shared` variables: each at the lowest offset (aligned to
    /// its alignment, at least 16) where it and its [`GAP`] overlap no variable placed
    /// before it that a launch uses together with it. So every launch sees its variables
    /// apart, and variables that no launch uses together may share bytes: a module whose
    /// kernels each use their own arrays needs the largest kernel's window, not their sum.
    /// The dynamic memory starts after the static variables of every function that names
    /// it and fits the limit (one offset, as the code of a function called from several
    /// kernels has it).
    /// Variables that only launches over the limit use are placed last.
    pub fn of(m: &Module) -> SharedLayout {
        let n = m.functions.len();
        let mut l = SharedLayout {
            module: vec![None; m.vars.len()],
            func: (m.functions.iter())
                .map(|f| vec![None; f.vars.len()])
                .collect(),
            uses: vec![None; n],
            ..SharedLayout::default()
        };
        if !has_shared(m) {
            return l;
        }
        let bodies = Bodies::of(m);
        let used: Vec<Option<Vec<Decl>>> = (0..n as u32)
            .map(|f| {
                m.func(FuncId(f))
                    .body
                    .as_ref()
                    .map(|_| used_vars(m, &bodies, FuncId(f)))
            })
            .collect();
        // The variables in declaration order (the module's, then each function's), and for
        // each the launches that use it.
        let mut decls: Vec<Decl> = (0..m.vars.len() as u32)
            .map(|i| (None, i))
            .chain((0..n as u32).flat_map(|f| {
                (0..m.func(FuncId(f)).vars.len() as u32).map(move |i| (Some(FuncId(f)), i))
            }))
            .filter(|&d| decl(m, d).space == Space::Shared)
            .collect();
        let mut users: HashMap<Decl, Vec<usize>> = HashMap::new();
        for (f, u) in used.iter().enumerate() {
            for &d in u.iter().flatten() {
                users.entry(d).or_default().push(f);
            }
        }
        let users = |d: Decl| users.get(&d).map_or(&[][..], Vec::as_slice);
        let counts: Vec<Option<u32>> = (used.iter().zip(&m.functions))
            .map(|(u, f)| u.as_ref().map(|_| f.static_shared))
            .collect();
        // The variables of launches that may run first: one that may not (over the limit as
        // ptxas counts, which ptxas refuses) then cannot push theirs up.
        let fits: Vec<bool> = (counts.iter())
            .map(|c| c.is_some_and(|c| c <= MAX_SHARED_BYTES))
            .collect();
        decls.sort_by_key(|&d| !users(d).iter().any(|&f| fits[f]));
        // Placed static variables: (offset, end with the gap, launches using it as a set
        // of bits, so that a deep call chain, whose variables each many launches use, costs
        // a word per 64 launches to test, not a search).
        let mut placed: Vec<(u64, u64, Vec<u64>)> = Vec::new();
        let mut index = HashMap::new();
        let mut dynamic = None;
        for &d in &decls {
            let v = decl(m, d);
            if users(d).is_empty() {
                // Named by nothing that runs: no room.
                continue;
            }
            if v.dynamic {
                dynamic.get_or_insert(v.name.clone());
                continue;
            }
            let mut by = vec![0u64; n.div_ceil(64)];
            for &f in users(d) {
                by[f / 64] |= 1 << (f % 64);
            }
            let align = v.align.max(16) as u64;
            let mut at = 0u64;
            // First fit among the variables it must stay apart from, lowest first.
            let mut apart: Vec<(u64, u64)> = (placed.iter())
                .filter(|(_, _, u)| u.iter().zip(&by).any(|(a, b)| a & b != 0))
                .map(|&(o, e, _)| (o, e))
                .collect();
            apart.sort_unstable();
            for (o, e) in apart {
                let end = at.saturating_add(v.size as u64).saturating_add(GAP as u64);
                if end <= o {
                    break;
                }
                at = at.max(e.next_multiple_of(align));
            }
            at = at.next_multiple_of(align);
            let end = at.saturating_add(v.size as u64).saturating_add(GAP as u64);
            placed.push((at, end, by));
            index.insert(d, l.vars.len());
            l.vars.push(SharedVar {
                offset: at.min(u32::MAX as u64) as u32,
                size: v.size.min(u32::MAX as usize) as u32,
                name: format!(".shared variable `{}`", v.name),
                dynamic: false,
            });
        }
        // Each launch's static end, and the dynamic memory's start.
        let ends: Vec<u64> = (used.iter())
            .map(|u| {
                (u.iter().flatten())
                    .filter_map(|d| index.get(d).map(|&k| placed[k].1))
                    .max()
                    .unwrap_or(0)
                    .next_multiple_of(16)
            })
            .collect();
        let names_dynamic = |u: &[Decl]| u.iter().any(|&d| decl(m, d).dynamic);
        // Over the launches that fit: one over the limit is refused anyway.
        let dynamic_offset = (used.iter().zip(&ends).zip(&fits))
            .filter(|((u, _), fits)| **fits && u.as_deref().is_some_and(names_dynamic))
            .map(|((_, &e), _)| e)
            .max()
            .unwrap_or(0);
        let dynamic_at = dynamic_offset.min(MAX_WINDOW) as u32;
        if let Some(name) = dynamic {
            // Every dynamic array is the one dynamic memory.
            for &d in decls.iter().filter(|&&d| decl(m, d).dynamic) {
                index.insert(d, l.vars.len());
            }
            l.vars.push(SharedVar {
                offset: dynamic_at,
                size: 0,
                name: format!(".shared variable `{name}`"),
                dynamic: true,
            });
        }
        // Every dynamic array names the dynamic memory.
        for &d in &decls {
            let offset = if decl(m, d).dynamic {
                Some(dynamic_at)
            } else {
                index.get(&d).map(|&k| l.vars[k].offset)
            };
            match d {
                (None, i) => l.module[i as usize] = offset.or(Some(0)),
                (Some(f), i) => l.func[f.0 as usize][i as usize] = offset,
            }
        }
        l.uses = (used.iter().zip(ends).zip(counts))
            .map(|((u, end), count)| {
                let (u, ptxas_bytes) = (u.as_ref()?, count?);
                let end = if names_dynamic(u) {
                    end.max(dynamic_offset)
                } else {
                    end
                };
                let mut vars: Vec<usize> =
                    (u.iter()).filter_map(|d| index.get(d).copied()).collect();
                vars.sort_by_key(|&k| (l.vars[k].offset, l.vars[k].dynamic));
                vars.dedup();
                Some(Uses {
                    vars,
                    end: end.min(MAX_WINDOW),
                    too_big: end > MAX_WINDOW,
                    ptxas_bytes,
                })
            })
            .collect();
        l
    }

    /// The window offset of a `.shared` variable of function `func` (None: not shared).
    pub fn offset(&self, func: usize, v: VarId) -> Option<u32> {
        match v {
            VarId::Module(i) => self.module[i as usize],
            VarId::Function(i) => self.func[func][i as usize],
        }
    }

    /// Whether the module has any shared memory that a function uses.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// What a launch of `f` uses (nothing for a function without a body).
    fn uses(&self, f: FuncId) -> Option<&Uses> {
        self.uses.get(f.0 as usize)?.as_ref()
    }

    /// The size of the window of a launch of `f` with `dynamic` bytes of dynamic shared
    /// memory: its variables, the dynamic memory, and a gap after.
    pub fn window_size(&self, f: FuncId, dynamic: u32) -> u32 {
        self.uses(f).map_or(0, |u| u.end as u32) + dynamic + GAP
    }

    /// The variables a launch of `f` uses, in window order, the dynamic one sized for a
    /// launch with `dynamic` bytes.
    pub fn sized(&self, f: FuncId, dynamic: u32) -> impl Iterator<Item = SharedVar> + '_ {
        let vars = self.uses(f).map_or(&[][..], |u| &u.vars[..]);
        vars.iter().map(move |&k| {
            let v = &self.vars[k];
            SharedVar {
                size: if v.dynamic { dynamic } else { v.size },
                ..v.clone()
            }
        })
    }

    /// The static `.shared` bytes a launch of `f` uses, as ptxas counts them.
    pub fn static_bytes(&self, f: FuncId) -> u32 {
        self.uses(f).map_or(0, |u| u.ptxas_bytes)
    }

    /// `%total_smem_size` in a launch of `f` with `dynamic` bytes of dynamic shared memory:
    /// the static and dynamic bytes together, rounded up to the allocation unit, as an H200
    /// gives it (docs/semantics.md, "Shared memory").
    pub fn total_smem_size(&self, f: FuncId, dynamic: u32) -> u32 {
        let total = (self.static_bytes(f) as u64 + dynamic as u64).next_multiple_of(SMEM_UNIT);
        total.min(u32::MAX as u64) as u32
    }

    /// Checks a launch (or a host call, `dynamic` 0) of `f` with `dynamic` bytes of dynamic
    /// shared memory against the limit.
    pub fn check_launch(&self, f: FuncId, dynamic: u32) -> Result<(), String> {
        let fixed = self.static_bytes(f);
        let total = fixed as u64 + dynamic as u64;
        if total > MAX_SHARED_BYTES as u64 || self.uses(f).is_some_and(|u| u.too_big) {
            return Err(format!(
                "the block needs {total} bytes of shared memory ({fixed} static, {dynamic} \
                 dynamic); at most {MAX_SHARED_BYTES}"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = ".version 7.8\n.target sm_80\n.address_size 64\n";

    fn layout(body: &str) -> (Module, SharedLayout) {
        let m = Module::parse(&format!("{HEAD}{body}")).expect("parses");
        let l = SharedLayout::of(&m);
        (m, l)
    }

    fn id(m: &Module, name: &str) -> FuncId {
        let f = m.functions.iter().position(|f| f.name == name);
        FuncId(f.expect("a function of that name") as u32)
    }

    /// A kernel `name` storing to each of `vars`.
    fn kernel(name: &str, vars: &[&str]) -> String {
        let stores: String = vars
            .iter()
            .map(|v| format!("  st.shared.u32 [{v}], 1;\n"))
            .collect();
        format!(".visible .entry {name}()\n{{\n{stores}  ret;\n}}\n")
    }

    #[test]
    fn kernels_with_their_own_arrays_share_offsets() {
        let mut ptx = String::from(
            ".shared .align 4 .b8 a[40960];\n.shared .align 4 .b8 b[40960];\n\
             .shared .align 8 .b8 t[8];\n",
        );
        ptx += &kernel("ka", &["a"]);
        ptx += &kernel("kb", &["b"]);
        ptx += &kernel("both", &["b", "t"]);
        let (m, l) = layout(&ptx);
        let (ka, kb, both) = (id(&m, "ka"), id(&m, "kb"), id(&m, "both"));
        // `a` and `b` are never used together: both at 0. `t` goes after `b` and its gap.
        let offsets: Vec<_> = (0..3).map(|i| l.offset(0, VarId::Module(i))).collect();
        assert_eq!(offsets, [Some(0), Some(0), Some(40960 + 64)]);
        assert_eq!(l.window_size(ka, 0), 40960 + 64 + GAP);
        assert_eq!(l.window_size(both, 0), 41024 + 64 + 16 + GAP);
        let names = |f| l.sized(f, 0).map(|v| v.name).collect::<Vec<_>>();
        assert_eq!(names(kb), [".shared variable `b`"]);
        assert_eq!(
            names(both),
            [".shared variable `b`", ".shared variable `t`"]
        );
        // As ptxas counts: 40,960, and 40,968 with `t` (8-aligned after `b`).
        assert_eq!(l.static_bytes(ka), 40960);
        assert_eq!(l.static_bytes(both), 40968);
        assert_eq!(l.total_smem_size(both, 100), 41088);
        assert!(l.check_launch(ka, 0).is_ok());
    }

    #[test]
    fn a_callee_keeps_its_variables_apart_in_every_caller() {
        // `f` uses `s` and its own `own`; kernels `k1` and `k2` call it, each with an array
        // of its own, which must stay clear of both in that kernel.
        let ptx = ".shared .align 4 .b8 s[100];\n\
                   .shared .align 4 .b8 u1[300];\n\
                   .shared .align 4 .b8 u2[50];\n\
                   .func f()\n{\n  .shared .align 4 .b8 own[20];\n  \
                   st.shared.u32 [s], 1;\n  st.shared.u32 [own], 1;\n  ret;\n}\n"
            .to_string()
            + ".visible .entry k1()\n{\n  st.shared.u32 [u1], 1;\n  call f, ();\n  ret;\n}\n"
            + ".visible .entry k2()\n{\n  st.shared.u32 [u2], 1;\n  call f, ();\n  ret;\n}\n";
        let (m, l) = layout(&ptx);
        let f = id(&m, "f");
        let span = |o: u32, size: u32| o..o + size + GAP;
        let s = span(l.offset(0, VarId::Module(0)).unwrap(), 100);
        let u1 = span(l.offset(0, VarId::Module(1)).unwrap(), 300);
        let u2 = span(l.offset(0, VarId::Module(2)).unwrap(), 50);
        let own = span(l.offset(f.0 as usize, VarId::Function(0)).unwrap(), 20);
        let apart = |a: &std::ops::Range<u32>, b: &std::ops::Range<u32>| {
            a.end <= b.start || b.end <= a.start
        };
        for (x, y) in [(&s, &u1), (&s, &u2), (&s, &own), (&own, &u1), (&own, &u2)] {
            assert!(apart(x, y), "{x:?} and {y:?} overlap");
        }
        // `u1` and `u2` are never used together.
        assert_eq!(u1.start, u2.start);
        // ptxas order: the kernel's own variables, the module's it and its callee name,
        // then its callee's own.
        assert_eq!(l.static_bytes(id(&m, "k1")), 100 + 300 + 20);
        assert_eq!(l.static_bytes(f), 20 + 100);
    }

    #[test]
    fn dynamic_memory_starts_after_every_user_of_it() {
        let ptx = ".shared .align 4 .b8 big[1000];\n\
                   .shared .align 4 .b8 small[10];\n\
                   .extern .shared .align 16 .b8 dyn[];\n"
            .to_string()
            + &kernel("k_big", &["big"])
            + &kernel("k_small", &["small", "dyn"])
            + &kernel("k_both", &["big", "dyn"]);
        let (m, l) = layout(&ptx);
        let dynamic = l.offset(0, VarId::Module(2)).unwrap();
        // Another dynamic array names the same bytes, and a kernel that names only it has
        // the dynamic memory in its window's variables.
        let other =
            ptx.clone() + ".extern .shared .align 4 .b8 dyn2[];\n" + &kernel("k2", &["dyn2"]);
        let (m2, l2) = layout(&other);
        assert_eq!(l2.offset(0, VarId::Module(3)), Some(dynamic));
        let names: Vec<_> = l2
            .sized(id(&m2, "k2"), 8)
            .map(|v| (v.name, v.size))
            .collect();
        assert_eq!(names, [(".shared variable `dyn`".to_string(), 8)]);
        // After `big` and its gap (k_both), which also covers k_small's `small`.
        assert_eq!(dynamic, 1000 + 64 + 8);
        assert_eq!(l.window_size(id(&m, "k_small"), 32), dynamic + 32 + GAP);
        // A kernel that does not name it keeps its own end.
        assert_eq!(l.window_size(id(&m, "k_big"), 0), 1072 + GAP);
    }

    #[test]
    fn a_window_too_big_refuses_only_its_launches() {
        // Five arrays of 1 GiB (the most a variable may have) put `tiny` past 4 GiB in
        // `f_huge`'s window. (A kernel over 48 KiB does not load; a host-called `.func`
        // has no such limit.)
        let huge: Vec<String> = (0..5).map(|k| format!("h{k}")).collect();
        let mut ptx: String = (huge.iter())
            .map(|h| format!(".shared .align 4 .b8 {h}[1073741824];\n"))
            .collect();
        ptx += ".shared .align 4 .b8 tiny[4];\n";
        let mut all: Vec<&str> = huge.iter().map(String::as_str).collect();
        all.push("tiny");
        let func = |k: String| k.replace(".visible .entry", ".visible .func");
        ptx += &func(kernel("f_huge", &all));
        ptx += &func(kernel("f_tiny", &["tiny"]));
        ptx += &kernel("k_tiny", &["tiny"]);
        let (m, l) = layout(&ptx);
        let err = l.check_launch(id(&m, "f_huge"), 0).expect_err("too big");
        assert!(err.contains("at most 232448"), "{err}");
        for small in ["f_tiny", "k_tiny"] {
            assert!(l.check_launch(id(&m, small), 0).is_ok());
            assert!(l.window_size(id(&m, small), 0) < 1 << 20);
        }
    }

    #[test]
    fn a_kernel_over_48_kib_does_not_load() {
        let arrays = ".shared .align 4 .b8 a[40960];\n.shared .align 4 .b8 b[8192];\n";
        let fits = format!("{HEAD}{arrays}{}", kernel("fits", &["a", "b"]));
        let m = Module::parse(&fits).expect("48 KiB loads");
        assert_eq!(m.functions[id(&m, "fits").0 as usize].static_shared, 49152);
        // Its own byte first, then `a` aligned to 4: 1 + 3 + 49,152.
        let over = kernel("over", &["a", "b", "c"]).replace("{\n", "{\n  .shared .b8 c[1];\n");
        let e = Module::parse(&format!("{fits}{over}")).expect_err("over 48 KiB");
        assert!(e.to_string().contains("`over` uses 49156 bytes"), "{e}");
    }
}
