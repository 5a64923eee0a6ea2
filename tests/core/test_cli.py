"""The mmzip command: every subcommand's --help, its exit codes (0 success, 1 failure, 2 usage, 3 busy), and
what it prints and writes, checked against Python's zipfile and the bytes put in."""
import os
import re
import struct
import subprocess
import time
import zipfile
import zlib

from mmzip_testlib import MMZIP, TempDir, check_equal, ls_entries, main, mmzip, run, zip_tools_ok

COMMANDS = ["ls", "cat", "put", "check", "recover", "pack", "info", "run"]


def test_help_and_usage():
    for c in COMMANDS:
        p = mmzip(c, "--help")
        assert p.stdout.startswith("usage: mmzip " + c), "%s --help: %r" % (c, p.stdout[:80])
    p = mmzip("--help")
    for c in COMMANDS:
        assert "\n  %s " % c in p.stdout, "mmzip --help does not list %s" % c
    check_equal(mmzip("--version").stdout.strip(), "mmzip 0.1.0", "version")
    for args in (["frobnicate"], ["ls"], ["cat", "x.zip"], ["put"], ["ls", "--bogus", "a.zip"], []):
        p = mmzip(*args, check=False)
        check_equal(p.returncode, 2, "exit status of mmzip %s" % " ".join(args))
        assert p.stderr, "no message for a usage error"
    for c in ("ls", "check", "pack", "put"):
        p = mmzip(c, "-x", "a.zip", check=False)
        assert p.returncode == 2 and p.stderr.startswith("mmzip %s: unknown option '-x'\n" % c), p.stderr[:200]


def test_put_cat_ls():
    with TempDir() as d:
        a = os.path.join(d, "a.zip")
        src = os.path.join(d, "blob")
        data = os.urandom(300000)
        open(src, "wb").write(data)
        mmzip("put", a, "dir/blob", src)
        mmzip("put", "--align", "4096", a, "aligned", "-", input="from stdin\n")
        p = subprocess.run([MMZIP, "cat", a, "dir/blob"], capture_output=True)
        check_equal(p.returncode, 0, "cat exit")
        check_equal(p.stdout, data, "cat bytes")
        ents = ls_entries(a)
        check_equal(sorted(ents), ["aligned", "dir/blob"], "ls names")
        check_equal(ents["dir/blob"]["size"], 300000, "ls size")
        check_equal(ents["dir/blob"]["offset"] % 64, 0, "default alignment")
        check_equal(ents["aligned"]["offset"] % 4096, 0, "--align 4096")
        check_equal(ents["aligned"]["method"], "stored", "method")
        import zipfile, zlib
        with zipfile.ZipFile(a) as z:
            check_equal(z.read("aligned"), b"from stdin\n", "zipfile reads the entry")
            check_equal(ents["aligned"]["crc"], "%08x" % zlib.crc32(b"from stdin\n"), "ls crc")
        check_equal(mmzip("ls", "-1", a, "dir/").stdout, "dir/blob\n", "ls -1 with a prefix")
        p = mmzip("cat", a, "missing", check=False)
        check_equal(p.returncode, 1, "cat of a missing entry")
        assert "missing" in p.stderr and "a.zip" in p.stderr, p.stderr
        p = mmzip("ls", os.path.join(d, "nope.zip"), check=False)
        check_equal(p.returncode, 1, "ls of a missing archive")
        assert "no such archive" in p.stderr, p.stderr


def test_put_dir_is_one_commit():
    with TempDir() as d:
        src = os.path.join(d, "tree")
        for rel in ("x/.zarray", "x/0.0", "x/0.1", ".zgroup", "deep/er/file"):
            os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
            open(os.path.join(src, rel), "w").write("content of " + rel)
        a = os.path.join(d, "t.zarr.zip")
        mmzip("put", a, "--dir", src)
        import zipfile
        with zipfile.ZipFile(a) as z:
            check_equal(sorted(z.namelist()), [".zgroup", "deep/er/file", "x/.zarray", "x/0.0", "x/0.1"], "names")
            for n in z.namelist():
                check_equal(z.read(n), ("content of " + n).encode(), n)
        mmzip("put", a, "--dir", src, "copy/")
        check_equal(len(ls_entries(a)), 10, "second tree under a prefix")
        zip_tools_ok(a)


