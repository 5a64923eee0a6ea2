"""Several opens of one archive: HDF5 recognises one member opened twice (the driver's cmp), several
members of one archive are written at once in one process, one writer process per archive (the mmzip writer
lock), and readers in other processes see committed versions only."""
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


def test_members_written_at_once():
    """Two members open for writing in one process, growing in turns (each growth finds the other's draft,
    or a flush's commit, in its way, so drafts move), one flushed halfway: both end with every value."""
    with TempDir() as d:
        arc = make(d)
        blocks = {name: [] for name in ("a.h5", "b.h5")}
        with h5py.File(arc, "r+", driver="mmzip", member="a.h5") as fa, \
                h5py.File(arc, "r+", driver="mmzip", member="b.h5") as fb:
            # Reading a third member beside the writers is fine.
            with h5py.File(arc, "r", driver="mmzip", member="b.h5") as g:
                check_sample(g, 42, "b beside the writers: ")
            for step in range(6):
                for name, f in (("a.h5", fa), ("b.h5", fb)):
                    values = np.arange(300000, dtype="f8") * (step + 1) + (1 if name == "a.h5" else -1)
                    f["step%d" % step] = values
                    blocks[name].append(values)
                if step == 2:
                    fa.flush()
                    check_equal(other_process(arc, "a.h5", "r").count("step"), 3, "a.h5 steps after its flush")
                    check_equal(other_process(arc, "b.h5", "r").count("step"), 0, "b.h5 steps, never flushed")
        zip_tools_ok(arc)
        for seed, name in ((41, "a.h5"), (42, "b.h5")):
            with h5py.File(arc, "r", driver="mmzip", member=name) as f:
                check_sample(f, seed, name + ": ")
                for step, values in enumerate(blocks[name]):
                    if not np.array_equal(f["step%d" % step][:], values):
                        raise AssertionError("%s: step%d differs" % (name, step))


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


EDIT_IN_PLACE = r"""
import sys, h5py, numpy as np, mmzip
mmzip.register_h5py()
with h5py.File(sys.argv[1], "r+", driver="mmzip", member="m.h5") as f:
    if sys.argv[2] == "grow":
        f["more"] = np.arange(1000.0)
    else:
        f["d"][:] = 7.0
"""


def test_snapshot_reader_of_a_member_edited_in_place():
    """A reader that read a member's bytes through mmzip.Archive (its CRC-32 checked), then another process
    edits the member in place through the driver: the reader's next read of it used to return the new bytes
    (or, when the edit grew the member, its first old-size bytes: a truncated HDF5 image) without an error (an
    outside review). It now fails, saying the entry was rewritten in place, and a refresh reads the new
    version whole."""
    import mmzip
    mmzip.register_h5py()
    for how in ("overwrite", "grow"):
        with TempDir() as d:
            arc = os.path.join(d, "m.zip")
            with h5py.File(arc, "w", driver="mmzip", member="m.h5") as f:
                f["d"] = np.zeros(1000)
            a = mmzip.Archive(arc)
            first = bytes(a["m.h5"])
            subprocess.run([PYTHON, "-c", EDIT_IN_PLACE, arc, how], check=True, timeout=120)
            try:
                again = bytes(a["m.h5"])
                raise AssertionError("%s: the snapshot returned %d bytes of the edited member without an error "
                                     "(same as before: %s)" % (how, len(again), again == first))
            except mmzip.MmzipError as e:
                assert "rewritten in place by another writer" in str(e) and "m.h5" in str(e), str(e)
            a.refresh()
            path = os.path.join(d, "new.h5")
            with open(path, "wb") as f:
                f.write(bytes(a["m.h5"]))
            with h5py.File(path, "r") as f:
                check_equal(float(f["d"][0]), 7.0 if how == "overwrite" else 0.0, "%s: d after refresh" % how)
                check_equal("more" in f, how == "grow", "%s: the grown member whole after refresh" % how)
            a.close()


if __name__ == "__main__":
    main([test_same_member_twice_is_one_hdf5_file, test_members_written_at_once,
          test_no_writer_beside_read_only_files, test_one_writer_process_and_snapshot_readers,
          test_snapshot_reader_of_a_member_edited_in_place])
