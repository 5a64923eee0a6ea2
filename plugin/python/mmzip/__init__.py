"""mmzip - Python helper for the mmzip ZIP store: many files in one ZIP archive, read in place from one
shared memory map, written by appending and published by atomic commits.

Zarr, xarray, Dask:

* ``mmzip.ZarrStore(path, mode="a")`` is a zarr-python 2 store over one archive, in the place of
  ``zarr.ZipStore`` (same default mode and keywords): ``xr.open_zarr(mmzip.ZarrStore("a.zarr.zip"))``.
  Reads are zero-copy views; an existing archive opened with the default mode is only read until the first
  write. Needs zarr-python 2.

NumPy:

* ``mmzip.open(path, mode)`` gives an ``NpzArchive``; ``mmzip.savez(path, **arrays)`` writes one: ``.npz``
  arrays as views into one mapping, written aligned, writable in place in modes r+/w+/a+.

netCDF and HDF5:

* ``mmzip.enable_netcdf()`` makes netCDF-C, and so netCDF4-python, open ``.zarr.zip`` archives in place
  (bare paths ending in ``.zip``, ``file:///...#mode=nczarr,zip``, ``#mode=zarr,zip``). Call it before
  ``import netCDF4``: the plugin must be loaded before libnetcdf to take its place.
* ``mmzip.register_h5py()`` registers the HDF5 driver ``"mmzip"`` with h5py:
  ``h5py.File("a.zip", "r", driver="mmzip", member="x.h5")``.

The archive itself:

* ``mmzip.Archive`` opens an archive directly: in ``with mmzip.Archive("a.zip") as a:``, ``a["key"]`` is a
  zero-copy, read-only ``memoryview`` into the shared mapping (``numpy.frombuffer`` turns it into an array
  without a copy), valid until the archive is closed.
* ``mmzip.release_kept()`` gives back what the process keeps of closed archives; ``mmzip.libdir()`` says
  where the libraries are.

Errors: ``mmzip.MmzipError``, an ``OSError`` with the library's message, ``code`` (the mmzip status) and
``errno``/``filename`` when the system gave a reason. A missing archive, a directory, a refused permission
and a name taken are also the builtin ``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError``,
``FileExistsError``: as ``MmzipFileNotFoundError``, ``MmzipIsADirectoryError``, ``MmzipPermissionError`` and
``MmzipFileExistsError``, which derive from both. A full disk is an ``MmzipError`` with ``errno`` ENOSPC.
A damaged entry (its bytes do not match its CRC-32) is ``mmzip.CRCError``, an ``MmzipError`` and a
``zipfile.BadZipFile`` (what zarr's ``ZipStore`` and ``numpy.load`` raise), from every read that hands out a
whole entry: ``ZarrStore``, ``Archive[key]``, ``mmzip.open(...)[name]`` check the CRC-32 by default.
An archive whose records hold a wrong field that Python's ``zipfile`` reads past (an entry count, a comment
length, a stored size, a local header's method) is read the same way, with an ``mmzip.ArchiveWarning``
naming the field and the entry at the open.
"""
import ctypes
import os
import sys
import urllib.parse
import weakref

from . import _core
from ._core import (ArchiveWarning, CRCError, MmzipError, MmzipFileExistsError, MmzipFileNotFoundError, MmzipIsADirectoryError,
                    MmzipPermissionError, libdir)
from ._core import lib_path as _lib_path

__all__ = ["ZarrStore", "open", "savez", "NpzArchive", "enable_netcdf", "register_h5py", "Archive", "release_kept",
           "libdir", "MmzipError", "MmzipFileNotFoundError", "MmzipIsADirectoryError", "MmzipPermissionError",
           "MmzipFileExistsError", "CRCError", "ArchiveWarning"]


_netcdf_plugin = None


def _netcdf_already_loaded():
    try:
        with open("/proc/self/maps") as f:
            return any("libnetcdf.so" in line for line in f)
    except OSError:
        return "netCDF4" in sys.modules


