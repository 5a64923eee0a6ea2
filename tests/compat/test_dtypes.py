"""Issue point 3: big-endian dtypes, order "F", 0-d arrays, float16, strings of every kind, bool, complex,
datetimes, chunks longer than the shape, and the attribute values that break netCDF-C 4.9.0 are read
correctly, or shown in the documented form (docs/compat-view.md), and no tool crashes on them: ncdump,
nccopy (to a netCDF-4 file, read back without mmzip), ncks and netCDF4-python."""
import json
import math
import os
import zipfile

import numcodecs
import numpy as np
import zarr

import compat_lib as C
from compat_lib import mmzip_run
from mmzip_testlib import TempDir, check_equal, main, run

RNG = np.random.default_rng(11)


def arrays():
    """name -> (data, create kwargs)."""
    out = {}
    for dt in (">i2", ">i4", ">i8", ">u2", ">u4", ">u8", ">f4", ">f8", "<f2", ">f2", "|b1", "<c8", ">c16"):
        data = (RNG.normal(size=(5, 4)) * 100).astype(dt) if dt[1] in "fc" else RNG.integers(0, 100, size=(5, 4)).astype(dt)
        if dt[1] == "c":
            data = data + 1j * np.arange(20).reshape(5, 4).astype(dt)
        out["t" + dt.replace(">", "be_").replace("<", "le_").replace("|", "")] = (data, dict(chunks=(2, 3)))
    out["half_special"] = (np.array([0, -0.0, 1e-7, 65504, np.inf, -np.inf, np.nan], dtype="<f2"), {})
    # Fortran order: 2-D and 3-D, several chunks with partial ones, big-endian and compressed too
    out["fortran_2d"] = (np.arange(35, dtype="<i4").reshape(5, 7), dict(order="F", chunks=(2, 3)))
    out["fortran_3d_be"] = (np.arange(60, dtype=">f8").reshape(3, 4, 5), dict(order="F", chunks=(2, 3, 4)))
    out["fortran_strings"] = (np.array([["a", "bb"], ["ccc", "é"]]), dict(order="F"))
    # 0-d arrays of each kind
    for name, value in (("i4", np.int32(-7)), ("f8", np.float64(2.5)), ("b1", np.bool_(True)),
                        ("be_u2", np.dtype(">u2").type(513)), ("f2", np.float16(0.5)), ("U", np.str_("zéro")),
                        ("S", np.bytes_(b"raw")), ("c8", np.complex64(1 - 2j))):
        out["scalar_" + name] = (np.array(value), {})
    out["scalar_vlen"] = (np.array("vlen é", dtype=object), dict(object_codec=numcodecs.VLenUTF8()))
    # strings
    out["str_fixed_bytes"] = (np.array([b"ab", b"", b"cdefg"]), {})
    out["str_S1_chars"] = (np.array([[b"a", b"b"], [b"c", b""]], dtype="S1"), {})
    out["str_unicode_le"] = (np.array(["αβγ", "", "x"]), {})
    out["str_unicode_be"] = (np.array(["big", "endé"], dtype=">U4"), {})
    out["str_vlen_utf8"] = (np.array(["", "lång", "a" * 40], dtype=object), dict(object_codec=numcodecs.VLenUTF8()))
    out["str_vlen_bytes"] = (np.array([b"\x01\x02", b"xyz"], dtype=object), dict(object_codec=numcodecs.VLenBytes()))
    # other dtypes
    out["datetime_ns"] = (np.array(["2020-01-01T00:00:01", "1969-12-31"], dtype="datetime64[ns]"), {})
    out["datetime_days_be"] = (np.array(["2000-03-01", "NaT"], dtype=">M8[D]"), {})
    out["timedelta_s"] = (np.array([1, -2], dtype="timedelta64[s]"), {})
    out["record"] = (np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "<i4"), ("b", "<f8")]), {})
    # chunks longer than the shape (4.9.0 refuses them)
    out["chunk_longer"] = (np.arange(5, dtype="<i8"), dict(chunks=(10,)))
    out["chunk_longer_2d"] = (np.arange(12, dtype="<u1").reshape(3, 4), dict(chunks=(8, 3)))
    out["missing_chunks"] = (None, dict(shape=(6,), chunks=(2,), dtype=">i4", fill_value=-9))
    return out


