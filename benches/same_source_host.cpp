// Times a corpus kernel's C source compiled for the host, for bench_table's same-source rows
// (the same source clang-16 compiled to the PTX the JIT runs):
//
//   g++ -std=c++17 -O2 -I tests/corpus -DKERNEL_FILE='"hash32.cu"' -DKERNEL_NAME=hash32 \
//       benches/same_source_host.cpp
//   ./a.out GX[,GY] BX[,BY] RUNS ARG...
//
// runs the grid (its blocks and their threads one after another, as one core runs them) RUNS times,
// prints `ns_per_thread=<best run>` and writes the buffers of the last run (ARGs as
// tests/corpus/host_args.h reads them).
#include KERNEL_FILE
#include "host_args.h"
#include <chrono>

Dim3 host_tid, host_ntid, host_ctaid, host_nctaid;

// X or X,Y (the rest 1).
static Dim3 parse_dim(const char *s) {
  Dim3 d = {1, 1, 1};
  sscanf(s, "%u,%u", &d.x, &d.y);
  return d;
}

template <class... A> void bench(void (*kernel)(A...), int argc, char **argv) {
  if (argc != (int)sizeof...(A) + 4) { fprintf(stderr, "expected %zu args\n", sizeof...(A)); exit(2); }
  buffers.reserve(sizeof...(A));
  Dim3 grid = parse_dim(argv[1]), block = parse_dim(argv[2]);
  int runs = atoi(argv[3]);
  auto args = make_args<A...>(argv + 4, std::index_sequence_for<A...>{});
  host_nctaid = grid;
  host_ntid = block;
  double best = 1e300;
  for (int r = 0; r < runs; r++) {
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++)
        for (unsigned ty = 0; ty < block.y; ty++)
          for (unsigned tx = 0; tx < block.x; tx++) {
            host_ctaid = {bx, by, 0};
            host_tid = {tx, ty, 0};
            std::apply(kernel, args);
          }
    std::chrono::duration<double, std::nano> d = std::chrono::steady_clock::now() - t0;
    if (d.count() < best) best = d.count();
  }
  double threads = (double)grid.x * grid.y * block.x * block.y;
  printf("ns_per_thread=%.3f\n", best / threads);
  write_buffers();
}

int main(int argc, char **argv) { bench(KERNEL_NAME, argc, argv); }
