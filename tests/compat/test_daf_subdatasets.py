"""Issue 15 on seed 001's own example: a DataAxesFormats ".dafs.zarr.zip" with several data sets in groups
(daf_fixture.py, written with zarr-python in DAF's layout). Each "atlas.dafs.zarr.zip#/group" opens in
ncdump and netCDF4-python exactly as the same data set alone in an archive of its own: same ncdump text,
same dimensions (named after its axes), same values, DAF's meaning kept."""
import os

import numpy as np

import compat_lib as C
import daf_fixture as D
from mmzip_testlib import TempDir, check_equal, main


def _archives(tmp):
    atlas = os.path.join(tmp, "atlas.dafs.zarr.zip")
    D.write_daf(atlas, group="pbmc")
    D.write_daf(atlas, group="tissues/lung", mode="a")
    single = os.path.join(tmp, "pbmc.daf.zarr.zip")
    D.write_daf(single)
    return atlas, single


def _body(text):
    """ncdump text without its first line (which names the file)."""
    return text.split("\n", 1)[1]


def test_ncdump_same_as_an_archive_of_its_own():
    with TempDir() as tmp:
        atlas, single = _archives(tmp)
        want = C.ncdump(single).stdout
        for group in ("pbmc", "tissues/lung"):
            got = C.ncdump(atlas + "#/" + group).stdout
            check_equal(_body(got), _body(want), "ncdump of %s#/%s against the data set alone" % (atlas, group))
            c = C.Cdl(got)
            check_equal(c.dims["cell"], len(D.CELLS), group + ": cell axis")
            check_equal(c.dims["gene"], len(D.GENES), group + ": gene axis")
            check_equal(c.vars["matrices/cell/gene/UMIs"]["dims"], ["gene", "cell"], group + ": UMIs dims")
            check_equal([v.decode() for v in c.data["axes/gene"]], D.GENES, group + ": genes")
            umis = np.array(c.data["matrices/cell/gene/UMIs"]).reshape(len(D.GENES), len(D.CELLS)).T
            assert np.array_equal(umis, D.UMIS), umis
        # The header alone, and a data set nested two groups down, the same.
        check_equal(_body(C.ncdump(atlas + "#/tissues/lung", "-h").stdout), _body(C.ncdump(single, "-h").stdout),
                    "ncdump -h")


def test_netcdf4_python_same_as_an_archive_of_its_own():
    with TempDir() as tmp:
        atlas, single = _archives(tmp)
        with C.open_netcdf(single) as ds:
            want = {name: C.netcdf_values(v) for name, v in C.walk_netcdf(ds)}
            want_dims = {k: len(v) for k, v in ds.dimensions.items()}
        for group in ("pbmc", "tissues/lung"):
            with C.open_netcdf(atlas + "#/" + group) as ds:
                got = {name: C.netcdf_values(v) for name, v in C.walk_netcdf(ds)}
                check_equal({k: len(v) for k, v in ds.dimensions.items()}, want_dims, group + ": dimensions")
            check_equal(sorted(got), sorted(want), group + ": variables")
            for name in want:
                C.assert_values(got[name], want[name], "%s#/%s %s" % (atlas, group, name))
            check_equal(got["vectors/cell/age"].tolist(), D.VECTORS["cell"]["age"].tolist(), group + ": age")


if __name__ == "__main__":
    main([test_ncdump_same_as_an_archive_of_its_own, test_netcdf4_python_same_as_an_archive_of_its_own])
