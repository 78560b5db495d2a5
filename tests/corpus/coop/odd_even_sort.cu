#include "coop.h"
// Odd–even transposition sort of each block's 2 * blockDim.x values in shared memory: a
// barrier between the even and the odd phase, and the loop runs until __syncthreads_or says
// no thread swapped (a data-dependent trip count, the same for the whole block). Writes the
// sorted segments and each block's round count.
KERNEL odd_even_sort(const int32_t *in, int32_t *out, uint32_t *rounds, unsigned n) {
  __shared__ int32_t s[256];
  unsigned t = threadIdx.x, m = 2 * blockDim.x, base = blockIdx.x * m;
  for (unsigned j = t; j < m; j += blockDim.x) s[j] = base + j < n ? in[base + j] : 0x7fffffff;
  __syncthreads();
  unsigned r = 0;
  int swapped;
  do {
    swapped = 0;
    int32_t a = s[2 * t], b = s[2 * t + 1];
    if (a > b) {
      s[2 * t] = b;
      s[2 * t + 1] = a;
      swapped = 1;
    }
    __syncthreads();
    if (2 * t + 2 < m) {
      a = s[2 * t + 1];
      b = s[2 * t + 2];
      if (a > b) {
        s[2 * t + 1] = b;
        s[2 * t + 2] = a;
        swapped = 1;
      }
    }
    r++;
  } while (__syncthreads_or(swapped));
  for (unsigned j = t; j < m; j += blockDim.x)
    if (base + j < n) out[base + j] = s[j];
  if (t == 0) rounds[blockIdx.x] = r;
}
