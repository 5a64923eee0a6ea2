"""`mmzip recover` keeps foreign archives byte for byte, prefixed ones included (docs/reliability.md F1).

Archives written by Info-ZIP zip, Python zipfile and 7-Zip (and one by mmzip), each as written, behind a
self-extractor stub (`cat stub a.zip`, offsets not adjusted, and then adjusted by `zip -A`), and as a ZIP
carried in another archive's comment. For each: the sha-256 must be the same after `mmzip recover` (which
must say it changed nothing), after read-only use (ls, check, cat of every entry, whose bytes must equal
zipfile's) and after a writable open closed without writes (through the C API). Then a real append must keep
the bytes before the archive (the stub) and every entry zipfile, unzip and 7-Zip read, `mmzip info` must count
those bytes as prefix_bytes (not dead_bytes), and `mmzip pack` must keep them too."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import ctypes
import hashlib
import os
import zipfile

from mmzip_testlib import LIBDIR, TempDir, check_equal, main, mmzip, run

CONTENTS = {"a.txt": b"alpha\n" * 300, "b.bin": bytes(range(256)) * 40, "c.txt": b"charlie " * 500,
            "tiny": b"x"}
STUB = b"#!/bin/sh\necho 'self-extractor stub'\nexit 0\n" + bytes(range(256)) + b"\0" * 37


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def zipfile_view(path):
    with zipfile.ZipFile(path) as z:
        assert z.testzip() is None, path
        return {i.filename: z.read(i) for i in z.infolist()}


def src_dir(d):
    src = os.path.join(d, "src")
    os.makedirs(src, exist_ok=True)
    for k, v in CONTENTS.items():
        with open(os.path.join(src, k), "wb") as f:
            f.write(v)
    return src


def write_infozip(d, path):
    run(["zip", "-X", "-q", path] + list(CONTENTS), cwd=src_dir(d))  # deflated, tiny one stored


def write_zipfile(d, path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in CONTENTS.items():
            z.writestr(k, v, compress_type=zipfile.ZIP_STORED if k == "tiny" else zipfile.ZIP_DEFLATED)


def write_7z(d, path):
    run(["7z", "a", "-tzip", "-mx=5", path] + list(CONTENTS), cwd=src_dir(d))


def write_mmzip(d, path):
    src = src_dir(d)
    for k in CONTENTS:
        mmzip("put", path, k, os.path.join(src, k))


WRITERS = [("Info-ZIP zip", write_infozip), ("zipfile", write_zipfile), ("7-Zip", write_7z), ("mmzip", write_mmzip)]


def variants(d, plain):
    """(label, path, bytes before the archive) for the archive as written, prefixed and in a comment."""
    data = read_bytes(plain)
    out = [("as written", plain, 0)]
    sfx = plain + ".sfx"
    with open(sfx, "wb") as f:
        f.write(STUB + data)
    out.append(("stub prepended, offsets not adjusted", sfx, len(STUB)))
    adj = plain + ".sfxA.zip"
    with open(adj, "wb") as f:
        f.write(STUB + data)
    a = run(["zip", "-q", "-A", adj], check=False)
    if a.returncode == 0:
        out.append(("stub prepended, offsets adjusted by zip -A", adj, len(STUB)))
    else:
        # Info-ZIP zip 3.0 adjusts no archive with ZIP64 end records behind a stub (mmzip's, here).
        assert "Zip file structure invalid" in a.stdout + a.stderr and read_bytes(adj) == STUB + data, a
    # Two archives of one layout concatenated (`cat a.zip a.zip`, as two snapshots of an archive would be): the
    # last one is the archive, for zipfile as for mmzip, whose recorded directory offset also lands on the first
    # one's directory. mmzip read the first (an outside review, with snapshots of different bytes) and recover
    # cut the second off as an interrupted write of its own.
    twice = plain + ".concat.zip"
    with open(twice, "wb") as f:
        f.write(data + data)
    out.append(("the same archive prepended (cat)", twice, len(data)))
    # A ZIP carried as the archive comment of another one: the file ends with the carried archive's end record.
    outer = plain + ".outer.zip"
    with zipfile.ZipFile(outer, "w") as z:
        z.writestr("outer.txt", b"the outer archive's entry\n")
    outer_bytes = read_bytes(outer)
    assert outer_bytes[-2:] == b"\0\0"
    if len(data) > 65535:  # too long for a comment (none of this test's archives is)
        return out
    carrier = outer_bytes[:-2] + len(data).to_bytes(2, "little") + data
    incomment = plain + ".incomment.zip"
    with open(incomment, "wb") as f:
        f.write(carrier)
    out.append(("a ZIP in another archive's comment", incomment, len(outer_bytes)))
    return out


class Lib:
    def __init__(self):
        self.lib = ctypes.CDLL(os.path.join(LIBDIR, "libmmzip.so") if LIBDIR else "libmmzip.so")
        self.lib.mmzip_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p)]
        self.lib.mmzip_close.argtypes = [ctypes.c_void_p]
        self.lib.mmzip_last_error.restype = ctypes.c_char_p

    def open_close(self, path, mode):
        h = ctypes.c_void_p()
        st = self.lib.mmzip_open(path.encode(), mode.encode(), None, ctypes.byref(h))
        assert st == 0, "mmzip_open(%s, %s): %s" % (path, mode, self.lib.mmzip_last_error().decode())
        st = self.lib.mmzip_close(h)
        assert st == 0, "mmzip_close(%s): %s" % (path, self.lib.mmzip_last_error().decode())


def one(lib, label, path, prefix):
    what = "%s: %s" % (label, os.path.basename(path))
    before = read_bytes(path)
    h0 = sha(path)
    want = zipfile_view(path)
    assert set(want) >= set(CONTENTS), (what, sorted(want))

    # Read-only use.
    ls = mmzip("ls", path).stdout.split()
    for k in want:
        assert k in ls, (what, k, ls)
    p = mmzip("check", path, check=False)
    assert p.returncode == 0, (what, p.stdout, p.stderr)
    assert "recover: nothing to do" in p.stderr, (what, p.stderr)
    for k, v in want.items():
        got = run([os.environ.get("MMZIP_BIN", "mmzip"), "cat", path, k], input=b"").stdout
        check_equal(got, v, "%s: mmzip cat %s against zipfile" % (what, k))
    check_equal(sha(path), h0, "%s: sha-256 after ls, check and cat" % what)

    # A writable open closed without writes, then recover.
    lib.open_close(path, "r+")
    check_equal(sha(path), h0, "%s: sha-256 after a writable open closed without writes" % what)
    p = mmzip("recover", path)
    assert "nothing to recover; the archive was not changed" in p.stdout, (what, p.stdout)
    assert "wrote" not in p.stdout and "cut" not in p.stdout, (what, p.stdout)
    check_equal(sha(path), h0, "%s: sha-256 after mmzip recover" % what)
    lib.open_close(path, "r")
    check_equal(sha(path), h0, "%s: sha-256 after a read-only open" % what)

    # A real append keeps the bytes before the archive and every entry.
    newp = path + ".new"
    with open(newp, "wb") as f:
        f.write(b"appended by mmzip\n")
    mmzip("put", path, "new.txt", newp)
    after = read_bytes(path)
    check_equal(after[:prefix], before[:prefix], "%s: the %d bytes before the archive after a put" % (what, prefix))
    got = zipfile_view(path)
    want2 = dict(want)
    want2["new.txt"] = b"appended by mmzip\n"
    check_equal(got, want2, "%s: zipfile's entries after a put" % what)
    t = run(["unzip", "-t", path], check=False)
    assert t.returncode in (0, 1) and "No errors detected" in t.stdout, (what, t.stdout, t.stderr)
    t = run(["7z", "t", path], check=False)
    assert t.returncode == 0 and "Everything is Ok" in t.stdout, (what, t.stdout, t.stderr)
    p = mmzip("recover", path)
    assert "nothing to recover" in p.stdout, (what, p.stdout)
    check_equal(read_bytes(path), after, "%s: recover after the put" % what)

    # info counts the bytes before the archive as such, not as dead space, and pack keeps them (a
    # self-extractor's stub is the user's), with every entry.
    info = dict(line.split(":", 1) for line in mmzip("info", path).stdout.splitlines() if ":" in line)
    check_equal(int(info["prefix_bytes"].split()[0]), prefix, "%s: info's prefix_bytes after a put" % what)
    check_equal(int(info["dead_bytes"].split()[0]), 0, "%s: info's dead_bytes after a put" % what)
    mmzip("pack", path)
    packed = read_bytes(path)
    check_equal(packed[:prefix], before[:prefix], "%s: the %d bytes before the archive after a pack" % (what, prefix))
    check_equal(zipfile_view(path), want2, "%s: zipfile's entries after a pack" % what)
    t = run(["unzip", "-t", path], check=False)
    assert t.returncode in (0, 1) and "No errors detected" in t.stdout, (what, t.stdout, t.stderr)
    return what


def test_recover_keeps_foreign_bytes():
    lib = Lib()
    done = []
    for wname, write in WRITERS:
        with TempDir() as d:
            plain = os.path.join(d, "a.zip")
            write(d, plain)
            for vlabel, path, prefix in variants(d, plain):
                done.append(one(lib, "%s, %s" % (wname, vlabel), path, prefix))
    # Every writer's archive in every variant (five), but mmzip's adjusted by zip -A: Info-ZIP zip 3.0 adjusts no
    # archive with ZIP64 end records.
    check_equal(len(done), len(WRITERS) * 5 - 1, "archives checked")
    print("%d archives kept byte for byte by recover, read-only and writable opens" % len(done))


if __name__ == "__main__":
    main([test_recover_keeps_foreign_bytes])
