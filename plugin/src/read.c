/*
 * read.c - lookups, zero-copy reads, typed views, inflate and CRC checks.
 *
 * Stored entries are pointers into the shared mapping. Compressed entries are decoded once (deflate with
 * libdeflate, whole-buffer: ZIP records the exact size; bzip2, LZMA, zstd and xz in decode.c), CRC-checked, and kept for the life of the store so that the
 * pointer contract is the same for every method.
 */
#include "internal.h"

#include <errno.h>
#include <libdeflate.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define ENAME(e) (int)(e)->name_len, mz_name(s, (e))

/* Read with pread: every open asks this of its last entry, and it would be the open's only touch of the
 * mapping (copy.c, MZ_COPY_PREAD_BELOW). An extra field too long for the buffer is read where it lies. */
int mz_written_by_mmzip(mz_store *s, const mz_entry *e) {
    uint8_t head[MZ_LFH_FIXED], extra[1024];
    const uint8_t *h = s->map.base + e->lfh_off;
    if (mz_read_at(s, head, sizeof head, e->lfh_off) == 0) h = head;
    uint16_t nlen = mz_get16(h + 26), xlen = mz_get16(h + 28);
    const uint8_t *x = s->map.base + e->lfh_off + MZ_LFH_FIXED + nlen;
    if (xlen <= sizeof extra && mz_read_at(s, extra, xlen, e->lfh_off + MZ_LFH_FIXED + nlen) == 0) x = extra;
    for (uint32_t k = 0; k + 4 <= xlen;) {
        uint16_t id = mz_get16(x + k), len = mz_get16(x + k + 2);
        if (id == MZ_EXTRA_ALIGN) return 1;
        k += 4u + len;
    }
    return 0;
}

int mz_data_end_of(mz_store *s, mz_entry *e, uint64_t *end) {
    int st = mz_resolve_data(s, e);
    if (st) return st;
    uint64_t x = e->data_off + e->csize;
    if (e->gp_flags & MZ_FLAG_DATA_DESCRIPTOR) {
        /* crc, csize, usize follow the data, optionally behind a signature; sizes are 8 bytes in ZIP64. */
        const uint8_t *p = s->map.base + x;
        uint64_t room = e->limit > x ? e->limit - x : 0;
        uint64_t sig = room >= 4 && mz_get32(p) == MZ_SIG_DD ? 4 : 0;
        uint64_t dd = sig + 12;
        if (room >= sig + 12 && mz_get32(p + sig + 4) == (uint32_t)e->csize &&
            mz_get32(p + sig + 8) == (uint32_t)e->usize)
            dd = sig + 12;
        else if (room >= sig + 20)
            dd = sig + 20;
        x += dd <= room ? dd : room;
    }
    *end = x;
    return MMZIP_OK;
}

uint64_t mz_room_of(mz_store *s, const mz_entry *e) {
    if (!e->room || !e->data_off) return 0;
    uint64_t end = e->data_off + e->csize, next = s->cd_pos > end ? s->cd_pos : end;
    for (uint32_t i = 0; i < s->n; i++) {
        const mz_entry *o = &s->e[i];
        if (o != e && o->lfh_off >= end && o->lfh_off < next && !(o->mark & MZ_MARK_DEAD)) next = o->lfh_off;
    }
    return next - end < e->room ? next - end : e->room;
}

typedef struct {
    mz_entry *e;
    char how[600];
} marked_probe;

static int probe_marked(mz_store *s, mz_entry *e, const char *how, void *ctx) {
    (void)s;
    marked_probe *p = ctx;
    if (e != p->e) return 0;
    snprintf(p->how, sizeof p->how, "%s", how);
    return 1;
}

/* What an entry that awaits recovery (or is being edited now) is, for messages: "" if nothing. */
const char *mz_unfinished_why(mz_store *s, mz_entry *e, char *buf, size_t len) {
    buf[0] = '\0';
    if (e->mark & MZ_MARK_EDITING) {
        if (mz_edit_lock_held(s, e->lfh_off))
            snprintf(buf, len, "it is being written in place by another process or handle; read it again once "
                     "that writer has closed it");
        else
            snprintf(buf, len, "it was being written in place when its writer was killed, and an undo journal "
                     "(%s.mmzip-undo) holds its last committed version: run 'mmzip recover %s' (or open the "
                     "archive writable) to restore it", s->path, s->path);
        return buf;
    }
    marked_probe p = {e, ""};
    if (mz_marked_each(s, probe_marked, &p) == 1) {
        if (!s->writable && mz_writer_lock_held(s->fd) == 1)
            snprintf(buf, len, "it is being modified in place by a writer now (%s); its CRC is refreshed at that "
                     "writer's next commit", p.how);
        else
            snprintf(buf, len, "it was being modified in place (%s) when its writer was killed: run 'mmzip recover "
                     "%s' (or open the archive writable), which keeps its bytes as that writer left them and "
                     "recomputes its CRC", p.how, s->path);
    }
    return buf;
}

