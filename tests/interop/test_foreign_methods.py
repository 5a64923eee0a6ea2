"""Foreign entries compressed with bzip2 (12), LZMA (14), xz (95) and zstd (93) decode, CRC-checked, through
`mmzip cat`, mmzip.Archive (mmzip_get), mmzip_verify and `mmzip check`.

Writers, all independent of mmzip: Python zipfile (ZIP_BZIP2; ZIP_LZMA, which writes the 4-byte LZMA header,
the properties and an end-of-stream marker), 7-Zip (`7z a -tzip -mm=BZip2|LZMA|XZ`) and libzip (bzip2). No
program in Debian 12 writes zstd (93) into a ZIP archive (7-Zip's ZIP writer has no zstd, libzip 1.7.3 and
Python 3.11's zipfile neither), so the zstd fixtures are built here per APPNOTE 4.4.5: a plain local header and
directory record with method 93, and the data compressed by Debian's libzstd (one frame, and two frames
concatenated).

Damage is reported naming the entry and the field: a CRC-32 that does not match (MMZIP_ECRC), an uncompressed
size the stream does not reach or exceeds, a corrupt stream."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import ctypes
import os
import random
import struct
import zipfile
import zlib

import mmzip
from mmzip_testlib import BUILD, TempDir, check_equal, ls_entries, main, mmzip as mmzip_cli, run
import zipbytes as zb
import ziplayout as zl

HELPERS = os.path.join(BUILD, "tests", "interop") if BUILD else os.path.dirname(os.path.abspath(__file__))
LIBZIP_WRITE = os.path.join(HELPERS, "libzip_write")

rng = random.Random(12)
CONTENTS = {"numbers.txt": "".join("%d\n" % i for i in range(20000)).encode(),
            "noise.bin": rng.randbytes(30000),
            "empty": b""}


def zstd_compress(data):
    lib = ctypes.CDLL("libzstd.so.1")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    lib.ZSTD_isError.argtypes = [ctypes.c_size_t]
    cap = lib.ZSTD_compressBound(len(data))
    buf = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(buf, cap, data, len(data), 3)
    assert not lib.ZSTD_isError(n), "ZSTD_compress failed"
    return buf.raw[:n]


def zstd_entry(name, payload, frames=1):
    half = len(payload) // 2
    body = zstd_compress(payload) if frames == 1 else zstd_compress(payload[:half]) + zstd_compress(payload[half:])
    return zb.Entry(name, body, method=93, usize=len(payload), crc=zlib.crc32(payload))


def write_sources(d):
    for k, v in CONTENTS.items():
        with open(os.path.join(d, k), "wb") as f:
            f.write(v)


def fixtures(d):
    """(label, path, method number) for every writer and method."""
    write_sources(d)
    out = []
    for label, ctype, number in (("zipfile bzip2", zipfile.ZIP_BZIP2, 12), ("zipfile lzma", zipfile.ZIP_LZMA, 14)):
        path = os.path.join(d, label.replace(" ", "_") + ".zip")
        with zipfile.ZipFile(path, "w", ctype) as z:
            for k, v in CONTENTS.items():
                z.writestr(k, v)
        out.append((label, path, number))
    for method, number in (("BZip2", 12), ("LZMA", 14), ("XZ", 95)):
        path = os.path.join(d, "7z_%s.zip" % method)
        run(["7z", "a", "-tzip", "-mm=" + method, path] + list(CONTENTS), cwd=d)
        out.append(("7-Zip " + method, path, number))
    path = os.path.join(d, "libzip_bzip2.zip")
    args = []
    for k in CONTENTS:
        args += [k, os.path.join(d, k)]
    run([LIBZIP_WRITE, path, "12"] + args)
    out.append(("libzip bzip2", path, 12))
    for frames in (1, 2):
        path = os.path.join(d, "zstd_%d_frames.zip" % frames)
        data, _ = zb.archive([zstd_entry(k, v, frames) for k, v in CONTENTS.items()])
        with open(path, "wb") as f:
            f.write(data)
        out.append(("zstd, %d frame%s (built per APPNOTE)" % (frames, "s" if frames > 1 else ""), path, 93))
    return out


def test_methods_decode():
    with TempDir() as d:
        for label, path, number in fixtures(d):
            listed = ls_entries(path)
            for k, v in CONTENTS.items():
                check_equal(listed[k]["size"], len(v), "%s: size of %s" % (label, k))
            for k, v in CONTENTS.items():
                p = run([os.environ.get("MMZIP_BIN", "mmzip"), "cat", path, k], check=False, input=b"")
                check_equal(p.returncode, 0, "%s: mmzip cat %s (%s)" % (label, k, p.stderr))
                check_equal(p.stdout, v, "%s: bytes of %s through mmzip cat" % (label, k))
            with mmzip.Archive(path) as a:
                for k, v in CONTENTS.items():
                    check_equal(bytes(a[k]), v, "%s: bytes of %s through mmzip_get" % (label, k))
                    a.verify(k)
            p = mmzip_cli("check", path)
            assert "valid for mmzip: yes" in p.stdout, (label, p.stdout, p.stderr)
            # The compressible entry really uses the method under test (zipfile agrees; 7-Zip may store noise).
            with zipfile.ZipFile(path) as z:
                check_equal(z.getinfo("numbers.txt").compress_type, number, "%s: method zipfile sees" % label)
            print("    %-36s method %2d: %d entries decoded and CRC-checked" % (label, number, len(CONTENTS)))


def patched(data, name, field, value):
    """data with one field of `name`'s directory record (and local header, so they agree) replaced."""
    _, recs = zl.central_directory(data)
    r = next(r for r in recs if r["name"] == name.encode())
    b = bytearray(data)
    if field == "crc":
        struct.pack_into("<I", b, r["pos"] + 16, value)
        struct.pack_into("<I", b, r["lfh"] + 14, value)
    elif field == "usize":
        struct.pack_into("<I", b, r["pos"] + 24, value)
        struct.pack_into("<I", b, r["lfh"] + 22, value)
    elif field == "stream":
        lh = zl.local_header(data, r["lfh"])
        b[lh["data_offset"] + r["csize"] // 2] ^= 0xFF
    return bytes(b)


def test_damage_is_named():
    name, payload = "numbers.txt", CONTENTS["numbers.txt"]
    with TempDir() as d:
        for label, path, number in fixtures(d):
            with open(path, "rb") as f:
                data = f.read()
            _, recs = zl.central_directory(data)
            r = next(r for r in recs if r["name"] == name.encode())
            for field, value, words in (("crc", r["crc"] ^ 0x1, ["CRC-32 mismatch"]),
                                        ("usize", len(payload) + 1, ["fewer than", "uncompressed size"]),
                                        ("usize", len(payload) - 1, ["more than", "uncompressed size"]),
                                        ("stream", None, [])):
                what = "%s, %s %s" % (label, field, value)
                bad = os.path.join(d, "bad.zip")
                with open(bad, "wb") as f:
                    f.write(patched(data, name, field, value))
                p = mmzip_cli("cat", bad, name, check=False)
                check_equal(p.returncode, 1, "%s: mmzip cat exit status" % what)
                check_equal(p.stdout, "", "%s: nothing written before the check" % what)
                for w in [bad, name] + words:
                    assert w in p.stderr, "%s: message lacks %r: %s" % (what, w, p.stderr)
                with mmzip.Archive(bad) as a:
                    for fn in (lambda: a[name], lambda: a.verify(name)):
                        try:
                            fn()
                            raise AssertionError("%s: read a damaged entry" % what)
                        except mmzip.MmzipError as e:
                            assert e.code in (-6, -8), (what, e.code, str(e))
                            if field == "crc":
                                check_equal(e.code, -8, "%s: MMZIP_ECRC" % what)
                            assert name in str(e), (what, str(e))
                    check_equal(bytes(a["noise.bin"]), CONTENTS["noise.bin"], "%s: intact neighbour" % what)
                p = mmzip_cli("check", bad, check=False)
                check_equal(p.returncode, 1, "%s: mmzip check exit status" % what)
                assert name in p.stderr and "error:" in p.stderr, (what, p.stderr)


def test_unsupported_methods_are_named():
    """Deflate64 and PPMd (from 7-Zip) still fail with an error naming the method and the entry."""
    text = CONTENTS["numbers.txt"]
    with TempDir() as d:
        write_sources(d)
        for method, number, label in (("Deflate64", 9, "deflate64"), ("PPMd", 98, "ppmd")):
            path = os.path.join(d, "%s.zip" % method)
            run(["7z", "a", "-tzip", "-mm=" + method, path, "numbers.txt"], cwd=d)
            check_equal(ls_entries(path)["numbers.txt"]["size"], len(text), "size listed for %s" % method)
            p = mmzip_cli("cat", path, "numbers.txt", check=False)
            check_equal(p.returncode, 1, "mmzip cat exit status for %s" % method)
            # The readable methods come from decode.c's one table of methods.
            for part in ("numbers.txt", "method %d" % number, label, path,
                         "mmzip reads stored (0), deflate (8), bzip2 (12), lzma (14), zstd (93), xz (95)"):
                assert part in p.stderr, "error for %s lacks %r: %s" % (method, part, p.stderr)
            p = mmzip_cli("check", path, check=False)
            check_equal(p.returncode, 1, "mmzip check exit status for %s" % method)
            assert "method %d" % number in p.stderr and "numbers.txt" in p.stderr, p.stderr
            with mmzip.Archive(path) as a:
                try:
                    a["numbers.txt"]
                    raise AssertionError("Archive read a %s entry" % method)
                except mmzip.MmzipError as e:
                    check_equal(e.code, -7, "MMZIP_EUNSUPPORTED for %s" % method)


if __name__ == "__main__":
    main([test_methods_decode, test_damage_is_named, test_unsupported_methods_are_named])
