/* path_routing.c - from the names users type to the URLs NCZarr needs. */
#include "path_routing.h"

#include <errno.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "diag.h"
#include "layout.h"
#include "mmzip.h"
#include "subdataset.h"
#include "url.h"

#define ZIP_FRAGMENT "mode=nczarr,zip"

/* Listing callback: stops (returns 1) at the first Zarr metadata object at any depth. */
static int is_zarr_object(const mmzip_entry_info *info, void *ctx) {
    (void)ctx;
    return mzn_is_zarr_metadata_entry(info->name, info->name_len);
}

/* 1 if the archive at path opens and holds a Zarr dataset, or Zarr objects anywhere: those the
 * compatibility view cannot present (arrays below directories without .zgroup, Zarr v3) are routed to the
 * map too, so that the view says why, instead of netCDF-C's "Unknown file format". */
static int holds_zarr(const char *path) {
    mmzip_t *a;
    if (mmzip_open(path, "r", NULL, &a) != MMZIP_OK) return 0;
    mzn_layout layout;
    int found = mzn_layout_detect(a, &layout) == MMZIP_OK && layout.has_zarr;
    if (found) mzn_layout_clear(&layout);
    if (!found) found = mmzip_list_ex(a, "", MMZIP_LIST_NO_DATA_OFFSET, is_zarr_object, NULL) == 1;
    mmzip_close(a);
    return found;
}

/* 1 if the file starts as a format netCDF-C opens on its own: netCDF-3 (CDF\1, CDF\2, CDF\5), HDF4, or HDF5
 * (whose signature may also be at 512, 1024, 2048, ...). */
static int netcdf_reads_file(const char *path) {
    static const unsigned char hdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    static const unsigned char hdf4[4] = {0x0e, 0x03, 0x13, 0x01};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char b[8];
    int found = 0;
    for (long off = 0; !found; off = off ? off * 2 : 512) {
        if (fseek(f, off, SEEK_SET) != 0 || fread(b, 1, sizeof b, f) != sizeof b) break;
        found = memcmp(b, hdf5, sizeof hdf5) == 0 ||
                (off == 0 && (memcmp(b, hdf4, sizeof hdf4) == 0 ||
                              (memcmp(b, "CDF", 3) == 0 && (b[3] == 1 || b[3] == 2 || b[3] == 5))));
    }
    fclose(f);
    return found;
}

typedef struct member_scan {
    mmzip_t *archive;
    size_t entries;
    int hdf5;        /* a member is HDF5: the HDF5 driver may open the bare archive */
    char first[256]; /* the first entry's name, for the message */
} member_scan;

static int find_hdf5_member(const mmzip_entry_info *info, void *ctx) {
    member_scan *m = ctx;
    if (m->entries++ == 0) snprintf(m->first, sizeof m->first, "%.*s", (int)info->name_len, info->name);
    if (!info->name_len || info->name[info->name_len - 1] == '/') return 0;
    char *name = strndup(info->name, info->name_len);
    if (!name) return 0;
    mzn_target t;
    if (mzn_subdataset_find(m->archive, name, &t) == MMZIP_OK) {
        m->hdf5 = t.kind == MZN_TARGET_HDF5_MEMBER;
        mzn_target_clear(&t);
    }
    free(name);
    return m->hdf5;
}

/* A bare ".zip" name to open that holds no Zarr: says why netCDF-C is about to fail with only "Unknown file
 * format", unless what is there is something netCDF-C or the HDF5 driver opens (a netCDF or HDF5 file named
 * .zip, an archive with an HDF5 member). Nothing is refused here: netCDF-C still reports the error. */
static void explain_not_zarr(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return; /* netCDF-C says "No such file or directory" */
    if (S_ISDIR(st.st_mode)) {
        char meta[4096];
        snprintf(meta, sizeof meta, "%s/.zgroup", path);
        int v2 = access(meta, F_OK) == 0;
        snprintf(meta, sizeof meta, "%s/zarr.json", path);
        int v3 = access(meta, F_OK) == 0;
        char *abs = realpath(path, NULL);
        if (v2)
            mzn_diag("%s: a directory (a Zarr directory store), not a ZIP archive: netCDF-C reads it itself as "
                     "'file://%s#mode=nczarr,file'; or zip it (cd %s && zip -0 -r ../NAME.zarr.zip .)",
                     path, abs ? abs : path, path);
        else
            mzn_diag("%s: a directory, not a ZIP archive%s: mmzip serves Zarr stored in a ZIP file; zip the store "
                     "(cd %s && zip -0 -r ../NAME.zarr.zip .) and open the archive", path,
                     v3 ? " (a Zarr v3 directory store, which netCDF-C cannot read itself)" : "", path);
        free(abs);
        return;
    }
    mmzip_t *a;
    if (mmzip_open(path, "r", NULL, &a) != MMZIP_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", mmzip_last_error());
        if (!netcdf_reads_file(path))
            mzn_diag("%s; nor is it a netCDF or HDF5 file, so netCDF cannot open it (a truncated download, or a file "
                     "still being written?)", why);
        return;
    }
    member_scan m = {a, 0, 0, ""};
    mmzip_list_ex(a, "", MMZIP_LIST_NO_DATA_OFFSET, find_hdf5_member, &m);
    mmzip_close(a);
    if (m.hdf5) return; /* the HDF5 driver's */
    if (!m.entries)
        mzn_diag("%s: an empty ZIP archive: it holds no Zarr dataset and no HDF5 member", path);
    else
        mzn_diag("%s: a ZIP archive holding no Zarr metadata (.zgroup, .zarray, .zattrs, .zmetadata or zarr.json) and "
                 "no HDF5 member, so nothing netCDF can open (%zu entr%s, the first '%s'); 'mmzip ls %s' lists them",
                 path, m.entries, m.entries == 1 ? "y" : "ies", m.first, path);
}

