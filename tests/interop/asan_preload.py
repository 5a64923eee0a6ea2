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

# The runtime may come with companions (colon-separated, see tests/CMakeLists.txt); all must exist.
if _RUNTIME and all(os.path.exists(p) for p in _RUNTIME.split(":")):
    if os.environ.get(_MARK) != "1":
        env = dict(os.environ)
        env["LD_PRELOAD"] = ":".join(p for p in (_RUNTIME, env.get("LD_PRELOAD", "")) if p)
        env[_MARK] = "1"
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    preload = os.environ.get("LD_PRELOAD", "").replace(_RUNTIME, "").strip(":")
    if preload:
        os.environ["LD_PRELOAD"] = preload
    else:
        os.environ.pop("LD_PRELOAD", None)
