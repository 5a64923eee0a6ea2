"""An archive whose end was damaged after its last commit: its last bytes cut off (an incomplete copy or
download), zeroed, or a byte of its directory changed. Recovery scans back for the last intact end records, as
a writer killed in the middle of a relocation leaves them; but here the intact ones it found were an older
state (the directory a relocation kept, protocol.md section 3.7) or those of a ZIP stored as an entry (an
.npz). mmzip read that state with exit status 0, and `mmzip put` and `mmzip recover` cut every later entry
(an outside review). No state mmzip leaves has, after its last valid end records, a directory naming entries
they do not name: such a file is refused by every route, naming both, and left byte for byte as it is.
Python's zipfile and unzip refuse these files too. The crash suite (label crash) shows that every state a
killed writer leaves is still recovered."""
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
        assert "the end of the archive is damaged" in err and "names entries they do not" in err, (what, args[0], err)
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


if __name__ == "__main__":
    main([test_archive_stored_as_an_entry, test_directory_a_relocation_kept])
