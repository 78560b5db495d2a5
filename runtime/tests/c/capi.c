/* ptxjit's C ABI from C: load, list, launch saxpy and a kernel taking a structure, call a
 * .func, and get a located parse error and a fault back. Every expected value is computed
 * here, in C, on the host. Usage: capi SAXPY_PTX_PATH */
#include "ptxjit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, ...)                                      \
  do {                                                        \
    if (!(cond)) {                                            \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                           \
      fprintf(stderr, "\n");                                  \
      failures++;                                             \
    }                                                         \
  } while (0)

static const char *SCALE_PTX =
    ".version 7.8\n"
    ".target sm_80\n"
    ".address_size 64\n"
    "// struct { float scale; unsigned n; float *out; }\n"
    ".visible .entry scale(.param .align 8 .b8 p[16])\n"
    "{\n"
    "  .reg .f32 %f<3>;\n  .reg .u32 %r<3>;\n  .reg .u64 %rd<4>;\n  .reg .pred %q;\n"
    "  ld.param.f32 %f1, [p];\n"
    "  ld.param.u32 %r1, [p+4];\n"
    "  ld.param.u64 %rd1, [p+8];\n"
    "  mov.u32 %r2, %tid.x;\n"
    "  setp.ge.u32 %q, %r2, %r1;\n"
    "  @%q bra DONE;\n"
    "  cvt.rn.f32.u32 %f2, %r2;\n"
    "  mul.rn.f32 %f2, %f2, %f1;\n"
    "  mul.wide.u32 %rd2, %r2, 4;\n"
    "  add.u64 %rd3, %rd1, %rd2;\n"
    "  st.global.f32 [%rd3], %f2;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n"
    ".visible .func (.param .u64 r) madhi(.param .u64 a, .param .u64 b, .param .u64 c)\n"
    "{\n"
    "  .reg .u64 %x<5>;\n"
    "  ld.param.u64 %x1, [a];\n  ld.param.u64 %x2, [b];\n  ld.param.u64 %x3, [c];\n"
    "  mul.hi.u64 %x4, %x1, %x2;\n"
    "  add.u64 %x4, %x4, %x3;\n"
    "  st.param.u64 [r], %x4;\n"
    "  ret;\n"
    "}\n";

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc(n + 1);
  if (fread(text, 1, n, f) != (size_t)n) n = 0;
  text[n] = 0;
  fclose(f);
  return text;
}

static void saxpy(const char *path) {
  char *text = read_file(path);
  CHECK(text != NULL, "cannot read %s", path);
  if (!text) return;
  ptxjit_module *m = NULL;
  int rc = ptxjit_module_load(text, "saxpy.ptx", 0, &m);
  free(text);
  CHECK(rc == PTXJIT_OK, "load: %s", ptxjit_last_error());
  if (rc) return;

  /* The function list and parameter types. */
  size_t k;
  CHECK(ptxjit_function_find(m, "saxpy", &k) == PTXJIT_OK, "find");
  ptxjit_function_info_t fi;
  CHECK(ptxjit_function_info(m, k, &fi) == PTXJIT_OK, "info");
  CHECK(strcmp(fi.name, "saxpy") == 0 && fi.is_kernel && fi.param_count == 4, "%s", fi.name);
  CHECK(fi.param_buffer_size == 28, "packed size %zu", fi.param_buffer_size);
  const char *types[4] = {"f32", "u64", "u64", "u32"};
  for (uint32_t i = 0; i < 4; i++) {
    ptxjit_param_info_t pi;
    CHECK(ptxjit_param_info(m, k, i, &pi) == PTXJIT_OK, "param %u", i);
    CHECK(strcmp(pi.type, types[i]) == 0, "param %u is %s", i, pi.type);
  }
  CHECK(ptxjit_param_info(m, k, 4, &(ptxjit_param_info_t){0}) == PTXJIT_ERROR_INVALID_ARGUMENT, "param 4");

  enum { N = 1000 };
  float *x = malloc(N * sizeof(float)), *y = malloc(N * sizeof(float)), want[N];
  float a = 1.5f;
  for (int i = 0; i < N; i++) {
    x[i] = (float)i * 0.25f - 3.0f;
    y[i] = 1.0f / (float)(i + 1);
    want[i] = fmaf(a, x[i], y[i]);
  }
  CHECK(ptxjit_register_memory(x, N * sizeof(float)) == PTXJIT_OK, "%s", ptxjit_last_error());
  CHECK(ptxjit_register_memory(y, N * sizeof(float)) == PTXJIT_OK, "%s", ptxjit_last_error());
  uint64_t xa = (uint64_t)(uintptr_t)x, ya = (uint64_t)(uintptr_t)y;
  uint32_t n = N;
  void *params[] = {&a, &xa, &ya, &n};
  rc = ptxjit_launch(m, "saxpy", (ptxjit_dim3){4, 1, 1}, (ptxjit_dim3){256, 1, 1}, 0, params);
  CHECK(rc == PTXJIT_OK, "launch: %s", ptxjit_last_error());
  CHECK(memcmp(y, want, sizeof want) == 0, "saxpy results differ from fmaf");

  /* One element too many: thread 1000 reads past the end of x. */
  uint32_t too_many = N + 1;
  void *bad[] = {&a, &xa, &ya, &too_many};
  rc = ptxjit_launch(m, "saxpy", (ptxjit_dim3){4, 1, 1}, (ptxjit_dim3){256, 1, 1}, 0, bad);
  CHECK(rc == PTXJIT_ERROR_FAULT, "rc %d", rc);
  ptxjit_fault_t f;
  CHECK(ptxjit_last_fault(&f) == PTXJIT_OK, "no fault");
  CHECK(strstr(f.message, "out of bounds") != NULL, "message: %s", f.message);
  CHECK(f.ctaid[0] == 3 && f.tid[0] == 232, "block %u thread %u", f.ctaid[0], f.tid[0]);
  CHECK(f.has_address && f.address == xa + 4 * N, "address %llx", (unsigned long long)f.address);
  CHECK(strcmp(f.path, "saxpy.ptx") == 0 && f.line == 38 && strcmp(f.function, "saxpy") == 0,
        "at %s:%u in %s", f.path, f.line, f.function);
  CHECK(strstr(ptxjit_last_error(), "saxpy.ptx:38:") != NULL, "%s", ptxjit_last_error());

  /* Unregistered memory is refused by a checked module. */
  CHECK(ptxjit_unregister_memory(x) == PTXJIT_OK, "unregister");
  rc = ptxjit_launch(m, "saxpy", (ptxjit_dim3){1, 1, 1}, (ptxjit_dim3){1, 1, 1}, 0, params);
  CHECK(rc == PTXJIT_ERROR_FAULT && strstr(ptxjit_last_error(), "global load"), "%s", ptxjit_last_error());
  CHECK(ptxjit_unregister_memory(y) == PTXJIT_OK, "unregister");
  ptxjit_module_free(m);
  free(x);
  free(y);
}

