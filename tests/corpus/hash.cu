#include "corpus.h"
// A few rounds of a 64-bit mixing hash (xorshift-multiply), rotations, byte loads.
DEVICE __attribute__((noinline)) uint64_t mix(uint64_t h, uint64_t k) {
  k *= 0x87c37b91114253d5ull;
  k = (k << 31) | (k >> 33);
  h ^= k * 0x4cf5ad432745937full;
  return ((h << 27) | (h >> 37)) * 5 + 0x52dce729;
}
KERNEL hash(const uint8_t *data, uint64_t *out, unsigned len) {
  unsigned i = GLOBAL_X;
  uint64_t h = i;
  for (unsigned j = 0; j < len; j++) h = mix(h, data[(i * 7 + j) % 256]);
  h ^= h >> 33;
  out[i] = h;
}
