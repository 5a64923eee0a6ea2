import os, sys  # noqa: E401
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401
"""Writing arrays: archive[name] = array and mmzip.savez (a drop-in for numpy.savez) store each array with its
DATA (not only the member) on a 64-byte boundary (or the alignment asked for); numpy.load, zipfile and
`unzip -t` accept the result. The table of contents (repr) names dtype, shape, bytes, offset, alignment and
mapped/decoded, checked against offsets parsed independently from the file."""
import gc
import os
import re
import shutil
import subprocess
import tempfile
import zipfile

import numpy as np

import mmzip
from npz_testlib import data_offsets, same

tmp = tempfile.mkdtemp(prefix="npz_write_")


def arrays():
    rng = np.random.default_rng(3)
    return {
        "f8": rng.random(1001),
        "big_i4": np.arange(24, dtype=">i4").reshape(4, 6),
        "fortran": np.asfortranarray(rng.random((7, 5))),
        "strided": rng.random((10, 10))[::2, ::3],
        "structured": np.array([(1.5, (2, -3))] * 3, dtype=[("x", "<f4"), ("y", ">i2", (2,))]),
        "scalar": np.array(7, dtype=np.int8),
        "empty": np.zeros((0, 3), dtype=np.int16),
        "unicode": np.array(["ab", "cdé"], dtype="<U3"),
        "u1": rng.integers(0, 255, 13, dtype=np.uint8),
        "nonlatin_field": np.zeros(3, dtype=[("é€", "<i4")]),  # needs .npy format 3.0 (utf-8 header)
    }


def tools_accept(path, names):
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None
        assert sorted(z.namelist()) == sorted(n + ".npy" for n in names), z.namelist()
        for i in z.infolist():
            assert i.compress_type == zipfile.ZIP_STORED
    out = subprocess.run(["unzip", "-t", path], capture_output=True, text=True)
    assert out.returncode == 0 and "No errors detected" in out.stdout, out.stdout + out.stderr
    for n in names:
        assert re.search(r"testing: %s\.npy\s+OK" % re.escape(n), out.stdout), (n, out.stdout)


def test_setitem_aligned(alignment):
    p = os.path.join(tmp, "set%d.npz" % alignment)
    a = arrays()
    with mmzip.open(p, "w", alignment=alignment) as z:
        for k, v in a.items():
            z[k] = v
        z["f8_again"] = a["f8"][:7]
        try:
            z["obj"] = np.array([{}], dtype=object)
            raise AssertionError("object array stored")
        except ValueError as e:
            assert "Python objects" in str(e)
    offs = data_offsets(p)
    for k in list(a) + ["f8_again"]:
        off = offs[k + ".npy"]
        assert off % alignment == 0, "%s: data at %d, not a multiple of %d" % (k, off, alignment)
    ref = np.load(p)
    for k, v in a.items():
        want = np.asarray(v)
        assert np.array_equal(ref[k], want) and ref[k].dtype == want.dtype and ref[k].shape == want.shape, k
    assert np.array_equal(ref["f8_again"], a["f8"][:7])
    tools_accept(p, list(a) + ["f8_again"])
    with mmzip.open(p) as z:
        for k, v in a.items():
            got = z[k]
            assert np.array_equal(got, v) and got.dtype == np.asarray(v).dtype, k
            if got.nbytes:
                assert got.flags.aligned
                assert got.__array_interface__["data"][0] % alignment == 0, k
        assert z["fortran"].flags.f_contiguous and not z["fortran"].flags.c_contiguous
        assert z.toc()[0]["alignment"] >= alignment


