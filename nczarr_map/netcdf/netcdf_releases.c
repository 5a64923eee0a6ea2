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

/* Oldest first: the first row is what the view presents to before the map names a release. Every column is
 * described in netcdf_releases.h. */
static const mzn_release releases[] = {
    {
        .versions = "4.9.0-4.9.2", .major = 4, .minor = 9, .first_patch = 0, .last_patch = 2,
        .abi = MZN_ABI_V490,
        .loses_chunk_updates = 1,
        .mislabels_byte_order = 1,
        .types_key = "_NCZARR_ATTR",
        .char_attr_type = "<U1",
        .reads_string_attr_types = 0,
        .fixed_strings = 0,
        .infers_int_attributes = 0,
        .reads_long_chunks = 0,
        .reads_lowercase_nczarr = 0,
    },
    {
        .versions = "4.9.3", .major = 4, .minor = 9, .first_patch = 3, .last_patch = 3,
        .abi = MZN_ABI_V493,
        .loses_chunk_updates = 0,
        .mislabels_byte_order = 0,
        .types_key = "_nczarr_attr",
        .char_attr_type = ">S1",
        .reads_string_attr_types = 1,
        .fixed_strings = 1,
        .infers_int_attributes = 1,
        .reads_long_chunks = 1,
        .reads_lowercase_nczarr = 1,
    },
    {
        .versions = "4.10.x", .major = 4, .minor = 10, .first_patch = 0, .last_patch = -1,
        .abi = MZN_ABI_V410,
        .loses_chunk_updates = 0,
        .mislabels_byte_order = 0,
        .types_key = "_nczarr_attr",
        .char_attr_type = ">S1",
        .reads_string_attr_types = 1,
        .fixed_strings = 1,
        .infers_int_attributes = 1,
        .reads_long_chunks = 1,
        .reads_lowercase_nczarr = 1,
    },
};

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
