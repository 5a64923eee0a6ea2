"""Issue point 1: a DataAxesFormats archive (daf_fixture.py, written with zarr-python in DAF's exact Zarr v2
layout) reads correctly through Debian's unmodified ncdump: every array with the values zarr-python reads,
axis entry names as text, and dimensions named after the axes."""
import json
import os
import zipfile

import numpy as np
import zarr

import compat_lib as C
import daf_fixture as D
from mmzip_testlib import TempDir, check_equal, main


def _archive(tmp):
    path = os.path.join(tmp, "pbmc.daf.zarr.zip")
    D.write_daf(path)
    return path


def test_fixture_follows_daf_layout():
    """The fixture itself: what DataAxesFormats writes (so that the rest tests the real thing)."""
    with TempDir() as tmp:
        path = _archive(tmp)
        with zipfile.ZipFile(path) as z:
            names = set(z.namelist())
            meta = {n: json.loads(z.read(n)) for n in names if n.endswith((".zarray", ".zgroup", ".zattrs"))}
        for group in ("", "scalars/", "axes/", "vectors/", "matrices/", "matrices/cell/gene/"):
            check_equal(meta[group + ".zgroup"], {"zarr_format": 2}, group + ".zgroup")
            check_equal(meta[group + ".zattrs"], {}, group + ".zattrs")
        arrays = [n[: -len("/.zarray")] for n in meta if n.endswith("/.zarray")]
        for a in arrays:
            m = meta[a + "/.zarray"]
            check_equal(m["chunks"], m["shape"], a + ": one chunk covering the array")
            check_equal((m["compressor"], m["fill_value"], m["order"]), (None, None, "C"), a)
            check_equal(meta[a + "/.zattrs"], {}, a + "/.zattrs")
            if m["dtype"] == "|O":
                check_equal(m["filters"], [{"id": "vlen-utf8"}], a + " filters")
            else:
                check_equal(m["filters"], None, a + " filters")
        check_equal(meta["daf/.zarray"]["dtype"], "|u1", "daf dtype")
        check_equal(meta["matrices/cell/gene/UMIs/.zarray"]["shape"], [len(D.GENES), len(D.CELLS)], "reversed shape")
        check_equal(meta["axes/batch/.zarray"]["chunks"], [0], "empty axis")
        check_equal(meta["vectors/cell/is_doublet/.zarray"]["dtype"], "|b1", "bool vector")
        assert "vectors/gene/marker/nzval/.zarray" not in names, "all-true Bool sparse vectors have no nzval"
        assert "axes/batch/0" in names and "vectors/batch/size/0" not in names
        check_equal(zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")["daf"][:].tolist(), [1, 0], "daf")


def _presented_arrays(path):
    """{array path: zarr array} of every array zarr-python can read (not the chunks-[0] ones)."""
    store = zarr.ZipStore(path, mode="r")
    root = zarr.open_group(store, mode="r")
    found = {}

    def walk(g, prefix):
        for name, a in g.arrays():
            found[prefix + name] = a
        for name, sub in g.groups():
            walk(sub, prefix + name + "/")

    walk(root, "")
    return store, found


def test_ncdump_prints_every_array():
    with TempDir() as tmp:
        path = _archive(tmp)
        c = C.cdl(path)
        store, arrays = _presented_arrays(path)
        try:
            checked = 0
            for name, a in sorted(arrays.items()):
                if a.shape and 0 in a.shape:
                    continue
                assert name in c.vars, "ncdump does not show %s:\n%s" % (name, c.text)
                want = C.expected_presentation(a)
                is_char = c.vars[name]["type"] == "char"
                shape = [c.dims[d] for d in c.vars[name]["dims"]]
                got = C.cdl_values(c, name, shape, is_char)
                C.assert_values(got, want, "ncdump %s" % name)
                checked += 1
            check_equal(checked, 30, "arrays compared")
        finally:
            store.close()


def test_dimensions_named_after_axes():
    with TempDir() as tmp:
        c = C.cdl(_archive(tmp))
        assert not [d for d in c.dims if d.startswith("_zdim_")], "anonymous dimensions left: %s" % c.dims
        check_equal((c.dims["cell"], c.dims["gene"]), (len(D.CELLS), len(D.GENES)), "axis lengths")
        expect = {
            "daf": ["daf_version"],
            "axes/cell": ["cell", "cell_strlen"],
            "axes/gene": ["gene", "gene_strlen"],
            "vectors/cell/age": ["cell"],
            "vectors/cell/is_doublet": ["cell"],
            "vectors/cell/type": ["cell", "type_strlen"],
            "vectors/gene/length": ["gene"],
            "vectors/gene/marker/nzind": ["gene_marker_nnz"],
            "vectors/gene/score/nzval": ["gene_score_nnz"],
            "matrices/cell/gene/UMIs": ["gene", "cell"],
            "matrices/gene/gene/corr": ["gene", "gene"],
            "matrices/cell/gene/sparse_f/colptr": ["cell_gene_sparse_f_colptr"],
            "matrices/cell/gene/sparse_f/rowval": ["cell_gene_sparse_f_nnz"],
            "matrices/cell/gene/sparse_f/nzval": ["cell_gene_sparse_f_nnz"],
            "matrices/cell/gene/present/rowval": ["cell_gene_present_nnz"],
            "scalars/f64": ["_scalar_"],
            "scalars/name": ["_scalar_", "name_strlen"],
            "axes/batch": ["batch", "batch_strlen"],
            "vectors/batch/size": ["batch"],
        }
        for var, dims in expect.items():
            check_equal(c.vars[var]["dims"], C.tool_dims(dims), "dimensions of " + var)
        check_equal(c.dims["cell_gene_sparse_f_colptr"], len(D.GENES) + 1, "colptr length")


def test_axis_entries_as_text():
    with TempDir() as tmp:
        c = C.cdl(_archive(tmp))
        check_equal([v.decode() for v in c.data["axes/cell"]], D.CELLS, "cell names")
        check_equal([v.decode() for v in c.data["axes/gene"]], D.GENES, "gene names")
        check_equal(c.vars["axes/cell"]["attrs"]["_Encoding"], [b"utf-8"], "_Encoding")
        check_equal([v.decode() for v in c.data["vectors/cell/type"]], list(D.VECTORS["cell"]["type"]), "types")
        check_equal(c.data["scalars/name"], [D.SCALARS["name"][1].encode()], "string scalar")


def test_values_keep_their_daf_meaning():
    """Read back as DataAxesFormats means them: matrices transposed to (rows, cols), sparse parts 1-based."""
    with TempDir() as tmp:
        c = C.cdl(_archive(tmp))
        n_cell, n_gene = len(D.CELLS), len(D.GENES)
        umis = np.array(c.data["matrices/cell/gene/UMIs"]).reshape(n_gene, n_cell).T
        assert np.array_equal(umis, D.UMIS), umis
        colptr = c.data["matrices/cell/gene/sparse_f/colptr"]
        rowval = c.data["matrices/cell/gene/sparse_f/rowval"]
        nzval = c.data["matrices/cell/gene/sparse_f/nzval"]
        dense = np.zeros((n_cell, n_gene), dtype=np.float32)
        for j in range(n_gene):
            for k in range(colptr[j] - 1, colptr[j + 1] - 1):
                dense[rowval[k] - 1, j] = nzval[k]
        assert np.array_equal(dense, D.SPARSE_F), dense
        check_equal(c.data["vectors/gene/marker/nzind"], [2, 4], "1-based nzind")
        for name, (kind, value) in D.SCALARS.items():
            got = c.data["scalars/" + name][0]
            want = value.encode() if kind is str else (1 if value is True else value)
            check_equal(got, want, "scalar " + name)


def test_empty_axis_and_vector():
    """chunks [0]: shown as one element of no data (fill), the real shape in _ZARR_SHAPE."""
    with TempDir() as tmp:
        c = C.cdl(_archive(tmp))
        check_equal(c.dims["batch"], 1, "empty axis presented with length 1")
        check_equal(c.vars["axes/batch"]["attrs"]["_ZARR_SHAPE"], [b"[0]"], "_ZARR_SHAPE")
        check_equal(c.vars["vectors/batch/size"]["attrs"]["_ZARR_SHAPE"], [b"[0]"], "_ZARR_SHAPE")
        check_equal(c.data["vectors/batch/size"], [None], "no data: ncdump prints _")
        check_equal(c.data["axes/batch"], [b""], "no entry names")


def test_netcdf4_python_reads_the_same():
    with TempDir() as tmp:
        path = _archive(tmp)
        store, arrays = _presented_arrays(path)
        try:
            with C.open_netcdf(path) as ds:
                seen = dict(C.walk_netcdf(ds))
                for name, a in arrays.items():
                    if a.shape and 0 in a.shape:
                        continue
                    C.assert_values(C.netcdf_values(seen[name]), C.expected_presentation(a), "netCDF4 " + name)
                check_equal(seen["axes/cell"].dimensions, ("cell", "cell_strlen"), "dims via netCDF4")
        finally:
            store.close()


def test_several_data_sets_in_one_archive():
    """DataAxesFormats' ".dafs.zarr.zip": one data set per group, each named after its own axes."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "atlas.dafs.zarr.zip")
        D.write_daf(path, group="pbmc")
        D.write_daf(path, group="lung", mode="a")
        c = C.cdl(path)
        for group in ("pbmc", "lung"):
            check_equal(c.vars[group + "/matrices/cell/gene/UMIs"]["dims"], ["gene", "cell"], group + " matrix")
            check_equal(c.vars[group + "/axes/cell"]["dims"], C.tool_dims(["cell", "cell_strlen"]), group + " axis")
            check_equal([v.decode() for v in c.data[group + "/axes/gene"]], D.GENES, group + " genes")
            umis = np.array(c.data[group + "/matrices/cell/gene/UMIs"]).reshape(len(D.GENES), len(D.CELLS)).T
            assert np.array_equal(umis, D.UMIS), group
        assert not [d for d in c.dims if d.startswith("_zdim_")], c.dims


if __name__ == "__main__":
    main([test_fixture_follows_daf_layout, test_ncdump_prints_every_array, test_dimensions_named_after_axes,
          test_axis_entries_as_text, test_values_keep_their_daf_meaning, test_empty_axis_and_vector,
          test_netcdf4_python_reads_the_same, test_several_data_sets_in_one_archive])
