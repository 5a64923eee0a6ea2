"""Issue point 6: dataset reads come from the shared mapping, not from read(2)/pread(2) on the archive
(counted with strace, with sec2 on the extracted file as the control that shows the counting works), and
HDF5's truncate-on-flush sets the member's size without ever cutting the archive (where sec2, opening the
same archive read/write, destroys it)."""
import os
import re
import shutil
import subprocess
import zipfile

import numpy as np
import h5py

from mmzip_testlib import PYTHON, TempDir, check_equal, main, run, zip_tools_ok
from h5zip_testlib import entry_table, extract, make_archive, mmzip_entries

# Opens the file, reads the datasets between two marker syscalls on paths strace is told to watch, and
# checks the values (a read that returned nothing would otherwise pass).
READER = r"""
import os, sys, numpy as np, h5py, mmzip
mmzip.register_h5py()
path, mark, driver = sys.argv[1], sys.argv[2], sys.argv[3]
f = h5py.File(path, "r", driver="mmzip", member="data.h5") if driver == "mmzip" else h5py.File(path, "r")
os.access(mark + ".begin", os.F_OK)
big = f["big"][:]
chunked = f["chunked"][:]
part = f["big"][1000:2000]
os.access(mark + ".end", os.F_OK)
assert np.array_equal(big, np.arange(2 << 20, dtype="<f8")), "big"
assert np.array_equal(chunked, np.arange(300000, dtype="<i4").reshape(300, 1000)), "chunked"
assert np.array_equal(part, np.arange(1000, 2000, dtype="<f8")), "part"
f.close()
"""

READ_CALLS = ("read", "pread64", "readv", "preadv", "preadv2")


def make_data(d):
    h5 = os.path.join(d, "data.h5")
    with h5py.File(h5, "w") as f:
        f["big"] = np.arange(2 << 20, dtype="<f8")  # 16 MiB, contiguous
        f.create_dataset("chunked", data=np.arange(300000, dtype="<i4").reshape(300, 1000), chunks=(50, 200),
                         compression="gzip")
    arc = os.path.join(d, "reads.zip")
    make_archive(arc)
    with zipfile.ZipFile(arc, "a") as z:
        z.write(h5, "data.h5")
    return h5, arc


def reads_between_marks(path, driver, d):
    """Runs READER under strace watching `path` and the markers; returns (calls between the markers,
    calls before them) as lists of 'name' strings."""
    mark = os.path.join(d, "mark")
    log = os.path.join(d, "strace-%s.log" % driver)
    if not shutil.which("strace"):
        raise AssertionError("strace is not installed (it is a test dependency, see .ci/deps)")
    run(["strace", "-f", "-o", log, "-e", "trace=%s,access,faccessat,faccessat2" % ",".join(READ_CALLS),
         "-P", path, "-P", mark + ".begin", "-P", mark + ".end", PYTHON, "-c", READER, path, mark, driver])
    with open(log) as f:
        lines = f.read().splitlines()
    phase, before, between = 0, [], []
    for line in lines:
        m = re.match(r"(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\(", line)
        if not m:
            continue
        call = m.group(1)
        if "mark.begin" in line:
            phase = 1
        elif "mark.end" in line:
            phase = 2
        elif call in READ_CALLS:
            (before if phase == 0 else between if phase == 1 else []).append(call)
    if phase != 2:
        raise AssertionError("strace did not see both markers:\n" + "\n".join(lines[-20:]))
    return between, before


def test_dataset_reads_make_no_read_calls():
    with TempDir() as d:
        h5, arc = make_data(d)
        between, before = reads_between_marks(arc, "mmzip", d)
        check_equal(between, [], "read calls on the archive during dataset reads through the driver")
        if not before:
            raise AssertionError("strace saw no read of the archive at all (the core reads its directory at "
                                 "open): the trace is not watching the archive")
        # The control: sec2 on the extracted file reads it with pread during the same dataset reads.
        between_sec2, _ = reads_between_marks(h5, "sec2", d)
        if len(between_sec2) < 2:
            raise AssertionError("sec2 made %d read calls; the counting does not work" % len(between_sec2))
        print("dataset reads: mmzip %d read calls, sec2 %d" % (len(between), len(between_sec2)))


