"""Point 6: the data-loss bugs of netCDF-C 4.9.0 (docs/netcdf-guide.md, "netCDF-C 4.9 bugs") do not reach
an archive through the plugin.
  - Attributes survive an NC_WRITE session (netCDF-C drops every variable attribute it did not read).
  - Writes into existing chunks land (netCDF-C drops them silently), in every put form: var1, vara, vars,
    varm, var, typed and untyped, before and after nc_sync.
  - A write into a chunk the archive does not hold lands after netCDF-C flushed that chunk unwritten: a read of
    the missing chunk then nc_sync (the fill chunk netCDF-C writes for it is not stored, and 4.9.0 then keeps
    later writes to it in its cache only: they were lost, exit status 0; an outside review). And a write after
    an attribute set in data mode (netCDF4-python's setncattr: define mode, which the next put leaves, flushing
    the chunk cache inside the put) lands too (it was lost: another outside review). Sessions of reads, writes,
    syncs and attributes are compared with the same sessions on a netCDF-4 file.
  - A write into a chunk that cannot be rewritten (compressed) returns an error and changes nothing.
  - Renaming a dimension, variable or group is refused, naming the way out: NCZarr renamed nothing stored,
    and the dataset no longer opened (a dimension: netCDF-C crashed at the next open) or read its data as fill
    (a variable), after a close that reported success (an outside review).
On an affected netCDF-C, the same programs against netCDF-C's own directory store are run as controls,
to show that the bugs are real there and that the plugin is what prevents them."""
import hashlib
import os
import zipfile

import numpy as np

from mmzip_testlib import BUILD, PYTHON, TempDir, check_equal, main, mmzip, mmzip_run, run
from nczarr_testlib import NO_PLUGINS, TOOL_RELEASE, cdl_archive, dir_url, ncdump, netcdf_read_all, zarr_read_all

WRITER = os.path.join(BUILD, "tests", "nczarr", "nc_writer")

UPDATE_CDL = """netcdf upd {
dimensions:
  r = 6 ;
  c = 8 ;
  k = 10 ;
variables:
  int grid(r, c) ;
    grid:units = "count" ;
    grid:_ChunkSizes = 3, 4 ;
  double line(k) ;
    line:long_name = "a line" ;
    line:_ChunkSizes = 4 ;
data:
  grid = %s ;
  line = %s ;
group: sub {
  variables:
    int deep(r) ;
      deep:_ChunkSizes = 3 ;
  data:
    deep = 1, 2, 3, 4, 5, 6 ;
  }
}
""" % (", ".join(str(i) for i in range(48)), ", ".join(str(10 * i) for i in range(10)))


def expected_after_update():
    """What nc_writer update leaves, computed independently."""
    g = np.arange(48).reshape(6, 8)
    g[0, 0] = 1000
    g[1:3, 1:4] = [[2001, 2002, 2003], [2004, 2005, 2006]]
    g[4, 0:8:2] = [3001, 3002, 3003, 3004]
    g[3, 5:8] = [4001, 4003, 4005]
    g[4, 5:8] = [4002, 4004, 4006]
    g[5, 6:8] = [5001, 5002]
    g[2, 7] = 6001
    return g.tolist(), (np.arange(10) * 0.5).tolist()


def netcdf_version():
    return run(["nc-config", "--version"]).stdout.split()[-1]


def affected_netcdf():
    """netCDF-C 4.9.0-4.9.2 lose chunk updates and attributes (fixed or changed later)."""
    parts = netcdf_version().split(".")
    return parts[:2] == ["4", "9"] and int(parts[2].split("-")[0]) <= 2


def make_datasets(d):
    nc, archive = cdl_archive(d, "upd", UPDATE_CDL)
    store = os.path.join(d, "upd.zarr")
    run(["nccopy", nc, dir_url(store)])
    return archive, dir_url(store)


