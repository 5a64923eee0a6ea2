"""What each third-party reader accepts at the end of an archive: the facts docs/protocol.md §3.2 builds its
argument on (why a relocation of the directory is a window for readers that take no lock, and why no order
of writes closes it on Linux). If a reader changes, this test says which fact no longer holds.

An archive written by mmzip (ZIP64 end records, 3 entries) is read by Python's zipfile, zarr-python's
ZipStore, `unzip -tqq` and libzip with ZIP_CHECKCONS (libzip_verify), as written and altered:

  bytes after the end record:   zipfile and zarr accept up to 64 KiB (not 65,600 bytes), unzip at least
                                70,000 bytes (not 200,000), libzip none
  a declared comment covering exactly the bytes after it: everyone accepts (up to 65,535)
  a declared comment longer than what follows: zipfile, zarr and unzip accept, libzip refuses
  bytes between the directory and its end records: everyone refuses
"""
import os
import struct
import subprocess
import zipfile

from mmzip_testlib import BUILD, TempDir, check_equal, main, mmzip

LIBZIP_VERIFY = os.path.join(BUILD, "tests", "interop", "libzip_verify")
ENTRIES = {"k/a": b"a" * 5, "k/b": b"b" * 1005, "k/c": b"c" * 2005}


def readers(path):
    """{reader: True if it lists and reads every entry with the right bytes}."""
    got = {}
    try:
        with zipfile.ZipFile(path) as z:
            got["zipfile"] = sorted(z.namelist()) == sorted(ENTRIES) and all(z.read(k) == v for k, v in ENTRIES.items())
    except Exception:
        got["zipfile"] = False
    import zarr.storage
    try:
        s = zarr.storage.ZipStore(path, mode="r")
        try:
            got["zarr"] = sorted(s.keys()) == sorted(ENTRIES) and all(bytes(s[k]) == v for k, v in ENTRIES.items())
        finally:
            s.close()
    except Exception:
        got["zarr"] = False
    got["unzip"] = subprocess.run(["unzip", "-tqq", path], capture_output=True).returncode == 0
    got["libzip"] = subprocess.run([LIBZIP_VERIFY, path, "-"], capture_output=True).returncode == 0
    return got


def with_comment_length(raw, n):
    e = raw.rfind(b"PK\x05\x06")
    return raw[:e + 20] + struct.pack("<H", n) + raw[e + 22:]


def test_tail_acceptance():
    with TempDir() as d:
        a = os.path.join(d, "a.zip")
        for k, v in ENTRIES.items():
            mmzip("put", a, k, "-", input=v.decode())
        with open(a, "rb") as f:
            raw = f.read()
        assert raw.rfind(b"PK\x06\x06") > 0, "mmzip wrote no ZIP64 end record"
        t = os.path.join(d, "t.zip")
        everyone = {"zipfile": True, "zarr": True, "unzip": True, "libzip": True}
        cases = [
            ("as written", raw, everyone),
            ("1 zero byte after the end record", raw + bytes(1),
             {"zipfile": True, "zarr": True, "unzip": True, "libzip": False}),
            ("65,536 zero bytes after the end record", raw + bytes(65536),
             {"zipfile": True, "zarr": True, "unzip": True, "libzip": False}),
            ("65,600 zero bytes after the end record", raw + bytes(65600),
             {"zipfile": False, "zarr": False, "unzip": True, "libzip": False}),
            ("70,000 zero bytes after the end record", raw + bytes(70000),
             {"zipfile": False, "zarr": False, "unzip": True, "libzip": False}),
            ("200,000 zero bytes after the end record", raw + bytes(200000),
             {"zipfile": False, "zarr": False, "unzip": False, "libzip": False}),
            ("a 4,096-byte comment covering what follows", with_comment_length(raw, 4096) + bytes(4096), everyone),
            ("a 65,535-byte comment covering what follows", with_comment_length(raw, 65535) + bytes(65535),
             everyone),
            ("a 4,096-byte comment with 100 bytes after the end record",
             with_comment_length(raw, 4096) + bytes(100),
             {"zipfile": True, "zarr": True, "unzip": True, "libzip": False}),
        ]
        z64 = raw.rfind(b"PK\x06\x06")
        cases.append(("100 zero bytes between the directory and its end records", raw[:z64] + bytes(100) + raw[z64:],
                      {"zipfile": False, "zarr": False, "unzip": False, "libzip": False}))
        for what, data, want in cases:
            with open(t, "wb") as f:
                f.write(data)
            got = readers(t)
            print("%-60s %s" % (what, " ".join("%s=%s" % (k, "yes" if v else "no") for k, v in got.items())))
            check_equal(got, want, "readers that accept the archive with %s" % what)


if __name__ == "__main__":
    main([test_tail_acceptance])
