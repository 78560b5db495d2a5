"""Run NVIDIA PTX on the CPU: launch kernels on NumPy arrays, call device functions.

``Module(ptx)`` parses, validates and compiles PTX (the Cranelift JIT by default, or the
reference interpreter with ``engine="interp"``). Kernels launch on arrays in place::

    m = ptxjit.Module.from_file("saxpy.ptx")
    m.saxpy[grid, block](2.0, x, y, n)          # or m.launch("saxpy", grid, block, args)

``.func``\\ s are Python callables (``m.add(1, 2)``) with a vectorised form over arrays
(``m.add.map(xs, ys)``). Errors: ``PtxError`` (bad PTX), ``KernelFault`` (a fault while the
PTX runs), ``ValueError``/``TypeError`` (bad arguments); Ctrl-C stops a launch between
blocks. ``diff()`` runs the same PTX on both engines and compares the results.
"""

from ._native import (
    DiffResult,
    Error,
    Function,
    FunctionInfo,
    Kernel,
    KernelFault,
    Launcher,
    Module,
    PtxError,
    Random,
    diff,
    random,
)

__all__ = [
    "DiffResult",
    "Error",
    "Function",
    "FunctionInfo",
    "Kernel",
    "KernelFault",
    "Launcher",
    "Module",
    "PtxError",
    "Random",
    "diff",
    "random",
]
