"""mmzip.ZarrStore for someone coming from zarr.ZipStore (zarr-python 2.13): the same default mode ("a"),
which on an existing archive only reads until the first write (no lock, no byte changed, readers in other
processes, a writer in another process meanwhile); ZipStore's keywords (compression, allowZip64) accepted or
refused with a message that says why; xarray's ds.close() and the with blocks of readers letting a writer of
the same process in at once, with the garbage collector off; failures that are both mmzip.MmzipError and the
builtin OSError subclass of their errno (missing archive, directory, permission as user nobody, a full
tmpfs); and every public name of the package documented, in help(mmzip) too."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import errno  # noqa: E402
import gc  # noqa: E402
import inspect  # noqa: E402
import pickle  # noqa: E402
import pydoc  # noqa: E402
import subprocess  # noqa: E402
import zipfile  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
import zarr  # noqa: E402

import mmzip  # noqa: E402
from mmzip_testlib import PYTHON, TempDir, check_equal, main  # noqa: E402


def other_process(code, *args, user=None, wrap=None):
    """Runs code in a fresh interpreter (its own mapping and locks), as `user` if given; returns the run."""
    env = dict(os.environ)
    if env.get("MMZIP_ASAN_RUNTIME"):
        env["LD_PRELOAD"] = env["MMZIP_ASAN_RUNTIME"]
    cmd = [PYTHON, "-c", code] + [str(a) for a in args]
    p = subprocess.run((wrap or []) + cmd, capture_output=True, text=True, timeout=120, env=env, user=user)
    if p.returncode != 0:
        raise AssertionError("other process failed (%d):\n%s\n%s" % (p.returncode, p.stdout, p.stderr))
    return p


def snapshot(path):
    st = os.stat(path)
    with open(path, "rb") as f:
        return (st.st_ino, st.st_size, st.st_mtime_ns, f.read())


def write_dataset(path, values):
    with mmzip.ZarrStore(path, "w") as s:
        xr.Dataset({"v": ("t", values)}, attrs={"title": "compat"}).to_zarr(s)


def entries(path):
    with zipfile.ZipFile(path) as z:
        return {i.filename: (i.compress_type, z.read(i)) for i in z.infolist()}


READ_CODE = ("import sys, mmzip, xarray as xr\ns = mmzip.ZarrStore(sys.argv[1])\n"
             "print(repr(s), xr.open_zarr(s).v.values.tolist())\ns.close()")


def test_default_mode_is_zipstores_and_only_reads():
    """ZarrStore(path) is mode "a", as ZipStore(path). On an existing archive it reads without the writer
    lock and without touching the file; its first write takes the lock."""
    zs = inspect.signature(zarr.ZipStore).parameters
    ms = inspect.signature(mmzip.ZarrStore).parameters
    check_equal(ms["mode"].default, zs["mode"].default, "default mode, as zarr.ZipStore's")
    check_equal(ms["mode"].default, "a", "default mode")
    with TempDir() as d:
        arc = os.path.join(d, "a.zip")
        values = np.arange(12, dtype="<i4") * 3
        write_dataset(arc, values)
        before = snapshot(arc)
        # Readers with the default mode: here (kept open) and in two other processes meanwhile.
        s = mmzip.ZarrStore(arc)
        check_equal(s.mode, "a", "mode of ZarrStore(path)")
        assert "read-only until the first write" in repr(s), repr(s)
        check_equal(xr.open_zarr(s).v.values.tolist(), values.tolist(), "read with the default mode")
        for _ in range(2):
            out = other_process(READ_CODE, arc).stdout
            assert out.endswith(" %s\n" % values.tolist()), out
        check_equal(snapshot(arc), before, "archive (inode, size, mtime, bytes) after default-mode reads")
        # No writer lock is held: another process writes (and commits) while this store is open.
        other_process("import sys, mmzip\nw = mmzip.ZarrStore(sys.argv[1], 'r+')\nw['other'] = b'O'\nw.close()", arc)
        check_equal(entries(arc)["other"], (zipfile.ZIP_STORED, b"O"), "the other process's write")
        # This store's first write takes the lock: from now on the other process cannot write.
        s["mine"] = b"M"
        assert "writable" in repr(s), repr(s)
        code = ("import sys, errno, mmzip\ntry:\n    mmzip.ZarrStore(sys.argv[1], 'r+')\n"
                "except mmzip.MmzipError as e:\n    print(e.code, e.errno == errno.EBUSY, e)\n")
        out = other_process(code, arc).stdout
        assert out.startswith("-9 True ") and "open for writing by another process" in out, out
        s.close()
        got = entries(arc)
        check_equal((got["other"], got["mine"]), ((0, b"O"), (0, b"M")), "both writes, committed")
        # While another process holds the writer lock, the default mode still opens and reads; its first
        # write is refused (EBUSY), and succeeds once that writer is gone.
        env = dict(os.environ)
        if env.get("MMZIP_ASAN_RUNTIME"):
            env["LD_PRELOAD"] = env["MMZIP_ASAN_RUNTIME"]
        code = ("import sys, mmzip\nw = mmzip.ZarrStore(sys.argv[1], 'r+')\nw['held'] = b'H'\nw.flush()\n"
                "print('ready', flush=True)\nsys.stdin.read()\nw.close()\n")
        holder = subprocess.Popen([PYTHON, "-c", code, arc], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  text=True, env=env)
        try:
            check_equal(holder.stdout.readline(), "ready\n", "the other writer is open")
            s = mmzip.ZarrStore(arc)
            check_equal((bytes(s["held"]), bytes(s["mine"])), (b"H", b"M"), "read beside another process's writer")
            try:
                s["refused"] = b"R"
                raise AssertionError("a first write beside another process's writer was accepted")
            except mmzip.MmzipError as e:
                check_equal(e.errno, errno.EBUSY, "errno of the refused first write")
                assert "open for writing by another process" in str(e), str(e)
            check_equal(bytes(s["held"]), b"H", "still a reader after the refused write")
        finally:
            holder.stdin.close()
            check_equal(holder.wait(timeout=120), 0, "the other writer's exit status")
        s["after"] = b"A"
        s.close()
        check_equal(entries(arc)["after"], (0, b"A"), "the first write once the other writer is gone")
        # A store opened "a" and closed without a write changes nothing either.
        before = snapshot(arc)
        mmzip.ZarrStore(arc).close()
        with mmzip.ZarrStore(arc) as r:
            check_equal(bytes(r["mine"]), b"M", "read through a with block")
        check_equal(snapshot(arc), before, "archive after an 'a' open and close without a write")
        # A missing archive is created with "a", as zipfile (ZipStore) creates it: empty if nothing is written.
        new = os.path.join(d, "new.zip")
        zs_new = os.path.join(d, "zipstore-new.zip")
        mmzip.ZarrStore(new).close()
        zarr.ZipStore(zs_new).close()
        with zipfile.ZipFile(new) as z, zipfile.ZipFile(zs_new) as zz:
            check_equal((z.namelist(), z.testzip()), (zz.namelist(), zz.testzip()), "new empty archive vs ZipStore")


def test_zipstore_keywords():
    """Every keyword of zarr.ZipStore, with its default value, is accepted; compression other than
    ZIP_STORED and allowZip64=False are refused for writing with a message that says why."""
    with TempDir() as d:
        arc = os.path.join(d, "k.zip")
        defaults = {n: p.default for n, p in inspect.signature(zarr.ZipStore).parameters.items()
                    if p.default is not inspect.Parameter.empty}
        check_equal(sorted(defaults), ["allowZip64", "compression", "dimension_separator", "mode"],
                    "zarr.ZipStore's keywords")
        with mmzip.ZarrStore(arc, **defaults) as s:
            zarr.open_group(s).create_dataset("x", data=np.arange(50, dtype="<f8"), chunks=(20,))
        with mmzip.ZarrStore(arc, compression=zipfile.ZIP_STORED, allowZip64=True, mode="r") as s:
            check_equal(zarr.open_group(s, mode="r")["x"][:].tolist(), np.arange(50.0).tolist(), "read back")
        check_equal({t for t, _ in entries(arc).values()}, {zipfile.ZIP_STORED}, "entries stored")
        # The same values through ZipStore itself.
        with zarr.ZipStore(arc, mode="r") as z:
            check_equal(zarr.open_group(z, mode="r")["x"][:].tolist(), np.arange(50.0).tolist(), "ZipStore reads")
        for method, name in ((zipfile.ZIP_DEFLATED, "ZIP_DEFLATED"), (zipfile.ZIP_BZIP2, "ZIP_BZIP2"),
                             (zipfile.ZIP_LZMA, "ZIP_LZMA")):
            for mode in ("a", "w", "r+"):
                target = os.path.join(d, "c.zip")
                try:
                    mmzip.ZarrStore(target, mode=mode, compression=method)
                    raise AssertionError("compression=%s accepted in mode %r" % (name, mode))
                except ValueError as e:
                    msg = str(e)
                assert ("compression=" + name) in msg and "uncompressed" in msg and "ZIP_STORED" in msg and \
                    "compressor" in msg, msg
                assert not os.path.exists(target), "a refused store left a file"
            with mmzip.ZarrStore(arc, mode="r", compression=method) as s:  # writes nothing: accepted
                check_equal(bytes(s["x/0"]), entries(arc)["x/0"][1], "chunk read with compression= in mode r")
        for mode in ("a", "w", "r+"):
            try:
                mmzip.ZarrStore(arc, mode=mode, allowZip64=False)
                raise AssertionError("allowZip64=False accepted in mode %r" % mode)
            except ValueError as e:
                assert "allowZip64=False" in str(e) and "always writes ZIP64" in str(e), str(e)
        mmzip.ZarrStore(arc, mode="r", allowZip64=False).close()
        # ZipStore's positional order (path, compression) is not ours (path, mode): said so.
        try:
            mmzip.ZarrStore(arc, zipfile.ZIP_STORED)
            raise AssertionError("an int mode accepted")
        except TypeError as e:
            assert "compression=" in str(e), str(e)


def test_readers_let_a_writer_in_without_gc():
    """With the garbage collector off: xarray's ds.close() (and its with block), a reader's with block, and
    a reader left open but idle let a writer of this process open the archive and write at once. A reader
    that still holds a view blocks it with an error that says so, until the view is dropped."""
    gc.collect()
    gc.disable()
    try:
        with TempDir() as d:
            arc = os.path.join(d, "x.zip")
            write_dataset(arc, np.arange(6, dtype="<i8"))
            store = mmzip.ZarrStore(arc)
            ds = xr.open_zarr(store)
            check_equal(ds.v.values.tolist(), list(range(6)), "read by xarray")
            ds.close()
            w = mmzip.ZarrStore(arc, "a")
            zarr.open_group(w)["v"][:] = 7
            w["after-close"] = b"1"
            w.close()
            check_equal(entries(arc)["after-close"][1], b"1", "written after ds.close()")
            # The reader let go; at its next read it opens the archive again and sees the commit.
            check_equal(zarr.open_group(store, mode="r")["v"][:].tolist(), [7] * 6, "reader after the writer")
            store.close()

            with xr.open_zarr(mmzip.ZarrStore(arc)) as ds2:
                check_equal(int(ds2.v.values.sum()), 42, "sum in a with block")
            with mmzip.ZarrStore(arc, "r+") as w:
                w["after-with"] = b"2"
            with mmzip.ZarrStore(arc, "r") as r:
                check_equal(bytes(r["after-with"]), b"2", "read in a with block")
            w = mmzip.ZarrStore(arc, "a")
            w["after-reader-with"] = b"3"
            w.close()

            # A reader that still holds a view returned by store[key]: its mapping is needed.
            r = mmzip.ZarrStore(arc, "r")
            view = r["after-with"]
            w = mmzip.ZarrStore(arc, "a")
            try:
                w["blocked"] = b"4"
                raise AssertionError("a writer opened under a reader's live view")
            except mmzip.MmzipError as e:
                check_equal((e.code, e.errno), (-9, errno.EBUSY), "status and errno of the refused writer")
                assert "open read-only in this process" in str(e) and "hold no view" in str(e), str(e)
            check_equal(bytes(view), b"2", "the reader's view, intact")
            check_equal(bytes(w["after-with"]), b"2", "the refused writer still reads")
            del view
            w["blocked"] = b"4"
            w.close()
            check_equal(entries(arc)["blocked"][1], b"4", "written once the view was dropped")
            r.close()
            # Mode "a" and its own views: the first write says what to do.
            s = mmzip.ZarrStore(arc)
            own = s["blocked"]
            try:
                s["x"] = b"5"
                raise AssertionError("upgraded under a live view of its own")
            except mmzip.MmzipError as e:
                assert "mode 'a' takes the writer lock at the first write" in str(e) and "r+" in str(e), str(e)
            del own
            s["x"] = b"5"
            s.close()
            check_equal(entries(arc)["x"][1], b"5", "written after the view was dropped")
    finally:
        gc.enable()


def test_first_write_from_threads():
    """Mode "a": threads that write and read at once, from the first write on (Dask's threaded scheduler
    writing chunks), all get the one writer: every write lands, no read sees a closed store."""
    import threading
    with TempDir() as d:
        arc = os.path.join(d, "t.zip")
        with mmzip.ZarrStore(arc, "w") as s:
            s["base"] = b"B"
        for round_ in range(5):
            s = mmzip.ZarrStore(arc)
            assert "read-only until the first write" in repr(s), repr(s)
            start = threading.Barrier(8)
            errors = []

            def work(i):
                try:
                    start.wait(timeout=60)
                    s["r%d/k%d" % (round_, i)] = b"%d" % i
                    check_equal(bytes(s["base"]), b"B", "read beside the first writes")
                except Exception as e:  # reported below, with the thread's number
                    errors.append((i, repr(e)))

            threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            check_equal(errors, [], "errors of the threads")
            s.close()
            got = entries(arc)
            check_equal([got["r%d/k%d" % (round_, i)][1] for i in range(8)], [b"%d" % i for i in range(8)],
                        "every thread's write, round %d" % round_)


def check_error(exc, classes, err, filename, what):
    for c in (mmzip.MmzipError, OSError) + classes:
        assert isinstance(exc, c), "%s: %r is not a %s" % (what, exc, c.__name__)
    check_equal(exc.errno, err, what + ": errno")
    check_equal(exc.strerror, os.strerror(err), what + ": strerror")
    check_equal(exc.filename, filename, what + ": filename")
    assert str(exc).startswith(filename) or filename in str(exc), str(exc)
    copy = pickle.loads(pickle.dumps(exc))
    check_equal((type(copy), copy.code, copy.errno, copy.filename, str(copy)),
                (type(exc), exc.code, exc.errno, exc.filename, str(exc)), what + ": pickled")


def expect(fn, what):
    try:
        fn()
    except OSError as e:
        return e
    raise AssertionError(what + ": no error")


def test_errors_are_the_oserror_of_their_errno():
    with TempDir() as d:
        missing = os.path.join(d, "missing.zip")
        for mode in ("r", "r+"):
            e = expect(lambda: mmzip.ZarrStore(missing, mode), "missing, " + mode)
            check_error(e, (FileNotFoundError,), errno.ENOENT, missing, "ZarrStore missing " + mode)
            check_equal(e.code, -12, "status of a missing archive")
        e = expect(lambda: mmzip.Archive(missing), "Archive missing")
        check_error(e, (FileNotFoundError,), errno.ENOENT, missing, "Archive missing")
        assert not os.path.exists(missing)
        for mode in ("a", "r", "r+", "w"):
            e = expect(lambda: mmzip.ZarrStore(d, mode), "directory, " + mode)
            check_error(e, (IsADirectoryError,), errno.EISDIR, d, "ZarrStore directory " + mode)
        e = expect(lambda: mmzip.Archive(d), "Archive directory")
        check_error(e, (IsADirectoryError,), errno.EISDIR, d, "Archive directory")
        text = os.path.join(d, "text.zip")
        with open(text, "w") as f:
            f.write("not a zip archive\n" * 10)
        e = expect(lambda: mmzip.ZarrStore(text, "r"), "not a ZIP archive")
        check_equal((type(e), e.errno, e.filename), (mmzip.MmzipError, None, text),
                    "not a ZIP archive: no system error behind it")
        arc = os.path.join(d, "e.zip")
        with mmzip.ZarrStore(arc) as s:
            s["k"] = b"v"
        e = expect(lambda: mmzip.ZarrStore(arc, "w-"), "w- on an existing archive")
        check_error(e, (FileExistsError,), errno.EEXIST, arc, "ZarrStore w- existing")
        with mmzip.ZarrStore(arc, "r+"):
            e = expect(lambda: mmzip.ZarrStore(arc, "r+"), "second writer")
            check_equal((type(e), e.errno, e.code), (mmzip.MmzipError, errno.EBUSY, -9), "second writer")

        # Permission: as user nobody (root bypasses permissions), or as this user on a mode-0 file.
        os.chmod(d, 0o755)
        os.chmod(arc, 0o644)
        code = r"""
