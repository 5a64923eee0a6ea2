"""Issue 23, point 2: a write session stores exactly what netCDF-C wrote, on the tools' release (Debian's
4.9.0, or 4.9.3 / 4.10.1 through tests/nczarr/run_with_netcdf.sh; netCDF4-python then runs that release's
libnetcdf in-process).

Two archives: one made by zarr-python (an xarray-style int array with fill_value 0 and a list attribute, a
float array with a NaN fill, a plain array, a compressed one, a group without .zattrs), and one netCDF-C
made through the plugin (`mmzip run nccopy`, NCZarr's format of the release). From a fresh copy each time:

  - a session that changes nothing (netCDF4-python, and the netCDF C program nc_writer): every metadata
    object keeps its bytes, and no object is added (4.9.3+ used to add `{}` .zattrs for groups);
  - one attribute set on one variable (each variable in turn, and a global one): only that .zattrs changes,
    and it holds its old members (as JSON) plus the attribute, plus, in NCZarr's format, that attribute's
    entry in the type table; no _FillValue (4.9.0 wrote "_FillValue": NaN, bare, and 0), no _ARRAY_DIMENSIONS
    the archive lacked; a variable without .zattrs gets {"comment": ...} only;
  - one variable added: no pre-existing object changes but NCZarr's group listing, whose other members keep
    their values; the new variable reads back in zarr-python;
  - attribute types round-trip as netCDF-C alone shows them: in NCZarr's format, short, float, int64 and text
    attributes set through netCDF4-python show in ncdump as the same operations on a netCDF-4 file show
    them; in the zarr-python archive, every attribute shows as netCDF-C alone shows it on the unzipped copy.
"""
import json
import os
import re
import shutil
import zipfile

from mmzip_testlib import BUILD, PYTHON, TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import (NO_PLUGINS, TOOL_RELEASE, dir_url, make_sample_nc, ncdump,
                            tools_release_in_process_env)

NC_WRITER = os.path.join(BUILD, "tests", "nczarr", "nc_writer")
TYPES_KEYS = ("_NCZARR_ATTR", "_nczarr_attr")
COMMENT = "set by one session"

ZARR_PYTHON = r"""
import sys, numpy as np, zarr
store = zarr.ZipStore(sys.argv[1], mode="w")
g = zarr.group(store=store)
g.attrs["title"] = "zarr-python"
v = g.create_dataset("v", data=np.arange(6, dtype="<i4"), chunks=(3,), compressor=None)  # fill_value 0
v.attrs.update({"_ARRAY_DIMENSIONS": ["x"], "units": "K", "valid_range": [0, 100]})
f = g.create_dataset("f", data=np.arange(6, dtype="<f4") / 4, chunks=(3,), compressor=None, fill_value=float("nan"))
f.attrs.update({"_ARRAY_DIMENSIONS": ["x"], "scale": 0.1})
g.create_dataset("plain", data=np.arange(5, dtype="<f8"), chunks=(5,), compressor=None)
z = g.create_dataset("packed", data=np.arange(6, dtype="<i2"), chunks=(6,), compressor=zarr.Zlib(level=1))
z.attrs.update({"_ARRAY_DIMENSIONS": ["x"], "long_name": "compressed"})
s = g.create_group("sub")
s.create_dataset("w", data=np.arange(4, dtype="<i2"), chunks=(4,), compressor=None)
store.close()
"""

# argv: dataset, then "touch" | "att VAR NAME" | "types VAR" | "var"
SESSION = r"""
import sys
import netCDF4, numpy as np
path, what = sys.argv[1], sys.argv[2]
d = netCDF4.Dataset(path, "a")
if what == "att":
    target = d if sys.argv[3] == "/" else d[sys.argv[3]]
    target.setncattr(sys.argv[4], sys.argv[5])
elif what == "types":
    v = d[sys.argv[3]]
    v.setncattr("shorts", np.array([1, 300], dtype="i2"))
    v.setncattr("half", np.float32(0.5))
    v.setncattr("big", np.int64(5000000000))
    v.setncattr("ints", np.array([1, 1000], dtype="i4"))
    v.setncattr("text", "words")
elif what == "var":
    dim = sorted(d.dimensions)[0]
    a = d.createVariable("added", "i4", (dim,))
    a[:] = np.arange(len(d.dimensions[dim])) * 3 + 1
d.close()
"""


