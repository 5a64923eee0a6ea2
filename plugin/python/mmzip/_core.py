"""The one ctypes binding of libmmzip (plugin/include/mmzip.h), private to the package.

Every struct mirror, constant and function prototype the package uses lives here, on one CDLL object, so
that a change of the C header is made in one place. Two modules each declaring their own copy of a struct
is how a grown ``mmzip_info`` once overwrote Python's heap: ``tests/python/test_core_abi.py`` (CTest
``python_core_abi``) compiles a probe against mmzip.h and checks every struct here, field by field
(names, offsets, sizes), and every prototype (argument count and kinds) against the header.
"""
import ctypes
import errno
import os
import re
import zipfile

from ._paths import LIBDIR as _BUILT_LIBDIR


class MmzipError(OSError):
    """An mmzip call failed. ``code`` is the mmzip_status (negative), ``str()`` the library's message.

    It is an ``OSError``: ``errno`` is the system's error behind the failure when there is one (EACCES,
    ENOSPC, ...; ENOENT for a missing archive, EBUSY for an archive another writer holds), else None;
    ``filename`` the archive when known. Failures that the system names are raised as the matching builtin
    subclass too: ``FileNotFoundError``, ``IsADirectoryError``, ``PermissionError``, ``FileExistsError``
    (see ``error_for``), so ``except FileNotFoundError`` catches a missing archive as it does for ``open()``.
    """

    def __init__(self, code, message, errno=None, filename=None):
        super().__init__(message)
        self.code = code
        self.message = message
        if errno:
            self.errno = errno
            self.strerror = os.strerror(errno)
        if filename is not None:
            self.filename = filename

    def __str__(self):
        return self.message

    def __reduce__(self):  # pickles (Dask workers) as it was made, not as OSError's (errno, strerror)
        return (type(self), (self.code, self.message, self.errno, self.filename))


class MmzipFileNotFoundError(MmzipError, FileNotFoundError):
    """The archive does not exist (and the mode does not create it): an MmzipError and a FileNotFoundError."""


class MmzipIsADirectoryError(MmzipError, IsADirectoryError):
    """The path names a directory, not an archive: an MmzipError and an IsADirectoryError."""


class MmzipPermissionError(MmzipError, PermissionError):
    """The system refused access to the archive or its directory: an MmzipError and a PermissionError."""


class MmzipFileExistsError(MmzipError, FileExistsError):
    """The archive exists where a new one was to be created: an MmzipError and a FileExistsError."""


_ERRNO_CLASSES = {errno.ENOENT: MmzipFileNotFoundError, errno.EISDIR: MmzipIsADirectoryError,
                  errno.EACCES: MmzipPermissionError, errno.EPERM: MmzipPermissionError,
                  errno.EEXIST: MmzipFileExistsError}


def error_for(code, message, err=None, filename=None):
    """The exception for mmzip_status ``code``: the MmzipError subclass of the system's ``err`` (or of the
    errno the status stands for: ENOENT, EBUSY, EEXIST, ENOMEM), MmzipError itself otherwise."""
    if code == ECRC:
        return CRCError(code, message, err or None, filename)
    if not err:
        err = _STATUS_ERRNO.get(code)
    return _ERRNO_CLASSES.get(err, MmzipError)(code, message, err, filename)


