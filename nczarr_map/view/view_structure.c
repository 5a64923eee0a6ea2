/*
 * view_structure.c - refusing, with a message naming the object, the datasets whose structure the view
 * cannot present to netCDF-C, instead of letting 4.9.0 show an empty or partial dataset with exit status 0.
 *
 * netCDF-C finds groups through their .zgroup and variables in groups only. A dataset whose root has no
 * .zgroup opens in 4.9.0 as `netcdf x { }` (or "Unknown file format"), and an array below a directory
 * without .zgroup is silently left out. zarr-python 2.13 agrees that these are not groups: open_group,
 * zarr.open and xarray fail on a root without .zgroup ("nothing found at path ''"), and a group's listing
 * leaves out arrays under directories without .zgroup. So the view refuses such datasets, naming the first
 * object it cannot present and why (docs/compat-view.md, section 8).
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_internal.h"
#include "json.h"

/* 1 if the archive holds the entry rel (relative to the dataset). */
static int has_entry(mzv_view *v, const char *rel) {
    char *entry = mzv_entry_name(v, rel);
    int found = entry && mmzip_exists(v->archive, entry);
    free(entry);
    return found;
}

typedef struct v3_probe {
    size_t skip;
    char first[512]; /* the first zarr.json found under the prefix, "" if none */
} v3_probe;

static int find_v3(const mmzip_entry_info *info, void *ctx) {
    v3_probe *p = ctx;
    static const char base[] = "zarr.json";
    size_t n = info->name_len, b = sizeof base - 1;
    if (n < p->skip + b || memcmp(info->name + n - b, base, b) != 0) return 0;
    if (n > p->skip + b && info->name[n - b - 1] != '/') return 0;
    size_t len = n < sizeof p->first ? n : sizeof p->first - 1;
    memcpy(p->first, info->name, len);
    p->first[len] = '\0';
    return 1; /* stop: one is enough */
}

/* The nearest ancestor directory of path (relative, "a/b/x") without a .zgroup, or 0 if all have one.
 * *len gets the length of that ancestor's path. */
static int missing_group(mzv_view *v, const char *path, size_t *len) {
    for (size_t i = 0; path[i]; i++) {
        if (path[i] != '/') continue;
        mzv_group *g = mzv_find_group(v, path, i);
        if (!g || !g->zgroup_json) {
            *len = i;
            return 1;
        }
    }
    return 0;
}

/* netCDF names are UTF-8 (netCDF-C refuses others with NC_EBADNAME), and the view writes object paths
 * into the JSON it presents (dimension names, _nczarr_array); a path of other bytes could be shown only
 * renamed. ZIP names are bytes: an archive may hold such an object. */
static int check_names_are_utf8(mzv_view *v) {
    for (size_t i = 0; i < v->array_count + v->group_count; i++) {
        int is_array = i < v->array_count;
        const char *path = is_array ? v->arrays[i].path : v->groups[i - v->array_count].path;
        if (mzj_valid_utf8(path, strlen(path))) continue;
        char *entry = mzv_entry_name(v, path);
        /* The message names the entry with its non-ASCII bytes as \xNN: they are not text. */
        char shown[1024];
        size_t o = 0;
        for (const unsigned char *c = (const unsigned char *)(entry ? entry : path); *c && o + 5 < sizeof shown; c++)
            o += (size_t)(*c < 0x80 ? snprintf(shown + o, sizeof shown - o, "%c", *c)
                                    : snprintf(shown + o, sizeof shown - o, "\\x%02x", *c));
        shown[o] = '\0';
        free(entry);
        return mzv_fail(v, NC_EBADNAME, shown, "%s not presented: its name is not valid UTF-8, and netCDF names must be",
                        is_array ? "array" : "group");
    }
    return NC_NOERR;
}

/* Every array and group of the dataset must be reachable from the root through groups: netCDF-C lists a
 * group's members only, so an object below a directory without group metadata would be silently missing. */
static int check_parents(mzv_view *v) {
    /* v2: .zgroup; v3: zarr.json (a directory with one that is an array holds nothing netCDF can list). */
    const char *meta = v->zarr_v3 ? "zarr.json" : ".zgroup";
    const char *others = v->zarr_v3 ? "Zarr v3.0 has no implicit groups"
                                    : "zarr-python 2.13 does not list it either";
    for (size_t i = 0; i < v->array_count; i++) {
        size_t len;
        if (!missing_group(v, v->arrays[i].path, &len)) continue;
        char *entry = mzv_entry_name(v, v->arrays[i].path);
        int rc = mzv_fail(v, NC_ENCZARR, entry ? entry : v->arrays[i].path,
                          "array not presented: the directory \"%.*s\" above it has no %s, so it is not a group "
                          "(%s, and netCDF-C would silently leave it out); add the group's %s",
                          (int)len, v->arrays[i].path, meta, others, meta);
        free(entry);
        return rc;
    }
    for (size_t i = 0; i < v->group_count; i++) {
        size_t len;
        const mzv_group *g = &v->groups[i];
        if (!g->zgroup_json || !g->path[0] || !missing_group(v, g->path, &len)) continue;
        char *entry = mzv_entry_name(v, g->path);
        int rc = mzv_fail(v, NC_ENCZARR, entry ? entry : g->path,
                          "group not presented: the directory \"%.*s\" above it has no %s (%s, and netCDF-C "
                          "would silently leave it out)",
                          (int)len, g->path, meta, others);
        free(entry);
        return rc;
    }
    return NC_NOERR;
}

