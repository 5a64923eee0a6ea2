/*
 * zmap_abi.h - our own declaration of netCDF-C's storage-map ("zmap") ABI.
 *
 * netCDF-C does not install libnczarr/zmap.h, so the layouts NCZarr expects from a map are restated here,
 * field for field, from the headers of each supported release (docs/netcdf-guide.md, "How it works"):
 *
 *   netCDF-C 4.9.0 - 4.9.2   NCZMAP_API.write(map, key, start, count, content)
 *   netCDF-C 4.9.3, 4.10.x   NCZMAP_API.write(map, key, count, content)      (no start)
 *
 * Everything else a map touches is identical in all of them: the NCZMAP base struct (which our map embeds
 * as its first member), the other five operations, the error codes, and the impl numbers. 4.10 changed the
 * layout of NClist, which search() fills; we never touch its fields and only call the exported
 * nclistpush(), which always matches the running library.
 *
 * The `version` field of every table is 1 in every release, so the ABI cannot be told from the table
 * itself: abi_version.h detects it from nc_inq_libvers().
 */
#ifndef MZN_ZMAP_ABI_H
#define MZN_ZMAP_ABI_H

/* size64_t of netCDF-C (include/ncconfigure.h). */
typedef unsigned long long mzn_size64;

/* NCZM_IMPL values (libnczarr/zmap.h, identical 4.9.0 - 4.10.1). */
enum { MZN_IMPL_UNDEF = 0, MZN_IMPL_FILE = 1, MZN_IMPL_ZIP = 2, MZN_IMPL_S3 = 3 };

/* NCZM_FEATURES flags. ZEROSTART exists in 4.9.0 - 4.9.2 only. */
enum { MZN_FEATURE_UNIMPLEMENTED = 1, MZN_FEATURE_WRITEONCE = 2, MZN_FEATURE_ZEROSTART = 4 };

/* The value of NCZMAP_API.version in every release. */
#define MZN_MAP_API_VERSION 1

/* struct NCZMAP: the "base class" every map starts with. NCZarr reads only `api`. */
typedef struct mzn_zmap {
    int format;        /* NCZM_IMPL */
    char *url;         /* malloc'ed; freed by the map's close */
    int mode;          /* netCDF open/create mode flags */
    mzn_size64 flags;  /* NCZarr control flags (FLAG_PUREZARR = 1, ...) */
    const void *api;   /* one of the tables below, matching the running netCDF-C */
} mzn_zmap;

/* struct NCZMAP_API of netCDF-C 4.9.0 - 4.9.2. */
typedef struct mzn_zmap_api_v490 {
    int version;
    int (*close)(mzn_zmap *map, int deleteit);
    int (*exists)(mzn_zmap *map, const char *key);
    int (*len)(mzn_zmap *map, const char *key, mzn_size64 *sizep);
    int (*read)(mzn_zmap *map, const char *key, mzn_size64 start, mzn_size64 count, void *content);
    int (*write)(mzn_zmap *map, const char *key, mzn_size64 start, mzn_size64 count, const void *content);
    int (*search)(mzn_zmap *map, const char *prefix, void *matches /* NClist* */);
} mzn_zmap_api_v490;

/* struct NCZMAP_API of netCDF-C 4.9.3 and 4.10.x: write() lost its start argument. */
typedef struct mzn_zmap_api_v493 {
    int version;
    int (*close)(mzn_zmap *map, int deleteit);
    int (*exists)(mzn_zmap *map, const char *key);
    int (*len)(mzn_zmap *map, const char *key, mzn_size64 *sizep);
    int (*read)(mzn_zmap *map, const char *key, mzn_size64 start, mzn_size64 count, void *content);
    int (*write)(mzn_zmap *map, const char *key, mzn_size64 count, const void *content);
    int (*search)(mzn_zmap *map, const char *prefix, void *matches /* NClist* */);
} mzn_zmap_api_v493;

/* nclistpush() (exported by every libnetcdf) is reached through mzn_nclistpush (nc_api.h): elem must be
 * malloc'ed, the caller frees the list with nclistfreeall(). */

#endif