class CRCError(MmzipError, zipfile.BadZipFile):
    """An entry's bytes do not match the CRC-32 of its directory record (MMZIP_ECRC, ``code`` -8): the archive
    is damaged. Raised by every read that hands out a whole stored entry (``Archive[key]``, ``ZarrStore``,
    ``mmzip.open(...)[name]``) before any of its bytes is returned. It is an ``MmzipError`` (so an
    ``OSError``) and also a ``zipfile.BadZipFile``, the exception zarr's ``ZipStore`` (through zipfile)
    raises for the same damage, so code written for ``ZipStore`` catches it unchanged.
    ``path``, ``entry``: the archive and the entry; ``expected``: the CRC-32 of the directory record;
    ``computed``: the CRC-32 of the bytes (from the library's message; None if it did not say)."""

    _PARSE = re.compile(r"^(?P<path>.*?): entry '(?P<entry>.*)': CRC-32 mismatch \(directory says "
                        r"(?P<expected>[0-9a-f]{8}), data gives (?P<computed>[0-9a-f]{8})\)", re.S)

    def __init__(self, code, message, errno=None, filename=None):
        super().__init__(code, message, errno, filename)
        m = self._PARSE.match(message)
        self.path = m.group("path") if m else filename
        self.entry = m.group("entry") if m else None
        self.expected = int(m.group("expected"), 16) if m else None
        self.computed = int(m.group("computed"), 16) if m else None


# mmzip_status values used by the package.
OK = 0
ENOTFOUND = -1
EINVAL = -4
EUNSUPPORTED = -7
ECRC = -8
EBUSY = -9
ETOOBIG = -11
ENOENT = -12
EEXIST = -14
ENOMEM = -3

# The statuses that are an errno whatever the system call behind them (if any).
_STATUS_ERRNO = {ENOENT: errno.ENOENT, EBUSY: errno.EBUSY, EEXIST: errno.EEXIST, ENOMEM: errno.ENOMEM}

# mmzip_options.flags
DURABLE = 1 << 0
PUBLISH_ON_COMMIT = 1 << 1
NO_LOCK = 1 << 2
VERIFY_CRC = 1 << 3
SHARED = 1 << 5                # MMZIP_SHARED: the writer lock per transaction (shared appending)
WAIT_FOREVER = 0xFFFFFFFF      # mmzip_options.lock_wait_ms without limit

# mmzip_commit_policy
COMMIT_EACH = 0
COMMIT_AMORTIZED = 1
COMMIT_MANUAL = 2

NAME_CREATE = 1 << 0           # mmzip_split_name flags
NAME_CREATE_ARCHIVE = 1 << 1
LIST_NO_DATA_OFFSET = 1 << 0   # mmzip_list_ex flags
NAMES_CHILDREN = 1 << 0        # mmzip_list_names flags

# General-purpose bit flags of an entry (mmzip_entry_info.flags) that matter to a reader.
FLAG_ENCRYPTED = 1 << 0
FLAG_STRONG_ENCRYPTION = 1 << 6


def libdir():
    """Where the mmzip libraries are: $MMZIP_LIBDIR, else where this package was built or installed."""
    return os.environ.get("MMZIP_LIBDIR") or _BUILT_LIBDIR


def lib_path(name):
    """The path of library `name` (libmmzip.so, libmmzip_nczarr.so, libmmzip_h5fd.so); MmzipError (ENOENT)
    naming the directory if it is not there."""
    path = os.path.join(libdir(), name)
    if not os.path.exists(path):
        raise error_for(ENOENT, "mmzip: %s not found in %s (set MMZIP_LIBDIR to the directory that has it)"
                        % (name, libdir()), filename=path)
    return path


# -- struct mirrors (mmzip.h) ------------------------------------------------------------------------------

class Options(ctypes.Structure):  # mmzip_options
    _fields_ = [("max_file_size", ctypes.c_uint64), ("alignment", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                ("commit_policy", ctypes.c_uint32), ("max_pending_entries", ctypes.c_uint32),
                ("max_pending_bytes", ctypes.c_uint64), ("max_decoded_size", ctypes.c_uint64),
                ("copy_threads", ctypes.c_uint32), ("lock_wait_ms", ctypes.c_uint32),
                ("progress", ctypes.c_void_p), ("progress_ctx", ctypes.c_void_p),
                ("reserved_", ctypes.c_uint64 * 1)]


class EntryInfo(ctypes.Structure):  # mmzip_entry_info
    _fields_ = [("name", ctypes.c_void_p), ("name_len", ctypes.c_size_t), ("size", ctypes.c_uint64),
                ("compressed_size", ctypes.c_uint64), ("header_offset", ctypes.c_uint64),
                ("data_offset", ctypes.c_uint64), ("crc32", ctypes.c_uint32), ("method", ctypes.c_uint16),
                ("flags", ctypes.c_uint16), ("alignment", ctypes.c_uint32), ("pending", ctypes.c_int)]


class IoVec(ctypes.Structure):  # mmzip_iovec
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_uint64)]


