/*
 * tool_shims.c - unmodified HDF5 and netCDF programs on the mmzip driver, under `mmzip run`.
 *
 * HDF5 1.10 has no way to name a third-party driver on a tool's command line or in the environment. What
 * it does have is public entry points that every program goes through, and `mmzip run` preloads this
 * library (LD_PRELOAD), so definitions here come first:
 *
 *   H5Fopen, H5Fcreate  A name that contains ".zip#/", or ends in ".zip" and is an archive holding an HDF5
 *                       member, is opened with the mmzip driver (on a copy of the caller's file access
 *                       properties, whatever driver they named). Every other call is passed on untouched. This serves h5dump, h5ls, h5py, and netCDF-C once it has decided that
 *                       the file is HDF5.
 *   fopen, fopen64      netCDF-C decides that by itself, before it calls HDF5: it fopen()s the path,
 *                       takes its length with lseek(fileno(fp), 0, SEEK_END) and reads 8 bytes at offsets
 *                       0, 512, 1024, ... (libdispatch/dinfermodel.c, openmagic/readmagic). "a.zip#/x.nc"
 *                       does not exist and "a.zip" starts with "PK", so it would refuse both. When
 *                       libnetcdf (and only libnetcdf: the caller's address is checked) opens such a name
 *                       for reading, it gets a stand-in: an unlinked temporary file as long as the member,
 *                       sparse, holding the member's bytes at exactly the offsets the sniff reads. Being a
 *                       real file it survives fileno/lseek/fseek/fread, whatever netCDF-C version does the
 *                       reading. netCDF-C closes it and goes on to H5Fopen, which lands in the driver.
 *
 * The shims act only when this library is in LD_PRELOAD. Loaded any other way (h5py's register_h5py()
 * loads it with ctypes), they pass everything on, so that loading the driver never changes how other
 * code opens files.
 *
 * Coordination with the netCDF storage-map plugin (libmmzip_nczarr), preloaded after this library (both define
 * fopen, and this one must see the real caller; the plugin's serves "a.zip#/group" for NCO's name check): it
 * takes nc_open of bare ".zip" paths that hold Zarr metadata and passes every other call on. So a bare
 * ".zip" reaching netCDF-C's sniff here is not Zarr, nor is an "a.zip#/..." (the plugin turns Zarr groups into
 * URLs before netCDF-C sees them).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "H5FDmmzip.h"
#include "h5mz_internal.h"

/* How many member bytes the stand-in holds at each offset netCDF-C probes (it reads 8). */
#define PROBE_BYTES 64

int h5mz_shims_active(void) {
    static atomic_int active = -1;
    int a = atomic_load(&active);
    if (a < 0) {
        const char *preload = getenv("LD_PRELOAD");
        a = preload && strstr(preload, "libmmzip_h5fd") != NULL;
        atomic_store(&active, a);
    }
    return a;
}

