"""What other programs see of an archive at rest: its size is its data, and no name ever holds a file that a
ZIP reader rejects.

1. Once the last writer has closed, os.path.getsize() of the archive is at most what zipfile sees in it -
   every entry's local header and data, the central directory and the end records - plus
   max(64 KiB, 1 %) (docs/protocol.md §3.6). A hole does not count as absent: copies without hole support
   (rsync without -S, tar, cat, uploads) move the file's size. Checked after `mmzip put` from standard input,
   from a file and with --dir, after Python's Archive, ZarrStore (62.5 MiB of chunks), mmzip.savez (against
   numpy.savez of the same arrays), after `mmzip pack` and a 2-byte append, after each put of a loop of new
   names (kept tails: their partial pages count), and in what `mmzip info` prints.
   Entries removed from the end of the data (the last ones) go with the close of the writer that removed
   them when no other process has the archive open; while one has it open (a reader of an older commit may
   hold pointers to them) they stay as dead bytes, later writers append after them, and the reader keeps
   reading them as they were.
2. A creation that waits on its input, or is killed there (SIGKILL, Ctrl-C's SIGINT), leaves nothing under
   the archive's name; an empty creation publishes the 22-byte empty archive; a writer waiting or killed on
   an existing archive leaves it as every reader accepts it. unzip -t, 7z t, zipfile and libzip (with its
   consistency checks) read whatever is there.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import re
import select
import signal
import struct
import subprocess
import time
import zipfile

import numpy as np

from mmzip_testlib import BUILD, MMZIP, TempDir, check_equal, main, mmzip, run, zip_tools_ok

LIBZIP_VERIFY = os.path.join(BUILD, "tests", "interop", "libzip_verify")
MIN_SLACK = 64 << 10


def zipfile_view(path):
    """The bytes zipfile accounts for: (entries, directory and end records), read from the headers."""
    entries = 0
    with zipfile.ZipFile(path) as z, open(path, "rb") as f:
        infos = z.infolist()
        directory = 0
        for i in infos:
            f.seek(i.header_offset)
            lh = f.read(30)
            check_equal(lh[:4], b"PK\x03\x04", "local header signature of %s" % i.filename)
            n, x = struct.unpack("<HH", lh[26:30])
            entries += 30 + n + x + i.compress_size
            directory += 46 + len(i.orig_filename.encode("utf-8" if i.flag_bits & 0x800 else "cp437")) \
                + len(i.extra) + len(i.comment)
        comment = len(z.comment)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        f.seek(size - 22 - comment - 20)
        zip64 = f.read(4) == b"PK\x06\x07"
    directory += 22 + comment + (56 + 20 if zip64 else 0)
    return entries, directory


def check_at_rest(path, what):
    """os.path.getsize(path) <= entries + directory + max(64 KiB, 1 %); returns (size, entries, directory)."""
    size = os.path.getsize(path)
    entries, directory = zipfile_view(path)
    data = entries + directory
    allowance = max(MIN_SLACK, data // 100)
    print("   %s: %d bytes on disk, zipfile accounts for %d (entries %d + directory and end records %d): %+d"
          % (what, size, data, entries, directory, size - data), flush=True)
    assert data <= size <= data + allowance, (
        "%s: the file at rest is %d bytes, but its entries, directory and end records are %d bytes (allowance "
        "%d): %d bytes of slack left by the writer" % (what, size, data, allowance, size - data))
    return size, entries, directory


def info_figures(path):
    out = mmzip("info", path).stdout
    vals = {}
    for key in ("entries", "file_bytes", "live_bytes", "dead_bytes", "reserved_bytes", "free_bytes", "kept_bytes",
                "directory_bytes", "prefix_bytes"):
        m = re.search(r"^%s:\s+(\d+) \((.+)\)$" % key, out, re.M)
        assert m, "mmzip info has no explained %s line:\n%s" % (key, out)
        vals[key] = int(m.group(1))
    return vals, out


def random_bytes(n, seed):
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def test_put_sizes():
    with TempDir() as d:
        tiny = os.path.join(d, "tiny.zip")
        mmzip("put", tiny, "hello.txt", "-", input="hello\n")
        size, entries, directory = check_at_rest(tiny, "put from standard input")
        check_equal(size, entries + directory, "size of a one-entry archive made by put (no slack at all)")
        check_equal(zipfile.ZipFile(tiny).read("hello.txt"), b"hello\n", "content")
        # a second and third put into it: each reopens, relocates its directory, and closes at rest again
        mmzip("put", tiny, "b.txt", "-", input="world\n")
        mmzip("put", tiny, "hello.txt", "-", input="hello again\n")  # a replacement: the old one is dead
        size = os.path.getsize(tiny)
        entries, directory = zipfile_view(tiny)
        dead = 30 + 9 + 26 + 6 + 64  # the first hello.txt: at most its header, name, extras, data and padding
        assert size <= entries + directory + dead + MIN_SLACK, (size, entries, directory)
        assert size < 4096, "three tiny entries make a %d-byte archive" % size

        src = os.path.join(d, "src.bin")
        with open(src, "wb") as f:
            f.write(random_bytes(3 << 20, 1))
        a = os.path.join(d, "file.zip")
        mmzip("put", a, "data.bin", src)
        size, entries, directory = check_at_rest(a, "put from a file")
        check_equal(size, entries + directory, "size of an archive created by put from a file")

        tree = os.path.join(d, "tree")
        contents = {}
        for i in range(40):
            name = "group%d/c.%d" % (i % 3, i)
            contents[name] = random_bytes(((i * 7919) % 700) * 1024 + i, 100 + i)
            os.makedirs(os.path.join(tree, os.path.dirname(name)), exist_ok=True)
            with open(os.path.join(tree, name), "wb") as f:
                f.write(contents[name])
        a = os.path.join(d, "dir.zip")
        mmzip("put", a, "--dir", tree)
        check_at_rest(a, "put --dir of 40 files (%d bytes)" % sum(map(len, contents.values())))
        with zipfile.ZipFile(a) as z:
            check_equal(sorted(z.namelist()), sorted(contents), "names after put --dir")
            for k, v in contents.items():
                assert z.read(k) == v, k
        # pack, then a 2-byte append: the append relocates the directory, the close puts it back
        mmzip("pack", a)
        packed = os.path.getsize(a)
        check_at_rest(a, "after pack")
        mmzip("put", a, "app", "-", input="xy")
        size, entries, directory = check_at_rest(a, "after pack + a 2-byte append")
        assert size - packed < 1024, "a 2-byte append grew the packed archive by %d bytes" % (size - packed)
        zip_tools_ok(a)
        out = run([LIBZIP_VERIFY, a, tree], check=False)
        # libzip reads every entry; "app" has no file in the tree, so only that one is reported missing
        assert "app" in out.stderr and all(k in out.stdout for k in contents), out.stdout + out.stderr


def test_put_loop_of_new_names():
    """A `mmzip put` per new name, sizes log-uniform from 1 byte to 2 MiB: each relocation that keeps its old
    tail leaves a range whose partial pages are no entry's. An outside review's loop went 889 bytes past the
    allowance after its 42nd put when they were counted as dead space rather than as kept bytes."""
    import random
    rng = random.Random(1)
    with TempDir() as d:
        a, blob = os.path.join(d, "loop.zip"), os.path.join(d, "blob")
        for i in range(60):
            with open(blob, "wb") as f:
                f.write(random.Random(i).randbytes(int(2 ** rng.uniform(0, 21))))
            mmzip("put", a, "k%d" % i, blob)
            check_at_rest(a, "put loop, put %d" % i)
        vals, _ = info_figures(a)
        check_equal(vals["dead_bytes"], 0, "dead_bytes after puts of new names only")


def test_python_writers():
    import mmzip as mz
    import zarr
    with TempDir() as d:
        a = os.path.join(d, "py.zip")
        with mz.Archive(a, "w+") as arc:
            for i in range(20):
                arc["k%02d" % i] = random_bytes(10_000 + i, i)
        check_at_rest(a, "Archive('w+'), 20 puts")
        with mz.Archive(a, "r+") as arc:
            arc["more"] = b"x" * 100
        check_at_rest(a, "Archive('r+'), one more put")

        z = os.path.join(d, "chunks.zarr.zip")
        store = mz.ZarrStore(z, mode="w")
        arr = zarr.zeros((4000, 2048), chunks=(500, 2048), dtype="f8", store=store, compressor=None)
        arr[:] = np.arange(4000 * 2048, dtype="f8").reshape(4000, 2048)
        store.close()
        check_equal(arr.nbytes, 62.5 * 2**20, "bytes of chunks")
        size, entries, directory = check_at_rest(z, "ZarrStore, 62.5 MiB of chunks")
        assert size < 63 * 2**20, "62.5 MiB of chunks make a %.1f MiB archive" % (size / 2**20)
        back = zarr.open(zarr.ZipStore(z, mode="r"), mode="r")
        assert np.array_equal(back[3999], np.arange(3999 * 2048, 4000 * 2048, dtype="f8")), "chunk content"

        for label, arrays in (("one large array", {"a": np.arange(2_000_000, dtype="f8")}),
                              ("50 small arrays", {"v%d" % i: np.arange(i * 10, dtype="i4") for i in range(50)}),
                              ("mixed", {"x": np.ones((300, 300)), "y": np.arange(7, dtype="u1"),
                                         "z": np.zeros(0)})):
            ours, theirs = os.path.join(d, "ours.npz"), os.path.join(d, "theirs.npz")
            mz.savez(ours, **arrays)
            np.savez(theirs, **arrays)
            size, _, _ = check_at_rest(ours, "mmzip.savez, %s" % label)
            ref = os.path.getsize(theirs)
            print("   mmzip.savez %d bytes, numpy.savez %d bytes: %.3fx" % (size, ref, size / ref), flush=True)
            # per array: mmzip's 20-byte ZIP64 and 6-byte alignment fields, up to 63 bytes of padding and a
            # larger npy header padding (64-byte aligned data), against numpy's own ZIP64 field
            assert size <= ref + len(arrays) * 256 + 128, "mmzip.savez %d bytes vs numpy.savez %d" % (size, ref)
            with np.load(ours) as f:
                for k, v in arrays.items():
                    assert np.array_equal(f[k], v), k


def test_info_explains():
    with TempDir() as d:
        a = os.path.join(d, "a.zip")
        mmzip("put", a, "one", "-", input="1" * 1000)
        mmzip("put", a, "one", "-", input="2" * 1000)  # a dead version
        vals, out = info_figures(a)
        check_equal(vals["file_bytes"], os.path.getsize(a), "file_bytes is the file's size")
        check_equal(vals["free_bytes"], 0, "free slack after the last writer closed")
        check_equal(vals["live_bytes"] + vals["dead_bytes"] + vals["reserved_bytes"] + vals["free_bytes"]
                    + vals["kept_bytes"] + vals["directory_bytes"] + vals["prefix_bytes"], vals["file_bytes"],
                    "the figures add up")
        assert vals["dead_bytes"] >= 1000, vals
        for phrase in ("the file's size, what ls -l shows and a copy moves",
                       "old versions of replaced or removed entries",
                       "the last writer's close removes it beyond max(64 KiB, 1% of the file)",
                       "central directory and end records"):
            assert phrase in out, "mmzip info does not say %r:\n%s" % (phrase, out)
        for line in out.splitlines():
            if not line.startswith(("archive:", "writer_lock:")):
                assert line.endswith(")"), "mmzip info prints a figure without saying what it is: %r" % line
        helptext = mmzip("info", "--help").stdout
        for key in ("file_bytes", "free_bytes", "max(64 KiB, 1% of the file)", "os.path.getsize"):
            assert key in helptext, "mmzip info --help does not explain %s:\n%s" % (key, helptext)

        # While a writer holds the archive, the slack may be there; `mmzip info` says so.
        p = subprocess.Popen([MMZIP, "put", a, "two"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            fill_pipe(p)
            vals, out = info_figures(a)
            assert "held" in out, out
            assert vals["free_bytes"] > MIN_SLACK, "no slack while the writer holds a reservation: %r" % vals
            check_equal(vals["file_bytes"], os.path.getsize(a), "file_bytes while a writer is at work")
            p.stdin.close()
            check_equal(p.wait(timeout=120), 0, "the put's status once its input ended")
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        check_at_rest(a, "after the waiting put finished")
        check_equal(info_figures(a)[0]["free_bytes"], 0, "free slack after that put")


READER = """import hashlib, sys, mmzip
a = mmzip.Archive(sys.argv[1], "r")
v = a["b"]
for line in sys.stdin:
    print(hashlib.sha256(v).hexdigest(), hashlib.sha256(a["b"]).hexdigest(), flush=True)