class Info(ctypes.Structure):  # mmzip_info
    _fields_ = ([(n, ctypes.c_uint64) for n in ("entries", "pending", "file_size", "live_bytes", "dead_bytes",
                                                "directory_bytes", "prefix_bytes")]
                + [("alignment", ctypes.c_uint32), ("min_alignment", ctypes.c_uint32)]
                + [(n, ctypes.c_int) for n in ("writable", "writer_locked", "locks_supported", "zip64", "durable")]
                + [(n, ctypes.c_uint64) for n in ("recovered_bytes", "rolled_back", "torn_tail", "append_from",
                                                  "unnamed", "edits_recovered", "edits_open", "free_bytes")]
                + [("end_follows_directory", ctypes.c_int)]
                + [("reserved_bytes", ctypes.c_uint64), ("journal_restored", ctypes.c_uint64),
                   ("edits_unfinished", ctypes.c_uint64), ("edits_restored", ctypes.c_uint64),
                   ("kept_bytes", ctypes.c_uint64), ("spare", ctypes.c_uint64 * 3)])


class UnfinishedEdit(ctypes.Structure):  # mmzip_unfinished_edit
    _fields_ = [("key", ctypes.c_char_p), ("kind", ctypes.c_int), ("writer_alive", ctypes.c_int),
                ("journal_bytes", ctypes.c_uint64)]


# Each mirror and the C struct it stands for: what test_core_abi.py checks.
STRUCTS = {"mmzip_options": Options, "mmzip_entry_info": EntryInfo, "mmzip_iovec": IoVec, "mmzip_info": Info,
           "mmzip_unfinished_edit": UnfinishedEdit}

LIST_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(EntryInfo), ctypes.c_void_p)  # mmzip_list_fn
UNFINISHED_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(UnfinishedEdit), ctypes.c_void_p)
UNFINISHED_UNDO, UNFINISHED_INPLACE = 1, 2
EDIT_MAP = 1  # MMZIP_EDIT_MAP
REPORT_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)  # mmzip_report_fn

# -- function prototypes -----------------------------------------------------------------------------------

_vp, _cp, _u64, _u32, _sz, _int, _uint = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint32,
                                          ctypes.c_size_t, ctypes.c_int, ctypes.c_uint)
_P = ctypes.POINTER