def metadata(archive):
    """{entry: bytes} of every metadata object (.zgroup, .zarray, .zattrs, .zmetadata)."""
    with zipfile.ZipFile(archive) as z:
        return {n: z.read(n) for n in z.namelist() if n.rsplit("/", 1)[-1].startswith(".z")}


def session(archive, *args):
    run([PYTHON, "-c", SESSION, archive] + list(args), env=tools_release_in_process_env())


def make_archives(d):
    ours = os.path.join(d, "zp.zarr.zip")
    run([PYTHON, "-c", ZARR_PYTHON, ours], env=NO_PLUGINS)
    nc = make_sample_nc(os.path.join(d, "sample.nc"))
    made = os.path.join(d, "nc.zarr.zip")
    mmzip_run("nccopy", nc, made)
    return {"zarr-python": ours, "netCDF-C": made}, nc


def fresh(d, archive, tag):
    copy = os.path.join(d, "%s-%s" % (tag, os.path.basename(archive)))
    shutil.copyfile(archive, copy)
    return copy


def variables(archive):
    """Array paths (NCZarr variables: entries with a .zarray) of the archive."""
    return sorted(n[:-len("/.zarray")] for n in metadata(archive) if n.endswith("/.zarray"))


def without_types(doc):
    return {k: v for k, v in doc.items() if k not in TYPES_KEYS}


def types_table(doc):
    for k in TYPES_KEYS:
        if isinstance(doc.get(k), dict):
            return doc[k].get("types", {})
    return None


def check_one_attribute(before, after, key, what):
    changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    check_equal(changed, [key], "%s: objects the session changed" % what)
    old = json.loads(before[key]) if key in before else {}
    new = json.loads(after[key])
    check_equal(without_types(new), dict(without_types(old), comment=COMMENT),
                "%s: %s holds its members and the attribute, nothing else" % (what, key))
    old_types, new_types = types_table(old), types_table(new)
    if new_types is not None:
        assert "comment" in new_types, "%s: type table lacks the new attribute: %s" % (what, new_types)
        check_equal({k: t for k, t in new_types.items() if k != "comment"}, old_types or {},
                    "%s: the type table's other entries" % what)


def test_no_change_sessions():
    with TempDir() as d:
        archives, _ = make_archives(d)
        for kind, archive in archives.items():
            before = metadata(archive)
            copy = fresh(d, archive, "py")
            session(copy, "touch")
            check_equal(metadata(copy), before, "%s archive after a netCDF4-python session that changes nothing" % kind)
            copy = fresh(d, archive, "c")
            run([NC_WRITER, "touch", copy], env=tools_release_in_process_env())
            check_equal(metadata(copy), before, "%s archive after nc_writer touch" % kind)


def test_one_attribute_sessions():
    with TempDir() as d:
        archives, _ = make_archives(d)
        for kind, archive in archives.items():
            before = metadata(archive)
            top = sorted(n for n in before if n.endswith(".zgroup"))[0][:-len(".zgroup")]  # "" or NCZarr's "name/"
            for var in variables(archive) + ["/"]:
                rel = var[len(top):]
                key = top + (".zattrs" if var == "/" else rel + "/.zattrs")
                copy = fresh(d, archive, "att")
                session(copy, "att", rel if var != "/" else "/", "comment", COMMENT)
                check_one_attribute(before, metadata(copy), key, "%s archive, netCDF4-python on %s" % (kind, var))
            var = variables(archive)[0]
            copy = fresh(d, archive, "catt")
            run([NC_WRITER, "put-att", copy, var[len(top):], "comment", COMMENT], env=tools_release_in_process_env())
            check_one_attribute(before, metadata(copy), var + "/.zattrs", "%s archive, nc_writer on %s" % (kind, var))


