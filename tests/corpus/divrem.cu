#include "corpus.h"
// Signed and unsigned 32/64-bit division and remainder (divisors are never zero here).
KERNEL divrem(const int32_t *a, const int32_t *b, const int64_t *c, const int64_t *d, int64_t *out) {
  unsigned i = GLOBAL_X;
  int32_t x = a[i], y = b[i];
  int64_t u = c[i], v = d[i];
  out[6 * i + 0] = x / y;
  out[6 * i + 1] = x % y;
  out[6 * i + 2] = (uint32_t)x / (uint32_t)y;
  out[6 * i + 3] = (uint32_t)x % (uint32_t)y;
  out[6 * i + 4] = u / v + u % v;
  out[6 * i + 5] = (int64_t)((uint64_t)u / (uint64_t)v ^ (uint64_t)u % (uint64_t)v);
}
