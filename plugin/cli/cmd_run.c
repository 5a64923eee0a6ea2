/* cmd_run.c - mmzip run: run an unmodified netCDF or HDF5 program with the plugins preloaded. */
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef MMZIP_BIN_TO_LIB
#define MMZIP_BIN_TO_LIB "../lib"
#endif
#ifndef MMZIP_INSTALL_LIBDIR
#define MMZIP_INSTALL_LIBDIR "/usr/local/lib"
#endif

/* The HDF5 driver first: both define fopen (the driver for netCDF-C's format sniff, recognising libnetcdf by
 * the caller's return address; the storage map for programs that fopen "a.zip#/group" before nc_open), and
 * the driver's must see the real caller; it passes every call that is not its own on to the storage map's.
 * No other symbol is defined by both. */
static const char *const plugins[] = {"libmmzip_h5fd.so", "libmmzip_nczarr.so"};

/* Looks for a plugin in $MMZIP_PLUGIN_DIR, then beside this executable (build tree and install tree share the
 * layout), then in the configured install directory. */
static int find_plugin(const char *name, char *out, size_t len) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    const char *env = getenv("MMZIP_PLUGIN_DIR");
    const char *dirs[4];
    char bin_lib[2 * PATH_MAX], build_lib[2 * PATH_MAX];
    int nd = 0;
    if (env && *env) dirs[nd++] = env;
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) *slash = '\0';
        if (snprintf(bin_lib, sizeof bin_lib, "%s/%s", exe, MMZIP_BIN_TO_LIB) < (int)sizeof bin_lib)
            dirs[nd++] = bin_lib;
        if (snprintf(build_lib, sizeof build_lib, "%s/../lib", exe) < (int)sizeof build_lib) dirs[nd++] = build_lib;
    }
    dirs[nd++] = MMZIP_INSTALL_LIBDIR;
    for (int i = 0; i < nd; i++) {
        if (snprintf(out, len, "%s/%s", dirs[i], name) >= (int)len) continue;
        if (access(out, R_OK) == 0) {
            char real[PATH_MAX];
            if (realpath(out, real)) snprintf(out, len, "%s", real);
            return 1;
        }
    }
    return 0;
}

static int run(int argc, char **argv) {
    int first = 1;
    if (first < argc && (strcmp(argv[first], "-h") == 0 || strcmp(argv[first], "--help") == 0)) {
        fputs(cmd_run.usage, stdout);
        return EXIT_OK;
    }
    if (first < argc && strcmp(argv[first], "--") == 0) first++;
    if (first >= argc) return cli_usage(&cmd_run, "missing COMMAND");
    /* Libraries already preloaded stay first (a sanitizer runtime must be the very first); the plugins come
     * after them, which is still before libnetcdf and libhdf5, the libraries they interpose. */
    char preload[8192] = "";
    size_t used = 0;
    const char *old = getenv("LD_PRELOAD");
    if (old && *old) {
        int w = snprintf(preload, sizeof preload, "%s", old);
        if (w < 0 || (size_t)w >= sizeof preload) {
            fprintf(stderr, "mmzip run: LD_PRELOAD is too long\n");
            return EXIT_FAIL;
        }
        used = (size_t)w;
    }
    int found = 0;
    for (size_t i = 0; i < sizeof plugins / sizeof plugins[0]; i++) {
        char path[PATH_MAX];
        if (!find_plugin(plugins[i], path, sizeof path)) continue;
        if (old && strstr(old, path)) { /* already preloaded (a nested mmzip run) */
            found++;
            continue;
        }
        int w = snprintf(preload + used, sizeof preload - used, "%s%s", used ? ":" : "", path);
        if (w < 0 || (size_t)w >= sizeof preload - used) {
            fprintf(stderr, "mmzip run: LD_PRELOAD is too long\n");
            return EXIT_FAIL;
        }
        used += (size_t)w;
        found++;
    }
    if (!found) {
        fprintf(stderr, "mmzip run: neither the netCDF plugin (libmmzip_nczarr.so) nor the HDF5 driver "
                        "(libmmzip_h5fd.so) is installed beside this mmzip; build them (they are part of the "
                        "default build when netCDF-C and HDF5 are found) or set MMZIP_PLUGIN_DIR\n");
        return EXIT_FAIL;
    }
    setenv("LD_PRELOAD", preload, 1);
    setenv("MMZIP_RUN", "1", 1);
    execvp(argv[first], argv + first);
    fprintf(stderr, "mmzip run: cannot run '%s': %s\n", argv[first], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}

const command cmd_run = {
    "run", "run a netCDF or HDF5 program with the mmzip plugins enabled",
    "usage: mmzip run [--] COMMAND [ARGS...]\n\n"
    "Runs COMMAND (ncdump, nccopy, ncks, h5dump, h5ls, python3, ...) unmodified, with the mmzip\n"
    "plugins preloaded: the netCDF storage map, so that paths ending in .zip and URLs with\n"
    "#mode=nczarr,zip or #mode=zarr,zip open the archive in place, and the HDF5 driver, so that\n"
    "'archive.zip#/member.h5' (or an archive with a single HDF5 member) opens without extracting.\n"
    "An archive with several HDF5 members must be named with one; the driver lists them on stderr.\n"
    "'archive.zip#/group' opens a Zarr group of the archive as a dataset of its own (an HDF5\n"
    "member at that path goes to the HDF5 driver; anything else is an error saying what is there).\n"
    "A name that exists as written is that file, even with '#/' in it ('d#/x.zip'); 'a.zip#/g'\n"
    "is inside a.zip only if a.zip is a ZIP archive (or a new one, when creating); a name that fits\n"
    "both readings is refused, naming both (mmzip(1), FILE NAMES WITH #).\n"
    "The plugins are looked for in $MMZIP_PLUGIN_DIR first, then beside this program, then in the\n"
    "install directory. The exit status is the command's; 126 or 127 if it cannot be run.\n\n"
    "Examples:\n"
    "  mmzip run ncdump -h data.zarr.zip\n"
    "  mmzip run nccopy in.nc out.zarr.zip\n"
    "  mmzip run h5dump 'data.zip#/run1.h5'\n"
    "  mmzip run ncdump 'atlas.zarr.zip#/lung'\n"
    "  mmzip run nccopy in.nc 'atlas.zarr.zip#/new'\n",
    run};
