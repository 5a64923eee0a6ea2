"""NumPy arrays in a ZIP archive, from one memory map (mmnpz), aligned for writing, modified in place.

``mmzip.open(path, mode)`` opens a ``.npz`` (any ZIP of ``.npy`` members: numpy.savez, zipfile, zip, ours)
and ``archive[name]`` is an ``numpy.ndarray`` that is a view into the one mapping of the whole file: no copy,
no file descriptor per array, pages read by the kernel only when touched. ``mmzip.savez`` writes archives
whose array data starts on a 64-byte boundary, so every mapped array is aligned. Modes ``r+``, ``w+`` and
``a+`` hand out writable views of stored arrays (in place, AlignedBinaryFormat.jl's model); ``commit()``
publishes the change and refreshes the member's CRC. docs/user-guide.md, "Python: npz and in-place arrays",
describes the modes, the lifetime of views, and what a crash between a write and a commit leaves.
"""
import ast
import ctypes
import io
import os
import warnings
import weakref

import numpy as np

from . import _core as _c
from ._core import MmzipError, check as _check

__all__ = ["open", "savez", "NpzArchive"]

_MAGIC = b"\x93NUMPY"
_DEFAULT_ALIGN = 64
_EDIT_PREFIX = ".mmzip/edit/"  # the marker entries older versions of mmzip committed for in-place edits

# The modes of AlignedBinaryFormat.jl, mapped onto mmzip_open's.
_MODES = {
    "r": ("r", False),    # read only
    "r+": ("r+", True),   # existing archive; arrays writable in place; appends
    "w": ("w", False),    # new archive (replaces one); appends; arrays read back read-only
    "w+": ("w", True),    # new archive; arrays writable in place
    "a": ("w+", False),   # existing or new archive; appends
    "a+": ("w+", True),   # existing or new archive; arrays writable in place
}


_core = _c.lib
_IoVec, _Info, _EntryInfo, _LIST_FN = _c.IoVec, _c.Info, _c.EntryInfo, _c.LIST_FN


class _Handle:
    """One mmzip handle; closed when the last object that needs it (archive, mapping, view) is gone.
    ``unpublished``: a new archive not yet renamed into place (mode "w"), which ``discard`` gives up instead of
    publishing when the handle goes; ``keeper``: the handle that keeps the store once this one is closed."""

    def __init__(self, path, mode, publish_on_commit=False):
        self.h = ctypes.c_void_p()
        self.discard = False
        self.keeper = None
        opts = None
        if publish_on_commit:
            opts = _c.Options()
            _core().mmzip_options_init(ctypes.byref(opts))
            opts.flags |= _c.PUBLISH_ON_COMMIT
            opts = ctypes.byref(opts)
        _check(_core().mmzip_open(os.fsencode(path), mode.encode(), opts, ctypes.byref(self.h)))

    def close(self):
        if self.h:
            h, self.h = self.h, ctypes.c_void_p()
            _check(_core().mmzip_discard(h) if self.discard else _core().mmzip_close(h))

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class _Closed:
    """In place of the handle of an archive given up (NpzArchive.__exit__)."""
    h = ctypes.c_void_p()

    def close(self):
        pass


