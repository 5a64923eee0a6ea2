/*
 * netcdf_releases.h - what each netCDF-C release needs: the one table of the releases the plugin serves.
 *
 * One process runs one libnetcdf, and everything the plugin does differently for one release than for
 * another is a column of the table in netcdf_releases.c:
 *
 *   the storage-map ABI      which NCZMAP_API layout NCZarr calls (zmap_abi.h; interposition/zmap_interpose.c
 *                            hands it the operations table of that layout);
 *   the storage map's        the bugs of the release the map works around (session/chunk_writeback.h,
 *   workarounds              session/byte_order.h);
 *   the view's conventions   what the compatibility view presents to the release (view/view_release.h:
 *                            attribute type tables, strings, integer attributes, long chunks, NCZarr
 *                            metadata spellings).
 *
 * The storage map finds the running release's row from nc_inq_libvers() (abi_version.h), refuses a release
 * without a row, and hands the row to the view before it opens one. A new netCDF-C release is a new row
 * there (only a new NCZMAP_API layout also needs its declaration in zmap_abi.h and its adapters in
 * interposition/zmap_interpose.c). The rows are constants; every function here is thread-safe.
 */
#ifndef MZN_NETCDF_RELEASES_H
#define MZN_NETCDF_RELEASES_H

/* The NCZMAP_API layouts (zmap_abi.h), by the first release that has them. */
typedef enum mzn_abi {
    MZN_ABI_UNKNOWN = 0, /* a release we do not know the layout of: refused */
    MZN_ABI_V490 = 1,    /* write(start, count) */
    MZN_ABI_V493 = 2,    /* write(count); truncate() in the dataset table */
    MZN_ABI_V410 = 3     /* as 4.9.3, with a re-laid-out NClist (the map calls only nclistpush) */
} mzn_abi;

typedef struct mzn_release {
    const char *versions;        /* for messages: "4.9.0-4.9.2", "4.10.x" */
    int major, minor;            /* the versions of the row: major.minor.first_patch to last_patch */
    int first_patch, last_patch; /* last_patch -1: every patch release of major.minor */
    mzn_abi abi;

    /* Its bugs, which the storage map works around. */
    int loses_chunk_updates;   /* writes into chunks that exist are dropped: written back (chunk_writeback.h) */
    int mislabels_byte_order;  /* it declares a big-endian dtype over the native bytes it writes: relabelled
                                * when it creates an array (byte_order.h), and the view refuses to guess the
                                * bytes of such big-endian arrays in archives it wrote (_NCProperties) */

    /* The view's conventions (view_release.h has what each means). */
    const char *types_key;          /* the .zattrs key it reads attribute types under */
    const char *char_attr_type;     /* its spelling of the char attribute type ("<U1" or ">S1") */
    int reads_string_attr_types;    /* it reads the attribute types "|S<n>" (n > 1) and "|J0" */
    int fixed_strings;              /* strings are "|S<n>" NC_STRING, not "<U1" char rows */
    int infers_int_attributes;      /* an integer attribute without a type is int, not its smallest type */
    int reads_long_chunks;          /* it reads chunks longer than their dimension */
    int reads_lowercase_nczarr;     /* it reads NCZarr's _nczarr_* metadata (else shown as plain Zarr) */
} mzn_release;

/* The row of version major.minor.patch, or NULL if the plugin does not serve that release. */
const mzn_release *mzn_release_find(int major, int minor, int patch);

/* The oldest release served (4.9.0): what the view presents to before the storage map names one. */
const mzn_release *mzn_release_oldest(void);

/* The releases served, for messages: "4.9.0-4.9.2, 4.9.3, 4.10.x". */
const char *mzn_releases_served(void);

#endif
