#include "coop.h"
// Dynamic shared memory (`extern __shared__`, sized by the launch) next to a static shared
// counter: each block stages `items` 64-bit inputs, then combines each with its mirror image
// in the block's segment, counting odd results with a shared atomic.
KERNEL dyn_shared(const uint64_t *in, uint64_t *out, uint32_t *odd_counts, unsigned items,
                  unsigned n) {
  DYNAMIC_SHARED(uint64_t, buf);
  __shared__ uint32_t odd;
  unsigned t = threadIdx.x, base = blockIdx.x * items;
  if (t == 0) odd = 0;
  for (unsigned j = t; j < items; j += blockDim.x) buf[j] = base + j < n ? in[base + j] : 0;
  __syncthreads();
  for (unsigned j = t; j < items; j += blockDim.x) {
    uint64_t v = buf[items - 1 - j] ^ (buf[j] << 1);
    if (base + j < n) out[base + j] = v;
    if (v & 1) atomicAdd(&odd, 1u);
  }
  __syncthreads();
  if (t == 0) odd_counts[blockIdx.x] = odd;
}
