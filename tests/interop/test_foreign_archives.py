"""mmzip reads archives written by other tools: Python zipfile (stored and deflated, ZIP32 and ZIP64, streamed
entries with data descriptors, an archive comment, bytes prepended), Info-ZIP zip, 7-Zip and zarr-python's
ZipStore. Every entry's bytes, through `mmzip cat` and through mmzip.Archive, equal what zipfile reads;
deflated entries are CRC-checked; encryption fails with errors that say so (other methods:
test_foreign_methods.py)."""
import asan_preload  # noqa: F401  (first: under the sanitizer build it re-executes this script)
import io
import os
import random
import subprocess
import zipfile

import numpy as np
import zarr

import mmzip
from mmzip_testlib import MMZIP, TempDir, check_equal, ls_entries, main, mmzip as mmzip_cli, run
import ziplayout as zl


def payloads(seed, n=12):
    """Compressible text, incompressible noise, empty and tiny entries, nested and UTF-8 names."""
    rng = random.Random(seed)
    out = {"empty.txt": b"", "tiny": b"x", "noise.bin": rng.randbytes(70000),
           "dir/sub/numbers.txt": "".join("%d\n" % i for i in range(30000)).encode(),
           "ünïcödé/名前.txt": "grüße\n".encode() * 100}
    for i in range(n):
        out["chunks/%d.%d" % (i // 4, i % 4)] = rng.randbytes(rng.randrange(1, 9000)) + b"\0" * rng.randrange(0, 5000)
    return out


def cat_bytes(archive, name):
    p = subprocess.run([MMZIP, "cat", archive, name], capture_output=True)
    if p.returncode != 0:
        raise AssertionError("mmzip cat %s %r failed: %s" % (archive, name, p.stderr.decode()))
    return p.stdout


def stored_name(info):
    """The entry name as its bytes spell it, decoded as UTF-8 (mmzip hands out the bytes as they are). zipfile
    decodes names without the UTF-8 flag as CP437; Info-ZIP 3.0 writes UTF-8 bytes without setting the flag."""
    if info.flag_bits & 0x800:
        return info.filename
    return info.filename.encode("cp437").decode("utf-8")


def assert_same_as_zipfile(archive, expect=None, sample=None, methods=None):
    """Every entry read through mmzip (cat and Archive) equals zipfile's bytes (and expect, if given). With
    sample=n, only n entries chosen at random are read through mmzip (listing still covers all)."""
    with zipfile.ZipFile(archive) as z:
        assert z.testzip() is None, "zipfile itself finds a bad entry in %s" % archive
        infos = {stored_name(i): i for i in z.infolist()}
        ref = {name: z.read(info) for name, info in infos.items()}
    if expect is not None:
        check_equal(sorted(k for k in ref if not k.endswith("/")), sorted(expect), "names in %s" % archive)
        for k, v in expect.items():
            assert ref[k] == v, "zipfile reads %r differently from what was written" % k
    listed = ls_entries(archive)
    check_equal(sorted(listed), sorted(ref), "names listed by mmzip ls")
    if methods is not None:
        check_equal({listed[k]["method"] for k in ref if ref[k]}, set(methods), "methods in %s" % archive)
    for name, info in infos.items():
        check_equal(listed[name]["size"], info.file_size, "size of %r" % name)
        check_equal(listed[name]["csize"], info.compress_size, "compressed size of %r" % name)
        check_equal(listed[name]["crc"], "%08x" % info.CRC, "crc of %r" % name)
    picked = sorted(ref) if sample is None else random.Random(1).sample(sorted(ref), sample)
    with mmzip.Archive(archive) as a:
        check_equal(sorted(a.keys()), sorted(ref), "names listed by mmzip.Archive")
        for name in picked:
            if bytes(a[name]) != ref[name]:
                raise AssertionError("mmzip.Archive reads %r of %s differently from zipfile" % (name, archive))
    for name in picked:
        if cat_bytes(archive, name) != ref[name]:
            raise AssertionError("mmzip cat reads %r of %s differently from zipfile" % (name, archive))
    out = mmzip_cli("check", archive).stdout
    assert "OK, %d entr%s" % (len(ref), "y" if len(ref) == 1 else "ies") in out, out
    return ref


def write_zipfile(path, contents, compression, comment=b"", force_zip64=False):
    with zipfile.ZipFile(path, "w", compression=compression, compresslevel=6 if compression else None) as z:
        z.comment = comment
        for name, data in contents.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 5, 17, 12, 30, 0))
            info.compress_type = compression
            with z.open(info, "w", force_zip64=force_zip64) as f:
                f.write(data)