def test_names_in_messages():
    """Names are shown as ls shows them: UTF-8 as it is, other bytes escaped."""
    with TempDir() as d:
        a = os.path.join(d, "u.zip")
        with zipfile.ZipFile(a, "w") as z:
            z.writestr("d/\u00fcn\u00ef.txt", b"x")
            z.writestr(zipfile.ZipInfo("raw\\name"), b"y")
        with zipfile.ZipFile(a) as z:
            offs = [i.header_offset for i in z.infolist()]
        b = bytearray(open(a, "rb").read())
        for o in offs:
            b[o + 14] ^= 1  # a local header CRC-32 that is not the directory's: a warning naming the entry
        open(a, "wb").write(b)
        err = mmzip("ls", a).stderr
        assert "entry 'd/\u00fcn\u00ef.txt'" in err and "entry 'raw\\x5cname'" in err, err


def test_check_finds_corruption():
    with TempDir() as d:
        a = os.path.join(d, "c.zip")
        mmzip("put", a, "good", "-", input="good bytes")
        mmzip("put", a, "victim", "-", input="these bytes will be damaged")
        p = mmzip("check", a)
        assert "OK, 2 entries" in p.stdout, p.stdout
        off = ls_entries(a)["victim"]["offset"]
        with open(a, "r+b") as f:
            f.seek(off + 3)
            f.write(b"X")
        p = mmzip("check", a, check=False)
        check_equal(p.returncode, 1, "check of a damaged archive")
        assert "victim" in p.stderr and "CRC-32 mismatch" in p.stderr, p.stderr
        assert "good" not in p.stderr.replace("c.zip", ""), p.stderr


def test_recover_reports():
    """recover says what it did, with the figures; "nothing to recover" only for a file it left byte for byte as
    it was; check's recover: line says the same beforehand. (Killed writers: tests/crash/test_recover_messages.py,
    tests/hdf5/test_recover_messages.py.)"""
    with TempDir() as d:
        a = os.path.join(d, "r.zip")
        mmzip("put", a, "k", "-", input="kept")
        before = open(a, "rb").read()
        check_equal(mmzip("recover", a).stdout, "%s: nothing to recover; the archive was not changed\n" % a,
                    "recover of a clean archive")
        check_equal(open(a, "rb").read(), before, "bytes after 'nothing to recover'")
        assert "recover: nothing to do" in mmzip("check", a).stderr
        # An interrupted commit: debris after the end records.
        size = os.path.getsize(a)
        with open(a, "ab") as f:
            f.write(b"\0" * 5000 + b"PK\x05\x06garbage")
        p = mmzip("check", a, check=False)
        check_equal(p.returncode, 1, "check of an archive with debris after its last commit")
        assert ("error: %s: 5011 bytes follow the last commit's end records (an interrupted mmzip write); 'mmzip "
                "recover' removes them" % a) in p.stderr, p.stderr
        assert ("recover: cut the 5011 bytes after the end records at %d (an interrupted mmzip write)" % size
                in p.stderr), p.stderr
        assert "nothing to do" not in p.stderr, p.stderr
        check_equal(mmzip("cat", a, "k").stdout, "kept", "read-only access before recovery")
        check_equal(mmzip("recover", a).stdout,
                    "%s: cut the 5011 bytes after the last commit's end records at %d (an interrupted mmzip write: "
                    "nothing any commit refers to)\n%s: the file is now %d bytes (it was %d)\n"
                    % (a, size, a, size, size + 5011), "recover's report")
        check_equal(os.path.getsize(a), size, "size after recovery")
        check_equal(open(a, "rb").read(), before, "bytes after recovery")
        check_equal(mmzip("cat", a, "k").stdout, "kept", "entry after recovery")
        check_equal(mmzip("recover", a).stdout, "%s: nothing to recover; the archive was not changed\n" % a,
                    "a second recover")


def test_pack_and_info():
    with TempDir() as d:
        a = os.path.join(d, "p.zip")
        for i in range(5):
            mmzip("put", a, "same", "-", input="version %d " % i * 100)
        info = dict(l.split(":", 1) for l in mmzip("info", a).stdout.splitlines())
        info = {k: v.split()[0] for k, v in info.items()}  # each figure is followed by what it counts
        check_equal(int(info["entries"]), 1, "entries")
        assert int(info["dead_bytes"]) > 4 * 500, info
        check_equal(info["writer_lock"], "free", "writer lock")
        out = mmzip("pack", a).stdout
        assert "packed" in out, out
        info = dict(l.split(":", 1) for l in mmzip("info", a).stdout.splitlines())
        info = {k: v.split()[0] for k, v in info.items()}  # each figure is followed by what it counts
        check_equal(int(info["dead_bytes"]), 0, "dead bytes after pack")
        check_equal(mmzip("cat", a, "same").stdout, "version 4 " * 100, "content after pack")
        out_path = os.path.join(d, "copy.zip")
        mmzip("pack", a, out_path)
        zip_tools_ok(out_path)


