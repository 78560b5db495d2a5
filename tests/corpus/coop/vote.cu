#include "coop.h"
// Warp votes in blocks whose last warp is partial. __activemask at entry, where the warp is
// converged and no lane has exited (the lanes that exist); ballot/any/all over the warp's
// lanes; the even and the odd lanes voting separately in the two sides of a branch; then
// lanes past n return and the rest vote with a full mask, which names lanes that have
// exited or do not exist (CUDA counts only the non-exited ones).
KERNEL vote(const uint32_t *in, uint32_t *out, unsigned n) {
  unsigned g = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned active = __activemask();
  unsigned lane = lane_id(), mask = warp_mask();
  uint32_t v = in[g];
  uint32_t *o = out + 8 * g;
  o[0] = active;
  o[1] = __ballot_sync(mask, v & 1);
  o[2] = __any_sync(mask, v % 21 == 0);
  o[3] = __all_sync(mask, v % 16 != 0);
  if (lane % 2 == 0)
    o[4] = __ballot_sync(mask & 0x55555555u, v & 2);
  else
    o[4] = __all_sync(mask & 0xaaaaaaaau, v & 4);
  if (g >= n) return;
  o[5] = __ballot_sync(0xffffffffu, v & 8);
  o[6] = __all_sync(0xffffffffu, v % 32 != 0);
  o[7] = __any_sync(0xffffffffu, v % 13 == 0);
}
