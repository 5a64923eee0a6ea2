import os, sys  # noqa: E401
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401
"""Writes that fail leave files as they were. mmzip.savez, mmzip.open(..., "w"), mmzip.Archive(..., "w") and
mmzip.ZarrStore(..., "w")
build the new archive in an unnamed file and rename it over the target only once it is complete. Whatever
makes them fail - an array refused (object dtype), a full file system (a 1 MiB tmpfs mounted here), the
writer killed with SIGKILL while provably in the middle of writing - the file that was there keeps every byte
(sha256 compared), or there is still no file, and no temporary file is left in the directory."""
import hashlib
import subprocess
import tempfile
import zipfile

import numpy as np

import mmzip

PY = "/usr/bin/python3"
ENV = asan_preload.child_env()  # children load libmmzip themselves


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def listing(d):
    return sorted(os.listdir(d))


def old_archive(d, name="exist.npz"):
    """A valid archive to be replaced, and its digest."""
    p = os.path.join(d, name)
    mmzip.savez(p, keep=np.arange(100, dtype="<i8"), other=np.linspace(0, 1, 7))
    with np.load(p) as z:
        assert z.files == ["keep", "other"] and np.array_equal(z["keep"], np.arange(100))
    return p, sha(p)


def still_old(p, digest, d, names):
    assert sha(p) == digest, "%s changed" % p
    with np.load(p) as z:  # and still the old arrays, read by numpy
        assert z.files == ["keep", "other"] and np.array_equal(z["keep"], np.arange(100))
    assert listing(d) == names, "left in the directory: %s" % listing(d)


def raises(exc, fn, *a, **k):
    try:
        fn(*a, **k)
    except exc as e:
        return e
    raise AssertionError("%s did not raise %s" % (fn, exc))


OBJ = np.array([1, "x", None], dtype=object)


def test_refused_array():
    with tempfile.TemporaryDirectory() as d:
        p, digest = old_archive(d)
        names = listing(d)
        e = raises(ValueError, mmzip.savez, p, good=np.arange(5), obj=OBJ)
        assert "obj" in str(e) and p in str(e), e
        still_old(p, digest, d, names)
        # Positional arrays too, and the refused one last or first.
        raises(ValueError, mmzip.savez, p, np.arange(3), OBJ)
        raises(ValueError, mmzip.savez, p, OBJ, np.arange(3))
        still_old(p, digest, d, names)
        # mmzip.open(..., "w"): the refused array raises out of the with block, which gives the new archive up;
        # an array read back from it before (a view of a pending member) keeps it until it goes.
        def open_w_fails(path):
            with mmzip.open(path, "w") as z:
                z["good"] = np.arange(5)
                assert int(z["good"].sum()) == 10
                z["obj"] = OBJ
        raises(ValueError, open_w_fails, p)
        still_old(p, digest, d, names)
        # A new path: no file, not even an empty archive.
        q = os.path.join(d, "new.npz")
        raises(ValueError, mmzip.savez, q, good=np.arange(5), obj=OBJ)
        assert not os.path.lexists(q)
        raises(ValueError, open_w_fails, q)
        assert not os.path.lexists(q)
        assert listing(d) == names
        # A good savez still replaces it, and a reader of the old file (another process) keeps its arrays.
        reader = subprocess.Popen([PY, "-c", READER, p], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                  env=ENV)
        assert reader.stdout.readline().strip() == "open"
        mmzip.savez(p, fresh=np.ones(4))
        with np.load(p) as z:
            assert z.files == ["fresh"] and np.array_equal(z["fresh"], np.ones(4))
        out, _ = reader.communicate("\n", timeout=120)
        assert reader.returncode == 0 and out.strip() == "4950 ['keep', 'other']", out
        assert sha(p) != digest


READER = r"""
import sys, mmzip
z = mmzip.open(sys.argv[1])
keep = z["keep"]
print("open", flush=True)
sys.stdin.readline()
print(int(keep.sum()), z.files, flush=True)
"""


def test_archive_and_zarr_failures():
    import zarr
    with tempfile.TemporaryDirectory() as d:
        p, digest = old_archive(d)
        names = listing(d)

        def archive_fails():
            with mmzip.Archive(p, "w") as a:
                a["x"] = b"new bytes"
                assert a["x"].tobytes() == b"new bytes"  # the writer sees its own pending entry
                still_old(p, digest, d, names)            # nobody else does, yet
                raise RuntimeError("the application gives up")
        raises(RuntimeError, archive_fails)
        still_old(p, digest, d, names)

        def zarr_fails():
            with mmzip.ZarrStore(p, "w") as s:
                zarr.save_array(s, np.arange(10), path="good")
                zarr.save_array(s, OBJ, path="bad")  # zarr refuses an object array without a codec
        raises(ValueError, zarr_fails)
        still_old(p, digest, d, names)

        q = os.path.join(d, "new.zip")
        raises(ValueError, _zarr_into, q)
        assert not os.path.lexists(q) and listing(d) == names

        # Success publishes, at close.
        with mmzip.Archive(p, "w") as a:
            a["x"] = b"new bytes"
        with zipfile.ZipFile(p) as z:
            assert z.namelist() == ["x"] and z.read("x") == b"new bytes"


def _zarr_into(q):
    import zarr
    with mmzip.ZarrStore(q, "w") as s:
        zarr.save_array(s, np.arange(10), path="good")
        zarr.save_array(s, OBJ, path="bad")


