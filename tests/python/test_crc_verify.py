"""A byte flipped in a stored entry is never read silently through the Python package: mmzip.ZarrStore (and
zarr arrays over it), mmzip.Archive[key] and whole arrays of mmzip.open(...) raise mmzip.CRCError naming the
archive, the entry and both CRCs, before any byte of the entry is handed out, as zarr's ZipStore, numpy.load
(zipfile) and unzip refuse the same archive. Undamaged archives read the exact values. The check is made
once per entry per handle (counted), again for an entry replaced by a commit. The unverified routes
(Archive(verify=False), mmzip.open(verify=False), HDF5 members by default) keep their documented behaviour:
the damaged bytes as they are in the file; h5py's driver="mmzip" with verify=True refuses the open."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import struct  # noqa: E402
import subprocess  # noqa: E402
import zipfile  # noqa: E402
import zlib  # noqa: E402

import numpy as np  # noqa: E402
import zarr  # noqa: E402

import mmzip  # noqa: E402
import mmzip.npz  # noqa: E402
import mmzip.zarr_store  # noqa: E402
from mmzip_testlib import PYTHON, TempDir, check_equal, ls_entries, main, mmzip as mmzip_cli, run  # noqa: E402


# -- helpers ---------------------------------------------------------------------------------------------

def data_offset(path, name):
    """Offset of entry `name`'s first data byte, from zipfile's directory and the local header's bytes (no
    mmzip code), checked against what `mmzip ls` prints."""
    with zipfile.ZipFile(path) as z:
        info = z.getinfo(name)
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        head = f.read(30)
    assert head[:4] == b"PK\x03\x04", (name, head[:4])
    nlen, xlen = struct.unpack("<HH", head[26:30])
    off = info.header_offset + 30 + nlen + xlen
    check_equal(ls_entries(path)[name]["offset"], off, "data offset of %s: mmzip ls against zipfile" % name)
    return off, info


def flip(path, offset, mask=0x5A):
    """XORs one byte of the file behind every reader's back; returns (old, new) byte values."""
    with open(path, "r+b") as f:
        f.seek(offset)
        old = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([old ^ mask]))
    return old, old ^ mask


def file_bytes(path, offset, n):
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read(n)


def expect_crc_error(fn, path, entry, expected, computed, what):
    """fn() must raise mmzip.CRCError naming path and entry with both CRCs; returns the exception."""
    try:
        got = fn()
    except mmzip.CRCError as e:
        assert isinstance(e, mmzip.MmzipError) and isinstance(e, OSError), what
        assert isinstance(e, zipfile.BadZipFile), "%s: not catchable as zipfile.BadZipFile" % what
        check_equal(e.code, -8, "%s: code" % what)
        msg = str(e)
        assert os.path.abspath(path) in msg or path in msg, "%s: archive not named: %s" % (what, msg)
        assert "'%s'" % entry in msg, "%s: entry not named: %s" % (what, msg)
        assert "%08x" % expected in msg and "%08x" % computed in msg, "%s: CRCs not given: %s" % (what, msg)
        check_equal(e.entry, entry, "%s: .entry" % what)
        check_equal(os.path.abspath(e.path), os.path.abspath(path), "%s: .path" % what)
        check_equal((e.expected, e.computed), (expected, computed), "%s: .expected, .computed" % what)
        return e
    raise AssertionError("%s: no error; returned %r" % (what, type(got).__name__))


def zipstore_refuses(path, array, what):
    """zarr's own ZipStore refuses the damaged archive (the foreign reader agrees)."""
    zs = zarr.storage.ZipStore(path, mode="r")
    try:
        zarr.open_array(zs, mode="r", path=array)[:]
        raise AssertionError("%s: zarr.ZipStore read the damaged array" % what)
    except zipfile.BadZipFile as e:
        assert "Bad CRC-32" in str(e), "%s: ZipStore: %s" % (what, e)
    finally:
        zs.close()


def unzip_refuses(path, entry):
    p = run(["unzip", "-t", path], check=False)
    assert p.returncode != 0 and entry in p.stdout and "bad CRC" in p.stdout, p.stdout + p.stderr


