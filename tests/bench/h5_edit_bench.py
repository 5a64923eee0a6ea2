#!/usr/bin/python3
"""The cost of editing an HDF5 member in place (issue 13, point 1), against sec2 on the extracted file.

A member of --size-mib MiB (default 1024: a contiguous float64 dataset, plus a chunked "records" dataset
with an unlimited first dimension) is the last entry of an archive, after a small text entry. The same HDF5
file, extracted, is edited with sec2. Each edit is its own session (open r+, change, close), run on both:

  attribute       add one attribute to the root group, as the first edit session of a new process - the
                  way a script or a command-line tool edits (--processes of them, default 8: the first is
                  the first edit session on the fresh archive)
  attribute x20   the same in 20 more sessions of one process
  dataset 1 MiB   add a 1 MiB float64 dataset (--repeat sessions, default 6, each adding one)
  append          append one record (4 KiB) to "records" - repeated in --sessions sessions (default 100)

For each it prints what HDF5 wrote (counted by h5py's fileobj driver on a third copy: the bytes of every
write call), how much the archive grew, how much the sec2 file grew, and both times; the growth bound
(2 x written + 1 MiB per session) and the time ratio mmzip / sec2 (target <= 2): of the totals, of the
medians and of the fastest sessions. The zero-time store for the growth is "written" (the edit's own bytes);
the copy floor of the old write path was the member's size per session.

Why a single session is measured several times: one session takes 0.3-2 ms, and its time depends on things
neither store controls - whether the CPU's caches were just taken by other work, whether HDF5's allocation
of its metadata cache found its old hole in the heap or had to grow the heap (130 fresh pages, 2 ms on this
project's VM) - and they fall on whichever store's session comes first. So the stores take turns going
first, each row has several sessions, and the median is reported beside the total. The counts are even, so
that each store goes first as often as the other: in a new process the first session of either store paid
0.2-0.4 ms of cold costs that the second did not (measured with 5 processes, mmzip going first in 3 of
them: its median was a first session, sec2's a second one).

With --check the growth bound is asserted (bytes, never time) and the member is checked after the edits:
`unzip -t` passes, the member extracted with unzip is byte-identical to what the driver reads (mmzip cat), and
h5py reads the same datasets from it as from the sec2 copy. CTest runs it that way at a small size
(bench_h5_edit_smoke, label bench); the full run is part of the `bench` target.

The process runs with glibc's heap trimming off (see HEAP_TUNABLES; H5_EDIT_BENCH_HEAP=as-is keeps the
default).

Usage: h5_edit_bench.py [--size-mib N] [--sessions N] [--processes N] [--repeat N] [--dir DIR] [--check]
                        [--json FILE]
"""
import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import h5py

import mmzip

MEMBER = "run/output.h5"
RECORD = 1024  # float32 per record: 4 KiB


class CountingFile(io.RawIOBase):
    """A file for h5py's fileobj driver that counts the bytes HDF5 writes."""

    def __init__(self, path):
        self.f = open(path, "r+b")
        self.written = 0

    def readable(self):
        return True

    def writable(self):
        return True

    def seekable(self):
        return True

    def readinto(self, b):
        return self.f.readinto(b)

    def write(self, b):
        n = self.f.write(b)
        self.written += n
        return n

    def seek(self, off, whence=0):
        return self.f.seek(off, whence)

    def tell(self):
        return self.f.tell()

    def truncate(self, size=None):
        return self.f.truncate(size)

    def flush(self):
        if not self.f.closed:
            self.f.flush()

    def close(self):
        self.f.close()
        super().close()


def make_member(path, size_mib):
    n = size_mib * (1 << 20) // 8
    with h5py.File(path, "w", libver="latest") as f:
        d = f.create_dataset("big", shape=(n,), dtype="<f8")
        step = 1 << 24
        for i in range(0, n, step):
            k = min(step, n - i)
            d[i:i + k] = np.arange(i, i + k, dtype="<f8")
        f.create_dataset("records", shape=(0, RECORD), maxshape=(None, RECORD), chunks=(1, RECORD), dtype="<f4")


def edit_attribute(f, i):
    f.attrs["note%d" % i] = "edited in place, session %d" % i


