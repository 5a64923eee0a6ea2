"""`mmzip put` as a new user meets it: a prefix names a folder, identical content writes nothing (a file, a tree,
standard input, and Python's Archive alike), no input from a terminal or a forgotten --dir is a usage error that
creates nothing, progress shows on a terminal and never elsewhere (put, check, pack), and entries carry times
and Unix modes so that unzip extracts what it extracts from `zip -r` (checked against zip, unzip and zipfile)."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import hashlib
import pty
import subprocess
import threading
import time
import zipfile

from mmzip_testlib import MMZIP, PYTHON, TempDir, check_equal, main, mmzip, zip_tools_ok


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write(path, data, mode=None, mtime=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def names(archive):
    with zipfile.ZipFile(archive) as z:
        return sorted(z.namelist())


def read(archive, name):
    with zipfile.ZipFile(archive) as z:
        return z.read(name)


def run_with_tty(args, stdin_tty=False, stderr_tty=False, env=None, cwd=None):
    """Runs args with stdin and/or stderr on a pseudo-terminal. Returns (status, stdout, stderr) as bytes; the
    terminal's output is everything the program wrote to it (read until the program closed it)."""
    master, slave = pty.openpty()
    chunks = []

    def drain():
        while True:
            try:
                b = os.read(master, 65536)
            except OSError:  # EIO: every holder of the slave closed it
                return
            if not b:
                return
            chunks.append(b)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        p = subprocess.run(args, stdin=slave if stdin_tty else subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=slave if stderr_tty else subprocess.PIPE, env=env, cwd=cwd, timeout=600)
    finally:
        os.close(slave)
    reader.join(timeout=60)
    assert not reader.is_alive(), "the terminal was not closed"
    os.close(master)
    tty = b"".join(chunks)
    return p.returncode, p.stdout, tty if stderr_tty else p.stderr, tty


def test_prefix_is_a_folder():
    with TempDir() as d:
        write(os.path.join(d, "lung", ".zattrs"), b"{}")
        write(os.path.join(d, "lung", "umis", ".zarray"), b"{\"shape\": []}")
        for prefix in ("lung", "lung/"):
            a = os.path.join(d, "p%d.zip" % len(prefix))
            mmzip("put", a, "--dir", os.path.join(d, "lung"), prefix)
            check_equal(names(a), ["lung/.zattrs", "lung/umis/.zarray"], "names under the prefix %r" % prefix)
            check_equal(read(a, "lung/umis/.zarray"), b"{\"shape\": []}", "bytes under the prefix")
        a = os.path.join(d, "deep.zip")
        mmzip("put", a, "--dir", os.path.join(d, "lung"), "a/b")
        check_equal(names(a), ["a/b/.zattrs", "a/b/umis/.zarray"], "names under a two-level prefix")


def test_archive_inside_the_tree():
    """The archive, when it lies in the tree it is given, is not put into itself (its bytes change meanwhile)."""
    with TempDir() as d:
        write(os.path.join(d, "s", "x"), b"x")
        a = os.path.join(d, "a.zip")
        mmzip("put", a, "--dir", d)  # a.zip does not exist yet when the tree is listed
        check_equal(names(a), ["s/x"], "names after the first put of the tree")
        p = mmzip("put", a, "--dir", d, "again")
        assert "a.zip: skipped (it is the archive)" in p.stderr, p.stderr
        check_equal(names(a), ["again/s/x", "s/x"], "names after the second put of the tree")
        zip_tools_ok(a)


def test_unreadable_tree_members_are_not_skipped_silently():
    """A file of the tree that cannot be read (a symbolic link to a missing file) fails the put, naming it, and
    nothing is written: an archive with a file less and exit status 0 would be lost data nobody is told of. A
    FIFO holds no data: it is skipped with a word, as zip -r skips it, and the rest is archived."""
    with TempDir() as d:
        tree = os.path.join(d, "t")
        write(os.path.join(tree, "a"), b"alpha")
        os.symlink("nowhere", os.path.join(tree, "dangling"))
        fresh = os.path.join(d, "fresh.zip")
        p = mmzip("put", fresh, "--dir", tree, check=False)
        assert p.returncode != 0, "put of a tree with a dangling link exited 0"
        assert "t/dangling: No such file or directory (a symbolic link whose target is missing)" in p.stderr, p.stderr
        assert not os.path.exists(fresh), "a failed put of a new archive left a file"
        old = os.path.join(d, "old.zip")
        mmzip("put", old, "k", "-", input=b"kept")
        before = sha(old)
        p = mmzip("put", old, "--dir", tree, check=False)
        assert p.returncode != 0 and "t/dangling" in p.stderr, (p.returncode, p.stderr)
        check_equal(sha(old), before, "bytes of an existing archive after a refused put --dir")
        os.remove(os.path.join(tree, "dangling"))
        os.mkfifo(os.path.join(tree, "fifo"))
        p = mmzip("put", fresh, "--dir", tree)
        assert "t/fifo: skipped (not a regular file or folder)" in p.stderr, p.stderr
        check_equal(names(fresh), ["a"], "names after a put of a tree holding a FIFO")
        check_equal(read(fresh, "a"), b"alpha", "bytes of a")
        zip_tools_ok(fresh)


