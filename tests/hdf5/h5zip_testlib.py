"""Helpers shared by the HDF5 driver tests: a sample HDF5 content with known values, archives with other
entries around the member, and reading values back with h5dump (binary output, compared as numbers)."""
import os
import re
import subprocess
import zipfile

import numpy as np
import h5py

import mmzip
from mmzip_testlib import MMZIP, run, mmzip_run, check_equal

mmzip.register_h5py()

OTHER_ENTRIES = {"README.txt": b"an archive that holds more than HDF5\n",
                 "table.csv": b"a,b\n1,2\n3,4\n" * 50}


def make_archive(path, extra=OTHER_ENTRIES):
    """A fresh archive (made with Python zipfile, stored) holding `extra`."""
    if os.path.exists(path):
        os.unlink(path)
    with zipfile.ZipFile(path, "w") as z:
        for name, data in extra.items():
            z.writestr(name, data)


def sample_arrays(seed):
    """The datasets of sample content number `seed`: name -> (array, create_dataset keywords)."""
    rng = np.random.default_rng(seed)
    return {
        "contiguous": (np.arange(1000, dtype="<i4") * (seed + 1), {}),
        "chunked": (rng.standard_normal((40, 30)), {"chunks": (8, 10)}),
        "gzipped": (np.arange(5000, dtype="<f4").reshape(50, 100) / (seed + 3),
                    {"chunks": (10, 25), "compression": "gzip", "compression_opts": 6}),
        "grp/sub/nested": (np.array([seed, seed + 1, seed + 2], dtype="<i8"), {}),
    }


def sample_attributes(seed):
    return {"/": {"title": "sample %d" % seed, "version": np.int32(seed)},
            "/grp": {"units": "kelvin", "scale": np.float64(0.5 * seed)}}


def write_sample(f, seed):
    """Writes sample content `seed` into an open h5py.File."""
    for name, (arr, kw) in sample_arrays(seed).items():
        f.create_dataset(name, data=arr, **kw)
    for obj, attrs in sample_attributes(seed).items():
        for k, v in attrs.items():
            f[obj].attrs[k] = v


def check_sample(f, seed, where=""):
    """Asserts that an open h5py.File holds sample content `seed`, value for value."""
    for name, (arr, kw) in sample_arrays(seed).items():
        d = f[name]
        if not np.array_equal(d[...], arr):
            raise AssertionError("%s%s: dataset values differ" % (where, name))
        if kw.get("chunks") and d.chunks != kw["chunks"]:
            raise AssertionError("%s%s: chunks %r, want %r" % (where, name, d.chunks, kw["chunks"]))
        if kw.get("compression") and d.compression != kw["compression"]:
            raise AssertionError("%s%s: compression %r" % (where, name, d.compression))
    for obj, attrs in sample_attributes(seed).items():
        for k, v in attrs.items():
            got = f[obj].attrs[k]
            if isinstance(got, bytes):
                got = got.decode()
            if got != v:
                raise AssertionError("%s%s@%s: got %r, want %r" % (where, obj, k, got, v))


def entry_table(archive):
    """{name: (data_offset, crc32)} of every entry, from zipfile (which reads the central directory and
    local headers independently of mmzip)."""
    out = {}
    with zipfile.ZipFile(archive) as z:
        for i in z.infolist():
            with open(archive, "rb") as fh:
                fh.seek(i.header_offset + 26)
                n, m = int.from_bytes(fh.read(2), "little"), int.from_bytes(fh.read(2), "little")
            out[i.filename] = (i.header_offset + 30 + n + m, i.CRC, i.compress_type)
    return out


def extract(archive, member, dest_dir):
    """Extracts member with Info-ZIP unzip (which checks its CRC) and returns the path."""
    run(["unzip", "-o", "-q", archive, member, "-d", dest_dir])
    return os.path.join(dest_dir, member)


def h5dump_values(path, dataset, dtype, under_mmzip_run=False, workdir="."):
    """The values of dataset as h5dump writes them in binary (little-endian), as a flat numpy array."""
    out = os.path.join(workdir, "h5dump-%d.bin" % os.getpid())
    if os.path.exists(out):
        os.unlink(out)
    cmd = ["h5dump", "-d", dataset, "-b", "LE", "-o", out, path]
    (mmzip_run(*cmd) if under_mmzip_run else run(cmd))
    vals = np.fromfile(out, dtype=np.dtype(dtype).newbyteorder("<"))
    os.unlink(out)
    return vals


def h5dump_attribute(path, attr, under_mmzip_run=False):
    """The text h5dump prints between DATA { and } for an attribute, e.g. '(0): "sample 1"'."""
    cmd = ["h5dump", "-a", attr, path]
    out = (mmzip_run(*cmd) if under_mmzip_run else run(cmd)).stdout
    m = re.search(r"DATA \{\s*(.*?)\s*\}", out, re.S)
    if not m:
        raise AssertionError("h5dump -a %s printed no data:\n%s" % (attr, out))
    return m.group(1).strip()


def check_sample_with_h5dump(path, seed, under_mmzip_run=False, workdir="."):
    """Checks sample content `seed` through h5dump (the real tool, not h5py): every dataset's values in
    binary, and the attributes as text."""
    for name, (arr, kw) in sample_arrays(seed).items():
        got = h5dump_values(path, "/" + name, arr.dtype, under_mmzip_run, workdir)
        if not np.array_equal(got, arr.ravel()):
            raise AssertionError("h5dump %s /%s: values differ" % (path, name))
    check_equal(h5dump_attribute(path, "/title", under_mmzip_run), '(0): "sample %d"' % seed, "h5dump /title")
    check_equal(h5dump_attribute(path, "/grp/units", under_mmzip_run), '(0): "kelvin"', "h5dump /grp/units")


def strip_name_line(dump):
    """h5dump/ncdump output without its first line, which names the file."""
    return dump.split("\n", 1)[1]


def mmzip_entries(archive):
    """`mmzip ls` parsed: {name: dict(method, size, offset, crc)}."""
    out = subprocess.run([MMZIP, "ls", archive], capture_output=True, text=True, check=True).stdout.splitlines()
    res = {}
    for line in out[1:]:
        p = line.split(None, 6)
        res[p[6]] = dict(method=p[0], size=int(p[1]), offset=int(p[3]), crc=p[5])
    return res
