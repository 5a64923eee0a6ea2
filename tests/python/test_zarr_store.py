"""mmzip.ZarrStore against zarr-python 2.13 and xarray (Debian's), value for value: modes, zero-copy reads
from the one mapping, replacement without duplicate entries, batched commits seen by other processes,
pickling, getsize/listdir/rmdir/__delitem__ against zarr's DirectoryStore, a second writer, and archives
written or read by zarr's own ZipStore."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import pickle  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import warnings  # noqa: E402
import zipfile  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
import zarr  # noqa: E402
from zarr.errors import ReadOnlyError  # noqa: E402

import mmzip  # noqa: E402
from mmzip_testlib import PYTHON, TempDir, check_equal, main, zip_tools_ok  # noqa: E402


def names_of(path):
    with zipfile.ZipFile(path) as z:
        return [i.filename for i in z.infolist()]


def in_other_process(code, *args, check=True):
    """Runs code in a fresh interpreter (another process: its own mapping, its own locks); returns stdout."""
    env = dict(os.environ)
    if env.get("MMZIP_ASAN_RUNTIME"):  # the sanitizer build: the runtime must come first there too
        env["LD_PRELOAD"] = env["MMZIP_ASAN_RUNTIME"]
    p = subprocess.run([PYTHON, "-c", code] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=120, env=env)
    if check and p.returncode != 0:
        raise AssertionError("other process failed:\n%s\n%s" % (p.stdout, p.stderr))
    return p


def sample_arrays():
    rng = np.random.default_rng(12)
    return {
        "temperature": rng.normal(280, 10, size=(37, 53)).astype("<f8"),  # Blosc (zarr's default)
        "raw/counts": rng.integers(0, 1 << 30, size=(1000,), dtype="<i4"),  # uncompressed chunks
        "big_endian": np.arange(100, dtype=">i8"),
    }


def write_sample(store):
    arrays = sample_arrays()
    root = zarr.group(store=store, overwrite=True)
    root.attrs.update(title="mmzip zarr store", scale=[1.5, 2.5])
    root.create_dataset("temperature", data=arrays["temperature"], chunks=(10, 20))
    root.create_group("raw").attrs["units"] = "counts"
    root.create_dataset("raw/counts", data=arrays["raw/counts"], chunks=(256,), compressor=None)
    root.create_dataset("big_endian", data=arrays["big_endian"], chunks=(30,), compressor=None)
    return arrays


def check_sample(root, arrays, what):
    check_equal(dict(root.attrs), {"title": "mmzip zarr store", "scale": [1.5, 2.5]}, what + " attrs")
    for name, want in arrays.items():
        got = root[name][...]
        check_equal(got.dtype, want.dtype, "%s: dtype of %s" % (what, name))
        assert np.array_equal(got, want), "%s: values of %s differ" % (what, name)


def test_round_trip_against_directory_store():
    """The same group written to a DirectoryStore and to ZarrStore: every key holds the same bytes, and the
    archive passes zipfile, unzip -t and 7z."""
    with TempDir() as d:
        arc, ref = os.path.join(d, "g.zarr.zip"), os.path.join(d, "g.zarr")
        with mmzip.ZarrStore(arc, mode="w") as s:
            arrays = write_sample(s)
        write_sample(zarr.DirectoryStore(ref))
        want = {}
        for top, _, files in os.walk(ref):
            for f in files:
                full = os.path.join(top, f)
                with open(full, "rb") as fh:
                    want[os.path.relpath(full, ref)] = fh.read()
        names = zip_tools_ok(arc)
        check_equal(sorted(names), sorted(want), "keys of the archive (as zipfile lists them)")
        with zipfile.ZipFile(arc) as z:
            for k, v in want.items():
                check_equal(z.read(k), v, "bytes of %s" % k)
        with mmzip.ZarrStore(arc) as s:
            check_sample(zarr.open_group(s, mode="r"), arrays, "read back")
            check_equal(sorted(s.keys()), sorted(want), "keys()")
            check_equal(len(s), len(want), "len()")
            for k, v in want.items():
                assert k in s, k
                check_equal(bytes(s[k]), v, "store[%r]" % k)
            assert "nope" not in s and "temperature/9.9" not in s
        # zarr's own ZipStore reads what we wrote.
        z = zarr.ZipStore(arc, mode="r")
        check_sample(zarr.open_group(z, mode="r"), arrays, "zarr.ZipStore reading our archive")
        z.close()


def mapped_ranges(path):
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5] == real:
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, parts[1]))
    return out


def address_of(view):
    return np.frombuffer(view, dtype="u1").ctypes.data


def test_zero_copy_reads():
    """Stored chunks are read-only views into the mapping of the archive (the address lies in a read-only
    mapping of that file), equal to what zipfile reads; they stay valid after close() while they live."""
    with TempDir() as d:
        arc = os.path.join(d, "z.zip")
        with mmzip.ZarrStore(arc, mode="w") as s:
            arrays = write_sample(s)
        with zipfile.ZipFile(arc) as z:
            want = z.read("raw/counts/1")
        s = mmzip.ZarrStore(arc)
        v = s["raw/counts/1"]
        assert isinstance(v, memoryview) and v.readonly, type(v)
        check_equal(bytes(v), want, "chunk bytes")
        addr = address_of(v)
        ranges = mapped_ranges(arc)
        assert any(lo <= addr and addr + len(v) <= hi and perm.startswith("r-") for lo, hi, perm in ranges), \
            "chunk at %#x is not inside a read-only mapping of %s: %r" % (addr, arc, ranges)
        # The same chunk twice: the same bytes of the same mapping (no copy was made).
        check_equal(address_of(s["raw/counts/1"]), addr, "address of a second read")
        # What zarr returns is correct, and decoding did not need a writable buffer.
        assert np.array_equal(zarr.open_group(s, mode="r")["raw/counts"][256:512], arrays["raw/counts"][256:512])
        s.close()
        check_equal(bytes(v), want, "a view read after close()")  # still mapped: the view holds the mapping
        assert mapped_ranges(arc), "the mapping went away while a view lives"
        del v
        import gc
        gc.collect()
        assert not mapped_ranges(arc), "the archive is still mapped after close() and the last view: %r" \
            % mapped_ranges(arc)


def test_rewrite_replaces_keys():
    """Rewriting chunks (whole and partial) and .zattrs leaves one directory entry per name, with the last
    value; the zarr ZipStore doing the same leaves duplicates (the problem this store removes)."""
    with TempDir() as d:
        arc = os.path.join(d, "r.zip")
        want = np.zeros((100, 100), "<f4")
        with mmzip.ZarrStore(arc, mode="w") as s:
            a = zarr.open_group(s, mode="w").create_dataset("a", shape=(100, 100), chunks=(30, 30), dtype="<f4")
            for i in range(4):
                a[:] = i
                want[:] = i
                s.flush()
            a[5:15, 7:70] = -3  # partial: read-modify-write of chunks
            want[5:15, 7:70] = -3
            for i in range(3):
                a.attrs["round"] = i
                s.flush()
        names = names_of(arc)
        check_equal(len(names), len(set(names)), "entries in the directory vs distinct names (%r)" % names)
        with zipfile.ZipFile(arc) as z:
            check_equal(z.read("a/.zattrs"), b'{\n    "round": 2\n}', "last .zattrs")
        with mmzip.ZarrStore(arc) as s:
            assert np.array_equal(zarr.open_group(s, mode="r")["a"][...], want), "values after rewrites"
        # For contrast (and to make sure the check above can fail): zarr's ZipStore duplicates.
        zs_path = os.path.join(d, "zs.zip")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            zs = zarr.ZipStore(zs_path, mode="w")
            b = zarr.open_group(zs, mode="w").create_dataset("a", shape=(10,), chunks=(5,), dtype="<f4")
            b[:] = 1
            b[:] = 2
            zs.close()
        n = names_of(zs_path)
        assert len(n) > len(set(n)), "zarr's ZipStore no longer duplicates entries? %r" % n


READER = r"""
import sys, zipfile, numpy as np, zarr, mmzip
path = sys.argv[1]
s = mmzip.ZarrStore(path)
g = zarr.open_group(s, mode="r")
print(sorted(g.array_keys()), [float(g[k][...].sum()) for k in sorted(g.array_keys())])
with zipfile.ZipFile(path) as z:
    assert z.testzip() is None
    print(sorted(z.namelist()))
