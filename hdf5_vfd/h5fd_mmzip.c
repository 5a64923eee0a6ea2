/*
 * h5fd_mmzip.c - the HDF5 side of the driver: its class, callbacks, file access properties, registration
 * and the plugin entry points.
 *
 * One source serves HDF5 1.10 and >= 1.13.2. The class struct gained `version` and `value` in front and
 * vector, selection, `del` and `ctl` callbacks inside when it moved to H5FDdevelop.h; designated
 * initialisers name only the fields this driver uses, so the layout difference is the compiler's problem.
 * The new callbacks stay NULL (HDF5 falls back to `read`/`write`; the selection callbacks' count type
 * changed between 1.14 releases, one more reason to leave them alone).
 *
 * Choices (docs/hdf5-guide.md explains them for users):
 *   - feature flags as sec2's, without DATA_SIEVE (reads are memcpy from the mapping already, a sieve
 *     buffer would add a copy), POSIX_COMPAT_HANDLE (there is no file descriptor of the member) and
 *     SUPPORTS_SWMR_IO (readers see committed versions, not HDF5's ordered in-place writes);
 *   - no `lock`: its mere presence makes HDF5 write "open for writing" status flags into v3 superblocks,
 *     which a crash would then leave in the published member (needing h5clear). The archive's writer lock
 *     already keeps a second writer out, and readers only ever see committed versions;
 *   - `cmp` compares the archive's device and inode and the member name, so HDF5 recognises a file opened
 *     twice and shares it;
 *   - no sb_* callbacks: a member is a plain HDF5 file that sec2 reads once extracted.
 */
#include <hdf5.h>

#if H5_VERSION_GE(1, 13, 2)
#include <H5FDdevelop.h>
#include <H5PLextern.h>
#define H5MZ_PLUGIN_API 1
#else
#define H5MZ_PLUGIN_API 0
#endif

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "H5FDmmzip.h"
#include "h5mz_internal.h"

#define MMZIP_MAXADDR ((haddr_t)(((uint64_t)1 << 63) - 1))

/* What H5Pset_fapl_mmzip() stores in the file access property list. */
typedef struct mmzip_fapl {
    char *member;
    unsigned flags;
    int from_file;  /* made by fapl_get from an open file: HDF5 passes it on to the files that file refers
                     * to (VDS sources, external links), whose names say which file they mean; its member
                     * is the referring one's and names nothing for them */
    char *referrer; /* from_file, of a member: the archive holding the referring member */
} mmzip_fapl;

/* One open HDF5 file. HDF5 sees only `pub`, which must come first. */
typedef struct mmzip_file {
    H5FD_t pub;
    h5mz_archive *archive;
    h5mz_member member;
    dev_t dev;
    ino_t ino;
    unsigned flags;
    haddr_t eoa;
    int is_plain;       /* not a member: an HDF5 file beside the archive (plain_file.c) */
    h5mz_plain plain;
} mmzip_file;

/* ---------------------------------------------------------------------------------------------------- */
/* Errors                                                                                                 */

/* The HDF5 minor error for an mmzip status; h5py turns these into OSError, FileNotFoundError and
 * FileExistsError. */
static hid_t minor_for(int status, hid_t otherwise) {
    switch (status) {
    case MMZIP_ENOTFOUND:
    case MMZIP_ENOENT:
        return H5E_CANTOPENFILE;
    case H5MZ_EEXIST:
        return H5E_FILEEXISTS;
    case MMZIP_ENOMEM:
        return H5E_CANTALLOC;
    default:
        return otherwise;
    }
}

/* Pushes the driver's last message onto HDF5's error stack. A missing or already existing member carries
 * "errno = N" as sec2's messages do: h5py reads it to raise FileNotFoundError or FileExistsError. */
static void push_error(const char *func, int status, hid_t minor) {
    int err = status == MMZIP_ENOTFOUND || status == MMZIP_ENOENT ? ENOENT : status == H5MZ_EEXIST ? EEXIST : 0;
    char suffix[96] = "";
    if (err) snprintf(suffix, sizeof suffix, " (errno = %d, %s)", err, strerror(err));
    H5Epush2(H5E_DEFAULT, __FILE__, func, __LINE__, H5E_ERR_CLS, H5E_VFL, minor_for(status, minor), "%s%s",
             h5mz_last_error(), suffix);
}

