/*
 * zmap_calls.h - calling a storage map the way netCDF-C does, for the C tests: through the operations
 * table of the ABI of a given netCDF-C version (zmap_abi.h), and the exported nczmap_create/nczmap_open
 * that the plugin interposes.
 */
#ifndef NCZARR_ZMAP_CALLS_H
#define NCZARR_ZMAP_CALLS_H

#include "abi_version.h"
#include "zmap_abi.h"

int nczmap_create(int impl, const char *path, int mode, mzn_size64 flags, void *parameters, mzn_zmap **mapp);
int nczmap_open(int impl, const char *path, int mode, mzn_size64 flags, void *parameters, mzn_zmap **mapp);
int nczmap_truncate(int impl, const char *url);
mzn_size64 nczmap_features(int impl);

/* The ABI the calls below use (set by the test before calling them). */
static mzn_abi zc_abi = MZN_ABI_V490;

/* The ABI of a netCDF-C version string (its row of the release table), MZN_ABI_UNKNOWN without a row. */
static inline mzn_abi zc_abi_of(const char *version) {
    const mzn_release *r = mzn_release_from_string(version, NULL, NULL, NULL);
    return r ? r->abi : MZN_ABI_UNKNOWN;
}

static inline const mzn_zmap_api_v490 *zc_v490(mzn_zmap *m) { return (const mzn_zmap_api_v490 *)m->api; }
static inline const mzn_zmap_api_v493 *zc_v493(mzn_zmap *m) { return (const mzn_zmap_api_v493 *)m->api; }

static inline int zc_write(mzn_zmap *m, const char *key, const void *data, size_t len) {
    return zc_abi == MZN_ABI_V490 ? zc_v490(m)->write(m, key, 0, len, data) : zc_v493(m)->write(m, key, len, data);
}
static inline int zc_len(mzn_zmap *m, const char *key, mzn_size64 *n) { return zc_v490(m)->len(m, key, n); }
static inline int zc_exists(mzn_zmap *m, const char *key) { return zc_v490(m)->exists(m, key); }
static inline int zc_read(mzn_zmap *m, const char *key, mzn_size64 start, mzn_size64 count, void *buf) {
    return zc_v490(m)->read(m, key, start, count, buf);
}
static inline int zc_search(mzn_zmap *m, const char *prefix, void *list) {
    return zc_v490(m)->search(m, prefix, list);
}
static inline int zc_close(mzn_zmap *m, int deleteit) { return zc_v490(m)->close(m, deleteit); }

#endif
