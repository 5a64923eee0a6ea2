"""Issue 23, point 4: an archive written through the plugin, read by netCDF-C's own zip backend (a netCDF-C
built with libzip, run WITHOUT the plugin), reads correctly or is refused; never a wrong dataset with exit 0.

netCDF-C's zip backend (libnczarr/zmap_zip.c) takes the first segment of the name of the archive's first
entry for the dataset's directory. The plugin writes the dataset at the archive's root (as zarr-python's
ZipStore does); an archive that began with a chunk "time/0" was read as the dataset "time": no variables,
the array's attributes as global ones, exit 0. The plugin now reserves the first entry for the root .zgroup
(filled when the session publishes, so that later changes to it keep the place), and that backend refuses
the archive. Run on the tools' release (Debian's 4.9.0 has no zip backend: it refuses every archive,
which is checked too; 4.9.3 / 4.10.1 built with libzip through tests/nczarr/run_with_netcdf.sh):
  - `mmzip run nccopy` of the sample, and a dataset created by netCDF4-python (running the tools'
    libnetcdf) that adds a variable and a global attribute after writing data: the first entry is a root-level
    name, and the tools' ncdump without the plugin either fails or prints exactly what it prints through the
    plugin;
  - the other way round, an archive netCDF-C's backend wrote reads through the plugin as through that backend.
"""
import os
import zipfile

from mmzip_testlib import PYTHON, TempDir, check_equal, main, mmzip_run, run
from nczarr_testlib import (NO_PLUGINS, TOOL_RELEASE, make_sample_nc, ncdump, normalized,
                            tools_release_in_process_env, zip_url)

CREATE = r"""
import sys
import netCDF4, numpy as np
d = netCDF4.Dataset(sys.argv[1], "w")
d.createDimension("x", 4)
d.title = "first"
a = d.createVariable("a", "i4", ("x",))
a[:] = [1, 2, 3, 4]
b = d.createVariable("b", "f8", ("x",))  # a redefinition after data: the root listing changes
b[:] = [0.5, 1.5, 2.5, 3.5]
d.history = "set after the data"
d.close()
"""


def first_entry(archive):
    with zipfile.ZipFile(archive) as z:
        return z.infolist()[0].filename


def check_read_or_refused(archive, what):
    first = first_entry(archive)
    assert "/" not in first, "%s: first entry %r is in a directory: netCDF-C's zip backend takes it for the dataset" % (
        what, first)
    ours = ncdump(archive)
    foreign = run(["ncdump", zip_url(archive)], env=NO_PLUGINS, check=False)
    if foreign.returncode == 0:
        check_equal(normalized(foreign.stdout), normalized(ours), "%s: netCDF-C's own zip backend against the plugin" % what)
        print("%s: read by netCDF-C's own zip backend as through the plugin" % what)
    else:
        assert foreign.stderr.strip(), "%s: the backend failed without a message" % what
        print("%s: refused by netCDF-C %s's own zip backend: %s" % (what, ".".join(map(str, TOOL_RELEASE)),
                                                                       foreign.stderr.strip().splitlines()[-1]))


def test_plugin_archives_through_netcdf_zip_backend():
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        archive = os.path.join(d, "copied.zarr.zip")
        mmzip_run("nccopy", nc, archive)
        check_read_or_refused(archive, "nccopy through the plugin")
        created = os.path.join(d, "created.zarr.zip")
        run([PYTHON, "-c", CREATE, created], env=tools_release_in_process_env())
        # 4.9.0 rewrites the root .zgroup (its variable list) after the data: it still comes first.
        check_read_or_refused(created, "netCDF4-python create with a redefinition")
        check_equal(ncdump(created, "-v", "a,b").split("data:")[1].split(), "a = 1, 2, 3, 4 ; b = 0.5, 1.5, 2.5, 3.5 ; }".split(),
                    "the created dataset's values through the plugin")


def test_netcdf_zip_backend_archives_through_plugin():
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        own = os.path.join(d, "own.zip")
        p = run(["nccopy", nc, zip_url(own)], env=NO_PLUGINS, check=False)
        if p.returncode != 0:
            print("netCDF-C %s has no zip backend: %s" % (".".join(map(str, TOOL_RELEASE)), p.stderr.strip()))
            assert not os.path.exists(own) or os.path.getsize(own) == 0
            return
        check_equal(normalized(ncdump(own)), normalized(run(["ncdump", zip_url(own)], env=NO_PLUGINS).stdout),
                    "netCDF-C's own zip archive through the plugin against its own backend")


if __name__ == "__main__":
    main([test_plugin_archives_through_netcdf_zip_backend, test_netcdf_zip_backend_archives_through_plugin])
