#include "corpus.h"
// Strided gather over a large index space: 64-bit pointer arithmetic and 64-bit loads.
KERNEL gather(const uint64_t *table, const uint32_t *idx, uint64_t *out, uint64_t stride, unsigned n) {
  unsigned i = GLOBAL_X;
  if (i >= n) return;
  const uint64_t *p = table + (uint64_t)idx[i] * stride;
  out[i] = p[0] + (p[1] << 1);
}
