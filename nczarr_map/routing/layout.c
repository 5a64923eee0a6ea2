/* layout.c - detection of the dataset directory of an archive. */
#include "layout.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const metadata_names[] = {".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json"};
#define N_METADATA_NAMES (sizeof metadata_names / sizeof metadata_names[0])

int mzn_is_zarr_metadata_name(const char *s, size_t n) {
    for (size_t i = 0; i < N_METADATA_NAMES; i++)
        if (strlen(metadata_names[i]) == n && memcmp(metadata_names[i], s, n) == 0) return 1;
    return 0;
}

int mzn_is_zarr_metadata_entry(const char *name, size_t len) {
    size_t start = len;
    while (start > 0 && name[start - 1] != '/') start--;
    return mzn_is_zarr_metadata_name(name + start, len - start);
}

typedef struct scan {
    uint64_t first_offset;
    char *first_dir;   /* top directory of the entry stored first, if it has one */
    char *candidate;   /* a top directory with metadata directly under it */
    int n_candidates;
    int failed;
} scan;

static int visit(const mmzip_entry_info *info, void *ctx) {
    scan *sc = ctx;
    const char *name = info->name;
    size_t n = info->name_len;
    const char *slash = memchr(name, '/', n);
    size_t dir_len = slash ? (size_t)(slash - name) : 0;
    if (info->header_offset < sc->first_offset) {
        sc->first_offset = info->header_offset;
        free(sc->first_dir);
        sc->first_dir = NULL;
        if (dir_len && !(sc->first_dir = strndup(name, dir_len))) sc->failed = 1;
    }
    /* "dir/.zgroup": metadata exactly one level down. */
    if (dir_len && mzn_is_zarr_metadata_name(slash + 1, n - dir_len - 1)) {
        if (!sc->candidate || strlen(sc->candidate) != dir_len || memcmp(sc->candidate, name, dir_len) != 0) {
            sc->n_candidates++;
            free(sc->candidate);
            if (!(sc->candidate = strndup(name, dir_len))) sc->failed = 1;
        }
    }
    return sc->failed ? MMZIP_ENOMEM : 0;
}

static int dir_has_metadata(mmzip_t *archive, const char *dir) {
    for (size_t i = 0; i < N_METADATA_NAMES; i++) {
        size_t n = strlen(dir) + 1 + strlen(metadata_names[i]) + 1;
        char *key = malloc(n);
        if (!key) return 0;
        snprintf(key, n, "%s/%s", dir, metadata_names[i]);
        int found = mmzip_exists(archive, key);
        free(key);
        if (found) return 1;
    }
    return 0;
}

static int set_prefix(mzn_layout *out, const char *dir) {
    size_t n = strlen(dir);
    out->prefix = malloc(n + 2);
    if (!out->prefix) return MMZIP_ENOMEM;
    memcpy(out->prefix, dir, n);
    out->prefix[n] = '/';
    out->prefix[n + 1] = '\0';
    out->has_zarr = 1;
    return MMZIP_OK;
}

int mzn_layout_detect(mmzip_t *archive, mzn_layout *out) {
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < N_METADATA_NAMES; i++) {
        if (mmzip_exists(archive, metadata_names[i])) {
            out->prefix = strdup("");
            out->has_zarr = 1;
            return out->prefix ? MMZIP_OK : MMZIP_ENOMEM;
        }
    }
    scan sc = {UINT64_MAX, NULL, NULL, 0, 0};
    int st = mmzip_list_ex(archive, NULL, MMZIP_LIST_NO_DATA_OFFSET, visit, &sc);
    if (st == MMZIP_OK) {
        if (sc.first_dir && dir_has_metadata(archive, sc.first_dir))
            st = set_prefix(out, sc.first_dir);
        else if (sc.n_candidates == 1)
            st = set_prefix(out, sc.candidate);
        else if (!(out->prefix = strdup("")))
            st = MMZIP_ENOMEM;
    }
    free(sc.first_dir);
    free(sc.candidate);
    if (st != MMZIP_OK) mzn_layout_clear(out);
    return st;
}

typedef struct tops {
    char **dirs;
    size_t count, cap;
    int failed;
} tops;

static int visit_top(const mmzip_entry_info *info, void *ctx) {
    tops *t = ctx;
    const char *slash = memchr(info->name, '/', info->name_len);
    if (!slash) return 0;
    size_t dir_len = (size_t)(slash - info->name);
    if (!dir_len || !mzn_is_zarr_metadata_name(slash + 1, info->name_len - dir_len - 1)) return 0;
    for (size_t i = 0; i < t->count; i++)
        if (strlen(t->dirs[i]) == dir_len && memcmp(t->dirs[i], info->name, dir_len) == 0) return 0;
    if (t->count == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 8;
        char **d = realloc(t->dirs, cap * sizeof *d);
        if (!d) return t->failed = 1, MMZIP_ENOMEM;
        t->dirs = d;
        t->cap = cap;
    }
    if (!(t->dirs[t->count] = strndup(info->name, dir_len))) return t->failed = 1, MMZIP_ENOMEM;
    t->count++;
    return 0;
}

int mzn_layout_top_datasets(mmzip_t *archive, char **names) {
    *names = NULL;
    for (size_t i = 0; i < N_METADATA_NAMES; i++)
        if (mmzip_exists(archive, metadata_names[i])) return 0;
    tops t = {NULL, 0, 0, 0};
    int st = mmzip_list_ex(archive, NULL, MMZIP_LIST_NO_DATA_OFFSET, visit_top, &t);
    int count = st == MMZIP_OK && !t.failed ? (int)t.count : -1;
    size_t len = 1;
    for (size_t i = 0; i < t.count && i < 8; i++) len += strlen(t.dirs[i]) + 6;
    if (count > 0 && (*names = malloc(len + 8))) {
        size_t o = 0;
        for (size_t i = 0; i < t.count && i < 8; i++)
            o += (size_t)snprintf(*names + o, len + 8 - o, "%s'%s/'", i ? ", " : "", t.dirs[i]);
        if (t.count > 8) snprintf(*names + o, len + 8 - o, ", ...");
    } else if (count > 0) {
        count = -1;
    }
    for (size_t i = 0; i < t.count; i++) free(t.dirs[i]);
    free(t.dirs);
    return count;
}

void mzn_layout_clear(mzn_layout *layout) {
    free(layout->prefix);
    layout->prefix = NULL;
    layout->has_zarr = 0;
}