static void push_message(const char *func, hid_t major, hid_t minor, const char *message) {
    H5Epush2(H5E_DEFAULT, __FILE__, func, __LINE__, H5E_ERR_CLS, major, minor, "%s", message);
}

/* ---------------------------------------------------------------------------------------------------- */
/* File access properties                                                                                */

static void *fapl_copy(const void *info) {
    const mmzip_fapl *from = info;
    mmzip_fapl *to = calloc(1, sizeof *to);
    if (!to) return NULL;
    to->flags = from->flags;
    to->from_file = from->from_file;
    if ((from->member && !(to->member = strdup(from->member))) ||
        (from->referrer && !(to->referrer = strdup(from->referrer)))) {
        free(to->member);
        free(to);
        return NULL;
    }
    return to;
}

static herr_t fapl_free(void *info) {
    mmzip_fapl *fa = info;
    if (fa) {
        free(fa->member);
        free(fa->referrer);
    }
    free(fa);
    return 0;
}

/* H5Fget_access_plist() of an open file reports the member actually opened, and the archive that holds it
 * (for the files it refers to: see referred_member). */
static void *fapl_get(H5FD_t *file) {
    mmzip_file *f = (mmzip_file *)file;
    mmzip_fapl now = {f->member.name, f->flags, 1, f->is_plain ? NULL : (char *)h5mz_archive_path(f->archive)};
    return fapl_copy(&now);
}

/* ---------------------------------------------------------------------------------------------------- */
/* Open and close                                                                                         */

#if H5MZ_PLUGIN_API
/* Loaded by name (HDF5_DRIVER=mmzip), the driver gets no mmzip_fapl, only HDF5_DRIVER_CONFIG: the
 * member's name, possibly empty. */
static char *member_from_config(hid_t fapl) {
    ssize_t len = H5Pget_driver_config_str(fapl, NULL, 0);
    if (len <= 0) return NULL;
    char *s = malloc((size_t)len + 1);
    if (s && H5Pget_driver_config_str(fapl, s, (size_t)len + 1) < 0) {
        free(s);
        return NULL;
    }
    return s;
}
#endif

static unsigned member_access(unsigned flags) {
    unsigned how = 0;
    if (flags & H5F_ACC_RDWR) how |= H5MZ_OPEN_WRITE;
    if (flags & H5F_ACC_CREAT) how |= H5MZ_OPEN_CREATE;
    if (flags & H5F_ACC_TRUNC) how |= H5MZ_OPEN_TRUNCATE;
    if (flags & H5F_ACC_EXCL) how |= H5MZ_OPEN_EXCLUSIVE;
    return how;
}

/* Opens the archive and the member that target names, or the archive's only HDF5 member. */
static int open_member(mmzip_file *f, h5mz_target *target, unsigned flags, unsigned driver_flags) {
    unsigned how = member_access(flags);
    if (!target->member && (how & (H5MZ_OPEN_CREATE | H5MZ_OPEN_TRUNCATE)))
        return h5mz_fail(MMZIP_EINVAL, "%s: name the member to create, as in '%s#/data.h5' (or with the member "
                         "argument of H5Pset_fapl_mmzip / h5py's member=)", target->archive, target->archive);
    unsigned archive_how = 0;
    if (how & H5MZ_OPEN_WRITE) archive_how |= H5MZ_ARCHIVE_WRITE;
    if (how & H5MZ_OPEN_CREATE) archive_how |= H5MZ_ARCHIVE_CREATE;
    if (driver_flags & H5FD_MMZIP_DURABLE) archive_how |= H5MZ_ARCHIVE_DURABLE;
    int st = h5mz_archive_acquire(target->archive, archive_how, &f->archive);
    if (st) return st;
    if (!target->member) {
        st = h5mz_find_only_hdf5_member(h5mz_archive_handle(f->archive), target->archive, &target->member);
        if (st) goto fail;
    }
    if ((driver_flags & H5FD_MMZIP_VERIFY) && !(how & H5MZ_OPEN_TRUNCATE)) {
        /* Before the member is opened: nothing of a damaged member is handed to HDF5. */
        mmzip_t *h = h5mz_archive_handle(f->archive);
        if (mmzip_exists(h, target->member) && (st = mmzip_verify(h, target->member)) != MMZIP_OK) {
            h5mz_fail_core(st, "%s: member '%s' failed its check (H5FD_MMZIP_VERIFY)", target->archive,
                           target->member);
            goto fail;
        }
    }
    st = h5mz_member_open(&f->member, f->archive, target->member, how);
    if (st) goto fail;
    h5mz_archive_identity(f->archive, &f->dev, &f->ino);
    return MMZIP_OK;
fail:
    h5mz_archive_release(f->archive);
    f->archive = NULL;
    return st;
}