def test_chunk_updates_land():
    with TempDir() as d:
        archive, store = make_datasets(d)
        mmzip_run(WRITER, "update", archive)
        grid, line = expected_after_update()
        arrays = zarr_read_all(archive)
        check_equal(arrays["grid"][0], grid, "grid in zarr-python after every put form")
        check_equal(arrays["line"][0], line, "line in zarr-python after nc_put_var_float")
        check_equal(arrays["sub/deep"][0], [1, 2, 3, 4, 777, 6], "sub/deep after a put through the group's ncid")
        got = netcdf_read_all(archive, enable_plugin=True)
        check_equal(got["grid"], [grid, {"units": "count"}], "grid through netCDF-C after the updates")
        check_equal(got["line"], [line, {"long_name": "a line"}], "line through netCDF-C after the updates")
        mmzip("check", archive)
        if affected_netcdf():
            run([WRITER, "update", store])
            lost = netcdf_read_all(store)
            assert lost["grid"][0] != grid, "control: netCDF-C %s kept every update in its directory store; " \
                "the chunk write-back may no longer be needed" % netcdf_version()
            check_equal(lost["grid"][0][0][0], 0, "control: the update of an existing chunk was lost")


def test_attributes_survive_write_sessions():
    with TempDir() as d:
        archive, store = make_datasets(d)
        before = ncdump(archive, "-h")
        mmzip_run(WRITER, "touch", archive)
        check_equal(ncdump(archive, "-h"), before, "header after an NC_WRITE open and close (C)")
        touch = "import sys, mmzip\nmmzip.enable_netcdf()\nimport netCDF4\nnetCDF4.Dataset(sys.argv[1], 'a').close()"
        run([PYTHON, "-c", touch, archive], env=NO_PLUGINS)
        check_equal(ncdump(archive, "-h"), before, "header after an NC_WRITE open and close (netCDF4-python)")
        mmzip_run(WRITER, "update", archive)
        assert 'grid:units = "count"' in ncdump(archive, "-h"), "attribute lost by an update session"
        if affected_netcdf():
            before = ncdump(store, "-h", plugin=False)
            run([WRITER, "touch", store])
            after = ncdump(store, "-h", plugin=False)
            assert 'grid:units = "count"' in before and 'grid:units' not in after, \
                "control: netCDF-C %s no longer drops attributes in its directory store:\n%s" % (
                    netcdf_version(), after)


COMPRESSED = r"""
import sys, numpy as np, zarr, numcodecs
store = zarr.ZipStore(sys.argv[1], mode="w")
root = zarr.group(store=store)
a = root.create_dataset("packed", data=np.arange(8, dtype="<i4"), chunks=(4,), compressor=numcodecs.Zlib(level=1))
a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
store.close()
"""


SLASH_SEPARATED = r"""
import sys, numpy as np, zarr
store = zarr.ZipStore(sys.argv[1], mode="w")
root = zarr.group(store=store)
a = root.create_dataset("tiles", data=np.arange(24, dtype="<i4").reshape(4, 6), chunks=(2, 3), compressor=None,
                        dimension_separator="/")
a.attrs["_ARRAY_DIMENSIONS"] = ["row", "col"]
store.close()
"""


def test_update_with_slash_separated_chunks():
    """Chunk keys "tiles/0/0" (dimension_separator "/") are found and written back like "tiles/0.0"."""
    with TempDir() as d:
        archive = os.path.join(d, "tiles.zarr.zip")
        run([PYTHON, "-c", SLASH_SEPARATED, archive])
        mmzip_run(WRITER, "put-one", archive, "tiles")
        got = zarr_read_all(archive)["tiles"][0]
        want = np.arange(24).reshape(4, 6)
        want[0, 0] = 12345
        check_equal(got, want.tolist(), "tiles after a put into chunk 0/0")
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
        assert "tiles/0/0" in names and "tiles/0.0" not in names, names


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_unrewritable_chunk_refused():
    with TempDir() as d:
        archive = os.path.join(d, "packed.zarr.zip")
        run([PYTHON, "-c", COMPRESSED, archive])
        before = digest(archive)
        # Raw (no compatibility view): netCDF-C 4.9 would rewrite the compressed chunk as if it were plain
        # data; the plugin refuses the put before anything changes.
        p = mmzip_run(WRITER, "put-one", archive, "packed", check=False, env={"MMZIP_NCZARR_VIEW": "raw"})
        if TOOL_RELEASE >= (4, 9, 3):
            # 4.9.3+ know Zlib's filter id but ship no plugin: netCDF-C itself refuses the put, then crashes
            # in nc_close (SIGSEGV in NCZ_filter_jsonize, any NC_WRITE session on such an array without the
            # view - a netCDF-C bug). Either way nothing is stored.
            assert p.returncode != 0 and "Filter error: undefined filter" in p.stderr, (p.returncode, p.stderr)
        else:
            check_equal(p.returncode, 3, "exit status of a refused put (stderr: %s)" % p.stderr)
            assert "compressed or filtered" in p.stderr and "packed/0" in p.stderr, p.stderr
        check_equal(digest(archive), before, "archive after a refused put")
        # With the compatibility view the array is presented decoded; a write to it is refused as well.
        p = mmzip_run(WRITER, "put-one", archive, "packed", check=False)
        assert p.returncode != 0, "a put into a translated array succeeded:\n" + p.stderr
        check_equal(digest(archive), before, "archive after a put through the compatibility view")
        check_equal(zarr_read_all(archive)["packed"][0], list(range(8)), "zarr-python values after both attempts")


