#!/usr/bin/env python3
"""Third-party ZIP readers polling an archive while mmzip appends to it (issue 10 point 1, issue 24 point 2).

Each *cell* is one writer from one starting state, with four pollers on the same archive:

  writers   put-loop        `mmzip put ARCHIVE KEY FILE`, one process per put (a loop in the writer process)
            c-put-loop      tests/interop/c_writer.c through mmzip.h: one session per put (open, put, close)
            py-put-loop     one mmzip.Archive(path, "w+") session per put (open, put, close)
            c-commit-each   tests/interop/c_writer.c through mmzip.h, one handle, a commit after every put
            py-commit-each  mmzip.Archive(path, "w+"), a commit after every put
            c-batch10       the C writer, ten puts per commit (mmzip_begin / mmzip_commit)
            py-batch10      mmzip.Archive, ten puts per commit (`with a.batch():`)
            zipfile-append  the peer (measured, not judged): Python's zipfile in "a" mode, one put per open
  starts    none            no file: the writer creates the archive (it appears, valid, at the first commit)
            empty           an empty archive (its 22-byte end record alone), at rest
            large           an archive of --large-size bytes of entries (1 GiB for the benchmark), at rest
  pollers   zipfile         Python's zipfile: open, list, read the newest entry (zipfile checks its CRC-32)
            zarr            zarr-python 2.13's zarr.storage.ZipStore: open, list, read the newest entry
            unzip           Info-ZIP `unzip -tqq` (tests the CRC-32 of every entry)
            libzip          libzip's zip_open(ZIP_CHECKCONS), then the newest entry (libzip_poll.c)
  probe     tail_probe.c, the fastest reader there can be (a few system calls, about 0.1 ms a poll), strict
            as the strictest reader: its failed polls measure the windows of the file itself, apart from the
            readers' own (see "Windows" below). It is reported beside the readers, not counted with them.

Entry k/NNNNNNN.SIZE holds "k/NNNNNNN.SIZE|" repeated and cut to SIZE bytes, so a poller checks every byte
it is given against the name alone. Sizes are log-uniform from 1 byte to --max-size (2 MiB). A round writes
--entries entries (a count, not a time; --large-entries for the writers that keep one handle open, from the
start "large"); a cell runs rounds until its counts are reached. Each poll is "ok",
a failure (the reader refused the archive or the entry; counted by reader and by message), a CRC error (the
reader saw an entry whose bytes do not match its CRC-32) or wrong bytes (the reader returned bytes that
differ from what was written). The last two must never happen. Polls while the file does not exist yet
(start "none"), and polls that end before the writer's first step or start after its last one (the pollers
start first and wait for each other), are not counted.

Every poll is timed (CLOCK_MONOTONIC). A *burst* is a run of consecutive failed polls of one reader; its
duration is the time from the start of its first failed poll to the end of its last one (how long that
reader kept failing). Each writer logs what it did to the file's tail, on the same clock: the C writers every
step the library names (relocate.directory_copy, commit.truncate, close.truncate, commit.switch, ...), the
Python writers and the put loop each commit or put with the file size before and after it (grew: a
relocation happened in it; shrank: a truncate). Each burst is attributed to the writer steps that ran while
it lasted.

Windows. A reader fails for one of two reasons: the file had no tail that reader accepts while it looked (the
file's window: a relocation's write, an entry written over the directory a reader had just found), or the
file's size changed between two of the reader's own reads (the reader's window: a reader is not atomic, and a
poll of libzip with ZIP_CHECKCONS takes 10-90 ms). The probe measures the first: a burst of its failed polls
lasts, to within one of its 0.1 ms polls, as long as the file had no valid tail; a single failed probe poll
(the next one succeeds) is a change during the probe's own reads, or a window shorter than one poll and
pause, so the file's window is the probe's longest run of two or more failed polls. For the second the report
prints, per reader, its mean poll time and the share of its polls that a size change of the writer falls into
if the changes come at random ("straddled": 1 - exp(-changes per second * mean poll time)), the failure rate a
reader that fails at every size change during its poll would have; a burst of one failed poll of a reader
lasts as long as that reader's poll, whatever the file did.

Used by the CTest test interop_readers_during_append (bounded: asserts what holds on any machine, prints the
rates) and by the benchmark readers_bench (judges the rates against the issue's targets); see --help.
"""
import argparse
import collections
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.environ.get("MMZIP_PYTHON", sys.executable)

# Targets of issue 24 point 2: the largest share of failed polls per writer kind, and the longest burst.
TARGETS = {"put-loop": 0.001, "commit-each": 0.01, "batch10": 0.001, "zipfile-append": 1.0}
BURST_TARGET = 0.001  # seconds
WRITERS = ["put-loop", "c-put-loop", "py-put-loop", "c-commit-each", "py-commit-each", "c-batch10", "py-batch10"]
STARTS = ["none", "empty", "large"]
READERS = ["zipfile", "zarr", "unzip", "libzip"]
PROBE = "probe"  # tail_probe.c: measured and reported beside the readers, not one of them


def kind_of(writer):
    """The writer's kind for the targets: put-loop, commit-each, batch10 or zipfile-append."""
    return writer.split("-", 1)[1] if writer.startswith(("c-", "py-")) else writer


