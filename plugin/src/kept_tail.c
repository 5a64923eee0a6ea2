/*
 * kept_tail.c - the directory a relocation leaves behind, kept for the readers that are reading it, and the
 * free space below the data that it and the slack under it become (docs/protocol.md §3.7).
 *
 * A relocation writes a copy of the directory past the end of the file; until then the old directory and end
 * records end the file, and a third-party reader that took the file's size a moment before is reading them
 * (libzip reads every local header after them: 100 ms and more on a large archive). The entry a put writes
 * next used to land right on them, and such a reader failed ("Zip archive inconsistent", "Bad magic number for
 * central directory"). So a put that relocates places its entry past the old end of the file instead, at the
 * next page, and records in that entry's central-directory record (the "kept tail" extra field, MZ_EXTRA_KEPT)
 * the range it skipped: the slack left below the old directory, which becomes a hole, then the old directory
 * and end records, which stay as they are.
 *
 * A relocation releases every kept directory it finds intact (its end records still where the field says,
 * pointing at it) except those the same store's last three relocations kept (mz_kept_held): a reader still
 * reading it after three more relocations is as rare as one that found the old directory overwritten was
 * common. Released, the range is a hole like the slack below it. A later put that
 * would otherwise relocate takes a hole inside a recorded range instead, so the space is used again and the
 * file stays within its allowance at rest (the free space here counts against it, with the slack).
 *
 * Only holes inside recorded ranges are free: a hole elsewhere may be part of a dead entry that a reader of
 * an older commit still reads as zeros (an HDF5 member moved by an edit, a reservation never written in
 * full). Only mmzip punches holes in recorded ranges, and never in a byte an entry of the table covers; a
 * range an entry of the table covers is never handed out, whatever a record says.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#define MZ_PAGE 4096u

uint64_t mz_page_up(uint64_t off) { return (off + MZ_PAGE - 1) / MZ_PAGE * MZ_PAGE; }

/* The range a kept-tail record names, if e has one: [from, to) below the entry, to the old end of the file. */
static int kept_range(const mz_store *s, const mz_entry *e, uint64_t *from, uint64_t *to) {
    if (!e->kept_tail || !mz_cdh_kept(s->cd + e->cd_rec, e->cd_rec_len, from, to)) return 0;
    return *from < *to && *to <= e->lfh_off;
}

/* Where the free space of that range ends: the entry that skipped it starts at the next page after the old
 * end of the file, and what lies between was a hole past that end. */
static uint64_t free_top(const mz_entry *e, uint64_t to) {
    uint64_t top = mz_page_up(to);
    return top < e->lfh_off ? top : e->lfh_off;
}

/* The furthest entry e's bytes can reach without reading its local header: the largest header (name and extra
 * field of 64 KiB each), its data, a ZIP64 data descriptor and its room. */
static uint64_t largest_end(const mz_entry *e) {
    return e->lfh_off + MZ_LFH_FIXED + 2 * 65535ull + e->csize + 20 + e->room;
}

/* Where entry e's bytes end, its room included; an entry whose local header cannot be read ends as late as
 * the largest header it could have. */
static uint64_t extent_end(mz_store *s, mz_entry *e) {
    uint64_t end;
    if ((e->mark & MZ_MARK_BAD) || mz_data_end_of(s, e, &end) != MMZIP_OK) return largest_end(e);
    return end + e->room;
}

/* 1 if some entry of the table (committed or pending) has a byte in [a, z). One pass over the table; an
 * entry's local header is read only if the largest it could be reaches a. */
static int covered(mz_store *s, uint64_t a, uint64_t z) {
    for (uint32_t i = 0; i < s->n; i++) {
        mz_entry *e = &s->e[i];
        if (e->lfh_off >= z) continue;
        if (e->lfh_off >= a) return 1;
        if (largest_end(e) > a && extent_end(s, e) > a) return 1;
    }
    return 0;
}

/* The end of the nearest entry below off (its room included), or 0. */
static uint64_t end_below(mz_store *s, uint64_t off) {
    mz_entry *best = NULL;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->e[i].lfh_off < off && (!best || s->e[i].lfh_off > best->lfh_off)) best = &s->e[i];
    return best ? extent_end(s, best) : 0;
}

