/*
 * member_names.c - which file a name "archive#/member" means (mmzip_split_name).
 *
 * The plugins, the CLI and the Python package all accept "a.zip#/path" for something inside an archive,
 * and '#' (even "#/") is legal in file names. Each of them used to split such names its own way (the first
 * "#/", the last ".zip#/", the first whose left side exists), so one name could mean two different files
 * on two routes, and a writer could create a file at the reading the user did not mean. One function here
 * decides for all of them, looking at what exists on disk and never guessing when two readings fit.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Every look at the file system goes through fstatat, not stat or lstat: the netCDF plugin interposes
 * those to answer for "a.zip#/group" what the archive is (file_interpose.c there), and this must see the
 * names as they are on disk. */
static int stat_path(const char *path, struct stat *st, int follow) {
    return fstatat(AT_FDCWD, path, st, follow ? 0 : AT_SYMLINK_NOFOLLOW);
}

/* The end record's search window: its fixed part plus the longest comment. */
#define TAIL_WINDOW (MZ_EOCD_FIXED + 65535u)

static int is_zip_signature(const unsigned char *p) {
    uint32_t sig = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return sig == MZ_SIG_LFH || sig == MZ_SIG_EOCD || sig == MZ_SIG_Z64_EOCD || sig == MZ_SIG_DD;
}

/* 1 if path is a regular file that is a ZIP: it starts with a ZIP record (every archive mmzip writes,
 * and most others), or (bytes prepended, as in a self-extracting archive) has an end record in its last
 * 64 KiB. Cheaper than an open, and it takes no lock, so that deciding what a name means never waits for
 * a writer. */
static int is_zip_file(const char *path) {
    struct stat st;
    if (stat_path(path, &st, 1) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)MZ_EOCD_FIXED) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    unsigned char head[4];
    int zip = pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head && is_zip_signature(head);
    if (!zip) {
        size_t n = st.st_size < (off_t)TAIL_WINDOW ? (size_t)st.st_size : TAIL_WINDOW;
        unsigned char *tail = malloc(n);
        if (tail && pread(fd, tail, n, st.st_size - (off_t)n) == (ssize_t)n)
            for (size_t i = n - MZ_EOCD_FIXED + 1; i-- > 0 && !zip;)
                zip = tail[i] == 'P' && tail[i + 1] == 'K' && tail[i + 2] == 5 && tail[i + 3] == 6;
        free(tail);
    }
    close(fd);
    return zip;
}

static int exists(const char *path) {
    struct stat st;
    return stat_path(path, &st, 0) == 0;
}

/* 1 if "<path>#" exists: a name "<path>#/..." then walks into it, and means no new archive <path>. */
static int hash_exists(const char *path) {
    size_t n = strlen(path);
    char *p = malloc(n + 2);
    if (!p) return 1;
    memcpy(p, path, n);
    memcpy(p + n, "#", 2);
    int found = exists(p);
    free(p);
    return found;
}

/* 1 if the directory path would be created in exists ("." for a name without '/'). */
static int parent_exists(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return 1;
    if (slash == path) return 1; /* "/x": the root */
    char *dir = strndup(path, (size_t)(slash - path));
    if (!dir) return 0;
    struct stat st;
    int ok = stat_path(dir, &st, 1) == 0 && S_ISDIR(st.st_mode);
    free(dir);
    return ok;
}

/* One reading of the name: the file as written (cut == len) or archive name[0, cut) and member after
 * "#/". */
typedef struct reading {
    size_t cut;
    int new_file; /* valid only as a file to be created */
} reading;

static void describe(char *buf, size_t cap, const char *name, size_t len, reading r) {
    if (r.cut == len)
        snprintf(buf, cap, "the file '%s'%s", name, r.new_file ? " (to be created)" : "");
    else
        snprintf(buf, cap, "the member '%s' of the archive '%.*s'%s", name + r.cut + 2, (int)r.cut, name,
                 r.new_file ? " (to be created)" : "");
}

int mmzip_split_name(const char *name, unsigned flags, size_t *archive_len) {
    if (!name || !archive_len) return mz_fail(MMZIP_EINVAL, "mmzip_split_name: NULL argument");
    if (flags & ~(unsigned)(MMZIP_NAME_CREATE | MMZIP_NAME_CREATE_ARCHIVE))
        return mz_fail(MMZIP_EINVAL, "mmzip_split_name: '%s': unknown flags %#x", name, flags);
    size_t len = strlen(name);
    *archive_len = len;
    const char *first = strstr(name, "#/");
    if (!first) return MMZIP_OK;
    const int create = (flags & MMZIP_NAME_CREATE) != 0, create_archive = (flags & MMZIP_NAME_CREATE_ARCHIVE) != 0;

    reading found[2];
    int n = 0;
    int whole_exists = exists(name);
    if (whole_exists || (create && parent_exists(name))) found[n++] = (reading){len, !whole_exists};
    char *prefix = strdup(name);
    if (!prefix) return mz_fail(MMZIP_ENOMEM, "'%s': out of memory", name);
    const char *last_tried = NULL;
    size_t last_cut = 0;
    for (const char *p = first; p && n < 2; p = strstr(p + 1, "#/")) {
        size_t cut = (size_t)(p - name);
        if (cut == 0) continue;
        memcpy(prefix, name, cut);
        prefix[cut] = '\0';
        last_tried = p;
        last_cut = cut;
        if (is_zip_file(prefix)) found[n++] = (reading){cut, 0};
        else if (create_archive && !whole_exists && !exists(prefix) && parent_exists(prefix) && !hash_exists(prefix))
            found[n++] = (reading){cut, 1};
    }
    free(prefix);

    if (n == 1) {
        *archive_len = found[0].cut;
        return MMZIP_OK;
    }
    if (n == 2) {
        char a[512], b[512];
        describe(a, sizeof a, name, len, found[0]);
        describe(b, sizeof b, name, len, found[1]);
        return mz_fail(MMZIP_EINVAL, "'%s' is ambiguous: it may name %s or %s; nothing was opened or created (%s)",
                       name, a, b,
                       found[0].new_file || found[1].new_file
                           ? "choose another name"
                           : "rename one of them");
    }
    if (last_tried && !create && !create_archive)
        return mz_fail(MMZIP_ENOENT, "'%s': no such file, and '%.*s' is not a ZIP archive (missing, or not a "
                       "ZIP file)", name, (int)last_cut, name);
    if (last_tried)
        return mz_fail(MMZIP_ENOENT, "'%s': cannot be created as written (its directory does not exist), and "
                       "'%.*s' is %s", name, (int)last_cut, name,
                       create_archive ? "neither a ZIP archive nor a new file in an existing directory"
                                      : "not a ZIP archive");
    return mz_fail(MMZIP_ENOENT, "'%s': no such file, and no archive before its '#/'", name);
}