import errno, sys, mmzip
d, arc = sys.argv[1], sys.argv[2]
def show(what, fn):
    try:
        fn()
        print(what, "no error")
    except OSError as e:
        print(what, type(e).__name__, isinstance(e, mmzip.MmzipError), isinstance(e, PermissionError),
              errno.errorcode.get(e.errno), e.filename == fn.path, flush=True)
def first_write():
    s = mmzip.ZarrStore(arc)  # readable: opens
    print("read", bytes(s["k"]))
    s["x"] = b"1"
first_write.path = arc
new = lambda: mmzip.ZarrStore(d + "/new.zip")["x"]
new.path = d + "/new.zip"
rplus = lambda: mmzip.ZarrStore(arc, "r+")
rplus.path = arc
show("first-write", first_write)
show("create", new)
show("r+", rplus)
"""
        if os.geteuid() == 0:
            out = other_process(code, d, arc, user=65534).stdout
        else:
            os.chmod(d, 0o555)
            try:
                out = other_process(code, d, arc).stdout
            finally:
                os.chmod(d, 0o755)
        want = ("read b'v'\n"
                "first-write MmzipPermissionError True True EACCES True\n"
                "create MmzipPermissionError True True EACCES True\n"
                "r+ MmzipPermissionError True True EACCES True\n")
        if os.geteuid() != 0:  # the file is this user's own: only the directory refuses (creation)
            want = want.replace("first-write MmzipPermissionError True True EACCES True",
                                "first-write no error").replace("r+ MmzipPermissionError True True EACCES True",
                                                                "r+ no error")
        check_equal(out, want, "permission errors as %s" % ("nobody" if os.geteuid() == 0 else "this user"))
        check_equal(entries(arc), {"k": (0, b"v")}, "archive after the refused writes")

        # A full disk: a 1 MiB tmpfs in a mount namespace of its own (gone with the process).
        mnt = os.path.join(d, "mnt")
        os.mkdir(mnt)
        code = r"""
