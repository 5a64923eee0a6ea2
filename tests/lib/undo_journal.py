"""Reads an undo journal (<archive>.mmzip-undo, docs/protocol.md "In-place edits") independently of the
library, so that the tests can say how many bytes recovery must write back: the header (magic "MMZUNDO1",
nonce, the entry's local-header offset, data offset, committed size and CRC, and a CRC of itself), then
records (magic "MZUR", the nonce, the archive offset, the length, a CRC of the rest of the head and the
data), applied in order up to the first one that is torn or of another journal."""
import struct
import zlib


def read(path):
    """{'lfh_off', 'data_off', 'size', 'crc', 'records': [(offset, bytes)]} or None if the header is not whole."""
    with open(path, "rb") as f:
        j = f.read()
    if len(j) < 48 or j[:8] != b"MMZUNDO1" or struct.unpack_from("<I", j, 44)[0] != zlib.crc32(j[:44]):
        return None
    nonce, lfh_off, data_off, size, crc = struct.unpack_from("<QQQQI", j, 8)
    records, pos = [], 48
    while pos + 28 <= len(j):
        magic, rnonce, off, length, rcrc = struct.unpack_from("<IQQII", j, pos)
        if magic != 0x52555A4D or rnonce != nonce or pos + 28 + length > len(j):
            break
        data = j[pos + 28:pos + 28 + length]
        if zlib.crc32(j[pos + 4:pos + 24] + data) != rcrc:
            break
        records.append((off, data))
        pos += 28 + length
    return {"lfh_off": lfh_off, "data_off": data_off, "size": size, "crc": crc, "records": records}


def bytes_to_write_back(path):
    """The bytes recovery writes back from the journal at path: the sum of its whole records' lengths."""
    j = read(path)
    return sum(len(d) for _, d in j["records"]) if j else 0