def test_pack_refuses_a_damaged_entry():
    """pack copies no stored entry whose bytes disagree with their CRC-32: it fails naming the entry and both
    CRCs, and the archive stays byte-identical (the damage stays where check and every reader find it)."""
    with TempDir() as d:
        a = os.path.join(d, "p.zip")
        mmzip("put", a, "good", "-", input="g" * 5000)
        mmzip("put", a, "bad", "-", input="b" * 5000)
        mmzip("put", a, "good", "-", input="G" * 5000)  # a dead version: pack has something to do
        with zipfile.ZipFile(a) as z:
            info = z.getinfo("bad")
        with open(a, "r+b") as f:
            f.seek(info.header_offset + 26)
            nlen, xlen = struct.unpack("<HH", f.read(4))
            f.seek(info.header_offset + 30 + nlen + xlen + 1234)
            f.write(b"X")
        with open(a, "rb") as f:
            before = f.read()
        r = mmzip("pack", a, check=False)
        check_equal(r.returncode != 0, True, "pack of a damaged archive fails (%s)" % r.stdout)
        want = "entry 'bad': CRC-32 mismatch (directory says %08x, data gives %08x)" % (
            info.CRC, zlib.crc32(b"b" * 1234 + b"X" + b"b" * 3765))
        assert want in r.stderr, r.stderr
        assert "the archive was not changed" in r.stderr, r.stderr
        with open(a, "rb") as f:
            check_equal(f.read() == before, True, "the archive after the refused pack is byte-identical")
        check_equal(sorted(os.listdir(d)), ["p.zip"], "files beside it (no temporary left)")
        out_path = os.path.join(d, "copy.zip")
        r = mmzip("pack", a, out_path, check=False)
        assert r.returncode != 0 and want in r.stderr, r.stderr
        check_equal(os.path.exists(out_path), False, "a pack to another file leaves no file")
        with open(out_path, "wb") as f:
            f.write(b"the user's file")
        r = mmzip("pack", a, out_path, check=False)
        assert r.returncode != 0 and want in r.stderr, r.stderr
        with open(out_path, "rb") as f:
            check_equal(f.read(), b"the user's file", "an existing output after a refused pack")
        check_equal(sorted(os.listdir(d)), ["copy.zip", "p.zip"], "files beside it (no temporary left)")
        # Undamaged, the output is written and replaces what was there.
        b = os.path.join(d, "fine.zip")
        mmzip("put", b, "k", "-", input="v" * 3000)
        mmzip("pack", b, out_path)
        with zipfile.ZipFile(out_path) as z:
            check_equal(z.read("k"), b"v" * 3000, "the packed copy over an existing file")


