"""Archives from other writers that hold one name more than once: zarr's ZipStore appends a second record
when a chunk is rewritten, Python's zipfile when a name is written twice. Every reader takes the last record
(zipfile, zarr, mmzip). Replacing or removing such a name through mmzip must drop every record of it:
before, only the last went, and the next directory made the one before it the last, so an old value came back
to every reader after the commit, with no error (a chunk deleted by zarr read back as its older version).

Each case writes the archive with the other writer, changes it through one route of mmzip (Archive, ZarrStore
under zarr, the CLI), then reads it back with zipfile, zarr's own ZipStore and mmzip, and requires the
directory to hold each name once.

Names that are other spellings of one file ('a//b', './a', 'a/./b' for 'a/b' and 'a'): unzip and zipfile's
extractall write them to one file, one over the other, so mmzip writes none anew; those another writer left
are read, replaced and removed as they are."""
import os
import sys
import warnings
import zipfile

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)

import numpy as np  # noqa: E402
import zarr  # noqa: E402

import mmzip  # noqa: E402
from mmzip_testlib import TempDir, check_equal, main, mmzip as mmzip_cli, zip_tools_ok  # noqa: E402

warnings.filterwarnings("ignore", "Duplicate name", UserWarning)  # zipfile's, for the archives made here


def names_of(path):
    with zipfile.ZipFile(path) as z:
        return z.namelist()


def zipfile_dups(path, versions):
    """`k` written len(versions) times, then `other`."""
    with zipfile.ZipFile(path, "w") as z:
        for v in versions:
            z.writestr("k", v)
        z.writestr("other", b"kept")
    check_equal(names_of(path).count("k"), len(versions), "records of k the archive starts with")


def test_archive_remove_and_replace():
    with TempDir() as d:
        for n in (2, 3):
            p = os.path.join(d, "remove%d.zip" % n)
            zipfile_dups(p, [b"version %d" % i for i in range(n)])
            with mmzip.Archive(p, "r+") as a:
                check_equal(bytes(a["k"]), b"version %d" % (n - 1), "k before (the last record wins)")
                del a["k"]
                check_equal("k" in a, False, "k in the writer after del")
            check_equal(sorted(names_of(p)), ["other"], "names after removing k (%d records)" % n)
            with mmzip.Archive(p, "r") as a:
                check_equal("k" in a, False, "k through mmzip after the commit")
                check_equal(bytes(a["other"]), b"kept", "other")
            zip_tools_ok(p)

            p = os.path.join(d, "replace%d.zip" % n)
            zipfile_dups(p, [b"version %d" % i for i in range(n)])
            with mmzip.Archive(p, "r+") as a:
                a["k"] = b"new"
            check_equal(names_of(p).count("k"), 1, "records of k after replacing it (%d before)" % n)
            with zipfile.ZipFile(p) as z:
                check_equal(z.read("k"), b"new", "k through zipfile after replacing it")
            with mmzip.Archive(p, "r") as a:
                check_equal(bytes(a["k"]), b"new", "k through mmzip after replacing it")
            zip_tools_ok(p)


def test_archive_batch_then_rollback_keeps_every_record():
    """A removal given up is no change: every record stays, the last one still wins."""
    with TempDir() as d:
        p = os.path.join(d, "a.zip")
        zipfile_dups(p, [b"old", b"newer"])
        before = open(p, "rb").read()
        with mmzip.Archive(p, "r+") as a:
            try:
                with a.batch():
                    del a["k"]
                    check_equal("k" in a, False, "k in the writer after del")
                    raise KeyboardInterrupt  # given up: the batch rolls back
            except KeyboardInterrupt:
                pass
            check_equal(bytes(a["k"]), b"newer", "k after the rollback")
        check_equal(open(p, "rb").read(), before, "the archive's bytes after a rolled-back removal")


def zipstore_rewritten(path):
    """A group with array v (10 int32 in two chunks), written twice through ZipStore: chunks v/0 and v/1 each
    have two records, the ones of the second write (2) last."""
    s = zarr.ZipStore(path, mode="w")
    g = zarr.group(store=s)
    v = g.create_dataset("v", shape=(10,), chunks=(5,), dtype="i4", fill_value=0, compressor=None)
    v[:] = 1
    v[:] = 2
    s.close()
    check_equal(names_of(path).count("v/1"), 2, "records of chunk v/1 that ZipStore left")


