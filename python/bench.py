"""Python-side costs of the ptxjit package against the Rust library, in one run.

- launch overhead of a cached module: µs per launch of an empty kernel (grid 1, block 1),
  through a prepared launcher (``k = m.empty[1, 1]; k()``), through ``m.empty[1, 1]()`` and
  ``m.launch(...)``, and with two array arguments and a scalar;
- the vectorised ``.func``: ns per element of ``m.mix.map(a, b)`` over 1M uint64 pairs
  (tests/corpus/hash.ptx's ``mix``), and of single calls from Python;
- the Rust figures for the same work (``cargo run --release --example python_baseline``),
  unless ``--no-rust``.

Each figure is the best of several timings. Prints ``RESULT name=value`` lines and a table.
Usage: ``python python/bench.py [--no-rust]`` from the repository root.
"""

import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import ptxjit

ROOT = Path(__file__).resolve().parents[1]
EMPTY = ".version 7.8\n.target sm_80\n.address_size 64\n"
EMPTY += ".visible .entry empty() { ret; }\n"
EMPTY += ".visible .entry args(.param .u64 a, .param .u64 b, .param .u32 n) { ret; }\n"


def best(runs, f):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return min(times)


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    results = {}
    m = ptxjit.Module(EMPTY, "empty.ptx")
    k = m.empty[1, 1]
    launches = 100_000

    def prepared():
        for _ in range(launches):
            k()

    def indexed():
        for _ in range(launches):
            m.empty[1, 1]()

    def method():
        for _ in range(launches):
            m.launch("empty", 1, 1)

    x = np.zeros(1024, dtype=np.float32)
    y = np.zeros(1024, dtype=np.float32)
    ka = m.args[1, 1]

    def with_args():
        for _ in range(launches):
            ka(x, y, 1024)

    for name, f in [
        ("launch_prepared_us", prepared),
        ("launch_indexed_us", indexed),
        ("launch_method_us", method),
        ("launch_args_us", with_args),
    ]:
        results[name] = best(5, f) * 1e6 / launches

    h = ptxjit.Module.from_file(ROOT / "tests" / "corpus" / "hash.ptx")
    mix = h._Z3mixmm
    n = 1_000_000
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**64, n, dtype=np.uint64)
    b = rng.integers(0, 2**64, n, dtype=np.uint64)
    results["map_ns"] = best(7, lambda: mix.map(a, b)) * 1e9 / n
    calls = 100_000
    al, bl = [int(v) for v in a[:calls]], [int(v) for v in b[:calls]]

    def single():
        for p, q in zip(al, bl):
            mix(p, q)

    results["call_ns"] = best(5, single) * 1e9 / calls

    if "--no-rust" not in sys.argv:
        out = subprocess.run(
            ["cargo", "run", "--release", "-q", "--example", "python_baseline"],
            cwd=ROOT,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        for line in out.splitlines():
            if line.startswith("RESULT "):
                key, value = line[len("RESULT ") :].split("=")
                results[key] = float(value)

    for key, value in results.items():
        print(f"RESULT {key}={value:.3f}")
    print()
    print(f"{time.strftime('%Y-%m-%d')}, {cpu_name()}, Python {platform.python_version()}")
    print(f"{'measure':<44} {'python':>10} {'rust':>10} {'ratio':>7}")
    rust_launch = results.get("rust_launch_us")
    for key, label in [
        ("launch_prepared_us", "empty launch, k = m.empty[1, 1]; k() (µs)"),
        ("launch_indexed_us", "empty launch, m.empty[1, 1]() (µs)"),
        ("launch_method_us", "empty launch, m.launch(...) (µs)"),
        ("launch_args_us", "launch with 2 arrays and a u32 (µs)"),
    ]:
        r = f"{rust_launch:10.3f} {results[key] / rust_launch:7.2f}" if rust_launch else ""
        print(f"{label:<44} {results[key]:10.3f} {r}")
    rust_call = results.get("rust_func_call_ns")
    r = f"{rust_call:10.2f} {results['map_ns'] / rust_call:7.2f}" if rust_call else ""
    print(f"{'mix over 1M pairs, f.map(a, b) (ns/element)':<44} {results['map_ns']:10.2f} {r}")
    print(f"{'mix, one Python call f(a, b) (ns/call)':<44} {results['call_ns']:10.2f}")


if __name__ == "__main__":
    main()
