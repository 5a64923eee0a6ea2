"""Point 1: `mmzip run ncdump` (-h, -v and full data) on the three kinds of archive gives exactly what
ncdump gives for the same data in netCDF-C's built-in directory store (only the dataset name line may
differ):
  - a .zarr.zip that we wrote (mmzip run nccopy);
  - a zarr-python ZipStore with groups and int/float arrays, uncompressed (keys at the archive root);
  - NCZarr's own layout: `zip -r` of an NCZarr directory store (one top directory named after the store).
Each is named both by a bare path and by the file:// URL with #mode=nczarr,zip."""
import os

from mmzip_testlib import TempDir, main, mmzip_run
from nczarr_testlib import (assert_same_dump, dir_url, make_sample_nc, make_zarr_python, ncdump, sample_archive,
                            zip_directory, zip_url)

DUMP_OPTIONS = (["-h"], ["-v", "temp,lon"], [])
ZARR_PYTHON_OPTIONS = (["-h"], ["-v", "elevation,counts"], [])


def compare(archive, reference, options_list, what, view_fill=None):
    """view_fill: the line the compatibility view adds (a Zarr fill_value shown as _FillValue, as xarray's
    reader does), checked and then left out of the comparison with netCDF-C's own reading."""
    for options in options_list:
        want = ncdump(reference, *options, plugin=False)
        for name in (archive, zip_url(archive)):
            got = ncdump(name, *options)
            if view_fill:  # the header, which every form of ncdump prints
                assert view_fill + "\n" in got, "%s: %r missing from\n%s" % (what, view_fill, got)
                got = got.replace(view_fill + "\n", "")
            assert_same_dump(got, want, "%s, ncdump %s %s" % (what, " ".join(options), name))


def test_archive_we_wrote():
    with TempDir() as d:
        nc, archive = sample_archive(d)
        reference = os.path.join(d, "reference.zarr")
        mmzip_run("nccopy", nc, dir_url(reference))
        compare(archive, dir_url(reference), DUMP_OPTIONS, "archive written by mmzip run nccopy")
        # The data really is the sample's: the reference dump equals ncdump of the netCDF-4 file.
        assert_same_dump(ncdump(archive), ncdump(nc, plugin=False), "nccopy output against its input")


def test_zarr_python_zipstore():
    with TempDir() as d:
        archive = make_zarr_python(os.path.join(d, "zp.zarr.zip"), "zip")
        reference = make_zarr_python(os.path.join(d, "zp_reference.zarr"), "dir")
        compare(archive, dir_url(reference), ZARR_PYTHON_OPTIONS, "zarr-python ZipStore",
                view_fill="\t\televation:_FillValue = -1. ;")
        full = ncdump(archive)
        for needle in ("group: sensors", "group: raw", "elevation =", "-3, -1.75", "site = \"north\""):
            assert needle in full, "ncdump of the zarr-python archive lacks %r:\n%s" % (needle, full)


def test_nczarr_own_layout():
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        store = os.path.join(d, "own.zarr")
        mmzip_run("nccopy", nc, dir_url(store))
        archive = zip_directory(store, os.path.join(d, "own.zarr.zip"))
        compare(archive, dir_url(store), DUMP_OPTIONS, "zip -r of an NCZarr directory store")
        # The dataset directory comes from the archive's first entry, not from its file name.
        renamed = os.path.join(d, "renamed.zip")
        os.rename(archive, renamed)
        assert_same_dump(ncdump(renamed), ncdump(dir_url(store), plugin=False), "renamed NCZarr-layout archive")


if __name__ == "__main__":
    main([test_archive_we_wrote, test_zarr_python_zipstore, test_nczarr_own_layout])