# name: (restype, argtypes). Handles are c_void_p; data buffers c_void_p (bytes objects pass as well).
PROTOTYPES = {
    "mmzip_options_init": (None, [_P(Options)]),
    "mmzip_open": (_int, [_cp, _cp, _P(Options), _P(_vp)]),
    "mmzip_close": (_int, [_vp]),
    "mmzip_discard": (_int, [_vp]),
    "mmzip_count": (_sz, [_vp]),
    "mmzip_exists": (_int, [_vp, _cp]),
    "mmzip_stat": (_int, [_vp, _cp, _P(EntryInfo)]),
    "mmzip_size": (_int, [_vp, _cp, _P(_u64)]),
    "mmzip_get": (_int, [_vp, _cp, _P(_vp), _P(_u64)]),
    "mmzip_verify": (_int, [_vp, _cp]),
    "mmzip_read": (_int, [_vp, _cp, _u64, _vp, _sz, _P(_sz)]),
    "mmzip_list_ex": (_int, [_vp, _cp, _uint, LIST_FN, _vp]),
    "mmzip_list_names": (_int, [_vp, _cp, _uint, _vp, _sz, _P(_sz), _P(_sz)]),
    "mmzip_refresh": (_int, [_vp]),
    "mmzip_generation": (_P(_u64), [_vp]),
    "mmzip_put": (_int, [_vp, _cp, _vp, _u64, _u32]),
    "mmzip_putv": (_int, [_vp, _cp, _P(IoVec), _int, _u32, _vp]),  # attr: NULL, the defaults
    "mmzip_remove": (_int, [_vp, _cp]),
    "mmzip_edit_begin": (_int, [_vp, _cp, _uint, _P(_vp)]),
    "mmzip_edit_map": (_int, [_vp, _P(_vp), _P(_u64), _P(_u64)]),
    "mmzip_begin": (_int, [_vp]),
    "mmzip_commit": (_int, [_vp]),
    "mmzip_rollback": (_int, [_vp]),
    "mmzip_get_info": (_int, [_vp, _P(Info)]),
    "mmzip_unfinished_edits": (_int, [_vp, UNFINISHED_FN, _vp]),
    "mmzip_warnings": (_int, [_vp, REPORT_FN, _vp]),
    "mmzip_last_error": (_cp, []),
    "mmzip_last_errno": (_int, []),
    "mmzip_version": (_cp, []),
    "mmzip_release_kept": (None, []),
    "mmzip_pack": (_int, [_cp, _cp, _P(Options)]),
    "mmzip_split_name": (_int, [_cp, _uint, _P(_sz)]),
}

_lib = None


def lib():
    """libmmzip.so, loaded once, with every prototype of PROTOTYPES set."""
    global _lib
    if _lib is None:
        c = ctypes.CDLL(lib_path("libmmzip.so"))
        for name, (res, args) in PROTOTYPES.items():
            f = getattr(c, name)
            f.restype = res
            f.argtypes = args
        _lib = c
    return _lib


def last_error():
    """The calling thread's last message of the library."""
    return lib().mmzip_last_error().decode("utf-8", "replace")


def check(rc, filename=None):
    """Raises the error of a non-zero status (error_for): the library's message, and its errno; CRCError for
    MMZIP_ECRC."""
    if rc != 0:
        raise error_for(rc, last_error(), lib().mmzip_last_errno(), filename)


def entry_name(key):
    """An entry name as the library takes it: bytes as they are, str as UTF-8. Names that are not UTF-8 (a
    foreign archive's CP437 names) are listed with their bytes kept as surrogate escapes (listed_name), as
    os.fsdecode does, so that a listed name always finds its entry again. A name holding a NUL byte is
    refused (ValueError): the library takes C strings, so it would be cut at the NUL and name another entry."""
    name = bytes(key) if isinstance(key, (bytes, bytearray)) else key.encode("utf-8", "surrogateescape")
    if b"\0" in name:
        raise ValueError("entry name %r holds a NUL byte: ZIP names cannot, and it would name the entry %r"
                         % (key, name.split(b"\0", 1)[0].decode("utf-8", "surrogateescape")))
    return name


def listed_name(info):
    """The name of an mmzip_entry_info as str (see entry_name)."""
    return ctypes.string_at(info.name, info.name_len).decode("utf-8", "surrogateescape")


def unfinished_edits(h):
    """The entries of handle h whose in-place edit is unfinished (mmzip_unfinished_edits): a list of
    (name, kind, writer_alive, journal_bytes), kind UNFINISHED_UNDO or UNFINISHED_INPLACE."""
    out = []

    def cb(u, ctx):
        e = u.contents
        out.append((e.key.decode("utf-8", "surrogateescape"), e.kind, bool(e.writer_alive), e.journal_bytes))
        return 0

    rc = lib().mmzip_unfinished_edits(h, UNFINISHED_FN(cb), None)
    if rc < 0:
        raise MmzipError(rc, last_error())
    return out


