"""Helpers of the compatibility-view tests: running Debian's netCDF tools through `mmzip run`, parsing what
ncdump prints (CDL), reading archives with netCDF4-python through the storage map, and comparing every value
with what zarr-python reads from the same archive."""
import math
import os
import re
import sys
import zipfile
import zlib


# Extra environment for the netCDF tools the tests run under `mmzip run` (see _under_sanitizer_runtime).
TOOL_ENV = {}


def _under_sanitizer_runtime():
    """In the ASan+UBSan configuration the plugins are instrumented and Python is not: run this test with the
    sanitizer runtime preloaded, and the netCDF tools too (TOOL_ENV; `mmzip run` puts the plugins before it
    in LD_PRELOAD, hence verify_asan_link_order=0). The tools also get libp11-kit (loaded by netCDF-C
    through libcurl) before GCC 12's libubsan: otherwise its destructor deadlocks in freelocale() at exit
    (seen with nccopy on Debian 12). Other programs (unzip, 7z, Python) hang at exit with libp11-kit
    preloaded, and need no runtime: they get no LD_PRELOAD at all."""
    runtime = os.environ.get("MMZIP_ASAN_RUNTIME")
    if not runtime:
        return
    preload = os.environ.get("LD_PRELOAD", "")
    if runtime not in preload:
        env = dict(os.environ)
        env["LD_PRELOAD"] = ":".join(p for p in (runtime, preload) if p)
        env["ASAN_OPTIONS"] = ":".join(p for p in (env.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if p)
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    p11 = "/lib/x86_64-linux-gnu/libp11-kit.so.0"
    TOOL_ENV["LD_PRELOAD"] = ":".join([runtime] + ([p11] if os.path.exists(p11) else []))
    del os.environ["LD_PRELOAD"]


_under_sanitizer_runtime()

import numpy as np  # noqa: E402

import mmzip_testlib
from mmzip_testlib import MMZIP, check_equal, mmzip, run  # noqa: F401  (re-exported)

import mmzip as mmzip_py

# The storage map must be loaded before libnetcdf (netCDF4-python) to take its place.
mmzip_py.enable_netcdf()
import netCDF4  # noqa: E402


# ----------------------------------------------------------------------------------------------------------
# The netCDF-C release of the tools (ncdump, nccopy: MMZIP_NETCDF_PREFIX's when set, see docs/netcdf-guide.md)

def _tool_release():
    words = run(["nc-config", "--version"]).stdout.split()
    return tuple(int(x) for x in re.findall(r"\d+", words[-1])[:3])


TOOL_RELEASE = _tool_release()
# netCDF-C 4.9.3+ read no "U" dtype: the view shows them strings as NC_STRING (fixed-width "|S<n>"), without
# the trailing length dimension 4.9.0's char rows have (docs/compat-view.md, section 2.1). netCDF4-python
# runs in this process with Debian's 4.9.0, so it keeps seeing char rows.
TOOL_STRINGS = TOOL_RELEASE >= (4, 9, 3)


def tool_dims(dims):
    """The dimensions the tools show for a variable the view presents with dims under 4.9.0."""
    dims = list(dims)
    return dims[:-1] if TOOL_STRINGS and dims and dims[-1].endswith("_strlen") else dims


# ----------------------------------------------------------------------------------------------------------
# ncdump and CDL

def mmzip_run(*args, check=True, env=None):
    """`mmzip run ARGS` (a netCDF tool with the plugins); returns the CompletedProcess."""
    return mmzip_testlib.mmzip_run(*args, check=check, env=dict(TOOL_ENV, **(env or {})))


def ncdump(path, *args, check=True, env=None):
    """`mmzip run ncdump ARGS PATH`; returns the CompletedProcess."""
    return mmzip_run("ncdump", *args, path, check=check, env=env)


_TOKEN = re.compile(r'''\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<punct>[=,;(){}:])|(?P<word>[^\s=,;(){}:"]+))''', re.S)

_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "b": b"\b", "f": b"\f", "v": b"\v", "a": b"\a", '"': b'"',
            "\\": b"\\", "'": b"'", "?": b"?"}


