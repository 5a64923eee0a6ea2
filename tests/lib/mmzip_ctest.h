/* mmzip_ctest.h - a minimal assertion kit for the C tests: each check says what it compared. */
#ifndef MMZIP_CTEST_H
#define MMZIP_CTEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmzip.h"

static int ctest_failures;

#define CHECK(cond)                                                                                         \
    do {                                                                                                   \
        if (!(cond)) {                                                                                     \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                        \
            ctest_failures++;                                                                              \
        }                                                                                                  \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                                  \
    do {                                                                                                   \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                                    \
        if (a_ != b_) {                                                                                    \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__, __LINE__, #a, \
                    #b, a_, b_);                                                                           \
            ctest_failures++;                                                                              \
        }                                                                                                  \
    } while (0)

/* A library call that must succeed; on failure prints the library's message and stops the test. */
#define OK(call)                                                                                            \
    do {                                                                                                   \
        int st_ = (call);                                                                                  \
        if (st_ != MMZIP_OK) {                                                                             \
            fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #call, mmzip_strerror(st_),  \
                    mmzip_last_error());                                                                   \
            exit(1);                                                                                       \
        }                                                                                                  \
    } while (0)

/* A library call that must fail with a given status and a message mentioning `needle`. */
#define FAILS_WITH(call, status, needle)                                                                    \
    do {                                                                                                   \
        int st_ = (call);                                                                                  \
        if (st_ != (status)) {                                                                             \
            fprintf(stderr, "%s:%d: %s returned %s, want %s (%s)\n", __FILE__, __LINE__, #call,              \
                    mmzip_strerror(st_), mmzip_strerror(status), mmzip_last_error());                      \
            ctest_failures++;                                                                              \
        } else if ((needle) && !strstr(mmzip_last_error(), (needle))) {                                   \
            fprintf(stderr, "%s:%d: message of %s lacks \"%s\": %s\n", __FILE__, __LINE__, #call, (needle),  \
                    mmzip_last_error());                                                                   \
            ctest_failures++;                                                                              \
        }                                                                                                  \
    } while (0)

#define RUN(test)                                                                                           \
    do {                                                                                                   \
        fprintf(stderr, "-- %s\n", #test);                                                                 \
        test();                                                                                            \
    } while (0)

static inline int ctest_result(void) {
    if (ctest_failures) fprintf(stderr, "%d check(s) failed\n", ctest_failures);
    else fprintf(stderr, "all checks passed\n");
    return ctest_failures ? 1 : 0;
}

/* dir/name, for tests that keep their files in one directory. Four results stay valid at once (a test often
 * holds a source and a destination path while building a third). */
static inline const char *ctest_path_in(const char *dir, const char *name) {
    static char p[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

#endif
