import os, sys  # noqa: E401
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401
"""mmzip.open(path): .npz archives written by numpy.savez, numpy.savez_compressed, Python zipfile (npy format
versions 1.0, 2.0, 3.0, data descriptors) and Info-ZIP zip read as NumPy arrays. Stored members are read-only
views into the one mapping of the archive (checked against /proc/self/maps and the array's base chain), with
one file descriptor whatever the number of arrays; compressed members are decoded copies."""
import gc
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

import mmzip
from npz_testlib import address, fds_on, mappings_of, open_fds, same

tmp = tempfile.mkdtemp(prefix="npz_read_")


def arrays():
    rng = np.random.default_rng(1)
    return {
        "f8": rng.random(1000),
        "big_i4": np.arange(24, dtype=">i4").reshape(4, 6),
        "fortran": np.asfortranarray(rng.random((7, 5))),
        "structured": np.array([(1.5, (2, -3)), (4.25, (5, 6))], dtype=[("x", "<f4"), ("y", ">i2", (2,))]),
        "bool": rng.random(33) > 0.5,
        "c16": (rng.random(5) + 1j * rng.random(5)),
        "scalar": np.array(3.25),
        "empty": np.zeros((0, 3), dtype=np.int16),
        "unicode": np.array(["ab", "cdé"], dtype="<U3"),
        "u1_3d": rng.integers(0, 255, (3, 4, 5), dtype=np.uint8),
    }


def check_against_numpy(path, expect_stored):
    ref = np.load(path)
    with mmzip.open(path) as z:
        assert sorted(z.files) == sorted(ref.files), (z.files, ref.files)
        assert len(z) == len(ref.files)
        assert list(iter(z)) == z.files
        maps = mappings_of(path)
        assert maps, "no mapping of %s in /proc/self/maps" % path
        lo, hi = min(m[0] for m in maps), max(m[1] for m in maps)
        m = z.mapping if expect_stored else None
        if m is not None:
            assert lo <= address(m) and address(m) + m.size <= hi and m.size == os.path.getsize(path)
        for name in ref.files:
            want = ref[name]
            got = z[name]
            assert same(got, want), (path, name, got.dtype, want.dtype, got.shape, want.shape)
            assert z[name + ".npy"] is got, "a member's view is made once and cached"
            assert name in z and name + ".npy" in z
            assert not got.flags.writeable, "arrays of mode r are read-only"
            try:
                got[...] = 0 if got.size else None
                raise AssertionError("writing into a read-only view succeeded")
            except ValueError:
                pass
            if expect_stored and got.nbytes:
                # A view of the one mapping: base chain ends at the archive's mapping array, the memory is
                # shared with it, and the address lies in the file's mapping in /proc/self/maps.
                b = got
                while isinstance(b, np.ndarray) and b.base is not None and b is not m:
                    b = b.base
                assert b is m, "base chain of %s does not reach the mapping (%r)" % (name, type(b))
                assert np.shares_memory(got, m)
                assert lo <= address(got) and address(got) + got.nbytes <= hi, (name, hex(address(got)), hex(lo))
        assert "nope" not in z and "nope.npy" not in z
        try:
            z["nope"]
            raise AssertionError("missing member did not raise")
        except KeyError as e:
            assert "nope" in str(e)
    return ref


def test_numpy_savez():
    p = os.path.join(tmp, "numpy.npz")
    a = arrays()
    np.savez(p, a["f8"], **{k: v for k, v in a.items() if k != "f8"})
    check_against_numpy(p, True)
    with mmzip.open(p) as z:
        assert z.files[0] == "arr_0" or "arr_0" in z.files
        toc = {r["name"]: r for r in z.toc()}
        assert all(r["status"] == "mapped" for r in toc.values()), toc
        # The rest of numpy.load's NpzFile (a Mapping): get() and values(), the same arrays.
        with np.load(p) as ref:
            assert z.get("missing") is None and z.get("missing", 7) == 7
            for k in ref.files:
                assert np.array_equal(z.get(k), ref[k])
            assert len(z.values()) == len(ref.files)
            for got, k in zip(z.values(), z.files):
                assert np.array_equal(got, ref[k]), k


