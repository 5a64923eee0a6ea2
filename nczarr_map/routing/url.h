/*
 * url.h - the dataset names users type, and the URLs netCDF-C hands to a storage map.
 *
 * netCDF-C selects NCZarr only for a URL with a mode fragment, "file:///abs/x.zarr.zip#mode=nczarr,zip";
 * it infers nothing from a ".zip" suffix. The plugin turns the names users type into that form, and parses
 * the form back when NCZarr opens the map. Two hazards of netCDF-C 4.9.0 shape the rewriting:
 *   - a mode list whose last token is zarr, xarray or noxarray makes nc_open loop forever (the mode
 *     inference loop tests only the last token), so the storage token "zip" always goes last;
 *   - "zip" alone does not select NCZarr, so "nczarr" is added when no format token is present.
 * Paths are percent-encoded for '%', '#', '?', control bytes (what would break the URL) and bytes from
 * 0x7F up, and decoded back by mzn_url_parse(); netCDF-C passes the encoded text through unchanged, while
 * the raw bytes of a non-ASCII name did not survive its way to the map (nccopy to "é.zip" wrote ".zip").
 * All functions are pure and thread-safe; returned strings are malloc'ed.
 */
#ifndef MZN_URL_H
#define MZN_URL_H

typedef struct mzn_url {
    char *path;   /* the archive's local path, decoded */
    int view_raw; /* the fragment has "mmzip=raw": no compatibility view */
    int pure_zarr; /* the mode list selects plain Zarr ("zarr" or "xarray"; netCDF-C adds "nczarr" to every
                    * list it hands a map): netCDF-C then lists groups by their keys, not NCZarr's listings */
    char *group;  /* the fragment's "group=/a/b", decoded and normalised ("a/b"), or NULL: the dataset
                   * is the sub-dataset rooted at that group (subdataset.h) */
} mzn_url;

/*
 * Parses a file:// URL as NCZarr passes it to nczmap_open/nczmap_create ("file:///abs/a.zip#mode=...").
 * Returns 0 and fills *out (free with mzn_url_clear), or NC_EURL if it is not a file:// URL with a path or
 * its group names no group ("group=/", a "." or ".." segment), or NC_ENOMEM.
 */
int mzn_url_parse(const char *url, mzn_url *out);

void mzn_url_clear(mzn_url *u);

/* 1 if the path (or the path part of a URL, before any '#' or '?') ends in ".zip", any case. */
int mzn_url_names_zip(const char *path_or_url);

/* 1 if s starts with "file://" (any case of the scheme). */
int mzn_url_is_file_url(const char *s);

/* 1 if s contains "://" before any '#': a URL rather than a local path. */
int mzn_url_has_scheme(const char *s);

/*
 * The URL for a local path: "file://" + the absolute, encoded path + "#" + fragment (no '#' if fragment
 * is NULL). Returns NULL if out of memory or if the working directory cannot be read for a relative path.
 */
char *mzn_url_for_path(const char *path, const char *fragment);

/*
 * The URL of the sub-dataset rooted at group (normalised, non-empty) of the archive at path:
 * "file:///abs/a.zip#mode=nczarr,zip&group=/a/b", the group percent-encoded where it would break the
 * fragment ('%', '&', '#', '?', control bytes). NULL if out of memory or the working directory is unreadable.
 */
char *mzn_url_for_subdataset(const char *path, const char *group);

/*
 * Makes a URL that selects the zip storage safe and complete: a mode list holding "zip" gets "zip" as its
 * last token and "nczarr" if it has no format token; a URL whose path ends in ".zip" and whose mode names a
 * format (nczarr, zarr, xarray) but no storage (file, zip, s3) gets "zip". Returns the rewritten URL, or
 * NULL if the URL needs no change (or does not select NCZarr at all, or out of memory).
 */
char *mzn_url_fix_zip_mode(const char *url);

/*
 * 1 if the URL's fragment has a mode list that selects the zip storage (after mzn_url_fix_zip_mode, the
 * URLs the plugin serves).
 */
int mzn_url_selects_zip(const char *url);

#endif