"""


def test_removed_at_the_end():
    import mmzip as mz
    import zarr
    with TempDir() as d:
        b = random_bytes(1 << 20, 7)
        want = __import__("hashlib").sha256(b).hexdigest()

        # Alone: the close removes them, and the archive is its data.
        for how in ("Archive", "ZarrStore"):
            a = os.path.join(d, "alone-%s.zip" % how)
            mmzip("put", a, "a", "-", input=b"x" * 1000)
            if how == "Archive":
                mmzip("put", a, "b", "-", input=b)
                with mz.Archive(a, "r+") as arc:
                    del arc["b"]
            else:
                with mz.ZarrStore(a, "a") as st:
                    zarr.open_group(st, "a").create_dataset("v", data=np.arange(1 << 18, dtype="f8"),
                                                            chunks=(1 << 16,), compressor=None)
                with mz.ZarrStore(a, "a") as st:
                    del zarr.open_group(st, "a")["v"]
            size, entries, directory = check_at_rest(a, "%s removed its last entries" % how)
            vals, out = info_figures(a)
            check_equal((vals["dead_bytes"], vals["free_bytes"]), (0, 0), "dead and free bytes (%s)" % how)
            assert "note:" not in out, out
            check_equal(mmzip("check", a).stderr.count("recover: nothing to do"), 1, "check (%s)" % how)
            check_equal(sorted(zipfile.ZipFile(a).namelist()), ["a"] if how == "Archive" else [".zgroup", "a"],
                        "names after the removal (%s)" % how)

        # A reader of the older commit in another process holds a pointer to b.
        a = os.path.join(d, "held.zip")
        mmzip("put", a, "a", "-", input=b"x" * 1000)
        mmzip("put", a, "b", "-", input=b)
        reader = subprocess.Popen([sys.executable, "-c", READER, a], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=asan_preload.child_env())
        def reader_sees():
            reader.stdin.write("?\n")
            reader.stdin.flush()
            return reader.stdout.readline().split()
        try:
            check_equal(reader_sees(), [want, want], "b through the reader's view and its handle")
            with mz.Archive(a, "r+") as arc:
                del arc["b"]
            kept = os.path.getsize(a)
            assert kept > 1000 + len(b), "%d bytes after the removal, the reader holding b" % kept
            vals, out = info_figures(a)
            assert vals["dead_bytes"] >= len(b) and vals["free_bytes"] == 0, vals
            assert "note:" not in out, out
            check_equal(sorted(zip_tools_ok(a)), ["a"], "names for the ZIP tools after the removal")
            rec = mmzip("recover", a)
            assert "another process has the archive open" in rec.stdout, rec.stdout
            check_equal(os.path.getsize(a), kept, "size after recover, the reader holding b")
            mmzip("put", a, "c", "-", input=random_bytes(2 << 20, 8))
            check_equal(reader_sees(), [want, want], "b through the reader after a put of 2 MiB")
            c_at = ls_offset(a, "c")
            assert c_at >= 1000 + len(b), "c written at %d, over the removed b" % c_at
        finally:
            reader.stdin.close()
            reader.wait(timeout=60)
        check_equal(sorted(zip_tools_ok(a)), ["a", "c"], "names for the ZIP tools")
        vals, _ = info_figures(a)
        assert vals["dead_bytes"] >= len(b), vals
        mmzip("pack", a)
        check_at_rest(a, "after pack")

        # Held at the removal, alone at the next writable open: it reclaims them.
        a = os.path.join(d, "held-then-alone.zip")
        mmzip("put", a, "a", "-", input=b"x" * 1000)
        mmzip("put", a, "b", "-", input=b)
        reader = subprocess.Popen([sys.executable, "-c", READER, a], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=asan_preload.child_env())
        try:
            check_equal(reader_sees(), [want, want], "b through the second reader")
            with mz.Archive(a, "r+") as arc:
                del arc["b"]
        finally:
            reader.stdin.close()
            reader.wait(timeout=60)
        assert os.path.getsize(a) > len(b), os.path.getsize(a)
        rec = mmzip("recover", a)
        assert "wrote the directory" in rec.stdout, rec.stdout
        check_at_rest(a, "recover with no reader left")


def ls_offset(path, name):
    from mmzip_testlib import ls_entries
    return ls_entries(path)[name]["offset"]


def fill_pipe(p, n=256 << 10):
    """Writes n bytes to p's standard input and returns once the process has read them all and is blocked
    reading for more: it has opened the archive, written what it read, and does nothing until more comes. A
    blocking write alone only says the process has read all but a pipe's capacity, and it may then still be
    writing that (a reservation growing moves the directory, a window in which other readers may fail); the
    kernel's own account of the process is what proves it is idle, however fast or slow the machine is."""
    p.stdin.write(b"z" * n)
    p.stdin.flush()
    wait_blocked_reading_stdin(p)


