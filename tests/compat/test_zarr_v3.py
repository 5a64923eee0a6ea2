"""Zarr v3 through Debian's unmodified netCDF-C 4.9.0 (which reads only v2): the compatibility view presents
zarr.json archives in the v2 form 4.9.0 reads. Fixtures come from zarrita (JavaScript, an implementation
nobody here wrote: tests/compat/zarrita) for every codec it can encode, and from the specification-driven
test writer zarr_v3.py for the rest (gzip, crc32c, vlen strings, sharding, complex, float16, hexadecimal
fill values, consolidated metadata); zarrita's own reader checks those too. Every value ncdump prints is
compared with what zarrita reads and with the data written."""
import hashlib
import json
import math
import os
import subprocess
import zipfile

import numpy as np

import compat_lib as C
import zarr_v3 as V
from mmzip_testlib import TempDir, check_equal, main

from compat_lib import ZARRITA, node, zip_dir


def zarrita_read(archive, paths):
    return node("read_arrays.mjs", archive, *paths)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def scalar(v):
    """A zarrita JSON value as a Python number (exact integers)."""
    if isinstance(v, str):
        if v in ("NaN", "Infinity", "-Infinity"):
            return float(v.replace("Infinity", "inf"))
        return int(v)
    return v


def same_number(got, want):
    if got is None or want is None:
        return got is want
    if isinstance(want, float) or isinstance(got, float):
        if math.isnan(want):
            return isinstance(got, float) and math.isnan(got)
        return float(got) == float(want)
    return int(got) == int(want)


def check_numbers(got, want, what):
    got, want = list(got), list(want)
    check_equal(len(got), len(want), what + ": number of values")
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if not same_number(g, w)]
    if bad:
        raise AssertionError("%s: %d values differ, first %r" % (what, len(bad), bad[:5]))


def nc_numbers(var):
    """netCDF4-python's values, flattened, as Python numbers (exact for 64-bit integers)."""
    var.set_auto_maskandscale(False)
    return [x.item() for x in np.asarray(var[:]).reshape(-1)]


# ----------------------------------------------------------------------------------------------------------
# zarrita's fixtures

def _zarrita_archive(tmp):
    directory = os.path.join(tmp, "zarrita")
    os.mkdir(directory)
    p = subprocess.run(["node", os.path.join(ZARRITA, "write_fixtures.mjs"), directory], capture_output=True,
                       text=True)
    if p.returncode:
        raise AssertionError("zarrita could not write the fixtures:\n" + p.stderr)
    arrays = json.loads(p.stdout)
    archive = os.path.join(tmp, "zarrita.zarr.zip")
    zip_dir(directory, archive)
    return archive, arrays


def test_zarrita_fixtures_read_by_ncdump():
    with TempDir() as tmp:
        archive, arrays = _zarrita_archive(tmp)
        before = sha256(archive)
        want = zarrita_read(archive, arrays)
        c = C.cdl(archive)
        codecs_seen = set()
        for path in arrays:
            with zipfile.ZipFile(archive) as z:
                meta = json.loads(z.read(path + "/zarr.json"))
            codecs_seen.update(x["name"] for x in meta["codecs"])
            var = c.vars[path]
            shape = [c.dims[d] for d in var["dims"]]
            check_equal(shape, want[path]["shape"] or [1], path + " shape")
            check_numbers(c.data[path], [scalar(v) for v in want[path]["data"]], "ncdump " + path)
        check_equal(sorted(codecs_seen), ["blosc", "bytes", "transpose", "zstd"], "codecs zarrita wrote")
        check_equal(len(arrays), 33, "arrays written by zarrita")
        # dimension_names become netCDF dimensions; attributes are kept
        check_equal(c.vars["plain_int32"]["dims"], ["row", "col"], "dimension_names")
        check_equal(c.vars["grp/inner"]["dims"], ["three"], "dimension_names in a group")
        check_equal(c.vars["grp/inner"]["attrs"]["units"], [b"m"], "array attribute")
        check_equal(c.vars["grp/inner"]["attrs"]["scale"], [0.5], "array attribute")
        check_equal(c.vars["grp/inner"]["attrs"]["flags"], [1, 2, 3], "array attribute")
        check_equal(c.gattrs[""]["title"], [b"written by zarrita"], "group attribute")
        check_equal(c.gattrs[""]["ratios"], [0.5, 2.0], "group attribute")
        check_equal(c.gattrs["grp"]["kind"], [b"sub-group"], "sub-group attribute")
        check_equal(c.vars["scalar"]["attrs"]["_ZARR_SHAPE"], [b"[]"], "0-d array")
        check_equal(c.vars["plain_bool"]["type"], "ubyte", "bool as ubyte")
        check_equal(c.vars["big_int32"]["attrs"]["_ZARR_DTYPE"], [b"int32"], "_ZARR_DTYPE")
        check_equal(sha256(archive), before, "the archive is not changed by reading")


