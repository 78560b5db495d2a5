#include "coop.h"
// Hillis–Steele inclusive prefix sum of each block's inputs (any block size up to 128), in
// two shared buffers that swap roles each step; writes the scan and each block's total.
KERNEL scan_hillis(const uint32_t *in, uint32_t *out, uint32_t *block_totals, unsigned n) {
  __shared__ uint32_t buf[2][128];
  unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  int cur = 0;
  buf[0][t] = i < n ? in[i] : 0;
  __syncthreads();
  for (unsigned off = 1; off < blockDim.x; off <<= 1) {
    uint32_t v = buf[cur][t];
    if (t >= off) v += buf[cur][t - off];
    buf[1 - cur][t] = v;
    cur = 1 - cur;
    __syncthreads();
  }
  if (i < n) out[i] = buf[cur][t];
  if (t == blockDim.x - 1) block_totals[blockIdx.x] = buf[cur][t];
}
