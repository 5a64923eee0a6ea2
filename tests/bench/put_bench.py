#!/usr/bin/env python3
"""`mmzip put ARCHIVE --dir TREE` against `zip -0 -r` and Python's zipfile (ZIP_STORED) on the same tree, with the
copy floor: `cat` of every file into one file (the bytes read and written once, no archive format at all).

Two trees: many small files (default 100,000 x 100 B, where per-file costs dominate) and few large ones (default
16 x 64 MiB = 1 GiB, where the copy dominates). Each repeat runs the four commands one after the other on the
same hot page cache, in an order that rotates from one repeat to the next, so that load from other processes
falls on all of them alike; the output is deleted and the file system synced before each command (untimed:
none of them syncs, and the dirty pages one leaves would otherwise throttle the next). Prints, per tree, min/median/max seconds of each command and of the
ratios mmzip/zip, mmzip/zipfile and mmzip/floor taken within each repeat, and the load average before and after
(the figures mean little on a loaded machine unless compared within one run).

Every mmzip archive is checked against the tree (names and bytes through zipfile), so the smoke run (--smoke:
tiny trees, CTest label bench) tests the command and the script, and asserts nothing about speed.

Usage: put_bench.py [--small N:BYTES] [--large N:MIB] [--repeat R] [--only small|large] [--dir DIR] [--smoke]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

MMZIP = os.environ.get("MMZIP_BIN", "mmzip")

ZIPFILE_WRITER = r"""
import os, sys, zipfile
tree, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
    for root, dirs, files in os.walk(tree):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            z.write(p, os.path.relpath(p, tree))
"""


def make_tree(root, count, size, seed):
    """count files of size bytes, 1,000 to a folder (as a Zarr array's chunks would be), distinct contents."""
    block = os.urandom(1 << 20) if size >= (1 << 20) else None
    for i in range(count):
        d = os.path.join(root, "g%03d" % (i // 1000))
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "c%06d" % i), "wb") as f:
            if block is None:
                f.write((b"%d:%d;" % (seed, i) * (size // 4 + 1))[:size])
            else:
                head = b"%d:%d;" % (seed, i)
                left = size
                while left:
                    n = min(left, len(block))
                    f.write(head + block[len(head):n] if left == size else block[:n])
                    left -= n


def timed(cmd, cwd=None):
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def check_archive(archive, tree):
    want = {}
    for root, _, files in os.walk(tree):
        for f in files:
            p = os.path.join(root, f)
            want[os.path.relpath(p, tree)] = p
    with zipfile.ZipFile(archive) as z:
        names = sorted(z.namelist())
        if names != sorted(want):
            raise AssertionError("%s: %d names, the tree has %d files" % (archive, len(names), len(want)))
        for n in names:
            with open(want[n], "rb") as f:
                if z.read(n) != f.read():
                    raise AssertionError("%s: entry %s differs from its file" % (archive, n))


def spread(xs):
    return "%8.3f %8.3f %8.3f" % (min(xs), statistics.median(xs), max(xs))


def bench(label, tree, work, repeat, check):
    out = {k: os.path.join(work, k) for k in ("mmzip.zip", "zip.zip", "zipfile.zip", "floor.bin")}
    times = {k: [] for k in ("mmzip", "zip", "zipfile", "floor")}
    ratios = {k: [] for k in ("zip", "zipfile", "floor")}
    tree_abs = os.path.abspath(tree)
    for r in range(repeat):
        for p in out.values():
            if os.path.exists(p):
                os.unlink(p)
        cmds = [("mmzip", [MMZIP, "put", out["mmzip.zip"], "--dir", tree_abs], None),
                ("zip", ["zip", "-0", "-r", "-q", out["zip.zip"], "."], tree_abs),
                ("zipfile", [sys.executable, "-c", ZIPFILE_WRITER, tree_abs, out["zipfile.zip"]], None),
                ("floor", ["sh", "-c", "find . -type f -print0 | xargs -0 cat > '%s'" % out["floor.bin"]], tree_abs)]
        t = {}
        for k, cmd, cwd in cmds[r % 4:] + cmds[:r % 4]:
            os.sync()
            t[k] = timed(cmd, cwd)
        print("  run %d: %s" % (r + 1, "  ".join("%s %.3f" % (k, t[k]) for k in times)), flush=True)
        for k, v in t.items():
            times[k].append(v)
        for k in ratios:
            ratios[k].append(t["mmzip"] / t[k])
        if check and r == 0:
            check_archive(out["mmzip.zip"], tree)
    sizes = {k: os.path.getsize(p) for k, p in out.items()}
    print("\n%s (%d runs; seconds min / median / max)" % (label, repeat))
    for k in times:
        print("  %-18s %s   output %d bytes" % (k, spread(times[k]), sizes[k + (".bin" if k == "floor" else ".zip")]))
    for k in ratios:
        print("  mmzip/%-12s %s" % (k, spread(ratios[k])))
    sys.stdout.flush()
    return times, ratios


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--small", default="100000:100", help="N:BYTES of the many-small-files tree")
    ap.add_argument("--large", default="16:64", help="N:MIB of the large-files tree")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=("small", "large"))
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--smoke", action="store_true", help="tiny trees, 2 runs: tests the command and the script")
    a = ap.parse_args()
    if a.smoke:
        a.small, a.large, a.repeat = "300:100", "3:1", 2
    work = tempfile.mkdtemp(prefix="put_bench.", dir=a.dir)
    try:
        print("load average before: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        print("cpus: %d; mmzip: %s" % (os.cpu_count(), MMZIP))
        if a.only != "large":
            n, b = (int(x) for x in a.small.split(":"))
            tree = os.path.join(work, "small")
            make_tree(tree, n, b, 1)
            bench("%d files of %d B" % (n, b), tree, work, a.repeat, True)
            shutil.rmtree(tree)
        if a.only != "small":
            n, m = (int(x) for x in a.large.split(":"))
            tree = os.path.join(work, "large")
            make_tree(tree, n, m << 20, 2)
            bench("%d files of %d MiB" % (n, m), tree, work, a.repeat, True)
        print("\nload average after: %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
