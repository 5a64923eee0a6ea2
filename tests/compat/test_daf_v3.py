"""DataAxesFormats 0.3 (Zarr v3) through Debian's unmodified ncdump: the data set of daf_fixture.py written in
the layout DataAxesFormats.jl's ZarrFormat uses since v0.3.0 (anchors: root zarr.json with the attribute
"daf": [1, 0] instead of a "daf" array; arrays made by hand with Zarr.typestr3 data types, "string" with
vlen-utf8 and fill "", fill_value zero(T), codecs [bytes little], chunk_key_encoding default "/", one chunk
per array; matrices with the Zarr shape [n_cols, n_rows]; packed properties as single-shard
sharding_indexed arrays with the index at the start and bytes between the chunks, attribute
daf_packed_format). ncdump must read it as it reads the v2 layout (test_daf.py): axis names as dimensions,
entry names as text, every value as the data set means it."""
import os

import numpy as np

import compat_lib as C
import daf_fixture as D
import zarr_v3 as V
from mmzip_testlib import TempDir, check_equal, main

TYPESTR3 = {np.bool_: "bool", np.int8: "int8", np.int16: "int16", np.int32: "int32", np.int64: "int64",
            np.uint8: "uint8", np.uint16: "uint16", np.uint32: "uint32", np.uint64: "uint64",
            np.float32: "float32", np.float64: "float64"}
PACKED = np.arange(1, 13, dtype=np.float64).reshape(3, 4) / 4  # (cell, gene), packed in one shard


def _array(w, path, data):
    """numeric_zcreate / string_zcreate: one chunk, fill zero(T) or "", [bytes little] or [vlen-utf8]."""
    data = np.asarray(data)
    if data.dtype == object:
        w.array(path, data, chunks=data.shape or (), codecs=[{"name": "vlen-utf8"}], fill_value="",
                data_type="string")
    else:
        zero = False if data.dtype == np.bool_ else (0.0 if data.dtype.kind == "f" else 0)
        w.array(path, data, chunks=data.shape, fill_value=zero, data_type=TYPESTR3[data.dtype.type])


def write_daf_v3(path):
    w = V.V3Writer(path)
    w.group("", attributes={"daf": [1, 0]})
    for g in ("scalars", "axes", "vectors", "matrices", "matrices/cell", "matrices/cell/gene", "matrices/gene",
              "matrices/gene/gene", "vectors/cell", "vectors/gene", "vectors/batch"):
        w.group(g)
    for name, (kind, value) in D.SCALARS.items():
        _array(w, "scalars/" + name, np.array([value], dtype=object if kind is str else kind))
    _array(w, "axes/cell", np.array(D.CELLS, dtype=object))
    _array(w, "axes/gene", np.array(D.GENES, dtype=object))
    # an empty axis, with Zarr.jl's chunk shape == shape == [0]
    w.array("axes/batch", np.array([], dtype=object), chunks=(0,), codecs=[{"name": "vlen-utf8"}], fill_value="",
            data_type="string")
    for axis, props in D.VECTORS.items():
        for name, data in props.items():
            _array(w, "vectors/%s/%s" % (axis, name), data)
    for axis, props in D.SPARSE_VECTORS.items():
        for name, (nzind, nzval) in props.items():
            w.group("vectors/%s/%s" % (axis, name))
            _array(w, "vectors/%s/%s/nzind" % (axis, name), nzind)
            if nzval is not None:
                _array(w, "vectors/%s/%s/nzval" % (axis, name), nzval)
    _array(w, "matrices/cell/gene/UMIs", D.UMIS.T)
    for name, matrix in (("sparse_f", D.SPARSE_F), ("present", D.PRESENT)):
        w.group("matrices/cell/gene/" + name)
        colptr, rowval, nzval = D.csc(matrix)
        _array(w, "matrices/cell/gene/%s/colptr" % name, colptr)
        _array(w, "matrices/cell/gene/%s/rowval" % name, rowval)
        if matrix.dtype != np.bool_:
            _array(w, "matrices/cell/gene/%s/nzval" % name, nzval)
    _array(w, "matrices/gene/gene/corr", D.CORR.T)
    # a packed property: one shard holding the whole matrix, index first, zstd inner chunks, and other bytes
    # (the inner ZIP's headers of DataAxesFormats' dual-format shards) between the chunks
    shard = {"chunk_shape": [2, 3], "codecs": [V.bytes_codec("little"), {"name": "zstd", "configuration": {"level": 3, "checksum": False}}],
             "index_codecs": [V.bytes_codec("little"), {"name": "crc32c"}], "index_location": "start",
             "_gap": b"PK\x03\x04" + bytes(26) + b"chunk"}
    w.array("matrices/cell/gene/packed", PACKED.T, chunks=PACKED.T.shape, shard=shard, fill_value=0.0,
            data_type="float64", attributes={"daf_packed_format": "indexed+zipped"})
    w.close()