class Counting:
    """Stands for libmmzip's ctypes object: counts calls of the named functions, per key."""

    def __init__(self, real, names):
        self.real, self.names, self.calls = real, names, {}

    def __getattr__(self, name):
        f = getattr(self.real, name)
        if name not in self.names:
            return f

        def counted(h, key, *rest):
            self.calls[(name, bytes(key))] = self.calls.get((name, bytes(key)), 0) + 1
            return f(h, key, *rest)
        return counted


def make_zarr_dir(d):
    """A zarr array written by zarr-python into a DirectoryStore (uncompressed chunks of 1000 int32)."""
    want = np.arange(4000, dtype="<i4") * 7 - 3
    src = os.path.join(d, "src.zarr")
    z = zarr.open_array(zarr.DirectoryStore(src), mode="w", shape=want.shape, chunks=(1000,), dtype="<i4",
                        compressor=None)
    z[:] = want
    return src, want


# -- tests -----------------------------------------------------------------------------------------------

def test_zarr_store_from_directory_store():
    """DirectoryStore -> `mmzip put --dir`: undamaged reads exact; one flipped byte in chunk "x/2" makes
    ZarrStore, z[:] and zarr's ZipStore, and unzip, all refuse; the other chunks still read exactly."""
    with TempDir() as d:
        src, want = make_zarr_dir(d)
        arc = os.path.join(d, "a.zarr.zip")
        mmzip_cli("put", arc, "--dir", src, "x/")
        with mmzip.ZarrStore(arc) as s:
            z = zarr.open_array(s, mode="r", path="x")
            assert np.array_equal(z[:], want), "undamaged archive: values differ"
        off, info = data_offset(arc, "x/2")
        check_equal(info.file_size, 4000, "chunk x/2 size")
        check_equal(info.CRC, zlib.crc32(want[2000:3000].tobytes()), "chunk x/2 CRC in the directory")
        old, new = flip(arc, off + 1234)
        damaged = file_bytes(arc, off, info.file_size)
        computed = zlib.crc32(damaged)
        assert computed != info.CRC

        zipstore_refuses(arc, "x", "DirectoryStore + mmzip put --dir")
        unzip_refuses(arc, "x/2")
        p = mmzip_cli("check", arc, check=False)
        assert p.returncode != 0 and "x/2" in p.stdout + p.stderr, p.stdout + p.stderr

        with mmzip.ZarrStore(arc) as s:
            expect_crc_error(lambda: s["x/2"], arc, "x/2", info.CRC, computed, "ZarrStore['x/2']")
            # Again: still refused (a failed check is not remembered as good).
            expect_crc_error(lambda: s["x/2"], arc, "x/2", info.CRC, computed, "ZarrStore['x/2'] again")
            for k in ("x/0", "x/1", "x/3"):
                i = int(k[-1])
                check_equal(bytes(s[k]), want[i * 1000:(i + 1) * 1000].tobytes(), "undamaged chunk %s" % k)
            z = zarr.open_array(s, mode="r", path="x")
            try:
                z[:]
                raise AssertionError("z[:] returned the damaged array")
            except zipfile.BadZipFile as e:  # as a ZipStore user catches it
                assert isinstance(e, mmzip.CRCError) and "x/2" in str(e), repr(e)
            # No byte of the damaged chunk reaches the caller: zarr fills `out` chunk by chunk, and the part of
            # x/2 is left as it was.
            out = np.full(4000, -1, dtype="<i4")
            try:
                z.get_basic_selection(slice(None), out=out)
                raise AssertionError("a selection over x/2 returned")
            except mmzip.CRCError:
                pass
            assert np.all(out[2000:3000] == -1), "bytes of the damaged chunk were written into out"
            assert np.array_equal(z[:2000], want[:2000]) and np.array_equal(z[3000:], want[3000:])
        # A path with a group ("a.zip#/x"): the entry named in full.
        with mmzip.ZarrStore(arc + "#/x") as s:
            expect_crc_error(lambda: s["2"], arc, "x/2", info.CRC, computed, "ZarrStore('a.zip#/x')['2']")


