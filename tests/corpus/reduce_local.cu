#include "corpus.h"
// Per-thread histogram in a local array, then a weighted sum; double accumulation.
KERNEL reduce_local(const uint8_t *in, double *out, unsigned per_thread) {
  unsigned i = GLOBAL_X;
  unsigned hist[8] = {0};
  for (unsigned j = 0; j < per_thread; j++) hist[in[i * per_thread + j] & 7]++;
  double s = 0.0;
  for (int k = 0; k < 8; k++) s += hist[k] * (k + 0.5);
  out[i] = s / per_thread;
}
