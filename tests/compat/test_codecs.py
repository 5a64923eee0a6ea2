"""Issue point 2: compressed arrays (zarr-python's default Blosc with every codec and shuffle mode Debian's
libblosc has, zlib, gzip, bz2, lzma, zstd, lz4) and the numcodecs filters the view decodes exactly read
with the values zarr-python reads; filters the view cannot decode give an error, never raw bytes."""
import os
import re
import subprocess
import zipfile

import numcodecs
import numpy as np
import zarr

import compat_lib as C
from mmzip_testlib import BUILD, SOURCE, TempDir, check_equal, main

PROBE = os.path.join(BUILD, "bin", "compat_view_probe")

RNG = np.random.default_rng(7)
DATA = {
    "f8": RNG.normal(size=(37, 23)),
    "i4": RNG.integers(-2 ** 31, 2 ** 31, size=(37, 23), dtype=np.int32),
    "u2": RNG.integers(0, 2 ** 16, size=(37, 23), dtype=np.uint16),
    "i1": RNG.integers(-128, 128, size=(37, 23), dtype=np.int8),
}
CHUNKS = (10, 7)  # partial chunks at both edges


def compressors():
    out = {"default": None}  # zarr-python's default: Blosc(lz4, shuffle)
    for cname in numcodecs.blosc.list_compressors():
        for shuffle, tag in ((numcodecs.Blosc.NOSHUFFLE, "noshuffle"), (numcodecs.Blosc.SHUFFLE, "shuffle"),
                             (numcodecs.Blosc.BITSHUFFLE, "bitshuffle")):
            out["blosc_%s_%s" % (cname, tag)] = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle)
    out.update({
        "zlib": numcodecs.Zlib(level=6),
        "gzip": numcodecs.GZip(level=6),
        "bz2": numcodecs.BZ2(level=9),
        "lzma_xz": numcodecs.LZMA(),
        "lzma_alone": numcodecs.LZMA(format=2, check=-1),
        "zstd": numcodecs.Zstd(level=3),
        "lz4": numcodecs.LZ4(acceleration=1),
    })
    return out


