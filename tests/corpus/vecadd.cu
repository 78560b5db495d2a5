#include "corpus.h"
// Element-wise float addition, 1D grid with a bounds guard.
KERNEL vecadd(const float *a, const float *b, float *c, int n) {
  int i = GLOBAL_X;
  if (i < n) c[i] = a[i] + b[i];
}
