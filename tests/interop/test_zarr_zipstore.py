"""zarr-python's ZipStore (2.13, from Debian) reads a Zarr group written into an archive with `mmzip put --dir`,
value for value; the uncompressed chunks are aligned and readable zero-copy through mmzip.Archive."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import os

import numpy as np
import zarr

import mmzip
from mmzip_testlib import TempDir, check_equal, ls_entries, main, mmzip as mmzip_cli, zip_tools_ok


def build_group(path):
    """A group of the kinds of arrays real data sets hold. Returns {array path: numpy array}."""
    rng = np.random.default_rng(7)
    store = zarr.DirectoryStore(path)
    root = zarr.group(store=store)
    root.attrs.update(title="mmzip interop", version=3, scale=[1.5, 2.5])
    arrays = {
        "temperature": rng.normal(280, 10, size=(37, 53)).astype("<f8"),        # default compressor (Blosc)
        "raw/counts": rng.integers(0, 1 << 30, size=(1000,), dtype="<i4"),     # uncompressed chunks
        "raw/flags": rng.integers(0, 2, size=(64, 64), dtype="u1"),
        "big_endian": np.arange(100, dtype=">i8"),
    }
    root.create_dataset("temperature", data=arrays["temperature"], chunks=(10, 20))
    root.create_group("raw").attrs["units"] = "counts"
    root.create_dataset("raw/counts", data=arrays["raw/counts"], chunks=(256,), compressor=None)
    root.create_dataset("raw/flags", data=arrays["raw/flags"], chunks=(32, 32), compressor=None)
    root.create_dataset("big_endian", data=arrays["big_endian"], chunks=(30,), compressor=None)
    # A partly written array: missing chunks must read as the fill value.
    sparse = root.create_dataset("sparse", shape=(40,), chunks=(10,), dtype="<f4", fill_value=-1.0)
    sparse[10:20] = np.arange(10, dtype="<f4")
    arrays["sparse"] = np.concatenate([np.full(10, -1, "<f4"), np.arange(10, dtype="<f4"), np.full(20, -1, "<f4")])
    zarr.consolidate_metadata(store)
    return arrays


def test_zipstore_reads_mmzip_put_dir():
    with TempDir() as d:
        src, archive = os.path.join(d, "g.zarr"), os.path.join(d, "g.zarr.zip")
        arrays = build_group(src)
        mmzip_cli("put", archive, "--dir", src)
        zip_tools_ok(archive)
        store = zarr.ZipStore(archive, mode="r")
        try:
            root = zarr.open_group(store, mode="r")
            check_equal(dict(root.attrs), {"title": "mmzip interop", "version": 3, "scale": [1.5, 2.5]}, "attrs")
            check_equal(root["raw"].attrs["units"], "counts", "raw attrs")
            for name, want in arrays.items():
                got = root[name][...]
                check_equal(got.dtype, want.dtype, "dtype of %s" % name)
                assert np.array_equal(got, want), "ZipStore reads different values for %s" % name
            consolidated = zarr.open_consolidated(store, mode="r")
            assert np.array_equal(consolidated["temperature"][...], arrays["temperature"]), "consolidated read"
        finally:
            store.close()


def test_uncompressed_chunks_are_aligned_zero_copy():
    with TempDir() as d:
        src, archive = os.path.join(d, "g.zarr"), os.path.join(d, "g.zarr.zip")
        arrays = build_group(src)
        mmzip_cli("put", archive, "--dir", src)
        listed = ls_entries(archive)
        chunk_keys = [k for k in listed if k.startswith("raw/counts/") and not k.endswith(".zarray")]
        check_equal(sorted(chunk_keys), ["raw/counts/%d" % i for i in range(4)], "chunk keys of raw/counts")
        with mmzip.Archive(archive) as a:
            for k in chunk_keys:
                assert listed[k]["offset"] % 64 == 0, "%s data at %d is not 64-byte aligned" % (k, listed[k]["offset"])
                view = a[k]
                check_equal(view.readonly, True, "read-only view of %s" % k)
                chunk = np.frombuffer(view, dtype="<i4")
                i = int(k.rsplit("/", 1)[1])
                want = arrays["raw/counts"][i * 256:(i + 1) * 256]
                # The last chunk is stored at full chunk size, padded with the fill value.
                assert np.array_equal(chunk[:len(want)], want), "chunk %s differs" % k
                # numpy's view shares the mapping: its address is inside the archive's mapping, not a copy.
                check_equal(chunk.ctypes.data % 64, 0, "address alignment of chunk %s" % k)


if __name__ == "__main__":
    main([test_zipstore_reads_mmzip_put_dir, test_uncompressed_chunks_are_aligned_zero_copy])
