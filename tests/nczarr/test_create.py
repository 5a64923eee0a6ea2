"""Point 2: `mmzip run nccopy in.nc OUT` creates an archive for the three ways of naming it: a bare path
ending in .zip, file:///...#mode=nczarr,zip and file:///...#mode=zarr,zip. Each archive passes zipfile,
`unzip -t` and `7z t`; zarr-python reads every array with the values and attributes of in.nc; and
`nccopy OUT back.nc` round-trips the values. Mode lists that would hang netCDF-C 4.9.0 (zarr last) are
made safe, and what is created keeps its keys at the archive root."""
import hashlib
import os
import zipfile

import numpy as np

from mmzip_testlib import BUILD, PYTHON, TempDir, check_equal, main, mmzip_run, run, zip_tools_ok
from nczarr_testlib import SUPERBLOCK, make_sample_nc, netcdf_read_all, zarr_read_all

# Attributes that NCZarr keeps for itself or that zarr-python shows although netCDF does not.
NCZARR_ONLY_ATTRIBUTES = {"_ARRAY_DIMENSIONS", "_NCZARR_ATTR", "_FillValue"}


def same_values(got, want, what):
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or not np.array_equal(g, w):
        raise AssertionError("%s: values differ:\n got %r\nwant %r" % (what, got, want))


def check_with_zarr_python(archive, expected, what):
    arrays = zarr_read_all(archive)
    check_equal(sorted(arrays), sorted(expected), "%s: arrays zarr-python finds" % what)
    for name, (values, attrs) in expected.items():
        got_values, got_attrs = arrays[name]
        same_values(got_values, values, "%s: zarr-python %s" % (what, name))
        for key, value in attrs.items():
            if key in NCZARR_ONLY_ATTRIBUTES:
                continue
            got = got_attrs.get(key)
            # netCDF vector attributes are lists; a one-element one is a scalar in Zarr.
            if isinstance(value, list) and len(value) == 1:
                value = value[0]
            if isinstance(got, list) and len(got) == 1:
                got = got[0]
            check_equal(got, value, "%s: zarr-python attribute %s:%s" % (what, name, key))


def check_round_trip(archive, expected, work, what):
    back = os.path.join(work, os.path.basename(archive) + ".back.nc")
    mmzip_run("nccopy", archive, back)
    got = netcdf_read_all(back)
    check_equal(sorted(got), sorted(expected), "%s: variables after nccopy back to netCDF-4" % what)
    for name, (values, attrs) in expected.items():
        same_values(got[name][0], values, "%s: round trip of %s" % (what, name))
        check_equal(got[name][1], attrs, "%s: attributes of %s after the round trip" % (what, name))


def test_three_forms():
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "in.nc"))
        expected = netcdf_read_all(nc)
        forms = [
            ("bare path", os.path.join(d, "bare.zarr.zip"), None),
            ("#mode=nczarr,zip", os.path.join(d, "nczarr.zarr.zip"), "nczarr,zip"),
            ("#mode=zarr,zip", os.path.join(d, "zarr.zarr.zip"), "zarr,zip"),
            # Would loop forever in netCDF-C 4.9.0 (zarr last); the plugin puts zip last.
            ("#mode=zip,zarr", os.path.join(d, "reordered.zarr.zip"), "zip,zarr"),
        ]
        for what, path, mode in forms:
            target = path if mode is None else "file://%s#mode=%s" % (path, mode)
            mmzip_run("nccopy", nc, target, timeout=120)
            names = zip_tools_ok(path)
            assert ".zgroup" in names and "temp/.zarray" in names, "%s: keys not at the archive root: %r" % (
                what, names)
            assert not any(n.endswith("/") for n in names), "%s: directory entries in %r" % (what, names)
            check_with_zarr_python(path, expected, what)
            check_round_trip(path, expected, d, what)