def cdl_string(token):
    """Decodes a CDL string literal (as ncdump writes it) into bytes."""
    body = token[1:-1].encode("utf-8")
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
            continue
        nxt = body[i + 1:i + 2].decode("latin-1")
        if nxt.isdigit():
            j = i + 1
            while j < len(body) and j < i + 4 and body[j:j + 1].isdigit():
                j += 1
            out.append(int(body[i + 1:j], 8))
            i = j
        else:
            out += _ESCAPES.get(nxt, nxt.encode("latin-1"))
            i += 2
    return bytes(out)


def cdl_number(word):
    w = word
    for suffix in ("ULL", "LL", "UL", "US", "UB", "ub", "us", "u", "U", "b", "s", "f", "L", "l", "B", "S"):
        if w.endswith(suffix) and len(w) > len(suffix) and not w.lower().endswith("inf"):
            candidate = w[: -len(suffix)]
            try:
                float(candidate)
                w = candidate
                break
            except ValueError:
                pass
    if w in ("NaN", "NaNf", "nan"):
        return math.nan
    if w in ("Infinity", "Infinityf", "inf"):
        return math.inf
    if w in ("-Infinity", "-Infinityf", "-inf"):
        return -math.inf
    if w == "_":
        return None
    try:
        return int(w)
    except ValueError:
        return float(w)


def _tokens(text):
    pos = 0
    out = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise AssertionError("cannot tokenize CDL at: %r" % text[pos:pos + 60])
        pos = m.end()
        if m.group("str") is not None:
            out.append(("str", m.group("str")))
        elif m.group("punct") is not None:
            out.append(("p", m.group("punct")))
        elif m.group("word") is not None:
            out.append(("w", m.group("word")))
    return out


_CDL_TYPES = {"char", "byte", "ubyte", "short", "ushort", "int", "uint", "int64", "uint64", "float", "double",
              "string"}


class Cdl:
    """What ncdump printed: dims[name] = length, vars[path] = dict(type, dims, attrs), data[path] = list,
    gattrs[group path] = attrs. Paths are '/'-joined group names and variable name ("axes/cell")."""

    def __init__(self, text):
        self.text = text
        self.dims, self.vars, self.data, self.gattrs = {}, {}, {}, {}
        self._parse(_tokens(self._strip_comments(text)))

    @staticmethod
    def _strip_comments(text):
        out = []
        for line in text.splitlines():
            in_str = False
            i = 0
            while i < len(line):
                c = line[i]
                if c == "\\" and in_str:
                    i += 2
                    continue
                if c == '"':
                    in_str = not in_str
                elif not in_str and line.startswith("//", i):
                    line = line[:i]
                    break
                i += 1
            out.append(line)
        return "\n".join(out)

    def _parse(self, toks):
        i = 0
        groups = []
        section = None
        assert toks[0] == ("w", "netcdf"), toks[:3]
        i = 3  # netcdf NAME {

        def path(name):
            return "/".join(groups + [name])

        def values(i):
            vals = []
            while toks[i] != ("p", ";"):
                kind, v = toks[i]
                if kind == "str":
                    vals.append(cdl_string(v))
                elif (kind, v) == ("w", "NIL"):  # a NULL string (4.9.3+ read an empty fixed string so)
                    vals.append(b"")
                elif kind == "w":
                    vals.append(cdl_number(v))
                i += 1
            return vals, i + 1

        while i < len(toks):
            kind, v = toks[i]
            if (kind, v) == ("p", "}"):
                if groups:
                    groups.pop()
                i += 1
                continue
            if kind == "w" and v in ("dimensions", "variables", "data", "types") and toks[i + 1] == ("p", ":"):
                section = v
                i += 2
                continue
            if kind == "w" and v == "group" and toks[i + 1] == ("p", ":"):
                groups.append(toks[i + 2][1])
                i += 4  # group : NAME {
                section = None
                continue
            if section in (None, "dimensions", "variables") and kind == "w" and v in _CDL_TYPES and (
                    toks[i + 1] == ("p", ":") or toks[i + 2] == ("p", ":")):
                i += 1  # a typed attribute ("string v:units = ...", "string :title = ..."): the values say it
                continue
            if (kind, v) == ("p", ":") and section in (None, "dimensions", "variables"):  # group attribute (also after dimensions alone)
                name = toks[i + 1][1]
                vals, i = values(i + 3)
                self.gattrs.setdefault("/".join(groups), {})[name] = vals
                continue
            if section == "dimensions":
                name = v
                assert toks[i + 1] == ("p", "="), toks[i:i + 4]
                length = toks[i + 2][1]
                self.dims[name] = None if length == "UNLIMITED" else int(length)
                i += 4
                continue
            if section == "variables":
                if toks[i + 1] == ("p", ":"):  # variable attribute
                    var, name = v, toks[i + 2][1]
                    vals, i = values(i + 4)
                    self.vars[path(var)]["attrs"][name] = vals
                    continue
                vtype, name = v, toks[i + 1][1]
                dims = []
                i += 2
                if toks[i] == ("p", "("):
                    i += 1
                    while toks[i] != ("p", ")"):
                        if toks[i][0] == "w":
                            dims.append(toks[i][1])
                        i += 1
                    i += 1
                assert toks[i] == ("p", ";"), toks[i]
                i += 1
                self.vars[path(name)] = dict(type=vtype, dims=dims, attrs={})
                continue
            if section == "data":
                name = v
                assert toks[i + 1] == ("p", "="), toks[i:i + 4]
                vals, i = values(i + 2)
                self.data[path(name)] = vals
                continue
            raise AssertionError("unexpected CDL token %r in section %r" % (toks[i], section))


