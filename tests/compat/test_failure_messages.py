"""Issue 23, point 5: a failure names its cause and the way out, in one line of `mmzip_nczarr:`, before
netCDF-C's own one-line error ("Invalid dimension size", "Unknown file format"); and the way out it names
works. Files made by other tools: ncgen/nccopy, Info-ZIP's zip, zarr-python's directory store, netCDF-C 4.10.1
(a newer release's string attributes)."""
import json
import os
import zipfile

import numpy as np
import zarr

import compat_lib as C
from mmzip_testlib import TempDir, check_equal, main, run

MODEL = """netcdf model {
dimensions:
    time = UNLIMITED ;
    x = 2 ;
variables:
    double time(time) ;
        time:units = "days since 2000-01-01" ;
    float t(time, x) ;
data:
    time = 0, 1, 2 ;
    t = 1, 2, 3, 4, 5, 6 ;
}
"""


def plugin_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("mmzip_nczarr:")]


def one_line(r, *needles):
    """r failed with exactly one mmzip_nczarr line holding every needle; returns it."""
    assert r.returncode != 0, "exit 0:\n%s%s" % (r.stdout, r.stderr)
    lines = plugin_lines(r.stderr)
    check_equal(len(lines), 1, "lines of mmzip_nczarr:\n" + r.stderr)
    for n in needles:
        assert n in lines[0], "%r not in %r" % (n, lines[0])
    return lines[0]


def test_unlimited_dimension():
    with TempDir() as tmp:
        with open(os.path.join(tmp, "model.cdl"), "w") as f:
            f.write(MODEL)
        nc = os.path.join(tmp, "model.nc")
        run(["ncgen", "-4", "-o", nc, os.path.join(tmp, "model.cdl")])
        out = os.path.join(tmp, "model.zarr.zip")
        r = C.mmzip_run("nccopy", nc, out, check=False)
        if C.TOOL_RELEASE < (4, 9, 3):
            one_line(r, out, "'time'", "UNLIMITED", "nccopy -u", "netCDF-C %d.%d.%d" % C.TOOL_RELEASE)
            assert "Invalid dimension size" in r.stderr, r.stderr
            assert not os.path.exists(out), "a failed nccopy left an archive"
        else:
            assert not plugin_lines(r.stderr), "a release with unlimited dimensions got the message:\n" + r.stderr
            if os.path.exists(out):
                os.unlink(out)
        # the way out: nccopy -u
        r = C.mmzip_run("nccopy", "-u", nc, out)
        assert not plugin_lines(r.stderr), r.stderr
        c = C.cdl(out)
        check_equal(c.dims["time"], 3, "time is fixed, 3 long")
        check_equal(c.data["time"], [0, 1, 2], "time")
        check_equal(c.data["t"], [1, 2, 3, 4, 5, 6], "t")
        check_equal(c.vars["time"]["attrs"]["units"], [b"days since 2000-01-01"], "time:units")


# What netCDF-C 4.10.1's nccopy writes (recorded from `nccopy sl.nc sl.zip` of the CDL below, through the storage
# map) when the tools are 4.9.0: NC_STRING attributes typed "|S128", its own metadata typed "|J0".
NEWER_CDL = """netcdf sl {
dimensions:
    x = 3 ;
variables:
    int a(x) ;
        string a:flag_meanings = "low", "mid", "high" ;
        a:valid_range = 0, 100 ;
    string :tags = "alpha", "beta" ;
    :title = "t" ;
data:
    a = 1, 2, 3 ;
}
"""
RECORDED_4_10_1 = {
    ".zgroup": {"zarr_format": 2},
    ".zattrs": {"tags": ["alpha", "beta"], "title": "t", "_NCProperties": "version=2,netcdf=4.10.1,nczarr=2.0.0",
                "_nczarr_group": {"dimensions": {"x": 3}, "arrays": ["a"], "groups": []},
                "_nczarr_superblock": {"version": "2.0.0"},
                "_nczarr_attr": {"types": {"tags": "|S128", "title": ">S1", "_NCProperties": ">S1",
                                           "_nczarr_group": "|J0", "_nczarr_superblock": "|J0",
                                           "_nczarr_attr": "|J0"}}},
    "a/.zarray": {"zarr_format": 2, "shape": [3], "dtype": "<i4", "chunks": [3], "fill_value": None,
                  "order": "C", "compressor": None, "filters": None},
    "a/.zattrs": {"flag_meanings": ["low", "mid", "high"], "valid_range": [0, 100], "_ARRAY_DIMENSIONS": ["x"],
                  "_nczarr_array": {"dimension_references": ["/x"], "storage": "chunked"},
                  "_nczarr_attr": {"types": {"flag_meanings": "|S128", "valid_range": "<i4",
                                             "_nczarr_array": "|J0", "_nczarr_attr": "|J0"}}},
}


