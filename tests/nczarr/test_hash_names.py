"""Names holding '#', "#/", spaces and non-ASCII on the netCDF routes: ncdump and nccopy under `mmzip run`
(the storage map's routing) and netCDF4-python after mmzip.enable_netcdf(). Every name is read by the rule
all routes share (mmzip_split_name, mmzip.h): "we#ird.zip" is that file (netCDF-C used to say "Unknown file
format"), "d#/x.zip" is that file and never an archive "d", "a.zip#/g1" a sub-dataset only of the archive
a.zip; an ambiguous name fails naming both readings, with a non-zero exit status. Values are read back and
compared with the netCDF-4 source; the directory is listed before and after each step."""
import json
import os

from hash_names import PLACES, assert_names_both, assert_only_added, assert_unchanged, tree
from mmzip_testlib import PYTHON, TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import (NO_PLUGINS, SUPERBLOCK, TOOL_RELEASE, assert_same_dump, make_sample_nc, ncdump,
                            netcdf_read_all)


def entries(archive):
    import zipfile
    with zipfile.ZipFile(archive) as z:
        return set(z.namelist())


def test_tools_at_each_place():
    with TempDir() as d:
        os.chdir(d)
        nc = make_sample_nc(os.path.join(d, "sample#1.nc"))
        want = ncdump(nc, plugin=False)
        for folder, name in PLACES:
            if folder:
                os.mkdir(folder)
            path = os.path.join(folder, name)
            before = tree(d)
            mmzip_run("nccopy", nc, path)
            assert_only_added(before, tree(d), [path], "nccopy to %s" % path)
            assert_same_dump(ncdump(path), want, "ncdump %s" % path)
            # A sub-dataset beside the root dataset, through "archive#/g1".
            before = tree(d)
            mmzip_run("nccopy", nc, path + "#/g1")
            assert_only_added(before, tree(d), [], "nccopy to %s#/g1" % path)
            assert_same_dump(ncdump(path + "#/g1"), want, "ncdump %s#/g1" % path)
            names = entries(path)
            assert "g1/temp/.zarray" in names and "temp/.zarray" in names, sorted(names)
            # The absolute spelling reads the same archive.
            assert_same_dump(ncdump(os.path.abspath(path) + "#/g1"), want, "ncdump of the absolute name")
            # A non-ASCII group, and the "name#mode=..." form after a name holding '#'.
            before = tree(d)
            mmzip_run("nccopy", nc, path + "#/grü")
            assert_only_added(before, tree(d), [], "nccopy to %s#/grü" % path)
            assert_same_dump(ncdump(path + "#/grü"), want, "ncdump %s#/grü" % path)
            assert "grü/temp/.zarray" in entries(path), sorted(entries(path))
            assert_same_dump(ncdump(path + "#mode=nczarr,zip"), want, "ncdump %s#mode=nczarr,zip" % path)
        # "h#.zip#/m#.nc": a netCDF-4 member (the HDF5 route through netCDF-C), written and read back.
        before = tree(d)
        mmzip_run("nccopy", "-k", "nc4", nc, "h#.zip#/m#.nc")
        assert_only_added(before, tree(d), ["h#.zip"], "nccopy to h#.zip#/m#.nc")
        check_equal(entries("h#.zip"), {"m#.nc"}, "members of h#.zip")
        assert_same_dump(ncdump("h#.zip#/m#.nc"), want, "ncdump h#.zip#/m#.nc")


def test_tools_refuse_ambiguous_names():
    with TempDir() as d:
        os.chdir(d)
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        mmzip_run("nccopy", nc, "amb.zip")
        mmzip_run("nccopy", nc, "amb.zip#/g")
        os.mkdir("amb.zip#")
        run(["nccopy", nc, "amb.zip#/g"], env=NO_PLUGINS)  # a netCDF-4 file named amb.zip#/g, by netCDF-C alone
        before = tree(d)
        p = mmzip_run("ncdump", "-h", "amb.zip#/g", check=False)
        assert p.returncode != 0, "ncdump of an ambiguous name succeeded:\n" + p.stdout
        assert_names_both(p.stderr, "amb.zip#/g", "amb.zip", "g", "ncdump amb.zip#/g")
        for target in ("amb.zip#/g", "amb.zip#/new"):
            p = mmzip_run("nccopy", nc, target, check=False)
            assert p.returncode != 0, "nccopy to the ambiguous %s succeeded" % target
            assert_names_both(p.stderr, target, "amb.zip", target.split("#/")[1], "nccopy to " + target)
        assert_unchanged(before, tree(d), "ambiguous names through the tools")
        # Neither reading: the cause, not "Unknown file format".
        p = mmzip_run("ncdump", "-h", "none.zip#/g", check=False)
        assert p.returncode != 0 and "'none.zip' is not a ZIP archive" in p.stderr, p.stderr
        assert_unchanged(before, tree(d), "ncdump none.zip#/g")


