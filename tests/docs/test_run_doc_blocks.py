#!/usr/bin/env python3
"""The document runner itself: on small documents, it runs what they show, compares what they say a block
prints, skips only marked blocks and lists them, and fails on every kind of discrepancy."""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_doc_blocks.py")
FENCE = "```"


def run_doc(text):
    with tempfile.TemporaryDirectory(prefix="mmzip-doc-test-") as d:
        path = os.path.join(d, "doc.md")
        with open(path, "w") as f:
            f.write(text.replace("'''", FENCE))
        p = subprocess.run([sys.executable, RUNNER, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=300)
        # A failing run keeps its working directory for a look; these are expected failures.
        for line in p.stdout.splitlines():
            if line.startswith("(the working directory is kept: "):
                workdir = line[len("(the working directory is kept: "):-1]
                subprocess.run(["rm", "-rf", os.path.dirname(workdir)], check=True)
        return p.returncode, p.stdout


def expect(name, text, status, *needles):
    rc, out = run_doc(text)
    if rc != status or any(n not in out for n in needles):
        print(out)
        missing = [n for n in needles if n not in out]
        raise AssertionError("%s: status %d (expected %d), missing %r" % (name, rc, status, missing))
    print("ok   %s" % name)


GOOD = """# A document

'''python
x = 6 * 7
'''

'''python
print("x is", x)
'''
<!-- output -->
'''text
x is 42
'''

'''sh
$ echo hello; echo to-stderr >&2
hello
to-stderr
$ mmzip --help > /dev/null
$ python3 -c 'import zarr, mmzip; print(mmzip.__name__)'
mmzip
'''

<!-- not run: needs a cluster -->
'''cmake
find_package(mmzip REQUIRED)
'''

'''c
mmzip_t *a;
if (mmzip_open("c.zip", "w+", NULL, &a) != MMZIP_OK) return 1;
mmzip_put(a, "k", "abc", 3, 0);
mmzip_commit(a);
printf("%d\\n", mmzip_exists(a, "k"));
mmzip_close(a);
'''
<!-- output -->
'''text
1
'''

'''sh
test -f c.zip
mmzip ls c.zip | tail -n 1
'''
<!-- output -->
'''text
stored                 3              3            128    128 352441c2  k
'''

<!-- normalise: [0-9]{6,} -->
'''sh
$ date +%s
1700000000
'''

The reader's directory holds what the blocks made, nothing of the runner's:

'''sh
$ ls -A
c.zip
'''
"""


def main():
    expect("a good document", GOOD, 0,
           "7 blocks run, 1 skipped, every one as the document says",
           "skipped: line 25 (cmake): needs a cluster",
           "run:     line 3 (python)", "run:     line 29 (c)", "run:     line 52 (sh)")
    expect("a transcript is one shell session", "'''sh\n$ mkdir sub && cd sub && X=1\n$ basename $PWD; echo $X\n"
           "sub\n1\n$ printf 'no newline'\nno newline\n'''\n", 0, "1 blocks run, 0 skipped")
    expect("a transcript command that ends the shell", "'''sh\n$ exit 0\n$ echo after\nafter\n'''\n", 1,
           "the shell ended (status 0) before `exit 0` did")
    expect("a shown output that differs", "'''sh\n$ echo hello\nhallo\n'''\n", 1,
           "`echo hello`: the output differs from the document's", "-hallo", "+hello")
    expect("a command that prints where the document shows nothing", "'''sh\n$ echo hello\n'''\n", 1,
           "the output differs", "+hello")
    expect("a Python output that differs", "'''python\nprint(1)\n'''\n<!-- output -->\n'''text\n2\n'''\n", 1,
           "doc.md:1: the output differs")
    expect("a failing shell block, and what comes after it",
           "'''sh\ntrue\nfalse\necho not here\n'''\n\n'''python\nprint(1)\n'''\n", 1,
           "doc.md:1: the shell block exited with status 1", "FAILED:  line 1 (sh)",
           "not reached (after the failure): line 7 (python)")
    expect("a failing pipeline", "'''sh\nfalse | cat\n'''\n", 1, "exited with status 1")
    expect("a failing transcript command", "'''sh\n$ mmzip ls no-such.zip\n'''\n", 1,
           "`mmzip ls no-such.zip` exited with status 1")
    expect("a Python block that raises", "'''python\nx = 1\n'''\n\n'''python\n\nraise ValueError('boom')\n'''\n",
           1, "the Python block raised", "doc.md\", line 7", "ValueError: boom")
    expect("a Python block whose variable is not defined", "'''python\nprint(y)\n'''\n", 1,
           "NameError: name 'y' is not defined")
    expect("a C block that does not compile", "'''c\nint x = ;\n'''\n", 1, "the C block does not compile")
    expect("a C program that fails", "'''c\nreturn 3;\n'''\n", 1, "the C program exited with status 3")
    expect("a block the harness cannot run, unmarked", "'''cmake\nproject(x)\n'''\n", 1,
           "cannot run a block of language 'cmake'")
    expect("a block without a language, unmarked", "'''\nsome text\n'''\n", 1,
           "cannot run a block of language ''")
    expect("a 'not run' marker without its reason", "<!-- not run: -->\n'''sh\ntrue\n'''\n", 1,
           "needs its reason")
    expect("a marker followed by prose", "<!-- not run: why -->\nSome prose.\n\n'''sh\ntrue\n'''\n", 1,
           "marker(s) not followed by a code block")
    expect("an output block after nothing", "<!-- output -->\n'''text\n1\n'''\n", 1,
           "an output block must follow a code block")
    expect("an unterminated block", "'''sh\ntrue\n", 1, "unterminated code block")
    print("all cases as expected")


if __name__ == "__main__":
    main()
