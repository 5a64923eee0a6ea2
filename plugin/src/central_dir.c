/*
 * central_dir.c - parsing a central directory into entries.
 *
 * The directory is the only authority: local headers are not trusted here (they are checked lazily,
 * against the directory, when an entry's data is first located). Every length and offset is checked
 * before use, so that a hostile archive is rejected with a message instead of being read out of bounds.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

void mz_cd_free(mz_cd *cd) {
    free(cd->image);
    free(cd->entries);
    memset(cd, 0, sizeof *cd);
}

int mz_name_ok(const char *name, size_t len) {
    if (len == 0 || len > 0xFFFF || name[0] == '/') return 0;
    if (memchr(name, '\0', len)) return 0;
    /* A '..' path component would escape the archive root when extracted. Names almost never contain two
     * dots in a row, so look for those first and inspect the components only then. */
    for (const char *p = name, *end = name + len; (p = memchr(p, '.', (size_t)(end - p))) != NULL; p++) {
        if (p + 1 == end || p[1] != '.') continue;
        int starts = p == name || p[-1] == '/';
        int ends = p + 2 == end || p[2] == '/';
        if (starts && ends) return 0;
    }
    return 1;
}

static int cmp_by_offset(const void *a, const void *b, void *ctx) {
    const mz_entry *e = ctx;
    uint64_t x = e[*(const uint32_t *)a].lfh_off, y = e[*(const uint32_t *)b].lfh_off;
    return x < y ? -1 : x > y;
}