def cdl(path, *args, env=None):
    return Cdl(ncdump(path, *args, env=env).stdout)


# ----------------------------------------------------------------------------------------------------------
# Reading with netCDF4-python

def open_netcdf(path, mode="r"):
    return netCDF4.Dataset(path, mode)


def walk_netcdf(ds, prefix=""):
    """Yields (path, variable) for every variable of every group."""
    for name, var in ds.variables.items():
        yield prefix + name, var
    for name, grp in ds.groups.items():
        yield from walk_netcdf(grp, prefix + name + "/")


def netcdf_values(var):
    """The variable's values as netCDF4-python returns them, masks and auto-decoding off except for strings:
    char variables come back as arrays of bytes rows (NULs stripped)."""
    var.set_auto_maskandscale(False)
    var.set_auto_chartostring(False)
    data = np.asarray(var[:])
    if data.dtype.kind == "S" and data.dtype.itemsize == 1 and data.ndim >= 1:
        rows = data.reshape(-1, data.shape[-1])
        joined = [b"".join(r.tolist()).rstrip(b"\0") for r in rows]
        return np.array(joined, dtype=object).reshape(data.shape[:-1])
    return data


# ----------------------------------------------------------------------------------------------------------
# Comparisons

def as_bytes_rows(a):
    """zarr string arrays (U, S, O) as an array of UTF-8 bytes without trailing NULs."""
    flat = []
    for x in np.asarray(a, dtype=object).reshape(-1):
        if isinstance(x, bytes):
            flat.append(x.rstrip(b"\0"))
        elif x is None:
            flat.append(b"")
        else:
            flat.append(str(x).encode("utf-8"))
    return np.array(flat, dtype=object).reshape(np.shape(a))


def expected_presentation(zarr_array):
    """What the view must show for a zarr array: 0-d as shape (1,), little-endian, strings as bytes rows
    ("|S1" rows joined along the last axis), bool as uint8, float16 as float32, complex with a trailing
    (real, imag) axis, datetimes as int64, records as a trailing axis of bytes."""
    a = zarr_array[...]
    if a.ndim == 0:
        a = a.reshape(1)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    if a.dtype == np.dtype("S1") and a.ndim >= 1:
        # netCDF's char convention: the last axis already is the string length
        rows = a.reshape(-1, a.shape[-1]) if a.ndim > 1 else a.reshape(1, -1)
        joined = [b"".join(r.tolist()).rstrip(b"\0") for r in rows]
        a = np.array(joined, dtype=object).reshape(a.shape[:-1] if a.ndim > 1 else ())
    elif a.dtype.kind in "USO":
        a = as_bytes_rows(a)
    elif a.dtype.kind == "b":
        a = a.astype(np.uint8)
    elif a.dtype == np.float16:
        a = a.astype(np.float32)
    elif a.dtype.kind == "c":
        a = np.stack([a.real, a.imag], axis=-1)
    elif a.dtype.kind in "Mm":
        a = a.view("<i8")
    elif a.dtype.kind == "V":
        a = np.ascontiguousarray(a).view(np.uint8).reshape(*a.shape, a.dtype.itemsize)
    return a