def filters():
    """name -> (dtype of the array, filters, compressor): filters the view decodes exactly."""
    return {
        "shuffle": ("f8", [numcodecs.Shuffle(elementsize=8)], numcodecs.Zlib()),
        "delta": ("i4", [numcodecs.Delta(dtype="<i4")], numcodecs.Blosc()),
        "delta_narrow": ("i1", [numcodecs.Delta(dtype="|i1", astype="<i2")], None),
        "astype": ("f8", [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")], None),
        "quantize": ("f8", [numcodecs.Quantize(digits=3, dtype="<f8", astype="<f4")], numcodecs.Zstd()),
        "fixedscaleoffset": ("f8", [numcodecs.FixedScaleOffset(offset=0, scale=100, dtype="<f8", astype="<i4")], None),
        "bitround": ("f8", [numcodecs.BitRound(keepbits=10)], numcodecs.Blosc()),
        "crc32": ("u2", [numcodecs.CRC32()], None),
        "adler32": ("i4", [numcodecs.Adler32(), numcodecs.Shuffle(elementsize=4)], numcodecs.LZ4()),
        "base64": ("i1", [numcodecs.Base64()], None),
    }


def _write(path, compression=zipfile.ZIP_STORED):
    store = zarr.ZipStore(path, mode="w", compression=compression)
    root = zarr.group(store=store)
    made = []
    for cname, comp in compressors().items():
        for dt, data in DATA.items():
            name = "%s_%s" % (cname, dt)
            kwargs = {} if comp is None else {"compressor": comp}
            root.array(name, data, chunks=CHUNKS, **kwargs)
            made.append(name)
    for fname, (dt, flt, comp) in filters().items():
        data = DATA[dt]
        if fname == "fixedscaleoffset":
            data = np.round(data, 2)
        root.array("filter_" + fname, data, chunks=CHUNKS, filters=flt, compressor=comp)
        made.append("filter_" + fname)
    root.array("filter_packbits", RNG.integers(0, 2, size=(37, 23)).astype(bool), chunks=CHUNKS,
               filters=[numcodecs.PackBits()], compressor=numcodecs.GZip())
    made.append("filter_packbits")
    # Undecodable: the view must refuse their chunks.
    root.array("bad_categorize", np.array(["a", "b", "a", "c"] * 5, dtype=object), dtype=object, chunks=(7,),
               object_codec=numcodecs.Categorize(["a", "b", "c"], dtype=object, astype="u1"))
    root.array("bad_json", np.array([[1, 2], [3], []] * 3, dtype=object), dtype=object, chunks=(4,),
               object_codec=numcodecs.JSON())
    root.array("bad_lzma_raw", DATA["i4"], chunks=CHUNKS, compressor=numcodecs.LZMA(
        format=3, filters=[{"id": 0x21, "preset": 1}]))
    root.array("good_neighbour", np.arange(5), chunks=(5,))
    store.close()
    return made


def _compare_all(path, made):
    store = zarr.ZipStore(path, mode="r")
    root = zarr.open_group(store, mode="r")
    try:
        with C.open_netcdf(path) as ds:
            for name in made:
                C.assert_values(C.netcdf_values(ds[name]), C.expected_presentation(root[name]), name)
    finally:
        store.close()


def test_every_codec_reads_exactly():
    with TempDir() as tmp:
        path = os.path.join(tmp, "codecs.zarr.zip")
        made = _write(path)
        check_equal(len([n for n in made if n.startswith("blosc_")]), len(numcodecs.blosc.list_compressors()) * 3 * 4,
                    "blosc codec x shuffle x dtype")
        assert "snappy" in numcodecs.blosc.list_compressors() and "zstd" in numcodecs.blosc.list_compressors()
        _compare_all(path, made)


def test_deflated_zip_entries_too():
    """A ZipStore that also deflates its entries: the ZIP layer and the Zarr codec both decoded."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "deflated.zarr.zip")
        made = _write(path, zipfile.ZIP_DEFLATED)
        _compare_all(path, [n for n in made if n.startswith(("default", "zstd", "filter_delta"))])


def test_ncdump_prints_decoded_values():
    """Blosc (zarr-python's default) through ncdump: the printed numbers are the data, not Blosc bytes."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "codecs.zarr.zip")
        _write(path)
        c = C.cdl(path, "-v", "default_i4,zstd_u2,lzma_alone_i1", "-p", "17,17")
        for name, dt in (("default_i4", "i4"), ("zstd_u2", "u2"), ("lzma_alone_i1", "i1")):
            got = np.array(c.data[name]).reshape(DATA[dt].shape)
            assert np.array_equal(got, DATA[dt]), name


def test_undecodable_filters_are_errors():
    with TempDir() as tmp:
        path = os.path.join(tmp, "codecs.zarr.zip")
        _write(path)
        for name, codec in (("bad_categorize", "categorize"), ("bad_json", "json2"), ("bad_lzma_raw", "lzma")):
            # the metadata is presented (the file opens); the data is refused
            p = C.ncdump(path, "-v", name, check=False)
            assert p.returncode != 0, "%s: ncdump succeeded:\n%s" % (name, p.stdout)
            assert "Filter error" in p.stderr and codec in p.stderr, "%s: %s" % (name, p.stderr)
            assert name in p.stdout, p.stdout  # the header was printed
            probe = subprocess.run([PROBE, path, "/%s/0.0" % name], capture_output=True)  # 2-D or char
            check_equal(probe.returncode, 2, "view_probe status for " + name)
            check_equal(probe.stdout, b"", "no bytes served for " + name)
        with C.open_netcdf(path) as ds:
            try:
                ds["bad_json"][:]
                raise AssertionError("netCDF4-python read an undecodable array")
            except RuntimeError as e:
                assert "Filter error" in str(e), e
            check_equal(ds["good_neighbour"][:].tolist(), list(range(5)), "the rest of the archive reads")


def test_every_codec_of_the_table_is_tested():
    """Each compressor and filter row of the view's codec table (nczarr_map/view/codecs/codec_table.c) is one
    that this file writes with numcodecs and compares with zarr-python, so that a codec is not added without
    its test; each Zarr v3 name is written by test_zarr_v3.py."""
    with open(os.path.join(SOURCE, "nczarr_map", "view", "codecs", "codec_table.c"), encoding="utf-8") as f:
        rows = re.findall(r'^\s*\{(NULL|"[a-z0-9_.-]+"),\s*(NULL|"[a-z0-9_.-]+"),\s*(COMPRESSOR|FILTER|OBJECT)',
                          f.read(), re.M)
    assert len(rows) >= 19, rows
    table_v2 = {v2.strip('"') for v2, _, role in rows if v2 != "NULL" and role != "OBJECT"}
    written = {numcodecs.Blosc().codec_id, numcodecs.PackBits().codec_id}  # "default" (None); filter_packbits
    written |= {c.codec_id for c in compressors().values() if c is not None}
    for _, flt, comp in filters().values():
        written |= {c.codec_id for c in flt} | ({comp.codec_id} if comp is not None else set())
    check_equal(sorted(table_v2 - written), [], "codec table rows without an end-to-end test here")
    with open(os.path.join(SOURCE, "tests", "compat", "test_zarr_v3.py"), encoding="utf-8") as f:
        v3_test = f.read()
    table_v3 = {v3.strip('"') for _, v3, _ in rows if v3 != "NULL"}
    check_equal(sorted(n for n in table_v3 if '"%s"' % n not in v3_test), [], "v3 names not in test_zarr_v3.py")


if __name__ == "__main__":
    main([test_every_codec_reads_exactly, test_deflated_zip_entries_too, test_ncdump_prints_decoded_values,
          test_undecodable_filters_are_errors, test_every_codec_of_the_table_is_tested])
