"""What `mmzip check` and `mmzip recover` say after a real kill, against what they do. A writer (crash_tool, the
test build of the library) is killed with SIGKILL at crash points of the commit protocol and of in-place edits
(MMZIP_CRASH_AT, plugin/src/io.c), torn and not. After each kill:

  1. check's verdict and its "recover:" lines agree: "recover: nothing to do" only if no error asks for
     recovery, and every error that names 'mmzip recover' has a "recover:" line saying what recover will do
     (for an undo journal: which entry; for debris: how many bytes, where);
  2. `mmzip recover` says what it did, with the figures the file shows: the bytes an undo journal writes back
     (counted here from the journal itself, tests/lib/undo_journal.py), the bytes cut (the file's size before
     and after), and "nothing to recover" only when the file is byte for byte as it was;
  3. the repaired archive holds exactly the last commit (crash_tool verify), and a second recover changes
     nothing and says so."""
import os
import re
import subprocess

from mmzip_testlib import TempDir, check_equal, main, mmzip, run
import undo_journal

TOOL = os.path.join(os.environ["MMZIP_BUILD_DIR"], "bin", "crash_tool")


def env_for(crash_at=None, hit=1, listing=None):
    e = dict(os.environ)
    for k in ("MMZIP_CRASH_AT", "MMZIP_CRASH_HIT", "MMZIP_CRASH_LIST"):
        e.pop(k, None)
    if crash_at:
        e["MMZIP_CRASH_AT"], e["MMZIP_CRASH_HIT"] = crash_at, str(hit)
    if listing:
        e["MMZIP_CRASH_LIST"] = listing
    return e


