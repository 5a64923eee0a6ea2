/* subdataset.c - what an archive holds at "#/path", and the messages about it. */
#include "subdataset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "diag.h"
#include "layout.h"
#include "json.h"

char *mzn_subdataset_normalize(const char *path) {
    size_t n = strlen(path);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (const char *p = path; *p;) {
        while (*p == '/') p++;
        size_t seg = strcspn(p, "/");
        if (!seg) break;
        if ((seg == 1 && p[0] == '.') || (seg == 2 && p[0] == '.' && p[1] == '.')) {
            free(out);
            return NULL;
        }
        if (o) out[o++] = '/';
        memcpy(out + o, p, seg);
        o += seg;
        p += seg;
    }
    out[o] = '\0';
    return out;
}

int mzn_subdataset_has_hdf5_suffix(const char *path) {
    static const char *const suffixes[] = {".h5", ".hdf5", ".he5", ".hdf", ".nc", ".nc4", ".cdf"};
    const char *last = strrchr(path, '/');
    last = last ? last + 1 : path;
    size_t len = strlen(last);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t n = strlen(suffixes[i]);
        if (len > n && strcasecmp(last + len - n, suffixes[i]) == 0) return 1;
    }
    return 0;
}

static char *join(const char *a, const char *b, const char *c) {
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

/* HDF5 finds its superblock at 0, 512, 1024, 2048, ... (a user block may come first). Only those bytes are
 * read: a member may be large, and compressed. -1 if the member cannot be read now (MMZIP_EBUSY: an in-place
 * edit is under way, or awaits recovery after its writer was killed), with the core's message in why. */
static int is_hdf5(mmzip_t *archive, const char *member, uint64_t size, char *why, size_t why_len) {
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    for (uint64_t off = 0; off <= size && size - off >= sizeof sig; off = off ? off * 2 : 512) {
        unsigned char got[sizeof sig];
        size_t n = 0;
        int st = mmzip_read(archive, member, off, got, sizeof got, &n);
        if (st == MMZIP_EBUSY) {
            snprintf(why, why_len, "%s", mmzip_last_error());
            return -1;
        }
        if (st != MMZIP_OK || n != sizeof got) return 0;
        if (memcmp(got, sig, sizeof sig) == 0) return 1;
    }
    return 0;
}

/* "group" or "array" from a Zarr v3 zarr.json, or NULL. */
static const char *v3_node_type(mmzip_t *archive, const char *name, mzj_value **doc) {
    const void *data;
    uint64_t len;
    char err[96];
    *doc = NULL;
    if (mmzip_get(archive, name, &data, &len) != MMZIP_OK) return NULL;
    if (mzj_parse(data, (size_t)len, doc, err, sizeof err) != 0) return NULL;
    return mzj_string(mzj_get(*doc, "node_type"));
}

typedef struct below {
    size_t count;
    char first[3][128];
} below;

static int count_below(const mmzip_entry_info *info, void *ctx) {
    below *b = ctx;
    if (b->count < 3) {
        size_t n = info->name_len < sizeof b->first[0] - 1 ? info->name_len : sizeof b->first[0] - 1;
        memcpy(b->first[b->count], info->name, n);
        b->first[b->count][n] = '\0';
    }
    b->count++;
    return 0;
}

/* Classifies base + path ("" or "data.zarr/" + "lung/sub"). */
static int classify(mmzip_t *archive, const char *base, const char *path, mzn_target *out) {
    char *member = join(base, path, "");
    char *prefix = join(base, path, "/");
    char *zgroup = join(base, path, "/.zgroup");
    char *zarray = join(base, path, "/.zarray");
    char *zjson = join(base, path, "/zarr.json");
    char desc[600];
    int rc = MMZIP_OK;
    if (!member || !prefix || !zgroup || !zarray || !zjson) {
        rc = MMZIP_ENOMEM;
        goto out;
    }
    out->kind = MZN_TARGET_NONE;
    uint64_t size = 0;
    mzj_value *doc = NULL;
    const char *node;
    char why[400];
    if (mmzip_size(archive, member, &size) == MMZIP_OK) {
        int hdf5 = is_hdf5(archive, member, size, why, sizeof why);
        out->kind = hdf5 > 0 ? MZN_TARGET_HDF5_MEMBER : MZN_TARGET_OTHER_MEMBER;
        out->unreadable = hdf5 < 0;
        if (hdf5 < 0)
            snprintf(desc, sizeof desc, "%s", why);
        else
            snprintf(desc, sizeof desc, "a member '%s' of %llu bytes that %s", member, (unsigned long long)size,
                     hdf5 ? "is an HDF5 file" : "is not an HDF5 file (no HDF5 signature)");
    } else if (mmzip_exists(archive, zgroup)) {
        out->kind = MZN_TARGET_ZARR_GROUP;
        snprintf(desc, sizeof desc, "a Zarr v2 group ('%s')", zgroup);
    } else if (mmzip_exists(archive, zarray)) {
        out->kind = MZN_TARGET_ZARR_ARRAY;
        snprintf(desc, sizeof desc, "a Zarr v2 array ('%s'), not a group", zarray);
    } else if ((node = v3_node_type(archive, zjson, &doc)) && strcmp(node, "group") == 0) {
        out->kind = MZN_TARGET_ZARR_GROUP;
        snprintf(desc, sizeof desc, "a Zarr v3 group ('%s')", zjson);
    } else if (node && strcmp(node, "array") == 0) {
        out->kind = MZN_TARGET_ZARR_ARRAY;
        snprintf(desc, sizeof desc, "a Zarr v3 array ('%s'), not a group", zjson);
    } else {
        below b = {0};
        mmzip_list_ex(archive, prefix, MMZIP_LIST_NO_DATA_OFFSET, count_below, &b);
        if (b.count) {
            out->kind = MZN_TARGET_ENTRIES;
            snprintf(desc, sizeof desc, "%zu entr%s under '%s' (%s%s%s%s%s%s) but no Zarr group metadata "
                     "('%s' or a group's '%s') and no member named '%s'", b.count, b.count == 1 ? "y" : "ies",
                     prefix, b.first[0], b.count > 1 ? ", " : "", b.count > 1 ? b.first[1] : "",
                     b.count > 2 ? ", " : "", b.count > 2 ? b.first[2] : "", b.count > 3 ? ", ..." : "", zgroup,
                     zjson, member);
        } else {
            snprintf(desc, sizeof desc, "nothing: no member '%s' and no entry under '%s'", member, prefix);
        }
    }
    mzj_free(doc);
    out->prefix = prefix;
    prefix = NULL;
    if (!(out->description = strdup(desc))) rc = MMZIP_ENOMEM;
out:
    free(member);
    free(prefix);
    free(zgroup);
    free(zarray);
    free(zjson);
    return rc;
}

int mzn_subdataset_find(mmzip_t *archive, const char *path, mzn_target *out) {
    memset(out, 0, sizeof *out);
    int rc = classify(archive, "", path, out);
    if (rc != MMZIP_OK || out->kind != MZN_TARGET_NONE) {
        if (rc != MMZIP_OK) mzn_target_clear(out);
        return rc;
    }
    /* NCZarr's own layout: the dataset lives under one top directory; "#/lung" may mean "data.zarr/lung". */
    mzn_layout layout;
    if (mzn_layout_detect(archive, &layout) != MMZIP_OK) return MMZIP_OK;
    if (layout.has_zarr && layout.prefix[0]) {
        mzn_target inner;
        memset(&inner, 0, sizeof inner);
        rc = classify(archive, layout.prefix, path, &inner);
        if (rc == MMZIP_OK && inner.kind != MZN_TARGET_NONE) {
            mzn_target_clear(out);
            *out = inner;
        } else {
            mzn_target_clear(&inner);
        }
    }
    mzn_layout_clear(&layout);
    if (rc != MMZIP_OK) mzn_target_clear(out);
    return rc;
}

void mzn_target_clear(mzn_target *t) {
    free(t->prefix);
    free(t->description);
    t->prefix = t->description = NULL;
    t->kind = MZN_TARGET_NONE;
    t->unreadable = 0;
}

void mzn_subdataset_report(const char *archive_path, const char *path, const mzn_target *t) {
    if (t->unreadable) { /* the core's message names the archive, the member, and what to do */
        mzn_diag("%s#/%s: cannot open: %s", archive_path, path, t->description);
        return;
    }
    mzn_diag("%s#/%s: cannot open: '#/%s' must name either an HDF5 member (opened by the mmzip HDF5 driver) or "
             "a Zarr group (opened by the netCDF storage map as a dataset of its own); the archive holds %s",
             archive_path, path, path, t->description ? t->description : "nothing readable there");
}

typedef struct outside_scan {
    const char *prefix;
    size_t prefix_len;
} outside_scan;

/* Stops at the first Zarr metadata object outside the new dataset. */
static int zarr_metadata_outside(const mmzip_entry_info *info, void *ctx) {
    const outside_scan *o = ctx;
    if (info->name_len >= o->prefix_len && memcmp(info->name, o->prefix, o->prefix_len) == 0) return 0;
    return mzn_is_zarr_metadata_entry(info->name, info->name_len);
}

/* Stops at the first entry outside the new dataset. */
static int entry_outside(const mmzip_entry_info *info, void *ctx) {
    const outside_scan *o = ctx;
    return !(info->name_len >= o->prefix_len && memcmp(info->name, o->prefix, o->prefix_len) == 0);
}

/* 1 if the archive holds nothing under the directory prefix[0, end) but the new dataset. */
static int directory_is_new(mmzip_t *archive, const char *prefix, size_t end, outside_scan *o) {
    char *dir = strndup(prefix, end);
    if (!dir) return -1;
    int st = mmzip_list_ex(archive, dir, MMZIP_LIST_NO_DATA_OFFSET, entry_outside, o);
    free(dir);
    return st == MMZIP_OK ? 1 : st == 1 ? 0 : -1;
}

int mzn_subdataset_add_parent_groups(mmzip_t *archive, const char *prefix) {
    static const char group[] = "{\"zarr_format\": 2}";
    outside_scan o = {prefix, strlen(prefix)};
    int st = mmzip_list_ex(archive, NULL, MMZIP_LIST_NO_DATA_OFFSET, zarr_metadata_outside, &o);
    if (st != MMZIP_OK && st != 1) return st;
    /* Other Zarr data: the root stays as it is. Under a root group, directories between it and the new dataset
     * that hold nothing else become groups too: without them the archive no longer read as a whole (the
     * dataset's group had no parent group; an outside review, the atlas of netcdf-guide.md section 2). */
    int others = st == 1;
    if (others && !mmzip_exists(archive, ".zgroup")) return MMZIP_OK;
    /* "" and every "a/" above "a/b/": the parents of the dataset's own .zgroup. */
    for (size_t end = others ? 1 : 0; end < o.prefix_len; end++) {
        if (end && prefix[end - 1] != '/') continue;
        if (others) {
            int fresh = directory_is_new(archive, prefix, end, &o);
            if (fresh < 0) return MMZIP_ENOMEM;
            if (!fresh) continue;
        }
        char *name = malloc(end + sizeof ".zgroup");
        if (!name) return MMZIP_ENOMEM;
        memcpy(name, prefix, end);
        memcpy(name + end, ".zgroup", sizeof ".zgroup");
        st = mmzip_exists(archive, name) ? MMZIP_OK : mmzip_put(archive, name, group, sizeof group - 1, 0);
        free(name);
        if (st != MMZIP_OK) return st;
    }
    return MMZIP_OK;
}
