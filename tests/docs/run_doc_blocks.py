#!/usr/bin/env python3
"""Runs the code blocks of one Markdown document, in order, as a reader following it would.

    run_doc_blocks.py DOCUMENT.md

Every fenced block of the document either runs or is marked as not run, with its reason, by an HTML comment on
the line(s) right before its opening fence:

    <!-- not run: the reason, said to the reader too -->

Blocks run in a fresh temporary directory (the reader's working directory), in document order:

  ```sh / ```bash   A block whose lines start with "$ " is a terminal transcript: each "$ " line is one command
                    (one line: no continuation lines), and the lines after it, up to the next "$ " line or the
                    end of the block, are exactly what it prints (stdout and stderr together, as `2>&1` into a
                    pipe gives them; no line shown means it prints nothing); every command must succeed. Any
                    other shell block is a bash script run with `set -e -o pipefail`. Each shell block is one
                    bash session that starts in the working directory; the files it leaves are what the next
                    blocks see. PATH starts with the built `mmzip` and a `python3` that is the suite's Python.
  ```python         All Python blocks of a document run in one interpreter, one after the other, sharing their
                    variables, as in one interactive session.
  ```c              Compiled against the built library (-Wall -Wextra -Werror) and run. A block without a
                    main() is a fragment: its #include lines are kept and the rest becomes the body of
                    main() (with <mmzip.h>, <stdio.h>, <stdlib.h>, <string.h> and <stdalign.h> included, and
                    unused variables allowed).

A ```text block right after <!-- output --> is what the block before it prints; it is compared with the output.
Comparisons ignore only trailing spaces of lines and trailing empty lines. A `<!-- normalise: REGEX -->`
before a block (or before its output block) replaces every match of REGEX by "<...>" in both what is shown
and what is printed: for fields that change from run to run (dates, timestamps, absolute paths); the document
says so in its text.

A block that fails, a block of a language the harness cannot run without a marker, a marker not followed by a
block: each fails the test. At the end the harness lists every block as run or skipped (with the reason).
Environment (set by CTest): MMZIP_BIN, MMZIP_PYTHON, MMZIP_SOURCE_DIR, MMZIP_LIBDIR, MMZIP_CC, PYTHONPATH.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SHELL_LANGS = {"sh", "bash", "shell"}
TIMEOUT = 300  # per command or block: catches a hang, not a slow machine

# Runs in the child interpreter (python3 -c, so that multiprocessing's spawn, as dask.distributed uses it,
# does not re-run it): reads blocks as JSON lines on the descriptor given first, runs each in __main__'s
# namespace with its output (Python's and the C libraries') sent to a file, and answers on the second.
PY_DRIVER = r'''
import json as _json, os as _os, sys as _sys, traceback as _traceback
def _serve():
    inp = _os.fdopen(int(_sys.argv[1]), "r")
    out = _os.fdopen(int(_sys.argv[2]), "w")
    ns = vars(_sys.modules["__main__"])
    for line in inp:
        req = _json.loads(line)
        fd = _os.open(req["output"], _os.O_WRONLY | _os.O_CREAT | _os.O_TRUNC, 0o644)
        _sys.stdout.flush(); _sys.stderr.flush()
        saved = (_os.dup(1), _os.dup(2))
        _os.dup2(fd, 1); _os.dup2(fd, 2); _os.close(fd)
        error = None
        try:
            exec(compile(req["code"], req["name"], "exec"), ns)
        except BaseException as e:  # the traceback from the block's own frame down
            error = "".join(_traceback.format_exception(type(e), e, e.__traceback__.tb_next))
        finally:
            _sys.stdout.flush(); _sys.stderr.flush()
            _os.dup2(saved[0], 1); _os.dup2(saved[1], 2)
            _os.close(saved[0]); _os.close(saved[1])
        out.write(_json.dumps({"error": error}) + "\n")
        out.flush()
_serve()
'''


class Block:
    def __init__(self, line, lang, text):
        self.line = line          # 1-based line of the opening fence
        self.lang = lang
        self.text = text
        self.not_run = None       # reason
        self.is_output = False    # shows the output of the block before it
        self.normalise = []       # regexes
        self.output = None        # the Block that shows this block's output


MARKER = re.compile(r"^<!--\s*(not run|output|normalise)\s*(?::\s*(.*?))?\s*-->\s*$")


def parse(path):
    """The fenced blocks of a Markdown file, with the markers on the lines just before each opening fence."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    blocks, errors, pending = [], [], []
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(\s*)(```+)\s*([A-Za-z0-9_+-]*)", line)
        if fence:
            indent, ticks, lang = fence.group(1), fence.group(2), fence.group(3).lower()
            body, j = [], i + 1
            while j < len(lines) and not re.match(r"^\s*" + ticks + r"\s*$", lines[j]):
                body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j])
                j += 1
            if j == len(lines):
                errors.append("line %d: unterminated code block" % (i + 1))
            b = Block(i + 1, lang, "\n".join(body) + "\n")
            for kind, arg, mline in pending:
                if kind == "not run":
                    if not arg:
                        errors.append("line %d: a 'not run' marker needs its reason" % mline)
                    b.not_run = arg
                elif kind == "output":
                    b.is_output = True
                elif kind == "normalise":
                    try:
                        b.normalise.append(re.compile(arg))
                    except (re.error, TypeError) as e:
                        errors.append("line %d: bad normalise pattern %r: %s" % (mline, arg, e))
            pending = []
            blocks.append(b)
            i = j + 1
            continue
        m = MARKER.match(line.strip())
        if m:
            pending.append((m.group(1), m.group(2), i + 1))
        elif line.strip().startswith("<!--") and re.search(r"not run|output|normalise", line):
            errors.append("line %d: marker not understood: %s" % (i + 1, line.strip()))
        elif line.strip() and pending:
            errors.append("line %d: marker(s) not followed by a code block" % pending[0][2])
            pending = []
        i += 1
    if pending:
        errors.append("line %d: marker(s) not followed by a code block" % pending[0][2])
    # An output block belongs to the block before it.
    kept = []
    for b in blocks:
        if b.is_output:
            if not kept or kept[-1].output is not None:
                errors.append("line %d: an output block must follow a code block" % b.line)
            else:
                kept[-1].output = b
        else:
            kept.append(b)
    return kept, errors


def normalised(text, patterns):
    out = []
    for line in text.replace("\r\n", "\n").split("\n"):
        for p in patterns:
            line = p.sub("<...>", line)
        out.append(line.rstrip())
    while out and out[-1] == "":
        out.pop()
    return out


def compare(what, shown, printed, patterns):
    """None if equal, else a message with both texts."""
    a, b = normalised(shown, patterns), normalised(printed, patterns)
    if a == b:
        return None
    import difflib
    diff = "\n".join(difflib.unified_diff(a, b, "shown in the document", "printed", lineterm=""))
    return "%s: the output differs from the document's\n%s" % (what, diff)


class Runner:
    def __init__(self, doc, root):
        self.doc = doc
        self.name = os.path.basename(doc)
        # root/work is the reader's directory; the runner's own files stay out of it, in root/runner.
        self.workdir = os.path.join(root, "work")
        self.own = os.path.join(root, "runner")
        os.mkdir(self.workdir)
        os.mkdir(self.own)
        self.py = None
        self.env = dict(os.environ)
        bindir = os.path.join(self.own, "bin")
        os.mkdir(bindir)
        # The reader's python3 is the one with zarr, h5py and netCDF4 (Debian's, in the suite).
        os.symlink(os.environ["MMZIP_PYTHON"], os.path.join(bindir, "python3"))
        mmzip_dir = os.path.dirname(os.path.abspath(os.environ["MMZIP_BIN"]))
        self.env["PATH"] = os.pathsep.join([mmzip_dir, bindir, self.env.get("PATH", "/usr/bin:/bin")])
        if self.env.get("MMZIP_ASAN_RUNTIME"):
            # The sanitizer build: the runtime first in every program the blocks start (python3 and the
            # netCDF tools load instrumented plugins), as the nczarr suite does; `mmzip run` puts the plugins
            # after it. The compiler of C blocks runs without it.
            self.env["LD_PRELOAD"] = self.env["MMZIP_ASAN_RUNTIME"]
            self.env["ASAN_OPTIONS"] = ":".join(
                o for o in (self.env.get("ASAN_OPTIONS"), "verify_asan_link_order=0") if o)

    # shell
    def run_shell(self, b):
        where = "%s:%d" % (self.name, b.line)
        lines = b.text.rstrip("\n").split("\n")
        if any(l.startswith("$ ") for l in lines):
            if b.output is not None:
                return "%s: a transcript shows its output inline, not in an output block" % where
            if not lines[0].startswith("$ "):
                return "%s: a transcript starts with a '$ ' line" % where
            steps = []
            for l in lines:
                if l.startswith("$ "):
                    steps.append([l[2:], []])
                else:
                    steps[-1][1].append(l)
            # One bash for the block (a cd or a variable carries to the next command); after each command
            # it prints a marker with the command's status, which splits the output.
            script = "set -o pipefail\n"
            for cmd, _ in steps:
                script += cmd + "\n__doc_rc=$?; printf '\\036%d\\036\\n' \"$__doc_rc\"; " \
                          "[ \"$__doc_rc\" -eq 0 ] || exit \"$__doc_rc\"\n"
            status, printed = self.shell(["bash", "-c", script])
            pieces = re.split(r"\x1e(\d+)\x1e\n", printed)
            for n, (cmd, shown) in enumerate(steps):
                print("  $ " + cmd, flush=True)
                if 2 * n + 1 >= len(pieces):
                    sys.stdout.write(indent(pieces[-1]))
                    return "%s: the shell ended (status %d) before `%s` did" % (where, status, cmd)
                out, rc = pieces[2 * n], int(pieces[2 * n + 1])
                sys.stdout.write(indent(out))
                if rc != 0:
                    return "%s: `%s` exited with status %d" % (where, cmd, rc)
                err = compare("%s: `%s`" % (where, cmd), "\n".join(shown), out, b.normalise)
                if err:
                    return err
            if status != 0 or pieces[-1]:
                return "%s: the shell block ended with status %d after printing %r" % (where, status, pieces[-1])
            return None
        script = os.path.join(self.own, "block.sh")
        with open(script, "w") as f:
            f.write("set -e -o pipefail\n" + b.text)
        status, printed = self.shell(["bash", script])
        os.unlink(script)
        sys.stdout.write(indent(printed))
        if status != 0:
            return "%s: the shell block exited with status %d" % (where, status)
        return self.check_output(b, printed)

    def shell(self, args):
        try:
            p = subprocess.run(args, cwd=self.workdir, env=self.env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        except subprocess.TimeoutExpired as e:
            return -1, (e.stdout or b"").decode("utf-8", "replace") + "\n(timed out after %d s)\n" % TIMEOUT
        return p.returncode, p.stdout.decode("utf-8", "replace")

    def check_output(self, b, printed):
        if b.output is None:
            return None
        return compare("%s:%d" % (self.name, b.line), b.output.text, printed, b.normalise + b.output.normalise)

    # python
    def run_python(self, b):
        if self.py is None:
            self.py_in_r, self.py_in_w = os.pipe()
            self.py_out_r, self.py_out_w = os.pipe()
            self.py = subprocess.Popen([os.environ["MMZIP_PYTHON"], "-c", PY_DRIVER, str(self.py_in_r),
                                        str(self.py_out_w)], cwd=self.workdir, env=self.env,
                                       stdin=subprocess.DEVNULL, pass_fds=(self.py_in_r, self.py_out_w))
            os.close(self.py_in_r)
            os.close(self.py_out_w)
            self.py_send = os.fdopen(self.py_in_w, "w")
            self.py_recv = os.fdopen(self.py_out_r, "r")
        outfile = os.path.join(self.own, "block.out")
        # Line numbers in tracebacks are the document's.
        code = "\n" * b.line + b.text
        self.py_send.write(json.dumps({"code": code, "name": self.doc, "output": outfile}) + "\n")
        self.py_send.flush()
        answer = self.py_recv.readline()
        printed = open(outfile, encoding="utf-8", errors="replace").read() if os.path.exists(outfile) else ""
        sys.stdout.write(indent(printed))
        where = "%s:%d" % (self.name, b.line)
        if not answer:
            return "%s: the Python interpreter died (status %s)" % (where, self.py.wait())
        error = json.loads(answer)["error"]
        if error:
            return "%s: the Python block raised\n%s" % (where, error)
        return self.check_output(b, printed)

    def close(self):
        if self.py is not None:
            self.py_send.close()
            try:
                self.py.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                self.py.kill()
                self.py.wait()
                return "the Python interpreter did not exit after the last block"
            self.py_recv.close()
            if self.py.returncode != 0:
                return "the Python interpreter exited with status %d" % self.py.returncode
        return None

    # C
    def run_c(self, b):
        where = "%s:%d" % (self.name, b.line)
        text = b.text
        flags = ["-std=c11", "-Wall", "-Wextra", "-Werror"]
        if not re.search(r"\bmain\s*\(", text):
            includes = [l for l in text.split("\n") if l.startswith("#include")]
            body = [l for l in text.split("\n") if not l.startswith("#include")]
            text = ("#include <mmzip.h>\n#include <stdalign.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
                    "#include <string.h>\n" + "\n".join(includes) + "\n"
                    "int main(void) {\n#line %d \"%s\"\n%s\n    return 0;\n}\n"
                    % (b.line + 1 + len(includes), self.name, "\n".join(body)))
            flags += ["-Wno-unused-variable", "-Wno-unused-but-set-variable"]
        if os.environ.get("MMZIP_ASAN_RUNTIME"):
            flags += ["-fsanitize=address,undefined"]
        else:
            text = "#line %d \"%s\"\n%s" % (b.line + 1, self.name, text)
        src = os.path.join(self.own, "block.c")
        exe = os.path.join(self.own, "block")
        with open(src, "w") as f:
            f.write(text)
        include = os.path.join(os.environ["MMZIP_SOURCE_DIR"], "plugin", "include")
        libdir = os.environ["MMZIP_LIBDIR"]
        cc = os.environ.get("MMZIP_CC", "cc")
        p = subprocess.run([cc] + flags + ["-I", include, src, "-o", exe, "-L", libdir, "-lmmzip",
                                           "-Wl,-rpath," + libdir],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=TIMEOUT)
        if p.returncode != 0:
            return "%s: the C block does not compile:\n%s" % (where, p.stdout.decode("utf-8", "replace"))
        status, printed = self.shell([exe])
        sys.stdout.write(indent(printed))
        for f in (src, exe):
            os.unlink(f)
        if status != 0:
            return "%s: the C program exited with status %d" % (where, status)
        return self.check_output(b, printed)


def indent(text):
    return "".join("    | " + l + "\n" for l in text.splitlines())


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: run_doc_blocks.py DOCUMENT.md")
    doc = os.path.abspath(sys.argv[1])
    blocks, errors = parse(doc)
    if errors:
        for e in errors:
            print("%s: %s" % (os.path.basename(doc), e))
        sys.exit(1)
    root = tempfile.mkdtemp(prefix="mmzip-doc-")
    runner = Runner(doc, root)
    ran, skipped, unreached, failure, failed_at = [], [], [], None, "at the end"
    print("%s: %d blocks, run in %s" % (os.path.basename(doc), len(blocks), runner.workdir), flush=True)
    for n, b in enumerate(blocks):
        where = "line %d (%s)" % (b.line, b.lang or "no language")
        if failure:
            unreached = ["line %d (%s)" % (x.line, x.lang or "no language") for x in blocks[n:]]
            break
        if b.not_run is not None:
            skipped.append((where, b.not_run))
            print("SKIP %s: %s" % (where, b.not_run), flush=True)
            continue
        print("RUN  %s" % where, flush=True)
        if b.lang in SHELL_LANGS:
            failure = runner.run_shell(b)
        elif b.lang == "python":
            failure = runner.run_python(b)
        elif b.lang == "c":
            failure = runner.run_c(b)
        else:
            failure = ("%s:%d: the harness cannot run a block of language '%s': mark it "
                       "<!-- not run: reason -->" % (runner.name, b.line, b.lang))
        if failure:
            failed_at = where
        else:
            ran.append(where)
    closing = runner.close()
    failure = failure or closing
    print()
    print("%s: %d blocks run, %d skipped%s" % (runner.name, len(ran), len(skipped),
                                               "" if failure else ", every one as the document says"))
    for where in ran:
        print("  run:     " + where)
    for where, reason in skipped:
        print("  skipped: %s: %s" % (where, reason))
    if failure:
        print("  FAILED:  " + failed_at)
    for where in unreached:
        print("  not reached (after the failure): " + where)
    if failure:
        print("\nFAIL " + failure)
        print("(the working directory is kept: %s)" % runner.workdir)
        sys.exit(1)
    shutil.rmtree(root)


if __name__ == "__main__":
    main()
