#!/usr/bin/env bash
# tinygrad's backend tests on its mock GPUs, with ptxjit serving gpuocelot's `ptx_run`, as
# tinygrad's own CI runs them with gpuocelot (its workflow `test.yml`, job `testnvidia`).
#
# usage: runtime/tests/tinygrad.sh TINYGRAD_CHECKOUT [ptx|nv] [pytest arguments...]
#   ptx: DEV=MOCK+CUDA:PTX, tinygrad's own PTX renderer;
#   nv:  DEV=MOCK+NV, tinygrad's CUDA C compiled to PTX by NVRTC. The mock GPU is sm_35,
#        which NVRTC 12 refuses: set NVRTC_DIR to the lib folder of the wheel
#        nvidia-cuda-nvrtc-cu11==11.8.89 (`pip download --no-deps`, then unzip it).
#
# Needs python3 with tinygrad's test extras (`pip install -e "TINYGRAD_CHECKOUT[testing_unit]"`:
# torch, pytest, pytest-xdist, hypothesis, ...) and clang on PATH (tinygrad's CPU device).
# The record of runs is in docs/testing.md, "External suites".
set -euo pipefail
usage() {
    sed -n 5p "$0" | sed 's/^# //' >&2
    exit 2
}
if [ $# -lt 1 ] || [ "$1" = -h ] || [ "$1" = --help ] || [ ! -d "$1" ]; then
    usage
fi
tinygrad=$(realpath -- "$1")
mode=${2:-ptx}
shift $(($# < 2 ? $# : 2))
case $mode in
    ptx) ;;
    nv)
        : "${NVRTC_DIR:?nv mode needs NVRTC_DIR, the lib folder of NVRTC 11.8 (see the header)}"
        if [ ! -f "$NVRTC_DIR/libnvrtc.so.11.2" ]; then
            echo "tinygrad.sh: no libnvrtc.so.11.2 in $NVRTC_DIR" >&2
            exit 2
        fi
        ;;
    *)
        echo "tinygrad.sh: mode is ptx or nv, not $mode" >&2
        usage
        ;;
esac
root=$(cd "$(dirname "$0")/../.." && pwd)
cargo build --release -p ptxjit-runtime --manifest-path "$root/Cargo.toml"
# tinygrad falls back to a gpuocelot installed in the system when OCELOT_PATH names no file.
export OCELOT_PATH="${CARGO_TARGET_DIR:-$root/target}/release/libptxjit_runtime.so"
if [ ! -f "$OCELOT_PATH" ]; then
    echo "tinygrad.sh: the runtime library is not at $OCELOT_PATH" >&2
    exit 1
fi
export PYTHONPATH="$tinygrad" FORWARD_ONLY=1
case $mode in
    ptx) export DEV=MOCK+CUDA:PTX ;;
    nv)
        export DEV=MOCK+NV SKIP_SLOW_TEST=1 NVRTC_PATH="$NVRTC_DIR/libnvrtc.so.11.2"
        export LD_LIBRARY_PATH="$NVRTC_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        ;;
esac
cd "$tinygrad"
exec python3 -m pytest -n auto -q -rfE -p no:cacheprovider test/backend \
    --ignore test/backend/test_multitensor.py "$@"
