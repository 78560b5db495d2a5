#include "coop.h"
// Blelloch's work-efficient exclusive prefix sum: each block (a power of two, up to 128
// threads) scans 2 * blockDim.x 64-bit elements in shared memory, an up-sweep building
// partial sums in a tree and a down-sweep pushing prefixes back down; writes the scan and
// each block's total.
KERNEL scan_blelloch(const uint64_t *in, uint64_t *out, uint64_t *block_totals, unsigned n) {
  __shared__ uint64_t s[256];
  unsigned t = threadIdx.x, m = 2 * blockDim.x, base = blockIdx.x * m;
  s[2 * t] = base + 2 * t < n ? in[base + 2 * t] : 0;
  s[2 * t + 1] = base + 2 * t + 1 < n ? in[base + 2 * t + 1] : 0;
  unsigned stride = 1;
  for (unsigned d = m / 2; d > 0; d /= 2) {
    __syncthreads();
    if (t < d) s[stride * (2 * t + 2) - 1] += s[stride * (2 * t + 1) - 1];
    stride *= 2;
  }
  if (t == 0) {
    block_totals[blockIdx.x] = s[m - 1];
    s[m - 1] = 0;
  }
  for (unsigned d = 1; d < m; d *= 2) {
    stride /= 2;
    __syncthreads();
    if (t < d) {
      unsigned a = stride * (2 * t + 1) - 1, b = stride * (2 * t + 2) - 1;
      uint64_t left = s[a];
      s[a] = s[b];
      s[b] += left;
    }
  }
  __syncthreads();
  if (base + 2 * t < n) out[base + 2 * t] = s[2 * t];
  if (base + 2 * t + 1 < n) out[base + 2 * t + 1] = s[2 * t + 1];
}
