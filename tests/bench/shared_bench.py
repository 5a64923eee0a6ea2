#!/usr/bin/env python3
"""Shared appending against zarr's DirectoryStore: 1, 2 and 4 processes writing 1 GiB as Zarr chunk keys, in
64 KiB and in 4 MiB chunks, through mmzip.ZarrStore(path, "a", shared=True) (each chunk one commit, the
writer lock taken per chunk) and through zarr.storage.DirectoryStore (each chunk a file, written to a
temporary name and renamed, as zarr does), by the same worker script; and one mmzip process writing the same
chunks as a single writer (mode "w", one commit at the end); and the copy floor: the same processes writing
the same chunks with os.pwrite into one file at fixed offsets (no store, no lock, no directory: what any store
that writes one file must at least do, and how far P processes can scale doing only that), and the same with
each process writing a file of its own (floor-own: what the machine gives P processes that share no file). All
in one run, the configurations one after the
other on the same machine, so that their ratios mean something even when the machine is loaded (it prints the
load average before and after).

Each worker is a separate Python process that imports, opens its store and then waits for the word to go; the
time is from the word to the last worker's exit (what a Dask computation of the writes would see). Worker i
of P writes chunks i, i + P, ... The output is removed and the file system synced (untimed) before each
configuration; nothing is fsynced while timed (neither store does by default). Every result is checked
afterwards: the number of chunks, and with --smoke the bytes of every chunk. --smoke (the CTest bench_shared_
smoke) runs tiny sizes to test the script; it asserts nothing about speed.

The configurations run in rounds (--repeat, 3 by default), each round all of them in the same order, and the
medians are compared. Each chunk size of each round starts with an untimed write of the floor, and each round
starts the list at another configuration (see main()).

Usage: shared_bench.py [--total MIB] [--chunks 64K,4M] [--procs 1,2,4] [--repeat N] [--dir DIR] [--smoke]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

WORKER = r"""
import os, sys, time
kind, path, idx, nproc, chunk, total = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
import numpy as np
if kind == "directory":
    import zarr
    store = zarr.storage.DirectoryStore(path)
elif kind in ("floor", "floor-own"):
    store = None
    fd = os.open(path if kind == "floor" else "%s.%d" % (path, idx), os.O_WRONLY | os.O_CREAT, 0o644)
else:
    import mmzip
    store = mmzip.ZarrStore(path, "a", shared=True, lock_timeout=None) if kind == "shared" else mmzip.ZarrStore(path, "w")
