#include "coop.h"
// The sm_80 warp reductions (redux.sync): add, unsigned and signed min and max, and, or,
// xor over the warp's lanes in blocks with a partial last warp, then over two disjoint
// groups of lanes in the two sides of a branch.
KERNEL redux(const uint32_t *in, uint32_t *out) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = lane_id(), mask = warp_mask();
  uint32_t v = in[g];
  uint32_t *o = out + 9 * g;
  o[0] = __reduce_add_sync(mask, v);
  o[1] = __reduce_min_sync(mask, v);
  o[2] = __reduce_max_sync(mask, v);
  o[3] = (uint32_t)__reduce_min_sync(mask, (int)v);
  o[4] = (uint32_t)__reduce_max_sync(mask, (int)v);
  o[5] = __reduce_and_sync(mask, v | 0x0f0f0f0fu);
  o[6] = __reduce_or_sync(mask, v & 0x01010101u);
  o[7] = __reduce_xor_sync(mask, v);
  if (lane < 8)
    o[8] = (uint32_t)__reduce_add_sync(mask & 0xffu, (int)v >> 4);
  else
    o[8] = (uint32_t)__reduce_max_sync(mask & ~0xffu, (int)(v << 8));
}
