#!/usr/bin/python3
"""h5py reading one dataset three ways, in one run, with a warm page cache:

  mmzip    the member inside the archive, through the mmzip driver (copied from the shared mapping)
  sec2     the same HDF5 file extracted, through HDF5's default driver (pread)
  fileobj  the member inside the archive, through h5py's fileobj driver over Python's zipfile

each into one preallocated array (read_direct), and mmzip and sec2 once more the usual way, d[...], which
makes a new array every time: memory the kernel must first make, page by page.

and the cost of the driver's write path (copy-on-write versions published at flush) against sec2 writing
the same data to a plain file.

Prints the times and the ratios (mmzip / sec2 and fileobj / mmzip). The goals: mmzip no slower than sec2
with a warm cache (ratio <= 1.0), and at least 5x faster than fileobj. Not a test: a loaded machine moves
every figure; compare the ratios, which come from one run on the same machine.

Usage: h5py_bench.py [--size-mib N] [--repeat R] [--dir DIR] [--json FILE] [--plot FILE.png]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile

import numpy as np
import h5py

import mmzip

MEMBER = "data/plain.h5"

def timed(fn, repeat):
    """Runs fn once to warm up, then `repeat` times; returns the median wall time."""
    return timed_interleaved({"fn": fn}, repeat)["fn"]


def timed_interleaved(ways, repeat):
    """Warms every way up once, then runs them in turn `repeat` times, so that a change in the machine's
    load hits all of them alike; returns the median wall time of each."""
    for fn in ways.values():
        fn()
    times = {name: [] for name in ways}
    for _ in range(repeat):
        for name, fn in ways.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def make_inputs(workdir, n_elems):
    """The HDF5 file (one contiguous float64 dataset "/d" of n_elems) and two archives holding it stored,
    beside another entry: in last.zip it is the last entry (as `mmzip put` or a driver flush leaves it), in
    inner.zip another entry follows it."""
    plain = os.path.join(workdir, "plain.h5")
    data = np.arange(n_elems, dtype=np.float64)
    with h5py.File(plain, "w") as f:
        f.create_dataset("d", data=data)
    archives = {}
    for name in ("last", "inner"):
        path = archives[name] = os.path.join(workdir, name + ".zip")
        with mmzip.Archive(path, "w") as a:
            a["README.txt"] = b"benchmark archive\n"
        # mmzip put copies the file in as one stored, page-aligned entry.
        subprocess.run([os.environ.get("MMZIP_BIN", "mmzip"), "put", path, MEMBER, plain], check=True)
        if name == "inner":
            with mmzip.Archive(path, "r+") as a:
                a["zz-after.txt"] = b"an entry behind the member\n"
    return plain, archives, data


def read_all(open_file, out):
    with open_file() as f:
        f["d"].read_direct(out)


def read_fresh(open_file):
    with open_file() as f:
        return f["d"][...]


def bench_reads(plain, archives, n_elems, expected, repeat):
    """Times the three ways. mmzip is timed on both archives: the core checks the CRC of an archive's last
    entry once per open (in case a foreign writer left it torn), which costs a pass over the member when it
    is the last entry."""
    out = np.empty(n_elems, dtype=np.float64)
    openers = {
        "mmzip": lambda: h5py.File(archives["inner"], "r", driver="mmzip", member=MEMBER),
        "mmzip_last": lambda: h5py.File(archives["last"], "r", driver="mmzip", member=MEMBER),
        "sec2": lambda: h5py.File(plain, "r"),
    }
    # Every way must read the right values; the check stays out of the timed runs.
    for name, opener in openers.items():
        out[:] = 0
        read_all(opener, out)
        if not np.array_equal(out, expected):
            raise SystemExit("h5py_bench: %s read wrong values" % name)

    def via_fileobj():
        with zipfile.ZipFile(archives["inner"]) as z, z.open(MEMBER) as member:
            with h5py.File(member, "r") as f:
                f["d"].read_direct(out)

    out[:] = 0
    via_fileobj()
    if not np.array_equal(out, expected):
        raise SystemExit("h5py_bench: fileobj read wrong values")
    for name in ("mmzip", "sec2"):
        if not np.array_equal(read_fresh(openers[name]), expected):
            raise SystemExit("h5py_bench: %s read wrong values into a new array" % name)
    timed_ways = {name: (lambda opener=opener: read_all(opener, out)) for name, opener in openers.items()}
    timed_ways.update({name + "_fresh": (lambda opener=openers[name]: read_fresh(opener)) for name in ("mmzip", "sec2")})
    results = timed_interleaved(timed_ways, repeat)
    # The fileobj peer is slow; two timed runs after the warm-up are enough to rank it.
    results["fileobj"] = timed(via_fileobj, max(1, min(repeat, 2)))
    return results


def bench_writes(workdir, n_elems, flushes, repeat):
    """Writes n_elems float64 in `flushes` slices, flushing after each but the last (the close flushes it):
    sec2 into a plain file, mmzip into a new member of an archive that holds another entry. Each mmzip
    flush after a write publishes a complete new version of the member."""
    data = np.arange(n_elems, dtype=np.float64)
    step = -(-n_elems // flushes)
    plain = os.path.join(workdir, "w.h5")
    archive = os.path.join(workdir, "w.zip")

    def write(open_file):
        with open_file() as f:
            d = f.create_dataset("d", shape=(n_elems,), dtype="f8")
            for i in range(0, n_elems, step):
                d[i:i + step] = data[i:i + step]
                if i + step < n_elems:
                    f.flush()

    def sec2():
        write(lambda: h5py.File(plain, "w"))

    def via_mmzip():
        if os.path.exists(archive):
            os.unlink(archive)
        with mmzip.Archive(archive, "w") as a:
            a["README.txt"] = b"x"
        write(lambda: h5py.File(archive, "w", driver="mmzip", member="w.h5"))

    res = {"sec2": timed(sec2, repeat), "mmzip": timed(via_mmzip, repeat)}
    with h5py.File(archive, "r", driver="mmzip", member="w.h5") as f:
        if not np.array_equal(f["d"][:], data):
            raise SystemExit("h5py_bench: mmzip write read back wrong values")
    res["archive_bytes"] = os.path.getsize(archive)
    res["member_bytes"] = os.path.getsize(plain)
    os.unlink(archive)
    os.unlink(plain)
    return res


def plot(path, reads, size_mib):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = ["mmzip", "mmzip_last", "sec2", "fileobj"]
    labels = ["mmzip driver", "mmzip driver,\nmember last (CRC at open)", "sec2,\nextracted file",
              "fileobj over\nzipfile"]
    secs = [reads[n] for n in names]
    fig, ax = plt.subplots(figsize=(7.5, 3.4))
    bars = ax.barh(labels, [size_mib / 1024 / s for s in secs], color=["#2a7", "#6c9", "#47a", "#a54"])
    for b, s in zip(bars, secs):
        ax.text(b.get_width(), b.get_y() + b.get_height() / 2, " %.3f s" % s, va="center")
    ax.set_xlabel("GiB/s, open + read + close, warm page cache (higher is better)")
    ax.set_xlim(0, max(size_mib / 1024 / s for s in secs) * 1.25)
    ax.set_title("h5py reading a %d MiB dataset" % size_mib)
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=1024, help="dataset size in MiB (default 1024)")
    ap.add_argument("--repeat", type=int, default=7, help="timed runs per way (median reported)")
    ap.add_argument("--write-mib", type=int, default=None, help="size of the write benchmark (default size/4)")
    ap.add_argument("--flushes", type=int, default=8, help="slices (flushes) of the second write benchmark")
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--json", default=None, help="also write the figures to this JSON file")
    ap.add_argument("--plot", default=None, help="also draw the read figures into this PNG")
    args = ap.parse_args()

    mmzip.register_h5py()
    n_elems = args.size_mib * (1 << 20) // 8
    write_mib = args.write_mib if args.write_mib is not None else max(1, args.size_mib // 4)
    with tempfile.TemporaryDirectory(prefix="h5py-bench-", dir=args.dir) as workdir:
        plain, archives, expected = make_inputs(workdir, n_elems)
        reads = bench_reads(plain, archives, n_elems, expected, args.repeat)
        del expected
        for path in [plain] + list(archives.values()):
            os.unlink(path)
        writes = {n: bench_writes(workdir, write_mib * (1 << 20) // 8, n, max(1, args.repeat // 2))
                  for n in sorted({1, args.flushes})}

    print("h5py reading a %d MiB float64 dataset, warm page cache, median of %d runs (open + read + close)"
          % (args.size_mib, args.repeat))
    labels = {"mmzip": "mmzip driver, member inside the archive",
              "mmzip_last": "mmzip driver, member is the archive's last entry",
              "sec2": "sec2 driver on the extracted file",
              "fileobj": "fileobj driver over zipfile.ZipFile.open()",
              "mmzip_fresh": "mmzip driver, d[...] into a new array",
              "sec2_fresh": "sec2 driver, d[...] into a new array"}
    for name in ("mmzip", "mmzip_last", "sec2", "fileobj", "mmzip_fresh", "sec2_fresh"):
        print("  %-10s %8.3f s  %7.2f GiB/s  %s" % (name, reads[name], args.size_mib / 1024 / reads[name],
                                                   labels[name]))
    r_sec2 = reads["mmzip"] / reads["sec2"]
    r_sec2_last = reads["mmzip_last"] / reads["sec2"]
    r_fileobj = reads["fileobj"] / reads["mmzip"]
    r_fresh = reads["mmzip_fresh"] / reads["sec2_fresh"]
    print("  ratio mmzip/sec2        %.2fx  (goal <= 1.0)" % r_sec2)
    print("  ratio mmzip_last/sec2   %.2fx" % r_sec2_last)
    print("  ratio fileobj/mmzip     %.1fx  (goal >= 5: mmzip that much faster)" % r_fileobj)
    print("  ratio mmzip/sec2, d[...] into new arrays   %.2fx" % r_fresh)
    for n, w in writes.items():
        print("h5py writing %d MiB into a new member in %d slice(s), flushing between slices" % (write_mib, n))
        print("  mmzip    %8.3f s" % w["mmzip"])
        print("  sec2     %8.3f s" % w["sec2"])
        print("  ratio mmzip/sec2      %.2fx" % (w["mmzip"] / w["sec2"]))
        print("  archive after the run: %d bytes for a %d-byte member (each flush after a write leaves the "
              "replaced version as dead space until mmzip pack)" % (w["archive_bytes"], w["member_bytes"]))
    figures = {"size_mib": args.size_mib, "repeat": args.repeat, "read_seconds": reads,
               "ratio_mmzip_over_sec2": r_sec2, "ratio_mmzip_last_over_sec2": r_sec2_last,
               "ratio_fileobj_over_mmzip": r_fileobj, "ratio_fresh_mmzip_over_sec2": r_fresh,
               "write_mib": write_mib, "write_by_slices": writes}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    if args.plot:
        plot(args.plot, reads, args.size_mib)


if __name__ == "__main__":
    sys.exit(main())