/* 1 if path[0, n) ends in ".zip", any case. */
static int has_zip_suffix(const char *path, size_t n) { return n >= 4 && strncasecmp(path + n - 4, ".zip", 4) == 0; }

/* 1 if some reading of the bare name could be a zip archive: it ends in ".zip", has ".zip" before a '#'
 * ("x.zip#mode=...") or before a "#/" (an archive's member or group). */
static int names_zip_somewhere(const char *path) {
    size_t len = strlen(path);
    if (has_zip_suffix(path, len)) return 1;
    for (const char *p = strchr(path, '#'); p; p = strchr(p + 1, '#'))
        if (has_zip_suffix(path, (size_t)(p - path))) return 1;
    return 0;
}

/* "x.zip#/group": the sub-dataset's URL, NULL to pass it on (an HDF5 member), or a refusal. */
static char *route_subdataset(const char *archive, const char *target, mzn_route_kind kind, int *refusal) {
    char *group = mzn_subdataset_normalize(target);
    if (!group) return NULL;
    char *url = NULL;
    if (!group[0]) { /* "a.zip#/": the archive itself */
        free(group);
        return kind == MZN_ROUTE_CREATE || holds_zarr(archive) ? mzn_url_for_path(archive, ZIP_FRAGMENT) : NULL;
    }
    mmzip_t *a = NULL;
    if (mmzip_open(archive, "r", NULL, &a) != MMZIP_OK) {
        /* No archive (yet): nc_create makes one holding only the new sub-dataset; a member name is the
         * HDF5 driver's to create. Anything else is netCDF-C's to report. */
        if (kind == MZN_ROUTE_CREATE && access(archive, F_OK) != 0 && !mzn_subdataset_has_hdf5_suffix(group))
            url = mzn_url_for_subdataset(archive, group);
        free(group);
        return url;
    }
    mzn_target t;
    if (mzn_subdataset_find(a, group, &t) != MMZIP_OK) {
        mmzip_close(a);
        free(group);
        return NULL;
    }
    mmzip_close(a);
    switch (t.kind) {
    case MZN_TARGET_HDF5_MEMBER: break; /* the HDF5 driver's */
    case MZN_TARGET_ZARR_GROUP:
        /* nc_create of an existing group: the session refuses it, naming the group (session.c). */
        url = mzn_url_for_subdataset(archive, group);
        break;
    case MZN_TARGET_NONE:
        if (kind == MZN_ROUTE_CREATE) {
            if (!mzn_subdataset_has_hdf5_suffix(group)) url = mzn_url_for_subdataset(archive, group);
            break;
        }
        mzn_subdataset_report(archive, group, &t);
        *refusal = ENOENT;
        break;
    case MZN_TARGET_OTHER_MEMBER:
        /* A member, but not HDF5 (a netCDF-3 file, text): the HDF5 side fails on it too, naming the format
         * it recognises; this says what else the address could have named. Creating over it is HDF5's. */
        if (kind == MZN_ROUTE_OPEN) mzn_subdataset_report(archive, group, &t);
        /* One that cannot be read now (awaiting recovery) would fail on the HDF5 side as well: said once. */
        if (kind == MZN_ROUTE_OPEN && t.unreadable) *refusal = NC_ENOTNC;
        break;
    default:
        if (kind == MZN_ROUTE_CREATE)
            mzn_diag("%s#/%s: cannot create a sub-dataset there: the archive already holds %s, and an archive is "
                     "append-only (nothing in it can be truncated); name a new group, or open the existing one "
                     "for writing (NC_WRITE) to add to it", archive, group, t.description);
        else
            mzn_subdataset_report(archive, group, &t);
        *refusal = kind == MZN_ROUTE_CREATE ? NC_EEXIST : NC_ENOTNC;
        break;
    }
    mzn_target_clear(&t);
    free(group);
    return url;
}

