#!/usr/bin/env python3
"""Checks the host reference (host.cpp) against a second, simple model of each kernel in
Python: builds every kernel's host program with g++, runs it on random inputs with the
launch shapes tests/coop_corpus.rs uses (several times, since its threads interleave
differently each run), and compares every output with what the model computes.

    python3 tests/corpus/coop/selftest.py [KERNEL...]

Not part of `cargo test`: run it after changing host.cpp, host_cuda.h or a kernel.
"""
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def f32(x):
    # Rounding a double result of one f32 operation to f32 is the correctly rounded f32
    # result (53 >= 2 * 24 + 2), so Python floats model f32 arithmetic.
    return struct.unpack("<f", struct.pack("<f", x))[0]


def pack(fmt, values):
    return struct.pack("<%d%s" % (len(values), fmt), *values)


def unpack(fmt, data):
    return list(struct.unpack("<%d%s" % (len(data) // struct.calcsize(fmt), fmt), data))


def s32(x):
    x &= M32
    return x - (1 << 32) if x >> 31 else x


class Case:
    def __init__(self, grid, block, shared, args):
        self.grid, self.block, self.shared, self.args = grid, block, shared, args


def run_host(exe, case, tmp):
    """args: ('buf', fmt, values) or ('scalar', text). Returns the output buffers."""
    cmd = [exe, "%d,%d,%d" % case.grid, "%d,%d,%d" % case.block, str(case.shared)]
    outs = []
    for k, a in enumerate(case.args):
        if a[0] == "buf":
            i, o = os.path.join(tmp, "in%d" % k), os.path.join(tmp, "out%d" % k)
            with open(i, "wb") as f:
                f.write(pack(a[1], a[2]))
            cmd.append(i + ":" + o)
            outs.append((a[1], o))
        else:
            cmd.append(str(a[1]))
            outs.append(None)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit("host run failed (%d): %s" % (r.returncode, r.stderr))
    return [unpack(o[0], open(o[1], "rb").read()) if o else None for o in outs]


def rand_u32(rng, n):
    return [rng.getrandbits(32) >> rng.randrange(0, 32, 4) for _ in range(n)]


def warps_of(block_threads):
    """(first linear thread, lanes) of each warp of a block."""
    return [(w, min(32, block_threads - w)) for w in range(0, block_threads, 32)]


# ---- the models: each returns (case, check(outputs)) -------------------------------------


def reduce_sum(rng):
    n, grid, block = 1000, 4, 128
    data = [rng.getrandbits(32) for _ in range(n)]
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", data), ("buf", "I", [0] * grid), ("buf", "Q", [0]), ("scalar", n)])
    sums = [sum(data[b * 2 * block:(b + 1) * 2 * block]) & M32 for b in range(grid)]
    return case, {1: sums, 2: [sum(sums)]}


def scan_hillis(rng):
    n, grid, block = 280, 3, 100
    data = rand_u32(rng, n)
    out, totals = [], []
    for b in range(grid):
        acc = 0
        for i in range(b * block, (b + 1) * block):
            acc = (acc + (data[i] if i < n else 0)) & M32
            if i < n:
                out.append(acc)
        totals.append(acc)
    case = Case((grid, 1, 1), (block, 1, 1), 0, [("buf", "I", data), ("buf", "I", [0] * n),
                                                ("buf", "I", [0] * grid), ("scalar", n)])
    return case, {1: out, 2: totals}


def scan_blelloch(rng):
    n, grid, block = 300, 3, 64
    data = [rng.getrandbits(64) >> rng.randrange(0, 64, 8) for _ in range(n)]
    out, totals = [], []
    for b in range(grid):
        acc = 0
        for i in range(b * 2 * block, (b + 1) * 2 * block):
            if i < n:
                out.append(acc)
            acc = (acc + (data[i] if i < n else 0)) & M64
        totals.append(acc)
    case = Case((grid, 1, 1), (block, 1, 1), 0, [("buf", "Q", data), ("buf", "Q", [0] * n),
                                                ("buf", "Q", [0] * grid), ("scalar", n)])
    return case, {1: out, 2: totals}


def matmul_tiled(rng):
    m, n, k = 40, 24, 36
    a = [f32(rng.uniform(-10, 10)) for _ in range(m * k)]
    b = [f32(rng.uniform(-10, 10)) for _ in range(k * n)]
    c = []
    for r in range(m):
        for col in range(n):
            acc = 0.0
            for j in range(k):
                acc = f32(acc + f32(a[r * k + j] * b[j * n + col]))
            c.append(acc)
    case = Case(((n + 15) // 16, (m + 15) // 16, 1), (16, 16, 1), 0,
                [("buf", "f", a), ("buf", "f", b), ("buf", "f", [0.0] * m * n),
                 ("scalar", m), ("scalar", n), ("scalar", k)])
    return case, {2: c}


def histogram_shared(rng):
    n, grid, block = 1000, 3, 48
    data = [rng.getrandbits(32) >> rng.randrange(0, 24) for _ in range(n)]
    bins = [0] * 64
    maxes = [0] * grid
    all_or = 0
    for i, v in enumerate(data):
        bins[v % 64] += 1
        b = i % (grid * block) // block
        maxes[b] = max(maxes[b], v)
        all_or |= 1 << (v // 64 % 32)
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", data), ("buf", "I", [0] * 64), ("buf", "I", [0] * grid),
                 ("buf", "I", [0]), ("scalar", n)])
    return case, {1: bins, 2: maxes, 3: [all_or]}


def transpose_tiled(rng):
    w, h = 70, 45
    data = [rng.getrandbits(32) for _ in range(w * h)]
    out = [data[r * w + c] for c in range(w) for r in range(h)]
    case = Case(((w + 31) // 32, (h + 31) // 32, 1), (32, 8, 1), 0,
                [("buf", "I", data), ("buf", "I", [0] * w * h), ("scalar", w), ("scalar", h)])
    return case, {1: out}


def dyn_shared_case(rng, items, grid, n):
    data = [rng.getrandbits(64) for _ in range(n)]
    out, odd = [0] * n, []
    for b in range(grid):
        buf = [data[b * items + j] if b * items + j < n else 0 for j in range(items)]
        count = 0
        for j in range(items):
            v = buf[items - 1 - j] ^ ((buf[j] << 1) & M64)
            if b * items + j < n:
                out[b * items + j] = v
            count += v & 1
        odd.append(count)
    case = Case((grid, 1, 1), (100, 1, 1), items * 8,
                [("buf", "Q", data), ("buf", "Q", [0] * n), ("buf", "I", [0] * grid),
                 ("scalar", items), ("scalar", n)])
    return case, {1: out, 2: odd}


def dyn_shared(rng):
    return dyn_shared_case(rng, 250, 3, 700)


def dyn_shared_small(rng):
    return dyn_shared_case(rng, 40, 4, 150)


def shfl_reduce(rng):
    grid, block = 2, 48
    total = grid * block
    data = [rng.getrandbits(32) for _ in range(total)]
    ddata = [rng.uniform(-1e6, 1e6) for _ in range(total)]
    out, out64, dout = [0] * 4 * total, [0] * total, [0.0] * total
    for b in range(grid):
        for w0, lanes in warps_of(block):
            base = b * block + w0
            v = data[base:base + lanes]
            # down tree: reads past the warp's lanes are ignored
            down = list(v)
            d = 16
            while d:
                down = [down[l] + down[l + d] if l + d < lanes else down[l] for l in range(lanes)]
                down = [x & M32 for x in down]
                d //= 2
            s8 = [sum(v[l & ~7:(l & ~7) + 8]) & M32 for l in range(lanes)]
            warp_sum = sum(v) & M32
            clamped = list(v)
            for d in (1, 2, 4):
                clamped = [(clamped[l] + clamped[l + d if (l % 8) + d < 8 else l]) & M32
                           for l in range(lanes)]
            wide = [(v[l] * 0x100000001 - (base + l)) & M64 for l in range(lanes)]
            for d in (1, 2, 4, 8, 16):
                wide = [wide[l] ^ ((wide[l ^ d] * 3) & M64) if (l ^ d) < lanes else wide[l]
                        for l in range(lanes)]
            x = ddata[base:base + lanes]
            for d in (8, 4, 2, 1):
                x = [x[l] + 0.5 * x[l + d if (l % 16) + d < 16 else l] for l in range(lanes)]
            for l in range(lanes):
                out[4 * (base + l):4 * (base + l) + 4] = [down[l], s8[l], warp_sum, clamped[l]]
                out64[base + l] = wide[l]
                dout[base + l] = x[l]
            assert down[0] == warp_sum
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", data), ("buf", "d", ddata), ("buf", "I", [0] * 4 * total),
                 ("buf", "Q", [0] * total), ("buf", "d", [0.0] * total)])
    return case, {2: out, 3: out64, 4: dout}


def shfl_scan(rng):
    grid, bx, by = 2, 16, 5
    block = bx * by
    total = grid * block
    data = [rng.getrandbits(32) >> rng.randrange(0, 32, 4) for _ in range(total)]
    out = [0] * 7 * total
    for b in range(grid):
        block_acc = 0
        for w0, lanes in warps_of(block):
            base = b * block + w0
            v = data[base:base + lanes]
            scan = [sum(v[:l + 1]) & M32 for l in range(lanes)]
            scan8 = [sum(v[l & ~7:l + 1]) & M32 for l in range(lanes)]
            for l in range(lanes):
                if lanes == 32:
                    src = (31 - l) if l % 2 else (l * 7 + 3) % 32
                else:
                    src = (l * 7 + 3) % lanes
                row = [scan[l], scan8[l], scan[-1], v[src], v[(l & ~7) + (l + 3) % 8],
                       (block_acc + scan[l]) & M32, v[(l + 1) % lanes] * 3 & M32]
                out[7 * (base + l):7 * (base + l) + 7] = row
            block_acc += scan[-1]
    case = Case((grid, 1, 1), (bx, by, 1), 0, [("buf", "I", data), ("buf", "I", [0] * 7 * total)])
    return case, {1: out}


def vote(rng):
    grid, block, n = 2, 48, 90
    total = grid * block
    data = [rng.getrandbits(32) for _ in range(total)]
    # Some warps where every lane passes the all-votes and some where one fails.
    for i in range(total):
        if (i // block + i % block // 32) % 2 == 0 and data[i] % 16 == 0:
            data[i] += 1
    out = [0] * 8 * total
    for b in range(grid):
        for w0, lanes in warps_of(block):
            base = b * block + w0
            v = data[base:base + lanes]
            present = (1 << lanes) - 1
            ballot = lambda pred, lanes_: sum(1 << l for l in lanes_ if pred(v[l]))
            even = [l for l in range(lanes) if l % 2 == 0]
            odd = [l for l in range(lanes) if l % 2]
            live = [l for l in range(lanes) if base + l < n]
            for l in range(lanes):
                row = [present, ballot(lambda x: x & 1, range(lanes)),
                       int(any(x % 21 == 0 for x in v)), int(all(x % 16 for x in v))]
                if l % 2 == 0:
                    row.append(ballot(lambda x: x & 2, even))
                else:
                    row.append(int(all(v[k] & 4 for k in odd)))
                if base + l < n:
                    row += [ballot(lambda x: x & 8, live), int(all(v[k] % 32 for k in live)),
                            int(any(v[k] % 13 == 0 for k in live))]
                else:
                    row += [0, 0, 0]
                out[8 * (base + l):8 * (base + l) + 8] = row
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", data), ("buf", "I", [0] * 8 * total), ("scalar", n)])
    return case, {1: out}


def sync_count(rng):
    grid, block, n = 3, 100, 280
    data = [rng.getrandbits(32) | 1 << rng.randrange(32) for _ in range(n)]
    data[150] = 0
    data[20] = M32
    out = []
    for b in range(grid):
        v = [data[i] if i < n else 0 for i in range(b * block, (b + 1) * block)]
        row = [sum(x & 1 for x in v), int(all(v)), int(any(x == M32 for x in v)),
               sum(1 for t, x in enumerate(v) if t < x % 128)]
        out += row * block
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", data), ("buf", "I", [0] * 4 * grid * block), ("scalar", n)])
    return case, {1: out}


def odd_even_sort(rng):
    grid, block, n = 3, 50, 280
    m = 2 * block
    data = [s32(rng.getrandbits(32) >> rng.randrange(0, 32, 8)) for _ in range(n)]
    out, rounds = [], []
    for b in range(grid):
        s = [data[i] if i < n else 0x7fffffff for i in range(b * m, (b + 1) * m)]
        r = 0
        while True:
            swapped = False
            for i in range(0, m, 2):
                if s[i] > s[i + 1]:
                    s[i], s[i + 1] = s[i + 1], s[i]
                    swapped = True
            for i in range(1, m - 1, 2):
                if s[i] > s[i + 1]:
                    s[i], s[i + 1] = s[i + 1], s[i]
                    swapped = True
            r += 1
            if not swapped:
                break
        out += s[:max(0, min(m, n - b * m))]
        rounds.append(r)
    assert out == sorted(data[:m]) + sorted(data[m:2 * m]) + sorted(data[2 * m:])
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "i", data), ("buf", "i", [0] * n), ("buf", "I", [0] * grid),
                 ("scalar", n)])
    return case, {1: out, 2: rounds}