static void structure_and_func(void) {
  ptxjit_module *m = NULL;
  int rc = ptxjit_module_load(SCALE_PTX, "scale.ptx", 0, &m);
  CHECK(rc == PTXJIT_OK, "load: %s", ptxjit_last_error());
  if (rc) return;
  CHECK(ptxjit_function_count(m) == 2, "count");

  struct {
    float scale;
    uint32_t n;
    float *out;
  } p;
  float out[64];
  for (int i = 0; i < 64; i++) out[i] = -1.0f;
  p.scale = 0.5f;
  p.n = 48;
  p.out = out;
  CHECK(ptxjit_register_memory(out, sizeof out) == PTXJIT_OK, "register");
  void *params[] = {&p};
  rc = ptxjit_launch(m, "scale", (ptxjit_dim3){1, 1, 1}, (ptxjit_dim3){64, 1, 1}, 0, params);
  CHECK(rc == PTXJIT_OK, "launch: %s", ptxjit_last_error());
  for (int i = 0; i < 64; i++) {
    float want = i < 48 ? (float)i * 0.5f : -1.0f;
    CHECK(out[i] == want, "out[%d] = %g, want %g", i, out[i], want);
  }
  ptxjit_unregister_memory(out);

  /* The .func: (a * b) >> 64, plus c. */
  uint64_t a = 0xfedcba9876543210ull, b = 0x0123456789abcdefull, c = 7, r = 0;
  void *args[] = {&a, &b, &c}, *rets[] = {&r};
  rc = ptxjit_call(m, "madhi", args, rets);
  CHECK(rc == PTXJIT_OK, "call: %s", ptxjit_last_error());
  uint64_t want = (uint64_t)(((unsigned __int128)a * b) >> 64) + c;
  CHECK(r == want, "madhi = %llx, want %llx", (unsigned long long)r, (unsigned long long)want);
  size_t fi;
  ptxjit_param_info_t ri;
  CHECK(ptxjit_function_find(m, "madhi", &fi) == PTXJIT_OK, "find");
  CHECK(ptxjit_return_info(m, fi, 0, &ri) == PTXJIT_OK && strcmp(ri.type, "u64") == 0, "return");

  /* Calling a kernel, or launching a .func, is refused. */
  CHECK(ptxjit_call(m, "scale", args, rets) == PTXJIT_ERROR_USAGE, "call a kernel");
  CHECK(ptxjit_launch(m, "madhi", (ptxjit_dim3){1, 1, 1}, (ptxjit_dim3){1, 1, 1}, 0, args) == PTXJIT_ERROR_USAGE,
        "launch a func");
  ptxjit_module_free(m);
}

static void located_error(void) {
  const char *bad = ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n  .reg .u32 %r1;\n  mov.u32 %r1 2;\n}\n";
  ptxjit_module *m = (ptxjit_module *)1;
  int rc = ptxjit_module_load(bad, "bad.ptx", 0, &m);
  CHECK(rc == PTXJIT_ERROR_PARSE, "rc %d", rc);
  CHECK(ptxjit_diagnostic_count() >= 1, "no diagnostics");
  ptxjit_diagnostic_t d;
  CHECK(ptxjit_diagnostic(0, &d) == PTXJIT_OK, "diagnostic");
  CHECK(strcmp(d.path, "bad.ptx") == 0 && d.line == 7 && d.column == 11, "at %s:%u:%u", d.path, d.line, d.column);
  CHECK(strlen(d.message) > 0, "message");
  CHECK(strstr(ptxjit_last_error(), "bad.ptx:7:11") != NULL, "%s", ptxjit_last_error());
  CHECK(ptxjit_last_fault(&(ptxjit_fault_t){0}) == PTXJIT_ERROR_INVALID_ARGUMENT, "not a fault");
  CHECK(ptxjit_module_load(NULL, NULL, 0, &m) == PTXJIT_ERROR_INVALID_ARGUMENT, "null text");
  CHECK(ptxjit_launch(NULL, "k", (ptxjit_dim3){1, 1, 1}, (ptxjit_dim3){1, 1, 1}, 0, NULL) ==
            PTXJIT_ERROR_INVALID_ARGUMENT, "null module");
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: capi SAXPY_PTX\n");
    return 2;
  }
  saxpy(argv[1]);
  structure_and_func();
  located_error();
  printf("capi: %s (ptxjit %s)\n", failures ? "FAILED" : "ok", ptxjit_version());
  return failures ? 1 : 0;
}
