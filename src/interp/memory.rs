//! Memory of a running launch or call (PTX ISA 5.1, state spaces).
//!
//! The interpreter's memory: each area of the shared model (see [`crate::memcheck`]) is a
//! region of host memory it allocates.
//!
//! Regions hold `AtomicU8`s so that threads running on several host cores may read and write
//! the same buffers without undefined behaviour in Rust (racing PTX gets a racy result, as on
//! a GPU, never a host fault).

use crate::ast::Space;
use crate::memcheck::{Area, AreaMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Bytes after each region's end that belong to no region: an access a little past an end
/// (the usual off-by-some bug) is then reported as out of bounds of that region, whatever
/// the allocator placed next, and not as an access to a neighbour.
const RED_ZONE: usize = 64;

/// One addressable object.
pub struct Region {
    bytes: Box<[AtomicU8]>,
    /// Logical size (the allocation holds at least one byte so that every region has its own
    /// address).
    size: usize,
    pub space: Space,
    pub writable: bool,
    /// How faults name it (`buffer arg1`, `variable table`). Shared: a frame's variables are
    /// named once per interpreter, not formatted again at every call.
    pub name: Arc<str>,
}

impl Region {
    pub fn new(
        init: &[u8],
        size: usize,
        space: Space,
        writable: bool,
        name: impl Into<Arc<str>>,
    ) -> Region {
        let len = size.max(1) + RED_ZONE;
        let mut bytes = Vec::with_capacity(len);
        bytes.extend(
            init[..init.len().min(size)]
                .iter()
                .map(|&b| AtomicU8::new(b)),
        );
        bytes.resize_with(len, || AtomicU8::new(0));
        Region {
            bytes: bytes.into_boxed_slice(),
            size,
            space,
            writable,
            name: name.into(),
        }
    }
    /// Makes this region, no longer used, into a new one at the same address: `size` must
    /// be at most its [`capacity`](Region::capacity).
    pub fn refill(
        &mut self,
        init: &[u8],
        size: usize,
        space: Space,
        writable: bool,
        name: &Arc<str>,
    ) {
        assert!(
            size <= self.capacity(),
            "refill beyond the region's capacity"
        );
        for (i, b) in self.bytes[..size].iter().enumerate() {
            b.store(init.get(i).copied().unwrap_or(0), Ordering::Relaxed);
        }
        self.size = size;
        self.space = space;
        self.writable = writable;
        // Names are shared by every thread of a launch: a new reference is an atomic add on
        // a cache line all cores use, so a region that keeps its name keeps its reference.
        if !Arc::ptr_eq(&self.name, name) {
            self.name = name.clone();
        }
    }
    /// The most bytes the region can hold.
    pub fn capacity(&self) -> usize {
        self.bytes.len() - RED_ZONE
    }
    pub fn base(&self) -> u64 {
        self.bytes.as_ptr() as u64
    }
    pub fn size(&self) -> usize {
        self.size
    }
    /// Reads `n` ≤ 8 bytes at `offset` as a little-endian integer. The caller has checked
    /// the bounds.
    pub fn read(&self, offset: usize, n: usize) -> u64 {
        let mut v = 0u64;
        for i in (0..n).rev() {
            v = (v << 8) | self.bytes[offset + i].load(Ordering::Relaxed) as u64;
        }
        v
    }
    /// Writes the low `n` ≤ 8 bytes of `v` at `offset`, little-endian.
    pub fn write(&self, offset: usize, n: usize, v: u64) {
        for i in 0..n {
            self.bytes[offset + i].store((v >> (8 * i)) as u8, Ordering::Relaxed);
        }
    }
    /// Appends the region's bytes to `out`.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        out.extend(
            self.bytes[..self.size]
                .iter()
                .map(|b| b.load(Ordering::Relaxed)),
        );
    }
    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        for (i, b) in data.iter().enumerate() {
            self.bytes[offset + i].store(*b, Ordering::Relaxed);
        }
    }
    pub fn to_vec(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.size);
        self.append_to(&mut v);
        v
    }
}

impl Area for Region {
    fn base(&self) -> u64 {
        Region::base(self)
    }
    fn size(&self) -> usize {
        self.size
    }
    fn space(&self) -> Space {
        self.space
    }
    fn writable(&self) -> bool {
        self.writable
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// Regions shared by all threads of a launch.
pub type SharedMemory<'r> = AreaMap<&'r Region>;
