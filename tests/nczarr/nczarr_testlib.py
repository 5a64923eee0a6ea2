"""Shared pieces of the NCZarr plugin tests: sample datasets, the three archive kinds, URLs, and ncdump
comparisons against netCDF-C's own directory store."""
import difflib
import os
import sys
import zipfile


def _under_sanitizer_runtime():
    """In the ASan+UBSan build the plugin is instrumented and the tools (ncdump, python3) are not: run this
    test, and through the environment every program it starts, with the sanitizer runtime preloaded.
    `mmzip run` puts the plugins before it in LD_PRELOAD, hence verify_asan_link_order=0."""
    runtime = os.environ.get("MMZIP_ASAN_RUNTIME")
    if not runtime or runtime in os.environ.get("LD_PRELOAD", ""):
        return
    env = dict(os.environ)
    env["LD_PRELOAD"] = runtime
    env["ASAN_OPTIONS"] = ":".join(p for p in (env.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if p)
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


_under_sanitizer_runtime()

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from mmzip_testlib import PYTHON, mmzip_run, run  # noqa: E402

# The netCDF-C release of the tools on PATH (MMZIP_NETCDF_PREFIX's with tests/nczarr/run_with_netcdf.sh).
# In-process netCDF4-python and Debian's NCO keep Debian's 4.9.0 whatever the tools are.
TOOL_RELEASE = tuple(int(x) for x in run(["nc-config", "--version"]).stdout.split()[-1].split("-")[0].split(".")[:3])
DEBIAN_RELEASE = (4, 9, 0)
# Where the NCZarr superblock of a dataset the tools write is: 4.9.0 in the root .zgroup as
# _NCZARR_SUPERBLOCK, 4.9.3+ in the root .zattrs as _nczarr_superblock.
SUPERBLOCK = (".zattrs", b"_nczarr_superblock") if TOOL_RELEASE >= (4, 9, 3) else (".zgroup", b"_NCZARR_SUPERBLOCK")


def skip_in_process(what):
    """True (after saying so) when the tools are another release than Debian's 4.9.0, which in-process
    netCDF4-python and NCO use: `what` mixes the two and is skipped; every check with the tools still runs."""
    if TOOL_RELEASE == DEBIAN_RELEASE:
        return False
    print("SKIPPED (netCDF-C %s tools, Debian's 4.9.0 in-process): %s" % (".".join(map(str, TOOL_RELEASE)), what))
    return True


# The environment of a program that must start without any mmzip plugin preloaded (but with the sanitizer
# runtime in the sanitizer build).
NO_PLUGINS = {"LD_PRELOAD": os.environ.get("MMZIP_ASAN_RUNTIME", "")}

# A netCDF-4 dataset with what NCZarr 4.9.0 handles: groups two deep, several numeric types, multi-chunk
# variables with partial edge chunks, fill values, text, integer and float attributes. No scalar variable
# (ncdump 4.9.0 segfaults on NCZarr scalars) and no char variable (zarr-python cannot read NCZarr's 1-byte
# "<U1" form).
SAMPLE_CDL = r"""netcdf sample {
dimensions:
  time = 5 ;
  y = 4 ;
  x = 7 ;
variables:
  int time(time) ;
    time:units = "days since 2000-01-01" ;
    time:calendar = "standard" ;
  float temp(time, y, x) ;
    temp:long_name = "air temperature" ;
    temp:units = "K" ;
    temp:_FillValue = -999.f ;
    temp:valid_range = 150.f, 350.f ;
    temp:_ChunkSizes = 2, 3, 4 ;
  double lon(x) ;
    lon:units = "degrees_east" ;
  short flags(y, x) ;
    flags:_ChunkSizes = 4, 7 ;
// global attributes:
  :title = "mmzip NCZarr test sample" ;
  :version = 3 ;
  :scale = 0.5 ;
data:
  time = 0, 1, 2, 3, 4 ;
  temp = @TEMP@ ;
  lon = 0, 51.5, 103, 154.5, 206, 257.5, 309 ;
  flags = @FLAGS@ ;

group: surface {
  dimensions:
    station = 3 ;
  variables:
    double pressure(time, station) ;
      pressure:units = "hPa" ;
    ubyte quality(station) ;
  data:
    pressure = 1013.25, 1009.5, 1020, 1011, 1008.25, 1019.5, 1010, 1007, 1018.75, 1012.5, 1006, 1017,
      1014, 1005.5, 1016 ;
    quality = 1, 2, 255 ;

  group: deep {
    variables:
      int64 counter(x) ;
        counter:note = "nested two groups deep" ;
    data:
      counter = 1, 10, 100, 1000, 10000, 100000, 10000000000 ;
  } // group deep
} // group surface
}
"""


def sample_cdl():
    temp = ", ".join("%.2f" % (200 + 0.37 * i) for i in range(5 * 4 * 7))
    flags = ", ".join(str((i * 37) % 300 - 150) for i in range(4 * 7))
    return SAMPLE_CDL.replace("@TEMP@", temp).replace("@FLAGS@", flags)


def make_sample_nc(path):
    """Writes the sample as a netCDF-4 file with ncgen; returns path."""
    cdl = path + ".cdl"
    with open(cdl, "w") as f:
        f.write(sample_cdl())
    run(["ncgen", "-4", "-o", path, cdl])
    return path


def cdl_archive(directory, stem, cdl):
    """cdl made a netCDF-4 file by ncgen (directory/stem.nc), copied by `mmzip run nccopy` into the archive
    directory/stem.zarr.zip; returns (netCDF-4 path, archive path)."""
    cdl_path = os.path.join(directory, stem + ".cdl")
    with open(cdl_path, "w") as f:
        f.write(cdl)
    nc = os.path.join(directory, stem + ".nc")
    run(["ncgen", "-4", "-o", nc, cdl_path])
    archive = os.path.join(directory, stem + ".zarr.zip")
    mmzip_run("nccopy", nc, archive)
    return nc, archive


def sample_archive(directory, name="ours.zarr.zip"):
    """The sample as a netCDF-4 file in directory, and copied by `mmzip run nccopy` into the archive
    directory/name; returns (netCDF-4 path, archive path)."""
    nc = make_sample_nc(os.path.join(directory, "sample.nc"))
    archive = os.path.join(directory, name)
    mmzip_run("nccopy", nc, archive)
    return nc, archive


def dir_url(path, mode="nczarr"):
    """netCDF-C's own directory store for path."""
    return "file://%s#mode=%s,file" % (os.path.abspath(path), mode)


def zip_url(path, mode="nczarr"):
    return "file://%s#mode=%s,zip" % (os.path.abspath(path), mode)


def zip_directory(directory, archive):
    """`zip -r` of an NCZarr directory store, run from its parent: NCZarr's own layout (one top directory
    named after the store)."""
    parent, name = os.path.split(os.path.abspath(directory))
    run(["zip", "-q", "-r", os.path.abspath(archive), name], cwd=parent)
    return archive


def make_zarr_python(path, store_kind):
    """A zarr-python dataset with groups and int/float arrays, uncompressed, in a ZipStore ("zip") or a
    DirectoryStore ("dir"); the same content either way. Only "elevation" has a fill_value (-1.0): the
    compatibility view presents it as _FillValue, as xarray's Zarr reader does (netCDF-C alone does not)."""
    script = r"""
import sys, numpy as np, zarr
path, kind = sys.argv[1], sys.argv[2]
store = zarr.ZipStore(path, mode="w") if kind == "zip" else zarr.DirectoryStore(path)
root = zarr.group(store=store)
root.attrs["title"] = "zarr-python sample"
root.attrs["revision"] = 7
a = root.create_dataset("elevation", data=np.arange(35, dtype="<f8").reshape(5, 7) * 1.25 - 3,
                        chunks=(2, 3), compressor=None, fill_value=-1.0)
a.attrs["_ARRAY_DIMENSIONS"] = ["lat", "lon"]
a.attrs["units"] = "m"
c = root.create_dataset("counts", data=(np.arange(7, dtype="<i4") * 11 - 20), chunks=(4,), compressor=None,
                        fill_value=None)
c.attrs["_ARRAY_DIMENSIONS"] = ["lon"]
g = root.create_group("sensors")
g.attrs["site"] = "north"
t = g.create_dataset("temperature", data=np.linspace(-5, 5, 12, dtype="<f4").reshape(3, 4), chunks=(3, 2),
                     compressor=None, fill_value=None)
t.attrs["_ARRAY_DIMENSIONS"] = ["sample", "channel"]
t.attrs["scale"] = 0.5
h = g.create_group("raw")
b = h.create_dataset("bytes", data=np.arange(6, dtype="|u1") * 40, chunks=(6,), compressor=None, fill_value=None)
b.attrs["_ARRAY_DIMENSIONS"] = ["n"]
s = h.create_dataset("small", data=np.array([-3, -2, -1, 0, 1, 2], dtype="<i2"), chunks=(4,), compressor=None,
                     fill_value=None)
s.attrs["_ARRAY_DIMENSIONS"] = ["n"]
if kind == "zip":
    store.close()
"""
    run([PYTHON, "-c", script, path, store_kind])
    return path


def ncdump(target, *options, plugin=True, check=True):
    """ncdump output of target (a path or URL), under `mmzip run` unless plugin is False."""
    args = ["ncdump"] + list(options) + [target]
    return (mmzip_run(*args, check=check) if plugin else run(args, check=check)).stdout


def normalized(dump):
    """An ncdump text without its first line's dataset name ("netcdf NAME {")."""
    lines = dump.splitlines()
    if lines and lines[0].startswith("netcdf ") and lines[0].endswith("{"):
        lines[0] = "netcdf <name> {"
    return lines


def assert_same_dump(got, want, what):
    g, w = normalized(got), normalized(want)
    if g != w:
        diff = "\n".join(difflib.unified_diff(w, g, "directory store", "through mmzip", lineterm=""))
        raise AssertionError("%s: ncdump outputs differ:\n%s" % (what, diff))
    if len(g) < 5:
        raise AssertionError("%s: suspiciously short ncdump output:\n%s" % (what, got))


def ls_zip(archive):
    """{name: (header_offset, compress_size, CRC)} from Python's zipfile (independent of mmzip)."""
    with zipfile.ZipFile(archive) as z:
        return {i.filename: (i.header_offset, i.compress_size, i.CRC) for i in z.infolist()}


def zarr_read_all(archive, group=""):
    """{array path: (values as nested lists, attributes)} of every array under group, read by zarr-python."""
    script = r"""
import json, sys, zarr, numpy as np
store = zarr.ZipStore(sys.argv[1], mode="r")
root = zarr.open_group(store, mode="r", path=sys.argv[2])
out = {}
def visit(name, obj):
    if isinstance(obj, zarr.Array):
        out[name] = [np.asarray(obj[...]).tolist(), dict(obj.attrs)]
root.visititems(visit)
print(json.dumps(out))
"""
    import json
    return json.loads(run([PYTHON, "-c", script, archive, group]).stdout)


def netcdf_read_all(target, enable_plugin=False):
    """{variable path: (values as nested lists, attributes)} read with netCDF4-python."""
    script = r"""
import json, sys
if sys.argv[2] == "1":
    import mmzip
    mmzip.enable_netcdf()
import netCDF4, numpy as np
out = {}
def walk(g, prefix):
    for name, v in g.variables.items():
        v.set_auto_maskandscale(False)
        attrs = {k: (np.asarray(v.getncattr(k)).tolist()) for k in v.ncattrs()}
        out[prefix + name] = [np.asarray(v[...]).tolist(), attrs]
    for name, sub in g.groups.items():
        walk(sub, prefix + name + "/")
d = netCDF4.Dataset(sys.argv[1])
walk(d, "")
d.close()
print(json.dumps(out))
"""
    import json
    return json.loads(run([PYTHON, "-c", script, target, "1" if enable_plugin else "0"]).stdout)


def preload_only_nczarr():
    """LD_PRELOAD of this plugin alone (not the HDF5 driver), for tests of what it passes on. The sanitizer
    runtime, if any, comes first: with another library before it, some programs deadlock at exit (in
    libp11-kit's destructor, which libnetcdf pulls in through libcurl)."""
    lib = os.path.join(os.environ["MMZIP_LIBDIR"], "libmmzip_nczarr.so")
    return dict(LD_PRELOAD=":".join(p for p in (NO_PLUGINS["LD_PRELOAD"], lib) if p))


def tools_release_in_process_env():
    """The environment of a python3 whose netCDF4-python runs the tools' netCDF-C release with the plugin:
    Debian's module links libnetcdf.so.19, and the prefix's library (MMZIP_NETCDF_PREFIX, .so.22), preloaded
    after the plugin, takes its place. Without a prefix, Debian's 4.9.0 with the plugin preloaded."""
    from mmzip_testlib import LIBDIR
    import glob
    preload = [p for p in NO_PLUGINS["LD_PRELOAD"].split(":") if p]
    preload.append(os.path.join(LIBDIR, "libmmzip_nczarr.so"))
    prefix = os.environ.get("MMZIP_NETCDF_PREFIX", "")
    if prefix:
        libs = sorted(glob.glob(os.path.join(prefix, "lib", "libnetcdf.so.*")), key=len)
        assert libs, "no libnetcdf.so.* under %s/lib" % prefix
        preload.append(libs[0])
    return {"LD_PRELOAD": ":".join(preload)}
