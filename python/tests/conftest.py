"""Shared PTX for the tests. Expected values come from NumPy, Python integers and
hand-worked values, never from ptxjit itself."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADER = ".version 7.8\n.target sm_80\n.address_size 64\n"

np = pytest.importorskip("numpy", reason="numpy is needed for the ptxjit tests")


def ptx(body: str) -> str:
    return HEADER + body


@pytest.fixture(params=["jit", "interp"])
def engine(request):
    return request.param