def newer_release_archive(tmp):
    """The archive as netCDF-C 4.9.3+ writes it: by the tools themselves when they are such a release
    (tests/nczarr/run_with_netcdf.sh), else the recorded metadata of 4.10.1's."""
    path = os.path.join(tmp, "newer.zarr.zip")
    if C.TOOL_RELEASE >= (4, 9, 3):
        cdl = os.path.join(tmp, "sl.cdl")
        with open(cdl, "w") as f:
            f.write(NEWER_CDL)
        run(["ncgen", "-4", "-o", os.path.join(tmp, "sl.nc"), cdl])
        C.mmzip_run("nccopy", os.path.join(tmp, "sl.nc"), path)
        with zipfile.ZipFile(path) as z:
            types = json.loads(z.read("a/.zattrs"))["_nczarr_attr"]["types"]
        assert types["flag_meanings"].startswith("|S"), types
        return path
    with zipfile.ZipFile(path, "w") as z:
        for name, doc in RECORDED_4_10_1.items():
            z.writestr(name, json.dumps(doc))
        z.writestr("a/0", np.array([1, 2, 3], "<i4").tobytes())
    return path


def test_newer_release_string_attributes_on_4_9_0():
    """netCDF-C 4.9.0 failed the whole open with a bare "Invalid argument" on 4.9.3+'s "|S<n>" attribute type.
    The view shows such attributes by their value (a list of strings as its JSON text, as for zarr-python's
    lists of strings): netCDF4-python runs Debian's 4.9.0 whatever the tools are."""
    with TempDir() as tmp:
        path = newer_release_archive(tmp)
        with C.open_netcdf(path) as ds:
            check_equal(ds["a"][:].tolist(), [1, 2, 3], "a")
            check_equal(json.loads(ds.getncattr("tags")), ["alpha", "beta"], "tags")
            check_equal(json.loads(ds["a"].getncattr("flag_meanings")), ["low", "mid", "high"], "flag_meanings")
            check_equal(ds["a"].getncattr("valid_range").tolist(), [0, 100], "valid_range")
            check_equal(ds.getncattr("title"), "t", "title")
        r = C.ncdump(path)
        assert not plugin_lines(r.stderr), r.stderr
        c = C.Cdl(r.stdout)
        check_equal(c.data["a"], [1, 2, 3], "ncdump a")
        if C.TOOL_RELEASE < (4, 9, 3):
            check_equal(c.gattrs[""]["tags"], [b'["alpha", "beta"]'], "ncdump :tags on 4.9.0")
        else:
            check_equal(c.gattrs[""]["tags"], [b"alpha", b"beta"], "ncdump :tags on the writing release")
        # a 4.9.0 write session (netCDF4-python) adding attributes stores the lists as they were, not the text
        # they are shown as
        with C.open_netcdf(path, "a") as ds:
            ds.setncattr("history", "edited on 4.9.0")
            ds["a"].units = "m"
        with zipfile.ZipFile(path) as z:
            root, a = json.loads(z.read(".zattrs")), json.loads(z.read("a/.zattrs"))
        check_equal(root["tags"], ["alpha", "beta"], "tags in the archive after the session")
        check_equal(a["flag_meanings"], ["low", "mid", "high"], "flag_meanings in the archive after the session")
        check_equal(a["valid_range"], [0, 100], "valid_range in the archive after the session")
        check_equal((root["history"], a["units"]), ("edited on 4.9.0", "m"), "the session's attributes")
        check_equal(C.cdl(path).data["a"], [1, 2, 3], "ncdump a after the session")


def test_zip_without_zarr():
    with TempDir() as tmp:
        for n in ("readme.txt", "notes.md"):
            with open(os.path.join(tmp, n), "w") as f:
                f.write("not a dataset\n")
        path = os.path.join(tmp, "docs.zip")
        run(["zip", "-q", path, "readme.txt", "notes.md"], cwd=tmp)
        r = C.ncdump(path, check=False)
        one_line(r, path, "ZIP archive holding no Zarr metadata", "no HDF5 member", "2 entries",
                 "mmzip ls " + path)
        assert "Unknown file format" in r.stderr, r.stderr
        # an empty ZIP
        empty = os.path.join(tmp, "empty.zip")
        zipfile.ZipFile(empty, "w").close()
        one_line(C.ncdump(empty, check=False), empty, "empty ZIP archive")
        # a ZIP whose only member is a netCDF-4 file still opens, through the HDF5 driver, without a message
        cdl = os.path.join(tmp, "m.cdl")
        with open(cdl, "w") as f:
            f.write(MODEL.replace("UNLIMITED", "3"))
        run(["ncgen", "-4", "-o", os.path.join(tmp, "m.nc"), cdl])
        member = os.path.join(tmp, "member.zip")
        run(["zip", "-q", "-0", member, "m.nc"], cwd=tmp)
        r = C.ncdump(member)
        assert not plugin_lines(r.stderr), r.stderr
        check_equal(C.Cdl(r.stdout).data["t"], [1, 2, 3, 4, 5, 6], "the member")


