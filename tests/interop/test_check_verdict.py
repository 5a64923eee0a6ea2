"""`mmzip check` tells the truth about other readers: its verdict "valid for every ZIP reader" is compared with
what Info-ZIP `unzip -t`, `7z t`, Python zipfile (testzip and a read of every entry) and libzip (ZIP_CHECKCONS,
every entry read) say of every archive here: written by mmzip (empty, one entry, many, after an in-place edit,
after a replace and a removal of the first entry, whose first bytes are then "PK\\5\\6"), by zipfile, Info-ZIP
zip, 7-Zip and libzip, prefixed (a stub before the first local header, offsets adjusted or not, a ZIP in an
archive comment), empty (an end record alone), and the anomalous and hostile archives of the interop suite.

For each archive the readers that object (refuse it, or warn: 7-Zip's "Warnings", unzip's status 1) must be
exactly those the verdict names: "valid for every ZIP reader: yes" when none does, "no: R1, R2 object ..."
otherwise. `test_check_verdict.py --matrix DIR` prints the table (DIR keeps the archives)."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import ctypes
import os
import re
import struct
import sys
import lzma
import zipfile
import zlib

from mmzip_testlib import BUILD, LIBDIR, MMZIP, TempDir, main, mmzip, run
import zipbytes as zb
import test_foreign_anomalies as fa
import test_hostile_archives as ha
import test_zipfile_tolerance as zt

HELPERS = os.path.join(BUILD, "tests", "interop") if BUILD else os.path.dirname(os.path.abspath(__file__))
LIBZIP_VERIFY = os.path.join(HELPERS, "libzip_verify")
READERS = ["zipfile", "unzip", "7-Zip", "libzip"]
STUB = b"#!/bin/sh\nexit 0\n" + bytes(range(200))


def lib():
    h = ctypes.CDLL(os.path.join(LIBDIR, "libmmzip.so") if LIBDIR else "libmmzip.so")
    h.mmzip_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    h.mmzip_close.argtypes = [ctypes.c_void_p]
    h.mmzip_put.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint32]
    h.mmzip_remove.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    h.mmzip_edit_begin.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)]
    h.mmzip_edit_map.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_uint64)]
    h.mmzip_edit_end.argtypes = [ctypes.c_void_p]
    h.mmzip_last_error.restype = ctypes.c_char_p
    return h


def mm(path, mode, *ops):
    """Opens path with mmzip_open(mode), applies ops ((put, key, bytes), (remove, key), (inplace, key, off,
    bytes)), closes."""
    L = lib()
    h = ctypes.c_void_p()

    def ok(st, what):
        assert st == 0, "%s: %s" % (what, L.mmzip_last_error().decode())
    ok(L.mmzip_open(path.encode(), mode.encode(), None, ctypes.byref(h)), "open")
    for op in ops:
        if op[0] == "put":
            ok(L.mmzip_put(h, op[1].encode(), op[2], len(op[2]), 0), "put")
        elif op[0] == "remove":
            ok(L.mmzip_remove(h, op[1].encode()), "remove")
        elif op[0] == "inplace":
            e, p, n = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_uint64()
            ok(L.mmzip_edit_begin(h, op[1].encode(), 1, ctypes.byref(e)), "edit_begin (MMZIP_EDIT_MAP)")
            ok(L.mmzip_edit_map(e, ctypes.byref(p), ctypes.byref(n), None), "edit_map")
            ctypes.memmove(p.value + op[2], op[3], len(op[3]))
            ok(L.mmzip_edit_end(e), "edit_end")
    ok(L.mmzip_close(h), "close")


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def build(d):
    """[(label, path)] of every archive compared."""
    out = []

    def add(label, path):
        out.append((label, path))

    def p(name):
        return os.path.join(d, name)
    # Written by mmzip.
    mm(p("mm_empty.zip"), "w+")
    add("mmzip: empty", p("mm_empty.zip"))
    mm(p("mm_one.zip"), "w+", ("put", "a.txt", b"alpha\n"))
    add("mmzip: one entry", p("mm_one.zip"))
    mm(p("mm_many.zip"), "w+", *[("put", "k/%03d" % i, b"v%d" % i * 50) for i in range(300)])
    add("mmzip: 300 entries", p("mm_many.zip"))
    mm(p("mm_edit.zip"), "w+", ("put", "a.bin", bytes(4096)), ("put", "b.txt", b"bee"))
    mm(p("mm_edit.zip"), "r+", ("inplace", "a.bin", 100, b"edited in place"))
    add("mmzip: after an in-place edit", p("mm_edit.zip"))
    mm(p("mm_replace_first.zip"), "w+", ("put", "a.txt", b"first"), ("put", "b.txt", b"second"))
    mm(p("mm_replace_first.zip"), "r+", ("put", "a.txt", b"first, replaced"))
    add("mmzip: first entry replaced (PK\\5\\6 at 0)", p("mm_replace_first.zip"))
    mm(p("mm_remove_first.zip"), "w+", ("put", "a.txt", b"first"), ("put", "b.txt", b"second"))
    mm(p("mm_remove_first.zip"), "r+", ("remove", "a.txt"))
    add("mmzip: first entry removed (PK\\5\\6 at 0)", p("mm_remove_first.zip"))
    # A writer stopped between its commit and clearing the signatures of the dead headers before the first live
    # entry (7-Zip reads them as members: "Headers Error"; check said it only warns, an outside review).
    mm(p("mm_dead_kept.zip"), "w+", ("put", "a.txt", b"first"), ("put", "b.txt", b"second"), ("put", "c.txt", b"3"))
    mm(p("mm_dead_kept.zip"), "r+", ("put", "a.txt", b"first, replaced"))
    mm(p("mm_dead_kept.zip"), "r+", ("put", "b.txt", b"second, replaced"))
    with open(p("mm_dead_kept.zip"), "r+b") as f:
        data = f.read()
        for m in re.finditer(rb"(PK\x05\x06|\0\0\0\0)(?=-\0\0\x08)", data[:min(i.header_offset for i in zipfile.ZipFile(f).infolist())]):
            f.seek(m.start())
            f.write(b"PK\x03\x04")
    add("mmzip: dead first headers whose signatures a stopped writer left", p("mm_dead_kept.zip"))
    mm(p("mm_remove_all.zip"), "w+", ("put", "a.txt", b"first"))
    mm(p("mm_remove_all.zip"), "r+", ("remove", "a.txt"))
    add("mmzip: its only entry removed", p("mm_remove_all.zip"))
    # Empty archives by others.
    add("end record alone", write(p("eocd_only.zip"), zb.end_record(0, 0, 0)))
    with zipfile.ZipFile(p("zf_empty.zip"), "w"):
        pass
    add("zipfile: empty", p("zf_empty.zip"))
    # Foreign writers, as written, prefixed, adjusted, in a comment.
    for wname, w in fa.WRITERS:
        with TempDir() as t:
            path = p("f_%s.zip" % re.sub(r"\W", "_", wname))
            w(t, path)
        add("%s" % wname, path)
        with open(path, "rb") as f:
            data = f.read()
        add("%s, stub prepended" % wname, write(path + ".sfx", STUB + data))
        adj = write(path + ".sfxA.zip", STUB + data)
        if run(["zip", "-q", "-A", adj], check=False).returncode == 0:
            add("%s, stub prepended, zip -A" % wname, adj)
        outer = p("outer.zip")
        with zipfile.ZipFile(outer, "w") as z:
            z.writestr("outer.txt", b"outer")
        with open(outer, "rb") as f:
            ob = f.read()
        add("%s, in another archive's comment" % wname,
            write(path + ".incomment.zip", ob[:-2] + struct.pack("<H", len(data)) + data))
        for dmg, _, _ in fa.ANOMALIES:
            add("%s, %s" % (wname, dmg.__name__), write(path + "." + dmg.__name__ + ".zip", dmg(data)))
    # mmzip's archive with a stub.
    with open(p("mm_one.zip"), "rb") as f:
        add("mmzip: one entry, stub prepended", write(p("mm_one.sfx.zip"), STUB + f.read()))
    # Hostile and zipfile-tolerance cases.
    for case, *_ in ha.CASES:
        if case.__name__ in ("bomb_past_decode_limit",):
            continue  # 64 MiB of deflate: the same verdict as bomb_impossible_ratio, much slower
        data = case()
        add("hostile: " + case.__name__, write(p("h_%s.zip" % case.__name__), data))
    for case, *_ in zt.READABLE:
        add("tolerated: " + case.__name__, write(p("t_%s.zip" % case.__name__), case()))
    for label, data in others_and_edits(d):
        add(label, write(p("o_%s.zip" % re.sub(r"\W", "_", label)), data))
    return out


def patched(data, edits):
    b = bytearray(data)
    for off, fmt, value in edits:
        struct.pack_into(fmt, b, off, value)
    return bytes(b)


def others_and_edits(d):
    """[(label, bytes)]: archives other writers make with options the writers above leave out, and an archive of
    zipfile's with one field changed, each a case where the verdict once named the wrong readers (an outside
    review, with the readers' answers as they are on Debian 12)."""
    out = []
    src = os.path.join(d, "src")
    os.makedirs(os.path.join(src, "d", "sub"), exist_ok=True)
    with open(os.path.join(src, "d", "text.txt"), "wb") as f:
        f.write(b"the quick brown fox\n" * 200)
    with open(os.path.join(src, "d", "sub", "s.bin"), "wb") as f:
        f.write(bytes(range(256)) * 8)
    made = os.path.join(d, "made.zip")

    def tool(label, cmd):
        if os.path.exists(made):
            os.unlink(made)
        run(cmd, cwd=src, input=b"")
        with open(made, "rb") as f:
            out.append((label, f.read()))
    # Info-ZIP's forced ZIP64 gives directories local headers that need 4.5 and records that need 1.0.
    tool("Info-ZIP zip -fz, with directories", ["zip", "-q", "-r", "-fz", made, "d"])
    # Writing to a pipe, zip puts data descriptors after the data and leaves the local header's CRC-32 and
    # compressed size zero, its size filled in (libzip's consistency check wants all three zero or right).
    tool("Info-ZIP zip to a pipe (data descriptors)", ["bash", "-c", "zip -q -r - d | cat > " + made])
    # A name longer than Info-ZIP's buffer: unzip truncates it and fails.
    buf = os.path.join(d, "long.zip")
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("n" * 5000, b"long name\n")
        z.writestr("short", b"short name\n")
    with open(buf, "rb") as f:
        out.append(("a name of 5,000 bytes", f.read()))
    # The first entry replaced: its dead bytes before the first live entry. 7-Zip looks for the first entry in
    # the file's first 8 MiB only: it warns below that, and refuses the archive beyond.
    for mib in (4, 9):
        dead = os.path.join(d, "dead%d.zip" % mib)
        run([MMZIP, "put", dead, "a", "-"], input=b"\0" * (mib << 20))
        run([MMZIP, "put", dead, "b", "-"], input=b"b\n")
        run([MMZIP, "put", dead, "a", "-"], input=b"a2\n")
        with open(dead, "rb") as f:
            out.append(("first entry of %d MiB replaced" % mib, f.read()))
    # mmzip's own archive (ZIP64 end records) with the plain end record's total entry count changed from its
    # 0xFFFF sentinel: unzip and 7-Zip take the plain count then.
    ours = os.path.join(d, "ours64.zip")
    run([MMZIP, "put", ours, "a.txt", "-"], input=b"alpha\n" * 100)
    run([MMZIP, "put", ours, "b.txt", "-"], input=b"bravo\n" * 50)
    with open(ours, "rb") as f:
        b64 = bytearray(f.read())
    e = len(b64) - 22
    assert b64[e:e + 4] == b"PK\x05\x06" and b64[e + 10:e + 12] == b"\xff\xff", bytes(b64[e:e + 22])
    b64[e + 11] = 0xFE
    out.append(("ZIP64 archive, plain end record's total count not the sentinel", bytes(b64)))
    for method in ("LZMA", "BZip2", "Deflate64", "PPMd"):
        tool("7-Zip, -mm=%s" % method, ["7z", "a", "-bd", "-tzip", "-mm=" + method, made, "d"])
    for name, method in (("LZMA", zipfile.ZIP_LZMA), ("BZIP2", zipfile.ZIP_BZIP2)):
        buf = os.path.join(d, "zf.zip")
        with zipfile.ZipFile(buf, "w", method) as z:
            z.writestr("a.txt", b"alpha\n" * 100)
        with open(buf, "rb") as f:
            out.append(("zipfile, ZIP_%s" % name, f.read()))
    payload = b"hello xz world\n" * 100
    out.append(("xz (method 95)", zb.archive([zb.Entry("a.txt", lzma.compress(payload, format=lzma.FORMAT_XZ),
                                                       method=95, usize=len(payload), crc=zlib.crc32(payload))])[0]))
    z = run(["zstd", "-c", "-q"], input=payload)
    out.append(("zstd (method 93)", zb.archive([zb.Entry("a.txt", z.stdout, method=93, usize=len(payload),
                                                         crc=zlib.crc32(payload))])[0]))
    # One field of a stored archive of zipfile's changed: a.txt, b.txt, c.txt, in that order.
    buf = os.path.join(d, "base.zip")
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", b"alpha\n" * 100)
        z.writestr("b.txt", b"bravo\n" * 50)
        z.writestr("c.txt", b"charlie\n" * 20)
    with open(buf, "rb") as f:
        base = f.read()
    with zipfile.ZipFile(buf) as z:
        infos = z.infolist()
    lh = [i.header_offset for i in infos]
    eocd = len(base) - 22
    cd = [base.find(b"PK\x01\x02")]
    for _ in infos[1:]:
        nl, xl, cl = struct.unpack_from("<HHH", base, cd[-1] + 28)
        cd.append(cd[-1] + 46 + nl + xl + cl)

    def field(off, fmt):
        return struct.unpack_from(fmt, base, off)[0]
    for label, edits in [
            ("local CRC-32 differs", [(lh[1] + 14, "<I", field(lh[1] + 14, "<I") ^ 1)]),
            ("directory record's CRC-32 differs", [(cd[1] + 16, "<I", field(cd[1] + 16, "<I") ^ 1)]),
            ("local compressed size differs", [(lh[1] + 18, "<I", field(lh[1] + 18, "<I") + 1)]),
            ("local size differs", [(lh[1] + 22, "<I", field(lh[1] + 22, "<I") + 1)]),
            ("local version needed higher", [(lh[1] + 4, "<H", 45)]),
            ("local time differs", [(lh[1] + 10, "<H", field(lh[1] + 10, "<H") ^ 0x20)]),
            ("local date differs", [(lh[1] + 12, "<H", field(lh[1] + 12, "<H") ^ 1)]),
            ("local name differs", [(lh[1] + 30, "<B", ord("z"))]),
            ("stored size recorded larger, into the next entry", [(cd[0] + 20, "<I", field(cd[0] + 20, "<I") + 10)]),
            ("stored size recorded larger, into the directory", [(cd[2] + 20, "<I", field(cd[2] + 20, "<I") + 10)]),
            ("end record's comment length past the end", [(eocd + 20, "<H", 5)]),
            ("a name twice", [(cd[1] + 46, "<B", ord("a")), (lh[1] + 30, "<B", ord("a"))]),
            ("last record's comment 21 bytes into the end record", [(cd[2] + 32, "<H", 21)]),
            ("last record's comment 22 bytes into the end record", [(cd[2] + 32, "<H", 22)]),
            ("end record's entry counts disagree", [(eocd + 10, "<H", 4)])]:
        out.append((label, patched(base, edits)))
    # 70,000 entries and plain end records only: the 16-bit count wrapped (7-Zip warns).
    out.append(("entry count wrapped", zb.archive([zb.Entry("e/%05d" % i, b"%d" % i) for i in range(70000)],
                                                  count=70000 & 0xFFFF)[0]))
    # A self-extractor stub whose offsets were not adjusted, under a ZIP's name (7-Zip then refuses it).
    out.append(("stub prepended, named .zip", STUB + base))
    return out


