"""Lets a Python test load an AddressSanitizer-instrumented libmmzip (the MMZIP_SANITIZE build).

ASan's runtime must be the first library of a process, and /usr/bin/python3 is not built with it; loading the
instrumented libmmzip through ctypes then aborts. When CTest says where the runtime is (MMZIP_ASAN_RUNTIME),
importing this module re-executes the script with the runtime preloaded, and then drops LD_PRELOAD from the
environment again so that the tools the test runs (unzip, 7z, zip, cmake) start as they normally would.
Import it before mmzip. Without MMZIP_ASAN_RUNTIME it does nothing."""
import os
import sys

_RUNTIME = os.environ.get("MMZIP_ASAN_RUNTIME")
_MARK = "MMZIP_ASAN_PRELOADED"


def _runtime_loaded():
    """Whether this process has the sanitizer runtime mapped (the environment cannot say: a child inherits
    the parent's marks but not, once LD_PRELOAD is dropped, its preload)."""
    first = _RUNTIME.split(":")[0]
    with open("/proc/self/maps") as maps:
        return any(first in line for line in maps)


def child_env(env=None):
    """The environment for a child process that loads libmmzip itself (`python3 -c "import mmzip ..."`): in
    the sanitizer build, the runtime preloaded; otherwise `env` (default os.environ) unchanged."""
    env = dict(os.environ if env is None else env)
    if _RUNTIME:
        env["LD_PRELOAD"] = ":".join(p for p in (_RUNTIME, env.get("LD_PRELOAD", "")) if p)
    return env


# The runtime may come with companions (colon-separated, see tests/CMakeLists.txt); all must exist.
if _RUNTIME and all(os.path.exists(p) for p in _RUNTIME.split(":")):
    # The mark holds the pid that re-executed itself (execve keeps it), so a failed preload cannot loop.
    if not _runtime_loaded() and os.environ.get(_MARK) != str(os.getpid()):
        env = child_env()
        env[_MARK] = str(os.getpid())
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    preload = os.environ.get("LD_PRELOAD", "").replace(_RUNTIME, "").strip(":")
    if preload:
        os.environ["LD_PRELOAD"] = preload
    else:
        os.environ.pop("LD_PRELOAD", None)
