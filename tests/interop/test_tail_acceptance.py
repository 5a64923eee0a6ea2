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

and what zipfile does when the file grows while it opens it (test_zipfile_size_then_tail): it takes the file's
size, then reads the end records relative to the end of the file, and computes where the end record is from
the size it took. A growth between the two, such as a relocation of the directory that keeps the old tail
(protocol.md §3.7), shifts every offset by the growth: zipfile reads the old directory, which the relocation
left intact exactly there, and fails on the first local header ("Bad magic number for file header"), or, where
the old directory has been written over, on the directory ("Bad magic number for central directory"). Grown
between its seek to the end record and the read of it, the read runs to the new end, zipfile searches it for
the last end record, looks for the ZIP64 records relative to the size it took, misses them, and takes the
plain end record's 0xFFFFFFFF fields ("Bad offset for central directory"). No order of writes closes this
window; only fewer growths make it rarer (reliability.md §3).
"""
import io
import os
import struct
import subprocess
import zipfile

from mmzip_testlib import BUILD, TempDir, check_equal, main, mmzip
import ziplayout

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


class GrowsAfterItsSize(io.BytesIO):
    """The file as zipfile sees it when a writer grows it from `before` to `after` bytes after zipfile's first
    `end_seeks` seeks relative to the end: 1, right after it took its size (seek to the end, tell); 2, after it
    also seeked to its end record, before the read of that record, which runs to the new end."""

    def __init__(self, after, before_size, end_seeks=1):
        super().__init__(after)
        self.before_size = before_size
        self.end_seeks = end_seeks

    def seek(self, offset, whence=0):
        if whence == 2 and self.end_seeks > 0:
            self.end_seeks -= 1
            return super().seek(self.before_size + offset)
        return super().seek(offset, whence)


def relocated(raw, at):
    """raw with its directory and end records copied to `at` (past its end, zeros before), as a relocation that
    keeps the old tail leaves it: the old directory and end records stay where they were."""
    t = ziplayout.end_records(raw)
    cd_off, cd_size = t["z64"]["cd_off"], t["z64"]["cd_size"]
    tail = bytearray(raw[cd_off:])
    struct.pack_into("<Q", tail, t["z64"]["pos"] - cd_off + 48, at)  # the ZIP64 end record's directory offset
    struct.pack_into("<Q", tail, t["locator"]["pos"] - cd_off + 8, at + cd_size)  # where that record is
    if t["eocd"]["cd_off"] != 0xFFFFFFFF:
        struct.pack_into("<I", tail, t["eocd"]["pos"] - cd_off + 16, at)
    return raw + bytes(at - len(raw)) + bytes(tail)


def test_zipfile_size_then_tail():
    with TempDir() as d:
        a = os.path.join(d, "a.zip")
        entries = {"k/a": b"a" * 100000, "k/b": b"b" * 1000, "k/c": b"c" * 10}
        for k, v in entries.items():
            mmzip("put", a, k, "-", input=v.decode())
        with open(a, "rb") as f:
            raw = f.read()
        grown = relocated(raw, (len(raw) + 4095) // 4096 * 4096 + 4096)
        # The relocated file alone, and the growth before zipfile takes the size: read whole.
        for what, f in [("the relocated file", io.BytesIO(grown)),
                        ("grown before zipfile took the size", GrowsAfterItsSize(grown, len(grown)))]:
            with zipfile.ZipFile(f) as z:
                check_equal({k: z.read(k) for k in z.namelist()}, entries, what)
        # Grown between the size and the tail: the old directory, read at offsets shifted by the growth.
        with zipfile.ZipFile(GrowsAfterItsSize(grown, len(raw))) as z:
            check_equal(sorted(z.namelist()), sorted(entries), "names zipfile lists from the old directory")
            try:
                z.read("k/c")
                raise AssertionError("zipfile read k/c with every offset shifted by the growth")
            except zipfile.BadZipFile as e:
                check_equal(str(e), "Bad magic number for file header", "zipfile's error")
        # The same, the old directory written over (a relocation that did not keep the tail, then a put).
        old_cd = ziplayout.end_records(raw)["z64"]["cd_off"]
        overwritten = grown[:old_cd] + b"x" * (len(raw) - old_cd) + grown[len(raw):]
        try:
            zipfile.ZipFile(GrowsAfterItsSize(overwritten, len(raw)))
            raise AssertionError("zipfile opened the archive with its directory read at a shifted offset")
        except zipfile.BadZipFile as e:
            check_equal(str(e), "Bad magic number for central directory", "zipfile's error")
        # Grown between the seek to the end record and its read: the read is not the 22 bytes of an end record,
        # so zipfile searches the tail it read for the last one (the new one, placed right), then looks for its
        # ZIP64 locator relative to the size it took (past the new end), finds none, and takes the plain end
        # record's fields, which a ZIP64 archive leaves at 0xFFFFFFFF.
        try:
            zipfile.ZipFile(GrowsAfterItsSize(grown, len(raw), end_seeks=2))
            raise AssertionError("zipfile opened the archive with its ZIP64 records missed")
        except zipfile.BadZipFile as e:
            check_equal(str(e), "Bad offset for central directory", "zipfile's error")


if __name__ == "__main__":
    main([test_tail_acceptance, test_zipfile_size_then_tail])