def _npy_header(mem, size, name):
    """Parses a .npy header at the start of `mem` (bytes-like of the member's first bytes). Returns
    (dtype, shape, fortran_order, header_length, version)."""
    if size < 10 or bytes(mem[:6]) != _MAGIC:
        raise ValueError("%s: not a .npy member (no \\x93NUMPY magic)" % name)
    major, minor = mem[6], mem[7]
    if major == 1:
        hlen, start = int.from_bytes(bytes(mem[8:10]), "little"), 10
    elif major in (2, 3):
        if size < 12:
            raise ValueError("%s: truncated .npy header" % name)
        hlen, start = int.from_bytes(bytes(mem[8:12]), "little"), 12
    else:
        raise ValueError("%s: .npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)"
                         % (name, major, minor))
    if start + hlen > size:
        raise ValueError("%s: .npy header (%d bytes) runs past the member (%d bytes)" % (name, hlen, size))
    raw = bytes(mem[start:start + hlen])
    text = raw.decode("utf-8" if major == 3 else "latin1")
    try:
        d = ast.literal_eval(text)
    except (SyntaxError, ValueError) as e:
        raise ValueError("%s: unreadable .npy header %r: %s" % (name, text[:200], e))
    if not isinstance(d, dict) or not {"descr", "fortran_order", "shape"} <= set(d):
        raise ValueError("%s: .npy header lacks descr/fortran_order/shape: %r" % (name, text[:200]))
    shape = d["shape"]
    if not isinstance(shape, tuple) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("%s: bad shape %r in the .npy header" % (name, shape))
    dtype = np.lib.format.descr_to_dtype(d["descr"])
    return dtype, shape, bool(d["fortran_order"]), start + hlen, (major, minor)


