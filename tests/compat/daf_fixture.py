"""A DataAxesFormats ("Daf") data set in a Zarr v2 ZIP archive, written with zarr-python exactly as
DataAxesFormats.jl's ZarrFormat (Zarr v2 era, Zarr.jl 0.9.6) lays it out:

  - root group (.zgroup, .zattrs {}) holding the array "daf" = UInt8 [1, 0] and the groups scalars, axes,
    vectors, matrices (each .zgroup + .zattrs {});
  - every array made as Zarr.jl's zcreate(T, group, name, dims...; compressor=NoCompressor()): one chunk
    covering the whole array (chunks == shape), compressor null, fill_value null, order "C", filters null
    (or [vlen-utf8] for strings), dtype "|b1" "|i1" "|u1" "<i2" ... "<f8" or "|O", a .zattrs {} each;
  - scalars as one-element arrays; axes as vlen-utf8 string vectors; dense vectors directly; sparse vectors
    as a group with nzind (Int64, 1-based) and nzval (omitted for all-true Bool data); dense matrices
    (rows, cols) with the Zarr shape reversed [n_cols, n_rows] (Julia's column-major bytes); sparse matrices
    as a group with colptr / rowval (Int64, 1-based) and nzval;
  - an empty axis and an empty vector with "chunks": [0] (zarr-python cannot create those, so their
    .zarray is written in Zarr.jl's JSON; the axis has its 0-byte chunk "0", the vector none).

The Julia-side data are kept in DAF so that tests compare against the data set's meaning, not only against
what zarr-python reads back."""
import json

import numpy as np
import numcodecs
import zarr

CELLS = ["C1", "C2", "Cé3"]
GENES = ["TP53", "MYC", "BRCA1", "EGFR"]

SCALARS = {
    "flag": (np.bool_, True),
    "i8": (np.int8, -5),
    "i16": (np.int16, -300),
    "i32": (np.int32, -70000),
    "i64": (np.int64, -(2 ** 40)),
    "u8": (np.uint8, 250),
    "u16": (np.uint16, 65000),
    "u32": (np.uint32, 4000000000),
    "u64": (np.uint64, 2 ** 63 + 5),
    "f32": (np.float32, 1.25),
    "f64": (np.float64, 2.5e-300),
    "name": (str, "pbmc é"),
}

# Julia matrices are (rows axis, columns axis); the Zarr array holds their transpose in C order.
UMIS = np.array([[1, 0, 3, 0], [0, 5, 0, 7], [8, 0, 0, 10]], dtype=np.uint32)  # (cell, gene)
CORR = np.array([[1, .5, 0, 0], [.5, 1, 0, 0], [0, 0, 1, -.25], [0, 0, -.25, 1]])  # (gene, gene)
SPARSE_F = np.array([[0, 1.5, 0, 0], [2.5, 0, 0, 0], [0, 3.5, 0, 4.5]], dtype=np.float32)  # (cell, gene)
PRESENT = UMIS != 0  # Bool all-true sparse: no nzval

VECTORS = {
    "cell": {
        "age": np.array([1.5, 2.5, -3.25], dtype=np.float32),
        "is_doublet": np.array([True, False, True]),
        "type": np.array(["T", "B cell", "NK é"], dtype=object),
        "count": np.array([10, 20, 30], dtype=np.int64),
    },
    "gene": {
        "length": np.array([100, 2000, 30000, 400000], dtype=np.uint32),
    },
}
SPARSE_VECTORS = {  # axis -> name -> (1-based nzind, nzval or None for all-true Bool)
    "gene": {
        "marker": (np.array([2, 4], dtype=np.int64), None),
        "score": (np.array([1, 3], dtype=np.int64), np.array([0.5, -1.5])),
    },
}


def csc(matrix):
    """Julia SparseMatrixCSC parts of a (rows, cols) matrix: 1-based colptr, rowval, and nzval."""
    colptr, rowval, nzval = [1], [], []
    for j in range(matrix.shape[1]):
        for i in range(matrix.shape[0]):
            if matrix[i, j]:
                rowval.append(i + 1)
                nzval.append(matrix[i, j])
        colptr.append(len(rowval) + 1)
    return np.array(colptr, dtype=np.int64), np.array(rowval, dtype=np.int64), np.array(nzval, dtype=matrix.dtype)


def _group(parent, name):
    g = parent.create_group(name)
    g.attrs.put({})
    return g


def _array(group, name, data):
    """Zarr.jl's zcreate(T, group, name, dims...; compressor=NoCompressor()) + write + writeattrs({})."""
    data = np.asarray(data)
    kwargs = dict(shape=data.shape, chunks=data.shape, dtype=data.dtype, compressor=None, fill_value=None,
                  order="C")
    if data.dtype == object:
        kwargs["object_codec"] = numcodecs.VLenUTF8()
    a = group.create(name, **kwargs)
    a[...] = data
    a.attrs.put({})
    return a


def _empty(store, path, dtype, with_chunk):
    """An empty array as Zarr.jl writes it: chunks == shape == [0] (zarr-python refuses chunk length 0)."""
    meta = {"zarr_format": 2, "shape": [0], "chunks": [0], "dtype": dtype, "compressor": None,
            "fill_value": None, "order": "C", "filters": [{"id": "vlen-utf8"}] if dtype == "|O" else None}
    store[path + "/.zarray"] = json.dumps(meta).encode()
    store[path + "/.zattrs"] = b"{}"
    if with_chunk:
        store[path + "/0"] = b""


def write_daf(path, group="", mode="w"):
    """Writes the data set to a zarr-python ZipStore at path, at its root or (DataAxesFormats'
    ".dafs.zarr.zip" convention, several data sets in one archive) in `group`."""
    store = zarr.ZipStore(path, mode=mode)
    top = zarr.group(store=store)
    root = top.require_group(group) if group else top
    root.attrs.put({})
    base = group + "/" if group else ""
    _array(root, "daf", np.array([1, 0], dtype=np.uint8))

    scalars = _group(root, "scalars")
    for name, (kind, value) in SCALARS.items():
        _array(scalars, name, np.array([value], dtype=object if kind is str else kind))

    axes = _group(root, "axes")
    _array(axes, "cell", np.array(CELLS, dtype=object))
    _array(axes, "gene", np.array(GENES, dtype=object))
    _empty(store, base + "axes/batch", "|O", with_chunk=True)

    vectors = _group(root, "vectors")
    for axis, props in VECTORS.items():
        g = _group(vectors, axis)
        for name, data in props.items():
            _array(g, name, data)
    for axis, props in SPARSE_VECTORS.items():
        g = vectors[axis] if axis in vectors else _group(vectors, axis)
        for name, (nzind, nzval) in props.items():
            s = _group(g, name)
            _array(s, "nzind", nzind)
            if nzval is not None:
                _array(s, "nzval", nzval)
    _group(vectors, "batch")
    _empty(store, base + "vectors/batch/size", "<f8", with_chunk=False)

    matrices = _group(root, "matrices")
    cell = _group(matrices, "cell")
    cell_gene = _group(cell, "gene")
    _array(cell_gene, "UMIs", UMIS.T)  # Zarr shape [n_gene, n_cell]
    for name, matrix in (("sparse_f", SPARSE_F), ("present", PRESENT)):
        s = _group(cell_gene, name)
        colptr, rowval, nzval = csc(matrix)
        _array(s, "colptr", colptr)
        _array(s, "rowval", rowval)
        if matrix.dtype != np.bool_:
            _array(s, "nzval", nzval)
    gene = _group(matrices, "gene")
    _array(_group(gene, "gene"), "corr", CORR.T)
    store.close()
