"""Hostile and malformed archives, built byte by byte, are rejected with an error code and a message that
names the file, the entry (when there is one) and the problem: overlapping entries, offsets and sizes past
the end of the file, entry counts that do not add up, unsafe names ('..', absolute), decompression
bombs, local headers that disagree with the directory, multi-disk archives. No reader crashes (a signal
would show here as a negative exit status), and a writable open never changes a file it cannot parse.

`test_hostile_archives.py --write-corpus DIR` writes every case into DIR, as seeds for the fuzzer."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import os
import sys
import zlib

import mmzip
from mmzip_testlib import TempDir, check_equal, main, mmzip as mmzip_cli
import zipbytes as zb

ENOTZIP, ECORRUPT, EUNSUPPORTED, ECRC, ETOOBIG = -5, -6, -7, -8, -11

A = zb.Entry("a.txt", b"alpha " * 20)
B = zb.Entry("b.txt", b"bravo " * 30)
M = zb.Entry("m.txt", b"mike " * 25)


def overlapping_directory_records():
    """Two directory records share one local header and body: the classic overlapping zip bomb."""
    data, offs = zb.archive([A], extra_records=[(zb.Entry("z.txt", A.data), 0)])
    return data


def data_runs_into_next_header():
    big = zb.Entry("a.txt", A.data, csize=len(A.data) + 40, usize=len(A.data) + 40)
    return zb.archive([big, B])[0]


def local_extra_pushes_data_into_next():
    """The directory is fine; the local header's extra length moves the data start into the next entry."""
    data = zb.archive([A, B])[0]
    return data[:28] + (len(A.data) + 10).to_bytes(2, "little") + data[30:]


def directory_offset_past_eof():
    return zb.archive([A, B], cd_offset=10_000_000)[0]


def directory_size_past_eof():
    return zb.archive([A, B], cd_size=0x7FFFFF00)[0]


def header_offset_past_eof():
    return zb.archive([A, zb.Entry("b.txt", B.data, lfh_offset=0x7FFF0000)])[0]


def compressed_size_past_eof():
    return zb.archive([A, zb.Entry("b.txt", B.data, csize=0x7FFF0000, usize=0x7FFF0000)])[0]


def zip64_size_past_eof():
    e = zb.Entry("b.txt", B.data, csize=0xFFFFFFFF, usize=0xFFFFFFFF, cd_extra=zb.zip64_extra(1 << 62, 1 << 62))
    return zb.archive([A, e])[0]


def zip64_sentinel_without_field():
    return zb.archive([A, zb.Entry("b.txt", B.data, lfh_offset=0xFFFFFFFF)])[0]


def malformed_extra_field():
    return zb.archive([A, zb.Entry("b.txt", B.data, cd_extra=b"\x01\x00\xff\x00abc")])[0]


def count_too_high():
    return zb.archive([A, B], count=5)[0]


def count_too_low():
    return zb.archive([A, B], count=1)[0]


def counts_disagree():
    return zb.archive([A, B], count=2, count_on_disk=1)[0]


def name_runs_past_directory():
    data, _ = zb.archive([A])
    cd = data.rfind(b"PK\x01\x02")
    return data[:cd + 28] + (60000).to_bytes(2, "little") + data[cd + 30:]


def dotdot_name():
    return zb.archive([A, zb.Entry("../../etc/cron.d/evil", B.data)])[0]


def dotdot_inside_name():
    return zb.archive([A, zb.Entry("safe/../../escape", B.data)])[0]


def absolute_name():
    return zb.archive([A, zb.Entry("/etc/passwd", B.data)])[0]


def nul_in_name():
    return zb.archive([A, zb.Entry(b"b.txt\x00.jpg", B.data)])[0]


def empty_name():
    return zb.archive([A, zb.Entry(b"", B.data)])[0]


def multi_disk():
    return zb.archive([A, B], disk=1, cd_disk=1)[0]


