/* CUDA's driver API from C against libcuda.so.1 = ptxjit: the usual sequence, memcpy round
 * trips, a launch with kernelParams and one with `extra`, a module variable, events, streams,
 * and an out-of-bounds kernel that fails with CUDA_ERROR_ILLEGAL_ADDRESS. Expected values are
 * computed here in C. Usage: driver SAXPY_PTX_PATH */
#include "cuda_subset.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond, ...)                                                          \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);    \
      fprintf(stderr, __VA_ARGS__);                                               \
      fprintf(stderr, "\n");                                                      \
      failures++;                                                                 \
    }                                                                             \
  } while (0)
#define CU(call) CHECK((rc = (call)) == CUDA_SUCCESS, "%s returned %d: %s", #call, rc, ptxjit_last_error())

static const char *EXTRA_PTX =
    ".version 7.8\n.target sm_80\n.address_size 64\n"
    ".visible .global .align 4 .u32 bias = 100;\n"
    "// out[i] = in[i] * k + bias, for i < n; parameters packed as (u64 out, u64 in, u32 k, u32 n)\n"
    ".visible .entry affine(.param .u64 out, .param .u64 in, .param .u32 k, .param .u32 n)\n{\n"
    "  .reg .u32 %r<8>;\n  .reg .u64 %rd<6>;\n  .reg .pred %p;\n"
    "  ld.param.u64 %rd1, [out];\n  ld.param.u64 %rd2, [in];\n"
    "  ld.param.u32 %r1, [k];\n  ld.param.u32 %r2, [n];\n"
    "  mov.u32 %r3, %ctaid.x;\n  mov.u32 %r4, %ntid.x;\n  mov.u32 %r5, %tid.x;\n"
    "  mad.lo.u32 %r3, %r3, %r4, %r5;\n"
    "  setp.ge.u32 %p, %r3, %r2;\n  @%p bra DONE;\n"
    "  mul.wide.u32 %rd3, %r3, 4;\n  add.u64 %rd4, %rd2, %rd3;\n  add.u64 %rd5, %rd1, %rd3;\n"
    "  ld.global.u32 %r6, [%rd4];\n  ld.global.u32 %r7, [bias];\n"
    "  mad.lo.u32 %r6, %r6, %r1, %r7;\n  st.global.u32 [%rd5], %r6;\n"
    "DONE:\n  ret;\n}\n";

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

