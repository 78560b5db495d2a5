//! What the threads of a block share, the same for both engines: the shared-memory window
//! (this file), the order in which the threads run and meet at barriers and warp
//! collectives ([`schedule`]), and what those collectives compute ([`warp`]).
//!
//! **Shared memory** (PTX ISA 5.1.5, the shared state space). Every block has its own copy of
//! every `.shared` variable of the module (module-level and function-level alike), zeroed at
//! block start. A `.shared` address is an offset into the block's *window*: the variables
//! are laid out in declaration order, each aligned and followed by [`GAP`] bytes that belong
//! to no variable, so that an access a little past a variable's end is out of bounds in both
//! engines (never an access to its neighbour). The dynamic shared memory of a launch (the
//! `.extern .shared` arrays of unspecified size, which all name it) starts after the static
//! variables. A generic address into shared memory is a host address: `cvta.shared` adds the
//! block's base, `cvta.to.shared` takes it away (each engine has its own way of mapping the
//! window onto host memory; the offsets are the same).

pub mod schedule;
pub mod warp;

use crate::ast::{Module, Space, VarId};

/// Bytes after each shared variable that belong to none.
pub const GAP: u32 = 64;

/// Most shared memory a block may have, static and dynamic together (sm_80's limit).
pub const MAX_SHARED_BYTES: u32 = 227 << 10;

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

/// Where each `.shared` variable of a module lies in a block's window.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SharedLayout {
    /// The static variables in window order, then the dynamic one if the module has any.
    pub vars: Vec<SharedVar>,
    /// Window offset of each module variable that is `.shared`.
    module: Vec<Option<u32>>,
    /// Window offset of each function's `.shared` variables, by function and variable.
    func: Vec<Vec<Option<u32>>>,
    /// Where the dynamic shared memory starts.
    pub dynamic_offset: u32,
    /// The static variables' bytes as ptxas lays them out: the functions' own variables,
    /// then the module's, each in declaration order at its own alignment (no gaps); the end
    /// aligned to 16 or the dynamic arrays' alignment if there are any. What CUDA reports as
    /// a kernel's static shared memory and `%total_smem_size` counts.
    pub static_bytes: u32,
}

/// `%total_smem_size` is a multiple of this (the hardware's shared memory allocation unit).
const SMEM_UNIT: u64 = 128;

fn align_up(v: u32, a: u32) -> u32 {
    v.div_ceil(a.max(1)) * a.max(1)
}

/// The static `.shared` bytes as ptxas lays them out and an H200 counts them in
/// `%total_smem_size` (`tests/hardware/cases/smem_sizes*.ptx`): the variables of functions
/// with a body first, then the module's, each in declaration order at its own alignment;
/// where the module has dynamic arrays, the end aligned to 16 or their alignment if larger.
/// Saturates at `u32::MAX` (a launch then fails the size check).
fn ptxas_static_bytes(m: &Module) -> u32 {
    let own = (m.functions.iter())
        .filter(|f| f.body.is_some())
        .flat_map(|f| f.vars.iter());
    let shared = || {
        own.clone()
            .chain(&m.vars)
            .filter(|v| v.space == Space::Shared)
    };
    let end = (shared().filter(|v| !v.dynamic)).fold(0u64, |end, v| {
        end.next_multiple_of(v.align.max(1) as u64) + v.size as u64
    });
    let end = match shared().filter(|v| v.dynamic).map(|v| v.align).max() {
        Some(align) => end.next_multiple_of(align.max(16) as u64),
        None => end,
    };
    end.min(u32::MAX as u64) as u32
}

impl SharedLayout {
    pub fn of(m: &Module) -> SharedLayout {
        let mut l = SharedLayout::default();
        let mut end = 0u32;
        let mut dynamic_name = None;
        let mut place = |l: &mut SharedLayout, v: &crate::ast::VarDecl| -> Option<u32> {
            if v.space != Space::Shared {
                return None;
            }
            if v.dynamic {
                dynamic_name.get_or_insert_with(|| v.name.clone());
                return Some(u32::MAX);
            }
            let offset = align_up(end, v.align.max(16));
            end = offset + v.size as u32 + GAP;
            l.vars.push(SharedVar {
                offset,
                size: v.size as u32,
                name: format!(".shared variable `{}`", v.name),
                dynamic: false,
            });
            Some(offset)
        };
        l.module = m.vars.iter().map(|v| place(&mut l, v)).collect();
        // A function without a body (refused, or inlined into its callers' kernels, which
        // have their own copies of its variables) never runs: its variables take no room.
        l.func = m
            .functions
            .iter()
            .map(|f| {
                (f.vars.iter())
                    .map(|v| f.body.as_ref().and_then(|_| place(&mut l, v)))
                    .collect()
            })
            .collect();
        l.static_bytes = ptxas_static_bytes(m);
        l.dynamic_offset = align_up(end, 16);
        if let Some(name) = dynamic_name {
            l.vars.push(SharedVar {
                offset: l.dynamic_offset,
                size: 0,
                name: format!(".shared variable `{name}`"),
                dynamic: true,
            });
        }
        // The dynamic arrays all start the dynamic part.
        let dynamic_offset = l.dynamic_offset;
        for o in l.module.iter_mut().chain(l.func.iter_mut().flatten()) {
            if *o == Some(u32::MAX) {
                *o = Some(dynamic_offset);
            }
        }
        l
    }

    /// The window offset of a `.shared` variable of function `func` (None: not shared).
    pub fn offset(&self, func: usize, v: VarId) -> Option<u32> {
        match v {
            VarId::Module(i) => self.module[i as usize],
            VarId::Function(i) => self.func[func][i as usize],
        }
    }

    /// Whether the module has any shared memory.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The window's size with `dynamic` bytes of dynamic shared memory (plus a gap after).
    pub fn window_size(&self, dynamic: u32) -> u32 {
        self.dynamic_offset + dynamic + GAP
    }

    /// The variables with the dynamic one sized for a launch.
    pub fn sized(&self, dynamic: u32) -> impl Iterator<Item = SharedVar> + '_ {
        self.vars.iter().map(move |v| SharedVar {
            size: if v.dynamic { dynamic } else { v.size },
            ..v.clone()
        })
    }

    /// `%total_smem_size` with `dynamic` bytes of dynamic shared memory: the static and
    /// dynamic bytes together, rounded up to the allocation unit, as an H200 gives it
    /// (docs/semantics.md, "Shared memory").
    pub fn total_smem_size(&self, dynamic: u32) -> u32 {
        let total = (self.static_bytes as u64 + dynamic as u64).next_multiple_of(SMEM_UNIT);
        total.min(u32::MAX as u64) as u32
    }

    /// Checks a launch's dynamic shared bytes against the limit.
    pub fn check_launch(&self, dynamic: u32) -> Result<(), String> {
        let total = self.static_bytes as u64 + dynamic as u64;
        if total > MAX_SHARED_BYTES as u64 {
            return Err(format!(
                "the block needs {total} bytes of shared memory ({} static, {dynamic} dynamic); at most {MAX_SHARED_BYTES}",
                self.static_bytes
            ));
        }
        Ok(())
    }
}
