// Host emulation of the CUDA names the cooperative kernels use (included by coop.h when g++
// builds a kernel into host.cpp). Written from the CUDA C++ Programming Guide, independently
// of ptxjit: it is the reference the engines are compared with.
//
// host.cpp runs the blocks of a launch one after another, the threads of a block as real
// std::threads. So:
//   - __shared__ variables are function-local statics (one copy, used by one block at a
//     time), placed in the section `coop_shared` that host.cpp fills with a poison pattern
//     before each block, as is the dynamic shared buffer: reading shared memory nobody wrote
//     gives a recognisable garbage value rather than the previous block's data;
//   - __syncthreads is a std::barrier over the block's threads; its _count/_and/_or forms
//     add the predicate to a counter before the barrier and read it after;
//   - a warp intrinsic is a rendezvous of the lanes its mask names (those that have not
//     exited), computed once all of them have arrived with the Guide's rules;
//   - atomics are std::atomic_ref operations (sequentially consistent, which is stronger
//     than CUDA asks).
#pragma once
#include <algorithm>
#include <atomic>
#include <barrier>
#include <bit>
#include <condition_variable>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>
#include <type_traits>
#include <unistd.h>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
using uint3 = dim3;
inline thread_local dim3 threadIdx;
inline dim3 blockIdx, blockDim, gridDim;
constexpr int warpSize = 32;

#define __global__
#define __device__
#define __forceinline__ inline
// Empty: the host build needs no call kept (and the name appears in system headers).
#define __noinline__
#define __shared__ static __attribute__((section("coop_shared")))

// The launch's dynamic shared memory (host.cpp allocates it, 16-byte aligned).
inline unsigned char *host_dynamic_shared;

// Which thread is running, for messages.
inline void host_where(FILE *f) {
  fprintf(f, "block (%u,%u,%u) thread (%u,%u,%u): ", blockIdx.x, blockIdx.y, blockIdx.z,
          threadIdx.x, threadIdx.y, threadIdx.z);
}

// A kernel did something whose result CUDA leaves undefined (so the corpus must not).
[[noreturn]] inline void host_fail(const char *fmt, ...) {
  host_where(stderr);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  _exit(3);
}

// ---- __syncthreads and its reductions ------------------------------------------------------

struct HostBarrierDone {
  void operator()() noexcept;
};

// One block's barrier. A thread that has passed k barriers adds its predicate to
// count[k % 2]; the barrier's completion step for phase k clears count[(k + 1) % 2], which
// every thread has finished reading (they read it before arriving at barrier k).
struct HostBlock {
  explicit HostBlock(unsigned threads) : bar(threads, HostBarrierDone{}) {}
  std::barrier<HostBarrierDone> bar;
  std::atomic<unsigned> count_true[2] = {0, 0};
  std::atomic<unsigned> count_all[2] = {0, 0};
  uint64_t phase = 0;
};
inline HostBlock *host_block;
inline thread_local uint64_t host_phase;

inline void HostBarrierDone::operator()() noexcept {
  host_block->phase++;
  host_block->count_true[host_block->phase % 2] = 0;
  host_block->count_all[host_block->phase % 2] = 0;
}

// Waits for the block; returns (threads whose predicate was true, threads that arrived).
inline std::pair<unsigned, unsigned> host_barrier(int pred) {
  unsigned k = host_phase % 2;
  host_block->count_true[k] += pred != 0;
  host_block->count_all[k] += 1;
  host_block->bar.arrive_and_wait();
  host_phase++;
  return {host_block->count_true[k].load(), host_block->count_all[k].load()};
}

inline void __syncthreads() { host_barrier(0); }
inline int __syncthreads_count(int pred) { return host_barrier(pred).first; }
inline int __syncthreads_and(int pred) {
  auto [t, all] = host_barrier(pred);
  return t == all;
}
inline int __syncthreads_or(int pred) { return host_barrier(pred).first != 0; }

inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// ---- warp intrinsics ------------------------------------------------------------------------

enum HostOp {
  OP_SHFL_IDX,
  OP_SHFL_UP,
  OP_SHFL_DOWN,
  OP_SHFL_XOR,
  OP_SYNCWARP,
  OP_BALLOT,
  OP_ALL,
  OP_MATCH_ANY,
  OP_MATCH_ALL,
  OP_ADD,
  OP_MIN_U,
  OP_MAX_U,
  OP_MIN_S,
  OP_MAX_S,
  OP_AND,
  OP_OR,
  OP_XOR,
};

// A shuffle whose source lane does not take part gets this (CUDA: undefined).
constexpr uint64_t HOST_UNDEFINED = 0x5eedbad05eedbad0ull;

struct HostWarp {
  std::mutex m;
  std::condition_variable cv;
  unsigned present = 0;  // lanes that exist (fewer than 32 in a block's last, partial warp)
  unsigned exited = 0;
  // Intrinsics waiting for lanes: each its mask, the lanes there so far, what it computes.
  struct Group {
    unsigned mask, arrived;
    HostOp op;
  };
  std::vector<Group> groups;
  uint64_t value[32];
  unsigned param[32], width[32];
  uint64_t result[32];
  bool ready[32];

  // Computes `g` if every non-exited lane it names has arrived; the caller holds `m`.
  bool try_complete(const Group &g) {
    unsigned need = g.mask & present & ~exited;
    if ((g.arrived & need) != need) return false;
    uint64_t ballot = 0, acc = 0;
    bool first = true, same = true;
    for (unsigned l = 0; l < 32; l++) {
      if (!(g.arrived >> l & 1)) continue;
      uint64_t v = value[l];
      ballot |= (uint64_t)(v != 0) << l;
      if (first) {
        acc = v;
        first = false;
        continue;
      }
      same = same && v == value[std::countr_zero(g.arrived)];
      uint32_t a = (uint32_t)acc, b = (uint32_t)v;
      switch (g.op) {
        case OP_ADD: acc = (uint32_t)(a + b); break;
        case OP_MIN_U: acc = std::min(a, b); break;
        case OP_MAX_U: acc = std::max(a, b); break;
        case OP_MIN_S: acc = (uint32_t)std::min((int32_t)a, (int32_t)b); break;
        case OP_MAX_S: acc = (uint32_t)std::max((int32_t)a, (int32_t)b); break;
        case OP_AND: acc = a & b; break;
        case OP_OR: acc = a | b; break;
        case OP_XOR: acc = a ^ b; break;
        default: break;
      }
    }
    for (unsigned l = 0; l < 32; l++) {
      if (!(g.arrived >> l & 1)) continue;
      uint64_t r = 0;
      unsigned w = width[l], seg = l & ~(w - 1), b = param[l];
      int src = -1;
      switch (g.op) {
        // The Programming Guide's shuffles: lanes form segments of `width`; idx reads lane
        // srcLane modulo width of the segment; up and down read delta lanes lower or higher
        // and keep their own value when that leaves the segment; xor reads lane ^ laneMask,
        // which may be in an earlier segment but not a later one.
        case OP_SHFL_IDX: src = seg + (b & (w - 1)); break;
        case OP_SHFL_UP: src = (int)l - (int)b < (int)seg ? (int)l : (int)l - (int)b; break;
        case OP_SHFL_DOWN: src = l + b >= seg + w ? l : l + b; break;
        case OP_SHFL_XOR: src = (l ^ b) >= seg + w ? l : (l ^ b); break;
        case OP_SYNCWARP: break;
        case OP_BALLOT: r = ballot; break;
        case OP_ALL: r = ballot == g.arrived; break;
        case OP_MATCH_ANY:
          for (unsigned k = 0; k < 32; k++)
            if ((g.arrived >> k & 1) && value[k] == value[l]) r |= 1u << k;
          break;
        case OP_MATCH_ALL: r = same ? g.arrived : 0; break;
        default: r = acc; break;
      }
      if (src >= 0) r = (g.arrived >> src & 1) ? value[src] : HOST_UNDEFINED;
      result[l] = r;
      ready[l] = true;
    }
    cv.notify_all();
    return true;
  }

