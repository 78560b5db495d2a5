"""Kernels on NumPy arrays: saxpy and a 256-bit carry-chain add against NumPy and Python
integers, every scalar parameter type with its range, in-place semantics, the launch
configuration forms, threads, and Ctrl-C."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import ptxjit
from conftest import ROOT, ptx

SAXPY = ROOT / "examples" / "saxpy.ptx"


def test_saxpy_writes_y_in_place_on_both_engines(engine):
    m = ptxjit.Module.from_file(SAXPY, engine=engine)
    rng = np.random.default_rng(1)
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    want = np.float32(2.5) * x + y  # rounded twice; the kernel's fma rounds once
    y_before = y.copy()
    m.saxpy[(n + 127) // 128, 128](2.5, x, y, n)
    exact = (np.float64(np.float32(2.5)) * x.astype(np.float64) + y_before).astype(np.float32)
    np.testing.assert_array_equal(y, exact)
    np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6)


def test_launch_forms_and_configurations():
    m = ptxjit.Module.from_file(SAXPY)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, dtype=np.float32)
    m.launch("saxpy", 1, 8, (1.0, x, y, 8))
    m.launch("saxpy", grid=(2,), block=(4, 1), args=(1.0, x, y, 8))
    m.saxpy[(2, 1, 1), (4, 1)](1.0, x, y, 8)
    m["saxpy"][2, 4, 0](1.0, x, y, 8)
    np.testing.assert_array_equal(y, 4 * x)
    with pytest.raises(TypeError, match="launch configuration"):
        m.saxpy(1.0, x, y, 8)
    with pytest.raises(TypeError, match=r"\[grid, block\]"):
        m.saxpy[1]
    with pytest.raises(ValueError, match="grid extents"):
        m.saxpy[0, 4]
    with pytest.raises(ValueError, match="1024 threads"):
        m.saxpy[1, 2048](1.0, x, y, 8)
    with pytest.raises(TypeError, match="takes 4 arguments"):
        m.saxpy[1, 4](1.0, x, y)
    with pytest.raises(ValueError, match="no kernel named"):
        m.launch("nope", 1, 1)
    with pytest.raises(AttributeError):
        m.nope
    assert "saxpy" in m and "nope" not in m


# Each thread adds two 256-bit numbers of 8 little-endian u32 limbs with a carry chain.
ADD256 = ptx(
    """
.visible .entry add256(.param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u32 n)
{
    .reg .pred %p;
    .reg .u32 %t, %n, %m, %a<8>, %b<8>;
    .reg .u64 %x, %y, %z, %o;
    mov.u32 %t, %tid.x;
    mov.u32 %n, %ctaid.x;
    mov.u32 %m, %ntid.x;
    mad.lo.u32 %t, %n, %m, %t;
    ld.param.u32 %n, [n];
    setp.ge.u32 %p, %t, %n;
    @%p bra done;
    mul.wide.u32 %o, %t, 32;
    ld.param.u64 %x, [pa];
    ld.param.u64 %y, [pb];
    ld.param.u64 %z, [pc];
    add.u64 %x, %x, %o;
    add.u64 %y, %y, %o;
    add.u64 %z, %z, %o;
    ld.global.v4.u32 {%a0, %a1, %a2, %a3}, [%x];
    ld.global.v4.u32 {%a4, %a5, %a6, %a7}, [%x+16];
    ld.global.v4.u32 {%b0, %b1, %b2, %b3}, [%y];
    ld.global.v4.u32 {%b4, %b5, %b6, %b7}, [%y+16];
    add.cc.u32 %a0, %a0, %b0;
    addc.cc.u32 %a1, %a1, %b1;
    addc.cc.u32 %a2, %a2, %b2;
    addc.cc.u32 %a3, %a3, %b3;
    addc.cc.u32 %a4, %a4, %b4;
    addc.cc.u32 %a5, %a5, %b5;
    addc.cc.u32 %a6, %a6, %b6;
    addc.u32 %a7, %a7, %b7;
    st.global.v4.u32 [%z], {%a0, %a1, %a2, %a3};
    st.global.v4.u32 [%z+16], {%a4, %a5, %a6, %a7};
done:
    ret;
}
"""
)


def to_int(limbs) -> int:
    return int.from_bytes(np.ascontiguousarray(limbs, dtype="<u4").tobytes(), "little")


def test_bignum_carry_chain_against_python_integers(engine):
    m = ptxjit.Module(ADD256, "add256.ptx", engine=engine)
    rng = np.random.default_rng(2)
    n = 300
    a = rng.integers(0, 2**32, size=(n, 8), dtype=np.uint32)
    b = rng.integers(0, 2**32, size=(n, 8), dtype=np.uint32)
    a[0] = 0xFFFFFFFF  # a full carry chain
    b[0] = 0
    b[0, 0] = 1
    c = np.zeros_like(a)
    m.add256[(n + 63) // 64, 64](a, b, c, n)
    for i in range(n):
        assert to_int(c[i]) == (to_int(a[i]) + to_int(b[i])) % 2**256, i
    assert not c[0].any()


# One kernel per type: stores its scalar parameter into a buffer.
INT_TYPES = ["u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "b8", "b16", "b32", "b64"]
DTYPES = {
    "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "s8": np.int8, "s16": np.int16, "s32": np.int32, "s64": np.int64,
    "b8": np.uint8, "b16": np.uint16, "b32": np.uint32, "b64": np.uint64,
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
}


def store_kernel(t: str) -> str:
    bits = int(t[1:])
    width = {8: "b8", 16: "b16", 32: "b32", 64: "b64"}[bits]
    reg = "b16" if bits == 8 else width
    ld = f"ld.param.{'b8' if bits == 8 else width} %v, [v];"
    store = f"st.global.{width} [%p], %v;"
    return ptx(
        f"""
