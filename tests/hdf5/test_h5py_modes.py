"""Issue point 1: h5py with driver="mmzip" in modes w, a, r+ and r writes contiguous, chunked and gzip
datasets, groups and attributes into a member of an archive that already holds other entries, reads them
back, and leaves an archive that unzip -t accepts and whose extracted member h5dump reads to the same
values."""
import os

import numpy as np
import h5py

from mmzip_testlib import TempDir, check_equal, main, zip_tools_ok
from h5zip_testlib import (OTHER_ENTRIES, check_sample, check_sample_with_h5dump, entry_table, extract,
                           make_archive, write_sample)


def open_member(archive, member, mode, **kw):
    return h5py.File(archive, mode, driver="mmzip", member=member, **kw)


def test_modes_on_an_archive_with_other_entries():
    with TempDir() as d:
        arc = os.path.join(d, "mixed.zip")
        make_archive(arc)
        others_before = entry_table(arc)

        # w: a new member in an existing archive.
        with open_member(arc, "runs/run1.h5", "w") as f:
            write_sample(f, 1)
        names = zip_tools_ok(arc)
        check_equal(sorted(names), sorted(list(OTHER_ENTRIES) + ["runs/run1.h5"]), "entries after w")

        # r: the same values come back, and the file is read-only.
        with open_member(arc, "runs/run1.h5", "r") as f:
            check_sample(f, 1, "r: ")
            try:
                f["contiguous"][0] = 0
                raise AssertionError("a write through a read-only file succeeded")
            except (OSError, ValueError):
                pass

        # r+: change values in place in all three layouts, add a dataset, group and attribute.
        with h5py.File(arc + "#/runs/run1.h5", "r+", driver="mmzip") as f:
            f["contiguous"][:10] = -7
            f["chunked"][0, :] = 42.0
            f["gzipped"][49, 99] = -1.0
            f.create_group("added").attrs["note"] = "from r+"
            f["added/values"] = np.linspace(0, 1, 11)
        with open_member(arc, "runs/run1.h5", "r") as f:
            c = f["contiguous"][:]
            check_equal(c[:10].tolist(), [-7] * 10, "r+ contiguous edit")
            check_equal(c[10:].tolist(), (np.arange(1000, dtype="<i4")[10:] * 2).tolist(), "untouched values")
            check_equal(f["chunked"][0, :].tolist(), [42.0] * 30, "r+ chunked edit")
            check_equal(float(f["gzipped"][49, 99]), -1.0, "r+ gzip edit")
            check_equal(f["added"].attrs["note"], "from r+", "r+ attribute")
            check_equal(f["added/values"][:].tolist(), np.linspace(0, 1, 11).tolist(), "r+ dataset")

        # a: opens the existing member for writing ...
        with open_member(arc, "runs/run1.h5", "a") as f:
            check_equal(f["added"].attrs["note"], "from r+", "a sees earlier edits")
            f.attrs["appended"] = np.int64(3)
        # ... and creates a missing one.
        with open_member(arc, "runs/run2.h5", "a") as f:
            write_sample(f, 2)

        # w on an existing member replaces its content; w-/x refuse to.
        with open_member(arc, "runs/run2.h5", "w") as f:
            write_sample(f, 3)
        for excl in ("w-", "x"):
            try:
                open_member(arc, "runs/run2.h5", excl).close()
                raise AssertionError("mode %s opened an existing member" % excl)
            except FileExistsError:
                pass

        with open_member(arc, "runs/run1.h5", "r") as f:
            check_equal(int(f.attrs["appended"]), 3, "attribute written in mode a")
            check_equal(f["grp/sub/nested"][:].tolist(), [1, 2, 3], "nested group dataset")
        with open_member(arc, "runs/run2.h5", "r") as f:
            check_sample(f, 3, "run2: ")
            if "added" in f:
                raise AssertionError("mode w did not truncate the member")

        # The other entries never moved and never changed.
        after = entry_table(arc)
        for name, where in others_before.items():
            check_equal(after[name], where, "offset and CRC of %s" % name)
        zip_tools_ok(arc)

        # unzip extracts valid HDF5 files that h5dump and plain h5py (sec2) read to the same values.
        out = os.path.join(d, "out")
        os.mkdir(out)
        run2 = extract(arc, "runs/run2.h5", out)
        check_sample_with_h5dump(run2, 3, workdir=d)
        with h5py.File(run2, "r") as f:
            check_sample(f, 3, "extracted run2: ")
        run1 = extract(arc, "runs/run1.h5", out)
        with h5py.File(run1, "r") as f:
            check_equal(f["chunked"][0, :].tolist(), [42.0] * 30, "extracted run1 edit")


