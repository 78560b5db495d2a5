#include "corpus.h"
// Mandelbrot escape counts on a 2D grid: float loop with a data-dependent exit.
KERNEL mandel(uint32_t *out, unsigned w, unsigned h, int maxit) {
  unsigned px = GLOBAL_X, py = GLOBAL_Y;
  if (px >= w || py >= h) return;
  float cr = -2.0f + 3.0f * px / w, ci = -1.25f + 2.5f * py / h;
  float zr = 0.0f, zi = 0.0f;
  int it = 0;
  while (it < maxit && zr * zr + zi * zi <= 4.0f) {
    float t = zr * zr - zi * zi + cr;
    zi = 2.0f * zr * zi + ci;
    zr = t;
    it++;
  }
  out[py * w + px] = it;
}
