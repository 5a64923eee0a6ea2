"""The Python package's ctypes binding (plugin/python/mmzip/_core.py) against the C header it mirrors.

A struct mirror that disagrees with mmzip.h makes the library write past a Python object (a grown
mmzip_info once corrupted the heap of every npz test). This test reads the header itself: it takes every
struct the package mirrors, compiles a probe against mmzip.h with the C compiler that built the library
(sizeof and offsetof of every field, as the compiler lays them out), and checks each ctypes mirror field by
field: same names in the same order, same offsets, same sizes, same total size and alignment. It checks every
function prototype of _core.PROTOTYPES against the header's declaration (argument count; pointer or integer,
integer width and signedness; pointee struct or width), and the list callback type. Then it shows that the
checker catches a mirror that lacks the header's last field and one with a wrong argument width.

Environment (set by tests/python/CMakeLists.txt): MMZIP_HEADER, the path of mmzip.h; MMZIP_CC, the C compiler."""
import ctypes
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.environ.get("MMZIP_TESTS_DIR", os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "interop"))
import asan_preload  # noqa: E402,F401  (first: under the sanitizer build it re-executes this script)

from mmzip import _core  # noqa: E402
from mmzip_testlib import check_equal, main  # noqa: E402

HEADER, CC = os.environ["MMZIP_HEADER"], os.environ.get("MMZIP_CC", "cc")

INT_TYPES = {"int": (4, True), "unsigned": (4, False), "unsigned int": (4, False), "uint16_t": (2, False),
             "uint32_t": (4, False), "uint64_t": (8, False), "size_t": (ctypes.sizeof(ctypes.c_size_t), False),
             "char": (1, True)}


def header_text():
    with open(HEADER) as f:
        text = f.read()
    return re.sub(r"/\*.*?\*/", " ", text, flags=re.S)


def header_structs(text):
    """{struct name: [field names in order]} of every `typedef struct mmzip_x { ... } mmzip_x;`."""
    out = {}
    for name, body in re.findall(r"typedef\s+struct\s+(mmzip_\w+)\s*\{(.*?)\}\s*\1\s*;", text, re.S):
        fields = []
        for decl in body.split(";"):
            decl = decl.strip()
            if not decl:
                continue
            assert "," not in decl, "%s: one field per declaration expected: %r" % (name, decl)
            fields.append(re.search(r"(\w+)\s*(\[[^\]]*\])?$", decl).group(1))
        out[name] = fields
    return out


def header_functions(text):
    """{function name: (return type, [argument types])} of every MMZIP_API declaration."""
    out = {}
    for ret, name, args in re.findall(r"MMZIP_API\s+([^;(]*?)\b(mmzip_\w+)\s*\(([^)]*)\)\s*;", text, re.S):
        types = []
        args = " ".join(args.split())
        if args not in ("", "void"):
            for a in args.split(","):
                a = a.strip()
                m = re.match(r"(.*?[\s*])(\w+)$", a)
                types.append(" ".join(m.group(1).replace("*", " * ").split()))
        out[name] = (" ".join(ret.replace("*", " * ").split()), types)
    return out


def function_pointer_typedefs(text):
    return {name: (ret.strip(), [" ".join(re.match(r"(.*?[\s*])(\w+)$", a.strip()).group(1).replace("*", " * ")
                                          .split()) for a in args.split(",")])
            for ret, name, args in re.findall(r"typedef\s+(\w+)\s*\(\s*\*\s*(mmzip_\w+)\s*\)\s*\(([^)]*)\)\s*;", text)}


def probe_layouts(structs):
    """{struct: (size, align, {field: (offset, size)})} as the C compiler lays them out."""
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "mmzip.h"', "int main(void) {"]
    for s, fields in structs.items():
        lines.append('    printf("%s %%zu %%zu\\n", sizeof(%s), _Alignof(%s));' % (s, s, s))
        for f in fields:
            lines.append('    printf("%s.%s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (s, f, s, f, s, f))
    lines += ["    return 0;", "}"]
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "probe.c"), os.path.join(d, "probe")
        with open(src, "w") as f:
            f.write("\n".join(lines) + "\n")
        subprocess.run([CC, "-std=c11", "-I", os.path.dirname(HEADER), src, "-o", exe], check=True)
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}  # a plain program: no sanitizer
        out = subprocess.run([exe], check=True, capture_output=True, text=True, env=env).stdout
    res = {}
    for line in out.splitlines():
        what, a, b = line.split()
        if "." in what:
            s, f = what.split(".")
            res[s][2][f] = (int(a), int(b))
        else:
            res[what] = (int(a), int(b), {})
    return res