def test_identical_content_writes_nothing():
    with TempDir() as d:
        a = os.path.join(d, "a.zip")
        src = os.path.join(d, "f.bin")
        write(src, os.urandom(3000))
        tree = os.path.join(d, "tree")
        for i in range(30):
            write(os.path.join(tree, "g%d" % (i % 3), "c%d" % i), os.urandom(100 + i))
        big = os.urandom((1 << 20) * 2 + 12345)  # more than one chunk of standard input
        mmzip("put", a, "k", src)
        mmzip("put", a, "--dir", tree, "t")
        subprocess.run([MMZIP, "put", a, "s", "-"], input=big, check=True)
        before = sha(a), os.path.getsize(a)
        os.utime(src)  # a newer time alone is no new content
        mmzip("put", a, "k", src)
        check_equal((sha(a), os.path.getsize(a)), before, "archive after putting the same file again")
        mmzip("put", a, "--dir", tree, "t")
        check_equal((sha(a), os.path.getsize(a)), before, "archive after putting the same tree again")
        subprocess.run([MMZIP, "put", a, "s", "-"], input=big, check=True)
        check_equal((sha(a), os.path.getsize(a)), before, "archive after the same standard input again")
        subprocess.run([MMZIP, "put", a, "k"], input=open(src, "rb").read(), check=True)
        check_equal((sha(a), os.path.getsize(a)), before, "archive after the file's bytes through standard input")
        info = dict(l.split(":", 1) for l in mmzip("info", a).stdout.splitlines())
        check_equal(int(info["dead_bytes"].split()[0]), 0, "dead bytes after the repeated puts")
        # Different content through standard input: the part that matched the stored entry, then the rest.
        for new in (big[:1 << 20], big[:(1 << 20) + 5], big + b"more", big[:1500000] + b"X" + big[1500001:], b""):
            subprocess.run([MMZIP, "put", a, "s", "-"], input=new, check=True)
            check_equal(read(a, "s") == new, True, "entry s after putting %d different bytes" % len(new))
        zip_tools_ok(a)
        # Python's Archive agrees: the same bytes under the same key write nothing either.
        import mmzip as pymmzip
        before = sha(a), os.path.getsize(a)
        with pymmzip.Archive(a, "r+") as z:
            z["k"] = open(src, "rb").read()
        check_equal((sha(a), os.path.getsize(a)), before, "archive after Archive[k] = the same bytes")


