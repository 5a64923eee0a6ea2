"""Issue 11 point 1: netCDF-C 4.9.0 - 4.9.2 label a big-endian netCDF-4 variable ">i4" in the .zarray but write
native (little-endian) bytes. Through the storage map, the archive's dtype always matches its bytes: for every
numeric type netCDF-4 has and every byte order (big, little, native), `nccopy in.nc out.zarr.zip` and
netCDF4-python (endian='big') give archives whose raw chunk bytes, decoded with the dtype the archive declares,
are the true values; ncdump, netCDF4-python, zarr-python and xarray all read them. An archive already made by
4.9.0 with its bug is refused with an error naming the array, never read as 16777216."""
import json
import re
import os
import zipfile

import numpy as np
import xarray as xr
import zarr

import compat_lib as C
from compat_lib import mmzip_run
from mmzip_testlib import TempDir, check_equal, main, run

# netCDF-4's numeric types (char and string have no byte order)
TYPES = {"i1": "byte", "u1": "ubyte", "i2": "short", "u2": "ushort", "i4": "int", "u4": "uint", "i8": "int64",
         "u8": "uint64", "f4": "float", "f8": "double"}
ORDERS = ("big", "little", "native")


def values(code):
    dt = np.dtype(code)
    if dt.kind == "f":
        return np.array([1.5, -2.25, 0.0, np.finfo(dt).max, np.finfo(dt).tiny, -np.inf, np.nan, 3e-3], dtype=dt)
    info = np.iinfo(dt)
    return np.array([1, 2, info.max, info.min, info.max - 1, 0, 100, info.min + 1], dtype=dt)


def make_source(path):
    """A netCDF-4 file (written by HDF5, no mmzip) with one variable per (type, byte order)."""
    import netCDF4
    with netCDF4.Dataset(path, "w") as ds:
        ds.createDimension("x", 8)
        ds.createDimension("y", 2)
        for code in TYPES:
            for order in ORDERS:
                v = ds.createVariable("%s_%s" % (code, order), code, ("x",), endian=order)
                v[:] = values(code)
                w = ds.createVariable("%s_%s_2d" % (code, order), code, ("y", "x"), endian=order,
                                      chunksizes=(1, 4), fill_value=values(code)[5])
                w[0, :] = values(code)[::-1]  # row 1 left to the fill value


def expected(name):
    code = name.split("_")[0]
    if name.endswith("_2d"):
        return np.stack([values(code)[::-1], np.full(8, values(code)[5], dtype=code)])
    return values(code)


def check_archive_bytes(path):
    """Every chunk's bytes, decoded with the dtype its .zarray declares, are the true values."""
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        for code in TYPES:
            for order in ORDERS:
                name = "%s_%s" % (code, order)
                meta = json.loads(z.read(name + "/.zarray"))
                got = np.frombuffer(z.read(name + "/0"), dtype=np.dtype(meta["dtype"]))
                C.assert_values(got, values(code), "%s: raw chunk bytes as %s" % (name, meta["dtype"]))
                assert name + "_2d/0.0" in names


def check_readers(path, names):
    c = C.cdl(path, "-p", "9,17")  # enough digits to print floats and doubles exactly
    root = zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")
    with xr.open_zarr(path, mask_and_scale=False, consolidated=False) as xz, C.open_netcdf(path) as ds:
        for name in names:
            want = expected(name)
            C.assert_values(root[name][...], want, "zarr-python " + name)
            C.assert_values(xz[name].values, want, "xarray " + name)
            C.assert_values(C.netcdf_values(ds[name]), want, "netCDF4-python " + name)
            # ncdump prints "_" for elements equal to the fill value
            code = name.split("_")[0]
            fill = values(code)[5] if name.endswith("_2d") else C.netCDF4.default_fillvals[code]
            printed = np.array([np.dtype(code).type(fill if v is None else v) for v in c.data[name]])
            C.assert_values(printed.reshape(want.shape), want, "ncdump " + name)


