/*
 * member_locator.c - which member of which archive a file name means.
 *
 * Names follow the "archive.zip#/path/in/archive.h5" convention. '#' and "#/" are legal in file names too,
 * so which file such a name means is the core's rule (mmzip_split_name, mmzip.h), the same for every route:
 * a name that exists as written is that file, "A#/M" is a member only when A is an archive, and a name that
 * fits both readings is refused.
 *
 * An archive named alone opens its only HDF5 member. HDF5 recognises a file by its signature at offset 0,
 * 512, 1024, 2048, ... (a user block may come first), so the same rule picks the members that HDF5 would
 * open.
 */
#include "h5mz_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

const unsigned char h5mz_hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

static const char *skip_slashes(const char *s) {
    while (*s == '/') s++;
    return s;
}

int h5mz_target_parse(const char *name, const char *member_hint, int creating, h5mz_target *out) {
    memset(out, 0, sizeof *out);
    if (!name || !*name) return h5mz_fail(MMZIP_EINVAL, "mmzip driver: empty file name");
    size_t archive_len;
    unsigned how = creating ? MMZIP_NAME_CREATE | MMZIP_NAME_CREATE_ARCHIVE : 0;
    int st = mmzip_split_name(name, how, &archive_len);
    if (st) return h5mz_fail_core(st, "mmzip driver");
    const char *sep = archive_len < strlen(name) ? name + archive_len : NULL;
    const char *from_name = sep ? skip_slashes(sep + 2) : NULL;
    const char *from_hint = member_hint ? skip_slashes(member_hint) : NULL;
    if (from_name && !*from_name) from_name = NULL;
    if (from_hint && !*from_hint) from_hint = NULL;
    if (from_name && from_hint && strcmp(from_name, from_hint) != 0)
        return h5mz_fail(MMZIP_EINVAL, "mmzip driver: the file name '%s' names member '%s' but the file access "
                         "property list names '%s'", name, from_name, from_hint);
    const char *member = from_name ? from_name : from_hint;
    out->archive = strndup(name, archive_len);
    out->member = member ? strdup(member) : NULL;
    if (!out->archive || (member && !out->member)) {
        h5mz_target_free(out);
        return h5mz_fail(MMZIP_ENOMEM, "mmzip driver: out of memory for '%s'", name);
    }
    return MMZIP_OK;
}

void h5mz_target_free(h5mz_target *t) {
    free(t->archive);
    free(t->member);
    t->archive = t->member = NULL;
}

static const char *find_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++)
        if (strncasecmp(p, needle, n) == 0) return p;
    return NULL;
}

int h5mz_names_member(const char *name) { return name && find_ci(name, ".zip#/") != NULL; }

int h5mz_names_archive(const char *name) {
    if (!name) return 0;
    size_t len = strlen(name);
    return h5mz_names_member(name) || (len > 4 && strcasecmp(name + len - 4, ".zip") == 0);
}

int h5mz_find_signature(const uint8_t *data, uint64_t size, uint64_t *at) {
    const uint64_t siglen = sizeof h5mz_hdf5_signature;
    for (uint64_t off = 0; off <= size && size - off >= siglen; off = off ? off * 2 : 512) {
        if (memcmp(data + off, h5mz_hdf5_signature, siglen) == 0) {
            if (at) *at = off;
            return 1;
        }
    }
    return 0;
}

/* Deflated members are decoded to look at them only when their name says they are HDF5 or netCDF-4. */
static int has_hdf5_suffix(const char *name, size_t len) {
    static const char *const suffixes[] = {".h5", ".hdf5", ".he5", ".hdf", ".nc", ".nc4", ".cdf"};
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t n = strlen(suffixes[i]);
        if (len > n && strncasecmp(name + len - n, suffixes[i], n) == 0) return 1;
    }
    return 0;
}

typedef struct name_list {
    char **names;
    size_t count, cap;
    int failed;
} name_list;

static int push_name(name_list *l, const char *name, size_t len) {
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **grown = realloc(l->names, cap * sizeof *grown);
        if (!grown) return -1;
        l->names = grown;
        l->cap = cap;
    }
    if (!(l->names[l->count] = strndup(name, len))) return -1;
    l->count++;
    return 0;
}

