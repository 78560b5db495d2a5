#include "coop.h"
// Warp scans and lane exchanges by shuffle, in 2-D blocks whose warps span rows (lanes are
// numbered x fastest) and whose last warp may be partial. Per thread: a 32-wide inclusive
// scan (up-shuffles), an 8-wide one, the warp total broadcast from the warp's last lane,
// an idx shuffle from lanes beyond the width (taken modulo the width; a negative lane
// reverses the warp), an 8-wide rotation, a block-wide scan from the warp scans (warp totals
// through shared memory, scanned by warp 0), and a neighbour's value through shared memory
// after __syncwarp.
KERNEL shfl_scan(const uint32_t *in, uint32_t *out) {
  __shared__ uint32_t warp_totals[32];
  __shared__ uint32_t staged[1024];
  unsigned t = linear_tid(), g = blockIdx.x * block_threads() + t;
  unsigned lane = lane_id(), lanes = warp_lanes(), mask = warp_mask();
  unsigned warps = (block_threads() + 31) / 32;
  uint32_t v = in[g];

  uint32_t scan = v;
  for (unsigned d = 1; d < 32; d *= 2) {
    uint32_t o = __shfl_up_sync(mask, scan, d);
    if (lane >= d) scan += o;
  }
  uint32_t scan8 = v;
  for (unsigned d = 1; d < 8; d *= 2) {
    uint32_t o = __shfl_up_sync(mask, scan8, d, 8);
    if (lane % 8 >= d) scan8 += o;
  }
  uint32_t total = __shfl_sync(mask, scan, lanes - 1);
  int src = lanes == 32 ? (lane % 2 ? -(int)lane - 1 : (int)lane * 7 + 3) : (lane * 7 + 3) % lanes;
  uint32_t gathered = __shfl_sync(mask, v, src);
  uint32_t rotated = __shfl_sync(mask, v, lane + 3, 8);

  if (lane == lanes - 1) warp_totals[warp_id()] = scan;
  __syncthreads();
  if (warp_id() == 0) {
    uint32_t w = lane < warps ? warp_totals[lane] : 0;
    for (unsigned d = 1; d < 32; d *= 2) {
      uint32_t o = __shfl_up_sync(0xffffffffu, w, d);
      if (lane >= d) w += o;
    }
    if (lane < warps) warp_totals[lane] = w;
  }
  __syncthreads();
  uint32_t block_scan = scan + (warp_id() > 0 ? warp_totals[warp_id() - 1] : 0);

  staged[t] = v * 3;
  __syncwarp(mask);
  uint32_t neighbour = staged[t - lane + (lane + 1) % lanes];

  uint32_t *o = out + 7 * g;
  o[0] = scan;
  o[1] = scan8;
  o[2] = total;
  o[3] = gathered;
  o[4] = rotated;
  o[5] = block_scan;
  o[6] = neighbour;
}
