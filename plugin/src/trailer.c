/*
 * trailer.c - finding the end-of-central-directory records, and scanning back for the last consistent
 * ones when a killed writer (or a power loss) left a torn tail.
 *
 * A trailer is trusted only once the central directory it points at parses completely, with exactly the
 * recorded number of records and bytes: signatures alone are too easy to find in entry data.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MZ_MAX_COMMENT 65535u
#define MZ_SCAN_BLOCK (1u << 20)

void mz_trailer_free(mz_trailer *t) {
    free(t->comment);
    t->comment = NULL;
}

/* Where a trailer candidate's directory may lie: as recorded, or where the records say it must end. */
typedef struct candidate {
    mz_trailer t;
    uint64_t alt_cd_pos, alt_concat;
    int alt_recorded; /* the alternative is the recorded position: its error is the one to report */
    int has_alt;
} candidate;

/*
 * Parses the end records whose EOCD starts at p. Fills c on success. Returns MMZIP_OK, MMZIP_ENOTZIP
 * (not a trailer), MMZIP_EUNSUPPORTED (multi-disk) or MMZIP_EIO.
 */
/* must_end_at_eof: the end record's comment must end exactly at the end of the file, or (allow_overrun)
 * run past it, as zipfile and unzip accept: then only the bytes present are the comment. Such a candidate
 * is taken to be the archive's end record, so a field that contradicts the file is reported by name
 * (MMZIP_ECORRUPT) rather than as a missing end record. */