/* Where the entry's bytes may end for zipfile: the next local header, or the directory (CPython's check for
 * overlapping entries, 3.11.4 on and Debian's 3.11.2). */
static uint64_t next_start(mz_store *s, const mz_entry *e) {
    uint64_t next = s->cd_pos;
    for (uint32_t i = 0; i < s->n_committed; i++)
        if (s->e[i].lfh_off > e->lfh_off && s->e[i].lfh_off < next) next = s->e[i].lfh_off;
    return next;
}

static void clause(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void clause(char *why, size_t len, const char *fmt, ...) {
    size_t o = strlen(why);
    if (o && o + 2 < len) {
        memcpy(why + o, "; ", 3);
        o += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    if (o < len) vsnprintf(why + o, len - o, fmt, ap);
    va_end(ap);
}

int mz_entry_anomaly(mz_store *s, const mz_entry *e, int all, char *why, size_t len, unsigned *refuse,
                     unsigned *warn, const char **label) {
    unsigned r = 0, w = 0;
    const char *first = NULL;
    why[0] = '\0';
    if (e->cd_rec + MZ_CDH_FIXED > s->cd_len || e->lfh_off + MZ_LFH_FIXED > s->file_size) return 0;
    const uint8_t *rec = s->cd + e->cd_rec, *h = s->map.base + e->lfh_off;
    if (!mz_lfh_sig_or_cleared(h) || mz_get16(h + 26) != e->name_len) return 0; /* not a header of this entry */
    uint16_t lflags = mz_get16(h + 6), lmethod = mz_get16(h + 8), nlen = mz_get16(h + 26), xlen = mz_get16(h + 28);
    uint32_t lcrc = mz_get32(h + 14), rcsize = mz_get32(rec + 20);
    uint64_t lcsize = mz_get32(h + 18), lusize = mz_get32(h + 22);
    if (e->lfh_off + MZ_LFH_FIXED + nlen + xlen <= s->file_size) {
        const uint8_t *x = h + MZ_LFH_FIXED + nlen;
        for (uint32_t k = 0; k + 4 <= xlen;) {
            uint16_t id = mz_get16(x + k), l = mz_get16(x + k + 2);
            if (k + 4u + l > xlen) break;
            if (id == MZ_EXTRA_ZIP64) { /* in a local header: the size, then the compressed size */
                if (lusize == 0xFFFFFFFFu && l >= 8) lusize = mz_get64(x + k + 4);
                if (lcsize == 0xFFFFFFFFu && l >= 16) lcsize = mz_get64(x + k + 12);
            }
            k += 4u + l;
        }
    }
    int stored_longer = e->method == 0 && rcsize != 0xFFFFFFFFu && rcsize > e->csize;
    if (stored_longer) {
        /* zipfile refuses entries that would run into the next one; unzip reads the local header's size. */
        uint64_t data = e->lfh_off + MZ_LFH_FIXED + nlen + xlen;
        int overlaps = data + rcsize > next_start(s, e);
        clause(why, len, "its directory record gives a compressed size (%u) larger than its size (%llu) for a "
               "stored entry: the first %llu bytes are read and checked against the CRC-32%s", rcsize,
               (unsigned long long)e->usize, (unsigned long long)e->usize,
               overlaps ? " (zipfile refuses it: that size runs into what follows the entry)" : ", as zipfile does");
        r |= MZ_R_7ZIP | MZ_R_LIBZIP | (overlaps ? MZ_R_ZIPFILE : 0) |
             (lcsize != e->usize ? MZ_R_UNZIP : 0);
        first = "a stored entry's recorded size";
    }
    if (lmethod != e->method) {
        clause(why, len, "its local header says compression method %u, its directory record %u: the directory's "
               "is used, as zipfile does, and the CRC-32 checked", lmethod, e->method);
        r |= MZ_R_UNZIP | MZ_R_7ZIP | MZ_R_LIBZIP;
        if (!first) first = "a local header's method";
    }
    /* With a data descriptor the local header may hold zeros where the values are not known yet (APPNOTE
     * 4.4.4): unzip and 7-Zip take the directory's then. Info-ZIP's zip writing to a pipe leaves the CRC-32
     * and compressed size zero and fills in the size; libzip's consistency check accepts all three zero or all
     * three right, not a mix. */
    int dd = (lflags & MZ_FLAG_DATA_DESCRIPTOR) != 0;
    int dd_zeros = dd && (lcrc == 0 || lcrc == e->crc) && (lcsize == 0 || lcsize == e->csize) &&
                   (lusize == 0 || lusize == e->usize);
    if (dd_zeros && all && !(lcrc == 0 && lcsize == 0 && lusize == 0) &&
        !(lcrc == e->crc && lcsize == e->csize && lusize == e->usize)) {
        clause(why, len, "a data descriptor follows its data, and its local header gives some of the CRC-32 and "
               "sizes as zeros and some as the directory's (Info-ZIP zip writing to a pipe does this): libzip's "
               "consistency check wants all three zero or all three right");
        r |= MZ_R_LIBZIP;
        if (!first) first = "a local header's CRC-32 and sizes";
    }
    if (!dd_zeros && lcrc != e->crc) {
        clause(why, len, "its local header gives CRC-32 %08x, its directory record %08x: the directory's is "
               "checked, as zipfile does", lcrc, e->crc);
        r |= MZ_R_UNZIP | MZ_R_7ZIP | MZ_R_LIBZIP;
        if (!first) first = "a local header's CRC-32";
    }
    if (!dd_zeros && !stored_longer && lcsize != e->csize) {
        clause(why, len, "its local header gives a compressed size of %llu bytes, its directory record %llu: the "
               "directory's is used, as zipfile does", (unsigned long long)lcsize, (unsigned long long)e->csize);
        r |= MZ_R_UNZIP | MZ_R_7ZIP | MZ_R_LIBZIP;
        if (!first) first = "a local header's sizes";
    }
    if (!dd_zeros && lusize != e->usize) {
        clause(why, len, "its local header gives a size of %llu bytes, its directory record %llu: the directory's "
               "is used, as zipfile does", (unsigned long long)lusize, (unsigned long long)e->usize);
        w |= MZ_R_UNZIP;
        r |= MZ_R_7ZIP | MZ_R_LIBZIP;
        if (!first) first = "a local header's sizes";
    }
    /* What libzip's consistency check (_zip_headercomp) also compares; nothing mmzip reads depends on it. */
    uint16_t lver = mz_get16(h + 4), rver = mz_get16(rec + 6);
    if (all && lver > rver) {
        clause(why, len, "its local header needs version %u.%u to extract, its directory record %u.%u (Info-ZIP zip "
               "-fz writes this for directories)", lver / 10, lver % 10, rver / 10, rver % 10);
        r |= MZ_R_LIBZIP;
        if (!first) first = "a local header's version needed";
    }
    if (all && mz_get32(h + 10) != mz_get32(rec + 12)) {
        clause(why, len, "its local header's modification time and date (%04x %04x) are not its directory "
               "record's (%04x %04x)", mz_get16(h + 10), mz_get16(h + 12), mz_get16(rec + 12), mz_get16(rec + 14));
        r |= MZ_R_LIBZIP;
        if (!first) first = "a local header's time";
    }
    w &= ~r;
    if (refuse) *refuse = r;
    if (warn) *warn = w;
    if (label) *label = first ? first : "";
    return why[0] != '\0';
}

int mz_anomaly_why(mz_store *s, const mz_entry *e, char *why, size_t len) {
    return mz_entry_anomaly(s, e, 0, why, len, NULL, NULL, NULL);
}

int mz_verify_crc(mz_store *s, mz_entry *e, const uint8_t *data, uint64_t len) {
    uint32_t c = mz_crc32(0, data, (size_t)len);
    if (c != e->crc) {
        char why[1024];
        if (!mz_unfinished_why(s, e, why, sizeof why)[0] && (e->mark & MZ_MARK_VERIFY) &&
            !mz_anomaly_why(s, e, why, sizeof why))
            snprintf(why, sizeof why, "it is the last entry of an archive another program wrote: torn by that "
                     "writer's interruption, or damaged (mmzip does not roll back entries it did not write)");
        return mz_fail(MMZIP_ECRC, "%s: entry '%.*s': CRC-32 mismatch (directory says %08x, data gives %08x)%s%s",
                       s->path, ENAME(e), e->crc, c, why[0] ? "; " : "", why);
    }
    return MMZIP_OK;
}

static uint32_t slot_of(uint64_t lfh_off) { return (uint32_t)((lfh_off * 0x9E3779B97F4A7C15ull) >> 32); }

/* Under decode_mu. */
static mz_decoded *decoded_find(mz_store *s, uint64_t lfh_off) {
    if (!s->decoded) return NULL;
    for (uint32_t i = slot_of(lfh_off) & s->decoded_mask;; i = (i + 1) & s->decoded_mask) {
        mz_decoded *d = &s->decoded[i];
        if (!d->data) return NULL;
        if (d->lfh_off == lfh_off) return d;
    }
}

/* Under decode_mu. Returns 0, or -1 out of memory. */
static int decoded_add(mz_store *s, uint64_t lfh_off, void *data, uint64_t size) {
    if (!s->decoded || (uint64_t)(s->n_decoded + 1) * 2 > (uint64_t)s->decoded_mask + 1) {
        uint32_t n = s->decoded ? (s->decoded_mask + 1) * 2 : 64;
        mz_decoded *t = calloc(n, sizeof *t);
        if (!t) return -1;
        for (uint32_t k = 0; s->decoded && k <= s->decoded_mask; k++) {
            mz_decoded *d = &s->decoded[k];
            if (!d->data) continue;
            uint32_t i = slot_of(d->lfh_off) & (n - 1);
            while (t[i].data) i = (i + 1) & (n - 1);
            t[i] = *d;
        }
        free(s->decoded);
        s->decoded = t;
        s->decoded_mask = n - 1;
    }
    uint32_t i = slot_of(lfh_off) & s->decoded_mask;
    while (s->decoded[i].data) i = (i + 1) & s->decoded_mask;
    s->decoded[i].lfh_off = lfh_off;
    s->decoded[i].data = data;
    s->decoded[i].size = size;
    s->n_decoded++;
    return 0;
}

static int decode(mz_store *s, mz_entry *e, const uint8_t **out) {
    pthread_mutex_lock(&s->decode_mu);
    mz_decoded *hit = decoded_find(s, e->lfh_off);
    pthread_mutex_unlock(&s->decode_mu);
    if (hit) {
        *out = hit->data;
        return MMZIP_OK;
    }
    if (e->usize > s->opts.max_decoded_size)
        return mz_fail(MMZIP_ETOOBIG, "%s: entry '%.*s' decodes to %llu bytes, more than max_decoded_size (%llu)",
                       s->path, ENAME(e), (unsigned long long)e->usize,
                       (unsigned long long)s->opts.max_decoded_size);
    /* Deflate cannot expand by more than about 1032:1; a larger claim is a bomb or garbage. (The other
     * methods can, legitimately: for them max_decoded_size is the bound, and decoding stops at usize.) */
    if (e->method == 8 && e->usize / 1032 > e->csize + 1)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s' claims %llu bytes from %llu deflated bytes, which "
                       "deflate cannot produce (a decompression bomb?)", s->path, ENAME(e),
                       (unsigned long long)e->usize, (unsigned long long)e->csize);
    uint8_t *buf = malloc(e->usize ? e->usize : 1);
    if (!buf) return mz_fail(MMZIP_ENOMEM, "%s: entry '%.*s': out of memory", s->path, ENAME(e));
    int st = mz_decode_entry(s, e, buf);
    if (st) {
        free(buf);
        return st;
    }
    pthread_mutex_lock(&s->decode_mu);
    /* Another thread may have decoded it meanwhile: keep the first copy, whose pointer may be out already. */
    hit = decoded_find(s, e->lfh_off);
    if (!hit && decoded_add(s, e->lfh_off, buf, e->usize) != 0) st = MMZIP_ENOMEM;
    pthread_mutex_unlock(&s->decode_mu);
    if (hit) {
        free(buf);
        *out = hit->data;
        return MMZIP_OK;
    }
    if (st) {
        free(buf);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    *out = buf;
    return MMZIP_OK;
}

int mz_inflate_entry(mz_store *s, mz_entry *e, uint8_t *buf) {
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    if (!d) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    enum libdeflate_result r = libdeflate_deflate_decompress(d, s->map.base + e->data_off, (size_t)e->csize, buf,
                                                             (size_t)e->usize, NULL);
    libdeflate_free_decompressor(d);
    if (r != LIBDEFLATE_SUCCESS)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the deflate stream is %s", s->path, ENAME(e),
                       r == LIBDEFLATE_SHORT_OUTPUT ? "shorter than the recorded size"
                       : r == LIBDEFLATE_INSUFFICIENT_SPACE ? "longer than the recorded size"
                                                            : "corrupt");
    return mz_verify_crc(s, e, buf, e->usize);
}

int mz_decode_entry(mz_store *s, mz_entry *e, uint8_t *buf) {
    if (e->method == 8) return mz_inflate_entry(s, e, buf);
    int st = mz_decode_other(s, e, buf);
    return st ? st : mz_verify_crc(s, e, buf, e->usize);
}

/* The local header's CRC-32 field, where it is the entry's (no data descriptor); 1 if it says what e says. */
static int local_crc_agrees(mz_store *s, const mz_entry *e) {
    if (e->lfh_off + MZ_LFH_FIXED > s->file_size) return 1;
    const uint8_t *h = s->map.base + e->lfh_off;
    return (mz_get16(h + 6) & MZ_FLAG_DATA_DESCRIPTOR) || mz_get32(h + 14) == e->crc;
}

int mz_changed_in_place(mz_store *s, const mz_entry *e) {
    /* A verified entry whose local header now gives another CRC-32: an edit in place (HDF5 through the driver,
     * an npz array) committed by another writer since this snapshot, which rewrote the bytes and the CRC in
     * the local header (commit.c set_crc). The memo of the check (MZ_MARK_CRC_OK) is only set where the local
     * header agreed, so an archive whose local header disagrees from the start is not taken for one. */
    return (__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & MZ_MARK_CRC_OK) && !local_crc_agrees(s, e);
}

int mz_fail_changed_in_place(mz_store *s, const mz_entry *e) {
    return mz_fail(MMZIP_ESTALE, "%s: entry '%.*s' was rewritten in place by another writer since this reader's "
                   "snapshot (its local header now gives CRC-32 %08x, the snapshot's directory %08x): refresh or "
                   "reopen the archive to read it", s->path, ENAME(e), mz_get32(s->map.base + e->lfh_off + 14),
                   e->crc);
}

int mz_verify_stored_once(mz_store *s, mz_entry *e) {
    if (__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & MZ_MARK_CRC_OK)
        return local_crc_agrees(s, e) ? MMZIP_OK : mz_fail_changed_in_place(s, e);
    int st = mz_verify_crc(s, e, s->map.base + e->data_off, e->csize);
    if (st == MMZIP_OK && local_crc_agrees(s, e)) __atomic_fetch_or(&e->mark, MZ_MARK_CRC_OK, __ATOMIC_RELEASE);
    return st;
}

int mz_entry_bytes(mz_store *s, mz_entry *e, const uint8_t **data, uint64_t *size) {
    if (__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & MZ_MARK_EDITING) {
        char why[1024];
        return mz_fail(MMZIP_EBUSY, "%s: entry '%.*s' cannot be read now: %s", s->path, ENAME(e),
                       mz_unfinished_why(s, e, why, sizeof why));
    }
    if (e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION) || e->method == 99)
        return mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' is encrypted; mmzip does not decrypt", s->path,
                       ENAME(e));
    int st = mz_resolve_data(s, e);
    if (st) return st;
    if (e->method == 0) {
        const uint8_t *p = s->map.base + e->data_off;
        if (__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & (MZ_MARK_VERIFY | MZ_MARK_BAD)) {
            /* The physically last entry may be the torn tail of an interrupted foreign writer: check it
             * once before handing it out. */
            st = mz_verify_crc(s, e, p, e->csize);
            if (st) {
                __atomic_fetch_or(&e->mark, MZ_MARK_BAD, __ATOMIC_RELEASE);
                return st;
            }
            __atomic_fetch_and(&e->mark, (uint8_t)~MZ_MARK_VERIFY, __ATOMIC_RELEASE);
        }
        *data = p;
        *size = e->usize;
        return MMZIP_OK;
    }
    if (!mz_method_supported(e->method)) return mz_decode_other(s, e, NULL); /* the EUNSUPPORTED message */
    st = decode(s, e, data);
    if (st) return st;
    *size = e->usize;
    return MMZIP_OK;
}

