"""Issue point 5: the view can be switched off (MMZIP_NCZARR_VIEW=raw, or "mmzip=raw" in the URL fragment)
to see the raw archive as netCDF-C 4.9.0 alone would, and the user guide documents every translation."""
import os
import re
import subprocess

import numpy as np
import zarr

import compat_lib as C
import daf_fixture as D
from mmzip_testlib import BUILD, SOURCE, TempDir, check_equal, main

PROBE = os.path.join(BUILD, "bin", "compat_view_probe")
RAW = {"MMZIP_NCZARR_VIEW": "raw"}
# Incompressible values: Blosc stores them behind its 16-byte header, so the raw frame is longer than the
# chunk and 4.9.0 (view off) does not read past it.
VALUES = np.random.default_rng(1).integers(-2 ** 31, 2 ** 31, size=40, dtype=np.int64).astype("<i4")


def _blosc_archive(tmp):
    path = os.path.join(tmp, "blosc.zarr.zip")
    store = zarr.ZipStore(path, mode="w")
    zarr.group(store=store).array("v", VALUES, chunks=(40,))  # zarr-python's default: Blosc(lz4, shuffle)
    store.close()
    return path


def _raw_chunk_as_ints(path):
    store = zarr.ZipStore(path, mode="r")
    try:
        raw = store["v/0"]
    finally:
        store.close()
    return np.frombuffer(raw[: len(raw) // 4 * 4], dtype="<i4")


def _raw_refused(p):
    """netCDF-C 4.9.3+ know Blosc's filter id (32001) but ship no filter plugin: with the view off they refuse
    the chunk with a filter error (no number printed) instead of handing out the frame as 4.9.0 does."""
    assert p.returncode != 0, "raw mode printed:\n" + p.stdout
    assert "Filter error" in p.stderr, p.stderr
    check_equal(p.stdout.split(" v =")[-1].strip(), "", "values printed in raw mode")


def test_env_switch_shows_the_raw_archive():
    with TempDir() as tmp:
        path = _blosc_archive(tmp)
        check_equal(C.cdl(path, "-v", "v").data["v"], VALUES.tolist(), "view on: decoded values")
        if C.TOOL_RELEASE >= (4, 9, 3):
            return _raw_refused(C.ncdump(path, "-v", "v", env=RAW, check=False))
        raw = C.cdl(path, "-v", "v", env=RAW).data["v"]
        # 4.9.0 without the view hands out the Blosc frame as if it were the data
        assert raw != VALUES.tolist(), "raw mode printed decoded values"
        blosc = _raw_chunk_as_ints(path)
        assert len(blosc) > len(VALUES), "the Blosc frame is longer than the data"
        check_equal(raw, blosc[: len(raw)].tolist(), "raw mode = the stored frame")


def test_url_fragment_switch():
    with TempDir() as tmp:
        path = _blosc_archive(tmp)
        url = "file://%s#mode=zarr,zip&mmzip=raw" % path
        if C.TOOL_RELEASE >= (4, 9, 3):
            _raw_refused(C.ncdump(url, "-v", "v", check=False))
        else:
            raw = C.cdl(url, "-v", "v").data["v"]
            assert raw != VALUES.tolist(), "mmzip=raw printed decoded values"
        check_equal(C.cdl("file://%s#mode=zarr,zip" % path, "-v", "v").data["v"], VALUES.tolist(), "no switch")


def test_raw_daf_archive_fails_where_the_view_reads_it():
    """4.9.0 alone crashes on DataAxesFormats' vlen strings and bools (reference §4.2): with the view
    switched off ncdump fails; with it on, it prints everything."""
    with TempDir() as tmp:
        path = os.path.join(tmp, "raw.daf.zarr.zip")
        D.write_daf(path)
        p = C.ncdump(path, env=RAW, check=False)
        assert p.returncode != 0, "raw ncdump of a DataAxesFormats archive succeeded:\n" + p.stdout[-2000:]
        ok = C.ncdump(path)
        assert '"C1"' in ok.stdout and "cell = 3 ;" in ok.stdout


def test_probe_raw_translates_nothing():
    with TempDir() as tmp:
        path = os.path.join(tmp, "raw.daf.zarr.zip")
        D.write_daf(path)
        for key in ("/axes/cell/.zarray", "/axes/cell/0.0", "/vectors/cell/is_doublet/.zattrs"):
            on = subprocess.run([PROBE, path, key], capture_output=True)
            off = subprocess.run([PROBE, "--raw", path, key], capture_output=True)
            check_equal(on.returncode, 0, "view serves " + key)
            check_equal((off.returncode, off.stdout), (3, b""), "raw view serves nothing for " + key)


def test_user_guide_lists_translations():
    with open(os.path.join(SOURCE, "docs", "compat-view.md"), encoding="utf-8") as f:
        guide = f.read()
    # every name the view adds, every switch, every codec it decodes or refuses by name
    must = ["_ZARR_DTYPE", "_ZARR_SHAPE", "_ZARR_FillValue", "_Encoding", "_ARRAY_DIMENSIONS", "_NCZARR_ATTR",
            "_scalar_", "re_im", "_strlen", "_bytes", "_zdim_", "daf_version", "_nnz", "_colptr",
            "MMZIP_NCZARR_VIEW=raw", "mmzip=raw", "MMZIP_NCZARR_VIEW_CACHE_MB"]
    # the codec table: every row's v2 id and v3 name
    with open(os.path.join(SOURCE, "nczarr_map", "view", "codecs", "codec_table.c"), encoding="utf-8") as f:
        rows = re.findall(r'^\s*\{(?:NULL|"([a-z0-9_.-]+)"),\s*(?:NULL|"([a-z0-9_.-]+)"),\s*(?:COMPRESSOR|FILTER|OBJECT)',
                          f.read(), re.M)
    assert len(rows) >= 19, rows
    must += [v2 for v2, _ in rows if v2]
    # Zarr v3: data types, layout codecs and chunk key encodings the v3 reader knows by name, and the table's codecs
    with open(os.path.join(SOURCE, "nczarr_map", "view", "v3", "v3_array.c"), encoding="utf-8") as f:
        v3_names = re.findall(r'strcmp\(name, "([a-z0-9_.-]+)"\)', f.read()) + [v3 for _, v3 in rows if v3]
    assert {"sharding_indexed", "crc32c", "transpose", "vlen-bytes"} <= set(v3_names), v3_names
    must += ["`%s`" % n for n in v3_names]
    missing = [m for m in must if m not in guide]
    check_equal(missing, [], "names missing from docs/compat-view.md")
    assert len(must) > 30, must


if __name__ == "__main__":
    main([test_env_switch_shows_the_raw_archive, test_url_fragment_switch,
          test_raw_daf_archive_fails_where_the_view_reads_it, test_probe_raw_translates_nothing,
          test_user_guide_lists_translations])
