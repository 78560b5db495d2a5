// Shared by the cooperative corpus kernels. Each kernel is plain CUDA: NVRTC compiles it
// to PTX (regen.py), and g++ builds the same source into host.cpp, which runs every block's
// threads as real threads and emulates barriers, warp intrinsics and shared memory (the
// expected outputs). This header gives both sides the same names.
#pragma once
#if defined(__CUDACC__)
// NVRTC has no <stdint.h>.
typedef unsigned char uint8_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
#define KERNEL extern "C" __global__ void
// The dynamically sized shared array of a launch (LaunchConfig::shared_bytes).
#define DYNAMIC_SHARED(T, name) extern __shared__ T name[]
#else
#include <cstdint>
#include "host_cuda.h"
#define KERNEL extern "C" void
#define DYNAMIC_SHARED(T, name) T *name = reinterpret_cast<T *>(host_dynamic_shared)
#endif

// The thread's index in its block, x fastest (as warps are formed), its warp and lane.
__device__ __forceinline__ unsigned linear_tid() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
__device__ __forceinline__ unsigned block_threads() { return blockDim.x * blockDim.y * blockDim.z; }
__device__ __forceinline__ unsigned lane_id() { return linear_tid() % 32; }
__device__ __forceinline__ unsigned warp_id() { return linear_tid() / 32; }
// How many lanes the thread's warp has (fewer than 32 in the last warp of a block whose size
// is not a multiple of 32), and the mask of those lanes.
__device__ __forceinline__ unsigned warp_lanes() {
  unsigned rest = block_threads() - warp_id() * 32;
  return rest < 32 ? rest : 32;
}
__device__ __forceinline__ unsigned warp_mask() {
  unsigned n = warp_lanes();
  return n == 32 ? 0xffffffffu : (1u << n) - 1;
}
