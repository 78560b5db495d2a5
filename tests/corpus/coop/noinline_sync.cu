#include "coop.h"
// Device functions the compiler keeps as calls (__noinline__, as debug builds keep every
// function) with barriers and warp shuffles inside, called in a loop: a block's tree sum
// through shared memory passed by pointer, and a warp's maximum by butterfly shuffles.
__device__ __noinline__ uint32_t block_sum(uint32_t *s, uint32_t v) {
  unsigned t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  uint32_t r = s[0];
  __syncthreads();
  return r;
}

__device__ __noinline__ uint32_t warp_max(uint32_t v) {
  for (int d = 16; d > 0; d /= 2) {
    uint32_t o = __shfl_xor_sync(0xffffffffu, v, d);
    v = o > v ? o : v;
  }
  return v;
}

KERNEL noinline_sync(const uint32_t *in, uint32_t *out, unsigned rounds) {
  __shared__ uint32_t s[256];
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t v = in[g], acc = 0;
  for (unsigned r = 0; r < rounds; r++) {
    acc += block_sum(s, v ^ r);
    acc ^= warp_max(v + r) * (r + 1);
  }
  out[g] = acc;
}
