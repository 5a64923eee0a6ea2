"""Writes the seed corpus of the view fuzzer (tests/fuzz/view_corpus/) from the compat and nczarr test fixtures:
archives written by zarr-python, xarray, DataAxesFormats' layout and netCDF-C (nccopy through the map), turned
into fuzz_view.c's input format ("name\\n" + bytes per entry, entries separated by "\\n@@\\n"). Every metadata
entry is kept; chunks are kept while the input stays under 60 KB. Run from a configured build (the nccopy
fixtures need `mmzip run`):
    PYTHONPATH=build/python:tests/lib:tests/compat MMZIP_BIN=build/bin/mmzip python3 tests/fuzz/make_view_seeds.py
"""
import hashlib
import os
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", "compat"), os.path.join(HERE, "..", "lib")]

import numpy as np  # noqa: E402
import zarr  # noqa: E402

import daf_fixture  # noqa: E402
import test_fill_values  # noqa: E402
import test_metadata_invariant  # noqa: E402
import test_padded_codecs  # noqa: E402

LIMIT = 60000
SEP = b"\n@@\n"


def seed_of(archive):
    with zipfile.ZipFile(archive) as z:
        infos = z.infolist()
        meta = [i for i in infos if i.filename.rsplit("/", 1)[-1].startswith((".z", "zarr.json"))]
        chunks = sorted((i for i in infos if i not in meta and not i.is_dir()), key=lambda i: i.file_size)
        parts = [i.filename.encode() + b"\n" + z.read(i.filename) for i in meta]
        size = sum(len(p) + len(SEP) for p in parts)
        for i in chunks:
            part = i.filename.encode() + b"\n" + z.read(i.filename)
            if size + len(part) + len(SEP) > LIMIT:
                continue
            parts.append(part)
            size += len(part) + len(SEP)
    return SEP.join(parts)


def dtypes_fixture(path):
    import test_dtypes
    with zarr.ZipStore(path, mode="w") as store:
        root = zarr.open_group(store, mode="w")
        root.attrs.update(test_dtypes.AWKWARD_ATTRS)
        for name, (data, kw) in test_dtypes.arrays().items():
            if data is None:
                root.create_dataset(name, **kw)
            else:
                root.array(name, data, **kw)


def main():
    out_dir = os.path.join(HERE, "view_corpus")
    os.makedirs(out_dir, exist_ok=True)
    fixtures = dict(test_metadata_invariant.FIXTURES)
    fixtures.update(dtypes=dtypes_fixture, fill_xarray=test_fill_values.xarray_archive,
                    fill_zarr=test_fill_values.zarr_python_archive, padded=test_padded_codecs.make,
                    daf_group=lambda p: daf_fixture.write_daf(p, group="lung"))
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in sorted(fixtures.items()):
            path = os.path.join(tmp, name + ".zarr.zip")
            make(path)
            seed = seed_of(path)
            digest = hashlib.sha1(seed).hexdigest()[:12]
            with open(os.path.join(out_dir, "seed_%s_%s" % (name, digest)), "wb") as f:
                f.write(seed)
            print(name, len(seed))


if __name__ == "__main__":
    main()
