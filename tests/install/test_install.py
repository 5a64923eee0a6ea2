"""`cmake --install` gives bin/mmzip, lib/libmmzip.so, include/mmzip.h, a pkg-config file and a CMake package,
and a user's program builds against them both ways: find_package(mmzip) and pkg-config.

test_install_configured_prefix configures the source with CMAKE_INSTALL_PREFIX set to a temporary directory
(the core only) and installs there. test_install_relocated_prefix installs the build under test with
`cmake --install BUILD --prefix DIR`, as packagers and users of a prebuilt tree do."""
import os
import shutil
import zipfile

from mmzip_testlib import BUILD, SOURCE, TempDir, check_equal, main, run

CONSUMER = os.path.join(SOURCE, "tests", "install", "consumer")
PAYLOAD = b"written by an installed libmmzip consumer"
VERSION = "0.1.0"
# Under the sanitizer build the installed libmmzip is instrumented: a consumer built without the sanitizers
# must get ASan's runtime preloaded (CTest says where it is), as any user program would.
ASAN_RUNTIME = os.environ.get("MMZIP_ASAN_RUNTIME")
CONSUMER_ENV = {"LD_PRELOAD": ASAN_RUNTIME} if ASAN_RUNTIME else None


def assert_layout(prefix):
    for rel in ("bin/mmzip", "lib/libmmzip.so", "lib/libmmzip.so.0", "include/mmzip.h", "lib/pkgconfig/mmzip.pc",
                "lib/cmake/mmzip/mmzipConfig.cmake", "lib/cmake/mmzip/mmzipConfigVersion.cmake",
                "lib/cmake/mmzip/mmzipTargets.cmake"):
        assert os.path.exists(os.path.join(prefix, rel)), "not installed: %s under %s" % (rel, prefix)
    assert os.access(os.path.join(prefix, "bin/mmzip"), os.X_OK), "bin/mmzip is not executable"


def assert_consumer_works(exe, workdir):
    archive = os.path.join(workdir, "consumer.zip")
    out = run([exe, archive], env=CONSUMER_ENV).stdout
    check_equal(out.strip(), "consumer: mmzip %s, %d bytes verified" % (VERSION, len(PAYLOAD)), "consumer output")
    with zipfile.ZipFile(archive) as z:
        assert z.testzip() is None, "zipfile rejects the consumer's archive"
        check_equal(z.read("consumer/entry.txt"), PAYLOAD, "entry written by the consumer")


def assert_installed_cli_works(prefix, workdir):
    """The installed tool runs from its prefix with no LD_LIBRARY_PATH and finds the installed library."""
    mmzip = os.path.join(prefix, "bin", "mmzip")
    env = {"LD_LIBRARY_PATH": "", "MMZIP_LIBDIR": ""}
    check_equal(run([mmzip, "--version"], env=env).stdout.strip(), "mmzip " + VERSION, "installed mmzip --version")
    archive = os.path.join(workdir, "cli.zip")
    run([mmzip, "put", archive, "k", "-"], input=b"cli bytes", env=env)
    check_equal(run([mmzip, "cat", archive, "k"], env=env).stdout, "cli bytes", "installed mmzip cat")
    ldd = run(["ldd", mmzip]).stdout
    lib = next((l for l in ldd.splitlines() if "libmmzip.so" in l), "")
    assert os.path.realpath(prefix) in lib or prefix in lib, "installed mmzip loads another libmmzip: " + lib


def build_with_find_package(prefix, workdir):
    build = os.path.join(workdir, "consumer-cmake")
    run(["cmake", "-S", CONSUMER, "-B", build, "-DCMAKE_PREFIX_PATH=" + prefix, "-DCMAKE_C_FLAGS=-Wall -Wextra -Werror"])
    run(["cmake", "--build", build])
    cache = open(os.path.join(build, "CMakeCache.txt")).read()
    assert "mmzip_DIR:PATH=%s" % os.path.join(prefix, "lib", "cmake", "mmzip") in cache, \
        "find_package(mmzip) found a package outside %s" % prefix
    return os.path.join(build, "consumer")


def build_with_pkg_config(prefix, workdir):
    env = {"PKG_CONFIG_PATH": os.path.join(prefix, "lib", "pkgconfig")}
    check_equal(run(["pkg-config", "--modversion", "mmzip"], env=env).stdout.strip(), VERSION, "pkg-config version")
    cflags = run(["pkg-config", "--cflags", "mmzip"], env=env).stdout.split()
    libs = run(["pkg-config", "--libs", "mmzip"], env=env).stdout.split()
    libdir = run(["pkg-config", "--variable=libdir", "mmzip"], env=env).stdout.strip()
    check_equal(os.path.realpath(libdir), os.path.realpath(os.path.join(prefix, "lib")), "pkg-config libdir")
    includes = [os.path.realpath(f[2:]) for f in cflags if f.startswith("-I")]
    assert os.path.realpath(os.path.join(prefix, "include")) in includes, \
        "pkg-config --cflags does not point into %s: %s" % (prefix, cflags)
    exe = os.path.join(workdir, "consumer-pkgconfig")
    cc = os.environ.get("CC", "cc")
    run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", os.path.join(CONSUMER, "consumer.c"), "-o", exe] + cflags
        + libs + ["-Wl,-rpath," + libdir])
    return exe


def check_prefix(prefix, workdir):
    assert_layout(prefix)
    assert_installed_cli_works(prefix, workdir)
    assert_consumer_works(build_with_find_package(prefix, workdir), workdir)
    assert_consumer_works(build_with_pkg_config(prefix, workdir), workdir)


def test_install_configured_prefix():
    with TempDir() as d:
        prefix, build = os.path.join(d, "prefix"), os.path.join(d, "build")
        run(["cmake", "-S", SOURCE, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_INSTALL_PREFIX=" + prefix,
             "-DMMZIP_BUILD_TESTS=OFF", "-DMMZIP_BUILD_NCZARR=OFF", "-DMMZIP_BUILD_HDF5=OFF"])
        run(["cmake", "--build", build, "-j2"])
        run(["cmake", "--install", build])
        shutil.rmtree(build)  # nothing may point back into the build tree
        check_prefix(prefix, d)


def test_install_relocated_prefix():
    with TempDir() as d:
        prefix = os.path.join(d, "prefix")
        run(["cmake", "--install", BUILD, "--prefix", prefix])
        check_prefix(prefix, d)


if __name__ == "__main__":
    main([test_install_configured_prefix, test_install_relocated_prefix])
