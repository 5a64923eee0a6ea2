"""Issue 23, point 1: an archive of sub-datasets read as a whole. `nccopy g1.nc nc.zip#/g1; nccopy g2.nc
nc.zip#/g2` used to leave an archive without a root group, which `ncdump nc.zip` read as g1 alone, exit 0, and
zarr-python could not open at its root. Now the first sub-dataset also writes the root group (and those between
it and the dataset): ncdump shows every sub-dataset as a group, with its values, and zarr-python and xarray open
the archive at its root. An archive made before (several datasets, no root group) is refused as a whole,
naming the datasets and how to open each; each still opens on its own."""
import json
import os
import subprocess
import zipfile

import numpy as np
import xarray as xr
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main, run

G1 = """netcdf g1 {
dimensions:
    x = 3 ;
variables:
    int a(x) ;
        a:units = "m" ;
    :origin = "first" ;
data:
    a = 1, 2, 3 ;
}
"""

# x is 4 long here: the same name with another length in the other sub-dataset
G2 = """netcdf g2 {
dimensions:
    x = 4 ;
    y = 2 ;
variables:
    double b(y) ;
    short c(x) ;
data:
    b = 1.5, 2.5 ;
    c = -1, 0, 7, 9 ;
}
"""

WANT = {"g1/a": [1, 2, 3], "g2/b": [1.5, 2.5], "g2/c": [-1, 0, 7, 9]}


def ncgen(tmp, name, cdl):
    src = os.path.join(tmp, name + ".cdl")
    with open(src, "w") as f:
        f.write(cdl)
    out = os.path.join(tmp, name + ".nc")
    run(["ncgen", "-4", "-o", out, src])
    return out


def two_subdatasets(tmp, name="nc.zip"):
    archive = os.path.join(tmp, name)
    C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive + "#/g1")
    C.mmzip_run("nccopy", ncgen(tmp, "g2", G2), archive + "#/g2")
    return archive


def without(archive, drop, out):
    """A copy of archive without the entries named in drop, as an earlier mmzip left it (entries copied with
    Python's zipfile, bytes unchanged)."""
    with zipfile.ZipFile(archive) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as dst:
        for info in src.infolist():
            if info.filename not in drop:
                dst.writestr(info, src.read(info))
    return out


def test_subdatasets_read_as_groups():
    with TempDir() as tmp:
        archive = two_subdatasets(tmp)
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
            check_equal(json.loads(z.read(".zgroup")), {"zarr_format": 2}, "the root group")
        check_equal(sorted(n for n in names if "/" not in n), [".zgroup"], "entries at the root")
        # ncdump: both datasets, as groups, with their values and attributes
        c = C.cdl(archive)
        for path, values in WANT.items():
            check_equal(c.data[path], values, "ncdump %s" % path)
        check_equal(c.vars["g1/a"]["attrs"]["units"], [b"m"], "g1/a:units")
        check_equal(c.gattrs["g1"]["origin"], [b"first"], "g1's own attribute")
        # netCDF4-python: the same
        with C.open_netcdf(archive) as ds:
            check_equal(sorted(ds.groups), ["g1", "g2"], "netCDF4-python's groups")
            for path, values in WANT.items():
                g, v = path.split("/")
                check_equal(ds.groups[g][v][:].tolist(), values, "netCDF4-python %s" % path)
        # each still opens on its own, as its source file reads
        for g in ("g1", "g2"):
            sub = C.cdl(archive + "#/" + g)
            for path, values in WANT.items():
                if path.startswith(g + "/"):
                    check_equal(sub.data[path.split("/")[1]], values, "ncdump %s#/%s" % (archive, g))
        # zarr-python and xarray open the archive at its root
        with zarr.ZipStore(archive, mode="r") as store:
            root = zarr.open_group(store, mode="r")
            check_equal(sorted(root.group_keys()), ["g1", "g2"], "zarr-python's groups at the root")
            for path, values in WANT.items():
                check_equal(root[path][:].tolist(), values, "zarr-python %s" % path)
            with xr.open_zarr(store, consolidated=False) as ds:
                check_equal(list(ds.data_vars), [], "xarray opens the root (it holds no arrays)")
            with xr.open_zarr(store, group="g2", consolidated=False) as ds:
                check_equal(ds["c"].values.tolist(), WANT["g2/c"], "xarray g2/c")
        # unzip and 7z accept the archive
        run(["unzip", "-tq", archive])
        run(["7z", "t", archive])


