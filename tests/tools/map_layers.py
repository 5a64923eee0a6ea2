#!/usr/bin/env python3
"""Fail when a file of the netCDF storage map (nczarr_map/) calls into a folder above its own: the map's folders
are layers that call downward only (nczarr_map/README.md).

The file-to-file dependencies are the ones call_circles.py reads with nm from the objects the build made (its
--graph output), so a call counts where the linker sees it. Every arrow from one nczarr_map file to another
must go to the same folder or to one listed after it in LAYERS; a map source outside every listed folder fails
too (a new folder takes its place in LAYERS). Before the tree, the check is run on a small made-up graph with
one upward call, which it must report, so that a check that finds nothing cannot pass unnoticed.

    map_layers.py BUILD_DIR [--source-dir DIR]

Exit status 0 when every arrow goes downward, 1 when one does not, 2 on a usage or build error.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = "nczarr_map/"
# From the top down. view/ is the compatibility view, a library of its own with folders of its own; json/ the
# JSON parser that the map and the view both use, below everything.
LAYERS = ["interposition", "session", "routing", "view", "netcdf", "support", "json"]


def layer_of(path):
    """The index in LAYERS of an nczarr_map file's folder, or None."""
    folder = path[len(ROOT):].split("/", 1)[0] if "/" in path[len(ROOT):] else ""
    return LAYERS.index(folder) if folder in LAYERS else None


def violations(graph):
    """(problems, arrows checked) for a {file: set(files)} graph."""
    problems, checked = [], 0
    for src in sorted(graph):
        if not src.startswith(ROOT):
            continue
        if layer_of(src) is None:
            problems.append(f"{src}: in no folder of the map's layers {LAYERS} (nczarr_map/README.md)")
            continue
        for dst in sorted(graph[src]):
            if not dst.startswith(ROOT) or layer_of(dst) is None:
                continue
            checked += 1
            if layer_of(dst) < layer_of(src):
                problems.append(f"{src} calls up into {dst} ({LAYERS[layer_of(src)]}/ is below "
                                f"{LAYERS[layer_of(dst)]}/)")
    return problems, checked


def self_check():
    made_up = {
        "nczarr_map/session/a.c": {"nczarr_map/support/b.c", "plugin/src/read.c"},
        "nczarr_map/support/b.c": {"nczarr_map/routing/c.c"},
        "nczarr_map/routing/c.c": set(),
        "nczarr_map/d.c": set(),
    }
    problems, checked = violations(made_up)
    want = ["nczarr_map/d.c: in no folder", "nczarr_map/support/b.c calls up into nczarr_map/routing/c.c"]
    if checked != 2 or len(problems) != 2 or not all(p.startswith(w) for p, w in zip(problems, want)):
        print(f"map_layers: the check itself is broken: on the made-up graph it reported {problems}",
              file=sys.stderr)
        return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--source-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = ap.parse_args()
    if not self_check():
        return 2
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "call_circles.py")
    out = subprocess.run([sys.executable, tool, args.build_dir, "--source-dir", args.source_dir, "--graph"],
                         capture_output=True, text=True)
    graph = {}
    for line in out.stdout.splitlines():
        m = re.match(r"^(\S+\.c) -> (.*)$", line)
        if m:
            graph[m.group(1)] = set() if m.group(2) == "(nothing)" else set(m.group(2).split(", "))
    present = {LAYERS[layer_of(f)] for f in graph if f.startswith(ROOT) and layer_of(f) is not None}
    if present != set(LAYERS):
        print(f"map_layers: no object of nczarr_map/{', nczarr_map/'.join(sorted(set(LAYERS) - present))} under "
              f"{args.build_dir}: build the map first ({out.stderr.strip()})", file=sys.stderr)
        return 2
    problems, checked = violations(graph)
    for p in problems:
        print(p)
    print(f"map_layers: {sum(1 for f in graph if f.startswith(ROOT))} files of the map, {checked} arrows between "
          f"them, {len(problems)} against the layers {' > '.join(LAYERS)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
