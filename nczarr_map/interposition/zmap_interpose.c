/*
 * zmap_interpose.c - the storage-map entry points netCDF-C calls: nczmap_open, nczmap_create (and
 * nczmap_truncate, nczmap_features). Impl NCZM_ZIP is served by a session over the mmzip core; every other
 * impl (file, s3) is forwarded untouched to netCDF-C's own functions.
 *
 * The operations table handed to NCZarr is the one of the running netCDF-C's ABI (zmap_abi.h). The
 * adapters below only translate the calling convention; the work is in session*.c.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi_version.h"
#include "diag.h"
#include "forward.h"
#include "session.h"
#include "stats.h"
#include "status.h"
#include "url.h"
#include "zmap_abi.h"

#define EXPORT __attribute__((visibility("default")))

static mzn_session *session_of(mzn_zmap *map) { return (mzn_session *)map; }

/* Each adapter times its call when MMZIP_NCZARR_STATS asks for it (stats.h). */

static int op_close(mzn_zmap *map, int deleteit) {
    mzn_session *s = session_of(map);
    if (!mzn_stats_enabled()) return mzn_session_close(s, deleteit);
    /* The session is gone after the close: keep what the stats line needs. */
    mzn_stats st = s->stats;
    char *path = strdup(s->archive_path);
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_close(s, deleteit);
    mzn_stats_stop(&st, MZN_OP_CLOSE, &c, 0);
    mzn_stats_print(&st, path);
    free(path);
    return rc;
}

static int op_exists(mzn_zmap *map, const char *key) {
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_exists(session_of(map), key);
    mzn_stats_stop(&session_of(map)->stats, MZN_OP_PROBE, &c, 0);
    return rc;
}

static int op_len(mzn_zmap *map, const char *key, mzn_size64 *sizep) {
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_len(session_of(map), key, sizep);
    mzn_stats_stop(&session_of(map)->stats, MZN_OP_PROBE, &c, 0);
    return rc;
}

static int op_read(mzn_zmap *map, const char *key, mzn_size64 start, mzn_size64 count, void *content) {
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_read(session_of(map), key, start, count, content);
    mzn_stats_stop(&session_of(map)->stats, MZN_OP_READ, &c, rc == NC_NOERR ? count : 0);
    return rc;
}

static int timed_write(mzn_session *s, const char *key, const void *content, size_t count) {
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_write(s, key, content, count);
    mzn_stats_stop(&s->stats, MZN_OP_WRITE, &c, rc == NC_NOERR ? count : 0);
    return rc;
}

static int op_write_v490(mzn_zmap *map, const char *key, mzn_size64 start, mzn_size64 count,
                         const void *content) {
    /* Like netCDF-C's own zip map: objects are written whole. The 4.9 core never does otherwise. */
    if (start != 0) {
        mzn_diag("%s: %s: partial object write at offset %llu is not supported", session_of(map)->archive_path,
                 key, start);
        return NC_EEDGE;
    }
    return timed_write(session_of(map), key, content, (size_t)count);
}

static int op_write_v493(mzn_zmap *map, const char *key, mzn_size64 count, const void *content) {
    return timed_write(session_of(map), key, content, (size_t)count);
}

static int op_search(mzn_zmap *map, const char *prefix, void *matches) {
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_search(session_of(map), prefix, matches);
    mzn_stats_stop(&session_of(map)->stats, MZN_OP_PROBE, &c, 0);
    return rc;
}

static const mzn_zmap_api_v490 api_v490 = {MZN_MAP_API_VERSION, op_close, op_exists, op_len,
                                           op_read, op_write_v490, op_search};
static const mzn_zmap_api_v493 api_v493 = {MZN_MAP_API_VERSION, op_close, op_exists, op_len,
                                           op_read, op_write_v493, op_search};

/* The operations table of a release's ABI (netcdf_releases.c), or NULL for a release without a row. */
static const void *api_for(const mzn_release *release) {
    switch (release ? release->abi : MZN_ABI_UNKNOWN) {
    case MZN_ABI_V490: return &api_v490;
    case MZN_ABI_V493:
    case MZN_ABI_V410: return &api_v493;
    default: return NULL;
    }
}

typedef int (*zmap_open_fn)(int impl, const char *path, int mode, mzn_size64 flags, void *parameters,
                            mzn_zmap **mapp);

static int serve(const char *path, int mode, mzn_size64 flags, int create, mzn_zmap **mapp) {
    const mzn_release *release = mzn_release_current();
    const void *api = api_for(release);
    if (!api) return mzn_abi_refuse();
    if (!path || !mapp) return NC_EINVAL;
    mzn_session *s;
    mzn_stats_clock c = mzn_stats_start();
    int rc = mzn_session_open(path, mode, flags, release, create, &s);
    if (rc != NC_NOERR) return rc;
    mzn_stats_stop(&s->stats, MZN_OP_OPEN, &c, 0);
    s->base.api = api;
    *mapp = &s->base;
    return NC_NOERR;
}

EXPORT int nczmap_open(int impl, const char *path, int mode, mzn_size64 flags, void *parameters, mzn_zmap **mapp) {
    if (impl == MZN_IMPL_ZIP) return serve(path, mode, flags, 0, mapp);
    MZN_NEXT(zmap_open_fn, next, "nczmap_open");
    return next ? next(impl, path, mode, flags, parameters, mapp) : NC_ENOTBUILT;
}

EXPORT int nczmap_create(int impl, const char *path, int mode, mzn_size64 flags, void *parameters,
                         mzn_zmap **mapp) {
    if (impl == MZN_IMPL_ZIP) return serve(path, mode, flags, 1, mapp);
    MZN_NEXT(zmap_open_fn, next, "nczmap_create");
    return next ? next(impl, path, mode, flags, parameters, mapp) : NC_ENOTBUILT;
}

/*
 * netCDF-C 4.9.3+: "delete all contents except the root". netCDF-C calls it only from its own
 * nczmap_create, which never sees impl ZIP (ours above creates without it: mode "w" replaces the archive
 * at the first commit, atomically). A direct call empties the archive: it becomes a valid empty ZIP.
 */
EXPORT int nczmap_truncate(int impl, const char *url) {
    if (impl != MZN_IMPL_ZIP) {
        MZN_NEXT(int (*)(int, const char *), next, "nczmap_truncate");
        return next ? next(impl, url) : NC_ENOTBUILT;
    }
    if (!api_for(mzn_release_current())) return mzn_abi_refuse();
    mzn_url u;
    int rc = mzn_url_parse(url, &u);
    if (rc != NC_NOERR) return rc;
    mmzip_t *a;
    int st = mmzip_open(u.path, "w", NULL, &a);
    if (st == MMZIP_OK) st = mmzip_close(a);
    if (st != MMZIP_OK) mzn_diag("%s", mmzip_last_error());
    mzn_url_clear(&u);
    return mzn_nc_error(st);
}

/* Never called by the netCDF-C library itself (only by its unit tests), answered for completeness: we
 * replace objects freely and read at any offset; 4.9.0-4.9.2 writes must start at 0. */
EXPORT mzn_size64 nczmap_features(int impl) {
    if (impl == MZN_IMPL_ZIP) {
        const mzn_release *release = mzn_release_current();
        return release && release->abi == MZN_ABI_V490 ? MZN_FEATURE_ZEROSTART : 0;
    }
    MZN_NEXT(mzn_size64 (*)(int), next, "nczmap_features");
    return next ? next(impl) : MZN_FEATURE_UNIMPLEMENTED;
}
