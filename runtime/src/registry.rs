//! The allocation table: every region of host memory that kernels may reach by address —
//! driver allocations (device and host), host memory registered through the C ABI or
//! `cuMemHostRegister`, and module variables — with the snapshot of areas each checked
//! launch is checked against.

use ptxjit::HostArea;
use std::alloc::Layout;
use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock, RwLock};

/// Where a region came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `cuMemAlloc`, `cuMemAllocManaged`: owned here.
    Device,
    /// `cuMemAllocHost`, `cuMemHostAlloc`: owned here.
    Host,
    /// Memory the caller owns and registered (`ptxjit_register_memory`,
    /// `cuMemHostRegister`).
    Registered,
    /// A module variable (`cuModuleGetGlobal`): owned by its module.
    Variable,
}

#[derive(Clone, Debug)]
pub struct Region {
    pub base: u64,
    pub size: usize,
    pub kind: Kind,
    /// How faults name it.
    name: Arc<str>,
    /// The layout it was allocated with, for regions owned here.
    layout: Option<Layout>,
}

impl Region {
    fn new(base: u64, size: usize, kind: Kind, layout: Option<Layout>) -> Region {
        Region {
            base,
            size,
            kind,
            name: Arc::from(format!("{} at {base:#x}", describe(kind))),
            layout,
        }
    }
}

impl Region {
    pub fn end(&self) -> u64 {
        self.base + self.size as u64
    }
}

#[derive(Default)]
struct Table {
    regions: BTreeMap<u64, Region>,
    /// The areas launches are checked against, rebuilt on every change.
    areas: Arc<[HostArea]>,
}

impl Table {
    fn rebuild(&mut self) {
        self.areas = self
            .regions
            .values()
            .map(|r| HostArea {
                base: r.base,
                size: r.size,
                name: r.name.clone(),
                writable: true,
            })
            .collect();
    }
}

fn describe(kind: Kind) -> &'static str {
    match kind {
        Kind::Device => "device allocation",
        Kind::Host => "host allocation",
        Kind::Registered => "registered memory",
        Kind::Variable => "module variable",
    }
}

static TABLE: LazyLock<RwLock<Table>> = LazyLock::new(Default::default);

fn read() -> std::sync::RwLockReadGuard<'static, Table> {
    TABLE.read().unwrap_or_else(|e| e.into_inner())
}

fn write() -> std::sync::RwLockWriteGuard<'static, Table> {
    TABLE.write().unwrap_or_else(|e| e.into_inner())
}

/// Alignment of allocations made here (what CUDA guarantees for `cuMemAlloc`).
pub const ALIGN: usize = 256;

/// Allocates `size` zeroed bytes (at least one) and records them; None when the host is out
/// of memory.
pub fn allocate(size: usize, kind: Kind) -> Option<u64> {
    let layout = Layout::from_size_align(size.max(1), ALIGN).ok()?;
    // SAFETY: the layout has a non-zero size.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return None;
    }
    let base = p as u64;
    let mut t = write();
    t.regions
        .insert(base, Region::new(base, size, kind, Some(layout)));
    t.rebuild();
    Some(base)
}

/// Records memory owned elsewhere; false if it overlaps a known region or is empty.
pub fn register(base: u64, size: usize, kind: Kind) -> bool {
    if size == 0 || base.checked_add(size as u64).is_none() {
        return false;
    }
    let mut t = write();
    let overlaps = t
        .regions
        .range(..base + size as u64)
        .next_back()
        .is_some_and(|(_, r)| r.end() > base);
    if overlaps {
        return false;
    }
    t.regions.insert(base, Region::new(base, size, kind, None));
    t.rebuild();
    true
}

/// Forgets the region starting at `base` if it is of one of `kinds`, freeing it if it was
/// allocated here; false if there is none.
pub fn release(base: u64, kinds: &[Kind]) -> bool {
    let mut t = write();
    let Some(r) = t.regions.get(&base).filter(|r| kinds.contains(&r.kind)) else {
        return false;
    };
    let layout = r.layout;
    t.regions.remove(&base);
    t.rebuild();
    drop(t);
    if let Some(layout) = layout {
        // SAFETY: `base` was returned by `alloc_zeroed` with this layout (`allocate`) and
        // has just been removed from the table, so it is freed once.
        unsafe { std::alloc::dealloc(base as *mut u8, layout) };
    }
    true
}

/// The region containing `addr`.
pub fn find(addr: u64) -> Option<Region> {
    let t = read();
    t.regions
        .range(..=addr)
        .next_back()
        .map(|(_, r)| r)
        .filter(|r| addr < r.end().max(r.base + 1))
        .cloned()
}

/// Whether `[addr, addr + len)` lies inside one known region.
pub fn contains(addr: u64, len: usize) -> bool {
    find(addr).is_some_and(|r| addr + len as u64 <= r.end())
}

/// The areas a checked launch may access now.
pub fn areas() -> Arc<[HostArea]> {
    read().areas.clone()
}
