"""Issue 11 point 2: fill_value / _FillValue, missing_value and scale_factor / add_offset of archives written by
xarray and zarr-python reach netCDF readers: netCDF4-python and xarray's netCDF4 engine (through the storage
map) mask exactly the elements xarray's Zarr reader masks, and decode the same numbers (-999 integers, packed
integers with a _FillValue, NaN floats, missing_value, chunks that were never written)."""
import os

import numpy as np
import xarray as xr
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main


def xarray_archive(path):
    ds = xr.Dataset(
        {"count": (("x",), np.array([1, -999, 3, -999, 5, 6], dtype="i4")),
         "packed": (("x",), np.array([1.5, np.nan, 2.0, 4.5, np.nan, -1.0])),
         "nan_float": (("x",), np.array([1.5, np.nan, 2.0, np.nan, 0.0, 1.0], dtype="f4")),
         "missing": (("x",), np.array([1, -1, 3, 4, -1, 6], dtype="i2"), {"missing_value": np.int16(-1)}),
         "unsigned": (("y", "x"), np.array([[0, 255, 7, 255, 1, 2]] * 2, dtype="u1"))},
        attrs={"title": "fill values"})
    ds["count"].encoding.update(_FillValue=-999, chunks=(2,))
    ds["packed"].encoding.update(dtype="i2", scale_factor=0.5, add_offset=1.0, _FillValue=-32768)
    ds["unsigned"].encoding.update(_FillValue=255)
    with zarr.ZipStore(path, mode="w") as store:
        ds.to_zarr(store, consolidated=True)


def zarr_python_archive(path):
    """zarr-python arrays that follow xarray's convention (_ARRAY_DIMENSIONS), with chunks never written."""
    with zarr.ZipStore(path, mode="w") as store:
        root = zarr.open_group(store, mode="w")
        a = root.full("sparse", shape=(8,), chunks=(2,), dtype="<i8", fill_value=-999)
        a[2:4] = [7, -999]
        a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
        b = root.full("big_endian", shape=(8,), chunks=(4,), dtype=">f8", fill_value=np.nan)
        b[:4] = [1.0, np.nan, 2.5, 3.0]
        b.attrs["_ARRAY_DIMENSIONS"] = ["n"]
        c = root.array("scaled", np.array([10, 0, 20, 0, 30, 40, 0, 50], dtype="<i4"), fill_value=0)
        c.attrs.update(_ARRAY_DIMENSIONS=["n"], scale_factor=0.1, add_offset=-1.0)


def compare(path):
    with xr.open_zarr(path, consolidated=False) as via_zarr, xr.open_dataset(path, engine="netcdf4") as via_nc:
        names = sorted(via_zarr.data_vars)
        assert names, path
        for name in names:
            want = via_zarr[name].values
            got = via_nc[name].values
            check_equal(got.shape, want.shape, "%s shape" % name)
            check_equal(np.isnan(got).tolist(), np.isnan(want).tolist(),
                        "%s: xarray/netcdf4 masks the elements xarray/zarr masks" % name)
            assert np.allclose(got[~np.isnan(got)], want[~np.isnan(want)], rtol=1e-6), (name, got, want)
            mask = np.isnan(want)
            assert mask.any(), "%s: the fixture masks nothing" % name
        with C.open_netcdf(path) as ds:
            for name in names:
                v = ds[name][:]
                want = via_zarr[name].values
                check_equal(np.ma.getmaskarray(v).tolist(), np.isnan(want).tolist(),
                            "%s: netCDF4-python masks the elements xarray/zarr masks" % name)
                assert np.allclose(np.ma.filled(v.astype(np.float64), np.nan)[~np.isnan(want)], want[~np.isnan(want)],
                                   rtol=1e-6), name
        # ncdump prints "_" exactly there (raw, packed values; ncdump marks _FillValue, not missing_value)
        c = C.cdl(path)
        for name in names:
            if "missing_value" in via_zarr[name].encoding or "missing_value" in via_zarr[name].attrs:
                continue
            printed = np.array([v is None for v in c.data[name]]).reshape(via_zarr[name].shape)
            check_equal(printed.tolist(), np.isnan(via_zarr[name].values).tolist(), "%s: ncdump's _" % name)


def test_xarray_archive():
    with TempDir() as tmp:
        path = os.path.join(tmp, "x.zarr.zip")
        xarray_archive(path)
        compare(path)
        with C.open_netcdf(path) as ds:
            check_equal(int(ds["count"].getncattr("_FillValue")), -999, "count _FillValue")
            check_equal(ds["count"].dtype, np.dtype("i4"), "count keeps its type")
            check_equal(int(ds["packed"].getncattr("_FillValue")), -32768, "packed _FillValue (raw)")
            check_equal(ds["packed"].dtype, np.dtype("i2"), "packed stays packed")


def test_zarr_python_archive():
    with TempDir() as tmp:
        path = os.path.join(tmp, "z.zarr.zip")
        zarr_python_archive(path)
        compare(path)


def test_plain_zarr_arrays_are_not_masked():
    """Arrays without xarray's _ARRAY_DIMENSIONS: zarr-python never masks, and neither does the view (a zero
    fill_value, zarr-python's default, must not hide zeros)."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "p.zarr.zip")
        with zarr.ZipStore(path, mode="w") as store:
            zarr.open_group(store, mode="w").array("v", np.array([0, 1, 0, 2], dtype="<i4"))
        with C.open_netcdf(path) as ds:
            check_equal(ds["v"].ncattrs().count("_FillValue"), 0, "no _FillValue")
            check_equal(np.ma.getmaskarray(ds["v"][:]).tolist(), [False] * 4, "nothing masked")


if __name__ == "__main__":
    main([test_xarray_archive, test_zarr_python_archive, test_plain_zarr_arrays_are_not_masked])
