"""mmzip.ZarrStore - a zarr-python 2 store over one mmzip archive (see docs/user-guide.md, "Python").

What it changes for someone who used ``zarr.ZipStore``:

* Reads of stored chunks are read-only memoryviews into the archive's one shared mapping: no read call, no
  copy until zarr copies the chunk into the array it returns (or decompresses it).
* Rewriting a key replaces it: the archive never holds two directory entries of one name.
* Writes are appended and published in batches: ``flush()`` commits, ``close()`` commits and releases.
  Other processes see the last commit, which is always a complete, valid ZIP archive.
* One writer per archive, across processes: a second writable open raises ``MmzipError`` (EBUSY) at once.
* It pickles by path and mode, so Dask and multiprocessing workers reopen it (see ``__setstate__``).

Lifetime of the zero-copy views. A view returned by ``store[key]`` stays valid after ``close()``: the views
keep the archive mapped (they hold a reference to the core handle), and the handle is released when the
store is closed and the last view is gone. For a read-only store that costs nothing but the address space.
For a writer, ``close()`` commits at once, but the writer lock is released only when the last view it handed
out is dropped; zarr and xarray drop theirs at once, so this only shows when the caller keeps
``store[key]`` results beyond ``close()``, and a ResourceWarning says so. Entries the writer has not yet
committed are returned as copies (their bytes may be rewritten in place before the commit).
"""
import ctypes
import os
import threading
import warnings
import weakref

from numcodecs.compat import ensure_contiguous_ndarray_like
from zarr.errors import ReadOnlyError
from zarr.storage import Store
from zarr.util import normalize_storage_path

from . import MmzipError, _lib_path

__all__ = ["ZarrStore"]

# mmzip.h values used here.
_ENOTFOUND = -1
_ETOOBIG = -11
_DURABLE = 1
_PUBLISH_ON_COMMIT = 2
_COMMIT_MANUAL = 2
_NAMES_CHILDREN = 1


class StoreReadOnlyError(ReadOnlyError):
    """zarr's ReadOnlyError (a PermissionError) with a message that says which archive and why."""

    def __init__(self, message):
        PermissionError.__init__(self, message)


class _Options(ctypes.Structure):
    _fields_ = [("max_file_size", ctypes.c_uint64), ("alignment", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("commit_policy", ctypes.c_uint32), ("max_pending_entries", ctypes.c_uint32),
                ("max_pending_bytes", ctypes.c_uint64), ("max_decoded_size", ctypes.c_uint64),
                ("copy_threads", ctypes.c_uint32), ("reserved32_", ctypes.c_uint32),
                ("reserved_", ctypes.c_uint64 * 3)]


class _Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("name_len", ctypes.c_size_t), ("size", ctypes.c_uint64),
                ("compressed_size", ctypes.c_uint64), ("header_offset", ctypes.c_uint64),
                ("data_offset", ctypes.c_uint64), ("crc32", ctypes.c_uint32), ("method", ctypes.c_uint16),
                ("flags", ctypes.c_uint16), ("alignment", ctypes.c_uint32), ("pending", ctypes.c_int)]


_core = None


def _c():
    """The core library with this module's own prototypes (its own CDLL object, so that the prototypes set
    here and those of mmzip/__init__.py never disturb each other)."""
    global _core
    if _core is None:
        c = ctypes.CDLL(_lib_path("libmmzip.so"))
        vp, cp, u64, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_size_t
        proto = {
            "mmzip_open": [cp, cp, ctypes.POINTER(_Options), ctypes.POINTER(vp)],
            "mmzip_close": [vp], "mmzip_commit": [vp], "mmzip_refresh": [vp],
            "mmzip_get": [vp, cp, ctypes.POINTER(vp), ctypes.POINTER(u64)],
            "mmzip_stat": [vp, cp, ctypes.POINTER(_Info)],
            "mmzip_put": [vp, cp, vp, u64, ctypes.c_uint32],
            "mmzip_remove": [vp, cp], "mmzip_exists": [vp, cp],
            "mmzip_list_names": [vp, cp, ctypes.c_uint, vp, sz, ctypes.POINTER(sz), ctypes.POINTER(sz)],
        }
        for name, args in proto.items():
            f = getattr(c, name)
            f.argtypes = args
            f.restype = ctypes.c_int
        c.mmzip_count.argtypes = [vp]
        c.mmzip_count.restype = sz
        c.mmzip_options_init.argtypes = [ctypes.POINTER(_Options)]
        c.mmzip_options_init.restype = None
        c.mmzip_last_error.restype = cp
        _core = c
    return _core