def struct_problems(cname, mirror, fields, layout):
    """What differs between the ctypes mirror and the C struct (an empty list if nothing)."""
    size, align, offs = layout
    got_names = [f[0] for f in mirror._fields_]
    if got_names != fields:
        return ["%s: ctypes fields %s, mmzip.h has %s" % (cname, got_names, fields)]
    probs = []
    for f in fields:
        d = getattr(mirror, f)
        if (d.offset, d.size) != offs[f]:
            probs.append("%s.%s: ctypes offset %d size %d, C offset %d size %d"
                         % (cname, f, d.offset, d.size, offs[f][0], offs[f][1]))
    if ctypes.sizeof(mirror) != size or ctypes.alignment(mirror) != align:
        probs.append("%s: ctypes size %d align %d, C size %d align %d"
                     % (cname, ctypes.sizeof(mirror), ctypes.alignment(mirror), size, align))
    return probs


def is_pointer(t):
    return t is not None and (issubclass(t, (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_wchar_p))
                              or issubclass(t, ctypes._Pointer) or issubclass(t, ctypes._CFuncPtr))


def type_problem(what, ctype, pytype, fn_pointers):
    """Why the ctypes type pytype cannot stand for the C type ctype ('const char *', 'uint64_t', 'void'),
    or None."""
    words = [w for w in ctype.split() if w != "const"]
    stars = words.count("*")
    base = " ".join(w for w in words if w != "*")
    if base == "void" and stars == 0:
        return None if pytype is None else "%s: C void, ctypes %s" % (what, pytype.__name__)
    if pytype is None:
        return "%s: C %s, ctypes restype None" % (what, ctype)
    if stars or base in fn_pointers:
        if not is_pointer(pytype):
            return "%s: C %s is a pointer, ctypes %s is not" % (what, ctype, pytype.__name__)
        if base in fn_pointers and not issubclass(pytype, ctypes._CFuncPtr):
            return "%s: C %s is a callback, ctypes %s is not" % (what, ctype, pytype.__name__)
        if issubclass(pytype, ctypes._Pointer):
            target = pytype._type_
            if base in _core.STRUCTS and stars == 1:
                if target is not _core.STRUCTS[base]:
                    return "%s: C %s, ctypes POINTER(%s)" % (what, ctype, target.__name__)
            elif stars == 1 and base in INT_TYPES:
                if is_pointer(target) or ctypes.sizeof(target) != INT_TYPES[base][0]:
                    return "%s: C %s, ctypes POINTER(%s)" % (what, ctype, target.__name__)
            elif stars == 2:
                if not is_pointer(target):
                    return "%s: C %s, ctypes POINTER(%s)" % (what, ctype, target.__name__)
            elif base != "void":
                return "%s: C %s, ctypes POINTER(%s): unchecked pointee" % (what, ctype, target.__name__)
        if issubclass(pytype, ctypes.c_char_p) and not (base == "char" and stars == 1):
            return "%s: C %s passed as c_char_p" % (what, ctype)
        return None
    if base not in INT_TYPES:
        return "%s: C type %r unknown to this test" % (what, ctype)
    if is_pointer(pytype):
        return "%s: C %s is an integer, ctypes %s a pointer" % (what, ctype, pytype.__name__)
    width, signed = INT_TYPES[base]
    if ctypes.sizeof(pytype) != width or (pytype(-1).value < 0) != signed:
        return "%s: C %s (%d bytes, %s), ctypes %s" % (what, ctype, width, "signed" if signed else "unsigned",
                                                        pytype.__name__)
    return None


def prototype_problems(name, res, args, decl, fn_pointers):
    if decl is None:
        return ["%s: not declared in mmzip.h" % name]
    cret, cargs = decl
    probs = []
    if len(args) != len(cargs):
        return ["%s: %d ctypes argtypes, mmzip.h declares %d" % (name, len(args), len(cargs))]
    p = type_problem("%s result" % name, cret, res, fn_pointers)
    if p:
        probs.append(p)
    for i, (ct, pt) in enumerate(zip(cargs, args)):
        p = type_problem("%s argument %d" % (name, i + 1), ct, pt, fn_pointers)
        if p:
            probs.append(p)
    return probs


