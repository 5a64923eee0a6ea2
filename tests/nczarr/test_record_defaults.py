"""Issue 23, point 3: each netCDF-C release's default chunking of record variables reads and appends.

netCDF-C 4.9.3 and 4.10.x give a record variable (first dimension UNLIMITED) a chunk longer than the
records it holds (time(time): 512 or 1024), which 4.9.0's NCZarr refuses; the compatibility view used to
take such an array for one it must translate and failed every read of it ("cannot present this chunk").

On the tools' release (Debian's 4.9.0, or 4.9.3 / 4.10.1 through tests/nczarr/run_with_netcdf.sh):
  - 4.9.3+: `mmzip run nccopy` of a dataset with records, with that release's default chunking (checked:
    a chunk longer than its dimension), reads back with the values of the netCDF-4 file, and so does the
    same dataset written by netCDF-C's own zip backend (no plugin). Then 50 appends of one record each, with
    netCDF4-python (running the tools' libnetcdf in-process) and with a netCDF C program (nc_writer), give
    the values of the same 50 appends to a plain netCDF-4 file: compared with ncdump's text and with the
    numbers netCDF4-python and zarr-python read.
  - 4.9.0 (its NCZarr has no unlimited dimensions): a 4.9.3-style archive (records in a 1024-long chunk)
    reads with its values; `nccopy` of a file with records fails (no archive is left) and `nccopy -u`
    copies the values. Appending records needs a netCDF-C of 4.9.3 or later, which the run with the
    prefix option shows.
"""
import json
import os
import zipfile

import numpy as np

from nczarr_testlib import NO_PLUGINS, TOOL_RELEASE, ncdump, normalized, tools_release_in_process_env, zip_url
from mmzip_testlib import BUILD, PYTHON, TempDir, check_equal, main, mmzip_run, run

NC_WRITER = os.path.join(BUILD, "tests", "nczarr", "nc_writer")
APPENDS = 50

RECORDS_CDL = r"""netcdf records {
dimensions:
  time = UNLIMITED ;
  x = 4 ;
variables:
  double time(time) ;
    time:units = "hours since 2000-01-01" ;
  float temp(time, x) ;
    temp:units = "K" ;
  int step(time) ;
data:
  time = 0, 6, 12 ;
  temp = 270.5, 271, 271.5, 272, 273.25, 274, 275, 276, 280, 281.5, 282, 283 ;
  step = 1, 2, 3 ;
}
"""

# netCDF4-python opens the dataset, appends one record to every variable, closes: APPENDS sessions.
PY_APPEND = r"""
import sys
import netCDF4
release = sys.argv[3]
assert netCDF4.__netcdf4libversion__.split()[0].startswith(release), (netCDF4.__netcdf4libversion__, release)
for path in sys.argv[1:2]:
    for k in range(int(sys.argv[2])):
        d = netCDF4.Dataset(path, "a")
        n = len(d.dimensions["time"])
        d["time"][n] = 6.0 * n
        d["temp"][n, :] = [200.0 + n + 0.25 * j for j in range(4)]
        d["step"][n] = 10 * n + 1
        d.close()
"""

PY_READ = r"""
import json, sys
import netCDF4
d = netCDF4.Dataset(sys.argv[1])
print(json.dumps({k: d[k][:].filled(-1).tolist() for k in ("time", "temp", "step")}))
"""


def release_text():
    return ".".join(map(str, TOOL_RELEASE))


def in_process_env():
    return tools_release_in_process_env()


def make_records(d):
    cdl = os.path.join(d, "records.cdl")
    with open(cdl, "w") as f:
        f.write(RECORDS_CDL)
    nc = os.path.join(d, "records.nc")
    run(["ncgen", "-4", "-o", nc, cdl])
    return nc


