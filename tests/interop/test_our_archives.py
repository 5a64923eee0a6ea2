"""Archives written by mmzip are ZIP64-always, stored, aligned with 0xA11E in the local header only, and pass
every real ZIP reader: Python zipfile.testzip(), `unzip -t`, `7z t`, and libzip with ZIP_CHECKCONS."""
import os
import random
import struct
import time
import zipfile

from mmzip_testlib import BUILD, TempDir, check_equal, ls_entries, main, mmzip, run, zip_tools_ok
import ziplayout as zl

HELPERS = os.path.join(BUILD, "tests", "interop")
LIBZIP_VERIFY = os.path.join(HELPERS, "libzip_verify")
PUT_ALIGNED = os.path.join(HELPERS, "put_aligned")


def sample_contents(seed=1):
    """Entries of awkward sizes (0, around the alignment, multi-page, several MiB) and names (nested, UTF-8)."""
    rng = random.Random(seed)
    sizes = {"empty": 0, "one": 1, "a63": 63, "a64": 64, "a65": 65, "page": 4096, "page_plus": 4097,
             "nested/deeper/x.bin": 100_000, "données/π.json": 321, "big.bin": 3 * 1024 * 1024 + 17}
    return {k: rng.randbytes(n) for k, n in sizes.items()}


def write_tree(root, contents):
    for name, data in contents.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def put_each(archive, tree, contents, *opts):
    """One `mmzip put` (one commit) per entry, in a fixed order."""
    for name in sorted(contents):
        mmzip("put", *opts, archive, name, os.path.join(tree, name))


def read_all(archive):
    with open(archive, "rb") as f:
        return f.read()


def libzip_verify(archive, tree, contents):
    """libzip's ZIP_CHECKCONS open accepts the archive and reads every entry's bytes as expected."""
    out = run([LIBZIP_VERIFY, archive, tree]).stdout.splitlines()
    seen = {}
    for line in out:
        name, size, method = line.rsplit(" ", 2)
        seen[name] = (int(size), int(method))
    check_equal(seen, {k: (len(v), 0) for k, v in contents.items()}, "libzip's view of %s" % archive)


def zipfile_bytes_equal(archive, contents):
    with zipfile.ZipFile(archive) as z:
        check_equal(sorted(z.namelist()), sorted(contents), "zipfile names")
        for name, data in contents.items():
            info = z.getinfo(name)
            check_equal(info.compress_type, zipfile.ZIP_STORED, "method of %s" % name)
            if z.read(name) != data:
                raise AssertionError("zipfile reads different bytes for %r" % name)


EXTRA_UT = 0x5455
EXTRA_KEPT = 0x6D4B


