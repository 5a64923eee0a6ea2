/*
 * names.c - bulk listing of entry names into one buffer, for bindings.
 *
 * mmzip_list_ex() calls back once per entry. From an interpreter (Python's ctypes) a callback costs
 * microseconds, so listing an archive of 200 000 chunks took most of a second while the core's own walk
 * takes milliseconds. mmzip_list_names() hands the caller every name in one call instead, and can list only
 * the distinct children of a prefix (a zarr `listdir`), skipping over each child's subtree by binary search
 * in the sorted index rather than walking it.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* First position k in the sorted index whose name is >= key (len bytes). */
static uint32_t lower_bound(mz_store *s, const char *key, size_t len) {
    uint32_t lo = 0, hi = s->n_sorted;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const mz_entry *e = &s->e[s->sorted[mid]];
        size_t n = e->name_len < len ? e->name_len : len;
        int c = memcmp(mz_name(s, e), key, n);
        if (c < 0 || (c == 0 && e->name_len < len)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void emit(char *buf, size_t cap, size_t *used, const char *name, size_t len, int slash) {
    size_t need = len + (size_t)slash + 1;
    if (*used + need <= cap) {
        memcpy(buf + *used, name, len);
        if (slash) buf[*used + len] = '/';
        buf[*used + len + (size_t)slash] = '\0';
    }
    *used += need;
}

int mmzip_list_names(mmzip_t *h, const char *prefix, unsigned flags, char *buf, size_t cap, size_t *needed,
                     size_t *count) {
    if (!h || !needed || (cap && !buf)) return mz_fail(MMZIP_EINVAL, "mmzip_list_names: NULL argument");
    if (flags & ~(unsigned)MMZIP_NAMES_CHILDREN)
        return mz_fail(MMZIP_EINVAL, "mmzip_list_names: unknown flags %#x", flags);
    mz_store *s = h->s;
    if (!prefix) prefix = "";
    size_t plen = strlen(prefix);
    /* The sorted index is built lazily; building needs exclusive access (as in mmzip_list_ex). */
    pthread_rwlock_wrlock(&s->rw);
    int st = mz_sorted_index(s, h->writable);
    if (st) {
        pthread_rwlock_unlock(&s->rw);
        return st;
    }
    size_t used = 0, n = 0;
    char *skip = NULL; /* children: prefix + child + '0', the first name past the child's subtree */
    size_t skip_cap = 0;
    uint32_t k = lower_bound(s, prefix, plen);
    while (k < s->n_sorted) {
        const mz_entry *e = &s->e[s->sorted[k]];
        const char *name = mz_name(s, e);
        if (e->name_len < plen || memcmp(name, prefix, plen) != 0) break;
        if (!(flags & MMZIP_NAMES_CHILDREN)) {
            emit(buf, cap, &used, name, e->name_len, 0);
            n++;
            k++;
            continue;
        }
        const char *rest = name + plen;
        size_t rlen = e->name_len - plen;
        const char *slash = memchr(rest, '/', rlen);
        if (rlen == 0) { /* the prefix itself is an entry: not a child of it */
            k++;
            continue;
        }
        if (!slash) {
            emit(buf, cap, &used, rest, rlen, 0);
            n++;
            k++;
            continue;
        }
        size_t clen = (size_t)(slash - rest);
        emit(buf, cap, &used, rest, clen, 1);
        n++;
        /* Every name of this subtree starts with prefix + child + '/'; '0' is the byte after '/'. */
        size_t want = plen + clen + 1;
        if (want > skip_cap) {
            char *p = realloc(skip, want);
            if (!p) {
                free(skip);
                pthread_rwlock_unlock(&s->rw);
                return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            }
            skip = p;
            skip_cap = want;
        }
        memcpy(skip, name, plen + clen);
        skip[plen + clen] = '/' + 1;
        uint32_t next = lower_bound(s, skip, want);
        k = next > k ? next : k + 1;
    }
    pthread_rwlock_unlock(&s->rw);
    free(skip);
    *needed = used;
    if (count) *count = n;
    if (used > cap)
        return mz_fail(MMZIP_ETOOBIG, "%s: the names take %zu bytes, more than the %zu given; call again with a "
                       "larger buffer", s->path, used, cap);
    return MMZIP_OK;
}