def enable_netcdf():
    """Loads the mmzip storage map for netCDF-C, so that netCDF4 opens .zip archives: bare paths ending in
    .zip, file:///...#mode=nczarr,zip and #mode=zarr,zip. Must run before netCDF4 (or anything that loads
    libnetcdf) is imported; raises RuntimeError otherwise, since netCDF-C binds its storage-map calls when
    it is loaded. Under `mmzip run` (the plugin is already preloaded) it only returns it. Returns the
    loaded library. Calling it twice is harmless."""
    global _netcdf_plugin
    if _netcdf_plugin is not None:
        return _netcdf_plugin
    try:
        with open("/proc/self/maps") as f:
            preloaded = [line.split()[-1] for line in f if line.rstrip().endswith("/libmmzip_nczarr.so")]
    except OSError:
        preloaded = []
    if preloaded:
        # Preloaded (LD_PRELOAD): it already comes before libnetcdf; this only gets a handle on it.
        _netcdf_plugin = ctypes.CDLL(preloaded[0], mode=ctypes.RTLD_GLOBAL)
        _guard_netcdf4_append_modes()
        return _netcdf_plugin
    if _netcdf_already_loaded():
        raise RuntimeError("mmzip.enable_netcdf() must be called before netCDF4 (libnetcdf) is imported: "
                           "netCDF-C resolves its storage-map functions when it is loaded")
    _netcdf_plugin = ctypes.CDLL(_lib_path("libmmzip_nczarr.so"), mode=ctypes.RTLD_GLOBAL)
    _guard_netcdf4_append_modes()
    return _netcdf_plugin


# netCDF4-python chooses between opening and creating, in modes "a" and "r+", with os.path.exists(filename).
# That is false for a URL ("file:///d/x.zarr.zip#mode=nczarr,zip") or a member name ("a.zip#/x.nc"), so
# it would *create* the dataset, replacing the archive or the member with an empty one. The guard gives
# netCDF4's module an os.path whose exists() answers for those names what the dataset's existence is; for
# every other name, and for everything else in os, it is the real one.

def _dataset_exists(name):
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if not isinstance(name, str):
        return os.path.exists(name)
    if os.path.exists(name):
        return True
    if name.startswith("file://"):
        path, _, fragment = name[len("file://"):].partition("#")
        return _fragment_dataset_exists(urllib.parse.unquote(path), fragment)
    mode = name.lower().find("#mode=")
    if mode > 0:
        # A path with netCDF's fragment ("data.zarr.zip#mode=zarr", netcdf-guide.md section 2): the archive
        # before it (an outside review: mode "a" created over the archive, deleting what it held).
        return _fragment_dataset_exists(name[:mode], name[mode + 1:])
    if "#/" in name:
        # The reading every route makes of the name (mmzip_split_name): an ambiguous one is left to
        # netCDF-C's open, which refuses it naming both readings, rather than created over.
        try:
            archive, member = _core.split_name(name)
        except MmzipError as e:
            return e.code != _core.ENOENT
        if member is None:
            return os.path.lexists(name)
        try:
            with Archive(archive) as a:
                # A member (HDF5 route), or a group's entries (a Zarr sub-dataset, "a.zip#/group/sub").
                member = member.strip("/")
                return member in a or bool(a.keys(member + "/"))
        except OSError:
            return True  # let netCDF-C open it and report what is wrong, rather than create over it
    return False


def _fragment_dataset_exists(path, fragment):
    """Whether the dataset of an archive path and a URL fragment ("mode=nczarr,zip&group=/lung") exists."""
    group = [urllib.parse.unquote(p[6:]) for p in fragment.split("&") if p.lower().startswith("group=")]
    if group and os.path.isfile(path):
        return _dataset_exists(path + "#/" + group[-1].strip("/"))
    return os.path.exists(path)


class _DatasetAwarePath:
    def __getattr__(self, attr):
        return getattr(os.path, attr)

    @staticmethod
    def exists(name):
        return _dataset_exists(name)


class _DatasetAwareOs:
    path = _DatasetAwarePath()

    def __getattr__(self, attr):
        return getattr(os, attr)


def _install_guard(module):
    if isinstance(getattr(module, "os", None), _DatasetAwareOs):
        return
    if getattr(module, "os", None) is not os:
        return  # a netCDF4-python that does not decide this way: nothing to guard
    module.os = _DatasetAwareOs()


