"""Shared by the tests of names holding '#' (one per route: tests/python, tests/nczarr, tests/hdf5,
tests/core): a snapshot of a directory tree, to show that nothing appeared at the other reading of a name,
and the names every route is tried with."""
import os

# Directory (created first, may be "") and file name; each name holds '#', "#/", a space or non-ASCII.
# "d#/x.zip" reads as the archive "d" plus member "x.zip" if '#/' were split blindly; "we#ird.zip" as
# "we" plus a fragment.
PLACES = [("d#", "x.zip"), ("", "we#ird.zip"), ("a b#c", "é.zip")]


def tree(root):
    """Every path under root (directories end in '/') with the size of each file: a set."""
    out = set()
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root)
        for n in dirs:
            out.add(os.path.normpath(os.path.join(rel, n)) + "/")
        for n in files:
            out.add((os.path.normpath(os.path.join(rel, n)), os.path.getsize(os.path.join(d, n))))
    return out


def paths(snapshot):
    return {p if isinstance(p, str) else p[0] for p in snapshot}


def assert_only_added(before, after, expected, what):
    """The paths of `after` are those of `before` plus exactly `expected` (relative paths; directories end
    in '/'): nothing was created at another reading of the name."""
    added = paths(after) - paths(before)
    gone = paths(before) - paths(after)
    if added != set(expected) or gone:
        raise AssertionError("%s: created %s (expected %s), removed %s"
                             % (what, sorted(added), sorted(expected), sorted(gone)))


def assert_unchanged(before, after, what):
    """Not a path added or removed, not a file size changed."""
    if before != after:
        raise AssertionError("%s: the directory changed: added %s, removed %s"
                             % (what, sorted(map(str, after - before)), sorted(map(str, before - after))))


def assert_names_both(message, name, archive, member, what):
    """An ambiguity error names the name, the file reading and the member/archive reading."""
    for part in ("ambiguous", "the file '%s'" % name, "the member '%s'" % member, "archive '%s'" % archive):
        if part not in message:
            raise AssertionError("%s: the message lacks %r:\n%s" % (what, part, message))