def test_zarrita_fixtures_read_by_netcdf4_python():
    with TempDir() as tmp:
        archive, arrays = _zarrita_archive(tmp)
        want = zarrita_read(archive, arrays)
        before = sha256(archive)
        with C.open_netcdf(archive) as ds:
            seen = dict(C.walk_netcdf(ds))
            for path in arrays:
                check_numbers(nc_numbers(seen[path]), [scalar(v) for v in want[path]["data"]], "netCDF4 " + path)
        check_equal(sha256(archive), before, "the archive is not changed by reading")


def test_nccopy_converts_zarrita_fixtures_to_netcdf4():
    """nccopy copies a v3 archive to a netCDF-4 file that holds zarrita's values (read back without the view)."""
    with TempDir() as tmp:
        archive, arrays = _zarrita_archive(tmp)
        want = zarrita_read(archive, arrays)
        out = os.path.join(tmp, "copy.nc")
        C.mmzip_run("nccopy", "-k", "nc4", archive, out)
        with C.open_netcdf(out) as ds:
            check_equal(ds.file_format, "NETCDF4", "nccopy wrote netCDF-4")
            seen = dict(C.walk_netcdf(ds))
            for path in arrays:
                check_numbers(nc_numbers(seen[path]), [scalar(v) for v in want[path]["data"]], "nccopy " + path)
            check_equal(seen["plain_int16"].dimensions, ("row", "col"), "dimension names kept")


# ----------------------------------------------------------------------------------------------------------
# The specification-driven writer: codecs zarrita cannot encode

SHARD_END = {"chunk_shape": [2, 3], "codecs": [V.bytes_codec("little"), {"name": "gzip", "configuration": {"level": 1}}],
             "index_codecs": [V.bytes_codec("little"), {"name": "crc32c"}], "index_location": "end"}
SHARD_START = {"chunk_shape": [3], "codecs": [V.bytes_codec("big"), {"name": "crc32c"}],
               "index_codecs": [V.bytes_codec("little")], "index_location": "start",
               "_gap": b"GAP!", "_reverse": True}
STRINGS = np.array([["alpha", "", "gamma é"], ["δ", "epsilon", "z"]], dtype=object)
BLOBS = np.array([b"\x00\x01raw", b"", b"bytes\xff"], dtype=object)


def _grid(shape, seed, dtype):
    n = int(np.prod(shape))
    return ((np.arange(n) * 37 + seed) % 101 - 50).reshape(shape).astype(dtype)