.visible .entry k(.param .u64 p, .param .{t} v)
{{
    .reg .u64 %p;
    .reg .{reg} %v;
    ld.param.u64 %p, [p];
    {ld}
    {store}
    ret;
}}
"""
    )


def bounds(t: str):
    bits = int(t[1:])
    if t[0] == "u":
        return 0, 2**bits - 1
    if t[0] == "s":
        return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    return -(2 ** (bits - 1)), 2**bits - 1


@pytest.mark.parametrize("t", INT_TYPES)
def test_integer_scalars_are_typed_and_range_checked(t):
    m = ptxjit.Module(store_kernel(t))
    lo, hi = bounds(t)
    out = np.zeros(1, dtype=DTYPES[t])
    bits = int(t[1:])
    for v in [lo, hi, 0, 1, -1 if lo < 0 else 2, np.int64(1), np.uint8(7)]:
        m.k[1, 1](out, v)
        # The buffer holds the value's bits at the type's width.
        assert int(out.view(np.dtype(f"u{bits // 8}"))[0]) == int(v) % 2**bits, v
    for bad in [lo - 1, hi + 1, 2**200, -(2**200)]:
        with pytest.raises(ValueError, match="out of range"):
            m.k[1, 1](out, bad)
    with pytest.raises(TypeError, match="integer"):
        m.k[1, 1](out, 1.0)
    with pytest.raises(TypeError, match="integer"):
        m.k[1, 1](out, "1")
    with pytest.raises(TypeError, match="integer"):
        m.k[1, 1](out, True)
    if int(t[1:]) == 64:
        # A 64-bit parameter also takes an array (its address).
        m.k[1, 1](out, out)
    else:
        with pytest.raises(TypeError, match="scalar, got an array"):
            m.k[1, 1](out, out)


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_float_scalars(t):
    bits = int(t[1:])
    m = ptxjit.Module(
        ptx(
            f"""
.visible .entry k(.param .u64 p, .param .{t} v)
{{
    .reg .u64 %p;
    .reg .{t} %v;
    ld.param.u64 %p, [p];
    ld.param.{t} %v, [v];
    st.global.{t} [%p], %v;
    ret;
}}
"""
        )
    )
    out = np.zeros(1, dtype=DTYPES[t])
    for v in [0.1, -2.5, 3, np.float32(0.1), np.float64(1e-300), float("inf"), -0.0, np.int16(-7)]:
        m.k[1, 1](out, v)
        assert out[0] == DTYPES[t](v) and np.signbit(out[0]) == np.signbit(DTYPES[t](v))
    m.k[1, 1](out, float("nan"))
    assert np.isnan(out[0])
    if bits == 32:
        with pytest.raises(ValueError, match="out of range"):
            m.k[1, 1](out, 1e39)
        m.k[1, 1](out, 3.4028235e38)  # f32's largest, as a float rounding to it
        assert out[0] == np.finfo(np.float32).max
    with pytest.raises(ValueError, match="out of range"):
        m.k[1, 1](out, 10**400)
    with pytest.raises(TypeError, match="float"):
        m.k[1, 1](out, "1.0")


def test_f16_parameters_round_as_numpy_does():
    m = ptxjit.Module(
        ptx(
            """
