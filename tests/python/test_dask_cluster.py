"""Dask across processes: a dask.distributed LocalCluster of two worker processes reads an archive through
xr.open_zarr(mmzip.ZarrStore(...)) with dask chunks, and the reductions equal NumPy's. Then one other
process appends to the archive (a new variable, a longer time series, new attributes: one commit per
generation) while the workers keep reading, and every read in every worker must see one complete commit:
the generation named in the attributes, every variable of that generation with its values, and the series
exactly as long as that generation made it. Integer data, so every comparison is exact."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)
import subprocess  # noqa: E402

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
import zarr  # noqa: E402

import mmzip  # noqa: E402
from mmzip_testlib import PYTHON, TempDir, check_equal  # noqa: E402

NX, NY = 400, 300            # the big variable: 400 x 300 int64, chunks of 50 rows -> 8 dask tasks
SERIES = 1000                # the series grows by this much per generation
GENERATIONS = 8

APPENDER = r"""
import sys, numpy as np, xarray as xr, zarr, mmzip
path, generations, series = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with mmzip.ZarrStore(path, mode="a") as s:
    for g in range(1, generations + 1):
        xr.Dataset({"v%d" % g: ("x", np.full(64, g, dtype="i8"))}).to_zarr(s, mode="a")
        t = np.arange(series * g, series * (g + 1), dtype="i8")
        xr.Dataset({"series": ("time", t * 3)}, coords={"time": t}).to_zarr(s, append_dim="time")
        zarr.open_group(s).attrs["generation"] = g
        zarr.consolidate_metadata(s)
        s.flush()  # one commit per generation: readers see all of it or none of it
        print(g, flush=True)
        sys.stdin.readline()  # the test's go-ahead for the next generation, once it has read this one