def test_new_archive_in_modes_w_and_a():
    with TempDir() as d:
        for mode in ("w", "a"):
            arc = os.path.join(d, "new-%s.zip" % mode)
            # durable=True (fsync'ed commits) must change nothing but durability.
            with open_member(arc, "only.h5", mode, durable=(mode == "a")) as f:
                write_sample(f, 4)
            check_equal(zip_tools_ok(arc), ["only.h5"], "entries of an archive created in mode " + mode)
            # One HDF5 member: it opens without being named.
            with h5py.File(arc, "r", driver="mmzip") as f:
                check_sample(f, 4, "unnamed: ")
        # An existing empty file (made by mktemp, say) becomes an archive.
        arc = os.path.join(d, "empty.zip")
        open(arc, "wb").close()
        with open_member(arc, "m.h5", "w") as f:
            write_sample(f, 4)
        check_equal(zip_tools_ok(arc), ["m.h5"], "entries of an archive made in an empty file")


def test_latest_format_and_userblock():
    """Superblock v3 (libver latest, the SWMR-capable format) and a user block before the HDF5 data."""
    with TempDir() as d:
        arc = os.path.join(d, "formats.zip")
        make_archive(arc)
        with open_member(arc, "v3.h5", "w", libver="latest") as f:
            write_sample(f, 5)
        with open_member(arc, "v3.h5", "r+") as f:
            f["more"] = np.arange(7)
        with open_member(arc, "ub.h5", "w", userblock_size=1024) as f:
            write_sample(f, 6)
        with open_member(arc, "v3.h5", "r") as f:
            check_sample(f, 5, "v3: ")
            check_equal(f["more"][:].tolist(), list(range(7)), "v3 append")
        with open_member(arc, "ub.h5", "r") as f:
            check_equal(f.userblock_size, 1024, "user block size")
            check_sample(f, 6, "user block: ")
        zip_tools_ok(arc)
        out = os.path.join(d, "out")
        os.mkdir(out)
        check_sample_with_h5dump(extract(arc, "ub.h5", out), 6, workdir=d)
        with h5py.File(extract(arc, "v3.h5", out), "r") as f:
            check_sample(f, 5, "extracted v3: ")


def test_errors_are_clear():
    with TempDir() as d:
        arc = os.path.join(d, "e.zip")
        make_archive(arc)
        with open_member(arc, "a.h5", "w") as f:
            f["x"] = 1
        with open_member(arc, "b.h5", "w") as f:
            f["x"] = 2
        cases = [
            (lambda: open_member(arc, "missing.h5", "r"), FileNotFoundError, "has no member 'missing.h5'"),
            (lambda: open_member(os.path.join(d, "nope.zip"), "a.h5", "r"), FileNotFoundError, "no such archive"),
            (lambda: h5py.File(arc, "r", driver="mmzip"), OSError, "holds 2 HDF5 members ('a.h5', 'b.h5')"),
            (lambda: h5py.File(arc, "w", driver="mmzip"), OSError, "name the member to create"),
            (lambda: h5py.File(arc + "#/a.h5", "r", driver="mmzip", member="b.h5"), OSError,
             "names member 'a.h5' but the file access property list names 'b.h5'"),
            (lambda: open_member(arc, "README.txt", "r"), OSError, "file signature not found"),
        ]
        not_zip = os.path.join(d, "plain.h5")
        with open(not_zip, "wb") as fh:
            fh.write(b"not an archive" * 100)
        cases.append((lambda: open_member(not_zip, "m.h5", "w"), OSError, "plain.h5: not a ZIP archive"))
        # A plain HDF5 file named with member=: the member was ignored and the plain file read, and written in
        # mode "a", with no error (an outside review).
        plain_h5 = os.path.join(d, "run.zip")
        with h5py.File(plain_h5, "w") as f:
            f["precious"] = [1, 2, 3]
        with open(plain_h5, "rb") as fh:
            plain_bytes = fh.read()
        for mode in ("r", "r+", "a"):
            cases.append((lambda mode=mode: open_member(plain_h5, "results/day1.h5", mode), OSError,
                          "run.zip: not a ZIP archive"))
        # Names the archive cannot take are refused at the open, not at the first write (after which h5py
        # crashed at exit: an outside review).
        for bad, why in (("a//b.h5", "an empty or '.' component"), ("a/./b.h5", "an empty or '.' component"),
                         ("dir/", "ends in '/'"), ("../x.h5", "with '..'")):
            cases.append((lambda bad=bad: open_member(arc, bad, "w"), OSError, "cannot create member '%s'" % bad))
            cases.append((lambda bad=bad: open_member(arc, bad, "a"), OSError, why))
        for opener, exc, text in cases:
            try:
                opener().close()
                raise AssertionError("expected %s containing %r" % (exc.__name__, text))
            except exc as e:
                if text not in str(e):
                    raise AssertionError("error %r does not say %r" % (str(e), text))
        names = zip_tools_ok(arc)
        assert not set(names) & {"a//b.h5", "a/./b.h5", "dir/", "../x.h5", "a/b.h5"}, names
        with open(not_zip, "rb") as fh:
            check_equal(fh.read(), b"not an archive" * 100, "a file that is not an archive, after mode w")
        with open(plain_h5, "rb") as fh:
            check_equal(fh.read() == plain_bytes, True, "a plain HDF5 file named with member=, after modes r+, a")


