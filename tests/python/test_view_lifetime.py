"""Views outlive what made them, and metadata reads like zarr's own stores'.

- ``mmzip.Archive(p)[key]`` on a temporary archive (``bytes(mmzip.Archive(p)["k"])``) used to hand out a view
  into a mapping the archive's garbage collection had just unmapped: the interpreter died of SIGSEGV. A view
  now keeps the mapping until it is dropped, also past ``close()``; a writer closed with views alive is
  committed at once and warns that its lock is held until they go; ``discard()`` with views alive refuses.
  Each case runs in a child process, so that a crash is a failed test, not a dead test runner.
- ``ZarrStore`` gives metadata entries (.zarray, .zattrs, .zgroup, .zmetadata, zarr.json) as bytes, as zarr's
  stores do: xarray 2023.01 passes them to json.loads, which took no memoryview (TypeError on a group written
  by plain zarr). Chunks stay zero-copy memoryviews."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import subprocess  # noqa: E402
import zipfile  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
import zarr  # noqa: E402

import mmzip  # noqa: E402
from mmzip_testlib import MMZIP, PYTHON, TempDir, check_equal, main, run  # noqa: E402


def in_child(code, *args):
    """Runs code in a fresh interpreter; returns its stdout. A signal (SIGSEGV) or an exception fails."""
    env = dict(os.environ)
    if env.get("MMZIP_ASAN_RUNTIME"):
        env["LD_PRELOAD"] = env["MMZIP_ASAN_RUNTIME"]
    p = subprocess.run([PYTHON, "-c", code] + list(args), capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, "child exited with %d:\n%s%s" % (p.returncode, p.stdout, p.stderr)
    return p.stdout


def make(path, entries):
    with mmzip.Archive(path, "w") as a:
        for k, v in entries.items():
            a[k] = v


def test_view_of_a_temporary_archive():
    with TempDir() as d:
        p = os.path.join(d, "t.zip")
        blob = bytes(range(256)) * 4096  # 1 MiB: more pages than a stray read would happen to find mapped
        make(p, {"k": blob, "small": b"hello"})
        out = in_child("""
import gc, hashlib, sys, mmzip
p = sys.argv[1]
x = bytes(mmzip.Archive(p)["small"])                  # the archive is garbage before bytes() reads
v = mmzip.Archive(p)["k"]                             # a view kept past its archive
gc.collect()
junk = [bytearray(1 << 20) for _ in range(64)]        # reuse of freed memory would show in the view
print(x.decode(), hashlib.sha256(v).hexdigest(), len(v))
""", p)
        import hashlib
        check_equal(out.split(), ["hello", hashlib.sha256(blob).hexdigest(), str(len(blob))],
                    "bytes through views of temporary archives")


def test_view_past_close():
    with TempDir() as d:
        p = os.path.join(d, "c.zip")
        make(p, {"k": b"kept bytes"})
        out = in_child("""
import sys, mmzip
a = mmzip.Archive(sys.argv[1])
v = a["k"]
a.close()
a.close()                                             # again: nothing
print(bytes(v).decode())
""", p)
        check_equal(out.strip(), "kept bytes", "a view read after close()")


def test_writer_closed_with_views():
    with TempDir() as d:
        p = os.path.join(d, "w.zip")
        make(p, {"old": b"old"})
        out = in_child("""
import sys, warnings, zipfile, mmzip
p = sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with mmzip.Archive(p, "r+") as w:
        w["new"] = b"new bytes"
        v = w["new"]
print([str(c.message) for c in caught if c.category is ResourceWarning])
print(sorted(zipfile.ZipFile(p).namelist()))          # committed at close, views or not
try:
    mmzip.Archive(p, "r+")
    print("second writer admitted")
except mmzip.MmzipError as e:
    print("busy", e.errno)
print(bytes(v).decode())
del v                                                 # the last view: the handle closes, the lock goes
with mmzip.Archive(p, "r+") as w:
    w["after"] = b"x"
print(sorted(zipfile.ZipFile(p).namelist()))
a = mmzip.Archive(p, "r+")
keep = a["old"]
try:
    a.discard()
    print("discarded")
except mmzip.MmzipError as e:
    print("refused:", "drop them first" in str(e))
