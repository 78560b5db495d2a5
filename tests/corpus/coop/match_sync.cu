#include "coop.h"
// __match_any_sync and __match_all_sync on 32- and 64-bit keys in blocks with a partial last
// warp; then lanes past n return and the rest match with a full mask, which names lanes that
// have exited or do not exist (only the non-exited ones take part).
KERNEL match_sync(const uint32_t *keys, const uint64_t *keys64, uint32_t *out, unsigned n) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned mask = warp_mask();
  uint32_t k = keys[g];
  uint64_t k64 = keys64[g];
  uint32_t *o = out + 6 * g;
  o[0] = __match_any_sync(mask, k % 5);
  o[1] = __match_any_sync(mask, k64);
  int pred = 7;
  o[2] = __match_all_sync(mask, k >> 8, &pred);
  o[3] = pred;
  if (g >= n) return;
  o[4] = __match_any_sync(0xffffffffu, k % 3);
  o[5] = __match_all_sync(0xffffffffu, k64 >> 40, &pred) ^ (uint32_t)pred << 31;
}