/* The NCZarr listing of a group (4.9.0-4.9.2: "_NCZARR_GROUP" or "_nczarr_group" in .zgroup; 4.9.3+:
 * "_nczarr_group" in .zattrs), or NULL. */
static const mzj_value *nczarr_listing(const mzv_group *g) {
    const mzj_value *l = mzj_get(g->zgroup_json, "_NCZARR_GROUP");
    if (!l) l = mzj_get(g->zgroup_json, "_nczarr_group");
    if (!l) l = mzj_get(g->attrs, "_nczarr_group");
    return l && l->kind == MZJ_OBJECT ? l : NULL;
}

static int listed(const mzj_value *names, const char *name) {
    for (size_t i = 0; names && names->kind == MZJ_ARRAY && i < names->u.array.count; i++) {
        const char *n = mzj_string(names->u.array.items[i]);
        if (n && strcmp(n, name) == 0) return 1;
    }
    return 0;
}

/* A group with a superblock of its own: a sub-dataset (created as "archive.zip#/name"), a dataset apart. */
static int is_subdataset(const mzv_group *g) {
    return mzj_get(g->zgroup_json, "_NCZARR_SUPERBLOCK") || mzj_get(g->zgroup_json, "_nczarr_superblock") ||
           mzj_get(g->attrs, "_nczarr_superblock");
}

/* 1 if path is below one of the sub-datasets found so far (paths come sorted, parents first). */
static int below(const char *path, char *const *roots, size_t n) {
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(roots[i]);
        if (strncmp(path, roots[i], len) == 0 && path[len] == '/') return 1;
    }
    return 0;
}

/* In NCZarr's own format netCDF-C finds a group's arrays and subgroups only through the group's listing: an
 * object another Zarr writer added (zarr-python's create_dataset in an archive nccopy made) is not listed,
 * and netCDF-C would leave it out with exit status 0. Pure Zarr mode reads the archive without listings.
 * Unlisted sub-datasets are datasets of their own, not groups of this one: named on stderr, not refused. */
