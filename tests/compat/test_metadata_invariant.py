"""Issue 11 point 3. Everything the storage map writes is JSON that zarr-python 2.13 and xarray read (pure
ASCII, non-ASCII characters as \\uXXXX escapes and surrogate pairs), consolidated metadata (.zmetadata) mirrors
the objects, and the invariant: **no write session stores anything the compatibility view made up**. After any
session - a no-op one, one that reads everything, one that adds a variable and attributes, one that changes a
plain array - every metadata object of the archive holds what it held before plus only what the session itself
set through netCDF (compared as JSON objects, member by member), over fixtures written by zarr-python, xarray,
DataAxesFormats' layout and netCDF-C itself (nccopy through the map)."""
import json
import os
import zipfile

import numcodecs
import numpy as np
import xarray as xr
import zarr

import compat_lib as C
import daf_fixture as D
from compat_lib import mmzip_run
from mmzip_testlib import TempDir, check_equal, main, run

TITLE = "test déjà vu \U0001F600"
# attributes and dtypes whose presentation the view translates (and which a write must never store)
VIEW_MADE = ("_ZARR_DTYPE", "_ZARR_SHAPE", "_ZARR_FillValue")


def zarr_python_fixture(path):
    with zarr.ZipStore(path, mode="w") as store:
        root = zarr.open_group(store, mode="w")
        root.attrs.update(title=TITLE, numbers=[1, 1000, 2.5], strings=["a", "b"], nested={"k": [1, None]},
                          flag=True)
        root.array("be", np.arange(6, dtype=">i4").reshape(2, 3), chunks=(1, 3))  # Blosc, big-endian
        root.array("plain", np.arange(4, dtype="<f8"), compressor=None).attrs["units"] = "m"
        root.array("boolean", np.array([True, False]))
        root.array("text", np.array(["αβ", "x"]))
        root.array("vlen", np.array(["a", "bcd"], dtype=object), object_codec=numcodecs.VLenUTF8())
        root.array("zero_d", np.array(2.5))
        root.array("fortran", np.arange(6, dtype="<i2").reshape(2, 3), order="F", compressor=None)
        root.array("dates", np.array(["2020-01-01", "2021-01-01"], dtype="M8[D]"))
        g = root.create_group("sub")
        g.attrs["note"] = "café"
        g.array("inner", np.arange(3, dtype="<u2"), compressor=None)
        zarr.consolidate_metadata(store)


def xarray_fixture(path):
    ds = xr.Dataset(
        {"temperature": (("time", "x"), np.arange(6.0).reshape(3, 2), {"long_name": "température"}),
         "count": (("x",), np.array([1, -999], dtype="i4")),
         "packed": (("x",), np.array([1.5, np.nan]))},
        coords={"time": np.array(["2020-01-01", "2020-01-02", "2020-01-03"], dtype="M8[ns]"), "x": [10, 20]},
        attrs={"title": TITLE})
    ds["count"].encoding["_FillValue"] = -999
    ds["packed"].encoding.update(dtype="i2", scale_factor=0.5, _FillValue=-1)
    with zarr.ZipStore(path, mode="w") as store:
        ds.to_zarr(store, consolidated=True)


def daf_fixture(path):
    D.write_daf(path)


def nccopy_fixture(path):
    tmp = os.path.dirname(path)
    cdl, nc = os.path.join(tmp, "src.cdl"), os.path.join(tmp, "src.nc")
    with open(cdl, "w") as f:
        f.write('netcdf src {\ndimensions: x = 3 ;\nvariables:\n  int v(x) ; v:_Endianness = "big" ;\n'
                '  v:long_name = "déjà" ;\n  float f(x) ; f:_FillValue = -1.f ;\n'
                ':title = "%s" ;\ndata:\n v = 1, 2, 3 ;\n f = 1, _, 3 ;\n}\n' % TITLE)
    run(["ncgen", "-4", "-o", nc, cdl])
    mmzip_run("nccopy", nc, path)


