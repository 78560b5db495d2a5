#include "coop.h"
// A spin lock in shared memory taken by one thread per warp, which works however a warp's
// threads are scheduled (in lockstep too): for each input row the warp sums its lanes' 64-bit
// values by shuffle (as two 32-bit halves), then lane 0 alone spins on atomicCAS, adds the
// sum and bumps a count under the lock, and releases it with atomicExch.
KERNEL warp_lock(const uint64_t *in, uint64_t *out, unsigned reps) {
  __shared__ int lock;
  __shared__ uint64_t sum;
  __shared__ uint32_t count;
  unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  unsigned lane = lane_id(), lanes = warp_lanes(), mask = warp_mask();
  if (t == 0) {
    lock = 0;
    sum = 0;
    count = 0;
  }
  __syncthreads();
  for (unsigned r = 0; r < reps; r++) {
    uint64_t v = in[g * reps + r];
    uint32_t lo = (uint32_t)v, hi = (uint32_t)(v >> 32);
    for (unsigned d = 16; d > 0; d /= 2) {
      uint32_t olo = __shfl_down_sync(mask, lo, d), ohi = __shfl_down_sync(mask, hi, d);
      if (lane + d < lanes) {
        uint64_t s = ((uint64_t)hi << 32 | lo) + ((uint64_t)ohi << 32 | olo);
        lo = (uint32_t)s;
        hi = (uint32_t)(s >> 32);
      }
    }
    if (lane == 0) {
      while (atomicCAS(&lock, 0, 1) != 0) {
      }
      __threadfence_block();
      sum += (uint64_t)hi << 32 | lo;
      count += 1;
      __threadfence_block();
      atomicExch(&lock, 0);
    }
  }
  __syncthreads();
  if (t == 0) {
    out[2 * blockIdx.x] = sum;
    out[2 * blockIdx.x + 1] = count;
  }
}
