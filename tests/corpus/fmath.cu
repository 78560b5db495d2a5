#include "corpus.h"
// Float math: sqrt, division, fma, fmin/fmax, fabs, negation in f32 and f64.
KERNEL fmath(const float *a, const float *b, const double *c, float *of, double *od) {
  unsigned i = GLOBAL_X;
  float x = a[i], y = b[i];
  double z = c[i];
  of[4 * i + 0] = SQRTF(__builtin_fabsf(x)) / (y == 0.0f ? 1.0f : y);
  of[4 * i + 1] = __builtin_fminf(x, y) - __builtin_fmaxf(x, -y);
  of[4 * i + 2] = FMAF(x, y, -x);
  of[4 * i + 3] = x * y - 1.5f;
  od[2 * i + 0] = SQRT(__builtin_fabs(z)) + z / 3.0;
  od[2 * i + 1] = FMA(z, (double)x, (double)y) * __builtin_fmax(z, 0.25);
}
