//! What the warp collectives compute, after PTX ISA's definitions (Data Movement and
//! Conversion Instructions: `shfl.sync`; Parallel Synchronization and Communication
//! Instructions: `bar.warp.sync`, `vote.sync`, `match.sync`, `redux.sync`, `activemask`,
//! `elect.sync`).
//!
//! A collective resolves for a *group*: the lanes of one warp that stand at the same
//! instruction ([`super::schedule`] says when). Each lane's sources are the values it
//! published there, in the order of [`SyncOp::src_types`]. Where the manual leaves a result
//! undefined, the choice made here is stated beside it and in the semantics notes:
//! - a lane reads only lanes of its group; reading any other lane (absent at the end of a
//!   partial warp, exited, or elsewhere) gives 0;
//! - the lanes a result covers are the group's lanes in the executing lane's `membermask`
//!   (a membermask that leaves out the executing lane does not add it).

use super::schedule::Resume;
use crate::ast::{ReduxOp, ShflMode, SyncOp, Type, VoteMode};

/// The lanes of a warp as a bit mask, lane 0 the lowest bit.
pub type LaneMask = u32;

fn lanes(m: LaneMask) -> impl Iterator<Item = usize> {
    (0..32).filter(move |i| m & (1 << i) != 0)
}

/// The results of collective `op` for each lane of `group`, whose sources are `args[lane]`.
pub fn resolve(op: SyncOp, group: LaneMask, args: &[[u64; 4]; 32]) -> [Resume; 32] {
    let mut out = [Resume::default(); 32];
    for i in lanes(group) {
        let a = &args[i];
        out[i] = match op {
            SyncOp::Shfl(mode) => shfl(mode, i as u32, a, |j| {
                if group & (1 << j) != 0 {
                    args[j as usize][0] & 0xffff_ffff
                } else {
                    0
                }
            }),
            SyncOp::Vote(mode) => {
                // The lanes covered, and those of them whose predicate is true.
                let m = group & a[1] as u32;
                let yes = lanes(m)
                    .filter(|&k| args[k][0] & 1 != 0)
                    .fold(0, |acc, k| acc | (1 << k));
                let d = match mode {
                    VoteMode::All => (yes == m) as u64,
                    VoteMode::Any => (yes != 0) as u64,
                    VoteMode::Uni => (yes == 0 || yes == m) as u64,
                    VoteMode::Ballot => yes as u64,
                };
                Resume { d, p: false }
            }
            SyncOp::Match { all, ty } => {
                let m = group & a[1] as u32;
                let mask = ty.mask();
                let same: LaneMask = lanes(m)
                    .filter(|&k| args[k][0] & mask == a[0] & mask)
                    .fold(0, |acc, k| acc | (1 << k));
                if !all {
                    Resume {
                        d: same as u64,
                        p: false,
                    }
                } else if same == m {
                    Resume {
                        d: m as u64,
                        p: true,
                    }
                } else {
                    Resume { d: 0, p: false }
                }
            }
            SyncOp::Redux(r, ty) => {
                let m = group & a[1] as u32;
                let vals = lanes(m).map(|k| args[k][0] & 0xffff_ffff);
                Resume {
                    d: redux(r, ty, vals),
                    p: false,
                }
            }
            SyncOp::Activemask => Resume {
                d: group as u64,
                p: false,
            },
            SyncOp::Elect => {
                let m = group & a[0] as u32;
                let leader = m.trailing_zeros();
                Resume {
                    d: if m == 0 { 0 } else { leader as u64 },
                    p: m != 0 && leader == i as u32,
                }
            }
            SyncOp::WarpSync | SyncOp::Bar { .. } => Resume::default(),
        };
    }
    out
}

/// `shfl.sync` for lane `lane` with sources `a b c`; `source(j)` is lane j's `a`.
///
/// ```text
/// bval = b[4:0]; cval = c[4:0]; segmask = c[12:8]
/// maxLane = (lane & segmask) | (cval & ~segmask);  minLane = lane & segmask
/// .up:   j = lane - bval; pval = j >= maxLane
/// .down: j = lane + bval; pval = j <= maxLane
/// .bfly: j = lane ^ bval; pval = j <= maxLane
/// .idx:  j = minLane | (bval & ~segmask); pval = j <= maxLane
/// if !pval: j = lane;  d = SourceA[j];  p = pval
/// ```
pub fn shfl(mode: ShflMode, lane: u32, a: &[u64; 4], source: impl Fn(u32) -> u64) -> Resume {
    let lane = lane as i64;
    let bval = (a[1] & 31) as i64;
    let cval = (a[2] & 31) as i64;
    let segmask = ((a[2] >> 8) & 31) as i64;
    let max_lane = (lane & segmask) | (cval & !segmask & 31);
    let min_lane = lane & segmask;
    let (j, pval) = match mode {
        ShflMode::Up => (lane - bval, lane - bval >= max_lane),
        ShflMode::Down => (lane + bval, lane + bval <= max_lane),
        ShflMode::Bfly => (lane ^ bval, (lane ^ bval) <= max_lane),
        ShflMode::Idx => {
            let j = min_lane | (bval & !segmask & 31);
            (j, j <= max_lane)
        }
    };
    let j = if pval { j } else { lane };
    Resume {
        d: source(j as u32),
        p: pval,
    }
}

