/* path_routing.c - from the names users type to the URLs NCZarr needs. */
#include "path_routing.h"

#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "mmzip.h"
#include "url.h"

#define ZIP_FRAGMENT "mode=nczarr,zip"

/* Listing callback: stops (returns 1) at the first Zarr metadata object at any depth. */
static int is_zarr_object(const mmzip_entry_info *info, void *ctx) {
    static const char *const names[] = {".zgroup", ".zarray", ".zattrs", ".zmetadata", "zarr.json"};
    (void)ctx;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (info->name_len >= n && memcmp(info->name + info->name_len - n, names[i], n) == 0 &&
            (info->name_len == n || info->name[info->name_len - n - 1] == '/'))
            return 1;
    }
    return 0;
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

/* "x.zip#mode=..." without a scheme: the URL with that fragment, made safe. */
static char *route_bare_with_fragment(const char *path, const char *hash) {
    if (hash[1] == '/') return NULL; /* "a.zip#/member.h5": the HDF5 driver's convention */
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

char *mzn_route_path(const char *path, mzn_route_kind kind) {
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
    const char *hash = strchr(path, '#');
    if (hash) return mzn_url_names_zip(path) ? route_bare_with_fragment(path, hash) : NULL;
    if (!mzn_url_names_zip(path)) return NULL;
    if (kind == MZN_ROUTE_OPEN && !holds_zarr(path)) return NULL;
    return mzn_url_for_path(path, ZIP_FRAGMENT);
}