class Unseekable(io.RawIOBase):
    """A write-only stream without tell/seek, as a pipe is: zipfile then streams entries with data
    descriptors (general-purpose bit 3) because it cannot go back to patch the local headers."""

    def __init__(self, f):
        self.f = f

    def writable(self):
        return True

    def write(self, b):
        return self.f.write(b)

    def seekable(self):
        return False


def test_zipfile_stored_and_deflated_zip32():
    contents = payloads(1)
    with TempDir() as d:
        for comp, method in ((zipfile.ZIP_STORED, {"stored"}), (zipfile.ZIP_DEFLATED, {"deflate"})):
            path = os.path.join(d, "a%d.zip" % comp)
            write_zipfile(path, contents, comp)
            assert zl.end_records(open(path, "rb").read())["z64"] is None, "expected a ZIP32 archive"
            assert_same_as_zipfile(path, contents, methods=method)


def test_zipfile_zip64_extras_and_comment():
    contents = payloads(2)
    comment = b"an archive comment: written by test_foreign_archives.py"
    with TempDir() as d:
        path = os.path.join(d, "z64.zip")
        write_zipfile(path, contents, zipfile.ZIP_DEFLATED, comment=comment, force_zip64=True)
        data = open(path, "rb").read()
        lh = zl.local_header(data, 0)
        assert zl.EXTRA_ZIP64 in dict(lh["extras"]), "zipfile did not write a ZIP64 local header"
        check_equal(zl.end_records(data)["eocd"]["comment"], comment, "comment as written")
        assert_same_as_zipfile(path, contents)


def test_comment_holding_an_end_signature():
    """A comment that contains the end-record signature: Python's zipfile takes the fake for the real one
    and fails; mmzip accepts only an end record whose directory parses, and reads every entry."""
    contents = payloads(7)
    with TempDir() as d:
        path = os.path.join(d, "c.zip")
        write_zipfile(path, contents, zipfile.ZIP_DEFLATED, comment=b"look: PK\x05\x06 and more " + bytes(30))
        with mmzip.Archive(path) as a:
            check_equal(sorted(a.keys()), sorted(contents), "names")
            for k, v in contents.items():
                assert bytes(a[k]) == v, "entry %r differs" % k
        assert "OK, %d entr%s" % (len(contents), "y" if len(contents) == 1 else "ies") in mmzip_cli("check", path).stdout


def test_long_comments():
    """Comments of zipfile's that end beyond the last page, where mmzip looks for the end record first (4 KiB):
    up to the largest (65535 bytes), with and without a fake end signature in that last page. The search must
    then go on over the whole 64 KiB, as it did before the first look existed."""
    contents = payloads(5)
    with TempDir() as d:
        for clen in (4000, 4075, 4096, 5000, 65535):
            for fake in (False, True):
                comment = bytearray((i * 7 + 3) % 251 for i in range(clen))
                if fake:
                    at = clen - 200 if clen > 200 else 0
                    comment[at:at + 22] = b"PK\x05\x06" + bytes(18)  # an empty archive's end record, if it were one
                path = os.path.join(d, "comment_%d_%d.zip" % (clen, fake))
                write_zipfile(path, contents, zipfile.ZIP_STORED, comment=bytes(comment))
                check_equal(zl.end_records(open(path, "rb").read())["eocd"]["comment"], bytes(comment), "comment")
                with mmzip.Archive(path) as a:
                    check_equal(sorted(a.keys()), sorted(contents), "names, comment of %d bytes" % clen)
                    for k, v in contents.items():
                        assert bytes(a[k]) == v, "entry %r differs, comment of %d bytes" % (k, clen)
                assert "OK, %d entr%s" % (len(contents), "y" if len(contents) == 1 else "ies") in mmzip_cli("check", path).stdout


