"""Type stubs of the ptxjit package (the native module ``ptxjit._native``)."""

import os
from typing import Any, Optional, Sequence, Tuple, Union

Dim = Union[int, Tuple[int], Tuple[int, int], Tuple[int, int, int]]
Scalar = Union[int, float, bool, Any]  # Python numbers and NumPy scalars
ArrayLike = Any  # any C-contiguous object with the buffer protocol (NumPy arrays, bytearray)

class Error(Exception):
    """Base class of the errors ptxjit raises itself."""

class PtxError(Error):
    """PTX that does not parse or validate. str() is the located text of every problem."""

    file: str
    line: int
    column: int
    message: str
    diagnostics: list[Tuple[int, int, str]]
    """Every problem as (line, column, message)."""

class KernelFault(Error):
    """A fault inside running PTX (an out-of-bounds access, a stuck barrier, ...)."""

    kernel: str
    """The kernel or function that was running."""
    block: Tuple[int, int, int]
    thread: Tuple[int, int, int]
    file: str
    line: int
    column: int
    address: Optional[int]
    message: str
    index: Optional[int]
    """The element of a vectorised call that faulted, else None."""

class FunctionInfo:
    """One function of a module, as ``Module.functions()`` lists it."""

    name: str
    kind: str
    """``"entry"`` (a kernel) or ``"func"``."""
    params: list[Tuple[str, str]]
    """(name, type) of each parameter: ``"u32"``, or ``"b8[16]"`` for a byte array."""
    returns: list[Tuple[str, str]]
    has_body: bool

class Launcher:
    """A kernel with its launch configuration: calling it launches the kernel."""

    def __call__(self, *args: Union[Scalar, ArrayLike]) -> None: ...

class Kernel:
    """A kernel: ``k[grid, block](*args)`` or ``k[grid, block, shared_bytes](*args)``."""

    @property
    def name(self) -> str: ...
    def __getitem__(
        self, config: Union[Tuple[Dim, Dim], Tuple[Dim, Dim, int]]
    ) -> Launcher: ...

class Function:
    """A ``.func``: ``f(*args)`` returns None, a value, or a tuple of values."""

    @property
    def name(self) -> str: ...
    def __call__(self, *args: Scalar) -> Any: ...
    def map(self, *args: Union[Scalar, ArrayLike]) -> Any:
        """The function on every element of arrays of one shape (scalars are used for every
        element). Each array's dtype must hold its parameter's type exactly (uint32 for
        .u32, int32 for .s32, either for .b32, float32 for .f32). Returns one array per
        return value: None, an array, or a tuple of arrays."""

class Module:
    """A PTX module, parsed, validated and compiled for the JIT (default) or the interpreter.

    Kernels and functions are attributes (``m.saxpy``) or keys (``m["saxpy"]``).
    """

    def __init__(
        self,
        ptx: str,
        name: Optional[str] = None,
        *,
        engine: str = "jit",
        checked: bool = True,
        lanes: bool = True,
        egraph: bool = False,
    ) -> None: ...
    @staticmethod
    def from_file(
        path: Union[str, os.PathLike[str]],
        *,
        engine: str = "jit",
        checked: bool = True,
        lanes: bool = True,
        egraph: bool = False,
    ) -> "Module": ...
    @property
    def name(self) -> str: ...
    @property
    def engine(self) -> str: ...
    def functions(self) -> list[FunctionInfo]: ...
    def emit(self, kind: str) -> str:
        """The compiled code: ``"clif"`` (Cranelift IR) or ``"asm"`` (x86-64)."""
    def launch(
        self,
        kernel: str,
        grid: Dim,
        block: Dim,
        args: Sequence[Union[Scalar, ArrayLike]] = ...,
        shared_bytes: int = 0,
    ) -> None:
        """Launches a kernel; arrays are written in place. Ctrl-C stops it between blocks."""
    def call(self, func: str, *args: Scalar) -> Any: ...
    def __getattr__(self, name: str) -> Union[Kernel, Function]: ...
    def __getitem__(self, name: str) -> Union[Kernel, Function]: ...
    def __contains__(self, name: str) -> bool: ...

class Random:
    """A random argument for ``diff``."""

def random(n: Optional[int] = None, type: Optional[str] = None) -> Random:
    """``random()``: a random scalar of the parameter's type each run; ``random(n, "f32")``:
    a buffer of n random elements. Values are biased to edges (0, ±1, min/max, NaN, ...)."""

class DiffResult:
    """What ``diff`` found; true when the engines agreed on every run."""

    runs: int
    ok: bool
    difference: Optional[str]
    inputs: Optional[str]
    jit: Optional[str]
    interp: Optional[str]
    def __bool__(self) -> bool: ...

def diff(
    module: Union[Module, str],
    name: str,
    args: Optional[Sequence[Union[Scalar, ArrayLike, Random]]] = None,
    *,
    grid: Optional[Dim] = None,
    block: Optional[Dim] = None,
    shared_bytes: int = 0,
    iterations: int = 100,
    seed: int = 1,
    egraph: bool = False,
) -> DiffResult:
    """Runs a .func or kernel on the JIT and on the interpreter with the same inputs,
    ``iterations`` times, and compares every result bit for bit."""
