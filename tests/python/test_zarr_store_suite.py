"""zarr-python's own generic store tests (zarr/tests/test_storage.py, StoreTests), run against
mmzip.ZarrStore: every test zarr applies to its ZipStore and DirectoryStore, written by zarr's authors."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import atexit  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402
from zarr.tests.test_storage import StoreTests, dimension_separator_fixture  # noqa: F401 (a fixture)

import mmzip  # noqa: E402

_tmp = tempfile.mkdtemp(prefix="mmzip_zarr_suite_")


def _path():
    fd, path = tempfile.mkstemp(suffix=".zip", dir=_tmp)
    os.close(fd)
    os.remove(path)
    atexit.register(lambda: os.path.exists(path) and os.remove(path))
    return path


class TestMmzipZarrStore(StoreTests):
    def create_store(self, **kwargs):
        return mmzip.ZarrStore(_path(), mode="w", **kwargs)


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"] + sys.argv[1:]))