/* ---------------------------------------------------------------------------------------------------- */

static mz_entry *find(mmzip_t *h, const char *key) {
    return mz_lookup(h->s, key, strlen(key), h->writable);
}

/*
 * The writer's own pending entries may still sit in the gathering buffer (write.c) rather than in the file.
 * Before their bytes are read through the mapping, the buffer is written. Returns 1 if it was (the caller
 * looks the entry up again: the table may have changed while the lock was released), 0 if not needed.
 */
static int written_or_flush(mz_store *s, const mz_entry *e, int *status) {
    if (e->state != MZ_PENDING || e->data_off + e->csize <= __atomic_load_n(&s->written_end, __ATOMIC_ACQUIRE))
        return 0;
    pthread_rwlock_unlock(&s->rw);
    pthread_mutex_lock(&s->wmu);
    *status = mz_flush_writes(s);
    pthread_mutex_unlock(&s->wmu);
    pthread_rwlock_rdlock(&s->rw);
    return 1;
}

size_t mmzip_count(mmzip_t *h) {
    if (!h) return 0;
    mz_store *s = h->s;
    pthread_rwlock_wrlock(&s->rw);
    size_t n = 0;
    if (mz_sorted_index(s, h->writable) == MMZIP_OK) n = s->n_sorted;
    pthread_rwlock_unlock(&s->rw);
    return n;
}

