"""netCDF / NCZarr benchmark: the mmzip storage map against netCDF-C's built-in NCZarr directory store,
in the same run, on the same netCDF-4 input (at least 500 MB), with the same unmodified tools:

  write   nccopy in.nc out.zarr.zip                  (mmzip run)  vs  nccopy in.nc 'file://out.zarr#mode=nczarr,file'
  read    nccopy_reader out.zarr.zip                 (a C program reading every variable with nc_get_vara)
  copy    nccopy out.zarr.zip back.nc                (a full read, written out as netCDF-4)

Two inputs of the same size: one with 64 KiB chunks (many objects; typical of NCZarr's defaults for
small variables) and one with 4 MiB chunks (few, large objects). Each measurement is the median of
--repeat runs, the two stores alternating; page caches are warm (the machine is shared: caches are not
dropped). The ratio is mmzip time / directory-store time; the issue's target is <= 0.8 for writing and
reading. No timing is asserted; the programs' outputs are compared (the readers' checksums must be equal,
nccopy's round trip must give the input's values) so that a fast wrong answer cannot pass.

Each mmzip operation also runs once with MMZIP_NCZARR_STATS=1: the plugin reports the time spent inside the
storage map, and the rest of that run, netCDF-C's own work, over the directory store's time is the ratio a
store that took no time at all would reach (the "zero-time" column): the best any store could do.

--smoke runs everything at toy size, once."""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

MIB = 1 << 20
PYTHON = os.environ.get("MMZIP_PYTHON", "/usr/bin/python3")

MAKE_INPUT = r"""
import sys, numpy as np, netCDF4
path, planes, chunk_t, chunk_yx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
d = netCDF4.Dataset(path, "w")
d.createDimension("t", planes)
d.createDimension("y", 512)
d.createDimension("x", 512)
v = d.createVariable("field", "f4", ("t", "y", "x"), chunksizes=(chunk_t, chunk_yx, chunk_yx))
v.units = "K"
base = np.sin(np.arange(512 * 512, dtype="f4").reshape(512, 512) * 0.001)
step = 16
for t in range(0, planes, step):
    n = min(step, planes - t)
    v[t:t + n] = base[None, :, :] + np.arange(t, t + n, dtype="f4")[:, None, None]
d.close()
"""

LAYOUTS = [
    # name, chunk along t, chunk along y and x: (1, 128, 128) float32 = 64 KiB; (4, 512, 512) = 4 MiB
    ("64 KiB chunks", 1, 128),
    ("4 MiB chunks", 4, 512),
]


def run(cmd, env=None):
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    if env:
        e.update(env)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    elapsed = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    return elapsed, p.stdout


