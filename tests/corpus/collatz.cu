#include "corpus.h"
// Collatz stopping times: data-dependent loop trip counts and branches.
KERNEL collatz(const uint32_t *start, uint32_t *steps, unsigned n) {
  unsigned i = GLOBAL_X;
  if (i >= n) return;
  uint64_t x = start[i];
  uint32_t s = 0;
  while (x > 1 && s < 1000) {
    x = (x & 1) ? 3 * x + 1 : x >> 1;
    s++;
  }
  steps[i] = s;
}