/* The next hole at or after pos that starts before `to`: [*h0, *h1), cut at `to`. 0 if none (or the file
 * system does not report holes). */
static int next_hole(mz_store *s, uint64_t pos, uint64_t to, uint64_t *h0, uint64_t *h1) {
    off_t a = lseek(s->fd, (off_t)pos, SEEK_HOLE);
    if (a < 0 || (uint64_t)a >= to) return 0;
    off_t b = lseek(s->fd, a, SEEK_DATA);
    uint64_t e = b < 0 ? to : (uint64_t)b; /* ENXIO: a hole to the end of the file */
    *h0 = (uint64_t)a;
    *h1 = e < to ? e : to;
    return *h1 > *h0;
}

/* If [from, to) still ends in the directory and end records a relocation left, *cd_off is where that
 * directory starts: ZIP64 end records of mmzip's form, ending at `to`, whose directory ends where they begin
 * and starts inside the range. */
static int intact_directory(mz_store *s, uint64_t from, uint64_t to, uint64_t *cd_off) {
    if (to - from < MZ_TRAILER_FIXED || to > s->file_size) return 0;
    const uint8_t *z = s->map.base + to - MZ_TRAILER_FIXED, *l = z + MZ_Z64_EOCD_FIXED,
                  *e = l + MZ_Z64_LOC_FIXED;
    if (mz_get32(z) != MZ_SIG_Z64_EOCD || mz_get64(z + 4) != MZ_Z64_EOCD_FIXED - 12 ||
        mz_get32(l) != MZ_SIG_Z64_LOC || mz_get64(l + 8) != to - MZ_TRAILER_FIXED || mz_get32(e) != MZ_SIG_EOCD ||
        mz_get16(e + 20) != 0)
        return 0;
    uint64_t size = mz_get64(z + 40), off = mz_get64(z + 48);
    if (off < from || off > to - MZ_TRAILER_FIXED || to - MZ_TRAILER_FIXED - off != size) return 0;
    *cd_off = off;
    return 1;
}

static int cmp_offset(const void *x, const void *y) {
    uint64_t a = (*(mz_entry *const *)x)->lfh_off, b = (*(mz_entry *const *)y)->lfh_off;
    return a < b ? -1 : a > b;
}

/* The entries of the table (committed and pending) by offset, for uncovered(); NULL if out of memory. */
static mz_entry **by_offset(mz_store *s) {
    mz_entry **o = malloc((s->n ? s->n : 1) * sizeof *o);
    if (!o) return NULL;
    for (uint32_t i = 0; i < s->n; i++) o[i] = &s->e[i];
    qsort(o, s->n, sizeof *o, cmp_offset);
    return o;
}

/* The bytes of [a, z) that no entry of the table covers: what the range holds that is no entry's, the holes,
 * the kept directory and the zeros of partial pages alike. Entries do not overlap, so only the nearest one
 * below a can reach into the range; only those in or next to it have their local headers read. */
static uint64_t uncovered(mz_store *s, mz_entry **o, uint64_t a, uint64_t z) {
    uint32_t lo = 0, hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (o[mid]->lfh_off < a) lo = mid + 1;
        else hi = mid;
    }
    uint64_t cov = 0;
    if (lo > 0) {
        uint64_t end = extent_end(s, o[lo - 1]);
        if (end > a) cov += (end < z ? end : z) - a;
    }
    for (uint32_t i = lo; i < s->n && o[i]->lfh_off < z; i++) {
        uint64_t end = extent_end(s, o[i]);
        cov += (end < z ? end : z) - o[i]->lfh_off;
    }
    return cov < z - a ? z - a - cov : 0;
}

/* Counted from the table rather than from the holes the file system reports (by whole pages): the partial
 * pages at a range's start and after each put into it are no entry's either, and the allowance at rest
 * (guarantee 7) counts every byte that is no entry's. */
uint64_t mz_kept_bytes(mz_store *s) {
    if (!s->map.base) return 0;
    mz_entry **o = NULL;
    uint64_t total = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        uint64_t from, to;
        if (!kept_range(s, &s->e[i], &from, &to)) continue;
        if (!o && !(o = by_offset(s))) return UINT64_MAX / 4; /* out of memory: as if over any allowance */
        total += uncovered(s, o, from, free_top(&s->e[i], to));
    }
    free(o);
    return total;
}

