"""Point 4: appending in place (and the one-writer rule). An archive opened NC_WRITE gets a new group and a variable with data; at
close, every pre-existing entry keeps its offset, size and CRC (`mmzip ls` before and after, and Python's
zipfile independently) and its bytes are untouched on disk; the only entry replaced is the group listing
that NCZarr must update to name the new group (a new version appended; the old bytes stay where they
were). A zarr-python archive (no listings) keeps literally every entry. The new variable reads back in
ncdump and zarr-python. Opening for write and closing with no change adds zero bytes, for all three
archive kinds."""
import hashlib
import json
import os
import shutil

from mmzip_testlib import MMZIP, PYTHON, TempDir, check_equal, ls_entries, main, mmzip, mmzip_run, run, zip_tools_ok
from nczarr_testlib import (DEBIAN_RELEASE, NO_PLUGINS, TOOL_RELEASE, dir_url, ls_zip, make_sample_nc,
                            make_zarr_python, ncdump, sample_archive, skip_in_process, zarr_read_all, zip_directory)

APPEND = r"""
import sys
import mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "a")
g = d.createGroup("appended")
g.createDimension("n", 6)
v = g.createVariable("series", "i4", ("n",), chunksizes=(4,))
v[:] = np.arange(6) * 7 - 5
v.note = "added in place"
d.close()
"""

TOUCH = r"""
import sys
import mmzip
mmzip.enable_netcdf()
import netCDF4
netCDF4.Dataset(sys.argv[1], "a").close()
"""


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def digest(path):
    return hashlib.sha256(file_bytes(path)).hexdigest()


def append_and_check(archive, listing_entries):
    """Appends; checks that entries other than listing_entries are unchanged, and that all old bytes are."""
    before_ls, before_zip, before_bytes = ls_entries(archive), ls_zip(archive), file_bytes(archive)
    run([PYTHON, "-c", APPEND, archive], env=NO_PLUGINS)
    after_ls, after_zip, after_bytes = ls_entries(archive), ls_zip(archive), file_bytes(archive)
    zip_tools_ok(archive)
    mmzip("check", archive)
    replaced = sorted(n for n in before_ls if after_ls.get(n) != before_ls[n])
    check_equal(replaced, sorted(listing_entries), "pre-existing entries that changed (mmzip ls)")
    check_equal(sorted(n for n in before_zip if after_zip.get(n) != before_zip[n]), sorted(listing_entries),
                "pre-existing entries that changed (zipfile)")
    for name, e in before_ls.items():
        # Local header and data of every old entry, replaced ones included, are still there, unmoved.
        start, end = before_zip[name][0], e["offset"] + e["csize"]
        if start == 0 and name in listing_entries and after_bytes[:4] == b"PK\x05\x06":
            # The replaced first entry (a created archive begins with its root .zgroup, for netCDF-C's own zip
            # backend): the core gives its dead local header the signature PK\5\6 (plugin/src/commit.c,
            # dead_start); every other byte stays.
            start = 4
        if after_bytes[start:end] != before_bytes[start:end]:
            raise AssertionError("bytes of pre-existing entry %s (%d..%d) changed" % (name, start, end))
    return sorted(set(after_ls) - set(before_ls))


NEW_ENTRIES = ["appended/.zgroup", "appended/series/.zarray", "appended/series/.zattrs", "appended/series/0",
               "appended/series/1"]


def check_new_variable_reads_back(archive, group=""):
    dump = ncdump(archive, "-v", "series")
    for needle in ("group: appended", "series = -5, 2, 9, 16, 23, 30 ;", 'series:note = "added in place"'):
        assert needle in dump, "ncdump after appending lacks %r:\n%s" % (needle, dump)
    arrays = zarr_read_all(archive, group)
    check_equal(arrays["appended/series"][0], [-5, 2, 9, 16, 23, 30], "zarr-python values of the appended array")


def test_append_to_our_archive():
    if skip_in_process("appending with netCDF4-python to the NCZarr archive the tools' nccopy wrote"):
        return
    with TempDir() as d:
        nc, archive = sample_archive(d)
        before = ncdump(archive)
        # NCZarr lists a group's subgroups in its .zgroup: that one object must change.
        added = append_and_check(archive, [".zgroup"])
        check_equal(added, NEW_ENTRIES, "entries added")
        check_new_variable_reads_back(archive)
        # Everything that was there reads as before.
        after = ncdump(archive)
        assert after.startswith(before[:before.index("group: surface")]), "root group changed by the append"