def edit_dataset(f, i):
    f.create_dataset("new%d" % i, data=np.full(1 << 17, float(i), dtype="<f8"))


def edit_append(f, i):
    r = f["records"]
    n = r.shape[0]
    r.resize((n + 1, RECORD))
    r[n] = np.full(RECORD, float(n), dtype="<f4")


def session(open_file, edit, i):
    t0 = time.perf_counter()
    with open_file() as f:
        edit(f, i)
    return time.perf_counter() - t0


def opener_mmzip(arc):
    return lambda: h5py.File(arc, "r+", driver="mmzip", member=MEMBER)


def opener_sec2(plain):
    return lambda: h5py.File(plain, "r+")


def count_written(edit, i, counted):
    cf = CountingFile(counted)
    with h5py.File(cf, "r+") as f:
        edit(f, i)
    cf.close()
    return cf.written


def time_pair(edit, i, arc, plain):
    """One session on each store; they take turns going first (by i)."""
    mz = lambda: session(opener_mmzip(arc), edit, i)
    s2 = lambda: session(opener_sec2(plain), edit, i)
    if i % 2 == 0:
        t_mz = mz()
        return t_mz, s2()
    t_s2 = s2()
    return mz(), t_s2


def row(name, each_mz, each_s2, written, growth, sec2_growth):
    sessions = len(each_mz)
    t_mz, t_s2 = sum(each_mz), sum(each_s2)
    med_mz, med_s2 = statistics.median(each_mz), statistics.median(each_s2)
    return {"edit": name, "sessions": sessions, "written": written, "archive_growth": growth,
            "sec2_growth": sec2_growth, "bound": 2 * written + sessions * (1 << 20),
            "mmzip_s": t_mz, "sec2_s": t_s2, "time_ratio": t_mz / t_s2 if t_s2 else float("nan"),
            "mmzip_median_s": med_mz, "sec2_median_s": med_s2,
            "median_ratio": med_mz / med_s2 if med_s2 else float("nan"),
            # The fastest session of each: on a loaded machine the sum is mostly other processes' time.
            "mmzip_min_s": min(each_mz), "sec2_min_s": min(each_s2),
            "min_ratio": min(each_mz) / min(each_s2) if min(each_s2) else float("nan"),
            "mmzip_each_s": each_mz, "sec2_each_s": each_s2}


def run_edit(name, edit, sessions, arc, plain, counted, first=0):
    a0, p0 = os.path.getsize(arc), os.path.getsize(plain)
    each_mz, each_s2 = [], []
    written = 0
    for i in range(first, first + sessions):
        t_mz, t_s2 = time_pair(edit, i, arc, plain)
        each_mz.append(t_mz)
        each_s2.append(t_s2)
        written += count_written(edit, i, counted)
    return row(name, each_mz, each_s2, written, os.path.getsize(arc) - a0, os.path.getsize(plain) - p0)


def run_in_new_processes(name, processes, arc, plain, counted, work):
    """The first edit session of each of `processes` new processes (see first_session_child)."""
    a0, p0 = os.path.getsize(arc), os.path.getsize(plain)
    each_mz, each_s2 = [], []
    written = 0
    for i in range(processes):
        out = subprocess.run([sys.executable, os.path.abspath(__file__), "--first-session-child", work, str(i)],
                             check=True, capture_output=True, text=True).stdout
        t = json.loads(out.strip().splitlines()[-1])
        each_mz.append(t["mmzip"])
        each_s2.append(t["sec2"])
        written += count_written(edit_attribute, i, counted)
    return row(name, each_mz, each_s2, written, os.path.getsize(arc) - a0, os.path.getsize(plain) - p0)