def zarr_arrays(archive):
    """{array path: (shape, chunks, values)} as zarr-python reads the archive (any top directory)."""
    script = r"""
import json, sys, zarr
store = zarr.ZipStore(sys.argv[1], mode="r")
out = {}
def walk(g, prefix):
    for name, a in g.arrays():
        out[prefix + name] = [list(a.shape), list(a.chunks), a[...].tolist()]
    for name, sub in g.groups():
        walk(sub, prefix + name + "/")
tops = sorted((n[:-len(".zgroup")] for n in store.keys() if n.endswith(".zgroup")), key=len)
walk(zarr.open_group(store, path=tops[0], mode="r"), "")  # the dataset's root, "" or NCZarr's "name/"
print(json.dumps(out))
"""
    return json.loads(run([PYTHON, "-c", script, archive], env=NO_PLUGINS).stdout)


def long_chunk(arrays, name):
    """Asserts that the release's default chunk of the record variable `name` is longer than its records."""
    key = [k for k in arrays if k == name or k.endswith("/" + name)]
    assert len(key) == 1, (name, sorted(arrays))
    shape, chunks, _ = arrays[key[0]]
    assert chunks[0] > shape[0], "%s: chunk %s is not longer than the %d records: not the case tested" % (
        name, chunks, shape[0])
    return chunks[0]


def netcdf_values(path, plugin):
    env = in_process_env() if plugin else NO_PLUGINS
    return json.loads(run([PYTHON, "-c", PY_READ, path], env=env).stdout)


def data_section(dump):
    lines = normalized(dump)
    return lines[lines.index("data:"):]


def check_same_as_netcdf4(archive, nc, what):
    """ncdump's data section, netCDF4-python's and zarr-python's numbers: the archive's equal the file's."""
    want = data_section(ncdump(nc, plugin=False))
    check_equal(data_section(ncdump(archive)), want, "%s: ncdump data section against the netCDF-4 file" % what)
    plain = netcdf_values(nc, plugin=False)
    check_equal(netcdf_values(archive, plugin=True), plain, "%s: netCDF4-python values" % what)
    arrays = zarr_arrays(archive)
    got = {k.rsplit("/", 1)[-1]: v[2] for k, v in arrays.items()}
    check_equal({k: got[k] for k in plain}, plain, "%s: zarr-python values" % what)
    return arrays


def appends_with_c(path, count):
    for k in range(count):
        # One record of every record variable, at index = the current number of records. (A record
        # written to some variables only reads 0 in the others on netCDF-C 4.9.3+'s NCZarr, with or without
        # mmzip: their chunk, written whole, holds zeros there; a netCDF-4 file shows fill values.)
        run([NC_WRITER, "append-records", path, str(100 + k)], env=in_process_env() if path.endswith(".zip") else NO_PLUGINS)


def test_release_defaults_read_and_append():
    if TOOL_RELEASE < (4, 9, 3):
        print("netCDF-C %s: NCZarr without unlimited dimensions; the appends run with 4.9.3+" % release_text())
        return
    with TempDir() as d:
        nc = make_records(d)
        ours = os.path.join(d, "ours.zarr.zip")
        mmzip_run("nccopy", nc, ours)
        arrays = check_same_as_netcdf4(ours, nc, "nccopy through mmzip")
        print("netCDF-C %s default chunk of time(time): %d (3 records)" % (release_text(), long_chunk(arrays, "time")))
        long_chunk(arrays, "step")

        own = os.path.join(d, "own.zip")
        run(["nccopy", nc, zip_url(own)], env=NO_PLUGINS)
        long_chunk(check_same_as_netcdf4(own, nc, "netCDF-C's own zip backend"), "time")

        # netCDF4-python, APPENDS sessions of one record, into our archive, netCDF-C's and a netCDF-4 file.
        plain = os.path.join(d, "plain.nc")
        run(["cp", nc, plain])
        for target in (ours, own, plain):
            run([PYTHON, "-c", PY_APPEND, target, str(APPENDS), release_text()], env=in_process_env())
        want = netcdf_values(plain, plugin=False)
        check_equal(len(want["time"]), 3 + APPENDS, "records in the netCDF-4 file after the appends")
        check_equal(want["step"][-1], 10 * (2 + APPENDS) + 1, "last record appended to the netCDF-4 file")
        check_same_as_netcdf4(ours, plain, "our archive after %d netCDF4-python appends" % APPENDS)
        check_same_as_netcdf4(own, plain, "netCDF-C's own archive after %d netCDF4-python appends" % APPENDS)

        # A netCDF C program, APPENDS sessions of one record, into a fresh copy and a netCDF-4 file.
        c_ours, c_plain = os.path.join(d, "c.zarr.zip"), os.path.join(d, "c.nc")
        mmzip_run("nccopy", nc, c_ours)
        run(["cp", nc, c_plain])
        for target in (c_ours, c_plain):
            appends_with_c(target, APPENDS)
        values = netcdf_values(c_plain, plugin=False)
        check_equal(values["step"][3:], [100 + k for k in range(APPENDS)], "nc_writer's records in the netCDF-4 file")
        check_equal(values["temp"][-1], [149.0, 149.25, 149.5, 149.75], "nc_writer's last temp record")
        check_same_as_netcdf4(c_ours, c_plain, "our archive after %d nc_writer appends" % APPENDS)
        with zipfile.ZipFile(c_ours) as z:
            assert z.testzip() is None


