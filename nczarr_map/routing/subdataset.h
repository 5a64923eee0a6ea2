/*
 * subdataset.h - "archive.zip#/group/sub": one dataset among several in one archive (seed 001's
 * ".dafs.zarr.zip#/group"), and which of the two plugins serves such an address.
 *
 * The part after "#/" is a path inside the archive. What the archive holds there decides (precedence, the
 * same for nc_open and the URL form):
 *   1. a member (a file entry) whose bytes are HDF5 (signature at 0, 512, 1024, ...): the HDF5 driver's;
 *   2. a Zarr group (<path>/.zgroup, or <path>/zarr.json of a group): this plugin's, the dataset rooted at
 *      that group (entry prefix "<path>/");
 *   3. anything else (nothing, a Zarr array, a non-HDF5 member, entries without group metadata): an error
 *      naming both possibilities and what the archive holds at that path.
 * The path is looked up from the archive root; in an archive of NCZarr's own layout (one top directory,
 * layout.h) it is also looked up under that directory when the root has nothing of that name.
 *
 * For nc_create: an existing member goes to the HDF5 driver; a new name whose last segment has an HDF5 or
 * netCDF-4 suffix (.nc, .h5, ...) too; any other new name becomes a new Zarr group (sub-dataset); a path
 * where the archive already holds anything else is refused (truncating a sub-dataset of an append-only
 * archive is not possible).
 */
#ifndef MZN_SUBDATASET_H
#define MZN_SUBDATASET_H

#include <stddef.h>

#include "mmzip.h"

typedef enum mzn_target_kind {
    MZN_TARGET_NONE = 0,      /* nothing of that name, nothing below it */
    MZN_TARGET_HDF5_MEMBER,   /* a member with an HDF5 signature */
    MZN_TARGET_OTHER_MEMBER,  /* a member that is not HDF5 */
    MZN_TARGET_ZARR_GROUP,    /* <path>/.zgroup or a group's <path>/zarr.json */
    MZN_TARGET_ZARR_ARRAY,    /* <path>/.zarray or an array's <path>/zarr.json */
    MZN_TARGET_ENTRIES        /* entries below <path>/ without group metadata */
} mzn_target_kind;

typedef struct mzn_target {
    mzn_target_kind kind;
    char *prefix;       /* entry-name prefix of the target, ending in '/' ("lung/sub/"); malloc'ed */
    char *description;  /* what the archive holds there, for messages; malloc'ed */
    int unreadable;     /* MZN_TARGET_OTHER_MEMBER that cannot be read now (an unfinished in-place edit: the
                         * description is the core's message, which says what to do) */
} mzn_target;

/*
 * Normalises a group path as users write it ("/lung/sub/", "lung//sub"): no leading, trailing or doubled
 * '/'. Returns a malloc'ed string ("" for the root), or NULL if out of memory or if a segment is "." or
 * "..", which would let a name leave the archive's tree.
 */
char *mzn_subdataset_normalize(const char *path);

/* 1 if the last segment of path ends in a suffix that names an HDF5 or netCDF-4 file (.nc, .h5, ...). */
int mzn_subdataset_has_hdf5_suffix(const char *path);

/*
 * Classifies what an open archive holds at the normalised, non-empty path. Fills *out (free with
 * mzn_target_clear). Returns MMZIP_OK or MMZIP_ENOMEM; a failed listing counts as "nothing".
 */
int mzn_subdataset_find(mmzip_t *archive, const char *path, mzn_target *out);

void mzn_target_clear(mzn_target *t);

/*
 * Prints (mzn_diag) why "<archive>#/<path>" cannot be opened: the two things it may name and what the
 * archive holds there.
 */
void mzn_subdataset_report(const char *archive_path, const char *path, const mzn_target *t);

/*
 * For the first sub-dataset of an archive (the archive holds no Zarr metadata outside prefix, the new
 * dataset's entry prefix "a/b/"): stages a plain Zarr v2 group ({"zarr_format": 2} as ".zgroup") at the
 * archive root and at each directory between it and the new dataset, so that zarr-python and xarray open the
 * archive at its root and find the dataset as a group, and netCDF reading the whole archive shows it as one.
 * An archive that already holds other Zarr data keeps its root as it is (a group there would change how its
 * existing datasets are read); under a root group, the directories between it and the new dataset that hold
 * nothing else get their group. Written with mmzip_put; the caller commits. Returns MMZIP_OK or an mmzip
 * error (the core's message says why).
 */
int mzn_subdataset_add_parent_groups(mmzip_t *archive, const char *prefix);

#endif