def unfinished_message(path, name, kind, alive, journal_bytes):
    """One sentence for an unfinished in-place edit: the archive, the member, what is left, what to do."""
    if kind == UNFINISHED_UNDO and alive:
        return ("%s: member '%s' is being edited in place by a writer now (undo journal %s.mmzip-undo); it can be "
                "read once that writer has closed it" % (path, name, path))
    if kind == UNFINISHED_UNDO:
        return ("%s: member '%s' awaits recovery: it was being edited in place when its writer was killed, and the "
                "undo journal %s.mmzip-undo (%d bytes) holds its last committed version; it cannot be read until "
                "'mmzip recover %s' (or a writable open of the archive) writes the journal back"
                % (path, name, path, journal_bytes, path))
    if alive:
        return ("%s: member '%s' is being modified in place by a writer now: its bytes change as it writes, and its "
                "CRC-32 is refreshed at its next commit" % (path, name))
    return ("%s: member '%s' awaits recovery: it was being modified in place when its writer was killed (its "
            "in-place marker says so), so its values are as that writer left them (perhaps only part of its changes) "
            "and its CRC-32 is stale; 'mmzip recover %s' (or a writable open of the archive) keeps them and "
            "recomputes the CRC" % (path, name, path))


def warn_unfinished(h, path, stacklevel=3):
    """Warns (RuntimeWarning) once per unfinished in-place edit of read-only handle h; returns the list."""
    import warnings
    found = unfinished_edits(h)
    for name, kind, alive, jbytes in found:
        warnings.warn(unfinished_message(path, name, kind, alive, jbytes), RuntimeWarning, stacklevel=stacklevel + 1)
    return found


class ArchiveWarning(UserWarning):
    """A field of the archive's records is wrong but readable, as Python's zipfile reads it (an entry count
    that is not the directory's, a comment running past the directory, a stored entry recorded longer than
    its size, a local header whose method disagrees with the directory): the message names the archive, the
    field and the entry. The values are still checked: an entry concerned whose bytes do not match its CRC-32
    raises ``CRCError``. ``mmzip check`` lists the same findings as "interop:" lines."""


def warn_archive(h, stacklevel=3):
    """Warns (ArchiveWarning) once per finding of mmzip_warnings() on handle h; returns the messages."""
    import warnings
    found = []

    def cb(message, ctx):
        found.append(message.decode("utf-8", "surrogateescape"))

    rc = lib().mmzip_warnings(h, REPORT_FN(cb), None)
    if rc < 0:
        raise MmzipError(rc, last_error())
    for m in found:
        warnings.warn(m[len("warning: "):] if m.startswith("warning: ") else m, ArchiveWarning,
                      stacklevel=stacklevel + 1)
    return found


def split_name(path, create=False, create_archive=False):
    """What ``path`` names by the rule every route shares for "archive#/member" (mmzip_split_name in
    mmzip.h): ``(path, None)`` for the file as written, ``(archive, member)`` for a member of an archive
    ("" for "a.zip#/"). ``create``: the caller creates the file as written if it does not exist;
    ``create_archive``: it creates an archive for a member if there is none. Raises MmzipError (EINVAL)
    for an ambiguous name, naming both readings, and (ENOENT) for one that means nothing."""
    raw = os.fsencode(path)
    cut = ctypes.c_size_t()
    flags = (NAME_CREATE if create else 0) | (NAME_CREATE_ARCHIVE if create_archive else 0)
    check(lib().mmzip_split_name(raw, flags, ctypes.byref(cut)))
    if cut.value == len(raw):
        return path, None
    return os.fsdecode(raw[:cut.value]), os.fsdecode(raw[cut.value + 2:])


def whole_file(path, create, who):
    """``path`` if the rule of split_name reads it as the file it names; MmzipError otherwise, for an API
    (``who``) that opens whole archives only, so that it never opens or creates a file at the other
    reading of the name."""
    archive, member = split_name(path, create)
    if member is not None:
        raise MmzipError(EINVAL, "%s: '%s' names the member '%s' of the archive '%s', and %s opens a whole "
                         "archive (open '%s' and address the member by its name)"
                         % (who, os.fsdecode(path), member, archive, who, archive))
    return path