"""


def test_batched_commits_seen_by_other_processes():
    """Until flush(), another process (mmzip and zipfile) sees the last commit, complete; after flush() the
    new state; a writer killed before flush leaves the last commit."""
    with TempDir() as d:
        arc = os.path.join(d, "b.zip")
        s = mmzip.ZarrStore(arc, mode="w")
        g = zarr.open_group(s, mode="w")
        g.create_dataset("x", data=np.arange(10.0), chunks=(5,))
        # Nothing committed yet, and mode "w" publishes the archive at its first commit only.
        assert not os.path.exists(arc), "the archive exists before any commit"
        s.flush()
        out = in_other_process(READER, arc).stdout.splitlines()
        check_equal(out[0], "['x'] [45.0]", "other process after the first flush")
        g.create_dataset("y", data=np.ones(7), chunks=(3,))
        g["x"][:] = 2.0
        out = in_other_process(READER, arc).stdout.splitlines()
        check_equal(out[0], "['x'] [45.0]", "other process before the second flush (last commit)")
        check_equal(out[1], "['.zgroup', 'x/.zarray', 'x/0', 'x/1']", "zipfile before the second flush")
        s.flush()
        out = in_other_process(READER, arc).stdout.splitlines()
        check_equal(out[0], "['x', 'y'] [20.0, 7.0]", "other process after the second flush")
        s.close()
        # A writer killed between flushes: the archive holds its last commit.
        killed = in_other_process(r"""
