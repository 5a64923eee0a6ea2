"""Read what zipfile reads: archives whose records are inconsistent in ways Python's zipfile reads past are
read by mmzip too, with a warning that names the wrong field (stderr of `mmzip ls` and `mmzip cat`,
`interop:` lines of `mmzip check`, mmzip_warnings in the library), and every entry's bytes equal zipfile's.
Where zipfile's reading would be a guess, the CRC-32 decides: an entry whose bytes do not match is refused,
by both, and mmzip's message names the field. Refused outright, naming the field: a directory size one byte
short or long of the records (zipfile refuses those too).

The cases: a stored entry whose directory compressed size is larger than its size; a local header whose
method disagrees with the directory (either way, first entry, middle entry, last entry), or its CRC-32, or its
sizes; end-record entry counts higher, lower, zero, wrapped without matching modulo 65,536
(test_foreign_anomalies.py, 70,000 entries); the last record's comment running past the directory; the end
record's comment length running past the end of the file."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import ctypes
import hashlib
import os
import struct
import warnings
import zipfile
import zlib

import mmzip
from mmzip_testlib import LIBDIR, MMZIP, TempDir, check_equal, main, mmzip as mmzip_cli, run
import zipbytes as zb
from test_hostile_archives import count_too_high, count_too_low, local_method_differs

P = b"payload " * 50


def stored_csize_larger():
    return zb.archive([zb.Entry("a.txt", P + b"EXTRA", usize=len(P), crc=zlib.crc32(P)),
                       zb.Entry("b.txt", b"bee")])[0]


def stored_csize_larger_crc_of_all():
    """The CRC is of all 405 bytes: the entry's first 400 are not what was recorded. Both refuse it."""
    return zb.archive([zb.Entry("a.txt", P + b"EXTRA", usize=len(P), crc=zlib.crc32(P + b"EXTRA")),
                       zb.Entry("b.txt", b"bee")])[0]


def patch_local_method(data, offset, method):
    b = bytearray(data)
    struct.pack_into("<H", b, offset + 8, method)
    return bytes(b)


def local_deflate_directory_stored():
    data, offs = zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee")])
    return patch_local_method(data, offs[0], 8)


def local_stored_directory_deflate():
    data, offs = zb.archive([zb.deflated("a.txt", P), zb.Entry("b.txt", b"bee")])
    return patch_local_method(data, offs[0], 0)


def last_local_method_differs():
    """Before: the physically last entry was taken for the torn tail of an interrupted writer and hidden."""
    data, offs = zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee " * 9)])
    return patch_local_method(data, offs[1], 8)


