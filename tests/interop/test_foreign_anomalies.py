"""Never drop what is not ours. Archives written by Python zipfile, Info-ZIP zip, 7-Zip and libzip are damaged
the ways real files are - a wrong CRC-32 in the physically last stored entry, a last local header that
disagrees with the directory, bytes after the end records, bytes between the last entry and the directory,
bytes between the directory and the end records - and then given to `mmzip recover`, `mmzip put` and
`mmzip pack`. For each, zipfile's listing (names and bytes, read without its CRC check; an entry it cannot read
is listed with zipfile's own error) must be the same afterwards (plus the new entry for put); `recover` must
leave the file byte-identical (sha-256); `pack` must keep every entry or refuse and leave the file byte-identical.
`mmzip check` must say, for each, whether the archive is valid for mmzip and for every ZIP reader, and what
recover would do.

Also the archives other readers read that mmzip used to refuse: more than 65,535 entries with no ZIP64 end
records (the 16-bit count wrapped), and an archive comment whose length runs past the end of the file."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import hashlib
import os
import struct
import zipfile

from mmzip_testlib import BUILD, TempDir, check_equal, main, mmzip, run
import zipbytes as zb
import ziplayout as zl

HELPERS = os.path.join(BUILD, "tests", "interop") if BUILD else os.path.dirname(os.path.abspath(__file__))
LIBZIP_WRITE = os.path.join(HELPERS, "libzip_write")

CONTENTS = {"a.txt": b"alpha\n" * 300, "b.bin": bytes(range(256)) * 40, "c.txt": b"charlie " * 500}


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def listing(path):
    """zipfile's view: [(name, bytes or 'unreadable: <zipfile's error>')], CRC check off (a wrong CRC is the
    damage under test; its bytes must survive)."""
    out = []
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            try:
                with z.open(info) as f:
                    f._expected_crc = None
                    data = f.read()
            except zipfile.BadZipFile as e:
                data = "unreadable: %s" % e
            out.append((info.filename, data))
    return out


# ---------------------------------------------------------------------------------------------------------
# Writers: each writes CONTENTS, stored, in this order (so c.txt is the physically last entry).

def write_zipfile(d, path):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for k, v in CONTENTS.items():
            z.writestr(k, v)


def files(d):
    src = os.path.join(d, "src")
    os.makedirs(src, exist_ok=True)
    for k, v in CONTENTS.items():
        with open(os.path.join(src, k), "wb") as f:
            f.write(v)
    return src


def write_infozip(d, path):
    run(["zip", "-0", "-X", "-q", path] + list(CONTENTS), cwd=files(d))


def write_7z(d, path):
    run(["7z", "a", "-tzip", "-mx=0", path] + list(CONTENTS), cwd=files(d))


def write_libzip(d, path):
    src = files(d)
    args = []
    for k in CONTENTS:
        args += [k, os.path.join(src, k)]
    run([LIBZIP_WRITE, path, "0"] + args)


WRITERS = [("zipfile", write_zipfile), ("Info-ZIP zip", write_infozip), ("7-Zip", write_7z),
           ("libzip", write_libzip)]


# ---------------------------------------------------------------------------------------------------------
# Anomalies: each takes the archive's bytes and returns the damaged bytes.

def last_entry(data):
    ends, recs = zl.central_directory(data)
    last = max(recs, key=lambda r: r["lfh"])
    assert last["name"] == b"c.txt" and last["method"] == 0, last
    return ends, recs, last


def crc_last(data):
    _, _, last = last_entry(data)
    lh = zl.local_header(data, last["lfh"])
    b = bytearray(data)
    b[lh["data_offset"] + 10] ^= 0x20
    return bytes(b)


def local_header_last_differs(data):
    _, _, last = last_entry(data)
    b = bytearray(data)
    b[last["lfh"] + 30] = ord("x")  # the name in the local header: x.txt, the directory says c.txt
    return bytes(b)


def trailing_bytes(data):
    return data + b"-----BEGIN SIGNATURE-----\n" + b"Zm9vYmFy" * 40 + b"\n-----END SIGNATURE-----\n"


def gap_before_directory(data):
    """128 bytes between the end of the last entry and the directory (offsets adjusted: every reader reads it)."""
    ends, recs = zl.central_directory(data)
    src = ends["z64"] or ends["eocd"]
    cd_off = src["cd_off"]
    assert ends["z64"] is None, "the writers here write plain end records"
    gap = b"\xA5" * 128
    eocd = ends["eocd"]["pos"]
    b = bytearray(data[:cd_off] + gap + data[cd_off:])
    struct.pack_into("<I", b, eocd + len(gap) + 16, cd_off + len(gap))
    return bytes(b)


def gap_before_end_records(data):
    """64 bytes between the directory and the end record, whose directory offset stays right: mmzip and
    libzip read it, zipfile takes the gap for prepended data and refuses."""
    ends, _ = zl.central_directory(data)
    eocd = ends["eocd"]["pos"]
    return data[:eocd] + b"\x5A" * 64 + data[eocd:]


ANOMALIES = [
    # (damage, what check must say, whether pack can keep every entry)
    # pack copies no stored entry whose CRC-32 is wrong: it refuses, naming it (and leaves the file as it was)
    (crc_last, ["error:", "CRC-32 mismatch", "c.txt"], False),
    (local_header_last_differs, ["error:", "c.txt", "local header"], False),
    (trailing_bytes, ["interop:", "follow the end records", "recover: keep the"], True),
    (gap_before_directory, ["interop:", "between the last entry", "recover: keep the 128 bytes"], True),
    (gap_before_end_records, ["interop:", "do not follow the central directory", "recover: keep the 64 bytes"],
     True),
]


def test_clean_archives_check_valid_for_every_reader():
    with TempDir() as d:
        for label, write in WRITERS:
            path = os.path.join(d, label.replace(" ", "_") + ".zip")
            write(d, path)
            p = mmzip("check", path)
            assert "valid for mmzip: yes" in p.stdout and "valid for every ZIP reader: yes" in p.stdout, \
                (label, p.stdout, p.stderr)
            assert "recover: nothing to do" in p.stderr, (label, p.stderr)
            digest = sha(path)
            out = mmzip("recover", path).stdout
            assert "nothing to recover" in out, (label, out)
            check_equal(sha(path), digest, "%s: sha-256 after mmzip recover of a clean archive" % label)


def test_foreign_anomalies_are_kept():
    with TempDir() as d:
        cases = 0
        for label, write in WRITERS:
            base = os.path.join(d, "base.zip")
            if os.path.exists(base):
                os.remove(base)
            write(d, base)
            with open(base, "rb") as f:
                clean = f.read()
            reference = listing(base)
            check_equal([n for n, _ in reference], list(CONTENTS), "%s: names written" % label)
            for damage, check_words, packable in ANOMALIES:
                what = "%s, %s" % (label, damage.__name__)
                damaged = damage(clean)
                path = os.path.join(d, "case.zip")

                def fresh():
                    with open(path, "wb") as f:
                        f.write(damaged)

                fresh()
                try:
                    before = listing(path)
                except zipfile.BadZipFile:
                    before = None  # zipfile refuses it (gap before the end records): compare with the clean one
                expect = before if before is not None else reference

                # check: the verdicts and the dry run.
                p = mmzip("check", path, check=False)
                for w in check_words:
                    assert w in p.stderr + p.stdout, "%s: mmzip check lacks %r:\n%s%s" % (what, w, p.stdout, p.stderr)
                # Every reader reads past bytes between the last entry and the directory (the offsets count
                # them): that finding is noted, with no objecting reader (test_check_verdict.py).
                gap_only = damage is gap_before_directory
                assert ("valid for every ZIP reader: yes" if gap_only else "valid for every ZIP reader: no") \
                    in p.stdout, (what, p.stdout)
                mmzip_ok = not check_words[0] == "error:"
                assert ("valid for mmzip: yes" in p.stdout) == mmzip_ok, (what, p.stdout)
                check_equal(p.returncode, 0 if mmzip_ok else 1, "%s: exit status of mmzip check" % what)

                # recover: byte-identical.
                out = mmzip("recover", path).stdout
                check_equal(sha(path), hashlib.sha256(damaged).hexdigest(), "%s: sha-256 after mmzip recover" % what)
                assert "discarded" not in out, (what, out)

                # put: every entry zipfile listed is still there, with its bytes, and the new one after it.
                mmzip("put", path, "new.txt", "-", input="new entry\n")
                after = listing(path)
                # Sorted: a commit of additions writes its records before the older ones (protocol.md §3.3).
                check_equal(sorted(after), sorted(expect + [("new.txt", b"new entry\n")]),
                            "%s: zipfile's listing after mmzip put" % what)
                with open(path, "rb") as f:
                    grown = f.read()
                # Entries are never rewritten; around a foreign anomaly, nothing before the old end of file is.
                cd_off = zl.central_directory(clean)[0]["eocd"]["cd_off"]
                kept = damaged if any(w.startswith("recover: keep") for w in check_words) else damaged[:cd_off]
                assert grown.startswith(kept), "%s: put rewrote bytes it had to keep" % what
                # At rest after the put, as after any writer's close: its slack within max(64 KiB, 1 %).
                info = dict(x.split(":", 1) for x in mmzip("info", path).stdout.splitlines() if ":" in x)
                spare = int(info["free_bytes"].split()[0]) + int(info["kept_bytes"].split()[0])
                assert spare <= max(65536, len(grown) // 100), "%s: %d bytes of slack at rest after a put" % (
                    what, spare)

                # pack: keeps every entry, or refuses and leaves the file as it was.
                fresh()
                p = mmzip("pack", path, check=False)
                if packable:
                    check_equal(p.returncode, 0, "%s: mmzip pack exit status (%s)" % (what, p.stderr))
                    check_equal(listing(path), expect, "%s: zipfile's listing after mmzip pack" % what)
                else:
                    check_equal(p.returncode, 1, "%s: mmzip pack must refuse" % what)
                    assert "c.txt" in p.stderr and ("local header" in p.stderr or "CRC-32 mismatch" in p.stderr), (
                        what, p.stderr)
                    check_equal(sha(path), hashlib.sha256(damaged).hexdigest(), "%s: sha-256 after a refused pack" % what)
                cases += 1
        print("    %d writer x anomaly cases, each with check, recover, put and pack" % cases)


def test_wrapped_entry_count():
    """70,000 entries and plain end records only: the count field says 70,000 mod 65,536 = 4,464."""
    n = 70000
    entries = [zb.Entry("e/%05d" % i, b"%d" % i) for i in range(n)]
    data, _ = zb.archive(entries, count=n & 0xFFFF)
    with TempDir() as d:
        path = os.path.join(d, "many.zip")
        with open(path, "wb") as f:
            f.write(data)
        with zipfile.ZipFile(path) as z:
            check_equal(len(z.namelist()), n, "entries zipfile lists")
        names = mmzip("ls", "-1", path).stdout.split()
        check_equal(len(names), n, "entries mmzip lists")
        for i in (0, 4463, 4464, 65535, 65536, n - 1):
            check_equal(mmzip("cat", path, "e/%05d" % i).stdout, "%d" % i, "entry %d" % i)
        p = mmzip("check", path)
        assert "wrapped" in p.stderr and "valid for mmzip: yes" in p.stdout, p.stderr
        # A count that does not match even modulo 65,536: zipfile reads the records the directory's size
        # holds, and so does mmzip, with a warning naming the field.
        bad = bytearray(data)
        struct.pack_into("<HH", bad, len(bad) - 22 + 8, 7, 7)
        with open(path, "wb") as f:
            f.write(bad)
        with zipfile.ZipFile(path) as z:
            check_equal(len(z.namelist()), n, "entries zipfile lists, count 7")
        p = mmzip("ls", "-1", path)
        check_equal(len(p.stdout.split()), n, "entries mmzip lists, count 7")
        assert "warning:" in p.stderr and "entry count (7)" in p.stderr and "70000" in p.stderr, p.stderr
        with open(path, "wb") as f:
            f.write(data)
        # mmzip put appends and writes ZIP64 end records: zipfile lists every entry.
        mmzip("put", path, "new", "-", input="N")
        with zipfile.ZipFile(path) as z:
            check_equal(len(z.namelist()), n + 1, "entries zipfile lists after put")
            check_equal(z.read("e/65536"), b"65536", "an entry past the wrapped count, after put")


def test_comment_length_past_the_end():
    data, _ = zb.archive([zb.Entry("a.txt", b"alpha")], comment=b"hello")
    bad = bytearray(data)
    struct.pack_into("<H", bad, len(bad) - 5 - 2, 200)
    with TempDir() as d:
        path = os.path.join(d, "comment.zip")
        with open(path, "wb") as f:
            f.write(bad)
        with zipfile.ZipFile(path) as z:
            check_equal(z.read("a.txt"), b"alpha", "zipfile reads it")
            zcomment = z.comment
        check_equal(mmzip("cat", path, "a.txt").stdout, "alpha", "mmzip reads it")
        p = mmzip("check", path)
        assert "comment length (200) runs past the end" in p.stderr, p.stderr
        mmzip("put", path, "b.txt", "-", input="bravo")
        with zipfile.ZipFile(path) as z:
            check_equal(sorted(z.namelist()), ["a.txt", "b.txt"], "names after put")  # additions come first
            check_equal(z.comment, zcomment, "comment kept (the bytes present)")


if __name__ == "__main__":
    main([test_clean_archives_check_valid_for_every_reader, test_foreign_anomalies_are_kept,
          test_wrapped_entry_count, test_comment_length_past_the_end])
