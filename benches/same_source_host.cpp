// Times a corpus kernel's C source compiled for the host, for bench_table's same-source rows
// (the same source clang-16 compiled to the PTX the JIT runs):
//
//   g++ -std=c++17 -O2 -I tests/corpus -DKERNEL_FILE='"hash32.cu"' -DKERNEL_NAME=hash32 \
//       benches/same_source_host.cpp
//   ./a.out GX BX RUNS ARG...
//
// runs the grid (GX blocks of BX threads, one after another, as one core runs them) RUNS times,
// prints `ns_per_thread=<best run>` and writes the buffers of the last run (ARGs as
// tests/corpus/host_args.h reads them).
#include KERNEL_FILE
#include "host_args.h"
#include <chrono>

Dim3 host_tid, host_ntid, host_ctaid, host_nctaid;

template <class... A> void bench(void (*kernel)(A...), int argc, char **argv) {
  if (argc != (int)sizeof...(A) + 4) { fprintf(stderr, "expected %zu args\n", sizeof...(A)); exit(2); }
  buffers.reserve(sizeof...(A));
  unsigned gx = strtoul(argv[1], nullptr, 0), bx = strtoul(argv[2], nullptr, 0);
  int runs = atoi(argv[3]);
  auto args = make_args<A...>(argv + 4, std::index_sequence_for<A...>{});
  host_nctaid = {gx, 1, 1};
  host_ntid = {bx, 1, 1};
  double best = 1e300;
  for (int r = 0; r < runs; r++) {
    auto t0 = std::chrono::steady_clock::now();
    for (unsigned b = 0; b < gx; b++)
      for (unsigned t = 0; t < bx; t++) {
        host_ctaid = {b, 0, 0};
        host_tid = {t, 0, 0};
        std::apply(kernel, args);
      }
    std::chrono::duration<double, std::nano> d = std::chrono::steady_clock::now() - t0;
    if (d.count() < best) best = d.count();
  }
  printf("ns_per_thread=%.3f\n", best / ((double)gx * bx));
  write_buffers();
}

int main(int argc, char **argv) { bench(KERNEL_NAME, argc, argv); }