del keep
a.discard()
print(sorted(zipfile.ZipFile(p).namelist()))
""", p).splitlines()
        assert out[0].startswith("['mmzip.Archive: %s is committed, but 1 view(s)" % p), out[0]
        check_equal(out[1], "['new', 'old']", "entries after a writer closed with a view alive")
        check_equal(out[2], "busy 16", "a second writer while the first one's view lives")
        check_equal(out[3], "new bytes", "the writer's view after close")
        check_equal(out[4], "['after', 'new', 'old']", "a writer once the last view is gone")
        check_equal(out[5], "refused: True", "discard with a view alive")
        check_equal(out[6], "['after', 'new', 'old']", "entries after the discard")


def test_metadata_as_bytes():
    with TempDir() as d:
        src, arc = os.path.join(d, "plain.zarr"), os.path.join(d, "plain.zip")
        g = zarr.open_group(src, mode="w")
        g.create_dataset("a", data=np.arange(10), chunks=(5,))
        g.attrs["title"] = "plain zarr"
        run([MMZIP, "put", arc, "--dir", src])
        with mmzip.ZarrStore(arc, mode="r") as s:
            for key in (".zgroup", ".zattrs", "a/.zarray"):
                check_equal(type(s[key]), bytes, "type of %s" % key)
                check_equal(s[key], zipfile.ZipFile(arc).read(key), "bytes of %s" % key)
            check_equal(type(s["a/0"]), memoryview, "type of a chunk (zero-copy)")
            np.testing.assert_array_equal(zarr.open_group(s, mode="r")["a"][:], np.arange(10))

            # xarray on a group without dimension names fails as it does on zarr's own store, not earlier.
            def failure(store):
                try:
                    xr.open_zarr(store, consolidated=False)
                except Exception as e:  # noqa: BLE001 - the type is what is compared
                    return type(e).__name__
                return "opened"
            check_equal(failure(s), failure(zarr.DirectoryStore(src)), "xarray on plain zarr: mmzip vs directory")
        # With dimension names (as xarray writes them), it opens and shows what xarray shows of the source
        # directory (zarr's default fill_value 0 is masked by xarray alike: the first value is NaN in both).
        zarr.open_group(src, mode="a")["a"].attrs["_ARRAY_DIMENSIONS"] = ["x"]
        os.unlink(arc)
        run([MMZIP, "put", arc, "--dir", src])
        with mmzip.ZarrStore(arc, mode="r") as s:
            ds = xr.open_zarr(s, consolidated=False)
            want = xr.open_zarr(zarr.DirectoryStore(src), consolidated=False)["a"].values
            np.testing.assert_array_equal(ds["a"].values, want)
            np.testing.assert_array_equal(ds["a"].values[1:], np.arange(1, 10))
            check_equal(ds.attrs["title"], "plain zarr", "group attribute through xarray")


def test_archive_mapping_edges():
    """Found by an outside review of mmzip.Archive, each a wrong value or lost data without an error: x put,
    x removed, y put (the same length), x put again, in one session, overwrote y (the core); a view of an
    entry not yet committed changed its bytes after a rollback or a removal and the next put; a "w" that
    raised inside its block with a view alive replaced the old archive later (and the caller saw another
    exception); ``a["n"] = 3`` stored three zero bytes; ``k in a`` on a closed archive said False."""
    with TempDir() as d:
        p = os.path.join(d, "edges.zip")
        with mmzip.Archive(p, "w") as a:
            a["x"] = b"X" * 100
            del a["x"]
            a["y"] = b"Y" * 100
            a["x"] = b"Z" * 100
        with zipfile.ZipFile(p) as z:
            check_equal(z.testzip(), None, "zipfile.testzip() after x, del x, y, x")
            check_equal((z.read("y"), z.read("x")), (b"Y" * 100, b"Z" * 100), "y and x")
        with mmzip.Archive(p, "w+") as a:
            try:
                with a.batch():
                    a["q"] = b"Q" * 8
                    w = a["q"]
                    raise RuntimeError("roll back")
            except RuntimeError:
                pass
            a["r"] = b"R" * 8  # takes the rolled-back q's bytes
            check_equal(bytes(w), b"Q" * 8, "a view of the rolled-back q")
            for bad in (3, [65, 66], "text"):
                try:
                    a["bad"] = bad
                    raise AssertionError("stored %r" % (bad,))
                except TypeError:
                    pass
        before = open(p, "rb").read()
        try:
            with mmzip.Archive(p, "w") as a:
                a["new"] = b"new"
                kept = a["new"]
                raise LookupError("the caller's error")
        except LookupError as e:
            check_equal(str(e), "the caller's error", "the exception the block raised")
        del kept
        import gc
        gc.collect()
        check_equal(open(p, "rb").read(), before, "the archive a failed 'w' with a live view was to replace")
        a = mmzip.Archive(p)
        a.close()
        try:
            "x" in a  # noqa: B015
            raise AssertionError("'in' on a closed archive answered")
        except mmzip.MmzipError:
            pass


if __name__ == "__main__":
    main([test_view_of_a_temporary_archive, test_view_past_close, test_writer_closed_with_views,
          test_archive_mapping_edges,
          test_metadata_as_bytes])