FIXTURES = {"zarr_python": zarr_python_fixture, "xarray": xarray_fixture, "daf": daf_fixture,
            "nccopy": nccopy_fixture}


def metadata(path):
    """{entry: parsed JSON} of every metadata object; every one must be ASCII and valid JSON."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            base = name.rsplit("/", 1)[-1]
            if base in (".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                raw = z.read(name)
                try:
                    raw.decode("ascii")
                except UnicodeDecodeError as e:
                    raise AssertionError("%s: %s is not ASCII (%s): %r" % (path, name, e, raw[:200]))
                out[name] = json.loads(raw)
    return out


def check_consolidated(path, meta):
    if ".zmetadata" not in meta:
        return
    mirror = meta[".zmetadata"]["metadata"]
    for name, doc in meta.items():
        if name != ".zmetadata":
            check_equal(mirror.get(name), doc, "%s: .zmetadata mirror of %s" % (path, name))
    for name in mirror:
        assert name in meta, "%s: .zmetadata lists %s, absent from the archive" % (path, name)
    # zarr-python and xarray read the consolidated form
    zarr.open_consolidated(zarr.ZipStore(path, mode="r"))
    if all("_ARRAY_DIMENSIONS" in meta.get(n[:-len(".zarray")] + ".zattrs", {}) for n in meta if n.endswith(".zarray")):
        xr.open_zarr(path, consolidated=True).close()  # an xarray dataset (zarr-python's plain arrays are not)


def check_only_added(before, after, allowed, what):
    """after holds every object and member of before unchanged, plus only members allowed(entry, key)."""
    for name, doc in before.items():
        if name == ".zmetadata":
            continue
        assert name in after, "%s: %s disappeared" % (what, name)
        new = after[name]
        for key, value in doc.items():
            if key in ("_NCZARR_ATTR", "_NCZARR_GROUP", "shape"):
                continue  # netCDF-C's own bookkeeping, compared below
            check_equal(new.get(key), value, "%s: %s member %s" % (what, name, key))
        for key in new:
            if key not in doc:
                assert allowed(name, key), "%s: %s gained %r = %r, which nobody set" % (what, name, key, new[key])
        for key in VIEW_MADE:
            assert key not in new or key in doc, "%s: %s stores the view's %s" % (what, name, key)
        types = new.get("_NCZARR_ATTR", {}).get("types", {}) if isinstance(new.get("_NCZARR_ATTR"), dict) else {}
        old_types = doc.get("_NCZARR_ATTR", {}).get("types", {}) if isinstance(doc.get("_NCZARR_ATTR"), dict) else {}
        for attr, t in types.items():
            if attr in old_types:
                check_equal(t, old_types[attr], "%s: %s type of %s" % (what, name, attr))
            else:
                assert allowed(name, attr), "%s: %s records a type for %r, which nobody set" % (what, name, attr)


def idle(ds):
    pass


def read_everything(ds):
    for _, var in C.walk_netcdf(ds):
        try:
            var[:]
        except (RuntimeError, IndexError):
            pass  # arrays whose data the view refuses are not this test's concern
        {a: var.getncattr(a) for a in var.ncattrs()}
    {a: ds.getncattr(a) for a in ds.ncattrs()}


HISTORY = "appended by netCDF \u2713"


def add_variable(ds):
    read_everything(ds)
    dim = list(ds.dimensions)[0]
    v = ds.createVariable("added", "i4", (dim,))
    v[:] = np.arange(ds.dimensions[dim].size)
    v.setncattr("comment", "nouveau")


def add_global_attribute(ds):
    read_everything(ds)
    # bytes: netCDF4-python writes a non-ASCII str as NC_STRING, which NCZarr 4.9.0 cannot store
    ds.setncattr("history", HISTORY.encode("utf-8"))


def allowed_after_add(name, key):
    """Members a session that adds a variable and a global attribute may add to existing objects."""
    return name.startswith("added/") or key == "history"


def run_session(path, session):
    """Runs the session; returns None, or the error of a refused session (a change to an object the view
    presents translated), after which the archive must be as it was."""
    try:
        with C.open_netcdf(path, "a") as ds:
            session(ds)
    except RuntimeError as e:
        assert "Write to read only" in str(e), e
        return e
    return None


def test_stored_json_is_ascii_and_consolidated():
    with TempDir() as tmp:
        for fixture, make in FIXTURES.items():
            path = os.path.join(tmp, fixture + ".zarr.zip")
            make(path)
            check_equal(run_session(path, add_variable), None, fixture + ": adding a variable")
            check_equal(run_session(path, add_global_attribute), None, fixture + ": adding a global attribute")
            refused = None
            meta = metadata(path)
            check_consolidated(path, meta)
            check_equal(zarr.open_group(path, mode="r")["added"][:].tolist(),
                        list(range(len(zarr.open_group(path, mode="r")["added"]))), fixture + ": added values")
            if refused is None:
                check_equal(meta[".zattrs"].get("history"), HISTORY, fixture + ": history stored")
                check_equal(zarr.open_group(path, mode="r").attrs["history"], HISTORY, fixture + ": zarr-python")
                with C.open_netcdf(path) as ds:
                    check_equal(ds.getncattr("history"), HISTORY, fixture + ": netCDF reads it back")
            if fixture != "daf":
                check_equal(meta[".zattrs"].get("title"), TITLE, fixture + ": title")
                check_equal(zarr.open_group(path, mode="r").attrs["title"], TITLE, fixture + ": zarr-python title")
                with C.open_netcdf(path) as ds:
                    check_equal(ds.getncattr("title"), TITLE, fixture + ": netCDF title")


def test_xarray_title_then_append():
    """The issue's case: an xarray archive titled "test déjà vu" + an emoji, a netCDF append, then
    zarr.open_consolidated and xr.open_zarr."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "x.zarr.zip")
        xarray_fixture(path)
        with C.open_netcdf(path, "a") as ds:
            ds.createVariable("w", "f8", ("x",))[:] = [7.0, 8.0]
        g = zarr.open_consolidated(zarr.ZipStore(path, mode="r"))
        check_equal((g.attrs["title"], g["w"][:].tolist()), (TITLE, [7.0, 8.0]), "zarr.open_consolidated")
        with xr.open_zarr(path) as x:
            check_equal((x.attrs["title"], x["w"].values.tolist(), x["temperature"].attrs["long_name"]),
                        (TITLE, [7.0, 8.0], "température"), "xr.open_zarr")


def test_no_session_stores_what_the_view_made_up():
    with TempDir() as tmp:
        for fixture, make in FIXTURES.items():
            for session in (idle, read_everything, add_variable, add_global_attribute):
                path = os.path.join(tmp, "%s_%s.zarr.zip" % (fixture, session.__name__))
                make(path)
                before_entries = C.entry_crcs(path)
                before = metadata(path)
                refused = run_session(path, session)
                after = metadata(path)
                what = "%s after %s" % (fixture, session.__name__)
                print("    %s: %s" % (what, "refused" if refused else "stored"))
                # netCDF's own changes to translated attributes are merged into the archive's: none refused
                check_equal(refused, None, what + ": session refused")
                if session in (add_variable, add_global_attribute) and not refused:
                    check_only_added(before, after, allowed_after_add, what)
                    check_consolidated(path, after)
                else:
                    check_equal(after, before, what + ": metadata")
                    check_equal(C.entry_crcs(path), before_entries, what + ": every entry's bytes")


if __name__ == "__main__":
    main([test_xarray_title_then_append, test_stored_json_is_ascii_and_consolidated,
          test_no_session_stores_what_the_view_made_up])
