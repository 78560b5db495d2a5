#!/usr/bin/env python3
"""Runs every case in this folder on an NVIDIA GPU and writes what the hardware gave.

Each case is a PTX file with one kernel `k(.param .u64 out, .param .u64 in)` and a header of
comments that says how to launch it:

    // block: 48            threads in the one block (x only)
    // in: 5 0xfffffffb     the input buffer, 32-bit words (decimal, negative or hex)
    // out: 96              the output buffer's size in 32-bit words, zeroed before the launch
    // shared: 200          bytes of dynamic shared memory (optional; 0 without the line)

The kernel is loaded through the CUDA driver API (libcuda, by ctypes: nothing else is
needed), launched as one block, and the output buffer read back. Each case runs in a
process of its own under a time limit, so a case that traps or hangs the GPU cannot spoil
the others. The record, one line per case, goes to the file named on the command line:

    python3 tests/hardware/run_on_gpu.py tests/hardware/records/h200.txt

`tests/hardware.rs` holds both engines to the recorded words.
"""

import ctypes
import pathlib
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent


def header(text):
    """The launch a case's header comments ask for: (block, input words, output words,
    dynamic shared bytes)."""
    block, words_in, words_out, shared = None, [], None, 0
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("//"):
            continue
        key, _, value = line[2:].strip().partition(":")
        if key == "block":
            block = int(value, 0)
        elif key == "in":
            words_in += [int(w, 0) & 0xFFFFFFFF for w in value.split()]
        elif key == "out":
            words_out = int(value, 0)
        elif key == "shared":
            shared = int(value, 0)
    if block is None or words_out is None:
        raise ValueError("a case needs `// block:` and `// out:` lines")
    return block, words_in, words_out, shared


class Driver:
    """The few CUDA driver API calls a launch needs."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.check(self.cu.cuInit(0), "cuInit")
        self.device = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.context = ctypes.c_void_p()
        self.check(
            self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device),
            "cuDevicePrimaryCtxRetain",
        )
        self.check(self.cu.cuCtxSetCurrent(self.context), "cuCtxSetCurrent")

    def check(self, status, what):
        if status != 0:
            name = ctypes.c_char_p()
            self.cu.cuGetErrorName(status, ctypes.byref(name))
            raise RuntimeError(f"{what}: {(name.value or b'?').decode()}")

    def describe(self):
        name = ctypes.create_string_buffer(256)
        self.check(self.cu.cuDeviceGetName(name, 256, self.device), "cuDeviceGetName")
        version = ctypes.c_int()
        self.check(self.cu.cuDriverGetVersion(ctypes.byref(version)), "cuDriverGetVersion")
        major, minor = ctypes.c_int(), ctypes.c_int()
        # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(major), 75, self.device), "attr")
        self.check(self.cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.device), "attr")
        v = version.value
        return f"{name.value.decode()}, sm_{major.value}{minor.value}, CUDA driver {v // 1000}.{v % 1000 // 10}"

    def buffer(self, words):
        ptr = ctypes.c_uint64()
        size = max(4, 4 * len(words))
        self.check(self.cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)), "cuMemAlloc")
        host = (ctypes.c_uint32 * max(1, len(words)))(*words)
        self.check(self.cu.cuMemcpyHtoD_v2(ptr, host, ctypes.c_size_t(size)), "cuMemcpyHtoD")
        return ptr

    def run(self, ptx, block, words_in, words_out, shared):
        module = ctypes.c_void_p()
        log = ctypes.create_string_buffer(8192)
        # CU_JIT_ERROR_LOG_BUFFER (5) and CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES (6).
        options = (ctypes.c_int * 2)(5, 6)
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p).value, 8192)
        status = self.cu.cuModuleLoadDataEx(
            ctypes.byref(module), ctypes.c_char_p(ptx.encode() + b"\0"), 2, options, values
        )
        if status != 0:
            raise RuntimeError(f"cuModuleLoadDataEx: {log.value.decode(errors='replace')}")
        function = ctypes.c_void_p()
        self.check(self.cu.cuModuleGetFunction(ctypes.byref(function), module, b"k"), "cuModuleGetFunction")
        out = self.buffer([0] * words_out)
        inp = self.buffer(words_in)
        params = (ctypes.c_void_p * 2)(ctypes.addressof(out), ctypes.addressof(inp))
        self.check(
            self.cu.cuLaunchKernel(function, 1, 1, 1, block, 1, 1, shared, None, params, None),
            "cuLaunchKernel",
        )
        self.check(self.cu.cuCtxSynchronize(), "kernel")
        host = (ctypes.c_uint32 * words_out)()
        self.check(self.cu.cuMemcpyDtoH_v2(host, out, ctypes.c_size_t(4 * words_out)), "cuMemcpyDtoH")
        return list(host)


def run_one(path):
    """Child mode: runs one case, prints its record line."""
    text = path.read_text()
    block, words_in, words_out, shared = header(text)
    driver = Driver()
    try:
        words = driver.run(text, block, words_in, words_out, shared)
        print(path.stem, " ".join(f"{w:08x}" for w in words))
    except RuntimeError as e:
        print(path.stem, "error", str(e).replace("\n", " | "))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--one":
        run_one(pathlib.Path(sys.argv[2]))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    lines = [f"# {time.strftime('%Y-%m-%d')}: {Driver().describe()}"]
    for path in sorted(HERE.glob("cases/*.ptx")):
        try:
            done = subprocess.run(
                [sys.executable, __file__, "--one", str(path)],
                capture_output=True, text=True, timeout=60,
            )
            line = done.stdout.strip() or f"{path.stem} error exit {done.returncode}: {done.stderr.strip()[-300:]}"
        except subprocess.TimeoutExpired:
            line = f"{path.stem} error timed out after 60 s"
        print(line[:200], flush=True)
        lines.append(line)
    pathlib.Path(sys.argv[1]).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