WRITE = r"""
import sys
import mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
name, mode = sys.argv[1], sys.argv[2]
d = netCDF4.Dataset(name, mode)
if mode == "w":
    d.createDimension("x", 5)
    v = d.createVariable("v", "i4", ("x",))
    v[:] = np.arange(5) * 3
    d.title = "written by netCDF4-python"  # ASCII: NCZarr 4.9.0 fails on a non-ASCII text attribute
else:
    w = d.createVariable("w_" + mode.replace("+", "p"), "f8", ("x",))
    w[:] = np.linspace(0, 1, 5)
d.close()
"""


def python_netcdf(*args, check=True):
    return run([PYTHON, "-c", WRITE] + [str(a) for a in args], env=NO_PLUGINS, check=check)


STRUCTURE = r"""
import json, sys
import mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1])
out = {"groups": sorted(d.groups), "dims": {n: len(x) for n, x in d.dimensions.items()}}
if "g2" in d.groups:
    g = d.groups["g2"]
    out["g2"] = {"attrs": {k: np.asarray(g.getncattr(k)).tolist() for k in g.ncattrs()},
                 "dims": sorted(g.dimensions),
                 "vars": {n: [str(v.dtype), list(v.dimensions), list(v.shape)] for n, v in g.variables.items()}}
d.close()
print(json.dumps(out))
"""


# {variable: [no_fill, fill value]} by nc_inq_var_fill, for the int and double variables of a dataset.
FILLS = r"""
import ctypes, json, sys
import mmzip
mmzip.enable_netcdf()
import netCDF4
lib = ctypes.CDLL("libnetcdf.so.19")  # the library netCDF4-python runs (Debian's 4.9.0)
d = netCDF4.Dataset(sys.argv[1])
out = {}
for n, v in d.variables.items():
    no_fill, value = ctypes.c_int(), (ctypes.c_double if v.dtype.kind == "f" else ctypes.c_int)()
    assert lib.nc_inq_var_fill(d._grpid, v._varid, ctypes.byref(no_fill), ctypes.byref(value)) == 0, n
    out[n] = [no_fill.value, value.value]
d.close()
print(json.dumps(out))
"""


def structure(path):
    """netCDF4-python's groups and root dimensions of path, and g2's attributes and variables: (dict, stderr)."""
    p = run([PYTHON, "-c", STRUCTURE, path], env=NO_PLUGINS)
    return json.loads(p.stdout), p.stderr