def test_zarr_store_written_archive_and_archive_getitem():
    """An archive written by ZarrStore itself; the same damage refused by ZarrStore, Archive[key] (default)
    and Archive.verify; Archive(verify=False) keeps its documented choice: the bytes as they are."""
    with TempDir() as d:
        arc = os.path.join(d, "w.zarr.zip")
        want = np.linspace(-1, 1, 6000).astype("<f8")
        with mmzip.ZarrStore(arc, mode="w") as s:
            zarr.open_array(s, mode="w", shape=want.shape, chunks=(1500,), dtype="<f8", compressor=None)[:] = want
        with mmzip.ZarrStore(arc) as s:
            assert np.array_equal(zarr.open_array(s, mode="r")[:], want)
        off, info = data_offset(arc, "1")
        flip(arc, off + 5)
        damaged = file_bytes(arc, off, info.file_size)
        computed = zlib.crc32(damaged)
        zipstore_refuses(arc, "", "ZarrStore-written")
        with mmzip.ZarrStore(arc) as s:
            expect_crc_error(lambda: s["1"], arc, "1", info.CRC, computed, "ZarrStore['1']")
            try:
                zarr.open_array(s, mode="r")[1400:1600]  # across chunks 0 and 1
                raise AssertionError("a slice over chunk 1 was read")
            except mmzip.CRCError as e:
                check_equal(e.entry, "1", "entry of the slice's error")
            assert np.array_equal(zarr.open_array(s, mode="r")[3000:], want[3000:])
        with mmzip.Archive(arc) as a:
            expect_crc_error(lambda: a["1"], arc, "1", info.CRC, computed, "Archive['1']")
            expect_crc_error(lambda: a.verify("1"), arc, "1", info.CRC, computed, "Archive.verify('1')")
            check_equal(bytes(a["0"]), want[:1500].tobytes(), "Archive['0'] undamaged")
        # In a fresh process (no store shared with this one): the documented unverified route.
        code = ("import sys, mmzip\n"
                "with mmzip.Archive(sys.argv[1], verify=False) as a:\n"
                "    sys.stdout.write(bytes(a['1']).hex())\n")
        p = subprocess.run([PYTHON, "-c", code, arc], capture_output=True, text=True, timeout=120,
                           env=asan_preload.child_env())
        check_equal(p.returncode, 0, "Archive(verify=False) in another process: " + p.stderr)
        check_equal(bytes.fromhex(p.stdout), damaged, "Archive(verify=False) returns the bytes as they are")


