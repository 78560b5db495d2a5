#include "coop.h"
// Warp reductions by shuffle, in blocks whose last warp may be partial (its lanes are the
// only ones in the mask, and a lane ignores what it reads from a lane that does not exist).
// Per thread: a down-shuffle tree (lane 0 ends with the warp's sum, other lanes with
// partial sums), an 8-wide xor butterfly, a guarded 32-wide xor butterfly, an 8-wide
// down-shuffle tree that relies on the rule that a source past the segment gives the lane
// its own value, and 64-bit shuffles (each two 32-bit shuffles in PTX) of a long long
// (xor) and a double (16-wide down tree, also clamped).
KERNEL shfl_reduce(const uint32_t *in, const double *din, uint32_t *out, uint64_t *out64,
                   double *dout) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned lane = lane_id(), lanes = warp_lanes(), mask = warp_mask();
  uint32_t v = in[g];

  uint32_t down = v;
  for (unsigned d = 16; d > 0; d /= 2) {
    uint32_t o = __shfl_down_sync(mask, down, d);
    if (lane + d < lanes) down += o;
  }
  uint32_t bfly8 = v;
  for (int d = 4; d > 0; d /= 2) bfly8 += __shfl_xor_sync(mask, bfly8, d, 8);
  uint32_t bfly = v;
  for (unsigned d = 1; d < 32; d *= 2) {
    uint32_t o = __shfl_xor_sync(mask, bfly, d);
    if ((lane ^ d) < lanes) bfly += o;
  }
  uint32_t clamped = v;
  for (unsigned d = 1; d < 8; d *= 2) clamped += __shfl_down_sync(mask, clamped, d, 8);

  long long wide = (long long)(v * 0x100000001ull - g);
  for (unsigned d = 1; d < 32; d *= 2) {
    long long o = __shfl_xor_sync(mask, wide, d);
    if ((lane ^ d) < lanes) wide ^= (long long)((uint64_t)o * 3);
  }
  double x = din[g];
  for (unsigned d = 8; d > 0; d /= 2) x += 0.5 * __shfl_down_sync(mask, x, d, 16);

  out[4 * g + 0] = down;
  out[4 * g + 1] = bfly8;
  out[4 * g + 2] = bfly;
  out[4 * g + 3] = clamped;
  out64[g] = (uint64_t)wide;
  dout[g] = x;
}
