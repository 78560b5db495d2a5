"""`.func`s from Python: single calls returning Python values, the vectorised form over
NumPy arrays, both engines, checked against Python integers and NumPy."""

import numpy as np
import pytest

import ptxjit
from conftest import ROOT, ptx
from test_launch import mix

HASH = ROOT / "tests" / "corpus" / "hash.ptx"

# A 64-bit multiply-add with its carry: the bignum step, returning two values.
FUNCS = ptx(
    """
.visible .func (.reg .u64 lo, .reg .u64 hi) mad64(.reg .u64 a, .reg .u64 b, .reg .u64 c)
{
    .reg .u64 %l, %h;
    mul.lo.u64 %l, a, b;
    mul.hi.u64 %h, a, b;
    add.cc.u64 lo, %l, c;
    addc.u64 hi, %h, 0;
    ret;
}
.visible .func (.reg .s32 r) neg(.reg .s32 a) { neg.s32 r, a; ret; }
.visible .func (.reg .f32 q, .reg .s8 s) halve(.reg .f32 x, .reg .s8 k)
{
    .reg .s16 %k;
    div.rn.f32 q, x, 0f40000000;
    cvt.s16.s8 %k, k;
    neg.s16 %k, %k;
    cvt.s8.s16 s, %k;
    ret;
}
.visible .func nothing(.reg .u32 a) { ret; }
.visible .func (.reg .u32 v) peek(.reg .u64 p)
{
    .reg .pred %z;
    mov.u32 v, 5;
    setp.eq.u64 %z, p, 0;
    @%z bra done;
    ld.global.u32 v, [p];
done:
    ret;
}
"""
)


def test_single_calls_return_python_values(engine):
    m = ptxjit.Module(FUNCS, engine=engine)
    a, b, c = 2**64 - 1, 2**64 - 3, 2**64 - 1
    lo, hi = m.mad64(a, b, c)
    assert (hi << 64) | lo == a * b + c
    assert m.neg(-5) == 5 and m.neg(-(2**31)) == -(2**31)
    q, s = m.halve(3.0, -128)
    assert (q, s) == (1.5, -128)  # -(-128) = 128, truncated to 8 bits
    assert isinstance(q, float) and isinstance(s, int)
    assert m.nothing(1) is None
    assert m.call("neg", 7) == -7
    h = ptxjit.Module.from_file(HASH, engine=engine)
    assert h._Z3mixmm(12345, 2**64 - 1) == mix(12345, 2**64 - 1)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        m.mad64(1, 2)
    with pytest.raises(ValueError, match="out of range"):
        m.mad64(-1, 2, 3)
    with pytest.raises(TypeError, match="is a kernel"):
        h.call("hash", 1, 2, 3)


def test_vectorised_calls_over_arrays(engine):
    m = ptxjit.Module(FUNCS, engine=engine)
    rng = np.random.default_rng(5)
    n = 2000
    a = rng.integers(0, 2**64, n, dtype=np.uint64)
    b = rng.integers(0, 2**64, n, dtype=np.uint64)
    lo, hi = m.mad64.map(a, b, np.uint64(2**64 - 1))
    assert lo.dtype == np.uint64 and lo.shape == (n,)
    for i in range(0, n, 37):
        want = int(a[i]) * int(b[i]) + 2**64 - 1
        assert (int(hi[i]) << 64) | int(lo[i]) == want
    x = rng.integers(-(2**31), 2**31, (20, 30), dtype=np.int32)
    r = m.neg.map(x)
    assert r.shape == (20, 30) and r.dtype == np.int32
    np.testing.assert_array_equal(r, np.negative(x))  # wraps at -2^31, as neg.s32
    q, s = m.halve.map(np.float32([3.0, -1.0, np.inf]), np.int8([1, -128, 5]))
    np.testing.assert_array_equal(q, np.float32([1.5, -0.5, np.inf]))
    np.testing.assert_array_equal(s, np.int8([-1, -128, -5]))
    assert m.nothing.map(np.arange(3, dtype=np.uint32)) is None
    h = ptxjit.Module.from_file(HASH, engine=engine)
    k = rng.integers(0, 2**64, 500, dtype=np.uint64)
    got = h._Z3mixmm.map(k, k[::-1].copy())
    assert [int(v) for v in got] == [mix(int(x), int(y)) for x, y in zip(k, k[::-1])]
    # .b64 parameters take signed or unsigned 64-bit arrays.
    h._Z3mixmm.map(k.view(np.int64), 3)


def test_vectorised_arguments_are_checked():
    m = ptxjit.Module(FUNCS)
    a = np.arange(4, dtype=np.uint64)
    with pytest.raises(TypeError, match="array of uint64"):
        m.mad64.map(a.astype(np.int64), a, a)
    with pytest.raises(TypeError, match="array of int32"):
        m.neg.map(np.arange(4, dtype=np.float32))
    with pytest.raises(ValueError, match="one shape"):
        m.mad64.map(a, a[:3].copy(), a)
    with pytest.raises(ValueError, match="not C-contiguous"):
        m.mad64.map(a[::2], a[::2], a[::2])
    with pytest.raises(ValueError, match="out of range"):
        m.mad64.map(a, a, -1)
    # Scalars only: one call.
    assert m.neg.map(5).shape == () and int(m.neg.map(5)) == -5


def test_a_fault_in_a_vectorised_call_names_its_element(engine):
    m = ptxjit.Module(FUNCS, engine=engine)
    # A host call reaches module variables only: any other address faults.
    addrs = np.array([0, 0, 16, 0], dtype=np.uint64)
    with pytest.raises(ptxjit.KernelFault) as e:
        m.peek.map(addrs)
    assert e.value.index == 2
    assert e.value.kernel == "peek"
    assert e.value.address == 16
    line = FUNCS.splitlines().index("    ld.global.u32 v, [p];") + 1
    assert (e.value.line, e.value.column) == (line, 5)
    assert e.value.block == (0, 0, 0) and e.value.thread == (0, 0, 0)
    assert "no memory there" in e.value.message
    np.testing.assert_array_equal(m.peek.map(addrs[:2].copy()), [5, 5])
    with pytest.raises(ptxjit.KernelFault) as e:
        m.peek(16)
    assert e.value.index is None and e.value.address == 16
