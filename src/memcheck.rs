//! The memory model both engines check accesses against (PTX ISA 5.1, state spaces).
//!
//! Every addressable object — a caller's buffer, a module `.global`/`.const` variable, a
//! kernel's parameters, a thread's `.local` arrays and call-sequence `.param` variables — is
//! an area of host memory, and a PTX address is the host address of a byte in one. A state
//! space's addresses and generic addresses are therefore the same numbers (`cvta` is the
//! identity). An access is allowed when the address lies inside one area of the space the
//! instruction names (any space for a generic access), does not run past its end, is
//! naturally aligned, and (for stores) the area is writable. This module holds that rule and
//! the messages of its violations, so that both engines report the same fault.

use crate::ast::Space;
use std::borrow::Borrow;

/// Where an area lies and what it allows: all the rule reads of an area but its name (each
/// engine's areas hold one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub base: u64,
    /// Logical size in bytes.
    pub size: usize,
    pub space: Space,
    pub writable: bool,
}

/// One addressable object, as the check sees it.
pub trait Area {
    fn extent(&self) -> Extent;
    /// How faults name it (`buffer arg1`, `variable table`).
    fn name(&self) -> &str;
    fn base(&self) -> u64 {
        self.extent().base
    }
    /// Logical size in bytes.
    fn size(&self) -> usize {
        self.extent().size
    }
    fn space(&self) -> Space {
        self.extent().space
    }
    fn writable(&self) -> bool {
        self.extent().writable
    }
    /// Whether `addr` is one of its bytes (an empty area still owns its first address).
    fn contains(&self, addr: u64) -> bool {
        addr >= self.base() && addr - self.base() < self.size().max(1) as u64
    }
}

/// How faults name a kernel's buffer argument `arg` (counted from 0), in both engines.
pub fn buffer_name(arg: usize) -> String {
    format!("buffer arg{arg}")
}

/// How faults name a kernel parameter, in both engines.
pub fn param_name(name: &str) -> String {
    format!("parameter `{name}`")
}

/// How faults name a module variable, in both engines.
pub fn variable_name(name: &str) -> String {
    format!("variable `{name}`")
}

/// How faults name a variable of a function's frame (`.local` or `.param`), in both engines.
pub fn frame_var_name(space: Space, name: &str) -> String {
    format!("{space} `{name}`")
}

/// How far past an area's end an address may be and still be reported as out of bounds of
/// that area (rather than as pointing at no memory).
pub const NEAR_MISS: u64 = 1 << 16;

/// A refused access: the message and the address.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub message: String,
    pub address: u64,
}

/// Checks an access of `size` bytes at `addr` in `space` (None = generic) against a thread's
/// own areas (its frames' variables, innermost last and searched first) and the areas its
/// launch shares. Returns the area and the offset into it.
pub fn check_in<'a, A: Area, S: Area + Borrow<A>>(
    own: &'a [A],
    shared: &'a AreaMap<S>,
    addr: u64,
    size: usize,
    space: Option<Space>,
    store: bool,
) -> Result<(&'a A, usize), Violation> {
    let found = own
        .iter()
        .rev()
        .find(|r| r.contains(addr))
        .or_else(|| shared.find(addr).map(Borrow::borrow));
    let nearest_below = || {
        own.iter()
            .filter(|r| r.base() <= addr)
            .chain(shared.below(addr).map(Borrow::borrow))
            .max_by_key(|r| r.base())
    };
    check_access(found, nearest_below, addr, size, space, store)
}

/// Checks an access at `addr` against `area`, which the caller knows contains `addr` (a
/// cached result of an earlier lookup).
#[inline]
pub fn check_within<A: Area>(
    area: &A,
    addr: u64,
    size: usize,
    space: Option<Space>,
    store: bool,
) -> Result<(&A, usize), Violation> {
    debug_assert!(area.contains(addr));
    check_access(Some(area), || None, addr, size, space, store)
}

/// The rule itself: `found` is the area containing `addr`, if any; `nearest_below` gives the
/// area with the highest base at or below `addr` (asked for only when nothing contains it).
fn check_access<'a, A: Area + ?Sized>(
    found: Option<&'a A>,
    nearest_below: impl FnOnce() -> Option<&'a A>,
    addr: u64,
    size: usize,
    space: Option<Space>,
    store: bool,
) -> Result<(&'a A, usize), Violation> {
    // Messages are built only for a refused access (this runs for every checked access).
    let what = || describe_access(store, space, size);
    let refuse = |message: String| {
        Err(Violation {
            message,
            address: addr,
        })
    };
    let Some(r) = found else {
        return match nearest_below().filter(|r| addr - r.base() < r.size() as u64 + NEAR_MISS) {
            Some(r) => refuse(format!(
                "{} at address {addr:#x}: out of bounds, {} bytes past the end of {} ({} bytes)",
                what(),
                addr - r.base() - r.size() as u64,
                r.name(),
                r.size()
            )),
            None => refuse(format!("{} at address {addr:#x}: no memory there", what())),
        };
    };
    if space.is_some_and(|s| s != r.space()) {
        return refuse(format!(
            "{} at address {addr:#x}, which is in {} ({} space)",
            what(),
            r.name(),
            r.space()
        ));
    }
    let offset = (addr - r.base()) as usize;
    if offset + size > r.size() {
        return refuse(format!(
            "{} at address {addr:#x}: out of bounds of {} ({} bytes, offset {offset})",
            what(),
            r.name(),
            r.size()
        ));
    }
    // Access sizes are powers of two (1 to 32 bytes): a mask, not the 64-bit division that
    // `is_multiple_of` compiles to.
    let misaligned = if size.is_power_of_two() {
        addr & (size as u64 - 1) != 0
    } else {
        !addr.is_multiple_of(size as u64)
    };
    if misaligned {
        return refuse(format!("{} at address {addr:#x}: misaligned", what()));
    }
    if store && !r.writable() {
        return refuse(format!(
            "{} at address {addr:#x}: {} is read-only",
            what(),
            r.name()
        ));
    }
    Ok((r, offset))
}

/// Names an access in fault messages: `global load of 4 bytes`.
fn describe_access(is_store: bool, space: Option<Space>, bytes: usize) -> String {
    let space = space.map_or("generic".to_string(), |s| s.to_string());
    let what = if is_store { "store" } else { "load" };
    format!("{space} {what} of {bytes} bytes")
}

impl<A: Area + ?Sized> Area for &A {
    fn extent(&self) -> Extent {
        (**self).extent()
    }
    fn name(&self) -> &str {
        (**self).name()
    }
}

/// Areas shared by all threads of a launch, sorted by address for lookup.
pub struct AreaMap<R> {
    areas: Vec<R>,
    /// Each area's base, in the same order: the search reads these, not the areas (which
    /// may be behind references).
    bases: Vec<u64>,
}

impl<R: Area> AreaMap<R> {
    pub fn new(mut areas: Vec<R>) -> Self {
        areas.sort_by_key(|r| r.base());
        let bases = areas.iter().map(|r| r.base()).collect();
        AreaMap { areas, bases }
    }
    /// The area containing `addr`, if any.
    pub fn find(&self, addr: u64) -> Option<&R> {
        self.below(addr).filter(|r| r.contains(addr))
    }
    /// The area with the highest base at or below `addr`.
    pub fn below(&self, addr: u64) -> Option<&R> {
        let i = self.bases.partition_point(|b| *b <= addr);
        (i > 0).then(|| &self.areas[i - 1])
    }
}