/* Serves path as a plain HDF5 file (plain_file.c). */
static int open_plain(mmzip_file *f, const char *path, unsigned flags) {
    int st = h5mz_plain_open(&f->plain, path, (flags & H5F_ACC_RDWR) != 0);
    if (st) return st;
    f->is_plain = 1;
    f->dev = f->plain.dev;
    f->ino = f->plain.ino;
    return MMZIP_OK;
}

/*
 * The names HDF5 builds for the files a member refers to (VDS sources, external link targets; see
 * plain_file.c), for opens of existing files only: a name without "#/" that is an HDF5 file and no archive
 * is that file; an "a.zip#/x.h5" whose archive has no member x.h5 is the HDF5 file x.h5 beside the archive,
 * if there is one. Otherwise the member is opened as usual, and its error stands.
 */
static int open_target(mmzip_file *f, const char *name, h5mz_target *target, unsigned flags) {
    int existing = !(flags & (H5F_ACC_CREAT | H5F_ACC_TRUNC | H5F_ACC_EXCL));
    int named = h5mz_names_member(name);
    /* A member named apart (h5py's member=) is a member: the file is no archive, not the file to open (an
     * outside review: the plain file was read, and written in mode "a", with no error). */
    if (existing && !named && !target->member && h5mz_plain_is_hdf5(target->archive))
        return open_plain(f, target->archive, flags);
    int st = open_member(f, target, flags, f->flags);
    if (st != MMZIP_ENOTFOUND || !existing || !named || !target->member) return st;
    char *saved = strdup(h5mz_last_error());
    char *beside = h5mz_beside_archive(target->archive, target->member);
    int pst = beside && h5mz_plain_is_hdf5(beside) ? open_plain(f, beside, flags) : st;
    free(beside);
    if (pst == st && saved) h5mz_fail(st, "%s", saved); /* the archive's message stands */
    free(saved);
    return pst;
}

/* name less the absolute form of the directory of the relative path referrer (its first dir bytes), or NULL if
 * name is not in that directory. */
static const char *after_directory(const char *name, const char *abs) {
    size_t n = strlen(abs);
    while (n > 1 && abs[n - 1] == '/') n--;
    if (strncmp(name, abs, n) != 0 || (name[n] != '/' && !(n == 1 && abs[0] == '/'))) return NULL;
    const char *rel = name + n;
    while (*rel == '/') rel++;
    return rel;
}

static const char *strip_absolute_directory(const char *name, const char *referrer, size_t dir) {
    char *d = strndup(dir ? referrer : ".", dir ? dir : 1);
    if (!d) return NULL;
    /* HDF5 builds the name from the working directory and the name as given (H5_build_extpath), without
     * resolving symbolic links: that form first, then the resolved one. */
    const char *rel = NULL;
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd)) {
        size_t need = strlen(cwd) + 1 + strlen(d) + 1;
        char *lexical = malloc(need);
        if (lexical) {
            snprintf(lexical, need, "%s/%s", cwd, d);
            /* "./" and trailing "/." of the relative part name the same directory */
            size_t L = strlen(lexical);
            while (L >= 2 && lexical[L - 1] == '.' && lexical[L - 2] == '/') lexical[L -= 2] = '\0';
            for (char *dot; (dot = strstr(lexical, "/./"));) memmove(dot, dot + 2, strlen(dot + 2) + 1);
            rel = after_directory(name, lexical);
            free(lexical);
        }
    }
    if (!rel) {
        char *abs = realpath(d, NULL);
        if (abs) rel = after_directory(name, abs);
        free(abs);
    }
    free(d);
    return rel;
}

/*
 * A member opened as "a.zip" with the member given apart (h5py's member=, H5Pset_fapl_mmzip) refers to a VDS
 * source or link target "x.h5" as HDF5 builds it: beside the archive ("dir/x.h5"), or as given. That is what
 * "a.zip#/x.h5" means for a member opened by that name, which open_target finds in the archive first and
 * beside it second; so the same name is returned here ("dir/a.zip#/x.h5", to free), or NULL when name is not
 * a file of the referring archive's directory (or names a member already). Without it a source inside the
 * archive read as fill values with no error.
 */
