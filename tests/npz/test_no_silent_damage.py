import os, sys  # noqa: E401
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import asan_preload  # noqa: E402,F401
"""Two ways a wrong value used to pass with no error, both found by trying the package as a new user would:

- Damage laundered by an edit. A byte flipped in an .npz member, then `mmzip.open(p, "r+").edit(name)` and a
  close with nothing written: the close's commit recomputed the member's CRC over the damaged bytes, so
  `mmzip check`, numpy.load and zipfile all accepted the wrong value from then on. An edit now checks the CRC
  before the first view (the core's mapped mmzip_edit_begin), whatever `verify` says, and the damage stays visible.
- Names holding a NUL byte. The library takes C strings, so `a["a\\0zzz"] = ...` wrote (replaced!) entry
  "a", and savez of "x\\0y" and "x" gave two members numpy listed as ['x', 'x']. Every Python route now
  refuses such a name before anything is written."""
import hashlib  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import zipfile  # noqa: E402

import numpy as np  # noqa: E402

import mmzip  # noqa: E402

MMZIP = os.environ["MMZIP_BIN"]


def digest(p):
    with open(p, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def flip(p, member, at):
    with zipfile.ZipFile(p) as z:
        info = z.getinfo(member)
    with open(p, "r+b") as f:
        f.seek(info.header_offset + 26)
        n, e = struct.unpack("<HH", f.read(4))
        f.seek(info.header_offset + 30 + n + e + at)
        b = f.read(1)
        f.seek(-1, 1)
        f.write(bytes([b[0] ^ 0xFF]))
    return info.CRC


def still_refused(p, member, crc):
    """Every reader still sees the damage: mmzip check, numpy.load, zipfile; the directory's CRC unchanged."""
    c = subprocess.run([MMZIP, "check", p], capture_output=True, text=True)
    assert c.returncode != 0 and "entry '%s': CRC-32 mismatch" % member in c.stdout + c.stderr, c.stdout + c.stderr
    try:
        np.load(p)[member[:-4]]
        raise AssertionError("numpy.load read the damaged %s" % member)
    except zipfile.BadZipFile:
        pass
    with zipfile.ZipFile(p) as z:
        assert z.testzip() == member and z.getinfo(member).CRC == crc


def test_edit_does_not_launder(d):
    for verify in (True, False):
        p = os.path.join(d, "damaged-%s.npz" % verify)
        np.savez(p, x=np.arange(1000.0), y=np.arange(3))
        crc = flip(p, "x.npy", 500)
        before = digest(p)
        with mmzip.open(p, "r+", verify=verify) as z:
            try:
                z.edit("x")
                raise AssertionError("edit() handed out a view of a damaged member (verify=%s)" % verify)
            except mmzip.CRCError as e:
                assert e.entry == "x.npy" and e.expected == crc, (e.entry, e.expected, crc)
            y = z.edit("y")  # an undamaged member still can be edited
            y[:] = [7, 8, 9]
        still_refused(p, "x.npy", crc)
        np.testing.assert_array_equal(np.load(p)["y"], [7, 8, 9])
        assert digest(p) != before  # y's edit was published; x's bytes and CRC were not touched
        with zipfile.ZipFile(p) as z, open(p, "rb") as f:
            info = z.getinfo("x.npy")
            f.seek(info.header_offset)
            assert f.read(4) in (b"PK\x03\x04", b"PK\x05\x06")


def test_nul_names_refused(d):
    p = os.path.join(d, "names.zip")
    with mmzip.Archive(p, "w") as a:
        a["ab"] = b"first"
        a["a"] = b"kept"
        for bad in ("a\0zzz", b"a\0zzz", "ab\0"):
            try:
                a[bad] = b"second"
                raise AssertionError("Archive took the name %r" % (bad,))
            except ValueError as e:
                assert "NUL" in str(e), e
    with zipfile.ZipFile(p) as z:
        assert sorted(z.namelist()) == ["a", "ab"] and z.read("a") == b"kept", z.namelist()

    q = os.path.join(d, "nul.npz")
    for target_exists in (False, True):
        if target_exists:
            np.savez(q, good=np.arange(4))
        before = digest(q) if target_exists else None
        try:
            mmzip.savez(q, **{"x\0y": np.arange(3), "x": np.arange(2)})
            raise AssertionError("savez took a NUL name")
        except ValueError as e:
            assert "NUL" in str(e) and "nothing was written" in str(e), e
        assert (digest(q) if os.path.exists(q) else None) == before

    with mmzip.open(q, "a") as z:
        try:
            z["x\0y"] = np.arange(3)
            raise AssertionError("mmzip.open took a NUL name")
        except ValueError as e:
            assert "NUL" in str(e), e
    assert sorted(np.load(q).files) == ["good"], np.load(q).files

    s = os.path.join(d, "store.zip")
    with mmzip.ZarrStore(s, mode="w") as st:
        st["k"] = b"kept"
        for op in ("set", "get", "del"):
            try:
                if op == "set":
                    st["k\0x"] = b"other"
                elif op == "get":
                    st["k\0"]
                else:
                    del st["k\0"]
                raise AssertionError("ZarrStore %s took a NUL key" % op)
            except KeyError as e:
                assert "NUL" in str(e), e
    with zipfile.ZipFile(s) as z:
        assert z.namelist() == ["k"] and z.read("k") == b"kept", z.namelist()


def test_every_array_deleted(d):
    """Deleting every array leaves the empty ZIP numpy.savez() of nothing writes: unzip and 7-Zip refuse an
    archive of no entries with (dead) bytes before its end record."""
    for writer in (np.savez, mmzip.savez):
        p = os.path.join(d, "emptied-%s.npz" % writer.__module__.split(".")[0])
        writer(p, a=np.arange(10), b=np.arange(5))
        with mmzip.open(p, "a") as z:
            del z["a"]
            del z["b"]
        empty = os.path.join(d, "reference.npz")
        np.savez(empty)
        with open(p, "rb") as f, open(empty, "rb") as g:
            assert f.read() == g.read(), "not the 22-byte empty ZIP"
        assert np.load(p).files == []
        with zipfile.ZipFile(p) as z:
            assert z.namelist() == [] and z.testzip() is None
        u = subprocess.run(["unzip", "-t", p], capture_output=True, text=True)
        assert "zipfile is empty" in u.stdout + u.stderr, u.stdout + u.stderr  # unzip's word for it, status 1
        s = subprocess.run(["7z", "t", p], capture_output=True, text=True)
        assert s.returncode == 0 and "Everything is Ok" in s.stdout, s.stdout + s.stderr
        c = subprocess.run([MMZIP, "check", p], capture_output=True, text=True)
        assert c.returncode == 0 and "valid for every ZIP reader: yes" in c.stdout, c.stdout + c.stderr


with tempfile.TemporaryDirectory() as d:
    for t in (test_edit_does_not_launder, test_nul_names_refused, test_every_array_deleted):
        print("--", t.__name__)
        t(d)
print("all checks passed")
