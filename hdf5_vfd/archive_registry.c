/*
 * archive_registry.c - one mmzip handle per archive for all the driver's files in this process.
 *
 * The core allows one writable handle per archive per process, and HDF5 opens every file twice (a
 * tentative open so that it can compare the file with those already open, then the real one), sometimes
 * while the same file is still open. So the driver keeps its own table of open archives, keyed by device
 * and inode, and its files share those handles. It also counts the members open for writing: each has its
 * own reservation in the handle's pending area, and giving up on one must not discard the others.
 */
#include "h5mz_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct h5mz_archive {
    mmzip_t *handle;
    char *path;
    dev_t dev;
    ino_t ino;
    int writable;
    int durable;
    int refs;
    int writers;         /* members open for writing through this handle */
    struct h5mz_archive *next;
};

static pthread_mutex_t registry_mutex = PTHREAD_MUTEX_INITIALIZER;
static h5mz_archive *registry;

static h5mz_archive *find_open(const struct stat *st) {
    for (h5mz_archive *a = registry; a; a = a->next)
        if (a->dev == st->st_dev && a->ino == st->st_ino) return a;
    return NULL;
}

static int share(h5mz_archive *a, const char *path, unsigned how) {
    int want_write = (how & H5MZ_ARCHIVE_WRITE) != 0;
    if (want_write && !a->writable)
        return h5mz_fail(MMZIP_EBUSY, "%s: cannot open the archive for writing: this process has HDF5 files in "
                         "it open read-only through the mmzip driver; close them first", path);
    if (want_write && a->durable != ((how & H5MZ_ARCHIVE_DURABLE) != 0))
        return h5mz_fail(MMZIP_EBUSY, "%s: the archive is already open %s durable commits in this process; "
                         "close its files before changing H5FD_MMZIP_DURABLE", path,
                         a->durable ? "with" : "without");
    if (!a->writable) {
        /* Let a file opened now see what another process committed since the archive was opened. */
        int st = mmzip_refresh(a->handle);
        if (st == MMZIP_ESTALE)
            return h5mz_fail_core(st, "%s: the archive was replaced on disk (mmzip pack?) while this process "
                                  "has HDF5 files open in it; close them and open again", path);
        if (st) return h5mz_fail_core(st, "%s: cannot refresh the archive", path);
    }
    a->refs++;
    return MMZIP_OK;
}

static int open_new(const char *path, unsigned how, h5mz_archive **out) {
    int want_write = (how & H5MZ_ARCHIVE_WRITE) != 0;
    /* "w+" also starts an archive in an existing empty file (one made by mktemp, say); it never discards
     * an existing archive. */
    const char *mode = !want_write ? "r" : (how & H5MZ_ARCHIVE_CREATE) ? "w+" : "r+";
    mmzip_options opts;
    mmzip_options_init(&opts);
    /* The driver decides when to commit: at HDF5's flush and close, never halfway through a version. */
    opts.commit_policy = MMZIP_COMMIT_MANUAL;
    if (want_write && (how & H5MZ_ARCHIVE_DURABLE)) opts.flags |= MMZIP_DURABLE;
    /* One HDF5 session is one open of the archive, and a tool runs many sessions on the same file: keep its
     * mapping between them. Nothing of the mapping is handed to HDF5 past a session (reads copy). */
    opts.flags |= MMZIP_KEEP_MAPPING;
    mmzip_t *h = NULL;
    int st = mmzip_open(path, mode, &opts, &h);
    if (st) return h5mz_fail_core(st, "cannot open the archive%s", want_write ? " for writing" : "");
    struct stat sb;
    h5mz_archive *a = calloc(1, sizeof *a);
    if (!a || !(a->path = strdup(path))) {
        free(a);
        mmzip_close(h);
        return h5mz_fail(MMZIP_ENOMEM, "%s: out of memory", path);
    }
    if (stat(path, &sb) != 0) {
        int err = errno;
        free(a->path);
        free(a);
        mmzip_close(h);
        return h5mz_fail(MMZIP_EIO, "%s: cannot stat the archive: %s", path, strerror(err));
    }
    a->handle = h;
    a->dev = sb.st_dev;
    a->ino = sb.st_ino;
    a->writable = want_write;
    a->durable = want_write && (how & H5MZ_ARCHIVE_DURABLE);
    a->refs = 1;
    a->next = registry;
    registry = a;
    *out = a;
    return MMZIP_OK;
}

int h5mz_archive_acquire(const char *path, unsigned how, h5mz_archive **out) {
    *out = NULL;
    pthread_mutex_lock(&registry_mutex);
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    h5mz_archive *a = exists ? find_open(&sb) : NULL;
    int st;
    if (a) {
        st = share(a, path, how);
        if (st == MMZIP_OK) *out = a;
    } else {
        st = open_new(path, how, out);
    }
    pthread_mutex_unlock(&registry_mutex);
    return st;
}

int h5mz_archive_release(h5mz_archive *a) {
    if (!a) return MMZIP_OK;
    pthread_mutex_lock(&registry_mutex);
    int st = MMZIP_OK;
    if (--a->refs == 0) {
        for (h5mz_archive **pp = &registry; *pp; pp = &(*pp)->next)
            if (*pp == a) {
                *pp = a->next;
                break;
            }
        st = mmzip_close(a->handle);
        if (st) st = h5mz_fail_core(st, "%s: closing the archive failed", a->path);
        free(a->path);
        free(a);
    }
    pthread_mutex_unlock(&registry_mutex);
    return st;
}

mmzip_t *h5mz_archive_handle(const h5mz_archive *a) { return a->handle; }
const char *h5mz_archive_path(const h5mz_archive *a) { return a->path; }
int h5mz_archive_writable(const h5mz_archive *a) { return a->writable; }

void h5mz_archive_identity(const h5mz_archive *a, dev_t *dev, ino_t *ino) {
    *dev = a->dev;
    *ino = a->ino;
}

void h5mz_archive_claim_writer(h5mz_archive *a) {
    pthread_mutex_lock(&registry_mutex);
    a->writers++;
    pthread_mutex_unlock(&registry_mutex);
}

void h5mz_archive_disclaim_writer(h5mz_archive *a) {
    pthread_mutex_lock(&registry_mutex);
    a->writers--;
    pthread_mutex_unlock(&registry_mutex);
}

int h5mz_archive_writers(h5mz_archive *a) {
    pthread_mutex_lock(&registry_mutex);
    int n = a->writers;
    pthread_mutex_unlock(&registry_mutex);
    return n;
}