def content(name, size=None):
    if size is None:
        size = int(name.rsplit(".", 1)[1])
    unit = (name + "|").encode()
    return (unit * (size // len(unit) + 1))[:size]


def entry_sizes(seed, max_size):
    rng = random.Random(seed)
    bits = max_size.bit_length() - 1
    while True:
        yield min(max_size, int(2 ** rng.uniform(0, bits)))


def normalize(msg):
    """Groups messages that differ only by numbers, names and paths."""
    msg = msg.strip().splitlines()[0] if msg.strip() else "(no message)"
    msg = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", msg)
    msg = re.sub(r"(/[\w.+-]+)+", "PATH", msg)
    msg = re.sub(r"k/\d+\.\d+", "NAME", msg)
    msg = re.sub(r"(0x)?[0-9a-fA-F]*\d[0-9a-fA-F]*", "N", msg)
    return msg[:160]


def now():
    return time.monotonic()  # CLOCK_MONOTONIC, the clock of libzip_poll and c_writer


# --------------------------------------------------------------------------------------------- writers

def run_writer(writer, archive, stop, entries, seed, max_size, log_path):
    """Appends ENTRIES entries (or until STOP exists). Prints a JSON summary, with how the file's size changed
    at each commit: kept (end records rewritten in place), shrunk (a truncate) or grown (a relocation). Logs
    each commit (or put of the loop) as "T_END T_START WHAT SIZE_BEFORE SIZE_AFTER"."""
    sizes = entry_sizes(seed, max_size)
    puts = commits = 0
    if writer != "put-loop" and writer != "zipfile-append":
        import mmzip  # noqa: F401  (before the clock starts: slow to load under the sanitizer runtime)
    log = open(log_path, "w")
    open(stop + ".ready-writer", "w").close()
    t0 = now()
    sizes_seen = collections.Counter()

    def size_now():
        try:
            return os.path.getsize(archive)
        except FileNotFoundError:
            return 0

    state = {"size": size_now(), "t": now()}

    def begin():
        state["size"], state["t"] = size_now(), now()

    def done(what):
        size, t = size_now(), now()
        change = "grew" if size > state["size"] else "shrank" if size < state["size"] else "kept"
        sizes_seen[{"grew": "grown", "shrank": "shrunk", "kept": "kept"}[change]] += 1
        log.write("%.6f %.6f %s.%s %d %d\n" % (t, state["t"], what, change, state["size"], size))

    def more():
        return puts < entries and not os.path.exists(stop)

    if writer == "put-loop":
        mmzip = os.environ["MMZIP_BIN"]
        tmp = archive + ".src"
        while more():
            name = "k/%07d.%d" % (puts, next(sizes))
            with open(tmp, "wb") as f:
                f.write(content(name))
            begin()
            r = subprocess.run([mmzip, "put", archive, name, tmp], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit("mmzip put %s failed: %s" % (name, r.stderr.strip()))
            done("put")
            puts += 1
            commits += 1
        os.unlink(tmp)
    elif writer == "zipfile-append":
        # The peer: Python's zipfile appending in place ("a" mode), which rewrites the directory where it was.
        import zipfile
        while more():
            name = "k/%07d.%d" % (puts, next(sizes))
            begin()
            with zipfile.ZipFile(archive, "a") as z:
                z.writestr(name, content(name))
            done("put")
            puts += 1
            commits += 1
    elif writer == "py-put-loop":
        import mmzip
        while more():
            name = "k/%07d.%d" % (puts, next(sizes))
            data = content(name)
            begin()
            with mmzip.Archive(archive, "w+") as a:
                a[name] = data
            done("session")
            puts += 1
            commits += 1
    else:
        import mmzip
        per_commit = 10 if writer == "py-batch10" else 1
        a = mmzip.Archive(archive, "w+")
        try:
            while more():
                names = ["k/%07d.%d" % (puts + i, next(sizes)) for i in range(min(per_commit, entries - puts))]
                datas = [content(n) for n in names]
                begin()
                if per_commit == 1:
                    a[names[0]] = datas[0]
                else:
                    with a.batch():
                        for n, d in zip(names, datas):
                            a[n] = d
                done("commit")
                puts += len(names)
                commits += 1
            begin()
        finally:
            a.close()
        done("close")
    log.close()
    print(json.dumps({"puts": puts, "commits": commits, "seconds": now() - t0, "bytes": size_now(),
                      "size_changes": dict(sizes_seen)}), flush=True)


# --------------------------------------------------------------------------------------------- pollers

def newest(names):
    names = [n for n in names if n.startswith("k/")]
    return max(names) if names else None


def check_bytes(name, data):
    return "ok" if data == content(name) else "wrong %s (%d bytes)" % (name, len(data))


# How a zipfile poll that failed inside its own window says so (SizeThenTail.grew), and how report() counts them.
GREW_MARK = "the file grew between the size zipfile took and its end records"


class SizeThenTail:
    """zipfile's file, noting the file's end wherever zipfile finds it while it reads the end records: at each
    seek relative to the end (the size it takes, the end record, the ZIP64 locator and end record) and at each
    read to the end (the end record, or its last 64 KiB where it searches for one). They differ where the writer
    grew the file in between, a window of zipfile's own that no order of writes closes: zipfile then reads
    every offset shifted by the growth, or, grown between its seek to the end record and the read, searches
    the new tail and misses its ZIP64 records (interop_tail_acceptance, test_zipfile_size_then_tail). Later
    reads are of the directory and entries, at absolute offsets. zarr's ZipStore is zipfile too, but opens the
    file itself: its failures are not told apart."""

    def __init__(self, f):
        self.f = f
        self.ends = []
        self.first = self.last = None  # zipfile's own window: from its first seek to the end to its last read
        self.absolute = False          # of the end records, before it seeks to the directory

    def seek(self, offset, whence=0):
        if whence == 2 and self.first is None:
            self.first = now()
        pos = self.f.seek(offset, whence)
        if whence == 2:
            self.ends.append(pos - offset)
        elif whence == 0 and self.first is not None:
            self.absolute = True
        return pos

    def read(self, n=-1):
        data = self.f.read(n)
        if n is None or n < 0:
            self.ends.append(self.f.tell())
        if not self.absolute and self.first is not None:
            self.last = now()
        return data

    def window(self):
        """Seconds during which a growth of the file fails this poll, whatever the writer does."""
        return self.last - self.first if self.first is not None and self.last is not None else 0.0

    def __getattr__(self, name):
        return getattr(self.f, name)

    def grew(self):
        return " [%s]" % GREW_MARK \
            if len(set(self.ends)) > 1 else ""


def poll_zipfile(archive):
    import zipfile
    try:
        f = open(archive, "rb")
    except FileNotFoundError:
        return None
    w = SizeThenTail(f)
    try:
        with f, zipfile.ZipFile(w) as z:
            name = newest(z.namelist())
            # zipfile checks the CRC-32 after the last byte
            r = "ok" if name is None else check_bytes(name, z.read(name))
        return r + " window=%.6f" % w.window() if r == "ok" else r
    except zipfile.BadZipFile as e:
        if "CRC" in str(e):
            return "crc %s" % e
        return "fail %s: %s%s" % (type(e).__name__, e, w.grew())
    except Exception as e:  # anything else a user of zipfile would see
        return "fail %s: %s%s" % (type(e).__name__, e, w.grew())


def poll_zarr(archive):
    import zarr.storage
    if not os.path.exists(archive):
        return None  # ZipStore in mode "r" on a missing file: nothing to read yet
    try:
        store = zarr.storage.ZipStore(archive, mode="r")
        try:
            name = newest(list(store.keys()))
            if name is None:
                return "ok"
            data = store[name]
        finally:
            store.close()
    except Exception as e:
        if "CRC" in str(e):
            return "crc %s" % e
        return "fail %s: %s" % (type(e).__name__, e)
    return check_bytes(name, bytes(data))


def poll_unzip(archive):
    if not os.path.exists(archive):
        return None  # once the archive exists (start "none": at the writer's first commit), it stays
    r = subprocess.run(["unzip", "-tqq", archive], capture_output=True, text=True, errors="replace")
    out = (r.stdout + r.stderr).strip()
    if r.returncode == 0 or (r.returncode == 1 and "zipfile is empty" in out):
        return "ok"  # unzip's warning for an archive without entries (status 1) is the right answer there
    if "bad CRC" in out or "CRC error" in out:
        return "crc %s" % out.splitlines()[0]
    # Skip unzip's banner lines ("Archive: ...") to keep the line that says what is wrong.
    lines = [l for l in out.splitlines() if l.strip() and not l.startswith("Archive:")]
    return "fail unzip exit %d: %s" % (r.returncode, lines[0] if lines else "(no message)")


POLLERS = {"zipfile": poll_zipfile, "zarr": poll_zarr, "unzip": poll_unzip}


def run_poller(kind, archive, stop):
    fn = POLLERS[kind]
    fn(archive)  # imports what the poller needs (zarr takes seconds on a busy machine) before it says ready
    open(stop + ".ready-" + kind, "w").close()
    while not os.path.exists(stop):
        t0 = now()
        r = fn(archive)
        if r is not None:
            print("%.6f %.6f %s" % (t0, now(), r), flush=True)


# --------------------------------------------------------------------------------------------- analysis

def read_log(path):
    """The writer's log: [(t_start, t_end, what, a, b)], in order."""
    ops = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 5:
                ops.append((float(p[1]), float(p[0]), p[2], int(p[3]), int(p[4])))
    return ops


# Steps whose window a third-party reader can fall into: the tail moves (relocation) or is cut (truncate).
def step_kind(what):
    if what.startswith("relocate."):
        return "relocation"
    if what.endswith(".truncate"):
        return "truncate"
    if what.endswith(".grew"):
        return "grew (relocation)"
    if what.endswith(".shrank"):
        return "shrank (truncate)"
    return None


def writer_steps(ops):
    """Per step that changes the file's tail: [count, longest, total seconds]. For the C writers a step is one
    system call (its time runs from the end of the step before, so it is an upper bound); for the others, a
    whole commit or put whose file size grew (a relocation happened in it) or shrank (a truncate). The C
    writers' relocate.reader_grace is the wait before a write onto a directory a relocation did not keep
    (protocol.md §3.8), whose length the library logs in microseconds."""
    c = {}
    for t0, t1, what, _, length in ops:
        if what.startswith("relocate.directory_copy") or what.endswith((".truncate", ".grew", ".shrank")) \
                or what in ("commit.switch", "relocate.free_below_kept_tail", "relocate.reader_grace"):
            took = length / 1e6 if what == "relocate.reader_grace" else t1 - t0
            n = c.setdefault(what, [0, 0.0, 0.0])
            n[0] += 1
            n[1] = max(n[1], took)
            n[2] += took
    return c


def size_changes(writer, ops):
    """How many times the writer changed the file's size. The C writers log each step that does (a relocation's
    write, a truncate); the others log each commit (or put) with the size before and after it: one change for
    each that grew or shrank, at least (a session whose first relocation was small keeps its slack, and its
    close cuts nothing, protocol.md §3.2; after a put under 256 bytes it does cut, a change not counted)."""
    if writer.startswith("c-"):
        return sum(1 for _, _, what, _, _ in ops if what == "relocate.directory_copy" or what.endswith(".truncate"))
    return sum(1 for _, _, what, _, _ in ops if what.endswith((".grew", ".shrank")))


def straddled(changes, seconds, mean_poll):
    """The share of polls of mean_poll seconds that one of `changes` size changes in `seconds`, coming at random,
    falls into: what a reader that fails at every size change during its poll would fail."""
    import math
    return 1.0 - math.exp(-changes / max(seconds, 1e-9) * mean_poll) if changes else 0.0


def attribute(b0, b1, ops, starts):
    """The writer steps that may have caused a burst from b0 to b1: those that ran (or ended) within it, or
    ended at most 1 ms before it started (a reader that read the old end records a moment before)."""
    import bisect
    found = collections.Counter()
    i = bisect.bisect_left(starts, b0 - 5.0)
    for t_start, t_end, what, _, _ in ops[i:]:
        if t_start > b1:
            break
        if t_end >= b0 - 0.001:
            k = step_kind(what)
            if k:
                found[what] += 1
    return sorted(found) or ["(no relocation or truncate)"]


def burst_kind(causes):
    """What a burst overlapped, from the C writer's steps: a relocation that kept the old tail for the readers
    reading it (protocol.md §3.7: its step relocate.free_below_kept_tail), one that could not (its put's entry
    is written over the old directory and end records), a truncate, or none of these."""
    during = " ".join(causes)
    if "relocate.free_below_kept_tail" in during:
        return "kept"
    if "relocate.directory_copy" in during:
        return "not kept"
    if "truncate" in during:
        return "truncate"
    return "other"


def writer_window(ops):
    """When the writer ran: from the start of its first logged step to the end of its last one."""
    if not ops:
        return None
    return min(o[0] for o in ops), max(o[1] for o in ops)


def tally(lines, ops):
    """Counts the polls that overlap the writer's run. Polls that ended before its first step or began after
    its last one read an archive nobody was writing (the pollers start first and wait seconds for zarr to
    load: from an empty archive that was thousands of quick successful polls of 22 bytes); they are counted
    apart, as "outside", not in the rates. CRC errors and wrong bytes are counted whenever they happen."""
    t = {"polls": 0, "ok": 0, "fail": 0, "crc": 0, "wrong": 0, "messages": collections.Counter(), "examples": [],
         "bursts": [], "burst_causes": collections.Counter(), "poll_seconds": 0.0, "longest_poll": 0.0,
         "outside": 0, "own_window_seconds": 0.0, "own_window_polls": 0}
    starts = [o[0] for o in ops]
    window = writer_window(ops)
    run = None  # [t_first_start, t_last_end, polls]

    def close_run():
        if run:
            causes = attribute(run[0], run[1], ops, starts)
            t["bursts"].append({"start": run[0], "seconds": run[1] - run[0], "polls": run[2], "during": causes})
            t["burst_causes"][" + ".join(causes)] += 1

    def count_bad(kind, rest, line):
        t[kind] += 1
        t["messages"][(kind, normalize(rest))] += 1
        if len(t["examples"]) < 5:
            t["examples"].append(line[:300])

    for line in lines:
        p = line.rstrip("\n").split(" ", 2)
        if len(p) < 3:
            continue
        t0, t1, line = float(p[0]), float(p[1]), p[2]
        kind, _, rest = line.partition(" ")
        if window and (t1 < window[0] or t0 > window[1]):
            t["outside"] += 1
            if kind in ("crc", "wrong"):  # never allowed, whenever it happens: counted over every poll
                count_bad(kind, rest, line)
            continue
        t["polls"] += 1
        t["poll_seconds"] += t1 - t0
        t["longest_poll"] = max(t["longest_poll"], t1 - t0)
        if kind == "ok":
            t["ok"] += 1
            if rest.startswith("window="):  # zipfile's own window in this poll (SizeThenTail)
                t["own_window_seconds"] += float(rest[7:])
                t["own_window_polls"] += 1
            close_run()
            run = None
            continue
        if kind not in ("fail", "crc", "wrong"):
            kind, rest = "fail", line
        count_bad(kind, rest, line)
        if run is None:
            run = [t0, t1, 1]
        else:
            run[1], run[2] = t1, run[2] + 1
    close_run()
    return t


# --------------------------------------------------------------------------------------------- driver

def make_large(path, size, c_writer, max_size):
    """An archive of at least SIZE bytes of entries p/NNNNNNN.SIZE, at rest (written by the C writer in
    batches; it stops when the file, with the slack its session holds, reaches SIZE, so sessions are added
    until the file at rest does)."""
    seed = 7
    while not os.path.exists(path) or os.path.getsize(path) < size:
        r = subprocess.run([c_writer, "batch10", path, path + ".nostop", str(1 << 40), str(seed), str(max_size),
                            os.devnull, "p%d" % seed, str(size)], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("making the %d-byte archive failed: %s" % (size, r.stderr.strip()))
        seed += 1


def run_one(writer, start, work, entries, seed, max_size, tools):
    """One round: one writer from one starting state against every poller."""
    archive = os.path.join(work, "%s.%s.zip" % (writer, start))
    stop = archive + ".stop"
    log = archive + ".log"
    for p in [archive, stop, log] + [stop + ".ready-" + k for k in list(POLLERS) + ["writer"]]:
        if os.path.exists(p):
            os.unlink(p)
    if start == "empty":
        import zipfile
        zipfile.ZipFile(archive, "w").close()  # the 22-byte end record alone, as every ZIP tool makes it
        assert os.path.getsize(archive) == 22
    elif start == "large":
        subprocess.run(["cp", "--sparse=always", tools["large"], archive], check=True)
    me = os.path.abspath(__file__)
    # Each poller writes its lines to a file (a pipe that nobody reads while the writer runs would fill and
    # stop the poller).
    procs, outs = {}, {}
    for kind in READERS + [PROBE]:
        outs[kind] = open(archive + ".polls-" + kind, "w+")
        cmd = [tools["libzip_poll"], archive, stop] if kind == "libzip" else \
            [tools["tail_probe"], archive, stop] if kind == PROBE else \
            [PYTHON, me, "--role", "poll-" + kind, archive, stop]
        procs[kind] = subprocess.Popen(cmd, stdout=outs[kind], text=True, errors="replace")
    # The writer starts once every poller polls (libzip_poll and tail_probe are ready at once).
    deadline = time.monotonic() + 300
    while not all(os.path.exists(stop + ".ready-" + k) for k in POLLERS):
        if time.monotonic() > deadline:
            raise SystemExit("the pollers did not start within 300 s")
        time.sleep(0.05)
    # A writer that loads libmmzip in-process needs the sanitizer runtime first in the sanitizer build.
    wenv = dict(os.environ)
    if wenv.get("MMZIP_ASAN_RUNTIME"):
        wenv["LD_PRELOAD"] = wenv["MMZIP_ASAN_RUNTIME"]
    load0 = os.getloadavg()[0]
    start_size = os.path.getsize(archive) if os.path.exists(archive) else 0
    if writer.startswith("c-"):
        cmd = [tools["c_writer"], writer[2:], archive, stop, str(entries), str(seed), str(max_size), log]
    else:
        cmd = [PYTHON, me, "--role", "write-" + writer, "--entries", str(entries), "--seed", str(seed),
               "--max-size", str(max_size), "--log", log, archive, stop]
    wproc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=wenv)
    try:
        wout, _ = wproc.communicate(timeout=3600)  # catches a hang, not a slow machine
    except subprocess.TimeoutExpired:
        wproc.kill()
        raise SystemExit("writer %s from %s did not finish within an hour" % (writer, start))
    open(stop, "w").close()
    if wproc.returncode != 0:
        raise SystemExit("writer %s from %s failed (exit %s)" % (writer, start, wproc.returncode))
    ops = read_log(log)
    result = {"writer": writer, "start": start, "writer_stats": json.loads(wout.strip().splitlines()[-1]),
              "readers": {}, "load": [load0, os.getloadavg()[0]], "steps": writer_steps(ops),
              "size_change_count": size_changes(writer, ops)}
    for kind, p in procs.items():
        if p.wait(timeout=600) != 0:  # a poll of a large archive by unzip takes seconds; 600 s is a hang
            raise SystemExit("poller %s failed (exit %s)" % (kind, p.returncode))
        outs[kind].seek(0)
        t = tally(outs[kind].read().splitlines(), ops)
        if kind == PROBE:
            result["probe"] = t
        else:
            result["readers"][kind] = t
        outs[kind].close()
        if not tools.get("keep"):
            os.unlink(archive + ".polls-" + kind)
    # The final archive must be whole for everyone: every entry read and checked by zipfile.
    import zipfile
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        bad = [n for n in names if z.read(n) != content(n)]
        written = [n for n in names if n.startswith("k/")]
        result["final_entries"] = len(written)
        if kind_of(writer) == "put-loop":
            result["forced_size_changes"] = forced_size_changes(start_size, written)
    result["final_wrong"] = len(bad)
    result["final_written"] = result["writer_stats"]["puts"]
    if not tools.get("keep"):
        os.unlink(archive)
        os.unlink(log)
    return result


def forced_size_changes(start_size, names):
    """The fewest size changes any writer makes that puts these entries (k/NNNNNNN.SIZE, in the order of
    NNNNNNN) each in a session of its own and keeps issue 24 point 1: at rest the archive holds at most
    max(64 KiB, 1 %) beyond its entries, directory and end records, as slack or free space of any kind. A
    session whose entry and directory record fit in the room left changes nothing; one whose do not must grow
    the file, and can leave at most the allowance of the archive it makes. Growing only when a put does not
    fit is the fewest: the room a growth can leave only increases with the data, so a growth moved later
    never leaves less. Counted on the entries and records (local header, data, central-directory record) of
    these names, without extra fields: a lower bound for any writer, mmzip's included."""
    data, room, changes = start_size, max(64 << 10, start_size // 100), 0
    for name in sorted(names, key=lambda n: int(n.split("/")[1].split(".")[0])):
        need = 30 + len(name) + int(name.rsplit(".", 1)[1]) + 46 + len(name)
        data += need
        if need > room:
            changes += 1
            room = max(64 << 10, data // 100)
        else:
            room -= need
    return changes


def merge(merged, res):
    if merged is None:
        return res
    for k in ("puts", "commits", "seconds", "bytes"):
        merged["writer_stats"][k] += res["writer_stats"][k]
    sc = collections.Counter(merged["writer_stats"]["size_changes"])
    sc.update(res["writer_stats"]["size_changes"])
    merged["writer_stats"]["size_changes"] = dict(sc)
    for what, (n, longest, total) in res["steps"].items():
        m = merged["steps"].setdefault(what, [0, 0.0, 0.0])
        m[0] += n
        m[1] = max(m[1], longest)
        m[2] += total
    merged["load"] += res["load"]
    for k in ("final_wrong", "final_entries", "final_written", "size_change_count"):
        merged[k] += res[k]
    if "forced_size_changes" in res:
        merged["forced_size_changes"] = merged.get("forced_size_changes", 0) + res["forced_size_changes"]
    for kind, t in list(res["readers"].items()) + [(PROBE, res["probe"])]:
        m = merged["probe"] if kind == PROBE else merged["readers"][kind]
        for k in ("polls", "ok", "fail", "crc", "wrong", "poll_seconds", "outside", "own_window_seconds",
                  "own_window_polls"):
            m[k] += t[k]
        m["longest_poll"] = max(m["longest_poll"], t["longest_poll"])
        m["messages"].update(t["messages"])
        m["burst_causes"].update(t["burst_causes"])
        m["bursts"] += t["bursts"]
        m["examples"] = (m["examples"] + t["examples"])[:5]
    return merged


def report(result, out=sys.stdout):
    w = result["writer_stats"]
    kind = kind_of(result["writer"])
    print("\nwriter %s from %s: %d puts in %d commits, %.1f s (%.0f puts/s), %d rounds, %.1f MiB, %d entries; "
          "load average %.1f-%.1f" % (
              result["writer"], result["start"], w["puts"], w["commits"], w["seconds"],
              w["puts"] / max(w["seconds"], 1e-9), result.get("rounds", 1), w["bytes"] / 2**20,
              result["final_entries"], min(result["load"]), max(result["load"])), file=out)
    sc = w.get("size_changes", {})
    print("  file size at the commits: %d kept, %d shrunk, %d grown" % (
        sc.get("kept", 0), sc.get("shrunk", 0), sc.get("grown", 0)), file=out)
    for what, (n, longest, total) in sorted(result["steps"].items()):
        print("  writer step %-24s %6d, longest %8.3f ms, total %9.3f ms" % (what, n, 1000 * longest, 1000 * total),
              file=out)
    if "relocate.directory_copy" in result["steps"]:
        kept = result["steps"].get("relocate.free_below_kept_tail", [0])[0]
        print("  relocations: %d, of which %d kept the old tail (protocol.md §3.7)" % (
            result["steps"]["relocate.directory_copy"][0], kept), file=out)
    changes = result["size_change_count"]
    print("  size changes: %d (%.1f a second)" % (changes, changes / max(w["seconds"], 1e-9)), file=out)
    if "forced_size_changes" in result:
        print("  size changes that no writer keeping point 1 avoids with a session per put (growing only when a "
              "put does not fit in what the last growth could leave): at least %d" % result["forced_size_changes"],
              file=out)
    print("  %-8s %7s %7s %8s %5s %6s %7s %12s %-6s %9s %10s" % (
        "reader", "polls", "failed", "rate", "crc", "wrong", "bursts", "longest", "(polls)", "mean poll",
        "straddled"), file=out)
    total = collections.Counter()
    longest_all = 0.0
    for rk, t in list(result["readers"].items()) + [(PROBE, result["probe"])]:
        rate = t["fail"] / t["polls"] if t["polls"] else 0.0
        longest = max(t["bursts"], key=lambda b: b["seconds"], default=None)
        if longest and rk != PROBE:
            longest_all = max(longest_all, longest["seconds"])
        mean_poll = t["poll_seconds"] / t["polls"] if t["polls"] else 0.0
        print("  %-8s %7d %7d %7.3f%% %5d %6d %7d %9.3f ms %-6s %6.2f ms %9.3f%%" % (
            rk, t["polls"], t["fail"], 100 * rate, t["crc"], t["wrong"], len(t["bursts"]),
            1000 * longest["seconds"] if longest else 0.0, "(%d)" % longest["polls"] if longest else "",
            1000 * mean_poll, 100 * straddled(changes, w["seconds"], mean_poll)), file=out)
        for (k, msg), n in t["messages"].most_common(4):
            print("           %6d  %s %s" % (n, k, msg), file=out)
        for cause, n in t["burst_causes"].most_common(4):
            print("           %6d  bursts during: %s" % (n, cause), file=out)
        if "relocate.directory_copy" in result["steps"] and t["bursts"]:
            kinds = collections.Counter(burst_kind(b["during"]) for b in t["bursts"])
            print("                   bursts by relocation: %s" % ", ".join(
                "%s %d" % (k, kinds[k]) for k in ("kept", "not kept", "truncate", "other") if kinds[k]), file=out)
        if t["own_window_polls"]:
            own = t["own_window_seconds"] / t["own_window_polls"]
            floor = ""
            grew = sum(n for (_, msg), n in t["messages"].items() if GREW_MARK in msg)
            if "forced_size_changes" in result and changes:
                # Size changes do not come at random: the writer that grows the file is the process that
                # preempts the poller on a shared core, so more polls fail than the mean window predicts. The
                # failures marked as this window, scaled to the fewest size changes, are the estimate that
                # keeps that correlation.
                fewest = result["forced_size_changes"]
                floor = ("; at the fewest size changes point 1 allows a session per put (%d), %.3f%%, and its "
                         "failures marked as this window (%d) scaled to them, %.3f%%" % (
                             fewest, 100 * straddled(fewest, w["seconds"], own), grew,
                             100 * grew * fewest / changes / max(t["polls"], 1)))
            print("                   its own window (first seek to the end to last read of the end records): "
                  "%.1f us a poll; polls a size change falls into, at random: %.3f%% at this writer's%s" % (
                      1e6 * own, 100 * straddled(changes, w["seconds"], own), floor), file=out)
        if rk == PROBE:
            continue
        for key in ("polls", "fail", "crc", "wrong"):
            total[key] += t[key]
    rate = total["fail"] / total["polls"] if total["polls"] else 0.0
    print("  %-8s %7d %7d %7.3f%% %5d %6d %7s %9.3f ms   (target: at most %.1f%% failed, bursts at most %.0f ms, "
          "no CRC error, no wrong byte)" % (
              "all", total["polls"], total["fail"], 100 * rate, total["crc"], total["wrong"], "",
              1000 * longest_all, 100 * TARGETS[kind], 1000 * BURST_TARGET), file=out)
    # A single failed probe poll is a change of the file during the probe's own reads (or a window shorter than
    # the pause between two polls); two or more in a row are a time the file had no valid tail.
    window = max((b["seconds"] for b in result["probe"]["bursts"] if b["polls"] > 1), default=0.0)
    singles = sum(1 for b in result["probe"]["bursts"] if b["polls"] == 1)
    print("  the file's window (the probe's longest run of failed polls, two or more): %.3f ms; %d single failed "
          "probe polls; 'all' counts the four readers" % (1000 * window, singles), file=out)
    print("  polls outside the writer's run, not counted: %s" % ", ".join(
        "%s %d" % (rk, t["outside"]) for rk, t in list(result["readers"].items()) + [(PROBE, result["probe"])]),
        file=out)
    return total, longest_all, window


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--role", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--writers", default=",".join(WRITERS), help="comma-separated, of: %s, zipfile-append" %
                    ", ".join(WRITERS))
    ap.add_argument("--starts", default=",".join(STARTS), help="comma-separated, of: none, empty, large")
    ap.add_argument("--entries", type=int, default=1500, help="entries a writer puts per round (default 1500)")
    ap.add_argument("--large-entries", type=int,
                    help="entries a writer that keeps one handle open (commit after every put, batches of 10) "
                         "puts per round from the start 'large' (default --entries): such a writer puts 100 "
                         "entries there in a fraction of a second, and each round costs seconds of its own (the "
                         "copy of the archive, the pollers' start, an unzip poll that tests every entry)")
    ap.add_argument("--max-size", type=int, default=2 << 20, help="largest entry, bytes (default 2 MiB)")
    ap.add_argument("--large-size", type=int, default=1 << 30,
                    help="size of the archive of start 'large' (default 1 GiB)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="at least this many rounds per cell (seeds differ)")
    ap.add_argument("--min-commits", type=int, default=0,
                    help="more rounds until the writer has made this many commits (a count, not a time)")
    ap.add_argument("--min-polls", type=int, default=0,
                    help="more rounds until every reader has polled this many times (a count, not a time)")
    ap.add_argument("--min-unzip-polls", type=int,
                    help="the same for unzip, whose poll tests every entry (seconds on a large archive); "
                         "default --min-polls")
    ap.add_argument("--max-rounds", type=int, default=20, help="give up on the counts after this many rounds")
    ap.add_argument("--assert-exact", action="store_true",
                    help="exit 1 on any CRC error or wrong byte, a final archive that is not whole, or counts "
                         "not reached; the rates and bursts are printed, not judged (they depend on the speed "
                         "of the writer against the readers, and on the machine's load)")
    ap.add_argument("--assert-targets", action="store_true",
                    help="exit 1 unless every cell meets the issue's targets (rates and bursts) as well")
    ap.add_argument("--work", help="directory for the archives (default: a temporary one)")
    ap.add_argument("--libzip-poll", help="path of the libzip_poll program")
    ap.add_argument("--c-writer", help="path of the c_writer program")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", action="store_true",
                    help="keep the last round's archive, writer log and poll lines of each cell in --work")
    ap.add_argument("args", nargs="*")
    a = ap.parse_args()
    if a.role:
        archive, stop = a.args
        if a.role.startswith("write-"):
            run_writer(a.role[6:], archive, stop, a.entries, a.seed, a.max_size, a.log)
        else:
            run_poller(a.role[5:], archive, stop)
        return 0
    if not shutil.which("unzip"):
        raise SystemExit("unzip is not installed")
    bdir = os.path.join(os.environ.get("MMZIP_BUILD_DIR", ""), "tests", "interop")
    tools = {"libzip_poll": a.libzip_poll or os.path.join(bdir, "libzip_poll"),
             "c_writer": a.c_writer or os.path.join(bdir, "c_writer"), "keep": a.keep,
             "tail_probe": os.path.join(bdir, "tail_probe")}
    work = a.work or tempfile.mkdtemp(prefix="mmzip-readers-")
    os.makedirs(work, exist_ok=True)
    starts = a.starts.split(",")
    if "large" in starts:
        tools["large"] = os.path.join(work, "large-%d.zip" % a.large_size)
        if not os.path.exists(tools["large"]):
            t0 = now()
            make_large(tools["large"] + ".tmp", a.large_size, tools["c_writer"], a.max_size)
            os.rename(tools["large"] + ".tmp", tools["large"])
            print("made the large archive: %.1f MiB in %.1f s" % (os.path.getsize(tools["large"]) / 2**20,
                                                                  now() - t0))
    probe = os.path.join(bdir, "growth_probe")
    if os.path.exists(probe) and not a.assert_exact:
        # What a relocation's aligned block gets from this kernel (protocol.md §3.2), printed, not judged.
        print(subprocess.run([probe, work, "200"], capture_output=True, text=True).stdout.rstrip())
    print("load average at the start: %.2f %.2f %.2f" % os.getloadavg())
    results, ok, summary = [], True, []
    for start in starts:
        for writer in a.writers.split(","):
            merged, r = None, 0

            def short_of_counts():
                if merged is None:
                    return True
                unzip_min = a.min_polls if a.min_unzip_polls is None else a.min_unzip_polls
                return (merged["writer_stats"]["commits"] < a.min_commits or
                        any(t["polls"] < (unzip_min if k == "unzip" else a.min_polls)
                            for k, t in merged["readers"].items()))

            kind = kind_of(writer)
            entries = a.large_entries if a.large_entries and start == "large" and \
                kind in ("commit-each", "batch10") else a.entries
            while (r < a.rounds or short_of_counts()) and (r < a.max_rounds or merged is None):
                merged = merge(merged, run_one(writer, start, work, entries, a.seed + r, a.max_size, tools))
                r += 1
            merged["rounds"] = r
            total, longest, window = report(merged)
            rate = total["fail"] / total["polls"] if total["polls"] else 1.0
            wrong, short, targets = [], [], []
            if total["crc"] or total["wrong"] or merged["final_wrong"] or merged["probe"]["crc"] or \
                    merged["probe"]["wrong"]:
                wrong.append("bytes that differ from what was written")
            if merged["final_entries"] != merged["final_written"]:
                wrong.append("the final archives hold %d entries of the %d written" % (
                    merged["final_entries"], merged["final_written"]))
            if short_of_counts():
                short.append("counts not reached in %d rounds (commits %d, polls %s)" % (
                    r, merged["writer_stats"]["commits"],
                    ", ".join("%s %d" % (k, t["polls"]) for k, t in merged["readers"].items())))
            if rate > TARGETS[kind]:
                targets.append("%.3f%% failed polls, above %.1f%%" % (100 * rate, 100 * TARGETS[kind]))
            if longest > BURST_TARGET:
                targets.append("a burst of %.2f ms, above %.0f ms" % (1000 * longest, 1000 * BURST_TARGET))
            judged = writer != "zipfile-append"  # the peer is measured, not judged
            exact = wrong + short
            print("  verdict: %s" % ("; ".join(exact + targets) if exact + targets else "meets the targets"))
            # Which: a wrong byte is this product's worst defect; a count short of the minimum after the
            # round cap only makes a rate less certain.
            flag = "; BYTES OR ENTRIES WRONG" if wrong else "; counts not reached" if short else ""
            summary.append((writer, start, total, rate, longest, window, not targets, flag))
            if judged and exact:
                ok = False
            if judged and a.assert_targets and targets:
                ok = False
            for t in list(merged["readers"].values()) + [merged["probe"]]:
                t["messages"] = [[k, m, n] for (k, m), n in t["messages"].most_common()]
                t["burst_causes"] = dict(t["burst_causes"])
                t["bursts"] = sorted(t["bursts"], key=lambda b: -b["seconds"])[:20]
            results.append(merged)
    print("\nsummary (failed polls of all four readers; longest burst of any reader; the file's window: the "
          "probe's longest run of two or more failed polls)")
    print("  %-15s %-6s %8s %7s %8s %10s %10s  %s" % ("writer", "start", "polls", "failed", "rate", "longest",
                                                    "window", "targets"))
    for writer, start, total, rate, longest, window, met, flag in summary:
        print("  %-15s %-6s %8d %7d %7.3f%% %7.2f ms %7.3f ms  %s%s" % (
            writer, start, total["polls"], total["fail"], 100 * rate, 1000 * longest, 1000 * window,
            "met" if met else "missed", flag))
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if ((a.assert_targets or a.assert_exact) and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
