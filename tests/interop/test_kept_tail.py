"""A relocation keeps the directory it moves away from (docs/protocol.md §3.7), for the third-party readers that
took the file's size a moment before and are reading it.

One `mmzip put` per session into a 20 MB archive, entries log-uniform from 128 bytes to 64 KiB, as a shell
loop appends. For every session that relocated the directory:

1. the file's first N bytes, N its size before that session, are still the archive as it was, byte for byte:
   a reader that took the size N and then reads anything below it (zipfile, libzip) reads the last commit
   whole. Before the kept tail, the entry the put wrote landed on the old directory and end records;
2. its entry's central record names the range it skipped (the kept-tail field 0x6D4B: from, to), the entry
   starts on the page after `to`, and the range ends in the old end records, whose directory starts in it;
3. the kept directory of the relocation before it is released: its range holds no end records any more, it
   reads as zeros, and is a hole.

And over the run: some put lands in free space a released range left (an entry below an older one, instead
of a relocation); at rest `mmzip info`'s kept_bytes and free_bytes together stay within max(64 KiB, 1 %),
dead_bytes is at most the one replaced version and a partial page per kept range and per put
into free space, the figures add up to the file's size; zipfile reads every entry's bytes, `unzip -t`,
`7z t`, libzip (ZIP_CHECKCONS) and `mmzip check` accept the archive; `mmzip pack` drops the kept ranges and
their fields.

Chunks of one size larger than the directory would leave free space no later chunk fits in: such an archive
keeps no tail at all, and so relocates exactly as without kept tails (test_uniform_chunks_keep_nothing).
"""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import io
import re
import struct
import zipfile

import numpy as np

from mmzip_testlib import BUILD, TempDir, check_equal, main, mmzip, run, zip_tools_ok

LIBZIP_VERIFY = os.path.join(BUILD, "tests", "interop", "libzip_verify")
KEPT = 0x6D4B
PAGE = 4096


def kept_fields(path):
    """{entry name: (header offset, from, to)} for the records with a kept-tail field."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for i in z.infolist():
            x, k = i.extra, 0
            while k + 4 <= len(x):
                fid, n = struct.unpack("<HH", x[k:k + 4])
                if fid == KEPT:
                    check_equal(n, 16, "size of the kept-tail field of %s" % i.filename)
                    out[i.filename] = (i.header_offset,) + struct.unpack("<QQ", x[k + 4:k + 20])
                k += 4 + n
    return out


def end_records_at(data, to):
    """The directory offset of mmzip's ZIP64 end records ending at `to`, or None."""
    if to < 98:
        return None
    z = data[to - 98:to]
    if z[:4] != b"PK\x06\x06" or z[56:60] != b"PK\x06\x07" or z[76:80] != b"PK\x05\x06":
        return None
    size, off = struct.unpack("<QQ", z[40:56])
    loc = struct.unpack("<Q", z[64:72])[0]
    return off if loc == to - 98 and off + size == to - 98 else None


def is_hole(path, start, end):
    """[start, end) holds no data (SEEK_DATA finds none before end)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            nxt = os.lseek(fd, start, os.SEEK_DATA)
        except OSError:
            return True  # ENXIO: no data after start
        return nxt >= end
    finally:
        os.close(fd)


def sizes(n):
    """Log-uniform from 128 bytes to 64 KiB, as the readers benchmark's (small entries fill the free space)."""
    rng = np.random.default_rng(11)
    return [int(2 ** x) for x in rng.uniform(7, 16, n)]


def base_archive(d, rng):
    """d/a.zip made by one `mmzip put` of a 20 MB entry "base" of random bytes: (path, those bytes)."""
    a, base = os.path.join(d, "a.zip"), os.path.join(d, "base.bin")
    data = rng.integers(0, 256, 20_000_000, dtype=np.uint8).tobytes()
    with open(base, "wb") as f:
        f.write(data)
    mmzip("put", a, "base", base)
    return a, data


def info_bytes(path):
    """The *_bytes figures `mmzip info` prints."""
    return {k: int(v) for k, v in re.findall(r"^(\w+_bytes):\s+(\d+)", mmzip("info", path).stdout, re.M)}