def smooth(rng):
    grid, block, n, steps = 2, 96, 180, 9
    data = [f32(rng.uniform(-100, 100)) for _ in range(n)]
    out = []
    for b in range(grid):
        s = [0.0] + [data[i] if i < n else 0.0 for i in range(b * block, (b + 1) * block)] + [0.0]
        for _ in range(steps):
            s = [0.0] + [f32(f32(f32(0.25 * s[t]) + f32(0.5 * s[t + 1])) + f32(0.25 * s[t + 2]))
                         for t in range(block)] + [0.0]
        out += s[1:1 + max(0, min(block, n - b * block))]
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "f", data), ("buf", "f", [0.0] * n), ("scalar", steps), ("scalar", n)])
    return case, {1: out}


def spin_lock(rng):
    grid, block, reps = 2, 100, 3
    data = [rng.getrandbits(32) for _ in range(grid * block * reps)]
    out = []
    for b in range(grid):
        v = data[b * block * reps:(b + 1) * block * reps]
        h = 0
        for x in v:
            h ^= x * 2654435761 & M32
        out += [sum(v), max(v) << 32 | len(v), h]
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", data), ("buf", "Q", [0] * 3 * grid), ("scalar", reps)])
    return case, {1: out}


def warp_lock(rng):
    grid, block, reps = 3, 100, 4
    data = [rng.getrandbits(64) >> rng.randrange(0, 64, 8) for _ in range(grid * block * reps)]
    out = []
    for b in range(grid):
        out += [sum(data[b * block * reps:(b + 1) * block * reps]) & M64, 4 * reps]
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "Q", data), ("buf", "Q", [0] * 2 * grid), ("scalar", reps)])
    return case, {1: out}