import os, sys, numpy as np, zarr, mmzip
s = mmzip.ZarrStore(sys.argv[1], mode="a")
g = zarr.open_group(s)
g["x"][:] = 5.0
s.flush()
g["x"][:] = 9.0
g.create_dataset("z", data=np.ones(4))
os._exit(0)  # no close(), no commit
""", arc)
        check_equal(killed.returncode, 0, "killed writer")
        out = in_other_process(READER, arc).stdout.splitlines()
        check_equal(out[0], "['x', 'y'] [50.0, 7.0]", "after a writer died before its flush")
        zip_tools_ok(arc)


def test_modes():
    with TempDir() as d:
        arc = os.path.join(d, "m.zip")
        try:
            mmzip.ZarrStore(arc, mode="r")
            raise AssertionError("mode r opened a missing archive")
        except mmzip.MmzipError as e:
            assert "no such archive" in str(e) and arc in str(e), str(e)
        try:
            mmzip.ZarrStore(arc, mode="r+")
            raise AssertionError("mode r+ opened a missing archive")
        except mmzip.MmzipError:
            pass
        with mmzip.ZarrStore(arc, mode="a") as s:  # creates
            s["k"] = b"v1"
        with mmzip.ZarrStore(arc, mode="a") as s:  # appends, keeps
            check_equal(bytes(s["k"]), b"v1", "mode a keeps")
            s["k2"] = b"v2"
        with mmzip.ZarrStore(arc, mode="r+") as s:
            check_equal(sorted(s), ["k", "k2"], "mode r+ keys")
            s["k"] = b"v3"
        try:
            mmzip.ZarrStore(arc, mode="w-")
            raise AssertionError("mode w- opened an existing archive")
        except FileExistsError as e:
            assert arc in str(e)
        with mmzip.ZarrStore(arc, mode="r") as s:
            check_equal(bytes(s["k"]), b"v3", "r+ rewrote")
            for op in (lambda: s.__setitem__("k", b"x"), lambda: s.__delitem__("k"), s.clear,
                       lambda: s.rmdir("")):
                try:
                    op()
                    raise AssertionError("a read-only store accepted a write")
                except PermissionError as e:
                    assert isinstance(e, ReadOnlyError) and "read-only" in str(e), str(e)
            s.flush()  # no-op
        # "w": the old archive stays, complete, until the new one's first commit.
        s = mmzip.ZarrStore(arc, mode="w")
        s["new"] = b"n"
        check_equal(sorted(names_of(arc)), ["k", "k2"], "the old archive while mode w has not committed")
        s.close()
        check_equal(sorted(names_of(arc)), ["new"], "after mode w closed")
        try:
            mmzip.ZarrStore(arc, mode="rw")
            raise AssertionError("bad mode accepted")
        except ValueError:
            pass
        with mmzip.ZarrStore(os.path.join(d, "x.zip"), mode="w-") as s:
            s["a"] = b"1"
        check_equal(names_of(os.path.join(d, "x.zip")), ["a"], "w- created")


def test_second_writer_gets_a_clear_error():
    with TempDir() as d:
        arc = os.path.join(d, "w.zip")
        s = mmzip.ZarrStore(arc, mode="w")
        s["a"] = b"1"
        s.flush()
        # Mode "a" takes the writer lock at its first write (opening it only reads).
        p = in_other_process("import sys, mmzip\ns = mmzip.ZarrStore(sys.argv[1], mode='a')\nprint(bytes(s['a']))\n"
                             "s['b'] = b'2'", arc, check=False)
        assert p.stdout == "b'1'\n", p.stdout
        assert p.returncode != 0 and "MmzipError" in p.stderr and "open for writing by another process" in \
            p.stderr, p.stderr
        try:
            mmzip.ZarrStore(arc, mode="r+")
            raise AssertionError("a second writer in the same process was accepted")
        except mmzip.MmzipError as e:
            check_equal(e.code, -9, "status of a second writer (MMZIP_EBUSY)")
            assert "already open for writing" in str(e), str(e)
        # Readers beside the writer are fine, in this process and others.
        with mmzip.ZarrStore(arc) as r:
            check_equal(bytes(r["a"]), b"1", "reader beside the writer")
        s.close()
        with mmzip.ZarrStore(arc, mode="a") as s2:  # released by close()
            s2["b"] = b"2"
        check_equal(sorted(names_of(arc)), ["a", "b"], "after the second writer")


def test_pickle():
    with TempDir() as d:
        arc = os.path.join(d, "p.zip")
        s = mmzip.ZarrStore(arc, mode="w")
        arrays = write_sample(s)
        dump = pickle.dumps(s)  # publishes what was written (as zarr's ZipStore flushes)
        copy = pickle.loads(dump)
        check_equal(copy.mode, "w", "mode kept")
        check_sample(zarr.open_group(copy, mode="r"), arrays, "unpickled copy of a writer")
        try:
            copy["x"] = b"1"
            raise AssertionError("an unpickled copy of a writer could write")
        except ReadOnlyError as e:
            assert "unpickled" in str(e) and "'w'" in str(e), str(e)
        copy.close()
        s["late"] = b"L"
        s.close()
        check_equal(pickle.dumps(s), dump, "pickle of the closed store")
        # In another process: reopened by path, reads the values.
        code = ("import sys, pickle, zarr, numpy as np\ns = pickle.loads(bytes.fromhex(sys.argv[1]))\n"
                "g = zarr.open_group(s, mode='r')\nprint(float(g['temperature'][...].sum()), bytes(s['late']))")
        out = in_other_process(code, dump.hex()).stdout.split()
        check_equal(float(out[0]), float(arrays["temperature"].sum()), "sum in another process")
        check_equal(out[1], "b'L'", "a key committed after the pickle, read in another process")
        r = mmzip.ZarrStore(arc)
        r2 = pickle.loads(pickle.dumps(r))
        check_sample(zarr.open_group(r2, mode="r"), arrays, "pickled reader")
        r.close()
        r2.close()


def test_getsize_listdir_rmdir_delitem_like_directory_store():
    """The same operations on a DirectoryStore and on ZarrStore give the same answers."""
    with TempDir() as d:
        arc, ref = os.path.join(d, "l.zip"), os.path.join(d, "l.zarr")
        s, r = mmzip.ZarrStore(arc, mode="w"), zarr.DirectoryStore(ref)
        for st in (s, r):
            write_sample(st)
            zarr.open_group(store=st, path="raw/deep/er", mode="a")
        for path in (None, "", "raw", "raw/", "temperature", "raw/counts", "raw/counts/0", "nope", "raw/deep"):
            check_equal(s.listdir(path), r.listdir(path), "listdir(%r)" % path)
            check_equal(s.getsize(path), r.getsize(path), "getsize(%r)" % path)
            check_equal(zarr.storage.getsize(s, path), zarr.storage.getsize(r, path), "zarr getsize(%r)" % path)
        g1, g2 = zarr.open_group(s), zarr.open_group(r)
        check_equal(g1["temperature"].nbytes_stored, g2["temperature"].nbytes_stored, "nbytes_stored")
        for st in (s, r):
            del st["temperature/0.0"]
            st.rmdir("raw")
            try:
                del st["temperature/0.0"]
                raise AssertionError("deleting a missing key worked")
            except KeyError:
                pass
        check_equal(sorted(s.keys()), sorted(r.keys()), "keys after rmdir and delete")
        check_equal(s.listdir(), r.listdir(), "listdir after rmdir")
        s.close()
        check_equal(sorted(names_of(arc)), sorted(r.keys()), "the archive after rmdir and delete")
        with mmzip.ZarrStore(arc) as s:
            t = zarr.open_group(s)["temperature"]
            check_equal(float(t[0, 0]), float(t.fill_value), "a deleted chunk reads as the fill value")
        with mmzip.ZarrStore(arc, mode="a") as s:
            s.clear()
            check_equal(len(s), 0, "len after clear")
        check_equal(names_of(arc), [], "the archive after clear")


def test_listing_edges():
    """mmzip_list_names (keys, listdir): a name that is both an entry and a directory, names sorting between
    'a' and 'a/' ('a.b', 'a-c'), a prefix that is itself an entry, deep trees skipped by binary search, and
    keys() of many entries, all against a plain Python computation over the same names."""
    names = ["a", "a.b", "a-c", "a/x", "a/y/z", "a/y/zz", "a0", "b/c/d/e", "g", "g/h", "été/1"]
    names += ["big/%d.%d" % (i, j) for i in range(30) for j in range(40)]
    with TempDir() as d:
        arc = os.path.join(d, "n.zip")
        with mmzip.ZarrStore(arc, mode="w") as s:
            for i, n in enumerate(names):
                s[n] = str(i).encode()
            for store in (s, None):  # the writer's view (pending entries), then a reader's
                if store is None:
                    s.flush()
                    store = mmzip.ZarrStore(arc)
                check_equal(sorted(store.keys()), sorted(names), "keys()")
                for prefix in ("", "a", "a/", "a/y", "b", "b/c/d", "big", "g", "nope", "été"):
                    pre = prefix.strip("/") + "/" if prefix.strip("/") else ""
                    want = sorted({n[len(pre):].split("/")[0] for n in names if n.startswith(pre) and n != pre})
                    check_equal(store.listdir(prefix), want, "listdir(%r)" % prefix)
                check_equal(store._names("a/", 1), ["x", "y/"], "children of a/ with the directory mark")
                check_equal(store._names("", 1)[:5], ["a", "a-c", "a.b", "a/", "a0"], "root children in order")
        with mmzip.ZarrStore(arc) as s:
            check_equal(len(s), len(names), "len()")


def test_xarray():
    """ds.to_zarr(store) and xr.open_zarr(store), appending along a dimension, consolidated metadata; the
    result read by zarr's ZipStore too."""
    with TempDir() as d:
        arc = os.path.join(d, "x.zarr.zip")
        rng = np.random.default_rng(3)
        ds = xr.Dataset(
            {"t": (("time", "y"), rng.normal(size=(6, 5)).astype("f4"), {"units": "K"}),
             "n": (("y",), np.arange(5, dtype="i8"))},
            coords={"time": np.arange(6), "y": np.linspace(0, 1, 5)}, attrs={"source": "test"})
        with mmzip.ZarrStore(arc, mode="w") as s:
            ds.to_zarr(s, encoding={"t": {"chunks": (2, 5)}})
        more = ds.isel(time=slice(0, 3)).assign_coords(time=[6, 7, 8])
        with mmzip.ZarrStore(arc, mode="a") as s:
            more[["t"]].to_zarr(s, append_dim="time")
        want = xr.concat([ds[["t"]], more[["t"]]], dim="time")
        with mmzip.ZarrStore(arc) as s:
            got = xr.open_zarr(s).load()
            xr.testing.assert_identical(got[["t"]], want.assign(t=want.t.assign_attrs(units="K")))
            np.testing.assert_array_equal(got["n"].values, ds["n"].values)
            check_equal(got.attrs, {"source": "test"}, "dataset attributes")
            got2 = xr.open_zarr(s, chunks={"time": 2})
            np.testing.assert_array_equal(got2["t"].compute().values, want["t"].values)
            np.testing.assert_allclose(float(got2["t"].astype("f8").sum().compute()),
                                       float(want["t"].values.astype("f8").sum()), rtol=1e-12)
        names = zip_tools_ok(arc)
        check_equal(len(names), len(set(names)), "no duplicate entries after append")
        z = zarr.ZipStore(arc, mode="r")
        np.testing.assert_array_equal(xr.open_zarr(z)["t"].values, want["t"].values)
        z.close()


