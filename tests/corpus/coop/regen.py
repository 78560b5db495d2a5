#!/usr/bin/env python3
"""The cooperative corpus: CUDA kernels that work together through shared memory, block
barriers (__syncthreads and its _count/_and/_or forms) and warp intrinsics (shuffles,
votes, match, redux), each with PTX from NVIDIA's own compiler checked in next to it.

tests/coop_corpus.rs launches every kernel on every engine and compares each buffer bit
for bit with host.cpp, which runs the same source on the CPU (g++, each block's threads as
real threads, CUDA's intrinsics emulated in host_cuda.h). Every kernel is free of races, so
its results do not depend on how the threads interleave.

Each kernel is also compiled as a debug build (-G, as `nvcc -G` builds it) into debug/: its
device functions stay functions (CUDA's intrinsics too, with their barriers and shuffles,
which ptxjit inlines into the kernel), with `.loc`/`.file` line information and DWARF
sections. Debug builds run in the root directory with the headers handed to NVRTC in
memory, so that the paths recorded in them (`.file`, the DWARF compilation directory) name
no particular checkout.

Regenerating the PTX (this script, from any directory):

    pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12
    python3 tests/corpus/coop/regen.py            # every *.cu here
    python3 tests/corpus/coop/regen.py vote.cu    # some of them

It loads NVRTC (site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.*) with ctypes, compiles
each <name>.cu for compute_80 (sm_80 has redux.sync) without fused multiply-add (the host
build uses -ffp-contract=off, so float results agree), writes <name>.ptx, and checks it
with ptxas (site-packages/nvidia/cuda_nvcc/bin/ptxas -arch=sm_80). Kernels are
`extern "C"`, so their PTX names are their C names.
"""
import ctypes
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OPTIONS = ["--gpu-architecture=compute_80", "-fmad=false", "-default-device", "--std=c++17"]


def nvidia_dir(package):
    import importlib

    module = importlib.import_module("nvidia." + package)
    return list(module.__path__)[0]


def load_nvrtc():
    libs = sorted(glob.glob(os.path.join(nvidia_dir("cuda_nvrtc"), "lib", "libnvrtc.so.*")))
    if not libs:
        sys.exit("libnvrtc not found: pip install nvidia-cuda-nvrtc-cu12")
    lib = ctypes.CDLL(libs[0])
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def compile_ptx(lib, path, debug=False):
    name = os.path.basename(path)
    with open(path, "rb") as f:
        source = f.read()
    prog = ctypes.c_void_p()
    if debug:
        with open(os.path.join(HERE, "coop.h"), "rb") as f:
            header = f.read()
        headers = (ctypes.c_char_p * 1)(header)
        names = (ctypes.c_char_p * 1)(b"coop.h")
        created = lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 1, headers,
                                         names)
        options = OPTIONS + ["-G"]
    else:
        created = lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None)
        options = OPTIONS + ["--include-path=" + HERE]
    check(lib, created)
    argv = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
    result = lib.nvrtcCompileProgram(prog, len(options), argv)
    size = ctypes.c_size_t()
    check(lib, lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size)))
    log = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetProgramLog(prog, log))
    if result != 0:
        sys.exit(f"{name}: {lib.nvrtcGetErrorString(result).decode()}\n{log.value.decode()}")
    if log.value.strip():
        print(f"{name}:\n{log.value.decode()}", file=sys.stderr)
    check(lib, lib.nvrtcGetPTXSize(prog, ctypes.byref(size)))
    ptx = ctypes.create_string_buffer(size.value)
    check(lib, lib.nvrtcGetPTX(prog, ptx))
    check(lib, lib.nvrtcDestroyProgram(ctypes.byref(prog)))
    return ptx.value.decode()


def check(lib, result):
    if result != 0:
        sys.exit(f"nvrtc: {lib.nvrtcGetErrorString(result).decode()}")


def ptxas(path):
    exe = os.path.join(nvidia_dir("cuda_nvcc"), "bin", "ptxas")
    if not os.path.exists(exe):
        sys.exit("ptxas not found: pip install nvidia-cuda-nvcc-cu12")
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([exe, "-arch=sm_80", path, "-o", os.path.join(tmp, "out.cubin")],
                             capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"ptxas rejects {path}:\n{out.stderr}")


def main():
    lib = load_nvrtc()
    files = [os.path.abspath(os.path.join(HERE, f)) for f in sys.argv[1:]] or sorted(
        glob.glob(os.path.join(HERE, "*.cu")))
    cwd = os.getcwd()
    for path in files:
        base = os.path.basename(path)[: -len(".cu")] + ".ptx"
        for debug, out in [(False, os.path.join(HERE, base)),
                           (True, os.path.join(HERE, "debug", base))]:
            # The debug build records its working directory: the root, not the checkout.
            os.chdir("/" if debug else cwd)
            ptx = compile_ptx(lib, path, debug)
            os.chdir(cwd)
            with open(out, "w") as f:
                f.write(ptx)
            ptxas(out)
            print(os.path.relpath(out))


if __name__ == "__main__":
    main()
