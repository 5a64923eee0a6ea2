"""Helpers of the npz tests: independent parsing of where a member's array data lies in the file, file
descriptors and mappings of this process."""
import os
import struct
import zipfile

import numpy as np


def data_offsets(path):
    """{member: absolute offset of the .npy array data} for stored members, found with zipfile's directory,
    the local headers and the .npy headers read from the file's bytes - nothing of mmzip's."""
    out = {}
    with open(path, "rb") as f:
        raw = f.read()
    with zipfile.ZipFile(path) as z:
        for i in z.infolist():
            if i.compress_type != zipfile.ZIP_STORED or not i.filename.endswith(".npy"):
                continue
            h = i.header_offset
            assert raw[h:h + 4] == b"PK\x03\x04", i.filename
            nlen, xlen = struct.unpack("<HH", raw[h + 26:h + 30])
            d = h + 30 + nlen + xlen
            assert raw[d:d + 6] == b"\x93NUMPY", (i.filename, raw[d:d + 8])
            major = raw[d + 6]
            if major == 1:
                hl, pre = struct.unpack("<H", raw[d + 8:d + 10])[0], 10
            else:
                hl, pre = struct.unpack("<I", raw[d + 8:d + 12])[0], 12
            out[i.filename] = d + pre + hl
    return out


def open_fds():
    return len(os.listdir("/proc/self/fd"))


def fds_on(path):
    real = os.path.realpath(path)
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink("/proc/self/fd/" + fd) == real:
                n += 1
        except OSError:
            pass
    return n


def mappings_of(path):
    """[(start, end)] of this process's mappings of the file."""
    real = os.path.realpath(path)
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() == real:
                a, b = parts[0].split("-")
                out.append((int(a, 16), int(b, 16)))
    return out


def address(arr):
    return arr.__array_interface__["data"][0]


def same(a, b):
    """Same dtype (byte order included), shape, order and values."""
    return (a.dtype == b.dtype and a.dtype.str == b.dtype.str and a.shape == b.shape
            and a.flags.f_contiguous == b.flags.f_contiguous and np.array_equal(a, b))
