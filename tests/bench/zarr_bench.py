#!/usr/bin/python3
"""zarr-python 2.13 writing, then reading, one array through mmzip.ZarrStore and through zarr's own
ZipStore and DirectoryStore, in one run, for two chunk sizes (4 MiB and 64 KiB by default); and opening an
archive of many chunks (200 000 by default) with ZarrStore and with ZipStore.

Bounds printed beside them:
  zero-time store  the same zarr calls on a store that costs nothing: writes are dropped (only the
                   metadata is kept), reads come from bytes already in memory (a dict). What zarr itself
                   costs; no store can beat it.
  copy floor       one copy of the whole array into the output array (numpy), the least a read that fills
                   an array must do.
  mapping floor    every chunk copied, in zarr's order, into a new array straight from Python's own fresh
                   mmap of the same archive (offsets found beforehand, no zarr, no store): the least any
                   reader that copies out of a mapping of the file can do. On a machine where page faults
                   are dear this, not the copy floor, bounds a zero-copy store.
  checked floors   reads only: every chunk's CRC-32 (the crc32 the core uses: ISA-L's or libdeflate's) and one
                   copy, from a fresh mapping ("checked mapping floor") or read() into the array with the
                   CRC over bytes still in the cache ("checked read floor"): the least any store that checks
                   what it hands out can do. DirectoryStore checks nothing, so where it is faster than both,
                   the target "no slower than DirectoryStore" is beyond every checking store on this machine.
  mmzip no CRC     reads only: ZarrStore with its CRC-32 check turned off (a bench-only switch, not an
                   option of the store), to show in the same run what the check costs. Each read opens the
                   archive afresh, so every chunk is checked each time (the first-read cost).

Every read fills one output array allocated and touched once (zarr's get_basic_selection(out=)), so that the
cost of fresh memory, which on a VM varies more than the stores differ, is left out of every way alike.
Uncompressed chunks (compressor=None), so that the stores, not a codec, are measured. Warm page cache (each
way reads what it has just written). Every time is the median of --repeat runs, the ways interleaved so
that a change in the machine's load hits all alike. Writes include close() (ZipStore writes its directory
there, ZarrStore commits); nothing is fsynced. The values read are compared with the values written.

Targets (docs/performance.md): reads >= 2x ZipStore and no slower than DirectoryStore; writes no slower
than ZipStore; opening 200k chunks >= 10x faster than ZipStore. Not a test: a loaded machine moves every
figure; compare the ratios, which come from one run.

Usage: zarr_bench.py [--size-mib N] [--chunks-kib 4096,64] [--open-chunks N] [--repeat R] [--dir DIR]
                     [--json FILE] [--smoke]
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)

import argparse
import json
import mmap
import os
import struct
import zipfile
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import zarr
from zarr.storage import Store

import mmzip


class NullStore(Store):
    """The zero-time store for writes: keeps metadata (zarr reads it back), drops chunks."""

    def __init__(self):
        self.meta = {}

    def __getitem__(self, k):
        return self.meta[k]

    def __setitem__(self, k, v):
        if k.rsplit("/", 1)[-1].startswith("."):
            self.meta[k] = bytes(v)

    def __delitem__(self, k):
        del self.meta[k]

    def __iter__(self):
        return iter(self.meta)

    def __len__(self):
        return len(self.meta)


class Times(dict):
    """Median wall-clock seconds of each way; .cpu the median CPU seconds of this process (user and system),
    which a machine loaded by others disturbs less than the wall clock."""
    cpu = None


def timed_interleaved(ways, repeat, check=None, before=None):
    """Median time of each way, the ways taking turns. A way may return a result: check(name, result) sees it
    outside the timed region, and it is dropped at once (keeping six 1 GiB results alive would push the
    archives out of the page cache). before(), if given, runs before each way, outside the timed region."""
    for name, fn in ways.items():
        if before:
            before()
        r = fn()
        if check:
            check(name, r)
        del r
    times = {name: [] for name in ways}
    cpu = {name: [] for name in ways}
    for _ in range(repeat):
        for name, fn in ways.items():
            if before:
                before()
            c0, t0 = time.process_time(), time.perf_counter()
            r = fn()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
            if check:
                check(name, r)
            del r
    out = Times({name: statistics.median(t) for name, t in times.items()})
    out.cpu = {name: statistics.median(t) for name, t in cpu.items()}
    return out


def bench_chunks(work, data, chunk_elems, repeat):
    n = data.size
    paths = {"mmzip": os.path.join(work, "a.zarr.zip"), "zipstore": os.path.join(work, "b.zarr.zip"),
             "directory": os.path.join(work, "c.zarr")}
    opened = {
        "mmzip": lambda mode: mmzip.ZarrStore(paths["mmzip"], mode=mode),
        "zipstore": lambda mode: zarr.ZipStore(paths["zipstore"], mode=mode),
        "directory": lambda mode: zarr.DirectoryStore(paths["directory"]),
    }

    def writer(name):
        def run():
            if name == "directory":
                shutil.rmtree(paths["directory"], ignore_errors=True)
            elif os.path.exists(paths[name]):
                os.remove(paths[name])
            s = opened[name]("w")
            z = zarr.create(shape=(n,), chunks=(chunk_elems,), dtype=data.dtype, compressor=None, store=s)
            z[:] = data
            s.close()
        return run

    def write_null():
        z = zarr.create(shape=(n,), chunks=(chunk_elems,), dtype=data.dtype, compressor=None,
                        store=NullStore())
        z[:] = data

    writes = timed_interleaved({"mmzip": writer("mmzip"), "zipstore": writer("zipstore"),
                                "directory": writer("directory"), "zero-time": write_null}, repeat)

    mem = zarr.KVStore({})
    zarr.create(shape=(n,), chunks=(chunk_elems,), dtype=data.dtype, compressor=None, store=mem)[:] = data
    # Every read fills one output array, allocated and touched once here: what fresh memory costs is the
    # machine's, not the store's, and on this VM it varies by more than the stores differ (first touches of
    # 512 MiB took 0.1 s to 1.2 s of kernel time, zeroing huge pages the host had taken back), falling at
    # random on one way or another. Before each way a value of every chunk is spoiled (untimed), so that a
    # way that wrote nothing fails the check.
    out = np.zeros(n, dtype=data.dtype)
    out_bytes = out.view("u1")

    def spoil():
        out[::chunk_elems] = -1

    def reader(name):
        def run():
            s = opened[name]("r")
            zarr.open_array(s, mode="r").get_basic_selection(Ellipsis, out=out)
            s.close()
            return out
        return run

    def reader_no_crc():
        saved = mmzip._core.VERIFY_CRC
        mmzip._core.VERIFY_CRC = 0  # ZarrStore sets this flag at its open
        try:
            s = opened["mmzip"]("r")
        finally:
            mmzip._core.VERIFY_CRC = saved
        zarr.open_array(s, mode="r").get_basic_selection(Ellipsis, out=out)
        s.close()
        return out

    def read_mem():
        zarr.open_array(mem, mode="r").get_basic_selection(Ellipsis, out=out)
        return out

    def copy_floor():
        np.copyto(out, data)
        return out

    with zipfile.ZipFile(paths["mmzip"]) as zf, open(paths["mmzip"], "rb") as f:
        spans = []
        for i in range(n // chunk_elems):
            info = zf.getinfo(str(i))
            f.seek(info.header_offset)
            name_len, extra_len = struct.unpack("<HH", f.read(30)[26:30])
            spans.append(info.header_offset + 30 + name_len + extra_len)
    chunk_bytes = chunk_elems * data.itemsize

    def mapping_floor():
        with open(paths["mmzip"], "rb") as f:
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            src = np.frombuffer(m, dtype="u1")
            o = out_bytes
            for i, off in enumerate(spans):
                o[i * chunk_bytes:(i + 1) * chunk_bytes] = src[off:off + chunk_bytes]
            del src
            m.close()
        return out

    # The least a store that checks every chunk's CRC-32 before handing it out can do: each chunk's CRC with
    # the fastest crc32 installed (ISA-L's where present, as the core's plugin/src/crc32.c chooses, else
    # libdeflate's) and one copy, from a fresh mapping or from read() into a buffer (the CRC then runs over bytes
    # still in the cache). No zarr, no store.
    crc32 = _fastest_crc32()

    def checked_mapping_floor():
        with open(paths["mmzip"], "rb") as f:
            m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
            src = np.frombuffer(m, dtype="u1")
            base = src.ctypes.data
            o = out_bytes
            for i, off in enumerate(spans):
                crc32(0, base + off, chunk_bytes)
                o[i * chunk_bytes:(i + 1) * chunk_bytes] = src[off:off + chunk_bytes]
            del src
            m.close()
        return out

    def checked_read_floor():
        o = out_bytes
        base = out.ctypes.data
        fd = os.open(paths["mmzip"], os.O_RDONLY)
        try:
            for i, off in enumerate(spans):
                os.preadv(fd, [o[i * chunk_bytes:(i + 1) * chunk_bytes]], off)
                crc32(0, base + i * chunk_bytes, chunk_bytes)
        finally:
            os.close(fd)
        return out

    def check(name, got):
        assert np.array_equal(got, data), "%s read different values" % name

    reads = timed_interleaved({"mmzip": reader("mmzip"), "mmzip no CRC": reader_no_crc,
                               "zipstore": reader("zipstore"),
                               "directory": reader("directory"), "zero-time": read_mem,
                               "copy floor": copy_floor, "mapping floor": mapping_floor,
                               "checked mapping floor": checked_mapping_floor,
                               "checked read floor": checked_read_floor}, repeat, check, before=spoil)
    del mem
    with zarr.ZipStore(paths["mmzip"], mode="r") as z:  # our archive, as zarr's ZipStore sees it
        assert len(z.keylist()) == n // chunk_elems + 1
    for p in paths.values():
        shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    return writes, reads


def _fastest_crc32():
    """crc32(crc, buffer address, length) for the checked floors: ISA-L's crc32_gzip_refl (VPCLMULQDQ where
    the CPU has it) if the library is installed, else libdeflate_crc32."""
    import ctypes
    import ctypes.util
    for lib_name, fn_name in (("isal", "crc32_gzip_refl"), ("deflate", "libdeflate_crc32")):
        found = ctypes.util.find_library(lib_name)
        if found:
            f = getattr(ctypes.CDLL(found), fn_name)
            f.restype, f.argtypes = ctypes.c_uint32, [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
            print("checked floors: %s from %s" % (fn_name, found), file=sys.stderr)
            return f
    raise SystemExit("zarr_bench: neither ISA-L nor libdeflate is installed (needed for the checked floors)")


def bench_open(work, n_chunks, repeat):
    path = os.path.join(work, "open.zarr.zip")
    with mmzip.ZarrStore(path, mode="w") as s:
        z = zarr.create(shape=(n_chunks * 4,), chunks=(4,), dtype="<i4", compressor=None, store=s)
        z[:] = np.arange(n_chunks * 4, dtype="<i4")
    last = np.arange(n_chunks * 4 - 4, n_chunks * 4, dtype="<i4")
    got = {}

    def open_with(name, make):
        def run():
            s = make()
            got[name] = zarr.open_array(s, mode="r")[-4:]
            s.close()
        return run

    t = timed_interleaved({"mmzip": open_with("mmzip", lambda: mmzip.ZarrStore(path)),
                           "zipstore": open_with("zipstore", lambda: zarr.ZipStore(path, mode="r"))}, repeat)
    for name, v in got.items():
        assert np.array_equal(v, last), "%s read %r" % (name, v)
    size = os.path.getsize(path)
    os.remove(path)
    return t, size


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--chunks-kib", default="4096,64")
    ap.add_argument("--open-chunks", type=int, default=200000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes: checks that it runs")
    a = ap.parse_args()
    if a.smoke:
        a.size_mib, a.chunks_kib, a.open_chunks, a.repeat = 8, "1024,64", 3000, 1
    work = tempfile.mkdtemp(prefix="zarr_bench_", dir=a.dir)
    out = {"size_mib": a.size_mib, "repeat": a.repeat, "chunks": {}}
    try:
        n = a.size_mib * (1 << 20) // 8
        data = np.arange(n, dtype="<f8")
        print("zarr %s, numpy %s; %d MiB of float64, uncompressed chunks, median of %d"
              % (zarr.__version__, np.__version__, a.size_mib, a.repeat), flush=True)
        for kib in (int(x) for x in a.chunks_kib.split(",")):
            ce = kib * 1024 // 8
            writes, reads = bench_chunks(work, data, ce, a.repeat)
            out["chunks"][kib] = {"write": writes, "read": reads, "write_cpu": writes.cpu, "read_cpu": reads.cpu,
                                  "n_chunks": n // ce}
            gib = a.size_mib / 1024
            print("\nchunks of %d KiB (%d chunks)" % (kib, n // ce))
            print("  write  %-13s %8s %9s %8s" % ("", "s", "GiB/s", "cpu s"))
            for k, v in writes.items():
                print("         %-13s %8.3f %9.2f %8.3f" % (k, v, gib / v, writes.cpu[k]))
            print("  read   %-13s %8s %9s %8s" % ("", "s", "GiB/s", "cpu s"))
            for k, v in reads.items():
                print("         %-13s %8.3f %9.2f %8.3f" % (k, v, gib / v, reads.cpu[k]))
            print("  read:  ZipStore/mmzip %.2fx (target >= 2)   DirectoryStore/mmzip %.2fx (target >= 1)"
                  % (reads["zipstore"] / reads["mmzip"], reads["directory"] / reads["mmzip"]))
            print("         mmzip is %.2fx the zero-time store, %.2fx the copy floor, %.2fx the mapping floor"
                  % (reads["mmzip"] / reads["zero-time"], reads["mmzip"] / reads["copy floor"],
                     reads["mmzip"] / reads["mapping floor"]))
            print("         the CRC-32 check: mmzip is %.2fx its time without it (%.3f s more); without it mmzip "
                  "is %.2fx the copy floor" % (reads["mmzip"] / reads["mmzip no CRC"],
                                               reads["mmzip"] - reads["mmzip no CRC"],
                                               reads["mmzip no CRC"] / reads["copy floor"]))
            floor = min(reads["checked mapping floor"], reads["checked read floor"])
            beyond = reads["directory"] < floor
            print("         checked floors (a CRC-32 per chunk and one copy, no zarr): DirectoryStore/floor %.2fx%s; "
                  "mmzip is %.2fx the floor"
                  % (reads["directory"] / floor,
                     " (below 1: the target >= 1 is beyond what any store that checks can reach on this machine)"
                     if beyond else "", reads["mmzip"] / floor))
            rc = reads.cpu
            print("         in CPU time: ZipStore/mmzip %.2fx   DirectoryStore/mmzip %.2fx   mmzip is %.2fx the "
                  "zero-time store" % (rc["zipstore"] / rc["mmzip"], rc["directory"] / rc["mmzip"],
                                       rc["mmzip"] / rc["zero-time"]))
            print("  write: ZipStore/mmzip %.2fx (target >= 1)   DirectoryStore/mmzip %.2fx"
                  % (writes["zipstore"] / writes["mmzip"], writes["directory"] / writes["mmzip"]))
            print("         mmzip is %.2fx the zero-time store" % (writes["mmzip"] / writes["zero-time"]),
                  flush=True)
        t, size = bench_open(work, a.open_chunks, a.repeat)
        out["open"] = {"n_chunks": a.open_chunks, "archive_bytes": size, **t}
        print("\nopen an archive of %d chunks (%.1f MiB) and read its last chunk:" % (a.open_chunks, size / 2**20))
        print("  mmzip %.4f s   ZipStore %.4f s   ZipStore/mmzip %.1fx (target >= 10)"
              % (t["mmzip"], t["zipstore"], t["zipstore"] / t["mmzip"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
