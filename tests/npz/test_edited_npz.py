import os, sys  # noqa: E401
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401
"""An edited .npz stays an .npz. After replacing or deleting any array - the first, a middle one, the last -
through mmzip.open(p, "a"), in archives written by numpy.savez and by mmzip.savez: numpy.load opens it and
gives every array with its values, zipfile and `unzip -t` and `7z t` pass, libmagic's `file` calls it a Zip
archive, and nothing of mmzip's own (".mmzip/...") is listed. The same holds while an array is being modified
in place by another process, and after that process is killed in the middle of its edit."""
import signal
import subprocess
import tempfile
import zipfile

import numpy as np

import mmzip

PY = "/usr/bin/python3"
ENV = asan_preload.child_env()


def arrays():
    return {"a": np.arange(1000, dtype="<f8"), "b": np.arange(12, dtype="<i4").reshape(3, 4),
            "c": np.linspace(-1, 1, 77), "d": np.array([1, 2, 3], dtype="u1")}


def check_npz(p, want):
    """Every reader agrees that p is a ZIP holding exactly the arrays `want` (name -> array)."""
    with open(p, "rb") as f:
        head = f.read(4)
    assert head in (b"PK\x03\x04", b"PK\x05\x06"), "numpy.load would not take %s for a ZIP: %r" % (p, head)
    with np.load(p) as z:
        assert z.files == list(want), (z.files, list(want))
        for k, v in want.items():
            got = z[k]
            assert got.dtype == v.dtype and got.shape == v.shape and np.array_equal(got, v), k
    with zipfile.ZipFile(p) as z:
        assert z.testzip() is None
        assert z.namelist() == [k + ".npy" for k in want], z.namelist()
    r = subprocess.run(["unzip", "-t", p], capture_output=True, text=True)
    assert r.returncode == 0 and "No errors detected" in r.stdout, r.stdout + r.stderr
    for k in want:
        assert "testing: %s.npy" % k in r.stdout, r.stdout
    assert ".mmzip" not in r.stdout
    r = subprocess.run(["7z", "t", p], capture_output=True, text=True)
    assert r.returncode == 0 and "Everything is Ok" in r.stdout, r.stdout + r.stderr
    assert "Error" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert "Files: %d" % len(want) in r.stdout or (len(want) == 1 and "Size:" in r.stdout), r.stdout
    r = subprocess.run(["7z", "l", "-slt", p], capture_output=True, text=True)
    listed = [ln[len("Path = "):] for ln in r.stdout.splitlines() if ln.startswith("Path = ")][1:]
    assert listed == [k + ".npy" for k in want], "7z lists %s" % listed
    r = subprocess.run(["file", "-b", p], capture_output=True, text=True)
    assert r.returncode == 0 and "Zip archive data" in r.stdout, r.stdout


def make(d, name, writer):
    p = os.path.join(d, name)
    if writer == "numpy":
        np.savez(p, **arrays())
    else:
        mmzip.savez(p, **arrays())
    check_npz(p, arrays())
    return p


def test_replace_and_delete_each_position():
    with tempfile.TemporaryDirectory() as d:
        for writer in ("numpy", "mmzip"):
            for pos, key in (("first", "a"), ("middle", "b"), ("last", "d")):
                # Replace, with an array of another size (it cannot go where the old one was).
                p = make(d, "%s_replace_%s.npz" % (writer, pos), writer)
                new = np.arange(5000, dtype="<i8") * 3
                with mmzip.open(p, "a") as z:
                    z[key] = new
                want = arrays()
                want[key] = new
                want = {k: want[k] for k in want if k != key}
                want[key] = new  # a new version is listed last, like zipfile's append
                check_npz(p, want)
                # Delete.
                p = make(d, "%s_delete_%s.npz" % (writer, pos), writer)
                with mmzip.open(p, "a") as z:
                    del z[key]
                want = {k: v for k, v in arrays().items() if k != key}
                check_npz(p, want)
            # Several commits: the first array replaced, then the new first one deleted, and so on, until one
            # array is left.
            p = make(d, "%s_sequence.npz" % writer, writer)
            want = arrays()
            for step in range(3):
                first = next(iter(want))
                with mmzip.open(p, "a") as z:
                    if step % 2 == 0:
                        z[first] = want[first] + 1
                        want[first] = want.pop(first) + 1
                    else:
                        del z[first]
                        del want[first]
                check_npz(p, want)
            # A writable open later (which recovers and commits nothing) keeps it so.
            with mmzip.open(p, "r+") as z:
                assert z.files == list(want)
            check_npz(p, want)