AWKWARD_ATTRS = {
    "strings": ["a", "b c"],
    "mixed": [1, "x", None],
    "nothing": None,
    "empty_list": [],
    "nested": [[1, 2], [3]],
    "dict": {"k": ["v", 1], "é": None},
    "unicode": "caf\u00e9 \u2603",
    "ints_wide": [1, 100000, -5],
    "ints_and_floats": [1, 2.5],
    "bools": [True, False],
    "big": 2 ** 70,
    "nan": math.nan,
    "empty_string": "",
}

# How the view presents each awkward attribute (docs/compat-view.md, "Attributes"); CDL values as parsed.
AWKWARD_SHOWN = {
    "strings": [b'["a", "b c"]'],
    "mixed": [b'[1, "x", null]'],
    "nothing": [b"null"],
    "empty_list": [b"[]"],
    "nested": [b"[[1, 2], [3]]"],
    "unicode": ["café ☃".encode()],
    "ints_wide": [1, 100000, -5],
    "ints_and_floats": [1.0, 2.5],
    "bools": [1, 0],
    "big": [str(2 ** 70).encode()],
    "empty_string": [b""],
}


def _write(path):
    store = zarr.ZipStore(path, mode="w")
    root = zarr.group(store=store)
    root.attrs.put(AWKWARD_ATTRS)
    made = {}
    for name, (data, kwargs) in arrays().items():
        if data is None:
            a = root.create(name, **kwargs)
            a[2:4] = [5, 6]  # chunks 0 and 2 stay missing: fill_value
        else:
            a = root.array(name, data, **kwargs)
        made[name] = a
    sub = root.create_group("grp")
    sub.attrs.put({"list_of_strings": ["x", "y"]})
    v = sub.array("v", np.arange(3, dtype=">i2"))
    v.attrs.put({"units": "m", "_FillValue": -1, "valid_range": [0, 1000], "flags": ["a", "b"]})
    store.close()
    return list(made)


def _expected(root, name):
    return C.expected_presentation(root[name])


def test_values_through_netcdf4_python():
    with TempDir() as tmp:
        path = os.path.join(tmp, "dtypes.zarr.zip")
        names = _write(path)
        store = zarr.ZipStore(path, mode="r")
        root = zarr.open_group(store, mode="r")
        try:
            with C.open_netcdf(path) as ds:
                for name in names:
                    C.assert_values(C.netcdf_values(ds[name]), _expected(root, name), name)
                C.assert_values(C.netcdf_values(ds["grp"]["v"]), root["grp/v"][:].astype("<i2"), "grp/v")
        finally:
            store.close()


