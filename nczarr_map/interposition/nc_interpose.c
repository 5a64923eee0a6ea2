/*
 * nc_interpose.c - the public netCDF functions through which datasets are opened, created, synced and
 * aborted: nc_open, nc__open, nc_create, nc__create, nc_sync, nc_abort; nc_def_dim, only to say why an
 * unlimited dimension is refused; and nc_rename_dim, nc_rename_var, nc_rename_grp, which it refuses.
 *
 * Open and create rewrite the names this plugin serves into the URLs NCZarr needs (path_routing.h), and
 * bind the session NCZarr opens during the call to the ncid (registry.h). After an NC_WRITE open of a
 * served dataset, every attribute is loaded (attr_preload.h). nc_sync publishes the session after the real
 * sync (publish.h); nc_abort makes the session discard its writes. Calls for other datasets go to the next
 * definition unchanged: libnetcdf (which reaches the HDF5 driver's interposers for HDF5 members).
 */
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>

#include "abi_version.h"
#include "attr_preload.h"
#include "diag.h"
#include "forward.h"
#include "path_routing.h"
#include "publish.h"
#include "registry.h"
#include "nc_api.h"

#define EXPORT __attribute__((visibility("default")))

/* Binds the session opened during the call; after an NC_WRITE open, loads every attribute. */
static void after_open(mzn_open_call *call, int status, const int *ncidp, int mode) {
    mzn_session *s = mzn_registry_end_call(call, status, status == NC_NOERR && ncidp ? *ncidp : -1);
    if (!s || !(mode & NC_WRITE) || s->created) return;
    int rc = mzn_preload_attributes(*ncidp);
    if (rc != NC_NOERR)
        mzn_diag("%s: could not load every attribute after opening for writing (%s); attributes that were not "
                 "loaded are still protected by merging at close",
                 s->archive_path, mzn_nc_strerror(rc));
}

/* What every opening and creating call does before netCDF-C's own: the route of path (NULL: not one of
 * ours; the refusal, if the map refuses the path, is returned and nothing else is done), traced, and the
 * registry told that a call begins. The caller frees *routed. */
static int begin_call(const char *path, int kind, char **routed, mzn_open_call *call) {
    int refusal;
    *routed = mzn_route_path(path, kind, &refusal);
    if (refusal != NC_NOERR) return refusal;
    if (*routed) mzn_trace("'%s' opened as '%s'", path, *routed);
    mzn_registry_begin_call(call);
    return NC_NOERR;
}

EXPORT int nc_open(const char *path, int mode, int *ncidp) {
    MZN_NEXT(int (*)(const char *, int, int *), next, "nc_open");
    if (!next) return NC_EINTERNAL;
    char *routed;
    mzn_open_call call;
    int rc = begin_call(path, MZN_ROUTE_OPEN, &routed, &call);
    if (rc != NC_NOERR) return rc;
    rc = next(routed ? routed : path, mode, ncidp);
    after_open(&call, rc, ncidp, mode);
    free(routed);
    return rc;
}

EXPORT int nc__open(const char *path, int mode, size_t *chunksizehintp, int *ncidp) {
    MZN_NEXT(int (*)(const char *, int, size_t *, int *), next, "nc__open");
    if (!next) return NC_EINTERNAL;
    char *routed;
    mzn_open_call call;
    int rc = begin_call(path, MZN_ROUTE_OPEN, &routed, &call);
    if (rc != NC_NOERR) return rc;
    rc = next(routed ? routed : path, mode, chunksizehintp, ncidp);
    after_open(&call, rc, ncidp, mode);
    free(routed);
    return rc;
}

EXPORT int nc_create(const char *path, int cmode, int *ncidp) {
    MZN_NEXT(int (*)(const char *, int, int *), next, "nc_create");
    if (!next) return NC_EINTERNAL;
    char *routed;
    mzn_open_call call;
    int rc = begin_call(path, MZN_ROUTE_CREATE, &routed, &call);
    if (rc != NC_NOERR) return rc;
    rc = next(routed ? routed : path, cmode, ncidp);
    mzn_registry_end_call(&call, rc, rc == NC_NOERR && ncidp ? *ncidp : -1);
    free(routed);
    return rc;
}

EXPORT int nc__create(const char *path, int cmode, size_t initialsz, size_t *chunksizehintp, int *ncidp) {
    MZN_NEXT(int (*)(const char *, int, size_t, size_t *, int *), next, "nc__create");
    if (!next) return NC_EINTERNAL;
    char *routed;
    mzn_open_call call;
    int rc = begin_call(path, MZN_ROUTE_CREATE, &routed, &call);
    if (rc != NC_NOERR) return rc;
    rc = next(routed ? routed : path, cmode, initialsz, chunksizehintp, ncidp);
    mzn_registry_end_call(&call, rc, rc == NC_NOERR && ncidp ? *ncidp : -1);
    free(routed);
    return rc;
}