def local_method_differs_wrong_bytes():
    """The local header says deflate and the data is deflated; the directory says stored, with the CRC of the
    inflated payload. zipfile goes by the directory and fails the CRC: so must mmzip, naming the method."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(P) + c.flush()
    data, offs = zb.archive([zb.Entry("a.txt", body, crc=zlib.crc32(P)), zb.Entry("b.txt", b"bee")])
    return patch_local_method(data, offs[0], 8)


def local_crc_differs():
    """The local header's CRC-32 is not the directory's: zipfile goes by the directory, and checks it."""
    data, offs = zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee")])
    b = bytearray(data)
    struct.pack_into("<I", b, offs[0] + 14, zlib.crc32(P) ^ 0x5A5A)
    return bytes(b)


def local_sizes_differ():
    """The local header's sizes are one more than the directory's (the data is the directory's size)."""
    data, offs = zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee")])
    b = bytearray(data)
    struct.pack_into("<II", b, offs[0] + 18, len(P) + 1, len(P) + 1)
    return bytes(b)


def end_comment_past_eof():
    """The end record declares a 5-byte archive comment that the file does not hold."""
    data = bytearray(zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee")])[0])
    struct.pack_into("<H", data, len(data) - 2, 5)
    return bytes(data)


def count_zero():
    return zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee"), zb.Entry("c.txt", b"sea")], count=0)[0]


def last_comment_past_directory():
    data, _ = zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee")])
    last = data.rfind(b"PK\x01\x02")
    b = bytearray(data)
    struct.pack_into("<H", b, last + 32, 10)
    return bytes(b)


def directory_size(delta):
    data, _ = zb.archive([zb.Entry("a.txt", P), zb.Entry("b.txt", b"bee"), zb.Entry("c.txt", b"sea")])
    b = bytearray(data)
    eocd = len(b) - 22
    struct.pack_into("<I", b, eocd + 12, struct.unpack_from("<I", b, eocd + 12)[0] + delta)
    return bytes(b)


# (case, words the warning must hold, {entry: words of the refusal} for entries zipfile cannot read either)
READABLE = [
    (stored_csize_larger, ["entry 'a.txt'", "compressed size (405) larger than its size (400)"], {}),
    (stored_csize_larger_crc_of_all, ["entry 'a.txt'", "compressed size (405)"],
     {"a.txt": ["CRC-32 mismatch", "compressed size (405) larger than its size (400)"]}),
    (local_deflate_directory_stored, ["entry 'a.txt'", "local header says compression method 8",
                                      "directory record 0"], {}),
    (local_stored_directory_deflate, ["entry 'a.txt'", "local header says compression method 0",
                                      "directory record 8"], {}),
    (local_method_differs, ["entry 'm.txt'", "local header says compression method 8"], {}),
    (last_local_method_differs, ["entry 'b.txt'", "local header says compression method 8"], {}),
    (local_method_differs_wrong_bytes, ["entry 'a.txt'", "local header says compression method 8"],
     {"a.txt": ["CRC-32 mismatch", "local header says compression method 8, its directory record 0"]}),
    (local_crc_differs, ["entry 'a.txt'", "local header gives CRC-32", "its directory record"], {}),
    (local_sizes_differ, ["entry 'a.txt'", "compressed size of 401 bytes, its directory record 400",
                          "size of 401 bytes"], {}),
    (end_comment_past_eof, ["end record's comment length (5) runs past the end of the file"], {}),
    (count_too_high, ["end record's entry count (5)", "(2,"], {}),
    (count_too_low, ["end record's entry count (1)", "(2,"], {}),
    (count_zero, ["end record's entry count (0)", "(3,"], {}),
    (last_comment_past_directory, ["record 1's comment length runs 10 bytes past the directory"], {}),
]

REFUSED = [
    (lambda: directory_size(-1), ["end record: central directory size", "is 1 byte short of the records it holds",
                                  "'c.tx'"]),
    (lambda: directory_size(+1), ["end record", "central directory offset", "plus size", "runs past"]),
]


def library_warnings(path):
    """The messages of mmzip_warnings() on a read-only handle (the C API, through ctypes)."""
    L = ctypes.CDLL(os.path.join(LIBDIR, "libmmzip.so") if LIBDIR else "libmmzip.so")
    L.mmzip_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    L.mmzip_close.argtypes = [ctypes.c_void_p]
    fn_t = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)
    L.mmzip_warnings.argtypes = [ctypes.c_void_p, fn_t, ctypes.c_void_p]
    got = []
    cb = fn_t(lambda msg, ctx: got.append(msg.decode()))
    h = ctypes.c_void_p()
    check_equal(L.mmzip_open(path.encode(), b"r", None, ctypes.byref(h)), 0, "mmzip_open(%s)" % path)
    check_equal(L.mmzip_warnings(h, cb, None), 0, "mmzip_warnings")
    L.mmzip_close(h)
    return got


def python_warnings(path):
    """{route: [messages of the mmzip.ArchiveWarning raised at the open]} for Archive, ZarrStore and open()."""
    out = {}
    for route, opener in (("Archive", lambda: mmzip.Archive(path)), ("ZarrStore", lambda: mmzip.ZarrStore(path, "r")),
                          ("open", lambda: mmzip.open(path))):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            handle = opener()
            handle.close()
        out[route] = [str(w.message) for w in caught if issubclass(w.category, mmzip.ArchiveWarning)]
        others = [w for w in caught if not issubclass(w.category, mmzip.ArchiveWarning)]
        assert not others, (route, [str(w.message) for w in others])
    return out


def zipfile_reads(path):
    """{name: bytes or None (zipfile refuses it)}, in directory order."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            try:
                out[info.filename] = z.read(info)
            except zipfile.BadZipFile:
                out[info.filename] = None
    return out


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def readable(d, case, words, refused):
    what = case.__name__
    path = os.path.join(d, what + ".zip")
    with open(path, "wb") as f:
        f.write(case())
    want = zipfile_reads(path)
    check_equal(sorted(k for k, v in want.items() if v is None), sorted(refused), "%s: entries zipfile refuses" % what)
    p = mmzip_cli("ls", "-1", path)
    check_equal(sorted(p.stdout.split()), sorted(want), "%s: mmzip ls against zipfile's names" % what)
    for w in ["warning:", path] + words:
        assert w in p.stderr, "%s: ls warning lacks %r:\n%s" % (what, w, p.stderr)
    lw = library_warnings(path)
    assert lw and all(m.startswith("warning: ") for m in lw), (what, lw)
    for w in [path] + words:
        assert any(w in m for m in lw), "%s: mmzip_warnings lacks %r: %r" % (what, w, lw)
    # Python says the same at the open, on every route, as an ArchiveWarning (a UserWarning).
    for route, got in python_warnings(path).items():
        check_equal(got, [m[len("warning: "):] for m in lw], "%s: ArchiveWarnings of mmzip.%s" % (what, route))
    for name, data in want.items():
        c = run([MMZIP, "cat", path, name], check=False, input=b"")
        if data is None:
            check_equal(c.returncode, 1, "%s: exit status of mmzip cat %s" % (what, name))
            check_equal(c.stdout, b"", "%s: bytes written by a refused cat" % what)
            for w in [path, name] + refused[name]:
                assert w in c.stderr.decode(), "%s: refusal lacks %r:\n%s" % (what, w, c.stderr.decode())
        else:
            check_equal(c.returncode, 0, "%s: mmzip cat %s: %s" % (what, name, c.stderr))
            check_equal(c.stdout, data, "%s: mmzip cat %s against zipfile" % (what, name))
    with mmzip.Archive(path, verify=True) as a:
        for name, data in want.items():
            if data is None:
                try:
                    a[name]
                    raise AssertionError("%s: Archive read %r" % (what, name))
                except mmzip.MmzipError as e:
                    assert "CRC-32 mismatch" in str(e), (what, str(e))
            else:
                check_equal(bytes(a[name]), data, "%s: mmzip.Archive[%r] against zipfile" % (what, name))
    c = mmzip_cli("check", path, check=False)
    for w in ["interop:"] + words:
        assert w in c.stderr, "%s: check lacks %r:\n%s" % (what, w, c.stderr)
    assert "valid for every ZIP reader: no" in c.stdout, (what, c.stdout)
    check_equal(c.returncode, 1 if refused else 0, "%s: exit status of mmzip check" % what)
    if not refused:
        assert "valid for mmzip: yes" in c.stdout, (what, c.stdout)
        # A foreign archive is kept byte for byte by recover.
        h0 = sha(path)
        r = mmzip_cli("recover", path)
        assert "the archive was not changed" in r.stdout, (what, r.stdout)
        check_equal(sha(path), h0, "%s: sha-256 after recover" % what)


def test_read_what_zipfile_reads():
    with TempDir() as d:
        for case, words, refused in READABLE:
            print("   ", case.__name__, flush=True)
            readable(d, case, words, refused)


def test_refused_naming_the_field():
    with TempDir() as d:
        for i, (case, words) in enumerate(REFUSED):
            path = os.path.join(d, "refused%d.zip" % i)
            with open(path, "wb") as f:
                f.write(case())
            try:
                zipfile.ZipFile(path).namelist()
                raise AssertionError("zipfile read %s" % path)
            except zipfile.BadZipFile:
                pass
            for args in (["ls", path], ["check", path]):
                p = mmzip_cli(*args, check=False)
                check_equal(p.returncode, 1, "exit status of mmzip %s" % args[0])
                for w in [path] + words:
                    assert w in p.stderr, "mmzip %s lacks %r:\n%s" % (args[0], w, p.stderr)
            print("   ", p.stderr.strip())


def test_no_warning_on_consistent_archives():
    with TempDir() as d:
        path = os.path.join(d, "clean.zip")
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("a.txt", P)
            z.writestr("b.txt", P, compress_type=zipfile.ZIP_DEFLATED)
        check_equal(library_warnings(path), [], "mmzip_warnings on a consistent archive")
        check_equal(python_warnings(path), {"Archive": [], "ZarrStore": [], "open": []},
                    "ArchiveWarnings on a consistent archive")
        p = mmzip_cli("ls", path)
        check_equal(p.stderr, "", "mmzip ls stderr on a consistent archive")


if __name__ == "__main__":
    main([test_read_what_zipfile_reads, test_refused_naming_the_field, test_no_warning_on_consistent_archives])