def assert_values(got, want, what):
    got = np.asarray(got)
    want = np.asarray(want)
    if want.dtype == object or got.dtype == object or got.dtype.kind in "SU":
        g = as_bytes_rows(got).reshape(-1).tolist()
        w = as_bytes_rows(want).reshape(-1).tolist()
        check_equal(g, w, what)
        return
    if got.shape != want.shape:
        raise AssertionError("%s: shape %s, want %s" % (what, got.shape, want.shape))
    if want.dtype.kind == "f" or got.dtype.kind == "f":
        ok = np.array_equal(got.astype(np.float64), want.astype(np.float64), equal_nan=True)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def cdl_strings(c, path):
    """The elements of a string variable ncdump printed, as bytes without trailing NULs, whichever form the
    view chose for the tools' release: char rows (4.9.0), NC_STRING (4.9.3+), or ubyte rows along a trailing
    "_strlen" dimension (4.9.3+, strings holding a NUL inside)."""
    var, vals = c.vars[path], c.data[path]
    if var["type"] == "ubyte" and var["dims"] and var["dims"][-1].endswith("_strlen"):
        width = c.dims[var["dims"][-1]]
        return [bytes(vals[i:i + width]).rstrip(b"\0") for i in range(0, len(vals), width)]
    return [v.rstrip(b"\0") for v in vals]


def cdl_values(c, path, shape, is_char):
    """The data ncdump printed for path, as an array of the presented shape (char: rows of bytes)."""
    vals = c.data[path]
    if c.vars[path]["type"] == "string":  # 4.9.3+ tools: one string per element, no length dimension
        return np.array([v.rstrip(b"\0") for v in vals], dtype=object).reshape(shape)
    if is_char:
        return np.array([v.rstrip(b"\0") for v in vals], dtype=object).reshape(shape[:-1])
    return np.array(vals, dtype=np.float64).reshape(shape)


# ----------------------------------------------------------------------------------------------------------
# Archives

def entry_crcs(archive):
    """{name: (crc, size, data offset)} of every entry, from `mmzip ls`, cross-checked with Python zipfile."""
    from mmzip_testlib import ls_entries
    entries = ls_entries(archive)
    with zipfile.ZipFile(archive) as z:
        for info in z.infolist():
            crc = "%08x" % info.CRC
            if info.filename in entries:
                check_equal(entries[info.filename]["crc"].lower(), crc, "CRC of %s" % info.filename)
    return {n: (e["crc"].lower(), e["size"], e["offset"]) for n, e in entries.items()}


def zip_entry_bytes(archive):
    with zipfile.ZipFile(archive) as z:
        return {i.filename: z.read(i.filename) for i in z.infolist()}


def crc32(data):
    return "%08x" % (zlib.crc32(data) & 0xffffffff)


def fresh(tmp, name):
    path = os.path.join(tmp, name)
    if os.path.exists(path):
        os.remove(path)
    return path


# -- zarrita (Zarr v3 from an implementation nobody here wrote), installed by the compat_zarrita_setup test --

ZARRITA = os.environ.get("MMZIP_ZARRITA_DIR")


def node(script, *args):
    """Runs tests/compat/zarrita/SCRIPT with node and returns the JSON it prints."""
    import json
    import subprocess
    assert ZARRITA and os.path.isdir(os.path.join(ZARRITA, "node_modules", "zarrita")), \
        "zarrita is not installed (the compat_zarrita_setup test installs it with npm into %s)" % ZARRITA
    p = subprocess.run(["node", os.path.join(ZARRITA, script)] + list(args), capture_output=True, text=True)
    if p.returncode:
        raise AssertionError("node %s failed:\n%s" % (script, p.stderr))
    return json.loads(p.stdout)


def zip_dir(directory, archive):
    """A directory store zipped as zarr's ZipStore would hold it: every file stored, in sorted order."""
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        for base, _, files in sorted(os.walk(directory)):
            for f in sorted(files):
                full = os.path.join(base, f)
                z.write(full, os.path.relpath(full, directory))
