//! Prefetching the global loads of blocks to come.
//!
//! A block of a cooperative kernel in lanes loads its inputs, then spends most of its time in
//! rounds of barriers on what it loaded. Out-of-order execution overlaps only a few hundred
//! instructions, so the next block's loads find memory cold: a shared-memory reduction of
//! 16M words spent 0.3 ns a word waiting on them, whatever the rounds cost (0.78 ns a word
//! with the input in the last-level cache, 1.08 from memory). Hardware prefetchers do not
//! cover it: a block reads its words in a few bursts, far apart in time.
//!
//! Blocks that read through an array as the grid goes (`in[blockIdx.x * n + …]`) do it at a
//! steady distance from one block to the next. So each group function writes, at each of its
//! first [`SITES`] global load sites, the address its lanes load from (the last warp's, as
//! the block runs) into the worker's [`Streams`]; after each block, a site whose address moved
//! by the same step twice running is taken to go on so, and the bytes it will load
//! [`AHEAD`] blocks on are prefetched into the L2 cache. A prefetch never faults, so a wrong
//! guess costs only the prefetch.

/// Global load sites a group function reports (the first in the kernel's body).
pub const SITES: usize = 4;
/// How many blocks ahead the prefetches reach.
pub const AHEAD: i64 = 4;
/// The most a site's bytes of one block may span to be prefetched (a longer step is
/// prefetched as its last `MAX_SPAN` bytes).
pub const MAX_SPAN: u64 = 4096;
/// The bytes past a site's reported address its lanes load (32 lanes of 4 bytes).
const LANES_SPAN: u64 = 128;
const LINE: u64 = 64;

/// A worker's record of its blocks' global load addresses (in [`super::runtime::ThreadCtx`]).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct Streams {
    /// Written by generated code: each site's address in the block just run (0: it did not
    /// load).
    pub seen: [u64; SITES],
    /// Each site's address in the block before, and the step from the one before that.
    last: [u64; SITES],
    step: [i64; SITES],
}

impl Streams {
    /// After a block: learns each site's step, and prefetches where the steps agree (each
    /// line once, where the sites' bytes overlap).
    pub fn after_block(&mut self) {
        let mut spans = [(0, 0); SITES];
        let mut n = 0;
        for s in 0..SITES {
            let now = std::mem::take(&mut self.seen[s]);
            if now == 0 {
                continue;
            }
            if let Some(span) = ahead(self.last[s], self.step[s], now) {
                spans[n] = span;
                n += 1;
            }
            self.step[s] = now.wrapping_sub(self.last[s]) as i64;
            self.last[s] = now;
        }
        let spans = &mut spans[..n];
        spans.sort_unstable();
        let mut done = 0;
        for &(lo, hi) in spans.iter() {
            prefetch(lo.max(done), hi);
            done = done.max(hi);
        }
    }
}

/// The bytes a site that loaded at `last`, then stepped `step` to `now`, will load `AHEAD`
/// blocks on, if the step held (`now - last == step`) and is neither 0 nor too long to be
/// a stream: the span of one step ending at that block's address, and its lanes' bytes.
pub fn ahead(last: u64, step: i64, now: u64) -> Option<(u64, u64)> {
    let moved = now.wrapping_sub(last) as i64;
    if moved != step || step == 0 || step.unsigned_abs() > 1 << 20 {
        return None;
    }
    // The addresses are the lanes' first, reported whether or not a lane loaded (a guarded
    // load no lane ran may name any address): none may wrap around the address space.
    let at = now.checked_add_signed(AHEAD * step)?;
    let span = step.unsigned_abs().min(MAX_SPAN);
    let hi = at.checked_add(LANES_SPAN)?;
    let lo = hi.checked_sub(span)?;
    Some((lo, hi))
}

/// Prefetches the cache lines of `[lo, hi)` into the L2 cache.
fn prefetch(lo: u64, hi: u64) {
    let first = lo & !(LINE - 1);
    // At most `MAX_SPAN` bytes and a line (`ahead`), counted, so no address wraps.
    for line in 0..hi.saturating_sub(first).div_ceil(LINE) {
        let a = first + line * LINE;
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing the program sees and never faults, whatever the
        // address (unmapped ones are dropped); SSE, which it needs, is part of x86-64.
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T1, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T1>(a as *const i8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_step_prefetches_the_block_ahead() {
        // A reduction's first load in blocks of 2,048 bytes: the last warp loads at 0x10380
        // (0x10000 + 896) in one block and 0x10b80 in the next. Four blocks on it loads
        // from 0x12b80 to 0x12c00; the step before that is the block before's.
        let (last, now) = (0x10380, 0x10b80);
        assert_eq!(ahead(last, 2048, now), Some((0x12400, 0x12c00)));
        assert_eq!(0x12c00 - 0x12400, 2048);
    }

    #[test]
    fn a_step_that_changed_or_stood_still_prefetches_nothing() {
        assert_eq!(ahead(0x1000, 2048, 0x1400), None);
        assert_eq!(ahead(0x1000, 0, 0x1000), None);
        // Steps over a mebibyte are not streams.
        assert_eq!(ahead(0, 1 << 21, 1 << 21), None);
    }

    #[test]
    fn a_long_step_prefetches_its_last_bytes_only() {
        let (lo, hi) = ahead(0x10_0000, 0x8000, 0x10_8000).expect("a steady step");
        assert_eq!(hi, 0x10_8000 + 4 * 0x8000 + 128);
        assert_eq!(hi - lo, MAX_SPAN);
    }

    #[test]
    fn addresses_at_the_ends_of_the_address_space_prefetch_nothing() {
        // A guarded load no lane ran reports lane 0's address, which may be anything.
        assert_eq!(ahead(u64::MAX - 24, 4, u64::MAX - 20), None);
        assert_eq!(ahead(u64::MAX - 100, 4, u64::MAX - 96), None);
        assert_eq!(ahead(12, -4, 8), None);
        // At the top, the line loop ends without wrapping.
        prefetch(u64::MAX - 100, u64::MAX);
    }

    #[test]
    fn a_falling_step_prefetches_below() {
        let (lo, hi) = ahead(0x20_0000, -2048, 0x20_0000 - 2048).expect("a steady step");
        assert_eq!(hi, 0x20_0000 - 5 * 2048 + 128);
        assert_eq!(hi - lo, 2048);
    }
}