def test_savez_drop_in():
    a = arrays()
    pos = [a["f8"], a["big_i4"]]
    kw = {k: v for k, v in a.items() if k not in ("f8", "big_i4")}
    ours = os.path.join(tmp, "ours")          # numpy.savez adds .npz; so must we
    theirs = os.path.join(tmp, "theirs")
    mmzip.savez(ours, *pos, **kw)
    np.savez(theirs, *pos, **kw)
    assert os.path.exists(ours + ".npz") and not os.path.exists(ours)
    A, B = np.load(ours + ".npz"), np.load(theirs + ".npz")
    assert A.files == B.files, (A.files, B.files)
    for k in B.files:
        assert same(A[k], B[k]) or (A[k].dtype == B[k].dtype and np.array_equal(A[k], B[k])), k
    with mmzip.open(ours + ".npz") as z:
        assert z.files == B.files, "archive order is numpy's"
    tools_accept(ours + ".npz", B.files)
    for off in data_offsets(ours + ".npz").values():
        assert off % 64 == 0
    for args, kwargs in (([a["f8"]], {"arr_0": a["u1"]}),):
        for f in (np.savez, mmzip.savez):
            try:
                f(os.path.join(tmp, "clash"), *args, **kwargs)
                raise AssertionError("%s accepted arr_0 twice" % f)
            except ValueError as e:
                assert "arr_0" in str(e)
    q = os.path.join(tmp, "explicit.npz")
    mmzip.savez(q, x=np.arange(3))
    assert np.array_equal(np.load(q)["x"], np.arange(3))
    # numpy.savez appends .npy to every name: "x" and "x.npy" are two arrays (x.npy and x.npy.npy). mmzip's
    # savez used to store both as x.npy, the second silently in place of the first (an outside review).
    for f, name in ((np.savez, "np_suffix.npz"), (mmzip.savez, "mm_suffix.npz")):
        f(os.path.join(tmp, name), **{"x": np.arange(3), "x.npy": np.arange(5)})
    A, B = np.load(os.path.join(tmp, "mm_suffix.npz")), np.load(os.path.join(tmp, "np_suffix.npz"))
    assert A.files == B.files == ["x", "x.npy"], (A.files, B.files)
    for k in B.files:  # numpy.load's own lookup (A["x.npy"] is member x.npy: the array x), the same for both
        assert np.array_equal(A[k], B[k]), k
    with zipfile.ZipFile(os.path.join(tmp, "mm_suffix.npz")) as zf:
        assert sorted(zf.namelist()) == ["x.npy", "x.npy.npy"], zf.namelist()
        with zf.open("x.npy.npy") as f:
            assert np.array_equal(np.lib.format.read_array(f), np.arange(5)), "the second array, kept"


def test_append_to_foreign():
    """Mode a: append to an archive numpy wrote; numpy and unzip read old and new members."""
    p = os.path.join(tmp, "append.npz")
    np.savez(p, old=np.arange(10))
    with mmzip.open(p, "a") as z:
        z["new"] = np.ones((3, 3))
        assert "old" in z and "new" in z
    ref = np.load(p)
    assert sorted(ref.files) == ["new", "old"]
    assert np.array_equal(ref["old"], np.arange(10)) and np.array_equal(ref["new"], np.ones((3, 3)))
    tools_accept(p, ["old", "new"])
    assert data_offsets(p)["new.npy"] % 64 == 0
    with mmzip.open(p, "r") as z:
        try:
            z["x"] = np.zeros(1)
            raise AssertionError("wrote through mode r")
        except ValueError as e:
            assert "read-only" in str(e)


def test_visibility_until_commit():
    """Arrays set are published at commit() or close(), in one directory write; a reader in another
    process sees the last commit."""
    p = os.path.join(tmp, "batch.npz")
    z = mmzip.open(p, "w")
    z["a"] = np.arange(5)
    z.commit()
    z["b"] = np.arange(6)
    code = "import zipfile,sys; print(sorted(zipfile.ZipFile(sys.argv[1]).namelist()))"
    out = subprocess.run(["/usr/bin/python3", "-c", code, p], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['a.npy']", out.stdout
    z.close()
    out = subprocess.run(["/usr/bin/python3", "-c", code, p], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['a.npy', 'b.npy']", out.stdout


def test_repr_table():
    p = os.path.join(tmp, "toc.npz")
    mmzip.savez(p, f=np.zeros((3, 4), dtype="<f4"), b=np.arange(5, dtype=">i8"))
    with zipfile.ZipFile(p, "a", zipfile.ZIP_DEFLATED) as zf:  # one compressed member, from zipfile
        import io
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.arange(100, dtype=np.int16))
        zf.writestr("c.npy", buf.getvalue())
    offs = data_offsets(p)
    with mmzip.open(p) as z:
        text = repr(z)
        print(text)
        lines = text.splitlines()
        assert p in lines[0] and "3 members" in lines[0]
        header = [c.strip() for c in lines[2].strip("|").split("|")]
        assert header == ["name", "dtype", "shape", "bytes", "offset", "alignment", "status"], header
        rows = {}
        for line in lines[4:-1]:
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[cells[0]] = cells
        f, b, c = rows["f"], rows["b"], rows["c"]
        assert f[1:4] == ["float32", "(3, 4)", "48"] and f[6] == "mapped", f
        assert int(f[4]) == offs["f.npy"] and int(f[5]) >= 64 and int(f[4]) % int(f[5]) == 0, f
        assert b[1:4] == [">i8", "(5,)", "40"] and int(b[4]) == offs["b.npy"] and b[6] == "mapped", b
        assert c[1:4] == ["int16", "(100,)", "200"] and c[6] == "decoded" and c[4] == "-", c
    assert "[closed]" in repr(z)


for t in (lambda: test_setitem_aligned(64), lambda: test_setitem_aligned(4096), test_savez_drop_in,
          test_append_to_foreign, test_visibility_until_commit, test_repr_table):
    print("--", getattr(t, "__name__", ""))
    t()
    gc.collect()
shutil.rmtree(tmp)
print("all checks passed")