def warm_up(work, arc, plain):
    """What a process pays once, whatever file it edits, is not part of any edit.

    That is: the driver's registration, loading the code of each write path (on this VM a page fault costs
    about 30 us, and a first edit session touches a few dozen pages of code that no read touched), HDF5's
    own first writable open, and the heap growing to what each kind of edit allocates (a 1 MiB dataset: the
    array, HDF5's conversion buffer - 512 fresh pages for whichever store's session came first). Each store
    gets the same: a read of the file it will edit, and each kind of edit on a scratch file of its own (sec2
    on scratch.h5, mmzip on a member of scratch.zip), twice, each store going first once: HDF5 allocates its
    516 KiB metadata cache at every open, and the hole the last one left in the heap is not always whole at
    the next, so the heap reaches its high-water mark only by the second time.

    Then what the process keeps of the scratch archive for its next open (the mapping, its descriptor, the
    address reservation) is given back (mmzip.release_kept): the timed sessions should not pay for leaving an
    archive that only the warm-up used - the next archive's overlay replacing it cost 0.2 ms (a populated
    mapping's page tables torn down), unmapping its bare reservation at the timed session's close 10-20 us.
    The first timed session then maps its archive as the first open of a new process does."""
    h5py.File(arc, "r", driver="mmzip", member=MEMBER).close()
    h5py.File(plain, "r").close()
    scratch_h5, scratch_zip = os.path.join(work, "scratch.h5"), os.path.join(work, "scratch.zip")
    scratch = [lambda: h5py.File(scratch_h5, "r+"),
               lambda: h5py.File(scratch_zip, "r+", driver="mmzip", member="scratch.h5")]
    for turn in range(2):
        for edit in (edit_attribute, edit_dataset, edit_append):
            for open_scratch in (scratch if turn == 0 else scratch[::-1]):
                with open_scratch() as f:
                    edit(f, turn)
    mmzip.release_kept()


def make_scratch(work):
    """A 1 MiB member of each kind for warm_up; the scratch files are rebuilt for each process."""
    scratch_h5, scratch_zip = os.path.join(work, "scratch.h5"), os.path.join(work, "scratch.zip")
    for p in (scratch_h5, scratch_zip):
        if os.path.exists(p):
            os.unlink(p)
    make_member(scratch_h5, 1)
    subprocess.run([os.environ.get("MMZIP_BIN", "mmzip"), "put", scratch_zip, "scratch.h5", scratch_h5], check=True)


def first_session_child(work, i):
    """The attribute row: a new process warms up like the parent, then edits each store once, the first
    edit session of this process; the stores take turns going first across processes."""
    mmzip.register_h5py()
    arc, plain = os.path.join(work, "a.zip"), os.path.join(work, "plain.h5")
    make_scratch(work)
    warm_up(work, arc, plain)
    t_mz, t_s2 = time_pair(edit_attribute, i, arc, plain)
    print(json.dumps({"mmzip": t_mz, "sec2": t_s2}))