static int parse_candidate_ex(const mz_source *src, uint64_t p, int must_end_at_eof, int allow_overrun,
                              candidate *c) {
    uint8_t eocd[MZ_EOCD_FIXED];
    memset(c, 0, sizeof *c);
    if (p + MZ_EOCD_FIXED > src->size) return MMZIP_ENOTZIP;
    if (src->read(src->ctx, eocd, sizeof eocd, p) != 0)
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read end record", src->name);
    if (mz_get32(eocd) != MZ_SIG_EOCD) return MMZIP_ENOTZIP;
    uint16_t disk = mz_get16(eocd + 4), cd_disk = mz_get16(eocd + 6);
    uint64_t n_disk = mz_get16(eocd + 8), n = mz_get16(eocd + 10);
    uint64_t cd_size = mz_get32(eocd + 12), cd_off = mz_get32(eocd + 16);
    uint16_t clen = mz_get16(eocd + 20);
    uint64_t end = p + MZ_EOCD_FIXED + clen;
    uint16_t declared = clen;
    if (allow_overrun && must_end_at_eof && end > src->size) {
        clen = (uint16_t)(src->size - p - MZ_EOCD_FIXED);
        end = src->size;
    }
    if (end > src->size || (must_end_at_eof && end != src->size)) return MMZIP_ENOTZIP;

    mz_trailer *t = &c->t;
    t->eocd_pos = p;
    t->end = end;
    t->z64_pos = UINT64_MAX;
    t->comment_len = clen;
    t->comment_declared = declared;
    t->lenient = must_end_at_eof;
    uint64_t records_start = p;

    uint8_t loc[MZ_Z64_LOC_FIXED];
    int have_loc = 0;
    if (p >= MZ_Z64_LOC_FIXED) {
        if (src->read(src->ctx, loc, sizeof loc, p - MZ_Z64_LOC_FIXED) != 0)
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read ZIP64 locator", src->name);
        have_loc = mz_get32(loc) == MZ_SIG_Z64_LOC;
    }
    if (have_loc) {
        uint32_t loc_disk = mz_get32(loc + 4), disks = mz_get32(loc + 16);
        uint64_t z64_off = mz_get64(loc + 8);
        if (loc_disk != 0 || disks > 1)
            return mz_fail(MMZIP_EUNSUPPORTED, "%s: multi-disk (spanned) ZIP archives are not supported",
                           src->name);
        /* The ZIP64 end record normally sits right before the locator; with extensible data (or prepended
         * bytes) use the recorded offset. */
        uint8_t z[MZ_Z64_EOCD_FIXED];
        uint64_t loc_pos = p - MZ_Z64_LOC_FIXED, zpos = UINT64_MAX;
        if (loc_pos >= MZ_Z64_EOCD_FIXED) {
            if (src->read(src->ctx, z, sizeof z, loc_pos - MZ_Z64_EOCD_FIXED) != 0)
                return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read ZIP64 end record", src->name);
            if (mz_get32(z) == MZ_SIG_Z64_EOCD && mz_get64(z + 4) == MZ_Z64_EOCD_FIXED - 12)
                zpos = loc_pos - MZ_Z64_EOCD_FIXED;
        }
        if (zpos == UINT64_MAX && z64_off + MZ_Z64_EOCD_FIXED <= loc_pos) {
            if (src->read(src->ctx, z, sizeof z, z64_off) != 0)
                return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read ZIP64 end record", src->name);
            if (mz_get32(z) == MZ_SIG_Z64_EOCD && z64_off + 12 + mz_get64(z + 4) <= loc_pos) zpos = z64_off;
        }
        if (zpos == UINT64_MAX) return MMZIP_ENOTZIP;
        uint32_t zdisk = mz_get32(z + 16), zcd_disk = mz_get32(z + 20);
        if (zdisk != 0 || zcd_disk != 0)
            return mz_fail(MMZIP_EUNSUPPORTED, "%s: multi-disk (spanned) ZIP archives are not supported",
                           src->name);
        n_disk = mz_get64(z + 24);
        n = mz_get64(z + 32);
        cd_size = mz_get64(z + 40);
        cd_off = mz_get64(z + 48);
        t->zip64 = 1;
        t->z64_pos = zpos;
        records_start = zpos;
        /* A locator recorded for an archive that later had bytes prepended points short. */
        if (zpos > z64_off) c->alt_concat = zpos - z64_off;
    } else {
        if (disk != 0 || cd_disk != 0)
            return mz_fail(MMZIP_EUNSUPPORTED, "%s: multi-disk (spanned) ZIP archives are not supported",
                           src->name);
    }
    const char *rec = t->zip64 ? "ZIP64 end record" : "end record";
    if (n_disk != n) {
        if (!must_end_at_eof) return MMZIP_ENOTZIP;
        return mz_fail(MMZIP_ECORRUPT, "%s: the %s at %llu is inconsistent: its entries on this disk (%llu) and "
                       "total entries (%llu) differ", src->name, rec, (unsigned long long)p,
                       (unsigned long long)n_disk, (unsigned long long)n);
    }
    if (cd_size > records_start) {
        if (!must_end_at_eof) return MMZIP_ENOTZIP;
        return mz_fail(MMZIP_ECORRUPT, "%s: the %s at %llu is wrong: its central directory size (%llu) is larger "
                       "than the %llu bytes before the end records", src->name, rec, (unsigned long long)p,
                       (unsigned long long)cd_size, (unsigned long long)records_start);
    }
    t->entries = n;
    t->cd_size = cd_size;
    /* The directory where it was recorded (our relocated directories lie there), or, where it was recorded
     * short of the end records, the one that ends where they begin: bytes were prepended (a stub, or another
     * archive, as `cat a.zip b.zip` makes), and every other reader reads that one. Whichever of the two does
     * not parse, the other is the alternative. */
    if (cd_off + cd_size <= records_start && cd_off <= records_start) {
        t->cd_pos = cd_off;
        t->concat = 0;
        uint64_t adj = records_start - cd_size;
        if (adj != cd_off && adj > cd_off) {
            c->has_alt = 1;
            c->alt_cd_pos = cd_off;
            c->alt_concat = 0;
            c->alt_recorded = 1;
            t->cd_pos = adj;
            t->concat = adj - cd_off;
        }
    } else {
        /* Bytes were prepended: the directory ends where the end records begin (what Python assumes). */
        uint64_t adj = records_start - cd_size;
        if (adj < cd_off) {
            if (!must_end_at_eof) return MMZIP_ENOTZIP;
            return mz_fail(MMZIP_ECORRUPT, "%s: the %s at %llu is wrong: its central directory offset (%llu) plus "
                           "size (%llu) runs past the end records at %llu", src->name, rec, (unsigned long long)p,
                           (unsigned long long)cd_off, (unsigned long long)cd_size,
                           (unsigned long long)records_start);
        }
        t->cd_pos = adj;
        t->concat = adj - cd_off;
    }
    if (clen) {
        t->comment = malloc(clen);
        if (!t->comment) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", src->name);
        if (src->read(src->ctx, t->comment, clen, p + MZ_EOCD_FIXED) != 0) {
            mz_trailer_free(t);
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read archive comment", src->name);
        }
    }
    return MMZIP_OK;
}