  void complete_all() {
    for (size_t i = 0; i < groups.size();)
      if (try_complete(groups[i]))
        groups.erase(groups.begin() + i);
      else
        i++;
  }
};

inline thread_local HostWarp *host_warp;
inline thread_local unsigned host_lane;

// The calling lane's part in a warp intrinsic: waits for the other lanes of `mask` and gives
// this lane's result.
inline uint64_t host_warp_op(HostOp op, unsigned mask, uint64_t v, unsigned param = 0,
                             unsigned width = 32) {
  HostWarp &w = *host_warp;
  unsigned lane = host_lane, bit = 1u << lane;
  if (!(mask & bit)) host_fail("warp intrinsic with mask %08x, which leaves out lane %u", mask, lane);
  if (width == 0 || width > 32 || (width & (width - 1)))
    host_fail("shuffle width %u is not a power of two up to 32", width);
  std::unique_lock lock(w.m);
  HostWarp::Group *g = nullptr;
  // Intrinsics with overlapping masks may wait at once: lanes on one side of a branch can
  // wait in an intrinsic that names the whole warp while the other side's lanes are still in
  // one of their own. (A kernel whose lanes wait for each other in a cycle deadlocks, and
  // host.cpp's alarm ends it.)
  for (auto &h : w.groups)
    if (h.mask == mask && h.op == op) g = &h;
  if (!g) g = &w.groups.emplace_back(HostWarp::Group{mask, 0, op});
  w.value[lane] = v;
  w.param[lane] = param;
  w.width[lane] = width;
  w.ready[lane] = false;
  g->arrived |= bit;
  w.complete_all();
  w.cv.wait(lock, [&] { return w.ready[lane]; });
  return w.result[lane];
}

// Called when a thread returns from the kernel: the intrinsics it was named in stop waiting
// for it.
inline void host_warp_exit() {
  HostWarp &w = *host_warp;
  std::lock_guard lock(w.m);
  w.exited |= 1u << host_lane;
  w.complete_all();
}

template <class T> uint64_t host_bits(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>);
  uint64_t b = 0;
  memcpy(&b, &v, sizeof v);
  return b;
}
template <class T> T host_from_bits(uint64_t b) {
  T v;
  memcpy(&v, &b, sizeof v);
  return v;
}