def dos_stamp(t):
    """The DOS (time, date) fields of Unix time t, in local time, as zip and mmzip write them (an odd second
    rounded up)."""
    tm = time.localtime((t + 1) & ~1)
    return ((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec // 2),
            ((tm.tm_year - 1980) << 9) | (tm.tm_mon << 5) | tm.tm_mday)


def assert_layout(archive, contents, alignment_of, tree=None, written=None):
    """Checks every record mmzip wrote, byte by byte; alignment_of(name) gives the expected alignment. Time
    and mode: with tree, each entry's are its file's (a put of a file); with written=(t0, t1), entries were
    written from memory between t0 and t1, mode 0644."""
    data = read_all(archive)
    ends, recs = zl.central_directory(data)
    eocd, loc, z64 = ends["eocd"], ends["locator"], ends["z64"]
    # ZIP64 always: EOCD fields all sentinels, locator + ZIP64 EOCD contiguous and directly after the CD
    # (older Python assumes no gap there).
    check_equal((eocd["n_disk"], eocd["n"], eocd["cd_size"], eocd["cd_off"]),
                (0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF), "EOCD fields")
    check_equal((eocd["disk"], eocd["cd_disk"]), (0, 0), "EOCD disk numbers")
    assert loc is not None and z64 is not None, "no ZIP64 end records"
    check_equal((loc["disk"], loc["disks"], loc["pos"]), (0, 1, z64["pos"] + 56), "ZIP64 locator")
    check_equal((z64["rest"], z64["needed"], z64["disk"], z64["cd_disk"]), (44, 45, 0, 0), "ZIP64 EOCD")
    check_equal(z64["n"], len(contents), "entry count")
    check_equal(z64["cd_off"] + z64["cd_size"], z64["pos"], "end of the central directory")
    check_equal(eocd["pos"] + 22, len(data), "file size (nothing after the EOCD)")
    check_equal(sorted(r["name"].decode() for r in recs), sorted(contents), "names in the directory")
    for r in recs:
        name = r["name"].decode()
        what = "central record of %r" % name
        check_equal(r["needed"], 45, what + ": version needed")
        check_equal(r["flags"] & 0x0808, 0x0800, what + ": flags (UTF-8 set, no data descriptor)")
        check_equal(r["method"], 0, what + ": method")
        check_equal(r["raw_sizes"], (0xFFFFFFFF,) * 3, what + ": 32-bit sizes and offset are sentinels")
        check_equal(r["z64_len"], 24, what + ": ZIP64 field holds sizes and offset only (no disk)")
        ids = [x for x, _ in r["extras"]]
        if ids == [zl.EXTRA_ZIP64, EXTRA_UT, EXTRA_KEPT]:
            # an entry put past the directory a relocation kept (protocol.md §3.7): the range it skipped
            frm, to = struct.unpack("<QQ", dict(r["extras"])[EXTRA_KEPT])
            off = struct.unpack("<Q", dict(r["extras"])[zl.EXTRA_ZIP64][16:24])[0]
            assert frm < to <= off == (to + 4095) // 4096 * 4096, "%s: kept-tail field (%d, %d), entry at %d" % (
                what, frm, to, off)
            ids = ids[:2]
        check_equal(ids, [zl.EXTRA_ZIP64, EXTRA_UT],
                    what + ": extra fields (ZIP64, extended timestamp, the kept-tail field at most; no padding here)")
        ut = dict(r["extras"])[EXTRA_UT]
        check_equal((len(ut), ut[0]), (5, 1), what + ": UT field holds the modification time only")
        mtime = struct.unpack("<I", ut[1:])[0]
        check_equal((r["time"], r["date"]), dos_stamp(mtime), what + ": DOS time and date of the UT time")
        check_equal(r["made_by"] >> 8, 3, what + ": made by Unix")
        if tree is not None:
            st = os.stat(os.path.join(tree, name))
            check_equal(mtime, int(st.st_mtime), what + ": the file's modification time")
            check_equal(r["eattr"] >> 16, st.st_mode, what + ": the file's mode")
        if written is not None:
            assert written[0] <= mtime <= written[1], what + ": time %d not that of the put" % mtime
            check_equal(r["eattr"] >> 16, 0o100644, what + ": mode")
        check_equal((r["usize"], r["csize"]), (len(contents[name]),) * 2, what + ": sizes")
        lh = zl.local_header(data, r["lfh"])
        what = "local header of %r" % name
        check_equal(lh["name"], r["name"], what + ": name")
        check_equal((lh["needed"], lh["flags"], lh["method"], lh["crc"], lh["time"], lh["date"]),
                    (r["needed"], r["flags"], r["method"], r["crc"], r["time"], r["date"]),
                    what + ": fields shared with the directory")
        check_equal((lh["csize"], lh["usize"]), (0xFFFFFFFF, 0xFFFFFFFF), what + ": 32-bit sizes are sentinels")
        z = dict(lh["extras"])
        check_equal(z.get(zl.EXTRA_ZIP64), len(contents[name]).to_bytes(8, "little") * 2,
                    what + ": ZIP64 field holds both sizes")
        check_equal([x for x, _ in lh["extras"]], [zl.EXTRA_ZIP64, EXTRA_UT, zl.EXTRA_ALIGN],
                    what + ": extra fields (ZIP64, extended timestamp, alignment)")
        check_equal(z.get(EXTRA_UT), ut, what + ": the same extended timestamp as the directory")
        align = zl.alignment_field(lh["extras"])
        assert align is not None, what + ": no 0xA11E alignment field"
        want = alignment_of(name)
        check_equal(align[:2], (want, False), what + ": 0xA11E alignment and allowMethodChange")
        check_equal(lh["data_offset"] % want, 0, what + ": data offset %d modulo %d" % (lh["data_offset"], want))
        # The padding is the least that aligns the data: one alignment unit or more would be waste.
        assert align[2] < max(want, 1), what + ": %d bytes of padding for alignment %d" % (align[2], want)
        if data[lh["data_offset"]:lh["data_offset"] + len(contents[name])] != contents[name]:
            raise AssertionError(what + ": the bytes at the data offset are not the entry's")
    return recs


