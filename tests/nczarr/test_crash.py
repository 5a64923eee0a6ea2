"""Point 5: SIGKILL at random moments. A killed `nccopy` leaves no archive if it was creating one, or the
previous archive untouched if it was replacing one; a killed netCDF4-python program appending to an archive
(with nc_sync calls) leaves it at its previous commit. In every case `mmzip check` passes right after the
kill (readers see the last commit), and after `mmzip recover` the file is byte for byte the previous
archive, or the complete new one when the kill came after the final commit.

A kill lands at a chosen point of the program's progress, not after a delay: an uninterrupted run is
measured by the bytes it reads and writes (rchar + wchar of /proc/PID/io), and each victim is killed as soon
as it has moved a fraction of that, chosen uniformly between 2 % and 98 %. The programs are deterministic, so
the kill finds them still working on any machine, at any load; the seed is printed."""
import hashlib
import os
import random
import signal
import subprocess
import sys
import time

from mmzip_testlib import MMZIP, PYTHON, TempDir, check_equal, main, mmzip, mmzip_run, run
from nczarr_testlib import NO_PLUGINS, ls_zip, make_sample_nc, sample_archive

SEED = int(os.environ.get("NCZARR_CRASH_SEED", random.SystemRandom().randrange(1 << 30)))
RNG = random.Random(SEED)

BIG_INPUT = r"""
import sys, numpy as np, netCDF4
d = netCDF4.Dataset(sys.argv[1], "w")
d.createDimension("t", 480)
d.createDimension("y", 512)
d.createDimension("x", 512)
v = d.createVariable("field", "f4", ("t", "y", "x"), chunksizes=(4, 256, 256))
v.units = "K"
plane = np.arange(512 * 512, dtype="f4").reshape(512, 512)
for t in range(0, 480, 8):
    v[t:t + 8] = plane[None, :, :] + np.arange(t, t + 8, dtype="f4")[:, None, None]
d.close()
"""

APPENDER = r"""
import sys
import mmzip
mmzip.enable_netcdf()
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "a")
d.createDimension("long", 1000000)
for k in range(24):
    v = d.createVariable("added%02d" % k, "f4", ("long",), chunksizes=(125000,))
    v[:] = np.arange(1000000, dtype="f4") + k
    v.index = k
    if k % 3 == 2:
        d.sync()
d["temp"][1, 0, :] = [-1, -2, -3, -4, -5, -6, -7]
d.close()
"""


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def io_moved(pid):
    """The bytes process pid has read and written through system calls so far (also readable for a zombie)."""
    try:
        with open("/proc/%d/io" % pid) as f:
            fields = dict(l.split(": ") for l in f.read().splitlines())
    except (FileNotFoundError, ProcessLookupError):
        return None
    return int(fields["rchar"]) + int(fields["wchar"])


def measured(cmd):
    """Runs cmd to its end and returns the bytes it moved (see io_moved): the measure of its progress."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ, **NO_PLUGINS))
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its /proc entry stays
    total = io_moved(p.pid)
    _, err = p.communicate()
    if p.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (cmd, p.returncode, err.decode()))
    return total


def run_killed(cmd, at_bytes):
    """Starts cmd and SIGKILLs it as soon as it has moved at_bytes (unless it finished first, which a
    fraction below 1 of a deterministic program's total rules out); returns True if it was killed."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         env=dict(os.environ, **NO_PLUGINS))
    while p.poll() is None:
        moved = io_moved(p.pid)
        if moved is not None and moved >= at_bytes:
            break
        time.sleep(0.001)
    killed = p.poll() is None
    if killed:
        os.kill(p.pid, signal.SIGKILL)
    _, err = p.communicate()
    if not killed and p.returncode != 0:
        raise AssertionError("%s failed (%d) before it could be killed:\n%s" % (cmd, p.returncode, err.decode()))
    return killed


def check_recovers_to(path, allowed, what):
    """mmzip check passes as the file lies; after mmzip recover the file is one of the allowed states,
    each given as (name, digest) or (name, {entry: (size, crc)})."""
    mmzip("check", path)
    mmzip("recover", path)
    mmzip("check", path)
    d = digest(path)
    entries = {k: v[1:] for k, v in ls_zip(path).items()}
    for name, state in allowed:
        if state == d or state == entries:
            return name
    raise AssertionError("%s: after recovery the archive is neither %s" % (what, " nor ".join(n for n, _ in allowed)))


def test_killed_nccopy():
    with TempDir() as d:
        src = os.path.join(d, "big.nc")
        run([PYTHON, "-c", BIG_INPUT, src])
        reference = os.path.join(d, "reference.zarr.zip")
        length = measured([MMZIP, "run", "nccopy", src, reference])
        complete = {k: v[1:] for k, v in ls_zip(reference).items()}
        print("uninterrupted nccopy: %d bytes moved, %d entries (seed %d)" % (length, len(complete), SEED),
              flush=True)
        outcomes = []
        for i in range(6):
            target = os.path.join(d, "new%d.zarr.zip" % i)
            killed = run_killed([MMZIP, "run", "nccopy", src, target], RNG.uniform(0.02, 0.98) * length)
            stray = sorted(n for n in os.listdir(d) if n.startswith("new%d." % i) and n != os.path.basename(target))
            check_equal(stray, [], "files left beside the killed nccopy's archive")
            if not os.path.exists(target):
                assert killed, "nccopy finished but left no archive"
                outcomes.append("none")
                continue
            outcomes.append(check_recovers_to(target, [("complete", complete)], "new archive %d" % i))
            os.unlink(target)
        print("new archive, kills at random points:", outcomes, flush=True)

        # Replacing an existing archive: the old one stays until the new one is complete.
        old_src = make_sample_nc(os.path.join(d, "sample.nc"))
        for i in range(4):
            target = os.path.join(d, "replace%d.zarr.zip" % i)
            mmzip_run("nccopy", old_src, target)
            old = digest(target)
            run_killed([MMZIP, "run", "nccopy", src, target], RNG.uniform(0.02, 0.98) * length)
            outcomes.append(check_recovers_to(target, [("previous", old), ("complete", complete)],
                                              "replaced archive %d" % i))
            os.unlink(target)
        print("replacement, kills at random points:", outcomes[-4:], flush=True)


def test_killed_appender():
    with TempDir() as d:
        nc, original = sample_archive(d, "original.zarr.zip")
        reference = os.path.join(d, "reference.zarr.zip")
        with open(original, "rb") as f, open(reference, "wb") as g:
            g.write(f.read())
        length = measured([PYTHON, "-c", APPENDER, reference])
        complete = {k: v[1:] for k, v in ls_zip(reference).items()}
        # Entries, not bytes: a writer killed after it moved the directory up leaves the old commit, which
        # recovery writes back compactly (docs/protocol.md §6), without the slack the original had.
        before = {k: v[1:] for k, v in ls_zip(original).items()}
        outcomes = []
        for i in range(6):
            target = os.path.join(d, "victim%d.zarr.zip" % i)
            with open(original, "rb") as f, open(target, "wb") as g:
                g.write(f.read())
            run_killed([PYTHON, "-c", APPENDER, target], RNG.uniform(0.02, 0.98) * length)
            outcomes.append(check_recovers_to(target, [("previous", before), ("complete", complete)],
                                              "appended archive %d" % i))
            os.unlink(target)
        print("appender (%d bytes moved uninterrupted), kills at random points: %s (seed %d)" % (length, outcomes, SEED))


if __name__ == "__main__":
    sys.stdout.reconfigure(line_buffering=True)
    main([test_killed_nccopy, test_killed_appender])
