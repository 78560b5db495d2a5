"""gpuocelot's ptx_run driven as a mock GPU drives it: the library loaded with ctypes from the
path OCELOT_PATH names, argtypes as such mocks declare them, and each kernel argument *the
value itself* in a void* array (buffer addresses from host allocations, integers widened).
Expected values are computed here in Python."""

import ctypes
import os
import struct
import sys
import time

lib = ctypes.CDLL(os.environ["OCELOT_PATH"])
lib.ptx_run.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)] + [ctypes.c_int] * 7
lib.ptx_run.restype = None
lib.ptxjit_last_error.restype = ctypes.c_char_p


def ptx_run(src, args, local, grid, shared=0):
    """What a mock's cuLaunchKernel does: every argument cast to void*."""
    argv = (ctypes.c_void_p * len(args))(*[ctypes.cast(a, ctypes.c_void_p) for a in args])
    lib.ptx_run(src, len(args), argv, *local, *grid, shared)


# out[i] = a[i] * k + b[i] (u32, wrapping), for i < n: buffers and integer arguments.
AFFINE = b"""
.version 7.8
.target sm_80
.address_size 64
.visible .entry affine(.param .u64 out, .param .u64 a, .param .u64 b, .param .u32 k, .param .u32 n)
{
  .reg .u32 %r<9>;
  .reg .u64 %rd<8>;
  .reg .pred %p;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [a];
  ld.param.u64 %rd3, [b];
  ld.param.u32 %r1, [k];
  ld.param.u32 %r2, [n];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.u32 %r3, %r3, %r4, %r5;
  setp.ge.u32 %p, %r3, %r2;
  @%p bra DONE;
  mul.wide.u32 %rd4, %r3, 4;
  add.u64 %rd5, %rd2, %rd4;
  add.u64 %rd6, %rd3, %rd4;
  add.u64 %rd7, %rd1, %rd4;
  ld.global.u32 %r6, [%rd5];
  ld.global.u32 %r7, [%rd6];
  mad.lo.u32 %r8, %r6, %r1, %r7;
  st.global.u32 [%rd7], %r8;
DONE:
  ret;
}
"""

# Reverses each block's slice of `data` through dynamic shared memory.
REVERSE = b"""
.version 7.8
.target sm_80
.address_size 64
.extern .shared .align 4 .b8 tile[];
.visible .entry reverse(.param .u64 data)
{
  .reg .u32 %r<8>;
  .reg .u64 %rd<6>;
  ld.param.u64 %rd1, [data];
  mov.u32 %r1, %tid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %ctaid.x;
  mad.lo.u32 %r4, %r3, %r2, %r1;
  mul.wide.u32 %rd2, %r4, 4;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.b32 %r5, [%rd3];
  mov.u32 %r6, tile;
  shl.b32 %r7, %r1, 2;
  add.u32 %r7, %r6, %r7;
  st.shared.b32 [%r7], %r5;
  bar.sync 0;
  sub.u32 %r7, %r2, %r1;
  sub.u32 %r7, %r7, 1;
  shl.b32 %r7, %r7, 2;
  add.u32 %r7, %r6, %r7;
  ld.shared.b32 %r5, [%r7];
  st.global.b32 [%rd3], %r5;
  ret;
}
"""

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("check failed:", what, file=sys.stderr)


n = 1000
a = (ctypes.c_uint32 * n)(*[(i * 2654435761) % 2**32 for i in range(n)])
b = (ctypes.c_uint32 * n)(*[i * 7 for i in range(n)])
out = (ctypes.c_uint32 * n)()
ptx_run(AFFINE, [ctypes.addressof(out), ctypes.addressof(a), ctypes.addressof(b), 13, n], (128, 1, 1), (8, 1, 1))
check(list(out) == [(a[i] * 13 + b[i]) % 2**32 for i in range(n)], "affine results")

# The same text again hits the cache: timed, and the result is the same.
out2 = (ctypes.c_uint32 * n)()
start = time.perf_counter()
for _ in range(20):
    ptx_run(AFFINE, [ctypes.addressof(out2), ctypes.addressof(a), ctypes.addressof(b), 13, n], (128, 1, 1), (8, 1, 1))
per_call = (time.perf_counter() - start) / 20
check(list(out2) == list(out), "cached module results")
check(per_call < 0.05, f"cached ptx_run took {per_call * 1e3:.1f} ms")

vals = [float(i) * 0.5 for i in range(256)]
data = (ctypes.c_float * 256)(*vals)
ptx_run(REVERSE, [ctypes.addressof(data)], (64, 1, 1), (4, 1, 1), 64 * 4)
want = [v for blk in range(4) for v in reversed(vals[blk * 64:(blk + 1) * 64])]
check(list(data) == want, "reverse through dynamic shared memory")

# A bad module is reported, not a crash.
ptx_run(b".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k() { .reg .u32 %r1; mov.u32 %r1 2; }\n", [], (1, 1, 1), (1, 1, 1))
check(b"<ptx_run>:4:" in lib.ptxjit_last_error(), "located error: %r" % lib.ptxjit_last_error())

print("ptx_run:", "FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
