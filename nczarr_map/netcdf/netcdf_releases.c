/*
 * netcdf_releases.c - the table of netCDF-C releases (see netcdf_releases.h). A new release is a row here.
 *
 * 4.9.1 and 4.9.2 share 4.9.0's row: they also read the lower-case spelling of the type table, but the
 * plugin treats them as 4.9.0 everywhere (their storage-map ABI and bugs are 4.9.0's), and the view
 * presents to them what 4.9.0 reads, which they read too.
 */
#include "netcdf_releases.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

/* clang-format off */
static const mzn_release releases[] = {
    /*                          patches    storage-map         view conventions: types key, char type, reads
     * versions      release    from  to   abi        chunk bo |S<n>/|J0, fixed strings, int, long chunks, lower */
    {"4.9.0-4.9.2",  4,  9,     0,    2,   MZN_ABI_V490, 1, 1, "_NCZARR_ATTR", "<U1", 0, 0, 0, 0, 0},
    {"4.9.3",        4,  9,     3,    3,   MZN_ABI_V493, 0, 0, "_nczarr_attr", ">S1", 1, 1, 1, 1, 1},
    {"4.10.x",       4,  10,    0,   -1,   MZN_ABI_V410, 0, 0, "_nczarr_attr", ">S1", 1, 1, 1, 1, 1},
};
/* clang-format on */

#define N_RELEASES (sizeof releases / sizeof releases[0])

const mzn_release *mzn_release_find(int major, int minor, int patch) {
    for (size_t i = 0; i < N_RELEASES; i++) {
        const mzn_release *r = &releases[i];
        if (major == r->major && minor == r->minor && patch >= r->first_patch &&
            (r->last_patch < 0 || patch <= r->last_patch))
            return r;
    }
    return NULL;
}

const mzn_release *mzn_release_oldest(void) { return &releases[0]; }

static pthread_once_t served_once = PTHREAD_ONCE_INIT;
static char served[256];

static void list_served(void) {
    size_t n = 0;
    for (size_t i = 0; i < N_RELEASES; i++) {
        int w = snprintf(served + n, sizeof served - n, "%s%s", i ? ", " : "", releases[i].versions);
        if (w < 0 || (size_t)w >= sizeof served - n) break; /* never with this table: messages only */
        n += (size_t)w;
    }
}

const char *mzn_releases_served(void) {
    pthread_once(&served_once, list_served);
    return served;
}
