#!/usr/bin/env bash
# Regenerates the corpus PTX from the CUDA sources with clang-16's NVPTX backend.
#   apt-get install clang-16
# -ffp-contract=off keeps a*b+c unfused, as the host build (g++ -ffp-contract=off) computes it;
# kernels that want a fused multiply-add say so with FMAF/FMA.
set -euo pipefail
cd "$(dirname "$0")"
for f in *.cu; do
  clang-16 -x cuda --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib -O2 \
    -ffp-contract=off -S "$f" -o "${f%.cu}.ptx"
done
