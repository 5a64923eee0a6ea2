"""Writes the seed corpus of the fuzz target into tests/fuzz/corpus/: small archives from every writer the
interop tests cover (mmzip, Python zipfile, Info-ZIP, 7-Zip), torn and padded copies of mmzip archives as a
killed writer leaves them, and the hostile archives of tests/interop. Run it by hand when the corpus needs
new seeds (needs a build: MMZIP_BIN, MMZIP_BUILD_DIR and PYTHONPATH as CTest sets them); crashers found by
the fuzzer are added beside the seeds as regress_*.zip, and inputs the fuzzer found that reach new code (a
`-merge=1 -use_counters=0` of its working corpus into this one) as found_<sha1>."""
import io
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "interop"))
import test_hostile_archives  # noqa: E402

MMZIP = os.environ.get("MMZIP_BIN", "mmzip")
OUT = os.path.join(HERE, "corpus")


def save(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def mmzip_archives(d):
    a = os.path.join(d, "m.zip")
    for key, data in (("x/.zarray", b'{"chunks":[4]}'), ("x/0", bytes(range(16))), ("y", b"why")):
        subprocess.run([MMZIP, "put", a, key, "-"], input=data, check=True)
    full = open(a, "rb").read()
    save("mmzip_three_entries.zip", full)
    subprocess.run([MMZIP, "put", a, "y", "-"], input=b"replaced", check=True)
    save("mmzip_replaced_entry.zip", open(a, "rb").read())
    b = os.path.join(d, "b.zip")
    subprocess.run([MMZIP, "put", "--align", "1", b, "k", "-"], input=b"unaligned", check=True)
    save("mmzip_align1.zip", open(b, "rb").read())
    # What a killed writer leaves: a tail cut anywhere, or zeros where the trailer was to go.
    for cut in (1, 22, 42, 98, 150):
        save("mmzip_torn_minus%d.zip" % cut, full[:-cut])
    save("mmzip_zeros_at_eof.zip", full + bytes(512))
    save("mmzip_torn_directory.zip", full[:len(full) - 120] + bytes(120))


def put(z, name, data, comp):
    """writestr with a fixed time stamp, so that the seeds come out byte-identical on every run."""
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = comp
    z.writestr(info, data)


def zipfile_archives():
    text = b"".join(b"%d\n" % i for i in range(300))
    for comp, label in ((zipfile.ZIP_STORED, "stored"), (zipfile.ZIP_DEFLATED, "deflated")):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", comp) as z:
            put(z, "a.txt", text, comp)
            put(z, "dir/", b"", comp)
            put(z, "b.bin", bytes(range(256)), comp)
            z.comment = b"comment"
        save("zipfile_%s.zip" % label, buf.getvalue())
        save("zipfile_%s_prepended.zip" % label, b"#!stub\n" * 9 + buf.getvalue())

        class Unseekable(io.RawIOBase):
            def writable(self):
                return True

            def write(self, b):
                return raw.write(b)

            def seekable(self):
                return False

        raw = io.BytesIO()
        with zipfile.ZipFile(Unseekable(), "w", comp) as z:
            put(z, "s.txt", text, comp)
        save("zipfile_%s_streamed.zip" % label, raw.getvalue())
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", comp) as z:
            info = zipfile.ZipInfo("z64.txt", date_time=(2020, 1, 1, 0, 0, 0))
            info.compress_type = comp
            with z.open(info, "w", force_zip64=True) as f:
                f.write(text)
        save("zipfile_%s_zip64.zip" % label, buf.getvalue())


def tool_archives(d):
    src = os.path.join(d, "n.txt")
    with open(src, "wb") as f:
        f.write(b"".join(b"%d\n" % i for i in range(400)))
    os.utime(src, (1_600_000_000, 1_600_000_000))
    for name, cmd in (("infozip_deflated.zip", ["zip", "-q", "-X", "-9"]), ("7z_bzip2.zip", ["7z", "a", "-tzip", "-mm=BZip2"]),
                      ("7z_zipcrypto.zip", ["7z", "a", "-tzip", "-pK"])):
        out = os.path.join(d, name)
        subprocess.run(cmd + [out, "n.txt"], cwd=d, check=True, capture_output=True)
        save(name, open(out, "rb").read())


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as d:
        mmzip_archives(d)
        tool_archives(d)
    zipfile_archives()
    test_hostile_archives.write_corpus(OUT)
    print("seeds written to", OUT)
