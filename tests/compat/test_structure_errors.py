"""Issue 11 point 5: what the view cannot present is an error that names the object and says why, with a
non-zero exit status - never `netcdf x { }` and exit 0. Archives written by foreign writers (zipfile by hand:
zarr-python itself always writes the .zgroup of parent groups): arrays two levels down without .zgroup, a root
without .zgroup (zarr-python 2.13 does not open it as a group either: checked here), a root that is a single
array, Zarr v3 metadata without a root zarr.json."""
import json
import os
import zipfile

import numpy as np
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main

ZARRAY = {"zarr_format": 2, "shape": [3], "chunks": [3], "dtype": "<i4", "compressor": None, "fill_value": 0,
          "filters": None, "order": "C"}


def write(path, entries):
    with zipfile.ZipFile(path, "w") as z:
        for name, value in entries.items():
            z.writestr(name, json.dumps(value) if isinstance(value, dict) else value)


def data():
    return np.arange(3, dtype="<i4").tobytes()


def assert_refused(path, *needles):
    r = C.ncdump(path, check=False)
    assert r.returncode != 0, "%s: ncdump exit 0:\n%s" % (path, r.stdout)
    assert "{" not in r.stdout, "%s: ncdump printed a dataset:\n%s" % (path, r.stdout)
    for n in needles:
        assert n in r.stderr, "%s: %r not in the message:\n%s" % (path, n, r.stderr)
    try:
        C.open_netcdf(path).close()
    except OSError:
        pass
    else:
        raise AssertionError("%s: netCDF4-python opened it" % path)
    return r.stderr


def test_array_below_a_directory_without_zgroup():
    with TempDir() as tmp:
        path = os.path.join(tmp, "deep.zarr.zip")
        write(path, {".zgroup": {"zarr_format": 2}, "top/.zarray": ZARRAY, "top/0": data(),
                     "a/b/x/.zarray": ZARRAY, "a/b/x/0": data()})
        g = zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")
        check_equal(sorted(g.array_keys()), ["top"], "zarr-python lists only the array of a real group")
        assert_refused(path, "a/b/x", ".zgroup", '"a"')
        # a group two levels down without its parent group
        path2 = os.path.join(tmp, "deepgroup.zarr.zip")
        write(path2, {".zgroup": {"zarr_format": 2}, "a/b/.zgroup": {"zarr_format": 2}, "a/b/x/.zarray": ZARRAY,
                      "a/b/x/0": data()})
        assert_refused(path2, "a/b", "no .zgroup")


def test_array_name_not_utf8():
    """ZIP names are bytes: Info-ZIP on Linux stores a Latin-1 file name as it is. zarr-python's group, with one
    array directory renamed to Latin-1 "caf\\xe9", zipped by Info-ZIP: netCDF names must be UTF-8, so the view
    refuses the dataset with NC_EBADNAME and a message naming the entry, its byte escaped (the view used to write
    the raw byte into the JSON it presents, which no parser reads back)."""
    import subprocess
    with TempDir() as tmp:
        tree = os.path.join(tmp, "tree")
        g = zarr.open_group(zarr.DirectoryStore(tree), mode="w")
        g.create_dataset("ok", data=np.arange(3, dtype="<i4"), compressor=None)
        g.create_dataset("cafe", data=np.arange(4, dtype="<f8"), compressor=None)
        os.rename(os.path.join(tree, "cafe").encode(), os.path.join(tree, "caf").encode() + b"\xe9")
        path = os.path.join(tmp, "latin1.zarr.zip")
        subprocess.run(["zip", "-q", "-r", "-0", "-X", path, "."], cwd=tree, check=True)
        with zipfile.ZipFile(path) as z:
            assert any(i.filename.startswith("caf\u0398/") and not i.flag_bits & 0x800 for i in z.infolist()), \
                "Info-ZIP did not store the Latin-1 name unflagged: %r" % z.namelist()
        assert_refused(path, "caf\\xe9", "not valid UTF-8")


def test_no_root_group():
    """Arrays in sub-directories and no root .zgroup: zarr-python 2.13 refuses to open the root as a group
    (GroupNotFoundError / "nothing found at path ''") and xarray with it; the view refuses with a message."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "nogroup.zarr.zip")
        write(path, {"a/b/x/.zarray": ZARRAY, "a/b/x/0": data(), "y/z/.zarray": ZARRAY, "y/z/0": data()})
        for opener in (lambda s: zarr.open_group(s, mode="r"), lambda s: zarr.open(s, mode="r")):
            try:
                opener(zarr.ZipStore(path, mode="r"))
            except (zarr.errors.GroupNotFoundError, zarr.errors.PathNotFoundError, KeyError, ValueError):
                pass
            else:
                raise AssertionError("zarr-python 2.13 opened a root without .zgroup (behaviour changed?)")
        check_equal(zarr.open_array(zarr.ZipStore(path, mode="r"), path="a/b/x", mode="r")[:].tolist(), [0, 1, 2],
                    "zarr-python reads the array by its path")
        assert_refused(path, "no .zgroup at the dataset root", "a/b/x")


def test_root_is_an_array():
    with TempDir() as tmp:
        path = os.path.join(tmp, "rootarray.zarr.zip")
        write(path, {".zarray": ZARRAY, "0": data()})
        check_equal(zarr.open(zarr.ZipStore(path, mode="r"), mode="r")[:].tolist(), [0, 1, 2], "zarr-python")
        assert_refused(path, "single array")


def test_zarr_v3_without_root_group():
    """Zarr v3 whose dataset is a single array (the view reads v3 datasets whose root is a group, section 10
    of docs/compat-view.md; here the archive's one top directory holds an array's zarr.json): an error."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "v3.zarr.zip")
        write(path, {"x/zarr.json": {"zarr_format": 3, "node_type": "array", "shape": [3], "data_type": "int32",
                                     "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [3]}},
                                     "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
                                     "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]},
                     "x/c/0": data()})
        assert_refused(path, "x/zarr.json", "single Zarr v3 array")


if __name__ == "__main__":
    main([test_array_below_a_directory_without_zgroup, test_array_name_not_utf8, test_no_root_group, test_root_is_an_array, test_zarr_v3_without_root_group])
