"""Seed 004's use case (mmnpz): random fixed-length excerpts from many arrays of random length, one excerpt of
each array per epoch, in random order. Compared in the same run:

  npz load     numpy.load(archive) once, then npz[name] per draw (numpy reads the whole member each time)
  mmap/draw    a directory of .npy files, numpy.load(file, mmap_mode="r") on each draw
  premade maps the same numpy maps made once in advance (one file descriptor per array)
  mmzip        mmzip.open(archive) once, then a[a.files[i]] per draw: views of the one mapping
  floor        the arrays already in memory as plain ndarrays: slicing and copying only (the bound)

Every draw copies its excerpt (np.array(x[s:s+L])), so each variant does the same real work on the data.
Prints microseconds per draw (best epoch of several, after a warm-up epoch: page cache warm for everyone),
the ratios against mmzip, the distance to the floor, and the file descriptors each variant holds.

    npz_bench.py [--arrays 2000] [--min-len 200] [--max-len 1200] [--cols 64] [--excerpt 50] [--epochs 7]
                 [--work DIR] [--smoke]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)

import argparse
import gc
import os
import resource
import shutil
import sys
import tempfile
import time

import numpy as np

import mmzip


def fds():
    return len(os.listdir("/proc/self/fd"))


def epoch_times(draw, order, starts, epochs):
    """Runs `epochs` epochs (after one warm-up); returns (first epoch, best epoch) in seconds."""
    times = []
    for e in range(epochs + 1):
        t = time.perf_counter()
        for i, s in zip(order[e % len(order)], starts[e % len(starts)]):
            draw(i, s)
        times.append(time.perf_counter() - t)
    return times[0], min(times[1:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arrays", type=int, default=2000)
    ap.add_argument("--min-len", type=int, default=200)
    ap.add_argument("--max-len", type=int, default=1200)
    ap.add_argument("--cols", type=int, default=64)
    ap.add_argument("--excerpt", type=int, default=50)
    ap.add_argument("--epochs", type=int, default=7)
    ap.add_argument("--work", default=None)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, for CTest")
    o = ap.parse_args()
    if o.smoke:
        o.arrays, o.min_len, o.max_len, o.epochs = 300, 60, 200, 2
    work = o.work or tempfile.mkdtemp(prefix="npz_bench_")
    os.makedirs(work, exist_ok=True)
    # The premade maps need a descriptor each: raise the soft limit as such a user would have to.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < o.arrays + 100 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (o.arrays + 100, hard))

    rng = np.random.default_rng(4)
    names = ["spec%05d" % i for i in range(o.arrays)]
    lens = rng.integers(o.min_len, o.max_len, o.arrays)
    data = {n: rng.random((int(k), o.cols), dtype=np.float32) for n, k in zip(names, lens)}
    total = sum(a.nbytes for a in data.values())
    npz = os.path.join(work, "theirs.npz")
    ours = os.path.join(work, "ours.npz")
    npydir = os.path.join(work, "npy")
    os.makedirs(npydir, exist_ok=True)
    np.savez(npz, **data)
    mmzip.savez(ours, **data)
    files = []
    for n in names:
        f = os.path.join(npydir, n + ".npy")
        np.save(f, data[n])
        files.append(f)
    L = o.excerpt
    order = [rng.permutation(o.arrays) for _ in range(o.epochs + 1)]
    starts = [[int(rng.integers(0, lens[i] - L)) for i in perm] for perm in order]
    print("npz_bench: %d arrays of %d..%d x %d float32 (%.0f MiB), excerpts of %d rows (%d KiB), %d epochs"
          % (o.arrays, o.min_len, o.max_len, o.cols, total / 2**20, L, L * o.cols * 4 // 1024, o.epochs))

    results = {}
    base_fds = fds()

    # numpy.load of the .npz
    z = np.load(npz)
    zfiles = z.files

    def d_npz(i, s):
        x = z[zfiles[i]]
        return np.array(x[s:s + L])

    results["npz load"] = epoch_times(d_npz, order, starts, o.epochs) + (fds() - base_fds,)
    z.close()
    del z
    gc.collect()

    # mmap_mode="r" on each draw
    def d_mmap(i, s):
        x = np.load(files[i], mmap_mode="r")
        return np.array(x[s:s + L])

    results["mmap/draw"] = epoch_times(d_mmap, order, starts, o.epochs) + (fds() - base_fds,)
    gc.collect()

    # the same maps made once in advance
    try:
        maps = [np.load(f, mmap_mode="r") for f in files]
        held = fds() - base_fds

        def d_pre(i, s):
            x = maps[i]
            return np.array(x[s:s + L])

        results["premade maps"] = epoch_times(d_pre, order, starts, o.epochs) + (held,)
        del maps
    except OSError as e:
        print("premade maps: %s (the descriptor limit is what mmnpz/mmzip avoid)" % e)
    gc.collect()

    # mmzip: one mapping
    t_open = time.perf_counter()
    a = mmzip.open(ours)
    len(a)
    t_open = time.perf_counter() - t_open

    def d_mmzip(i, s):
        x = a[a.files[i]]
        return np.array(x[s:s + L])

    results["mmzip"] = epoch_times(d_mmzip, order, starts, o.epochs) + (fds() - base_fds,)
    a.close()
    del a
    gc.collect()

    # the floor: plain in-memory arrays
    mem = [data[n] for n in names]

    def d_floor(i, s):
        return np.array(mem[i][s:s + L])

    results["floor"] = epoch_times(d_floor, order, starts, o.epochs) + (0,)

    n = o.arrays
    us = {k: v[1] / n * 1e6 for k, v in results.items()}
    first = {k: v[0] / n * 1e6 for k, v in results.items()}
    print("%-13s %12s %14s %8s %16s" % ("variant", "us/draw", "first epoch", "fds", "time / mmzip's"))
    for k in results:
        print("%-13s %12.2f %14.2f %8d %16.2f" % (k, us[k], first[k], results[k][2], us[k] / us["mmzip"]))
    print("ratios: mmzip is %.1fx the npz load (target >= 20), %.1fx per-draw mmap_mode (target >= 3), "
          "%.2fx the premade maps (target >= 1)"
          % (us["npz load"] / us["mmzip"], us["mmap/draw"] / us["mmzip"],
             us.get("premade maps", float("nan")) / us["mmzip"]))
    print("bound: the floor (in-memory slicing + copy) takes %.2f us/draw; mmzip is %.2f us above it (%.0f%%); "
          "the premade maps %.2f us above it" % (us["floor"], us["mmzip"] - us["floor"],
                                                 100 * (us["mmzip"] - us["floor"]) / us["floor"],
                                                 us.get("premade maps", float("nan")) - us["floor"]))
    print("file descriptors held: npz load %d, premade maps %d, mmzip %d; mmzip.open + listing of %d arrays: %.2f ms"
          % (results["npz load"][2], results.get("premade maps", (0, 0, -1))[2], results["mmzip"][2], n,
             t_open * 1e3))
    # Sanity (not a timing assertion): the excerpts are the data, through one descriptor.
    with mmzip.open(ours) as c:
        for i, s in zip(order[0][:50], starts[0][:50]):
            assert np.array_equal(c[names[i]][s:s + L], data[names[i]][s:s + L])
    assert results["mmzip"][2] == 1, "mmzip held %d descriptors" % results["mmzip"][2]
    if not o.work:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
