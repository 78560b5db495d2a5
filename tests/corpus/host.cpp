// Host harness for the corpus: runs a kernel's C source on the CPU over the same grid as a
// launch, to compute expected outputs independently of ptxjit.
//
//   g++ -std=c++17 -O1 -ffp-contract=off -DKERNEL_FILE='"vecadd.cu"' -DKERNEL_NAME=vecadd host.cpp
//   ./a.out GX,GY,GZ BX,BY,BZ ARG...
//
// ARGs as host_args.h reads them.
#include KERNEL_FILE
#include "host_args.h"

Dim3 host_tid, host_ntid, host_ctaid, host_nctaid;

static Dim3 parse_dim(const char *s) {
  Dim3 d = {1, 1, 1};
  sscanf(s, "%u,%u,%u", &d.x, &d.y, &d.z);
  return d;
}

template <class... A> void launch(void (*kernel)(A...), int argc, char **argv) {
  if (argc != (int)sizeof...(A) + 3) { fprintf(stderr, "expected %zu args\n", sizeof...(A)); exit(2); }
  buffers.reserve(sizeof...(A));
  Dim3 grid = parse_dim(argv[1]), block = parse_dim(argv[2]);
  auto args = make_args<A...>(argv + 3, std::index_sequence_for<A...>{});
  host_nctaid = grid;
  host_ntid = block;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++)
        for (unsigned tz = 0; tz < block.z; tz++)
          for (unsigned ty = 0; ty < block.y; ty++)
            for (unsigned tx = 0; tx < block.x; tx++) {
              host_ctaid = {bx, by, bz};
              host_tid = {tx, ty, tz};
              std::apply(kernel, args);
            }
  write_buffers();
}

int main(int argc, char **argv) { launch(KERNEL_NAME, argc, argv); }