def test_zipfile_zip64_end_records_many_entries():
    """70000 entries: zipfile writes ZIP64 end records because the count does not fit 16 bits. Only a sample
    is read through mmzip: decoding every one of 70000 deflated entries in one store is quadratic in the core
    today (its decoded-entry cache is a linked list searched on every get), see the report."""
    contents = {"e/%05d" % i: (b"v%d," % i) * (i % 13) for i in range(70000)}
    with TempDir() as d:
        path = os.path.join(d, "many.zip")
        write_zipfile(path, contents, zipfile.ZIP_DEFLATED)
        ends = zl.end_records(open(path, "rb").read())
        assert ends["z64"] is not None and ends["z64"]["n"] == 70000, "expected ZIP64 end records"
        assert_same_as_zipfile(path, contents, sample=300)


def test_zipfile_streamed_data_descriptors():
    contents = payloads(3)
    with TempDir() as d:
        for comp in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            path = os.path.join(d, "s%d.zip" % comp)
            with open(path, "wb") as raw:
                with zipfile.ZipFile(Unseekable(raw), "w", compression=comp) as z:
                    for name, data in contents.items():
                        z.writestr(name, data)
            _, recs = zl.central_directory(open(path, "rb").read())
            assert all(r["flags"] & 0x08 for r in recs), "zipfile did not stream with data descriptors"
            assert_same_as_zipfile(path, contents)


def test_bytes_prepended():
    """A stub before the archive (self-extractor style) whose offsets were not adjusted; zipfile copes."""
    contents = payloads(4)
    with TempDir() as d:
        for comp in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            inner, path = os.path.join(d, "inner.zip"), os.path.join(d, "sfx%d.zip" % comp)
            write_zipfile(inner, contents, comp)
            with open(path, "wb") as f:
                f.write(b"#!/bin/sh\necho this is a stub\nexit 0\n" + bytes(range(256)) * 7)
                f.write(open(inner, "rb").read())
            assert_same_as_zipfile(path, contents)
            info = mmzip_cli("info", path).stdout
            assert "prefix" in info, info


def write_tree(root, contents):
    for name, data in contents.items():
        p = os.path.join(root, name)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)


