"""Issue 13 point 6: files a member refers to. A virtual dataset (VDS) whose source file lies beside the
archive, and an external link to a file beside the archive, as they lay beside the HDF5 file before it was
put into the archive. HDF5 opens such files with the referring file's driver; a VDS source it cannot open
reads as fill values with no error, which is what happened before. Now, through h5py's driver (member=) and
through unmodified h5dump under `mmzip run` (both "a.zip#/m.h5" and the bare "a.zip"), the values must be the
source's, compared with what plain h5dump reads from the original file beside its sources; a VDS source that
is a member of the same archive is found too, whether the member was opened as "a.zip#/vds.h5" or as "a.zip"
with member= (where it read as fill values until the driver learnt the referring archive from fapl_get). Opening the member for writing keeps
working, and the source file beside the archive is not changed by reading."""
import hashlib
import os
import shutil
import subprocess

import numpy as np
import h5py

import mmzip
from mmzip_testlib import MMZIP, TempDir, check_equal, main, mmzip_run, run
from h5zip_testlib import h5dump_values

SRC = np.arange(10, dtype="<i4") * 3 + 1
INNER = np.arange(6, dtype="<i4") * -2 - 5
OTHER = np.arange(5, dtype="<f8") + 0.5
FILL = -7


def make_files(d):
    """In d: src.h5 and other.h5 (beside the archive), vds.h5 (VDS of src.h5, VDS of inner.h5, external link to
    other.h5) and a.zip holding vds.h5 and inner.h5; vds.h5 itself is moved aside to orig/ with copies of its
    sources, for plain h5dump to read as the reference; b.zip holds vds.h5 alone."""
    with h5py.File(os.path.join(d, "src.h5"), "w") as f:
        f["data"] = SRC
    with h5py.File(os.path.join(d, "other.h5"), "w") as f:
        f["x"] = OTHER
    with h5py.File(os.path.join(d, "inner.h5"), "w") as f:
        f["data"] = INNER
    cwd = os.getcwd()
    os.chdir(d)
    try:
        lay = h5py.VirtualLayout(shape=(10,), dtype="<i4")
        lay[:] = h5py.VirtualSource("src.h5", "data", shape=(10,))
        inner = h5py.VirtualLayout(shape=(6,), dtype="<i4")
        inner[:] = h5py.VirtualSource("inner.h5", "data", shape=(6,))
        with h5py.File("vds.h5", "w") as f:
            f.create_virtual_dataset("v", lay, fillvalue=FILL)
            f.create_virtual_dataset("inner", inner, fillvalue=FILL)
            f["ext"] = h5py.ExternalLink("other.h5", "/x")
    finally:
        os.chdir(cwd)
    arc = os.path.join(d, "a.zip")
    run([MMZIP, "put", arc, "vds.h5", os.path.join(d, "vds.h5")])
    run([MMZIP, "put", arc, "inner.h5", os.path.join(d, "inner.h5")])
    # The bare archive name opens its only HDF5 member: b.zip holds vds.h5 alone.
    run([MMZIP, "put", os.path.join(d, "b.zip"), "vds.h5", os.path.join(d, "vds.h5")])
    orig = os.path.join(d, "orig")
    os.mkdir(orig)
    for n in ("vds.h5", "inner.h5"):
        shutil.move(os.path.join(d, n), os.path.join(orig, n))
    for n in ("src.h5", "other.h5"):
        shutil.copy(os.path.join(d, n), os.path.join(orig, n))
    return arc, orig


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_vds_source_and_external_link_beside_the_archive():
    mmzip.register_h5py()
    with TempDir() as d:
        arc, orig = make_files(d)
        src_digest = digest(os.path.join(d, "src.h5"))
        # The reference: plain h5dump on the original file, its sources beside it.
        ref_v = h5dump_values(os.path.join(orig, "vds.h5"), "/v", "<i4", workdir=d)
        ref_ext = h5dump_values(os.path.join(orig, "vds.h5"), "/ext", "<f8", workdir=d)
        assert np.array_equal(ref_v, SRC) and np.array_equal(ref_ext, OTHER), "plain h5dump reference"

        # h5py through the driver, read-only and read-write, run from another directory.
        cwd = os.getcwd()
        os.chdir("/")
        try:
            for mode in ("r", "r+"):
                with h5py.File(arc, mode, driver="mmzip", member="vds.h5") as f:
                    got = f["v"][:]
                    assert np.array_equal(got, SRC), "h5py (%s) VDS with its source beside the archive: %r" % (
                        mode, got)
                    assert np.array_equal(f["ext"][:], OTHER), "h5py (%s) external link beside the archive" % mode
                    # A source inside the archive, the member named apart (member=): it read as fill values.
                    got = f["inner"][:]
                    assert np.array_equal(got, INNER), "h5py (%s, member=) VDS source inside the archive: %r" % (
                        mode, got)
            # The "#/" name: a source that is a member of the same archive is found too.
            with h5py.File(arc + "#/vds.h5", "r", driver="mmzip") as f:
                assert np.array_equal(f["v"][:], SRC), "h5py, '#/' name: VDS source beside the archive"
                assert np.array_equal(f["inner"][:], INNER), "h5py, '#/' name: VDS source inside the archive"
        finally:
            os.chdir(cwd)

        # Unmodified h5dump under `mmzip run`, by both names, from another working directory.
        for name in (arc + "#/vds.h5", os.path.join(d, "b.zip")):
            got = h5dump_values(name, "/v", "<i4", under_mmzip_run=True, workdir=d)
            assert np.array_equal(got, ref_v), "h5dump under mmzip run (%s): VDS values %r" % (name, got)
            got = h5dump_values(name, "/ext", "<f8", under_mmzip_run=True, workdir=d)
            assert np.array_equal(got, ref_ext), "h5dump under mmzip run (%s): external link values %r" % (name, got)
        got = h5dump_values(arc + "#/vds.h5", "/inner", "<i4", under_mmzip_run=True, workdir=d)
        assert np.array_equal(got, INNER), "h5dump under mmzip run: VDS source inside the archive: %r" % got

        check_equal(digest(os.path.join(d, "src.h5")), src_digest, "the VDS source beside the archive")
        # The archive's own errors still stand for names that are neither a member nor a file beside it.
        try:
            h5py.File(arc + "#/missing.h5", "r", driver="mmzip")
        except OSError as e:
            assert "missing.h5" in str(e), "error for a missing member does not name it: %s" % e
        else:
            raise AssertionError("a missing member opened")
        # A plain HDF5 file named through the driver is only read as a file a member refers to: the
        # driver never takes it for an archive (a writable open would have tried to recover it).
        with h5py.File(os.path.join(d, "src.h5"), "r+", driver="mmzip") as f:
            assert np.array_equal(f["data"][:], SRC)
        check_equal(digest(os.path.join(d, "src.h5")), src_digest, "src.h5 opened r+ and closed unchanged")