def test_no_input_is_a_usage_error():
    with TempDir() as d:
        os.makedirs(os.path.join(d, "weather.zarr"))
        write(os.path.join(d, "weather.zarr", ".zgroup"), b"{}")
        new = os.path.join(d, "new.zip")
        # Standard input a terminal, no FILE: refused at once instead of waiting for typing.
        status, out, err, _ = run_with_tty([MMZIP, "put", new, "key"], stdin_tty=True)
        check_equal(status, 2, "exit status of a put from a terminal")
        assert b"standard input is a terminal" in err and b"usage: mmzip put" in err, err
        check_equal(os.path.exists(new), False, "archive created by a refused put")
        # A forgotten --dir: the KEY names a directory, with stdin a pipe or a terminal alike.
        for tty in (False, True):
            status, out, err, _ = run_with_tty([MMZIP, "put", new, "weather.zarr"], stdin_tty=tty, cwd=d)
            check_equal(status, 2, "exit status of put ARCHIVE DIRECTORY (stdin a terminal: %s)" % tty)
            assert b"is a directory" in err and b"--dir weather.zarr" in err and b"usage:" in err, err
            check_equal(os.path.exists(new), False, "archive created by put ARCHIVE DIRECTORY")
        # A directory as FILE, a file as --dir, a missing FILE, a name no archive may hold, an alignment that is
        # no power of two up to the page size: refused, nothing created (an outside review found an invalid
        # name left a new empty archive behind, and --align abc, 0 or 128x accepted with exit status 0).
        src = os.path.join(d, "weather.zarr", ".zgroup")
        for args, code in (([new, "k", os.path.join(d, "weather.zarr")], 2),
                           ([new, "--dir", os.path.join(d, "weather.zarr", ".zgroup")], 2),
                           ([new, "k", os.path.join(d, "missing")], 1),
                           ([new, "--dir", os.path.join(d, "missing")], 1),
                           ([new, "/abs", src], 1), ([new, "a/../b", src], 1),
                           (["--align", "abc", new, "k", src], 2), (["--align=128x", new, "k", src], 2),
                           (["--align", "0", new, "k", src], 2), (["--align", "-64", new, "k", src], 2),
                           (["--align", "3", new, "k", src], 2), (["--align", "65536", new, "k", src], 2)):
            p = mmzip("put", *args, check=False)
            check_equal(p.returncode, code, "exit status of put %s" % " ".join(args[1:]))
            assert p.stderr, "no message"
            check_equal(os.path.exists(new), False, "archive created by put %s" % " ".join(args[1:]))
        # '-' stores standard input under a key that happens to name a directory here.
        subprocess.run([MMZIP, "put", new, "weather.zarr", "-"], input=b"piped", cwd=d, check=True)
        check_equal(read(new, "weather.zarr"), b"piped", "stdin under a key named like a directory")


def test_data_under_a_folder_name_refused():
    """A key ending in '/' is a folder to every ZIP reader: unzip and 7-Zip would make a folder of it and drop
    the bytes. Refused, from a file and from standard input, and through Python; the archive keeps what it had."""
    with TempDir() as d:
        a = os.path.join(d, "s.zip")
        src = os.path.join(d, "f.txt")
        write(src, b"1459 bytes, say")
        mmzip("put", a, "kept", src)
        before = hashlib.sha256(open(a, "rb").read()).hexdigest()
        for args, stdin in (([a, "dir/", src], None), ([a, "dir/", "-"], b"piped")):
            p = subprocess.run([MMZIP, "put"] + args, input=stdin, capture_output=True)
            check_equal(p.returncode, 1, "exit status of put %s" % " ".join(args[1:]))
            assert b"'dir/' ends in '/', which ZIP readers take for a folder" in p.stderr, p.stderr
            if stdin is None:  # refused before anything is written
                check_equal(hashlib.sha256(open(a, "rb").read()).hexdigest(), before, "archive bytes after the refusal")
            with zipfile.ZipFile(a) as z:  # standard input is refused once read: the entries are as they were
                check_equal(z.namelist(), ["kept"], "entries after a refused put under a folder name")
                check_equal(z.testzip(), None, "CRCs after a refused put")
        code = ("import sys, mmzip\nwith mmzip.Archive(sys.argv[1], 'r+') as z:\n    try:\n        z['d/'] = b'x'\n"
                "    except mmzip.MmzipError as e:\n        print('refused' if 'folder' in str(e) else e)\n"
                "    z['empty/'] = b''\n")
        out = subprocess.run([PYTHON, "-c", code, a], capture_output=True, text=True, env=asan_preload.child_env())
        check_equal(out.stdout.strip(), "refused", "Python put under a folder name (%s)" % out.stderr)
        with zipfile.ZipFile(a) as z:
            check_equal(sorted(z.namelist()), ["empty/", "kept"], "entries (a folder entry of no data is fine)")
            check_equal(z.getinfo("empty/").is_dir(), True, "the empty folder entry is a folder")


