#!/usr/bin/env python3
"""The half-precision corpus: CUDA kernels written with cuda_fp16.h and cuda_bf16.h, with the
PTX NVIDIA's compiler makes of them checked in next to them. tests/half_corpus.rs runs each
kernel on every engine and checks each result against rustc_apfloat.

Regenerating the PTX (from any directory):

    pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-nvcc-cu12 nvidia-cuda-runtime-cu12
    python3 tests/corpus/half/regen.py

It reuses the cooperative corpus's NVRTC driver (tests/corpus/coop/regen.py), adding the
CUDA runtime wheel's include directory, where the half headers are.
"""
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "coop_regen", os.path.join(HERE, "..", "coop", "regen.py"))
coop = importlib.util.module_from_spec(spec)
spec.loader.exec_module(coop)


def main():
    include = os.path.join(coop.nvidia_dir("cuda_runtime"), "include")
    coop.OPTIONS.append("--include-path=" + include)
    coop.HERE = HERE
    sys.argv = sys.argv[:1] + (sys.argv[1:] or ["half.cu"])
    coop.main()


if __name__ == "__main__":
    main()