def test_verified_once_per_entry_per_handle():
    """The check runs once per entry per handle: counted at the ctypes boundary (ZarrStore asks the core for
    an entry once, the first time; NpzArchive asks mmzip_verify once per member), and shown by behaviour: a
    byte flipped after the first read of an entry is not noticed through the same handle (no second pass,
    the documented cost model), while a fresh process refuses it, and an entry replaced by a commit is
    checked again after refresh()."""
    with TempDir() as d:
        arc = os.path.join(d, "c.zarr.zip")
        payload = {"k%d" % i: bytes([i]) * (3000 + i) for i in range(4)}
        with mmzip.ZarrStore(arc, mode="w") as w:
            for k, v in payload.items():
                w[k] = v
        real = mmzip.zarr_store._c
        counting = Counting(real(), {"mmzip_get", "mmzip_verify"})
        mmzip.zarr_store._c = lambda: counting
        try:
            s = mmzip.ZarrStore(arc)
            for _ in range(3):
                for k, v in payload.items():
                    check_equal(bytes(s[k]), v, "read of %s" % k)
            for k in payload:
                check_equal(counting.calls.get(("mmzip_get", k.encode())), 1, "core reads (and checks) of %s" % k)
        finally:
            mmzip.zarr_store._c = real
        off, info = data_offset(arc, "k1")
        flip(arc, off + 10)
        check_equal(bytes(s["k1"])[10], payload["k1"][10] ^ 0x5A, "same handle after the check: not again")
        code = ("import sys, mmzip\n"
                "s = mmzip.ZarrStore(sys.argv[1])\n"
                "try:\n"
                "    s['k1']\n"
                "except mmzip.CRCError as e:\n"
                "    print('refused', e.entry)\n")
        p = subprocess.run([PYTHON, "-c", code, arc], capture_output=True, text=True, timeout=120,
                           env=asan_preload.child_env())
        check_equal(p.stdout.strip(), "refused k1", "a fresh process: " + p.stderr)
        flip(arc, off + 10)  # undo
        # A replaced entry is a new entry: checked again (a byte flipped before the reader sees it).
        # (The writer in another process: a writable open beside this process's reader is refused.)
        code = ("import sys, mmzip\n"
                "with mmzip.ZarrStore(sys.argv[1], mode='r+') as w:\n"
                "    w['k2'] = b'new' * 1000\n")
        p = subprocess.run([PYTHON, "-c", code, arc], capture_output=True, text=True, timeout=120,
                           env=asan_preload.child_env())
        check_equal(p.returncode, 0, "writer in another process: " + p.stderr)
        off2, info2 = data_offset(arc, "k2")
        flip(arc, off2 + 7)
        s.refresh()
        computed = zlib.crc32(file_bytes(arc, off2, info2.file_size))
        expect_crc_error(lambda: s["k2"], arc, "k2", info2.CRC, computed, "replaced entry after refresh")
        check_equal(bytes(s["k3"]), payload["k3"], "unchanged entry after refresh")
        s.close()

        # npz: mmzip_verify once per member, however often the array is asked for.
        npz = os.path.join(d, "c.npz")
        arrays = {"a": np.arange(1000, dtype="<f4"), "b": np.ones((20, 30), dtype="<i2")}
        mmzip.savez(npz, **arrays)
        real = mmzip.npz._core
        counting = Counting(real(), {"mmzip_verify"})
        mmzip.npz._core = lambda: counting
        try:
            with mmzip.open(npz) as a:
                for _ in range(3):
                    for k, v in arrays.items():
                        assert np.array_equal(a[k], v) and np.array_equal(a[k + ".npy"], v), k
            check_equal(sorted(counting.calls.items()), [(("mmzip_verify", b"a.npy"), 1),
                                                          (("mmzip_verify", b"b.npy"), 1)], "npz checks")
            counting.calls.clear()
            with mmzip.open(npz, verify=False) as a:
                assert np.array_equal(a["a"], arrays["a"])
            check_equal(counting.calls, {}, "verify=False: no check")
        finally:
            mmzip.npz._core = real


def test_npz_whole_arrays():
    """numpy.savez and mmzip.savez archives: a flipped byte in one array's data; numpy.load refuses
    (zipfile's CRC check), mmzip.open(...)[name] refuses naming the member (read and in-place modes, before
    a writable view exists: the archive is left byte for byte), the other arrays read exactly;
    verify=False hands out the damaged values as documented. The damaged member is the first: the last entry
    of an archive another program wrote is always checked (it may be a torn tail)."""
    with TempDir() as d:
        rng = np.random.default_rng(5)
        arrays = {"a": rng.normal(size=(50, 40)).astype("<f8"), "b": rng.integers(0, 99, 3000).astype("<i4")}
        for writer in ("numpy", "mmzip"):
            path = os.path.join(d, "%s.npz" % writer)
            (np.savez if writer == "numpy" else mmzip.savez)(path, **arrays)
            with mmzip.open(path) as a:
                for k, v in arrays.items():
                    assert np.array_equal(a[k], v) and a[k].dtype == v.dtype, (writer, k)
            off, info = data_offset(path, "a.npy")
            hlen = info.file_size - arrays["a"].nbytes
            flip(path, off + hlen + 8 * 17 + 3)  # element 17 of a
            damaged = file_bytes(path, off, info.file_size)
            computed = zlib.crc32(damaged)
            try:
                np.load(path)["a"]
                raise AssertionError("numpy.load read the damaged member")
            except zipfile.BadZipFile as e:
                assert "Bad CRC-32" in str(e), e
            with mmzip.open(path) as a:
                expect_crc_error(lambda: a["a"], path, "a.npy", info.CRC, computed, "%s npz a['a']" % writer)
                assert np.array_equal(a["b"], arrays["b"]), writer
            with mmzip.open(path, verify=True) as a:
                expect_crc_error(lambda: a["a.npy"], path, "a.npy", info.CRC, computed, "verify=True")
            before = open(path, "rb").read()
            a = mmzip.open(path, "r+")
            expect_crc_error(lambda: a["a"], path, "a.npy", info.CRC, computed, "%s npz r+ a['a']" % writer)
            a.close()
            check_equal(open(path, "rb").read() == before, True, "r+ open after a refused view: file unchanged")
            # The documented unverified route, in a fresh process (no store shared with this one).
            code = ("import sys, numpy, mmzip\n"
                    "with mmzip.open(sys.argv[1], verify=False) as a:\n"
                    "    x = a['a']\n"
                    "    print(x.tobytes().hex(), isinstance(x.base, numpy.ndarray))\n")
            p = subprocess.run([PYTHON, "-c", code, path], capture_output=True, text=True, timeout=120,
                               env=asan_preload.child_env())
            check_equal(p.returncode, 0, "verify=False: " + p.stderr)
            got, is_view = p.stdout.split()
            check_equal(bytes.fromhex(got), damaged[hlen:], "verify=False: the bytes as they are in the file")
            check_equal(is_view, "True", "verify=False: a view of the mapping")


