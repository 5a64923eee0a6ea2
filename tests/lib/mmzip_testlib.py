"""Helpers shared by the Python test suites: paths of the build, running commands, assertions that say
what differed. Every test asserts values and bytes, not only exit codes."""
import os
import shutil
import subprocess
import sys
import tempfile

MMZIP = os.environ.get("MMZIP_BIN", "mmzip")
LIBDIR = os.environ.get("MMZIP_LIBDIR", "")
PYTHON = os.environ.get("MMZIP_PYTHON", "/usr/bin/python3")
BUILD = os.environ.get("MMZIP_BUILD_DIR", "")
SOURCE = os.environ.get("MMZIP_SOURCE_DIR", "")


def run(cmd, check=True, env=None, input=None, timeout=600, cwd=None):
    """Runs cmd (a list); returns the CompletedProcess with text stdout/stderr. Raises with both on failure."""
    e = dict(os.environ)
    if env:
        e.update(env)
    p = subprocess.run(cmd, capture_output=True, env=e, input=input, timeout=timeout, cwd=cwd,
                       text=not isinstance(input, bytes))
    if check and p.returncode != 0:
        raise AssertionError("command failed (%d): %s\nstdout:\n%s\nstderr:\n%s"
                             % (p.returncode, " ".join(map(str, cmd)), p.stdout, p.stderr))
    return p


def mmzip(*args, check=True, env=None, input=None):
    return run([MMZIP] + [str(a) for a in args], check=check, env=env, input=input)


def mmzip_run(*args, check=True, env=None, input=None, timeout=600, cwd=None):
    """Runs an unmodified program under `mmzip run`."""
    return run([MMZIP, "run", "--"] + [str(a) for a in args], check=check, env=env, input=input,
               timeout=timeout, cwd=cwd)


def sanitizer_blocks_python_under_run(test):
    """True (and says so) in the sanitizer build, where python3 cannot start under `mmzip run`: with the
    sanitizer runtime preloaded, loading OpenSSL's libcurl (libhdf5's dependency, which the HDF5 driver brings)
    leaves glibc's setlocale lock with a negative reader count, and python3 hangs in Py_DecodeLocale before
    running any code. mmzip is not involved: `LD_PRELOAD=$(gcc -print-file-name=libasan.so):libcurl.so.4
    python3 -c 1` hangs on Debian 12 as it is. The normal build runs these steps in full."""
    if not os.environ.get("MMZIP_ASAN_RUNTIME"):
        return False
    print("   %s: python3 under `mmzip run` not run in the sanitizer build (libasan + libcurl hang python3 at "
          "start-up; see mmzip_testlib.sanitizer_blocks_python_under_run)" % test, flush=True)
    return True


def ls_entries(archive):
    """Parses `mmzip ls` into {name: dict(method, size, csize, offset, align, crc)}."""
    out = mmzip("ls", archive).stdout.splitlines()
    res = {}
    for line in out[1:]:
        parts = line.split(None, 6)
        res[parts[6]] = dict(method=parts[0], size=int(parts[1]), csize=int(parts[2]), offset=int(parts[3]),
                             align=int(parts[4]), crc=parts[5])
    return res


def zip_tools_ok(archive):
    """The archive passes Python zipfile.testzip(), `unzip -t` and `7z t`. Returns the zipfile names."""
    import zipfile
    with zipfile.ZipFile(archive) as z:
        bad = z.testzip()
        assert bad is None, "zipfile.testzip() found a bad entry: %r" % bad
        names = z.namelist()
    p = run(["unzip", "-t", archive], check=False)
    if not names and p.returncode == 1 and "zipfile is empty" in p.stdout + p.stderr:
        pass  # Info-ZIP's warning for a valid archive with no entries
    else:
        assert p.returncode == 0 and "No errors detected" in p.stdout, "unzip -t failed:\n" + p.stdout + p.stderr
    if shutil.which("7z"):
        p = run(["7z", "t", archive], check=False)
        assert p.returncode == 0 and "Everything is Ok" in p.stdout, "7z t failed:\n" + p.stdout + p.stderr
    return names


class TempDir:
    def __init__(self, prefix="mmzip-test-"):
        self.path = tempfile.mkdtemp(prefix=prefix)

    def __enter__(self):
        return self.path

    def __exit__(self, *exc):
        if not os.environ.get("MMZIP_KEEP_TMP"):
            shutil.rmtree(self.path, ignore_errors=True)


def check_equal(got, want, what):
    if got != want:
        raise AssertionError("%s: got %r, want %r" % (what, got, want))


def main(tests):
    """Runs the given test functions in order, printing each; exits non-zero on the first failure."""
    only = sys.argv[1:]
    for t in tests:
        if only and t.__name__ not in only:
            continue
        print("--", t.__name__, flush=True)
        t()
    print("all passed")