int mmzip_exists(mmzip_t *h, const char *key) {
    if (!h || !key) return 0;
    pthread_rwlock_rdlock(&h->s->rw);
    int r = find(h, key) != NULL;
    pthread_rwlock_unlock(&h->s->rw);
    return r;
}

static void fill_info(mz_store *s, mz_entry *e, mmzip_entry_info *info, int resolve) {
    memset(info, 0, sizeof *info);
    info->name = mz_name(s, e);
    info->name_len = e->name_len;
    info->size = e->usize;
    info->compressed_size = e->csize;
    info->header_offset = e->lfh_off;
    info->crc32 = e->crc;
    info->method = e->method;
    info->flags = e->gp_flags;
    info->pending = e->state == MZ_PENDING;
    if (!resolve) return;
    if (mz_resolve_data(s, e) == MMZIP_OK) info->data_offset = e->data_off;
    uint64_t d = info->data_offset;
    uint32_t a = MZ_MAX_ALIGNMENT;
    if (d) {
        uint64_t low = d & (~d + 1);
        if (low < a) a = (uint32_t)low;
    }
    info->alignment = a;
    info->pending = e->state == MZ_PENDING;
}

int mmzip_stat(mmzip_t *h, const char *key, mmzip_entry_info *info) {
    if (!h || !key || !info) return mz_fail(MMZIP_EINVAL, "mmzip_stat: NULL argument");
    mz_store *s = h->s;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = find(h, key);
    if (!e) {
        pthread_rwlock_unlock(&s->rw);
        return mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    }
    fill_info(s, e, info, 1);
    info->name = key;
    pthread_rwlock_unlock(&s->rw);
    return MMZIP_OK;
}

