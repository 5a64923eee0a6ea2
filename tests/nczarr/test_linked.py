"""Enabling by linking (docs/netcdf-guide.md, section 1): a C program linked with libmmzip_nczarr before
libnetcdf opens and updates a .zarr.zip by its bare path with no LD_PRELOAD, and its DT_NEEDED list has the
plugin first."""
import os

from mmzip_testlib import BUILD, TempDir, check_equal, main, run
from nczarr_testlib import NO_PLUGINS, cdl_archive, zarr_read_all

LINKED = os.path.join(BUILD, "tests", "nczarr", "nc_writer_linked")

CDL = """netcdf upd {
dimensions:
  r = 6 ;
  c = 8 ;
  k = 10 ;
variables:
  int grid(r, c) ;
    grid:_ChunkSizes = 3, 4 ;
  double line(k) ;
data:
  grid = %s ;
  line = %s ;
}
""" % (", ".join(str(i) for i in range(48)), ", ".join(str(i) for i in range(10)))


def test_linked_program():
    dynamic = run(["readelf", "-d", LINKED]).stdout.splitlines()
    needed = [line.split("[")[1].rstrip("]") for line in dynamic if "NEEDED" in line]
    plugin = next(i for i, n in enumerate(needed) if n.startswith("libmmzip_nczarr"))
    netcdf = next(i for i, n in enumerate(needed) if n.startswith("libnetcdf"))
    assert plugin < netcdf, "the plugin must come before libnetcdf: %r" % needed
    with TempDir() as d:
        nc, archive = cdl_archive(d, "upd", CDL)
        run([LINKED, "put-one", archive, "grid"], env=NO_PLUGINS)
        grid = zarr_read_all(archive)["grid"][0]
        check_equal(grid[0][:3], [12345, 1, 2], "grid[0] after the linked program's put")


if __name__ == "__main__":
    main([test_linked_program])