def test_foreign_archives():
    """Archives written by zarr's ZipStore (stored and deflated) are read by ZarrStore, and appended to."""
    with TempDir() as d:
        for comp in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            arc = os.path.join(d, "f%d.zip" % comp)
            z = zarr.ZipStore(arc, mode="w", compression=comp)
            arrays = write_sample(z)
            z.close()
            with mmzip.ZarrStore(arc) as s:
                check_sample(zarr.open_group(s, mode="r"), arrays, "ZipStore archive, method %d" % comp)
            with mmzip.ZarrStore(arc, mode="a") as s:
                zarr.open_group(s)["big_endian"][:10] = -1
            arrays["big_endian"][:10] = -1
            names = zip_tools_ok(arc)
            check_equal(len(names), len(set(names)), "entries after rewriting a foreign archive")
            z = zarr.ZipStore(arc, mode="r")
            check_sample(zarr.open_group(z, mode="r"), arrays, "ZipStore reading it back, method %d" % comp)
            z.close()


def test_views_of_a_writer():
    """A writer's pending entries come back as copies (the writer may rewrite them in place); committed
    ones as views; a view kept past close() holds the writer lock, and a ResourceWarning says so."""
    with TempDir() as d:
        arc = os.path.join(d, "v.zip")
        s = mmzip.ZarrStore(arc, mode="w")
        s["k"] = b"one"
        v = s["k"]
        assert isinstance(v, bytes), type(v)
        s["k"] = b"two"
        check_equal(v, b"one", "a copy of a pending entry after it was rewritten")
        s.flush()
        v = s["k"]
        assert isinstance(v, memoryview), type(v)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            s.close()
        assert any(issubclass(x.category, ResourceWarning) for x in w), [str(x.message) for x in w]
        check_equal(bytes(v), b"two", "a writer's view after close")
        # Mode "a" takes the writer lock at its first write (opening it only reads).
        p = in_other_process("import sys, mmzip\nmmzip.ZarrStore(sys.argv[1], mode='a')['x'] = b'2'", arc,
                             check=False)
        assert p.returncode != 0 and "open for writing" in p.stderr, "the lock was released under a live view"
        del v
        import gc
        gc.collect()
        in_other_process("import sys, mmzip\ns = mmzip.ZarrStore(sys.argv[1], mode='a')\ns['x'] = b'3'\n"
                         "s.close()", arc)


