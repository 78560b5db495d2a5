"""Modules and errors: options, functions(), emit(), PtxError and KernelFault with their
fields, bad arguments, and the differential runner."""

import numpy as np
import pytest

import ptxjit
from conftest import ROOT, ptx

SAXPY = ROOT / "examples" / "saxpy.ptx"


def test_options_and_listing():
    for kw in [{}, {"checked": False}, {"lanes": False}, {"egraph": True}, {"engine": "interp"}]:
        m = ptxjit.Module.from_file(SAXPY, **kw)
        x = np.arange(4, dtype=np.float32)
        y = np.ones(4, dtype=np.float32)
        m.saxpy[1, 4](2.0, x, y, 4)
        np.testing.assert_array_equal(y, 2 * x + 1)
    assert ptxjit.Module.from_file(SAXPY, engine="interp").engine == "interp"
    with pytest.raises(ValueError, match="engine"):
        ptxjit.Module.from_file(SAXPY, engine="gpu")
    with pytest.raises(FileNotFoundError):
        ptxjit.Module.from_file(ROOT / "no-such.ptx")
    m = ptxjit.Module.from_file(SAXPY)
    assert "fma" in m.emit("clif")
    asm = m.emit("asm")
    assert ";; saxpy" in asm and "ret" in asm
    with pytest.raises(ValueError, match="clif"):
        m.emit("llvm")


def test_functions_list_names_kinds_and_types():
    h = ptxjit.Module.from_file(ROOT / "tests" / "corpus" / "u128_mul.ptx")
    fs = {f.name: f for f in h.functions()}
    f = fs["_Z6mulaccomm"]
    assert f.kind == "func" and f.has_body
    assert [t for _, t in f.params] == ["b8[16]", "b64", "b64"]
    assert [t for _, t in f.returns] == ["b8[16]"]
    kernels = [f for f in h.functions() if f.kind == "entry"]
    assert kernels and all(not f.returns for f in kernels)
    assert "func" in repr(f)
    with pytest.raises(TypeError, match="array parameter"):
        h._Z6mulaccomm(b"\0" * 16, 1, 2)


def test_ptx_error_has_its_location_and_every_diagnostic():
    text = ptx(".visible .entry k()\n{\n    foo.u32 %r1;\n    bar;\n}\n")
    with pytest.raises(ptxjit.PtxError) as e:
        ptxjit.Module(text, "k.ptx")
    err = e.value
    assert isinstance(err, ptxjit.Error)
    assert (err.file, err.line) == ("k.ptx", 6)
    assert len(err.diagnostics) >= 2
    assert (err.line, err.column) == err.diagnostics[0][:2]
    assert [d[0] for d in err.diagnostics][-1] == 7
    assert err.message == err.diagnostics[0][2]
    assert str(err).startswith("error: ") and f"--> k.ptx:6:{err.column}" in str(err)
    assert "--> k.ptx:7:5" in str(err)
    with pytest.raises(ptxjit.PtxError) as e:
        ptxjit.Module("garbage")
    assert e.value.file == "<input>" and e.value.line == 1


def test_out_of_bounds_store_is_a_kernel_fault_with_its_fields(engine):
    text = ptx(
        """
.visible .entry fill(.param .u64 p)
{
    .reg .u32 %t, %b, %i;
    .reg .u64 %a, %o;
    mov.u32 %t, %tid.x;
    mov.u32 %b, %ctaid.x;
    mad.lo.u32 %i, %b, 8, %t;
    mul.wide.u32 %o, %i, 4;
    ld.param.u64 %a, [p];
    add.u64 %a, %a, %o;
    st.global.u32 [%a], %i;
    ret;
}
"""
    )
    m = ptxjit.Module(text, "fill.ptx", engine=engine)
    x = np.zeros(10, dtype=np.uint32)
    with pytest.raises(ptxjit.KernelFault) as e:
        m.fill[2, (8, 1)](x)
    f = e.value
    # The first thread past the end: block 1, thread 2 (index 10).
    assert f.kernel == "fill"
    assert f.block == (1, 0, 0) and f.thread == (2, 0, 0)
    assert f.file == "fill.ptx"
    assert f.line == text.splitlines().index("    st.global.u32 [%a], %i;") + 1
    if engine == "jit":
        assert f.address == x.ctypes.data + 40
    else:
        assert f.address is not None  # the interpreter's own copy of the buffer
    assert "out of bounds" in f.message
    assert f.index is None
    assert "--> fill.ptx:" in str(f) and "block (1,0,0), thread (2,0,0)" in str(f)
    # The other threads' stores happened, in place.
    np.testing.assert_array_equal(x, np.arange(10))


def test_diff_runs_both_engines():
    m = ptxjit.Module.from_file(SAXPY)
    r = ptxjit.diff(
        m,
        "saxpy",
        [ptxjit.random(), ptxjit.random(100, "f32"), ptxjit.random(100, "f32"), 100],
        grid=2,
        block=64,
        iterations=20,
    )
    assert r and r.ok and r.runs == 20 and r.difference is None
    x = np.arange(8, dtype=np.float32)
    r = ptxjit.diff(SAXPY.read_text(), "saxpy", [1.5, x, x, 8], grid=1, block=8, iterations=3)
    assert r.ok
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))  # inputs are copied
    h = ptxjit.Module.from_file(ROOT / "tests" / "corpus" / "hash.ptx")
    assert ptxjit.diff(h, "_Z3mixmm", seed=9).ok
    assert ptxjit.diff(h, "_Z3mixmm", [1, ptxjit.random()], iterations=5).runs == 5
    assert "0 mismatches" in str(ptxjit.diff(h, "_Z3mixmm", iterations=2))
    with pytest.raises(TypeError, match="needs grid"):
        ptxjit.diff(m, "saxpy", [1.0, x, x, 8])
    with pytest.raises(TypeError, match="scalar arguments"):
        ptxjit.diff(h, "_Z3mixmm", [x, 1])
    with pytest.raises(ValueError, match="not a PTX type"):
        ptxjit.random(4, "float")