def read_both(path):
    with mmzip.ZarrStore(path, "r") as st:
        mine = zarr.open_group(st, "r")["v"][:]
    theirs = zarr.open_group(zarr.ZipStore(path, mode="r"), "r")["v"][:]
    return mine.tolist(), theirs.tolist()


def test_zarr_overwrite_and_empty_chunks():
    with TempDir() as d:
        # overwrite=True removes every key of the old array first; only v/0 is written again.
        p = os.path.join(d, "overwrite.zarr.zip")
        zipstore_rewritten(p)
        with mmzip.ZarrStore(p, "a") as st:
            g = zarr.open_group(st, "a")
            b = g.create_dataset("v", shape=(10,), chunks=(5,), dtype="i4", fill_value=0, compressor=None,
                                 overwrite=True)
            b[:5] = 7
        want = [7] * 5 + [0] * 5
        mine, theirs = read_both(p)
        check_equal(mine, want, "v through mmzip after the array was recreated")
        check_equal(theirs, want, "v through zarr.ZipStore after the array was recreated")
        names = names_of(p)
        check_equal(len(names), len(set(names)), "every name once in %s" % names)
        check_equal("v/1" in names, False, "chunk v/1 of the old array gone")

        # A chunk set to the fill value is deleted (write_empty_chunks=False).
        p = os.path.join(d, "empty.zarr.zip")
        zipstore_rewritten(p)
        with mmzip.ZarrStore(p, "a") as st:
            v = zarr.open_array(st, path="v", mode="a", write_empty_chunks=False)
            v[5:] = 0
        want = [2] * 5 + [0] * 5
        mine, theirs = read_both(p)
        check_equal(mine, want, "v through mmzip after its second chunk was emptied")
        check_equal(theirs, want, "v through zarr.ZipStore after its second chunk was emptied")
        check_equal(names_of(p).count("v/1"), 0, "records of the deleted chunk v/1")
        check_equal(names_of(p).count("v/0"), 2, "records of v/0, which nobody changed")
        zip_tools_ok(p)


def test_cli_put_replaces_every_record():
    with TempDir() as d:
        p = os.path.join(d, "a.zip")
        zipfile_dups(p, [b"old", b"newer"])
        mmzip_cli("put", p, "k", "-", input=b"newest")
        check_equal(names_of(p).count("k"), 1, "records of k after mmzip put")
        check_equal(mmzip_cli("cat", p, "k").stdout, "newest", "mmzip cat k")
        with zipfile.ZipFile(p) as z:
            check_equal(z.read("k"), b"newest", "k through zipfile")
        zip_tools_ok(p)


def test_names_that_extract_to_one_file():
    with TempDir() as d:
        p = os.path.join(d, "a.zip")
        mmzip_cli("put", p, "a/b", "-", input=b"one")
        for name in ("a//b", "a/./b", "./a/b", ".", "a/."):
            r = mmzip_cli("put", p, name, "-", input=b"two", check=False)
            assert r.returncode == 1 and b"names the same file as the name without it" in r.stderr, (name, r.stderr)
            with mmzip.Archive(p, "r+") as a:
                try:
                    a[name] = b"two"
                    raise AssertionError("Archive wrote %r" % name)
                except mmzip.MmzipError as e:
                    assert "an empty or '.' component" in str(e), e
        check_equal(names_of(p), ["a/b"], "names after the refused puts")
        q = os.path.join(d, "theirs.zip")
        with zipfile.ZipFile(q, "w") as z:
            z.writestr("./x", b"dot")
            z.writestr("y//z", b"slashes")
        check_equal(mmzip_cli("cat", q, "./x").stdout, "dot", "./x of zipfile's archive")
        mmzip_cli("put", q, "./x", "-", input=b"replaced")
        with mmzip.Archive(q, "r+") as a:
            del a["y//z"]
        with zipfile.ZipFile(q) as z:
            check_equal(z.namelist(), ["./x"], "names after replacing ./x and removing y//z")
            check_equal(z.read("./x"), b"replaced", "./x replaced")


if __name__ == "__main__":
    main([test_archive_remove_and_replace, test_archive_batch_then_rollback_keeps_every_record,
          test_zarr_overwrite_and_empty_chunks, test_cli_put_replaces_every_record,
          test_names_that_extract_to_one_file])
