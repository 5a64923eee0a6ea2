"""An independent reader of ZIP structure, for asserting what mmzip writes byte by byte.

Python's zipfile hides the layout (it never parses local-header extras, and reads only what it needs), so
the interop tests parse the end records, the central directory and every local header here, with nothing
shared with the C library. Each record is returned as a dict of its raw fields."""
import struct

SIG_LFH = 0x04034B50
SIG_CDH = 0x02014B50
SIG_EOCD = 0x06054B50
SIG_Z64_EOCD = 0x06064B50
SIG_Z64_LOC = 0x07064B50
EXTRA_ZIP64 = 0x0001
EXTRA_ALIGN = 0xA11E


class LayoutError(AssertionError):
    pass


def parse_extras(blob, where):
    """Splits an extra-field blob into a list of (id, bytes); raises if it is not well-formed TLV."""
    out, i = [], 0
    while i < len(blob):
        if i + 4 > len(blob):
            raise LayoutError("%s: %d stray bytes at the end of the extra field" % (where, len(blob) - i))
        xid, xlen = struct.unpack_from("<HH", blob, i)
        if i + 4 + xlen > len(blob):
            raise LayoutError("%s: extra field 0x%04x runs past the extra area" % (where, xid))
        out.append((xid, blob[i + 4:i + 4 + xlen]))
        i += 4 + xlen
    return out


def end_records(data):
    """Finds the EOCD at the end of data (no comment scan beyond 64 KiB) and the ZIP64 records before it."""
    start = max(0, len(data) - 22 - 0xFFFF)
    pos = data.rfind(struct.pack("<I", SIG_EOCD), start)
    while pos >= 0:
        clen = struct.unpack_from("<H", data, pos + 20)[0]
        if pos + 22 + clen == len(data):
            break
        pos = data.rfind(struct.pack("<I", SIG_EOCD), start, pos)
    if pos < 0:
        raise LayoutError("no end-of-central-directory record")
    f = struct.unpack_from("<IHHHHIIH", data, pos)
    eocd = dict(pos=pos, disk=f[1], cd_disk=f[2], n_disk=f[3], n=f[4], cd_size=f[5], cd_off=f[6],
                comment=data[pos + 22:pos + 22 + f[7]])
    res = dict(eocd=eocd, locator=None, z64=None)
    if pos >= 20 and struct.unpack_from("<I", data, pos - 20)[0] == SIG_Z64_LOC:
        lf = struct.unpack_from("<IIQI", data, pos - 20)
        res["locator"] = dict(pos=pos - 20, disk=lf[1], z64_off=lf[2], disks=lf[3])
        zp = lf[2]
        zf = struct.unpack_from("<IQHHIIQQQQ", data, zp)
        if zf[0] != SIG_Z64_EOCD:
            raise LayoutError("the ZIP64 locator points at %d, which is no ZIP64 end record" % zp)
        res["z64"] = dict(pos=zp, rest=zf[1], made_by=zf[2], needed=zf[3], disk=zf[4], cd_disk=zf[5],
                          n_disk=zf[6], n=zf[7], cd_size=zf[8], cd_off=zf[9])
    return res


def central_directory(data):
    """Returns (end_records, [central directory records]) with the ZIP64 values already applied."""
    ends = end_records(data)
    src = ends["z64"] or ends["eocd"]
    off, size, n = src["cd_off"], src["cd_size"], src["n"]
    recs, p = [], off
    for i in range(n):
        f = struct.unpack_from("<IHHHHHHIIIHHHHHII", data, p)
        if f[0] != SIG_CDH:
            raise LayoutError("central directory record %d at %d has signature %08x" % (i, p, f[0]))
        nlen, xlen, clen = f[10], f[11], f[12]
        name = data[p + 46:p + 46 + nlen]
        extra = data[p + 46 + nlen:p + 46 + nlen + xlen]
        r = dict(pos=p, made_by=f[1], needed=f[2], flags=f[3], method=f[4], time=f[5], date=f[6], crc=f[7],
                 csize=f[8], usize=f[9], disk=f[13], iattr=f[14], eattr=f[15], lfh=f[16], name=name,
                 extras=parse_extras(extra, "central record of %r" % name), raw_sizes=(f[8], f[9], f[16]))
        z64 = dict(r["extras"]).get(EXTRA_ZIP64)
        if z64 is not None:
            vals, k = [], 0
            while k + 8 <= len(z64):
                vals.append(struct.unpack_from("<Q", z64, k)[0])
                k += 8
            for field in ("usize", "csize", "lfh"):
                if r[field] == 0xFFFFFFFF:
                    r[field] = vals.pop(0)
            r["z64_len"] = len(z64)
        recs.append(r)
        p += 46 + nlen + xlen + clen
    if p - off != size:
        raise LayoutError("central directory: %d records take %d bytes, the end record says %d" % (n, p - off, size))
    return ends, recs


def local_header(data, offset):
    """Parses the local header at offset; returns its fields, extras and the offset of its data."""
    f = struct.unpack_from("<IHHHHHIIIHH", data, offset)
    if f[0] != SIG_LFH:
        raise LayoutError("no local header at %d (signature %08x)" % (offset, f[0]))
    nlen, xlen = f[9], f[10]
    name = data[offset + 30:offset + 30 + nlen]
    extra = data[offset + 30 + nlen:offset + 30 + nlen + xlen]
    return dict(pos=offset, needed=f[1], flags=f[2], method=f[3], time=f[4], date=f[5], crc=f[6], csize=f[7],
                usize=f[8], name=name, extras=parse_extras(extra, "local header of %r" % name),
                data_offset=offset + 30 + nlen + xlen)


def alignment_field(extras):
    """The 0xA11E "Data Stream Alignment" field: (alignment, allow_method_change, padding) or None."""
    for xid, body in extras:
        if xid == EXTRA_ALIGN:
            if len(body) < 2:
                raise LayoutError("0xA11E field of %d bytes is too short" % len(body))
            v = struct.unpack_from("<H", body, 0)[0]
            if any(body[2:]):
                raise LayoutError("0xA11E padding is not zero")
            return v & 0x7FFF, bool(v & 0x8000), len(body) - 2
    return None
