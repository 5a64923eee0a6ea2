"""Running tests/interop/c_writer (the C writer of the readers benchmark, linked to the test build of the
library) from a test: its entries' bytes, and the steps it logs from the library's I/O trace."""
import os
import subprocess

from mmzip_testlib import BUILD, check_equal

C_WRITER = os.path.join(BUILD, "tests", "interop", "c_writer")


def content(name):
    """The bytes c_writer puts under `name` (PREFIX/NNNNNNN.SIZE): the name and '|', repeated, cut to SIZE."""
    size = int(name.rsplit(".", 1)[1])
    unit = (name + "|").encode()
    return (unit * (size // len(unit) + 1))[:size]


def write(mode, path, entries, seed, max_size, prefix, log, cap=None):
    """Runs c_writer (MODE commit-each, batch10 or put-loop); returns its log, one list per line: when the step
    ended, when the step before it ended, the step, offset, length."""
    args = [C_WRITER, mode, path, path + ".nostop", str(entries), str(seed), str(max_size), log, prefix]
    if cap:
        args.append(str(cap))
    r = subprocess.run(args, capture_output=True, text=True)
    check_equal(r.returncode, 0, "c_writer %s (%s)" % (mode, r.stderr.strip()))
    with open(log) as f:
        return [line.split() for line in f]
