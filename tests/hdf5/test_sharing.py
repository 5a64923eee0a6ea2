"""Several opens of one archive: HDF5 recognises one member opened twice (the driver's cmp), the driver
writes one member per archive at a time, one writer process per archive (the mmzip writer lock), and
readers in other processes see committed versions only."""
import os
import subprocess

import numpy as np
import h5py

from mmzip_testlib import PYTHON, TempDir, check_equal, main, zip_tools_ok
from h5zip_testlib import check_sample, make_archive, write_sample

OTHER_PROCESS = r"""
import sys, h5py, mmzip
mmzip.register_h5py()
archive, member, mode = sys.argv[1:4]
try:
    with h5py.File(archive, mode, driver="mmzip", member=member) as f:
        print("ok", sorted(f))
except OSError as e:
    print("error", e)
"""


def other_process(archive, member, mode):
    p = subprocess.run([PYTHON, "-c", OTHER_PROCESS, archive, member, mode], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError("the other process crashed:\n" + p.stderr)
    return p.stdout.strip()


def expect_error(opener, text):
    try:
        opener().close()
    except OSError as e:
        if text not in str(e):
            raise AssertionError("error %r does not say %r" % (str(e), text))
        return
    raise AssertionError("expected an error saying %r" % text)


def make(d):
    arc = os.path.join(d, "shared.zip")
    make_archive(arc)
    for seed, member in ((41, "a.h5"), (42, "b.h5")):
        with h5py.File(arc, "a", driver="mmzip", member=member) as f:
            write_sample(f, seed)
    return arc


def test_same_member_twice_is_one_hdf5_file():
    with TempDir() as d:
        arc = make(d)
        w = h5py.File(arc, "r+", driver="mmzip", member="a.h5")
        r = h5py.File(arc + "#/a.h5", "r", driver="mmzip")
        check_equal(r.id.fileno, w.id.fileno, "HDF5 file number of the two opens")
        w["fresh"] = np.arange(4)
        check_equal(r["fresh"][:].tolist(), [0, 1, 2, 3], "write seen through the second handle")
        r.close()
        w.close()
        with h5py.File(arc, "r", driver="mmzip", member="a.h5") as f:
            check_equal(f["fresh"][:].tolist(), [0, 1, 2, 3], "after close")


def test_one_member_written_at_a_time():
    with TempDir() as d:
        arc = make(d)
        with h5py.File(arc, "r+", driver="mmzip", member="a.h5") as f:
            expect_error(lambda: h5py.File(arc, "r+", driver="mmzip", member="b.h5"),
                         "member 'a.h5' of the same archive is open for writing in this process")
            # Reading another member beside the writer is fine.
            with h5py.File(arc, "r", driver="mmzip", member="b.h5") as g:
                check_sample(g, 42, "b beside the writer: ")
            f["more"] = np.ones(3)
        # Once a.h5 is closed, b.h5 can be written.
        with h5py.File(arc, "r+", driver="mmzip", member="b.h5") as f:
            f["more"] = np.zeros(3)
        with h5py.File(arc, "r", driver="mmzip", member="a.h5") as f:
            check_equal(f["more"][:].tolist(), [1.0] * 3, "a.h5")
        with h5py.File(arc, "r", driver="mmzip", member="b.h5") as f:
            check_equal(f["more"][:].tolist(), [0.0] * 3, "b.h5")
        zip_tools_ok(arc)


def test_no_writer_beside_read_only_files():
    with TempDir() as d:
        arc = make(d)
        with h5py.File(arc, "r", driver="mmzip", member="a.h5"):
            expect_error(lambda: h5py.File(arc, "r+", driver="mmzip", member="b.h5"),
                         "HDF5 files in it open read-only through the mmzip driver")


def test_one_writer_process_and_snapshot_readers():
    with TempDir() as d:
        arc = make(d)
        with h5py.File(arc, "r+", driver="mmzip", member="a.h5") as f:
            got = other_process(arc, "b.h5", "r+")
            if not got.startswith("error") or "open for writing by another process" not in got:
                raise AssertionError("a second writer process was not refused: " + got)
            f["step1"] = np.arange(5)
            check_equal(other_process(arc, "a.h5", "r"),
                        "ok ['chunked', 'contiguous', 'grp', 'gzipped']", "reader before the flush")
            f.flush()
            check_equal(other_process(arc, "a.h5", "r"),
                        "ok ['chunked', 'contiguous', 'grp', 'gzipped', 'step1']", "reader after the flush")
        check_equal(other_process(arc, "b.h5", "r+"), "ok ['chunked', 'contiguous', 'grp', 'gzipped']",
                    "a writer process once the first has closed")


if __name__ == "__main__":
    main([test_same_member_twice_is_one_hdf5_file, test_one_member_written_at_a_time,
          test_no_writer_beside_read_only_files, test_one_writer_process_and_snapshot_readers])