def points_of(scenario, tmp):
    archive, log, listing = (os.path.join(tmp, n) for n in ("p.zip", "p.log", "points"))
    p = subprocess.run([TOOL, "write", scenario, archive, log], env=env_for(listing=listing), capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    by = {}
    for line in open(listing):
        name, hit = line.split()
        by.setdefault(name, []).append(int(hit))
    # The first hit of each point, one from the middle and the last: enough to land before, inside and after
    # each kind of step, in a few seconds.
    return [(name, h) for name, hits in sorted(by.items()) for h in sorted({hits[0], hits[len(hits) // 2], hits[-1]})]


def modes_for(name):
    if name.endswith(("truncate", "switch", "sync", "published", "journal_remove", "journal_reset", "clear_room")):
        return [""]
    return ["", ":torn"]


def read(path):
    with open(path, "rb") as f:
        return f.read()


def one_kill(scenario, archive, log, point, hit):
    what = "%s %s #%d" % (scenario, point, hit)
    for f in (archive, log, archive + ".mmzip-undo"):
        if os.path.exists(f):
            os.unlink(f)
    p = subprocess.run([TOOL, "write", scenario, archive, log], env=env_for(point, hit), capture_output=True,
                       text=True)
    assert p.returncode == -9, "%s: the writer was not killed (%d): %s" % (what, p.returncode, p.stderr)
    if not os.path.exists(archive) or os.path.getsize(archive) == 0:
        return None
    k = int(open(log).read().split()[-1]) if os.path.exists(log) and open(log).read().split() else 0
    before = read(archive)
    journal = archive + ".mmzip-undo"
    j = undo_journal.read(journal) if os.path.exists(journal) else None
    write_back = undo_journal.bytes_to_write_back(journal) if j else 0

    chk = mmzip("check", archive, check=False)
    lines = chk.stderr.splitlines()
    errors = [l for l in lines if l.startswith("error: ")]
    recover = [l[len("recover: "):] for l in lines if l.startswith("recover: ")]
    asks = [l for l in errors if "mmzip recover" in l]
    if "nothing to do" in recover:
        check_equal(recover, ["nothing to do"], "%s: 'nothing to do' beside other recover: lines" % what)
        assert not asks, "%s: check says 'recover: nothing to do' beside errors that ask for it:\n%s" % (
            what, chk.stderr)
    for e in asks:
        m = re.search(r"entry '([^']*)': CRC-32 mismatch .*was being written in place when its writer was killed", e)
        if m:
            assert any(r.startswith("restore entry '%s' to its last commit" % m.group(1)) for r in recover), (
                "%s: an error names entry %s awaiting recovery, and no recover: line restores it:\n%s"
                % (what, m.group(1), chk.stderr))
            continue
        m = re.search(r"(\d+) bytes follow the last commit's end records", e)
        assert m, "%s: an error asks for recover, unexplained: %s" % (what, e)
        assert any(r.startswith("cut the %s bytes after the end records at " % m.group(1)) for r in recover), (
            "%s: %s bytes of debris, and no recover: line cuts them:\n%s" % (what, m.group(1), chk.stderr))

    out = mmzip("recover", archive).stdout.splitlines()
    after = read(archive)
    if recover == ["nothing to do"]:
        check_equal(out, ["%s: nothing to recover; the archive was not changed" % archive],
                    "%s: recover after check said 'recover: nothing to do'" % what)
    if after == before:
        # No change to the file: only a journal that restored nothing may have been removed.
        for l in out:
            assert "nothing to recover" in l or "removed the undo journal" in l or "wrote back" in l, (
                "%s: the file did not change, yet recover says: %s" % (what, l))
    else:
        assert not any("nothing to recover" in l for l in out), "%s: 'nothing to recover' for a changed file" % what
    if out == ["%s: nothing to recover; the archive was not changed" % archive]:
        check_equal(after, before, "%s: bytes after 'nothing to recover'" % what)
        check_equal(recover, ["nothing to do"], "%s: check's recover: lines, where recover had nothing to do" % what)
    for r in recover:
        if r.startswith("restore entry '"):
            name = r.split("'")[1]
            want = write_back
            got = [l for l in out if l.startswith("%s: restored entry '%s' to its last commit (" % (archive, name))]
            assert len(got) == 1 and (" wrote back %d bytes of that commit from the undo journal %s.mmzip-undo"
                                      % (want, archive)) in got[0], (
                "%s: recover should restore '%s' writing back %d bytes:\n%s" % (what, name, want, "\n".join(out)))
        m = re.match(r"cut the (\d+) bytes after the end records at (\d+)", r)
        if m:
            n, at = int(m.group(1)), int(m.group(2))
            got = [l for l in out if re.search(r": (cut|removed) the %d bytes after the last commit's end records "
                                               r"at %d " % (n, at), l)]
            assert got, "%s: recover should cut %d bytes at %d:\n%s" % (what, n, at, "\n".join(out))
            check_equal(after[:at], before[:at] if len(after) == at else after[:at], "%s: bytes kept" % what)
    for l in out:
        m = re.search(r"the file shrank by (\d+) bytes", l)
        if m and not any("bytes after the last commit's end records" in x for x in out):
            check_equal(len(before) - len(after), int(m.group(1)), "%s: the shrink recover reports" % what)
        m = re.search(r"(cut|removed) the (\d+) bytes after the last commit's end records at (\d+)", l)
        if m and not any("wrote the directory" in x for x in out):
            check_equal(len(after), int(m.group(3)), "%s: the size after the cut" % what)
            check_equal(len(before) - len(after), int(m.group(2)), "%s: the bytes cut" % what)
    if j and j["records"] and any(r.startswith("restore entry") for r in recover):
        assert not os.path.exists(journal), "%s: the journal outlived recover" % what
    v = run([TOOL, "verify", scenario, archive, str(k)], check=False)
    assert v.returncode == 0, "%s: after recover:\n%s%s" % (what, v.stdout, v.stderr)
    again = read(archive)
    check_equal(mmzip("recover", archive).stdout, "%s: nothing to recover; the archive was not changed\n" % archive,
                "%s: a second recover" % what)
    check_equal(read(archive), again, "%s: bytes after a second recover" % what)
    assert "recover: nothing to do" in mmzip("check", archive).stderr, what
    return out


def run_scenario(scenario):
    said = set()
    with TempDir() as tmp:
        archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
        kills = 0
        for point, hit in points_of(scenario, tmp):
            for mode in modes_for(point):
                out = one_kill(scenario, archive, log, point + mode, hit)
                if out is None:
                    continue
                kills += 1
                for l in out:
                    said.add(re.sub(r"^\S+: (\w+ \w+).*", r"\1", l))
        print("%s: %d kills; recover said: %s" % (scenario, kills, sorted(said)), flush=True)
    return said


def test_commit_protocol_kills():
    said = run_scenario("basic")
    assert "nothing to" in said, said
    assert any(s.startswith(("cut the", "removed the")) for s in said), said


def test_in_place_edit_kills():
    said = run_scenario("edits")
    assert "restored entry" in said, said
    assert "nothing to" in said, said


if __name__ == "__main__":
    main([test_commit_protocol_kills, test_in_place_edit_kills])
