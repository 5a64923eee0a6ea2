"""Shared appending (MMZIP_SHARED) under SIGKILL: a shared writer killed while it holds the writer lock, at
every named crash point of its path (the shared.* points of taking the lock, reloading and letting it go, and
every write, sync and truncate of its transactions, before, torn and after zeros at the end of the file), is
repaired by the next lock holder - another shared writer that had opened the archive before the kill and now
makes one transaction - and loses only what it had not committed:

  1. the next writer's transaction succeeds; afterwards the archive holds exactly the killed writer's last
     commit (or the one in flight) plus the next writer's entry, every byte compared;
  2. the archive passes zipfile.testzip(), `unzip -t`, `7z t` and `mmzip check`.

Then the repair itself is killed: a second shared writer, killed at every point of the transaction that
repairs (reload, recovery's writes), and a third that completes the repair.
The kills come from crash points inside the process (plugin/src/io.c), never after a guessed delay; the next
writer is told to go through a pipe once the killed one is gone.
"""
import os
import signal
import subprocess

from mmzip_testlib import TempDir, check_equal, main, mmzip, zip_tools_ok

import test_crash_points as cp

TOOL = cp.TOOL


def start_next(scenario, archive, env=None, pre=False):
    """A shared writer that has opened the archive and waits for the word to make its transaction. With pre,
    it has put an entry first: its view is then a non-empty archive, whose changes by a writer that only adds
    names it takes in without a full reload (shared_writer.c, take_additions)."""
    p = subprocess.Popen([TOOL, "shared-next", scenario, archive, "pre" if pre else "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    line = p.stdout.readline()
    if line != "opened\n":
        p.kill()
        raise AssertionError("next writer did not open: %r %s" % (line, p.stderr.read()))
    return p


def finish_next(p, k, what):
    out, err = p.communicate("%d\n" % k, timeout=300)
    assert p.returncode == 0, "%s: next writer (exit %d):\n%s%s" % (what, p.returncode, out, err)
    return int(out.split()[-1])


def thin(points, keep_every):
    """Every point by name, and of those hit many times (one per step) the first, the last and every
    keep_every-th hit: the protocol steps repeat, the states they leave do not differ in kind."""
    last = {}
    for name, hit in points:
        last[name] = max(last.get(name, 0), hit)
    return [(n, h) for n, h in points if h == 1 or h == last[n] or h % keep_every == 0]


def repaired(archive, j, k, what):
    """The archive after the repairing writer's transaction: it holds the killed writer's last commit (k) or
    the one in flight (k + 1), and every reader accepts it."""
    assert j in (k, k + 1), (what, j, k)
    try:
        zip_tools_ok(archive)
        mmzip("check", "-q", archive)
    except AssertionError as e:
        raise AssertionError("%s: %s" % (what, e))


def test_killed_holder_is_repaired_by_the_next():
    exercised = set()
    for scenario, extra, pre in (("basic", ["shared"], True), ("reservations", ["shared"], False)):
        with TempDir() as tmp:
            archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
            # The points of a run beside a next writer that opened first (it created the archive), as below.
            nxt = start_next(scenario, archive, pre=pre)
            points = cp.crash_points([TOOL, "write", scenario, archive, log] + extra, tmp)
            finish_next(nxt, cp.last_commit(log), "listing run")
            names = {n for n, _ in points}
            # shared.quiet: the transactions after the writer's own found the file unchanged by its inotify
            # watch, without comparing the directory (shared_writer.c, "The watch").
            for must in ("shared.locked", "shared.release", "shared.quiet"):
                assert must in names, "shared crash point %s never reached: %r" % (must, sorted(names))
            runs = 0
            for name, hit in thin(points, 3):
                for mode in cp.modes_for(name):
                    for f in (archive, log):
                        if os.path.exists(f):
                            os.unlink(f)
                    what = "%s shared %s%s #%d" % (scenario, name, mode, hit)
                    nxt = start_next(scenario, archive, pre=pre)
                    try:
                        cp.run_killed([TOOL, "write", scenario, archive, log] + extra, name + mode, hit, what)
                        k = cp.last_commit(log)
                        j = finish_next(nxt, k, what)
                    finally:
                        if nxt.poll() is None:
                            nxt.kill()
                    repaired(archive, j, k, "%s: after the next writer" % what)
                    exercised.add(name + mode)
                    runs += 1
            print("%s shared: %d crash points, %d kills repaired by the next writer" % (scenario, len(points), runs),
                  flush=True)
    for must in ("shared.locked", "shared.release", "put.entry:torn", "commit.records:torn", "commit.switch",
                 "commit.directory:torn", "commit.truncate", "relocate.directory_copy:torn", "reserve.header:torn"):
        assert must in exercised, "crash case %s was not exercised: %r" % (must, sorted(exercised))


def test_killed_during_the_repair():
    """The writer that repairs is killed at every point of its repair transaction; a third one repairs."""
    with TempDir() as tmp:
        archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
        listing = os.path.join(tmp, "points.txt")
        exercised = set()
        # The first writer dies with a torn directory in the slack (needs a reload and a repair that moves
        # the directory back), or after a relocation copy (a cut), or with a torn entry.
        for first in ("commit.directory:torn", "relocate.directory_copy:torn", "put.entry:torn"):
            for f in (archive, log):
                if os.path.exists(f):
                    os.unlink(f)
            cp.run_killed([TOOL, "write", "basic", archive, log, "shared"], first, 2, first)
            k = cp.last_commit(log)
            saved = archive + ".saved"
            subprocess.run(["cp", "--sparse=always", archive, saved], check=True)
            # The repairing transaction's crash points, listed by a run that is not killed. The writers open
            # the archive before the damage is put in place (same file, rewritten), so that the repair is their
            # transaction's, not their open's.
            def damaged_with(*writers_env):
                if os.path.exists(archive):
                    os.unlink(archive)
                ws = [start_next("basic", archive, env=e) for e in writers_env]
                subprocess.run(["cp", "--sparse=always", saved, archive], check=True)
                return ws
            if os.path.exists(listing):
                os.unlink(listing)
            (second,) = damaged_with(cp.env_for(listing=listing))
            at_open = len(open(listing).readlines()) if os.path.exists(listing) else 0  # its open's points
            finish_next(second, k, first + " (listing)")
            points = []
            for line in open(listing).readlines()[at_open:]:
                name, hit = line.split()
                points.append((name, int(hit)))
            assert any(n == "shared.reloaded" for n, _ in points), points
            for name, hit in points:
                for mode in cp.modes_for(name):
                    what = "first killed at %s, second at %s%s #%d" % (first, name, mode, hit)
                    second, third = damaged_with(cp.env_for(name + mode, hit), None)
                    try:
                        out, err = second.communicate("%d\n" % k, timeout=300)
                        if second.returncode != -signal.SIGKILL:
                            check_equal(second.returncode, 0, "%s: second writer (%s)" % (what, err))
                        j = finish_next(third, k, what)
                    finally:
                        for p in (second, third):
                            if p.poll() is None:
                                p.kill()
                    repaired(archive, j, k, "%s: after the third writer" % what)
                    if second.returncode == -signal.SIGKILL:
                        exercised.add(name + mode)
        print("repairs killed at %d different points, each completed by the next writer" % len(exercised),
              flush=True)
        assert "shared.reloaded" in exercised, sorted(exercised)


if __name__ == "__main__":
    main([test_killed_holder_is_repaired_by_the_next, test_killed_during_the_repair])
