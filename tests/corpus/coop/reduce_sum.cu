#include "coop.h"
// Tree reduction in shared memory: each block of a power-of-two size sums 2 * blockDim.x
// inputs (zero past n) with one barrier per halving, writes its sum, and adds it into a
// 64-bit grand total with a global atomic.
KERNEL reduce_sum(const uint32_t *in, uint32_t *block_sums, uint64_t *total, unsigned n) {
  __shared__ uint32_t s[256];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x * 2 + t;
  uint32_t v = i < n ? in[i] : 0;
  if (i + blockDim.x < n) v += in[i + blockDim.x];
  s[t] = v;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half >>= 1) {
    if (t < half) s[t] += s[t + half];
    __syncthreads();
  }
  if (t == 0) {
    block_sums[blockIdx.x] = s[0];
    atomicAdd(total, (uint64_t)s[0]);
  }
}