def assert_ls_agrees(archive, contents):
    """`mmzip ls` reports the same data offsets as the bytes say."""
    data = read_all(archive)
    _, recs = zl.central_directory(data)
    listed = ls_entries(archive)
    for r in recs:
        name = r["name"].decode()
        lh = zl.local_header(data, r["lfh"])
        check_equal(listed[name]["offset"], lh["data_offset"], "mmzip ls data offset of %r" % name)
        check_equal(listed[name]["size"], len(contents[name]), "mmzip ls size of %r" % name)
        check_equal(listed[name]["crc"], "%08x" % r["crc"], "mmzip ls crc of %r" % name)
        if lh["data_offset"]:
            low = lh["data_offset"] & -lh["data_offset"]
            check_equal(listed[name]["align"], min(low, 32768), "mmzip ls alignment of %r" % name)


def all_readers_accept(archive, tree, contents):
    names = zip_tools_ok(archive)
    check_equal(sorted(names), sorted(contents), "names listed by zipfile")
    zipfile_bytes_equal(archive, contents)
    libzip_verify(archive, tree, contents)
    out = mmzip("check", archive).stdout
    assert "OK, %d entr%s" % (len(contents), "y" if len(contents) == 1 else "ies") in out, out


def test_default_alignment_one_commit_per_entry():
    contents = sample_contents()
    with TempDir() as d:
        tree, archive = os.path.join(d, "tree"), os.path.join(d, "a.zip")
        write_tree(tree, contents)
        put_each(archive, tree, contents)
        all_readers_accept(archive, tree, contents)
        assert_layout(archive, contents, lambda name: 64, tree=tree)
        assert_ls_agrees(archive, contents)


def test_default_alignment_one_batch():
    contents = sample_contents(2)
    with TempDir() as d:
        tree, archive = os.path.join(d, "tree"), os.path.join(d, "a.zip")
        write_tree(tree, contents)
        mmzip("put", archive, "--dir", tree)
        all_readers_accept(archive, tree, contents)
        assert_layout(archive, contents, lambda name: 64, tree=tree)


def test_per_archive_alignment():
    contents = sample_contents(3)
    for align in (1, 2, 8, 512, 4096):
        with TempDir() as d:
            tree, archive = os.path.join(d, "tree"), os.path.join(d, "a.zip")
            write_tree(tree, contents)
            put_each(archive, tree, contents, "--align", align)
            all_readers_accept(archive, tree, contents)
            assert_layout(archive, contents, lambda name: align, tree=tree)
            assert_ls_agrees(archive, contents)


def test_bad_alignments_are_refused():
    page = os.sysconf("SC_PAGE_SIZE")
    with TempDir() as d:
        archive, src = os.path.join(d, "a.zip"), os.path.join(d, "x")
        with open(src, "wb") as f:
            f.write(b"x")
        for bad in (3, 48, page * 2):
            p = mmzip("put", "--align", bad, archive, "k", src, check=False)
            # A usage error, caught before the archive is opened (as --wait=abc is).
            check_equal(p.returncode, 2, "exit status of put --align %d" % bad)
            assert "--align N wants a power of two" in p.stderr and "usage: mmzip put" in p.stderr, p.stderr
        assert not os.path.exists(archive) or "k" not in ls_entries(archive), "a refused put left an entry"


