#include "coop.h"
// C = A (m×k) · B (k×n) in 16×16 tiles staged through shared memory, with zero padding at
// the ragged edges. Each thread accumulates its element in the same order on every engine
// and on the host (no fused multiply-add on either side).
#define TILE 16
KERNEL matmul_tiled(const float *a, const float *b, float *c, int m, int n, int k) {
  __shared__ float ta[TILE][TILE], tb[TILE][TILE];
  int tx = threadIdx.x, ty = threadIdx.y;
  int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < k; k0 += TILE) {
    ta[ty][tx] = row < m && k0 + tx < k ? a[row * k + k0 + tx] : 0.0f;
    tb[ty][tx] = k0 + ty < k && col < n ? b[(k0 + ty) * n + col] : 0.0f;
    __syncthreads();
    for (int j = 0; j < TILE; j++) acc += ta[ty][j] * tb[j][tx];
    __syncthreads();
  }
  if (row < m && col < n) c[row * n + col] = acc;
}
