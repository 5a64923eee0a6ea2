"""Issue 23, points 1 and 6, on Zarr v3 archives written by zarrita (tests/compat/zarrita, an implementation
nobody here wrote):

- nothing dropped: an array below a directory without zarr.json (zarrita creates exactly the nodes it is
  asked for) is an error naming it, with a non-zero exit, never a dataset without it; once the groups exist,
  the same array is shown with zarrita's values;
- nothing invented: with the view off (MMZIP_NCZARR_VIEW=raw, or mmzip=raw in the URL) a v3 archive, which
  no netCDF-C release reads, fails with a message instead of `netcdf x { }` and exit 0;
- fill values: netCDF4-python masks exactly what xarray's Zarr reader masks. For Zarr v3, xarray (2024.10 and
  later, the releases that read v3) does not take `fill_value` as a mask (use_zarr_fill_value_as_mask
  defaults to false for v3) and masks the `_FillValue` attribute, which it writes in its own encoding
  (FillValueCoder: base64 of the little-endian float64 for floating types, the integer for integer types).
  Debian's xarray reads only Zarr v2, so for v3 that rule is the oracle here; for v2 the oracle is Debian's
  xarray itself (xr.open_zarr), on the same values written by xarray to Zarr v2. The v2 and v3 archives of
  the same data must read the same through netCDF4-python."""
import base64
import json
import math
import os
import struct
import zipfile

import numpy as np
import xarray as xr
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main

from compat_lib import node, zip_dir


def zarrita_archive(tmp, kind, *extra):
    directory = os.path.join(tmp, kind)
    os.mkdir(directory)
    node("write_read_path_fixtures.mjs", kind, directory, *extra)
    archive = os.path.join(tmp, kind + ".zarr.zip")
    zip_dir(directory, archive)
    return archive


def zarrita_values(archive, *paths):
    got = node("read_arrays.mjs", archive, *paths)
    return {p: [float(v) if v == "NaN" else v for v in got[p]["data"]] for p in paths}


def assert_refused(path, *needles, env=None):
    r = C.ncdump(path, check=False, env=env)
    assert r.returncode != 0, "%s: ncdump exit 0:\n%s" % (path, r.stdout)
    assert "{" not in r.stdout, "%s: ncdump printed a dataset:\n%s" % (path, r.stdout)
    for n in needles:
        assert n in r.stderr, "%s: %r not in the message:\n%s" % (path, n, r.stderr)
    return r.stderr


# ----------------------------------------------------------------------------------------------------------
# Point 1: nothing dropped, nothing invented

