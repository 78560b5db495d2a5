#include "coop.h"
// A 64-bin histogram per block in shared memory (shared atomics, grid-stride loop over the
// data), merged into the global bins with global atomics; also the block's maximum value
// (shared atomicMax) and the or of all values (shared atomicOr, then global atomicOr).
KERNEL histogram_shared(const uint32_t *data, uint32_t *bins, uint32_t *block_max,
                        uint32_t *all_or, unsigned n) {
  __shared__ uint32_t sbins[64];
  __shared__ uint32_t smax, sor;
  unsigned t = threadIdx.x;
  for (unsigned b = t; b < 64; b += blockDim.x) sbins[b] = 0;
  if (t == 0) {
    smax = 0;
    sor = 0;
  }
  __syncthreads();
  for (unsigned i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) {
    uint32_t v = data[i];
    atomicAdd(&sbins[v % 64], 1u);
    atomicMax(&smax, v);
    atomicOr(&sor, 1u << (v / 64 % 32));
  }
  __syncthreads();
  for (unsigned b = t; b < 64; b += blockDim.x)
    if (sbins[b]) atomicAdd(&bins[b], sbins[b]);
  if (t == 0) {
    block_max[blockIdx.x] = smax;
    atomicOr(all_or, sor);
  }
}
