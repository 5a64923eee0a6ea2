"""A member left mid-edit by a killed writer says so on every route, and `mmzip recover` says what it did.

Two states, each made by a real process killed with SIGKILL at a known moment (the writer prints a line once it
is there, then waits on its stdin; it is killed when the line arrives, never after a guessed delay):

  * an HDF5 member edited in place by the mmzip driver (h5py, mode "a": a 16 MB dataset rewritten, not
    flushed), whose undo journal <archive>.mmzip-undo awaits recovery; and a netCDF-4 member in the same state;
  * a stored member modified in place through a writable view (mmzip.open(..., "r+"), the npz route), whose
    marker file <archive>.mmzip-inplace awaits recovery.

Each route must name the archive and the member and say to run `mmzip recover ARCHIVE` (or open the archive
writable): `mmzip check` (its error and its recover: line agree), `mmzip ls` and `mmzip info`, h5py with
driver="mmzip" (member named or not), `mmzip run h5dump`/`h5ls` (never the raw archive opened instead),
`mmzip run ncdump` of the netCDF-4 member (named and bare), and the Python package (Archive, mmzip.open). Then
`mmzip recover` prints what it did with the figures the files show (the bytes written back, counted from the
journal; the CRCs, from zipfile), the values are the committed ones (journal) or the ones left (marker), the
journal case is byte for byte the archive before the edit, and a second recover says "nothing to recover"
with the file unchanged."""
import os
import re
import subprocess
import sys
import warnings
import zipfile
import zlib

import numpy as np
import h5py

import mmzip
from mmzip_testlib import MMZIP, PYTHON, TempDir, check_equal, main, mmzip as mmzip_cli, run, zip_tools_ok
import undo_journal

mmzip.register_h5py()

N = 2_000_000  # 16 MB of float64: the journal holds every block of it
SANITIZED = bool(os.environ.get("MMZIP_ASAN_RUNTIME"))

HDF5_WRITER = r"""
import sys, numpy as np, h5py, mmzip
mmzip.register_h5py()
f = h5py.File(sys.argv[1], "a", driver="mmzip", member=sys.argv[2])
f[sys.argv[3]][:] = -np.arange(f[sys.argv[3]].shape[0], dtype="<f8")  # written through, not flushed
print("editing", flush=True)
sys.stdin.read()
"""

VIEW_WRITER = r"""
import sys, numpy as np, mmzip
z = mmzip.open(sys.argv[1], "r+")
v = z.edit("a")
v[:500] = 7.0
print("editing", flush=True)
sys.stdin.read()
"""


