#include "corpus.h"
// popc, clz, brev, bfe-style extracts, funnel rotates and byte permutes on 32/64-bit words.
KERNEL bitops(const uint32_t *in, uint32_t *out) {
  unsigned i = GLOBAL_X;
  uint32_t x = in[i];
  uint64_t y = ((uint64_t)x << 32) | in[i ^ 1];
  out[8 * i + 0] = __builtin_popcount(x) + __builtin_popcountll(y);
  out[8 * i + 1] = x ? __builtin_clz(x) : 32;
  out[8 * i + 2] = BREV32(x);
  out[8 * i + 3] = (x >> 7) & 0x3ff;
  out[8 * i + 4] = (x << 13) | (x >> 19);
  out[8 * i + 5] = (uint32_t)((y << 21) | (y >> 43));
  out[8 * i + 6] = __builtin_bswap32(x);
  out[8 * i + 7] = (uint32_t)BREV64(y) ^ (uint32_t)(y ? __builtin_clzll(y) : 64);
}