static int check_nczarr_listings(mzv_view *v) {
    char **subs = NULL;
    size_t n_subs = 0;
    int rc = NC_NOERR;
    /* Groups first (parents before children): the members of a sub-dataset are its own, not this one's. */
    for (size_t k = 0; k < v->group_count + v->array_count && rc == NC_NOERR; k++) {
        size_t i = k < v->group_count ? v->array_count + k : k - v->group_count;
        int is_array = i < v->array_count;
        const char *path = is_array ? v->arrays[i].path : v->groups[i - v->array_count].path;
        if (!path[0] || below(path, subs, n_subs)) continue; /* the root; a sub-dataset's own member */
        const char *slash = strrchr(path, '/');
        size_t parent_len = slash ? (size_t)(slash - path) : 0;
        const char *name = slash ? slash + 1 : path;
        const mzv_group *parent = mzv_find_group(v, path, parent_len);
        const mzj_value *l = parent && parent->zgroup_json ? nczarr_listing(parent) : NULL;
        const mzj_value *names = mzj_get(l, is_array ? "vars" : "groups");
        if (is_array && !names) names = mzj_get(l, "arrays");
        if (listed(names, name)) continue;
        if (!is_array && is_subdataset(&v->groups[i - v->array_count])) {
            /* Named from the archive's root, as an address takes it ('#/lung/inner' from the dataset at lung/). */
            char **grown = realloc(subs, (n_subs + 1) * sizeof *subs);
            if (!grown || !(grown[n_subs] = mzv_entry_name(v, path))) rc = NC_ENOMEM;
            else n_subs++;
            if (grown) subs = grown;
            continue;
        }
        char *entry = mzv_entry_name(v, path);
        rc = mzv_fail(v, NC_ENCZARR, entry ? entry : path,
                      "%s not presented: the dataset is in NCZarr's own format, and its group \"%.*s\" does not "
                      "list it (another Zarr writer added it?), so netCDF-C would silently leave it out; read the "
                      "archive as plain Zarr, which lists every array: 'file://<absolute path>#mode=zarr,zip'",
                      is_array ? "array" : "group", parent_len ? (int)parent_len : 1, parent_len ? path : "/");
        free(entry);
    }
    if (rc == NC_NOERR && n_subs && !v->sub_datasets_noted) {
        char list[1024];
        size_t o = 0, shown = 0;
        for (; shown < n_subs && shown < 8 && o < sizeof list; shown++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s'%s'", shown ? ", " : "", subs[shown]);
        if (shown < n_subs && o < sizeof list) snprintf(list + o, sizeof list - o, " and %zu more", n_subs - shown);
        int several = n_subs > 1;
        fprintf(stderr, "mmzip view: %s: note: the archive also holds the sub-dataset%s %s, %s of %s own that this "
                "dataset does not include: open %s as '%s#/%s'\n", mmzip_path(v->archive), several ? "s" : "", list,
                several ? "datasets" : "a dataset", several ? "their" : "its", several ? "each" : "it",
                mmzip_path(v->archive), several ? "<name>" : subs[0]);
        v->sub_datasets_noted = 1;
    }
    for (size_t i = 0; i < n_subs; i++) free(subs[i]);
    free(subs);
    return rc;
}

int mzv_check_structure(mzv_view *v) {
    int rc = check_names_are_utf8(v);
    if (rc != NC_NOERR) return rc;
    if (v->nczarr_format) return v->pure_zarr ? NC_NOERR : check_nczarr_listings(v);
    if (v->zarr_v3) {
        /* The root must be a group to hold variables. */
        mzv_group *root = mzv_find_group(v, "", 0);
        if (!root || !root->zgroup_json) {
            char *entry = mzv_entry_name(v, "zarr.json");
            int rc = mzv_fail(v, NC_ENCZARR, entry ? entry : "zarr.json",
                              "the dataset root is a single Zarr v3 array, not a group: zarr-python opens it as "
                              "an array, and netCDF needs a group to hold variables; not presented");
            free(entry);
            return rc;
        }
        /* Zarr v3.0 has no implicit groups (the draft that had them was withdrawn): a node below a directory
         * without zarr.json belongs to no group, and netCDF-C, which finds variables through their group,
         * would leave it out with exit status 0. Refused below, as for v2. */
    }
    if (v->zarr_v3) return check_parents(v);
    v3_probe probe = {strlen(v->prefix), ""};
    mmzip_list_ex(v->archive, v->prefix, MMZIP_LIST_NO_DATA_OFFSET, find_v3, &probe);
    mzv_group *root = mzv_find_group(v, "", 0);
    int root_group = root && root->zgroup_json;
    if (probe.first[0] && !root_group && v->array_count == 0)
        return mzv_fail(v, NC_ENCZARR, probe.first,
                        "Zarr v3 metadata (zarr.json) but no zarr.json at the dataset root: not a Zarr v3 "
                        "group the view can present");
    if (!root_group) {
        if (has_entry(v, ".zarray"))
            return mzv_fail(v, NC_ENCZARR, v->prefix[0] ? v->prefix : "/",
                            "the dataset root is a single array (.zarray, no .zgroup): zarr-python opens it as an "
                            "array, and netCDF needs a group to hold variables; not presented");
        if (v->array_count || v->group_count) {
            const char *what = v->array_count ? v->arrays[0].path : v->groups[0].path;
            return mzv_fail(v, NC_ENCZARR, v->prefix[0] ? v->prefix : "/",
                            "no .zgroup at the dataset root, so it is not a Zarr group (zarr-python 2.13's "
                            "open_group and xarray refuse it too); it holds %s \"%s\"; not presented",
                            v->array_count ? "the array" : "the object", what);
        }
        return NC_NOERR; /* an empty archive (a dataset being created) */
    }
    return check_parents(v);
}

/* Listing callback: stops at the first Zarr v2 metadata object below the dataset root. */
static int find_v2_object(const mmzip_entry_info *info, void *ctx) {
    static const char *const names[] = {".zgroup", ".zarray", ".zattrs"};
    (void)ctx;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (info->name_len > n && memcmp(info->name + info->name_len - n, names[i], n) == 0 &&
            info->name[info->name_len - n - 1] == '/')
            return 1;
    }
    return 0;
}

int mzv_check_raw(mzv_view *v) {
    if (has_entry(v, ".zgroup")) return NC_NOERR;
    if (has_entry(v, "zarr.json")) {
        char *entry = mzv_entry_name(v, "zarr.json");
        int rc = mzv_fail(v, NC_ENOTNC, entry ? entry : "zarr.json",
                          "the dataset is Zarr v3, which no netCDF-C release reads: with the compatibility view "
                          "off (MMZIP_NCZARR_VIEW=raw or mmzip=raw) netCDF-C would show an empty dataset; open it "
                          "with the view on (unset MMZIP_NCZARR_VIEW)");
        free(entry);
        return rc;
    }
    /* A dataset being created, or netCDF-C's own probe of an empty archive, has nothing yet. */
    v3_probe probe = {strlen(v->prefix), ""};
    if (mmzip_list_ex(v->archive, v->prefix, MMZIP_LIST_NO_DATA_OFFSET, find_v3, &probe) == 1 ||
        mmzip_list_ex(v->archive, v->prefix, MMZIP_LIST_NO_DATA_OFFSET, find_v2_object, NULL) == 1)
        return mzv_fail(v, NC_ENOTNC, v->prefix[0] ? v->prefix : "/",
                        "no .zgroup at the dataset root: netCDF-C alone (MMZIP_NCZARR_VIEW=raw or mmzip=raw) "
                        "would show none of the Zarr objects the archive holds; open it with the view on (unset "
                        "MMZIP_NCZARR_VIEW), which presents them or says why it cannot");
    return NC_NOERR;
}