def test_busy_exit_code():
    """A second writer gets exit status 3 at once, while the first holds the archive."""
    with TempDir() as d:
        a = os.path.join(d, "b.zip")
        mmzip("put", a, "x", "-", input="x")
        # The first writer: a put reading from a pipe we keep open, so it holds the writer lock.
        w = subprocess.Popen([MMZIP, "put", a, "slow", "-"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        w.stdin.write(b"partial")
        w.stdin.flush()
        while "held" not in mmzip("info", a).stdout:  # the first writer holds the lock once it is open
            assert w.poll() is None, "the first writer ended: %s" % w.stderr.read()
            time.sleep(0.05)
        # The first writer waits for us, so a second writer that waited instead of failing would never end:
        # the timeout is the test, and it does not depend on this machine's speed.
        try:
            p = run([MMZIP, "put", a, "y", "-"], input="y", check=False, timeout=300)
        except subprocess.TimeoutExpired:
            raise AssertionError("the second writer waited for the first instead of failing at once")
        check_equal(p.returncode, 3, "exit status of a second writer")
        assert "another process" in p.stderr, p.stderr
        w.stdin.write(b" and the rest")
        w.stdin.close()
        check_equal(w.wait(), 0, "first writer")
        check_equal(mmzip("cat", a, "slow").stdout, "partial and the rest", "first writer's entry")


def data_extents(path):
    """The byte ranges of path that hold data (SEEK_DATA / SEEK_HOLE)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size, off, out = os.fstat(fd).st_size, 0, []
        while off < size:
            try:
                d = os.lseek(fd, off, os.SEEK_DATA)
            except OSError:
                break
            h = os.lseek(fd, d, os.SEEK_HOLE)
            out.append((d, h))
            off = h
        return out
    finally:
        os.close(fd)


def test_put_leaves_the_slack_a_hole():
    """`mmzip put` of a large file fills a reservation through a shared writable mapping, whose page-cache
    folios (up to 2 MiB) got the zeros after the data written back as allocated blocks. Then the first
    writable open read those zeros and the first commit punched the whole slack (1-2 ms at the first edit
    session). The put's own commit now punches them: only the data and the directory hold blocks."""
    with TempDir() as d:
        src = os.path.join(d, "big.bin")
        with open(src, "wb") as f:
            f.write(os.urandom(1 << 20) * 64 + b"tail")  # the data ends 4 bytes into a 2 MiB folio
        arc = os.path.join(d, "a.zip")
        mmzip("put", arc, "big.bin", src)
        os.sync()
        entry = ls_entries(arc)["big.bin"]
        data_end = entry["offset"] + entry["size"]
        extents = data_extents(arc)
        block = os.statvfs(arc).f_bsize
        after = (data_end + block - 1) // block * block
        allocated_after = sum(hi - max(lo, after) for lo, hi in extents if hi > after)
        # The directory and end records are a few hundred bytes (one or two blocks); the folio's zeros were
        # up to 2 MiB.
        assert allocated_after <= 4 * block, "%d bytes allocated after the data (ends at %d): %r" % (
            allocated_after, data_end, extents)
        with open(arc, "rb") as f:
            f.seek(entry["offset"])
            check_equal(f.read(entry["size"]), open(src, "rb").read(), "the entry's bytes")
        assert "OK, 1 entry," in mmzip("check", arc).stdout


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_stale_temporary_files_removed_by_recover_and_pack():
    """A pack killed between naming its file and the rename, or a creation killed on a file system without
    O_TMPFILE, leaves <archive>.mmzip-pack-<pid> (or -new-<pid>). `mmzip recover` and `mmzip pack` remove
    those of dead processes; a writer does not look for them (test_store.c:
    test_stale_temps_removed_by_maintenance)."""
    with TempDir() as d:
        arc = os.path.join(d, "a.zip")
        src = os.path.join(d, "x.txt")
        with open(src, "w") as f:
            f.write("x\n")
        mmzip("put", arc, "x.txt", src)
        stale = ["%s.mmzip-pack-%d" % (arc, dead_pid()), "%s.mmzip-new-%d" % (arc, dead_pid())]
        for p in stale:
            open(p, "w").close()
        mmzip("put", arc, "y.txt", src)
        check_equal([p for p in stale if os.path.exists(p)], stale, "dead processes' files after a writer")
        before = open(arc, "rb").read()
        out = mmzip("recover", arc).stdout.splitlines()
        check_equal([p for p in stale if os.path.exists(p)], [], "dead processes' files after recover")
        check_equal(open(arc, "rb").read(), before, "the archive after recover")
        # Each file removed is said, then that the archive itself needed nothing.
        check_equal(out[-1], "%s: nothing else to recover; the archive was not changed" % arc, "recover's last line")
        check_equal(sorted(re.sub(r" \(0 bytes\), .*", "", l) for l in out[:-1]),
                    sorted("%s: removed %s" % (arc, p) for p in stale), "recover's lines on the temporary files")
        assert all("killed before it was renamed over the archive" in l for l in out[:-1]), out
        for p in stale:
            open(p, "w").close()
        mmzip("pack", arc)
        check_equal([p for p in stale if os.path.exists(p)], [], "dead processes' files after pack")
        check_equal(mmzip("cat", arc, "y.txt").stdout, "x\n", "the archive after pack")


def test_run_without_command():
    p = mmzip("run", check=False)
    check_equal(p.returncode, 2, "run with no command")
    p = mmzip("run", "--", "/nonexistent/program", check=False)
    assert p.returncode in (1, 127), p


if __name__ == "__main__":
    main([test_help_and_usage, test_names_in_messages, test_put_cat_ls, test_put_dir_is_one_commit, test_check_finds_corruption,
          test_recover_reports, test_pack_and_info, test_pack_refuses_a_damaged_entry, test_busy_exit_code, test_put_leaves_the_slack_a_hole,
          test_stale_temporary_files_removed_by_recover_and_pack,
          test_run_without_command])
