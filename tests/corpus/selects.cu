#include "corpus.h"
// Branch-free selects, min/max, abs, signed/unsigned compares.
KERNEL selects(const int32_t *a, const int32_t *b, int32_t *out) {
  unsigned i = GLOBAL_X;
  int32_t x = a[i], y = b[i];
  out[5 * i + 0] = x < y ? x : y;
  out[5 * i + 1] = (unsigned)x > (unsigned)y ? x : y;
  out[5 * i + 2] = x < 0 ? -x : x;
  out[5 * i + 3] = (x == y) + 2 * (x != 0) + 4 * (y >= 0);
  out[5 * i + 4] = (x > 100) ? y * 3 : y - x;
}