buf = np.frombuffer(os.urandom(chunk), dtype="u1").copy()
print("ready", flush=True)
sys.stdin.readline()
for i in range(idx, total // chunk, nproc):
    buf[:8] = np.frombuffer(i.to_bytes(8, "little"), "u1")
    if store is None:
        os.pwrite(fd, buf, i * chunk)
    else:
        store["data/%d" % i] = buf
if store is None:
    os.close(fd)
elif kind != "directory":
    store.close()
"""


def size_name(chunk):
    return "%dK" % (chunk >> 10) if chunk < (1 << 20) else "%dM" % (chunk >> 20)


def parse_size(s):
    s = s.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1], 1)
    return int(s[:-1] if s[-1] in "KMG" else s) * mult


def run_config(kind, path, nproc, chunk, total):
    # Every earlier output goes first, whichever configuration wrote it: one gigabyte at a time in the page
    # cache and on disk.
    base = os.path.dirname(path)
    for name in os.listdir(base):
        old = os.path.join(base, name)
        if os.path.isdir(old):
            shutil.rmtree(old)
        else:
            os.unlink(old)
    if kind == "shared":
        import mmzip
        mmzip.ZarrStore(path, "w", shared=True).close()
    subprocess.run(["sync"], check=True)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, kind, path, str(i), str(nproc), str(chunk), str(total)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for i in range(nproc)]
    for p in procs:
        line = p.stdout.readline()
        if line != "ready\n":
            raise SystemExit("%s worker did not start: %r" % (kind, line))
    t0 = time.perf_counter()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        p.wait()
        if p.returncode != 0:
            raise SystemExit("%s worker failed with status %d" % (kind, p.returncode))
    return time.perf_counter() - t0


def check(kind, path, chunk, total, full):
    """The chunk count, and with full=True every chunk's index and length."""
    n = total // chunk
    if kind == "floor-own":
        return
    if kind == "floor":
        if os.path.getsize(path) != total:
            raise SystemExit("floor at %s: %d bytes, want %d" % (path, os.path.getsize(path), total))
        if full:
            with open(path, "rb") as f:
                for i in range(n):
                    f.seek(i * chunk)
                    if int.from_bytes(f.read(8), "little") != i:
                        raise SystemExit("floor: chunk %d is wrong" % i)
        return
    if kind == "directory":
        import zarr
        store = zarr.storage.DirectoryStore(path)
    else:
        import mmzip
        store = mmzip.ZarrStore(path, "r")
    keys = [k for k in store.keys() if k.startswith("data/")]
    if len(keys) != n:
        raise SystemExit("%s at %s: %d chunks, want %d" % (kind, path, len(keys), n))
    if full:
        for i in range(n):
            v = bytes(store["data/%d" % i])
            if len(v) != chunk or int.from_bytes(v[:8], "little") != i:
                raise SystemExit("%s: chunk %d is wrong" % (kind, i))
    if kind != "directory":
        store.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--total", type=int, default=1024, help="MiB written per configuration")
    ap.add_argument("--chunks", default="64K,4M")
    ap.add_argument("--procs", default="1,2,4")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--repeat", type=int, default=3, help="rounds of every configuration; medians are compared")
    ap.add_argument("--smoke", action="store_true")
    a = ap.parse_args()
    total = (2 if a.smoke else a.total) << 20
    chunks = [parse_size(c) for c in ("64K,512K" if a.smoke else a.chunks).split(",")]
    procs = [int(p) for p in a.procs.split(",")]
    base = tempfile.mkdtemp(prefix="shared-bench-", dir=a.dir)
    print("load average before: %.2f %.2f %.2f; %d CPUs" % (os.getloadavg() + (os.cpu_count(),)), flush=True)
    results = {}
    runs = {}
    try:
        for rnd in range(1 if a.smoke else a.repeat):
            for chunk in chunks:
                # Untimed: the first gigabyte written in pieces of a new size after others ran slow on this
                # machine (2.4 s instead of 0.25 s, every round, whichever configuration came first: the kernel
                # compacting memory into the large folios that 4 MiB writes get after 64 KiB ones freed small
                # ones), which would fall on whichever configuration comes first.
                run_config("floor", os.path.join(base, "out.bin"), 1, chunk, total)
                configs = [("single", 1)]
                for p in procs:
                    configs += [("floor", p), ("floor-own", p), ("directory", p), ("shared", p)]
                # Each round starts the list at another configuration: the first ones after a change of chunk size
                # ran slow in every round on this machine (up to ten times, unexplained), which must not fall on
                # the same configuration each time.
                k = rnd % len(configs)
                for kind, p in configs[k:] + configs[:k]:
                    path = os.path.join(base, {"directory": "out.zarr", "floor": "out.bin",
                                               "floor-own": "own.bin"}.get(kind, "out.zarr.zip"))
                    t = run_config(kind, path, p, chunk, total)
                    check(kind, path, chunk, total, a.smoke)
                    runs.setdefault((chunk, kind, p), []).append(t)
                    print("round %d  %-6s chunks  %-10s  %d process(es): %7.2f s  %7.1f MiB/s" % (
                        rnd + 1, size_name(chunk), kind, p, t, total / t / (1 << 20)), flush=True)
        print("\nmedian (min - max) of %d rounds:" % len(next(iter(runs.values()))))
        for (chunk, kind, p), ts in runs.items():
            results[(chunk, kind, p)] = statistics.median(ts)
            print("  %-6s %-10s %d process(es): %6.2f s  (%.2f - %.2f)" % (
                size_name(chunk), kind, p, statistics.median(ts), min(ts), max(ts)))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())
    print("\nratios (time of mmzip shared / time of the other; < 1: mmzip shared is faster; the floor is the "
          "copy floor above, the bound of any one-file store)")
    for chunk in chunks:
        name = size_name(chunk)
        for p in procs:
            print("  %-5s %d proc: shared/DirectoryStore %.2f   shared/one mmzip process %.2f   shared/floor %.2f" % (
                name, p, results[(chunk, "shared", p)] / results[(chunk, "directory", p)],
                results[(chunk, "shared", p)] / results[(chunk, "single", 1)],
                results[(chunk, "shared", p)] / results[(chunk, "floor", p)]))
        if 1 in procs and 2 in procs:
            print("  %-5s 2 procs / 1 proc: shared %.2f   DirectoryStore %.2f   floor (one file) %.2f   "
                  "floor-own (a file each) %.2f" % (
                      name, results[(chunk, "shared", 2)] / results[(chunk, "shared", 1)],
                      results[(chunk, "directory", 2)] / results[(chunk, "directory", 1)],
                      results[(chunk, "floor", 2)] / results[(chunk, "floor", 1)],
                      results[(chunk, "floor-own", 2)] / results[(chunk, "floor-own", 1)]))


if __name__ == "__main__":
    main()