def _codec_archive(tmp):
    """{path: (expected values, zarrita can read it)} and the archive."""
    archive = os.path.join(tmp, "codecs.zarr.zip")
    w = V.V3Writer(archive)
    w.group("", attributes={"written_by": "zarr_v3.py"})
    w.group("g", attributes={})
    expect = {}

    def add(path, data, zarrita=True, **kw):
        w.array(path, data, **kw)
        shown = np.array(data, copy=True)
        for cell in kw.get("skip_chunks", ()):  # missing chunks read as the fill value
            chunks = kw["chunks"]
            shown[tuple(slice(i * c, (i + 1) * c) for i, c in zip(cell, chunks))] = kw.get("fill", kw.get("fill_value"))
        expect[path] = (shown, zarrita)

    gz = {"name": "gzip", "configuration": {"level": 6}}
    add("gzip_f64", _grid((7, 5), 1, "<f8") / 4, chunks=(3, 2), codecs=[V.bytes_codec("big"), gz])
    add("crc32c_i32", _grid((11,), 2, "<i4"), chunks=(4,), codecs=[V.bytes_codec("little"), {"name": "crc32c"}])
    add("gzip_crc32c_u16", _grid((4, 4), 3, "<u2") + 60, chunks=(4, 2),
        codecs=[{"name": "transpose", "configuration": {"order": [1, 0]}}, V.bytes_codec("little"), gz, {"name": "crc32c"}])
    add("blosc_bitshuffle", _grid((30,), 4, "<i8") * 10 ** 12, chunks=(16,),
        codecs=[V.bytes_codec("little"), {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "bitshuffle", "typesize": 8, "blocksize": 0}}])
    add("zstd_f32", _grid((9,), 5, "<f4") / 8, chunks=(5,), codecs=[V.bytes_codec("little"), {"name": "zstd", "configuration": {"level": 5, "checksum": False}}])
    add("strings", STRINGS, chunks=(1, 2), codecs=[{"name": "vlen-utf8"}], fill_value="", dimension_names=["pair", "word"])
    add("strings_gzip", STRINGS[0], chunks=(2,), codecs=[{"name": "vlen-utf8"}, gz], fill_value="")
    add("blobs", BLOBS, chunks=(2,), codecs=[{"name": "vlen-bytes"}], fill_value="", fill=b"", data_type="bytes", zarrita=False)
    add("complex64", (_grid((5,), 6, "<f4") + 1j * _grid((5,), 7, "<f4")).astype("<c8"), chunks=(2,),
        codecs=[V.bytes_codec("big")], fill_value=["NaN", 0.0], fill=complex(float("nan"), 0), zarrita=False)
    add("complex128", (_grid((2, 2), 8, "<f8") - 1j).astype("<c16"), chunks=(2, 2), fill_value=[0, 0], zarrita=False)
    add("float16", (_grid((6,), 9, "<f2") / 8).astype("<f2"), chunks=(4,), codecs=[V.bytes_codec("big")],
        fill_value="0x7e00", fill=np.float16("nan"), skip_chunks=[(1,)], zarrita=False)
    # zarrita 0.7.5 returns the hexadecimal fill's bits as an integer (3217031168) instead of -1.5
    add("hex_fill_f32", np.full((5,), np.float32(1.5)), chunks=(2,), fill_value="0xbfc00000", fill=-1.5,
        skip_chunks=[(1,)], zarrita=False)
    add("inf_fill", np.arange(6, dtype="<f8"), chunks=(4,), fill_value="-Infinity", fill=-np.inf, skip_chunks=[(1,)])
    add("bool_fill", np.array([True, False, True, True]), chunks=(3,), fill_value=True, fill=True, skip_chunks=[(1,)])
    add("v2_keys", _grid((3, 4), 10, "<i2"), chunks=(2, 3), key_encoding=("v2", "."))
    add("v2_keys_slash", _grid((3, 4), 11, "<u4"), chunks=(2, 3), key_encoding=("v2", "/"))
    add("default_dot", _grid((3, 4), 12, "<i8"), chunks=(2, 3), key_encoding=("default", "."))
    add("g/sharded", _grid((5, 7), 13, "<i4"), chunks=(4, 6), shard=SHARD_END, fill_value=0, dimension_names=["sy", "sx"])
    sparse = np.zeros((10,), dtype="<f8")
    sparse[0:3] = [1.5, -2.5, 3.5]
    sparse[9] = 9.25
    add("g/sharded_start", sparse, chunks=(12,), shard=SHARD_START, fill_value=0, zarrita=False)
    add("g/sharded_strings", np.array(["x", "yy", "", "zzz é"], dtype=object), chunks=(4,),
        shard={"chunk_shape": [2], "codecs": [{"name": "vlen-utf8"}], "index_codecs": [V.bytes_codec("little"), {"name": "crc32c"}]},
        fill_value="")
    add("scalar_i16", np.array(-7, dtype="<i2"), chunks=())
    w.close()
    return archive, expect


