#include "corpus.h"
// 2D transpose of a w x h u32 matrix, 64-bit index arithmetic.
KERNEL transpose(const uint32_t *in, uint32_t *out, unsigned w, unsigned h) {
  unsigned x = GLOBAL_X, y = GLOBAL_Y;
  if (x < w && y < h) out[(uint64_t)x * h + y] = in[(uint64_t)y * w + x];
}
