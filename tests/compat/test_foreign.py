"""Issue point 6: archives that are neither ours nor written for this issue's fixtures - xarray's to_zarr into
a zarr-python ZipStore with its default encoding (Blosc, NaN fill values, CF time encoding, string
coordinates, _ARRAY_DIMENSIONS, consolidated metadata), and a zarr-python archive with nested groups and
mixed dtypes - read through the view with the values zarr-python (and xarray) read."""
import os
import warnings

import numcodecs
import numpy as np
import pandas as pd
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main

import xarray as xr  # noqa: E402  (after compat_lib: the storage map must load before libnetcdf)


def _xarray_dataset():
    rng = np.random.default_rng(3)
    temp = rng.normal(15, 5, size=(4, 3, 5)).astype("f4")
    temp[1, 2, 3] = np.nan
    ds = xr.Dataset(
        {
            "temp": (("time", "lat", "lon"), temp, {"units": "degC", "long_name": "air temperature"}),
            "count": (("lat", "lon"), rng.integers(0, 1000, size=(3, 5)).astype("i8")),
            "flag": (("time",), np.array([True, False, True, True])),
            "station": (("lat",), np.array(["Oslo", "Zürich", "Lyon"])),
        },
        coords={
            "time": pd.date_range("2021-03-01", periods=4, freq="6H"),
            "lat": [59.9, 47.4, 45.8],
            "lon": np.linspace(0, 20, 5),
        },
        attrs={"title": "test", "history": ["made", "by xarray"], "Conventions": "CF-1.8"},
    )
    return ds


def test_xarray_to_zarr_zipstore():
    with TempDir() as tmp:
        path = os.path.join(tmp, "xarray.zarr.zip")
        ds = _xarray_dataset()
        store = zarr.ZipStore(path, mode="w")
        ds.to_zarr(store)  # default encoding, consolidated
        store.close()
        with zarr.ZipStore(path, mode="r") as s:
            assert ".zmetadata" in s and s["temp/.zattrs"] and b"_ARRAY_DIMENSIONS" in s["temp/.zattrs"]
            root = zarr.open_group(s, mode="r")
            check_equal(root["temp"].compressor.codec_id, "blosc", "xarray's default compressor")
            names = [n for n, _ in root.arrays()]
            with C.open_netcdf(path) as nc:
                for name in names:
                    C.assert_values(C.netcdf_values(nc[name]), C.expected_presentation(root[name]), name)
                check_equal(nc["temp"].dimensions, ("time", "lat", "lon"), "xarray dimension names")
                check_equal(nc.history, '["made", "by xarray"]', "list attribute as JSON text")
        c = C.cdl(path, "-v", "temp,station", "-p", "9,17")
        check_equal(c.dims, dict({"time": 4, "lat": 3, "lon": 5}, **({} if C.TOOL_STRINGS else {"station_strlen": 7})),
                    "dimensions")
        got = np.array(c.data["temp"], dtype=np.float64).reshape(4, 3, 5).astype(np.float32)  # 9 digits: exact
        assert np.array_equal(got, ds["temp"].values, equal_nan=True), got
        check_equal([s.decode() for s in c.data["station"]], ["Oslo", "Zürich", "Lyon"], "string coordinate")

        # xarray through netCDF (CF decoding of times, _Encoding strings) equals xarray through zarr
        with xr.open_dataset(path, engine="netcdf4") as via_netcdf, xr.open_zarr(path) as via_zarr:
            for name in ("temp", "count", "station", "time", "lat", "lon"):
                np.testing.assert_array_equal(via_netcdf[name].values, via_zarr[name].values, err_msg=name)
            np.testing.assert_array_equal(via_netcdf["flag"].values.astype(bool), via_zarr["flag"].values)
            check_equal(str(via_netcdf["time"].values.dtype), "datetime64[ns]", "CF time decoded")


def _nested(path):
    rng = np.random.default_rng(5)
    store = zarr.ZipStore(path, mode="w")
    root = zarr.group(store=store)
    made = []
    dtypes = ["|i1", "|u1", "<i2", "<u2", ">i4", "<u4", "<i8", ">u8", "<f4", ">f8", "|b1"]
    for depth, group in enumerate(("a", "a/b", "a/b/c", "d")):
        g = root.require_group(group)
        g.attrs.put({"depth": depth, "path": group, "tags": [group, "x"]})
        for k, dt in enumerate(dtypes):
            shape = (7, 5) if k % 2 else (11,)
            chunks = (3, 2) if k % 2 else (4,)
            if dt == "|b1":
                data = rng.integers(0, 2, size=shape).astype(bool)
            elif dt[1] == "f":
                data = rng.normal(size=shape).astype(dt)
            else:
                info = np.iinfo(np.dtype(dt))
                data = rng.integers(info.min, info.max, size=shape, dtype=np.dtype(dt).newbyteorder("="), endpoint=True).astype(dt)
            comp = [None, numcodecs.Blosc(cname="zstd"), numcodecs.Zlib(), numcodecs.LZ4()][(k + depth) % 4]
            name = "v%d_%s" % (k, dt[1:])
            g.array(name, data, chunks=chunks, compressor=comp, order="F" if (k + depth) % 3 == 0 else "C")
            made.append(group + "/" + name)
        g.array("labels", np.array(["x", "yy", "zzz"][: depth + 1], dtype=object), object_codec=numcodecs.VLenUTF8())
        made.append(group + "/labels")
    store.close()
    return made


def test_nested_groups_mixed_dtypes():
    with TempDir() as tmp:
        path = os.path.join(tmp, "nested.zarr.zip")
        made = _nested(path)
        with zarr.ZipStore(path, mode="r") as s:
            root = zarr.open_group(s, mode="r")
            with C.open_netcdf(path) as nc:
                seen = dict(C.walk_netcdf(nc))
                for name in made:
                    C.assert_values(C.netcdf_values(seen[name]), C.expected_presentation(root[name]), name)
                check_equal(nc["a"]["b"].getncattr("tags"), '["a/b", "x"]', "group attribute")
                check_equal(int(nc["a"]["b"]["c"].getncattr("depth")), 2, "group attribute")
        check_equal(len(made), 48, "arrays compared")
        # ncdump prints the whole tree without error
        c = C.cdl(path)
        check_equal(sorted(k for k in c.data if k.endswith("labels")), ["a/b/c/labels", "a/b/labels", "a/labels", "d/labels"],
                    "nested arrays printed")


def test_zip_of_a_directory_store():
    """Info-ZIP's `zip -r` of a zarr-python DirectoryStore: keys under one top directory (NCZarr's layout),
    entries deflated by zip, chunks Blosc-compressed by zarr."""
    with TempDir() as tmp:
        made = {"s": np.array(["ab", "cdé"], dtype=object), "v": np.arange(12, dtype=">i4").reshape(3, 4)}
        g = zarr.open_group(os.path.join(tmp, "dir.zarr"), mode="w")
        g.array("s", made["s"], dtype=object, object_codec=numcodecs.VLenUTF8())
        g.array("v", made["v"], order="F", chunks=(2, 3))
        C.run(["zip", "-q", "-r", "dir.zarr.zip", "dir.zarr"], cwd=tmp)
        path = os.path.join(tmp, "dir.zarr.zip")
        with C.open_netcdf(path) as nc:
            check_equal(nc["s"][:].tolist(), ["ab", "cdé"], "strings under a top directory")
            check_equal(nc["v"][:].tolist(), made["v"].tolist(), "big-endian order F")


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    main([test_xarray_to_zarr_zipstore, test_nested_groups_mixed_dtypes, test_zip_of_a_directory_store])