def test_nested_first_subdataset_writes_each_group_above():
    with TempDir() as tmp:
        archive = os.path.join(tmp, "deep.zip")
        C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive + "#/runs/y2024/g1")
        with zipfile.ZipFile(archive) as z:
            groups = sorted(n for n in z.namelist() if not n.startswith("runs/y2024/g1/"))
            check_equal(groups, [".zgroup", "runs/.zgroup", "runs/y2024/.zgroup"], "the groups above")
        with zarr.ZipStore(archive, mode="r") as store:
            check_equal(zarr.open_group(store, mode="r")["runs/y2024/g1/a"][:].tolist(), [1, 2, 3], "zarr-python")
        check_equal(C.cdl(archive).data["runs/y2024/g1/a"], [1, 2, 3], "ncdump of the whole archive")


def test_later_nested_subdataset_writes_the_groups_between():
    """The atlas of netcdf-guide.md section 2: '#/lung', then '#/liver/sub'. The archive then held Zarr data, so
    no group was written above liver/sub, and neither ncdump (exit 1) nor zarr-python (liver missing) read the
    archive as a whole (an outside review). Under the root group, a directory that holds nothing else becomes a
    group; one that holds another dataset does not."""
    with TempDir() as tmp:
        archive = os.path.join(tmp, "atlas.dafs.zarr.zip")
        C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive + "#/lung")
        C.mmzip_run("nccopy", ncgen(tmp, "g2", G2), archive + "#/liver/sub")
        C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive + "#/lung/inner")
        with zipfile.ZipFile(archive) as z:
            groups = sorted(n for n in z.namelist() if n.endswith(".zgroup"))
        check_equal(groups, [".zgroup", "liver/.zgroup", "liver/sub/.zgroup", "lung/.zgroup", "lung/inner/.zgroup"],
                    "the groups")
        with zarr.ZipStore(archive, mode="r") as store:
            root = zarr.open_group(store, mode="r")
            check_equal(sorted(root.group_keys()), ["liver", "lung"], "zarr-python's groups at the root")
            check_equal(root["liver/sub/c"][:].tolist(), WANT["g2/c"], "zarr-python: liver/sub/c")
        c = C.cdl(archive)
        check_equal(c.data["liver/sub/c"], WANT["g2/c"], "ncdump of the whole archive: liver/sub/c")
        check_equal(c.data["lung/a"], WANT["g1/a"], "ncdump of the whole archive: lung/a")


def test_archive_of_datasets_without_root_group_refused():
    with TempDir() as tmp:
        made = two_subdatasets(tmp, "made.zip")
        old = without(made, {".zgroup"}, os.path.join(tmp, "old.zip"))
        r = C.ncdump(old, check=False)
        assert r.returncode != 0, "ncdump exit 0:\n" + r.stdout
        assert "{" not in r.stdout, r.stdout
        lines = [l for l in r.stderr.splitlines() if l.startswith("mmzip_nczarr:")]
        check_equal(len(lines), 1, "one line of mmzip_nczarr:\n" + r.stderr)
        for needle in ("'g1/'", "'g2/'", "no Zarr group at its root", old + "#/"):
            assert needle in lines[0], (needle, lines[0])
        try:
            C.open_netcdf(old).close()
        except OSError:
            pass
        else:
            raise AssertionError("netCDF4-python opened the archive as one dataset")
        # the way out works: each dataset on its own
        check_equal(C.cdl(old + "#/g1").data["a"], WANT["g1/a"], "old.zip#/g1")
        check_equal(C.cdl(old + "#/g2").data["c"], WANT["g2/c"], "old.zip#/g2")
        # a new sub-dataset in such an archive adds no root group (it would change how the others read)
        C.mmzip_run("nccopy", ncgen(tmp, "g3", G1.replace("g1", "g3")), old + "#/g3")
        with zipfile.ZipFile(old) as z:
            assert ".zgroup" not in z.namelist(), z.namelist()
        r = C.ncdump(old, check=False)
        assert r.returncode != 0 and "'g3/'" in r.stderr and "3 Zarr datasets" in r.stderr, r.stderr
        # one top directory is NCZarr's own layout, read as before
        one = without(made, {n for n in zipfile.ZipFile(made).namelist() if not n.startswith("g2/")},
                      os.path.join(tmp, "one.zip"))
        c = C.cdl(one)
        check_equal(c.data["b"], WANT["g2/b"], "one top directory: its dataset")