def test_truncate_on_flush_sets_member_size_only():
    """A member with bytes past HDF5's end of allocation: HDF5 truncates to that end at every flush. sec2
    on a plain copy makes the file that size; the driver gives the member the same size and bytes, and
    the archive around it stays whole."""
    with TempDir() as d:
        h5 = os.path.join(d, "padded.h5")
        with h5py.File(h5, "w") as f:
            f["x"] = np.arange(1000, dtype="<i8")
        with open(h5, "ab") as fh:
            fh.write(b"\0" * 65536)  # past the end of allocation; HDF5 accepts it and truncates it away
        arc = os.path.join(d, "trunc.zip")
        make_archive(arc)
        with zipfile.ZipFile(arc, "a") as z:
            z.write(h5, "padded.h5")
            z.writestr("after.txt", "an entry after the member\n")
        before = entry_table(arc)
        padded_size = mmzip_entries(arc)["padded.h5"]["size"]

        plain = os.path.join(d, "plain.h5")
        shutil.copy(h5, plain)
        for path, kw in ((plain, {}), (arc, {"driver": "mmzip", "member": "padded.h5"})):
            with h5py.File(path, "r+", **kw) as f:
                f["y"] = np.arange(10, dtype="<i8")
                f.flush()
                f["z"] = np.arange(20, dtype="<i8")
        sec2_size = os.path.getsize(plain)
        if sec2_size >= padded_size:
            raise AssertionError("sec2 did not truncate (%d >= %d): the test exercises nothing" % (sec2_size,
                                                                                                  padded_size))
        member_size = mmzip_entries(arc)["padded.h5"]["size"]
        check_equal(member_size, sec2_size, "member size after truncate-on-flush (sec2 file size)")
        zip_tools_ok(arc)
        after = entry_table(arc)
        for n in ("README.txt", "table.csv", "after.txt"):
            check_equal(after[n], before[n], "offset/CRC of %s" % n)
        out = os.path.join(d, "out")
        os.mkdir(out)
        with open(extract(arc, "padded.h5", out), "rb") as a, open(plain, "rb") as b:
            check_equal(a.read() == b.read(), True, "member bytes equal to the file sec2 wrote")
        with h5py.File(arc, "r", driver="mmzip", member="padded.h5") as f:
            check_equal(f["z"][:].tolist(), list(range(20)), "values after truncation")


def test_sec2_read_write_on_the_archive_destroys_it():
    """Why the driver exists for writing: a member at offset 4096 is visible to plain HDF5, and opening
    the archive read/write with sec2 truncates it to the HDF5 data's end, leaving no ZIP."""
    with TempDir() as d:
        arc = os.path.join(d, "victim.zip")
        with h5py.File(arc, "w", driver="mmzip", member="m.h5") as f:
            f["x"] = np.arange(10)
        offset = mmzip_entries(arc)["m.h5"]["offset"]
        if offset & (offset - 1) or offset < 512:
            raise AssertionError("member at %d, not a power of two: sec2 cannot see it" % offset)
        copy = os.path.join(d, "copy.zip")
        shutil.copy(arc, copy)
        with h5py.File(copy, "r+") as f:  # sec2
            check_equal(f["x"][:].tolist(), list(range(10)), "sec2 sees the member")
        try:
            zipfile.ZipFile(copy).close()
            raise AssertionError("sec2 left a valid ZIP; the contrast shows nothing")
        except zipfile.BadZipFile:
            pass
        with h5py.File(arc, "r+", driver="mmzip", member="m.h5") as f:
            f["y"] = np.arange(3)
        zip_tools_ok(arc)


if __name__ == "__main__":
    main([test_dataset_reads_make_no_read_calls, test_truncate_on_flush_sets_member_size_only,
          test_sec2_read_write_on_the_archive_destroys_it])