def kill_mid_edit(script, *args):
    """Runs script until it prints "editing", then SIGKILLs it."""
    p = subprocess.Popen([PYTHON, "-c", script] + [str(a) for a in args], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = p.stdout.readline()
    if line != b"editing\n":
        p.kill()
        raise AssertionError("the writer did not reach its edit:\n" + p.communicate()[1].decode())
    p.kill()
    check_equal(p.wait(), -9, "the writer's end")
    p.stdin.close()
    p.stdout.close()
    p.stderr.close()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def tool(*cmd):
    """A tool under `mmzip run`: (exit status or None if it hung at exit in the sanitizer build, stdout, stderr)."""
    try:
        p = subprocess.run([MMZIP, "run", "--"] + list(cmd), capture_output=True, text=True,
                           timeout=15 if SANITIZED else 300)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        if not SANITIZED:
            raise
        return None, e.stdout or "", e.stderr or ""


def says_recover(text, arc, what):
    assert ("mmzip recover %s" % arc) in text, "%s does not say to run 'mmzip recover %s':\n%s" % (what, arc, text)


def journal_state(d):
    """An archive whose only HDF5 member 'x.h5' was being rewritten when its writer was killed."""
    arc = os.path.join(d, "a.zip")
    with h5py.File(arc, "w", driver="mmzip", member="x.h5") as f:
        f.create_dataset("v", data=np.arange(N, dtype="<f8"))
    mmzip_cli("put", arc, "README.txt", "-", input="not HDF5\n")
    before = read(arc)
    kill_mid_edit(HDF5_WRITER, arc, "x.h5", "v")
    return arc, before


def test_journal_pending_said_everywhere():
    with TempDir() as d:
        arc, before = journal_state(d)
        journal = arc + ".mmzip-undo"
        assert os.path.exists(journal), "the kill left no journal"
        write_back = undo_journal.bytes_to_write_back(journal)
        assert write_back >= N * 8, "the journal holds %d bytes, the edit changed %d" % (write_back, N * 8)
        with zipfile.ZipFile(arc) as z:  # the committed version, as another reader sees the directory
            info = z.getinfo("x.h5")
        size, crc = info.file_size, "%08x" % info.CRC
        waiting = ("entry 'x.h5' cannot be read now: it was being written in place when its writer was killed, and "
                   "an undo journal (%s) holds its last committed version: run 'mmzip recover %s' (or open the "
                   "archive writable) to restore it" % (journal, arc))

        # mmzip check: the error and the recover: line agree.
        p = mmzip_cli("check", arc, check=False)
        check_equal(p.returncode, 1, "check's exit status")
        err = [l for l in p.stderr.splitlines() if l.startswith("error: ")]
        assert len(err) == 1 and err[0].startswith("error: %s: entry 'x.h5': CRC-32 mismatch (directory says %s"
                                                   % (arc, crc)), p.stderr
        # The line ends with the readers that object to the same CRC-32 mismatch (every one, until recover).
        text, tag = err[0].split(" {objects: ")
        assert text.endswith("; it was being written in place when its writer was killed, and an undo journal "
                             "(%s) holds its last committed version: run 'mmzip recover %s' (or open the archive "
                             "writable) to restore it" % (journal, arc)), err[0]
        check_equal(tag, "zipfile refuses it, unzip refuses it, 7-Zip refuses it, libzip refuses it: a CRC-32 that "
                    "does not match}", "check's tag of the error")
        rec = [l for l in p.stderr.splitlines() if l.startswith("recover: ")]
        check_equal(rec, ["recover: restore entry 'x.h5' to its last commit (%d bytes, crc %s) from the undo "
                          "journal %s (%d bytes), left by an in-place edit whose writer was killed before it "
                          "published" % (size, crc, journal, os.path.getsize(journal))], "check's recover: lines")

        # mmzip ls and info: the committed size and CRC, and a warning naming the member.
        p = mmzip_cli("ls", arc)
        row = [l.split() for l in p.stdout.splitlines() if l.endswith(" x.h5")][0]
        check_equal((int(row[1]), row[5]), (size, crc), "ls row of x.h5")
        warn = ("mmzip ls: warning: %s: entry 'x.h5' awaits recovery: it was being edited in place when its writer "
                "was killed, and the undo journal %s" % (arc, journal))
        assert p.stderr.startswith(warn), p.stderr
        says_recover(p.stderr, arc, "mmzip ls")
        p = mmzip_cli("info", arc)
        assert "unfinished_edits: 1 " in p.stdout, p.stdout
        assert p.stderr.startswith(warn.replace("mmzip ls:", "mmzip info:")), p.stderr
        p = mmzip_cli("cat", arc, "x.h5", check=False)
        # Status 1 (cannot be read intact), not 3 (another writer holds the archive): a reader takes no lock.
        assert p.returncode == 1 and p.stdout == "" and waiting in p.stderr, (p.returncode, p.stderr)

        # h5py through the driver, the member named and not.
        for kw in ({"member": "x.h5"}, {}):
            try:
                h5py.File(arc, "r", driver="mmzip", **kw)
            except OSError as e:
                assert waiting in str(e), "h5py %r: %s" % (kw, e)
            else:
                raise AssertionError("h5py opened a member awaiting recovery (%r)" % kw)

        # h5dump and h5ls: the driver's message on stderr; never the raw archive (which holds an HDF5
        # signature at the member's offset) opened by a fallback driver.
        for cmd in (["h5dump", "-H", arc + "#/x.h5"], ["h5ls", arc + "#/x.h5"], ["h5ls", arc], ["h5dump", "-H", arc]):
            rc, out, errs = tool(*cmd)
            assert rc != 0, "%s succeeded:\n%s" % (cmd, out)
            assert "libmmzip_h5fd: %s: " % arc in errs and waiting in errs, "%s:\n%s" % (cmd, errs)
            assert "Dataset" not in out and "DATASET" not in out, "%s read the raw archive:\n%s" % (cmd, out)

        # The Python package.
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a = mmzip.Archive(arc)
        msgs = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
        check_equal(len(msgs), 1, "Archive's warnings")
        assert msgs[0].startswith("%s: member 'x.h5' awaits recovery: it was being edited in place" % arc), msgs
        says_recover(msgs[0], arc, "Archive's warning")
        check_equal(a.unfinished, [("x.h5", 1, False, os.path.getsize(journal))], "Archive.unfinished")
        try:
            a["x.h5"]
        except mmzip.MmzipError as e:
            assert waiting in str(e), e
        else:
            raise AssertionError("Archive handed out the bytes of a member awaiting recovery")
        check_equal(bytes(a["README.txt"]), b"not HDF5\n", "another member")
        a.close()

        # A writable open repairs too, and the Python package says what it did.
        import shutil
        arc2 = os.path.join(d, "copy.zip")
        shutil.copy(arc, arc2)
        shutil.copy(journal, arc2 + ".mmzip-undo")
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            a2 = mmzip.Archive(arc2, "r+")
        msgs = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
        check_equal(msgs, ["%s: the open repaired what a killed writer left unfinished: %d bytes of a member written "
                           "back from its undo journal (it is at its last commit again)" % (arc2, write_back)],
                    "Archive(r+)'s warning")
        check_equal(a2.recovered, [write_back, 0], "Archive.recovered")
        a2.close()
        assert read(arc2) == before and not os.path.exists(arc2 + ".mmzip-undo"), "the archive repaired by r+"

        # mmzip recover: what it did, with the figures; then the archive as before the edit.
        out = mmzip_cli("recover", arc).stdout
        check_equal(out, "%s: restored entry 'x.h5' to its last commit (%d bytes, crc %s): wrote back %d bytes of "
                    "that commit from the undo journal %s, left by an in-place edit whose writer was killed before it "
                    "published, and removed the journal\n" % (arc, size, crc, write_back, journal), "recover's report")
        assert not os.path.exists(journal)
        assert read(arc) == before, "the recovered archive differs from the archive before the edit"
        with h5py.File(arc, "r", driver="mmzip", member="x.h5") as f:
            assert np.array_equal(f["v"][:], np.arange(N, dtype="<f8")), "values after recover"
        zip_tools_ok(arc)
        check_equal(mmzip_cli("recover", arc).stdout, "%s: nothing to recover; the archive was not changed\n" % arc,
                    "a second recover")
        assert read(arc) == before, "a second recover changed the file"
        p = mmzip_cli("check", arc)
        assert "recover: nothing to do" in p.stderr and "error:" not in p.stderr, p.stderr
        check_equal(mmzip_cli("ls", arc).stderr, "", "ls after recover")


def test_netcdf4_member_said_by_ncdump():
    import netCDF4
    with TempDir() as d:
        nc = os.path.join(d, "w.nc")
        with netCDF4.Dataset(nc, "w") as ds:
            ds.createDimension("x", N // 4)
            ds.createVariable("t", "f8", ("x",))[:] = np.arange(N // 4, dtype="<f8")
        arc = os.path.join(d, "c.zip")
        mmzip_cli("put", arc, "w.nc", nc)
        before = read(arc)
        kill_mid_edit(HDF5_WRITER, arc, "w.nc", "t")
        journal = arc + ".mmzip-undo"
        waiting = ("entry 'w.nc' cannot be read now: it was being written in place when its writer was killed, and "
                   "an undo journal (%s) holds its last committed version: run 'mmzip recover %s'" % (journal, arc))
        for target in (arc + "#/w.nc", arc):
            rc, out, errs = tool("ncdump", "-h", target)
            assert rc != 0, "ncdump -h %s succeeded:\n%s" % (target, out)
            assert waiting in errs, "ncdump -h %s:\n%s" % (target, errs)
            assert "not an HDF5 file" not in errs and "no HDF5 signature" not in errs, errs
        out = mmzip_cli("recover", arc).stdout
        assert out.startswith("%s: restored entry 'w.nc' to its last commit" % arc), out
        assert read(arc) == before, "the recovered archive differs from the archive before the edit"
        rc, out, errs = tool("ncdump", "-v", "t", arc + "#/w.nc")
        assert rc == 0, errs
        assert " t = 0, 1, 2, 3, 4," in out, out[:2000]


def test_marker_pending_said_everywhere():
    """The npz route: a stored member modified in place through a writable view, killed before its commit."""
    with TempDir() as d:
        arc = os.path.join(d, "n.npz")
        orig = np.arange(32000.0)
        mmzip.savez(arc, a=orig, b=np.ones(1000))
        kill_mid_edit(VIEW_WRITER, arc)
        want = orig.copy()
        want[:500] = 7.0
        marks = arc + ".mmzip-inplace"
        assert os.path.exists(marks), "the kill left no marker file"
        with zipfile.ZipFile(arc) as z:
            info = z.getinfo("a.npy")
        with open(arc, "rb") as f:  # the member's bytes as the kill left them, for their true CRC
            f.seek(info.header_offset + 26)
            nlen, xlen = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
            f.seek(info.header_offset + 30 + nlen + xlen)
            data = f.read(info.file_size)
        old, new = "%08x" % info.CRC, "%08x" % zlib.crc32(data)
        assert old != new

        p = mmzip_cli("check", arc, check=False)
        check_equal(p.returncode, 1, "check's exit status")
        err = [l for l in p.stderr.splitlines() if l.startswith("error: ")]
        check_equal(err, ["error: %s: entry 'a.npy': CRC-32 mismatch (directory says %s, data gives %s); it was being "
                          "modified in place (named in the in-place marker file %s) when its writer was killed: run "
                          "'mmzip recover %s' (or open the archive writable), which keeps its bytes as that writer left "
                          "them and recomputes its CRC {objects: zipfile refuses it, unzip refuses it, 7-Zip "
                          "refuses it, libzip refuses it: a CRC-32 that does not match}" % (arc, old, new, marks, arc)],
                    "check's errors (ending with the readers that object to the same mismatch)")
        rec = [l for l in p.stderr.splitlines() if l.startswith("recover: ")]
        assert rec and rec[0] == ("recover: keep entry 'a.npy' as the writer that was modifying it in place (named in "
                                  "the in-place marker file %s) left it when it was killed - its values may hold only "
                                  "part of that writer's changes - recompute its CRC-32 over those bytes, and remove "
                                  "the marker" % marks), rec
        assert "recover: nothing to do" not in rec, rec

        p = mmzip_cli("ls", arc)
        check_equal(p.stderr, "mmzip ls: warning: %s: entry 'a.npy' awaits recovery: it was being modified in place "
                    "when its writer was killed (its in-place marker says so), so its CRC-32 is stale and its bytes "
                    "are as that writer left them; 'mmzip recover %s' (or any writable open) keeps them and "
                    "recomputes the CRC\n" % (arc, arc), "ls's warning")
        assert "unfinished_edits: 1 " in mmzip_cli("info", arc).stdout
        p = mmzip_cli("cat", arc, "a.npy", check=False)  # it checks the CRC before writing anything
        said = err[0][len("error: "):].split(" {objects: ")[0]  # check's message, without its tag
        assert p.returncode == 1 and p.stdout == "" and said in p.stderr, (p.returncode, p.stderr)

        try:
            h5py.File(arc, "r", driver="mmzip", member="a.npy")
        except OSError as e:
            assert ("%s: member 'a.npy' cannot be opened: it was being modified in place when its writer was killed "
                    "(its in-place marker says so)" % arc) in str(e), e
            says_recover(str(e), arc, "h5py")
        else:
            raise AssertionError("h5py opened a member left mid-edit")

        for opener in (lambda: mmzip.open(arc), lambda: mmzip.Archive(arc)):
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                z = opener()
            msgs = [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)]
            check_equal(msgs, ["%s: member 'a.npy' awaits recovery: it was being modified in place when its writer "
                               "was killed (its in-place marker says so), so its values are as that writer left them "
                               "(perhaps only part of its changes) and its CRC-32 is stale; 'mmzip recover %s' (or a "
                               "writable open of the archive) keeps them and recomputes the CRC" % (arc, arc)],
                        "warnings of the Python open")
            if isinstance(z, mmzip.NpzArchive):
                assert np.array_equal(z["a"], want), "the values as left"
            z.close()

        size_before = os.path.getsize(arc)
        out = mmzip_cli("recover", arc).stdout.splitlines()
        check_equal(out[0], "%s: kept entry 'a.npy' (%d bytes) as the writer that was modifying it in place left it "
                    "when it died: its values may hold only part of that writer's changes; its CRC-32 was recomputed "
                    "over them (%s, was %s); the in-place marker file %s, which named it, was removed"
                    % (arc, len(data), new, old, marks), "recover's first line")
        assert not os.path.exists(marks), "the marker file outlived recover"
        assert "discarded" not in "\n".join(out) and "interrupted mmzip write" not in "\n".join(out), out
        # The commit of the recomputed CRC may relocate the directory, which recover then moves back (the file
        # at rest holds no slack, docs/protocol.md §3.6): the size changes only if the killed writer left slack.
        size_after = os.path.getsize(arc)
        assert size_after <= size_before, (size_after, size_before)
        if size_after != size_before:
            check_equal(out[-1], "%s: the file is now %d bytes (it was %d)" % (arc, size_after, size_before),
                        "recover's last line")
        # It says the file shrank only by what it shrank (it once reported the slack its own commit had added).
        shrank = 0
        for line in out[1:-1] if size_after != size_before else out[1:]:
            m = re.match(r"%s: wrote the directory \(2 entries\) back behind the last entry, at \d+(?:; the file "
                         r"shrank by (\d+) bytes that no committed entry refers to.*)?$" % re.escape(arc), line)
            assert m, line
            shrank += int(m.group(1) or 0)
        check_equal(shrank, size_before - size_after, "bytes recover says the file shrank by")
        with zipfile.ZipFile(arc) as z:
            check_equal(z.namelist(), ["a.npy", "b.npy"], "names after recover")
            assert z.testzip() is None
        assert np.array_equal(np.load(arc)["a"], want), "values after recover"
        after = read(arc)
        check_equal(mmzip_cli("recover", arc).stdout, "%s: nothing to recover; the archive was not changed\n" % arc,
                    "a second recover")
        assert read(arc) == after, "a second recover changed the file"


if __name__ == "__main__":
    main([test_journal_pending_said_everywhere, test_netcdf4_member_said_by_ncdump,
          test_marker_pending_said_everywhere])