def test_documented_forms():
    with TempDir() as tmp:
        path = os.path.join(tmp, "dtypes.zarr.zip")
        _write(path)
        c = C.cdl(path)
        v = c.vars
        check_equal(v["scalar_f8"]["dims"], ["_scalar_"], "0-d -> length-1 dimension")
        check_equal(v["scalar_f8"]["attrs"]["_ZARR_SHAPE"], [b"[]"], "0-d shape recorded")
        check_equal(v["scalar_U"]["dims"], C.tool_dims(["_scalar_", "scalar_U_strlen"]), "0-d string")
        check_equal(c.data["scalar_U"], ["zéro".encode()], "0-d string value")
        check_equal((v["tle_f2"]["type"], v["tle_f2"]["attrs"]["_ZARR_DTYPE"]), ("float", [b"<f2"]), "float16")
        check_equal((v["tb1"]["type"], v["tb1"]["attrs"]["_ZARR_DTYPE"]), ("ubyte", [b"|b1"]), "bool")
        check_equal((v["tbe_i4"]["type"], v["tbe_i4"]["attrs"]["_ZARR_DTYPE"]), ("int", [b">i4"]), "big-endian")
        check_equal(v["tle_c8"]["dims"][-1], "re_im", "complex parts dimension")
        check_equal(v["str_S1_chars"]["dims"], ["_zdim_2", "_zdim_2"], "|S1 is char without a length dimension")
        if C.TOOL_STRINGS:  # 4.9.3+: NC_STRING, as wide as the longest string
            check_equal((v["str_vlen_utf8"]["type"], v["str_vlen_utf8"]["dims"]), ("string", ["_zdim_3"]), "NC_STRING")
        else:
            check_equal(v["str_vlen_utf8"]["dims"][-1], "str_vlen_utf8_strlen", "string length dimension")
            check_equal(c.dims["str_vlen_utf8_strlen"], 40, "width = longest string in UTF-8 bytes")
        check_equal(v["datetime_ns"]["attrs"]["units"], [b"nanoseconds since 1970-01-01 00:00:00"], "units")
        check_equal(v["record"]["dims"][-1], "record_bytes", "records as bytes")
        check_equal(v["fortran_2d"]["dims"], ["_zdim_5", "_zdim_7"], "order F keeps the shape")
        check_equal(c.data["missing_chunks"], [-9, -9, 5, 6, -9, -9], "missing chunks show the fill value")
        for name, shown in AWKWARD_SHOWN.items():
            check_equal(c.gattrs[""][name], shown, "attribute " + name)
        assert math.isnan(c.gattrs[""]["nan"][0])
        check_equal(json.loads(c.gattrs[""]["dict"][0]), AWKWARD_ATTRS["dict"], "dict as JSON text")
        check_equal(c.gattrs["grp"]["list_of_strings"], [b'["x", "y"]'], "group attribute")
        check_equal(v["grp/v"]["attrs"]["valid_range"], [0, 1000], "numeric list")
        check_equal(v["grp/v"]["attrs"]["flags"], [b'["a", "b"]'], "variable attribute")
        check_equal(v["grp/v"]["attrs"]["_FillValue"], [-1], "_FillValue typed as the variable")
        assert c.text.count("short v(") == 1, "_FillValue of type short on a short variable"


def test_nat_through_xarray_netcdf4_engine():
    """numpy's NaT is missing to zarr-python and xr.open_zarr; through the netCDF route xarray decodes the
    integers with their units, and without a _FillValue it made NaT 1970-01-01 (an outside review). The view
    gives datetime and timedelta arrays _FillValue = NaT's integer: the netcdf4 engine shows what open_zarr
    shows, NaT where NaT is and the epoch where the epoch is."""
    import warnings
    import xarray as xr
    with TempDir() as tmp:
        path = os.path.join(tmp, "nat.zarr.zip")
        store = zarr.ZipStore(path, mode="w")
        root = zarr.group(store=store)
        data = {"when": np.array(["2020-01-01T00:00", "NaT", "1970-01-01T00:00", "2021-06-01T12:00"], dtype="M8[s]"),
                "days_be": np.array(["2000-03-01", "NaT", "1970-01-01", "NaT"], dtype=">M8[D]"),
                "lag": np.array([1, -9223372036854775808, 0, 5], dtype="m8[s]")}
        for name, values in data.items():
            root.array(name, values).attrs["_ARRAY_DIMENSIONS"] = ["t"]
        store.close()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with xr.open_zarr(zarr.ZipStore(path, mode="r"), consolidated=False) as z, \
                    xr.open_dataset(path, engine="netcdf4") as n:
                for name in data:
                    want = z[name].values
                    check_equal(np.isnat(want).tolist(), np.isnat(data[name]).tolist(), "open_zarr's NaT in " + name)
                    got = n[name].values
                    check_equal(got.astype("M8[ns]" if got.dtype.kind == "M" else "m8[ns]").tolist(),
                                want.astype("M8[ns]" if want.dtype.kind == "M" else "m8[ns]").tolist(),
                                name + " through the netcdf4 engine, against open_zarr")
        c = C.cdl(path)
        check_equal(c.vars["when"]["attrs"]["_FillValue"], [-9223372036854775808], "the _FillValue shown")


