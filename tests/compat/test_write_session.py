"""Issue point 4: reading never changes the archive, and a write session (netCDF-C 4.9.0 rewrites every
.zarray/.zattrs/.zgroup it read at close) keeps the original metadata and chunks byte for byte: a
translated form is never stored. Proven with `mmzip ls` (CRC, size, data offset of every entry), Python's
zipfile and zarr-python reading the archive afterwards."""
import json
import os
import shutil
import zipfile

import numcodecs
import numpy as np
import zarr

import compat_lib as C
import daf_fixture as D
from mmzip_testlib import TempDir, check_equal, main, mmzip, zip_tools_ok


def _archive(tmp):
    path = os.path.join(tmp, "session.daf.zarr.zip")
    D.write_daf(path)
    # plus arrays translated for their encoding, not their layout: zarr-python's default Blosc, order F
    store = zarr.ZipStore(path, mode="a")
    root = zarr.open_group(store, mode="a")
    root.array("blosc", np.arange(20, dtype="<f8").reshape(4, 5), chunks=(2, 5))
    root.array("fortran", np.arange(6, dtype="<i2").reshape(2, 3), order="F", compressor=None)
    store.close()
    return path


def _read_everything(ds):
    """What a careful user does in a write session: read every value and attribute (4.9.0 drops the
    attributes it did not read when it rewrites them)."""
    for _, var in C.walk_netcdf(ds):
        var[:]
        {a: var.getncattr(a) for a in var.ncattrs()}


def _originals_untouched(before, after):
    for name, (crc, size, offset) in before.items():
        assert name in after, "entry %s disappeared" % name
        check_equal(after[name], (crc, size, offset), "entry " + name)


def test_reading_changes_nothing():
    with TempDir() as tmp:
        path = _archive(tmp)
        before = C.entry_crcs(path)
        with open(path, "rb") as f:
            raw = f.read()
        C.ncdump(path)
        with C.open_netcdf(path) as ds:
            _read_everything(ds)
        with open(path, "rb") as f:
            check_equal(f.read() == raw, True, "archive bytes unchanged by reading")
        check_equal(C.entry_crcs(path), before, "entries")


def test_idle_write_session_stores_nothing():
    """Open for writing, read everything, close: every rewrite 4.9.0 makes is the presented form, a no-op."""
    with TempDir() as tmp:
        path = _archive(tmp)
        before = C.entry_crcs(path)
        with C.open_netcdf(path, "a") as ds:
            _read_everything(ds)
        check_equal(C.entry_crcs(path), before, "entries after an idle write session")
        zip_tools_ok(path)


def test_adding_a_variable_keeps_the_originals():
    with TempDir() as tmp:
        path = _archive(tmp)
        before = C.entry_crcs(path)
        originals = C.zip_entry_bytes(path)
        with C.open_netcdf(path, "a") as ds:
            _read_everything(ds)
            ds.createDimension("extra", 3)
            v = ds.createVariable("added", "f8", ("extra",))
            v[:] = [1.5, 2.5, 3.5]
            v.units = "m"
            ds.createGroup("annotations").setncattr("note", "added by netCDF")
        after = C.entry_crcs(path)
        _originals_untouched(before, after)
        new = sorted(set(after) - set(before))
        check_equal(new, ["added/.zarray", "added/.zattrs", "added/0", "annotations/.zattrs", "annotations/.zgroup"],
                    "new entries")
        now = C.zip_entry_bytes(path)
        for name, data in originals.items():
            check_equal(now[name] == data, True, "bytes of " + name)
        zip_tools_ok(path)
        mmzip("check", path)
        # zarr-python reads the originals as before and the addition as written
        store = zarr.ZipStore(path, mode="r")
        root = zarr.open_group(store, mode="r")
        try:
            check_equal(root["added"][:].tolist(), [1.5, 2.5, 3.5], "added values")
            check_equal(list(root["axes/cell"][:]), D.CELLS, "axis after the session")
            check_equal(root["blosc"][:].tolist(), np.arange(20.0).reshape(4, 5).tolist(), "blosc array")
        finally:
            store.close()
        # and the view still presents everything, the addition included
        c = C.cdl(path)
        check_equal(c.data["added"], [1.5, 2.5, 3.5], "added via ncdump")
        check_equal([x.decode() for x in c.data["axes/cell"]], D.CELLS, "axis via ncdump")


