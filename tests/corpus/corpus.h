// Shared by the corpus kernels: the same source builds PTX (clang-16 -x cuda, device side)
// and a host program (g++, see host.cpp) that computes the expected outputs.
#pragma once
#include <stdint.h>
#ifdef __CUDA__
#define KERNEL extern "C" __attribute__((global)) void
#define DEVICE __attribute__((device))
#define TID_X __nvvm_read_ptx_sreg_tid_x()
#define TID_Y __nvvm_read_ptx_sreg_tid_y()
#define NTID_X __nvvm_read_ptx_sreg_ntid_x()
#define NTID_Y __nvvm_read_ptx_sreg_ntid_y()
#define CTAID_X __nvvm_read_ptx_sreg_ctaid_x()
#define CTAID_Y __nvvm_read_ptx_sreg_ctaid_y()
#define NCTAID_X __nvvm_read_ptx_sreg_nctaid_x()
#define NCTAID_Y __nvvm_read_ptx_sreg_nctaid_y()
#define SQRTF(x) __builtin_sqrtf(x)
#define SQRT(x) __builtin_sqrt(x)
#define FMAF(a, b, c) __builtin_fmaf(a, b, c)
#define FMA(a, b, c) __builtin_fma(a, b, c)
#define BREV32(x) __builtin_bitreverse32(x)
#define BREV64(x) __builtin_bitreverse64(x)
#define ATOMIC_ADD_F32(p, v) __atomic_fetch_add((p), (v), __ATOMIC_RELAXED)
#define ATOMIC_MIN(p, v) __atomic_fetch_min((p), (v), __ATOMIC_RELAXED)
#define ATOMIC_MAX(p, v) __atomic_fetch_max((p), (v), __ATOMIC_RELAXED)
#else
#include <math.h>
#define KERNEL extern "C" void
#define DEVICE
struct Dim3 { unsigned x, y, z; };
extern Dim3 host_tid, host_ntid, host_ctaid, host_nctaid;
#define TID_X host_tid.x
#define TID_Y host_tid.y
#define NTID_X host_ntid.x
#define NTID_Y host_ntid.y
#define CTAID_X host_ctaid.x
#define CTAID_Y host_ctaid.y
#define NCTAID_X host_nctaid.x
#define NCTAID_Y host_nctaid.y
#define SQRTF(x) sqrtf(x)
#define SQRT(x) sqrt(x)
#define FMAF(a, b, c) fmaf(a, b, c)
#define FMA(a, b, c) fma(a, b, c)
static inline uint64_t host_brev(uint64_t x, int bits) {
  uint64_t r = 0;
  for (int i = 0; i < bits; i++) r |= ((x >> i) & 1) << (bits - 1 - i);
  return r;
}
#define BREV32(x) ((uint32_t)host_brev((x), 32))
#define BREV64(x) host_brev((x), 64)
// The host runs one thread at a time; g++ has no float __atomic_fetch_add and no
// __atomic_fetch_min/max.
#define ATOMIC_ADD_F32(p, v) (*(p) += (v))
#define ATOMIC_MIN(p, v) (*(p) = (v) < *(p) ? (v) : *(p))
#define ATOMIC_MAX(p, v) (*(p) = (v) > *(p) ? (v) : *(p))
#endif
#define GLOBAL_X (CTAID_X * NTID_X + TID_X)
#define GLOBAL_Y (CTAID_Y * NTID_Y + TID_Y)