def test_no_tool_crashes():
    with TempDir() as tmp:
        path = os.path.join(tmp, "dtypes.zarr.zip")
        names = _write(path)
        c = C.cdl(path, "-h")
        # netCDF-C 4.9.0's nccopy cannot copy any NCZarr char variable to netCDF-4 (it copies NCZarr's
        # "little-endian" flag, which HDF5 refuses for chars: NC_EINVAL), translated or not; copy the rest.
        # 4.9.3+ are shown no char variable (strings are NC_STRING there): all 39 are copied.
        numeric = [n for n in names if c.vars[n]["type"] != "char"]
        check_equal(len(numeric), 39 if C.TOOL_STRINGS else 29, "variables nccopy can copy")
        out = os.path.join(tmp, "copy.nc")
        mmzip_run("nccopy", "-k", "nc4", "-V", ",".join(numeric), path, out)
        # the copy is an ordinary netCDF-4 file: read it without mmzip and compare with zarr-python
        store = zarr.ZipStore(path, mode="r")
        root = zarr.open_group(store, mode="r")
        try:
            with C.netCDF4.Dataset(out) as ds:
                for name in numeric:
                    want = _expected(root, name)
                    if C.TOOL_STRINGS and root[name].dtype == np.dtype("S1"):
                        want = root[name][...]  # 4.9.3+ read "|S1" as NC_STRING: one 1-byte string per element
                    C.assert_values(C.netcdf_values(ds[name]), want, "nccopy " + name)
        finally:
            store.close()
        p = mmzip_run("ncks", "-H", "-v", "tbe_f8,scalar_vlen", path, check=False)
        check_equal(p.returncode, 0, "ncks exit status:\n" + p.stderr)
        assert "vlen é" in p.stdout, p.stdout
        run(["ncdump", "-h", out])


NCZARR_SCALAR_CDL = """netcdf s {
dimensions:
  x = 3 ;
variables:
  double scal ;
    scal:units = "m" ;
  int v(x) ;
  char name(x) ;
data:
  scal = 4.5 ;
  v = 1, 2, 3 ;
  name = "abc" ;
}
"""


def test_nczarr_own_scalars():
    """netCDF-C 4.9.0 writes a scalar as NCZarr's "storage": "scalar" form, which its own ncdump cannot read
    back (segfault, Unidata/netcdf-c#2485): the view shows it on a "_scalar_" dimension."""
    with TempDir() as tmp:
        cdl, nc, path = (os.path.join(tmp, n) for n in ("s.cdl", "s.nc", "s.zarr.zip"))
        with open(cdl, "w") as f:
            f.write(NCZARR_SCALAR_CDL)
        run(["ncgen", "-4", "-o", nc, cdl])
        mmzip_run("nccopy", nc, path)
        c = C.cdl(path)
        # 4.9.3+ write and read back true scalars (the bug is fixed there): the view leaves them alone.
        check_equal((c.vars["scal"]["dims"], c.data["scal"], c.vars["scal"]["attrs"]["units"]),
                    ([] if C.TOOL_STRINGS else ["_scalar_"], [4.5], [b"m"]), "scalar")
        check_equal(c.data["v"], [1, 2, 3], "vector")
        check_equal((c.vars["name"]["type"], c.data["name"]), ("char", [b"abc"]), "NCZarr's own char variable, as it is")
        raw = C.ncdump(path, env={"MMZIP_NCZARR_VIEW": "raw"}, check=False)
        if C.TOOL_STRINGS:
            check_equal(raw.stdout, c.text, "4.9.3+: the view shows their own NCZarr as it is")
            print("netCDF-C %s tools: the in-process netCDF4-python part is skipped (it runs Debian's 4.9.0, "
                  "which cannot read the NCZarr metadata %s's nccopy wrote)" % (C.TOOL_RELEASE, C.TOOL_RELEASE))
            return
        assert raw.returncode != 0, "raw 4.9.0 read NCZarr's scalar (fixed upstream?):\n" + raw.stdout
        before = C.entry_crcs(path)
        with C.open_netcdf(path, "a") as ds:
            check_equal(float(ds["scal"][0]), 4.5, "scalar via netCDF4-python")
            ds["scal"].getncattr("units")
        check_equal(C.entry_crcs(path), before, "an idle write session leaves NCZarr's archive as it was")