def test_read_cache_follows_commits():
    """A read-only store remembers where the keys it read are, and forgets when the archive it sees changes:
    a commit of a writer sharing its store in this process, or its own refresh() after another process
    committed. Replaced keys read the new bytes, removed ones raise KeyError, never the old state."""
    with TempDir() as d:
        arc = os.path.join(d, "c.zip")
        w = mmzip.ZarrStore(arc, mode="w")
        w["k"], w["gone"], w["same"] = b"one", b"x", b"kept"
        w.flush()
        r = mmzip.ZarrStore(arc)  # read-only, beside the writer: the same store in this process
        check_equal((bytes(r["k"]), bytes(r["gone"]), bytes(r["same"])), (b"one", b"x", b"kept"), "first reads")
        v = r["k"]
        v.release()  # a consumer releasing what it got does not harm the next read
        check_equal(bytes(r["k"]), b"one", "after a returned view was released")
        w["k"] = b"two"
        del w["gone"]
        check_equal(bytes(r["k"]), b"one", "reader before the writer's commit")
        w.flush()
        check_equal(bytes(r["k"]), b"two", "reader after the writer's commit (same process)")
        try:
            r["gone"]
            raise AssertionError("a removed key was still read after the commit")
        except KeyError:
            pass
        check_equal(bytes(r["same"]), b"kept", "untouched key")
        r.close()
        w.close()
        # Another process commits; this reader sees its snapshot until refresh().
        r = mmzip.ZarrStore(arc)
        check_equal(bytes(r["k"]), b"two", "before the other process")
        in_other_process("import sys, mmzip\ns = mmzip.ZarrStore(sys.argv[1], mode='a')\n"
                         "s['k'] = b'three'\ndel s['same']\ns['new'] = b'n'\ns.close()", arc)
        check_equal(bytes(r["k"]), b"two", "snapshot before refresh()")
        check_equal(bytes(r["same"]), b"kept", "snapshot before refresh()")
        r.refresh()
        check_equal((bytes(r["k"]), bytes(r["new"])), (b"three", b"n"), "after refresh()")
        assert "same" not in r
        try:
            r["same"]
            raise AssertionError("a key removed by another process was read after refresh()")
        except KeyError:
            pass
        r.close()