def bomb_impossible_ratio():
    """100 deflated bytes claiming 1 GiB: deflate cannot expand by more than about 1032:1."""
    e = zb.deflated("bomb.bin", b"\0" * 100_000, usize=1 << 30)
    return zb.archive([A, e])[0]


def bomb_past_decode_limit():
    """A size claim beyond the default max_decoded_size (16 GiB), through the ZIP64 field."""
    e = zb.deflated("bomb.bin", b"\0" * 100_000)
    e.usize, e.cd_extra = 0xFFFFFFFF, zb.zip64_extra(1 << 40)
    return zb.archive([A, e])[0]


def bomb_understated_size():
    """A real 64 MiB of zeros behind a claimed size of 1 MiB: decoding must stop at the claimed size."""
    e = zb.deflated("bomb.bin", b"\0" * (64 << 20), usize=1 << 20)
    return zb.archive([A, e])[0]


def local_name_differs():
    return zb.archive([A, zb.Entry("m.txt", M.data, lfh_name=b"x.txt"), B])[0]


def first_local_header_differs():
    """The lowest local header must be where the directory says: it tells prepended bytes from debris."""
    return zb.archive([zb.Entry("a.txt", A.data, lfh_name=b"x.txt"), B])[0]


def last_local_header_differs():
    """The physically last entry's local header is wrong: it may be the torn tail of an interrupted writer
    (one that publishes the directory before the data), so readers do not list it, and mmzip check names
    it."""
    return zb.archive([A, zb.Entry("b.txt", B.data, lfh_name=b"x.txt")])[0]


def local_method_differs():
    data, offs = zb.archive([A, M, B])
    i = offs[1] + 8
    return data[:i] + b"\x08\x00" + data[i + 2:]


def stored_sizes_disagree():
    return zb.archive([A, zb.Entry("b.txt", B.data, usize=len(B.data) + 1)])[0]


def stored_crc_wrong():
    return zb.archive([zb.Entry("a.txt", A.data, crc=zlib.crc32(A.data) ^ 1), B])[0]


def truncated_directory():
    data = zb.archive([A, B])[0]
    return data[:-30]


def no_zip_at_all():
    return bytes(range(256)) * 8


def empty_file():
    return b""