def test_numpy_savez_compressed():
    p = os.path.join(tmp, "compressed.npz")
    a = arrays()
    np.savez_compressed(p, **a)
    check_against_numpy(p, False)
    with mmzip.open(p) as z:
        m_lo = min(s for s, e in mappings_of(p))
        for name in a:
            got = z[name]
            assert same(got, a[name])
            if got.nbytes:
                # decoded: not a view of the file's mapping
                assert not any(s <= address(got) < e for s, e in mappings_of(p)), (name, m_lo)
        toc = {r["name"]: r for r in z.toc()}
        assert all(r["status"] == "decoded" for r in toc.values()), toc


def test_zipfile_npy_versions_and_descriptors():
    """Python zipfile as the writer, .npy format 1.0 / 2.0 / 3.0 written by numpy.lib.format, stored; and a
    streamed archive (unseekable output: data descriptors)."""
    p = os.path.join(tmp, "zipfile.npz")
    a = arrays()
    versions = {}
    with zipfile.ZipFile(p, "w", zipfile.ZIP_STORED) as zf:
        for i, (name, arr) in enumerate(a.items()):
            v = [(1, 0), (2, 0), (3, 0)][i % 3]
            buf = io.BytesIO()
            np.lib.format.write_array(buf, arr, version=v)
            zf.writestr(name + ".npy", buf.getvalue())
            versions[name] = v
    with zipfile.ZipFile(p) as zf:
        for name, v in versions.items():
            assert zf.read(name + ".npy")[6:8] == bytes(v), name
    check_against_numpy(p, True)

    class Unseekable(io.RawIOBase):
        def __init__(self, f):
            self.f = f

        def writable(self):
            return True

        def write(self, b):
            return self.f.write(b)

    p2 = os.path.join(tmp, "streamed.npz")
    with open(p2, "wb") as raw:
        with zipfile.ZipFile(Unseekable(raw), "w", zipfile.ZIP_STORED) as zf:
            for name, arr in a.items():
                with zf.open(name + ".npy", "w") as w:
                    np.lib.format.write_array(w, arr)
    with zipfile.ZipFile(p2) as zf:
        assert all(i.flag_bits & 0x08 for i in zf.infolist()), "expected data descriptors"
    check_against_numpy(p2, True)


def test_info_zip():
    """Info-ZIP's zip: stored (-0) and deflated members of .npy files saved by numpy.save."""
    d = os.path.join(tmp, "npy")
    os.makedirs(d)
    a = arrays()
    for name, arr in a.items():
        np.save(os.path.join(d, name + ".npy"), arr)
    for flag, stored in (("-0", True), ("-6", False)):
        p = os.path.join(tmp, "infozip%s.npz" % flag)
        subprocess.run(["zip", "-q", "-j", flag, p] + sorted(os.path.join(d, n + ".npy") for n in a), check=True)
        check_against_numpy(p, stored)