def test_one_variable_session():
    with TempDir() as d:
        archives, _ = make_archives(d)
        for kind, archive in archives.items():
            before = metadata(archive)
            copy = fresh(d, archive, "var")
            session(copy, "var")
            after = metadata(copy)
            changed = sorted(n for n in before if after.get(n) != before[n])
            listing = [n for n in changed if re.search(rb'"_nczarr_group"|"_NCZARR_GROUP"', before[n])]
            check_equal(changed, listing, "%s archive: pre-existing objects changed other than group listings" % kind)
            for n in listing:
                old, new = json.loads(before[n]), json.loads(after[n])
                for k in ("_nczarr_group", "_NCZARR_GROUP"):
                    old.pop(k, None), new.pop(k, None)
                check_equal(without_types(new), without_types(old), "%s: %s apart from the listing" % (kind, n))
            added = sorted(n for n in after if n not in before)
            assert any(n.endswith("added/.zarray") for n in added), (kind, added)
            script = ("import sys, zarr, json; s = zarr.ZipStore(sys.argv[1], mode='r'); "
                      "print(json.dumps([k for k in s.keys() if k.endswith('added/.zarray')]))")
            arr = json.loads(run([PYTHON, "-c", script, copy], env=NO_PLUGINS).stdout)[0][:-len("/.zarray")]
            script = ("import sys, zarr, json; s = zarr.ZipStore(sys.argv[1], mode='r'); "
                      "print(json.dumps(zarr.open_array(s, path=sys.argv[2], mode='r')[:].tolist()))")
            values = json.loads(run([PYTHON, "-c", script, copy, arr], env=NO_PLUGINS).stdout)
            check_equal(values, [3 * i + 1 for i in range(len(values))], "%s: the added variable in zarr-python" % kind)


def attribute_lines(dump, var):
    return sorted(re.findall(r"^\s*%s:(\w+ = .*) ;$" % re.escape(var), dump, re.M))


def test_attribute_types_round_trip():
    with TempDir() as d:
        archives, nc = make_archives(d)
        # NCZarr's format: the same session on a netCDF-4 file is what netCDF-C shows alone.
        copy, plain = fresh(d, archives["netCDF-C"], "types"), os.path.join(d, "types.nc")
        shutil.copyfile(nc, plain)
        session(copy, "types", "lon")
        session(plain, "types", "lon")
        want = attribute_lines(ncdump(plain, "-h", plugin=False), "lon")
        check_equal(sorted(a.split(" ")[0] for a in want), ["big", "half", "ints", "shorts", "text", "units"],
                    "lon's attributes in the netCDF-4 file")
        check_equal(attribute_lines(ncdump(copy, "-h"), "lon"), want, "NCZarr archive: lon's attributes in ncdump")
        # zarr-python's archive: as netCDF-C alone shows the unzipped copy (read only).
        copy = fresh(d, archives["zarr-python"], "types")
        session(copy, "att", "v", "comment", COMMENT)
        unzipped = os.path.join(d, "unzipped")
        with zipfile.ZipFile(copy) as z:
            z.extractall(unzipped)
        alone = ncdump(dir_url(unzipped, "zarr"), "-h", plugin=False)
        ours = ncdump(copy, "-h")
        for var in ("v", "f", "packed"):
            # The view adds the xarray-style _FillValue netCDF-C alone does not show.
            got = [a for a in attribute_lines(ours, var) if not a.startswith("_FillValue")]
            assert got, "no attribute of %s in ncdump:\n%s" % (var, ours)
            check_equal(got, attribute_lines(alone, var), "zarr-python archive: %s's attributes as netCDF-C %s alone" % (
                var, ".".join(map(str, TOOL_RELEASE))))


if __name__ == "__main__":
    main([test_no_change_sessions, test_one_attribute_sessions, test_one_variable_session,
          test_attribute_types_round_trip])
