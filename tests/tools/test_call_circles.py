#!/usr/bin/env python3
"""call_circles.py finds a circle, names the files and the names that tie them, accepts a known circle, fails
on a stale known one, and is not fooled by two static functions of one name."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CC = os.environ.get("MMZIP_CC", "cc")

SOURCES = {
    "plugin/src/alpha.c": "int beta_step(int); int alpha_step(int x) { return x ? beta_step(x - 1) : 0; }\n"
                          "static int helper(void) { return 1; } int alpha_helper(void) { return helper(); }\n",
    "plugin/src/beta.c": "int alpha_step(int); int beta_step(int x) { return x ? alpha_step(x - 1) : 1; }\n",
    "plugin/src/gamma.c": "int alpha_step(int); static int helper(void) { return 2; }\n"
                          "int gamma_top(void) { return alpha_step(3) + helper(); }\n",
    "plugin/src/delta.c": "#include <sys/stat.h>\nint delta_size(const char *p) { struct stat s; return stat(p, &s); }\n",
    "nczarr_map/stand_in.c": "#include <sys/stat.h>\nint stat(const char *p, struct stat *s) { (void)p; (void)s; return 0; }\n",
}


def run(tree, *extra):
    r = subprocess.run([sys.executable, os.path.join(HERE, "call_circles.py"), os.path.join(tree, "build"),
                        "--source-dir", tree, *extra], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def main():
    with tempfile.TemporaryDirectory() as tree:
        for rel, text in SOURCES.items():
            src = os.path.join(tree, rel)
            os.makedirs(os.path.dirname(src), exist_ok=True)
            with open(src, "w") as f:
                f.write(text)
            folder, name = os.path.split(rel)
            objdir = os.path.join(tree, "build", folder.split("/")[0], "CMakeFiles", "lib.dir",
                                  *folder.split("/")[1:])
            os.makedirs(objdir, exist_ok=True)
            subprocess.run([CC, "-c", src, "-o", os.path.join(objdir, name + ".o")], check=True)
        # A second copy of the library for unit tests is not read (it would tie nothing new, only repeat).
        code, out = run(tree)
        print(out)
        assert code == 1, code
        assert "NEW circle of 2 files: plugin/src/alpha.c plugin/src/beta.c" in out, out
        assert "plugin/src/alpha.c -> plugin/src/beta.c: beta_step" in out, out
        assert "plugin/src/beta.c -> plugin/src/alpha.c: alpha_step" in out, out
        assert "gamma.c" not in out.split("call_circles:")[0], "gamma only calls down into the circle"
        # The interposed stat ties delta.c to nothing; the static helpers tie nothing either.
        assert "stand_in" not in out, out
        assert "4 file-to-file" not in out and "3 file-to-file dependencies" in out, out

        known = os.path.join(tree, "known.txt")
        with open(known, "w") as f:
            f.write("# accepted for now\nplugin/src/alpha.c plugin/src/beta.c\n")
        code, out = run(tree, "--known", known)
        assert code == 0 and "known circle of 2 files" in out, out

        with open(known, "a") as f:
            f.write("plugin/src/gamma.c plugin/src/delta.c\n")
        code, out = run(tree, "--known", known)
        assert code == 1 and "STALE known circle" in out and "plugin/src/delta.c plugin/src/gamma.c" in out, out

        # Cut the circle: beta no longer calls up.
        with open(os.path.join(tree, "plugin/src/beta.c"), "w") as f:
            f.write("int beta_step(int x) { return x; }\n")
        subprocess.run([CC, "-c", os.path.join(tree, "plugin/src/beta.c"), "-o",
                        os.path.join(tree, "build/plugin/CMakeFiles/lib.dir/src/beta.c.o")], check=True)
        code, out = run(tree)
        assert code == 0 and "0 circle(s)" in out, out
    print("call_circles checker: finds, names, accepts known, fails stale, ignores statics and interposers")


if __name__ == "__main__":
    main()
