#include "coop.h"
// A spin lock in shared memory (atomicCAS takes it, atomicExch gives it back) guarding plain
// read-modify-writes of shared totals; every thread takes it once per input, so the threads
// of a warp contend with each other. The source has the winner of the compare-and-swap do
// its update and release inside the same loop iteration, but NVVM turns that into a plain
// `while (atomicCAS(...)) {}` loop before the update, so this kernel needs what the
// programming guide promises since Volta: a lane that holds the lock runs on while others of
// its warp spin (independent thread scheduling, or running each thread until it blocks).
// warp_lock.cu has the form that also works when a warp's threads run in lockstep. The
// totals (sum, count, maximum, xor of hashes) do not depend on the order of the updates.
KERNEL spin_lock(const uint32_t *in, uint64_t *out, unsigned reps) {
  __shared__ int lock;
  __shared__ uint64_t sum;
  __shared__ uint32_t count, max, hash;
  unsigned t = threadIdx.x, g = blockIdx.x * blockDim.x + t;
  if (t == 0) {
    lock = 0;
    sum = 0;
    count = max = hash = 0;
  }
  __syncthreads();
  for (unsigned r = 0; r < reps; r++) {
    uint32_t v = in[g * reps + r];
    bool done = false;
    while (!done) {
      if (atomicCAS(&lock, 0, 1) == 0) {
        __threadfence_block();
        sum += v;
        count += 1;
        if (v > max) max = v;
        hash ^= v * 2654435761u;
        __threadfence_block();
        atomicExch(&lock, 0);
        done = true;
      }
    }
  }
  __syncthreads();
  if (t == 0) {
    uint64_t *o = out + 3 * blockIdx.x;
    o[0] = sum;
    o[1] = (uint64_t)max << 32 | count;
    o[2] = hash;
  }
}
