"""A small Zarr v3 writer for the tests, written from the Zarr v3 core specification and the specifications of
its codecs (bytes, transpose, gzip, zstd, blosc, crc32c, vlen-utf8, vlen-bytes, sharding_indexed) with numpy,
Python's gzip and numcodecs (Debian has zarr-python 2 only, which cannot write v3). Nothing here uses mmzip's
C code: the compatibility view is tested against it, and the tests also check what this writer produces
with zarrita's reader (an independent implementation, tests/compat/zarrita).

    w = V3Writer(path)
    w.group("", attributes={...})
    w.array("x", numpy_array, chunks=(2, 3), codecs=[bytes_codec("big"), {"name": "gzip", ...}],
            fill_value=0, dimension_names=["y", "x"])
    w.close()
"""
import copy
import gzip
import json
import struct
import zipfile

import numcodecs
import numpy as np

EMPTY = 2 ** 64 - 1


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), as the crc32c codec and the sharding index use it."""
    crc = 0xFFFFFFFF
    for b in data:
        crc = _TABLE[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def bytes_codec(endian="little"):
    return {"name": "bytes", "configuration": {"endian": endian}}


DATA_TYPES = {"bool": "?", "int8": "i1", "int16": "i2", "int32": "i4", "int64": "i8", "uint8": "u1",
              "uint16": "u2", "uint32": "u4", "uint64": "u8", "float16": "f2", "float32": "f4", "float64": "f8",
              "complex64": "c8", "complex128": "c16"}


def data_type_of(a):
    if a.dtype == object:
        return "string" if all(isinstance(x, str) for x in a.flat) else "bytes"
    for name, code in DATA_TYPES.items():
        if np.dtype(code) == a.dtype.newbyteorder("="):
            return name
    raise ValueError(a.dtype)


def _vlen(chunk):
    out = [struct.pack("<I", chunk.size)]
    for item in chunk.flat:
        b = item.encode("utf-8") if isinstance(item, str) else bytes(item)
        out.append(struct.pack("<I", len(b)) + b)
    return b"".join(out)


def encode(chunk, codecs, fill):
    """Encodes one chunk (a numpy array of the chunk shape) through a v3 codec list."""
    value = chunk
    for c in codecs:
        name, config = c["name"], c.get("configuration", {})
        if name == "transpose":
            value = np.ascontiguousarray(value.transpose(config["order"]))
        elif name == "bytes":
            order = ">" if config.get("endian") == "big" else "<"
            value = np.ascontiguousarray(value).astype(value.dtype.newbyteorder(order)).tobytes()
        elif name in ("vlen-utf8", "vlen-bytes"):
            value = _vlen(value)
        elif name == "sharding_indexed":
            value = encode_shard(value, config, fill)
        elif name == "gzip":
            value = gzip.compress(value, compresslevel=config.get("level", 5), mtime=0)
        elif name == "zstd":
            value = numcodecs.Zstd(level=config.get("level", 3)).encode(value)
        elif name == "blosc":
            shuffle = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2}[config.get("shuffle", "noshuffle")]
            size = config.get("typesize", 1)
            blosc = numcodecs.Blosc(cname=config.get("cname", "lz4"), clevel=config.get("clevel", 5), shuffle=shuffle)
            value = blosc.encode(np.frombuffer(value, dtype="u%d" % size if len(value) % size == 0 else "u1"))
        elif name == "crc32c":
            value = value + struct.pack("<I", crc32c(value))
        else:
            raise ValueError("the test writer cannot encode " + name)
    return bytes(value)


def encode_shard(shard, config, fill):
    """sharding_indexed: inner chunks equal to the fill value everywhere are left out (index 2^64-1)."""
    inner = config["chunk_shape"]
    grid = [s // c for s, c in zip(shard.shape, inner)]
    pieces, index = [], []
    at_start = config.get("index_location", "end") == "start"
    index_len = 16 * int(np.prod(grid)) + sum(4 for c in config["index_codecs"] if c["name"] == "crc32c")
    offset = index_len if at_start else 0
    cells = list(np.ndindex(*grid))
    encoded = {}
    for cell in (reversed(cells) if config.get("_reverse") else cells):
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(cell, inner))
        part = shard[sl]
        if _all_fill(part, fill):
            continue
        data = encode(part, config["codecs"], fill)
        offset += len(config.get("_gap", b""))
        pieces.append(config.get("_gap", b"") + data)
        encoded[cell] = (offset, len(data))
        offset += len(data)
    for cell in cells:
        index.extend(encoded.get(cell, (EMPTY, EMPTY)))
    idx = encode(np.array(index, dtype=np.uint64).reshape(grid + [2]), config["index_codecs"], None)
    assert len(idx) == index_len
    body = b"".join(pieces)
    return idx + body if at_start else body + idx


def _all_fill(part, fill):
    if part.dtype == object:
        return all(x == fill for x in part.flat)
    if isinstance(fill, float) and np.isnan(fill):
        return bool(np.isnan(part).all())
    return bool((part == fill).all())


class V3Writer:
    def __init__(self, path, mode="w"):
        self.zip = zipfile.ZipFile(path, mode, compression=zipfile.ZIP_STORED)
        self.documents = {}

    def put(self, name, data):
        self.zip.writestr(name, data)

    def group(self, path, attributes=None, extra=None):
        doc = {"zarr_format": 3, "node_type": "group", "attributes": attributes or {}}
        doc.update(extra or {})
        self.documents[path] = doc
        self.put((path + "/" if path else "") + "zarr.json", json.dumps(doc))
        return doc

    def array(self, path, data, chunks, codecs=None, fill_value=0, fill=None, dimension_names=None,
              attributes=None, key_encoding=("default", "/"), data_type=None, skip_chunks=(), write_empty=True,
              shard=None, patch=None):
        """Writes data chunk by chunk. fill_value is the JSON written; fill the value it means (defaults to
        fill_value). shard: the sharding_indexed configuration (then `chunks` is the shard shape)."""
        data = np.asarray(data)
        fill = fill_value if fill is None else fill
        if codecs is None:
            codecs = [bytes_codec("little")] if data.dtype != object else [{"name": "vlen-utf8"}]
        if shard is not None:
            codecs = [{"name": "sharding_indexed", "configuration": shard}]
        doc = {"zarr_format": 3, "node_type": "array", "shape": list(data.shape),
               "data_type": data_type or data_type_of(data),
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
               "chunk_key_encoding": {"name": key_encoding[0], "configuration": {"separator": key_encoding[1]}},
               "fill_value": fill_value, "codecs": _public(codecs), "attributes": attributes or {}}
        if dimension_names is not None:
            doc["dimension_names"] = dimension_names
        if patch:
            patch(doc)
        self.documents[path] = doc
        self.put(path + "/zarr.json", json.dumps(doc))
        grid = [-(-s // c) if c else 0 for s, c in zip(data.shape, chunks)] if data.ndim else []
        for cell in np.ndindex(*grid):
            if cell in skip_chunks:
                continue
            chunk = np.full(chunks, fill, dtype=data.dtype) if data.ndim else data.copy()
            if data.ndim:
                sl = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(cell, chunks, data.shape))
                chunk[tuple(slice(0, x.stop - x.start) for x in sl)] = data[sl]
            if not write_empty and _all_fill(chunk, fill):
                continue
            self.put(path + "/" + chunk_key(cell, key_encoding), encode(chunk, codecs, fill))
        return doc

    def close(self):
        self.zip.close()


def _public(codecs):
    """The codec list as written in zarr.json (without the test writer's private layout knobs)."""
    out = []
    for c in codecs:
        c = copy.deepcopy(c)
        conf = c.get("configuration", {})
        for k in [k for k in conf if k.startswith("_")]:
            del conf[k]
        if "codecs" in conf:
            conf["codecs"] = _public(conf["codecs"])
        out.append(c)
    return out


def chunk_key(cell, key_encoding):
    name, sep = key_encoding
    if name == "default":
        return sep.join(["c"] + [str(i) for i in cell])
    return sep.join(str(i) for i in cell) if cell else "0"
