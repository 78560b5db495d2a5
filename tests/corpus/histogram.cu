#include "corpus.h"
// Atomics as a C compiler emits them (relaxed GCC/Clang builtins: clang's NVPTX backend turns
// them into atom.* and a CAS loop; g++ into host atomics): a histogram, the sum, minimum,
// maximum and bitwise or of the values, the float sum of small values (exact in any order),
// and a float maximum by compare-and-swap. Each result is the same in any thread order.
KERNEL histogram(const uint32_t *data, uint32_t *bins, uint64_t *sum, int32_t *minmax,
                 uint32_t *bits, float *fsum, float *fmax, int n) {
  int i = GLOBAL_X;
  if (i >= n) return;
  uint32_t v = data[i];
  __atomic_fetch_add(&bins[v % 16], 1u, __ATOMIC_RELAXED);
  __atomic_fetch_add(sum, (uint64_t)v * 3, __ATOMIC_RELAXED);
  int32_t s = (int32_t)v >> 7;
  ATOMIC_MIN(&minmax[0], s);
  ATOMIC_MAX(&minmax[1], s);
  __atomic_fetch_or(&bits[0], 1u << (v % 32), __ATOMIC_RELAXED);
  __atomic_fetch_xor(&bits[1], v, __ATOMIC_RELAXED);
  __atomic_fetch_and(&bits[2], v | 0x0f0f0f0fu, __ATOMIC_RELAXED);
  float f = (float)(v % 1000) - 500.0f;
  ATOMIC_ADD_F32(fsum, f);
  // The float maximum through its bits: retry while f is larger than what is there.
  uint32_t *max_bits = (uint32_t *)fmax;
  uint32_t seen = __atomic_load_n(max_bits, __ATOMIC_RELAXED);
  while (f > __builtin_bit_cast(float, seen) &&
         !__atomic_compare_exchange_n(max_bits, &seen, __builtin_bit_cast(uint32_t, f), false,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
