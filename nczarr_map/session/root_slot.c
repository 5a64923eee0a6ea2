/* root_slot.c - reserving and filling the root .zgroup as a created archive's first entry (see root_slot.h). */
#include "root_slot.h"

#include <netcdf.h>
#include <string.h>

#include "diag.h"
#include "status.h"

int mzn_root_slot_reserve(mzn_session *s, const char *key, size_t len) {
    if (!s->created || s->prefix_len != 0 || s->root_slot || strcmp(key, "/.zgroup") != 0 ||
        mmzip_count(s->archive) != 0 || s->pending_chunks.count != 0)
        return NC_NOERR;
    size_t capacity = 4 * len + 4096;
    void *view;
    int st = mmzip_reserve(s->archive, ".zgroup", capacity, 0, 0, &view);
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    s->root_slot = view;
    s->root_slot_capacity = capacity;
    mzn_trace("%s: first entry reserved for the root .zgroup (netCDF-C's zip backend then refuses the root "
              "layout)", s->archive_path);
    return NC_NOERR;
}

int mzn_root_slot_fill(mzn_session *s, const void *bytes, size_t len, int *filled) {
    *filled = 0;
    if (!s->root_slot) return NC_NOERR;
    int st;
    if (len <= s->root_slot_capacity) {
        memcpy(s->root_slot, bytes, len);
        st = mmzip_patch(s->archive, ".zgroup", len);
        *filled = st == MMZIP_OK;
    } else {
        mzn_trace("%s: the root .zgroup outgrew its reserved first entry (%zu > %zu bytes): written last",
                  s->archive_path, len, s->root_slot_capacity);
        st = mmzip_unreserve(s->archive, ".zgroup");
    }
    s->root_slot = NULL;
    if (st != MMZIP_OK) {
        mzn_diag("%s", mmzip_last_error());
        return mzn_nc_error(st);
    }
    return NC_NOERR;
}

void mzn_root_slot_abandon(mzn_session *s) {
    if (!s->root_slot) return;
    mmzip_unreserve(s->archive, ".zgroup");
    s->root_slot = NULL;
}