def _presented(data):
    """What netCDF shows: strings as UTF-8 bytes, bool as 0/1, complex with a trailing (re, im) axis."""
    if data.dtype == object:
        return [x.encode("utf-8") if isinstance(x, str) else x for x in data.reshape(-1)]
    if data.dtype.kind == "c":
        return [v.item() for v in np.stack([data.real, data.imag], axis=-1).reshape(-1)]
    if data.dtype.kind == "b":
        return [int(v) for v in data.reshape(-1)]
    return [v.item() for v in data.astype(np.float64 if data.dtype == np.float16 else data.dtype).reshape(-1)]


def test_codecs_read_by_ncdump():
    with TempDir() as tmp:
        archive, expect = _codec_archive(tmp)
        before = sha256(archive)
        c = C.cdl(archive)
        for path, (data, _) in expect.items():
            got = c.data[path]
            if data.dtype == object:
                check_equal(C.cdl_strings(c, path), _presented(data), "ncdump " + path)
            else:
                check_numbers(got, _presented(data), "ncdump " + path)
        check_equal(c.vars["strings"]["dims"], C.tool_dims(["pair", "word", "strings_strlen"]), "string dimensions")
        check_equal(c.vars["strings"]["attrs"]["_Encoding"], [b"utf-8"], "_Encoding")
        check_equal(c.vars["complex64"]["dims"], ["_zdim_5", "re_im"], "complex as (re, im)")
        check_equal(c.vars["g/sharded"]["dims"], ["sy", "sx"], "dimension_names of a sharded array")
        check_equal(c.vars["float16"]["type"], "float", "float16 widened")
        check_equal(sha256(archive), before, "the archive is not changed by reading")


def test_codecs_agree_with_zarrita():
    """zarrita reads what the test writer wrote the same way (so the writer follows the specifications), and
    netCDF4-python reads it through the view the same way too."""
    with TempDir() as tmp:
        archive, expect = _codec_archive(tmp)
        readable = [p for p, (_, ok) in expect.items() if ok]
        want = zarrita_read(archive, readable)
        with C.open_netcdf(archive) as ds:
            seen = dict(C.walk_netcdf(ds))
            for path in readable:
                data = expect[path][0]
                if data.dtype == object:
                    check_equal(want[path]["data"], list(data.reshape(-1)), "zarrita " + path)
                    check_equal(C.netcdf_values(seen[path]).reshape(-1).tolist(), _presented(data), "netCDF4 " + path)
                    continue
                check_numbers([scalar(v) for v in want[path]["data"]], _presented(data), "zarrita " + path)
                check_numbers(nc_numbers(seen[path]), [scalar(v) for v in want[path]["data"]], "netCDF4 " + path)
        check_equal(len(readable), 15, "arrays compared with zarrita")


def test_shard_index_and_layout():
    """The fixture's shards really have their index at the start / the end, gaps, chunks out of order and
    empty inner chunks; ncdump shows empty inner chunks as the fill value."""
    with TempDir() as tmp:
        archive, expect = _codec_archive(tmp)
        with zipfile.ZipFile(archive) as z:
            start = z.read("g/sharded_start/c/0")
            end = z.read("g/sharded/c/0/0")
        index = np.frombuffer(start[:64], dtype="<u8").reshape(4, 2)
        check_equal(index[2].tolist(), [V.EMPTY, V.EMPTY], "an empty inner chunk (all fill)")
        assert index[3][0] < index[0][0], "inner chunks stored in reverse order"
        check_equal(start[64:68], b"GAP!", "a gap before the first chunk")
        tail = end[-(16 * 4 + 4):]
        check_equal(int.from_bytes(tail[-4:], "little"), V.crc32c(tail[:-4]), "index crc32c at the end")
        c = C.cdl(archive)
        check_numbers(c.data["g/sharded_start"], expect["g/sharded_start"][0].tolist(), "sharded, index at start")


def _corrupt(archive, name, at):
    with zipfile.ZipFile(archive) as z:
        entries = [(i, z.read(i.filename)) for i in z.infolist()]
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_STORED) as z:
        for info, data in entries:
            if info.filename == name:
                data = bytearray(data)
                data[at] ^= 0x40
                data = bytes(data)
            z.writestr(info, data)