class _Netcdf4ImportHook:
    """Installs the guard in netCDF4._netCDF4 as soon as it is imported (enable_netcdf runs before)."""

    def find_spec(self, name, path=None, target=None):
        if name != "netCDF4._netCDF4":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                real_exec = spec.loader.exec_module

                def exec_module(module, real_exec=real_exec):
                    real_exec(module)
                    _install_guard(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def _guard_netcdf4_append_modes():
    loaded = sys.modules.get("netCDF4._netCDF4")
    if loaded is not None:
        _install_guard(loaded)
    elif not any(isinstance(f, _Netcdf4ImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _Netcdf4ImportHook())


_h5_plugin = None


def register_h5py():
    """Registers the HDF5 virtual file driver "mmzip" with h5py. Then
    ``h5py.File("a.zip", mode, driver="mmzip", member="x.h5")`` opens the member x.h5 of a.zip in place
    (``member`` may be omitted when the archive holds a single HDF5 member, or given in the path as
    ``"a.zip#/x.h5"``). Modes r, r+, a, w. ``durable=True`` makes every flush and close survive a power
    loss (fsync), not only a crash of the process. HDF5 reads parts of the member, in place, and by default
    nothing checks its CRC-32 (that would read all of it); ``verify=True`` checks it once at the open, which
    fails (OSError naming the archive, the member and both CRCs) if the member is damaged. See
    docs/hdf5-guide.md."""
    global _h5_plugin
    import h5py
    if _h5_plugin is None:
        lib = ctypes.CDLL(_lib_path("libmmzip_h5fd.so"), mode=ctypes.RTLD_GLOBAL)
        lib.H5Pset_fapl_mmzip.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_uint]
        lib.H5Pset_fapl_mmzip.restype = ctypes.c_int
        _h5_plugin = lib

    def set_fapl(plist, member=None, flags=0, durable=False, verify=False, **kwds):
        if kwds:
            raise TypeError("unexpected arguments for driver 'mmzip': %s" % ", ".join(sorted(kwds)))
        if durable:
            flags |= 1  # H5FD_MMZIP_DURABLE
        if verify:
            flags |= 2  # H5FD_MMZIP_VERIFY
        m = os.fsencode(member) if member is not None else None
        if _h5_plugin.H5Pset_fapl_mmzip(plist.id, m, flags) < 0:
            raise MmzipError(-4, "driver 'mmzip': H5Pset_fapl_mmzip refused member=%r flags=%#x (the "
                             "known flags are 1, durable, and 2, verify)" % (member, flags))

    h5py.register_driver("mmzip", set_fapl)
    _follow_links_with_the_driver(h5py)


_h5_driver_files = {}  # HDF5 file number -> 1 if that file was opened with this driver


def _follow_links_with_the_driver(h5py):
    """h5py opens the target of every external link with a fresh file access list of its own (sec2, the default
    driver): a target that is a member of the referring file's archive, named relative to it as it was beside
    the file before the file went into the archive, was not found, or a stale file of that name beside the
    archive was read instead, with no error (an outside review). For files opened with this driver the links are
    followed with the referring file's own access list instead (HDF5's default: its driver, which looks for the
    member first, docs/hdf5-guide.md section 5); other files keep h5py's."""
    import importlib
    base = importlib.import_module(h5py.File.__module__.rsplit(".", 1)[0] + ".base")
    cls = base.CommonStateObject
    if getattr(cls, "_mmzip_lapl", None) is not None:
        return
    h5p, h5i = h5py.h5p, h5py.h5i
    inherit = h5p.create(h5p.LINK_ACCESS)  # no external-link access list: the referring file's is used
    driver = ctypes.CDLL(_lib_path("libmmzip_h5fd.so")).H5FD_mmzip_init
    driver.restype = ctypes.c_int64
    h5py_lapl = cls._lapl

    def _lapl(self):
        try:
            fileno = self.id.fileno
            ours = _h5_driver_files.get(fileno)
            if ours is None:
                ours = h5i.get_file_id(self.id).get_access_plist().get_driver() == driver()
                _h5_driver_files[fileno] = ours
        except Exception:  # noqa: BLE001 - an object h5py itself could not place: h5py's own list
            ours = False
        return inherit if ours else h5py_lapl.fget(self)

    cls._mmzip_lapl = inherit
    cls._lapl = property(_lapl)


# ---------------------------------------------------------------------------------------------------------
# Direct access to the core library (the prototypes are in _core.py).

_lib = _core.lib
_check = _core.check


def release_kept():
    """Gives back what the process keeps of closed archives for the next open (mmzip_release_kept): the
    mapping and the descriptor the HDF5 driver keeps between sessions, and an address reservation. The next
    open maps its archive anew, as in a new process."""
    _lib().mmzip_release_kept()


class _Handle:
    """The core's handle of an Archive. Views returned by ``a[key]`` hold a reference to it, so the mapping
    they show outlives them: the handle is closed when the archive has let go of it and no view is left
    (a view of a temporary archive, ``bytes(Archive(p)["k"])``, is valid, not a pointer into freed memory)."""

    def __init__(self):
        self.h = ctypes.c_void_p()
        self.views = 0
        self.discard = False  # given up (a "w" that failed): released with mmzip_discard, never committed

    def view_gone(self):
        self.views -= 1

    def __del__(self):
        if self.h:
            h, self.h = self.h, ctypes.c_void_p()
            try:
                (_lib().mmzip_discard if self.discard else _lib().mmzip_close)(h)
            except Exception:
                pass


class Archive:
    """An open archive. ``mode`` is "r", "r+", "w+" or "w" as in mmzip_open(). Use as a context manager.

    ``path`` is the archive's file as written, even if it holds ``#`` or ``#/``; a name that the shared
    rule for "archive#/member" (mmzip_split_name) reads as a member of another archive, or that is
    ambiguous, raises MmzipError and opens nothing.

    ``a[key]`` returns a read-only memoryview of the entry (zero-copy for stored entries); the mapping it
    shows stays valid for as long as the view is alive, also past ``close()`` (see ``close``). ``a[key] = bytes`` appends (committed at once unless inside ``with a.batch():``).
    ``a[key]`` hands out a whole entry, so by default (``verify=True``, the core's MMZIP_VERIFY_CRC) it
    checks a stored entry's CRC-32 before its first view and raises ``mmzip.CRCError`` (an ``MmzipError``
    and a ``zipfile.BadZipFile``) naming the archive, the entry and both CRCs if the bytes are damaged.
    The check is one pass over the entry, made once: an entry found good is remembered for as long as the
    archive is open in this process (its bytes never change; a replaced entry is a new entry, checked
    again). Compressed entries are always checked when decoded. ``verify=False`` hands stored entries out
    unread (no pass over the data: pages are read only when touched), as ``mmzip_get`` does; then
    ``a.verify(key)`` checks one entry on demand.
    Keys are str (UTF-8) or bytes; ``keys()`` gives a name that is not UTF-8 with its bytes as surrogate
    escapes (as ``os.fsdecode`` does), which finds the entry again.

    Mode "w" builds the new archive in an unnamed file beside ``path`` and renames it over ``path`` at the
    first ``commit()`` (or the end of the first ``batch()``) or at ``close()``; until then puts are not
    committed. A writer that fails before - an exception out of the ``with`` block, a full disk, the process
    killed - leaves the archive that was there byte for byte as it was, or no file where there was none.
    Readers that have the old archive open keep reading it.
    """

    def __init__(self, path, mode="r", verify=True):
        self._owner = _Handle()
        self._h = self._owner.h
        self.path = _core.whole_file(os.fspath(path), mode in ("w", "w+"), "mmzip.Archive")
        self._unpublished = mode == "w"
        self._writable = mode != "r"
        opts = None
        if verify or self._writable:
            opts = _core.Options()
            _lib().mmzip_options_init(ctypes.byref(opts))
            if verify:
                opts.flags |= _core.VERIFY_CRC
            if self._writable:
                # A new archive, or an existing empty one, is published at the first commit: until then
                # readers see the file as it was (none, or the 22-byte empty archive every reader accepts).
                opts.flags |= _core.PUBLISH_ON_COMMIT
            if self._unpublished:
                # Nothing replaces the old archive before the new one is complete (see the class docstring).
                opts.flags |= _core.PUBLISH_ON_COMMIT
                opts.commit_policy = _core.COMMIT_MANUAL
            opts = ctypes.byref(opts)
        _check(_lib().mmzip_open(os.fsencode(self.path), mode.encode(), opts, ctypes.byref(self._h)), self.path)
        # Members whose in-place edit a killed (or running) writer left unfinished: a RuntimeWarning each,
        # naming the member and what `mmzip recover` does; a writable open has repaired them (see recovered).
        self.unfinished = _core.warn_unfinished(self._h, self.path) if mode == "r" else []
        # Wrong but readable record fields (as zipfile reads them): an ArchiveWarning each, naming the field.
        self.warnings = _core.warn_archive(self._h)
        self.recovered = []
        if mode != "r":
            info = _core.Info()
            _check(_lib().mmzip_get_info(self._h, ctypes.byref(info)))
            kept = info.edits_recovered - info.edits_restored  # mapped edits: kept as left, CRC recomputed
            if info.journal_restored or kept:
                import warnings
                self.recovered = [info.journal_restored, kept]
                warnings.warn("%s: the open repaired what a killed writer left unfinished: %s%s%s" % (
                    self.path,
                    "%d bytes of a member written back from its undo journal (it is at its last commit again)"
                    % info.journal_restored if info.journal_restored else "",
                    "; " if info.journal_restored and kept else "",
                    "%d member(s) modified in place kept as left, their CRCs recomputed" % kept
                    if kept else ""), RuntimeWarning, stacklevel=2)

    def verify(self, key):
        """Checks the CRC-32 of entry ``key`` (mmzip_verify); raises CRCError (code -8) on a mismatch."""
        rc = _lib().mmzip_verify(self._h, _core.entry_name(key))
        if rc == -1:
            raise KeyError(key)
        _check(rc)

    def close(self):
        """Commits what is pending (a writer) and releases the archive (mmzip_close). Calling it again does
        nothing. Views returned by ``a[key]`` that are still alive keep the mapping (and a writer's lock)
        until the last of them is dropped; a writer is committed now all the same, and warned
        (ResourceWarning) that its lock is held until then."""
        if not self._h:
            return
        owner, self._owner, self._h = self._owner, None, ctypes.c_void_p()
        if not owner.views:
            h, owner.h = owner.h, ctypes.c_void_p()
            _check(_lib().mmzip_close(h))
            return
        if self._writable:
            _check(_lib().mmzip_commit(owner.h), self.path)
            import warnings
            warnings.warn("mmzip.Archive: %s is committed, but %d view(s) returned by a[key] are still alive: "
                          "the writer lock is held until they are dropped" % (self.path, owner.views),
                          ResourceWarning, stacklevel=2)
        # The handle closes when the last view referring to it goes.

    def discard(self):
        """Releases the archive without committing what is pending (see mmzip_discard). Views still alive
        keep the mapping until they are dropped, as with ``close``; what is pending is given up now."""
        if self._h:
            owner, self._owner, self._h = self._owner, None, ctypes.c_void_p()
            h, owner.h = owner.h, ctypes.c_void_p()
            if owner.views:
                # mmzip_discard unmaps, and views still alive would then point at nothing: refuse plainly.
                owner.h = h
                self._owner, self._h = owner, h
                raise MmzipError(_core.EBUSY, "mmzip.Archive: %s: cannot discard what is pending while %d view(s) "
                                 "returned by a[key] are alive; drop them first" % (self.path, owner.views))
            _check(_lib().mmzip_discard(h))

    def __enter__(self):
        """``with Archive(...) as a:`` closes the archive at the end of the block."""
        return self

    def __exit__(self, exc_type, *rest):
        if exc_type is not None and self._unpublished:
            # A "w" that failed before its first commit: the old archive stays. With views still alive the
            # handle cannot be unmapped yet: what is pending is dropped now, and the handle is discarded (not
            # closed, which would publish) when the last view goes; the exception raised in the block is the
            # one the caller sees (an outside review found it replaced, and the old archive replaced later).
            if self._owner is not None and self._owner.views:
                owner, self._owner, self._h = self._owner, None, ctypes.c_void_p()
                _lib().mmzip_rollback(owner.h)
                owner.discard = True
                return
            self.discard()
        else:
            self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __getitem__(self, key):
        p, n = ctypes.c_void_p(), ctypes.c_uint64()
        rc = _lib().mmzip_get(self._h, _core.entry_name(key), ctypes.byref(p), ctypes.byref(n))
        if rc == -1:
            raise KeyError(key)
        _check(rc)
        if n.value == 0:
            return memoryview(b"")
        if self._writable and self._pending(key):
            # Not committed: a rollback, or a removal and the next put, reuse those bytes (mmzip_get's
            # pointer "must not be used" then); a view would silently show other bytes. A copy instead.
            return memoryview(ctypes.string_at(p.value, n.value)).toreadonly()
        buf = (ctypes.c_char * n.value).from_address(p.value)
        owner = self._owner
        buf._mmzip_handle = owner  # keeps the mapping alive as long as the view (see _Handle)
        owner.views += 1
        weakref.finalize(buf, owner.view_gone)
        return memoryview(buf).cast("B").toreadonly()

    def __setitem__(self, key, data):
        # Bytes-like values only: bytes(3) is three zero bytes and bytes([65, 66]) is b"AB", values nobody
        # meant to store (zipfile's writestr raises TypeError for them too).
        if isinstance(data, str):
            raise TypeError("mmzip.Archive values are bytes-like, not str: encode it (e.g. value.encode())")
        try:
            data = memoryview(data).tobytes()  # any buffer, non-contiguous ones in C order (as bytes(array))
        except TypeError:
            raise TypeError("mmzip.Archive values are bytes-like (bytes, bytearray, memoryview, a numpy array), "
                            "not %s" % type(data).__name__) from None
        _check(_lib().mmzip_put(self._h, _core.entry_name(key), data, len(data), 0))

    def __delitem__(self, key):
        rc = _lib().mmzip_remove(self._h, _core.entry_name(key))
        if rc == -1:
            raise KeyError(key)
        _check(rc)

    def __contains__(self, key):
        if not self._h:
            raise MmzipError(_core.EINVAL, "mmzip.Archive: %s is closed" % self.path)
        return bool(_lib().mmzip_exists(self._h, _core.entry_name(key)))

    def _pending(self, key):
        info = _core.EntryInfo()
        return _lib().mmzip_stat(self._h, _core.entry_name(key), ctypes.byref(info)) == 0 and bool(info.pending)

    def keys(self, prefix=""):
        """The names of the entries (those starting with ``prefix`` if given), sorted by name (mmzip_list_ex's
        order; zipfile's namelist() and numpy.load(...).files give the order of the directory instead)."""
        names = []

        def cb(info, ctx):
            i = info.contents
            names.append(_core.listed_name(i))
            return 0

        # Names only: skip reading every entry's local header (_LIST_NO_DATA_OFFSET).
        _check(_lib().mmzip_list_ex(self._h, _core.entry_name(prefix) if prefix else None, _core.LIST_NO_DATA_OFFSET,
                                    _core.LIST_FN(cb), None))
        return names

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def commit(self):
        """Publishes what was written since the last commit (mmzip_commit): one central-directory write,
        after which other processes see it. Puts outside ``batch()`` are committed at once anyway."""
        _check(_lib().mmzip_commit(self._h))
        if self._unpublished and len(self):  # a commit with nothing pending publishes nothing
            self._unpublished = False

    def refresh(self):
        """A reader moves to the newest commit of the archive (mmzip_refresh); views returned earlier stay
        valid. MmzipError (ESTALE) if the file was replaced (pack): open it again."""
        _check(_lib().mmzip_refresh(self._h))

    class _Batch:
        def __init__(self, a):
            self.a = a

        def __enter__(self):
            _check(_lib().mmzip_begin(self.a._h))
            return self.a

        def __exit__(self, exc_type, *rest):
            if exc_type is None:
                self.a.commit()
            else:
                _lib().mmzip_rollback(self.a._h)

    def batch(self):
        """``with a.batch(): ...`` commits every put inside at once at the end (rolls back on error).
        ``a.commit()`` inside the block publishes what was written so far and ends the batch: what follows is
        committed put by put, and an error then rolls back nothing already committed."""
        return Archive._Batch(self)


try:  # mmzip.ZarrStore needs zarr-python 2 (and numcodecs); the rest of the package does not.
    from .zarr_store import ZarrStore  # noqa: E402,F401
except ImportError:
    pass


# NumPy arrays in an archive (npz.py), loaded on first use so that `import mmzip` needs no numpy (and the
# builtin open() stays the one the functions above call).
def __getattr__(name):
    if name in ("open", "savez", "NpzArchive"):
        from . import npz
        return getattr(npz, name)
    if name == "ZarrStore":
        from .zarr_store import ZarrStore  # raises the ImportError that says what is missing (zarr 2)
        return ZarrStore
    raise AttributeError("module 'mmzip' has no attribute %r" % name)
