#include "corpus.h"
// Conversions between integer widths, signedness, f32 and f64 (in-range values).
KERNEL convert(const float *f, const double *d, const int32_t *s, uint64_t *out) {
  unsigned i = GLOBAL_X;
  float x = f[i];
  double y = d[i];
  int32_t z = s[i];
  out[8 * i + 0] = (uint64_t)(int64_t)(int32_t)x;
  out[8 * i + 1] = (uint64_t)(int64_t)y;
  float fz = (float)z;
  double dz = (double)z;
  out[8 * i + 2] = *(uint32_t *)&fz;
  out[8 * i + 3] = *(uint64_t *)&dz;
  float fy = (float)y;
  out[8 * i + 4] = *(uint32_t *)&fy;
  double dx = (double)x;
  out[8 * i + 5] = *(uint64_t *)&dx;
  out[8 * i + 6] = (uint64_t)(int8_t)z + (uint64_t)(uint16_t)z;
  float fu = (float)(uint64_t)(z & 0x7fffffff) * 3.0f;
  out[8 * i + 7] = *(uint32_t *)&fu;
}