.visible .func (.reg .f16 r) same(.reg .f16 a) { mov.b16 r, a; ret; }
.visible .func (.reg .b16 r) bits(.reg .f16 a) { mov.b16 r, a; ret; }
"""
        )
    )
    rng = np.random.default_rng(3)
    values = list(rng.standard_normal(200) * 10.0 ** rng.integers(-9, 5, 200))
    values += [0.0, -0.0, 65504.0, 65519.99, 2.0**-24, 2.0**-25, 3 * 2.0**-25, 1 + 2.0**-11, 0.1]
    for v in values:
        assert m.bits(v) == int(np.float16(v).view(np.uint16)), v
        assert m.same(v) == float(np.float16(v)), v
    for v in [65520.0, -1e6]:
        with pytest.raises(ValueError, match="out of range"):
            m.bits(v)
    assert m.same(float("inf")) == float("inf")


def test_arrays_must_be_contiguous_and_writable():
    m = ptxjit.Module.from_file(SAXPY)
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(16, dtype=np.float32)
    with pytest.raises(ValueError, match="not C-contiguous"):
        m.saxpy[1, 8](1.0, x, y[::2], 8)
    ro = np.zeros(8, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match="read-only"):
        m.saxpy[1, 8](1.0, x, ro, 8)
    with pytest.raises(ValueError, match="read-only"):
        m.saxpy[1, 2](1.0, x, bytes(8), 2)
    with pytest.raises(TypeError, match="integer"):
        m.saxpy[1, 8](1.0, x, [0.0] * 8, 8)
    # A C-contiguous view and other buffer exporters are written in place.
    y2 = np.zeros((2, 8), dtype=np.float32)
    m.saxpy[1, 8](2.0, x, y2[1], 8)
    np.testing.assert_array_equal(y2[1], 2 * x)
    assert not y2[0].any()
    ba = bytearray(8)
    m.saxpy[1, 2](1.0, x, ba, 2)
    np.testing.assert_array_equal(np.frombuffer(ba, dtype=np.float32), [0.0, 1.0])
    # The same array twice is one buffer: y = 3y.
    z = np.arange(8, dtype=np.float32)
    m.saxpy[1, 8](2.0, z, z, 8)
    np.testing.assert_array_equal(z, 3 * np.arange(8, dtype=np.float32))
    with pytest.raises(ValueError, match="share part"):
        m.saxpy[1, 4](1.0, y[0:6], y[4:10], 4)


def test_dynamic_shared_memory():
    # Each block reverses its 32 elements through a dynamic shared array.
    m = ptxjit.Module(
        ptx(
            """
.extern .shared .align 4 .b32 buf[];
.visible .entry rev(.param .u64 p)
{
    .reg .u32 %t, %u, %v, %b, %w;
    .reg .u64 %a, %s;
    mov.u32 %t, %tid.x;
    mov.u32 %b, %ctaid.x;
    ld.param.u64 %a, [p];
    mad.lo.u32 %u, %b, 32, %t;
    mul.wide.u32 %s, %u, 4;
    add.u64 %a, %a, %s;
    ld.global.u32 %v, [%a];
    mul.lo.u32 %u, %t, 4;
    mov.u32 %w, buf;
    add.u32 %u, %u, %w;
    st.shared.u32 [%u], %v;
    bar.sync 0;
    sub.u32 %u, 31, %t;
    mul.lo.u32 %u, %u, 4;
    add.u32 %u, %u, %w;
    ld.shared.u32 %v, [%u];
    st.global.u32 [%a], %v;
    ret;
}
"""
        )
    )
    x = np.arange(64, dtype=np.uint32)
    m.rev[2, 32, 128](x)
    np.testing.assert_array_equal(x, np.concatenate([np.arange(31, -1, -1), np.arange(63, 31, -1)]))
    with pytest.raises(ptxjit.KernelFault):
        m.rev[2, 32](x)  # no dynamic shared memory: the store is out of bounds


def test_python_threads_share_a_module():
    m = ptxjit.Module.from_file(SAXPY)
    h = ptxjit.Module.from_file(ROOT / "tests" / "corpus" / "hash.ptx")
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(50):
                x = rng.standard_normal(500).astype(np.float32)
                y = rng.standard_normal(500).astype(np.float32)
                want = (np.float64(np.float32(1.5)) * x + y).astype(np.float32)
                m.saxpy[4, 128](1.5, x, y, 500)
                np.testing.assert_array_equal(y, want)
                k = rng.integers(0, 2**63, 100, dtype=np.uint64)
                r = h._Z3mixmm.map(k, k)
                assert [int(v) for v in r[:3]] == [mix(int(a), int(a)) for a in k[:3]]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def mix(h: int, k: int) -> int:
    """`mix` of tests/corpus/hash.cu in Python integers."""
    m64 = 2**64 - 1
    k = (k * 0x87C37B91114253D5) & m64
    k = ((k << 31) | (k >> 33)) & m64
    h ^= (k * 0x4CF5AD432745937F) & m64
    h = ((h << 27) | (h >> 37)) & m64
    return (h * 5 + 0x52DCE729) & m64


SPIN = ptx(
    """
.visible .entry spin(.param .u64 p, .param .u32 n)
{
    .reg .pred %q;
    .reg .u32 %i, %n, %s;
    .reg .u64 %a;
    ld.param.u32 %n, [n];
    mov.u32 %i, 0;
    mov.u32 %s, 0;
loop:
    add.u32 %s, %s, %i;
    add.u32 %i, %i, 1;
    setp.lt.u32 %q, %i, %n;
    @%q bra loop;
    ld.param.u64 %a, [p];
    st.global.u32 [%a], %s;
    ret;
}
"""
)


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT with os.kill")
def test_ctrl_c_stops_a_long_launch_between_blocks():
    m = ptxjit.Module(SPIN)
    out = np.zeros(1, dtype=np.uint32)
    # Time one block, then launch enough blocks for about a minute.
    start = time.perf_counter()
    m.spin[4, 1](out, 1_000_000)
    block = (time.perf_counter() - start) / 4
    blocks = max(8, int(60 / max(block, 1e-6)))
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        m.spin[blocks, 1](out, 1_000_000)
    elapsed = time.perf_counter() - start
    timer.join()
    assert elapsed < 0.3 + 2.0 + 4 * block, elapsed