# A child that modifies array "a" (the first) in place, says so, and waits: killed there, mid-edit.
CHILD_EDIT = r"""
import sys, mmzip
z = mmzip.open(sys.argv[1], "r+")
a = z["a"]
a[:500] = 7.0
print("edited", flush=True)
sys.stdin.readline()
z.close()
print("closed", flush=True)
"""


def test_interrupted_edit():
    with tempfile.TemporaryDirectory() as d:
        for writer in ("numpy", "mmzip"):
            p = make(d, "%s_edit.npz" % writer, writer)
            c = subprocess.Popen([PY, "-c", CHILD_EDIT, p], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, env=ENV)
            assert c.stdout.readline().strip() == "edited"
            edited = arrays()
            edited["a"][:500] = 7.0
            # During the edit: the archive lists its arrays only; the edited one's CRC is stale, and numpy
            # (through zipfile) says so instead of handing out the bytes unchecked; the others read fine.
            def during():
                with np.load(p) as z:
                    assert z.files == ["a", "b", "c", "d"], z.files
                    for k in "bcd":
                        assert np.array_equal(z[k], arrays()[k])
                    try:
                        z["a"]
                        raise AssertionError("numpy.load read an array whose CRC is stale without complaint")
                    except zipfile.BadZipFile as e:
                        assert "CRC" in str(e), e
                with zipfile.ZipFile(p) as z:
                    assert z.namelist() == ["a.npy", "b.npy", "c.npy", "d.npy"], z.namelist()
                    assert z.testzip() == "a.npy"
                r = subprocess.run(["unzip", "-t", p], capture_output=True, text=True)
                assert r.returncode != 0 and "a.npy" in r.stdout and ".mmzip" not in r.stdout, r.stdout
                r = subprocess.run(["7z", "l", "-slt", p], capture_output=True, text=True)
                listed = [ln[len("Path = "):] for ln in r.stdout.splitlines() if ln.startswith("Path = ")][1:]
                assert listed == ["a.npy", "b.npy", "c.npy", "d.npy"], listed
                assert "Zip archive data" in subprocess.run(["file", "-b", p], capture_output=True, text=True).stdout
            during()
            c.kill()
            assert c.wait(timeout=120) == -signal.SIGKILL
            during()  # after the kill, until a writer recovers it: the same
            # Recovery (any writable open) refreshes the CRC over the bytes as left: numpy reads the edit.
            with mmzip.open(p, "a") as z:
                assert z.recovered_edits == 1
            check_npz(p, edited)
            assert not os.path.exists(p + ".mmzip-inplace")
            # An edit that ends normally leaves a clean .npz too.
            c = subprocess.run([PY, "-c", CHILD_EDIT, p], input="\n", capture_output=True, text=True, env=ENV,
                               timeout=300)
            assert c.returncode == 0 and c.stdout.split() == ["edited", "closed"], c.stdout + c.stderr
            check_npz(p, edited)


# A child that replaces the first array (pending, appended but not committed), says so, and is killed.
CHILD_REPLACE = r"""
import sys, numpy as np, mmzip
z = mmzip.open(sys.argv[1], "a")
z["a"] = np.zeros(20000)
del z["b"]
print("replaced", flush=True)
sys.stdin.readline()
"""


def test_interrupted_replace():
    with tempfile.TemporaryDirectory() as d:
        for writer in ("numpy", "mmzip"):
            p = make(d, "%s_killed_replace.npz" % writer, writer)
            c = subprocess.Popen([PY, "-c", CHILD_REPLACE, p], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, env=ENV)
            assert c.stdout.readline().strip() == "replaced"
            check_npz(p, arrays())  # nothing committed: the archive as it was
            c.kill()
            assert c.wait(timeout=120) == -signal.SIGKILL
            check_npz(p, arrays())
            with mmzip.open(p, "a") as z:
                assert z.files == ["a", "b", "c", "d"]
            check_npz(p, arrays())


for t in (test_replace_and_delete_each_position, test_interrupted_edit, test_interrupted_replace):
    print("--", t.__name__)
    t()
print("all checks passed")