static int parse_candidate(const mz_source *src, uint64_t p, int must_end_at_eof, candidate *c) {
    return parse_candidate_ex(src, p, must_end_at_eof, 0, c);
}

/* Loads the directory of a candidate, trying the alternative position if the first does not parse. */
static int load_candidate(const mz_source *src, candidate *c, mz_trailer *t, mz_cd *cd) {
    int st = mz_cd_load(src, &c->t, cd);
    if (st != MMZIP_OK && c->has_alt) {
        mz_trailer alt = c->t;
        alt.cd_pos = c->alt_cd_pos;
        alt.concat = c->alt_concat;
        char saved[1024];
        snprintf(saved, sizeof saved, "%s", mmzip_last_error());
        int st2 = mz_cd_load(src, &alt, cd);
        if (st2 == MMZIP_OK) {
            c->t = alt;
            st = MMZIP_OK;
        } else if (c->alt_recorded) {
            st = st2; /* neither parses: say what is wrong where the end record says the directory is */
        } else {
            mz_fail(st, "%s", saved);
        }
    }
    if (st == MMZIP_OK) *t = c->t;
    else mz_trailer_free(&c->t);
    return st;
}

/* Looks for the end records in the last `span` bytes of the file, nearest the end first; passes 0..last_pass
 * (see at_eof). */
static int scan_tail(const mz_source *src, uint64_t span, int last_pass, mz_trailer *t, mz_cd *cd) {
    uint8_t *tail = malloc(span);
    if (!tail) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", src->name);
    uint64_t base = src->size - span;
    if (src->read(src->ctx, tail, span, base) != 0) {
        free(tail);
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read the end of the file", src->name);
    }
    int result = MMZIP_ENOTZIP, have_detail = 0;
    char detail[1024] = "";
    /* Pass 0: end records whose comment ends exactly at the end of the file. Pass 1, if none is valid: one
     * whose comment length runs past the end (zipfile and unzip read those, taking the bytes present). */
    for (int pass = 0; pass <= last_pass && result != MMZIP_OK && !(pass == 1 && have_detail); pass++)
    for (uint64_t i = span - MZ_EOCD_FIXED + 1; i-- > 0;) {
        if (mz_get32(tail + i) != MZ_SIG_EOCD) continue;
        /* The dead local header at offset 0 that a commit gave an end record's signature (format.md §8). */
        if (base + i == 0 && mz_our_lfh(tail, (size_t)span, NULL)) continue;
        uint64_t rec_end = base + i + MZ_EOCD_FIXED + mz_get16(tail + i + 20);
        if (pass == 0 ? rec_end != src->size : rec_end <= src->size) continue;
        candidate c;
        int st = parse_candidate_ex(src, base + i, 1, pass, &c);
        if (st == MMZIP_EIO || st == MMZIP_ENOMEM) { result = st; have_detail = 0; break; }
        if (st == MMZIP_EUNSUPPORTED) {
            /* Multi-disk: the answer only if nothing below it is a valid archive (a comment may hold a
             * fake end record and locator). */
            if (!have_detail) {
                snprintf(detail, sizeof detail, "%s", mmzip_last_error());
                have_detail = 1;
                result = st;
            }
            continue;
        }
        if (st == MMZIP_ECORRUPT) {
            /* An end record at the right place whose own fields are wrong: the likeliest explanation. */
            if (!have_detail) {
                snprintf(detail, sizeof detail, "%s", mmzip_last_error());
                have_detail = 1;
                result = st;
            }
            continue;
        }
        if (st != MMZIP_OK) continue;
        st = load_candidate(src, &c, t, cd);
        if (st == MMZIP_OK) { result = MMZIP_OK; break; }
        if (!have_detail) {
            snprintf(detail, sizeof detail, "%s", mmzip_last_error());
            have_detail = 1;
            result = st;
        }
    }
    free(tail);
    if (result == MMZIP_ENOTZIP && !have_detail)
        return mz_fail(MMZIP_ENOTZIP, "%s: not a ZIP archive (no end-of-central-directory record at the end "
                                      "of the file)", src->name);
    if (result != MMZIP_OK && have_detail) return mz_fail(result, "%s", detail);
    return result;
}