"""


def expected_big():
    return (np.arange(NX * NY, dtype="i8").reshape(NX, NY) * 7) % 1000003


def make_archive(path):
    t = np.arange(SERIES, dtype="i8")
    ds = xr.Dataset({"big": (("y", "z"), expected_big()), "v0": ("x", np.zeros(64, "i8")),
                     "series": ("time", t * 3)}, coords={"time": t}, attrs={"generation": 0})
    with mmzip.ZarrStore(path, mode="w") as s:
        ds.to_zarr(s, encoding={"big": {"chunks": (50, NY)}, "series": {"chunks": (SERIES,)}})


def check_committed_state(path):
    """Runs in a worker: opens the archive itself and checks that what it sees is one complete commit."""
    s = mmzip.ZarrStore(path)
    try:
        ds = xr.open_zarr(s, chunks=None)
        g = int(ds.attrs["generation"])
        names = sorted(k for k in ds.data_vars if k.startswith("v"))
        want = sorted("v%d" % j for j in range(g + 1))
        if names != want:
            return ("torn", g, "variables %r, want %r" % (names, want))
        for j in range(g + 1):
            v = ds["v%d" % j].values
            if v.shape != (64,) or not (v == j).all():
                return ("torn", g, "v%d holds %r" % (j, v[:4]))
        t = ds["time"].values
        if len(t) != SERIES * (g + 1) or not np.array_equal(t, np.arange(SERIES * (g + 1))):
            return ("torn", g, "time has %d values, want %d" % (len(t), SERIES * (g + 1)))
        if not np.array_equal(ds["series"].values, t * 3):
            return ("torn", g, "series values")
        return ("ok", g, os.getpid())
    finally:
        s.close()


def main():
    from dask.distributed import Client, LocalCluster

    runtime = os.environ.get("MMZIP_ASAN_RUNTIME")
    if runtime:  # the worker processes load the instrumented library too
        os.environ["LD_PRELOAD"] = runtime
    with TempDir() as d:
        arc = os.path.join(d, "cluster.zarr.zip")
        make_archive(arc)
        t0 = time.time()
        with LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            pids = set(client.run(os.getpid).values())
            check_equal(len(pids), 2, "worker processes")
            assert os.getpid() not in pids
            print("cluster up in %.1f s, workers %r" % (time.time() - t0, sorted(pids)), flush=True)

            # 1. A reduction on the cluster equals NumPy's.
            store = mmzip.ZarrStore(arc)
            ds = xr.open_zarr(store, chunks={"y": 50})
            check_equal(ds["big"].data.npartitions, NX // 50, "dask tasks")
            want = expected_big()
            check_equal(int(ds["big"].sum().compute()), int(want.sum()), "sum on the cluster")
            np.testing.assert_array_equal(ds["big"].max(dim="z").compute().values, want.max(axis=1))
            np.testing.assert_array_equal(ds["big"].sum(dim="y").compute().values, want.sum(axis=0))
            # Which processes read the chunks: the tasks ran in the workers, not here.
            where = ds["big"].data.map_blocks(lambda b: np.full((1, 1), os.getpid()), chunks=(1, 1),
                                              dtype="i8").compute()
            readers = set(int(p) for p in where.ravel())
            assert readers <= pids, "chunks read outside the workers: %r" % readers
            print("reduction ok; chunks read by %d worker process(es)" % len(readers), flush=True)
            store.close()

            # 2. One process appends (one commit per generation) while the workers read. The appender and
            # the test go in step, so that what the reads can see does not depend on this machine's speed:
            # after commit g (the appender says g and waits), every read sees exactly generation g; after the
            # go-ahead, reads race the appender's next commit and see g or g + 1, never anything torn.
            appender = subprocess.Popen([PYTHON, "-c", APPENDER, arc, str(GENERATIONS), str(SERIES)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=dict(os.environ))
            seen, by_pid = set(), {}

            def round_of_reads(allowed):
                results = client.gather(client.map(check_committed_state, [arc] * 8, pure=False))
                for status, g, info in results:
                    assert status == "ok", "a worker saw a state that is not a complete commit: " \
                        "generation %d: %s" % (g, info)
                    assert g in allowed, "a worker saw generation %d, want one of %r" % (g, allowed)
                    seen.add(g)
                    by_pid.setdefault(info, set()).add(g)

            for g in range(1, GENERATIONS + 1):
                line = appender.stdout.readline()
                if line.strip() != str(g):
                    raise AssertionError("appender said %r for generation %d: %s" % (
                        line, g, appender.stderr.read()[-2000:]))
                round_of_reads({g})
                # The same through the client: open here, reduce on the workers (they reopen the pickled
                # store, at the newest commit; appends never change what the older metadata describes).
                with mmzip.ZarrStore(arc) as s:
                    cds = xr.open_zarr(s, chunks={"time": SERIES})
                    check_equal(int(cds.attrs["generation"]), g, "generation seen by the client")
                    n = SERIES * (g + 1)
                    check_equal(cds.sizes["time"], n, "length of the series at generation %d" % g)
                    check_equal(int(cds["series"].sum().compute()), 3 * n * (n - 1) // 2,
                                "sum of the series at generation %d" % g)
                    check_equal(int(cds["v%d" % g].sum().compute()), 64 * g, "sum of v%d" % g)
                    check_equal(int(cds["big"].sum().compute()), int(want.sum()), "big while appending")
                appender.stdin.write("go\n")
                appender.stdin.flush()
                if g < GENERATIONS:
                    round_of_reads({g, g + 1})
            out, err = appender.communicate(timeout=300)  # closes its stdin: the loop has ended
            check_equal(appender.returncode, 0, "appender exit status (stderr: %s)" % err[-2000:])
            check_equal(out.split(), [], "appender output after the last generation")
            # After the appender is done, every worker sees the last generation.
            final = client.gather(client.map(check_committed_state, [arc] * 4, pure=False))
            check_equal(sorted(set(r[1] for r in final)), [GENERATIONS], "final generation in the workers")
            assert all(r[0] == "ok" for r in final), final
            print("generations seen while appending: %s; per worker: %s" % (
                sorted(seen), {p: len(v) for p, v in by_pid.items()}), flush=True)
            check_equal(sorted(seen & set(range(1, GENERATIONS + 1))), list(range(1, GENERATIONS + 1)),
                        "generations the workers saw")
        print("total %.1f s" % (time.time() - t0))
        z = zarr.ZipStore(arc, mode="r")
        check_equal(int(zarr.open_group(z, mode="r").attrs["generation"]), GENERATIONS, "zarr's ZipStore")
        z.close()
    print("all passed")


if __name__ == "__main__":
    main()
