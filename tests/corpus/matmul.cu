#include "corpus.h"
// Naive float matrix product on a 2D grid: C[n x n] = A * B.
KERNEL matmul(const float *A, const float *B, float *C, int n) {
  int row = GLOBAL_Y, col = GLOBAL_X;
  if (row >= n || col >= n) return;
  float acc = 0.0f;
  for (int k = 0; k < n; k++) acc += A[row * n + k] * B[k * n + col];
  C[row * n + col] = acc;
}