int mmzip_size(mmzip_t *h, const char *key, uint64_t *size) {
    if (!h || !key || !size) return mz_fail(MMZIP_EINVAL, "mmzip_size: NULL argument");
    pthread_rwlock_rdlock(&h->s->rw);
    mz_entry *e = find(h, key);
    if (e) *size = e->usize;
    pthread_rwlock_unlock(&h->s->rw);
    return e ? MMZIP_OK : mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", h->s->path, key);
}

int mmzip_get(mmzip_t *h, const char *key, const void **data, uint64_t *size) {
    if (!h || !key || !data || !size) return mz_fail(MMZIP_EINVAL, "mmzip_get: NULL argument");
    mz_store *s = h->s;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = find(h, key);
    int st = MMZIP_OK;
    while (e && written_or_flush(s, e, &st) && st == MMZIP_OK) e = find(h, key);
    if (st) { /* could not write the gathered bytes: reported as is */ }
    else if (!e) st = mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    else {
        const uint8_t *p;
        st = mz_entry_bytes(s, e, &p, size);
        /* Compressed entries were checked when decoded; stored ones on request, once. */
        if (st == MMZIP_OK && h->verify_get && e->method == 0) st = mz_verify_stored_once(s, e);
        else if (st == MMZIP_OK && e->method == 0 && mz_changed_in_place(s, e)) st = mz_fail_changed_in_place(s, e);
        if (st == MMZIP_OK) *data = p;
    }
    pthread_rwlock_unlock(&s->rw);
    return st;
}