def store_seconds(cmd):
    """Runs cmd once with MMZIP_NCZARR_STATS=1. Returns its run time and what the plugin's stats lines on
    stderr sum to: the seconds spent inside the storage map (open, reads, writes, probes, close with its
    commit) and the page faults taken there."""
    e = dict(os.environ)
    e.pop("LD_PRELOAD", None)
    e["MMZIP_NCZARR_STATS"] = "1"
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=e)
    elapsed = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit("failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd), p.stdout, p.stderr))
    lines = [l for l in p.stderr.splitlines() if l.startswith("mmzip_nczarr stats: ")]
    if not lines:
        raise SystemExit("no stats line from the plugin: %s\n%s" % (" ".join(cmd), p.stderr))
    fields = [dict(kv.split("=", 1) for kv in l.split(": ", 1)[1].split()) for l in lines]
    return dict(run_s=elapsed, store_s=sum(float(f["store_s"]) for f in fields),
                faults=sum(int(f["read_faults"]) + int(f["write_faults"]) for f in fields))


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


class Bench:
    def __init__(self, args):
        self.mmzip = args.mmzip
        self.reader = args.reader
        self.work = args.work
        self.repeat = args.repeat

    def dir_url(self, path):
        return "file://%s#mode=nczarr,file" % path

    def measure(self, layout, input_nc):
        zip_path = os.path.join(self.work, "out.zarr.zip")
        dir_path = os.path.join(self.work, "out.zarr")
        times = {k: [] for k in ("write_zip", "write_dir", "read_zip", "read_dir", "copy_zip", "copy_dir")}
        sums = set()
        for r in range(self.repeat):
            order = ("zip", "dir") if r % 2 == 0 else ("dir", "zip")
            for store in order:
                if store == "zip":
                    remove(zip_path)
                    times["write_zip"].append(run([self.mmzip, "run", "nccopy", input_nc, zip_path])[0])
                else:
                    remove(dir_path)
                    times["write_dir"].append(run(["nccopy", input_nc, self.dir_url(dir_path)])[0])
            for store in order:
                if store == "zip":
                    t, out = run([self.mmzip, "run", self.reader, zip_path])
                else:
                    t, out = run([self.reader, self.dir_url(dir_path)])
                times["read_" + store].append(t)
                sums.add(json.loads(out)["checksum"])
            for store in order:
                back = os.path.join(self.work, "back_%s.nc" % store)
                remove(back)
                if store == "zip":
                    times["copy_zip"].append(run([self.mmzip, "run", "nccopy", zip_path, back])[0])
                else:
                    times["copy_dir"].append(run(["nccopy", self.dir_url(dir_path), back])[0])
        # Where the time goes: one more run of each, with the plugin timing its own calls. What is left,
        # netCDF-C's own work, is the same whatever the store; a store that took no time at all would get
        # the ratio (run - store) / directory store.
        remove(zip_path)
        share = {"write": store_seconds([self.mmzip, "run", "nccopy", input_nc, zip_path]),
                 "read": store_seconds([self.mmzip, "run", self.reader, zip_path])}
        back = os.path.join(self.work, "back_zip.nc")
        remove(back)
        share["copy"] = store_seconds([self.mmzip, "run", "nccopy", zip_path, back])
        if len(sums) != 1:
            raise SystemExit("%s: the two stores returned different data (checksums %s)" % (layout, sorted(sums)))
        # The round trip gives the input back, value for value.
        _, want = run([self.reader, input_nc])
        _, got = run([self.reader, os.path.join(self.work, "back_zip.nc")])
        if json.loads(want)["checksum"] != json.loads(got)["checksum"]:
            raise SystemExit("%s: nccopy out.zarr.zip back.nc did not give the input's values" % layout)
        med = {k: statistics.median(v) for k, v in times.items()}
        entries = int(subprocess.run([self.mmzip, "info", zip_path], capture_output=True, text=True)
                      .stdout.split("entries:")[1].split()[0])
        files = sum(len(f) for _, _, f in os.walk(dir_path))
        for p in (zip_path, dir_path, os.path.join(self.work, "back_zip.nc"), os.path.join(self.work, "back_dir.nc")):
            remove(p)
        for op, sh in share.items():
            sh["bound"] = (sh["run_s"] - sh["store_s"]) / med[op + "_dir"]
        return dict(layout=layout, seconds=med, runs=times, objects_zip=entries, objects_dir=files, store=share,
                    ratios={op: med[op + "_zip"] / med[op + "_dir"] for op in ("write", "read", "copy")})


def plot(results, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ops = ["write", "read", "copy"]
    labels = {"write": "nccopy nc -> store", "read": "full read (C reader)", "copy": "nccopy store -> nc"}
    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    width = 0.8 / len(results)
    for i, r in enumerate(results):
        xs = [k + i * width for k in range(len(ops))]
        ys = [r["ratios"][op] for op in ops]
        ax.bar(xs, ys, width, label=r["layout"])
        for x, y in zip(xs, ys):
            ax.text(x, y + 0.02, "%.2f" % y, ha="center", va="bottom", fontsize=8)
    ax.axhline(1.0, color="gray", linewidth=0.8)
    ax.set_ylim(0, max(max(r["ratios"].values()) for r in results) * 1.15 + 0.05)
    ax.axhline(0.8, color="tab:red", linewidth=0.8, linestyle="--", label="target 0.8")
    ax.set_xticks([k + width * (len(results) - 1) / 2 for k in range(len(ops))])
    ax.set_xticklabels([labels[o] for o in ops])
    ax.set_ylabel("time, mmzip / directory store")
    ax.set_title("netCDF-C 4.9.0 NCZarr: .zarr.zip through mmzip vs directory store (lower is better)")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="scratch directory (needs about 3x --size-mib of disk)")
    ap.add_argument("--mmzip", required=True, help="the mmzip program")
    ap.add_argument("--reader", required=True, help="the nccopy_reader program")
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="toy size, one run")
    ap.add_argument("--plot", help="write a bar chart of the ratios here (PNG)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if args.smoke:
        args.size_mib, args.repeat = 8, 1
    os.makedirs(args.work, exist_ok=True)
    bench = Bench(args)
    results = []
    version = subprocess.run(["nc-config", "--version"], capture_output=True, text=True).stdout.strip()
    print("%s; input: one float32 variable (T, 512, 512), %d MiB; median of %d runs" % (
        version, args.size_mib, args.repeat), flush=True)
    for layout, chunk_t, chunk_yx in LAYOUTS:
        input_nc = os.path.join(args.work, "input.nc")
        remove(input_nc)
        run([PYTHON, "-c", MAKE_INPUT, input_nc, str(args.size_mib), str(chunk_t), str(chunk_yx)])
        r = bench.measure(layout, input_nc)
        r["input_bytes"] = os.path.getsize(input_nc)
        remove(input_nc)
        results.append(r)
        s = r["seconds"]
        print("\n%s: %d objects (%d entries in the archive)" % (layout, r["objects_dir"], r["objects_zip"]))
        print("  %-34s %9s %9s %7s   %11s %12s %12s" % ("", "mmzip", "dir", "ratio", "in the map", "page faults",
                                                        "zero-time"))
        for op, what in (("write", "write: nccopy in.nc -> store"), ("read", "full read: nccopy_reader"),
                         ("copy", "full read: nccopy store -> .nc")):
            sh = r["store"][op]
            print("  %-34s %8.3fs %8.3fs %7.2f   %5.3fs %3.0f%% %12d %12.2f" % (
                what, s[op + "_zip"], s[op + "_dir"], r["ratios"][op], sh["store_s"],
                100 * sh["store_s"] / sh["run_s"], sh["faults"], sh["bound"]), flush=True)
    print("\n'in the map': time spent inside the mmzip storage map's calls in one extra run (MMZIP_NCZARR_STATS),"
          " and its share of that run;\n'page faults': taken inside those calls (reading: first touches of the"
          " buffers netCDF-C allocates per object);\n'zero-time': the ratio a store that took no time at all"
          " would reach, (run - map) / directory store.")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(netcdf=version, size_mib=args.size_mib, repeat=args.repeat, results=results), f, indent=1)
    if args.plot:
        plot(results, args.plot)
        print("\nplot: %s" % args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