def test_damaged_member_not_opened_for_writing():
    """A member whose bytes no longer match its CRC-32 is refused in modes a and r+: a write session's new
    version (a copy when the member grows past the entry after it) was sealed with a CRC-32 of its own, and the
    damage then passed every check (an outside review: x[5000] read 80000.0 with verify=True)."""
    import subprocess
    import zipfile
    from mmzip_testlib import MMZIP
    with TempDir() as d:
        arc = os.path.join(d, "d.zip")
        with open_member(arc, "m.h5", "w") as f:
            f.create_dataset("x", data=np.arange(100000, dtype="f8"))
            off = f["x"].id.get_offset()
        blob = os.path.join(d, "blob")
        with open(blob, "wb") as fh:
            fh.write(b"z" * 1000)
        subprocess.run([MMZIP, "put", arc, "after", blob], check=True)
        info = zipfile.ZipFile(arc).getinfo("m.h5")
        raw = bytearray(open(arc, "rb").read())
        lh = info.header_offset
        start = lh + 30 + int.from_bytes(raw[lh + 26:lh + 28], "little") + int.from_bytes(raw[lh + 28:lh + 30], "little")
        raw[start + off + 8 * 5000 + 6] ^= 0x40  # x[5000]: 5000.0 -> 80000.0
        with open(arc, "wb") as fh:
            fh.write(raw)
        before = bytes(raw)
        for mode in ("a", "r+"):
            try:
                with open_member(arc, "m.h5", mode) as f:
                    f.create_dataset("more", data=np.ones(200000))
                raise AssertionError("mode %s opened the damaged member" % mode)
            except OSError as e:
                # h5py's mode a falls back to creating the file when opening fails, and raises that error
                # (the member exists); the driver's own message is r+'s.
                if mode == "r+":
                    assert "member 'm.h5' cannot be opened for writing" in str(e) and "CRC-32 mismatch" in str(e), e
        check_equal(open(arc, "rb").read(), before, "the archive after the refused write sessions")
        r = subprocess.run([MMZIP, "check", arc], capture_output=True, text=True)
        assert r.returncode == 1 and "entry 'm.h5': CRC-32 mismatch" in r.stdout + r.stderr, r.stdout + r.stderr


def test_two_members_written_in_one_process():
    """b.h5, the archive's last entry, is edited in place and not flushed; a.h5 is written and flushed, and its
    new version goes right after b.h5; then b.h5 grows, by data or by metadata alone. It moves to a new version
    of its own. Before, its room was still counted as the last entry's: the write or the flush failed ("cannot
    grow ... in place"), and so did the close, and the session's changes to b.h5 were lost (an outside review)."""
    for growth in ("data", "metadata"):
        with TempDir() as d:
            arc = os.path.join(d, "run.zip")
            for m in ("a.h5", "b.h5"):
                with open_member(arc, m, "a") as f:
                    f["init"] = np.arange(10)
            fb = open_member(arc, "b.h5", "a")
            fb["small"] = np.arange(5)
            fa = open_member(arc, "a.h5", "a")
            fa["x"] = np.arange(1000.0)
            fa.flush()
            if growth == "data":
                fb["grow"] = np.arange(100000.0)
            else:
                for i in range(200):
                    fb.create_group("g%03d" % i).attrs["i"] = i
            fb.flush()
            fb.close()
            fa.close()
            with open_member(arc, "b.h5", "r") as f:
                check_equal(f["small"][:].tolist(), list(range(5)), "b.h5 small (%s)" % growth)
                if growth == "data":
                    check_equal(f["grow"][-1], 99999.0, "b.h5 grow (%s)" % growth)
                else:
                    check_equal(len([k for k in f if k.startswith("g")]), 200, "b.h5 groups")
                    check_equal(int(f["g199"].attrs["i"]), 199, "b.h5 g199")
            with open_member(arc, "a.h5", "r") as f:
                check_equal(f["x"][999], 999.0, "a.h5 x (%s)" % growth)
            zip_tools_ok(arc)


if __name__ == "__main__":
    main([test_modes_on_an_archive_with_other_entries, test_new_archive_in_modes_w_and_a,
          test_latest_format_and_userblock, test_errors_are_clear, test_damaged_member_not_opened_for_writing,
          test_two_members_written_in_one_process])