static void free_names(name_list *l) {
    for (size_t i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

/* mmzip_list_ex holds the directory lock during its walk, so candidates are only collected here and their
 * bytes looked at after the walk. */
static int collect_candidate(const mmzip_entry_info *info, void *ctx) {
    name_list *l = ctx;
    if (info->size < sizeof h5mz_hdf5_signature) return 0;
    if (info->method != 0 && !(info->method == 8 && has_hdf5_suffix(info->name, info->name_len))) return 0;
    if (push_name(l, info->name, info->name_len) != 0) {
        l->failed = 1;
        return 1;
    }
    return 0;
}

int h5mz_find_only_hdf5_member(mmzip_t *archive, const char *archive_path, char **member) {
    *member = NULL;
    name_list candidates = {0};
    int st = mmzip_list_ex(archive, NULL, MMZIP_LIST_NO_DATA_OFFSET, collect_candidate, &candidates);
    if (candidates.failed) {
        free_names(&candidates);
        return h5mz_fail(MMZIP_ENOMEM, "%s: out of memory listing the archive", archive_path);
    }
    if (st < 0) {
        free_names(&candidates);
        return h5mz_fail_core(st, "%s: cannot list the archive", archive_path);
    }
    name_list found = {0};
    for (size_t i = 0; i < candidates.count; i++) {
        const void *data;
        uint64_t size;
        /* A member that cannot be read (bad CRC, unsupported method) is not an HDF5 member we could open;
         * the error surfaces if the user names it. One whose in-place edit is unfinished (being edited, or
         * awaiting recovery after its writer was killed) may well be the HDF5 member: that is said now, rather
         * than "no HDF5 member" (or, for a tool, the raw archive opened instead). */
        int gst = mmzip_get(archive, candidates.names[i], &data, &size);
        if (gst == MMZIP_EBUSY) {
            st = h5mz_fail_core(MMZIP_EBUSY, "%s: no member named, and member '%s' (perhaps the HDF5 one) is not "
                                "readable now",
                                archive_path, candidates.names[i]);
            goto out;
        }
        if (gst != MMZIP_OK) continue;
        if (!h5mz_find_signature(data, size, NULL)) continue;
        if (push_name(&found, candidates.names[i], strlen(candidates.names[i])) != 0) {
            st = h5mz_fail(MMZIP_ENOMEM, "%s: out of memory listing the archive", archive_path);
            goto out;
        }
    }
    if (found.count == 0) {
        st = h5mz_fail(MMZIP_ENOTFOUND, "%s: the archive holds no HDF5 member (no stored member, nor deflated "
                       "member named *.h5/*.nc/..., starts with the HDF5 signature)", archive_path);
    } else if (found.count > 1) {
        /* The first names, whole (a name cut in the middle would be a wrong name), and how many more. */
        char list[640] = "";
        size_t used = 0, shown = 0;
        for (; shown < found.count && shown < 8; shown++) {
            size_t room = sizeof list - used;
            int w = snprintf(list + used, room, "%s'%s'", shown ? ", " : "", found.names[shown]);
            if (w < 0 || (size_t)w >= room - 24) {
                list[used] = '\0';
                break;
            }
            used += (size_t)w;
        }
        if (shown < found.count)
            snprintf(list + used, sizeof list - used, "%sand %zu more", shown ? ", " : "", found.count - shown);
        st = h5mz_fail(MMZIP_EINVAL, "%s: the archive holds %zu HDF5 members (%s); name one, as in '%s#/%s'",
                       archive_path, found.count, list, archive_path, found.names[0]);
    } else {
        *member = found.names[0];
        found.names[0] = NULL;
        st = MMZIP_OK;
    }
out:
    free_names(&found);
    free_names(&candidates);
    return st;
}

const char *h5mz_netcdf3_kind(const uint8_t *data, uint64_t size) {
    if (size < 4 || data[0] != 'C' || data[1] != 'D' || data[2] != 'F') return NULL;
    switch (data[3]) {
    case 1: return "netCDF-3 classic";
    case 2: return "netCDF-3 64-bit offset";
    case 5: return "netCDF-3 CDF-5 (64-bit data)";
    default: return NULL;
    }
}

int h5mz_member_path_normalize(char *path) {
    char *out = path;
    const char *p = path;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.')) {
            /* an empty or "." component: nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (out == path) return 0; /* above the archive's root */
            out--;                     /* the '/' after the last component written */
            while (out > path && out[-1] != '/') out--;
        } else {
            memmove(out, p, n);
            out += n;
            if (slash) *out++ = '/';
        }
        p += n + (slash ? 1 : 0);
    }
    *out = '\0';
    return out > path;
}
