/* put_regions.c - the chunk boxes a session's puts wrote into. */
#include "put_regions.h"

#include <stdlib.h>
#include <string.h>

/* One variable's boxes: n boxes of 2 * max(rank, 1) indices (first ones, then last ones), one allocation. */
typedef struct put_boxes {
    int rank;
    size_t n, cap;
    uint64_t bounds[];
} put_boxes;

static size_t box_len(int rank) { return 2 * (size_t)(rank > 0 ? rank : 1); }

int mzn_put_regions_add(mzn_session *s, const char *prefix, int rank, const uint64_t *first, const uint64_t *last) {
    size_t len = box_len(rank), half = len / 2;
    uint64_t box[2 * 64];
    if (len > sizeof box / sizeof box[0]) return -1;
    memcpy(box, first, half * sizeof *box);
    memcpy(box + half, last, half * sizeof *box);
    put_boxes *b = mzn_keymap_get(&s->put_regions, prefix);
    if (b && b->rank != rank) return 0; /* a variable redefined under the same name: keep the first */
    if (b && b->n && memcmp(b->bounds + (b->n - 1) * len, box, len * sizeof *box) == 0) return 0;
    if (!b || b->n == b->cap) {
        size_t cap = b ? b->cap * 2 : 4;
        put_boxes *grown = realloc(b, sizeof *grown + cap * len * sizeof(uint64_t));
        if (!grown) return -1;
        if (!b) grown->rank = rank, grown->n = 0;
        grown->cap = cap;
        void *old = NULL;
        if (mzn_keymap_put(&s->put_regions, prefix, grown, &old) != 0) {
            if (!b) free(grown);
            return -1;
        }
        b = grown;
    }
    memcpy(b->bounds + b->n * len, box, len * sizeof *box);
    b->n++;
    return 0;
}

/* Parses the chunk indices after a variable's prefix: rank numbers separated by '.' or '/'. */
static int parse_indices(const char *p, int rank, uint64_t *index) {
    int want = rank > 0 ? rank : 1;
    for (int d = 0; d < want; d++) {
        if (d && *p != '.' && *p != '/') return 0;
        if (d) p++;
        if (*p < '0' || *p > '9') return 0;
        uint64_t v = 0;
        while (*p >= '0' && *p <= '9') v = v * 10 + (uint64_t)(*p++ - '0');
        index[d] = v;
    }
    return *p == '\0';
}

int mzn_put_regions_cover(const mzn_session *s, const char *key) {
    const char *prefix;
    void *value;
    for (size_t cursor = 0; mzn_keymap_next(&s->put_regions, &cursor, &prefix, &value);) {
        size_t pl = strlen(prefix);
        const put_boxes *b = value;
        uint64_t index[64];
        if (strncmp(key, prefix, pl) != 0 || b->rank > 64 || !parse_indices(key + pl, b->rank, index)) continue;
        size_t len = box_len(b->rank), half = len / 2;
        for (size_t i = 0; i < b->n; i++) {
            const uint64_t *box = b->bounds + i * len;
            size_t d = 0;
            while (d < half && index[d] >= box[d] && index[d] <= box[half + d]) d++;
            if (d == half) return 1;
        }
    }
    return 0;
}