def redux(rng):
    grid, block = 2, 48
    total = grid * block
    data = [rng.getrandbits(32) for _ in range(total)]
    out = [0] * 9 * total
    for b in range(grid):
        for w0, lanes in warps_of(block):
            base = b * block + w0
            v = data[base:base + lanes]
            xor = 0
            for x in v:
                xor ^= x
            andv, orv = M32, 0
            for x in v:
                andv &= x | 0x0f0f0f0f
                orv |= x & 0x01010101
            row = [sum(v) & M32, min(v), max(v), min(s32(x) for x in v) & M32,
                   max(s32(x) for x in v) & M32, andv, orv, xor]
            low = sum(s32(x) >> 4 for x in v[:8]) & M32
            high = max(s32(x << 8) for x in v[8:]) & M32 if lanes > 8 else None
            for l in range(lanes):
                out[9 * (base + l):9 * (base + l) + 9] = row + [low if l < 8 else high]
    case = Case((grid, 1, 1), (block, 1, 1), 0, [("buf", "I", data), ("buf", "I", [0] * 9 * total)])
    return case, {1: out}


def match_sync(rng):
    grid, block, n = 2, 48, 90
    total = grid * block
    keys = [rng.getrandbits(32) for _ in range(total)]
    keys64 = [rng.randrange(4) << 62 | rng.randrange(3) for _ in range(total)]
    # Warp 0 of block 0 and warp 1 of block 1 share their upper key bits (match_all holds).
    for i in range(total):
        if (i // block + i % block // 32) % 2 == 0:
            keys[i] = keys[i] & 0xff | 0x1234500
            keys64[i] = keys64[i] & (1 << 40) - 1 | 0xabc << 40
    out = [0] * 6 * total
    for b in range(grid):
        for w0, lanes in warps_of(block):
            base = b * block + w0
            k, k64 = keys[base:base + lanes], keys64[base:base + lanes]
            live = [l for l in range(lanes) if base + l < n]
            same = lambda xs, ls: all(xs[a] == xs[ls[0]] for a in ls)
            for l in range(lanes):
                row = [sum(1 << a for a in range(lanes) if k[a] % 5 == k[l] % 5),
                       sum(1 << a for a in range(lanes) if k64[a] == k64[l])]
                s = same([x >> 8 for x in k], list(range(lanes)))
                row += [(1 << lanes) - 1 if s else 0, int(s)]
                if base + l < n:
                    row.append(sum(1 << a for a in live if k[a] % 3 == k[l] % 3))
                    s = same([x >> 40 for x in k64], live)
                    row.append((sum(1 << a for a in live) if s else 0) ^ (int(s) << 31))
                else:
                    row += [0, 0]
                out[6 * (base + l):6 * (base + l) + 6] = row
    case = Case((grid, 1, 1), (block, 1, 1), 0,
                [("buf", "I", keys), ("buf", "Q", keys64), ("buf", "I", [0] * 6 * total),
                 ("scalar", n)])
    return case, {2: out}


MODELS = {f.__name__: f for f in [
    reduce_sum, scan_hillis, scan_blelloch, matmul_tiled, histogram_shared, transpose_tiled,
    dyn_shared, dyn_shared_small, shfl_reduce, shfl_scan, vote, sync_count, odd_even_sort,
    smooth, spin_lock, warp_lock, redux, match_sync]}


def build(kernel, tmp):
    exe = os.path.join(tmp, kernel)
    subprocess.run(["g++", "-std=c++20", "-O1", "-pthread", "-ffp-contract=off",
                    "-fno-strict-aliasing", "-Wall", "-Wextra", "-Werror",
                    '-DKERNEL_FILE="%s.cu"' % kernel, "-DKERNEL_NAME=" + kernel, "host.cpp",
                    "-o", exe], cwd=HERE, check=True)
    return exe


def main():
    names = sys.argv[1:] or list(MODELS)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            kernel = name if os.path.exists(os.path.join(HERE, name + ".cu")) else name.rsplit("_", 1)[0]
            exe = build(kernel, tmp)
            for seed in range(3):
                case, want = MODELS[name](random.Random(seed))
                got = run_host(exe, case, tmp)
                for k, values in want.items():
                    if got[k] != values:
                        at = next(i for i, (a, b) in enumerate(zip(got[k], values)) if a != b)
                        print("%s seed %d: arg%d differs at %d: host %r, model %r"
                              % (name, seed, k, at, got[k][at:at + 4], values[at:at + 4]))
                        failed += 1
                        break
            print("%-18s ok" % name if not failed else name)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
