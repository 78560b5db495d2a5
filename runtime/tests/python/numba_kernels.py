"""numba-cuda's kernels on ptxjit as libcuda.so.1: numba compiles Python to PTX with NVVM,
links it through the driver's linker (cuLink*, when nvJitLink is not installed), loads it
as a CUDA 12 library and launches it with cuLaunchKernelEx. Each result is compared with
NumPy's. Run with LD_LIBRARY_PATH holding the directory of ptxjit's libcuda.so.1. Without
the wheels (numba-cuda, nvidia-cuda-nvcc-cu12 for NVVM, nvidia-cuda-runtime-cu12) it says so
and exits 0 (a skip, printed), never passing silently. (Not named numba_cuda.py: that would
shadow numba-cuda's own package.)"""

import math
import sys

try:
    import numpy as np
    from numba import cuda, int32, float32
except Exception as e:  # a missing or broken wheel
    print(f"SKIPPED numba-cuda test: the wheels are not importable ({e!r})")
    sys.exit(0)


@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def roots(x, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = math.sqrt(x[i])


@cuda.jit
def block_sums(x, out):
    """A tree reduction of each block's 128 values in shared memory."""
    s = cuda.shared.array(128, dtype=int32)
    t = cuda.threadIdx.x
    s[t] = x[cuda.blockIdx.x * 128 + t]
    cuda.syncthreads()
    h = 64
    while h > 0:
        if t < h:
            s[t] += s[t + h]
        cuda.syncthreads()
        h //= 2
    if t == 0:
        out[cuda.blockIdx.x] = s[0]


@cuda.jit
def warp_sums(x, out):
    """Each warp's sum by down shuffles; lane 0 writes it."""
    i = cuda.grid(1)
    v = x[i]
    d = 16
    while d > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, d)
        d //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


@cuda.jit
def histogram(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(bins, x[i] % bins.size, 1)


def main():
    rng = np.random.default_rng(7)
    n = 5000
    # Multiples of 1/64 under 64: a * x + y is exact in f32, with numba's fma or without.
    x = (rng.integers(-4096, 4096, n) / 64).astype(np.float32)
    y = (rng.integers(-4096, 4096, n) / 64).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    a = np.float32(2.5)
    saxpy[(n + 255) // 256, 256](a, x, y, out)
    assert np.array_equal(out, a * x + y), "saxpy"
    x = rng.standard_normal(n).astype(np.float32)

    r = np.abs(x)
    roots[(n + 127) // 128, 128](r, out)
    assert np.array_equal(out, np.sqrt(r)), "sqrt"

    v = rng.integers(-1000, 1000, 64 * 128, dtype=np.int32)
    sums = np.zeros(64, dtype=np.int32)
    block_sums[64, 128](v, sums)
    assert np.array_equal(sums, v.reshape(64, 128).sum(axis=1, dtype=np.int32)), "block sums"

    warps = np.zeros(len(v) // 32, dtype=np.int32)
    warp_sums[len(v) // 256, 256](v, warps)
    assert np.array_equal(warps, v.reshape(-1, 32).sum(axis=1, dtype=np.int32)), "warp sums"

    k = rng.integers(0, 1 << 20, 20000, dtype=np.int32)
    bins = np.zeros(37, dtype=np.int32)
    histogram[(len(k) + 255) // 256, 256](k, bins)
    assert np.array_equal(bins, np.bincount(k % 37, minlength=37).astype(np.int32)), "histogram"

    # Device arrays: copies in and out through the driver's memory functions.
    d = cuda.to_device(x)
    d_out = cuda.device_array_like(x)
    roots[(n + 127) // 128, 128](d, d_out)
    got = d_out.copy_to_host()
    assert np.array_equal(got[x >= 0], np.sqrt(x[x >= 0])), "device arrays"
    assert np.all(np.isnan(got[x < 0])), "sqrt of a negative is NaN"
    print("numba-cuda: ok")


main()