def test_deflated_entries_read_and_checked():
    """Deflated entries of a foreign archive (zipfile) are inflated from the archive's bytes and their CRC-32
    checked: equal to what zipfile reads; a damaged one is an error naming the entry, never other bytes."""
    with TempDir() as d:
        arc = os.path.join(d, "z.zip")
        rng = np.random.default_rng(3)
        want = {"a/%d" % i: rng.integers(0, 4, size=5000 + 37 * i, dtype="u1").tobytes() for i in range(20)}
        want["empty"] = b""
        with zipfile.ZipFile(arc, "w", zipfile.ZIP_DEFLATED) as z:
            for k, v in want.items():
                z.writestr(k, v)
        with mmzip.ZarrStore(arc) as s:
            for _ in range(2):  # the second time from what the store remembered
                for k, v in want.items():
                    got = s[k]
                    check_equal(bytes(got), v, "deflated entry %s" % k)
        with zipfile.ZipFile(arc) as z:
            info = z.getinfo("a/7")
        with open(arc, "r+b") as f:  # damage the middle of a/7's deflated stream
            f.seek(info.header_offset + 26)
            nlen, xlen = struct.unpack("<HH", f.read(4))
            f.seek(info.header_offset + 30 + nlen + xlen + info.compress_size // 2)
            b = f.read(1)
            f.seek(-1, 1)
            f.write(bytes([b[0] ^ 0x55]))
        with mmzip.ZarrStore(arc) as s:
            check_equal(bytes(s["a/6"]), want["a/6"], "an undamaged neighbour")
            try:
                got = bytes(s["a/7"])
                raise AssertionError("a damaged deflated entry was read (%d bytes, equal: %s)"
                                     % (len(got), got == want["a/7"]))
            except mmzip.MmzipError as e:
                assert "a/7" in str(e), str(e)


if __name__ == "__main__":
    main([test_round_trip_against_directory_store, test_zero_copy_reads, test_rewrite_replaces_keys,
          test_batched_commits_seen_by_other_processes, test_modes, test_second_writer_gets_a_clear_error,
          test_pickle, test_getsize_listdir_rmdir_delitem_like_directory_store, test_listing_edges, test_xarray,
          test_foreign_archives, test_views_of_a_writer, test_read_cache_follows_commits,
          test_deflated_entries_read_and_checked])