import errno, os, sys, mmzip
arc = os.path.join(sys.argv[1], "full.zip")
s = mmzip.ZarrStore(arc)
try:
    for i in range(64):
        s["c/%d" % i] = os.urandom(64 << 10)
    s.flush()
    print("no error")
except OSError as e:
    print(type(e).__name__, isinstance(e, mmzip.MmzipError), errno.errorcode.get(e.errno), e.filename == arc,
          "No space left on device" in str(e), flush=True)
"""
        wrap = ["unshare", "--mount"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "--mount"]
        script = ('mount -t tmpfs -o size=1M mmzip-full "$1" && shift && exec "$@"')
        out = other_process(code, mnt, wrap=wrap + ["sh", "-c", script, "sh", mnt]).stdout
        check_equal(out, "MmzipError True ENOSPC True True\n", "a write to a full tmpfs")
        check_equal(os.listdir(mnt), [], "the tmpfs was private to the child")


def public_methods(cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def test_every_public_name_documented():
    names = list(mmzip.__all__)
    check_equal(len(names), len(set(names)), "no name twice in __all__")
    for want in ("ZarrStore", "Archive", "MmzipError", "open", "savez", "NpzArchive", "enable_netcdf",
                 "register_h5py", "release_kept", "libdir", "MmzipFileNotFoundError", "MmzipIsADirectoryError",
                 "MmzipPermissionError", "MmzipFileExistsError"):
        assert want in names, "%s is not in mmzip.__all__" % want
    # Every public callable of the package is in __all__.
    public = {n for n, v in vars(mmzip).items() if not n.startswith("_") and (inspect.isclass(v) or
              inspect.isfunction(v)) and getattr(v, "__module__", "").startswith("mmzip")}
    check_equal(sorted(public - set(names)), [], "public names missing from __all__")
    ns = {}
    exec("from mmzip import *", ns)
    check_equal(sorted(n for n in ns if n != "__builtins__"), sorted(names), "from mmzip import *")
    undocumented = []
    for name in names:
        obj = getattr(mmzip, name)
        if not (inspect.getdoc(obj) or "").strip():
            undocumented.append(name)
        if inspect.isclass(obj):
            for mname, member in public_methods(obj):
                if not (member.__doc__ or "").strip():
                    undocumented.append("%s.%s" % (name, mname))
            if not (obj.__init__.__doc__ or obj.__doc__ or "").strip():
                undocumented.append(name + ".__init__")
    check_equal(undocumented, [], "public names and methods without a docstring")
    doc = mmzip.__doc__
    missing = [n for n in names if n not in doc]
    check_equal(missing, [], "names of __all__ not in the package docstring")
    text = pydoc.render_doc(mmzip, renderer=pydoc.plaintext)
    assert "Three things" not in text, "help(mmzip) still says 'Three things'"
    for n in names:
        assert n in text, "help(mmzip) does not show %s" % n
    for phrase in ('mode="a"', "FileNotFoundError", "PermissionError", "ENOSPC"):
        assert phrase in doc, phrase
    # The ZarrStore docstring says what mode "a" costs.
    zdoc = mmzip.ZarrStore.__doc__
    for phrase in ('What "a" costs', "writer lock", "ZIP_STORED", "allowZip64"):
        assert phrase in zdoc, phrase


if __name__ == "__main__":
    main([test_default_mode_is_zipstores_and_only_reads, test_zipstore_keywords, test_readers_let_a_writer_in_without_gc,
          test_first_write_from_threads, test_errors_are_the_oserror_of_their_errno, test_every_public_name_documented])
