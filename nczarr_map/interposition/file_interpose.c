/*
 * file_interpose.c - stat() and fopen() of "archive.zip#/group" for programs that check their input name
 * before nc_open.
 *
 * NCO (ncks, ncrcat, ...) stat()s an input name, then fopen()s it for reading and closes it, before
 * netCDF-C ever sees it (nco_fl_mk_lcl; strace shows newfstatat, then openat O_RDONLY on the name); when
 * either fails it reports the file as missing or unreadable. A sub-dataset "a.zip#/lung" is not a file, so
 * such programs took only the URL form. Under `mmzip run` this plugin is preloaded, so these definitions
 * come before libc's: for a local "x.zip#/group" naming an existing Zarr group (path_routing.h:
 * mzn_route_zarr_group_archive), stat answers the archive's own stat and a read-only fopen opens the
 * archive; nc_open of the name is then this plugin's (path_routing.h), so netCDF-C never opens the name
 * itself. Every other name, including "a.zip#/member.h5", goes to the next definition untouched. Names
 * without "#/" cost one strstr.
 *
 * fopen is also the HDF5 driver's (its stand-in for netCDF-C's format sniff of "a.zip#/x.h5"), which
 * recognises libnetcdf by the caller's return address: `mmzip run` therefore preloads the driver before
 * this plugin, so that its fopen sees the real caller and passes every other call on to this one.
 *
 * Only the glibc >= 2.33 stat entry points (stat, stat64, lstat, lstat64) are defined: programs linked
 * against an older glibc call __xstat and are not covered.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "forward.h"
#include "path_routing.h"

#define EXPORT __attribute__((visibility("default")))

/* Set while this thread decides about a name: the archive is opened then, and every stat it makes is
 * forwarded, whatever its name. */
static __thread int deciding;

/* The archive to stat instead of path (malloc'ed), or NULL to forward path unchanged. */
static char *substitute(const char *path) {
    if (deciding || !path || !strstr(path, "#/")) return NULL;
    int saved = errno;
    deciding = 1;
    char *archive = mzn_route_zarr_group_archive(path);
    deciding = 0;
    errno = saved;
    return archive;
}

#define STAT_INTERPOSER(fn, st_type)                                                                      \
    EXPORT int fn(const char *restrict path, struct st_type *restrict buf) {                              \
        MZN_NEXT(int (*)(const char *restrict, struct st_type *restrict), next, #fn);                     \
        if (!next) {                                                                                      \
            errno = ENOSYS;                                                                               \
            return -1;                                                                                    \
        }                                                                                                 \
        char *archive = substitute(path);                                                                 \
        if (!archive) return next(path, buf);                                                             \
        int rc = next(archive, buf);                                                                      \
        free(archive);                                                                                    \
        return rc;                                                                                        \
    }

STAT_INTERPOSER(stat, stat)
STAT_INTERPOSER(stat64, stat64)
STAT_INTERPOSER(lstat, stat)
STAT_INTERPOSER(lstat64, stat64)

/* Read-only opens only: a sub-dataset is written through nc_create/nc_open, never as a file. */
#define FOPEN_INTERPOSER(fn)                                                                              \
    EXPORT FILE *fn(const char *restrict path, const char *restrict mode) {                               \
        MZN_NEXT(FILE * (*)(const char *restrict, const char *restrict), next, #fn);                      \
        if (!next) {                                                                                      \
            errno = ENOSYS;                                                                               \
            return NULL;                                                                                  \
        }                                                                                                 \
        char *archive = mode && mode[0] == 'r' && !strchr(mode, '+') ? substitute(path) : NULL;          \
        if (!archive) return next(path, mode);                                                            \
        FILE *f = next(archive, mode);                                                                    \
        free(archive);                                                                                    \
        return f;                                                                                         \
    }

FOPEN_INTERPOSER(fopen)
FOPEN_INTERPOSER(fopen64)