def test_append_to_zarr_python_archive():
    with TempDir() as d:
        archive = make_zarr_python(os.path.join(d, "zp.zarr.zip"), "zip")
        # Plain Zarr has no listings: not one pre-existing entry may change.
        added = append_and_check(archive, [])
        check_equal(added, NEW_ENTRIES, "entries added to the zarr-python archive")
        arrays = zarr_read_all(archive)
        check_equal(arrays["appended/series"][0], [-5, 2, 9, 16, 23, 30], "zarr-python reads the appended array")
        check_equal(arrays["elevation"][0][0][:3], [-3.0, -1.75, -0.5], "old data in zarr-python")


def test_append_to_nczarr_layout():
    if skip_in_process("appending with netCDF4-python to the NCZarr store the tools' nccopy wrote"):
        return
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "in.nc"))
        store = os.path.join(d, "own.zarr")
        mmzip_run("nccopy", nc, dir_url(store))
        archive = zip_directory(store, os.path.join(d, "own.zarr.zip"))
        added = append_and_check(archive, ["own.zarr/.zgroup"])
        check_equal(added, ["own.zarr/" + n for n in NEW_ENTRIES], "entries added under the dataset directory")
        check_new_variable_reads_back(archive, "own.zarr")


def test_open_for_write_adds_nothing():
    with TempDir() as d:
        nc, ours = sample_archive(d)
        store = os.path.join(d, "own.zarr")
        mmzip_run("nccopy", nc, dir_url(store))
        own = zip_directory(store, os.path.join(d, "own.zarr.zip"))
        zp = make_zarr_python(os.path.join(d, "zp.zarr.zip"), "zip")
        for archive in (ours, own, zp):
            before = digest(archive), os.path.getsize(archive)
            run([PYTHON, "-c", TOUCH, archive], env=NO_PLUGINS)
            check_equal((digest(archive), os.path.getsize(archive)), before,
                        "%s after an NC_WRITE open and close" % os.path.basename(archive))
        # After an append, a no-op open adds nothing either.
        copy = os.path.join(d, "copy.zarr.zip")
        shutil.copy(ours, copy)
        run([PYTHON, "-c", APPEND, copy], env=NO_PLUGINS)
        before = digest(copy)
        run([PYTHON, "-c", TOUCH, copy], env=NO_PLUGINS)
        check_equal(digest(copy), before, "no-op open after an append")


SPARSE = r"""
import sys, mmzip
mmzip.enable_netcdf()
import netCDF4
d = netCDF4.Dataset(sys.argv[1], "w")
d.createDimension("x", 8)
v = d.createVariable("v", "f4", ("x",), chunksizes=(2,), fill_value=-9.5)
v[0:2] = [1, 2]
w = d.createVariable("w", "i2", ("x",), chunksizes=(4,))
w[4:8] = [5, 6, 7, 8]
d.close()
"""

READ_IN_WRITE_SESSION = r"""
import sys, mmzip
mmzip.enable_netcdf()
import netCDF4
d = netCDF4.Dataset(sys.argv[1], "a")
print(d["v"][:].filled(-1).tolist(), d["w"][:].filled(-1).tolist())
d.close()
"""


def test_reading_missing_chunks_adds_nothing():
    """netCDF-C 4.9 writes a chunk of fill values at close for every missing chunk an NC_WRITE session read.
    The plugin recognises those and stores nothing: the archive stays byte for byte. (With the view
    switched off, MMZIP_NCZARR_VIEW=raw, they are stored: shown as the contrast.)"""
    with TempDir() as d:
        archive = os.path.join(d, "sparse.zarr.zip")
        run([PYTHON, "-c", SPARSE, archive], env=NO_PLUGINS)
        before = digest(archive), sorted(ls_entries(archive))
        check_equal(before[1], [".zattrs", ".zgroup", "v/.zarray", "v/.zattrs", "v/0", "w/.zarray", "w/.zattrs",
                                "w/1"], "entries of the sparse dataset")
        out = run([PYTHON, "-c", READ_IN_WRITE_SESSION, archive], env=NO_PLUGINS).stdout.strip()
        check_equal(out, "[1.0, 2.0, -1.0, -1.0, -1.0, -1.0, -1.0, -1.0] [-1, -1, -1, -1, 5, 6, 7, 8]",
                    "values read in the write session")
        check_equal((digest(archive), sorted(ls_entries(archive))), before, "archive after the session")
        raw = dict(NO_PLUGINS, MMZIP_NCZARR_VIEW="raw")
        run([PYTHON, "-c", READ_IN_WRITE_SESSION, archive], env=raw)
        check_equal(sorted(set(ls_entries(archive)) - set(before[1])), ["v/1", "v/2", "v/3", "w/0"],
                    "fill chunks netCDF-C writes with the view off")


