#include "corpus.h"
// Each thread sorts 16 values in a local array (insertion sort): __local_depot, dynamic indexing.
KERNEL local_sort(const int *in, int *out) {
  int v[16];
  unsigned base = GLOBAL_X * 16;
  for (int i = 0; i < 16; i++) v[i] = in[base + i];
  for (int i = 1; i < 16; i++) {
    int x = v[i];
    int j = i - 1;
    while (j >= 0 && v[j] > x) { v[j + 1] = v[j]; j--; }
    v[j + 1] = x;
  }
  for (int i = 0; i < 16; i++) out[base + i] = v[i];
}
