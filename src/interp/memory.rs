//! Memory of a running launch or call (PTX ISA 5.1, state spaces).
//!
//! The interpreter's memory: each area of the shared model (see [`crate::memcheck`]) is a
//! region of host memory it allocates.
//!
//! Regions hold `AtomicU8`s so that threads running on several host cores may read and write
//! the same buffers without undefined behaviour in Rust (racing PTX gets a racy result, as on
//! a GPU, never a host fault).

use crate::ast::{FuncId, Space};
use crate::block::SharedLayout;
use crate::memcheck::{Area, AreaMap, Extent};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// Bytes after each region's end that belong to no region: an access a little past an end
/// (the usual off-by-some bug) is then reported as out of bounds of that region, whatever
/// the allocator placed next, and not as an access to a neighbour.
const RED_ZONE: usize = 64;

/// One addressable object.
pub struct Region {
    bytes: Box<[AtomicU8]>,
    /// Where it lies (its bytes' address), its logical size (the allocation holds at least
    /// one byte so that every region has its own address), space and writability.
    extent: Extent,
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
        let bytes = bytes.into_boxed_slice();
        Region {
            extent: Extent {
                base: bytes.as_ptr() as u64,
                size,
                space,
                writable,
            },
            bytes,
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
        self.extent = Extent {
            size,
            space,
            writable,
            ..self.extent
        };
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
        self.extent.base
    }
    pub fn size(&self) -> usize {
        self.extent.size
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
            self.bytes[..self.extent.size]
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
        let mut v = Vec::with_capacity(self.extent.size);
        self.append_to(&mut v);
        v
    }
}

impl Area for Region {
    fn extent(&self) -> Extent {
        self.extent
    }
    fn name(&self) -> &str {
        &self.name
    }
}

/// Regions shared by all threads of a launch.
pub type SharedMemory<'r> = AreaMap<&'r Region>;

/// One block's shared memory (PTX ISA 5.1.5): a region per `.shared` variable, reached
/// through the window of [`SharedLayout`]: a window offset inside a variable (or a little
/// past its end) is that many bytes into its region, so an overrun lands in the region's red
/// zone and is reported against the variable.
pub struct BlockMemory {
    /// Window offset and region of each variable, in window order.
    vars: Vec<(u64, Region)>,
}

impl BlockMemory {
    /// The shared memory of a block of a launch of `f` with `dynamic` bytes of dynamic
    /// shared memory: the variables it uses.
    pub fn new(layout: &SharedLayout, f: FuncId, dynamic: u32) -> BlockMemory {
        BlockMemory {
            vars: layout
                .sized(f, dynamic)
                .map(|v| {
                    let r = Region::new(&[], v.size as usize, Space::Shared, true, v.name);
                    (v.offset as u64, r)
                })
                .collect(),
        }
    }
    /// The host address of window offset `w` (`cvta.shared`): in the region of the last
    /// variable at or below it where that holds it or its red zone; else (below the first
    /// variable, or in bytes of the window that other launches' variables use) `w` itself,
    /// which no region holds.
    pub fn host(&self, w: u64) -> u64 {
        match self.vars.iter().rev().find(|(off, _)| *off <= w) {
            Some((off, r)) if w - off < (r.size() + RED_ZONE) as u64 => {
                r.base().wrapping_add(w - off)
            }
            _ => w,
        }
    }
    /// The window offset of host address `h` (`cvta.to.shared`), if it lies in a variable's
    /// region or its red zone; other addresses (not shared, so undefined in PTX) are kept.
    pub fn window(&self, h: u64) -> u64 {
        self.vars
            .iter()
            .find(|(_, r)| h >= r.base() && h - r.base() < (r.size() + RED_ZONE) as u64)
            .map_or(h, |(off, r)| off + (h - r.base()))
    }
    /// The variable whose region holds `addr`.
    pub fn find(&self, addr: u64) -> Option<&Region> {
        self.vars.iter().map(|(_, r)| r).find(|r| r.contains(addr))
    }
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.vars.iter().map(|(_, r)| r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(bytes: &[u8]) -> Region {
        Region::new(bytes, bytes.len(), Space::Global, true, "r")
    }

    #[test]
    fn reads_and_writes_agree_with_a_byte_array_at_every_size_and_offset() {
        let init: Vec<u8> = (0..40u8)
            .map(|i| i.wrapping_mul(37).wrapping_add(11))
            .collect();
        for n in [1usize, 2, 4, 8] {
            for offset in 0..=init.len() - n {
                let r = region(&init);
                let mut model = init.clone();
                let want = (0..n)
                    .rev()
                    .fold(0u64, |v, i| (v << 8) | model[offset + i] as u64);
                assert_eq!(r.read(offset, n), want, "read {n} at {offset}");
                let v = 0x8877_6655_4433_2211u64;
                r.write(offset, n, v);
                model[offset..offset + n].copy_from_slice(&v.to_le_bytes()[..n]);
                assert_eq!(r.to_vec(), model, "write {n} at {offset}");
            }
        }
    }

    #[test]
    fn byte_copies_in_and_out_at_any_alignment() {
        for offset in 0..6 {
            for len in 0..14 {
                let r = region(&[0xaa; 24]);
                let data: Vec<u8> = (1..=len as u8).collect();
                r.write_bytes(offset, &data);
                let mut model = vec![0xaa; 24];
                model[offset..offset + len].copy_from_slice(&data);
                assert_eq!(r.to_vec(), model, "{len} bytes at {offset}");
                let mut out = vec![7u8];
                r.append_to(&mut out);
                assert_eq!(out.len(), 25);
                assert_eq!(&out[1..], &model[..]);
            }
        }
    }

    #[test]
    fn refill_keeps_no_old_bytes() {
        let mut r = region(&[0xff; 30]);
        let name: Arc<str> = "s".into();
        r.refill(&[1, 2, 3], 7, Space::Local, true, &name);
        assert_eq!(r.to_vec(), [1, 2, 3, 0, 0, 0, 0]);
        assert_eq!(r.size(), 7);
    }

    #[test]
    fn concurrent_byte_stores_into_one_word_are_all_kept() {
        // Four threads store the four bytes of the same words many times: a store must not
        // overwrite its neighbours' bytes with stale values.
        let r = region(&[0; 64]);
        std::thread::scope(|s| {
            for k in 0..4usize {
                let r = &r;
                s.spawn(move || {
                    for round in 0..2000u32 {
                        for w in 0..16 {
                            r.write(4 * w + k, 1, (round as u64 + k as u64) & 0xff);
                        }
                    }
                });
            }
        });
        for w in 0..16 {
            for k in 0..4 {
                assert_eq!(r.read(4 * w + k, 1), (1999 + k as u64) & 0xff);
            }
        }
    }
}