static char *referred_member(const mmzip_fapl *fa, const char *name) {
    if (!fa || !fa->from_file || !fa->referrer || h5mz_names_member(name)) return NULL;
    const char *slash = strrchr(fa->referrer, '/');
    size_t dir = slash ? (size_t)(slash - fa->referrer) + 1 : 0;
    const char *rel = name;
    if (name[0] == '/' && fa->referrer[0] != '/') {
        /* External links are named from the referring file's absolute directory (H5_build_extpath). */
        rel = strip_absolute_directory(name, fa->referrer, dir);
        if (!rel) return NULL;
    } else if (name[0] == '/' || dir) {
        if (strncmp(name, fa->referrer, dir) != 0) return NULL;
        rel = name + dir;
    }
    if (!*rel) return NULL;
    /* Relative to the referring member's own directory in the archive ("dir/" of "dir/m.h5"), as HDF5 would
     * have built it beside the file before it went into the archive; "../x.h5" climbs within the archive. */
    const char *mslash = fa->member ? strrchr(fa->member, '/') : NULL;
    size_t n = strlen(fa->referrer), md = mslash ? (size_t)(mslash - fa->member) + 1 : 0, r = strlen(rel);
    char *out = malloc(n + 2 + md + r + 1);
    if (!out) return NULL;
    memcpy(out, fa->referrer, n);
    memcpy(out + n, "#/", 2);
    memcpy(out + n + 2, fa->member, md);
    memcpy(out + n + 2 + md, rel, r + 1);
    if (!h5mz_member_path_normalize(out + n + 2)) {
        free(out);
        return NULL; /* it climbs out of the archive: a file beside it, as HDF5 named it */
    }
    return out;
}

static H5FD_t *vfd_open(const char *name, unsigned flags, hid_t fapl, haddr_t maxaddr) {
    if (!name || !*name) {
        push_message(__func__, H5E_ARGS, H5E_BADVALUE, "mmzip driver: invalid file name");
        return NULL;
    }
    if (maxaddr == 0 || maxaddr == HADDR_UNDEF || maxaddr > MMZIP_MAXADDR) {
        push_message(__func__, H5E_ARGS, H5E_BADRANGE, "mmzip driver: bogus maxaddr");
        return NULL;
    }
    const mmzip_fapl *fa = H5Pget_driver_info(fapl);
    char *config_member = NULL;
#if H5MZ_PLUGIN_API
    if (!fa) config_member = member_from_config(fapl);
#endif
    mmzip_file *f = calloc(1, sizeof *f);
    h5mz_target target;
    int existing = !(flags & (H5F_ACC_CREAT | H5F_ACC_TRUNC | H5F_ACC_EXCL));
    char *in_archive = existing ? referred_member(fa, name) : NULL;
    if (in_archive) name = in_archive;
    int st = f ? h5mz_target_parse(name, fa ? (fa->from_file ? NULL : fa->member) : config_member, !existing,
                                     &target)
               : h5mz_fail(MMZIP_ENOMEM, "mmzip driver: out of memory opening '%s'", name);
    /* A file a member refers to as "../x.h5" from "dir/m.h5" is named "a.zip#/dir/../x.h5" by HDF5: the member
     * x.h5 (a name that would climb out of the archive stays as it is, and is refused as such). */
    if (st == MMZIP_OK && existing && fa && fa->from_file && target.member && strstr(target.member, ".."))
        h5mz_member_path_normalize(target.member);
    free(config_member);
    if (st == MMZIP_OK) {
        f->flags = fa ? fa->flags : 0;
        st = open_target(f, name, &target, flags);
        h5mz_target_free(&target);
    }
    free(in_archive);
    if (st) {
        h5mz_note_open_failure(st);
        push_error(__func__, st, H5E_CANTOPENFILE);
        free(f);
        return NULL;
    }
    return &f->pub;
}

