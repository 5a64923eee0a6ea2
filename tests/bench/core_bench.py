"""Runs the core store benchmarks, each against its peer in the same run, and prints the ratios:

  open        an archive of 1M entries: mmzip vs libzip (zip_open) and Python zipfile     target >= 10x libzip
  random read 4 KiB entries: mmzip vs libzip zip_fread and pread of the same bytes         target >= 20x libzip
              (a working set far beyond the CPU caches, and one inside them; with the copy floor)
  sequential  one 1 GiB stored entry: mmzip vs memcpy bandwidth                            target >= 0.8x memcpy
  append      N = 10k, 100k, 1M small entries, batched (begin/commit) and with the amortized autocommit
              policy: the time per entry must stay flat; commit-each at small N for contrast

Results go to stdout (a table), to --json, and as a figure to --plot. No timing is asserted: the machine is
shared and noisy; the programs themselves verify the bytes they read. --smoke runs everything at toy sizes."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile

FULL = dict(append=(10_000, 100_000, 1_000_000), each=(1000, 2000, 4000, 8000), open_n=1_000_000, open_rep=5,
            zipfile_rep=3, read_n=100_000, read_cached_n=1000, reads=200_000, seq_mib=1024, seq_rep=3)
SMOKE = dict(append=(200, 2000), each=(100, 200), open_n=2000, open_rep=2, zipfile_rep=1, read_n=500,
             read_cached_n=100, reads=2000, seq_mib=8, seq_rep=1)
TARGETS = dict(open=10.0, read=20.0, seq=0.8)


def run_json(bindir, prog, *args):
    cmd = [os.path.join(bindir, prog)] + [str(a) for a in args]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout, p.stderr))
    return json.loads(p.stdout.strip().splitlines()[-1])


def time_zipfile_open(path, n, repeats):
    """Python zipfile's open + getinfo of one entry, best of repeats (the same work as the C peers)."""
    best = float("inf")
    for r in range(repeats):
        key = "e/%08d" % ((r * 7919) % n)
        t0 = time.perf_counter()
        with zipfile.ZipFile(path) as z:
            z.getinfo(key)
        best = min(best, time.perf_counter() - t0)
    return best


