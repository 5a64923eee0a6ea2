/*
 * repro_publish_on_close.c - reproducer for a core behaviour the NCZarr plugin has to work around (not a
 * CTest; see the plugin's issue report).
 *
 * mmzip.h says of MMZIP_PUBLISH_ON_COMMIT: "the file appears on disk only at the first commit ... "w" on an
 * existing archive leaves it untouched" until then. But mmzip_close() of such a store always publishes it,
 * even after mmzip_rollback() with nothing ever put: a writer that gives up (nc_abort of a create, an open
 * that fails after the store was created) replaces an existing archive with an empty one. A way to release
 * an unpublished store without publishing it (close after rollback not publishing, or an explicit
 * mmzip_discard) is needed; the plugin meanwhile deletes the archive on nc_abort of a create (netCDF's own
 * semantics) and cannot protect an existing archive when a create fails after opening the store.
 *
 * usage: repro_publish_on_close DIR     exit 0: behaves as documented; exit 1: the behaviour above
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "mmzip.h"

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    char path[4096];
    snprintf(path, sizeof path, "%s/repro_publish_on_close.zip", argv[1]);
    mmzip_t *h;
    if (mmzip_open(path, "w", NULL, &h) || mmzip_put(h, "keep", "precious", 8, 0) || mmzip_close(h)) return 2;

    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_PUBLISH_ON_COMMIT;
    o.commit_policy = MMZIP_COMMIT_MANUAL;
    if (mmzip_open(path, "w", &o, &h)) return 2;
    mmzip_rollback(h);
    mmzip_close(h);

    if (mmzip_open(path, "r", NULL, &h)) return 2;
    int kept = mmzip_exists(h, "keep");
    mmzip_close(h);
    if (kept) {
        printf("ok: the existing archive was left untouched\n");
        return 0;
    }
    printf("BUG: closing an unpublished MMZIP_PUBLISH_ON_COMMIT store after a rollback replaced the existing "
           "archive with an empty one\n");
    return 1;
}
