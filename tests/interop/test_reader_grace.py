"""A write onto the directory that a relocation left without keeping it waits for the third-party readers that
may be reading it (docs/protocol.md §3.8, plugin/src/reader_grace.c).

A young archive whose entries are large beside 1 % of it (3 MB of entries of up to 2 MiB) takes 16 sessions of
one put each (tests/interop/c_writer.c, put-loop mode, fixed seed): most of them relocate the directory, and the
relocations that cannot keep the old tail write the put's entry over it. The test build's I/O trace, which
c_writer logs with CLOCK_MONOTONIC times, shows each wait as `relocate.reader_grace` (offset: 1 if another open
of the file was seen, length: microseconds waited).

1. Alone (no other process has the archive open), such a write waits for nothing: every grace step reports no
   other open.
2. With another process holding the archive open (as a reader polling it does), the write onto the old
   directory comes at least 20 ms after the relocation that left it. A lower bound on a wait holds on any
   machine, loaded or not; how much the readers gain is measured by the readers benchmark (reliability.md §3).

In both, the grace step follows a relocation of its own session, and zipfile reads every entry byte for byte.
"""
import os
import subprocess
import sys
import zipfile

from c_writer_run import content, write
from mmzip_testlib import TempDir, check_equal, main

GRACE_S = 0.020


def graces(ops):
    """(seconds since the session's last relocation, other open seen, microseconds waited) per grace step."""
    out, copied = [], None
    for o in ops:
        if o[2] == "session.open":
            copied = None
        elif o[2] == "relocate.directory_copy":
            copied = float(o[0])
        elif o[2] == "relocate.reader_grace":
            assert copied is not None, "a grace step without a relocation before it in its session: %s" % o
            out.append((float(o[0]) - copied, int(o[3]), int(o[4])))
            copied = None  # one wait per relocation
    return out


def write_held(held, mode, path, entries, prefix, log):
    """c_writer's write (seed 5, entries up to 2 MiB), with another open file description of the archive in
    another process for the whole run if `held`; then zipfile reads every entry, byte for byte, and finds all
    that this write put."""
    holder = None
    if held:
        holder = subprocess.Popen([sys.executable, "-c", "import sys; f = open(sys.argv[1], 'rb'); print('open', "
                                   "flush=True); sys.stdin.read()", path], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        check_equal(holder.stdout.readline().strip(), "open", "the holder's first line")
    try:
        ops = write(mode, path, entries, 5, 2 << 20, prefix, log)
    finally:
        if holder:
            holder.stdin.close()
            holder.wait()
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        for n in names:
            assert z.read(n) == content(n), "%s differs from what was written" % n
    check_equal(len([n for n in names if n.startswith(prefix + "/")]), entries, "entries the writer put")
    return ops


def sessions(d, held):
    a, log = os.path.join(d, "a.zip"), os.path.join(d, "log")
    write("batch10", a, 1 << 30, 3, 2 << 20, "p", os.path.join(d, "base.log"), cap=3_000_000)
    ops = write_held(held, "put-loop", a, 16, "s", log)
    return ops, graces(ops)


def test_alone_no_wait():
    with TempDir() as d:
        ops, g = sessions(d, held=False)
        relocations = sum(o[2] == "relocate.directory_copy" for o in ops)
        print("alone: %d relocations, %d writes onto an old directory: %s" % (relocations, len(g), g))
        assert len(g) >= 3, "only %d writes onto a directory a relocation left (the test needs some)" % len(g)
        check_equal([x[1] for x in g], [0] * len(g), "other opens seen with nothing else holding the file")


def test_held_waits():
    with TempDir() as d:
        ops, g = sessions(d, held=True)
        print("held: %d writes onto an old directory, seconds after the relocation: %s"
              % (len(g), ["%.4f" % x[0] for x in g]))
        assert len(g) >= 3, "only %d writes onto a directory a relocation left (the test needs some)" % len(g)
        check_equal([x[1] for x in g], [1] * len(g), "other opens seen with a holder")
        for since, _, waited in g:
            assert since >= GRACE_S, ("a write onto the old directory %.4f s after the relocation, with another "
                                      "open of the file" % since)
            assert waited > 0, "no wait reported"


if __name__ == "__main__":
    main([test_alone_no_wait, test_held_waits])
