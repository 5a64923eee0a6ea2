"""Issue point 2: archives that mmzip did not write. A stored HDF5 member at an unaligned offset (Python
zipfile, Info-ZIP zip, 7-Zip) reads through the driver; a deflated member reads (decoded once, read-only)
and every attempt to write it fails with a clear error and leaves the archive byte for byte unchanged."""
import hashlib
import os
import shutil
import subprocess
import zipfile

import h5py

from mmzip_testlib import TempDir, check_equal, main, run, zip_tools_ok
from h5zip_testlib import check_sample, entry_table, write_sample

MEMBER = "deep/dir/sample.h5"


def sample_file(d, seed):
    path = os.path.join(d, "sample-%d.h5" % seed)
    with h5py.File(path, "w") as f:
        write_sample(f, seed)
    return path


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_reads(archive, seed, member=MEMBER):
    with h5py.File(archive, "r", driver="mmzip", member=member) as f:
        check_sample(f, seed, "%s: " % os.path.basename(archive))
    with h5py.File(archive + "#/" + member, "r", driver="mmzip") as f:
        check_sample(f, seed, "%s#/: " % os.path.basename(archive))


def test_zipfile_stored_unaligned():
    with TempDir() as d:
        h5 = sample_file(d, 11)
        arc = os.path.join(d, "pyzip.zip")
        with zipfile.ZipFile(arc, "w", compression=zipfile.ZIP_STORED) as z:
            z.writestr("odd.bin", b"x" * 36)  # puts the member at an odd offset (121)
            z.write(h5, MEMBER)
        off = entry_table(arc)[MEMBER][0]
        if off % 2 == 0:
            raise AssertionError("the member is at an even offset (%d); the test wants an unaligned one" % off)
        check_reads(arc, 11)
        # The only HDF5 member: opens without a name, too.
        with h5py.File(arc, "r", driver="mmzip") as f:
            check_sample(f, 11, "unnamed: ")
        # Plain HDF5 (sec2) cannot see a member at an offset that is not 0, 512, 1024, ...
        try:
            h5py.File(arc, "r").close()
            raise AssertionError("sec2 opened an unaligned member; the test proves nothing")
        except OSError:
            pass


def test_info_zip_and_7zip_stored():
    with TempDir() as d:
        h5 = sample_file(d, 12)
        os.makedirs(os.path.join(d, "deep/dir"))
        shutil.copy(h5, os.path.join(d, MEMBER))
        with open(os.path.join(d, "readme.txt"), "w") as f:
            f.write("first entry\n" * 3)
        infozip = os.path.join(d, "infozip.zip")
        run(["zip", "-q", "-0", "-X", infozip, "readme.txt", MEMBER], cwd=d)
        check_reads(infozip, 12)
        if shutil.which("7z"):
            sevenzip = os.path.join(d, "7z.zip")
            run(["7z", "a", "-tzip", "-mx=0", "-bd", sevenzip, "readme.txt", MEMBER], cwd=d)
            check_reads(sevenzip, 12)
        else:
            raise AssertionError("7z is not installed (p7zip-full is a test dependency)")


def test_deflated_member_reads_and_refuses_writes():
    with TempDir() as d:
        h5 = sample_file(d, 13)
        arc = os.path.join(d, "deflated.zip")
        with zipfile.ZipFile(arc, "w", compression=zipfile.ZIP_DEFLATED) as z:
            z.writestr("notes.txt", "compressed too\n" * 20)
            z.write(h5, MEMBER)
        check_equal(entry_table(arc)[MEMBER][2], zipfile.ZIP_DEFLATED, "member method")
        check_reads(arc, 13)
        with h5py.File(arc, "r", driver="mmzip") as f:
            check_sample(f, 13, "unnamed deflated: ")
        before = digest(arc)
        refusals = [("r+", OSError, "is compressed (method 8)"),
                    ("a", FileExistsError, "already exists (it is compressed"),
                    ("w-", FileExistsError, "already exists")]
        for mode, exc, text in refusals:
            try:
                h5py.File(arc, mode, driver="mmzip", member=MEMBER).close()
                raise AssertionError("mode %s on a deflated member succeeded" % mode)
            except exc as e:
                if text not in str(e):
                    raise AssertionError("mode %s: error %r does not say %r" % (mode, str(e), text))
        check_equal(digest(arc), before, "archive bytes after the refused writes")
        zip_tools_ok(arc)
        # Mode w replaces the member with a new, stored version: the one write a deflated member allows.
        with h5py.File(arc, "w", driver="mmzip", member=MEMBER) as f:
            write_sample(f, 14)
        check_equal(entry_table(arc)[MEMBER][2], zipfile.ZIP_STORED, "method after mode w")
        check_reads(arc, 14)
        zip_tools_ok(arc)


def test_netcdf4_member_from_ncgen():
    """A netCDF-4 file is an HDF5 file: one written by ncgen and zipped by Python reads through h5py."""
    with TempDir() as d:
        cdl = os.path.join(d, "t.cdl")
        with open(cdl, "w") as f:
            f.write("netcdf t {\ndimensions:\n  x = 5 ;\nvariables:\n  double v(x) ;\n    v:units = \"m\" ;\n"
                    "data:\n  v = 0.5, 1.5, 2.5, 3.5, 4.5 ;\n}\n")
        nc = os.path.join(d, "t.nc")
        run(["ncgen", "-k", "nc4", "-o", nc, cdl])
        arc = os.path.join(d, "nc.zip")
        with zipfile.ZipFile(arc, "w") as z:
            z.writestr("a.txt", "a")
            z.write(nc, "t.nc")
        with h5py.File(arc, "r", driver="mmzip") as f:
            check_equal(f["v"][:].tolist(), [0.5, 1.5, 2.5, 3.5, 4.5], "netCDF-4 variable via h5py")
            check_equal(f["v"].attrs["units"], b"m", "netCDF-4 attribute via h5py")


if __name__ == "__main__":
    main([test_zipfile_stored_unaligned, test_info_zip_and_7zip_stored, test_deflated_member_reads_and_refuses_writes,
          test_netcdf4_member_from_ncgen])
