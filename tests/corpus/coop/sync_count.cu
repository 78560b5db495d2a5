#include "coop.h"
// The barrier reductions __syncthreads_count, _and and _or in blocks with a partial last
// warp; every thread writes what it got (all of a block's threads get the same).
KERNEL sync_count(const uint32_t *in, uint32_t *out, unsigned n) {
  unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  uint32_t v = g < n ? in[g] : 0;
  uint32_t *o = out + 4 * g;
  o[0] = __syncthreads_count(v & 1);
  o[1] = __syncthreads_and(v != 0);
  o[2] = __syncthreads_or(v == 0xffffffffu);
  o[3] = __syncthreads_count(t < v % 128);
}