def test_root_dataset_with_subdatasets():
    """An NCZarr dataset at the archive root and sub-datasets beside it (netcdf-guide.md, "Writing"): the whole
    archive is the root dataset, and a note on stderr names the sub-datasets it does not include."""
    with TempDir() as tmp:
        archive = os.path.join(tmp, "root.zarr.zip")
        C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive)
        C.mmzip_run("nccopy", ncgen(tmp, "g2", G2), archive + "#/kidney")
        r = C.ncdump(archive)
        c = C.Cdl(r.stdout)
        check_equal(c.data["a"], WANT["g1/a"], "the root dataset")
        assert not any(k.startswith("kidney") for k in c.data), c.data
        notes = [l for l in r.stderr.splitlines() if "note:" in l]
        check_equal(len(notes), 1, "one note:\n" + r.stderr)
        assert "'kidney'" in notes[0] and archive + "#/kidney" in notes[0], notes[0]
        check_equal(C.cdl(archive + "#/kidney").data["c"], WANT["g2/c"], "the sub-dataset on its own")
        # A sub-dataset nested in another: the note gives its address from the archive's root, which opens
        # (it gave '#/inner' for kidney/inner, which does not).
        C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive + "#/kidney/inner")
        r = C.ncdump(archive + "#/kidney")
        notes = [l for l in r.stderr.splitlines() if "note:" in l]
        check_equal(len(notes), 1, "one note for kidney:\n" + r.stderr)
        assert "'kidney/inner'" in notes[0] and archive + "#/kidney/inner'" in notes[0], notes[0]
        check_equal(C.cdl(archive + "#/kidney/inner").data["a"], WANT["g1/a"], "the nested sub-dataset")


def test_nczarr_dataset_with_arrays_another_writer_added():
    """nccopy's NCZarr dataset, then zarr-python adds an array and a group with an array: NCZarr lists a group's
    members, so netCDF-C in NCZarr mode would show nccopy's variables only, exit 0. Refused, naming the first
    unlisted array and the plain Zarr mode, which shows them all."""
    with TempDir() as tmp:
        archive = os.path.join(tmp, "mixed.zarr.zip")
        C.mmzip_run("nccopy", ncgen(tmp, "g1", G1), archive)
        with zarr.ZipStore(archive, mode="a") as store:
            root = zarr.open_group(store, mode="a")
            extra = root.create_dataset("extra", data=np.arange(4, dtype="<i4") * 3, compressor=None)
            extra.attrs["_ARRAY_DIMENSIONS"] = ["e"]
            inner = root.create_group("sub").create_dataset("inner", data=np.array([5, 6], "<i2"), compressor=None)
            inner.attrs["_ARRAY_DIMENSIONS"] = ["n"]
        # nccopy wrote the NCZarr form of its release, which ncdump of that release reads as NCZarr
        r = C.ncdump(archive, check=False)
        assert r.returncode != 0 and "{" not in r.stdout, r.stdout
        for needle in ("does not list it", "#mode=zarr,zip"):
            assert needle in r.stderr, (needle, r.stderr)
        # the first object not listed is named (groups are checked before arrays)
        assert "mixed.zarr.zip: sub: group not presented" in r.stderr, r.stderr
        assert "MMZIP_NCZARR_VIEW=raw" not in r.stderr, r.stderr
        # the way out: plain Zarr mode shows every array, with its values
        c = C.cdl("file://%s#mode=zarr,zip" % archive)
        check_equal(c.data["a"], [1, 2, 3], "nccopy's variable")
        check_equal(c.data["extra"], [0, 3, 6, 9], "zarr-python's array")
        check_equal(c.data["sub/inner"], [5, 6], "zarr-python's group")
        # netCDF4-python runs Debian's 4.9.0 in this process: 4.9.0's NCZarr form (the tools' when they are
        # 4.9.0) is refused as ncdump refuses it; 4.9.3+'s is plain Zarr to 4.9.0, which lists every array
        if C.TOOL_RELEASE < (4, 9, 3):
            try:
                C.open_netcdf(archive).close()
            except OSError:
                pass
            else:
                raise AssertionError("netCDF4-python opened the dataset without its added arrays")
        else:
            with C.open_netcdf(archive) as ds:
                # plain Zarr with _ARRAY_DIMENSIONS: zarr-python's fill_value 0 is masked, as xarray masks it
                check_equal(ds["extra"][:].tolist(), [None, 3, 6, 9], "netCDF4-python (4.9.0) on 4.9.3+'s form")
        with C.open_netcdf("file://%s#mode=zarr,zip" % archive) as ds:
            # the stored numbers (zarr-python's fill_value 0 is masked where the view presents the array as
            # xarray's: in 4.9.3+'s form, plain Zarr to 4.9.0)
            ds.set_auto_mask(False)
            check_equal(ds["extra"][:].tolist(), [0, 3, 6, 9], "netCDF4-python extra")
            check_equal(ds.groups["sub"]["inner"][:].tolist(), [5, 6], "netCDF4-python sub/inner")


if __name__ == "__main__":
    main([test_subdatasets_read_as_groups, test_nested_first_subdataset_writes_each_group_above,
          test_later_nested_subdataset_writes_the_groups_between,
          test_archive_of_datasets_without_root_group_refused, test_root_dataset_with_subdatasets,
          test_nczarr_dataset_with_arrays_another_writer_added])
