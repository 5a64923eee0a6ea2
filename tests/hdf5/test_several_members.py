"""An archive named alone that holds several HDF5 members: h5ls, h5dump and ncdump under `mmzip run` fail
(non-zero) and the driver says why on stderr, once, as h5py does in its exception: the archive, that it holds
several HDF5 members, which (the first eight and how many more), and the syntax that names one. The way out it
shows works. A failed open of a member that is not there is named likewise; a successful open says nothing.
The archives are made by Python's zipfile, the members by h5py and ncgen."""
import os
import zipfile

import h5py
import numpy as np

from mmzip_testlib import (PYTHON, TempDir, check_equal, main, mmzip_run, run,
                           sanitizer_blocks_python_under_run)

import mmzip

PREFIX = "libmmzip_h5fd: "


def h5_bytes(d, name, values):
    path = os.path.join(d, name)
    with h5py.File(path, "w") as f:
        f["x"] = values
    with open(path, "rb") as f:
        return f.read()


def nc4_bytes(d):
    cdl = os.path.join(d, "c.cdl")
    with open(cdl, "w") as f:
        f.write("netcdf c {\ndimensions:\n\tn = 3 ;\nvariables:\n\tint v(n) ;\ndata:\n\n v = 7, 8, 9 ;\n}\n")
    nc = os.path.join(d, "c.nc")
    run(["ncgen", "-k", "nc4", "-o", nc, cdl])
    with open(nc, "rb") as f:
        return f.read()


def make_inputs(d):
    arc = os.path.join(d, "run.zip")
    with zipfile.ZipFile(arc, "w") as z:
        z.writestr("readme.txt", "not HDF5\n")
        z.writestr("a.h5", h5_bytes(d, "a.h5", np.arange(4, dtype="<i4")))
        z.writestr("b.h5", h5_bytes(d, "b.h5", np.arange(5, dtype="<i8") * 3))
        z.writestr("c.nc", nc4_bytes(d))
    many = os.path.join(d, "many.zip")
    member = h5_bytes(d, "m.h5", np.zeros(2))
    with zipfile.ZipFile(many, "w") as z:
        for i in range(12):
            z.writestr("grp/member-%02d.h5" % i, member)
    single = os.path.join(d, "single.zip")
    with zipfile.ZipFile(single, "w") as z:
        z.writestr("readme.txt", "not HDF5\n")
        z.writestr("only.h5", h5_bytes(d, "only.h5", np.arange(6, dtype="<i4")))
    return arc, many, single


RUN_MESSAGE = ("run.zip: the archive holds 3 HDF5 members ('a.h5', 'b.h5', 'c.nc'); name one, as in "
               "'run.zip#/a.h5'")


def driver_lines(stderr):
    return [line[len(PREFIX):] for line in stderr.splitlines() if line.startswith(PREFIX)]


def test_tools_name_the_way_out():
    with TempDir() as d:
        make_inputs(d)
        tools = {
            "h5ls": (["h5ls", "-r", "run.zip"], "run.zip: unable to open file"),
            "h5dump": (["h5dump", "run.zip"], 'h5dump error: unable to open file "run.zip"'),
            "ncdump": (["ncdump", "run.zip"], "ncdump: run.zip: NetCDF: Unknown file format"),
        }
        for tool, (cmd, own_line) in tools.items():
            p = mmzip_run(*cmd, check=False, cwd=d, timeout=120)
            assert p.returncode != 0, "%s exited 0 on an archive with several HDF5 members" % tool
            check_equal(driver_lines(p.stderr), [RUN_MESSAGE], "%s: the driver's message, once" % tool)
            check_equal(p.stderr.splitlines(), [PREFIX + RUN_MESSAGE, own_line], "%s: stderr" % tool)
            assert "x " not in p.stdout and "DATA" not in p.stdout, "%s printed data: %s" % (tool, p.stdout)
        # The way out, as the message shows it.
        p = mmzip_run("h5ls", "-r", "run.zip#/b.h5", cwd=d, timeout=120)
        check_equal((p.stdout.split(), p.stderr), (["/", "Group", "/x", "Dataset", "{5}"], ""), "h5ls of b.h5")
        p = mmzip_run("h5dump", "-d", "/x", "-y", "-w", "0", "run.zip#/a.h5", cwd=d, timeout=120)
        assert "0, 1, 2, 3" in p.stdout and p.stderr == "", p.stdout + p.stderr
        p = mmzip_run("ncdump", "run.zip#/c.nc", cwd=d, timeout=120)
        assert "v = 7, 8, 9 ;" in p.stdout and p.stderr == "", p.stdout + p.stderr


def test_many_members_and_other_failures():
    with TempDir() as d:
        make_inputs(d)
        p = mmzip_run("h5dump", "many.zip", check=False, cwd=d, timeout=120)
        assert p.returncode != 0
        first = ", ".join("'grp/member-%02d.h5'" % i for i in range(8))
        check_equal(driver_lines(p.stderr), ["many.zip: the archive holds 12 HDF5 members (%s, and 4 more); name "
                                             "one, as in 'many.zip#/grp/member-00.h5'" % first],
                    "twelve members: the first eight and a count")
        p = mmzip_run("h5ls", "run.zip#/nope.h5", check=False, cwd=d, timeout=120)
        assert p.returncode != 0
        check_equal(driver_lines(p.stderr), ["run.zip: the archive has no member 'nope.h5'"], "a missing member")
        # An archive with no HDF5 member at all: said so, once, beside the tool's own line.
        with zipfile.ZipFile(os.path.join(d, "none.zip"), "w") as z:
            z.writestr("notes.txt", "no HDF5 here")
        for cmd, own_line in ((["h5ls", "-r", "none.zip"], "none.zip: unable to open file"),
                              (["h5dump", "none.zip"], 'h5dump error: unable to open file "none.zip"')):
            p = mmzip_run(*cmd, check=False, cwd=d, timeout=120)
            assert p.returncode != 0
            check_equal(driver_lines(p.stderr), ["none.zip: the archive holds no HDF5 member (no stored member, nor "
                                                 "deflated member named *.h5/*.nc/..., starts with the HDF5 "
                                                 "signature)"], "%s of an archive with no HDF5 member" % cmd[0])
            assert own_line in p.stderr, p.stderr
        # Success says nothing of the driver's.
        p = mmzip_run("h5ls", "single.zip", cwd=d, timeout=120)
        check_equal((p.stdout.split(), p.stderr), (["x", "Dataset", "{6}"], ""), "h5ls of a single member")


def test_h5py_says_the_same():
    with TempDir() as d:
        arc, _, _ = make_inputs(d)
        mmzip.register_h5py()
        try:
            h5py.File(arc, "r", driver="mmzip")
            raise AssertionError("h5py opened an archive with several HDF5 members")
        except OSError as e:
            assert RUN_MESSAGE.replace("run.zip", arc) in str(e), str(e)
        if sanitizer_blocks_python_under_run("h5py under mmzip run"):
            return
        # Under `mmzip run` (the H5Fopen shim): the exception keeps the driver's message, which a failed open
        # once lost to the shim's own HDF5 calls ("Unspecified error in H5Fopen").
        code = ("import h5py\ntry:\n    h5py.File('run.zip', 'r')\nexcept OSError as e:\n    print(e)\n")
        p = mmzip_run(PYTHON, "-c", code, cwd=d, timeout=120)
        check_equal(p.stdout, "Unable to open file (%s)\n" % RUN_MESSAGE, "h5py's exception under mmzip run")


if __name__ == "__main__":
    main([test_tools_name_the_way_out, test_many_members_and_other_failures, test_h5py_says_the_same])
