"""Point 3: netCDF4-python reads and writes .zarr.zip archives after `import mmzip; mmzip.enable_netcdf()`
(no LD_PRELOAD): reading ours and zarr-python's, writing a new archive that zarr-python reads back,
appending in modes "a" and "r+", the URL forms; enable_netcdf() after netCDF4 was imported is refused
clearly, is harmless under `mmzip run`, and without it netCDF4 cannot open the archive at all."""
import os

from mmzip_testlib import sanitizer_blocks_python_under_run, PYTHON, TempDir, check_equal, main, mmzip_run, run, zip_tools_ok
from nczarr_testlib import NO_PLUGINS, make_zarr_python, netcdf_read_all, sample_archive, zarr_read_all, zip_url


def python(script, *args, check=True):
    """Runs a Python snippet in a fresh interpreter (netCDF4 must not be loaded before enable_netcdf)."""
    return run([PYTHON, "-c", script] + [str(a) for a in args], check=check, env=NO_PLUGINS)


def test_read():
    with TempDir() as d:
        nc, ours = sample_archive(d)
        expected = netcdf_read_all(nc)
        for name in (ours, zip_url(ours)):
            got = netcdf_read_all(name, enable_plugin=True)
            check_equal(got, expected, "netCDF4-python reading %s" % name)
        zp = make_zarr_python(os.path.join(d, "zp.zarr.zip"), "zip")
        arrays = zarr_read_all(zp)
        got = netcdf_read_all(zp, enable_plugin=True)
        check_equal(sorted(got), sorted(arrays), "variables netCDF4-python finds in the zarr-python archive")
        for name, (values, _) in arrays.items():
            check_equal(got[name][0], values, "netCDF4-python values of %s" % name)


WRITE = r"""
import sys
import mmzip
lib = mmzip.enable_netcdf()
assert mmzip.enable_netcdf() is lib, "a second call returns the same library"
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "w")
d.title = "written by netCDF4-python"
d.createDimension("t", 6)
d.createDimension("x", 5)
v = d.createVariable("field", "f8", ("t", "x"), chunksizes=(4, 2))
v.units = "m s-1"
v[:] = np.arange(30).reshape(6, 5) * 0.25
g = d.createGroup("extra")
w = g.createVariable("ids", "i4", ("x",))
w[:] = [5, 4, 3, 2, 1]
d.close()
"""

APPEND = r"""
import sys
import mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], sys.argv[2])
n = d.createVariable("added_" + sys.argv[2].replace("+", "p") + (sys.argv[3] if len(sys.argv) > 3 else ""), "i2", ("x",))
n[:] = [-1, -2, -3, -4, -5]
n.comment = "appended"
d.close()
"""


def test_write_and_append():
    with TempDir() as d:
        path = os.path.join(d, "py.zarr.zip")
        python(WRITE, path)
        zip_tools_ok(path)
        arrays = zarr_read_all(path)
        check_equal(arrays["field"][0], [[(r * 5 + c) * 0.25 for c in range(5)] for r in range(6)], "field")
        check_equal(arrays["field"][1]["units"], "m s-1", "field:units in zarr-python")
        check_equal(arrays["extra/ids"][0], [5, 4, 3, 2, 1], "extra/ids")
        for mode in ("a", "r+"):
            python(APPEND, path, mode)
        got = netcdf_read_all(path, enable_plugin=True)
        for name in ("added_a", "added_rp"):
            check_equal(got[name], [[-1, -2, -3, -4, -5], {"comment": "appended"}], name)
        check_equal(got["field"][0], arrays["field"][0], "field after appending")
        check_equal(got["field"][1], {"units": "m s-1"}, "field attributes after appending")
        zip_tools_ok(path)


def test_append_through_urls():
    """Modes "a" and "r+" on the URL forms, and on paths with a "#mode=" fragment, append (netCDF4-python alone would take a URL for a missing file,
    because os.path.exists is false for it, and create the dataset anew over the archive); "a" on the URL
    of a missing archive still creates it."""
    with TempDir() as d:
        path = os.path.join(d, "py.zarr.zip")
        python(WRITE, path)
        for mode, form in (("a", "nczarr"), ("r+", "zarr")):
            python(APPEND, "file://%s#mode=%s,zip" % (path, form), mode)
        # The path with netCDF's fragment (netcdf-guide.md section 2): os.path.exists is false for it too, and
        # mode "a" replaced the archive with an empty dataset (an outside review).
        python(APPEND, path + "#mode=zarr", "a", "_bare")
        python(APPEND, path + "#mode=nczarr,zip", "r+", "_bare")
        got = netcdf_read_all(path, enable_plugin=True)
        for name in ("added_a", "added_rp", "added_a_bare", "added_rp_bare"):
            # After the pure-Zarr ("mode=zarr") session the archive reads as plain Zarr, whose fill_value
            # (here netCDF's default for short) the view shows as _FillValue, as xarray's Zarr reader does.
            if got[name][1].get("_FillValue") == -32767:
                del got[name][1]["_FillValue"]
            check_equal(got[name], [[-1, -2, -3, -4, -5], {"comment": "appended"}], name)
        check_equal(got["field"][0], [[(r * 5 + c) * 0.25 for c in range(5)] for r in range(6)],
                    "field after appending through URLs")
        zip_tools_ok(path)
        fresh = os.path.join(d, "fresh.zarr.zip")
        python("import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\n"
               "d = netCDF4.Dataset(sys.argv[1], 'a')\nd.createDimension('x', 5)\nd.close()",
               "file://%s#mode=nczarr,zip" % fresh)
        p = python("import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\n"
                   "print({k: len(v) for k, v in netCDF4.Dataset(sys.argv[1]).dimensions.items()})", fresh)
        check_equal(p.stdout.strip(), "{'x': 5}", "dimensions of the archive that mode 'a' created")
        zip_tools_ok(fresh)