def test_info_zip():
    contents = payloads(5)
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        write_tree(tree, contents)
        for opts, methods in ((["-0"], {"stored"}), (["-9"], {"deflate", "stored"}), (["-6", "-fz"], None)):
            path = os.path.join(d, "iz%s.zip" % "".join(opts))
            run(["zip", "-q", "-r", "-X"] + opts + [path, "."], cwd=tree)
            ref = assert_same_as_zipfile(path, contents, methods=methods)
            assert any(k.endswith("/") for k in ref), "zip -r wrote no directory entries"
        # zip writing to a pipe streams: data descriptors, and the entry is named "-".
        path = os.path.join(d, "stream.zip")
        text = contents["dir/sub/numbers.txt"]
        with open(path, "wb") as out:
            zp = subprocess.Popen(["zip", "-q", "-", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            cat = subprocess.Popen(["cat"], stdin=zp.stdout, stdout=out)
            zp.stdout.close()
            zp.communicate(text)
            cat.wait()
        _, recs = zl.central_directory(open(path, "rb").read())
        assert recs[0]["flags"] & 0x08, "zip to a pipe did not use a data descriptor"
        assert_same_as_zipfile(path, {"-": text}, methods={"deflate"})
        # Files zipped to a pipe: data descriptors again, the local header's CRC-32 and compressed size zero and
        # its size filled in. Zeros where a descriptor follows are what the format says: reads do not warn (they
        # did, once per entry, on every ls and cat), and check names libzip alone (test_check_verdict.py).
        piped = os.path.join(d, "piped.zip")
        run(["bash", "-c", "zip -q -r - . | cat > " + piped], cwd=tree)
        assert all(r["flags"] & 0x08 for r in zl.central_directory(open(piped, "rb").read())[1] if r["usize"]), \
            "zip to a pipe did not use data descriptors"
        assert_same_as_zipfile(piped, contents)
        for args in (["ls", piped], ["cat", piped, "dir/sub/numbers.txt"]):
            p = subprocess.run([MMZIP] + args, capture_output=True)
            assert p.returncode == 0 and p.stderr == b"", "mmzip %s warns: %s" % (args[0], p.stderr.decode())


def test_names_that_are_not_utf8():
    """Info-ZIP on Linux stores a file name's bytes as they are, without the UTF-8 flag: a Latin-1 name is not
    UTF-8, and other readers decode it as CP437. zipfile decodes a flagged name strictly and refuses the whole
    archive when it is not UTF-8. So replacing such an entry through mmzip, or adding one, must write it without
    the flag (in both headers), while a UTF-8 name keeps the flag; zipfile, unzip and mmzip check must read the
    result."""
    latin1 = b"caf\xe9.txt"  # "café.txt" in Latin-1; CP437 reads the byte 0xE9 as U+0398
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        os.makedirs(tree)
        for name, data in ((latin1, b"old latin-1 bytes\n"), (b"plain.txt", b"plain\n")):
            with open(os.path.join(tree.encode(), name), "wb") as f:
                f.write(data)
        path = os.path.join(d, "latin1.zip")
        subprocess.run(["zip", "-0", "-X", "-q", path.encode(), latin1, b"plain.txt"], cwd=tree, check=True)
        with zipfile.ZipFile(path) as z:
            check_equal(sorted(z.namelist()), ["caf\u0398.txt", "plain.txt"], "Info-ZIP's names as zipfile reads them")
        new_bytes = b"new content, replaced through mmzip\n" * 3
        src = os.path.join(d, "new.bin")
        with open(src, "wb") as f:
            f.write(new_bytes)
        for key in (latin1, "ünï.txt".encode(), b"raw\xff\xfe"):
            p = subprocess.run([MMZIP.encode(), b"put", path.encode(), key, src.encode()], capture_output=True)
            assert p.returncode == 0, p.stderr.decode(errors="replace")
        data = open(path, "rb").read()
        _, recs = zl.central_directory(data)
        flags = {r["name"]: (r["flags"] & 0x800, zl.local_header(data, r["lfh"])["flags"] & 0x800) for r in recs}
        check_equal(flags[latin1], (0, 0), "UTF-8 flag (directory, local header) of the replaced Latin-1 name")
        check_equal(flags[b"raw\xff\xfe"], (0, 0), "UTF-8 flag of a new name that is not UTF-8")
        check_equal(flags["ünï.txt".encode()], (0x800, 0x800), "UTF-8 flag of a new UTF-8 name")
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None
            check_equal(z.read("caf\u0398.txt"), new_bytes, "the replaced entry, read by zipfile")
            check_equal(z.read("ünï.txt"), new_bytes, "the UTF-8 entry, read by zipfile")
            check_equal(z.read(b"raw\xff\xfe".decode("cp437")), new_bytes, "the new non-UTF-8 entry, read by zipfile")
            check_equal(z.read("plain.txt"), b"plain\n", "the untouched entry")
        run(["unzip", "-tq", path])
        p = subprocess.run([MMZIP.encode(), b"cat", path.encode(), latin1], capture_output=True)
        check_equal(p.stdout, new_bytes, "mmzip cat of the Latin-1 name")
        assert "OK, 4 entries" in mmzip_cli("check", path).stdout
        with mmzip.Archive(path) as a:
            surrogate = latin1.decode("utf-8", "surrogateescape")
            check_equal(sorted(a.keys()), sorted([surrogate, "plain.txt", "ünï.txt", "raw\udcff\udcfe"]),
                        "names listed by mmzip.Archive (bytes that are not UTF-8 as surrogate escapes)")
            check_equal(bytes(a[surrogate]), new_bytes, "Archive reads a listed Latin-1 name")
            check_equal(bytes(a[latin1]), new_bytes, "Archive reads the name given as bytes")


def test_7zip():
    contents = payloads(6)
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        write_tree(tree, contents)
        for opts, methods in ((["-mx=0"], {"stored"}), (["-mm=Deflate", "-mx=9"], {"deflate", "stored"})):
            path = os.path.join(d, "7z%s.zip" % "".join(opts))
            run(["7z", "a", "-tzip"] + opts + [path, "."], cwd=tree)
            assert_same_as_zipfile(path, contents, methods=methods)


def test_zarr_zipstore_output():
    """Groups written by zarr-python's ZipStore (stored, its default, and deflated) read through mmzip the
    same as through zipfile, and zarr reads the arrays back from them."""
    rng = np.random.default_rng(3)
    arr = rng.normal(size=(50, 40)).astype("<f4")
    with TempDir() as d:
        for comp in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            path = os.path.join(d, "zs%d.zarr.zip" % comp)
            store = zarr.ZipStore(path, mode="w", compression=comp)
            root = zarr.group(store=store)
            root.attrs["source"] = "zarr ZipStore"
            root.create_dataset("a", data=arr, chunks=(16, 16), compressor=None)
            root.create_dataset("b/c", data=np.arange(1000, dtype="<u2"), chunks=(300,))
            store.close()
            ref = assert_same_as_zipfile(path)
            assert "a/0.0" in ref and ".zgroup" in ref, sorted(ref)
            # The uncompressed chunk read through mmzip is the array's data.
            with mmzip.Archive(path) as a:
                chunk = np.frombuffer(a["a/0.0"], dtype="<f4").reshape(16, 16)
                assert np.array_equal(chunk, arr[:16, :16]), "chunk a/0.0 differs"


def test_encrypted_entries():
    with TempDir() as d:
        src = os.path.join(d, "secret.txt")
        with open(src, "wb") as f:
            f.write(b"attack at dawn\n" * 100)
        for opts, label in ((["-pSECRET"], "ZipCrypto"), (["-pSECRET", "-mem=AES256"], "AES")):
            path = os.path.join(d, "%s.zip" % label)
            run(["7z", "a", "-tzip"] + opts + [path, "secret.txt"], cwd=d)
            p = mmzip_cli("cat", path, "secret.txt", check=False)
            check_equal(p.returncode, 1, "mmzip cat exit status for %s" % label)
            assert "secret.txt" in p.stderr and "encrypted" in p.stderr, p.stderr
            p = mmzip_cli("check", path, check=False)
            check_equal(p.returncode, 1, "mmzip check exit status for %s" % label)
            assert "encrypted" in p.stderr, p.stderr


def test_pack_of_encrypted_entries_and_comments():
    """mmzip pack (an outside review): it called an intact encrypted entry damaged (its CRC-32 is the plain
    text's), and dropped entry comments (zipnote's). Encrypted entries without a data descriptor (7-Zip's) are
    copied and still open with their password; those with one (Info-ZIP zip's), whose password check comes from
    the header pack would rewrite, make pack refuse with that reason and change nothing; comments are kept."""
    with TempDir() as d:
        src = os.path.join(d, "secret.txt")
        with open(src, "wb") as f:
            f.write(b"attack at dawn\n" * 100)
        seven = os.path.join(d, "7z.zip")
        run(["7z", "a", "-tzip", "-pSECRET", "-mem=ZipCrypto", seven, "secret.txt"], cwd=d)
        mmzip_cli("put", seven, "plain.txt", src)
        mmzip_cli("pack", seven)
        t = run(["unzip", "-t", "-P", "SECRET", seven], check=False)
        assert t.returncode == 0 and "No errors detected" in t.stdout, t.stdout + t.stderr
        check_equal(run(["unzip", "-p", "-P", "SECRET", seven, "secret.txt"]).stdout, "attack at dawn\n" * 100,
                    "the encrypted entry after pack, decrypted by unzip")
        info = os.path.join(d, "infozip.zip")
        run(["zip", "-q", "-P", "SECRET", info, "secret.txt"], cwd=d)
        before = open(info, "rb").read()
        p = mmzip_cli("pack", info, check=False)
        assert p.returncode != 0 and "is encrypted and has a data descriptor" in p.stderr, p.stderr
        check_equal(open(info, "rb").read() == before, True, "the archive after the refused pack")
        noted = os.path.join(d, "noted.zip")
        mmzip_cli("put", noted, "a.txt", src)
        mmzip_cli("put", noted, "b.txt", src)
        run(["zipnote", "-w", noted], input=b"@ a.txt\nmy entry comment\n@ (comment above this line)\n@ b.txt\n"
            b"@ (comment above this line)\n@ (zip file comment below this line)\nARCHIVE COMMENT\n")
        mmzip_cli("put", noted, "c.txt", src)
        mmzip_cli("pack", noted)
        with zipfile.ZipFile(noted) as z:
            check_equal((z.getinfo("a.txt").comment, z.getinfo("b.txt").comment, z.comment),
                        (b"my entry comment", b"", b"ARCHIVE COMMENT"), "comments after pack")
            assert z.testzip() is None


def test_corrupt_deflated_entry_crc():
    """One flipped byte inside a deflated entry: zipfile, mmzip cat, mmzip check and Archive all object, and
    mmzip's message names the entry and the CRC mismatch. The entry holds random bytes, which deflate keeps in
    stored blocks, so the damaged stream still decodes and only the CRC can catch the damage."""
    rng = random.Random(9)
    contents = {"good.txt": b"fine\n" * 1000, "victim.bin": rng.randbytes(50000), "after.txt": b"also fine\n"}
    with TempDir() as d:
        path = os.path.join(d, "c.zip")
        write_zipfile(path, contents, zipfile.ZIP_DEFLATED)
        data = bytearray(open(path, "rb").read())
        _, recs = zl.central_directory(bytes(data))
        victim = next(r for r in recs if r["name"] == b"victim.bin")
        lh = zl.local_header(bytes(data), victim["lfh"])
        data[lh["data_offset"] + victim["csize"] // 2] ^= 0x40
        with open(path, "wb") as f:
            f.write(data)
        with zipfile.ZipFile(path) as z:
            check_equal(z.testzip(), "victim.bin", "zipfile's verdict")
        p = mmzip_cli("cat", path, "victim.bin", check=False)
        check_equal(p.returncode, 1, "mmzip cat exit status")
        assert "victim.bin" in p.stderr and "CRC-32 mismatch" in p.stderr, p.stderr
        check_equal(cat_bytes(path, "good.txt"), contents["good.txt"], "an intact neighbour")
        p = mmzip_cli("check", path, check=False)
        check_equal(p.returncode, 1, "mmzip check exit status")
        assert "victim.bin" in p.stderr and "CRC-32 mismatch" in p.stderr, p.stderr
        assert "good.txt" not in p.stderr, "check blames an intact entry: " + p.stderr
        with mmzip.Archive(path) as a:
            try:
                a["victim.bin"]
                raise AssertionError("Archive handed out a corrupt entry")
            except mmzip.MmzipError as e:
                check_equal(e.code, -8, "MMZIP_ECRC")
                assert "victim.bin" in str(e), str(e)
            check_equal(bytes(a["after.txt"]), contents["after.txt"], "an intact neighbour through Archive")


if __name__ == "__main__":
    main([test_zipfile_stored_and_deflated_zip32, test_zipfile_zip64_extras_and_comment, test_comment_holding_an_end_signature,
          test_long_comments,
          test_zipfile_zip64_end_records_many_entries, test_zipfile_streamed_data_descriptors, test_bytes_prepended,
          test_info_zip, test_names_that_are_not_utf8, test_7zip, test_zarr_zipstore_output, test_encrypted_entries,
          test_pack_of_encrypted_entries_and_comments,
          test_corrupt_deflated_entry_crc])
