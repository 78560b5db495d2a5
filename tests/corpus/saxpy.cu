#include "corpus.h"
// y = a*x + y with an explicit fused multiply-add (fma.rn.f32).
KERNEL saxpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = GLOBAL_X;
  if (i < n) y[i] = FMAF(a, x[i], y[i]);
}
