/*
 * layout.h - where in an archive the Zarr dataset lives.
 *
 * Two layouts exist in the wild:
 *   - keys at the archive root (".zgroup", "temp/0.0"): zarr-python's ZipStore, DataAxesFormats, OME, and
 *     every archive this plugin creates;
 *   - NCZarr's own: everything under one top directory ("foo.zarr/.zgroup", "foo.zarr/temp/0.0"), which
 *     netCDF-C's libzip map and `zip -r foo.zarr.zip foo.zarr` produce. netCDF-C takes the directory from
 *     the first path segment of entry #0, whatever the archive's file name.
 */
#ifndef MZN_LAYOUT_H
#define MZN_LAYOUT_H

#include "mmzip.h"

typedef struct mzn_layout {
    char *prefix;  /* entry-name prefix of the dataset: "" (root) or "dir/"; malloc'ed */
    int has_zarr;  /* Zarr metadata (.zgroup, .zarray, .zattrs, .zmetadata) was found at the prefix */
} mzn_layout;

/*
 * Detects the layout of an open archive. Keys at the root win. Otherwise the dataset directory is the
 * first segment of the entry stored first in the file (netCDF-C's "entry #0" rule) if Zarr metadata is
 * directly under it, else the only top directory with Zarr metadata directly under it. An archive with
 * neither gets prefix "" and has_zarr 0 (a new or empty archive, or one holding no Zarr data).
 * Returns 0, or a negative mmzip status (out of memory, a failed listing).
 */
int mzn_layout_detect(mmzip_t *archive, mzn_layout *out);

/*
 * The top directories that hold Zarr metadata directly under them ("g1/.zgroup"), for an archive with none at
 * its root: several of them are an archive of datasets (sub-datasets created one by one, `zip -r` of a folder
 * of stores), which mzn_layout_detect would read as its first one only. Returns how many there are (0 if the
 * root has metadata), and in *names (malloc'ed, NULL if none) up to 8 of them, quoted and comma-separated,
 * for messages; -1 if out of memory or the listing failed.
 */
int mzn_layout_top_datasets(mmzip_t *archive, char **names);

/* 1 if the n bytes at s are the base name of a Zarr metadata object (.zgroup, .zarray, .zattrs, .zmetadata,
 * zarr.json), the names every layout decision here goes by; 0 if not. */
int mzn_is_zarr_metadata_name(const char *s, size_t n);
/* 1 if the entry name (len bytes) is a Zarr metadata object at any depth ("a/b/.zarray", "zarr.json"). */
int mzn_is_zarr_metadata_entry(const char *name, size_t len);

void mzn_layout_clear(mzn_layout *layout);

#endif
