"""Builds ZIP archives byte by byte, with every field under the caller's control, so that tests can make the
hostile and malformed archives that no well-behaved tool writes. Plain ZIP32 records, plus a ZIP64 extra
field when asked for."""
import struct
import zlib

SIG_LFH = 0x04034B50
SIG_CDH = 0x02014B50
SIG_EOCD = 0x06054B50


class Entry:
    """One entry: its name and stored bytes, and any field of its headers overridden (CRC, sizes, offset,
    method, flags, extras). `data` is what lies in the file; `usize` defaults to its length."""

    def __init__(self, name, data=b"", method=0, usize=None, crc=None, flags=0x800, lfh_name=None,
                 lfh_extra=b"", cd_extra=b"", lfh_offset=None, disk=0, csize=None):
        self.name = name if isinstance(name, bytes) else name.encode()
        self.data, self.method, self.flags = data, method, flags
        self.usize = len(data) if usize is None else usize
        self.csize = len(data) if csize is None else csize
        self.crc = zlib.crc32(data) if crc is None else crc
        self.lfh_name = self.name if lfh_name is None else lfh_name
        self.lfh_extra, self.cd_extra = lfh_extra, cd_extra
        self.lfh_offset, self.disk = lfh_offset, disk


def deflated(name, payload, **kw):
    """An entry holding payload compressed with raw deflate, CRC and size of the payload."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(payload) + c.flush()
    kw.setdefault("usize", len(payload))
    kw.setdefault("crc", zlib.crc32(payload))
    return Entry(name, body, method=8, **kw)


def zip64_extra(*values):
    """A ZIP64 extended-information field holding the given 8-byte values, in the order given."""
    return struct.pack("<HH", 0x0001, 8 * len(values)) + b"".join(struct.pack("<Q", v) for v in values)


def local_header(e):
    return struct.pack("<IHHHHHIIIHH", SIG_LFH, 20, e.flags, e.method, 0, 0x21, e.crc,
                       min(e.csize, 0xFFFFFFFF), min(e.usize, 0xFFFFFFFF), len(e.lfh_name),
                       len(e.lfh_extra)) + e.lfh_name + e.lfh_extra


def central_record(e, offset):
    return struct.pack("<IHHHHHHIIIHHHHHII", SIG_CDH, 0x031E, 20, e.flags, e.method, 0, 0x21, e.crc,
                       min(e.csize, 0xFFFFFFFF), min(e.usize, 0xFFFFFFFF), len(e.name), len(e.cd_extra), 0,
                       e.disk, 0, 0o100644 << 16, offset) + e.name + e.cd_extra


def end_record(count, cd_size, cd_offset, count_on_disk=None, disk=0, cd_disk=0, comment=b""):
    return struct.pack("<IHHHHIIH", SIG_EOCD, disk, cd_disk, count if count_on_disk is None else count_on_disk,
                       count, cd_size, cd_offset, len(comment)) + comment


def archive(entries, extra_records=(), count=None, count_on_disk=None, cd_offset=None, cd_size=None, disk=0,
            cd_disk=0, prefix=b"", comment=b""):
    """Lays out entries (local header + data each), then the central directory (one record per entry, plus
    extra_records given as (entry, offset)), then the end record. Any end-record field may be overridden.
    Offsets are relative to the end of prefix, as a tool that did not know about the prefix would write."""
    body, offsets = bytearray(), []
    for e in entries:
        offsets.append(len(body))
        body += local_header(e) + e.data
    cd = bytearray()
    for e, off in zip(entries, offsets):
        cd += central_record(e, off if e.lfh_offset is None else e.lfh_offset)
    for e, off in extra_records:
        cd += central_record(e, off)
    n = len(entries) + len(extra_records)
    eocd = end_record(n if count is None else count, len(cd) if cd_size is None else cd_size,
                      len(body) if cd_offset is None else cd_offset, count_on_disk, disk, cd_disk, comment)
    return bytes(prefix + body + cd + eocd), offsets