def test_progress_on_a_terminal_only():
    """MMZIP_PROGRESS_DELAY=0 shows progress from the start instead of after a second, so that this does not
    depend on speed; on a terminal a line must appear, elsewhere never."""
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        for i in range(40):
            write(os.path.join(tree, "c%02d" % i), os.urandom(5000))
        env = dict(os.environ, MMZIP_PROGRESS_DELAY="0")
        for cmd, what in ((["put", "A", "--dir", tree], b"mmzip put: "), (["check", "A"], b"mmzip check: "),
                          (["pack", "A", "P"], b"mmzip pack: "), (["put", "A", "one", os.path.join(tree, "c00")],
                                                                   b"mmzip put: ")):
            for tty in (True, False):
                a, packed = os.path.join(d, "a%d.zip" % tty), os.path.join(d, "p%d.zip" % tty)
                if cmd[0] == "put" and "--dir" in cmd and os.path.exists(a):
                    os.unlink(a)
                args = [MMZIP] + [a if x == "A" else packed if x == "P" else x for x in cmd]
                status, out, err, _ = run_with_tty(args, stderr_tty=tty, env=env)
                check_equal(status, 0, "exit status of mmzip %s (stderr a terminal: %s)" % (cmd[0], tty))
                if tty:
                    assert b"\r" + what in err, "no progress line from mmzip %s on a terminal: %r" % (cmd[0], err)
                    assert b"%)" in err, "progress without a percentage: %r" % err
                    assert err.endswith(b"\r\x1b[K") or b"\r\x1b[K" in err, "progress line not cleared: %r" % err
                else:
                    assert what not in err and b"\r" not in err, "progress on a pipe: %r" % err
        check_equal(names(os.path.join(d, "p1.zip")), ["c%02d" % i for i in range(40)], "the packed archive")
        check_equal(names(os.path.join(d, "a1.zip")), sorted(["c%02d" % i for i in range(40)] + ["one"]),
                    "the archive put into")


def unzip_tree(archive, dest):
    os.makedirs(dest)
    subprocess.run(["unzip", "-q", archive, "-d", dest], check=True)
    out = {}
    for root, dirs, files in os.walk(dest):
        for n in dirs + files:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, dest)] = (st.st_mode, int(st.st_mtime))
    return out


def test_times_and_modes_like_zip():
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        t = 981173106  # 2001-02-03 04:05:06 UTC: an odd second, which DOS fields cannot hold
        files = {"a.txt": (0o644, t), "run.sh": (0o755, t + 86400 * 400 + 1), "secret": (0o600, t + 7),
                 "sub/deeper/x.bin": (0o640, t + 3), "sub/y": (0o444, 1700000001)}
        for rel, (mode, mtime) in files.items():
            write(os.path.join(tree, rel), rel.encode() * 10, mode, mtime)
        mine, ref = os.path.join(d, "m.zip"), os.path.join(d, "ref.zip")
        mmzip("put", mine, "--dir", tree)
        # zip -D: no folder entries, as put --dir writes none.
        subprocess.run(["zip", "-r", "-D", "-q", ref, "."], cwd=tree, check=True)
        zip_tools_ok(mine)
        got, want = unzip_tree(mine, os.path.join(d, "x_mine")), unzip_tree(ref, os.path.join(d, "x_ref"))
        check_equal(sorted(got), sorted(want), "paths unzip extracts")
        for rel, (mode, mtime) in files.items():
            check_equal(got[rel], (0o100000 | mode, mtime), "mode and time unzip gives %s (exact: UT field)" % rel)
            check_equal(got[rel], want[rel], "mode and time of %s against zip -r" % rel)
        with zipfile.ZipFile(mine) as zm, zipfile.ZipFile(ref) as zr:
            for rel in files:
                im, ir = zm.getinfo(rel), zr.getinfo(rel)
                check_equal(im.date_time, ir.date_time, "zipfile date_time of %s against zip" % rel)
                check_equal(im.external_attr >> 16, ir.external_attr >> 16, "zipfile mode of %s against zip" % rel)
                check_equal(im.create_system, 3, "made by Unix (%s)" % rel)
                lt = time.localtime((files[rel][1] + 1) & ~1)  # odd seconds round up, as zip does
                check_equal(im.date_time, tuple(lt[:6]), "DOS time of %s" % rel)
        # --folders: folder entries as zip -r writes them (no -D); unzip then restores the folders' modes and
        # times too.
        dirs = {"sub": (0o750, t + 11), "sub/deeper": (0o700, t + 13)}
        for rel, (mode, mtime) in dirs.items():
            os.chmod(os.path.join(tree, rel), mode)
            os.utime(os.path.join(tree, rel), (mtime, mtime))
        mine, ref = os.path.join(d, "mf.zip"), os.path.join(d, "reff.zip")
        mmzip("put", "--folders", mine, "--dir", tree)
        subprocess.run(["zip", "-r", "-q", ref, "."], cwd=tree, check=True)
        check_equal(names(mine), names(ref), "names with --folders against zip -r")
        with zipfile.ZipFile(mine) as zm, zipfile.ZipFile(ref) as zr:
            for rel in dirs:
                im, ir = zm.getinfo(rel + "/"), zr.getinfo(rel + "/")
                check_equal((im.external_attr, im.date_time), (ir.external_attr, ir.date_time),
                            "folder entry %s/ against zip's" % rel)
        got, want = unzip_tree(mine, os.path.join(d, "xf_mine")), unzip_tree(ref, os.path.join(d, "xf_ref"))
        check_equal(got, want, "modes and times of everything unzip extracts, against zip -r")
        for rel, (mode, mtime) in dirs.items():
            check_equal(got[rel], (0o40000 | mode, mtime), "mode and time unzip gives the folder %s" % rel)
        mmzip("put", "--folders", os.path.join(d, "pf.zip"), "--dir", tree, "lung")
        check_equal(names(os.path.join(d, "pf.zip"))[:3], ["lung/", "lung/a.txt", "lung/run.sh"],
                    "the folder of the prefix is an entry too")
        # Standard input: the time of the put, mode 0644. A folder entry: 040755 and the MS-DOS directory bit,
        # which unzip makes into a folder one can enter, as from zip.
        a = os.path.join(d, "s.zip")
        t0 = int(time.time())
        mmzip("put", a, "piped", "-", input="data")
        mmzip("put", a, "folder/", "-", input="")
        t1 = int(time.time()) + 1
        with zipfile.ZipFile(a) as z:
            i = z.getinfo("piped")
            check_equal(i.external_attr >> 16, 0o100644, "mode of an entry from standard input")
            assert t0 - 2 <= time.mktime(i.date_time + (0, 0, -1)) <= t1, "DOS time %r not of the put" % (i.date_time,)
            f = z.getinfo("folder/")
            check_equal(f.external_attr, (0o40755 << 16) | 0x10, "attributes of a folder entry")
            check_equal(f.is_dir(), True, "zipfile sees a folder")
        os.makedirs(os.path.join(d, "folder"))
        os.chmod(os.path.join(d, "folder"), 0o755)
        zref = os.path.join(d, "zref.zip")
        subprocess.run(["zip", "-q", zref, "folder"], cwd=d, check=True)
        with zipfile.ZipFile(zref) as z:
            check_equal(z.getinfo("folder/").external_attr & 0xFFFF0010, f.external_attr & 0xFFFF0010,
                        "folder attributes against zip's")
        ex = unzip_tree(a, os.path.join(d, "x_s"))
        check_equal(ex["folder"][0], 0o40755, "mode of the folder unzip made")
        check_equal(os.listdir(os.path.join(d, "x_s", "folder")), [], "the folder can be listed")