SESSION_STEPS = r"""
import sys, mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
path, steps = sys.argv[1], sys.argv[2]
with netCDF4.Dataset(path, "w") as ds:
    ds.createDimension("y", 5)
    ds.createDimension("x", 7)
    ds.createVariable("v", "i4", ("y", "x"), chunksizes=(2, 3), fill_value=np.int32(-7))
    ds.createVariable("f", "f8", ("x",), chunksizes=(3,))   # netCDF's default fill
    ds.createVariable("e", "i2", ("x",), chunksizes=(4,))[:] = np.arange(7)   # chunks that exist
with netCDF4.Dataset(path, "a") as ds:
    v, f, e = ds["v"], ds["f"], ds["e"]
    for n, step in enumerate(steps.split(",")):
        if step == "read":
            v[:], f[:], e[:]
        elif step == "sync":
            ds.sync()
        elif step == "attr":     # data mode: netCDF-4 enters define mode, and the next put leaves it
            ds.setncattr("step", np.int32(n))
        elif step == "vattr":
            v.setncattr("units", "m%d" % n)
        elif step == "newvar":
            ds.createVariable("new%d" % n, "i2", ("x",))
        elif step == "write":
            v[n % 5, 1:6] = np.arange(5) + 100 * n   # spans chunks, the last one an edge chunk
            v[4, 6] = n
            f[5:7] = [n + 0.25, -n]
        elif step == "write1":
            v[0, 0] = 1000 + n
            e[2] = -n
with netCDF4.Dataset(path) as ds:
    ds.set_auto_mask(False)
    for name in ("v", "f", "e"):
        print(name, ds[name][:].tolist())
    print("attrs", {k: str(ds.getncattr(k)) for k in ds.ncattrs()}, {k: str(v.getncattr(k)) for k in ds["v"].ncattrs()})
"""


def test_writes_land_around_syncs_and_define_mode():
    """The same sessions on a netCDF-4 file (the control) and in an archive must leave the same values."""
    steps_list = ("read,sync,write", "read,sync,write,sync,write", "read,sync,read,write",
                  "write,read,sync,write", "read,sync,write,read,sync",
                  "write1,attr,write", "write1,attr,write1", "read,attr,write", "write,vattr,write1",
                  "write1,newvar,write", "write,attr,sync,write1", "attr,write,attr,write", "read,attr,read,write1")
    with TempDir() as d:
        for steps in steps_list:
            got = {}
            for suffix in ("nc", "zarr.zip"):
                path = os.path.join(d, "%s.%s" % (steps.replace(",", "_"), suffix))
                got[suffix] = mmzip_run(PYTHON, "-c", SESSION_STEPS, path, steps).stdout
            assert "v [[100" in got["nc"] or "write1" not in steps, got["nc"]
            check_equal(got["zarr.zip"], got["nc"], "the archive after %s, against the netCDF-4 file" % steps)


NULL_FILL = r"""
import sys, mmzip
mmzip.enable_netcdf()
import hashlib, netCDF4, numpy as np, zarr
path = sys.argv[1]
st = zarr.ZipStore(path, mode="w")
g = zarr.group(store=st)
g.create_dataset("v", shape=(9,), chunks=(3,), dtype="f8", fill_value=None, compressor=None)[3:6] = [1, 2, 3]
g.create_dataset("i", shape=(6,), chunks=(3,), dtype="i4", fill_value=None, compressor=None)[3:6] = [4, 5, 6]
st.close()
digest = lambda: hashlib.sha256(open(path, "rb").read()).hexdigest()
before = digest()
with netCDF4.Dataset(path, "a") as ds:   # reads the missing chunks: netCDF-C writes back zeros for them
    print("read", ds["v"][:].tolist(), ds["i"][:].tolist())
print("idle session changed the archive:", digest() != before)
with netCDF4.Dataset(path, "a") as ds:
    ds["v"][0:3] = np.ma.masked_all(3)   # netCDF's default fill: missing data to netCDF readers
    ds["v"][3] = np.ma.masked
    ds["i"][0:3] = [0, 0, 0]             # zeros written on purpose into a missing chunk
with netCDF4.Dataset(path) as ds:
    print("netCDF", ds["v"][:].tolist(), ds["i"][:].tolist())
z = zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")
print("zarr", z["v"][0:6].tolist(), z["i"][:].tolist(), sorted(k for k in z.store.keys() if not k.endswith((".zarray", ".zgroup"))))
"""


