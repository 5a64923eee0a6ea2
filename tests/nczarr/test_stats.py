"""MMZIP_NCZARR_STATS: the plugin's account of the time netCDF-C spends inside the storage map (stats.h),
which the nccopy benchmark uses to separate the store's share from netCDF-C's own.
  - creating with nccopy: one line for the archive, counting at least every chunk written;
  - reading with ncdump: at least every chunk's bytes read, nothing written;
  - the parts add up to the total, and the total fits inside the program's run time;
  - without the variable (or with 0) nothing is printed, and what the tool prints is the same."""
import os
import time

from mmzip_testlib import TempDir, check_equal, ls_entries, main, mmzip_run
from nczarr_testlib import make_sample_nc

PARTS = ("open_s", "read_s", "write_s", "probe_s", "close_s")


def stats_lines(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("mmzip_nczarr stats: ")]
    return [dict(kv.split("=", 1) for kv in l.split(": ", 1)[1].split()) for l in lines]


def timed(*args, env):
    t0 = time.perf_counter()
    p = mmzip_run(*args, env=env)
    return p, time.perf_counter() - t0


def check_sums(s, wall, what):
    parts = sum(float(s[k]) for k in PARTS)
    assert all(float(s[k]) >= 0 for k in PARTS), (what, s)
    assert abs(parts - float(s["store_s"])) < 1e-5, (what, parts, s)
    assert 0 < float(s["store_s"]) < wall, (what, wall, s)


def chunk_entries(archive):
    return {n: e for n, e in ls_entries(archive).items() if not os.path.basename(n).startswith(".")}


def test_create_and_read():
    with TempDir() as d:
        nc = make_sample_nc(os.path.join(d, "sample.nc"))
        archive = os.path.join(d, "a.zarr.zip")
        on = dict(os.environ, MMZIP_NCZARR_STATS="1")
        p, wall = timed("nccopy", nc, archive, env=on)
        lines = stats_lines(p.stderr)
        assert len(lines) == 1, p.stderr
        s = lines[0]
        check_equal(s["archive"], os.path.abspath(archive), "archive named in the stats line")
        chunks = chunk_entries(archive)
        assert chunks, ls_entries(archive)
        assert int(s["write_calls"]) >= len(chunks), (s, sorted(chunks))
        assert int(s["write_bytes"]) >= sum(e["size"] for e in chunks.values()), (s, chunks)
        check_sums(s, wall, "nccopy")

        p, wall = timed("ncdump", archive, env=on)
        lines = stats_lines(p.stderr)
        assert len(lines) == 1, p.stderr
        s = lines[0]
        assert int(s["read_calls"]) >= len(chunks), s
        assert int(s["read_bytes"]) >= sum(e["size"] for e in chunks.values()), s
        check_equal((s["write_calls"], s["write_bytes"]), ("0", "0"), "an ncdump writes nothing")
        check_sums(s, wall, "ncdump")
        dump_with_stats = p.stdout

        off = dict(os.environ)
        off.pop("MMZIP_NCZARR_STATS", None)
        for env in (off, dict(off, MMZIP_NCZARR_STATS="0")):
            q = mmzip_run("ncdump", archive, env=env)
            assert "mmzip_nczarr stats" not in q.stderr, q.stderr
            check_equal(q.stdout, dump_with_stats, "ncdump output with and without stats")


if __name__ == "__main__":
    main([test_create_and_read])
