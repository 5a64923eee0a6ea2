/* attribute_merge.c - merging a blind .zattrs rewrite into the archived attributes. */
#include "attribute_merge.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"

int mzn_merge_blind_attributes(const void *archived, size_t archived_len, const void *incoming,
                               size_t incoming_len, char **merged, size_t *merged_len) {
    *merged = NULL;
    *merged_len = 0;
    int rc = 0;
    mzn_json *base = mzn_json_parse(archived, archived_len);
    mzn_json *overlay = mzn_json_parse(incoming, incoming_len);
    mzn_json *original = NULL;
    if (!base || !overlay || base->kind != MZN_JSON_OBJECT || overlay->kind != MZN_JSON_OBJECT) goto out;
    rc = -1;
    if (!(original = mzn_json_copy(base)) || mzn_json_merge(base, overlay) != 0) goto out;
    if (mzn_json_equal(base, original)) {
        if (!(*merged = malloc(archived_len ? archived_len : 1))) goto out;
        memcpy(*merged, archived, archived_len);
        *merged_len = archived_len;
    } else if (!(*merged = mzn_json_print(base, merged_len))) {
        goto out;
    }
    rc = 1;
out:
    mzn_json_free(base);
    mzn_json_free(overlay);
    mzn_json_free(original);
    return rc;
}