EXPORT int nc_sync(int ncid) {
    MZN_NEXT(int (*)(int), next, "nc_sync");
    if (!next) return NC_EINTERNAL;
    int rc = next(ncid);
    mzn_session *s = rc == NC_NOERR ? mzn_registry_find(ncid) : NULL;
    if (s) rc = mzn_publish(s, MZN_PUBLISH_SYNC);
    return rc;
}

EXPORT int nc_abort(int ncid) {
    MZN_NEXT(int (*)(int), next, "nc_abort");
    if (!next) return NC_EINTERNAL;
    mzn_session *s = mzn_registry_find(ncid);
    if (s) s->discard = 1;
    return next(ncid);
}

/* netCDF-C 4.9.0's NCZarr has no unlimited dimensions and answers only "Invalid dimension size", which
 * says nothing of the cause or of nccopy's -u, which makes record dimensions fixed. */
EXPORT int nc_def_dim(int ncid, const char *name, size_t len, int *idp) {
    MZN_NEXT(int (*)(int, const char *, size_t, int *), next, "nc_def_dim");
    if (!next) return NC_EINTERNAL;
    int rc = next(ncid, name, len, idp);
    mzn_session *s = rc == NC_EDIMSIZE && len == NC_UNLIMITED ? mzn_registry_find(ncid) : NULL;
    if (s)
        mzn_diag("%s: dimension '%s' is UNLIMITED, which the NCZarr of netCDF-C %s cannot store (netCDF-C 4.9.3 "
                 "and later can): make it fixed, e.g. 'nccopy -u in.nc out.zarr.zip', "
                 "or define it with its length",
                 s->archive_path, name ? name : "", mzn_abi_version_string());
    return rc;
}

/* NCZarr (netCDF-C 4.9.0 to 4.10.1) renames in memory only what its next metadata write covers: a renamed
 * dimension leaves the variables' dimension references on the old name (the archive then crashes netCDF-C at
 * open), a renamed variable leaves its chunks under the old name (its data reads as fill, or the open fails),
 * and the close reports success. Refused, before anything changes, with the way out. */
static int refuse_rename(int ncid, const char *what, const char *name, const char *newname) {
    mzn_session *s = mzn_registry_find(ncid);
    if (!s) return NC_NOERR;
    mzn_diag("%s: cannot rename %s '%s' to '%s': the NCZarr of netCDF-C %s does not rename its stored metadata "
             "and chunks, and the dataset would no longer open or read; copy it to a netCDF-4 file (nccopy), "
             "rename there (ncrename), and copy it back", s->archive_path, what, name ? name : "",
             newname ? newname : "", mzn_abi_version_string());
    return NC_ENCZARR;
}

EXPORT int nc_rename_dim(int ncid, int dimid, const char *name) {
    MZN_NEXT(int (*)(int, int, const char *), next, "nc_rename_dim");
    if (!next) return NC_EINTERNAL;
    char old[NC_MAX_NAME + 1] = "";
    if (mzn_registry_find(ncid)) {
        MZN_NEXT(int (*)(int, int, char *, size_t *), inq, "nc_inq_dim");
        if (inq) inq(ncid, dimid, old, NULL);
        return refuse_rename(ncid, "dimension", old, name);
    }
    return next(ncid, dimid, name);
}

EXPORT int nc_rename_var(int ncid, int varid, const char *name) {
    MZN_NEXT(int (*)(int, int, const char *), next, "nc_rename_var");
    if (!next) return NC_EINTERNAL;
    char old[NC_MAX_NAME + 1] = "";
    if (mzn_registry_find(ncid)) {
        MZN_NEXT(int (*)(int, int, char *), inq, "nc_inq_varname");
        if (inq) inq(ncid, varid, old);
        return refuse_rename(ncid, "variable", old, name);
    }
    return next(ncid, varid, name);
}

EXPORT int nc_rename_grp(int grpid, const char *name) {
    MZN_NEXT(int (*)(int, const char *), next, "nc_rename_grp");
    if (!next) return NC_EINTERNAL;
    char old[NC_MAX_NAME + 1] = "";
    if (mzn_registry_find(grpid)) {
        MZN_NEXT(int (*)(int, char *), inq, "nc_inq_grpname");
        if (inq) inq(grpid, old);
        return refuse_rename(grpid, "group", old, name);
    }
    return next(grpid, name);
}
