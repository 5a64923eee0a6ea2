"""What is refused on a file system without record locks (Lustre mounted without -o flock: fcntl locks fail
with ENOSYS; NFS without a lock manager: ENOLCK), simulated by an LD_PRELOAD shim (nolocks_preload.c) that
makes every record-lock call fail so:

  * `mmzip put --wait` (a shared writer, MMZIP_SHARED) is refused with a message naming the archive and the
    reason, before anything is created or written: a missing archive stays missing, an existing one keeps
    its bytes;
  * a plain `mmzip put` runs as before without cross-process exclusion, and `mmzip info` says the lock is
    unsupported;
  * ZarrStore(..., shared=True) is refused the same way (MmzipError, EUNSUPPORTED).
"""
import hashlib
import os
import subprocess
import sys
import zipfile

from mmzip_testlib import MMZIP, PYTHON, TempDir, check_equal, main, mmzip, zip_tools_ok

SHIM = os.environ.get("MMZIP_NOLOCKS_SHIM", "")


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def test_refused_without_locks():
    assert os.path.exists(SHIM), "the shim was not built: %r" % SHIM
    for err in ("ENOSYS", "ENOLCK"):
        # Under the sanitizer build its runtime must come first in the preload list (the suites export it).
        asan = os.environ.get("MMZIP_ASAN_RUNTIME")
        env = {"LD_PRELOAD": (asan + ":" + SHIM) if asan else SHIM, "NOLOCKS_ERRNO": err}
        with TempDir() as tmp:
            archive = os.path.join(tmp, "a.zip")
            src = os.path.join(tmp, "in.bin")
            with open(src, "wb") as f:
                f.write(b"x" * 5000)
            p = mmzip("put", "--wait", archive, "k", src, env=env, check=False)
            assert p.returncode != 0 and "refuses the record locks" in p.stderr and archive in p.stderr, p.stderr
            assert not os.path.exists(archive), "%s: a refused shared put created the archive" % err
            # One writer at a time still works, without cross-process exclusion, and says so.
            mmzip("put", archive, "k", src, env=env)
            info = mmzip("info", archive, env=env).stdout
            assert "writer_lock:      unsupported by this file system" in info, info
            before = sha(archive)
            p = mmzip("put", "--wait=5", archive, "k2", src, env=env, check=False)
            assert p.returncode != 0 and "refuses the record locks" in p.stderr, p.stderr
            check_equal(sha(archive), before, "%s: the archive after a refused shared put" % err)
            with zipfile.ZipFile(archive) as z:
                check_equal(z.namelist(), ["k"], "entries")
                check_equal(z.read("k"), b"x" * 5000, "k")
            zip_tools_ok(archive)
            code = ("import mmzip, sys\n"
                    "try:\n"
                    "    mmzip.ZarrStore(sys.argv[1], 'a', shared=True)\n"
                    "except mmzip.MmzipError as e:\n"
                    "    print('refused', e.code, e)\n")
            e = dict(os.environ)
            e.update(env)
            out = subprocess.run([PYTHON, "-c", code, archive], env=e, capture_output=True, text=True)
            assert out.stdout.startswith("refused -7 ") and "refuses the record locks" in out.stdout, (
                out.stdout, out.stderr)
            check_equal(sha(archive), before, "%s: the archive after a refused shared ZarrStore" % err)


if __name__ == "__main__":
    main([test_refused_without_locks])