def _check(rc):
    if rc != 0:
        raise MmzipError(rc, _c().mmzip_last_error().decode("utf-8", "replace"))


class _Handle:
    """One core handle. Zero-copy views hold a reference to it, so the mapping outlives them; it is closed
    when the store has let go of it (close()) and no view is left."""

    def __init__(self, path, cmode, opts):
        self.h = ctypes.c_void_p()
        _check(_c().mmzip_open(os.fsencode(path), cmode.encode(), ctypes.byref(opts), ctypes.byref(self.h)))
        self.writable = cmode != "r"
        self.views = 0            # live views (writers only: counted to say why the lock is still held)
        self.views_mu = threading.Lock()

    def release(self):
        if self.h:
            h, self.h = self.h, ctypes.c_void_p()
            _check(_c().mmzip_close(h))

    def view_gone(self):
        with self.views_mu:
            self.views -= 1

    def __del__(self):
        try:
            self.release()
        except Exception:
            pass


# Store modes -> core modes. "a" creates the archive if missing; "w" replaces it; "w-" (zarr's "x") creates
# it and fails if it exists.
_MODES = {"r": "r", "r+": "r+", "a": "w+", "w": "w", "w-": "w", "x": "w"}


def _split_subdataset(path):
    """``"a.zip#/g/sub"`` -> (absolute archive path, "g/sub"); a path without ``#/`` -> (absolute path, "").
    The separator is the first ``#/`` whose left side is an existing file (an archive's own name may hold
    ``#/``), else the first one, as the HDF5 driver and the netCDF plugin read such names."""
    seps = [i for i in range(len(path)) if path.startswith("#/", i)]
    cut = next((i for i in seps if os.path.isfile(path[:i])), seps[0] if seps else None)
    if cut is None:
        return os.path.abspath(path), ""
    parts = [p for p in path[cut + 2:].split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise ValueError("mmzip.ZarrStore: %r: '.' and '..' are not group names" % (path,))
    return os.path.abspath(path[:cut]), "/".join(parts)


class ZarrStore(Store):
    """A zarr-python 2 store over the mmzip archive at ``path``.

    ``path`` may name a sub-dataset, ``"archive.zip#/group/sub"`` (the address the netCDF plugin and the
    HDF5 driver read too): the store is then rooted at that group, its keys relative to it; modes "r",
    "r+" and "a" only (a sub-dataset of an append-only archive cannot be truncated).

    ``mode``: "r" (read-only; the archive must exist), "r+" (read/write; must exist), "a" (read/write,
    created if missing), "w" (a new, empty archive that replaces any existing one when first committed),
    "w-" or "x" (a new archive; FileExistsError if the file exists).

    ``durable=True`` fsyncs every commit (survives a power loss, not only a crash of the process).
    ``alignment`` aligns the data of new entries (power of two up to the page size; default 64).
    ``dimension_separator`` as for zarr's own stores.

    Writers: every write is appended at once, but published only by ``flush()`` or ``close()`` (one
    central-directory write each), so readers in other processes move from one complete state to the next.
    A writer killed before ``flush()`` leaves the archive at its last commit.
    Readers: the store sees the commit that was last when it was opened; ``refresh()`` moves it to the
    newest one (views handed out earlier stay valid). Stores of one file in one process share their view.
    """

    _erasable = True

    def __init__(self, path, mode="r", *, durable=False, alignment=None, dimension_separator=None):
        if mode not in _MODES:
            raise ValueError("mmzip.ZarrStore: mode must be one of r, r+, a, w, w-, x, not %r" % (mode,))
        self.path, self.group = _split_subdataset(os.fspath(path))
        if self.group and mode not in ("r", "r+", "a"):
            raise ValueError("mmzip.ZarrStore: mode %r would truncate %s, and the sub-dataset %r lives in an "
                             "append-only archive: use 'a' (created if missing) or 'r+'"
                             % (mode, self.path, self.group))
        self._root = self.group + "/" if self.group else ""
        self.mode = mode
        self.durable = bool(durable)
        self.alignment = alignment
        self._dimension_separator = dimension_separator
        self.pickled_from_mode = None
        self._open(mode)

    def _open(self, mode):
        if mode in ("w-", "x") and os.path.lexists(self.path):
            raise FileExistsError("mmzip.ZarrStore: %s exists (mode %r creates a new archive only)"
                                  % (self.path, mode))
        opts = _Options()
        _c().mmzip_options_init(ctypes.byref(opts))
        opts.commit_policy = _COMMIT_MANUAL
        if self.durable:
            opts.flags |= _DURABLE
        if _MODES[mode] in ("w", "w+") and not os.path.exists(self.path) or _MODES[mode] == "w":
            # A new archive appears (atomically) at the first commit; "w" leaves the one it replaces
            # untouched until then, so readers keep seeing a complete archive.
            opts.flags |= _PUBLISH_ON_COMMIT
        if self.alignment:
            opts.alignment = int(self.alignment)
        self._h = _Handle(self.path, _MODES[mode], opts)
        self._writeable = self._h.writable
        if not self._h.writable:
            # Another handle of this process may have kept an older view of the file: start from the newest
            # commit.
            _check(_c().mmzip_refresh(self._h.h))

    # -- state -------------------------------------------------------------------------------------------

    def _handle(self):
        h = self._h
        if h is None:
            raise ValueError("mmzip.ZarrStore: %s is closed" % self.path)
        return h

    def _writer(self, what):
        h = self._handle()
        if not h.writable:
            if self.pickled_from_mode:
                raise StoreReadOnlyError("mmzip.ZarrStore: cannot %s in %s: this store was unpickled from a store "
                                    "opened with mode %r, and unpickled copies are read-only (an archive has "
                                    "one writer; write through the original)"
                                    % (what, self.path, self.pickled_from_mode))
            raise StoreReadOnlyError("mmzip.ZarrStore: cannot %s in %s: opened read-only" % (what, self.path))
        return h

    def flush(self):
        """Commits what was written since the last commit (one central-directory write). A read-only or
        closed store: nothing to do."""
        h = self._h
        if h is not None and h.writable:
            _check(_c().mmzip_commit(h.h))

    def refresh(self):
        """Read-only stores: moves to the newest commit of the archive. A writer always sees its own state."""
        h = self._handle()
        if not h.writable:
            _check(_c().mmzip_refresh(h.h))

    def close(self):
        """Commits (writers) and releases the archive. Calling it again does nothing."""
        h, self._h = self._h, None
        if h is None:
            return
        err = None
        if h.writable:
            try:
                _check(_c().mmzip_commit(h.h))
            except MmzipError as e:
                err = e
            with h.views_mu:
                live = h.views
            if live:
                warnings.warn("mmzip.ZarrStore: %s is committed, but %d view(s) returned by store[key] are still "
                              "alive: the writer lock is held until they are dropped" % (self.path, live),
                              ResourceWarning, stacklevel=2)
        del h  # the handle closes now, or when the last view referring to it goes
        if err is not None:
            raise err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __getstate__(self):
        # Like zarr's ZipStore: what is written is published first, so that the copy sees it.
        self.flush()
        return {"path": self.path, "group": self.group, "mode": self.mode, "durable": self.durable, "alignment": self.alignment,
                "dimension_separator": self._dimension_separator, "pickled_from_mode": self.pickled_from_mode}

    def __setstate__(self, state):
        """An archive has one writer. The copy of a writable store made by unpickling (in a Dask or
        multiprocessing worker, or in this process) would be a second writer, so it opens the archive
        read-only: it reads what the original had committed when it was pickled (and newer commits after
        ``refresh()``), and a write through it raises ReadOnlyError naming the original mode."""
        self.path = state["path"]
        self.group = state.get("group", "")
        self._root = self.group + "/" if self.group else ""
        self.durable = state["durable"]
        self.alignment = state["alignment"]
        self._dimension_separator = state["dimension_separator"]
        self.pickled_from_mode = state["pickled_from_mode"]
        if state["mode"] != "r":
            self.pickled_from_mode = self.pickled_from_mode or state["mode"]
        self.mode = state["mode"]
        self._open("r")

    def __eq__(self, other):
        return (isinstance(other, ZarrStore) and self.path == other.path and self.group == other.group
                and self.mode == other.mode)

    def __repr__(self):
        state = "closed" if self._h is None else ("read-only" if not self._h.writable else "writable")
        where = self.path + ("#/" + self.group if self.group else "")
        return "<mmzip.ZarrStore %r mode=%r %s>" % (where, self.mode, state)

    # -- mapping -----------------------------------------------------------------------------------------

    def _key(self, key):
        if not isinstance(key, str):
            raise TypeError("mmzip.ZarrStore: keys are str, not %s" % type(key).__name__)
        return (self._root + key).encode("utf-8")

    def __getitem__(self, key):
        h = self._handle()
        k = self._key(key)
        p, n = ctypes.c_void_p(), ctypes.c_uint64()
        if h.writable:
            info = _Info()
            rc = _c().mmzip_stat(h.h, k, ctypes.byref(info))
            if rc == _ENOTFOUND:
                raise KeyError(key)
            _check(rc)
            if info.pending:
                # Not yet committed: the writer may rewrite these bytes in place before the commit.
                rc = _c().mmzip_get(h.h, k, ctypes.byref(p), ctypes.byref(n))
                _check(rc)
                return ctypes.string_at(p.value, n.value) if n.value else b""
        rc = _c().mmzip_get(h.h, k, ctypes.byref(p), ctypes.byref(n))
        if rc == _ENOTFOUND:
            raise KeyError(key)
        _check(rc)
        if n.value == 0:
            return b""
        buf = (ctypes.c_char * n.value).from_address(p.value)
        buf._mmzip_handle = h  # keeps the mapping alive as long as the view
        if h.writable:
            with h.views_mu:
                h.views += 1
            weakref.finalize(buf, h.view_gone)
        return memoryview(buf).cast("B").toreadonly()

    def __setitem__(self, key, value):
        h = self._writer("write %r" % (key,))
        k = self._key(key)
        data = ensure_contiguous_ndarray_like(value).view("u1")
        _check(_c().mmzip_put(h.h, k, data.ctypes.data, data.nbytes, 0))

    def __delitem__(self, key):
        h = self._writer("delete %r" % (key,))
        rc = _c().mmzip_remove(h.h, self._key(key))
        if rc == _ENOTFOUND:
            raise KeyError(key)
        _check(rc)

    def __contains__(self, key):
        if not isinstance(key, str):
            return False
        return bool(_c().mmzip_exists(self._handle().h, self._key(key)))

    def _names(self, prefix, flags):
        """Entry names under prefix (relative to the store's root, as are the names returned)."""
        h = self._handle()
        prefix = self._root + prefix
        need, count = ctypes.c_size_t(), ctypes.c_size_t()
        cap = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(cap)
            rc = _c().mmzip_list_names(h.h, prefix.encode("utf-8"), flags, buf, cap, ctypes.byref(need),
                                       ctypes.byref(count))
            if rc == _ETOOBIG:
                cap = need.value + 4096
                continue
            _check(rc)
            if count.value == 0:
                return []
            names = buf.raw[:need.value - 1].decode("utf-8").split("\0")
            return [n[len(self._root):] for n in names] if self._root and not flags else names

    def keys(self):
        return self._names("", 0)

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        if self._root:
            return len(self._names("", 0))
        return int(_c().mmzip_count(self._handle().h))

    def listdir(self, path=None):
        path = normalize_storage_path(path)
        prefix = path + "/" if path else ""
        return sorted({n.rstrip("/") for n in self._names(prefix, _NAMES_CHILDREN)})

    def rmdir(self, path=None):
        h = self._writer("remove %r" % (path or "/",))
        path = normalize_storage_path(path)
        prefix = path + "/" if path else ""
        for name in self._names(prefix, 0):
            _check(_c().mmzip_remove(h.h, self._key(name)))

    def getsize(self, path=None):
        """Bytes stored: of the entry ``path``, or of the entries directly below ``path`` (not recursive,
        as zarr's DirectoryStore and ZipStore count)."""
        h = self._handle()
        path = normalize_storage_path(path)
        info = _Info()
        if path:
            rc = _c().mmzip_stat(h.h, self._key(path), ctypes.byref(info))
            if rc == 0:
                return int(info.compressed_size)
            if rc != _ENOTFOUND:
                _check(rc)
        prefix = path + "/" if path else ""
        size = 0
        for child in self._names(prefix, _NAMES_CHILDREN):
            if child.endswith("/"):
                continue
            _check(_c().mmzip_stat(h.h, self._key(prefix + child), ctypes.byref(info)))
            size += int(info.compressed_size)
        return size

    def clear(self):
        self.rmdir("")