int mmzip_verify(mmzip_t *h, const char *key) {
    if (!h || !key) return mz_fail(MMZIP_EINVAL, "mmzip_verify: NULL argument");
    mz_store *s = h->s;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = find(h, key);
    int st = MMZIP_OK;
    while (e && written_or_flush(s, e, &st) && st == MMZIP_OK) e = find(h, key);
    if (st) { /* reported as is */ }
    else if (!e) st = mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    else if (e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION) || e->method == 99)
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%s' is encrypted; its CRC cannot be checked", s->path, key);
    else if ((st = mz_resolve_data(s, e)) != MMZIP_OK) { /* reported */ }
    else if (e->method == 0) st = mz_verify_stored_once(s, e);
    else if (!mz_method_supported(e->method)) st = mz_decode_other(s, e, NULL);
    else {
        /* Decoded into a scratch buffer, not kept: verifying must not pin memory. A copy already decoded
         * for mmzip_get was checked when it was made. */
        pthread_mutex_lock(&s->decode_mu);
        int cached = decoded_find(s, e->lfh_off) != NULL;
        pthread_mutex_unlock(&s->decode_mu);
        if (!cached) {
            if (e->usize > s->opts.max_decoded_size)
                st = mz_fail(MMZIP_ETOOBIG, "%s: entry '%s' decodes to %llu bytes, more than max_decoded_size",
                             s->path, key, (unsigned long long)e->usize);
            else if (e->method == 8 && e->usize / 1032 > e->csize + 1)
                st = mz_fail(MMZIP_ECORRUPT, "%s: entry '%s' claims %llu bytes from %llu deflated bytes, which "
                             "deflate cannot produce", s->path, key, (unsigned long long)e->usize,
                             (unsigned long long)e->csize);
            else {
                uint8_t *buf = malloc(e->usize ? e->usize : 1);
                st = buf ? mz_decode_entry(s, e, buf) : mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
                free(buf);
            }
        }
    }
    pthread_rwlock_unlock(&s->rw);
    return st;
}