def test_enable_after_import_refused():
    p = python("import netCDF4, mmzip\nmmzip.enable_netcdf()", check=False)
    assert p.returncode != 0 and "RuntimeError" in p.stderr and "before netCDF4" in p.stderr, p.stderr


def test_enable_under_mmzip_run():
    """Under `mmzip run` the plugin is preloaded (and libnetcdf with it): enable_netcdf() only returns it."""
    if sanitizer_blocks_python_under_run("test_enable_under_mmzip_run"):
        return
    with TempDir() as d:
        nc, ours = sample_archive(d)
        p = mmzip_run(PYTHON, "-c", "import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\n"
                      "print(netCDF4.Dataset(sys.argv[1]).title)", ours)
        check_equal(p.stdout.strip(), "mmzip NCZarr test sample", "title read under mmzip run")


def test_without_plugin_archive_unreadable():
    with TempDir() as d:
        nc, ours = sample_archive(d)
        p = python("import sys, netCDF4\nnetCDF4.Dataset(sys.argv[1])", zip_url(ours), check=False)
        assert p.returncode != 0 and "not turned on" in p.stderr, "netCDF-C alone opened a zip dataset:\n" + p.stderr
        p = python("import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\n"
                   "print(netCDF4.Dataset(sys.argv[1]).title)", zip_url(ours))
        check_equal(p.stdout.strip(), "mmzip NCZarr test sample", "title through the plugin")


EDGE_WRITE = r'''
import sys, numpy as np, mmzip
mmzip.enable_netcdf()
import netCDF4
path, step = sys.argv[1:3]
if step == "create":
    ds = netCDF4.Dataset(path, "w")
    ds.createDimension("x", 4)
    v = ds.createVariable("a", "i4", ("x",), chunksizes=(2,), fill_value=7)
    v[0:2] = [1, 2]
    w = ds.createVariable("b", "f8", ("x",), chunksizes=(2,), fill_value=1.5)
    w[0:2] = [1.0, 2.0]
    ds.close()
else:
    ds = netCDF4.Dataset(path, "a")
    ds["a"][2:4] = np.array([-2147483647, -2147483647], "i4")    # netCDF's default int fill, as data
    ds["b"][2:4] = np.array([9.969209968386869e36] * 2)          # netCDF's default double fill, as data
    ds.setncattr("c", "a\x01b\tc\x1b[0m")
    ds["a"].setncattr("note", "esc\x1b[0m")
    ds.close()
'''


def test_edge_values_written_by_netcdf():
    """Found by an outside review, both with exit status 0: (1) in an append session, a new chunk holding only
    netCDF's default fill, in a variable with a _FillValue of its own, was taken for the fill chunk netCDF-C
    writes back for a chunk it read, and dropped: it read back as the _FillValue; (2) an attribute holding
    control characters was stored as netCDF-C writes it, raw in a JSON string, and then neither netCDF nor
    zarr-python could read the archive at all."""
    import zarr
    with TempDir() as d:
        path = os.path.join(d, "edge.zarr.zip")
        python(EDGE_WRITE, path, "create")
        python(EDGE_WRITE, path, "append")
        got = netcdf_read_all(path, enable_plugin=True)
        check_equal(got["a"][0], [1, 2, -2147483647, -2147483647], "a through netCDF4-python")
        check_equal(got["b"][0][:2], [1.0, 2.0], "b through netCDF4-python")
        check_equal(got["b"][0][2:], [9.969209968386869e36] * 2, "b's appended values through netCDF4-python")
        root = zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")
        check_equal(root["a"][:].tolist(), [1, 2, -2147483647, -2147483647], "a through zarr-python")
        check_equal(root["b"][2:].tolist(), [9.969209968386869e36] * 2, "b through zarr-python")
        check_equal(dict(root.attrs)["c"], "a\x01b\tc\x1b[0m", "the control characters through zarr-python")
        check_equal(dict(root["a"].attrs)["note"], "esc\x1b[0m", "a variable's attribute through zarr-python")
        p = python("import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\nds = netCDF4.Dataset(sys.argv[1])\n"
                   "print(repr(ds.getncattr('c')), repr(ds['a'].getncattr('note')))", path)
        check_equal(p.stdout.strip(), repr("a\x01b\tc\x1b[0m") + " " + repr("esc\x1b[0m"),
                    "the control characters through netCDF4-python")
        zip_tools_ok(path)


if __name__ == "__main__":
    main([test_read, test_write_and_append, test_append_through_urls, test_enable_after_import_refused,
          test_enable_under_mmzip_run, test_without_plugin_archive_unreadable, test_edge_values_written_by_netcdf])
