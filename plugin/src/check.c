/*
 * check.c - full verification of an archive: every local header against the central directory and every
 * CRC, deflated entries decoded (without caching the result).
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    mmzip_report_fn report;
    void *ctx;
    int first;
    unsigned problems;
} checker;

static void problem(checker *c, int status) {
    if (c->report) c->report(mmzip_last_error(), c->ctx);
    if (!c->first) c->first = status;
    c->problems++;
}

static void note(checker *c, const char *msg) {
    if (c->report) c->report(msg, c->ctx);
}

/* The local header must agree with the directory on what libzip's consistency check compares. */
static int compare_local_header(mz_store *s, mz_entry *e) {
    const uint8_t *h = s->map.base + e->lfh_off;
    uint16_t flags = mz_get16(h + 6), xlen = mz_get16(h + 28), nlen = mz_get16(h + 26);
    if (flags & MZ_FLAG_DATA_DESCRIPTOR) return MMZIP_OK; /* sizes and CRC follow the data instead */
    uint32_t crc = mz_get32(h + 14);
    uint64_t csize = mz_get32(h + 18), usize = mz_get32(h + 22);
    const uint8_t *x = h + MZ_LFH_FIXED + nlen;
    for (uint32_t k = 0; k + 4 <= xlen;) {
        uint16_t id = mz_get16(x + k), len = mz_get16(x + k + 2);
        if (k + 4u + len > xlen) break;
        if (id == MZ_EXTRA_ZIP64 && len >= 16) {
            if (usize == 0xFFFFFFFFu) usize = mz_get64(x + k + 4);
            if (csize == 0xFFFFFFFFu) csize = mz_get64(x + k + 12);
        }
        k += 4u + len;
    }
    if (crc != e->crc || csize != e->csize || usize != e->usize)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the local header (crc %08x, %llu/%llu bytes) disagrees "
                       "with the central directory (crc %08x, %llu/%llu bytes)", s->path, (int)e->name_len,
                       mz_name(s, e), crc, (unsigned long long)csize, (unsigned long long)usize, e->crc,
                       (unsigned long long)e->csize, (unsigned long long)e->usize);
    return MMZIP_OK;
}

static int check_data(mz_store *s, mz_entry *e) {
    const uint8_t *p = s->map.base + e->data_off;
    if (e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION) || e->method == 99)
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' is encrypted; its CRC cannot be checked", s->path,
                       (int)e->name_len, mz_name(s, e));
    if (e->method == 0) return mz_verify_crc(s, e, p, e->csize);
    if (e->method != 8)
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' uses compression method %u, which mmzip cannot "
                       "decode", s->path, (int)e->name_len, mz_name(s, e), e->method);
    if (e->usize / 1032 > e->csize + 1 || e->usize > s->opts.max_decoded_size)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s' claims an impossible or oversized decoded size %llu",
                       s->path, (int)e->name_len, mz_name(s, e), (unsigned long long)e->usize);
    uint8_t *buf = malloc(e->usize ? e->usize : 1);
    if (!buf) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    int st = mz_inflate_entry(s, e, buf);
    free(buf);
    return st;
}

int mmzip_check(mmzip_t *h, mmzip_report_fn report, void *ctx) {
    if (!h) return mz_fail(MMZIP_EINVAL, "mmzip_check: NULL handle");
    mz_store *s = h->s;
    checker c = {report, ctx, 0, 0};
    pthread_rwlock_rdlock(&s->rw);
    if (!s->writable && s->trailer_key[0] < s->file_size) {
        mz_fail(MMZIP_ECORRUPT, "%s: %llu bytes follow the last commit's end records (an interrupted write); "
                "'mmzip recover' removes them", s->path, (unsigned long long)(s->file_size - s->trailer_key[0]));
        problem(&c, MMZIP_ECORRUPT);
    }
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        if (mz_resolve_data(s, e) != MMZIP_OK) {
            problem(&c, MMZIP_ECORRUPT);
            continue;
        }
        int st = compare_local_header(s, e);
        if (st) problem(&c, st);
        st = check_data(s, e);
        if (st) problem(&c, st);
        if (mz_lookup(s, mz_name(s, e), e->name_len, 0) != e) {
            char msg[600];
            snprintf(msg, sizeof msg, "%s: warning: entry '%.*s' appears more than once; the last one wins",
                     s->path, (int)(e->name_len > 400 ? 400 : e->name_len), mz_name(s, e));
            note(&c, msg);
        }
    }
    pthread_rwlock_unlock(&s->rw);
    if (c.first)
        mz_fail(c.first, "%s: %u problem%s found", s->path, c.problems, c.problems == 1 ? "" : "s");
    return c.first;
}
