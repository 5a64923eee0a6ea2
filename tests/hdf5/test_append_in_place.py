"""Issue point 4: appending in place. Open r+, add datasets, flush several times, close. The other entries
keep their offsets, CRCs and bytes; the archive is a valid ZIP (zipfile, unzip -t, 7z t) after every flush
and after the close, checked by other processes while the writer still has the archive open; a reader in
another process sees each flushed state."""
import os
import subprocess
import sys
import zipfile

import numpy as np
import h5py

from mmzip_testlib import PYTHON, TempDir, check_equal, main, zip_tools_ok
from h5zip_testlib import check_sample, entry_table, mmzip_entries, write_sample

READER = r"""
import sys, json, h5py, mmzip
mmzip.register_h5py()
with h5py.File(sys.argv[1], "r", driver="mmzip", member=sys.argv[2]) as f:
    print(json.dumps({k: f[k][:].tolist() for k in f if k.startswith("added")}))
"""


HOLDER = r"""
import sys, h5py, mmzip
mmzip.register_h5py()
with h5py.File(sys.argv[1], "r", driver="mmzip", member=sys.argv[2]) as f:
    print("open", flush=True)
    sys.stdin.readline()
    print(float(f["added0"][1]), flush=True)
"""


def other_entry_bytes(archive, names):
    with zipfile.ZipFile(archive) as z:
        return {n: z.read(n) for n in names}


