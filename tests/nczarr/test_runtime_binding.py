"""Point 6 of issue 11: the plugin links no libnetcdf soname and binds at run time to the libnetcdf of the
process. readelf shows no libnetcdf in its DT_NEEDED list and no netCDF-C symbol among its undefined ones;
preloaded into the netCDF tools on PATH (Debian's 4.9.0, or a -DMMZIP_NETCDF_PREFIX install such as
4.9.3 / 4.10.1 with libnetcdf.so.22) it reports the version `nc-config --version` states and reads the
values back; preloaded into a program without libnetcdf it changes nothing."""
import os
import re

import nczarr_testlib  # noqa: F401  (in the ASan build, re-runs this test with the sanitizer runtime preloaded)
from mmzip_testlib import BUILD, TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import cdl_archive

PLUGIN = os.path.join(BUILD, "lib", "libmmzip_nczarr.so")

CDL = """netcdf b {
dimensions:
  x = 5 ;
variables:
  int v(x) ;
    v:units = "m" ;
data:
  v = 3, 1, 4, 1, 5 ;
}
"""


def test_no_libnetcdf_needed():
    dynamic = run(["readelf", "-d", PLUGIN]).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
    assert needed, "readelf printed no NEEDED entry:\n" + dynamic
    bad = [n for n in needed if n.startswith("libnetcdf")]
    check_equal(bad, [], "libnetcdf sonames in the plugin's NEEDED list %r" % needed)
    undefined = run(["nm", "-D", "--undefined-only", PLUGIN]).stdout.split()
    netcdf = sorted(s for s in undefined if s.startswith(("nc_", "nc4_", "nclist", "NC")))
    check_equal(netcdf, [], "netCDF-C symbols the plugin leaves to the dynamic linker")


def test_binds_to_the_tools_libnetcdf():
    version = run(["nc-config", "--version"]).stdout.split()[1]
    with TempDir() as d:
        nc, archive = cdl_archive(d, "b", CDL)
        env = dict(os.environ, MMZIP_NCZARR_TRACE="1")
        r = mmzip_run("ncdump", "-v", "v", archive, env=env)
        bound = re.findall(r"bound to the process's netCDF-C ([^\s:]+)", r.stderr)
        check_equal(bound[:1], [version], "netCDF-C version the plugin bound to (nc-config --version says %s)" % version)
        data = re.search(r"v = ([^;]*);", r.stdout)
        assert data, "no data in ncdump's output:\n" + r.stdout
        check_equal([int(x) for x in data.group(1).split(",")], [3, 1, 4, 1, 5], "values through the plugin")
    # A program without libnetcdf: the plugin loads, binds nothing, and the program runs unchanged.
    r = mmzip_run("sh", "-c", "echo alive")
    check_equal(r.stdout.strip(), "alive", "a preloaded program without libnetcdf")
    check_equal(r.stderr, "", "stderr of a preloaded program without libnetcdf")


if __name__ == "__main__":
    main([test_no_libnetcdf_needed, test_binds_to_the_tools_libnetcdf])