/* "x.zip#mode=..." without a scheme: the URL with that fragment, made safe; "x.zip#/group": a sub-dataset. */
static char *route_bare_with_fragment(const char *path, const char *hash, mzn_route_kind kind, int *refusal) {
    if (hash[1] == '/') {
        char *archive = strndup(path, (size_t)(hash - path));
        char *url = archive ? route_subdataset(archive, hash + 2, kind, refusal) : NULL;
        free(archive);
        return url;
    }
    if (!strstr(hash + 1, "mode=")) return NULL;
    char *base = strndup(path, (size_t)(hash - path));
    if (!base) return NULL;
    char *url = mzn_url_for_path(base, hash + 1);
    free(base);
    if (!url) return NULL;
    char *fixed = mzn_url_fix_zip_mode(url);
    if (fixed) {
        free(url);
        return fixed;
    }
    if (mzn_url_selects_zip(url)) return url;
    free(url);
    return NULL;
}

char *mzn_route_path(const char *path, mzn_route_kind kind, int *refusal) {
    *refusal = NC_NOERR;
    if (!path || !*path) return NULL;
    if (mzn_url_has_scheme(path)) {
        if (!mzn_url_is_file_url(path)) return NULL;
        if (strchr(path, '#')) return mzn_url_fix_zip_mode(path);
        /* "file:///x.zarr.zip" without a mode: treated as the path it names. */
        if (!mzn_url_names_zip(path)) return NULL;
        mzn_url u;
        if (mzn_url_parse(path, &u) != 0) return NULL;
        char *url = NULL;
        if (kind == MZN_ROUTE_CREATE || holds_zarr(u.path)) url = mzn_url_for_path(u.path, ZIP_FRAGMENT);
        mzn_url_clear(&u);
        return url;
    }
    /* A bare name: which file it means is the core's rule for "archive#/member" (mmzip_split_name): a name
     * that exists as written is that file, "a.zip#/g" is a sub-dataset or member only when a.zip is the
     * archive, and a name that fits both is refused rather than guessed. Names this plugin could not serve
     * under either reading (no ".zip" before a "#/" or at the end) are netCDF-C's. */
    if (!names_zip_somewhere(path)) return NULL;
    /* "x.zip#mode=...": a mode fragment on a name that is not itself a file, after the archive's name,
     * which may hold '#' and "#/" too ("we#ird.zip#mode=nczarr,zip", "d#/x.zip#mode=nczarr,zip"). */
    if (access(path, F_OK) != 0)
        for (const char *hash = strchr(path, '#'); hash; hash = strchr(hash + 1, '#'))
            if (hash[1] != '/' && has_zip_suffix(path, (size_t)(hash - path)) && strstr(hash + 1, "mode="))
                return route_bare_with_fragment(path, hash, kind, refusal);
    size_t cut;
    unsigned how = kind == MZN_ROUTE_CREATE ? MMZIP_NAME_CREATE | MMZIP_NAME_CREATE_ARCHIVE : 0;
    int st = mmzip_split_name(path, how, &cut);
    if (st == MMZIP_EINVAL || (st == MMZIP_ENOENT && strstr(path, "#/"))) {
        mzn_diag("%s", mmzip_last_error());
        *refusal = st == MMZIP_EINVAL ? NC_EINVAL : ENOENT;
        return NULL;
    }
    if (st != MMZIP_OK) return NULL;
    size_t len = strlen(path);
    if (cut < len) {
        if (!has_zip_suffix(path, cut)) return NULL; /* an archive not named .zip: only the HDF5 driver's */
        char *archive = strndup(path, cut);
        char *url = archive ? route_subdataset(archive, path + cut + 2, kind, refusal) : NULL;
        free(archive);
        return url;
    }
    if (!has_zip_suffix(path, len)) return NULL;
    if (kind == MZN_ROUTE_OPEN && !holds_zarr(path)) {
        explain_not_zarr(path);
        return NULL;
    }
    return mzn_url_for_path(path, ZIP_FRAGMENT);
}

char *mzn_route_zarr_group_archive(const char *path) {
    if (!path || mzn_url_has_scheme(path) || !names_zip_somewhere(path)) return NULL;
    size_t cut;
    if (mmzip_split_name(path, 0, &cut) != MMZIP_OK || cut == strlen(path) || !has_zip_suffix(path, cut))
        return NULL;
    char *archive = strndup(path, cut);
    char *group = archive ? mzn_subdataset_normalize(path + cut + 2) : NULL;
    int is_group = 0;
    if (group && !group[0]) {
        is_group = holds_zarr(archive);
    } else if (group) {
        mmzip_t *a = NULL;
        if (mmzip_open(archive, "r", NULL, &a) == MMZIP_OK) {
            mzn_target t;
            if (mzn_subdataset_find(a, group, &t) == MMZIP_OK) {
                is_group = t.kind == MZN_TARGET_ZARR_GROUP;
                mzn_target_clear(&t);
            }
            mmzip_close(a);
        }
    }
    free(group);
    if (is_group) return archive;
    free(archive);
    return NULL;
}