static void *next_definition(const char *symbol) {
    void *p = dlsym(RTLD_NEXT, symbol);
    if (!p) fprintf(stderr, "libmmzip_h5fd: cannot find the next definition of %s: %s\n", symbol, dlerror());
    return p;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Which names go to the driver                                                                           */

/* HDF5's tools (h5ls, h5dump) turn HDF5's error printing off and say only "unable to open file", which
 * hides what the driver knows: which archive, which members it holds, how to name one. So the driver's
 * message of a failed open goes to stderr, once per process and message (h5dump and h5ls try the open again
 * with every driver they know), unless HDF5 prints its error stack itself (it holds the message then). */
static void report_once(const char *message) {
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static char last[2048];
    if (!message || !*message) return;
    pthread_mutex_lock(&mu);
    if (strncmp(last, message, sizeof last - 1) != 0) {
        snprintf(last, sizeof last, "%s", message);
        fprintf(stderr, "libmmzip_h5fd: %s\n", message);
        fflush(stderr);
    }
    pthread_mutex_unlock(&mu);
}

static int hdf5_prints_errors(void) {
    H5E_auto2_t func = NULL;
    void *data = NULL;
    return H5Eget_auto2(H5E_DEFAULT, &func, &data) >= 0 && func != NULL;
}

/* Opens the archive's only HDF5 member (named or not); on success *data and *size are its bytes and the caller
 * releases *archive. */
static int open_member_bytes(const char *name, h5mz_archive **archive, const void **data, uint64_t *size) {
    h5mz_target t;
    int st = h5mz_target_parse(name, NULL, 0, &t);
    if (st) return st;
    st = h5mz_archive_acquire(t.archive, 0, archive);
    if (st == MMZIP_OK && !t.member) {
        st = h5mz_find_only_hdf5_member(h5mz_archive_handle(*archive), t.archive, &t.member);
        /* Several HDF5 members, or one that cannot be read now (its in-place edit is unfinished): netCDF-C
         * would go on to say "Unknown file format" of the ZIP itself. */
        if (st == MMZIP_EINVAL || st == MMZIP_EBUSY) report_once(h5mz_last_error());
    }
    if (st == MMZIP_OK) {
        st = mmzip_get(h5mz_archive_handle(*archive), t.member, data, size);
        if (st) st = h5mz_fail_core(st, "%s: member '%s'", t.archive, t.member);
        /* Awaiting recovery (or being written): netCDF-C would go on to "No such file or directory". */
        if (st == MMZIP_EBUSY) report_once(h5mz_last_error());
    }
    if (st && *archive) {
        h5mz_archive_release(*archive);
        *archive = NULL;
    }
    h5mz_target_free(&t);
    return st;
}

/* A bare "x.zip" is diverted only when it is an archive with HDF5 in it (several HDF5 members count: the
 * driver then says which to name); any other file of that name keeps its normal treatment. */
static int archive_holds_hdf5(const char *path) {
    h5mz_archive *a = NULL;
    if (h5mz_archive_acquire(path, 0, &a) != MMZIP_OK) return 0;
    char *member = NULL;
    int st = h5mz_find_only_hdf5_member(h5mz_archive_handle(a), path, &member);
    free(member);
    h5mz_archive_release(a);
    /* EBUSY: a member that may be the HDF5 one is mid-edit or awaits recovery; the driver says so. */
    return st == MMZIP_OK || st == MMZIP_EINVAL || st == MMZIP_EBUSY;
}

static int diverts(const char *name, hid_t fapl, int creating) {
    if (!h5mz_shims_active() || !h5mz_names_archive(name)) return 0;
    /* Whatever driver the caller chose: no other one can open a member, and h5dump and h5ls, when the
     * first open fails, retry with every driver they know (core and stdio would then find the first
     * member that happens to start at 512, 1024, ... and open the raw archive). */
    if (fapl != H5P_DEFAULT && H5Pget_driver(fapl) == H5FD_mmzip_init()) return 0;
    if (h5mz_names_member(name)) return 1;
    return !creating && archive_holds_hdf5(name);
}

/* The caller's file access properties with the mmzip driver in place of the default one. */
static hid_t mmzip_access_like(hid_t fapl) {
    hid_t own = fapl == H5P_DEFAULT ? H5Pcreate(H5P_FILE_ACCESS) : H5Pcopy(fapl);
    if (own < 0) return own;
    if (H5Pset_fapl_mmzip(own, NULL, 0) < 0) {
        H5Pclose(own);
        return H5I_INVALID_HID;
    }
    return own;
}

/* ---------------------------------------------------------------------------------------------------- */
/* HDF5 entry points                                                                                      */

/* After HDF5's own open of a ZIP named like an archive failed: if it is one that holds no HDF5 member, says
 * so (the tools would otherwise print only "unable to open file"). */
static void explain_no_member(const char *name) {
    h5mz_archive *a = NULL;
    if (h5mz_archive_acquire(name, 0, &a) != MMZIP_OK) return;
    char *member = NULL;
    if (h5mz_find_only_hdf5_member(h5mz_archive_handle(a), name, &member) == MMZIP_ENOTFOUND)
        report_once(h5mz_last_error());
    free(member);
    h5mz_archive_release(a);
}

__attribute__((visibility("default"))) hid_t H5Fopen(const char *name, unsigned flags, hid_t fapl) {
    static hid_t (*next)(const char *, unsigned, hid_t);
    if (!next && !(next = (hid_t(*)(const char *, unsigned, hid_t))next_definition("H5Fopen"))) return -1;
    if (!diverts(name, fapl, 0)) {
        hid_t file = next(name, flags, fapl);
        if (file < 0 && h5mz_shims_active() && h5mz_names_archive(name) && !h5mz_names_member(name)) {
            hid_t stack = H5Eget_current_stack(); /* as below: the caller may read why */
            explain_no_member(name);
            if (stack >= 0) H5Eset_current_stack(stack);
        }
        return file;
    }
    hid_t own = mmzip_access_like(fapl);
    if (own < 0) return own;
    h5mz_clear_open_failure();
    hid_t file = next(name, flags, own);
    /* The calls below would clear HDF5's error stack, which the caller (h5py) reads to say why. */
    hid_t stack = file < 0 ? H5Eget_current_stack() : H5I_INVALID_HID;
    /* h5py's mode "a" opens for writing first and creates the member when it is missing: that miss is no
     * failure to report (an outside review found the message misleading), and h5py reports a real one. */
    int missing = h5mz_open_failure_status() == MMZIP_ENOTFOUND || h5mz_open_failure_status() == MMZIP_ENOENT;
    int creates_next = (flags & H5F_ACC_RDWR) && missing;
    if (file < 0 && !hdf5_prints_errors() && !creates_next) report_once(h5mz_open_failure());
    H5Pclose(own);
    if (stack >= 0) H5Eset_current_stack(stack);
    return file;
}

__attribute__((visibility("default"))) hid_t H5Fcreate(const char *name, unsigned flags, hid_t fcpl, hid_t fapl) {
    static hid_t (*next)(const char *, unsigned, hid_t, hid_t);
    if (!next && !(next = (hid_t(*)(const char *, unsigned, hid_t, hid_t))next_definition("H5Fcreate"))) return -1;
    if (!diverts(name, fapl, 1)) return next(name, flags, fcpl, fapl);
    hid_t own = mmzip_access_like(fapl);
    if (own < 0) return own;
    h5mz_clear_open_failure();
    hid_t file = next(name, flags, fcpl, own);
    hid_t stack = file < 0 ? H5Eget_current_stack() : H5I_INVALID_HID;
    if (file < 0 && !hdf5_prints_errors()) report_once(h5mz_open_failure());
    H5Pclose(own);
    if (stack >= 0) H5Eset_current_stack(stack);
    return file;
}

/* ---------------------------------------------------------------------------------------------------- */
/* netCDF-C's format sniff                                                                                */

static int called_from_netcdf(const void *return_address) {
    Dl_info info;
    if (!dladdr(return_address, &info) || !info.dli_fname) return 0;
    const char *base = strrchr(info.dli_fname, '/');
    return strncmp(base ? base + 1 : info.dli_fname, "libnetcdf", 9) == 0;
}

/* The stand-in for netCDF-C's sniff described at the top, or NULL (errno set) to let fopen proceed. */
static FILE *sniff_stand_in(const char *path) {
    h5mz_archive *archive = NULL;
    const void *data;
    uint64_t size;
    if (open_member_bytes(path, &archive, &data, &size) != MMZIP_OK) return NULL;
    FILE *f = NULL;
    const char *kind = h5mz_netcdf3_kind(data, size);
    if (kind)
        /* netCDF-C reads netCDF-3 with its own I/O on the path, which no stand-in can serve: say so, rather
         * than let its "No such file or directory" suggest a wrong name. */
        fprintf(stderr, "libmmzip_h5fd: %s is a %s file, not HDF5 (netCDF-4): `mmzip run` serves HDF5 and "
                "netCDF-4 members only; extract it (mmzip cat ARCHIVE MEMBER > FILE) and open that file\n", path,
                kind);
    if (h5mz_find_signature(data, size, NULL) && (f = tmpfile()) != NULL) {
        int fd = fileno(f);
        int ok = ftruncate(fd, (off_t)size) == 0;
        for (uint64_t off = 0; ok && off < size; off = off ? off * 2 : 512) {
            size_t n = size - off < PROBE_BYTES ? (size_t)(size - off) : PROBE_BYTES;
            ok = pwrite(fd, (const uint8_t *)data + off, n, (off_t)off) == (ssize_t)n;
        }
        if (!ok) {
            fclose(f);
            f = NULL;
        }
    }
    h5mz_archive_release(archive);
    return f;
}

static FILE *maybe_stand_in(const char *path, const char *mode, const void *caller) {
    if (!h5mz_shims_active() || !path || !mode || mode[0] != 'r' || strchr(mode, '+')) return NULL;
    if (!h5mz_names_archive(path) || !called_from_netcdf(caller)) return NULL;
    int saved = errno;
    FILE *f = sniff_stand_in(path);
    errno = saved;
    return f;
}

__attribute__((visibility("default"))) FILE *fopen(const char *path, const char *mode) {
    static FILE *(*next)(const char *, const char *);
    FILE *f = maybe_stand_in(path, mode, __builtin_return_address(0));
    if (f) return f;
    if (!next && !(next = (FILE * (*)(const char *, const char *)) next_definition("fopen"))) return NULL;
    return next(path, mode);
}

__attribute__((visibility("default"))) FILE *fopen64(const char *path, const char *mode) {
    static FILE *(*next)(const char *, const char *);
    FILE *f = maybe_stand_in(path, mode, __builtin_return_address(0));
    if (f) return f;
    if (!next && !(next = (FILE * (*)(const char *, const char *)) next_definition("fopen64"))) return NULL;
    return next(path, mode);
}