def test_archive_with_a_dead_first_member_is_no_plain_file():
    """The driver serves a plain HDF5 file only if the name is no archive. An archive whose first entry was
    replaced starts with a neutralized header ("PK\\5\\6"; four zero bytes in what older versions of mmzip
    wrote, which is no "PK" at all), and keeps the old version's data at 4096, where HDF5 looks for a signature
    (a user block): taking it for a plain file would read the old version, with no error. The driver must
    read the current one, whatever the name, in both layouts."""
    mmzip.register_h5py()
    with TempDir() as d:
        arc = os.path.join(d, "t.zip")
        for v in (1, 2):
            src = os.path.join(d, "v%d.h5" % v)
            with h5py.File(src, "w") as f:
                f["x"] = np.full(4, v, dtype="<i4")
            run([MMZIP, "put", "--align", "4096", arc, "m.h5", src])
        with open(arc, "rb") as fh:
            head = fh.read(8192)
        assert head[:4] == b"PK\x05\x06" and head[4096:4104] == b"\x89HDF\r\n\x1a\n", (
            "the layout this test needs changed: %r %r" % (head[:4], head[4096:4104]))
        for layout in ("current", "older mmzip"):
            if layout == "older mmzip":
                with open(arc, "r+b") as fh:
                    fh.write(b"\0\0\0\0")
            for name, kw in ((arc, {}), (arc, {"member": "m.h5"}), (arc + "#/m.h5", {})):
                with h5py.File(name, "r", driver="mmzip", **kw) as f:
                    got = f["x"][:]
                assert np.array_equal(got, [2] * 4), "%s %r (%s layout): read %r, the current version holds 2s" % (
                    name, kw, layout, got)