def test_full_file_system():
    """A 1 MiB tmpfs: the new archive cannot fit; the old one (about 2 KiB) must survive each attempt."""
    mnt = tempfile.mkdtemp(prefix="mmzip_full_")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", mnt], capture_output=True, text=True)
    assert r.returncode == 0, ("cannot mount a 1 MiB tmpfs (this test needs root and CAP_SYS_ADMIN): %s"
                               % (r.stderr.strip() or r.stdout.strip()))
    try:
        p, digest = old_archive(mnt)
        names = listing(mnt)
        big = np.arange(300000, dtype="<f8")  # 2.4 MB
        e = raises((mmzip.MmzipError, OSError), mmzip.savez, p, a=np.arange(10), big=big)
        assert "No space left" in str(e) or "ENOSPC" in str(e) or "space" in str(e), e
        still_old(p, digest, mnt, names)

        def open_w_fills():
            with mmzip.open(p, "w") as z:
                z["small"] = np.arange(10)
                z["big"] = big
        raises((mmzip.MmzipError, OSError), open_w_fills)
        still_old(p, digest, mnt, names)

        def archive_fills():
            with mmzip.Archive(p, "w") as a:
                a["small"] = b"x" * 1000
                a["big"] = big.tobytes()
        raises((mmzip.MmzipError, OSError), archive_fills)
        still_old(p, digest, mnt, names)

        def zarr_fills():
            import zarr
            with mmzip.ZarrStore(p, "w") as s:
                zarr.save_array(s, big, path="big", chunks=(300000,), compressor=None)
        raises((mmzip.MmzipError, OSError), zarr_fills)
        still_old(p, digest, mnt, names)

        q = os.path.join(mnt, "new.npz")
        raises((mmzip.MmzipError, OSError), mmzip.savez, q, big=big)
        assert not os.path.lexists(q) and listing(mnt) == names
        # The space of the failed attempts is free again: a savez that fits succeeds.
        mmzip.savez(q, small=np.arange(1000))
        with np.load(q) as z:
            assert np.array_equal(z["small"], np.arange(1000))
        still_old(p, digest, mnt, names + ["new.npz"])
    finally:
        r = subprocess.run(["umount", mnt], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        os.rmdir(mnt)


# Children that stop in the middle of writing a new archive: they say so on stdout once the first array is
# written (and the second not), then wait on stdin, where nothing ever comes: the parent kills them there.
CHILD_SAVEZ = r"""
import sys, numpy as np, mmzip, mmzip.npz as npz
real = npz._put_array
calls = []
def put(*a, **k):
    if calls:  # the second array: the first is in the new file
        print("mid-write", flush=True)
        sys.stdin.readline()
    calls.append(a[1])
    return real(*a, **k)
npz._put_array = put
mmzip.savez(sys.argv[1], first=np.arange(1000.0), second=np.ones(10))
print("finished", flush=True)
"""

CHILD_OPEN_W = r"""
import sys, numpy as np, mmzip
z = mmzip.open(sys.argv[1], "w")
z["first"] = np.arange(1000.0)
print("mid-write", flush=True)
sys.stdin.readline()
z["second"] = np.ones(10)
z.close()
"""

CHILD_ARCHIVE = r"""
import sys, mmzip
a = mmzip.Archive(sys.argv[1], "w")
a["first"] = b"1" * 100000
print("mid-write", flush=True)
sys.stdin.readline()
a["second"] = b"2"
a.close()
"""

CHILD_ZARR = r"""
import sys, numpy as np, zarr, mmzip
s = mmzip.ZarrStore(sys.argv[1], "w")
zarr.save_array(s, np.arange(1000.0), path="first")
print("mid-write", flush=True)
sys.stdin.readline()
zarr.save_array(s, np.ones(10), path="second")
s.close()
"""


def killed_mid_write(code, path):
    c = subprocess.Popen([PY, "-c", code, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        line = c.stdout.readline().strip()
        assert line == "mid-write", "the writer did not reach the middle of its write: %r" % line
    finally:
        c.kill()
        c.wait(timeout=120)
    assert c.returncode == -9, c.returncode


def test_sigkill_mid_write():
    with tempfile.TemporaryDirectory() as d:
        p, digest = old_archive(d)
        names = listing(d)
        for code in (CHILD_SAVEZ, CHILD_OPEN_W, CHILD_ARCHIVE, CHILD_ZARR):
            killed_mid_write(code, p)
            still_old(p, digest, d, names)
            q = os.path.join(d, "new.npz")
            killed_mid_write(code, q)
            assert not os.path.lexists(q) and listing(d) == names, listing(d)
        # The same children, not killed, do write the archive (the hooks do not break it).
        def finish(code):
            c = subprocess.run([PY, "-c", code, p], input="\n", capture_output=True, text=True, env=ENV, timeout=300)
            assert c.returncode == 0, c.stderr
            with zipfile.ZipFile(p) as z:
                assert z.testzip() is None
                return z.namelist()
        for code in (CHILD_SAVEZ, CHILD_OPEN_W):
            assert finish(code) == ["first.npy", "second.npy"]
            with np.load(p) as z:
                assert np.array_equal(z["first"], np.arange(1000.0)) and np.array_equal(z["second"], np.ones(10))
        assert finish(CHILD_ARCHIVE) == ["first", "second"]
        with zipfile.ZipFile(p) as z:
            assert z.read("first") == b"1" * 100000 and z.read("second") == b"2"
        names = finish(CHILD_ZARR)
        assert "first/.zarray" in names and "second/.zarray" in names, names
        import zarr
        with mmzip.ZarrStore(p, "r") as s:
            assert np.array_equal(zarr.open_array(s, mode="r", path="first")[:], np.arange(1000.0))


for t in (test_refused_array, test_archive_and_zarr_failures, test_full_file_system, test_sigkill_mid_write):
    print("--", t.__name__)
    t()
print("all checks passed")
