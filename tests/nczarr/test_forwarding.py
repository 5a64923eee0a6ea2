"""Point 7 (the tool side; the ABI dispatch per netCDF-C version is nczarr_abi_*): everything that is not
a zip dataset is forwarded untouched, so under `mmzip run` netCDF-C's own directory and S3 maps, and plain
netCDF files, behave exactly as without the plugin; .zip archives without Zarr metadata and HDF5 member
paths ("a.zip#/x.nc") are passed on unchanged to whatever comes next (the HDF5 driver, or libnetcdf); an
"#/" address that names nothing, and a .zip that holds neither Zarr nor an HDF5 member, get one more line saying
so (issues 15 and 23)."""
import os
import zipfile

from mmzip_testlib import TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import dir_url, make_sample_nc, ncdump, normalized, preload_only_nczarr


def same_outcome(cmd, what, env=None):
    """cmd gives the same exit status, stdout and stderr with and without the plugin."""
    plain = run(cmd, check=False)
    through = run(cmd, check=False, env=env or preload_only_nczarr())
    check_equal((through.returncode, through.stdout, through.stderr), (plain.returncode, plain.stdout, plain.stderr),
                what)
    return plain


def test_directory_store_and_netcdf4_unchanged():
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        # Created through the plugin: netCDF-C's own directory map did it, a directory tree results.
        store = os.path.join(d, "store.zarr")
        mmzip_run("nccopy", nc, dir_url(store))
        assert os.path.isdir(store) and os.path.isfile(os.path.join(store, ".zgroup")), "no directory store made"
        for options in (["-h"], []):
            want = ncdump(dir_url(store), *options, plugin=False)
            check_equal(ncdump(dir_url(store), *options), want, "ncdump %s of a directory store" % options)
            check_equal(ncdump(nc, *options), ncdump(nc, *options, plugin=False), "ncdump %s of netCDF-4" % options)
        # A directory store written without the plugin is byte-identical to one written through it.
        plain_store = os.path.join(d, "plain.zarr")
        run(["nccopy", nc, dir_url(plain_store)])
        for root, _, files in os.walk(plain_store):
            for f in files:
                rel = os.path.relpath(os.path.join(root, f), plain_store)
                with open(os.path.join(plain_store, rel), "rb") as a, open(os.path.join(store, rel), "rb") as b:
                    check_equal(b.read(), a.read(), "directory store object %s" % rel)


def test_other_maps_and_paths_forwarded():
    with TempDir() as d:
        # The S3 map (not built into Debian's netCDF-C): the library's own answer, unchanged.
        p = same_outcome(["ncdump", "-h", "file://%s/x.zarr#mode=nczarr,s3" % d], "the S3 map")
        assert p.returncode != 0
        # A .zip without Zarr metadata goes on to libnetcdf (or the HDF5 driver) as it was given: netCDF's own
        # outcome, after one line saying why it cannot be opened (issue 23).
        archive = os.path.join(d, "notes.zip")
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr("readme.txt", "no zarr here")
        cmd = ["ncdump", "-h", archive]
        plain, through = run(cmd, check=False), run(cmd, check=False, env=preload_only_nczarr())
        check_equal((through.returncode, through.stdout), (plain.returncode, plain.stdout), "a zip without Zarr")
        first, rest = through.stderr.split("\n", 1)
        check_equal(rest, plain.stderr, "netCDF's message for a zip without Zarr")
        assert "Unknown file format" in rest, rest
        assert first.startswith("mmzip_nczarr: ") and "holding no Zarr metadata" in first, first
        # An "#/" address naming nothing in the archive (issue 15): netCDF's own outcome, after one line
        # saying what the address could have named (an HDF5 member or a Zarr group) and what is there.
        cmd = ["ncdump", "-h", archive + "#/member.nc"]
        plain, through = run(cmd, check=False), run(cmd, check=False, env=preload_only_nczarr())
        check_equal((through.returncode, through.stdout), (plain.returncode, plain.stdout), "an absent member path")
        first, rest = through.stderr.split("\n", 1)
        check_equal(rest, plain.stderr, "netCDF's message for an absent member path")
        for words in ("HDF5 member", "Zarr group", "holds nothing: no member 'member.nc'"):
            if words not in first:
                raise AssertionError("%r not in the plugin's message: %s" % (words, first))
        # A missing file: the same message as without the plugin.
        same_outcome(["ncdump", "-h", os.path.join(d, "missing.zarr.zip")], "a missing .zip")


def test_hdf5_member_reaches_the_hdf5_driver():
    """With the HDF5 driver preloaded after this plugin (as `mmzip run` does), a .zip holding a netCDF-4
    member and no Zarr opens through the driver: this plugin passed the path on."""
    if not os.path.exists(os.path.join(os.environ["MMZIP_LIBDIR"], "libmmzip_h5fd.so")):
        print("the HDF5 driver is not built (MMZIP_BUILD_HDF5=OFF): nothing to pass on to")
        return
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        archive = os.path.join(d, "member.zip")
        with zipfile.ZipFile(archive, "w") as z:
            z.write(nc, "sample.nc")
        want = normalized(ncdump(nc, "-h", plugin=False))
        for name in (archive, archive + "#/sample.nc"):
            check_equal(normalized(ncdump(name, "-h")), want, "ncdump -h %s under mmzip run" % name)


if __name__ == "__main__":
    main([test_directory_store_and_netcdf4_unchanged, test_other_maps_and_paths_forwarded,
          test_hdf5_member_reaches_the_hdf5_driver])
