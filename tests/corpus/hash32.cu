#include "corpus.h"
// A 32-bit hash loop (murmur3's block and finalisation steps) over a table of words:
// constant shifts, rotates written as shift pairs, multiplies by constants, an int index.
KERNEL hash32(const uint32_t *data, uint32_t *out, unsigned len, unsigned seed) {
  int i = GLOBAL_X;
  uint32_t h = seed ^ (uint32_t)i;
  for (unsigned j = 0; j < len; j++) {
    uint32_t k = data[(j + (unsigned)i) & 255] * 0xcc9e2d51u;
    k = (k << 15) | (k >> 17);
    h ^= k * 0x1b873593u;
    h = (h << 13) | (h >> 19);
    h = h * 5 + 0xe6546b64u;
  }
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  out[i] = h;
}