def test_source_date_epoch():
    """$SOURCE_DATE_EPOCH replaces the time of writing and caps file times; the DOS fields are then UTC, so
    the same puts give the same bytes whenever and wherever they run."""
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        write(os.path.join(tree, "old"), b"old", 0o644, 946684800)  # 2000-01-01 00:00:00 UTC
        write(os.path.join(tree, "new"), b"new", 0o644, 2000000000)  # 2033: after the epoch below
        sde = 1234567890  # 2009-02-13 23:31:30 UTC
        images = []
        for i, tz in enumerate(("UTC", "America/New_York")):
            a = os.path.join(d, "r%d.zip" % i)
            env = dict(os.environ, SOURCE_DATE_EPOCH=str(sde), TZ=tz)
            subprocess.run([MMZIP, "put", a, "--dir", tree], env=env, check=True)
            subprocess.run([MMZIP, "put", a, "piped", "-"], input=b"x", env=env, check=True)
            images.append(open(a, "rb").read())
        check_equal(images[0] == images[1], True, "the same puts under SOURCE_DATE_EPOCH, in another zone")
        with zipfile.ZipFile(os.path.join(d, "r0.zip")) as z:
            check_equal(z.getinfo("old").date_time, (2000, 1, 1, 0, 0, 0), "a file older than the epoch")
            check_equal(z.getinfo("new").date_time, (2009, 2, 13, 23, 31, 30), "a file newer than the epoch")
            check_equal(z.getinfo("piped").date_time, (2009, 2, 13, 23, 31, 30), "standard input")


if __name__ == "__main__":
    main([test_prefix_is_a_folder, test_archive_inside_the_tree, test_identical_content_writes_nothing,
          test_no_input_is_a_usage_error, test_data_under_a_folder_name_refused, test_progress_on_a_terminal_only,
          test_times_and_modes_like_zip, test_source_date_epoch])