def read_added_in_other_process(archive, member):
    import json
    p = subprocess.run([PYTHON, "-c", READER, archive, member], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError("reader process failed:\n" + p.stderr)
    return json.loads(p.stdout)


def test_append_keeps_other_entries_and_validity():
    with TempDir() as d:
        arc = os.path.join(d, "grow.zip")
        # The member sits between other entries, so that its new versions must go elsewhere.
        with zipfile.ZipFile(arc, "w") as z:
            z.writestr("first.txt", "before the member\n" * 10)
            z.writestr("images/pixel.raw", bytes(range(256)) * 64)
        with h5py.File(arc, "a", driver="mmzip", member="m.h5") as f:
            write_sample(f, 31)
        # Without the slack mmzip's writer leaves below the directory (protocol.md §3.1), which zipfile's "a"
        # mode would keep between the member and its next entry as room to grow into.
        subprocess.run([os.environ.get("MMZIP_BIN", "mmzip"), "pack", arc], check=True, capture_output=True)
        with zipfile.ZipFile(arc, "a") as z:
            z.writestr("last.txt", "after the member\n" * 10)
        others = ["first.txt", "images/pixel.raw", "last.txt"]
        table = entry_table(arc)
        bytes_before = other_entry_bytes(arc, others)
        member_offset_before = table["m.h5"][0]
        zip_tools_ok(arc)

        expected = {}
        with h5py.File(arc, "r+", driver="mmzip", member="m.h5") as f:
            for i in range(4):
                name = "added%d" % i
                data = np.arange(1000 * (i + 1), dtype="<f8") * (i + 0.5)
                f.create_dataset(name, data=data, chunks=(500,), compression="gzip" if i % 2 else None)
                expected[name] = data.tolist()
                f.flush()
                # While the writer keeps the archive open: valid for every ZIP reader, other entries
                # untouched, and another process reads exactly what was flushed.
                zip_tools_ok(arc)
                now = entry_table(arc)
                for n in others:
                    check_equal(now[n], table[n], "offset/CRC of %s after flush %d" % (n, i))
                check_equal(read_added_in_other_process(arc, "m.h5"), expected, "reader after flush %d" % i)
            # Changes after the last flush are not visible until the close. The member is edited in place
            # while they are pending (or drafted, if it must move): a reader gets the last committed state, or
            # a clear "being written" error - never the unflushed value.
            f["added0"][0] = -1.0
            try:
                seen = read_added_in_other_process(arc, "m.h5")["added0"][0]
                check_equal(seen, 0.0, "unflushed change")
            except AssertionError as e:
                if "is being written in place" not in str(e):
                    raise
        expected["added0"][0] = -1.0
        zip_tools_ok(arc)
        after = entry_table(arc)
        for n in others:
            check_equal(after[n], table[n], "offset/CRC of %s after close" % n)
        check_equal(other_entry_bytes(arc, others), bytes_before, "bytes of the other entries")
        if after["m.h5"][0] == member_offset_before:
            raise AssertionError("the member did not get a new version")
        check_equal(read_added_in_other_process(arc, "m.h5"), expected, "reader after close")
        with h5py.File(arc, "r", driver="mmzip", member="m.h5") as f:
            check_sample(f, 31, "after appends: ")
        # mmzip's own check: structure and every CRC.
        p = subprocess.run([os.environ.get("MMZIP_BIN", "mmzip"), "check", arc], capture_output=True, text=True)
        if p.returncode != 0:
            raise AssertionError("mmzip check failed:\n" + p.stdout + p.stderr)


def test_flush_without_changes_writes_nothing():
    """A flush or close with nothing new publishes nothing: the archive keeps its exact bytes."""
    with TempDir() as d:
        arc = os.path.join(d, "idle.zip")
        with h5py.File(arc, "w", driver="mmzip", member="m.h5") as f:
            write_sample(f, 32)
        with open(arc, "rb") as fh:
            before = fh.read()
        with h5py.File(arc, "r+", driver="mmzip", member="m.h5") as f:
            check_sample(f, 32, "r+ without changes: ")
            f.flush()
        with h5py.File(arc, "a", driver="mmzip", member="m.h5") as f:
            f["contiguous"][5] = f["contiguous"][5]  # same bytes again
        with open(arc, "rb") as fh:
            check_equal(fh.read() == before, True, "archive unchanged by idle r+/a sessions")


def test_many_flushes_grow_dead_space_until_pack():
    """Each flush after a write publishes the member's changes in place (it is the last entry): five flushes
    of 40 KB each grow the archive by about what they write, not by five copies of the member. `mmzip pack`
    still gives a compact archive in which the member reads the same."""
    with TempDir() as d:
        arc = os.path.join(d, "pack.zip")
        with h5py.File(arc, "w", driver="mmzip", member="m.h5") as f:
            write_sample(f, 33)
            for i in range(5):
                f["step%d" % i] = np.full(10000, i, dtype="<i4")
                f.flush()
        member_size = mmzip_entries(arc)["m.h5"]["size"]
        # Bytes on disk: the slack below the directory (protocol.md §3.1) is a hole, counted by getsize only.
        grown = os.stat(arc).st_blocks * 512
        if grown > member_size + 64 * 1024:
            raise AssertionError("5 flushes left %d bytes for a %d-byte member: the member was copied, not edited"
                                 % (grown, member_size))
        with h5py.File(arc, "r+", driver="mmzip", member="m.h5") as f:
            for i in range(5):
                f["step%d" % i][0] = i  # rewrites nothing new
            f.attrs["note"] = "x"
        with zipfile.ZipFile(arc) as z:
            extra = z.read("m.h5")
        check_equal(len(extra), mmzip_entries(arc)["m.h5"]["size"], "extracted size")
        subprocess.run([os.environ.get("MMZIP_BIN", "mmzip"), "pack", arc], check=True)
        packed = os.path.getsize(arc)
        if packed > member_size + 16384:
            raise AssertionError("pack left %d bytes for a %d-byte member" % (packed, member_size))
        zip_tools_ok(arc)
        with h5py.File(arc, "r", driver="mmzip", member="m.h5") as f:
            check_sample(f, 33, "after pack: ")
            for i in range(5):
                check_equal(f["step%d" % i][:].tolist(), [i] * 10000, "step%d after pack" % i)


def test_reader_of_member_being_written_in_place():
    """Issue 13 point 3: the member is the last entry and is edited in place. While the writer has unflushed
    changes, a reader in another process gets a clear "being written" error; after the flush it reads the
    flushed state. While a reader holds the member, the writer cannot edit it in place: it writes a new
    version instead (the archive grows by the member), and the reader keeps reading the old values."""
    with TempDir() as d:
        arc = os.path.join(d, "held.zip")
        with h5py.File(arc, "w", driver="mmzip", member="m.h5") as f:
            f["added0"] = np.arange(100.0)
        with h5py.File(arc, "r+", driver="mmzip", member="m.h5") as f:
            f["added0"][0] = -1.0
            try:
                read_added_in_other_process(arc, "m.h5")
            except AssertionError as e:
                if "is being written in place" not in str(e):
                    raise
            else:
                raise AssertionError("a reader opened the member while it was being written in place")
            f.flush()
            check_equal(read_added_in_other_process(arc, "m.h5")["added0"][0], -1.0, "after flush")
        held_offset = entry_table(arc)["m.h5"][0]
        holder = subprocess.Popen([PYTHON, "-c", HOLDER, arc, "m.h5"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        check_equal(holder.stdout.readline().strip(), "open", "holder started")
        with h5py.File(arc, "r+", driver="mmzip", member="m.h5") as f:
            f["added0"][1] = -2.0
        out, _ = holder.communicate("go\n", timeout=60)
        check_equal(out.strip(), "1.0", "held reader keeps the old value")
        # A new version lands elsewhere (in the slack below the directory, so the file need not grow).
        if entry_table(arc)["m.h5"][0] == held_offset:
            raise AssertionError("the writer edited a held member in place")
        with h5py.File(arc, "r", driver="mmzip", member="m.h5") as f:
            check_equal(f["added0"][:2].tolist(), [-1.0, -2.0], "after the new version")
        zip_tools_ok(arc)


if __name__ == "__main__":
    main([test_append_keeps_other_entries_and_validity, test_flush_without_changes_writes_nothing,
          test_many_flushes_grow_dead_space_until_pack, test_reader_of_member_being_written_in_place])