def test_array_below_directory_without_zarr_json():
    with TempDir() as tmp:
        archive = zarrita_archive(tmp, "orphans")
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
        assert "a/b/deep/zarr.json" in names and "a/zarr.json" not in names and "a/b/zarr.json" not in names, names
        # the array is there: zarrita reads it
        check_equal(zarrita_values(archive, "a/b/deep")["a/b/deep"], [4, 5, 6], "zarrita reads the array")
        err = assert_refused(archive, "a/b/deep", 'the directory "a"', "no zarr.json", "implicit groups")
        assert "mmzip view:" in err, err
        try:
            C.open_netcdf(archive).close()
        except OSError:
            pass
        else:
            raise AssertionError("netCDF4-python opened an archive whose array it cannot show")
        # the groups added (as zarr-python 3 and zarrita write them): the array is shown, with its values
        with zipfile.ZipFile(archive, "a") as z:
            for g in ("a", "a/b"):
                z.writestr(g + "/zarr.json", json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
        c = C.cdl(archive)
        check_equal(c.data["top"], [1, 2, 3], "the root's array")
        check_equal(c.data["a/b/deep"], [4, 5, 6], "the array once its groups exist")


def with_consolidated(archive, out, leave_out=()):
    """archive rewritten with the root's inline consolidated_metadata (as zarr-python 3's consolidate_metadata
    writes it: every node's own zarr.json document under its path), leaving out the nodes named."""
    with zipfile.ZipFile(archive) as z:
        entries = {n: z.read(n) for n in z.namelist()}
    nodes = {n[:-len("/zarr.json")]: json.loads(d) for n, d in entries.items() if n.endswith("/zarr.json")}
    root = json.loads(entries["zarr.json"])
    root["consolidated_metadata"] = {"kind": "inline", "must_understand": False,
                                     "metadata": {p: d for p, d in sorted(nodes.items()) if p not in leave_out}}
    entries["zarr.json"] = json.dumps(root).encode()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for n, d in entries.items():
            z.writestr(n, d)
    return out


def test_node_missing_from_consolidated_metadata():
    """Consolidated metadata is a copy: an array written after it is in the archive but not in it. Shown from
    the copy alone, the dataset would lack that array with exit 0; it is refused naming the node, and shown with
    its values once the metadata lists it."""
    with TempDir() as tmp:
        archive = zarrita_archive(tmp, "orphans")
        with zipfile.ZipFile(archive, "a") as z:
            for g in ("a", "a/b"):
                z.writestr(g + "/zarr.json", json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
        stale = with_consolidated(archive, os.path.join(tmp, "stale.zarr.zip"), leave_out=("a/b/deep",))
        err = assert_refused(stale, "'a/b/deep'", "not in the root's consolidated_metadata",
                             "a/b/deep/zarr.json")
        assert "mmzip view:" in err, err
        complete = with_consolidated(archive, os.path.join(tmp, "complete.zarr.zip"))
        c = C.cdl(complete)
        check_equal(c.data["top"], [1, 2, 3], "the root's array, consolidated")
        check_equal(c.data["a/b/deep"], [4, 5, 6], "the deep array, consolidated")


def test_raw_view_refuses_zarr_v3():
    with TempDir() as tmp:
        archive = zarrita_archive(tmp, "orphans")
        with zipfile.ZipFile(archive, "a") as z:
            for g in ("a", "a/b"):
                z.writestr(g + "/zarr.json", json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
        check_equal(C.cdl(archive).data["top"], [1, 2, 3], "the view presents the archive")
        err = assert_refused(archive, "Zarr v3", "zarr.json", "unset MMZIP_NCZARR_VIEW",
                             env={"MMZIP_NCZARR_VIEW": "raw"})
        assert "MMZIP_NCZARR_VIEW=raw opens it" not in err, "raw suggested where it cannot help:\n" + err
        url = "file://%s#mode=nczarr,zip&mmzip=raw" % os.path.abspath(archive)
        assert_refused(url, "Zarr v3")
        # a v2 dataset without a root .zgroup (which netCDF-C alone shows as `netcdf x { }`): refused raw too
        v2 = os.path.join(tmp, "rootless.zarr.zip")
        with zipfile.ZipFile(v2, "w") as z:
            z.writestr("x/.zarray", json.dumps({"zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "<i4",
                                                 "compressor": None, "fill_value": 0, "filters": None,
                                                 "order": "C"}))
            z.writestr("x/0", np.array([1, 2], "<i4").tobytes())
            z.writestr(".zattrs", "{}")
        assert_refused(v2, "no .zgroup at the dataset root", env={"MMZIP_NCZARR_VIEW": "raw"})


# ----------------------------------------------------------------------------------------------------------
# Point 6: fill values

def xarray_coded(value, dtype):
    """xarray's Zarr v3 encoding of a _FillValue (xarray.backends.zarr.FillValueCoder.encode)."""
    if np.dtype(dtype).kind == "f":
        return base64.standard_b64encode(struct.pack("<d", float(value))).decode()
    return int(value)


def xarray_decoded(value, dtype):
    """FillValueCoder.decode: what xarray's v3 reader masks."""
    if np.dtype(dtype).kind == "f":
        return struct.unpack("<d", base64.standard_b64decode(value))[0]
    return int(value)


FILLS = {"coded_float": (-999.0, "float32"), "coded_nan": (math.nan, "float64"), "coded_int": (-1, "int32"),
         "coded_sparse": (-1e30, "float64")}
PLAIN = {"zero_fill": "int16", "minus999_fill": "float32"}  # fill_value only, no _FillValue attribute


def masked_like_xarray_v3(values, attrs, dtype):
    """xarray's v3 reader: masked where the value equals the decoded _FillValue attribute; nothing without
    one (fill_value is not a mask for v3)."""
    if "_FillValue" not in attrs:
        return [False] * len(values)
    fill = xarray_decoded(attrs["_FillValue"], dtype)
    return [(isinstance(v, float) and math.isnan(v)) if isinstance(fill, float) and math.isnan(fill)
            else v == fill for v in values]


def netcdf4_masked(path, name):
    with C.open_netcdf(path) as ds:
        v = ds[name][:]
        return np.ma.getmaskarray(v).tolist(), np.ma.filled(v.astype("f8"), np.nan).tolist()


def test_v3_fill_values_mask_as_xarray():
    with TempDir() as tmp:
        coded = {name: xarray_coded(v, dt) for name, (v, dt) in FILLS.items()}
        archive = zarrita_archive(tmp, "fills", json.dumps(coded))
        names = sorted(FILLS) + sorted(PLAIN)
        values = zarrita_values(archive, *names)
        with zipfile.ZipFile(archive) as z:
            meta = {n: json.loads(z.read(n + "/zarr.json")) for n in names}
        c = C.cdl(archive)
        for name in names:
            dtype = meta[name]["data_type"]
            attrs = meta[name]["attributes"]
            want_mask = masked_like_xarray_v3(values[name], attrs, dtype)
            if name in FILLS:
                assert any(want_mask), "%s: the fixture masks nothing" % name
            else:
                assert "_FillValue" not in attrs and meta[name]["fill_value"] in values[name], name
            mask, got = netcdf4_masked(archive, name)
            check_equal(mask, want_mask, "%s: netCDF4-python masks what xarray's v3 reader masks" % name)
            for g, w, m in zip(got, values[name], mask):
                if not m:
                    assert g == w or (math.isnan(g) and math.isnan(w)), (name, got, values[name])
            # ncdump: the _FillValue, typed as the variable, and "_" where masked
            shown = c.vars[name]["attrs"].get("_FillValue")
            if name in FILLS:
                fill = FILLS[name][0]
                assert shown and (shown[0] == fill or (math.isnan(fill) and math.isnan(shown[0]))), (name, shown)
                check_equal([v is None for v in c.data[name]], want_mask, "%s: ncdump's _ marks" % name)
            else:
                check_equal(shown, None, "%s: no _FillValue invented from fill_value" % name)
                check_equal(c.data[name], values[name], "%s: ncdump shows every value" % name)
            assert "_ZARR_FillValue" not in c.vars[name]["attrs"], (name, c.vars[name]["attrs"])


def test_v2_and_v3_of_the_same_data_read_alike():
    """The same variables written by xarray to Zarr v2 (Debian's xarray + zarr-python 2.13: fill_value from
    _FillValue) and by zarrita to v3 with xarray's _FillValue attribute: xr.open_zarr of the v2 archive,
    netCDF4-python on the v2 archive and netCDF4-python on the v3 archive mask the same elements and give the
    same numbers."""
    with TempDir() as tmp:
        coded = {name: xarray_coded(v, dt) for name, (v, dt) in FILLS.items()}
        v3 = zarrita_archive(tmp, "fills", json.dumps(coded))
        names = sorted(n for n in FILLS if n != "coded_sparse")
        values = zarrita_values(v3, *names)
        v2 = os.path.join(tmp, "fills_v2.zarr.zip")
        ds = xr.Dataset({n: (("x",), np.array(values[n], dtype=FILLS[n][1])) for n in names})
        for n in names:
            ds[n].encoding["_FillValue"] = FILLS[n][0]
        with zarr.ZipStore(v2, mode="w") as store:
            ds.to_zarr(store, consolidated=False)
        with xr.open_zarr(zarr.ZipStore(v2, mode="r"), consolidated=False) as via_zarr:
            want = {n: np.isnan(via_zarr[n].values.astype("f8")).tolist() for n in names}
        for n in names:
            assert any(want[n]), "%s: xarray masks nothing in v2" % n
            m2, g2 = netcdf4_masked(v2, n)
            m3, g3 = netcdf4_masked(v3, n)
            check_equal(m2, want[n], "%s: netCDF4-python on v2 masks what xr.open_zarr masks" % n)
            check_equal(m3, want[n], "%s: netCDF4-python on v3 masks what xr.open_zarr masks on v2" % n)
            check_equal(np.nan_to_num(g3).tolist(), np.nan_to_num(g2).tolist(), "%s: v3 values are v2's" % n)


if __name__ == "__main__":
    main([test_array_below_directory_without_zarr_json, test_node_missing_from_consolidated_metadata,
          test_raw_view_refuses_zarr_v3,
          test_v3_fill_values_mask_as_xarray, test_v2_and_v3_of_the_same_data_read_alike])