/// `redux.sync`: the reduction of the 32-bit values of the lanes it covers.
fn redux(op: ReduxOp, ty: Type, vals: impl Iterator<Item = u64>) -> u64 {
    let signed = |v: u64| v as u32 as i32 as i64;
    let vals: Vec<u64> = vals.collect();
    let r = match op {
        ReduxOp::Add => vals.iter().fold(0u32, |s, &v| s.wrapping_add(v as u32)) as u64,
        ReduxOp::And => vals.iter().fold(u32::MAX as u64, |s, &v| s & v),
        ReduxOp::Or => vals.iter().fold(0, |s, &v| s | v),
        ReduxOp::Xor => vals.iter().fold(0, |s, &v| s ^ v),
        ReduxOp::Min if ty.is_signed() => vals.iter().map(|&v| signed(v)).min().unwrap_or(0) as u64,
        ReduxOp::Max if ty.is_signed() => vals.iter().map(|&v| signed(v)).max().unwrap_or(0) as u64,
        ReduxOp::Min => vals.iter().copied().min().unwrap_or(0),
        ReduxOp::Max => vals.iter().copied().max().unwrap_or(0),
    };
    r & 0xffff_ffff
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `__shfl_down_sync(~0, v, 1, 8)` (c = ((32-8) << 8) | 31): lanes read the next lane
    /// within each group of 8; the last of each group keeps its own value.
    #[test]
    fn shfl_down_width_8() {
        let mut args = [[0u64; 4]; 32];
        for (i, a) in args.iter_mut().enumerate() {
            *a = [100 + i as u64, 1, (24 << 8) | 31, 0xffff_ffff];
        }
        let r = resolve(SyncOp::Shfl(ShflMode::Down), u32::MAX, &args);
        assert_eq!((r[0].d, r[0].p), (101, true));
        assert_eq!((r[7].d, r[7].p), (107, false));
        assert_eq!((r[8].d, r[8].p), (109, true));
        assert_eq!((r[31].d, r[31].p), (131, false));
    }

    /// `__shfl_up_sync(~0, v, 2)` (c = 0): lanes 0 and 1 keep their values.
    #[test]
    fn shfl_up_and_idx() {
        let mut args = [[0u64; 4]; 32];
        for (i, a) in args.iter_mut().enumerate() {
            *a = [i as u64 * 3, 2, 0, 0xffff_ffff];
        }
        let r = resolve(SyncOp::Shfl(ShflMode::Up), u32::MAX, &args);
        assert_eq!((r[1].d, r[1].p), (3, false));
        assert_eq!((r[2].d, r[2].p), (0, true));
        assert_eq!((r[31].d, r[31].p), (87, true));
        // `__shfl_sync(~0, v, 5, 16)`: c = (16 << 8) | 31; lane 20 reads lane 16 + 5.
        for a in args.iter_mut() {
            a[1] = 5;
            a[2] = (16 << 8) | 31;
        }
        let r = resolve(SyncOp::Shfl(ShflMode::Idx), u32::MAX, &args);
        assert_eq!(r[20].d, 21 * 3);
        assert_eq!(r[3].d, 5 * 3);
    }

    /// A partial warp of 16 lanes: reads past lane 15 give 0; the ballot and the
    /// activemask cover the 16 lanes.
    #[test]
    fn partial_warp() {
        let mut args = [[0u64; 4]; 32];
        for (i, a) in args.iter_mut().enumerate() {
            *a = [i as u64 + 1, 8, 31, 0xffff_ffff];
        }
        let group = 0xffff;
        let r = resolve(SyncOp::Shfl(ShflMode::Down), group, &args);
        assert_eq!((r[7].d, r[8].d), (16, 0));
        for a in args.iter_mut() {
            a[0] = (a[0] % 3 == 0) as u64;
            a[1] = 0xffff_ffff;
        }
        let r = resolve(SyncOp::Vote(VoteMode::Ballot), group, &args);
        // Lanes 2, 5, 8, 11, 14 hold a multiple of 3 (i + 1).
        assert_eq!(r[0].d, 0b0100_1001_0010_0100);
        let r = resolve(SyncOp::Activemask, group, &args);
        assert_eq!(r[15].d, 0xffff);
    }

    #[test]
    fn redux_match_elect() {
        let mut args = [[0u64; 4]; 32];
        for (i, a) in args.iter_mut().enumerate() {
            *a = [(i as i64 - 4) as u64 & 0xffff_ffff, 0xffff_ffff, 0, 0];
        }
        let sum = resolve(SyncOp::Redux(ReduxOp::Add, Type::U32), u32::MAX, &args);
        assert_eq!(sum[0].d, (0..32).map(|i| i - 4).sum::<i64>() as u64);
        let min = resolve(SyncOp::Redux(ReduxOp::Min, Type::S32), u32::MAX, &args);
        assert_eq!(min[0].d, (-4i32) as u32 as u64);
        let umin = resolve(SyncOp::Redux(ReduxOp::Min, Type::U32), u32::MAX, &args);
        assert_eq!(umin[0].d, 0);
        for (i, a) in args.iter_mut().enumerate() {
            a[0] = (i % 4) as u64;
        }
        let m = resolve(
            SyncOp::Match {
                all: false,
                ty: Type::B32,
            },
            u32::MAX,
            &args,
        );
        assert_eq!(m[5].d, 0x2222_2222);
        let e = resolve(SyncOp::Elect, 0xf0, &[[0xffff_ff00, 0, 0, 0]; 32]);
        assert_eq!((e[4].d, e[4].p, e[5].p), (0, false, false));
        let e = resolve(SyncOp::Elect, 0xf0, &[[0xffff_ffff, 0, 0, 0]; 32]);
        assert_eq!((e[4].d, e[4].p, e[5].p), (4, true, false));
    }
}
