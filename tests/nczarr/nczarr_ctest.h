/* nczarr_ctest.h - assertions for the NCZarr plugin's C tests, on top of tests/lib/mmzip_ctest.h. */
#ifndef NCZARR_CTEST_H
#define NCZARR_CTEST_H

#include <netcdf.h>

#include "mmzip_ctest.h"

/* A netCDF-style call (0 = success) that must succeed; stops the test otherwise. */
#define NC_OK(call)                                                                                         \
    do {                                                                                                   \
        int nst_ = (call);                                                                                 \
        if (nst_ != 0) {                                                                                   \
            fprintf(stderr, "%s:%d: %s returned %d (%s)\n", __FILE__, __LINE__, #call, nst_,                \
                    nc_strerror(nst_));                                                                    \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

/* A call that must return exactly `want`. */
#define CHECK_RC(call, want)                                                                                \
    do {                                                                                                   \
        int nst_ = (call);                                                                                 \
        if (nst_ != (want)) {                                                                              \
            fprintf(stderr, "%s:%d: %s returned %d, want %d (%s)\n", __FILE__, __LINE__, #call, nst_, (want),\
                    #want);                                                                                \
            ctest_failures++;                                                                              \
        }                                                                                                  \
    } while (0)

/* Two NUL-terminated strings must be equal (NULL only equals NULL). */
#define CHECK_STR(got, want)                                                                                \
    do {                                                                                                   \
        const char *g_ = (got), *w_ = (want);                                                              \
        if ((g_ == NULL) != (w_ == NULL) || (g_ && strcmp(g_, w_) != 0)) {                                 \
            fprintf(stderr, "%s:%d: %s: got \"%s\", want \"%s\"\n", __FILE__, __LINE__, #got,               \
                    g_ ? g_ : "(null)", w_ ? w_ : "(null)");                                               \
            ctest_failures++;                                                                              \
        }                                                                                                  \
    } while (0)

#endif
