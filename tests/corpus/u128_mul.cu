#include "corpus.h"
// unsigned __int128 arithmetic: 64x64->128 products, 128-bit adds, shifts and compares,
// through a non-inlined device function (a PTX .func call).
DEVICE __attribute__((noinline)) unsigned __int128 mulacc(unsigned __int128 acc, uint64_t a, uint64_t b) {
  return acc + (unsigned __int128)a * b;
}
KERNEL u128_mul(const uint64_t *a, const uint64_t *b, uint64_t *out, int n) {
  int i = GLOBAL_X;
  if (i >= n) return;
  unsigned __int128 acc = 0;
  for (int k = 0; k < 4; k++) acc = mulacc(acc, a[i] + k, b[i] ^ k);
  unsigned __int128 m = (unsigned __int128)0x9e3779b97f4a7c15ull << 3;
  if (acc > m) acc -= m; else acc = (acc << 7) | (acc >> 121);
  out[2 * i] = (uint64_t)acc;
  out[2 * i + 1] = (uint64_t)(acc >> 64);
}
