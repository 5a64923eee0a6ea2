"""Point 8: NCO's ncks and cdo on a .zarr.zip under `mmzip run`, compared with the same tools on the same
data in netCDF-C's directory store.
  - ncks -m (metadata) and ncks -H -v (values) work with a bare path and with the URL;
  - cdo sinfo works with the file:// URL. cdo identifies files by their first bytes before netCDF-C sees
    them and does not know a ZIP signature, so a bare path is refused by cdo itself ("Unsupported file
    type"); docs/netcdf-guide.md says so, and this test keeps that statement true."""
import os
import shutil

from mmzip_testlib import TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import DEBIAN_RELEASE, TOOL_RELEASE, dir_url, make_sample_nc, normalized, zip_url

# NCO and cdo are Debian's, linked to Debian's netCDF-C 4.9.0 whatever MMZIP_NETCDF_PREFIX says: their inputs
# are made with the nccopy of that same release (4.9.0 cannot read the NCZarr metadata 4.9.3+ write).
NCCOPY = "nccopy" if TOOL_RELEASE == DEBIAN_RELEASE else "/usr/bin/nccopy"


def _inputs(d):
    """The sample as a netCDF-4 file, an archive and a directory store, both written by NCCOPY."""
    if NCCOPY != "nccopy":
        print("netCDF-C %s tools: NCO and cdo (Debian's, 4.9.0) read what Debian's nccopy wrote" % (TOOL_RELEASE,))
    nc = make_sample_nc(os.path.join(d, "sample.nc"))
    archive, store = os.path.join(d, "ours.zarr.zip"), os.path.join(d, "store.zarr")
    mmzip_run(NCCOPY, nc, archive)
    run([NCCOPY, nc, dir_url(store)])
    return nc, archive, store


def test_ncks():
    with TempDir() as d:
        nc, archive, store = _inputs(d)
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
        nc, archive, store = _inputs(d)
        want = run(["cdo", "-s", "sinfo", dir_url(store)])
        got = mmzip_run("cdo", "-s", "sinfo", zip_url(archive))
        check_equal(got.stdout, want.stdout, "cdo sinfo of the URL")
        assert "F32" in got.stdout and "points=28" in got.stdout, got.stdout
        bare = mmzip_run("cdo", "-s", "sinfo", archive, check=False)
        assert bare.returncode != 0 and "Unsupported file type" in bare.stdout + bare.stderr, \
            "cdo now opens a bare .zip path; update docs/netcdf-guide.md:\n" + bare.stdout + bare.stderr


if __name__ == "__main__":
    main([test_ncks, test_cdo])