def test_not_a_zip():
    with TempDir() as tmp:
        path = os.path.join(tmp, "model.zarr.zip")
        with open(path, "w") as f:
            f.write(MODEL)  # text, not an archive
        line = one_line(C.ncdump(path, check=False), path, "not a ZIP archive", "nor is it a netCDF or HDF5 file")
        # a truncated archive: its cut-off end named
        good = os.path.join(tmp, "good.zip")
        zarr.save_array(zarr.ZipStore(good, mode="w"), np.arange(4))
        with open(good, "rb") as f:
            data = f.read()
        cut = os.path.join(tmp, "cut.zip")
        with open(cut, "wb") as f:
            f.write(data[:len(data) - 30])
        one_line(C.ncdump(cut, check=False), cut, "not a ZIP archive", "truncated")
        # a netCDF-4 file named .zip opens as what it is, without a message
        nc = os.path.join(tmp, "named.zip")
        cdl = os.path.join(tmp, "n.cdl")
        with open(cdl, "w") as f:
            f.write(MODEL.replace("UNLIMITED", "3"))
        run(["ncgen", "-4", "-o", nc, cdl])
        r = C.ncdump(nc)
        assert not plugin_lines(r.stderr), r.stderr
        check_equal(C.Cdl(r.stdout).data["t"], [1, 2, 3, 4, 5, 6], "a netCDF-4 file named .zip")
        assert line


def test_damaged_chunk_of_a_translated_array():
    """A byte flipped in a chunk the compatibility view decodes (compressed, big-endian, Fortran order, float16,
    fixed-width strings): ncdump and netCDF4-python fail naming the archive and the chunk's entry. The view took
    such chunks in place without their CRC-32, and the flipped value came out with exit status 0 (an outside
    review)."""
    import numcodecs
    rng = np.random.default_rng(5)
    arrays = {
        "blosc": dict(data=rng.integers(-2**31, 2**31 - 1, 64, dtype="i4"),
                      compressor=numcodecs.Blosc(cname="lz4", shuffle=0)),
        "zstd": dict(data=rng.integers(-2**31, 2**31 - 1, 64, dtype="i4"), compressor=numcodecs.Zstd()),
        "big_endian": dict(data=np.arange(64, dtype=">i4"), compressor=None),
        "order_f": dict(data=np.arange(64, dtype="<i4").reshape(8, 8), compressor=None, order="F"),
        "float16": dict(data=np.arange(64, dtype="<f2"), compressor=None),
        # A damaged chunk of strings fails the dataset's open: the view reads every chunk to size the strings.
        "fixed_strings": dict(data=np.array(["abcd"] * 16, dtype="<U4"), compressor=None),
    }
    with TempDir() as tmp:
        for name, kw in arrays.items():
            path = os.path.join(tmp, "%s.zarr.zip" % name)
            st = zarr.ZipStore(path, mode="w")
            zarr.group(store=st).create_dataset(name, chunks=kw["data"].shape, **kw)
            st.close()
            chunk = "%s/0%s" % (name, ".0" if name == "order_f" else "")
            raw = bytearray(open(path, "rb").read())
            with zipfile.ZipFile(path) as z:
                info = z.getinfo(chunk)
            start = info.header_offset + 30 + len(chunk) + \
                int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
            raw[start + info.compress_size - 2] ^= 0x10
            with open(path, "wb") as f:
                f.write(raw)
            r = C.ncdump(path, "-v", name, check=False)
            assert r.returncode != 0, "ncdump read the damaged %s:\n%s" % (name, r.stdout[-400:])
            assert path in r.stderr and "entry '%s': CRC-32 mismatch" % chunk in r.stderr, r.stderr
            try:
                with C.open_netcdf(path) as ds:
                    got = ds[name][:]
                raise AssertionError("netCDF4 read the damaged %s: %r" % (name, got))
            except (RuntimeError, OSError) as e:
                assert "NetCDF" in str(e) or "HDF" in str(e), e


def test_directory():
    with TempDir() as tmp:
        # a zarr-python directory store named like an archive: the message gives the URL netCDF-C reads it by
        store = os.path.join(tmp, "weather.zarr.zip")
        root = zarr.open_group(zarr.DirectoryStore(store), mode="w")
        a = root.create_dataset("elevation", data=np.arange(5, dtype="<f4"), compressor=None, fill_value=None)
        a.attrs["_ARRAY_DIMENSIONS"] = ["x"]
        line = one_line(C.ncdump(store, check=False), store, "a directory", "not a ZIP archive",
                        "#mode=nczarr,file", "zip -0 -r")
        url = line[line.index("'file://") + 1:line.index("#mode=nczarr,file'") + len("#mode=nczarr,file")]
        r = run(["ncdump", url])  # netCDF-C alone, as the message says
        check_equal(C.Cdl(r.stdout).data["elevation"], [0, 1, 2, 3, 4], "the way out: netCDF-C's file URL")
        # a directory that holds no Zarr
        plain = os.path.join(tmp, "plain.zip")
        os.mkdir(plain)
        one_line(C.ncdump(plain, check=False), plain, "a directory, not a ZIP archive", "zip the store")


if __name__ == "__main__":
    main([test_unlimited_dimension, test_newer_release_string_attributes_on_4_9_0, test_zip_without_zarr,
          test_not_a_zip, test_damaged_chunk_of_a_translated_array, test_directory])