def readers(path):
    """{reader: None (reads it) or why it objects}. Reading other entries than mmzip lists (another archive
    found in the bytes before this one) is an objection too."""
    r = {}
    m = run([MMZIP, "ls", "-1", path], check=False, input=b"")
    names = sorted(m.stdout.decode(errors="replace").split()) if m.returncode == 0 else None
    try:
        with zipfile.ZipFile(path) as z:
            bad = z.testzip()
            for i in z.infolist():
                z.read(i)
        r["zipfile"] = None if bad is None else "testzip: bad entry %s" % bad
    except Exception as e:  # noqa: BLE001 - any refusal is an objection
        r["zipfile"] = "%s: %s" % (type(e).__name__, e)
    u = run(["unzip", "-tqq", path], check=False, input=b"")
    # An empty archive is no objection: unzip says so ("zipfile is empty", status 1, its warning status), as
    # every reader reads it as empty. mmzip check notes it with {objects: none}.
    empty = u.returncode == 1 and b"zipfile is empty" in u.stdout + u.stderr
    r["unzip"] = None if u.returncode == 0 or empty else "status %d: %s" % (
        u.returncode, (u.stdout + u.stderr).decode(errors="replace").strip().splitlines()[-1:])
    s = run(["7z", "t", "-p-", path], check=False, input=b"")
    text = (s.stdout + s.stderr).decode(errors="replace")
    warn = re.findall(r"^(?:WARNINGS?|ERRORS?):\s*\n?(.*)$", text, re.M) or re.findall(r"^Warning: (.*)$", text, re.M)
    r["7-Zip"] = None if s.returncode == 0 and "Warnings:" not in text and "Warning" not in text else \
        "status %d: %s" % (s.returncode, "; ".join(w.strip() for w in warn[:2]) or text.strip().splitlines()[-1])
    lz = run([LIBZIP_VERIFY, path, "-"], check=False, input=b"")
    r["libzip"] = None if lz.returncode == 0 else "status %d: %s" % (
        lz.returncode, lz.stderr.decode(errors="replace").strip().splitlines()[:1])
    lz_names = sorted(x.rsplit(" ", 2)[0] for x in lz.stdout.decode(errors="replace").splitlines())
    if lz.returncode == 0 and names is not None and not set(names) <= set(lz_names):
        r["libzip"] = "reads other entries: %s" % lz_names  # (entries mmzip cannot name are not listed by it)
    return r


