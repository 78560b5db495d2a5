#include "corpus.h"
// High halves of 32- and 64-bit products, widening multiplies, mad.
KERNEL mulhi(const uint32_t *a, const uint32_t *b, uint64_t *out) {
  unsigned i = GLOBAL_X;
  uint32_t x = a[i], y = b[i];
  uint64_t w = (uint64_t)x * y;
  out[4 * i + 0] = w >> 32;
  out[4 * i + 1] = (uint64_t)(((int64_t)(int32_t)x * (int32_t)y) >> 32);
  uint64_t p = w * 0x9e3779b97f4a7c15ull + x;
  out[4 * i + 2] = (uint64_t)(((unsigned __int128)p * w) >> 64);
  out[4 * i + 3] = (uint64_t)(((__int128)(int64_t)p * (int64_t)w) >> 64);
}