def test_sessions():
    with TempDir() as d:
        rng = np.random.default_rng(7)
        a, base_data = base_archive(d, rng)
        expect = {"base": base_data}
        relocations = kept_seen = released = 0
        previous_kept = None
        for k, n in enumerate(sizes(120)):
            name = "p/%03d" % k
            blob = rng.integers(0, 256, n, dtype=np.uint8).tobytes()
            path = os.path.join(d, "blob")
            with open(path, "wb") as f:
                f.write(blob)
            before = open(a, "rb").read()
            mmzip("put", a, name, path)
            expect[name] = blob
            after = open(a, "rb").read()
            fields = kept_fields(a)
            if len(after) > len(before) and name in fields:
                relocations += 1
                # 1. a reader that took the old size still reads the old archive, whole: below the old size only
                # the directory kept by the relocation before changed (released, below)
                released_pages = range(0)
                if previous_kept and end_records_at(before, previous_kept[2]) is not None:
                    _, pfrom, pto = previous_kept
                    pcd = end_records_at(before, pto)
                    released_pages = range(pcd // PAGE, (pto + PAGE - 1) // PAGE)
                changed = [i for i in range(0, len(before) // PAGE + 1)
                           if after[i * PAGE:(i + 1) * PAGE][:len(before) - i * PAGE] != before[i * PAGE:(i + 1) * PAGE]]
                assert all(i in released_pages for i in changed), (
                    "%s: pages below the old size that changed: %r (released: %r)" % (name, changed[:8], released_pages))
                with zipfile.ZipFile(io.BytesIO(after[:len(before)])) as z:
                    check_equal(z.testzip(), None, "%s: the archive as a reader of the old size sees it" % name)
                    check_equal(len(z.namelist()), len(expect) - 1, "%s: entries seen at the old size" % name)
                # 2. the field names the skipped range, ending in the old end records
                lfh, frm, to = fields[name]
                check_equal(to, len(before), "%s: the kept range ends at the old end of the file" % name)
                check_equal(lfh, (to + PAGE - 1) // PAGE * PAGE, "%s: the entry starts on the next page" % name)
                cd = end_records_at(after, to)
                assert cd is not None and frm <= cd, "%s: no intact end records at the end of [%d, %d)" % (
                    name, frm, to)
                kept_seen += 1
                # 3. the kept directory before it is released
                if previous_kept and released_pages:
                    pname, pfrom, pto = previous_kept
                    check_equal(end_records_at(after, pto), None, "%s: end records of the kept range of %s" % (
                        name, pname))
                    pcd = end_records_at(before, pto)
                    check_equal(after[pcd:pto], bytes(pto - pcd), "%s: the released directory of %s" % (
                        name, pname))
                    lo = (pcd + PAGE - 1) // PAGE * PAGE
                    assert is_hole(a, lo, pto // PAGE * PAGE), "%s: the released range of %s is no hole" % (
                        name, pname)
                    released += 1
                previous_kept = (name, frm, to)
                # libzip's default open takes, among the end records in the last 64 KiB, the one whose
                # directory spans the most: the current one, not the kept one
                lines = run([LIBZIP_VERIFY, "--default", a, "-"]).stdout.splitlines()
                check_equal(len(lines), len(expect), "%s: entries libzip lists without ZIP_CHECKCONS" % name)
        print("%d sessions, %d kept a tail, %d released the one before" % (len(sizes(120)), kept_seen, released))
        assert kept_seen >= 3 and released >= 2, (kept_seen, released)

        # kept_bytes is every byte of the recorded ranges that no entry covers: holes, a kept directory, and the
        # zeros of partial pages (an outside review found those counted nowhere, so that the file at rest went
        # past its allowance by them). A range is marked spent (from = to = 0) only when entries cover all of it.
        fields = kept_fields(a)
        data = open(a, "rb").read()
        with zipfile.ZipFile(a) as z:
            extents = sorted((i.header_offset, i.header_offset + 30 + sum(struct.unpack_from(
                "<HH", data, i.header_offset + 26)) + i.compress_size) for i in z.infolist())
        uncovered = 0
        for name, (lfh, frm, to) in fields.items():
            if frm == to == 0:
                continue
            top = min((to + PAGE - 1) // PAGE * PAGE, lfh)
            cov = sum(max(0, min(e, top) - max(b, frm)) for b, e in extents)
            uncovered += top - frm - cov
        info = dict(x.split(":", 1) for x in mmzip("info", a).stdout.splitlines() if ":" in x)
        check_equal(int(info["kept_bytes"].split()[0]), uncovered, "kept_bytes: the bytes of the ranges no entry covers")
        spent = [n for n, (lfh, frm, to) in fields.items() if frm == to == 0]
        print("kept ranges recorded: %d, marked spent: %d, %d bytes no entry's" % (len(fields), len(spent), uncovered))

        # Free space used again: an entry put after another lies below it.
        with zipfile.ZipFile(a) as z:
            offsets = {i.filename: i.header_offset for i in z.infolist()}
        order = sorted((n for n in offsets if n.startswith("p/")))
        below = [n for i, n in enumerate(order) if any(offsets[m] > offsets[n] for m in order[:i])]
        print("puts that went into free space below an earlier entry: %d (%s)" % (len(below), ", ".join(below[:5])))
        assert below, "no put went into the free space of a released range"

        # A commit that replaces an entry releases the kept directory (whose listing would still have the
        # old version for a reader that picks end records by span).
        intact = [n for n, (lfh, frm, to) in kept_fields(a).items() if end_records_at(open(a, "rb").read(), to)]
        check_equal(len(intact) <= 1, True, "kept directories intact at once: %r" % intact)
        blob = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
        with open(path, "wb") as f:
            f.write(blob)
        mmzip("put", a, "p/003", path)
        expect["p/003"] = blob
        data = open(a, "rb").read()
        check_equal([n for n, (lfh, frm, to) in kept_fields(a).items() if end_records_at(data, to)], [],
                    "kept directories intact after a commit that replaced an entry")

        # Readers, and the file at rest.
        with zipfile.ZipFile(a) as z:
            for name, blob in expect.items():
                check_equal(z.read(name) == blob, True, "zipfile's bytes of %s" % name)
        zip_tools_ok(a)
        run([LIBZIP_VERIFY, a, "-"])
        check_equal(len(run([LIBZIP_VERIFY, "--default", a, "-"]).stdout.splitlines()), len(expect),
                    "entries libzip lists without ZIP_CHECKCONS")
        chk = mmzip("check", a).stdout
        assert "valid for every ZIP reader: yes" in chk, chk
        vals = info_bytes(a)
        size = os.path.getsize(a)
        check_equal(vals["file_bytes"], size, "file_bytes")
        check_equal(sum(v for k, v in vals.items() if k != "file_bytes"), size, "the figures of mmzip info add up")
        # Dead: the replaced version, and at most a partial page per kept range and per put into free space
        # that no later put can start in (a hole is reported by pages).
        bound = sizes(120)[3] + 200 + PAGE * (len(kept_fields(a)) + len(below))
        assert vals["dead_bytes"] <= bound, "dead bytes: %d, more than %d" % (vals["dead_bytes"], bound)
        allowance = max(64 << 10, size // 100)
        assert vals["kept_bytes"] + vals["free_bytes"] <= allowance, (
            "kept %d + free %d bytes at rest, allowance %d" % (vals["kept_bytes"], vals["free_bytes"], allowance))
        print("at rest: %d bytes, kept %d, free %d (allowance %d)" % (size, vals["kept_bytes"], vals["free_bytes"],
                                                                    allowance))

        packed = os.path.join(d, "packed.zip")
        mmzip("pack", a, packed)
        check_equal(kept_fields(packed), {}, "kept-tail fields after pack")
        with zipfile.ZipFile(packed) as z:
            for name, blob in expect.items():
                check_equal(z.read(name) == blob, True, "packed bytes of %s" % name)
        vals = info_bytes(packed)
        check_equal(vals["kept_bytes"], 0, "kept bytes after pack")


def test_uniform_chunks_keep_nothing():
    """Chunks of one size, larger than the directory, would leave free space no later chunk fits in: the
    archive keeps no tail (protocol.md §3.7), so it relocates exactly as it did without kept tails, and no byte
    of it is kept free below the data."""
    with TempDir() as d:
        rng = np.random.default_rng(3)
        a, _ = base_archive(d, rng)
        chunk = os.path.join(d, "chunk")
        grew = 0
        for k in range(150):
            with open(chunk, "wb") as f:
                f.write(rng.integers(0, 256, 100_000, dtype=np.uint8).tobytes())
            before = os.path.getsize(a)
            mmzip("put", a, "c/%03d" % k, chunk)
            grew += os.path.getsize(a) > before
        check_equal(kept_fields(a), {}, "kept-tail fields with chunks of one size")
        vals = info_bytes(a)
        check_equal((vals["kept_bytes"], vals["dead_bytes"]), (0, 0), "kept and dead bytes")
        assert grew >= 3, "only %d relocations: the test does not relocate" % grew
        print("150 chunks of 100 KB: %d relocations, no tail kept" % grew)


if __name__ == "__main__":
    main([test_sessions, test_uniform_chunks_keep_nothing])