def test_nczarr_of_debian_release():
    """NCZarr written by Debian's 4.9.0 (upper-case metadata, "<U1" chars), read by the tools' release: on
    4.9.3+, which take it for plain Zarr and refuse "<U1", the view shows it as plain Zarr (chars as one-byte
    strings); on 4.9.0 it is its own format (test_nczarr_own_scalars)."""
    if C.TOOL_RELEASE < (4, 9, 3):
        print("netCDF-C %s tools read 4.9.0's NCZarr as their own format: covered by test_nczarr_own_scalars"
              % (C.TOOL_RELEASE,))
        return
    with TempDir() as tmp:
        cdl, nc, path = (os.path.join(tmp, n) for n in ("s.cdl", "s.nc", "s.zarr.zip"))
        with open(cdl, "w") as f:
            f.write(NCZARR_SCALAR_CDL)
        run(["ncgen", "-4", "-o", nc, cdl])
        mmzip_run("/usr/bin/nccopy", nc, path)  # Debian's netCDF-C 4.9.0
        with zipfile.ZipFile(path) as z:
            assert b"_NCZARR_SUPERBLOCK" in z.read(".zgroup") and b'"<U1"' in z.read("name/.zarray")
        c = C.cdl(path)
        check_equal((c.data["scal"], c.data["v"], c.data["name"]), ([4.5], [1, 2, 3], [b"a", b"b", b"c"]), "values")
        check_equal(c.vars["scal"]["attrs"]["units"], [b"m"], "attribute")


def test_control_characters_in_string_attributes():
    """zarr-python writes control characters in a string attribute as \\u00XX escapes, which netCDF-C 4.9.0's
    JSON parser turns into the text "u00XX": the view presented "a\\u0001b" as "au0001b", a wrong value with no
    error (an outside review). They are shown as the characters, and a NUL ends the string (section 4)."""
    attrs = {"ctl": "a\x01b", "tab_nl": "x\ty\nz", "bell": "\x07", "nul": "ab\x00cd", "e": "caf\u00e9",
             "quote": 'say "hi" \\ bye'}
    shown = dict(attrs, nul="ab")
    with TempDir() as tmp:
        path = os.path.join(tmp, "ctl.zarr.zip")
        store = zarr.ZipStore(path, mode="w")
        root = zarr.group(store=store)
        root.attrs.put(attrs)
        root.array("v", np.arange(3, dtype="<i4")).attrs.put(attrs)
        store.close()
        with C.open_netcdf(path) as ds:
            got = {k: ds.getncattr(k) for k in attrs}
            check_equal(got, shown, "root attributes through the view")
            got = {k: ds["v"].getncattr(k) for k in attrs}
            check_equal(got, shown, "variable attributes through the view")


if __name__ == "__main__":
    main([test_nat_through_xarray_netcdf4_engine, test_values_through_netcdf4_python, test_control_characters_in_string_attributes,
          test_documented_forms, test_no_tool_crashes, test_nczarr_own_scalars,
          test_nczarr_of_debian_release])
