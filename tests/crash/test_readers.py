"""Readers in other processes open and refresh the archive while a writer appends thousands of commits
(small, large, batched, replaced, removed entries). Every snapshot a reader takes must be exactly one of the
committed states - every listed entry's bytes final - and snapshots never go back in time."""
import os
import subprocess

from mmzip_testlib import TempDir, main

TOOL = os.path.join(os.environ["MMZIP_BUILD_DIR"], "bin", "crash_tool")


def test_readers_during_appends():
    with TempDir() as tmp:
        archive, log = os.path.join(tmp, "a.zip"), os.path.join(tmp, "log")
        # Each reader ends once it has seen 40 different committed states: a count, not a duration, so that
        # a fast machine does not end them before they saw much, nor a loaded one check too little.
        readers = [subprocess.Popen([TOOL, "reader", "loop", archive, "40"], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for _ in range(2)]
        passes = 0
        # Keep the writer busy for as long as the readers read: rewrite the archive from scratch in a loop.
        while any(r.poll() is None for r in readers):
            if os.path.exists(archive):
                os.unlink(archive)
            w = subprocess.run([TOOL, "write", "loop", archive, log], capture_output=True, text=True)
            assert w.returncode == 0, w.stderr
            passes += 1
        for r in readers:
            out, err = r.communicate()
            assert r.returncode == 0, "a reader saw an uncommitted state:\n%s%s" % (out, err)
            print(out.strip())
            states = int(out.split()[6])
            assert states >= 40, "the reader ended before it saw 40 states: %s" % out
        print("writer passes: %d" % passes)


if __name__ == "__main__":
    main([test_readers_during_appends])
