"""Issue 13, point 6 (the part done): a netCDF-3 member is not HDF5. h5py through the driver and ncdump under
`mmzip run` must say so - naming the format - instead of "file signature not found" or "No such file or
directory", which read like a wrong name. (VDS sources and external links beside the archive: test_references.py.)"""
import os
import subprocess

import numpy as np
import netCDF4
import h5py
import mmzip

from mmzip_testlib import MMZIP, TempDir, main


def test_netcdf3_member_is_named_as_such():
    mmzip.register_h5py()
    with TempDir() as d:
        for fmt, kind in (("NETCDF3_CLASSIC", "netCDF-3 classic"), ("NETCDF3_64BIT_OFFSET", "netCDF-3 64-bit offset")):
            nc = os.path.join(d, "c.nc")
            with netCDF4.Dataset(nc, "w", format=fmt) as ds:
                ds.createDimension("x", 3)
                ds.createVariable("v", "f4", ("x",))[:] = [1, 2, 3]
            arc = os.path.join(d, fmt + ".zip")
            subprocess.run([MMZIP, "put", arc, "c.nc", nc], check=True)
            try:
                h5py.File(arc, "r", driver="mmzip", member="c.nc")
            except OSError as e:
                if ("'c.nc' is a %s file, not HDF5" % kind) not in str(e):
                    raise AssertionError("h5py's error does not name the format: %s" % e)
            else:
                raise AssertionError("a netCDF-3 member opened as HDF5")
            p = subprocess.run([MMZIP, "run", "ncdump", "-h", arc + "#/c.nc"], capture_output=True, text=True)
            if p.returncode == 0 or ("is a %s file, not HDF5" % kind) not in p.stderr:
                raise AssertionError("ncdump under mmzip run: exit %d, stderr:\n%s" % (p.returncode, p.stderr))
            # The member itself is intact: extracted, netCDF reads it.
            out = os.path.join(d, "out.nc")
            with open(out, "wb") as fh:
                subprocess.run([MMZIP, "cat", arc, "c.nc"], stdout=fh, check=True)
            with netCDF4.Dataset(out) as ds:
                if not np.array_equal(ds["v"][:], [1, 2, 3]):
                    raise AssertionError("extracted values differ")


if __name__ == "__main__":
    main([test_netcdf3_member_is_named_as_such])
