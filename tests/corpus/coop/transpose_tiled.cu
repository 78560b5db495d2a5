#include "coop.h"
// Matrix transpose through a 32×33 shared tile (the padding column keeps a column read off
// one bank) with blocks of 32×8 threads, each moving four rows of the tile; ragged edges.
KERNEL transpose_tiled(const uint32_t *in, uint32_t *out, unsigned width, unsigned height) {
  __shared__ uint32_t tile[32][33];
  unsigned x = blockIdx.x * 32 + threadIdx.x, y0 = blockIdx.y * 32;
  for (unsigned j = threadIdx.y; j < 32; j += blockDim.y)
    if (x < width && y0 + j < height) tile[j][threadIdx.x] = in[(y0 + j) * width + x];
  __syncthreads();
  unsigned ox = blockIdx.y * 32 + threadIdx.x, oy0 = blockIdx.x * 32;
  for (unsigned j = threadIdx.y; j < 32; j += blockDim.y)
    if (ox < height && oy0 + j < width) out[(oy0 + j) * height + ox] = tile[threadIdx.x][j];
}
