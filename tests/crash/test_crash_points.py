"""Kills a real writer process with SIGKILL at every named crash point of the commit protocol (and of
recovery itself), three ways per write - before it, halfway through it (a torn header, directory or trailer),
and after extending the file with zeros (zeros at EOF) - and at random moments. After each kill:

  1. a read-only open of the unrepaired file sees exactly the last commit (or the one in flight), never
     garbage;
  2. a writable open repairs it to that commit, every committed entry byte-identical;
  3. the repaired file passes Python's zipfile.testzip(), `unzip -t`, `7z t` and `mmzip check`.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from mmzip_testlib import TempDir, check_equal, main, mmzip, run, zip_tools_ok

TOOL = os.path.join(os.environ["MMZIP_BUILD_DIR"], "bin", "crash_tool")


def env_for(crash_at=None, hit=1, listing=None):
    e = dict(os.environ)
    for k in ("MMZIP_CRASH_AT", "MMZIP_CRASH_HIT", "MMZIP_CRASH_LIST"):
        e.pop(k, None)
    if crash_at:
        e["MMZIP_CRASH_AT"] = crash_at
        e["MMZIP_CRASH_HIT"] = str(hit)
    if listing:
        e["MMZIP_CRASH_LIST"] = listing
    return e


def last_commit(log):
    """The last commit the writer logged (a held writer's "held" line follows its last commit)."""
    if not os.path.exists(log):
        return 0
    lines = [l for l in open(log).read().split() if l != "held"]
    return int(lines[-1]) if lines else 0


def crash_points(argv, tmp):
    """Runs argv once with MMZIP_CRASH_LIST and returns the (name, hit) pairs it reached, in order."""
    listing = os.path.join(tmp, "points.txt")
    if os.path.exists(listing):
        os.unlink(listing)
    p = subprocess.run(argv, env=env_for(listing=listing), capture_output=True, text=True)
    assert p.returncode == 0, "clean run failed: %s" % p.stderr
    pts = []
    for line in open(listing):
        name, hit = line.split()
        pts.append((name, int(hit)))
    return pts


def modes_for(name):
    # Writes can be torn or preceded by zeros at EOF; truncates and barriers only happen or not, and so does
    # the in-place rewrite of end records that lie within one sector (commit.switch), and a punched hole.
    if "kept_tail" in name or name.endswith(("truncate", "switch", "sync", "sync_copy", "sync_directory", "sync_records",
                      "sync_truncate", "sync_switch", "link")):
        return [""]
    return ["", ":torn", ":grow"]


def verify_after_kill(scenario, archive, k, what):
    """The three checks of the module docstring."""
    ro = run([TOOL, "verify", scenario, archive, str(k)], check=False)
    assert ro.returncode == 0, "%s: read-only open of the unrepaired file:\n%s%s" % (what, ro.stdout, ro.stderr)
    rw = run([TOOL, "recover", scenario, archive, str(k)], check=False)
    assert rw.returncode == 0, "%s: recovery:\n%s%s" % (what, rw.stdout, rw.stderr)
    check_equal(ro.stdout, rw.stdout, "%s: state before and after repair" % what)
    try:
        zip_tools_ok(archive)
        mmzip("check", "-q", archive)
    except AssertionError as e:
        raise AssertionError("%s: after repair: %s" % (what, e))
    return int(rw.stdout.split()[1])


def run_killed(argv, crash_at, hit, what):
    p = subprocess.run(argv, env=env_for(crash_at, hit), capture_output=True, text=True)
    assert p.returncode == -signal.SIGKILL, "%s: the writer was not killed (exit %d): %s" % (
        what, p.returncode, p.stderr)


def test_every_crash_point():
    exercised = set()
    # "kept": one session per put on a 20 MB archive, whose relocations keep the old directory, release the one
    # kept before and punch the slack below it, and whose puts go into that free space (protocol.md §3.7); of
    # its points reached many times, the first, middle and last hit (thin).
    for scenario, extra in (("basic", []), ("basic", ["durable"]), ("reservations", []), ("emptied", []),
                            ("emptied", ["durable"]), ("kept", ["sessions"])):
        with TempDir() as tmp:
            archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
            points = crash_points([TOOL, "write", scenario, archive, log] + extra, tmp)
            if scenario == "kept":
                points = thin(points)
            assert len(points) > (10 if scenario in ("emptied", "kept") else 30), "too few crash points: %r" % points
            runs = 0
            for name, hit in points:
                for mode in modes_for(name):
                    for f in (archive, log):
                        if os.path.exists(f):
                            os.unlink(f)
                    what = "%s %s%s #%d" % (" ".join([scenario] + extra), name, mode, hit)
                    run_killed([TOOL, "write", scenario, archive, log] + extra, name + mode, hit, what)
                    k = last_commit(log)
                    if not os.path.exists(archive):
                        continue  # killed before the archive existed: nothing to check
                    if os.path.getsize(archive) == 0:
                        # Killed between creating the file and writing its first end record: an empty file,
                        # which readers refuse clearly and "w+" starts afresh.
                        ro = run([TOOL, "verify", scenario, archive, str(k)], check=False)
                        assert ro.returncode != 0 and "empty" in ro.stderr, ro.stderr
                        continue
                    verify_after_kill(scenario, archive, k, what)
                    if scenario == "emptied" and k == 3:
                        # Every entry removed: after repair the file is the plain end record alone, as
                        # unzip and 7-Zip (checked above) require of an archive of no entries.
                        check_equal(os.path.getsize(archive), 22, "%s: size of the emptied archive" % what)
                    exercised.add(name + mode)
                    runs += 1
            print("%s: %d crash points, %d kills verified" % (" ".join([scenario] + extra), len(points), runs),
                  flush=True)
    # The cases the protocol must survive by name: a torn local header, a torn directory, a torn relocated
    # directory with its end records missing, zeros at the end of the file (a write whose size change reached
    # the disk but not its bytes).
    for must in ("put.entry:torn", "commit.directory:torn", "relocate.directory_copy:torn",
                 "relocate.directory_copy:grow", "relocate.directory_copy",
                 "reserve.header:torn", "patch.header:torn", "commit.truncate", "relocate.sync_copy",
                 "commit.records:torn", "commit.switch", "commit.sync_records", "commit.sync_switch",
                 # the last writer's close moving the directory down to the data (protocol.md §3.6)
                 "close.directory", "close.directory:torn", "close.directory:grow", "close.sync_directory",
                 "close.truncate", "close.sync_truncate",
                 # the last writer's close of an archive whose every entry was removed (protocol.md §3.6)
                 "close.emptied", "publish.link",
                 # kept tails (protocol.md §3.7)
                 "relocate.free_below_kept_tail", "relocate.release_kept_tail"):
        assert must in exercised, "crash case %s was not exercised: %r" % (must, sorted(exercised))


def verify_edit_kill(archive, k, what):
    """verify_after_kill for the in-place edits: before repair, mmzip's read-only open sees the last commit,
    except that the entry being edited in place when the writer died is refused with a message naming
    recovery (its bytes may be half-written; an undo journal beside the archive restores them)."""
    ro = run([TOOL, "verify", "edits", archive, str(k)], check=False)
    if ro.returncode != 0:
        killed = "was being written in place when its writer was killed"
        assert killed in ro.stderr and "mmzip recover" in ro.stderr, (
            "%s: read-only open of the unrepaired file:\n%s%s" % (what, ro.stdout, ro.stderr))
        assert os.path.exists(archive + ".mmzip-undo"), "%s: refused without a journal" % what
    rw = run([TOOL, "recover", "edits", archive, str(k)], check=False)
    assert rw.returncode == 0, "%s: recovery:\n%s%s" % (what, rw.stdout, rw.stderr)
    if ro.returncode == 0:
        check_equal(ro.stdout, rw.stdout, "%s: state before and after repair" % what)
    assert not os.path.exists(archive + ".mmzip-undo"), "%s: the journal outlived recovery" % what
    try:
        zip_tools_ok(archive)
        mmzip("check", "-q", archive)
    except AssertionError as e:
        raise AssertionError("%s: after repair: %s" % (what, e))
    return ro.returncode != 0


def thin(points):
    """Of a point reached many times, the first hit, one from the middle and the last: the edit scenario
    reaches the journal points hundreds of times, and each kill costs a process and four ZIP tools."""
    by = {}
    for name, hit in points:
        by.setdefault(name, []).append(hit)
    keep = []
    for name, hits in by.items():
        pick = sorted({hits[0], hits[len(hits) // 2], hits[-1]})
        keep += [(name, h) for h in pick]
    return keep


def test_every_edit_crash_point():
    """The in-place edit path (mmzip_edit_*: the undo journal, in-place writes, the local header rewrite, the
    commit, the journal reset and removal), killed at each of its points three ways, plain and durable."""
    exercised = set()
    refused_total = 0
    for extra in ([], ["durable"]):
        with TempDir() as tmp:
            archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
            points = thin(crash_points([TOOL, "write", "edits", archive, log] + extra, tmp))
            runs = 0
            for name, hit in points:
                for mode in modes_for(name):
                    for f in (archive, log, archive + ".mmzip-undo"):
                        if os.path.exists(f):
                            os.unlink(f)
                    what = "edits%s %s%s #%d" % (" durable" if extra else "", name, mode, hit)
                    run_killed([TOOL, "write", "edits", archive, log] + extra, name + mode, hit, what)
                    k = last_commit(log)
                    if not os.path.exists(archive) or os.path.getsize(archive) == 0:
                        continue
                    refused_total += verify_edit_kill(archive, k, what)
                    exercised.add(name + mode)
                    runs += 1
            print("edits%s: %d crash points, %d kills verified" % (" durable" if extra else "", len(points), runs),
                  flush=True)
    for must in ("edit.write:torn", "edit.journal_record:torn", "edit.header:torn", "edit.journal_reset",
                 "edit.published", "edit.undo:torn", "edit.journal_remove", "edit.sync_journal",
                 "relocate.directory_copy:torn", "commit.truncate", "patch.room", "edit.clear_room"):
        assert must in exercised, "crash case %s was not exercised: %r" % (must, sorted(exercised))
    assert refused_total > 10, "too few kills left an entry half-edited: %d" % refused_total
    print("%d kills left an entry half-edited, refused until recovery and then restored" % refused_total)


def test_crash_during_edit_recovery():
    """Writing the undo journal back is itself killed anywhere (torn too): recovery starts over and ends in
    the committed state."""
    with TempDir() as tmp:
        base, log = os.path.join(tmp, "base.zip"), os.path.join(tmp, "log")
        run_killed([TOOL, "write", "edits", base, log], "edit.write:torn", 25, "base")
        k = last_commit(log)
        saved = os.path.join(tmp, "saved.zip")
        shutil.copy(base, saved)
        shutil.copy(base + ".mmzip-undo", saved + ".mmzip-undo")
        work = os.path.join(tmp, "work.zip")
        shutil.copy(saved, work)
        shutil.copy(saved + ".mmzip-undo", work + ".mmzip-undo")
        points = crash_points([TOOL, "recover", "edits", work, str(k)], tmp)
        assert any(n == "recover.undo" for n, _ in points), "recovery wrote nothing back: %r" % points
        total = 0
        for name, hit in points:
            for mode in modes_for(name):
                shutil.copy(saved, work)
                shutil.copy(saved + ".mmzip-undo", work + ".mmzip-undo")
                what = "edit recovery killed at %s%s #%d" % (name, mode, hit)
                run_killed([TOOL, "recover", "edits", work, str(k)], name + mode, hit, what)
                verify_edit_kill(work, k, what)
                total += 1
        print("edit recovery: %d kills inside recovery verified" % total)


def test_crash_during_recovery():
    """Recovery is made of the same steps as a commit: killing it anywhere still leaves a recoverable file."""
    with TempDir() as tmp:
        base_archive, log = os.path.join(tmp, "base.zip"), os.path.join(tmp, "log")
        # Several damaged starting points: a torn trailer (found by scanning back), a relocated directory
        # with a torn pending region, zeros at EOF.
        bases = []
        for at, hit in (("relocate.directory_copy:torn", 2), ("put.entry:torn", 5), ("relocate.directory_copy:grow", 2),
                        ("commit.directory:torn", 6)):
            for f in (base_archive, log):
                if os.path.exists(f):
                    os.unlink(f)
            run_killed([TOOL, "write", "basic", base_archive, log], at, hit, at)
            saved = os.path.join(tmp, "base-%d.zip" % len(bases))
            shutil.copy(base_archive, saved)
            bases.append((saved, last_commit(log), at))
        total = 0
        for saved, k, origin in bases:
            work = os.path.join(tmp, "work.zip")
            shutil.copy(saved, work)
            points = crash_points([TOOL, "recover", "basic", work, str(k)], tmp)
            assert points, "recovery of %s did nothing" % origin
            for name, hit in points:
                for mode in modes_for(name):
                    shutil.copy(saved, work)
                    what = "recovery of (%s) killed at %s%s #%d" % (origin, name, mode, hit)
                    run_killed([TOOL, "recover", "basic", work, str(k)], name + mode, hit, what)
                    verify_after_kill("basic", work, k, what)
                    total += 1
        print("recovery: %d kills inside recovery verified" % total)


def test_random_kills():
    """SIGKILL at random moments of a long run of commits (small, large, batched, replaced, removed). The
    moment is chosen as a commit number, not a delay: the test waits until the writer has logged that commit
    and kills it at once, wherever in the following commits it then is. The writer holds at the end instead
    of exiting, so however fast or slow this machine is, the kill always finds it alive and the rounds land
    on states spread over the whole run."""
    rng = random.Random(int(os.environ.get("MMZIP_CRASH_SEED", "20261122")))
    with TempDir() as tmp:
        archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
        states = []
        for i in range(25):
            for f in (archive, log):
                if os.path.exists(f):
                    os.unlink(f)
            target = rng.randint(1, 1500)
            p = subprocess.Popen([TOOL, "write", "loop", archive, log, "hold"], env=env_for(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            while last_commit(log) < target and p.poll() is None:
                time.sleep(0.001)
            p.send_signal(signal.SIGKILL)
            p.wait()
            assert p.returncode == -signal.SIGKILL, "the writer failed before commit %d (exit %d): %s" % (
                target, p.returncode, p.stderr.read().decode())
            p.stderr.close()
            k = last_commit(log)
            assert k >= target, "killed after commit %d, before the chosen commit %d" % (k, target)
            got = verify_after_kill("loop", archive, k, "random kill %d after commit %d" % (i, k))
            states.append(got)
        assert len(set(states)) >= 20, "kills landed too alike to mean much: %r" % states
        print("random kills: states reached %r" % states)


def test_seed_protocol_torn_tail():
    """Archives torn by the seed's protocol (DataAxesFormats publishes the directory before the data): the
    directory names entries whose local header or data is not there yet. A read-only open must not hand
    out those bytes. mmzip's own protocol never leaves such an entry, so it is not mmzip's to roll back: a
    writable open keeps it (the file is byte-identical after recover), and a put appends after it, so that
    zipfile lists every entry it listed before."""
    import hashlib
    import struct
    import zipfile
    import zlib
    with TempDir() as tmp:
        good = os.path.join(tmp, "good.zip")
        mmzip("put", good, "keep", "-", input="kept bytes")
        raw = bytearray(open(good, "rb").read())
        # Parse our own trailer to find where the directory starts (the end of the data).
        z64 = len(raw) - 98
        cd_size, cd_off = struct.unpack_from("<QQ", raw, z64 + 40)
        cd = bytes(raw[cd_off:cd_off + cd_size])
        for case in ("zeros instead of the local header", "placeholder CRC of an unpatched reservation"):
            name, data = b"torn", b"x" * 3000
            lfh_off = cd_off
            data_off = lfh_off + 30 + len(name)
            crc = 0 if "placeholder" in case else zlib.crc32(data)
            rec = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 0x031E, 20, 0x0800, 0, 0, 0x21, crc,
                              len(data), len(data), len(name), 0, 0, 0, 0, 0o100644 << 16, lfh_off) + name
            new_cd_off = data_off + len(data)
            body = bytearray(new_cd_off - lfh_off)
            if "placeholder" in case:
                body[:30 + len(name)] = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0x0800, 0, 0, 0x21, 0,
                                                    len(data), len(data), len(name), 0) + name
                body[30 + len(name):] = data
            tail = cd + rec
            eocd = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 2, 2, len(tail), new_cd_off, 0)
            torn = bytes(raw[:cd_off]) + bytes(body) + tail + eocd
            path = os.path.join(tmp, "torn.zip")
            open(path, "wb").write(torn)
            # Read-only: the torn entry is listed by the directory but never handed out as garbage.
            p = mmzip("cat", path, "torn", check=False)
            assert p.returncode == 1 and ("torn" in p.stderr or "local header" in p.stderr or
                                          "CRC-32" in p.stderr), (case, p.stderr)
            check_equal(mmzip("cat", path, "keep").stdout, "kept bytes", case + ": read-only, untouched entry")
            listing = zipfile.ZipFile(path).namelist()
            # Writable open: kept as found, byte for byte.
            digest = hashlib.sha256(open(path, "rb").read()).hexdigest()
            out = mmzip("recover", path).stdout
            assert "kept as found" in out or "nothing to recover" in out, (case, out)
            check_equal(hashlib.sha256(open(path, "rb").read()).hexdigest(), digest,
                        case + ": sha-256 of the file after mmzip recover")
            # A put appends after it: zipfile lists what it listed, and the new entry.
            mmzip("put", path, "new", "-", input="new bytes")
            with zipfile.ZipFile(path) as zf:
                # Sorted: a commit of additions writes its records before the older ones (protocol.md §3.3).
                check_equal(sorted(zf.namelist()), sorted(listing + ["new"]), case + ": zipfile's listing after mmzip put")
                check_equal(zf.read("keep"), b"kept bytes", case + ": kept entry")
                check_equal(zf.read("new"), b"new bytes", case + ": new entry")
                if "placeholder" in case:
                    # The torn entry's bytes are those zipfile read before (its CRC still fails there).
                    with zf.open("torn") as f:
                        f._expected_crc = None
                        check_equal(f.read(), data, case + ": the kept entry's bytes")


def test_pack_is_crash_safe():
    """Killing `pack` anywhere leaves the old archive or the new one, whole, and no stray file."""
    with TempDir() as tmp:
        archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
        run([TOOL, "write", "basic", archive, log])
        base = os.path.join(tmp, "base.zip.keep")
        shutil.copy(archive, base)
        before = os.path.getsize(base)
        points = crash_points([TOOL, "pack", "basic", archive, "-"], tmp)
        packed_size = os.path.getsize(archive)
        assert packed_size < before, "pack reclaimed nothing (%d -> %d)" % (before, packed_size)
        names = [n for n, _ in points]
        for must in ("pack.entry", "pack.fsync", "pack.named", "pack.renamed"):
            assert must in names, "no crash point %s in pack: %r" % (must, names)
        seen_old = seen_new = 0
        for name, hit in points:
            shutil.copy(base, archive)
            run_killed([TOOL, "pack", "basic", archive, "-"], name, hit, "pack killed at %s #%d" % (name, hit))
            def stray():
                return sorted(f for f in os.listdir(tmp) if f not in ("a.zip", "log", "points.txt", "base.zip.keep"))
            left = stray()
            # Between naming the packed file and renaming it over the archive, the name is all there is.
            assert not left or name == "pack.named", "pack killed at %s left %r behind" % (name, left)
            if name == "pack.named":
                assert left and all(f.startswith("a.zip.mmzip-pack-") for f in left), left
            size = os.path.getsize(archive)
            assert size in (before, packed_size), "pack killed at %s: the archive is neither old nor new" % name
            seen_old += size == before
            seen_new += size == packed_size
            verify_after_kill("basic", archive, 12, "pack killed at %s #%d" % (name, hit))
            # A writable open leaves the dead pack's file (it only costs space); `mmzip recover` removes it.
            check_equal(stray(), left, "pack killed at %s #%d: files after a repairing open" % (name, hit))
            mmzip("recover", archive)
            check_equal(stray(), [], "pack killed at %s #%d: files left after mmzip recover" % (name, hit))
        assert seen_old and seen_new, "kills saw only one side of the rename (%d old, %d new)" % (seen_old, seen_new)


if __name__ == "__main__":
    main([test_every_edit_crash_point, test_crash_during_edit_recovery, test_seed_protocol_torn_tail, test_every_crash_point, test_crash_during_recovery, test_random_kills,
          test_pack_is_crash_safe])