template <class T> T __shfl_sync(unsigned mask, T v, int src_lane, int width = warpSize) {
  return host_from_bits<T>(host_warp_op(OP_SHFL_IDX, mask, host_bits(v), src_lane, width));
}
template <class T> T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return host_from_bits<T>(host_warp_op(OP_SHFL_UP, mask, host_bits(v), delta, width));
}
template <class T> T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = warpSize) {
  return host_from_bits<T>(host_warp_op(OP_SHFL_DOWN, mask, host_bits(v), delta, width));
}
template <class T> T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = warpSize) {
  return host_from_bits<T>(host_warp_op(OP_SHFL_XOR, mask, host_bits(v), lane_mask, width));
}
inline void __syncwarp(unsigned mask = 0xffffffffu) { host_warp_op(OP_SYNCWARP, mask, 0); }
inline unsigned __ballot_sync(unsigned mask, int pred) {
  return (unsigned)host_warp_op(OP_BALLOT, mask, pred != 0);
}
inline int __any_sync(unsigned mask, int pred) { return __ballot_sync(mask, pred) != 0; }
inline int __all_sync(unsigned mask, int pred) {
  return (int)host_warp_op(OP_ALL, mask, pred != 0);
}
// The lanes of the warp that have not exited. The corpus calls it only where the whole warp
// is converged (before any lane can have returned), where that is what CUDA gives.
inline unsigned __activemask() {
  std::lock_guard lock(host_warp->m);
  if (host_warp->exited) host_fail("__activemask after a lane of the warp has exited");
  return host_warp->present;
}
template <class T> unsigned __match_any_sync(unsigned mask, T v) {
  return (unsigned)host_warp_op(OP_MATCH_ANY, mask, host_bits(v));
}
template <class T> unsigned __match_all_sync(unsigned mask, T v, int *pred) {
  unsigned r = (unsigned)host_warp_op(OP_MATCH_ALL, mask, host_bits(v));
  *pred = r != 0;
  return r;
}
inline unsigned __reduce_add_sync(unsigned mask, unsigned v) { return host_warp_op(OP_ADD, mask, v); }
inline int __reduce_add_sync(unsigned mask, int v) { return host_warp_op(OP_ADD, mask, (uint32_t)v); }
inline unsigned __reduce_min_sync(unsigned mask, unsigned v) { return host_warp_op(OP_MIN_U, mask, v); }
inline int __reduce_min_sync(unsigned mask, int v) { return host_warp_op(OP_MIN_S, mask, (uint32_t)v); }
inline unsigned __reduce_max_sync(unsigned mask, unsigned v) { return host_warp_op(OP_MAX_U, mask, v); }
inline int __reduce_max_sync(unsigned mask, int v) { return host_warp_op(OP_MAX_S, mask, (uint32_t)v); }
inline unsigned __reduce_and_sync(unsigned mask, unsigned v) { return host_warp_op(OP_AND, mask, v); }
inline unsigned __reduce_or_sync(unsigned mask, unsigned v) { return host_warp_op(OP_OR, mask, v); }
inline unsigned __reduce_xor_sync(unsigned mask, unsigned v) { return host_warp_op(OP_XOR, mask, v); }

// ---- atomics and bit intrinsics ---------------------------------------------------------------

template <class T, class U> T atomicAdd(T *p, U v) { return std::atomic_ref<T>(*p).fetch_add((T)v); }
template <class T, class U> T atomicSub(T *p, U v) { return std::atomic_ref<T>(*p).fetch_sub((T)v); }
template <class T, class U> T atomicExch(T *p, U v) { return std::atomic_ref<T>(*p).exchange((T)v); }
template <class T, class U> T atomicAnd(T *p, U v) { return std::atomic_ref<T>(*p).fetch_and((T)v); }
template <class T, class U> T atomicOr(T *p, U v) { return std::atomic_ref<T>(*p).fetch_or((T)v); }
template <class T, class U> T atomicXor(T *p, U v) { return std::atomic_ref<T>(*p).fetch_xor((T)v); }
template <class T, class U, class V> T atomicCAS(T *p, U expected, V desired) {
  T e = (T)expected;
  if (!std::atomic_ref<T>(*p).compare_exchange_strong(e, (T)desired))
    std::this_thread::yield();  // spinning threads let the holder of a lock run
  return e;
}
template <class T, class U> T atomicMin(T *p, U v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while ((T)v < old && !a.compare_exchange_weak(old, (T)v)) {
  }
  return old;
}
template <class T, class U> T atomicMax(T *p, U v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while ((T)v > old && !a.compare_exchange_weak(old, (T)v)) {
  }
  return old;
}

inline int __popc(unsigned v) { return std::popcount(v); }
inline int __popcll(unsigned long long v) { return std::popcount(v); }
inline int __ffs(int v) { return v ? std::countr_zero((unsigned)v) + 1 : 0; }
inline int __clz(int v) { return std::countl_zero((unsigned)v); }
inline unsigned __brev(unsigned v) {
  unsigned r = 0;
  for (int i = 0; i < 32; i++) r |= (v >> i & 1) << (31 - i);
  return r;
}