def test_per_entry_alignment():
    """Different alignments in one archive, through mmzip_put's alignment argument."""
    rng = random.Random(4)
    aligns = {"a1": 1, "a4": 4, "a16": 16, "a256": 256, "a4096": 4096, "default": 0, "a32": 32}
    contents = {k: rng.randbytes(rng.randrange(1, 5000)) for k in aligns}
    with TempDir() as d:
        tree, archive = os.path.join(d, "tree"), os.path.join(d, "a.zip")
        write_tree(tree, contents)
        specs = ["%d:%s:%s" % (aligns[k], k, os.path.join(tree, k)) for k in sorted(contents)]
        t0 = int(time.time())
        run([PUT_ALIGNED, archive] + specs)
        t1 = int(time.time())
        all_readers_accept(archive, tree, contents)
        assert_layout(archive, contents, lambda name: aligns[name] or 64, written=(t0, t1))
        assert_ls_agrees(archive, contents)


def test_replacements_and_many_commits():
    """After replacing keys over many commits (dead space, relocated directories), every reader still sees
    exactly one entry per name with the newest bytes; libzip's check rejects duplicates, so this shows none."""
    rng = random.Random(5)
    with TempDir() as d:
        tree, archive = os.path.join(d, "tree"), os.path.join(d, "a.zip")
        # The first entry of the file is never replaced here: 7-Zip rejects a dead first entry, a core bug
        # shown on its own by test_dead_first_entry.py.
        contents = {"first": b"written once"}
        write_tree(tree, contents)
        mmzip("put", archive, "first", os.path.join(tree, "first"))
        for step in range(40):
            name = "k%d" % rng.randrange(8)
            contents[name] = rng.randbytes(rng.randrange(0, 20000))
            write_tree(tree, {name: contents[name]})
            mmzip("put", archive, name, os.path.join(tree, name))
        all_readers_accept(archive, tree, contents)
        assert_layout(archive, contents, lambda name: 64, tree=tree)
        info = mmzip("info", archive).stdout
        assert "dead" in info, info
        # pack reclaims the dead space and the result is as acceptable.
        packed = os.path.join(d, "packed.zip")
        mmzip("pack", archive, packed)
        all_readers_accept(packed, tree, contents)
        assert_layout(packed, contents, lambda name: 64, tree=tree)  # pack keeps times and modes
        assert os.path.getsize(packed) < os.path.getsize(archive), "pack did not shrink the archive"


def test_deterministic_bytes():
    """The same puts in the same order give byte-identical archives (each entry dated by its file, no
    randomness)."""
    contents = sample_contents(6)
    with TempDir() as d:
        tree = os.path.join(d, "tree")
        write_tree(tree, contents)
        images = []
        for i in range(2):
            archive = os.path.join(d, "a%d.zip" % i)
            put_each(archive, tree, contents)
            images.append(read_all(archive))
        assert images[0] == images[1], "two identical runs wrote different bytes"


def test_more_entries_than_zip32_can_count():
    """70000 entries: the count needs the ZIP64 end record for real, not just by policy."""
    n = 70000
    contents = {"c/%05d" % i: (b"%d" % i) * (i % 7) for i in range(n)}
    with TempDir() as d:
        tree, archive = os.path.join(d, "tree"), os.path.join(d, "a.zip")
        write_tree(tree, contents)
        mmzip("put", archive, "--dir", tree)
        all_readers_accept(archive, tree, contents)
        ends, recs = zl.central_directory(read_all(archive))
        check_equal(ends["z64"]["n"], n, "ZIP64 entry count")
        check_equal(len(recs), n, "records in the directory")


if __name__ == "__main__":
    main([test_default_alignment_one_commit_per_entry, test_default_alignment_one_batch, test_per_archive_alignment,
          test_bad_alignments_are_refused, test_per_entry_alignment, test_replacements_and_many_commits,
          test_deterministic_bytes, test_more_entries_than_zip32_can_count])
