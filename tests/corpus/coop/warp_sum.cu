#include "coop.h"
// Warp-shuffle reduction: each warp sums its 32 inputs (zero past n) with a down-shuffle
// tree, and lane 0 writes the warp's sum. Blocks are whole warps.
KERNEL warp_sum(const uint32_t *in, uint32_t *warp_sums, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t v = i < n ? in[i] : 0;
  for (unsigned d = 16; d > 0; d /= 2) v += __shfl_down_sync(0xffffffffu, v, d);
  if (lane_id() == 0) warp_sums[i / 32] = v;
}