def test_other_members_and_errors():
    p = os.path.join(tmp, "mixed.npz")
    with zipfile.ZipFile(p, "w") as zf:
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.arange(4))
        zf.writestr("ok.npy", buf.getvalue())
        zf.writestr("notes.txt", b"hello")
        zf.writestr("bad.npy", b"\x93NUMPY\x01\x00\x10\x00{'descr': '<f8'}\n")
        zf.writestr("short.npy", buf.getvalue()[:-8])
        buf = io.BytesIO()
        np.lib.format.write_array(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        zf.writestr("objects.npy", buf.getvalue())
    with mmzip.open(p) as z:
        assert np.array_equal(z["ok"], np.arange(4))
        assert z["notes.txt"] == b"hello"  # like numpy.load: members that are not .npy give their bytes
        for name, needle in (("bad", "lacks descr"), ("short", "holds"), ("objects", "Python objects")):
            try:
                z[name]
                raise AssertionError("%s read without error" % name)
            except ValueError as e:
                assert needle in str(e) and name + ".npy" in str(e) and p in str(e), str(e)
        rows = {r["name"]: r for r in z.toc()}
        assert rows["notes.txt"]["status"] == "raw"
        assert rows["bad"]["status"].startswith("unreadable")


def test_array_or_bytes_by_content():
    """numpy.load decides by the .npy magic, not by the name: a member "b" (or "c.NPY") holding .npy data is an
    array, a member "d.npy" holding other bytes is those bytes. mmzip.open used to return b's raw bytes, with no
    error, where numpy.load returned the array (an outside review)."""
    p = os.path.join(tmp, "names.npz")
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(4.0))
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("b", buf.getvalue())
        zf.writestr("c.NPY", buf.getvalue())
        zf.writestr("d.npy", b"not an array")
    want = np.load(p)
    with mmzip.open(p) as z:
        assert z.files == want.files, (z.files, want.files)
        for k in want.files:
            w = want[k]
            if isinstance(w, bytes):
                assert z[k] == w, k
            else:
                assert np.array_equal(z[k], w) and z[k].dtype == w.dtype, k
        rows = {r["name"]: r["status"] for r in z.toc()}
        assert rows["b"] == "mapped" and rows["d"] == "raw", rows


def test_one_descriptor_one_mapping():
    """2,000 arrays: one file descriptor and one mapping of the archive, however many arrays are held; the
    same arrays opened with numpy's mmap_mode hold a descriptor each (what the count would show)."""
    n = 2000
    rng = np.random.default_rng(2)
    arrs = {"a%04d" % i: rng.random(int(rng.integers(1, 300))) for i in range(n)}
    p = os.path.join(tmp, "many.npz")
    np.savez(p, **arrs)
    gc.collect()
    before = open_fds()
    z = mmzip.open(p)
    first = z["a0000"]
    maps_one = mappings_of(p)
    held = [z[k] for k in z.files]
    after = open_fds()
    assert after - before == 1, "fds grew by %d for %d arrays" % (after - before, n)
    assert fds_on(p) == 1
    assert mappings_of(p) == maps_one, "taking more arrays made new mappings"
    assert len(maps_one) == 1, maps_one
    lo, hi = maps_one[0]
    assert all(lo <= address(x) < hi for x in held)
    for k, x in zip(z.files, held):
        assert np.array_equal(x, arrs[k])
    # The arrays outlive the archive object: they keep the mapping.
    z.close()
    del z
    gc.collect()
    assert np.array_equal(held[5], arrs["a0005"]) and np.array_equal(first, arrs["a0000"])
    assert fds_on(p) == 1
    del held, first, x
    gc.collect()
    assert fds_on(p) == 0 and mappings_of(p) == [], "the mapping and descriptor outlived every array"

    # The peer, for scale: numpy's mmap_mode holds a descriptor per array.
    d = os.path.join(tmp, "many_npy")
    os.makedirs(d)
    for k in list(arrs)[:200]:
        np.save(os.path.join(d, k + ".npy"), arrs[k])
    before = open_fds()
    maps = [np.load(os.path.join(d, k + ".npy"), mmap_mode="r") for k in list(arrs)[:200]]
    assert open_fds() - before == 200, open_fds() - before
    del maps


for t in (test_numpy_savez, test_numpy_savez_compressed, test_zipfile_npy_versions_and_descriptors,
          test_info_zip, test_other_members_and_errors, test_array_or_bytes_by_content,
          test_one_descriptor_one_mapping):
    print("--", t.__name__)
    t()
shutil.rmtree(tmp)
print("all checks passed")
