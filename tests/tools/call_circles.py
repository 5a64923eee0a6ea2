#!/usr/bin/env python3
"""Fail on a call circle between the product's source files: the layers of plugin/src, nczarr_map and
hdf5_vfd must call downward only (see the top comment of plugin/src/internal.h).

What it reads is what the linker reads: `nm` of each object file the build made from a product source. File A
depends on file B when A uses a global symbol (function or data) that B defines; static names never tie two
files. A circle is a strongly connected set of two or more files. Reading objects rather than source text
means a namesake (two static functions of one name, a word in a comment) never makes a false arrow, and a
call through a macro or an inline function of a header is seen where it lands.

A name that a system library also defines (stat in libc, a netCDF-C function) is an interposition: the
file that defines it stands in for the library, and a file that calls it calls the library, so such names
tie no two files. Test objects, and the second copies the build makes of the same sources for unit tests (targets whose name
ends in _testing or _units), are not read: they link the same files again.

    call_circles.py BUILD_DIR [--source-dir DIR] [--known FILE] [--graph]

--known names a file of circles that are known and accepted for now, one per line as the files of the circle
separated by spaces (# starts a comment). A circle found must lie inside a known one; a known circle that no
longer exists fails too, so that the list only shrinks. Exit status 0 when the tree has no other circle, 1
when it has, 2 on a usage or build error.
"""
import argparse
import os
import re
import subprocess
import sys

PRODUCT_ROOTS = ("plugin/src/", "plugin/cli/", "nczarr_map/", "hdf5_vfd/")
SKIPPED_TARGET = re.compile(r"(_testing|_units)\.dir$")


def product_objects(build_dir, source_dir):
    """Yield (source path relative to the source tree, object path) for each object of a product source."""
    build_dir = os.path.abspath(build_dir)
    for root, dirs, files in os.walk(build_dir):
        dirs.sort()
        marker = os.sep + "CMakeFiles" + os.sep
        if marker not in root + os.sep:
            continue
        before, after = (root + os.sep).split(marker, 1)
        target, _, inner = after.partition(os.sep)
        if not target.endswith(".dir") or SKIPPED_TARGET.search(target):
            continue
        folder = os.path.relpath(before, build_dir)
        for name in sorted(files):
            if not name.endswith(".c.o"):
                continue
            rel = os.path.normpath(os.path.join(folder, inner, name[:-2]))
            if rel.startswith(PRODUCT_ROOTS) and os.path.exists(os.path.join(source_dir, rel)):
                yield rel, os.path.join(root, name)


def symbols(obj):
    out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRCGSVW" and kind.isupper():
            defined.add(name)
    return defined, used


def foreign_names(build_dir):
    """Names that the shared libraries the products link define: interposed, not the product's own."""
    libs = set()
    linked = [sys.executable]  # the C library at least, also where the build made no shared library
    for root, _, files in os.walk(os.path.join(os.path.abspath(build_dir), "lib")):
        linked += [os.path.join(root, name) for name in files if ".so" in name]
    for path in linked:
        out = subprocess.run(["ldd", path], capture_output=True, text=True).stdout
        libs.update(m.group(1) for m in re.finditer(r"=> (/\S+)", out))
    names = set()
    own = os.path.abspath(build_dir) + os.sep
    for lib in sorted(l for l in libs if not os.path.realpath(l).startswith(own)):
        out = subprocess.run(["nm", "-D", "--defined-only", "-P", lib], capture_output=True, text=True).stdout
        names.update(line.split()[0].split("@")[0] for line in out.splitlines() if line.strip())
    return names


def strongly_connected(graph):
    """Tarjan's algorithm, iterative: the sets of nodes that reach each other."""
    index, low, on_stack, stack, result = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                result.append(sorted(members))
    return result


def read_known(path):
    known = []
    if not path:
        return known
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                known.append(frozenset(line))
    return known


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("build_dir")
    ap.add_argument("--source-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    ap.add_argument("--known", help="file of accepted circles (see the module's docstring)")
    ap.add_argument("--graph", action="store_true", help="print every file's dependencies")
    args = ap.parse_args()
    source_dir = os.path.abspath(args.source_dir)

    files = {}
    for rel, obj in product_objects(args.build_dir, source_dir):
        files.setdefault(rel, obj)  # one object per source: a library built twice links the same file
    if not files:
        print(f"call_circles: no object of {', '.join(PRODUCT_ROOTS)} under {args.build_dir}: build first",
              file=sys.stderr)
        return 2

    foreign = foreign_names(args.build_dir)
    defined_by, uses = {}, {}
    for rel, obj in files.items():
        defined, used = symbols(obj)
        uses[rel] = used - foreign
        for name in defined - foreign:
            defined_by.setdefault(name, set()).add(rel)

    graph, why = {rel: set() for rel in files}, {}
    for rel, used in uses.items():
        for name in used:
            for other in defined_by.get(name, ()):
                # A symbol defined by two products (the CLI and a plugin both having main, say) ties neither.
                if other != rel and len(defined_by[name]) == 1:
                    graph[rel].add(other)
                    why.setdefault((rel, other), set()).add(name)

    if args.graph:
        for rel in sorted(graph):
            print(f"{rel} -> {', '.join(sorted(graph[rel])) or '(nothing)'}")

    circles = [c for c in strongly_connected(graph) if len(c) > 1]
    known = read_known(args.known)
    failed = False
    for circle in circles:
        accepted = any(set(circle) <= k for k in known)
        print(f"{'known' if accepted else 'NEW'} circle of {len(circle)} files: {' '.join(circle)}")
        members = set(circle)
        for a in circle:
            for b in sorted(graph[a] & members):
                print(f"    {a} -> {b}: {', '.join(sorted(why[(a, b)]))}")
        failed |= not accepted
    for k in known:
        if not any(set(c) <= k and len(set(c) & k) > 1 for c in circles):
            print(f"STALE known circle (no longer in the code; remove it from {args.known}): {' '.join(sorted(k))}")
            failed = True
    print(f"call_circles: {len(files)} files, {sum(len(v) for v in graph.values())} file-to-file dependencies, "
          f"{len(circles)} circle(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