/* A range one of this store's last three relocations kept: its directory stays intact. A reader that found it
 * reads it record by record (libzip: 7,000 records of a 1 GiB archive, tens of ms when the reader shares its
 * core), and a long session on a large archive relocates once per 1 % of growth (§3.2), which a fast writer
 * makes 10 to 30 times a second: released at the next relocation, the directory was punched and refilled
 * under such readers (libzip "Not a zip archive", "No such file"). Held for two relocations more, and across
 * sessions until the next session's first relocation, as before. */
int mz_kept_held(const mz_store *s, uint64_t to) {
    for (size_t i = 0; to && i < sizeof s->kept_to / sizeof s->kept_to[0]; i++)
        if (to == s->kept_to[i]) return 1;
    return 0;
}

int mz_release_kept_tails(mz_store *s) {
    if (!s->map.base) return MMZIP_OK;
    int st = MMZIP_OK;
    for (uint32_t i = 0; i < s->n && !st; i++) {
        mz_entry *e = &s->e[i];
        uint64_t from, to, cd;
        /* The ranges this store's last relocations kept stay (mz_kept_held). */
        if (e->state == MZ_PENDING || !kept_range(s, e, &from, &to) || mz_kept_held(s, to) ||
            !intact_directory(s, from, to, &cd))
            continue;
        /* The page below the directory is zeros up from `from` (the slack punched when it was kept): punching
         * it whole changes no byte and leaves no partial page. Above `to`, up to the next page, was the hole past
         * the old end of the file. */
        uint64_t lo = cd / MZ_PAGE * MZ_PAGE >= from ? cd / MZ_PAGE * MZ_PAGE : cd, hi = free_top(e, to);
        if (covered(s, lo, hi)) continue;
        mz_crashpoint("relocate.release_kept_tail"); /* a punch is no write: no crash point of its own */
        st = mz_io_zero(s, lo, hi - lo, "relocate.release_kept_tail");
    }
    return st;
}

int mz_kept_tail_allowed(mz_store *s, uint64_t lfh_off, uint64_t budget, uint64_t *kept) {
    *kept = mz_kept_bytes(s);
    if (s->shared || !s->zip64 || !s->end_follows_cd || s->foreign_hold || !s->map.base) return 0;
    if (s->cd_pos + s->cd_size + s->trailer_len != s->file_size) return 0;
    if (lfh_off < s->data_end || lfh_off > s->cd_pos) return 0;
    uint64_t skip = mz_page_up(s->file_size) - lfh_off;
    if (skip > budget || *kept > budget - skip) return 0;
    /* The range becomes free space that only puts that fit in it use again (the slack below the directory,
     * then the directory once released). Where the archive's entries are larger (chunks of one size, bigger
     * than a directory) it would stay unused, taking the slack's share of the allowance: keep a tail only if a
     * quarter of the entries so far would fit in half of it. */
    uint64_t fit = 0;
    for (uint32_t i = 0; i < s->n; i++)
        if (s->e[i].csize + s->e[i].name_len + MZ_OUR_LFH_OVERHEAD <= skip / 2) fit++;
    return fit * 4 >= s->n;
}

/* Adds [a, z) to the writer's free list, less what entries of the table cover (pending entries may still be
 * in the gathering buffer, their bytes not in the file yet: a hole there is not free). */
static int add_free(mz_store *s, uint64_t a, uint64_t z, uint32_t *cap) {
    while (a < z) {
        /* The first entry that starts in [a, z), or reaches into it from below. */
        uint64_t stop = z, next = z;
        for (uint32_t i = 0; i < s->n; i++) {
            mz_entry *e = &s->e[i];
            if (e->lfh_off >= stop) continue;
            if (largest_end(e) <= a) continue;
            uint64_t end = extent_end(s, e);
            if (end <= a) continue;
            stop = e->lfh_off > a ? e->lfh_off : a;
            next = end;
        }
        if (stop > a) {
            if (s->n_kept_holes == *cap) {
                uint32_t c = *cap ? *cap * 2 : 16;
                uint64_t(*g)[2] = realloc(s->kept_holes, (size_t)c * sizeof *g);
                if (!g) return -1;
                s->kept_holes = g;
                *cap = c;
            }
            s->kept_holes[s->n_kept_holes][0] = a;
            s->kept_holes[s->n_kept_holes][1] = stop;
            s->n_kept_holes++;
        }
        if (stop == z) break;
        a = next > stop ? next : stop + 1;
    }
    return 0;
}