def test_ncdump_reads_daf_v3():
    with TempDir() as tmp:
        path = os.path.join(tmp, "pbmc.daf.zarr.zip")
        write_daf_v3(path)
        c = C.cdl(path)
        assert not [d for d in c.dims if d.startswith("_zdim_")], "anonymous dimensions left: %s" % c.dims
        expect = {
            "axes/cell": ["cell", "cell_strlen"],
            "axes/gene": ["gene", "gene_strlen"],
            "vectors/cell/age": ["cell"],
            "vectors/cell/is_doublet": ["cell"],
            "vectors/cell/type": ["cell", "type_strlen"],
            "vectors/gene/length": ["gene"],
            "vectors/gene/marker/nzind": ["gene_marker_nnz"],
            "vectors/gene/score/nzval": ["gene_score_nnz"],
            "matrices/cell/gene/UMIs": ["gene", "cell"],
            "matrices/cell/gene/packed": ["gene", "cell"],
            "matrices/gene/gene/corr": ["gene", "gene"],
            "matrices/cell/gene/sparse_f/colptr": ["cell_gene_sparse_f_colptr"],
            "matrices/cell/gene/sparse_f/rowval": ["cell_gene_sparse_f_nnz"],
            "matrices/cell/gene/sparse_f/nzval": ["cell_gene_sparse_f_nnz"],
            "matrices/cell/gene/present/rowval": ["cell_gene_present_nnz"],
            "scalars/f64": ["_scalar_"],
            "scalars/name": ["_scalar_", "name_strlen"],
            "axes/batch": ["batch", "batch_strlen"],
        }
        for var, dims in expect.items():
            check_equal(c.vars[var]["dims"], C.tool_dims(dims), "dimensions of " + var)
        check_equal((c.dims["cell"], c.dims["gene"]), (len(D.CELLS), len(D.GENES)), "axis lengths")
        check_equal(c.gattrs[""]["daf"], [1, 0], "the daf attribute")
        check_equal([v.decode() for v in c.data["axes/cell"]], D.CELLS, "cell names")
        check_equal([v.decode() for v in c.data["axes/gene"]], D.GENES, "gene names")
        check_equal(c.vars["axes/cell"]["attrs"]["_Encoding"], [b"utf-8"], "_Encoding")
        check_equal([v.decode() for v in c.data["vectors/cell/type"]], list(D.VECTORS["cell"]["type"]), "types")
        check_equal(c.data["vectors/cell/is_doublet"], [1, 0, 1], "bool vector")
        check_equal(c.data["vectors/cell/count"], [10, 20, 30], "int64 vector")
        n_cell, n_gene = len(D.CELLS), len(D.GENES)
        umis = np.array(c.data["matrices/cell/gene/UMIs"]).reshape(n_gene, n_cell).T
        assert np.array_equal(umis, D.UMIS), umis
        packed = np.array(c.data["matrices/cell/gene/packed"]).reshape(n_gene, n_cell).T
        assert np.array_equal(packed, PACKED), packed
        check_equal(c.vars["matrices/cell/gene/packed"]["attrs"]["daf_packed_format"], [b"indexed+zipped"], "packed")
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
        check_equal(c.vars["axes/batch"]["attrs"]["_ZARR_SHAPE"], [b"[0]"], "empty axis")
        check_equal(c.data["axes/batch"], [b""], "no entry names")


def test_netcdf4_python_reads_daf_v3():
    with TempDir() as tmp:
        path = os.path.join(tmp, "pbmc.daf.zarr.zip")
        write_daf_v3(path)
        with C.open_netcdf(path) as ds:
            seen = dict(C.walk_netcdf(ds))
            check_equal(seen["axes/cell"].dimensions, ("cell", "cell_strlen"), "dims via netCDF4")
            check_equal(C.netcdf_values(seen["axes/gene"]).tolist(), [g.encode() for g in D.GENES], "genes")
            got = np.asarray(seen["matrices/gene/gene/corr"][:])
            assert np.array_equal(got, D.CORR.T), got
            check_equal(seen["vectors/cell/age"][:].tolist(), D.VECTORS["cell"]["age"].tolist(), "age")


if __name__ == "__main__":
    main([test_ncdump_reads_daf_v3, test_netcdf4_python_reads_daf_v3])