def wait_blocked_reading_stdin(p):
    """Until p sleeps in read(0, ...) with its pipe empty: /proc/PID/syscall names the system call a sleeping
    process is in (read is 0 on x86-64 and on arm64 it is 63) and its first argument (the descriptor)."""
    read_nr = {"x86_64": "0", "aarch64": "63"}[os.uname().machine]
    while True:
        assert p.poll() is None, "the writer ended while the test waited for it to read: %s" % p.stderr.read()
        try:
            with open("/proc/%d/syscall" % p.pid) as f:
                fields = f.read().split()
            with open("/proc/%d/stat" % p.pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if state == "S" and fields[:2] == [read_nr, "0x0"]:
            return
        time.sleep(0.001)


def readers_accept(path, contents, what):
    """unzip -t, 7z t, zipfile and libzip (ZIP_CHECKCONS) accept the file and read exactly `contents`."""
    try:
        got = zip_tools_ok(path)
    except AssertionError as e:
        raise AssertionError("%s: %s" % (what, e))
    check_equal(sorted(got), sorted(contents), "%s: zipfile's names" % what)
    with zipfile.ZipFile(path) as z:
        for k, v in contents.items():
            check_equal(z.read(k), v, "%s: zipfile's bytes of %s" % (what, k))
    with TempDir() as tree:
        for k, v in contents.items():
            with open(os.path.join(tree, k), "wb") as f:
                f.write(v)
        out = run([LIBZIP_VERIFY, path, tree], check=False)
        listed = {l.rsplit(" ", 2)[0]: int(l.rsplit(" ", 2)[1]) for l in out.stdout.splitlines()}
        check_equal(listed, {k: len(v) for k, v in contents.items()},
                    "%s: libzip's entries (stderr: %s)" % (what, out.stderr.strip()))
        check_equal(out.returncode, 0, "%s: libzip_verify's status (stderr: %s)" % (what, out.stderr.strip()))


def test_creation_killed_or_waiting():
    for sig in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM):
        with TempDir() as d:
            a = os.path.join(d, "new.zip")
            p = subprocess.Popen([MMZIP, "put", a, "k"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                fill_pipe(p)
                check_equal(sorted(os.listdir(d)), [], "the directory while `mmzip put new.zip k` waits on its input")
                p.send_signal(sig)
                rc = p.wait(timeout=120)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            check_equal(rc, -sig, "the put's end")
            check_equal(sorted(os.listdir(d)), [], "the directory after the put was killed by %s" % sig.name)

    with TempDir() as d:
        # a creation that ends normally appears whole, with its entry
        a = os.path.join(d, "new.zip")
        p = subprocess.Popen([MMZIP, "put", a, "k"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
        fill_pipe(p)
        assert not os.path.exists(a), "new.zip exists before its put committed"
        p.stdin.close()
        check_equal(p.wait(timeout=120), 0, "put status")
        check_equal(zipfile.ZipFile(a).read("k"), b"z" * (256 << 10), "the entry")
        readers_accept(a, {"k": b"z" * (256 << 10)}, "a piped creation")
        check_at_rest(a, "a piped creation")

        # creations that publish nothing put: the 22-byte empty archive, accepted everywhere
        os.mkdir(os.path.join(d, "empty_dir"))
        e = os.path.join(d, "empty.zip")
        mmzip("put", e, "--dir", os.path.join(d, "empty_dir"))
        check_equal(open(e, "rb").read(), b"PK\x05\x06" + bytes(18), "the empty archive's bytes")
        readers_accept(e, {}, "an empty archive")
        u = run(["unzip", "-l", e], check=False)
        check_equal(u.returncode, 1, "unzip -l status on an empty archive (its warning)")
        assert "zipfile is empty" in u.stdout + u.stderr, u.stdout + u.stderr
        e2 = os.path.join(d, "empty2.zip")
        mmzip("put", e2, "k", "-", input="")
        check_equal(zipfile.ZipFile(e2).read("k"), b"", "an empty entry")
        readers_accept(e2, {"k": b""}, "an archive with one empty entry")


def test_existing_empty_archive_writer_waiting_or_killed():
    """An existing empty archive stays the 22-byte empty archive while a put fills its replacement, and after
    the put is killed; the put that completes renames the new archive over it."""
    for sig in (signal.SIGKILL, signal.SIGINT, None):
        with TempDir() as d:
            os.mkdir(os.path.join(d, "empty_dir"))
            a = os.path.join(d, "e.zip")
            mmzip("put", a, "--dir", os.path.join(d, "empty_dir"))
            empty = b"PK\x05\x06" + bytes(18)
            check_equal(open(a, "rb").read(), empty, "the empty archive")
            p = subprocess.Popen([MMZIP, "put", a, "k"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                fill_pipe(p)
                check_equal(open(a, "rb").read(), empty, "the empty archive while a put waits on its input")
                readers_accept(a, {}, "an empty archive whose writer waits on its input")
                if sig is None:
                    p.stdin.close()
                    check_equal(p.wait(timeout=120), 0, "the put's status")
                else:
                    p.send_signal(sig)
                    check_equal(p.wait(timeout=120), -sig, "the put's end")
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            check_equal(sorted(os.listdir(d)), ["e.zip", "empty_dir"], "files after the put")
            if sig is None:
                readers_accept(a, {"k": b"z" * (256 << 10)}, "the archive the put completed")
                check_at_rest(a, "an empty archive filled by a put")
            else:
                check_equal(open(a, "rb").read(), empty, "the empty archive after the put was killed by %s" % sig.name)
                readers_accept(a, {}, "an empty archive whose writer was killed by %s" % sig.name)


def test_existing_archive_writer_waiting_or_killed():
    for sig in (signal.SIGKILL, signal.SIGINT, signal.SIGTERM):
        with TempDir() as d:
            a = os.path.join(d, "a.zip")
            mmzip("put", a, "first", "-", input="first entry\n")
            before = open(a, "rb").read()
            first_end, _ = zipfile_view(a)  # the committed entry's local header and data
            p = subprocess.Popen([MMZIP, "put", a, "k"], stdin=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                fill_pipe(p)
                readers_accept(a, {"first": b"first entry\n"}, "an archive whose writer waits on its input")
                p.send_signal(sig)
                check_equal(p.wait(timeout=120), -sig, "the put's end")
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            check_equal(sorted(os.listdir(d)), ["a.zip"], "files after the kill")
            readers_accept(a, {"first": b"first entry\n"}, "an archive whose writer was killed by %s" % sig.name)
            check_equal(zipfile.ZipFile(a).read("first"), b"first entry\n", "the committed entry")
            if sig != signal.SIGKILL:
                # A signal the put can catch: it rolls back, its close removes the slack, and it dies of it.
                assert b"interrupted" in p.stderr.read(), sig
                check_equal(open(a, "rb").read(), before, "the archive after the put was stopped by %s" % sig.name)
                continue
            # The killed writer left its slack: check names it, recover removes it, and says so with the figure.
            size = os.path.getsize(a)
            assert size > len(before) + MIN_SLACK, "no slack after the kill (%d bytes)" % size
            chk = mmzip("check", a)
            # the reservation's header lies in it: the directory is written back behind the last entry
            assert "recover: write the directory (1 entries) behind the last entry at %d" % first_end in chk.stderr, \
                chk.stderr
            n = size - len(before)
            out = mmzip("recover", a).stdout
            assert "the file shrank by %d bytes" % n in out, (n, out)
            assert "the file is now %d bytes (it was %d)" % (size - n, size) in out, out
            check_equal(open(a, "rb").read(), before, "the archive after recover (as before the killed writer)")
            check_equal(mmzip("recover", a).stdout, "%s: nothing to recover; the archive was not changed\n" % a,
                        "a second recover")
            # the next writer's close leaves it at rest again, as it was plus the new entry
            mmzip("put", a, "second", "-", input="2")
            check_at_rest(a, "after the next put")
            check_equal(open(a, "rb").read()[:first_end], before[:first_end], "the committed entry's bytes")


def test_writer_killed_after_commit():
    """A writer killed after a commit, before its close: the slack is a hole no reader looks at, which check
    names and recover removes (as the close would have), with the figure."""
    with TempDir() as d:
        a = os.path.join(d, "a.zip")
        mmzip("put", a, "first", "-", input="first entry\n")
        script = ("import os, signal, sys, mmzip\n"
                  "a = mmzip.Archive(sys.argv[1], 'r+')\n"
                  "a['second'] = b'2' * 5000\n"          # committed at once
                  "os.kill(os.getpid(), signal.SIGKILL)\n")
        p = subprocess.run([os.environ.get("MMZIP_PYTHON", "/usr/bin/python3"), "-c", script, a],
                           capture_output=True, env=asan_preload.child_env())
        check_equal(p.returncode, -signal.SIGKILL, "the writer's end (%s)" % p.stderr)
        contents = {"first": b"first entry\n", "second": b"2" * 5000}
        readers_accept(a, contents, "an archive whose writer was killed after a commit")
        size = os.path.getsize(a)
        entries, directory = zipfile_view(a)
        n = size - entries - directory
        assert n > MIN_SLACK, "the killed writer left no slack (%d bytes)" % size
        chk = mmzip("check", a)
        assert ("recover: remove the %d bytes of free slack below the directory" % n) in chk.stderr, \
            chk.stdout + chk.stderr
        out = mmzip("recover", a).stdout
        assert "the file shrank by %d bytes" % n in out, (n, out)
        check_at_rest(a, "after recover")
        check_equal(os.path.getsize(a), entries + directory, "size after recover")
        readers_accept(a, contents, "after recover")
        check_equal(mmzip("check", a).stderr.count("recover: nothing to do"), 1, "check after recover")


if __name__ == "__main__":
    main([test_put_sizes, test_put_loop_of_new_names, test_python_writers, test_info_explains, test_removed_at_the_end,
          test_creation_killed_or_waiting,
          test_existing_empty_archive_writer_waiting_or_killed, test_existing_archive_writer_waiting_or_killed,
          test_writer_killed_after_commit])