const void *mmzip_get_typed(mmzip_t *h, const char *key, size_t elem_size, size_t elem_align, uint64_t count) {
    if (!h || !key || elem_size == 0 || elem_align == 0 || (elem_align & (elem_align - 1))) return NULL;
    mz_store *s = h->s;
    const void *r = NULL;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = find(h, key);
    int st = MMZIP_OK;
    while (e && written_or_flush(s, e, &st) && st == MMZIP_OK) e = find(h, key);
    if (st == MMZIP_OK && e && e->method == 0 && count <= UINT64_MAX / elem_size && e->usize == count * elem_size) {
        const uint8_t *p;
        uint64_t n;
        if (mz_entry_bytes(s, e, &p, &n) == MMZIP_OK && ((uintptr_t)p & (elem_align - 1)) == 0 &&
            (!h->verify_get || mz_verify_stored_once(s, e) == MMZIP_OK))
            r = p;
    }
    pthread_rwlock_unlock(&s->rw);
    return r;
}

/* Copies out of large stored ranges go through pread(): the kernel copies straight from the page cache,
 * where a first pass through the mapping would take a page fault for every 64 KiB or so. Small reads copy
 * from the mapping, which costs no system call. */
#define MZ_PREAD_MIN (256u << 10)

int mmzip_read(mmzip_t *h, const char *key, uint64_t offset, void *buf, size_t len, size_t *nread) {
    if (!h || !key || (!buf && len) || !nread) return mz_fail(MMZIP_EINVAL, "mmzip_read: NULL argument");
    mz_store *s = h->s;
    *nread = 0;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = find(h, key);
    int fst = MMZIP_OK;
    while (e && written_or_flush(s, e, &fst) && fst == MMZIP_OK) e = find(h, key);
    if (fst) {
        pthread_rwlock_unlock(&s->rw);
        return fst;
    }
    if (!e) {
        pthread_rwlock_unlock(&s->rw);
        return mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    }
    int direct = e->method == 0 && len >= MZ_PREAD_MIN && e->state == MZ_COMMITTED &&
                 !(e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION)) &&
                 !(__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & (MZ_MARK_VERIFY | MZ_MARK_BAD));
    int st_direct = direct ? mz_resolve_data(s, e) : MMZIP_OK;
    /* Resolving may find a reason to check the CRC first (a local header that disagrees on the method). */
    if (direct && !st_direct && (__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & MZ_MARK_VERIFY)) direct = 0;
    if (direct) {
        int st = st_direct;
        uint64_t size = e->usize, at = e->data_off + offset, lfh_off = e->lfh_off;
        uint32_t crc = e->crc;
        int known_good = (__atomic_load_n(&e->mark, __ATOMIC_ACQUIRE) & MZ_MARK_CRC_OK) != 0;
        if (!st && mz_changed_in_place(s, e)) st = mz_fail_changed_in_place(s, e);
        pthread_rwlock_unlock(&s->rw);
        if (st) return st;
        if (offset >= size) return MMZIP_OK;
        size_t k = (size_t)(size - offset < len ? size - offset : len);
        if (mz_copy_split(s->fd, NULL, buf, k, at, s->opts.copy_threads) != 0)
            return mz_fail_errno(MMZIP_EIO, errno, "%s: entry '%s': cannot read %zu bytes", s->path, key, k);
        /* A read of the whole entry checks its CRC-32 on the copy (once the entry is known good, never again,
         * unless an edit in place by another writer changed it: mz_changed_in_place). A partial read cannot,
         * and does not. */
        if (offset == 0 && k == size && !known_good) {
            uint32_t c = mz_crc32(0, buf, k);
            if (c != crc)
                return mz_fail(MMZIP_ECRC, "%s: entry '%s': CRC-32 mismatch (directory says %08x, data gives %08x)",
                               s->path, key, crc, c);
            /* The table may have changed while unlocked: mark the entry only if it is still the same one. */
            pthread_rwlock_rdlock(&s->rw);
            mz_entry *again = find(h, key);
            if (again && again->lfh_off == lfh_off && local_crc_agrees(s, again))
                __atomic_fetch_or(&again->mark, MZ_MARK_CRC_OK, __ATOMIC_RELEASE);
            pthread_rwlock_unlock(&s->rw);
        }
        *nread = k;
        return MMZIP_OK;
    }
    const uint8_t *p;
    uint64_t n;
    int st = mz_entry_bytes(s, e, &p, &n);
    if (st == MMZIP_OK && e->method == 0 && offset == 0 && len >= n) st = mz_verify_stored_once(s, e);
    if (st == MMZIP_OK && offset < n) {
        uint64_t k = n - offset < len ? n - offset : len;
        mz_prefault_for_copy(buf, (size_t)k);
        memcpy(buf, p + offset, (size_t)k);
        *nread = (size_t)k;
    }
    pthread_rwlock_unlock(&s->rw);
    return st;
}

