"""Floating-point attributes and fill values keep their value through the plugin.

netCDF-C (every release from 4.9.0 to 4.10.1) renders them as JSON with "%lg", six significant digits: a
double attribute of 0.0123456789 was stored as 0.0123457, and the default fill value of a double variable as
9.96921e+36, which is not the fill value, so a missing chunk of a partly written variable read back as
9.96921e+36, unmasked, in netCDF4-python and ncdump (exit status 0; an outside review). The plugin renders
them with the digits that read back as the same number (interposition/number_interpose.c).

Checked three ways: netCDF4-python through the plugin against the same program on a netCDF-4 file; zarr-python
(which nobody here wrote) reading the archive's JSON; and nccopy of a file ncgen made, through ncdump."""
import json
import os

from mmzip_testlib import PYTHON, TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import cdl_archive, ncdump

WRITE = r"""
import sys, mmzip
mmzip.enable_netcdf()
import json, netCDF4, numpy as np
path = sys.argv[1]
with netCDF4.Dataset(path, "w") as ds:
    ds.createDimension("x", 7)
    ds.setncattr("third", np.float64(1) / 3)
    ds.setncattr("series", np.array([0.0123456789, 2.0 / 3, 1e-300, 123456789.123, -7.25]))
    ds.setncattr("single", np.float32(0.1234567))
    ds.setncattr("singles", np.array([0.1234567, 3.4028235e38, 1.0e-7], dtype="f4"))
    ds.setncattr("big_integral", np.float64(1234567.0))
    ds.setncattr("specials", np.array([np.nan, np.inf, -np.inf, 0.5]))
    d = ds.createVariable("d", "f8", ("x",), chunksizes=(3,))                        # netCDF's default fill
    d[5:7] = [1.5, 2.5]
    f = ds.createVariable("f", "f4", ("x",), chunksizes=(3,), fill_value=np.float32(0.1234567))
    f[5:7] = [1.5, 2.5]
    e = ds.createVariable("e", "f8", ("x",), chunksizes=(3,), fill_value=1.2345678901234567)
    e[5:7] = [1.5, 2.5]
    e.scale_factor = 0.0123456789
    e.valid_range = np.array([-1.0000001, 1.0000001])
out = {}
with netCDF4.Dataset(path) as ds:
    out["attrs"] = {k: np.asarray(ds.getncattr(k)).tolist() for k in ds.ncattrs()}
    for name in ("d", "f", "e"):
        v = ds[name]
        v.set_auto_maskandscale(False)
        out[name] = [np.asarray(v[:]).tolist(), {k: np.asarray(v.getncattr(k)).tolist() for k in v.ncattrs()}]
        v.set_auto_maskandscale(True)
        out[name + " masked"] = np.ma.getmaskarray(v[:]).tolist()
print(json.dumps(out, sort_keys=True))
"""

CDL = r"""netcdf digits {
dimensions:
  x = 4 ;
variables:
  double v(x) ;
    v:scale_factor = 0.0123456789 ;
    v:_FillValue = 1.2345678901234567 ;
  float w(x) ;
    w:add_offset = 0.1234567f ;
// global attributes:
    :third = 0.333333333333333 ;
data:
  v = 1, _, 3, _ ;
  w = 1, 2, 3, 4 ;
}
"""

ZARR_READ = r"""
import json, sys, zarr
g = zarr.open_group(zarr.ZipStore(sys.argv[1], mode="r"), mode="r")
out = {"attrs": dict(g.attrs)}
for name in ("d", "f", "e"):
    out[name] = [g[name].fill_value.item(), g[name][:].tolist(), dict(g[name].attrs)]
print(json.dumps(out, sort_keys=True))
"""


def test_netcdf4_python_values():
    with TempDir() as d:
        got = {}
        for suffix in ("nc", "zarr.zip"):
            path = os.path.join(d, "digits." + suffix)
            got[suffix] = json.loads(mmzip_run(PYTHON, "-c", WRITE, path).stdout)
        want = got["nc"]
        check_equal(want["attrs"]["third"], 1 / 3, "control: the netCDF-4 file's attribute")
        check_equal(want["d"][0][:3], [9.969209968386869e36] * 3, "control: netCDF's default fill in the file")
        for key in sorted(want):
            if key == "attrs":
                for name in sorted(want["attrs"]):
                    check_equal(json.dumps(got["zarr.zip"]["attrs"][name]), json.dumps(want["attrs"][name]),
                                "global attribute %s through the plugin" % name)
            else:
                check_equal(got["zarr.zip"][key], want[key], "variable %s through the plugin" % key)

        archive = os.path.join(d, "digits.zarr.zip")
        z = json.loads(run([PYTHON, "-c", ZARR_READ, archive]).stdout)
        check_equal(z["attrs"]["third"], 1 / 3, "zarr-python: a double attribute")
        check_equal(z["attrs"]["series"], [0.0123456789, 2.0 / 3, 1e-300, 123456789.123, -7.25],
                    "zarr-python: a double array attribute")
        check_equal(z["attrs"]["big_integral"], 1234567.0, "zarr-python: an integral double (%lg: 1.23457e+06)")
        check_equal(z["attrs"]["specials"][3], 0.5, "zarr-python: the finite value after NaN and infinities")
        import numpy as np
        check_equal(np.float32(z["attrs"]["single"]), np.float32(0.1234567), "zarr-python: a float attribute")
        check_equal([np.float32(x) for x in z["attrs"]["singles"]],
                    [np.float32(x) for x in (0.1234567, 3.4028235e38, 1.0e-7)], "zarr-python: float array attribute")
        check_equal(z["d"][0], 9.969209968386869e36, "zarr-python: the default fill value of a double array")
        check_equal(z["d"][1], [9.969209968386869e36] * 5 + [1.5, 2.5], "zarr-python: d, missing chunk included")
        check_equal(z["e"][0], 1.2345678901234567, "zarr-python: a double fill value")
        check_equal(z["e"][2]["scale_factor"], 0.0123456789, "zarr-python: a variable's double attribute")
        check_equal(np.float32(z["f"][0]), np.float32(0.1234567), "zarr-python: a float fill value")


def test_nccopy_of_a_file_ncgen_made():
    with TempDir() as d:
        nc, archive = cdl_archive(d, "digits", CDL)
        want = [line for line in run(["ncdump", nc]).stdout.splitlines()[1:] if "_NCProperties" not in line]
        got = [line for line in ncdump(archive).splitlines()[1:]]
        for line in want:
            if "=" in line and ("scale_factor" in line or "add_offset" in line or "third" in line
                                or "_FillValue" in line or line.strip().startswith("v =")):
                assert line in got, "line %r of the file's dump missing from the archive's:\n%s" % (
                    line, "\n".join(got))


if __name__ == "__main__":
    main([test_netcdf4_python_values, test_nccopy_of_a_file_ncgen_made])