def _npy_header_bytes(arr, data_align):
    """A .npy header for arr whose length is a multiple of data_align, so that data placed right after it
    in a member aligned to data_align is aligned too. numpy's format allows any padding of spaces before the
    final newline; numpy itself pads to 64."""
    fortran = arr.flags.f_contiguous and not arr.flags.c_contiguous
    d = {"descr": np.lib.format.dtype_to_descr(arr.dtype), "fortran_order": fortran, "shape": arr.shape}
    text = "{" + "".join("%r: %r, " % (k, d[k]) for k in sorted(d)) + "}"
    try:
        body, major = text.encode("latin1"), 1
    except UnicodeEncodeError:
        body, major = text.encode("utf-8"), 3
    pre = 10 if major == 1 else 12
    total = -(-(pre + len(body) + 1) // data_align) * data_align
    if major == 1 and total - pre > 0xFFFF:
        major, pre = 2, 12
        total = -(-(pre + len(body) + 1) // data_align) * data_align
    hlen = total - pre
    head = _MAGIC + bytes([major, 0]) + hlen.to_bytes(pre - 8, "little")
    return head + body + b" " * (hlen - len(body) - 1) + b"\n", fortran


def _alignment_of(off):
    return off & -off if off else 1 << 15


def _put_array(h, member, arr, alignment):
    """Appends arr as the .npy member `member` through the core handle h, its data aligned to `alignment`."""
    head, fortran = _npy_header_bytes(arr, alignment)
    data = arr.T if fortran else arr
    if not data.flags.c_contiguous:
        data = np.ascontiguousarray(data)
    hb = ctypes.create_string_buffer(head, len(head))
    iov = (_IoVec * 2)()
    iov[0].base, iov[0].len = ctypes.addressof(hb), len(head)
    count = 1
    if data.nbytes:
        iov[1].base, iov[1].len = data.ctypes.data, data.nbytes
        count = 2
    _check(_core().mmzip_putv(h, _c.entry_name(member), iov, count, alignment, None))


class NpzArchive:
    """An archive of arrays. Use ``mmzip.open(path, mode)``; see the module docstring and the user guide.

    Mapping-like: ``len(a)``, ``iter(a)`` (names without ``.npy``, like ``numpy.load(...).files``),
    ``name in a``, ``a[name]`` (``name`` with or without ``.npy``), ``a[name] = array``, ``a.files``,
    ``a.keys()``, ``a.commit()``, ``a.close()``; a context manager. ``repr(a)`` is a table of contents.

    ``a[name]`` hands out a whole array, so with ``verify=True`` (the default) the member's CRC-32 is checked
    before the array is returned, and a damaged member raises ``mmzip.CRCError`` (an ``MmzipError`` and a
    ``zipfile.BadZipFile``, what ``numpy.load`` raises through zipfile) naming the archive, the member and
    both CRCs. One pass of the core's crc32 over the member, once: the array is then cached, and the core
    remembers the member as good while the archive is open in this process. In modes r+, w+ and a+ the check
    comes before the first writable view (a commit recomputes the CRC over the bytes as they are, which would
    otherwise make damage look valid). ``verify=False`` hands a stored array out unread, a view whose pages
    are read only when touched: for taking a few slices of an array larger than memory, where one pass over
    it is the cost to avoid; then nothing checks the bytes (``mmzip check`` does). Compressed members are
    checked when decoded either way. ``a.edit(name)`` and ``a.mapping`` (the whole file's bytes) never check,
    nor does a member that another writer is modifying in place (its marker is in the archive, ``toc()`` says
    "being modified in place"): its CRC is stale until that writer commits, and readers see its bytes as they
    are written.
    """

    def __init__(self, path, mode="r", alignment=_DEFAULT_ALIGN, verify=True):
        if mode not in _MODES:
            raise ValueError("mmzip.open: unknown mode %r (use one of %s)" % (mode, ", ".join(_MODES)))
        if alignment < 64 or alignment > 4096 or alignment & (alignment - 1):
            raise ValueError("mmzip.open: alignment must be a power of two from 64 to 4096, not %r" % alignment)
        core_mode, self._in_place = _MODES[mode]
        # The file as written; never the other reading of a name holding "#/" (mmzip_split_name).
        self.path = _c.whole_file(os.fspath(path), mode not in ("r", "r+"), "mmzip.open")
        self.mode = mode
        self.alignment = alignment
        self.verify = bool(verify)
        self._writable = core_mode != "r"
        # Mode "w": the new archive is built unnamed and renamed over the path at the first commit (commit(),
        # close()), so that a failure before - an exception out of the with block, a full disk, the process
        # killed - leaves the archive that was there as it was (or no file).
        self._h = _Handle(self.path, core_mode, publish_on_commit=core_mode == "w")
        # The views' keeper: a second read-only handle on the same store (mmzip shares one store per process,
        # so it costs no descriptor and no mapping), so that arrays still referenced after close() keep their
        # mapping, while close() commits and lets go of the writer handle.
        self._keeper = None if core_mode == "w" else _Handle(self.path, "r")
        self._cache = {}        # name as asked and member name -> array (views are made once, like mmnpz)
        self._files = None      # cached listing
        self._edited = {}       # member name -> weakref of the writable view handed out
        self._edits = {}        # member name -> its mapped edit (mmzip_edit_t), open until close
        self._mapping = None    # uint8 ndarray over the whole mapped file
        self._batch_open = False
        self.recovered_edits = 0
        # Read-only: arrays whose in-place edit a killed writer left unfinished are named in a RuntimeWarning
        # each, with what `mmzip recover` will do (the values read are as that writer left them).
        self.unfinished = [] if self._writable else _c.warn_unfinished(self._h.h, self.path, stacklevel=4)
        self.warnings = _c.warn_archive(self._h.h, stacklevel=4)  # wrong but readable record fields
        if self._writable:
            info = _Info()
            _check(_core().mmzip_get_info(self._h.h, ctypes.byref(info)))
            self.recovered_edits = info.edits_recovered - info.edits_restored  # kept as left, CRC recomputed
            if self.recovered_edits:
                warnings.warn("%s: %d array(s) were being modified in place by a writer that died before "
                              "committing; their CRCs now match their bytes as they were left, which may hold "
                              "only part of that writer's changes" % (self.path, self.recovered_edits),
                              RuntimeWarning, stacklevel=3)
            _check(_core().mmzip_begin(self._h.h))
            self._batch_open = True

    # -- names -------------------------------------------------------------------------------------
    def _infos(self):
        out = []

        def cb(info, ctx):
            i = info.contents
            out.append((_c.listed_name(i), i.size,
                        i.method, i.crc32, i.pending, i.header_offset))
            return 0

        _check(_core().mmzip_list_ex(self._live(), None, 1, _LIST_FN(cb), None))
        out.sort(key=lambda x: x[5])  # archive order, like numpy.load(...).files
        return [x[:5] for x in out if not x[0].startswith(_EDIT_PREFIX)]

    def _member(self, key):
        if not isinstance(key, str):
            raise TypeError("array names are str, not %s" % type(key).__name__)
        c = _core()
        if not key.startswith(_EDIT_PREFIX):
            for m in (key, key + ".npy"):
                if c.mmzip_exists(self._live(), _c.entry_name(m)):
                    return m
        raise KeyError("%s is not a file in the archive %s" % (key, self.path))

    @property
    def files(self):
        """Member names, .npy stripped, in archive order (numpy.load(...).files). Kept until the next write
        through this object (another process's appends appear after reopening)."""
        if self._files is None:
            self._files = [n[:-4] if n.endswith(".npy") else n for n, *_ in self._infos()]
        return self._files

    def keys(self):
        """The member names, as ``files``."""
        return self.files

    def __iter__(self):
        return iter(self.files)

    def __len__(self):
        if self._files is None:
            self.files
        return len(self._files)

    def __contains__(self, key):
        try:
            self._member(key)
            return True
        except (KeyError, TypeError):
            return False

    def items(self):
        """(name, array) pairs of every member, as ``a[name]`` gives them."""
        return [(k, self[k]) for k in self.files]

    def values(self):
        """The arrays of every member, in ``files`` order, as ``a[name]`` gives them."""
        return [self[k] for k in self.files]

    def get(self, key, default=None):
        """``a[key]`` if the archive has that member, else ``default`` (as ``numpy.load``'s NpzFile, a
        Mapping, does)."""
        return self[key] if key in self else default

    # -- reading -----------------------------------------------------------------------------------
    def _live(self):
        if not self._h.h:
            raise ValueError("%s: the archive is closed" % self.path)
        return self._h.h

    def _stat(self, member):
        info = _EntryInfo()
        _check(_core().mmzip_stat(self._live(), _c.entry_name(member), ctypes.byref(info)))
        return info

    def _raw(self, member):
        p, n = ctypes.c_void_p(), ctypes.c_uint64()
        _check(_core().mmzip_get(self._live(), _c.entry_name(member), ctypes.byref(p),
                                 ctypes.byref(n)))
        return p.value or 0, n.value

    def _whole(self, base, end):
        """The uint8 array over the mapped file from `base`, covering at least `end` bytes. Writers grow the
        file after the mapping was made, so it is remade, at the same base, when an array lies past it."""
        m = self._mapping
        if m is None or m.ctypes.data != base or m.size < end:
            info = _Info()
            _check(_core().mmzip_get_info(self._live(), ctypes.byref(info)))
            raw = (ctypes.c_char * max(end, info.file_size, 1)).from_address(base)
            raw._mmzip_keep = self._keep()  # the mapping lives as long as any view of it
            m = np.frombuffer(memoryview(raw).cast("B").toreadonly(), dtype=np.uint8)
            self._mapping = m
        return m

    @property
    def mapping(self):
        """A read-only uint8 array over the whole mapped archive: every mapped array is a view of it."""
        if self._mapping is None:
            for name, size, method, *_ in self._infos():
                if method == 0 and size:
                    info, (p, n) = self._stat(name), self._raw(name)
                    return self._whole(p - info.data_offset, info.data_offset + n)
            raise ValueError("%s: no stored member to locate the mapping by" % self.path)
        return self._mapping

    def _check_crc(self, member, info=None):
        """verify=True: the CRC-32 of a stored member, before anything of it is handed out (mmzip_verify: one
        pass the first time, nothing once the store knows the member is good). Compressed members are
        checked by mmzip_get when decoded."""
        if not self.verify:
            return
        if info is None:
            info = self._stat(member)
        if info.method == 0:
            rc = _core().mmzip_verify(self._live(), _c.entry_name(member))
            if rc == _c.ECRC and member in self._marked():
                # Being modified in place by a writer (or left so by one that died): its CRC is stale until
                # that writer's commit (or recovery) by design, and readers see the bytes as written.
                return
            _check(rc)

    def _load(self, member):
        info = self._stat(member)
        self._check_crc(member, info)
        p, n = self._raw(member)
        # As numpy.load: a member is an array if its bytes start with the .npy magic, whatever its name (a
        # member "b" holding .npy data is an array; "c.npy" holding other bytes is those bytes).
        if n < len(_MAGIC) or ctypes.string_at(p, len(_MAGIC)) != _MAGIC:
            return ctypes.string_at(p, n) if n else b""
        head = (ctypes.c_char * min(n, 1 << 16)).from_address(p) if n else b""
        dtype, shape, fortran, hlen, _ = _npy_header(memoryview(head).cast("B") if n else b"", n,
                                                     "%s: %s" % (self.path, member))
        if dtype.hasobject:
            raise ValueError("%s: %s holds Python objects (pickled); mmzip does not unpickle" % (self.path, member))
        count = int(np.prod(shape, dtype=np.int64))
        if hlen + count * dtype.itemsize != n:
            raise ValueError("%s: %s: the .npy header says %s %s (%d bytes) but the member holds %d bytes of data"
                             % (self.path, member, shape, dtype, count * dtype.itemsize, n - hlen))
        order = "F" if fortran else "C"
        if info.method == 0:
            m = self._whole(p - info.data_offset, info.data_offset + n)
            return np.ndarray(shape, dtype=dtype, buffer=m, offset=info.data_offset + hlen, order=order)
        # Decoded (deflated) members: a view of the store's decoded copy, read-only like the rest.
        raw = (ctypes.c_char * n).from_address(p)
        raw._mmzip_keep = self._keep()
        buf = np.frombuffer(memoryview(raw).cast("B").toreadonly(), dtype=np.uint8)
        return np.ndarray(shape, dtype=dtype, buffer=buf, offset=hlen, order=order)

    def __getitem__(self, key):
        a = self._cache.get(key)  # the fast path of a training loop: one dict lookup
        if a is not None:
            return a
        member = self._member(key)
        if self._in_place and member.endswith(".npy"):
            if member not in self._edited:
                self._check_crc(member)
            return self.edit(key)
        a = self._cache.get(member)
        if a is None:
            a = self._load(member)
        self._cache[member] = self._cache[key] = a
        return a

    def edit(self, key):
        """A writable view of a stored array, modified in place (modes r+, w+, a+). The change is published,
        and the member's CRC refreshed, by commit() or close(). Until close() the marker file
        ``<archive>.mmzip-inplace`` names the member, to tell recovery to refresh the CRC if this process dies
        first (it is not a member: numpy.load and zipfile do not see it). The member's CRC-32 is checked
        before the view is handed out, whatever ``verify`` says (CRCError if it does not match): the commit
        recomputes it over the bytes as they then are, which would otherwise make earlier damage look valid."""
        if not self._in_place:
            raise ValueError("%s: arrays are writable in place only in modes r+, w+ and a+ (mode %r)"
                             % (self.path, self.mode))
        member = self._member(key)
        ref = self._edited.get(member)
        a = ref() if ref else None
        if a is not None:
            return a
        if self._batch_open:  # a mapped edit commits what is pending first; the batch resumes after it
            _check(_core().mmzip_commit(self._live()))
            self._batch_open = False
            self._committed()
        p, n = ctypes.c_void_p(), ctypes.c_uint64()
        e = self._edits.get(member)
        if e is None:
            e = ctypes.c_void_p()
            _check(_core().mmzip_edit_begin(self._live(), _c.entry_name(member), _c.EDIT_MAP, ctypes.byref(e)))
            self._edits[member] = e
        _check(_core().mmzip_edit_map(e, ctypes.byref(p), ctypes.byref(n), None))
        _check(_core().mmzip_begin(self._live()))
        self._batch_open = True
        raw = (ctypes.c_char * max(n.value, 1)).from_address(p.value)
        raw._mmzip_keep = self._keep()
        dtype, shape, fortran, hlen, _ = _npy_header(memoryview(raw).cast("B"), n.value,
                                                     "%s: %s" % (self.path, member))
        buf = np.frombuffer(raw, dtype=np.uint8, count=n.value)
        a = np.ndarray(shape, dtype=dtype, buffer=buf, offset=hlen, order="F" if fortran else "C")
        a.flags.writeable = True
        self._edited[member] = weakref.ref(a)
        self._cache.clear()
        self._files = None
        return a

    # -- writing -----------------------------------------------------------------------------------
    def __setitem__(self, key, array):
        if not self._writable:
            raise ValueError("%s: opened read-only (mode 'r')" % self.path)
        member = key if key.endswith(".npy") else key + ".npy"
        arr = np.asanyarray(array)
        if arr.dtype.hasobject:
            raise ValueError("%s: %s: arrays of Python objects cannot be stored without pickling" % (self.path, key))
        view = self._edited.get(member)
        if view is not None and view() is not None:
            raise ValueError("%s: %s is being modified in place; commit() and drop its view before replacing it"
                             % (self.path, member))
        _put_array(self._live(), member, arr, self.alignment)
        self._cache.clear()
        self._files = None

    def __delitem__(self, key):
        member = self._member(key)
        _check(_core().mmzip_remove(self._live(), _c.entry_name(member)))
        self._cache.clear()
        self._files = None

    def commit(self):
        """Publishes every append, removal and in-place change made so far (one directory write). Other
        processes see the archive as of the last commit."""
        if self._writable:
            _check(_core().mmzip_commit(self._live()))
            self._committed()
            _check(_core().mmzip_begin(self._live()))
            self._batch_open = True

    flush = commit

    def _keep(self):
        """What views hold to keep the mapping: the read-only keeper once the archive is published; before, the
        writer's handle (a new archive has no name a keeper could open)."""
        return self._keeper if self._keeper is not None else self._h

    def _committed(self):
        """After a commit: a new archive that it published (it had entries: a commit of nothing publishes
        nothing) gets its keeper, which the writer's handle hands on to the views made before."""
        if self._keeper is None and _core().mmzip_count(self._live()):
            self._keeper = _Handle(self.path, "r")
            self._h.keeper = self._keeper

    def close(self):
        """Commits (writable modes) and releases the archive. Arrays taken from it stay valid while they are
        referenced (they keep the mapping); in-place views become read-only: write before close()."""
        if not self._h.h:
            return
        for ref in self._edited.values():
            a = ref()
            if a is not None:
                a.flags.writeable = False
        self._edited.clear()
        self._edits.clear()  # ended by the close of the handle
        self._batch_open = False
        if self._keeper is None and self._writable:
            # A new archive: published by this commit, and given the keeper its views hand on to.
            _check(_core().mmzip_commit(self._live()))
            self._committed()
        self._h.close()  # commits, ends in-place edits (CRC refreshed, markers removed), drops the writer lock
        self._keeper = None  # arrays still hold it (through their mapping) if they are alive
        self._cache.clear()
        self._mapping = None
        if self._writable:
            _pack_if_emptied(self.path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *rest):
        if exc_type is not None and self._writable and self._keeper is None and self._h.h:
            # A new archive ("w", "w+") left by an exception before anything published it: given up, and the
            # archive it was to replace stays as it was (or no file). The arrays read back from it hold the
            # writer's handle: it is discarded when the last of them goes (they must not be used).
            for ref in self._edited.values():
                a = ref()
                if a is not None:
                    a.flags.writeable = False
            self._edited.clear()
            self._edits.clear()
            self._cache.clear()
            self._mapping = None
            self._batch_open = False
            h, self._h = self._h, _Closed()
            h.discard = True
            del h
            return
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    # -- table of contents -------------------------------------------------------------------------
    def toc(self):
        """One dict per member: name, dtype, shape, bytes, offset (of the array data in the file),
        alignment (largest power of two dividing that offset), status: mapped (a view of the mapping),
        decoded (a compressed member, read as a decoded copy), in-place (a writable view handed out here), raw
        (bytes that do not start with the .npy magic, whatever the member's name, as numpy.load decides); ", being modified in place" when another writer's marker is present."""
        rows = []
        marked = self._marked()
        for name, size, method, crc, pending in self._infos():
            info = self._stat(name)
            row = {"name": name[:-4] if name.endswith(".npy") else name, "dtype": "-", "shape": "-",
                   "bytes": size, "offset": info.data_offset, "alignment": _alignment_of(info.data_offset),
                   "status": "raw" if method == 0 else "decoded"}
            p, n = self._raw(name)
            if n >= len(_MAGIC) and ctypes.string_at(p, len(_MAGIC)) == _MAGIC:  # an array, as __getitem__ sees it
                try:
                    head = (ctypes.c_char * min(n, 1 << 16)).from_address(p)
                    dtype, shape, fortran, hlen, ver = _npy_header(memoryview(head).cast("B"), n, name)
                    row.update(dtype=str(dtype) if dtype.names is None else "struct%d" % dtype.itemsize,
                               shape=shape, bytes=n - hlen)
                    if method == 0:
                        row["offset"] = info.data_offset + hlen
                        row["alignment"] = _alignment_of(row["offset"])
                        row["status"] = "mapped"
                    else:
                        row["offset"] = None
                        row["alignment"] = None
                    if fortran:
                        row["dtype"] += " (F)"
                except (ValueError, MmzipError) as e:
                    row["status"] = "unreadable: %s" % str(e).split(": ")[-1][:40]
            if name in self._edited and self._edited[name]() is not None:
                row["status"] = "in-place"
            elif name in marked:
                row["status"] += ", being modified in place"
            if pending:
                row["status"] += " (pending)"
            rows.append(row)
        return rows

    def _marked(self):
        """The members being modified in place through a view: by this archive's own edits, or (read-only) by a
        writer now or one that died before recovery (mmzip_unfinished_edits). Their CRCs are stale by design."""
        if self._writable:  # the writer: the open recovered what killed writers left, the rest is its own
            return set(self._edits)
        return {name for name, kind, _, _ in _c.unfinished_edits(self._live()) if kind == _c.UNFINISHED_INPLACE}

    def __repr__(self):
        if not self._h.h:
            return "<mmzip.NpzArchive %s [closed]>" % self.path
        rows = self.toc()
        cols = ["name", "dtype", "shape", "bytes", "offset", "alignment", "status"]
        cells = [[("-" if r[c] is None else str(r[c])) for c in cols] for r in rows]
        w = [max([len(c)] + [len(x[i]) for x in cells]) for i, c in enumerate(cols)]
        line = "+" + "+".join("-" * (n + 2) for n in w) + "+"
        fmt = lambda xs: "| " + " | ".join(x.ljust(w[i]) if i < 3 or i == 6 else x.rjust(w[i])
                                          for i, x in enumerate(xs)) + " |"
        out = ["<mmzip.NpzArchive %s [%s] %d members>" % (self.path, self.mode, len(rows)), line, fmt(cols), line]
        out += [fmt(x) for x in cells] + [line]
        return "\n".join(out)


def open(path, mode="r", alignment=_DEFAULT_ALIGN, verify=True):  # noqa: A001 - the package's name for it
    """Opens an archive of arrays (a .npz). Modes: r (read), r+ (read, append, arrays writable in place),
    w (new archive, append), w+ (new, writable in place), a (create or append), a+ (create or append,
    writable in place). ``alignment``: the boundary (64..4096) the data of arrays written here starts on.
    Modes w and w+ build the new archive unnamed and rename it over ``path`` at the first commit (``commit()``,
    ``close()``): until then readers see the archive that was there, and an exception out of the ``with``
    block, a full disk or the process killed leaves that archive as it was (or no file).
    ``verify``: check each member's CRC-32 once before its array is handed out (default; raises
    mmzip.CRCError on damage), or hand stored arrays out unread (False; see NpzArchive)."""
    return NpzArchive(path, mode, alignment, verify)


def _pack_if_emptied(path):
    """An archive whose every member was deleted still holds their dead bytes before its end record, and
    unzip and 7-Zip refuse an archive of no entries with bytes before it ("start of central directory not
    found"). So it becomes the 22-byte empty ZIP that numpy.savez() of nothing writes (mmzip_pack: a new file
    renamed over it; readers of the old one keep it). Best effort: a writer that took the archive meanwhile
    (EBUSY) leaves it to that writer."""
    h = ctypes.c_void_p()
    if _core().mmzip_open(os.fsencode(path), b"r", None, ctypes.byref(h)) != 0:
        return
    try:
        emptied = _core().mmzip_count(h) == 0
    finally:
        _core().mmzip_close(h)
    if emptied and os.path.getsize(path) > 22:
        rc = _core().mmzip_pack(os.fsencode(path), None, None)
        if rc not in (0, _c.EBUSY):
            _check(rc, path)


def savez(file, *args, **kwds):
    """A drop-in for numpy.savez writing through mmzip: every array's data is stored (uncompressed) and
    starts on a 64-byte boundary of the file, so that mmzip.open maps it as an aligned array. Names are
    numpy's (arr_0, arr_1, ... for positional arrays) and, like numpy.savez, ".npz" is appended to a path
    that lacks it. numpy.load, zipfile and unzip read the result. Only paths (not open files) are accepted.

    All or nothing: every array is checked before anything is written (arrays of Python objects are refused,
    since they would need pickling), and the new archive is built in an unnamed file beside the target that
    is renamed over it only once it is complete. A savez that fails - a refused array, a full disk, the
    process killed - leaves the file that was there byte for byte as it was, or no file where there was
    none. Readers that have the old archive open keep reading it (its inode lives until they close it)."""
    if not isinstance(file, (str, bytes, os.PathLike)):
        raise TypeError("mmzip.savez writes to a path, not to %s (numpy.savez accepts file objects)"
                        % type(file).__name__)
    path = os.fsdecode(os.fspath(file))
    if not path.endswith(".npz"):
        path += ".npz"
    named = dict(kwds)
    for i, a in enumerate(args):
        k = "arr_%d" % i
        if k in named:
            raise ValueError("Cannot use un-named variables and keyword %s" % k)
        named[k] = a
    arrays = []
    for k, a in named.items():
        arr = np.asanyarray(a)
        if arr.dtype.hasobject:
            raise ValueError("%s: %s: arrays of Python objects cannot be stored without pickling; nothing was "
                             "written" % (path, k))
        member = k + ".npy"  # always, as numpy.savez: "x" and "x.npy" are two arrays (x.npy, x.npy.npy)
        try:
            _c.entry_name(member)  # refused names (a NUL byte) before anything is written
        except ValueError as e:
            raise ValueError("%s: %s; nothing was written" % (path, e)) from None
        arrays.append((member, arr))
    opts = _c.Options()
    _core().mmzip_options_init(ctypes.byref(opts))
    opts.flags |= _c.PUBLISH_ON_COMMIT        # the file appears (or replaces the old one) at the one commit
    opts.commit_policy = _c.COMMIT_MANUAL     # ... which is the close's
    h = ctypes.c_void_p()
    _check(_core().mmzip_open(os.fsencode(path), b"w", ctypes.byref(opts), ctypes.byref(h)))
    try:
        for member, arr in arrays:
            _put_array(h, member, arr, _DEFAULT_ALIGN)
    except BaseException:
        _core().mmzip_discard(h)  # nothing published: the old archive (or no file) stays
        raise
    _check(_core().mmzip_close(h))
