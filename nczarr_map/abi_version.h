/*
 * abi_version.h - which storage-map ABI the running netCDF-C expects, from nc_inq_libvers().
 *
 * The zmap tables carry no usable version number (zmap_abi.h), so the library version string is the only
 * reliable signal. It is read once per process, on first use.
 */
#ifndef MZN_ABI_VERSION_H
#define MZN_ABI_VERSION_H

typedef enum mzn_abi {
    MZN_ABI_UNKNOWN = 0, /* a release we do not know the layout of: refuse */
    MZN_ABI_V490 = 1,    /* 4.9.0 - 4.9.2: write(start, count); chunk-update and attribute-loss bugs */
    MZN_ABI_V493 = 2,    /* 4.9.3: write(count); truncate() in the dataset table */
    MZN_ABI_V410 = 3     /* 4.10.x: as 4.9.3, with a re-laid-out NClist (only nclistpush is used) */
} mzn_abi;

/*
 * Parses a netCDF-C version string such as "4.9.0 of Aug  7 2022 23:41:41 $" or "4.10.1-development".
 * Returns the ABI, or MZN_ABI_UNKNOWN for anything outside 4.9.0 - 4.10.x. Sets *major, *minor and *patch when
 * the string starts with three dot-separated numbers (NULL pointers are allowed). Pure; thread-safe.
 */
mzn_abi mzn_abi_from_string(const char *version, int *major, int *minor, int *patch);

/*
 * The ABI of the netCDF-C this process runs, from nc_inq_libvers(), computed once. Thread-safe.
 */
mzn_abi mzn_abi_current(void);

/* The version string the ABI was detected from ("" before the first mzn_abi_current()). */
const char *mzn_abi_version_string(void);

/* A name for messages: "netCDF-C 4.9.0-4.9.2", ... */
const char *mzn_abi_name(mzn_abi abi);

/*
 * 1 if the running netCDF-C loses writes into chunks that already exist (4.9.0 - 4.9.2; fixed in 4.9.3 by
 * NCZ_chunk_cache_modify), so that the plugin must write such chunks back itself (chunk_writeback.h).
 */
int mzn_abi_loses_chunk_updates(mzn_abi abi);

/*
 * Prints, once per process, why the running netCDF-C is refused, and returns the netCDF error code to
 * hand back (NC_ENOTBUILT).
 */
int mzn_abi_refuse(void);

#endif
