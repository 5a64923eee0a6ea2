"""Names holding '#', "#/", spaces and non-ASCII on the Python routes (mmzip.ZarrStore, mmzip.Archive,
mmzip.open) and the rule they share with every other route, mmzip_split_name (mmzip.h), called through the
package's binding: a name that exists as written is that file; "a.zip#/g" is a group or member only when
a.zip is the archive; an ambiguous name is refused naming both readings; nothing is ever created at the
other reading (each test lists the directory before and after)."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import zipfile  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

import mmzip  # noqa: E402
from mmzip import _core  # noqa: E402
from hash_names import (PLACES, assert_names_both, assert_only_added, assert_unchanged,  # noqa: E402
                        tree)
from mmzip_testlib import TempDir, check_equal, main  # noqa: E402


def make_zip(path, entries=None, prefix=b""):
    with zipfile.ZipFile(path, "w") as z:
        for k, v in (entries or {"m.txt": b"member\n"}).items():
            z.writestr(k, v)
    if prefix:
        with open(path, "rb") as f:
            data = f.read()
        with open(path, "wb") as f:
            f.write(prefix + data)


def raises(fn, code, what):
    try:
        fn()
    except mmzip.MmzipError as e:
        check_equal(e.code, code, what + ": status")
        return str(e)
    raise AssertionError("%s: no error" % what)


def test_split_name_rule():
    with TempDir() as d:
        os.chdir(d)
        split = _core.split_name
        # No "#/": the name itself, whether or not it exists.
        check_equal(split("we#ird.zip"), ("we#ird.zip", None), "no '#/', missing")
        # Exists as written: that file, even though "d" is an archive too... only if d is not one.
        os.mkdir("d#")
        make_zip("d#/x.zip")
        for flags in ((False, False), (True, False), (True, True)):
            check_equal(split("d#/x.zip", *flags), ("d#/x.zip", None), "existing d#/x.zip %r" % (flags,))
        check_equal(os.path.exists("d"), False, "d created")
        # "a.zip#/g": a member only of an existing ZIP.
        make_zip("a.zip")
        check_equal(split("a.zip#/g/sub"), ("a.zip", "g/sub"), "member of a.zip")
        check_equal(split("a.zip#/"), ("a.zip", ""), "the archive itself")
        check_equal(split("a.zip#/g#/h"), ("a.zip", "g#/h"), "'#/' inside the member")
        # Both readings exist: refused, naming both.
        os.mkdir("a.zip#")
        with open("a.zip#/g", "w") as f:
            f.write("a file\n")
        msg = raises(lambda: split("a.zip#/g"), _core.EINVAL, "ambiguous a.zip#/g")
        assert_names_both(msg, "a.zip#/g", "a.zip", "g", "ambiguous a.zip#/g")
        # A name to be created in a directory "a.zip#" beside the archive "a.zip": ambiguous for creation.
        msg = raises(lambda: split("a.zip#/new", True, True), _core.EINVAL, "ambiguous a.zip#/new")
        assert_names_both(msg, "a.zip#/new", "a.zip", "new", "ambiguous a.zip#/new")
        check_equal(split("a.zip#/new"), ("a.zip", "new"), "a.zip#/new opened")
        # Nothing there: ENOENT naming the archive looked for; a file that is not a ZIP is no archive.
        msg = raises(lambda: split("nope.zip#/g"), _core.ENOENT, "nope.zip#/g")
        assert "'nope.zip' is not a ZIP archive" in msg, msg
        with open("text.zip", "w") as f:
            f.write("not a zip, but long enough to be read as one\n")
        raises(lambda: split("text.zip#/g"), _core.ENOENT, "text.zip#/g")
        # Creation: a new archive for the member (create_archive), or only the file as written (create).
        check_equal(split("new.zip#/g", True, True), ("new.zip", "g"), "new archive for a member")
        raises(lambda: split("new.zip#/g", True, False), _core.ENOENT, "whole-only creation of new.zip#/g")
        # A new name that walks into an existing directory "n#" is a file there, never a new archive "n".
        os.mkdir("n#")
        check_equal(split("n#/x.zip", True, False), ("n#/x.zip", None), "whole-only creation in n#")
        check_equal(split("n#/x.zip", True, True), ("n#/x.zip", None), "creation in n#")
        # ... and the member of an existing archive in it is that archive's, not a new archive "n"'s.
        make_zip("n#/x.zip")
        check_equal(split("n#/x.zip#/g", True, True), ("n#/x.zip", "g"), "member of n#/x.zip")
        # An archive "n#/x.zip" and a directory "n#/x.zip#" holding a new name "g": ambiguous.
        os.mkdir("n#/x.zip#")
        msg = raises(lambda: split("n#/x.zip#/g", True, True), _core.EINVAL, "n#/x.zip#/g, both")
        assert_names_both(msg, "n#/x.zip#/g", "n#/x.zip", "g", "n#/x.zip#/g, both")
        # An archive with bytes before it (as a self-extractor has) is a ZIP by its end record.
        make_zip("sfx.zip", prefix=b"#!/bin/sh\n" + b"x" * 5000)
        check_equal(split("sfx.zip#/m.txt"), ("sfx.zip", "m.txt"), "prefixed archive")
        # Several "#/": the one whose left side is the archive.
        os.mkdir("p#")
        make_zip("p#/q.zip")
        check_equal(split("p#/q.zip#/g"), ("p#/q.zip", "g"), "archive inside a directory 'p#'")
        # Bytes names and non-ASCII.
        os.mkdir("a b#c")
        make_zip("a b#c/é.zip")
        check_equal(split("a b#c/é.zip#/grü"), ("a b#c/é.zip", "grü"), "non-ASCII")
        check_equal(split(os.fsencode("a b#c/é.zip#/grü")), ("a b#c/é.zip", "grü"), "bytes name")


def write_and_read_store(path, values, what):
    s = mmzip.ZarrStore(path, "a")
    g = zarr.open_group(s, mode="a")
    g["v"] = values
    s.close()
    s = mmzip.ZarrStore(path, "r")
    got = zarr.open_group(s, mode="r")["v"][:]
    s.close()
    np.testing.assert_array_equal(got, values, err_msg=what)


def test_zarr_store_at_each_place():
    with TempDir() as d:
        os.chdir(d)
        for i, (folder, name) in enumerate(PLACES):
            if folder:
                os.mkdir(folder)
            path = os.path.join(folder, name)
            # Created as a whole archive.
            before = tree(d)
            s = mmzip.ZarrStore(path, "w-")
            zarr.open_group(s, mode="a")["base"] = np.arange(6) + i
            s.close()
            assert_only_added(before, tree(d), [path], "w- %s" % path)
            # The brief's case: the existing file, in mode "a", is that file ("d" is never made).
            before = tree(d)
            write_and_read_store(path, np.arange(10, dtype="<i4") * (i + 1), "a %s" % path)
            assert_only_added(before, tree(d), [], "a %s" % path)
            # A sub-dataset of it, written and read back through "archive#/g1".
            before = tree(d)
            write_and_read_store(path + "#/g1", np.linspace(0, 1, 7) + i, "a %s#/g1" % path)
            assert_only_added(before, tree(d), [], "a %s#/g1" % path)
            with zipfile.ZipFile(path) as z:
                names = set(z.namelist())
                assert {"base/.zarray", "v/.zarray", "g1/.zgroup", "g1/v/.zarray", "g1/v/0"} <= names, names
            g = zarr.open_group(mmzip.ZarrStore(path, "r"), mode="r")
            np.testing.assert_array_equal(g["g1/v"][:], np.linspace(0, 1, 7) + i)
            np.testing.assert_array_equal(g["base"][:], np.arange(6) + i)
        # A new archive with a sub-dataset: "new#.zip#/g" creates "new#.zip", and nothing else.
        before = tree(d)
        write_and_read_store("new#.zip#/g", np.array([3, 1, 4]), "new archive for a sub-dataset")
        assert_only_added(before, tree(d), ["new#.zip"], "new#.zip#/g")
        with zipfile.ZipFile("new#.zip") as z:
            assert "g/v/.zarray" in z.namelist(), z.namelist()


def test_zarr_store_refusals():
    with TempDir() as d:
        os.chdir(d)
        s = mmzip.ZarrStore("amb.zip", "w-")
        zarr.open_group(s, mode="a")["v"] = np.arange(3)
        s.close()
        os.mkdir("amb.zip#")
        with open("amb.zip#/g", "wb") as f:
            f.write(b"a file called amb.zip#/g\n")
        before = tree(d)
        for mode in ("r", "r+", "a", "w", "w-"):
            msg = raises(lambda: mmzip.ZarrStore("amb.zip#/g", mode), _core.EINVAL, "ambiguous, mode " + mode)
            assert_names_both(msg, "amb.zip#/g", "amb.zip", "g", "mode " + mode)
        assert_unchanged(before, tree(d), "ambiguous ZarrStore opens")
        # Mode "a" on a new name in the directory "amb.zip#" beside the archive: a new file there, or a new
        # group of amb.zip.
        msg = raises(lambda: mmzip.ZarrStore("amb.zip#/new", "a"), _core.EINVAL, "a on amb.zip#/new")
        assert_names_both(msg, "amb.zip#/new", "amb.zip", "new", "a on amb.zip#/new")
        assert_unchanged(before, tree(d), "ambiguous ZarrStore opens")
        # Mode "a" on a new "n#/x.zip" in a directory "n#": that file, never a new archive "n".
        os.mkdir("n#")
        before = tree(d)
        write_and_read_store("n#/x.zip", np.arange(4), "a on new n#/x.zip")
        assert_only_added(before, tree(d), ["n#/x.zip"], "a on new n#/x.zip")
        # "r" of a member of nothing: refused, nothing created.
        before = tree(d)
        raises(lambda: mmzip.ZarrStore("none.zip#/g", "r"), _core.ENOENT, "none.zip#/g")
        assert_unchanged(before, tree(d), "r of none.zip#/g")


def test_archive_and_npz_routes():
    with TempDir() as d:
        os.chdir(d)
        for i, (folder, name) in enumerate(PLACES):
            if folder:
                os.mkdir(folder)
            path = os.path.join(folder, name)
            payload = ("entry %d of %s\n" % (i, path)).encode()
            before = tree(d)
            with mmzip.Archive(path, "w+") as a:
                a["k.bin"] = payload
            assert_only_added(before, tree(d), [path], "Archive w+ %s" % path)
            with mmzip.Archive(path) as a:
                check_equal(bytes(a["k.bin"]), payload, "Archive read %s" % path)
            with zipfile.ZipFile(path) as z:
                check_equal(z.read("k.bin"), payload, "zipfile read %s" % path)
            # A member's name is not an archive: refused, and nothing appears at "path#".
            before = tree(d)
            msg = raises(lambda: mmzip.Archive(path + "#/k.bin", "w+"), _core.EINVAL, "Archive of a member")
            assert "names the member 'k.bin' of the archive '%s'" % path in msg, msg
            assert_unchanged(before, tree(d), "Archive of %s#/k.bin" % path)
            # mmzip.open (arrays) at the same kind of name.
            npz = os.path.join(folder, "arr#%d.npz" % i)
            arr = np.arange(12, dtype="<f8").reshape(3, 4) * (i + 1)
            before = tree(d)
            with mmzip.open(npz, "w") as a:
                a["x"] = arr
            assert_only_added(before, tree(d), [npz], "mmzip.open w %s" % npz)
            with np.load(npz) as z:
                np.testing.assert_array_equal(z["x"], arr)
            with mmzip.open(npz) as a:
                np.testing.assert_array_equal(a["x"], arr)
        # Ambiguous names: Archive and mmzip.open refuse them, naming both readings.
        make_zip("amb.zip")
        os.mkdir("amb.zip#")
        make_zip("amb.zip#/x.npz")
        before = tree(d)
        for fn, what in ((lambda: mmzip.Archive("amb.zip#/x.npz"), "Archive r"),
                         (lambda: mmzip.Archive("amb.zip#/x.npz", "r+"), "Archive r+"),
                         (lambda: mmzip.open("amb.zip#/x.npz"), "mmzip.open r"),
                         (lambda: mmzip.open("amb.zip#/x.npz", "a"), "mmzip.open a")):
            msg = raises(fn, _core.EINVAL, what)
            assert_names_both(msg, "amb.zip#/x.npz", "amb.zip", "x.npz", what)
        assert_unchanged(before, tree(d), "ambiguous Archive/mmzip.open")


if __name__ == "__main__":
    main([test_split_name_rule, test_zarr_store_at_each_place, test_zarr_store_refusals,
          test_archive_and_npz_routes])