def verdict(path):
    """(mmzip opens it, valid for mmzip, readers the verdict names as objecting, the verdict or mmzip's error)."""
    c = run([MMZIP, "check", path], check=False, input=b"")
    out = c.stdout.decode(errors="replace")
    line = [x for x in out.splitlines() if "valid for every ZIP reader:" in x]
    # An archive mmzip cannot open still gets its verdict lines: "not known" for the other readers.
    assert line, "no verdict line from mmzip check %s:\n%s%s" % (path, out, c.stderr.decode(errors="replace"))
    if line[0].endswith("valid for every ZIP reader: not known (mmzip cannot open it: see its message)"):
        assert "valid for mmzip: no" in out and c.returncode == 1, out
        return False, False, None, c.stderr.decode(errors="replace").strip()
    v = line[0].split("valid for every ZIP reader: ", 1)[1].strip()
    named = set(r for r in READERS if re.search(r"(?:no: |; )%s (?:refuses it|warns) \(" % re.escape(r), v))
    return True, "valid for mmzip: yes" in out, named, v


def table(d):
    rows = []
    for label, path in build(d):
        r = readers(path)
        opened, ok_mm, named, v = verdict(path)
        objecting = set(k for k, why in r.items() if why)
        rows.append((label, path, r, objecting, opened, ok_mm, named, v))
    return rows