def test_nccopy_every_type_and_order():
    with TempDir() as tmp:
        src, out = os.path.join(tmp, "in.nc"), os.path.join(tmp, "out.zarr.zip")
        make_source(src)
        mmzip_run("nccopy", src, out)
        check_archive_bytes(out)
        names = ["%s_%s%s" % (code, order, s) for code in TYPES for order in ORDERS for s in ("", "_2d")]
        check_readers(out, names)
        # and back to netCDF-4 (HDF5) without mmzip: the same values
        back = os.path.join(tmp, "back.nc")
        mmzip_run("nccopy", out, back)
        with C.netCDF4.Dataset(back) as ds:
            for name in names:
                C.assert_values(C.netcdf_values(ds[name]), expected(name), "round trip " + name)


def test_netcdf4_python_endian_big():
    with TempDir() as tmp:
        path = os.path.join(tmp, "py.zarr.zip")
        with C.netCDF4.Dataset(path, "w") as ds:
            ds.createDimension("x", 8)
            for code in ("i2", "u4", "i8", "f4", "f8"):
                v = ds.createVariable(code + "_big", code, ("x",), endian="big")
                v[:] = values(code)
        with zipfile.ZipFile(path) as z:
            for code in ("i2", "u4", "i8", "f4", "f8"):
                meta = json.loads(z.read(code + "_big/.zarray"))
                check_equal(meta["dtype"], "<" + code, "declared dtype of %s_big" % code)
                got = np.frombuffer(z.read(code + "_big/0"), dtype=np.dtype(meta["dtype"]))
                C.assert_values(got, values(code), "raw bytes of %s_big" % code)
        check_readers(path, [code + "_big" for code in ("i2", "u4", "i8", "f4", "f8")])
        # a second session adding to the archive keeps the values
        with C.netCDF4.Dataset(path, "a") as ds:
            v = ds.createVariable("later", "i4", ("x",), endian="big")
            v[:] = values("i4")
        check_equal(zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")["later"][:].tolist(),
                    values("i4").tolist(), "variable added by a second session")


def test_legacy_archive_refused():
    """An NCZarr archive written by 4.9.0 before this fix: ">i4" over little-endian bytes. Its values are
    ambiguous (zarr-python reads 16777216): the view refuses the array's data with an error naming it."""
    with TempDir() as tmp:
        src, good, legacy = (os.path.join(tmp, n) for n in ("in.nc", "good.zarr.zip", "legacy.zarr.zip"))
        with C.netCDF4.Dataset(src, "w") as ds:
            ds.createDimension("x", 3)
            ds.createVariable("v", "i4", ("x",), endian="big")[:] = [1, 2, 3]
            ds.createVariable("w", "i4", ("x",))[:] = [4, 5, 6]
        mmzip_run("nccopy", src, good)
        with zipfile.ZipFile(good) as zin, zipfile.ZipFile(legacy, "w") as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if info.filename == "v/.zarray":
                    meta = json.loads(data)
                    meta["dtype"] = ">i4"
                    data = json.dumps(meta).encode()
                elif C.TOOL_RELEASE >= (4, 9, 3) and info.filename == "v/0":
                    # 4.9.3+ swap (and the plugin declares what they wrote): store what 4.9.0-4.9.2 did
                    data = np.array([1, 2, 3], dtype="<i4").tobytes()
                elif C.TOOL_RELEASE >= (4, 9, 3) and info.filename == ".zattrs":
                    # ... and say so, as their _NCProperties does
                    data = re.sub(rb"netcdf=4\.\d+\.\d+", b"netcdf=4.9.2", data)
                zout.writestr(info.filename, data)
        check_equal(zarr.open_group(legacy, mode="r")["v"][:].tolist(), [16777216, 33554432, 50331648],
                    "zarr-python on the legacy archive (what the bug stored)")
        r = C.ncdump(legacy, "-v", "v", check=False)
        assert r.returncode != 0, "legacy big-endian array read with rc 0:\n" + r.stdout
        assert "v/" in r.stderr and "4.9.0-4.9.2" in r.stderr and "ambiguous" in r.stderr, r.stderr
        check_equal(C.cdl(legacy, "-v", "w").data["w"], [4, 5, 6], "the other array still reads")


if __name__ == "__main__":
    main([test_nccopy_every_type_and_order, test_netcdf4_python_endian_big, test_legacy_archive_refused])