int mz_cd_load(const mz_source *src, const mz_trailer *t, mz_cd *cd) {
    memset(cd, 0, sizeof *cd);
    /* The end record at the end of the file is read as zipfile reads it: records until the directory's size
     * is used up, whatever the entry count says (the count is noted, and mmzip check reports it). That is
     * no guess: the records must fill the size exactly, and each entry's local header must agree. An end
     * record found by scanning back is trusted only if everything agrees (trailer.c). */
    int by_size = t->lenient;
    if (t->entries > t->cd_size / MZ_CDH_FIXED && !by_size)
        return mz_fail(MMZIP_ECORRUPT, "%s: the end record claims %llu entries, more than a %llu-byte central "
                       "directory can hold", src->name, (unsigned long long)t->entries,
                       (unsigned long long)t->cd_size);
    if (t->entries > UINT32_MAX - 1 && !by_size)
        return mz_fail(MMZIP_ETOOBIG, "%s: %llu entries is more than mmzip supports", src->name,
                       (unsigned long long)t->entries);
    uint64_t most = t->cd_size / MZ_CDH_FIXED;
    uint32_t n = by_size && t->entries > most ? (uint32_t)(most < UINT32_MAX - 1 ? most : UINT32_MAX - 1)
                                               : (uint32_t)t->entries;
    /* Without ZIP64 end records the count is 16 bits: an archive of more than 65,535 entries written
     * without them (as zipfile, Info-ZIP and others do) records the count modulo 65,536. The directory's
     * size is then the authority, as for zipfile and libzip: records are read until it is used up, and
     * their number must agree with the recorded count modulo 65,536. */
    int may_wrap = (!t->zip64 && t->entries <= 0xFFFF && t->cd_size / MZ_CDH_FIXED > 0xFFFF) || by_size;
    uint32_t cap_n = n ? n : 1;
    uint8_t *img = malloc(t->cd_size ? t->cd_size : 1);
    mz_entry *ents = malloc(cap_n * sizeof *ents);
    if (!img || !ents) {
        free(img);
        free(ents);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory for a %llu-byte central directory", src->name,
                       (unsigned long long)t->cd_size);
    }
    mz_prefer_huge_pages(ents, (size_t)n * sizeof *ents);
    if (t->cd_size && src->read(src->ctx, img, t->cd_size, t->cd_pos) != 0) {
        free(img);
        free(ents);
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the central directory", src->name);
    }
    int st = MMZIP_OK;
    uint64_t off = 0;
    char qn[200];
    int sorted = 1;
    uint32_t got = 0;
    for (uint32_t i = 0; by_size ? off < t->cd_size : (i < n || (may_wrap && off < t->cd_size)); i++) {
        if (i >= n) {
            /* Past the recorded (wrapped) count: one more record. */
            if (i == UINT32_MAX - 1) {
                st = mz_fail(MMZIP_ETOOBIG, "%s: more entries than mmzip supports", src->name);
                goto fail;
            }
            if (i >= cap_n) {
                uint32_t nc = cap_n < (1u << 30) ? cap_n * 2 : UINT32_MAX - 1;
                mz_entry *g = realloc(ents, (size_t)nc * sizeof *ents);
                if (!g) { st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", src->name); goto fail; }
                ents = g;
                cap_n = nc;
            }
            n = i + 1;
            cd->wrapped = 1;
        }
        if (off + MZ_CDH_FIXED > t->cd_size) {
            st = mz_fail(MMZIP_ECORRUPT, "%s: central directory record %u is truncated", src->name, i);
            goto fail;
        }
        const uint8_t *r = img + off;
        if (mz_get32(r) != MZ_SIG_CDH) {
            st = mz_fail(MMZIP_ECORRUPT, "%s: central directory record %u has a bad signature", src->name, i);
            goto fail;
        }
        uint16_t flags = mz_get16(r + 8), method = mz_get16(r + 10);
        uint32_t crc = mz_get32(r + 16);
        uint64_t csize = mz_get32(r + 20), usize = mz_get32(r + 24);
        uint16_t nlen = mz_get16(r + 28), xlen = mz_get16(r + 30), clen = mz_get16(r + 32);
        uint32_t disk = mz_get16(r + 34);
        uint64_t lfh = mz_get32(r + 42);
        uint64_t rec_len = (uint64_t)MZ_CDH_FIXED + nlen + xlen + clen;
        const uint8_t *name = r + MZ_CDH_FIXED;
        if (off + rec_len > t->cd_size) {
            uint64_t past = off + rec_len - t->cd_size, records = t->zip64 ? t->z64_pos : t->eocd_pos;
            uint64_t fixed_len = (uint64_t)MZ_CDH_FIXED + nlen + xlen;
            if (t->lenient && off + fixed_len <= t->cd_size && t->cd_pos + t->cd_size == records) {
                /* Only the last record's comment runs on, into the end records: zipfile takes those bytes
                 * for the comment. mmzip has no use for an entry's comment: it is cut at the directory's
                 * end (in the image only: the file is unchanged until a commit writes a directory). */
                cd->comment_cut = (uint32_t)past;
                cd->comment_cut_rec = i;
                clen = (uint16_t)(t->cd_size - off - fixed_len);
                mz_put16(img + off + 32, clen);
                rec_len = fixed_len + clen;
            } else {
                uint64_t nl = t->cd_size - off - MZ_CDH_FIXED; /* the part of the name in the directory */
                mz_quote_name(qn, sizeof qn, name, (size_t)(nl < nlen ? nl : nlen));
                if (t->cd_pos + t->cd_size + past <= records)
                    st = mz_fail(MMZIP_ECORRUPT, "%s: %s: central directory size %llu is %llu byte%s short of the "
                                 "records it holds (record %u, '%s', ends %llu byte%s past it, before the end "
                                 "records at %llu)", src->name, t->zip64 ? "ZIP64 end record" : "end record",
                                 (unsigned long long)t->cd_size, (unsigned long long)past, past == 1 ? "" : "s", i,
                                 qn, (unsigned long long)past, past == 1 ? "" : "s", (unsigned long long)records);
                else
                    st = mz_fail(MMZIP_ECORRUPT, "%s: central directory record %u ('%s') runs past the directory, by "
                                 "%llu byte%s, into the end records: its name, extra field and comment lengths "
                                 "(%u, %u, %u) are too long for it", src->name, i, qn,
                                 (unsigned long long)past, past == 1 ? "" : "s", nlen, xlen, clen);
                goto fail;
            }
        }
#define QN() mz_quote_name(qn, sizeof qn, name, nlen)
        /* An empty name, or one holding a NUL, cannot be asked for through a C string: other readers still
         * read the entry (zipfile cuts the name at the NUL), so it stays in the directory, unreachable by
         * name, and mmzip check reports it. The rest of the archive reads as usual. */
        int unnamed = nlen == 0 || memchr(name, '\0', nlen) != NULL;
        if (!unnamed && !mz_name_ok((const char *)name, nlen)) {
            QN();
            st = mz_fail(MMZIP_ECORRUPT, "%s: entry %u has an unsafe name '%s' (empty, NUL, absolute or '..')",
                         src->name, i, qn);
            goto fail;
        }
        /* ZIP64 extended information: fields present only for the values set to their sentinel. */
        const uint8_t *x = name + nlen;
        int need_u = usize == 0xFFFFFFFFu, need_c = csize == 0xFFFFFFFFu, need_o = lfh == 0xFFFFFFFFu,
            need_d = disk == 0xFFFFu;
        uint64_t room = 0;
        int has_room = 0, kept = 0;
        for (uint32_t k = 0; k + 4 <= xlen;) {
            uint16_t id = mz_get16(x + k), len = mz_get16(x + k + 2);
            if (k + 4u + len > xlen) {
                QN();
                st = mz_fail(MMZIP_ECORRUPT, "%s: entry '%s' has a malformed extra field", src->name, qn);
                goto fail;
            }
            if (id == MZ_EXTRA_ROOM && len == 8) {
                room = mz_get64(x + k + 4);
                has_room = 1;
            }
            if (id == MZ_EXTRA_KEPT && len == 16) kept = 1;
            if (id == MZ_EXTRA_ZIP64) {
                const uint8_t *f = x + k + 4;
                uint32_t left = len;
                if (need_u) { if (left < 8) goto short_z64; usize = mz_get64(f); f += 8; left -= 8; need_u = 0; }
                if (need_c) { if (left < 8) goto short_z64; csize = mz_get64(f); f += 8; left -= 8; need_c = 0; }
                if (need_o) { if (left < 8) goto short_z64; lfh = mz_get64(f); f += 8; left -= 8; need_o = 0; }
                if (need_d) { if (left < 4) goto short_z64; disk = mz_get32(f); need_d = 0; }
            }
            k += 4u + len;
        }
        if (need_o || need_d) {
        short_z64:
            QN();
            st = mz_fail(MMZIP_ECORRUPT, "%s: entry '%s' lacks the ZIP64 field its sentinels require", src->name, qn);
            goto fail;
        }
        /* A size left at 0xFFFFFFFF with no ZIP64 field is a genuine 32-bit value (4 GiB - 1). */
        if (disk != 0) {
            QN();
            st = mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%s' lives on disk %u: multi-disk archives are not "
                         "supported", src->name, qn, disk);
            goto fail;
        }
        uint64_t abs_lfh = lfh + t->concat;
        if (abs_lfh < lfh || abs_lfh > t->cd_pos || t->cd_pos - abs_lfh < (uint64_t)MZ_LFH_FIXED + nlen ||
            csize > t->cd_pos - abs_lfh - MZ_LFH_FIXED - nlen) {
            QN();
            st = mz_fail(MMZIP_ECORRUPT, "%s: entry '%s' (header at %llu, %llu bytes) does not fit before the "
                         "central directory at %llu", src->name, qn, (unsigned long long)abs_lfh,
                         (unsigned long long)csize, (unsigned long long)t->cd_pos);
            goto fail;
        }
        int stored_extra = t->lenient && method == 0 && csize > usize && !(flags & MZ_FLAG_ENCRYPTED);
        if (method == 0 && csize != usize && !(flags & MZ_FLAG_ENCRYPTED) && !stored_extra) {
            QN();
            st = mz_fail(MMZIP_ECORRUPT, "%s: stored entry '%s' has compressed size %llu but size %llu", src->name,
                         qn, (unsigned long long)csize, (unsigned long long)usize);
            goto fail;
        }
        mz_entry *e = &ents[i];
        memset(e, 0, sizeof *e);
        mz_entry_set_name_head(e, (const char *)name, nlen);
        e->lfh_off = abs_lfh;
        /* A stored entry recorded with more bytes than its size: zipfile returns the first `size` of them and
         * checks the CRC-32 over those. So does mmzip (MZ_MARK_VERIFY: its first read checks the CRC); the
         * bytes after them belong to no entry (mmzip check reports them). */
        e->csize = stored_extra ? usize : csize;
        e->usize = usize;
        e->crc = crc;
        /* Room is ours to grant only in records we wrote: the ZIP64 field first, then the room field, or (since
         * entries are dated) the ZIP64, "UT" and room fields. */
        if (has_room && method == 0 &&
            (xlen == MZ_CDH_ZIP64_EXTRA + MZ_ROOM_EXTRA ||
             (xlen == MZ_CDH_ZIP64_EXTRA + MZ_UT_EXTRA + MZ_ROOM_EXTRA &&
              mz_get16(x + MZ_CDH_ZIP64_EXTRA) == MZ_EXTRA_UT))) {
            e->room = room;
            e->keeps_room = 1;
        }
        /* A kept tail is ours only in a stored entry's record: the free space it names is checked before use
         * (kept_tail.c) whoever wrote it. */
        e->kept_tail = kept && method == 0;
        e->cd_rec = off;
        e->cd_rec_len = (uint32_t)rec_len;
        e->name_len = nlen;
        e->method = method;
        e->gp_flags = flags;
        e->hash = mz_hash((const char *)name, nlen);
        e->replaces = MZ_NONE;
        e->state = MZ_COMMITTED;
        if (unnamed) {
            e->mark = MZ_MARK_NONAME;
            cd->unnamed++;
        }
        if (stored_extra) e->mark |= MZ_MARK_VERIFY;
        if (i > 0 && ents[i - 1].lfh_off >= abs_lfh) sorted = 0;
        off += rec_len;
        got = i + 1;
    }
    if (by_size) n = got;
    if (off != t->cd_size) {
        st = mz_fail(MMZIP_ECORRUPT, "%s: the central directory is %llu bytes (end record's directory size) but "
                     "the %u records its entry count announces take %llu", src->name,
                     (unsigned long long)t->cd_size, n, (unsigned long long)off);
        goto fail;
    }
    cd->count_recorded = n;
    if (by_size) {
        /* Read by the directory's size: a count that wrapped (no ZIP64 end records, more than 65,535
         * records) is what many writers leave; any other disagreement is noted, and mmzip check names it. */
        cd->wrapped = !t->zip64 && n > 0xFFFFu && (n & 0xFFFFu) == t->entries;
        if (!cd->wrapped && n != t->entries) cd->count_recorded = t->entries;
    } else if (cd->wrapped && (n & 0xFFFFu) != t->entries) {
        st = mz_fail(MMZIP_ECORRUPT, "%s: the central directory holds %u records, which the end record's 16-bit "
                     "entry count (%llu) does not match even modulo 65536", src->name, n,
                     (unsigned long long)t->entries);
        goto fail;
    }

    /* Entries must not overlap (two directory records sharing one body is the classic zip bomb). Each entry
     * occupies at least its fixed header, its name and its data; the next header bounds it. */
    {
        uint32_t *order = NULL;
        if (!sorted && n > 1) {
            order = malloc((size_t)n * sizeof *order);
            if (!order) { st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", src->name); goto fail; }
            for (uint32_t i = 0; i < n; i++) order[i] = i;
            qsort_r(order, n, sizeof *order, cmp_by_offset, ents);
        }
        /* The lowest entry's local header must be where the directory says. This is what tells a genuine
         * archive with bytes prepended from a torn trailer that merely happens to point, after adjustment,
         * at a copy of a directory; only the physically last entries can be legitimately torn. */
        if (n > 0) {
            mz_entry *first = &ents[order ? order[0] : 0];
            uint8_t hdr[MZ_LFH_FIXED + 65535];
            size_t want = MZ_LFH_FIXED + first->name_len;
            if (first->lfh_off + want > src->size || src->read(src->ctx, hdr, want, first->lfh_off) != 0 ||
                mz_get32(hdr) != MZ_SIG_LFH || mz_get16(hdr + 26) != first->name_len ||
                memcmp(hdr + MZ_LFH_FIXED, img + first->cd_rec + MZ_CDH_FIXED, first->name_len) != 0) {
                mz_quote_name(qn, sizeof qn, img + first->cd_rec + MZ_CDH_FIXED, first->name_len);
                int present = first->lfh_off + 4 <= src->size && mz_get32(hdr) == MZ_SIG_LFH;
                st = mz_fail(MMZIP_ECORRUPT, "%s: entry '%s': %s at offset %llu, where the central directory puts "
                             "it", src->name, qn, present ? "the local header names another entry"
                                                          : "no local header", (unsigned long long)first->lfh_off);
                free(order);
                goto fail;
            }
        }
        for (uint32_t k = 0; k < n; k++) {
            mz_entry *e = &ents[order ? order[k] : k];
            uint64_t next = k + 1 < n ? ents[order ? order[k + 1] : k + 1].lfh_off : t->cd_pos;
            uint64_t min_end = e->lfh_off + MZ_LFH_FIXED + e->name_len + e->csize;
            if (min_end > next || (k + 1 < n && next == e->lfh_off)) {
                mz_quote_name(qn, sizeof qn, img + e->cd_rec + MZ_CDH_FIXED, e->name_len);
                st = mz_fail(MMZIP_ECORRUPT, "%s: entry '%s' (at %llu, %llu bytes) overlaps the next entry at "
                             "%llu", src->name, qn, (unsigned long long)e->lfh_off, (unsigned long long)e->csize,
                             (unsigned long long)next);
                free(order);
                goto fail;
            }
            e->limit = next;
        }
        free(order);
    }
    cd->image = img;
    cd->image_len = t->cd_size;
    cd->entries = ents;
    cd->count = n;
    return MMZIP_OK;
fail:
    free(img);
    free(ents);
    return st;
}