# Archives mmzip refuses to open, and the readers that read them anyway (all four object to the others).
# Unsafe names are refused because extracting them escapes the target directory; overlapping entries are
# the classic zip bomb; the rest have fields that contradict each other, where reading would be a guess.
READ_BY_OTHERS = {
    "hostile: overlapping_directory_records": {"7-Zip"},
    "hostile: counts_disagree": {"zipfile", "unzip"},
    "hostile: dotdot_name": set(READERS),
    "hostile: dotdot_inside_name": set(READERS),
    "hostile: absolute_name": set(READERS),
    "hostile: stored_sizes_disagree": {"zipfile"},
    "hostile: malformed_extra_field": {"unzip"},
    # zipfile reads the name's 60,000 bytes from the end records and past the end of the file.
    "hostile: name_runs_past_directory": {"zipfile"},
    "hostile: multi_disk": {"zipfile"},
    "hostile: first_local_header_differs": {"7-Zip"},
    # unzip reads the local header's size; zipfile, 7-Zip and libzip see the entry run into the directory.
    "stored size recorded larger, into the directory": {"unzip"},
    "end record's entry counts disagree": {"zipfile"},
}


def test_verdict_names_the_objecting_readers():
    with TempDir() as d:
        rows = table(d)
    wrong = []
    for label, path, r, objecting, opened, ok_mm, named, v in rows:
        reading = set(READERS) - objecting
        if not opened:
            want = READ_BY_OTHERS.get(label, set())
            if reading != want:
                wrong.append("%s: mmzip refuses it (%s); read by %s, documented: %s" % (label, v, sorted(reading),
                                                                                       sorted(want)))
            continue
        if not ok_mm:
            # mmzip finds errors: the verdict says so, and names the other readers that object, as it does
            # when mmzip reads the archive.
            if not v.endswith("mmzip cannot read it all either (see the error: lines)") or named != objecting:
                wrong.append("%s: check says %r; objecting: %s" % (label, v, {k: r[k] for k in READERS if r[k]}))
            continue
        if named != objecting or "see the interop: lines" in v or (v == "yes") != (not objecting):
            wrong.append("%s: check says %r; objecting: %s" % (label, v, {k: r[k] for k in READERS if r[k]}))
        elif r["7-Zip"] and ("7-Zip refuses it" in v) != (not r["7-Zip"].startswith("status 0")):
            # 7-Zip's status tells a refusal (2) from a warning (0): the verdict must say which.
            wrong.append("%s: check says %r; 7-Zip: %s" % (label, v, r["7-Zip"]))
    print("%d archives compared with %s" % (len(rows), ", ".join(READERS)))
    assert not wrong, "\n".join(wrong)
    assert len(rows) > 80, len(rows)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--matrix":
        os.makedirs(sys.argv[2], exist_ok=True)
        for label, path, r, objecting, opened, ok_mm, named, v in table(sys.argv[2]):
            print("%-50s | %-28s | %s" % (label, ",".join(k for k in READERS if r[k]) or "-", v))
            for k in READERS:
                if r[k]:
                    print("%50s   %s: %s" % ("", k, r[k]))
    else:
        main([test_verdict_names_the_objecting_readers])