def _refused_session(path, change):
    before = C.entry_crcs(path)
    try:
        with C.open_netcdf(path, "a") as ds:
            _read_everything(ds)
            change(ds)
    except (RuntimeError, OSError) as e:
        assert "Write to read only" in str(e) or "Permission" in str(e) or "NetCDF" in str(e), e
    else:
        raise AssertionError("the session that changes a translated array was not refused")
    _originals_untouched(before, C.entry_crcs(path))
    zip_tools_ok(path)


def _rename_first_cell(ds):
    cells = ds["axes"]["cell"]
    cells.set_auto_chartostring(False)
    cells[0, 0] = b"X"


def test_changing_a_translated_array_is_refused():
    cases = {
        "blosc data": lambda ds: ds["blosc"].__setitem__((0, 0), 99.0),
        "fortran data": lambda ds: ds["fortran"].__setitem__((1, 2), 7),
        "bool data": lambda ds: ds["vectors"]["cell"]["is_doublet"].__setitem__(1, 2),
        "axis names": _rename_first_cell,
    }
    with TempDir() as tmp:
        pristine = _archive(tmp)
        for what, change in cases.items():
            path = os.path.join(tmp, "case.zarr.zip")
            shutil.copyfile(pristine, path)
            print("   ", what)
            _refused_session(path, change)
            store = zarr.ZipStore(path, mode="r")
            root = zarr.open_group(store, mode="r")
            try:
                check_equal(root["blosc"][0, 0], 0.0, what + ": blosc value kept")
                check_equal(list(root["axes/cell"][:]), D.CELLS, what + ": axis kept")
                check_equal(root["vectors/cell/is_doublet"][:].tolist(), [True, False, True], what)
                check_equal(dict(root["vectors/cell/age"].attrs), {}, what + ": attributes kept")
            finally:
                store.close()


def test_attribute_of_a_translated_array_is_stored_alone():
    """The attributes of a translated array are presented translated too (dimension names, _ZARR_DTYPE...):
    a session that adds one stores the archive's own attributes plus that one, nothing the view made up,
    and leaves every other entry as it was."""
    with TempDir() as tmp:
        path = _archive(tmp)
        before = C.entry_crcs(path)
        with C.open_netcdf(path, "a") as ds:
            _read_everything(ds)
            ds["vectors"]["cell"]["age"].setncattr("units", "years")
        after = C.entry_crcs(path)
        check_equal(sorted(n for n in after if after[n] != before.get(n)), ["vectors/cell/age/.zattrs"],
                    "entries the session changed")
        with zipfile.ZipFile(path) as z:
            check_equal(json.loads(z.read("vectors/cell/age/.zattrs")), {"units": "years"}, "stored attributes")
        store = zarr.ZipStore(path, mode="r")
        try:
            root = zarr.open_group(store, mode="r")
            check_equal(dict(root["vectors/cell/age"].attrs), {"units": "years"}, "zarr-python")
            check_equal(root["vectors/cell/age"][:].tolist(), D.VECTORS["cell"]["age"].tolist(), "values")
        finally:
            store.close()
        c = C.cdl(path)
        check_equal(c.vars["vectors/cell/age"]["attrs"]["units"], [b"years"], "ncdump reads it back")
        zip_tools_ok(path)


def test_plain_xarray_style_array_can_change():
    """Where the view shows the archive's own array (plain dtype, xarray names, no codec), a real change is
    a genuine edit and is stored."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "plain.zarr.zip")
        store = zarr.ZipStore(path, mode="w")
        root = zarr.group(store=store)
        a = root.array("t", np.zeros(4, dtype="<f8"), compressor=None, chunks=(4,))
        a.attrs.put({"_ARRAY_DIMENSIONS": ["x"], "units": "K"})
        store.close()
        with C.open_netcdf(path, "a") as ds:
            _read_everything(ds)
            ds["t"].units = "degC"
        store = zarr.ZipStore(path, mode="r")
        try:
            check_equal(zarr.open_group(store, mode="r")["t"].attrs["units"], "degC", "attribute edit stored")
        finally:
            store.close()


if __name__ == "__main__":
    main([test_reading_changes_nothing, test_idle_write_session_stores_nothing,
          test_adding_a_variable_keeps_the_originals, test_changing_a_translated_array_is_refused,
          test_attribute_of_a_translated_array_is_stored_alone, test_plain_xarray_style_array_can_change])