# (case, where it fails: "open", "get" (reading the entry), "hidden" (not listed: a torn tail to readers) or
#  "check" (only mmzip check), error code, the entry the error names (None: the archive), words the message
#  must hold)
CASES = [
    (overlapping_directory_records, "open", ECORRUPT, None, ["overlaps"]),
    (data_runs_into_next_header, "open", ECORRUPT, "a.txt", ["overlaps"]),
    (local_extra_pushes_data_into_next, "get", ECORRUPT, "a.txt", ["overlaps"]),
    # An end record that is there but whose fields are wrong names the field, not "no end record".
    (directory_offset_past_eof, "open", ECORRUPT, None, ["end record", "central directory offset (10000000)"]),
    (directory_size_past_eof, "open", ECORRUPT, None, ["end record", "central directory size (2147483392)"]),
    (header_offset_past_eof, "open", ECORRUPT, "b.txt", ["does not fit"]),
    (compressed_size_past_eof, "open", ECORRUPT, "b.txt", ["does not fit"]),
    (zip64_size_past_eof, "open", ECORRUPT, "b.txt", ["does not fit"]),
    (zip64_sentinel_without_field, "open", ECORRUPT, "b.txt", ["ZIP64"]),
    (malformed_extra_field, "open", ECORRUPT, "b.txt", ["extra field"]),
    # An entry count higher or lower than the directory holds, and a local header whose method disagrees with
    # the directory, are read as zipfile reads them, with a warning: test_zipfile_tolerance.py.
    (counts_disagree, "open", ECORRUPT, None, ["end record", "entries on this disk (1)", "total entries (2)"]),
    (name_runs_past_directory, "open", ECORRUPT, None, ["runs past the directory"]),
    (dotdot_name, "open", ECORRUPT, "../../etc/cron.d/evil", ["unsafe name"]),
    (dotdot_inside_name, "open", ECORRUPT, "safe/../../escape", ["unsafe name"]),
    (absolute_name, "open", ECORRUPT, "/etc/passwd", ["unsafe name"]),
    # A name mmzip cannot look up leaves that entry unreachable (reported by check), not the archive.
    (nul_in_name, "unnamed", 0, "b.txt\\x00.jpg", ["cut short by a NUL"]),
    (empty_name, "unnamed", 0, "''", ["empty"]),
    (multi_disk, "open", EUNSUPPORTED, None, ["multi-disk"]),
    (bomb_impossible_ratio, "get", ECORRUPT, "bomb.bin", ["claims", str(1 << 30)]),
    (bomb_past_decode_limit, "get", ETOOBIG, "bomb.bin", [str(1 << 40)]),
    (bomb_understated_size, "get", ECORRUPT, "bomb.bin", ["deflate stream"]),
    (local_name_differs, "get", ECORRUPT, "m.txt", ["local header names a different entry"]),
    (first_local_header_differs, "open", ECORRUPT, "a.txt", ["local header"]),
    (last_local_header_differs, "hidden", ECORRUPT, "b.txt", ["local header"]),
    (stored_sizes_disagree, "open", ECORRUPT, "b.txt", ["compressed size"]),
    # mmzip cat and a whole-entry read check a stored entry's CRC too (zero-copy get only on request).
    (stored_crc_wrong, "get", ECRC, "a.txt", ["CRC-32 mismatch"]),
    (truncated_directory, "open", ENOTZIP, None, ["not a ZIP archive"]),
    (no_zip_at_all, "open", ENOTZIP, None, ["not a ZIP archive"]),
    (empty_file, "open", ENOTZIP, None, ["not a ZIP archive"]),
]


def expect_message(text, path, entry, words, what):
    for part in [path] + ([entry] if entry else []) + words:
        assert part in text, "%s: message lacks %r:\n%s" % (what, part, text)


def expect_cli_failure(args, path, entry, words, what):
    p = mmzip_cli(*args, check=False)
    # A negative status would be a signal (SIGSEGV, SIGBUS): an out-of-bounds read.
    check_equal(p.returncode, 1, "%s: exit status of mmzip %s" % (what, args[0]))
    expect_message(p.stderr, path, entry, words, what + " (mmzip %s)" % args[0])