/* The end records are looked for in the last 64 KiB + 22 bytes of the file (the largest comment). The
 * common case - a short comment or none - is settled from the last page: a valid end record ending exactly
 * at the end of the file, found there, is the one the full search would take first (it scans from the end
 * too, and pass 0 before pass 1). Anything else is searched again in full. Reading 64 KiB that is mostly
 * the slack before the directory (a hole) made the kernel allocate a page of zeros for every 4 KiB of it. */
#define MZ_TAIL_FIRST 4096u

static int at_eof(const mz_source *src, mz_trailer *t, mz_cd *cd) {
    if (src->size == 0)
        return mz_fail(MMZIP_ENOTZIP, "%s: the file is empty, not a ZIP archive (was its creation interrupted? "
                       "mode \"w+\" starts a new archive in it)", src->name);
    if (src->size < MZ_EOCD_FIXED)
        return mz_fail(MMZIP_ENOTZIP, "%s: not a ZIP archive (%llu bytes is too short for an end record)",
                       src->name, (unsigned long long)src->size);
    uint64_t span = src->size < MZ_EOCD_FIXED + MZ_MAX_COMMENT ? src->size : MZ_EOCD_FIXED + MZ_MAX_COMMENT;
    if (span > MZ_TAIL_FIRST) {
        int st = scan_tail(src, MZ_TAIL_FIRST, 0, t, cd);
        if (st == MMZIP_OK || st == MMZIP_EIO || st == MMZIP_ENOMEM) return st;
        mz_clear_error();
    }
    return scan_tail(src, span, 1, t, cd);
}

/* End of the last data extent at or below hi (hi if the file system cannot tell). */
static uint64_t last_data_end(int fd, uint64_t hi) {
    if (fd < 0 || hi == 0) return hi;
    off_t d = lseek(fd, (off_t)(hi - 1), SEEK_DATA);
    if (d >= 0 && (uint64_t)d < hi) return hi;
    /* [hi-1] is in a hole: find the largest x with data in [x, hi). */
    off_t first = lseek(fd, 0, SEEK_DATA);
    if (first < 0 || (uint64_t)first >= hi) return 0;
    uint64_t lo = 0, top = hi;
    while (top - lo > 4096) {
        uint64_t mid = lo + (top - lo) / 2;
        off_t dm = lseek(fd, (off_t)mid, SEEK_DATA);
        if (dm >= 0 && (uint64_t)dm < hi) lo = mid;
        else top = mid;
    }
    off_t dd = lseek(fd, (off_t)lo, SEEK_DATA);
    if (dd < 0) return hi;
    off_t e = lseek(fd, dd, SEEK_HOLE);
    if (e < 0 || (uint64_t)e > hi) return hi;
    return (uint64_t)e;
}