def test_checksum_mismatch_is_an_error():
    with TempDir() as tmp:
        archive, _ = _codec_archive(tmp)
        _corrupt(archive, "crc32c_i32/c/1", 0)
        p = C.ncdump(archive, "-v", "crc32c_i32", check=False)
        assert p.returncode != 0, p.stdout
        assert "crc32c_i32" in p.stderr and "crc32c: checksum mismatch" in p.stderr, p.stderr
        p = C.ncdump(archive, "-v", "gzip_f64", check=False)
        check_equal(p.returncode, 0, "other arrays still read: " + p.stderr)
        archive, _ = _codec_archive(tmp)
        _corrupt(archive, "g/sharded/c/0/0", -2)  # the index checksum
        p = C.ncdump(archive, "-v", "sharded", check=False)
        assert p.returncode != 0 and "sharded" in p.stderr and "index crc32c mismatch" in p.stderr, p.stderr


def test_undecodable_codec_names_array_and_codec():
    with TempDir() as tmp:
        archive = os.path.join(tmp, "odd.zarr.zip")
        w = V.V3Writer(archive)
        w.group("")
        w.array("fine", np.arange(4, dtype="<i4"), chunks=(4,))
        doc = w.array("odd", np.arange(4, dtype="<i4"), chunks=(4,),
                      patch=lambda d: d["codecs"].append({"name": "numcodecs.bz2", "configuration": {"level": 1}}))
        w.close()
        p = C.ncdump(archive, "-v", "odd", check=False)
        assert p.returncode != 0, p.stdout
        assert "odd" in p.stderr and 'codec "numcodecs.bz2" cannot be decoded' in p.stderr, p.stderr
        check_equal(C.cdl(archive, "-v", "fine").data["fine"], [0, 1, 2, 3], "the other array")
        # a data type the view cannot present fails the open, naming the entry
        w = V.V3Writer(archive, mode="a")
        doc = dict(doc, data_type="float8_e4m3", codecs=[V.bytes_codec()])
        w.put("weird/zarr.json", json.dumps(doc))
        w.close()
        p = C.ncdump(archive, check=False)
        assert p.returncode != 0 and "weird/zarr.json" in p.stderr and "float8_e4m3" in p.stderr, p.stderr


def test_consolidated_metadata_is_used():
    """The root's inline consolidated metadata is the hierarchy (as zarr-python reads it)."""
    with TempDir() as tmp:
        archive = os.path.join(tmp, "cons.zarr.zip")
        w = V.V3Writer(archive)
        a = w.array("a", np.arange(3, dtype="<i2"), chunks=(3,), attributes={"from": "file"})
        g = {"zarr_format": 3, "node_type": "group", "attributes": {"level": 1}}
        listed = dict(a, attributes={"from": "consolidated"})
        w.group("", attributes={"top": True}, extra={"consolidated_metadata": {
            "kind": "inline", "must_understand": False, "metadata": {"a": listed, "sub": g}}})
        w.close()
        c = C.cdl(archive)
        check_equal(c.vars["a"]["attrs"]["from"], [b"consolidated"], "attributes from the consolidated metadata")
        check_equal(c.gattrs["sub"]["level"], [1], "a group known only from the consolidated metadata")
        check_equal(c.data["a"], [0, 1, 2], "values")


def test_write_session_is_refused():
    with TempDir() as tmp:
        archive, _ = _codec_archive(tmp)
        before = sha256(archive)
        p = C.mmzip_run("ncdump", "-h", archive, check=False)
        check_equal(p.returncode, 0, p.stderr)
        try:
            ds = C.open_netcdf(archive, "a")
        except OSError as e:
            assert "Permission denied" in str(e) or "Write to read only" in str(e) or "-33" in str(e) or "Operation not permitted" in str(e), e
        else:
            ds.close()
            raise AssertionError("a write session on a Zarr v3 archive was opened")
        check_equal(sha256(archive), before, "nothing written")


if __name__ == "__main__":
    main([test_zarrita_fixtures_read_by_ncdump, test_zarrita_fixtures_read_by_netcdf4_python,
          test_nccopy_converts_zarrita_fixtures_to_netcdf4,
          test_codecs_read_by_ncdump, test_codecs_agree_with_zarrita, test_shard_index_and_layout,
          test_checksum_mismatch_is_an_error, test_undecodable_codec_names_array_and_codec,
          test_consolidated_metadata_is_used, test_write_session_is_refused])