def test_deflated_entries():
    """Deflated entries whose stream is intact but whose CRC-32 is wrong (patched in the local header and the
    directory): ZarrStore (inflated in Python), Archive (decoded by the core) and a compressed npz member all
    raise CRCError with both CRCs; zipfile agrees."""
    with TempDir() as d:
        arc = os.path.join(d, "def.zip")
        good = bytes(range(256)) * 40
        with zipfile.ZipFile(arc, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("ok", good)
            z.writestr("bad", good[::-1])
            z.writestr("b.npy", _npy_bytes(np.arange(500, dtype="<i8")))
        with open(arc, "rb") as f:
            raw = bytearray(f.read())
        wrong = {}
        with zipfile.ZipFile(arc) as z:
            infos = {i.filename: i for i in z.infolist()}
        for name in ("bad", "b.npy"):
            i = infos[name]
            wrong[name] = (i.CRC ^ 0x00010000, i.CRC)
            struct.pack_into("<I", raw, i.header_offset + 14, wrong[name][0])
            cd = central_record(raw, name)
            assert struct.unpack_from("<I", raw, cd + 16)[0] == i.CRC
            struct.pack_into("<I", raw, cd + 16, wrong[name][0])
        with open(arc, "wb") as f:
            f.write(raw)
        with zipfile.ZipFile(arc) as z:
            check_equal(z.read("ok"), good, "zipfile: ok")
            try:
                z.read("bad")
                raise AssertionError("zipfile read 'bad'")
            except zipfile.BadZipFile:
                pass
        exp, comp = wrong["bad"]
        with mmzip.ZarrStore(arc) as s:
            check_equal(bytes(s["ok"]), good, "ZarrStore: deflated ok")
            expect_crc_error(lambda: s["bad"], arc, "bad", exp, comp, "ZarrStore deflated")
        with mmzip.Archive(arc) as a:
            check_equal(bytes(a["ok"]), good, "Archive: deflated ok")
            expect_crc_error(lambda: a["bad"], arc, "bad", exp, comp, "Archive deflated")
        exp, comp = wrong["b.npy"]
        for verify in (True, False):  # compressed members are checked either way
            with mmzip.open(arc, verify=verify) as a:
                expect_crc_error(lambda: a["b"], arc, "b.npy", exp, comp, "npz deflated member")


def central_record(raw, name):
    """Offset of the central-directory record of `name` in the archive bytes `raw` (no ZIP64, no comment)."""
    eocd = raw.rfind(b"PK\x05\x06")
    count, = struct.unpack_from("<H", raw, eocd + 10)
    pos, = struct.unpack_from("<I", raw, eocd + 16)
    for _ in range(count):
        assert raw[pos:pos + 4] == b"PK\x01\x02"
        nlen, xlen, clen = struct.unpack_from("<HHH", raw, pos + 28)
        if raw[pos + 46:pos + 46 + nlen] == name.encode():
            return pos
        pos += 46 + nlen + xlen + clen
    raise AssertionError("no central record for %s" % name)


def _npy_bytes(arr):
    import io
    f = io.BytesIO()
    np.save(f, arr)
    return f.getvalue()


def test_hdf5_member_verify_option():
    """HDF5 members are read in part, in place: by default nothing checks their CRC (documented), so h5py
    reads the damaged value; h5py.File(..., driver="mmzip", verify=True) fails at the open naming the archive,
    the member and both CRCs, and reads an undamaged member exactly; unzip refuses the damaged archive too."""
    import h5py
    mmzip.register_h5py()
    with TempDir() as d:
        plain = os.path.join(d, "plain.h5")
        want = np.arange(10000, dtype="<f8") / 3
        with h5py.File(plain, "w") as f:
            offset = f.create_dataset("v", data=want).id.get_offset()  # contiguous: its bytes at `offset`
        arc = os.path.join(d, "h.zip")
        mmzip_cli("put", arc, "data.h5", plain)
        mmzip_cli("put", arc, "good.h5", plain)
        with h5py.File(arc, "r", driver="mmzip", member="data.h5", verify=True) as h:
            check_equal(h["v"][:].tobytes(), want.tobytes(), "verify=True, undamaged member")
        off, info = data_offset(arc, "data.h5")
        flip(arc, off + offset + 8 * 123 + 2, 0x10)
        damaged = file_bytes(arc, off, info.file_size)
        computed = zlib.crc32(damaged)
        unzip_refuses(arc, "data.h5")
        code = ("import sys, h5py, mmzip\n"
                "mmzip.register_h5py()\n"
                "with h5py.File(sys.argv[1], 'r', driver='mmzip', member='data.h5') as h:\n"
                "    sys.stdout.write(h['v'][:].tobytes().hex())\n")
        p = subprocess.run([PYTHON, "-c", code, arc], capture_output=True, text=True, timeout=120,
                           env=asan_preload.child_env())
        check_equal(p.returncode, 0, "default open in another process: " + p.stderr)
        check_equal(bytes.fromhex(p.stdout), damaged[offset:offset + want.nbytes],
                    "default (unchecked) read: the bytes as they are in the file")
        try:
            h5py.File(arc, "r", driver="mmzip", member="data.h5", verify=True)
            raise AssertionError("verify=True opened the damaged member")
        except OSError as e:
            msg = str(e)
            for part in (arc, "'data.h5'", "%08x" % info.CRC, "%08x" % computed, "CRC-32 mismatch"):
                assert part in msg, "%r not in %s" % (part, msg)
        with h5py.File(arc, "r", driver="mmzip", member="good.h5", verify=True) as h:
            check_equal(h["v"][:].tobytes(), want.tobytes(), "verify=True, the undamaged neighbour")
        try:
            h5py.File(arc, "r", driver="mmzip", member="data.h5", flags=4)
            raise AssertionError("an unknown driver flag was accepted")
        except mmzip.MmzipError as e:
            assert "flags=0x4" in str(e), e


def test_exception_pickles():
    """Dask sends a worker's exception back pickled: CRCError keeps its type and fields."""
    import pickle
    e = mmzip.CRCError(-8, "/x/a.zip: entry 'g/0': CRC-32 mismatch (directory says 0000abcd, data gives 12345678)",
                       None, "/x/a.zip")
    f = pickle.loads(pickle.dumps(e))
    check_equal((type(f), f.code, f.path, f.entry, f.expected, f.computed, str(f)),
                (mmzip.CRCError, -8, "/x/a.zip", "g/0", 0xabcd, 0x12345678, str(e)), "unpickled CRCError")


if __name__ == "__main__":
    main([test_zarr_store_from_directory_store, test_zarr_store_written_archive_and_archive_getitem,
          test_verified_once_per_entry_per_handle, test_npz_whole_arrays, test_deflated_entries,
          test_hdf5_member_verify_option, test_exception_pickles])