# The NCZarr form netCDF-C 4.9.3 writes for records.nc's time(time) (its own zip backend), 3 records in a
# 1024-long chunk; what 4.9.0 is shown of an archive a newer release made.
NCZARR_493 = {
    "records/.zgroup": {"zarr_format": 2},
    "records/.zattrs": {"_NCProperties": "version=2,netcdf=4.9.3,nczarr=2.0.0",
                        "_nczarr_group": {"dimensions": {"time": {"size": 3, "unlimited": 1}}, "arrays": ["time"],
                                          "groups": []},
                        "_nczarr_superblock": {"version": "2.0.0"},
                        "_nczarr_attr": {"types": {"_NCProperties": ">S1", "_nczarr_group": "|J0",
                                                   "_nczarr_superblock": "|J0", "_nczarr_attr": "|J0"}}},
    "records/time/.zarray": {"zarr_format": 2, "shape": [3], "dtype": "<i4", "chunks": [1024], "fill_value": None,
                             "order": "C", "compressor": None, "filters": None},
    "records/time/.zattrs": {"_ARRAY_DIMENSIONS": ["time"],
                             "_nczarr_array": {"dimension_references": ["/time"], "storage": "chunked"},
                             "_nczarr_attr": {"types": {"_nczarr_array": "|J0", "_nczarr_attr": "|J0"}}},
}


def test_newer_release_records_and_nccopy_u():
    with TempDir() as d:
        archive = os.path.join(d, "records.zip")
        chunk = np.full(1024, -2147483647, dtype="<i4")  # netCDF's int fill past the records
        chunk[:3] = [1, 2, 3]
        with zipfile.ZipFile(archive, "w") as z:
            for name, doc in NCZARR_493.items():
                z.writestr(name, json.dumps(doc))
            z.writestr("records/time/0", chunk.tobytes())
        dump = ncdump(archive)
        assert "time = 1, 2, 3 ;" in dump, "a 4.9.3 archive's records (chunk 1024) on %s:\n%s" % (release_text(), dump)
        check_equal(zarr_arrays(archive)["time"][2], [1, 2, 3], "zarr-python reads the fixture")
        if TOOL_RELEASE >= (4, 9, 3):
            return
        nc = make_records(d)
        out = os.path.join(d, "copy.zarr.zip")
        p = mmzip_run("nccopy", nc, out, check=False)
        assert p.returncode != 0, "4.9.0's nccopy of a dataset with records succeeded:\n%s" % p.stdout
        assert not os.path.exists(out), "a failed nccopy left %s" % out
        mmzip_run("nccopy", "-u", nc, out)
        check_same_as_netcdf4(out, nc, "nccopy -u on %s" % release_text())


if __name__ == "__main__":
    main([test_release_defaults_read_and_append, test_newer_release_records_and_nccopy_u])
