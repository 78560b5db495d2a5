#include "corpus.h"
// 5-point integer stencil on a 2D grid with clamped borders and a local scratch array.
KERNEL stencil(const int32_t *in, int32_t *out, int w, int h) {
  int x = GLOBAL_X, y = GLOBAL_Y;
  if (x >= w || y >= h) return;
  int dx[5] = {0, 1, -1, 0, 0}, dy[5] = {0, 0, 0, 1, -1};
  volatile int acc[5];
  for (int k = 0; k < 5; k++) {
    int xx = x + dx[k], yy = y + dy[k];
    xx = xx < 0 ? 0 : (xx >= w ? w - 1 : xx);
    yy = yy < 0 ? 0 : (yy >= h ? h - 1 : yy);
    acc[k] = in[yy * w + xx];
  }
  out[y * w + x] = 4 * acc[0] - acc[1] - acc[2] - acc[3] - acc[4];
}