def bench_append(bindir, work, sizes):
    rows = []
    path = os.path.join(work, "append.zip")
    for mode, ns in (("batch", sizes["append"]), ("amortized", sizes["append"]), ("each", sizes["each"])):
        for n in ns:
            r = run_json(bindir, "core_bench_append", path, n, mode)
            rows.append(r)
            print("  append %-9s N=%-8d %8.3f s  %7.2f us/entry" % (mode, n, r["seconds"], r["us_per_entry"]),
                  flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", help="directory of the core_bench_* programs")
    ap.add_argument("--work", help="scratch directory for the archives (kept between runs)")
    ap.add_argument("--replot", metavar="JSON", help="only redraw --plot from the results of an earlier run")
    ap.add_argument("--smoke", action="store_true", help="toy sizes, for the test suite")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--plot", help="write a PNG figure here")
    args = ap.parse_args()
    if args.replot:
        with open(args.replot) as f:
            plot(json.load(f), args.plot)
        return 0
    if not args.bin or not args.work:
        ap.error("--bin and --work are required")
    sizes = SMOKE if args.smoke else FULL
    os.makedirs(args.work, exist_ok=True)
    results = {"machine": os.uname().nodename, "cpus": os.cpu_count(), "smoke": args.smoke}

    print("== batched appends (time per entry; flat means O(N) in total)", flush=True)
    results["append"] = bench_append(args.bin, args.work, sizes)

    print("== open an archive of %d entries + find one by name" % sizes["open_n"], flush=True)
    path = os.path.join(args.work, "open_%d.zip" % sizes["open_n"])
    r = run_json(args.bin, "core_bench_open", path, sizes["open_n"], sizes["open_rep"])
    r["zipfile_s"] = time_zipfile_open(path, sizes["open_n"], sizes["zipfile_rep"])
    r["zipfile_over_mmzip"] = r["zipfile_s"] / r["mmzip_s"]
    results["open"] = r
    print("  mmzip %.4f s   libzip %.4f s (%.1fx)   Python zipfile %.4f s (%.1fx)   target >= %gx libzip"
          % (r["mmzip_s"], r["libzip_s"], r["libzip_over_mmzip"], r["zipfile_s"], r["zipfile_over_mmzip"],
             TARGETS["open"]), flush=True)

    # Two working sets: 410 MB of entries, far larger than the caches, where every read waits for main
    # memory; and 4 MB, which stays in the CPU caches, where only the work of each reader counts. The copy
    # floor is a bare memcpy of the same bytes from addresses known in advance (no lookup, no call): libzip
    # over that floor is the most any reader that delivers the bytes can gain on libzip.
    for key, n in (("read", sizes["read_n"]), ("read_cached", sizes["read_cached_n"])):
        print("== random 4 KiB entry reads (%d entries, %.1f MB, %d reads)" % (n, n * 4096 / 1e6, sizes["reads"]),
              flush=True)
        path = os.path.join(args.work, "read_%d.zip" % n)
        r = run_json(args.bin, "core_bench_read", path, n, sizes["reads"])
        results[key] = r
        print("  mmzip_read cold %.2f us (libzip %.1fx)  warm %.2f us (libzip %.1fx, pread %.2fx)  mmzip_get %.2f us  "
              "libzip %.2f us  pread %.2f us  target >= %gx libzip"
              % (r["mmzip_cold_us"], r["libzip_over_mmzip_cold"], r["mmzip_read_us"], r["libzip_over_mmzip_read"],
                 r["pread_over_mmzip_read"], r["mmzip_get_us"], r["libzip_us"], r["pread_us"], TARGETS["read"]))
        print("  copy floor %.2f us: no reader that delivers the bytes can beat libzip by more than %.1fx here"
              % (r["copy_floor_us"], r["libzip_over_copy_floor"]), flush=True)

    print("== sequential read of a %d MiB stored entry" % sizes["seq_mib"], flush=True)
    path = os.path.join(args.work, "seq_%d.zip" % sizes["seq_mib"])
    r = run_json(args.bin, "core_bench_seq", path, sizes["seq_mib"], sizes["seq_rep"])
    results["seq"] = r
    print("  memcpy %.2f GB/s  mmzip cold %.2f GB/s (%.2fx)  warm %.2f GB/s (%.2fx)  pread %.2f GB/s  target >= %gx"
          % (r["memcpy_gbs"], r["mmzip_cold_gbs"], r["mmzip_cold_over_memcpy"], r["mmzip_warm_gbs"],
             r["mmzip_warm_over_memcpy"], r["pread_gbs"], TARGETS["seq"]), flush=True)

    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.plot:
        plot(results, args.plot)
        print("figure written to", args.plot)
    if args.smoke:
        shutil.rmtree(args.work, ignore_errors=True)


def plot(results, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(2, 2, figsize=(11, 8))
    a = ax[0][0]
    for mode, style in (("batch", "o-"), ("amortized", "s-"), ("each", "^--")):
        pts = [(r["entries"], r["us_per_entry"]) for r in results["append"] if r["mode"] == mode]
        a.plot([p[0] for p in pts], [p[1] for p in pts], style, label=mode)
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("entries appended (N)")
    a.set_ylabel("µs per entry")
    a.set_title("Appends: time per entry")
    a.legend()
    o = results["open"]
    a = ax[0][1]
    a.bar(["mmzip", "libzip", "zipfile"], [o["mmzip_s"], o["libzip_s"], o["zipfile_s"]], color=["C0", "C1", "C2"])
    a.set_yscale("log")
    a.set_ylabel("seconds")
    a.set_title("Open %d entries + find one" % o["entries"])
    r = results["read"]
    a = ax[1][0]
    a.bar(["mmzip_read\ncold", "mmzip_read\nwarm", "mmzip_get\nwarm", "libzip", "pread"],
          [r["mmzip_cold_us"], r["mmzip_read_us"], r["mmzip_get_us"], r["libzip_us"], r["pread_us"]],
          color=["C0", "C0", "C0", "C1", "C3"])
    a.tick_params(axis="x", labelsize=8)
    a.set_ylabel("µs per 4 KiB entry")
    a.set_title("Random entry reads")
    s = results["seq"]
    a = ax[1][1]
    a.tick_params(axis="x", labelsize=8)
    a.bar(["memcpy", "mmzip cold", "mmzip warm", "pread"], [s["memcpy_gbs"], s["mmzip_cold_gbs"], s["mmzip_warm_gbs"],
                                                             s["pread_gbs"]], color=["C4", "C0", "C0", "C3"])
    a.set_ylabel("GB/s")
    a.set_title("Sequential read of a %d MiB entry" % s["mib"])
    fig.suptitle("mmzip core store against its peers (same machine, same run)")
    fig.tight_layout()
    fig.savefig(out, dpi=90)


if __name__ == "__main__":
    sys.exit(main())