def check_member(arc, plain, workdir):
    """unzip -t; unzip's extraction equals the driver's bytes; h5py reads the same from it as from sec2's."""
    p = subprocess.run(["unzip", "-tq", arc], capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError("unzip -t failed:\n" + p.stdout + p.stderr)
    out = os.path.join(workdir, "extracted.h5")
    with open(out, "wb") as fh:
        subprocess.run(["unzip", "-p", arc, MEMBER], stdout=fh, check=True)
    with h5py.File(arc, "r", driver="mmzip", member=MEMBER) as f:
        eof = f.id.get_filesize()
    with open(out, "rb") as fh:
        extracted = fh.read()
    if len(extracted) != eof:
        raise AssertionError("extracted %d bytes, the driver's file is %d" % (len(extracted), eof))
    cat = subprocess.run([os.environ.get("MMZIP_BIN", "mmzip"), "cat", arc, MEMBER], capture_output=True,
                         check=True).stdout
    if cat != extracted:
        raise AssertionError("unzip's extraction differs from mmzip cat")
    with h5py.File(out, "r") as a, h5py.File(plain, "r") as b, \
            h5py.File(arc, "r", driver="mmzip", member=MEMBER) as c:
        if sorted(a) != sorted(b) or sorted(a) != sorted(c):
            raise AssertionError("objects differ: %r %r %r" % (sorted(a), sorted(b), sorted(c)))
        for k in a:
            if not (np.array_equal(a[k][...], b[k][...]) and np.array_equal(a[k][...], c[k][...])):
                raise AssertionError("dataset %s differs" % k)
        if dict(a.attrs) != dict(b.attrs) or dict(a.attrs) != dict(c.attrs):
            raise AssertionError("attributes differ")


# glibc returns the top of the heap to the kernel when 128 KiB or more of it is free, and HDF5 allocates and
# frees its metadata cache (a few hundred KiB) at every H5Fopen and H5Fclose: whichever session's open came
# after a trim faulted the cache in again, page by page (about 30 us a page on this project's VM, 2 ms in
# all), and which one that was depended on the heap's layout - even on whether stdout was a pipe. Neither
# store has anything to do with it, so the bench runs with trimming off (and the cache from the heap).
HEAP_TUNABLES = "glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=67108864"


def main():
    if os.environ.get("GLIBC_TUNABLES") is None and os.environ.get("H5_EDIT_BENCH_HEAP") != "as-is":
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, GLIBC_TUNABLES=HEAP_TUNABLES))
    if len(sys.argv) == 4 and sys.argv[1] == "--first-session-child":
        return first_session_child(sys.argv[2], int(sys.argv[3]))
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--sessions", type=int, default=100)
    ap.add_argument("--processes", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=6)
    ap.add_argument("--dir")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    mmzip.register_h5py()
    work = tempfile.mkdtemp(prefix="h5edit-", dir=args.dir)
    try:
        plain = os.path.join(work, "plain.h5")
        make_member(plain, args.size_mib)
        arc = os.path.join(work, "a.zip")
        with open(os.path.join(work, "README.txt"), "w") as fh:
            fh.write("an archive with one growing HDF5 member\n")
        mz = os.environ.get("MMZIP_BIN", "mmzip")
        subprocess.run([mz, "put", arc, "README.txt", os.path.join(work, "README.txt")], check=True)
        subprocess.run([mz, "put", arc, MEMBER, plain], check=True)
        counted = os.path.join(work, "counted.h5")
        shutil.copy(plain, counted)
        size = os.path.getsize(plain)
        print("member: %.1f MiB, the last entry of %s" % (size / 2**20, arc), flush=True)
        # The set-up just wrote three copies of the member: their writeback is not part of any edit (it made
        # the first sessions' file-system calls - a truncate, a punched hole, a new journal - wait for it).
        # The warm-up comes after it, as the last thing before the timed sessions: the first session after
        # the writeback ran 2-4 times slower than the same session later, whichever store it was.
        os.sync()
        rows = [run_in_new_processes("attribute", args.processes, arc, plain, counted, work)]
        make_scratch(work)
        warm_up(work, arc, plain)
        rows += [run_edit("attribute x20", edit_attribute, 20, arc, plain, counted, first=args.processes),
                 run_edit("dataset 1 MiB", edit_dataset, args.repeat, arc, plain, counted),
                 run_edit("append 1 record", edit_append, args.sessions, arc, plain, counted)]
        print("%-16s %8s %12s %14s %12s %12s %10s %10s %7s %9s %9s %9s %9s" % (
            "edit", "sessions", "written", "archive grew", "sec2 grew", "bound", "mmzip s", "sec2 s", "ratio",
            "mmzip med", "sec2 med", "med ratio", "min ratio"))
        failed = []
        for r in rows:
            print("%-16s %8d %12d %14d %12d %12d %10.4f %10.4f %7.2f %9.5f %9.5f %9.2f %9.2f" % (
                r["edit"], r["sessions"], r["written"], r["archive_growth"], r["sec2_growth"], r["bound"],
                r["mmzip_s"], r["sec2_s"], r["time_ratio"], r["mmzip_median_s"], r["sec2_median_s"],
                r["median_ratio"], r["min_ratio"]))
            if r["archive_growth"] > r["bound"]:
                failed.append(r["edit"])
        print("attribute: the first edit session of each of %d new processes (the first of them the first on "
              "the fresh archive); dataset: %d sessions; the stores take turns going first" %
              (args.processes, args.repeat))
        print("time target: ratio <= 2 (ratio: of the totals; med: of the median sessions; min: of the fastest "
              "sessions, the fixed cost without other processes' time); zero-time store: sec2's time")
        print("copy floor of the old write path: %d bytes per session (the member)" % size)
        info = subprocess.run([mz, "info", arc], capture_output=True, text=True).stdout
        print(info.strip())
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"member_bytes": size, "rows": rows}, fh, indent=1)
        if args.check:
            if failed:
                raise AssertionError("archive growth above 2 x written + 1 MiB per session: %r" % failed)
            check_member(arc, plain, work)
            print("checked: growth within the bound; unzip -t; unzip == mmzip cat == driver; h5py equal to sec2")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