def test_arrays_without_fill_value():
    """A Zarr array whose fill_value is null (zarr-python's fill_value=None, DataAxesFormats'): netCDF-C reads
    its missing chunks as zeros. Masked values written through netCDF4-python (netCDF's default fill) were
    taken for the fill chunk netCDF-C writes back for a chunk it merely read, dropped, and read back as 0.0
    (exit status 0; an outside review), while an idle session's read of a missing chunk stored a chunk of
    zeros. Now the chunks a put wrote into are stored whatever their values, and only the zeros netCDF-C
    writes back for a chunk it merely read are dropped."""
    with TempDir() as d:
        out = mmzip_run(PYTHON, "-c", NULL_FILL, os.path.join(d, "nofill.zarr.zip")).stdout.splitlines()
        big = 9.969209968386869e36
        check_equal(out[0], "read [0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0] [0, 0, 0, 4, 5, 6]",
                    "missing chunks read as zeros")
        check_equal(out[1], "idle session changed the archive: False", "an idle session")
        check_equal(out[2], "netCDF [None, None, None, None, 2.0, 3.0, 0.0, 0.0, 0.0] [0, 0, 0, 4, 5, 6]",
                    "netCDF after the masked writes")
        check_equal(out[3], "zarr %s [0, 0, 0, 4, 5, 6] ['i/0', 'i/1', 'v/0', 'v/1']" % ([big] * 4 + [2.0, 3.0]),
                    "zarr-python after the masked writes")


RENAMES = r"""
import sys, mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
path = sys.argv[1]
with netCDF4.Dataset(path, "w") as ds:
    ds.createDimension("x", 3)
    ds.createVariable("v", "i4", ("x",))[:] = [1, 2, 3]
    ds.createGroup("g")
for mode in ("a", "w"):
    target = path if mode == "a" else path + ".new.zarr.zip"
    with netCDF4.Dataset(target, mode) as ds:
        if mode == "w":
            ds.createDimension("x", 3)
            ds.createVariable("v", "i4", ("x",))[:] = [1, 2, 3]
            ds.createGroup("g")
        for rename in (lambda: ds.renameDimension("x", "y"), lambda: ds.renameVariable("v", "w"),
                       lambda: ds.renameGroup("g", "h")):
            try:
                rename()
                print("renamed in mode", mode)
            except RuntimeError as e:
                print("refused:", e)
    with netCDF4.Dataset(target) as ds:
        print(mode, list(ds.dimensions), list(ds.variables), list(ds.groups), ds["v"][:].tolist())
"""


def test_renames_refused():
    with TempDir() as d:
        path = os.path.join(d, "r.zarr.zip")
        r = mmzip_run(PYTHON, "-c", RENAMES, path)
        out = r.stdout.splitlines()
        check_equal(out.count("refused: NetCDF: NCZarr error"), 6, "renames refused:\n" + r.stdout)
        assert "renamed" not in r.stdout, r.stdout
        check_equal(out[-1], "w ['x'] ['v'] ['g'] [1, 2, 3]", "the new dataset after the refused renames")
        check_equal(out[-5], "a ['x'] ['v'] ['g'] [1, 2, 3]", "the appended dataset after the refused renames")
        for what, old, new in (("dimension", "x", "y"), ("variable", "v", "w"), ("group", "g", "h")):
            assert "cannot rename %s '%s' to '%s'" % (what, old, new) in r.stderr, r.stderr
        assert "ncrename" in r.stderr, r.stderr


if __name__ == "__main__":
    main([test_arrays_without_fill_value, test_renames_refused, test_writes_land_around_syncs_and_define_mode, test_chunk_updates_land, test_attributes_survive_write_sessions, test_update_with_slash_separated_chunks,
          test_unrewritable_chunk_refused])
