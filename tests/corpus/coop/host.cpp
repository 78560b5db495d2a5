// Host reference for the cooperative corpus: runs a kernel's CUDA source on the CPU over the
// same launch, to compute expected outputs independently of ptxjit. Each block's threads are
// real threads; blocks run one after another (host_cuda.h has the emulation).
//
//   g++ -std=c++20 -O1 -pthread -ffp-contract=off -fno-strict-aliasing
//       -DKERNEL_FILE='"reduce_sum.cu"' -DKERNEL_NAME=reduce_sum host.cpp
//   ./a.out GX,GY,GZ BX,BY,BZ SHARED_BYTES ARG...
//
// SHARED_BYTES is the size of the launch's dynamic shared memory; ARGs as ../host_args.h
// reads them.
#include KERNEL_FILE
#include "../host_args.h"
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

// The bounds of the section holding every __shared__ variable (the linker defines them).
extern "C" char __start_coop_shared[] __attribute__((weak));
extern "C" char __stop_coop_shared[] __attribute__((weak));

static dim3 parse_dim(const char *s) {
  dim3 d;
  if (sscanf(s, "%u,%u,%u", &d.x, &d.y, &d.z) != 3) {
    fprintf(stderr, "bad extent %s (want X,Y,Z)\n", s);
    exit(2);
  }
  return d;
}

// Poison for shared memory at the start of each block (no kernel may read what it did not
// write, so the pattern never reaches an output of a correct kernel).
constexpr unsigned char POISON = 0xa5;

template <class... A> void launch(void (*kernel)(A...), int argc, char **argv) {
  if (argc != (int)sizeof...(A) + 4) {
    fprintf(stderr, "usage: %s GRID BLOCK SHARED_BYTES ARG... (%zu kernel args)\n", argv[0],
            sizeof...(A));
    exit(2);
  }
  buffers.reserve(sizeof...(A));
  gridDim = parse_dim(argv[1]);
  blockDim = parse_dim(argv[2]);
  size_t dynamic_bytes = strtoull(argv[3], nullptr, 0);
  auto args = make_args<A...>(argv + 4, std::index_sequence_for<A...>{});
  std::vector<uint64_t> dynamic((dynamic_bytes + 15) / 8 + 2);
  host_dynamic_shared = reinterpret_cast<unsigned char *>(
      (reinterpret_cast<uintptr_t>(dynamic.data()) + 15) & ~uintptr_t(15));
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  if (threads == 0 || threads > 1024) { fprintf(stderr, "bad block size\n"); exit(2); }
  alarm(120);  // a deadlocked kernel fails rather than hangs
  for (unsigned bz = 0; bz < gridDim.z; bz++)
    for (unsigned by = 0; by < gridDim.y; by++)
      for (unsigned bx = 0; bx < gridDim.x; bx++) {
        blockIdx = {bx, by, bz};
        if (__start_coop_shared)
          memset(__start_coop_shared, POISON, __stop_coop_shared - __start_coop_shared);
        memset(host_dynamic_shared, POISON, dynamic_bytes);
        HostBlock block(threads);
        host_block = &block;
        std::vector<std::unique_ptr<HostWarp>> warps;
        for (unsigned w = 0; w * 32 < threads; w++) {
          warps.push_back(std::make_unique<HostWarp>());
          unsigned lanes = std::min(32u, threads - w * 32);
          warps.back()->present = lanes == 32 ? 0xffffffffu : (1u << lanes) - 1;
        }
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; t++)
          pool.emplace_back([&, t] {
            threadIdx = {t % blockDim.x, t / blockDim.x % blockDim.y,
                         t / (blockDim.x * blockDim.y)};
            host_warp = warps[t / 32].get();
            host_lane = t % 32;
            host_phase = 0;
            std::apply(kernel, args);
            host_warp_exit();
            block.bar.arrive_and_drop();
          });
        for (auto &th : pool) th.join();
      }
  write_buffers();
}

int main(int argc, char **argv) { launch(KERNEL_NAME, argc, argv); }
