// Host harness for the corpus: runs a kernel's C source on the CPU over the same grid as a
// launch, to compute expected outputs independently of ptxjit.
//
//   g++ -std=c++17 -O1 -ffp-contract=off -DKERNEL_FILE='"vecadd.cu"' -DKERNEL_NAME=vecadd host.cpp
//   ./a.out GX,GY,GZ BX,BY,BZ ARG...
//
// A pointer parameter's ARG is IN_PATH:OUT_PATH (the buffer is read from IN_PATH and written
// to OUT_PATH after the run); a scalar's ARG is its value in decimal.
#include KERNEL_FILE
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

Dim3 host_tid, host_ntid, host_ctaid, host_nctaid;

struct Buffer {
  std::string out;
  std::vector<uint64_t> words;  // 8-byte aligned storage
  size_t size;
};
static std::vector<Buffer> buffers;

static Dim3 parse_dim(const char *s) {
  Dim3 d = {1, 1, 1};
  sscanf(s, "%u,%u,%u", &d.x, &d.y, &d.z);
  return d;
}

template <class T> T arg_from(const char *s) {
  if constexpr (std::is_pointer_v<T>) {
    std::string arg(s);
    size_t colon = arg.rfind(':');
    Buffer b;
    b.out = arg.substr(colon + 1);
    FILE *f = fopen(arg.substr(0, colon).c_str(), "rb");
    if (!f) { perror("input"); exit(2); }
    fseek(f, 0, SEEK_END);
    b.size = ftell(f);
    fseek(f, 0, SEEK_SET);
    b.words.resize(b.size / 8 + 1);
    if (fread(b.words.data(), 1, b.size, f) != b.size) { perror("read"); exit(2); }
    fclose(f);
    buffers.push_back(std::move(b));
    return reinterpret_cast<T>(buffers.back().words.data());
  } else if constexpr (std::is_floating_point_v<T>) {
    return (T)strtod(s, nullptr);
  } else if constexpr (std::is_signed_v<T>) {
    return (T)strtoll(s, nullptr, 0);
  } else {
    return (T)strtoull(s, nullptr, 0);
  }
}

template <class... A, size_t... I>
std::tuple<A...> make_args(char **argv, std::index_sequence<I...>) {
  return std::tuple<A...>{arg_from<A>(argv[I])...};
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
  for (auto &b : buffers) {
    FILE *f = fopen(b.out.c_str(), "wb");
    if (!f || fwrite(b.words.data(), 1, b.size, f) != b.size) { perror("output"); exit(2); }
    fclose(f);
  }
}

int main(int argc, char **argv) { launch(KERNEL_NAME, argc, argv); }