def test_nczarr_and_zarr_metadata():
    """mode=nczarr keeps netCDF's dimensions and attribute types; mode=zarr writes plain Zarr."""
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "in.nc"))
        nczarr = os.path.join(d, "a.zarr.zip")
        pure = os.path.join(d, "b.zarr.zip")
        mmzip_run("nccopy", nc, nczarr)
        mmzip_run("nccopy", nc, "file://%s#mode=zarr,zip" % pure)
        with zipfile.ZipFile(nczarr) as z:
            assert SUPERBLOCK[1] in z.read(SUPERBLOCK[0]), z.read(SUPERBLOCK[0])
        with zipfile.ZipFile(pure) as z:
            for name in (".zgroup", "temp/.zarray") + ((".zattrs", "temp/.zattrs") if ".zattrs" in z.namelist() else ()):
                assert b"_nczarr" not in z.read(name).lower(), (name, z.read(name))


LARGE_CHUNKS = r"""
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1], "w")
d.createDimension("t", 6)
d.createDimension("y", 700)
d.createDimension("x", 800)
v = d.createVariable("field", "f8", ("t", "y", "x"), chunksizes=(2, 700, 800))
v[:] = np.arange(6 * 700 * 800, dtype="f8").reshape(6, 700, 800) * 0.5
d.close()
"""


def test_large_chunks_round_trip():
    """Chunks of several MiB (read with pread rather than through the mapping) come back exactly."""
    with TempDir() as d:
        src = os.path.join(d, "large.nc")
        run([PYTHON, "-c", LARGE_CHUNKS, src])
        archive = os.path.join(d, "large.zarr.zip")
        mmzip_run("nccopy", src, archive)
        back = os.path.join(d, "back.nc")
        mmzip_run("nccopy", archive, back)
        check = ("import sys, numpy as np, netCDF4\n"
                 "a = netCDF4.Dataset(sys.argv[1])['field'][:]\n"
                 "b = netCDF4.Dataset(sys.argv[2])['field'][:]\n"
                 "assert a.shape == (6, 700, 800) and np.array_equal(a, b), 'values differ'\n"
                 "print(float(b[5, 699, 799]))")
        out = run([PYTHON, "-c", check, src, back]).stdout.strip()
        check_equal(out, str((6 * 700 * 800 - 1) * 0.5), "last value after the round trip")


def test_overwrite_replaces():
    """nccopy onto an existing archive replaces it (NC_CLOBBER), leaving nothing of the old one."""
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "in.nc"))
        path = os.path.join(d, "x.zarr.zip")
        mmzip_run("nccopy", nc, "file://%s#mode=zarr,zip" % path)
        mmzip_run("nccopy", nc, path)
        with zipfile.ZipFile(path) as z:
            assert SUPERBLOCK[1] in z.read(SUPERBLOCK[0]), z.read(SUPERBLOCK[0])
            check_equal(len(z.namelist()), len(set(z.namelist())), "distinct names")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_abort_of_a_create():
    """nc_abort of an nc_create: before anything was published the path is left as it was (no file, or the
    archive the create was to replace, byte-identical); after an nc_sync published the new dataset, the
    archive is removed, as netCDF does for its own formats."""
    writer = os.path.join(BUILD, "tests", "nczarr", "nc_writer")
    with TempDir() as d:
        fresh = os.path.join(d, "fresh.zarr.zip")
        mmzip_run(writer, "abort-create", fresh, "nosync")
        check_equal(os.path.exists(fresh), False, "a fresh create aborted before any sync leaves no file")

        existing = os.path.join(d, "existing.zarr.zip")
        mmzip_run("nccopy", make_sample_nc(os.path.join(d, "in.nc")), existing)
        before = sha256(existing)
        mmzip_run(writer, "abort-create", existing, "nosync")
        check_equal(sha256(existing), before, "an aborted create leaves the archive it was to replace intact")
        check_equal(zipfile.ZipFile(existing).testzip(), None, "testzip of the untouched archive")

        # netCDF-C 4.9.0 writes a new variable's .zarray only at close, so this nc_sync publishes nothing
        # (the group would list an array without metadata) and the old archive must survive; a netCDF-C whose
        # sync does publish must see the archive removed. Never anything in between.
        mmzip_run(writer, "abort-create", existing, "sync")
        if os.path.exists(existing):
            check_equal(sha256(existing), before, "an aborted create whose sync published nothing")


if __name__ == "__main__":
    main([test_three_forms, test_nczarr_and_zarr_metadata, test_large_chunks_round_trip, test_overwrite_replaces,
          test_abort_of_a_create])