int mmzip_list_ex(mmzip_t *h, const char *prefix, unsigned flags, mmzip_list_fn fn, void *ctx) {
    if (!h || !fn) return mz_fail(MMZIP_EINVAL, "mmzip_list_ex: NULL argument");
    if (flags & ~(unsigned)MMZIP_LIST_NO_DATA_OFFSET) return mz_fail(MMZIP_EINVAL, "mmzip_list_ex: unknown flags %#x", flags);
    mz_store *s = h->s;
    size_t plen = prefix ? strlen(prefix) : 0;
    /* The sorted index is built lazily; building needs exclusive access. */
    pthread_rwlock_wrlock(&s->rw);
    int st = mz_sorted_index(s, h->writable);
    if (st) {
        pthread_rwlock_unlock(&s->rw);
        return st;
    }
    /* Binary search for the first name >= prefix. */
    uint32_t lo = 0, hi = s->n_sorted;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        mz_entry *e = &s->e[s->sorted[mid]];
        size_t n = e->name_len < plen ? e->name_len : plen;
        int c = memcmp(mz_name(s, e), prefix ? prefix : "", n);
        if (c < 0 || (c == 0 && e->name_len < plen)) lo = mid + 1;
        else hi = mid;
    }
    int r = 0;
    for (uint32_t k = lo; k < s->n_sorted; k++) {
        mz_entry *e = &s->e[s->sorted[k]];
        if (plen && (e->name_len < plen || memcmp(mz_name(s, e), prefix, plen) != 0)) break;
        mmzip_entry_info info;
        fill_info(s, e, &info, !(flags & MMZIP_LIST_NO_DATA_OFFSET));
        r = fn(&info, ctx);
        if (r) break;
    }
    pthread_rwlock_unlock(&s->rw);
    return r;
}
