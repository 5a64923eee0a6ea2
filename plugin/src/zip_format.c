/*
 * zip_format.c - the byte layouts of the records mmzip writes (docs/format.md is the specification).
 *
 * Every entry we write is stored, ZIP64 in both headers, dated (DOS fields and Info-ZIP's "UT" field, so
 * that unzip restores the time to the second), and with its data aligned by a 0xA11E "Data Stream Alignment" extra field in the local header only: the central
 * directory never carries padding, because Python's zipfile insists on well-formed central extras and
 * copies them around.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

/* The length of the valid UTF-8 sequence at p (2..4 bytes, lead byte >= 0x80), or 0: overlong forms,
 * surrogates and code points above U+10FFFF are not UTF-8. */
static size_t utf8_sequence_length(const uint8_t *p, const uint8_t *end) {
    uint8_t c = p[0];
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (n == 0 || c > 0xF4 || (size_t)(end - p) < n) return 0;
    for (size_t i = 1; i < n; i++)
        if ((p[i] & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
    if (c == 0xED && p[1] >= 0xA0) return 0; /* surrogate */
    if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
    if (c == 0xF4 && p[1] >= 0x90) return 0; /* above U+10FFFF */
    return n;
}

void mz_quote_name(char *out, size_t outlen, const void *name, size_t len) {
    const uint8_t *p = name, *end = p + len;
    size_t o = 0;
    while (p < end && o + 5 < outlen) {
        size_t n = *p >= 0x80 ? utf8_sequence_length(p, end) : 0;
        if (n && o + n + 1 < outlen) { /* a name in UTF-8 is shown as it is, as ls shows it */
            memcpy(out + o, p, n);
            o += n;
            p += n;
        } else if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
            out[o++] = (char)*p++;
        } else {
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", *p++);
        }
    }
    out[o < outlen ? o : outlen - 1] = '\0';
}

uint16_t mz_name_flags(const char *name, size_t len) {
    const uint8_t *p = (const uint8_t *)name, *end = p + len;
    while (p < end) {
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t n = utf8_sequence_length(p, end);
        if (!n) return 0;
        p += n;
    }
    return MZ_FLAG_UTF8;
}

uint32_t mz_align_padding(uint64_t lfh_off, size_t name_len, uint32_t alignment) {
    if (alignment <= 1) return 0;
    uint64_t data = lfh_off + MZ_OUR_LFH_OVERHEAD + name_len;
    return (uint32_t)((alignment - (data % alignment)) % alignment);
}

/* Info-ZIP's extended timestamp with the modification time only (flags bit 0), as its zip writes it in a
 * central record; unzip restores that time exactly, where the DOS fields have 2-second steps and no zone. */
static void put_ut(uint8_t *x, uint32_t mtime) {
    mz_put16(x + 0, MZ_EXTRA_UT);
    mz_put16(x + 2, 5);
    x[4] = 1;
    mz_put32(x + 5, mtime);
}

/* DOS times have 2-second steps: an odd second is rounded up, as Info-ZIP's zip does, so that the same file
 * gets the same fields from both (zipfile truncates instead). */
static void dos_fields(mz_stamp *st, time_t t, int utc) {
    struct tm tm;
    t = (t + 1) & ~(time_t)1;
    if (!(utc ? gmtime_r(&t, &tm) : localtime_r(&t, &tm)) || tm.tm_year < 80) {
        st->dos_time = 0;
        st->dos_date = 0x0021; /* 1980-01-01, the earliest DOS date */
        return;
    }
    if (tm.tm_year > 207) { /* 2107-12-31 23:59:58, the latest */
        tm = (struct tm){.tm_year = 207, .tm_mon = 11, .tm_mday = 31, .tm_hour = 23, .tm_min = 59, .tm_sec = 58};
    }
    st->dos_time = (uint16_t)((tm.tm_hour << 11) | (tm.tm_min << 5) | (tm.tm_sec / 2));
    st->dos_date = (uint16_t)(((tm.tm_year - 80) << 9) | ((tm.tm_mon + 1) << 5) | tm.tm_mday);
}

/* $SOURCE_DATE_EPOCH (reproducible-builds.org): a decimal count of seconds, or -1 if unset or malformed. */
static int64_t source_date_epoch(void) {
    const char *v = getenv("SOURCE_DATE_EPOCH");
    if (!v || !*v) return -1;
    char *end;
    long long t = strtoll(v, &end, 10);
    return (*end || t < 0) ? -1 : (int64_t)t;
}

void mz_stamp_make(mz_stamp *st, const char *name, size_t name_len, int64_t mtime, uint32_t mode) {
    int64_t sde = source_date_epoch();
    if (mtime == MZ_STAMP_NOW) mtime = sde >= 0 ? sde : (int64_t)time(NULL);
    else if (sde >= 0 && mtime > sde) mtime = sde;
    int folder = (mode & S_IFMT) ? S_ISDIR(mode) : name_len && name[name_len - 1] == '/';
    uint32_t perm = mode & 07777;
    if (!(mode & S_IFMT) && !perm) st->external_attr = folder ? MZ_EXTERNAL_ATTR_DIR : MZ_EXTERNAL_ATTR;
    else st->external_attr = folder ? ((S_IFDIR | perm) << 16) | 0x10u : (S_IFREG | perm) << 16;
    /* The UT field holds 32 bits, which unzip reads as signed: clamped to 1970 .. 2038. */
    st->mtime = (uint32_t)(mtime < 0 ? 0 : mtime > INT32_MAX ? INT32_MAX : mtime);
    dos_fields(st, (time_t)mtime, sde >= 0);
}

void mz_stamp_of_cdh(mz_stamp *st, const uint8_t *rec) {
    uint16_t name_len = mz_get16(rec + 28), extra_len = mz_get16(rec + 30);
    st->dos_time = mz_get16(rec + 12);
    st->dos_date = mz_get16(rec + 14);
    st->external_attr = mz_get32(rec + 38);
    const uint8_t *x = rec + 46 + name_len;
    for (size_t i = 0; i + 4 <= extra_len;) {
        uint16_t id = mz_get16(x + i), len = mz_get16(x + i + 2);
        if (i + 4 + len > extra_len) break;
        if (id == MZ_EXTRA_UT && len >= 5 && (x[i + 4] & 1)) {
            st->mtime = mz_get32(x + i + 5);
            return;
        }
        i += 4u + len;
    }
    struct tm tm = {.tm_year = (st->dos_date >> 9) + 80, .tm_mon = ((st->dos_date >> 5) & 15) - 1,
                    .tm_mday = st->dos_date & 31, .tm_hour = st->dos_time >> 11, .tm_min = (st->dos_time >> 5) & 63,
                    .tm_sec = (st->dos_time & 31) * 2, .tm_isdst = -1};
    time_t t = mktime(&tm);
    st->mtime = (uint32_t)(t < 0 ? 0 : t > INT32_MAX ? INT32_MAX : t);
}

size_t mz_our_lfh_size(size_t name_len, uint32_t padding) { return MZ_OUR_LFH_OVERHEAD + name_len + padding; }

void mz_write_lfh_ex(uint8_t *p, const mz_header_fields *f, const char *name, size_t name_len,
                     uint32_t alignment, uint32_t padding) {
    size_t extra_len = MZ_LFH_ZIP64_EXTRA + MZ_UT_EXTRA + MZ_ALIGN_EXTRA_MIN + padding;
    mz_put32(p + 0, MZ_SIG_LFH);
    mz_put16(p + 4, MZ_VERSION_NEEDED);
    mz_put16(p + 6, f->flags);
    mz_put16(p + 8, f->method);
    mz_put16(p + 10, f->dos_time);
    mz_put16(p + 12, f->dos_date);
    mz_put32(p + 14, f->crc);
    mz_put32(p + 18, 0xFFFFFFFFu);         /* sizes live in the ZIP64 field ... */
    mz_put32(p + 22, 0xFFFFFFFFu);         /* ... which in a local header must hold both */
    mz_put16(p + 26, (uint16_t)name_len);
    mz_put16(p + 28, (uint16_t)extra_len);
    memcpy(p + 30, name, name_len);
    uint8_t *x = p + 30 + name_len;
    mz_put16(x + 0, MZ_EXTRA_ZIP64);
    mz_put16(x + 2, 16);
    mz_put64(x + 4, f->usize);             /* original size */
    mz_put64(x + 12, f->csize);            /* compressed size */
    x += MZ_LFH_ZIP64_EXTRA;
    put_ut(x, f->mtime);
    x += MZ_UT_EXTRA;
    mz_put16(x + 0, MZ_EXTRA_ALIGN);
    mz_put16(x + 2, (uint16_t)(2 + padding));
    mz_put16(x + 4, (uint16_t)(alignment & 0x7FFFu)); /* bit 15 (allowMethodChange) clear */
    memset(x + 6, 0, padding);
}

void mz_write_lfh(uint8_t *p, const char *name, size_t name_len, uint32_t crc, uint64_t size,
                  uint32_t alignment, uint32_t padding, const mz_stamp *st) {
    mz_header_fields f = {mz_name_flags(name, name_len), 0, st->dos_time, st->dos_date, crc, size, size,
                          st->external_attr, st->mtime};
    mz_write_lfh_ex(p, &f, name, name_len, alignment, padding);
}

size_t mz_our_cdh_size(size_t name_len) { return MZ_OUR_CDH_OVERHEAD + name_len; }

void mz_write_cdh_ex(uint8_t *p, const mz_header_fields *f, const char *name, size_t name_len,
                     uint64_t lfh_off) {
    mz_put32(p + 0, MZ_SIG_CDH);
    mz_put16(p + 4, MZ_VERSION_MADE_BY);
    mz_put16(p + 6, MZ_VERSION_NEEDED);
    mz_put16(p + 8, f->flags);
    mz_put16(p + 10, f->method);
    mz_put16(p + 12, f->dos_time);
    mz_put16(p + 14, f->dos_date);
    mz_put32(p + 16, f->crc);
    mz_put32(p + 20, 0xFFFFFFFFu);
    mz_put32(p + 24, 0xFFFFFFFFu);
    mz_put16(p + 28, (uint16_t)name_len);
    mz_put16(p + 30, MZ_CDH_ZIP64_EXTRA + MZ_UT_EXTRA);
    mz_put16(p + 32, 0);                   /* comment */
    mz_put16(p + 34, 0);                   /* disk 0: not a sentinel, so no disk field in the extra
                                            * (7-Zip reports a header error otherwise) */
    mz_put16(p + 36, 0);
    mz_put32(p + 38, f->external_attr);
    mz_put32(p + 42, 0xFFFFFFFFu);
    memcpy(p + 46, name, name_len);
    uint8_t *x = p + 46 + name_len;
    mz_put16(x + 0, MZ_EXTRA_ZIP64);
    mz_put16(x + 2, 24);
    mz_put64(x + 4, f->usize);
    mz_put64(x + 12, f->csize);
    mz_put64(x + 20, lfh_off);
    put_ut(x + MZ_CDH_ZIP64_EXTRA, f->mtime);
}

void mz_write_cdh(uint8_t *p, const char *name, size_t name_len, uint32_t crc, uint64_t size, uint64_t lfh_off,
                  const mz_stamp *st) {
    mz_header_fields f = {mz_name_flags(name, name_len), 0, st->dos_time, st->dos_date, crc, size, size,
                          st->external_attr, st->mtime};
    mz_write_cdh_ex(p, &f, name, name_len, lfh_off);
}

void mz_patch_our_cdh(uint8_t *rec, uint32_t crc, uint64_t size) {
    uint16_t name_len = mz_get16(rec + 28);
    mz_put32(rec + 16, crc);
    uint8_t *x = rec + 46 + name_len;
    mz_put64(x + 4, size);
    mz_put64(x + 12, size);
}

void mz_set_cdh_room(uint8_t *rec, uint64_t room, int add) {
    uint16_t name_len = mz_get16(rec + 28);
    uint8_t *x = rec + 46 + name_len + MZ_CDH_ZIP64_EXTRA + MZ_UT_EXTRA;
    if (add) {
        mz_put16(rec + 30, MZ_CDH_ZIP64_EXTRA + MZ_UT_EXTRA + MZ_ROOM_EXTRA);
        mz_put16(x + 0, MZ_EXTRA_ROOM);
        mz_put16(x + 2, 8);
    }
    mz_put64(x + 4, room);
}

void mz_add_cdh_kept(uint8_t *rec, uint64_t from, uint64_t to) {
    uint16_t name_len = mz_get16(rec + 28), xlen = mz_get16(rec + 30);
    uint8_t *x = rec + 46 + name_len + xlen;
    mz_put16(rec + 30, (uint16_t)(xlen + MZ_KEPT_EXTRA));
    mz_put16(x + 0, MZ_EXTRA_KEPT);
    mz_put16(x + 2, 16);
    mz_put64(x + 4, from);
    mz_put64(x + 12, to);
}

/* The kept-tail field's 16 bytes in a record of rec_len bytes, or NULL. */
static uint8_t *kept_field(const uint8_t *rec, uint64_t rec_len) {
    if (rec_len < 46) return NULL;
    uint16_t name_len = mz_get16(rec + 28), xlen = mz_get16(rec + 30);
    if (46u + name_len + xlen > rec_len) return NULL;
    const uint8_t *x = rec + 46 + name_len;
    for (uint32_t k = 0; k + 4 <= xlen;) {
        uint16_t id = mz_get16(x + k), len = mz_get16(x + k + 2);
        if (k + 4u + len > xlen) return NULL;
        if (id == MZ_EXTRA_KEPT && len == 16) return (uint8_t *)(x + k + 4);
        k += 4u + len;
    }
    return NULL;
}

int mz_cdh_kept(const uint8_t *rec, uint64_t rec_len, uint64_t *from, uint64_t *to) {
    const uint8_t *f = kept_field(rec, rec_len);
    if (!f) return 0;
    *from = mz_get64(f);
    *to = mz_get64(f + 8);
    return 1;
}

void mz_set_cdh_kept(uint8_t *rec, uint64_t rec_len, uint64_t from, uint64_t to) {
    uint8_t *f = kept_field(rec, rec_len);
    if (!f) return;
    mz_put64(f, from);
    mz_put64(f + 8, to);
}

size_t mz_trailer_len(size_t comment_len) { return MZ_TRAILER_FIXED + comment_len; }

void mz_write_trailer(uint8_t *p, uint64_t entries, uint64_t cd_size, uint64_t cd_off, uint64_t z64_off,
                      const uint8_t *comment, size_t comment_len) {
    mz_put32(p + 0, MZ_SIG_Z64_EOCD);
    mz_put64(p + 4, MZ_Z64_EOCD_FIXED - 12);  /* size of the rest of the record: 44, no extensible data */
    mz_put16(p + 12, MZ_VERSION_MADE_BY);
    mz_put16(p + 14, MZ_VERSION_NEEDED);
    mz_put32(p + 16, 0);
    mz_put32(p + 20, 0);
    mz_put64(p + 24, entries);
    mz_put64(p + 32, entries);
    mz_put64(p + 40, cd_size);
    mz_put64(p + 48, cd_off);                 /* MZ_TRAILER_CD_OFF_FIELD: the commit protocol's switch */
    uint8_t *l = p + MZ_Z64_EOCD_FIXED;
    mz_put32(l + 0, MZ_SIG_Z64_LOC);
    mz_put32(l + 4, 0);
    mz_put64(l + 8, z64_off);
    mz_put32(l + 16, 1);
    uint8_t *e = l + MZ_Z64_LOC_FIXED;
    mz_put32(e + 0, MZ_SIG_EOCD);
    mz_put16(e + 4, 0);
    mz_put16(e + 6, 0);
    mz_put16(e + 8, 0xFFFFu);
    mz_put16(e + 10, 0xFFFFu);
    mz_put32(e + 12, 0xFFFFFFFFu);
    mz_put32(e + 16, 0xFFFFFFFFu);
    mz_put16(e + 20, (uint16_t)comment_len);
    if (comment_len) memcpy(e + 22, comment, comment_len);
}

/*
 * A foreign record whose offsets were relative to a shifted archive start (prepended data) is rewritten
 * with absolute offsets, so that every directory we publish describes the file as it lies. Its sizes,
 * times, attributes and other extra fields are kept; only the ZIP64 field is rebuilt as the values need.
 */
uint8_t *mz_reencode_cdh(const uint8_t *rec, size_t rec_len, uint64_t lfh_off, uint64_t csize, uint64_t usize,
                         size_t *out_len) {
    (void)rec_len;
    uint16_t name_len = mz_get16(rec + 28), extra_len = mz_get16(rec + 30), comment_len = mz_get16(rec + 32);
    const uint8_t *extra = rec + 46 + name_len;
    int need_u = usize >= 0xFFFFFFFFu, need_c = csize >= 0xFFFFFFFFu, need_o = lfh_off >= 0xFFFFFFFFu;
    size_t z64_len = (need_u || need_c || need_o) ? 4u + 8u * (unsigned)(need_u + need_c + need_o) : 0;
    /* Keep every extra field but the old ZIP64 one. */
    size_t kept = 0;
    for (size_t i = 0; i + 4 <= extra_len;) {
        uint16_t id = mz_get16(extra + i), len = mz_get16(extra + i + 2);
        if (i + 4 + len > extra_len) break;
        if (id != MZ_EXTRA_ZIP64) kept += 4u + len;
        i += 4u + len;
    }
    size_t new_extra = kept + z64_len;
    if (new_extra > 0xFFFF) return NULL;
    size_t total = 46 + name_len + new_extra + comment_len;
    uint8_t *out = malloc(total);
    if (!out) return NULL;
    memcpy(out, rec, 46 + name_len);
    mz_put32(out + 20, need_c ? 0xFFFFFFFFu : (uint32_t)csize);
    mz_put32(out + 24, need_u ? 0xFFFFFFFFu : (uint32_t)usize);
    mz_put32(out + 42, need_o ? 0xFFFFFFFFu : (uint32_t)lfh_off);
    if (z64_len && mz_get16(out + 6) < MZ_VERSION_NEEDED) mz_put16(out + 6, MZ_VERSION_NEEDED);
    mz_put16(out + 30, (uint16_t)new_extra);
    uint8_t *x = out + 46 + name_len;
    if (z64_len) {
        mz_put16(x, MZ_EXTRA_ZIP64);
        mz_put16(x + 2, (uint16_t)(z64_len - 4));
        uint8_t *f = x + 4;
        if (need_u) { mz_put64(f, usize); f += 8; }
        if (need_c) { mz_put64(f, csize); f += 8; }
        if (need_o) { mz_put64(f, lfh_off); f += 8; }
        x += z64_len;
    }
    for (size_t i = 0; i + 4 <= extra_len;) {
        uint16_t id = mz_get16(extra + i), len = mz_get16(extra + i + 2);
        if (i + 4 + len > extra_len) break;
        if (id != MZ_EXTRA_ZIP64) { memcpy(x, extra + i, 4u + len); x += 4u + len; }
        i += 4u + len;
    }
    memcpy(x, rec + 46 + name_len + extra_len, comment_len);
    *out_len = total;
    return out;
}

size_t mz_end_len(uint64_t entries, size_t comment_len) {
    return (entries ? MZ_TRAILER_FIXED : MZ_EOCD_FIXED) + comment_len;
}

/*
 * The end records of a committed state: ZIP64 whenever there are entries (always, whatever the sizes), and
 * the plain 22-byte record for an archive with none - 7-Zip refuses to open an empty archive that has only
 * ZIP64 end records.
 */
size_t mz_write_end(uint8_t *p, uint64_t entries, uint64_t cd_size, uint64_t cd_off, const uint8_t *comment,
                    size_t comment_len) {
    if (entries) {
        mz_write_trailer(p, entries, cd_size, cd_off, cd_off + cd_size, comment, comment_len);
        return MZ_TRAILER_FIXED + comment_len;
    }
    mz_put32(p + 0, MZ_SIG_EOCD);
    mz_put16(p + 4, 0);
    mz_put16(p + 6, 0);
    mz_put16(p + 8, 0);
    mz_put16(p + 10, 0);
    mz_put32(p + 12, 0);
    mz_put32(p + 16, (uint32_t)cd_off);
    mz_put16(p + 20, (uint16_t)comment_len);
    if (comment_len) memcpy(p + 22, comment, comment_len);
    return MZ_EOCD_FIXED + comment_len;
}

int mz_our_lfh(const uint8_t *b, size_t avail, uint64_t *csize) {
    if (avail < MZ_LFH_FIXED || mz_get16(b + 4) != MZ_VERSION_NEEDED || mz_get16(b + 8) != 0 ||
        (mz_get16(b + 6) & MZ_FLAG_DATA_DESCRIPTOR))
        return 0;
    uint16_t nlen = mz_get16(b + 26), xlen = mz_get16(b + 28);
    if ((size_t)MZ_LFH_FIXED + nlen + xlen > avail || xlen < MZ_LFH_ZIP64_EXTRA + MZ_ALIGN_EXTRA_MIN) return 0;
    const uint8_t *x = b + MZ_LFH_FIXED + nlen;
    if (mz_get16(x) != MZ_EXTRA_ZIP64 || mz_get16(x + 2) != 16) return 0;
    if (csize) *csize = mz_get64(x + 12);
    x += MZ_LFH_ZIP64_EXTRA;
    if (mz_get16(x) == MZ_EXTRA_UT && mz_get16(x + 2) == 5 && xlen >= MZ_LFH_ZIP64_EXTRA + MZ_UT_EXTRA + MZ_ALIGN_EXTRA_MIN)
        x += MZ_UT_EXTRA;
    return mz_get16(x) == MZ_EXTRA_ALIGN;
}

int mz_our_end_records(const uint8_t *rec) {
    const uint8_t *e = rec + MZ_Z64_EOCD_FIXED + MZ_Z64_LOC_FIXED;
    return mz_get32(rec) == MZ_SIG_Z64_EOCD && mz_get64(rec + 4) == MZ_Z64_EOCD_FIXED - 12 &&
           mz_get16(rec + 12) == MZ_VERSION_MADE_BY && mz_get16(rec + 14) == MZ_VERSION_NEEDED &&
           mz_get32(e) == MZ_SIG_EOCD && mz_get16(e + 8) == 0xFFFFu && mz_get16(e + 10) == 0xFFFFu &&
           mz_get32(e + 12) == 0xFFFFFFFFu && mz_get32(e + 16) == 0xFFFFFFFFu;
}

int mz_cdh_lfh_offset(const uint8_t *rec, size_t avail, uint64_t *off) {
    if (avail < MZ_CDH_FIXED) return 0;
    uint16_t n = mz_get16(rec + 28), x = mz_get16(rec + 30);
    if ((size_t)MZ_CDH_FIXED + n + x > avail) return 0;
    *off = mz_get32(rec + 42);
    if (*off != 0xFFFFFFFFu) return 1;
    const uint8_t *e = rec + MZ_CDH_FIXED + n;
    for (uint32_t k = 0; k + 4 <= x;) {
        uint16_t id = mz_get16(e + k), len = mz_get16(e + k + 2);
        if (id == MZ_EXTRA_ZIP64 && k + 4u + len <= x) {
            /* The ZIP64 field holds, in order, the sizes that are 0xFFFFFFFF in the record, then the offset. */
            uint32_t at = 4u + (mz_get32(rec + 24) == 0xFFFFFFFFu ? 8u : 0u) + (mz_get32(rec + 20) == 0xFFFFFFFFu ? 8u : 0u);
            if (at + 8u > 4u + len) return 0;
            *off = mz_get64(e + k + at);
            return 1;
        }
        k += 4u + len;
    }
    return 0;
}