def check_whole_archive_after_g2(path, want, root_dims, g2_values):
    """netCDF4-python (Debian's 4.9.0 in-process) reading the whole archive `path` after it wrote the
    sub-dataset g2 beside the root dataset the tools' nccopy wrote (want, root_dims: the root's variables and
    dimensions as read before; the names of the dimensions differ by release, see netcdf-guide.md).

    Tools of 4.9.0: the root is 4.9.0's own NCZarr, whose group listing does not name g2: the root dataset
    alone, and a note on stderr naming g2. Tools of 4.9.3+: the root is their NCZarr form, plain Zarr to
    4.9.0, which lists groups by their keys: g2 is a group beside the root's, with exactly the values
    netCDF4-python wrote and the root's variables unchanged. As for every plain Zarr array with
    _ARRAY_DIMENSIONS (compat-view.md, sections 3 and 4), each g2 variable shows as _FillValue the fill_value
    4.9.0 stored in its .zarray (the fill value 4.9.0 also uses reading g2 on its own, without the attribute),
    and its dimension x (5) is a root dimension, renamed x_5 because the root's x is 7 long: the only
    dimension added."""
    import zipfile
    with zipfile.ZipFile(path) as z:
        root = z.read(SUPERBLOCK[0])
        assert SUPERBLOCK[1] in root, "%s: the tools' superblock is not in %s: %r" % (path, SUPERBLOCK[0], root)
        fills = {n: json.loads(z.read("g2/%s/.zarray" % n))["fill_value"] for n in g2_values}
    got, stderr = structure(path)
    what = "%s after its sub-dataset" % path
    if TOOL_RELEASE < (4, 9, 3):
        check_equal(netcdf_read_all(path, enable_plugin=True), want, what)
        check_equal(got["groups"], ["surface"], what + ": groups")
        check_equal(got["dims"], root_dims, what + ": root dimensions")
        notes = [l for l in stderr.splitlines() if "note:" in l]
        check_equal(len(notes), 1, what + ": one note on stderr:\n" + stderr)
        assert "'g2'" in notes[0] and path + "#/g2" in notes[0], notes[0]
        return
    # The fill values 4.9.0 stored are netCDF's defaults for int and double (the double in 6 significant
    # digits, 9.96921e+36, as 4.9.0 writes it), and the ones 4.9.0 uses reading g2 as a dataset of its own.
    check_equal(fills["v"], -2147483647, "g2/v fill_value")
    for n in ("w_a", "w_rp"):
        assert abs(fills[n] / 9.969209968386869e+36 - 1) < 1e-6, (n, fills[n])
    own = json.loads(run([PYTHON, "-c", FILLS, path + "#/g2"], env=NO_PLUGINS).stdout)
    check_equal(own, {n: [0, fills[n]] for n in g2_values}, "nc_inq_var_fill in %s#/g2" % path)
    whole = dict(want)
    for n, (values, attrs) in g2_values.items():
        whole["g2/" + n] = [values, dict(attrs, _FillValue=fills[n])]
    check_equal(netcdf_read_all(path, enable_plugin=True), whole, what)
    check_equal(got["groups"], ["g2", "surface"], what + ": groups")
    check_equal(root_dims.get("x"), 7, what + ": the root's x")
    check_equal(got["dims"], dict(root_dims, x_5=5), what + ": root dimensions")
    check_equal(got["g2"], {"attrs": {"title": "written by netCDF4-python"}, "dims": [],
                            "vars": {"v": ["int32", ["x_5"], [5]], "w_a": ["float64", ["x_5"], [5]],
                                     "w_rp": ["float64", ["x_5"], [5]]}}, what + ": g2")
    assert "note:" not in stderr, what + ": a note though g2 is shown:\n" + stderr


def test_netcdf4_python():
    with TempDir() as d:
        os.chdir(d)
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        want = netcdf_read_all(nc)
        expected = {"v": [[0, 3, 6, 9, 12], {}], "w_a": [[0.0, 0.25, 0.5, 0.75, 1.0], {}],
                    "w_rp": [[0.0, 0.25, 0.5, 0.75, 1.0], {}]}
        for folder, name in PLACES:
            if folder:
                os.mkdir(folder)
            path = os.path.join(folder, name)
            mmzip_run("nccopy", nc, path)
            check_equal(netcdf_read_all(path, enable_plugin=True), want, "netCDF4-python reading %s" % path)
            root_dims = structure(path)[0]["dims"]
            for target, made in ((path + "#/g2", []), (os.path.join(folder, "py#new.zip") + "#/g", None)):
                if made is None:
                    made = [os.path.join(folder, "py#new.zip")]
                before = tree(d)
                python_netcdf(target, "w")
                python_netcdf(target, "a")
                python_netcdf(target, "r+")
                assert_only_added(before, tree(d), made, "netCDF4-python writing %s" % target)
                check_equal(netcdf_read_all(target, enable_plugin=True), expected, "netCDF4-python reading "
                            + target)
            assert "g2/v/.zarray" in entries(path), sorted(entries(path))
            check_whole_archive_after_g2(path, want, root_dims, expected)
        # Ambiguous: refused, naming both readings; nothing created or changed.
        mmzip_run("nccopy", nc, "amb.zip")
        os.mkdir("amb.zip#")
        before = tree(d)
        for mode in ("w", "a"):
            p = python_netcdf("amb.zip#/new", mode, check=False)
            assert p.returncode != 0, "netCDF4-python %s of an ambiguous name succeeded" % mode
            assert_names_both(p.stderr, "amb.zip#/new", "amb.zip", "new", "netCDF4-python " + mode)
        assert_unchanged(before, tree(d), "netCDF4-python on an ambiguous name")


if __name__ == "__main__":
    main([test_tools_at_each_place, test_tools_refuse_ambiguous_names, test_netcdf4_python])