/* Where free space that the file system reports from h0 (a hole starts on a page) really starts: the bytes
 * from the end of the entry before it, if they are zeros inside the range [from, h0). They are the rest of
 * the page an earlier put in free space ended in; a dead entry there would have a local header, not zeros,
 * between the entry and the hole. Without this each such put would lose half a page on average. */
static uint64_t free_start(mz_store *s, uint64_t from, uint64_t h0) {
    uint64_t a = end_below(s, h0);
    if (a < from) a = from;
    if (a >= h0 || h0 - a >= MZ_PAGE) return h0;
    for (const uint8_t *p = s->map.base + a, *z = s->map.base + h0; p < z; p++)
        if (*p) return h0;
    return a;
}

/* The free list: the holes of every recorded range, less what entries cover. */
static int build_free(mz_store *s) {
    s->n_kept_holes = 0;
    s->kept_holes_valid = 1;
    uint32_t cap = 0;
    mz_entry **o = NULL;
    for (uint32_t i = 0; i < s->n; i++) {
        uint64_t from, to, h0, h1;
        if (!kept_range(s, &s->e[i], &from, &to)) continue;
        if (!o && !(o = by_offset(s))) break;
        /* Less than a page that is no entry's holds no hole: no need to ask the file system. */
        if (uncovered(s, o, from, free_top(&s->e[i], to)) < MZ_PAGE) continue;
        for (uint64_t pos = from, top = free_top(&s->e[i], to); next_hole(s, pos, top, &h0, &h1); pos = h1)
            if (add_free(s, free_start(s, from, h0), h1, &cap)) {
                s->n_kept_holes = 0;
                free(o);
                return -1;
            }
    }
    free(o);
    return 0;
}

void mz_kept_free_forget(mz_store *s) { s->kept_holes_valid = 0; }

void mz_kept_prune(mz_store *s) {
    if (s->shared || !s->map.base) return;
    mz_entry **o = NULL;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        uint64_t from, to, cd;
        if (!kept_range(s, e, &from, &to) || mz_kept_held(s, to) || intact_directory(s, from, to, &cd)) continue;
        if (!o && !(o = by_offset(s))) return;
        if (uncovered(s, o, from, free_top(e, to))) continue;
        /* Spent: its directory released, every byte of it an entry's. The record says so from the next
         * directory on (from = to = 0), so that no later session looks at the range again; a range with
         * bytes that are no entry's (a partial page no put fits in) stays, so that they count at rest. */
        pthread_rwlock_wrlock(&s->rw);
        mz_set_cdh_kept(s->cd + e->cd_rec, e->cd_rec_len, 0, 0);
        e->kept_tail = 0;
        pthread_rwlock_unlock(&s->rw);
    }
    free(o);
}

int mz_kept_free_place(mz_store *s, size_t name_len, uint64_t total, uint32_t alignment, uint64_t *lfh_out) {
    if (s->shared || !s->map.base) return 0;
    if (!s->kept_holes_valid && build_free(s) != 0) return 0;
    /* Best fit: the smallest free run that takes the entry, so that large runs stay for large entries and
     * what is left over is small. The rest of the run stays free for the next put, from the byte after. */
    uint32_t best = UINT32_MAX;
    uint64_t best_left = UINT64_MAX;
    for (uint32_t i = 0; i < s->n_kept_holes; i++) {
        uint64_t a = s->kept_holes[i][0], z = s->kept_holes[i][1];
        uint64_t end = a + mz_our_lfh_size(name_len, mz_align_padding(a, name_len, alignment)) + total;
        if (end <= z && z - end < best_left) {
            best = i;
            best_left = z - end;
        }
    }
    if (best == UINT32_MAX) return 0;
    uint64_t a = s->kept_holes[best][0];
    *lfh_out = a;
    s->kept_holes[best][0] = a + mz_our_lfh_size(name_len, mz_align_padding(a, name_len, alignment)) + total;
    return 1;
}
