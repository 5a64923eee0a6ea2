"""Issue 11 point 4: chunks with bytes after the compressed frame, as some writers store them, read as
zarr-python (numcodecs 0.11) reads them: Blosc frames followed by any padding, zlib and bz2 streams followed by
anything, gzip followed by zero bytes. Where numcodecs refuses (zstd and LZ4 with
trailing bytes, truncated frames), the view refuses too, with an error naming the chunk, and one such array
neither stops the others from reading nor makes ncdump exit 0."""
import os
import zipfile

import numcodecs as nc
import numpy as np
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main

VALUES = np.arange(60, dtype="<i4").reshape(6, 10) * 7 - 50

# (name, codec, padding) that numcodecs 0.11 decodes correctly
ACCEPTED = [
    ("blosc_zero_pad", nc.Blosc(), b"\0" * 7),
    ("blosc_ff_pad", nc.Blosc(cname="zstd", shuffle=nc.Blosc.BITSHUFFLE), b"\xff" * 3),
    ("blosc_long_pad", nc.Blosc(cname="lz4hc"), b"\0" * 4096),
    ("zlib_pad", nc.Zlib(), b"\0\1\2"),
    ("gzip_zero_pad", nc.GZip(), b"\0" * 9),
    ("bz2_pad", nc.BZ2(), b"\xff" * 3),
]
# padding numcodecs refuses: the view must refuse too, never show numbers
REFUSED = [
    ("zstd_pad", nc.Zstd(), b"\0" * 4),
    ("lz4_pad", nc.LZ4(), b"\0" * 4),
    ("blosc_truncated", nc.Blosc(), None),
]


def make(path):
    cases = ACCEPTED + REFUSED
    with zarr.ZipStore(path, mode="w") as store:
        root = zarr.open_group(store, mode="w")
        for name, codec, _ in cases:
            root.array(name, VALUES, chunks=(3, 10), compressor=codec)
    # rewrite every chunk with its padding (or truncated): another writer's framing
    tmp = path + ".tmp"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(tmp, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            name, _, key = info.filename.partition("/")
            pad = {n: p for n, _, p in cases}.get(name, b"")
            if key and not key.startswith("."):
                data = data[:-5] if pad is None else data + pad
            zout.writestr(info.filename, data)
    os.replace(tmp, path)


def test_padded_frames():
    with TempDir() as tmp:
        path = os.path.join(tmp, "padded.zarr.zip")
        make(path)
        root = zarr.open_group(zarr.ZipStore(path, mode="r"), mode="r")
        for name, _, _ in ACCEPTED:
            check_equal(root[name][:].tolist(), VALUES.tolist(), "zarr-python reads " + name)
        for name, _, _ in REFUSED[:2]:
            try:
                root[name][:]
            except Exception:
                pass
            else:
                raise AssertionError("numcodecs accepted %s (behaviour changed?)" % name)
        # every accepted array through ncdump and netCDF4-python
        for name, _, _ in ACCEPTED:
            c = C.cdl(path, "-v", name)
            check_equal(c.data[name], VALUES.reshape(-1).tolist(), "ncdump " + name)
        with C.open_netcdf(path) as ds:
            for name, _, _ in ACCEPTED:
                C.assert_values(C.netcdf_values(ds[name]), VALUES, "netCDF4-python " + name)
            for name, _, _ in REFUSED:
                try:
                    ds[name][:]
                except RuntimeError as e:
                    assert "Filter error" in str(e) or "NCZarr" in str(e), e
                else:
                    raise AssertionError("netCDF4-python read %s" % name)
        # a whole ncdump: exit status non-zero, the message names the refused array
        for name, _, _ in REFUSED:
            r = C.ncdump(path, "-v", name, check=False)
            assert r.returncode != 0, "ncdump of %s exit 0:\n%s" % (name, r.stdout)
            assert name + "/0" in r.stderr, r.stderr


if __name__ == "__main__":
    main([test_padded_frames])