def run_case(d, case, stage, code, entry, words):
    what = case.__name__
    path = os.path.join(d, what + ".zip")
    data = case()
    with open(path, "wb") as f:
        f.write(data)
    if stage == "open":
        expect_cli_failure(["ls", path], path, entry, words, what)
        try:
            mmzip.Archive(path).close()
            raise AssertionError("%s: mmzip.Archive opened it" % what)
        except mmzip.MmzipError as e:
            check_equal(e.code, code, "%s: error code" % what)
            expect_message(str(e), path, entry, words, what + " (Archive)")
        p = mmzip_cli("put", path, "new.txt", "-", input="x", check=False)
        if data:
            # A writer must refuse too, and leave the file exactly as it was.
            assert p.returncode == 1 and path in p.stderr, "%s: mmzip put: %d %s" % (what, p.returncode, p.stderr)
            with open(path, "rb") as f:
                assert f.read() == data, "%s: a refused writable open changed the file" % what
        else:
            # An empty file (as mktemp leaves) is an empty archive to a writer.
            check_equal(mmzip_cli("cat", path, "new.txt").stdout, "x", "%s: entry put into it" % what)
            return
    elif stage == "hidden":
        check_equal(mmzip_cli("ls", "-1", path).stdout.split(), ["a.txt"], "%s: listed entries" % what)
        p = mmzip_cli("cat", path, entry, check=False)
        assert p.returncode == 1 and "no entry '%s'" % entry in p.stderr, "%s: %s" % (what, p.stderr)
    elif stage == "check":
        check_equal(mmzip_cli("cat", path, entry).stdout, A.data.decode(), "%s: zero-copy read" % what)
    elif stage == "unnamed":
        # The other entry reads; the unnamed one is not listed, and check reports it without failing.
        check_equal(mmzip_cli("ls", "-1", path).stdout.split(), ["a.txt"], "%s: listed entries" % what)
        check_equal(mmzip_cli("cat", path, "a.txt").stdout, A.data.decode(), "%s: the other entry" % what)
        p = mmzip_cli("check", path)
        expect_message(p.stderr, path, entry, ["interop:"] + words, what + " (mmzip check)")
        # zipfile, unzip, 7-Zip and libzip all read the other entries (and this one): no reader objects.
        assert "valid for every ZIP reader: yes" in p.stdout and "{objects: none}" in p.stderr, (p.stdout, p.stderr)
        with mmzip.Archive(path) as a:
            check_equal(bytes(a["a.txt"]), A.data, "%s: Archive reads the other entry" % what)
        # A writable open keeps the entry: zipfile still lists it after a put.
        import zipfile
        before = zipfile.ZipFile(path).namelist()
        mmzip_cli("put", path, "new.txt", "-", input="x")
        after = zipfile.ZipFile(path).namelist()
        # Sorted: a commit of additions writes its records before the older ones (protocol.md §3.3).
        check_equal(sorted(after), sorted(before + ["new.txt"]), "%s: zipfile's listing after mmzip put" % what)
        # pack keeps it too, with its bytes.
        with zipfile.ZipFile(path) as z:
            raw = [(i.filename, z.read(i)) for i in z.infolist()]
        mmzip_cli("pack", path)
        with zipfile.ZipFile(path) as z:
            check_equal(sorted((i.filename, z.read(i)) for i in z.infolist()), sorted(raw),
                        "%s: zipfile's view after pack" % what)
        return
    else:
        # A local-header problem may be found eagerly at open, or lazily at the first read of the entry;
        # either way the error must name the entry and the problem.
        p = mmzip_cli("ls", "-1", path, check=False)
        if p.returncode != 0:
            check_equal(p.returncode, 1, "%s: exit status of mmzip ls" % what)
            expect_message(p.stderr, path, entry, words, what + " (mmzip ls)")
            expect_cli_failure(["check", path], path, entry, words, what)
            return
        names = p.stdout.split()
        assert entry in names, "%s: %r not listed: %r" % (what, entry, names)
        expect_cli_failure(["cat", path, entry], path, entry, words, what)
        # verify=True: zero-copy reads check a stored entry's CRC-32 too (MMZIP_VERIFY_CRC).
        with mmzip.Archive(path, verify=True) as a:
            try:
                a[entry]
                raise AssertionError("%s: mmzip.Archive read %r" % (what, entry))
            except mmzip.MmzipError as e:
                check_equal(e.code, code, "%s: error code" % what)
                expect_message(str(e), path, entry, words, what + " (Archive)")
            # The healthy neighbour still reads: one bad entry does not take down the archive.
            check_equal(bytes(a["a.txt"]) if entry != "a.txt" else bytes(a["b.txt"]),
                        A.data if entry != "a.txt" else B.data, "%s: intact neighbour" % what)
    expect_cli_failure(["check", path], path, entry, words, what)


def test_hostile_archives_are_rejected():
    with TempDir() as d:
        for case, stage, code, entry, words in CASES:
            print("   ", case.__name__, flush=True)
            run_case(d, case, stage, code, entry, words)


def write_corpus(directory):
    os.makedirs(directory, exist_ok=True)
    for case, *_ in CASES:
        data = case()
        if len(data) <= 64 << 10:  # the fuzzer's seeds stay small; the 64 MiB bomb is left out
            with open(os.path.join(directory, "hostile_" + case.__name__ + ".zip"), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--write-corpus":
        write_corpus(sys.argv[2])
    else:
        main([test_hostile_archives_are_rejected])
