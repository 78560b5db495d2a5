// The host harnesses' arguments (tests/corpus/host.cpp and tests/corpus/coop/host.cpp): a
// pointer parameter's ARG is IN_PATH:OUT_PATH (the buffer is read from IN_PATH and written
// to OUT_PATH after the run), a scalar's its value (integers in any strtoll form, floats in
// any strtod form).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

struct Buffer {
  std::string out;
  std::vector<uint64_t> words;  // 8-byte aligned storage
  size_t size;
};
static std::vector<Buffer> buffers;

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

// Writes every buffer to its OUT_PATH.
static void write_buffers() {
  for (auto &b : buffers) {
    FILE *f = fopen(b.out.c_str(), "wb");
    if (!f || fwrite(b.words.data(), 1, b.size, f) != b.size) { perror("output"); exit(2); }
    fclose(f);
  }
}
