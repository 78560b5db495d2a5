#include "corpus.h"
// Montgomery multiplication on 4 x 64-bit limbs (CIOS), repeated: each thread squares its
// number `iters` times modulo `mod[0..4]` (odd, below 2^255), `mod[4]` = -mod^-1 mod 2^64.
// 64 x 64 -> 128-bit products and carries through unsigned __int128; the multiplier's limbs
// are a small local array read at a loop index.
typedef unsigned __int128 u128;

DEVICE static void mont_mul(uint64_t *r, const uint64_t *a, const uint64_t *b,
                            const uint64_t *p, uint64_t pinv) {
  uint64_t t[6] = {0, 0, 0, 0, 0, 0};
#pragma unroll 1
  for (int i = 0; i < 4; i++) {
    u128 c = 0;
    for (int j = 0; j < 4; j++) {
      c += (u128)a[j] * b[i] + t[j];
      t[j] = (uint64_t)c;
      c >>= 64;
    }
    c += t[4];
    t[4] = (uint64_t)c;
    t[5] = (uint64_t)(c >> 64);
    uint64_t m = t[0] * pinv;
    c = ((u128)m * p[0] + t[0]) >> 64;
    for (int j = 1; j < 4; j++) {
      c += (u128)m * p[j] + t[j];
      t[j - 1] = (uint64_t)c;
      c >>= 64;
    }
    c += t[4];
    t[3] = (uint64_t)c;
    t[4] = t[5] + (uint64_t)(c >> 64);
  }
  // t < 2p: subtract p once if t >= p.
  uint64_t s[4];
  u128 borrow = 0;
  for (int j = 0; j < 4; j++) {
    u128 d = (u128)t[j] - p[j] - borrow;
    s[j] = (uint64_t)d;
    borrow = (d >> 64) & 1;
  }
  bool keep = t[4] == 0 && borrow;
  for (int j = 0; j < 4; j++) r[j] = keep ? t[j] : s[j];
}

KERNEL mont64(const uint64_t *in, uint64_t *out, const uint64_t *mod, unsigned iters) {
  unsigned i = GLOBAL_X;
  uint64_t x[4], y[4];
  for (int j = 0; j < 4; j++) x[j] = in[4 * i + j];
  for (unsigned k = 0; k < iters; k++) {
    mont_mul(y, x, x, mod, mod[4]);
    for (int j = 0; j < 4; j++) x[j] = y[j];
  }
  for (int j = 0; j < 4; j++) out[4 * i + j] = x[j];
}
