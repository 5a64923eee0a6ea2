"""The mmzip command at names holding '#', "#/", spaces and non-ASCII. Each subcommand reads its archive
name by the rule every route shares (mmzip_split_name, mmzip.h): a name that exists as written is that
file ("d#/x.zip" is never the member "x.zip" of an archive "d"); a name that means a member of another
archive, or is ambiguous (both readings exist), fails with exit status 1 and a message naming the reading(s),
before anything is opened or created. Bytes are read back with `mmzip cat` and Python's zipfile, and the
directory is listed before and after every command."""
import os
import subprocess
import zipfile

from hash_names import PLACES, assert_names_both, assert_only_added, assert_unchanged, tree
from mmzip_testlib import MMZIP, TempDir, check_equal, main, mmzip


def cat(archive, key):
    p = subprocess.run([MMZIP, "cat", archive, key], capture_output=True)
    check_equal(p.returncode, 0, "cat %s %s: exit status (%s)" % (archive, key, p.stderr))
    return p.stdout


def test_every_subcommand_at_each_place():
    with TempDir() as d:
        os.chdir(d)
        for i, (folder, name) in enumerate(PLACES):
            if folder:
                os.mkdir(folder)
            path = os.path.join(folder, name)
            data = os.urandom(1000 + i)
            with open("src.bin", "wb") as f:
                f.write(data)
            before = tree(d)
            mmzip("put", path, "k#/é", "src.bin")
            assert_only_added(before, tree(d), [path], "put %s" % path)
            check_equal(cat(path, "k#/é"), data, "cat %s" % path)
            with zipfile.ZipFile(path) as z:
                check_equal(z.read("k#/é"), data, "zipfile reading %s" % path)
            before = tree(d)
            assert "k#/é" in mmzip("ls", path).stdout
            assert "OK, 1 entry," in mmzip("check", path).stdout
            assert "entries:" in mmzip("info", path).stdout
            mmzip("recover", path)
            assert_unchanged(before, tree(d), "ls, check, info, recover of %s" % path)
            mmzip("pack", path)  # in place: the file shrinks, and nothing else appears
            assert_only_added(before, tree(d), [], "pack of %s" % path)
            check_equal(cat(path, "k#/é"), data, "cat %s after pack" % path)
            before = tree(d)
            packed = os.path.join(folder, "packed#%d.zip" % i)
            mmzip("pack", path, packed)
            assert_only_added(before, tree(d), [packed], "pack %s %s" % (path, packed))
            check_equal(cat(packed, "k#/é"), data, "cat of the packed copy")


def test_refusals():
    with TempDir() as d:
        os.chdir(d)
        with open("src.bin", "wb") as f:
            f.write(b"payload\n")
        mmzip("put", "a.zip", "m", "src.bin")
        before = tree(d)
        # A member of another archive: no subcommand takes one.
        for args in (["ls", "a.zip#/m"], ["cat", "a.zip#/m", "m"], ["check", "a.zip#/m"], ["info", "a.zip#/m"],
                     ["recover", "a.zip#/m"], ["pack", "a.zip#/m"], ["put", "a.zip#/m", "k", "src.bin"]):
            p = mmzip(*args, check=False)
            check_equal(p.returncode, 1, "exit status of mmzip %s" % " ".join(args))
            assert "names the member 'm' of the archive 'a.zip'" in p.stderr or (
                args[0] == "put" and "cannot be created" in p.stderr), p.stderr
        assert_unchanged(before, tree(d), "refused member names")
        # Ambiguous: a.zip is an archive and a.zip#/m a file (or, for put, a new file in "a.zip#").
        os.mkdir("a.zip#")
        with zipfile.ZipFile("a.zip#/m", "w") as z:  # by zipfile: for mmzip the name is already ambiguous
            z.writestr("inner", b"inner\n")
        before = tree(d)
        for args in (["ls", "a.zip#/m"], ["cat", "a.zip#/m", "inner"], ["check", "a.zip#/m"],
                     ["info", "a.zip#/m"], ["recover", "a.zip#/m"], ["pack", "a.zip#/m"],
                     ["put", "a.zip#/m", "k", "src.bin"], ["put", "a.zip#/new", "k", "src.bin"],
                     ["pack", "a.zip", "a.zip#/out"]):
            p = mmzip(*args, check=False)
            check_equal(p.returncode, 1, "exit status of mmzip %s" % " ".join(args))
            target = args[2] if args[0] == "pack" and len(args) == 3 else args[1]
            assert_names_both(p.stderr, target, "a.zip", target.split("#/")[1], "mmzip " + " ".join(args))
        assert_unchanged(before, tree(d), "ambiguous names")
        check_equal(cat("a.zip", "m"), b"payload\n", "a.zip untouched")


if __name__ == "__main__":
    main([test_every_subcommand_at_each_place, test_refusals])