def test_struct_mirrors_match_the_header():
    text = header_text()
    structs = header_structs(text)
    for cname in _core.STRUCTS:
        assert cname in structs, "mmzip.h has no struct %s (mirrored by _core.%s)" % (cname, _core.STRUCTS[cname])
    mirrored = {c: structs[c] for c in _core.STRUCTS}
    layouts = probe_layouts(mirrored)
    probs = []
    for cname, mirror in _core.STRUCTS.items():
        probs += struct_problems(cname, mirror, mirrored[cname], layouts[cname])
    assert not probs, "\n".join(probs)
    # Values the probe saw, so that a probe printing nothing cannot pass.
    check_equal(layouts["mmzip_info"][2]["end_follows_directory"][1], 4, "C size of mmzip_info.end_follows_directory")
    check_equal(ctypes.sizeof(_core.Info), layouts["mmzip_info"][0], "sizeof(mmzip_info)")
    print("%d structs, %d fields checked: %s" % (len(mirrored), sum(map(len, mirrored.values())),
                                                  ", ".join("%s %d bytes" % (c, layouts[c][0]) for c in mirrored)))

    # The checker itself: a mirror of an older mmzip_info (without the last field) and one with a field
    # of the wrong width are caught.
    class OldInfo(ctypes.Structure):
        _fields_ = _core.Info._fields_[:-1]

    class WrongOptions(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32 if n == "alignment" else t) for n, t in _core.Options._fields_]
        _fields_[1] = ("alignment", ctypes.c_uint64)
    assert struct_problems("mmzip_info", OldInfo, mirrored["mmzip_info"], layouts["mmzip_info"])
    assert struct_problems("mmzip_options", WrongOptions, mirrored["mmzip_options"], layouts["mmzip_options"])


def test_prototypes_match_the_header():
    text = header_text()
    decls = header_functions(text)
    fnp = function_pointer_typedefs(text)
    check_equal(fnp["mmzip_list_fn"], ("int", ["const mmzip_entry_info *", "void *"]), "mmzip_list_fn as parsed")
    assert len(decls) > 30, "too few MMZIP_API declarations parsed: %d" % len(decls)
    probs = []
    for name, (res, args) in _core.PROTOTYPES.items():
        probs += prototype_problems(name, res, args, decls.get(name), fnp)
    # The list callback: its ctypes type against the typedef.
    cret, cargs = fnp["mmzip_list_fn"]
    lf = _core.LIST_FN
    if len(lf._argtypes_) != len(cargs):
        probs.append("LIST_FN: %d arguments, mmzip_list_fn %d" % (len(lf._argtypes_), len(cargs)))
    else:
        for i, (ct, pt) in enumerate(zip(cargs, lf._argtypes_)):
            p = type_problem("LIST_FN argument %d" % (i + 1), ct, pt, fnp)
            if p:
                probs.append(p)
    p = type_problem("LIST_FN result", cret, lf._restype_, fnp)
    if p:
        probs.append(p)
    assert not probs, "\n".join(probs)
    _core.lib()  # every prototyped function exists in the library that was built
    print("%d prototypes checked against %d declarations" % (len(_core.PROTOTYPES), len(decls)))
    # The checker itself: a wrong width and a wrong count are caught.
    assert prototype_problems("mmzip_put", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p,
                                                          ctypes.c_uint32, ctypes.c_uint32],
                              decls["mmzip_put"], fnp)
    assert prototype_problems("mmzip_get_info", ctypes.c_int, [ctypes.c_void_p], decls["mmzip_get_info"], fnp)
    assert prototype_problems("mmzip_stat", ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p,
                                                           ctypes.POINTER(_core.Info)], decls["mmzip_stat"], fnp)


def test_modules_use_the_one_binding():
    """No module of the package declares its own struct mirror, loads libmmzip itself or sets prototypes:
    _core.py is the only place."""
    pkg = os.path.dirname(_core.__file__)
    for fn in sorted(os.listdir(pkg)):
        if not fn.endswith(".py") or fn == "_core.py":
            continue
        with open(os.path.join(pkg, fn)) as f:
            src = f.read()
        for pattern in (r"ctypes\.Structure", r"\.argtypes\s*=", r"\.restype\s*=.*\n.*mmzip_", r"libmmzip\.so\"",
                        r"CFUNCTYPE"):
            m = re.search(pattern, src)
            # __init__.py may load the two plugins (nczarr, h5fd) and prototype the h5fd's one function.
            if m and not (fn == "__init__.py" and "H5Pset_fapl_mmzip" in src[max(0, m.start() - 80):m.end() + 80]):
                raise AssertionError("%s: %r at offset %d: declare it in _core.py" % (fn, m.group(0), m.start()))


if __name__ == "__main__":
    main([test_struct_mirrors_match_the_header, test_prototypes_match_the_header, test_modules_use_the_one_binding])