static int scan_back(const mz_source *src, mz_trailer *t, mz_cd *cd) {
    uint8_t *buf = malloc(MZ_SCAN_BLOCK + 4);
    if (!buf) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", src->name);
    uint64_t hi = src->size;
    int result = MMZIP_ENOTZIP;
    while (hi >= MZ_EOCD_FIXED) {
        uint64_t data_hi = last_data_end(src->fd, hi);
        if (data_hi < hi) {
            /* The hole reads as zeros: no signature can start in it. Keep 3 bytes of overlap. */
            hi = data_hi + 3 < hi ? data_hi + 3 : hi;
            if (hi < MZ_EOCD_FIXED) break;
        }
        uint64_t lo = hi > MZ_SCAN_BLOCK ? hi - MZ_SCAN_BLOCK : 0;
        size_t len = (size_t)(hi - lo);
        if (src->read(src->ctx, buf, len, lo) != 0) {
            result = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read while scanning for an end record", src->name);
            break;
        }
        for (size_t i = len >= 4 ? len - 4 + 1 : 0; i-- > 0;) {
            if (buf[i] != 0x50 || buf[i + 1] != 0x4b || buf[i + 2] != 0x05 || buf[i + 3] != 0x06) continue;
            if (lo + i == 0 && mz_our_lfh(buf, len, NULL)) continue; /* a dead header given that signature */
            candidate c;
            int st = parse_candidate(src, lo + i, 0, &c);
            if (st == MMZIP_EIO || st == MMZIP_ENOMEM) { free(buf); return st; }
            if (st != MMZIP_OK) continue;
            if (load_candidate(src, &c, t, cd) == MMZIP_OK) {
                free(buf);
                mz_clear_error();
                return MMZIP_OK;
            }
        }
        if (lo == 0) break;
        hi = lo + 3; /* a signature may straddle the block boundary */
    }
    free(buf);
    if (result == MMZIP_ENOTZIP)
        return mz_fail(MMZIP_ENOTZIP, "%s: not a ZIP archive (no consistent end-of-central-directory record "
                                      "anywhere in the file)", src->name);
    return result;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * After a scan back found the end records t (directory cd) before the end of the file: 1 if the bytes after
 * them hold a directory record that names an entry cd does not, whose local header is there with that name
 * (sets *later_rec to the record's position and copies the name into later_name). No state mmzip's protocol
 * leaves puts such a record past the last valid end records (an interrupted relocation leaves part of a copy
 * of the committed directory, nothing else, protocol.md §3.4): it is a later commit whose end records were
 * damaged or cut off (a truncated copy, an overwrite), and the end records found are an older state, or those
 * of an archive stored as an entry. Serving them read the older state with no error, and a writable open or
 * recover cut every later entry (an outside review).
 */
static int later_directory_after(const mz_source *src, const mz_trailer *t, const mz_cd *cd, uint64_t *later_rec,
                                 char *later_name, size_t name_cap) {
    uint8_t rec[MZ_TRAILER_FIXED];
    int ours = t->zip64 && t->z64_pos != UINT64_MAX && t->z64_pos + MZ_TRAILER_FIXED <= src->size &&
               src->read(src->ctx, rec, sizeof rec, t->z64_pos) == 0 && mz_our_end_records(rec);
    uint64_t *known = malloc(((size_t)cd->count + 1) * sizeof *known);
    /* A block to scan, and room after it for the longest record that starts in it. */
    const size_t cap = MZ_SCAN_BLOCK + MZ_CDH_FIXED + 3 * 65535u;
    uint8_t *buf = malloc(cap);
    int found = 0;
    if (!known || !buf) goto out;
    for (uint32_t i = 0; i < cd->count; i++) known[i] = cd->entries[i].lfh_off;
    qsort(known, cd->count, sizeof *known, cmp_u64);
    for (uint64_t lo = t->end; lo < src->size && !found;) {
        if (src->fd >= 0) { /* holes read as zeros: nothing to find in them */
            off_t d = lseek(src->fd, (off_t)lo, SEEK_DATA);
            if (d < 0 || (uint64_t)d >= src->size) break;
            if ((uint64_t)d > lo) lo = (uint64_t)d;
        }
        uint64_t want = src->size - lo;
        size_t len = (size_t)(want < cap ? want : cap);
        if (src->read(src->ctx, buf, len, lo) != 0) break;
        size_t scan = len > MZ_SCAN_BLOCK ? MZ_SCAN_BLOCK : len;
        for (size_t i = 0; i + 4 <= scan && !found; i++) {
            if (buf[i] != 0x50 || buf[i + 1] != 0x4b) continue;
            if (ours && buf[i + 2] == 0x03 && buf[i + 3] == 0x04 && mz_our_lfh(buf + i, len - i, NULL)) {
                /* An entry mmzip wrote, past its own end records: its writers write entries below them only. */
                uint16_t n = mz_get16(buf + i + 26);
                found = 1;
                *later_rec = lo + i;
                snprintf(later_name, name_cap, "%.*s", (int)(n < 200 ? n : 200), (const char *)buf + i + MZ_LFH_FIXED);
                break;
            }
            if (buf[i + 2] != 0x01 || buf[i + 3] != 0x02) continue;
            uint64_t off;
            uint16_t name_len = mz_get16(buf + i + 28);
            const uint8_t *name = buf + i + MZ_CDH_FIXED;
            if (name_len == 0 || !mz_cdh_lfh_offset(buf + i, len - i, &off)) continue;
            /* Its offsets count from the found archive's start, or (an archive stored as an entry of this one
             * was found) from the file's. */
            for (int base = 0; base < 2 && !found; base++) {
                uint64_t abs = off + (base ? 0 : t->concat);
                if (abs < off || (base && !t->concat) || bsearch(&abs, known, cd->count, sizeof *known, cmp_u64))
                    continue;
                uint8_t lh[MZ_LFH_FIXED + 255];
                size_t cmp = name_len < 255 ? name_len : 255;
                if (abs + MZ_LFH_FIXED + cmp > src->size ||
                    src->read(src->ctx, lh, MZ_LFH_FIXED + cmp, abs) != 0 || mz_get32(lh) != MZ_SIG_LFH ||
                    mz_get16(lh + 26) != name_len || memcmp(lh + MZ_LFH_FIXED, name, cmp) != 0)
                    continue;
                found = 1;
            }
            if (!found) continue;
            *later_rec = lo + i;
            snprintf(later_name, name_cap, "%.*s", (int)name_len, (const char *)name);
        }
        if (len <= MZ_SCAN_BLOCK) break;
        lo += MZ_SCAN_BLOCK;
    }
out:
    free(known);
    free(buf);
    return found;
}

/*
 * 1 if the end records found at eocd lie inside the data of an entry mmzip wrote, walking its local headers
 * from the start of the file: a ZIP stored as an entry of an mmzip archive whose own end was damaged (an outside
 * review: the stored archive was read, and recover then made it the archive). Sets *holder to that entry's name.
 */
static int inside_an_entry(const mz_source *src, uint64_t eocd, char *holder, size_t cap) {
    uint8_t *h = malloc(MZ_LFH_FIXED + 2 * 65535u);
    int found = 0;
    for (uint64_t pos = 0; h && pos + MZ_LFH_FIXED <= eocd;) {
        if (src->read(src->ctx, h, MZ_LFH_FIXED, pos) != 0) break;
        uint32_t sig = mz_get32(h);
        size_t len = MZ_LFH_FIXED + (size_t)mz_get16(h + 26) + mz_get16(h + 28);
        uint64_t csize;
        if ((sig != MZ_SIG_LFH && sig != MZ_SIG_EOCD && sig != 0) || pos + len > src->size ||
            src->read(src->ctx, h + MZ_LFH_FIXED, len - MZ_LFH_FIXED, pos + MZ_LFH_FIXED) != 0 ||
            !mz_our_lfh(h, len, &csize))
            break;
        uint64_t data = pos + len;
        if (csize > src->size - data) break;
        if (eocd >= data && eocd < data + csize) {
            snprintf(holder, cap, "%.*s", (int)(mz_get16(h + 26) < 200 ? mz_get16(h + 26) : 200),
                     (const char *)h + MZ_LFH_FIXED);
            found = 1;
            break;
        }
        pos = data + csize;
    }
    free(h);
    return found;
}

int mz_locate(const mz_source *src, int allow_scan_back, mz_trailer *t, mz_cd *cd) {
    memset(t, 0, sizeof *t);
    memset(cd, 0, sizeof *cd);
    int st = at_eof(src, t, cd);
    if (st == MMZIP_OK || !allow_scan_back) return st;
    if (st == MMZIP_EUNSUPPORTED || st == MMZIP_EIO || st == MMZIP_ENOMEM) return st;
    char first[1024];
    snprintf(first, sizeof first, "%s", mmzip_last_error());
    int st2 = scan_back(src, t, cd);
    if (st2 != MMZIP_OK) return mz_fail(st, "%s", first);
    uint64_t later;
    char name[256];
    char what[512];
    if (inside_an_entry(src, t->eocd_pos, name, sizeof name))
        snprintf(what, sizeof what, "are those of a ZIP stored in its entry '%s', not the archive's", name);
    else if (later_directory_after(src, t, cd, &later, name, sizeof name))
        snprintf(what, sizeof what, "describe an older state of %llu entr%s, or an archive stored as an entry, while "
                 "after them, at offset %llu, lies a record of an entry they do not name ('%s')",
                 (unsigned long long)cd->count, cd->count == 1 ? "y" : "ies", (unsigned long long)later, name);
    else
        return MMZIP_OK;
    uint64_t at = t->eocd_pos;
    mz_trailer_free(t);
    mz_cd_free(cd);
    memset(t, 0, sizeof *t);
    memset(cd, 0, sizeof *cd);
    return mz_fail(MMZIP_ECORRUPT, "%s: the end of the archive is damaged (%s): the last intact end records, at offset "
                   "%llu, %s; mmzip neither reads them as the archive nor cuts what follows: restore the file from a "
                   "copy ('zip -FF' can rebuild a directory from the local headers into a new file)",
                   src->name, first, (unsigned long long)at, what);
}
