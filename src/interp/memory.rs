//! Memory of a running launch or call (PTX ISA 5.1, state spaces).
//!
//! Every addressable object — a caller's buffer, a module `.global`/`.const` variable, a
//! kernel's parameters, a thread's `.local` arrays and call-sequence `.param` variables — is a
//! region of host memory, and an address is the host address of a byte in one. A state
//! space's addresses and generic addresses are therefore the same numbers (`cvta` is the
//! identity), and every access is checked: the address must lie inside one region of the
//! space the instruction names (any space for a generic access), the access must not run past
//! its end, it must be naturally aligned, and stores must target writable regions.
//!
//! Regions hold `AtomicU8`s so that threads running on several host cores may read and write
//! the same buffers without undefined behaviour in Rust (racing PTX gets a racy result, as on
//! a GPU, never a host fault).

use crate::ast::Space;
use std::sync::atomic::{AtomicU8, Ordering};

/// One addressable object.
pub struct Region {
    bytes: Box<[AtomicU8]>,
    /// Logical size (the allocation holds at least one byte so that every region has its own
    /// address).
    size: usize,
    pub space: Space,
    pub writable: bool,
    /// How faults name it (`buffer arg1`, `variable table`).
    pub name: String,
}

impl Region {
    pub fn new(init: &[u8], size: usize, space: Space, writable: bool, name: String) -> Region {
        let bytes: Box<[AtomicU8]> = (0..size.max(1))
            .map(|i| AtomicU8::new(init.get(i).copied().unwrap_or(0)))
            .collect();
        Region {
            bytes,
            size,
            space,
            writable,
            name,
        }
    }
    pub fn base(&self) -> u64 {
        self.bytes.as_ptr() as u64
    }
    pub fn size(&self) -> usize {
        self.size
    }
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base() && addr - self.base() < self.size.max(1) as u64
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
    pub fn read_bytes(&self, offset: usize, n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| self.bytes[offset + i].load(Ordering::Relaxed))
            .collect()
    }
    pub fn write_bytes(&self, offset: usize, data: &[u8]) {
        for (i, b) in data.iter().enumerate() {
            self.bytes[offset + i].store(*b, Ordering::Relaxed);
        }
    }
    pub fn to_vec(&self) -> Vec<u8> {
        self.read_bytes(0, self.size)
    }
}

/// Whether an access in space `want` (None = generic) may touch a region of space `have`.
pub fn space_allows(want: Option<Space>, have: Space) -> bool {
    match want {
        None => true,
        Some(w) => w == have,
    }
}

/// Regions shared by all threads of a launch, sorted by address for lookup.
pub struct SharedMemory<'r> {
    regions: Vec<&'r Region>,
}

impl<'r> SharedMemory<'r> {
    pub fn new(mut regions: Vec<&'r Region>) -> Self {
        regions.sort_by_key(|r| r.base());
        SharedMemory { regions }
    }
    /// The region containing `addr`, if any.
    pub fn find(&self, addr: u64) -> Option<&'r Region> {
        self.below(addr).filter(|r| r.contains(addr))
    }
    /// The region with the highest base at or below `addr`.
    pub fn below(&self, addr: u64) -> Option<&'r Region> {
        let i = self.regions.partition_point(|r| r.base() <= addr);
        (i > 0).then(|| self.regions[i - 1])
    }
}

/// How far past a region's end an address may be and still be reported as out of bounds of
/// that region (rather than as pointing at no memory).
pub const NEAR_MISS: u64 = 1 << 16;

/// Why an access was refused.
pub fn describe_access(is_store: bool, space: Option<Space>, bytes: usize) -> String {
    let space = space.map_or("generic".to_string(), |s| s.to_string());
    let what = if is_store { "store" } else { "load" };
    format!("{space} {what} of {bytes} bytes")
}