int main(int argc, char **argv) {
  CUresult rc;
  if (argc < 2) return 2;
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0) == CUDA_ERROR_NOT_INITIALIZED, "before cuInit");
  CU(cuInit(0));
  int version = 0, count = 0, value = 0;
  CU(cuDriverGetVersion(&version));
  CHECK(version >= 12000, "version %d", version);
  CU(cuDeviceGetCount(&count));
  CHECK(count == 1, "%d devices", count);
  CU(cuDeviceGet(&dev, 0));
  char name[128];
  CU(cuDeviceGetName(name, sizeof name, dev));
  CHECK(strncmp(name, "ptxjit", 6) == 0, "name %s", name);
  CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(value == 8, "major %d", value);
  CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_WARP_SIZE, dev));
  CHECK(value == 32, "warp %d", value);
  CU(cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, dev));
  CHECK(value == 1024, "threads %d", value);
  size_t total = 0, free_bytes = 0;
  CU(cuDeviceTotalMem(&total, dev));
  CHECK(total > 0, "no memory");

  CUdeviceptr none;
  CHECK(cuMemAlloc(&none, 16) == CUDA_ERROR_INVALID_CONTEXT, "no context yet");
  CUcontext ctx, cur;
  CU(cuCtxCreate(&ctx, 0, dev));
  CU(cuCtxGetCurrent(&cur));
  CHECK(cur == ctx, "current context");
  CU(cuMemGetInfo(&free_bytes, &total));
  CHECK(free_bytes <= total, "free %zu total %zu", free_bytes, total);

  /* saxpy with kernelParams. */
  char *text = read_file(argv[1]);
  CUmodule mod;
  CUfunction saxpy;
  CU(cuModuleLoadData(&mod, text));
  free(text);
  CU(cuModuleGetFunction(&saxpy, mod, "saxpy"));
  CHECK(cuModuleGetFunction(&saxpy, mod, "nope") == CUDA_ERROR_NOT_FOUND, "unknown kernel");
  enum { N = 3000 };
  float *hx = malloc(N * sizeof(float)), *hy = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float));
  for (int i = 0; i < N; i++) {
    hx[i] = sinf((float)i);
    hy[i] = (float)(i % 17) - 8.0f;
  }
  CUdeviceptr dx, dy, dz;
  CU(cuMemAlloc(&dx, N * sizeof(float)));
  CU(cuMemAlloc(&dy, N * sizeof(float)));
  CU(cuMemAlloc(&dz, N * sizeof(float)));
  CU(cuMemcpyHtoD(dx, hx, N * sizeof(float)));
  CU(cuMemcpyHtoD(dy, hy, N * sizeof(float)));
  /* Round trips: H->D->D->H gives the bytes back. */
  CU(cuMemcpyDtoD(dz, dx, N * sizeof(float)));
  CU(cuMemcpyDtoH(back, dz, N * sizeof(float)));
  CHECK(memcmp(back, hx, N * sizeof(float)) == 0, "round trip");
  CU(cuMemsetD32(dz, 0x3f800000u, N));
  CU(cuMemcpyDtoH(back, dz, N * sizeof(float)));
  CHECK(back[0] == 1.0f && back[N - 1] == 1.0f, "memset");
  CHECK(cuMemcpyHtoD(dz + 4, hx, N * sizeof(float)) == CUDA_ERROR_INVALID_VALUE, "copy past the end");

  CUevent start, stop;
  CUstream stream;
  CU(cuEventCreate(&start, 0));
  CU(cuEventCreate(&stop, 0));
  CU(cuStreamCreate(&stream, 0));
  float a = -2.5f;
  unsigned n = N;
  void *params[] = {&a, &dx, &dy, &n};
  CU(cuEventRecord(start, stream));
  CU(cuLaunchKernel(saxpy, (N + 255) / 256, 1, 1, 256, 1, 1, 0, stream, params, NULL));
  CU(cuEventRecord(stop, stream));
  CU(cuEventSynchronize(stop));
  float ms = -1;
  CU(cuEventElapsedTime(&ms, start, stop));
  CHECK(ms >= 0, "elapsed %g", ms);
  CU(cuMemcpyDtoHAsync(back, dy, N * sizeof(float), stream));
  CU(cuStreamSynchronize(stream));
  int wrong = 0;
  for (int i = 0; i < N; i++) wrong += back[i] != fmaf(a, hx[i], hy[i]);
  CHECK(wrong == 0, "%d saxpy results differ from fmaf", wrong);

  /* A launch with `extra`: a packed parameter buffer, and a module variable. */
  CUmodule mod2;
  CUfunction affine;
  CU(cuModuleLoadData(&mod2, EXTRA_PTX));
  CU(cuModuleGetFunction(&affine, mod2, "affine"));
  CUdeviceptr bias;
  size_t bias_size = 0;
  CU(cuModuleGetGlobal(&bias, &bias_size, mod2, "bias"));
  CHECK(bias_size == 4, "bias is %zu bytes", bias_size);
  unsigned new_bias = 7;
  CU(cuMemcpyHtoD(bias, &new_bias, 4));
  unsigned *hin = malloc(N * 4), *hout = malloc(N * 4);
  for (int i = 0; i < N; i++) hin[i] = (unsigned)i * 2654435761u;
  CUdeviceptr din, dout;
  CU(cuMemAlloc(&din, N * 4));
  CU(cuMemAlloc(&dout, N * 4));
  CU(cuMemcpyHtoDAsync(din, hin, N * 4, NULL));
  struct {
    CUdeviceptr out, in;
    unsigned k, n;
  } packed = {dout, din, 3, N};
  size_t size = sizeof packed;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
  CU(cuLaunchKernel(affine, 12, 1, 1, 256, 1, 1, 0, NULL, NULL, extra));
  CU(cuCtxSynchronize());
  CU(cuMemcpyDtoH(hout, dout, N * 4));
  wrong = 0;
  for (int i = 0; i < N; i++) wrong += hout[i] != hin[i] * 3u + 7u;
  CHECK(wrong == 0, "%d affine results wrong", wrong);

  /* Dynamic shared memory past 48 KiB needs the attribute. */
  CHECK(cuLaunchKernel(affine, 1, 1, 1, 1, 1, 1, 64 << 10, NULL, NULL, extra) == CUDA_ERROR_INVALID_VALUE, "shared");
  CU(cuFuncSetAttribute(affine, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 << 10));
  CU(cuLaunchKernel(affine, 1, 1, 1, 1, 1, 1, 64 << 10, NULL, NULL, extra));
  CU(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, affine));
  CHECK(value == 64 << 10, "attribute %d", value);

  /* Out of bounds: n one past the end of `in` (and `out`). */
  packed.n = N + 1;
  rc = cuLaunchKernel(affine, 12, 1, 1, 256, 1, 1, 0, NULL, NULL, extra);
  CHECK(rc == CUDA_ERROR_ILLEGAL_ADDRESS, "out of bounds returned %d", rc);
  const char *err_name = NULL, *err_text = NULL;
  CU(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &err_name));
  CU(cuGetErrorString(CUDA_ERROR_ILLEGAL_ADDRESS, &err_text));
  CHECK(strcmp(err_name, "CUDA_ERROR_ILLEGAL_ADDRESS") == 0 && strlen(err_text) > 0, "%s", err_name);
  CHECK(strstr(ptxjit_last_error(), "out of bounds") && strstr(ptxjit_last_error(), "thread (184,0,0)"),
        "message: %s", ptxjit_last_error());

  /* Bad PTX: CUDA_ERROR_INVALID_PTX, with the located diagnostics in the error log. */
  char log[1024] = {0};
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, (void *)(uintptr_t)sizeof log};
  CUmodule bad;
  rc = cuModuleLoadDataEx(&bad, ".version 7.8\n.target sm_80\n.address_size 64\n.entry k() { .reg .u32 %r1; mov.u32 %r1 2; }\n", 2, options,
                          values);
  CHECK(rc == CUDA_ERROR_INVALID_PTX, "bad PTX returned %d", rc);
  CHECK(strstr(log, ":4:") != NULL, "log: %s", log);

  /* A kernel using what ptxjit does not support yet loads with its module, and asking for it
   * says why. */
  CUmodule partial;
  CUfunction usable, refused;
  CU(cuModuleLoadData(&partial, ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry ok() { ret; }\n"
                                ".visible .entry k() { frob; }\n"));
  CU(cuModuleGetFunction(&usable, partial, "ok"));
  rc = cuModuleGetFunction(&refused, partial, "k");
  CHECK(rc == CUDA_ERROR_NOT_SUPPORTED && strstr(ptxjit_last_error(), "frob"), "%d: %s", rc, ptxjit_last_error());
  CU(cuModuleUnload(partial));

  /* What numba-cuda and cuda.core use: the driver's linker on one PTX module, whose image is
   * that text; CUDA 12's library API; cuLaunchKernelEx with attributes. */
  CUlinkState link;
  int link_options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *link_values[] = {log, (void *)(uintptr_t)sizeof log};
  CU(cuLinkCreate(2, link_options, link_values, &link));
  CHECK(cuLinkAddData(link, CU_JIT_INPUT_CUBIN, "\x7f" "ELF", 4, "k.cubin", 0, NULL, NULL) == CUDA_ERROR_NOT_SUPPORTED,
        "a cubin input");
  CHECK(strstr(log, "PTX text only") != NULL && (size_t)link_values[1] == strlen(log) + 1, "log: %s", log);
  CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)EXTRA_PTX, strlen(EXTRA_PTX) + 1, "affine.ptx", 0, NULL, NULL));
  CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)EXTRA_PTX, strlen(EXTRA_PTX), "again.ptx", 0, NULL, NULL) ==
            CUDA_ERROR_NOT_SUPPORTED,
        "a second module");
  void *image = NULL;
  size_t image_size = 0;
  CU(cuLinkComplete(link, &image, &image_size));
  CHECK(image_size == strlen(EXTRA_PTX) + 1 && strcmp(image, EXTRA_PTX) == 0, "image of %zu bytes", image_size);
  /* A library needs no current context; a module does. */
  CU(cuCtxSetCurrent(NULL));
  CUmodule no_context;
  CHECK(cuModuleLoadData(&no_context, image) == CUDA_ERROR_INVALID_CONTEXT, "a module without a context");
  CUlibrary lib;
  CU(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
  CU(cuCtxSetCurrent(ctx));
  CU(cuLinkDestroy(link));
  CUkernel kern;
  CUfunction from_kernel;
  CU(cuLibraryGetKernel(&kern, lib, "affine"));
  CU(cuKernelGetFunction(&from_kernel, kern));
  CHECK((void *)from_kernel == (void *)kern, "a kernel is its function");
  CU(cuLibraryGetGlobal(&bias, &bias_size, lib, "bias"));
  new_bias = 11;
  CU(cuMemcpyHtoD(bias, &new_bias, 4));
  packed.k = 5;
  packed.n = N;
  CUlaunchAttribute attrs[2];
  memset(attrs, 0, sizeof attrs);
  attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  attrs[0].value.clusterDim.x = attrs[0].value.clusterDim.y = attrs[0].value.clusterDim.z = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
  CUlaunchConfig config = {12, 1, 1, 256, 1, 1, 0, NULL, attrs, 2};
  CU(cuLaunchKernelEx(&config, from_kernel, NULL, extra));
  CU(cuMemcpyDtoH(hout, dout, N * 4));
  wrong = 0;
  for (int i = 0; i < N; i++) wrong += hout[i] != hin[i] * 5u + 11u;
  CHECK(wrong == 0, "%d affine results wrong after cuLaunchKernelEx", wrong);
  attrs[0].value.clusterDim.x = 2;
  CHECK(cuLaunchKernelEx(&config, from_kernel, NULL, extra) == CUDA_ERROR_NOT_SUPPORTED, "a cluster of 2");
  attrs[0].value.clusterDim.x = 1;
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
  attrs[1].value.cooperative = 1;
  CHECK(cuLaunchKernelEx(&config, from_kernel, NULL, extra) == CUDA_ERROR_NOT_SUPPORTED, "a cooperative launch");
  attrs[1].value.cooperative = 0;
  CU(cuLaunchKernelEx(&config, from_kernel, NULL, extra));
  attrs[1].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
  CHECK(cuLaunchKernelEx(&config, from_kernel, NULL, extra) == CUDA_ERROR_NOT_SUPPORTED &&
            strstr(ptxjit_last_error(), "attribute 7"),
        "an attribute with an effect: %s", ptxjit_last_error());
  CU(cuLibraryUnload(lib));
  /* Bad PTX fails when it is added, with its located diagnostics in the error log. */
  CU(cuLinkCreate(2, link_options, link_values, &link));
  const char *bad_ptx = ".version 7.8\n.target sm_80\n.address_size 64\n.entry k() { .reg .u32 %r1; mov.u32 %r1 2; }\n";
  rc = cuLinkAddData(link, CU_JIT_INPUT_PTX, (void *)bad_ptx, strlen(bad_ptx), "bad.ptx", 0, NULL, NULL);
  CHECK(rc == CUDA_ERROR_INVALID_PTX && strstr(log, "bad.ptx:4:") != NULL, "%d, log: %s", rc, log);
  /* PTX input is a C string: bytes after its NUL are not read. */
  char padded[2048];
  size_t len = strlen(EXTRA_PTX);
  memcpy(padded, EXTRA_PTX, len + 1);
  memset(padded + len + 1, 'x', 8);
  CU(cuLinkAddData(link, CU_JIT_INPUT_PTX, padded, len + 9, "padded.ptx", 0, NULL, NULL));
  CHECK(cuLinkAddData(link, 9, padded, len, "nine", 0, NULL, NULL) == CUDA_ERROR_INVALID_VALUE, "input type 9");
  CU(cuLinkDestroy(link));
  CU(cuLinkCreate(0, NULL, NULL, &link));
  CHECK(cuLinkComplete(link, &image, &image_size) == CUDA_ERROR_INVALID_VALUE, "completing an empty link");
  CU(cuLinkDestroy(link));
  CHECK(cuLinkDestroy(link) == 400, "a destroyed link");

  /* Entry points by name, and a stub for the unimplemented. */
  void *fn = NULL;
  int status = -1;
  CU(cuGetProcAddress_v2("cuMemAlloc", &fn, 12000, 0, &status));
  CHECK(fn == (void *)&cuMemAlloc_v2 && status == 0, "cuMemAlloc resolves to %p", fn);
  CU(cuGetProcAddress_v2("cuGraphCreate", &fn, 12000, 0, &status));
  CHECK(fn != NULL && ((CUresult(*)(void *, unsigned))fn)(NULL, 0) == CUDA_ERROR_NOT_SUPPORTED, "stub");
  CHECK(cuGetProcAddress_v2("notAFunction", &fn, 12000, 0, &status) == CUDA_ERROR_NOT_FOUND && fn == NULL, "unknown");

  void *pinned;
  CU(cuMemAllocHost(&pinned, 64));
  CU(cuMemcpyHtoD(dz, pinned, 64));
  CU(cuMemFreeHost(pinned));
  CU(cuMemFree(dx));
  CU(cuMemFree(dy));
  CU(cuMemFree(dz));
  CU(cuMemFree(din));
  CU(cuMemFree(dout));
  CHECK(cuMemFree(dx) == CUDA_ERROR_INVALID_VALUE, "double free");
  CU(cuEventDestroy(start));
  CU(cuEventDestroy(stop));
  CU(cuStreamDestroy(stream));
  CU(cuModuleUnload(mod));
  CU(cuModuleUnload(mod2));
  CU(cuCtxDestroy(ctx));
  free(hx);
  free(hy);
  free(back);
  free(hin);
  free(hout);
  printf("driver: %s\n", failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