def test_sources_and_targets_that_are_sibling_members():
    """dir/m.h5 refers to other.h5 (a VDS source and an external link target) beside it; both go into the
    archive as dir/m.h5 and dir/other.h5, and only the archive is left. The guide (section 5): other.h5 is
    looked up first as the member dir/other.h5. Through h5py it was not (an outside review): with member= the
    VDS read as fill values, the external link failed in both name forms (h5py follows links with a sec2
    access list of its own), and a stale other.h5 beside the archive was read instead, with no error. Checked
    against the same files read by plain h5py before they went into the archive, and by h5dump under
    `mmzip run`."""
    mmzip.register_h5py()
    want = np.arange(5, dtype="<i8") * 10
    with TempDir() as d:
        os.makedirs(os.path.join(d, "dir"))
        with h5py.File(os.path.join(d, "dir", "other.h5"), "w") as f:
            f["data"] = want
        with h5py.File(os.path.join(d, "top.h5"), "w") as f:
            f["data"] = want + 1
        with h5py.File(os.path.join(d, "dir", "m.h5"), "w") as f:
            f["ext"] = h5py.ExternalLink("other.h5", "/data")
            f["up"] = h5py.ExternalLink("../top.h5", "/data")
            lay = h5py.VirtualLayout(shape=(5,), dtype="<i8")
            lay[:] = h5py.VirtualSource("other.h5", "data", shape=(5,))
            f.create_virtual_dataset("vds", lay, fillvalue=-1)
        with h5py.File(os.path.join(d, "dir", "m.h5"), "r") as f:
            check_equal((f["vds"][:].tolist(), f["ext"][:].tolist(), f["up"][:].tolist()),
                        (want.tolist(), want.tolist(), (want + 1).tolist()), "control")
        os.makedirs(os.path.join(d, "arch"))
        arc = os.path.join(d, "arch", "run.zip")
        for m in ("dir/m.h5", "dir/other.h5", "top.h5"):
            run([MMZIP, "put", arc, m, os.path.join(d, m)])
        shutil.rmtree(os.path.join(d, "dir"))
        os.remove(os.path.join(d, "top.h5"))
        os.symlink("arch", os.path.join(d, "linked"))  # the archive's directory by another name
        cwd = os.getcwd()
        try:
            os.chdir(d)
            for decoy in (False, True):
                if decoy:  # stale files of the targets' names beside the archive, and in the directory
                    for p in ("other.h5", "dir/other.h5", "arch/other.h5", "arch/dir/other.h5", "top.h5", "arch/top.h5"):
                        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
                        with h5py.File(p, "w") as f:
                            f["data"] = want * -100
                for name, kw in (("arch/run.zip", {"member": "dir/m.h5"}), ("arch/run.zip#/dir/m.h5", {}),
                                 (arc, {"member": "dir/m.h5"}), (arc + "#/dir/m.h5", {}),
                                 ("linked/run.zip", {"member": "dir/m.h5"}), ("linked/run.zip#/dir/m.h5", {})):
                    with h5py.File(name, "r", driver="mmzip", **kw) as f:
                        got = (f["vds"][:].tolist(), f["ext"][:].tolist(), f["up"][:].tolist())
                    check_equal(got, (want.tolist(), want.tolist(), (want + 1).tolist()),
                                "%s %r%s: the VDS and the external link" % (name, kw, ", a stale decoy beside" if decoy else ""))
            p = mmzip_run("h5dump", "-d", "/ext", "arch/run.zip#/dir/m.h5")
            assert "0, 10, 20, 30, 40" in p.stdout, p.stdout
        finally:
            os.chdir(cwd)
        # A plain HDF5 file's external link is followed as h5py always did.
        with h5py.File(os.path.join(d, "plain.h5"), "w") as f:
            f["ext"] = h5py.ExternalLink("other.h5", "/data")
        with h5py.File(os.path.join(d, "plain.h5"), "r") as f:
            check_equal(f["ext"][:].tolist(), (want * -100).tolist(), "a plain file's link, after register_h5py")


if __name__ == "__main__":
    main([test_vds_source_and_external_link_beside_the_archive, test_archive_with_a_dead_first_member_is_no_plain_file,
          test_sources_and_targets_that_are_sibling_members])