static herr_t vfd_close(H5FD_t *file) {
    mmzip_file *f = (mmzip_file *)file;
    if (f->is_plain) {
        h5mz_plain_close(&f->plain);
        free(f);
        return 0;
    }
    int st = h5mz_member_close(&f->member);
    if (st) push_error(__func__, st, H5E_CANTCLOSEFILE);
    int rst = h5mz_archive_release(f->archive);
    if (rst && !st) push_error(__func__, rst, H5E_CANTCLOSEFILE);
    free(f);
    return st || rst ? -1 : 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Identity and capabilities                                                                             */

static int order(int c) { return c < 0 ? -1 : c > 0; }

static int vfd_cmp(const H5FD_t *a, const H5FD_t *b) {
    const mmzip_file *f1 = (const mmzip_file *)a, *f2 = (const mmzip_file *)b;
    if (f1->dev != f2->dev) return f1->dev < f2->dev ? -1 : 1;
    if (f1->ino != f2->ino) return f1->ino < f2->ino ? -1 : 1;
    if (f1->is_plain != f2->is_plain) return f1->is_plain ? -1 : 1;
    if (f1->is_plain) return 0;
    return order(strcmp(f1->member.name, f2->member.name));
}

/* Also called with file == NULL, for the class's capabilities. */
static herr_t vfd_query(const H5FD_t *file, unsigned long *flags) {
    (void)file;
    if (flags)
        *flags = H5FD_FEAT_AGGREGATE_METADATA | H5FD_FEAT_ACCUMULATE_METADATA | H5FD_FEAT_AGGREGATE_SMALLDATA |
                 H5FD_FEAT_DEFAULT_VFD_COMPATIBLE;
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* Addresses                                                                                              */

static haddr_t vfd_get_eoa(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    return ((const mmzip_file *)file)->eoa;
}

static herr_t vfd_set_eoa(H5FD_t *file, H5FD_mem_t type, haddr_t addr) {
    (void)type;
    if (addr > MMZIP_MAXADDR) {
        push_message(__func__, H5E_ARGS, H5E_OVERFLOW, "mmzip driver: address overflow");
        return -1;
    }
    ((mmzip_file *)file)->eoa = addr;
    return 0;
}

static haddr_t vfd_get_eof(const H5FD_t *file, H5FD_mem_t type) {
    (void)type;
    const mmzip_file *f = (const mmzip_file *)file;
    return (haddr_t)(f->is_plain ? f->plain.eof : f->member.eof);
}

static int region_ok(haddr_t addr, size_t size) {
    return addr != HADDR_UNDEF && addr <= MMZIP_MAXADDR && size <= MMZIP_MAXADDR - addr;
}

/* ---------------------------------------------------------------------------------------------------- */
/* I/O                                                                                                    */

static herr_t vfd_read(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size, void *buf) {
    (void)type;
    (void)dxpl;
    if (!region_ok(addr, size)) {
        push_message(__func__, H5E_ARGS, H5E_OVERFLOW, "mmzip driver: read address overflow");
        return -1;
    }
    mmzip_file *f = (mmzip_file *)file;
    if (f->is_plain) {
        int st = h5mz_plain_read(&f->plain, addr, size, buf);
        if (st) push_error(__func__, st, H5E_READERROR);
        return st ? -1 : 0;
    }
    h5mz_member_read(&f->member, addr, size, buf);
    return 0;
}

static herr_t vfd_write(H5FD_t *file, H5FD_mem_t type, hid_t dxpl, haddr_t addr, size_t size,
                          const void *buf) {
    (void)type;
    (void)dxpl;
    if (!region_ok(addr, size)) {
        push_message(__func__, H5E_ARGS, H5E_OVERFLOW, "mmzip driver: write address overflow");
        return -1;
    }
    mmzip_file *f = (mmzip_file *)file;
    int st = f->is_plain ? h5mz_plain_write(&f->plain, addr, size, buf) : h5mz_member_write(&f->member, addr, size, buf);
    if (st) {
        push_error(__func__, st, H5E_WRITEERROR);
        return -1;
    }
    return 0;
}

/* HDF5 calls flush (closing or not) after it has written everything it means to: the moment to publish. */
static herr_t vfd_flush(H5FD_t *file, hid_t dxpl, bool closing) {
    (void)dxpl;
    (void)closing;
    mmzip_file *f = (mmzip_file *)file;
    if (f->is_plain || !f->member.claimed) return 0;
    int st = h5mz_member_publish(&f->member);
    if (st) {
        push_error(__func__, st, H5E_CANTFLUSH);
        return -1;
    }
    return 0;
}

/* HDF5 truncates to its end of allocation on every flush. Only the size to be published changes: the
 * archive is never shrunk (other entries and the directory follow the member). */
static herr_t vfd_truncate(H5FD_t *file, hid_t dxpl, bool closing) {
    (void)dxpl;
    (void)closing;
    mmzip_file *f = (mmzip_file *)file;
    if (f->is_plain) {
        int pst = h5mz_plain_set_eof(&f->plain, f->eoa);
        if (pst) push_error(__func__, pst, H5E_CANTUPDATE);
        return pst ? -1 : 0;
    }
    if (!f->member.claimed) return 0;
    int st = h5mz_member_set_eof(&f->member, f->eoa);
    if (st) {
        push_error(__func__, st, H5E_CANTUPDATE);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------------------- */
/* The class and its registration                                                                         */

static pthread_mutex_t registration_mutex = PTHREAD_MUTEX_INITIALIZER;
static hid_t driver_id = H5I_INVALID_HID;

/* HDF5 drops the class at H5close() (and for plugins when it unloads them); the next use registers anew. */
static herr_t vfd_terminate(void) {
    pthread_mutex_lock(&registration_mutex);
    driver_id = H5I_INVALID_HID;
    pthread_mutex_unlock(&registration_mutex);
    return 0;
}

static const H5FD_class_t mmzip_class = {
#if H5MZ_PLUGIN_API
    .version = H5FD_CLASS_VERSION,
    .value = H5FD_MMZIP_VALUE,
#endif
    .name = H5FD_MMZIP_NAME,
    .maxaddr = MMZIP_MAXADDR,
    .fc_degree = H5F_CLOSE_WEAK,
    .terminate = vfd_terminate,
    .fapl_size = sizeof(mmzip_fapl),
    .fapl_get = fapl_get,
    .fapl_copy = fapl_copy,
    .fapl_free = fapl_free,
    .open = vfd_open,
    .close = vfd_close,
    .cmp = vfd_cmp,
    .query = vfd_query,
    .get_eoa = vfd_get_eoa,
    .set_eoa = vfd_set_eoa,
    .get_eof = vfd_get_eof,
    .read = vfd_read,
    .write = vfd_write,
    .flush = vfd_flush,
    .truncate = vfd_truncate,
    .fl_map = H5FD_FLMAP_DICHOTOMY,
};

hid_t H5FD_mmzip_init(void) {
    pthread_mutex_lock(&registration_mutex);
    if (driver_id < 0 || H5Iget_type(driver_id) != H5I_VFL) driver_id = H5FDregister(&mmzip_class);
    hid_t id = driver_id;
    pthread_mutex_unlock(&registration_mutex);
    return id;
}

herr_t H5Pset_fapl_mmzip(hid_t fapl, const char *member, unsigned flags) {
    if (H5Pisa_class(fapl, H5P_FILE_ACCESS) <= 0) {
        push_message(__func__, H5E_ARGS, H5E_BADTYPE, "H5Pset_fapl_mmzip: not a file access property list");
        return -1;
    }
    const unsigned known = H5FD_MMZIP_DURABLE | H5FD_MMZIP_VERIFY;
    if (flags & ~known) {
        char msg[96];
        snprintf(msg, sizeof msg, "H5Pset_fapl_mmzip: unknown flags 0x%x", flags & ~known);
        push_message(__func__, H5E_ARGS, H5E_BADVALUE, msg);
        return -1;
    }
    hid_t id = H5FD_mmzip_init();
    if (id < 0) return -1;
    mmzip_fapl fa = {(char *)(member && *member ? member : NULL), flags, 0, NULL};
    return H5Pset_driver(fapl, id, &fa);
}

herr_t H5Pget_fapl_mmzip(hid_t fapl, char **member, unsigned *flags) {
    hid_t id = H5FD_mmzip_init();
    if (id < 0) return -1;
    if (H5Pget_driver(fapl) != id) {
        push_message(__func__, H5E_PLIST, H5E_BADVALUE, "H5Pget_fapl_mmzip: the mmzip driver is not set");
        return -1;
    }
    const mmzip_fapl *fa = H5Pget_driver_info(fapl);
    if (member) {
        *member = NULL;
        if (fa && fa->member && !(*member = strdup(fa->member))) {
            push_message(__func__, H5E_RESOURCE, H5E_CANTALLOC, "H5Pget_fapl_mmzip: out of memory");
            return -1;
        }
    }
    if (flags) *flags = fa ? fa->flags : 0;
    return 0;
}

#if H5MZ_PLUGIN_API
/* The dynamic-plugin entry points (HDF5 >= 1.13.2): HDF5_DRIVER=mmzip finds the class through these. */
H5PLUGIN_DLL H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_VFD; }
H5PLUGIN_DLL const void *H5PLget_plugin_info(void) { return &mmzip_class; }
#endif
