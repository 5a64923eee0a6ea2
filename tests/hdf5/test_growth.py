"""Issue 13 point 4: a member that must grow and is not the last entry moves O(log n) times over n sessions.

An HDF5 member with an unlimited dataset sits between other entries; 64 sessions (h5py r+ through the
mmzip driver) each append one 64 KiB chunk of records, and after each session another entry is appended
behind the member with `mmzip put`, so that the member is never the physically last entry. Without room
kept after it, every session would copy the whole member to the end (64 moves). The test counts the moves
(changes of the member's local-header offset, read by Python's zipfile) and requires at most
log2(64) + 2 = 8. After the sessions it checks, against expected values computed here:
  - h5py through the driver, and h5py (sec2) on the member extracted with Info-ZIP unzip, read every record;
  - unzip -t, 7z t and zipfile read the archive; every other entry is byte-identical to what was put;
  - `mmzip info` reports the room (reserved_bytes > 0) and the old versions (dead_bytes > 0), and the
    byte accounting adds up to the file size;
  - `mmzip pack` reclaims both (reserved and dead 0, the file shrinks) and the values are unchanged;
  - the packed member grows again (one more session), values checked again.
"""
import math
import os
import re
import zipfile

import numpy as np
import h5py

import mmzip
from mmzip_testlib import TempDir, check_equal, main, mmzip as mmzip_cli, run, zip_tools_ok

SESSIONS = 64
ROWS = 16       # rows per session: one chunk
COLS = 512      # float64: 4 KiB per row, 64 KiB per session
MEMBER = "data/grow.h5"


def rows_for(session):
    base = np.arange(ROWS * COLS, dtype="<f8").reshape(ROWS, COLS)
    return base * 0.25 + session * 1000.0 + 1.0


def info(archive):
    out = mmzip_cli("info", archive).stdout
    vals = {}
    for key in ("file_bytes", "live_bytes", "dead_bytes", "reserved_bytes", "free_bytes", "kept_bytes",
                "directory_bytes", "prefix_bytes"):
        m = re.search(r"^%s:\s+(\d+)" % key, out, re.M)
        assert m, "mmzip info has no %s line:\n%s" % (key, out)
        vals[key] = int(m.group(1))
    return vals


def check_accounting(v, what):
    total = (v["live_bytes"] + v["dead_bytes"] + v["reserved_bytes"] + v["free_bytes"] + v["kept_bytes"]
             + v["directory_bytes"] + v["prefix_bytes"])
    check_equal(total, v["file_bytes"], "mmzip info's byte accounting %s" % what)


def member_offset(archive):
    with zipfile.ZipFile(archive) as z:
        return z.getinfo(MEMBER).header_offset


def check_values(archive, d, sessions, what):
    want = np.concatenate([rows_for(i) for i in range(sessions)]) if sessions else np.zeros((0, COLS))
    with h5py.File(archive, "r", driver="mmzip", member=MEMBER) as f:
        got = f["records"][:]
        check_equal(got.shape, want.shape, "records shape through the driver %s" % what)
        assert np.array_equal(got, want), "records through the driver differ %s" % what
        check_equal(f.attrs["sessions"], sessions, "attribute 'sessions' through the driver %s" % what)
    out = os.path.join(d, "extracted")
    os.makedirs(out, exist_ok=True)
    run(["unzip", "-o", "-q", archive, MEMBER, "-d", out])
    with h5py.File(os.path.join(out, MEMBER), "r") as f:
        got = f["records"][:]
        assert np.array_equal(got, want), "records of the unzip-extracted member (sec2) differ %s" % what
        check_equal(f.attrs["sessions"], sessions, "attribute of the extracted member %s" % what)


def grow_session(archive, session):
    with h5py.File(archive, "r+", driver="mmzip", member=MEMBER) as f:
        ds = f["records"]
        n = ds.shape[0]
        ds.resize(n + ROWS, axis=0)
        ds[n:n + ROWS] = rows_for(session)
        f.attrs["sessions"] = session + 1


def test_growth_moves_logarithmically():
    mmzip.register_h5py()
    with TempDir() as d:
        arc = os.path.join(d, "growth.zip")
        others = {"first.txt": b"an entry before the member\n" * 20}
        with zipfile.ZipFile(arc, "w") as z:
            for k, v in others.items():
                z.writestr(k, v)
        with h5py.File(arc, "a", driver="mmzip", member=MEMBER) as f:
            f.create_dataset("records", shape=(0, COLS), maxshape=(None, COLS), chunks=(ROWS, COLS), dtype="<f8")
            f.attrs["sessions"] = 0
        offsets = [member_offset(arc)]
        for i in range(SESSIONS):
            # Something follows the member before every session: it is never the last entry.
            name = "after/%02d.txt" % i
            data = ("entry %d written after the member\n" % i).encode() * 3
            src = os.path.join(d, "entry.txt")
            with open(src, "wb") as fh:
                fh.write(data)
            mmzip_cli("put", arc, name, src)
            others[name] = data
            grow_session(arc, i)
            offsets.append(member_offset(arc))
        moves = sum(1 for a, b in zip(offsets, offsets[1:]) if a != b)
        bound = int(math.log2(SESSIONS)) + 2
        print("member moved %d times over %d growth sessions (bound %d); offsets %s"
              % (moves, SESSIONS, bound, sorted(set(offsets))))
        assert moves >= 1, "the member never moved, yet an entry followed it in every session"
        assert moves <= bound, "the member moved %d times over %d sessions (more than log2(n) + 2 = %d)" % (
            moves, SESSIONS, bound)

        zip_tools_ok(arc)
        with zipfile.ZipFile(arc) as z:
            assert z.testzip() is None
            for k, v in others.items():
                check_equal(z.read(k), v, "entry %s after the sessions" % k)
        check_values(arc, d, SESSIONS, "after %d sessions" % SESSIONS)

        before = info(arc)
        print("before pack:", before)
        check_accounting(before, "before pack")
        assert before["reserved_bytes"] > 0, "mmzip info reports no reserved room: %r" % before
        assert before["dead_bytes"] > 0, "mmzip info reports no dead bytes although the member moved: %r" % before
        size_before = os.path.getsize(arc)

        mmzip_cli("pack", arc)
        after = info(arc)
        print("after pack:", after)
        check_accounting(after, "after pack")
        check_equal(after["reserved_bytes"], 0, "reserved bytes after pack")
        check_equal(after["dead_bytes"], 0, "dead bytes after pack")
        assert os.path.getsize(arc) < size_before - before["dead_bytes"] // 2, "pack did not shrink the archive"
        zip_tools_ok(arc)
        with zipfile.ZipFile(arc) as z:
            for k, v in others.items():
                check_equal(z.read(k), v, "entry %s after pack" % k)
        check_values(arc, d, SESSIONS, "after pack")

        # Packed, the member is not last and has no room: the next growth moves it once, then it has room.
        mmzip_cli("put", arc, "after/final.txt", src)
        grow_session(arc, SESSIONS)
        check_values(arc, d, SESSIONS + 1, "after a session on the packed archive")
        zip_tools_ok(arc)
        check_accounting(info(arc), "after the last session")


if __name__ == "__main__":
    main([test_growth_moves_logarithmically])
