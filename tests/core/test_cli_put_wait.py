"""`mmzip put --wait`: puts queue behind other writers instead of failing with EBUSY.

  * A plain `mmzip put` holding the archive (waiting on its standard input) makes another plain put fail at
    once with EBUSY, a `--wait=0.3` put fail after its wait with a message naming the archive and the wait,
    and a `--wait` put wait until the holder has committed - then both entries are there.
  * Eight `mmzip put --wait` processes started together (files and a --dir tree each, one name put by all)
    all succeed; every entry holds its file's bytes, the shared name one of the versions, once; the archive
    passes zipfile.testzip(), `unzip -t` and 7z, and `mmzip check`.
Waits are for conditions (the holder's lock seen by `mmzip info`, a process's exit), never for a guessed time.
"""
import os
import subprocess
import sys
import zipfile

from mmzip_testlib import MMZIP, TempDir, check_equal, main, mmzip, zip_tools_ok


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def payload(name, n):
    return (name.encode() * (n // max(1, len(name)) + 1))[:n]


def wait_locked(archive, proc):
    """Until `mmzip info` says a writer holds the archive (proc must still be running meanwhile)."""
    while True:
        assert proc.poll() is None, "the holder exited early: %r" % (proc.communicate(),)
        if "held (a writer" in mmzip("info", archive).stdout:
            return


def test_queue_behind_a_holder():
    with TempDir() as tmp:
        archive = os.path.join(tmp, "a.zip")
        mmzip("put", archive, "first", input=b"1" * 10)
        holder = subprocess.Popen([MMZIP, "put", archive, "held", "-"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_locked(archive, holder)
            busy = mmzip("put", archive, "x", input="x", check=False)
            assert busy.returncode != 0 and "only one writer" in busy.stderr, busy.stderr
            short = mmzip("put", "--wait=0.3", archive, "x", input="x", check=False)
            assert short.returncode != 0 and archive in short.stderr and "waited 300 ms" in short.stderr, \
                short.stderr
            src = os.path.join(tmp, "waiter.bin")
            write(src, payload("waiter", 300000))
            waiter = subprocess.Popen([MMZIP, "put", "--wait", archive, "waiter", src], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE)
            # The waiter cannot finish while the holder holds the lock (it waits without limit); the holder's
            # commit lets it in.
            assert "waiter" not in mmzip("ls", archive).stdout
            assert waiter.poll() is None, "the waiter did not wait: %r" % (waiter.communicate(),)
            out, err = holder.communicate(input=b"held bytes", timeout=120)
            check_equal(holder.returncode, 0, "holder exit status (%s)" % err)
            out, err = waiter.communicate(timeout=120)
            check_equal(waiter.returncode, 0, "waiter exit status (%s)" % err)
        finally:
            for p in (holder, waiter) if "waiter" in locals() else (holder,):
                if p.poll() is None:
                    p.kill()
        with zipfile.ZipFile(archive) as z:
            check_equal(sorted(z.namelist()), ["first", "held", "waiter"], "entries")
            check_equal(z.read("held"), b"held bytes", "held")
            check_equal(z.read("waiter"), payload("waiter", 300000), "waiter")
            check_equal(z.read("first"), b"1" * 10, "first")
        zip_tools_ok(archive)


def test_many_waiting_puts():
    with TempDir() as tmp:
        archive = os.path.join(tmp, "many.zip")
        procs, want = [], {}
        for i in range(8):
            f = os.path.join(tmp, "in", "f%d.bin" % i)
            write(f, payload("file%d" % i, 1000 + 40000 * i))
            want["p%d" % i] = payload("file%d" % i, 1000 + 40000 * i)
            tree = os.path.join(tmp, "tree%d" % i)
            for j in range(5):
                write(os.path.join(tree, "c%d" % j), payload("t%d/%d" % (i, j), 5000 + j))
                want["t%d/c%d" % (i, j)] = payload("t%d/%d" % (i, j), 5000 + j)
            meta = os.path.join(tmp, "in", "meta%d" % i)
            write(meta, b'{"writer": %d}' % i)
            # One process per command, all started before any is waited for; a --dir put is one batch.
            procs.append(subprocess.Popen([MMZIP, "put", "--wait", archive, "p%d" % i, f],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            procs.append(subprocess.Popen([MMZIP, "put", "--wait=120", archive, "--dir", tree, "t%d" % i],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            procs.append(subprocess.Popen([MMZIP, "put", "--wait", archive, ".zattrs", meta],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE))
        for p in procs:
            out, err = p.communicate(timeout=300)
            check_equal(p.returncode, 0, "exit status of %s (%s)" % (" ".join(p.args), err.decode()))
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
            check_equal(len(names), len(set(names)), "every name once (%d names)" % len(names))
            check_equal(sorted(names), sorted(list(want) + [".zattrs"]), "entries")
            for k, v in want.items():
                check_equal(z.read(k), v, k)
            assert z.read(".zattrs") in [b'{"writer": %d}' % i for i in range(8)], z.read(".zattrs")
        zip_tools_ok(archive)
        mmzip("check", "-q", archive)


if __name__ == "__main__":
    main([test_queue_behind_a_holder, test_many_waiting_puts])
