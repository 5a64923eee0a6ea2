"""Point 8: NCO's ncks and cdo on a .zarr.zip under `mmzip run`, compared with the same tools on the same
data in netCDF-C's directory store.
  - ncks -m (metadata) and ncks -H -v (values) work with a bare path and with the URL;
  - cdo sinfo works with the file:// URL. cdo identifies files by their first bytes before netCDF-C sees
    them and does not know a ZIP signature, so a bare path is refused by cdo itself ("Unsupported file
    type"); docs/netcdf-guide.md says so, and this test keeps that statement true."""
import os
import shutil

from mmzip_testlib import TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import dir_url, normalized, sample_archive, zip_url


def test_ncks():
    with TempDir() as d:
        nc, archive = sample_archive(d)
        store = os.path.join(d, "store.zarr")
        run(["nccopy", nc, dir_url(store)])
        for options in (["-m"], ["-H", "-v", "temp,lon"], ["-M", "-m"]):
            want = run(["ncks"] + options + [dir_url(store)]).stdout
            assert "temp" in want or "title" in want, want
            for name in (archive, zip_url(archive)):
                got = mmzip_run("ncks", *(options + [name])).stdout
                check_equal(normalized(got), normalized(want), "ncks %s %s" % (" ".join(options), name))


def test_cdo():
    if not shutil.which("cdo"):
        raise AssertionError("cdo is not installed (it is in .ci/deps)")
    with TempDir() as d:
        nc, archive = sample_archive(d)
        store = os.path.join(d, "store.zarr")
        run(["nccopy", nc, dir_url(store)])
        want = run(["cdo", "-s", "sinfo", dir_url(store)])
        got = mmzip_run("cdo", "-s", "sinfo", zip_url(archive))
        check_equal(got.stdout, want.stdout, "cdo sinfo of the URL")
        assert "F32" in got.stdout and "points=28" in got.stdout, got.stdout
        bare = mmzip_run("cdo", "-s", "sinfo", archive, check=False)
        assert bare.returncode != 0 and "Unsupported file type" in bare.stdout + bare.stderr, \
            "cdo now opens a bare .zip path; update docs/netcdf-guide.md:\n" + bare.stdout + bare.stderr


if __name__ == "__main__":
    main([test_ncks, test_cdo])
