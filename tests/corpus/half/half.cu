// Half-precision kernels as CUDA programs write them: cuda_fp16.h and cuda_bf16.h intrinsics,
// which NVRTC turns into PTX's half instructions (much of it through inline asm in those
// headers). Values travel as their bits (unsigned short / unsigned int) so the host side
// needs no half type. tests/half_corpus.rs runs every kernel on every engine and checks each
// result against rustc_apfloat.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

__device__ __half h(unsigned short bits) { return __ushort_as_half(bits); }
__device__ unsigned short bits(__half x) { return __half_as_ushort(x); }
__device__ __half2 h2(unsigned v) { return *reinterpret_cast<__half2 *>(&v); }
__device__ unsigned bits2(__half2 x) { return *reinterpret_cast<unsigned *>(&x); }
__device__ __nv_bfloat162 b2(unsigned v) { return *reinterpret_cast<__nv_bfloat162 *>(&v); }
__device__ unsigned bbits2(__nv_bfloat162 x) { return *reinterpret_cast<unsigned *>(&x); }

__device__ int index() { return blockIdx.x * blockDim.x + threadIdx.x; }

// Eight results per pair of halves: + - * fma(a, b, a) max min_nan (a < b) -a.
extern "C" __global__ void half_ops(const unsigned short *a, const unsigned short *b,
                                    unsigned short *out, int n) {
  int i = index();
  if (i >= n) return;
  __half x = h(a[i]), y = h(b[i]);
  unsigned short *o = out + 8 * i;
  o[0] = bits(__hadd(x, y));
  o[1] = bits(__hsub(x, y));
  o[2] = bits(__hmul(x, y));
  o[3] = bits(__hfma(x, y, x));
  o[4] = bits(__hmax(x, y));
  o[5] = bits(__hmin_nan(x, y));
  o[6] = __hlt(x, y) ? 1 : 0;
  o[7] = bits(__hneg(x));
}

// Packed pairs: d = fma(a, b, c) and its saturated form, per half.
extern "C" __global__ void half2_fma(const unsigned *a, const unsigned *b, const unsigned *c,
                                     unsigned *d, unsigned *sat, int n) {
  int i = index();
  if (i >= n) return;
  d[i] = bits2(__hfma2(h2(a[i]), h2(b[i]), h2(c[i])));
  sat[i] = bits2(__hfma2_sat(h2(a[i]), h2(b[i]), h2(c[i])));
}

// bfloat16 pairs: fma and max.
extern "C" __global__ void bf16x2_ops(const unsigned *a, const unsigned *b, const unsigned *c,
                                      unsigned *d, unsigned *mx, int n) {
  int i = index();
  if (i >= n) return;
  d[i] = bbits2(__hfma2(b2(a[i]), b2(b[i]), b2(c[i])));
  mx[i] = bbits2(__hmax2(b2(a[i]), b2(b[i])));
}

// Conversions from float in four roundings, to bfloat16, and back.
extern "C" __global__ void convert(const float *x, unsigned short *out, float *back, int n) {
  int i = index();
  if (i >= n) return;
  unsigned short *o = out + 6 * i;
  o[0] = bits(__float2half_rn(x[i]));
  o[1] = bits(__float2half_rz(x[i]));
  o[2] = bits(__float2half_rd(x[i]));
  o[3] = bits(__float2half_ru(x[i]));
  o[4] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
  o[5] = (unsigned short)__half2int_rn(__float2half_rn(x[i]));
  back[i] = __half2float(__float2half_rn(x[i]));
}

// A dot product of half pairs, each product widened to float and summed in order by one
// thread per row.
extern "C" __global__ void dot_rows(const unsigned *x, const unsigned *y, float *out, int len,
                                    int rows) {
  int r = index();
  if (r >= rows) return;
  float acc = 0.0f;
  for (int k = 0; k < len; k++) {
    float2 p = __half22float2(__hmul2(h2(x[r * len + k]), h2(y[r * len + k])));
    acc += p.x;
    acc += p.y;
  }
  out[r] = acc;
}
