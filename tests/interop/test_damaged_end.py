"""An archive whose end was damaged after its last commit: its last bytes cut off (an incomplete copy or
download), zeroed, or a byte of its directory changed. Recovery scans back for the last intact end records, as
a writer killed in the middle of a relocation leaves them; but here the intact ones it found were an older
state (the directory a relocation kept, protocol.md section 3.7) or those of a ZIP stored as an entry (an
.npz). mmzip read that state with exit status 0, and `mmzip put` and `mmzip recover` cut every later entry
(an outside review). No state mmzip leaves has, after its last valid end records, a directory naming entries
they do not name: such a file is refused by every route, naming both, and left byte for byte as it is.
Python's zipfile and unzip refuse these files too. The crash suite (label crash) shows that every state a
killed writer leaves is still recovered."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import hashlib
import os
import zipfile

import numpy as np

import mmzip as mmzip_py
from mmzip_testlib import TempDir, check_equal, main, mmzip, run

MMZIP = os.environ.get("MMZIP_BIN", "mmzip")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def damaged_copies(d, path):
    """{how: path} of three damaged copies of path."""
    with open(path, "rb") as f:
        data = f.read()
    out = {}
    cut = os.path.join(d, "cut.zip")
    with open(cut, "wb") as f:
        f.write(data[:-10])
    out["last 10 bytes cut"] = cut
    zero = os.path.join(d, "zeroed.zip")
    with open(zero, "wb") as f:
        f.write(data[:-30] + bytes(30))
    out["last 30 bytes zeroed"] = zero
    sig = bytearray(data)
    i = sig.rfind(b"PK\x01\x02")
    sig[i + 3] = 0
    bad = os.path.join(d, "badsig.zip")
    with open(bad, "wb") as f:
        f.write(bytes(sig))
    out["a directory record's signature damaged"] = bad
    return out


def assert_refused_everywhere(path, what, later):
    h0 = digest(path)
    for args in (["ls", path], ["check", path], ["cat", path, later], ["put", path, "new", "-"], ["recover", path]):
        p = run([MMZIP] + args, check=False, input=b"x")
        assert p.returncode != 0, "%s: mmzip %s succeeded:\n%s" % (what, args[0], p.stdout)
        err = p.stderr.decode(errors="replace")
        assert "the end of the archive is damaged" in err, (what, args[0], err)
        check_equal(digest(path), h0, "%s: the file after mmzip %s" % (what, args[0]))
    try:
        mmzip_py.Archive(path)
        raise AssertionError("%s: mmzip.Archive opened it" % what)
    except mmzip_py.MmzipError as e:
        assert "the end of the archive is damaged" in str(e), str(e)


def test_archive_stored_as_an_entry():
    with TempDir() as d:
        path = os.path.join(d, "nest.zip")
        npz = os.path.join(d, "inner.npz")
        np.savez(npz, secret=np.arange(100))
        blob = os.path.join(d, "blob")
        with open(blob, "wb") as f:
            f.write(os.urandom(3000))
        mmzip("put", path, "a.bin", blob)
        mmzip("put", path, "run1/inner.npz", npz)
        for i in range(3):
            mmzip("put", path, "after/%d" % i, blob)
        for how, copy in damaged_copies(d, path).items():
            assert_refused_everywhere(copy, "an .npz stored in the archive, " + how, "after/0")


def test_directory_a_relocation_kept():
    with TempDir() as d:
        path = os.path.join(d, "kept.zip")
        with mmzip_py.Archive(path, "w+") as a:
            with a.batch():
                for i in range(30):
                    a["big/%02d" % i] = os.urandom(300000)
                for i in range(70):
                    a["small/%02d" % i] = bytes([i]) * 1000
        with mmzip_py.Archive(path, "r+") as a:
            for i in range(150):
                a["later/%04d" % i] = bytes([i % 251]) * 1000
        check_equal(len(zipfile.ZipFile(path).namelist()), 250, "entries of the intact archive")
        for how, copy in damaged_copies(d, path).items():
            assert_refused_everywhere(copy, "a kept directory below, " + how, "later/0149")


def test_later_entries_without_their_directory():
    """Cut or zeroed where only later entries survive, not the directory that named them (another outside
    review): past mmzip's own end records its writers write no entry, so such an entry is a later commit's.
    And a cut inside an entry that follows a stored ZIP: the stored ZIP's end records lie inside an entry mmzip
    wrote, so they are not the archive's."""
    with TempDir() as d:
        path = os.path.join(d, "late.zip")
        with mmzip_py.Archive(path, "w+") as a:
            with a.batch():
                for i in range(20):
                    a["big/%02d" % i] = os.urandom(1 << 20)
                for i in range(500):
                    a["tiny/%03d" % i] = bytes([i % 251]) * 100
        with mmzip_py.Archive(path, "r+") as a:
            a["late"] = os.urandom(150000)
        data = open(path, "rb").read()
        late = zipfile.ZipFile(path).getinfo("late").header_offset
        assert late + 60000 < len(data) - 60000, (late, len(data))
        for how, damaged in (("cut inside the later entry", data[:late + 60000]),
                             ("its last 60 KB zeroed", data[:-60000] + bytes(60000))):
            copy = os.path.join(d, "late-damaged.zip")
            with open(copy, "wb") as f:
                f.write(damaged)
            try:
                names = zipfile.ZipFile(copy).namelist()
            except zipfile.BadZipFile:
                names = None
            p = run([MMZIP, "ls", copy], check=False)
            if p.returncode == 0:  # read: then it must be the newest state, with the later entry
                assert "late" in p.stdout, (how, names)
            else:
                assert_refused_everywhere(copy, "later entries without their directory, " + how, "late")
        inner = os.path.join(d, "inner.zip")
        with zipfile.ZipFile(inner, "w") as z:
            z.writestr("a", b"inner a")
            z.writestr("b", b"inner b")
        outer = os.path.join(d, "outer.zip")
        mmzip("put", outer, "x", "-", input=b"x" * 100)
        mmzip("put", outer, "inner.zip", inner)
        mmzip("put", outer, "y", "-", input=b"y" * 300)
        data = open(outer, "rb").read()
        y = data.rfind(b"yyyy")
        with open(outer, "wb") as f:
            f.write(data[:y + 50])
        assert_refused_everywhere(outer, "a stored ZIP, cut inside the entry after it", "y")
        # The dead header at offset 0 (end-record signature, format.md section 8) is no end record either.
        first = os.path.join(d, "first.zip")
        mmzip("put", first, "k", "-", input=b"one")
        mmzip("put", first, "o", "-", input=b"two")
        mmzip("put", first, "k", "-", input=b"three")
        data = open(first, "rb").read()
        assert data[:4] == b"PK\x05\x06", data[:4]
        with open(first, "wb") as f:
            f.write(data[:-100])
        p = run([MMZIP, "ls", first], check=False)
        assert p.returncode != 0 and "multi-disk" not in p.stderr, p.stderr


if __name__ == "__main__":
    main([test_archive_stored_as_an_entry, test_directory_a_relocation_kept, test_later_entries_without_their_directory])