CONSOLIDATE = r"""
import sys, zarr
store = zarr.ZipStore(sys.argv[1], mode="a")
zarr.consolidate_metadata(store)
store.close()
"""

READ_CONSOLIDATED = r"""
import json, sys, zarr
store = zarr.ZipStore(sys.argv[1], mode="r")
g = zarr.open_consolidated(store)
out = {"series": g["appended/series"][:].tolist(), "note": g["appended/series"].attrs["note"],
       "elevation": g["elevation"][0, :3].tolist()}
print(json.dumps(out))
"""


def test_consolidated_metadata_follows():
    """A zarr-python archive with consolidated metadata (.zmetadata, which zarr-python and xarray read in
    place of the objects): after a netCDF append it names the new group and array with their attributes,
    in the same commit; a no-op session leaves it, and the archive, byte for byte."""
    with TempDir() as d:
        archive = make_zarr_python(os.path.join(d, "zp.zarr.zip"), "zip")
        run([PYTHON, "-c", CONSOLIDATE, archive])
        added = append_and_check(archive, [".zmetadata"])
        check_equal(added, NEW_ENTRIES, "entries added beside the refreshed .zmetadata")
        got = json.loads(run([PYTHON, "-c", READ_CONSOLIDATED, archive]).stdout)
        check_equal(got["series"], [-5, 2, 9, 16, 23, 30], "appended array through consolidated metadata")
        check_equal(got["note"], "added in place", "its attribute through consolidated metadata")
        check_equal(got["elevation"], [-3.0, -1.75, -0.5], "old data through consolidated metadata")
        before = digest(archive)
        run([PYTHON, "-c", TOUCH, archive], env=NO_PLUGINS)
        check_equal(digest(archive), before, "no-op NC_WRITE session on a consolidated archive")


ONE_WRITER = r"""
import subprocess, sys
import mmzip
mmzip.enable_netcdf()
import netCDF4
archive, mmzip_bin = sys.argv[1], sys.argv[2]
d = netCDF4.Dataset(archive, "a")
d.createDimension("extra", 3)
d.createVariable("pending", "i4", ("extra",))[:] = [1, 2, 3]
second = subprocess.run([sys.executable, "-c", "import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\n"
                         "netCDF4.Dataset(sys.argv[1], 'a')", archive], capture_output=True, text=True)
reader = subprocess.run([mmzip_bin, "run", "ncdump", "-h", archive], capture_output=True, text=True)
d.close()
print(second.returncode, "Device or resource busy" in second.stderr, reader.returncode, "pending" in reader.stdout)
"""


def test_one_writer_and_readers():
    """A second writer gets EBUSY at once; a reader during the session sees the last commit."""
    with TempDir() as d:
        if TOOL_RELEASE == DEBIAN_RELEASE:
            nc, archive = sample_archive(d)
        else:
            # 4.9.0's netCDF4-python adds plain-Zarr arrays, which the tools' release does not list in an NCZarr
            # archive its nccopy wrote (it lists arrays in _nczarr_group): use an archive both read as Zarr.
            print("netCDF-C %s tools: the session runs on a zarr-python archive" % (TOOL_RELEASE,))
            archive = make_zarr_python(os.path.join(d, "zp.zarr.zip"), "zip")
        out = run([PYTHON, "-c", ONE_WRITER, archive, MMZIP], env=NO_PLUGINS).stdout.split()
        check_equal(out, ["1", "True", "0", "False"], "second writer status, EBUSY, reader status, reader sees "
                    "uncommitted variable")
        assert "pending" in ncdump(archive, "-h"), "the session's variable is missing after close"


if __name__ == "__main__":
    main([test_append_to_our_archive, test_append_to_zarr_python_archive, test_append_to_nczarr_layout,
          test_open_for_write_adds_nothing, test_reading_missing_chunks_adds_nothing,
          test_consolidated_metadata_follows, test_one_writer_and_readers])
