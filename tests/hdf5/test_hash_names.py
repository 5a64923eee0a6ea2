"""Names holding '#', "#/", spaces and non-ASCII through the HDF5 driver: h5py (driver="mmzip", the member
in the name or as member=) and h5dump under `mmzip run`. The name is read by the rule every route shares
(mmzip_split_name, mmzip.h): an archive "d#/x.zip" is that file, never the member "x.zip" of an archive
"d"; "a.zip#/m.h5" is a member only of the archive a.zip; a name that fits both readings fails naming
both, in h5py's exception and on h5dump's stderr with a non-zero exit status. Values are read back (h5py
and h5dump's binary output) and the directory is listed before and after every step."""
import os
import zipfile

import h5py
import numpy as np

from h5zip_testlib import h5dump_values, make_archive
from hash_names import PLACES, assert_names_both, assert_only_added, assert_unchanged, tree
from mmzip_testlib import TempDir, check_equal, main, mmzip_run


def members(path):
    with zipfile.ZipFile(path) as z:
        return sorted(z.namelist())


def test_h5py_and_h5dump_at_each_place():
    with TempDir() as d, TempDir() as scratch:
        os.chdir(d)
        for i, (folder, name) in enumerate(PLACES):
            if folder:
                os.mkdir(folder)
            path = os.path.join(folder, name)
            make_archive(path)
            values = np.arange(20, dtype="<i4") * (i + 1)
            before = tree(d)
            # The member named in the path, and as member= with the archive's own name.
            with h5py.File(path + "#/in#name.h5", "w", driver="mmzip") as f:
                f["v"] = values
            with h5py.File(path, "a", driver="mmzip", member="kw é.h5") as f:
                f["w"] = values * 2
            assert_only_added(before, tree(d), [], "h5py writing into %s" % path)
            check_equal(members(path), sorted(["README.txt", "table.csv", "in#name.h5", "kw é.h5"]),
                        "members of %s" % path)
            with h5py.File(path, "r", driver="mmzip", member="in#name.h5") as f:
                np.testing.assert_array_equal(f["v"][...], values)
            with h5py.File(path + "#/kw é.h5", "r", driver="mmzip") as f:
                np.testing.assert_array_equal(f["w"][...], values * 2)
            np.testing.assert_array_equal(
                h5dump_values(path + "#/in#name.h5", "v", "<i4", under_mmzip_run=True, workdir=scratch), values)
            assert_only_added(before, tree(d), [], "reading %s back" % path)
        # "n#/new.zip#/m.h5" with a directory "n#": a new archive there, never one called "n".
        os.mkdir("n#")
        before = tree(d)
        with h5py.File("n#/new.zip#/m.h5", "w", driver="mmzip") as f:
            f["v"] = np.array([2.5, 3.5])
        assert_only_added(before, tree(d), ["n#/new.zip"], "creating n#/new.zip#/m.h5")
        check_equal(members("n#/new.zip"), ["m.h5"], "members of n#/new.zip")
        with h5py.File("n#/new.zip#/m.h5", "r", driver="mmzip") as f:
            np.testing.assert_array_equal(f["v"][...], [2.5, 3.5])


def test_ambiguous_names_fail():
    with TempDir() as d:
        os.chdir(d)
        make_archive("amb.zip")
        with h5py.File("amb.zip#/g.h5", "w", driver="mmzip") as f:
            f["v"] = np.arange(3)
        os.mkdir("amb.zip#")
        with h5py.File("amb.zip#/g.h5", "w") as f:  # a plain HDF5 file of that name
            f["v"] = np.arange(4)
        before = tree(d)
        for name, mode in (("amb.zip#/g.h5", "r"), ("amb.zip#/g.h5", "r+"), ("amb.zip#/g.h5", "a"),
                           ("amb.zip#/new.h5", "w")):
            try:
                h5py.File(name, mode, driver="mmzip").close()
            except OSError as e:
                assert_names_both(str(e), name, "amb.zip", name.split("#/")[1], "h5py %s %s" % (mode, name))
            else:
                raise AssertionError("h5py opened the ambiguous %s in mode %s" % (name, mode))
        p = mmzip_run("h5dump", "-d", "v", "amb.zip#/g.h5", check=False)
        assert p.returncode != 0, "h5dump of an ambiguous name succeeded:\n" + p.stdout
        assert_names_both(p.stderr, "amb.zip#/g.h5", "amb.zip", "g.h5", "h5dump")
        check_equal(p.stderr.count("is ambiguous"), 1, "the reason printed once")
        assert_unchanged(before, tree(d), "ambiguous names through h5py and h5dump")
        # Both are intact: the plain file (HDF5's own driver) and the member (named apart from the path).
        with h5py.File("amb.zip#/g.h5", "r") as f:
            np.testing.assert_array_equal(f["v"][...], np.arange(4))
        with h5py.File("amb.zip", "r", driver="mmzip", member="g.h5") as f:
            np.testing.assert_array_equal(f["v"][...], np.arange(3))


if __name__ == "__main__":
    main([test_h5py_and_h5dump_at_each_place, test_ambiguous_names_fail])
