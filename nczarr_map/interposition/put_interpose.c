/*
 * put_interpose.c - the nc_put_var* family, bracketed by the chunk write-back (chunk_writeback.h) for the
 * datasets this plugin serves on netCDF-C 4.9.0 - 4.9.2. Every other call goes straight to the next
 * definition, with no other cost than one registry lookup.
 *
 * All five forms (var, var1, vara, vars, varm) are covered, untyped and typed, because the tools use
 * different ones: nccopy and netCDF4-python nc_put_vara/nc_put_vars, NCO the typed families, C programs
 * anything. varm needs no refusal: its imap only reorders memory, the file region is the one of vars.
 */
#include <netcdf.h>
#include <stddef.h>

#include "chunk_writeback.h"
#include "forward.h"

#define EXPORT __attribute__((visibility("default")))

/* The bracket common to every form: prepare, run the real put, write back. */
#define BRACKETED_PUT(kind, start, count, stride, real_call)                                                  \
    mzn_session *s = mzn_put_session(ncid);                                                                   \
    if (!s) return real_call;                                                                                 \
    int rc = mzn_note_put_region(s, ncid, varid, kind, start, count, stride);                                 \
    if (rc != NC_NOERR) return rc;                                                                            \
    if (!mzn_writeback_session(ncid)) return real_call;                                                       \
    mzn_writeback *plan;                                                                                      \
    rc = mzn_writeback_prepare(s, ncid, varid, kind, start, count, stride, &plan);                            \
    if (rc != NC_NOERR) return rc;                                                                            \
    return mzn_writeback_finish(plan, real_call)

#define NEXT_OR_FAIL(type, fn, name)                                                                          \
    MZN_NEXT(type, fn, name);                                                                                 \
    if (!fn) return NC_EINTERNAL

#define DEFINE_PUT_VAR(name, P)                                                                               \
    EXPORT int name(int ncid, int varid, P op) {                                                              \
        NEXT_OR_FAIL(int (*)(int, int, P), next, #name);                                                      \
        BRACKETED_PUT(MZN_REGION_ALL, NULL, NULL, NULL, next(ncid, varid, op));                               \
    }

#define DEFINE_PUT_VAR1(name, P)                                                                              \
    EXPORT int name(int ncid, int varid, const size_t *indexp, P op) {                                        \
        NEXT_OR_FAIL(int (*)(int, int, const size_t *, P), next, #name);                                      \
        BRACKETED_PUT(MZN_REGION_ONE, indexp, NULL, NULL, next(ncid, varid, indexp, op));                     \
    }

#define DEFINE_PUT_VARA(name, P)                                                                              \
    EXPORT int name(int ncid, int varid, const size_t *startp, const size_t *countp, P op) {                  \
        NEXT_OR_FAIL(int (*)(int, int, const size_t *, const size_t *, P), next, #name);                      \
        BRACKETED_PUT(MZN_REGION_BOX, startp, countp, NULL, next(ncid, varid, startp, countp, op));           \
    }

#define DEFINE_PUT_VARS(name, P)                                                                              \
    EXPORT int name(int ncid, int varid, const size_t *startp, const size_t *countp,                          \
                    const ptrdiff_t *stridep, P op) {                                                         \
        NEXT_OR_FAIL(int (*)(int, int, const size_t *, const size_t *, const ptrdiff_t *, P),                 \
                     next, #name);                                                                            \
        BRACKETED_PUT(MZN_REGION_BOX, startp, countp, stridep,                                                \
                      next(ncid, varid, startp, countp, stridep, op));                                        \
    }

#define DEFINE_PUT_VARM(name, P)                                                                              \
    EXPORT int name(int ncid, int varid, const size_t *startp, const size_t *countp,                          \
                    const ptrdiff_t *stridep, const ptrdiff_t *imapp, P op) {                                 \
        NEXT_OR_FAIL(int (*)(int, int, const size_t *, const size_t *, const ptrdiff_t *,                     \
                             const ptrdiff_t *, P),                                                           \
                     next, #name);                                                                            \
        BRACKETED_PUT(MZN_REGION_BOX, startp, countp, stridep,                                                \
                      next(ncid, varid, startp, countp, stridep, imapp, op));                                 \
    }

/* All five forms for one element type; suffix is empty for the untyped functions, P the data pointer type. */
#define DEFINE_PUT_FAMILY(suffix, P)                                                                          \
    DEFINE_PUT_VAR(nc_put_var##suffix, P)                                                                     \
    DEFINE_PUT_VAR1(nc_put_var1##suffix, P)                                                                   \
    DEFINE_PUT_VARA(nc_put_vara##suffix, P)                                                                   \
    DEFINE_PUT_VARS(nc_put_vars##suffix, P)                                                                   \
    DEFINE_PUT_VARM(nc_put_varm##suffix, P)

DEFINE_PUT_FAMILY(, const void *)
DEFINE_PUT_FAMILY(_text, const char *)
DEFINE_PUT_FAMILY(_schar, const signed char *)
DEFINE_PUT_FAMILY(_uchar, const unsigned char *)
DEFINE_PUT_FAMILY(_short, const short *)
DEFINE_PUT_FAMILY(_int, const int *)
DEFINE_PUT_FAMILY(_long, const long *)
DEFINE_PUT_FAMILY(_float, const float *)
DEFINE_PUT_FAMILY(_double, const double *)
DEFINE_PUT_FAMILY(_ubyte, const unsigned char *)
DEFINE_PUT_FAMILY(_ushort, const unsigned short *)
DEFINE_PUT_FAMILY(_uint, const unsigned int *)
DEFINE_PUT_FAMILY(_longlong, const long long *)
DEFINE_PUT_FAMILY(_ulonglong, const unsigned long long *)
DEFINE_PUT_FAMILY(_string, const char **)
