/*
 * entry_table.c - the in-memory entry table: name hashing, lookup with per-handle visibility, the sorted
 * index used for listing, and where an entry's data starts (its local header, read once).
 *
 * The hash slot of a name always points at its newest entry. A pending entry remembers the committed entry
 * it supersedes (`replaces`), so that read-only handles keep seeing the committed version until the
 * writer commits, while the writer sees its own newest version.
 */
#include "internal.h"

#include <stdlib.h>

static int name_eq(const mz_store *s, const mz_entry *e, const char *name, size_t len) {
    if (e->name_len != len) return 0;
    size_t head = len < sizeof e->name_head ? len : sizeof e->name_head;
    if (memcmp(e->name_head, name, head) != 0) return 0;
    return len <= head || memcmp(mz_name(s, e) + head, name + head, len - head) == 0;
}

int mz_cd_reserve(mz_store *s, uint64_t extra) {
    if (s->cd_len + extra <= s->cd_cap) return MMZIP_OK;
    uint64_t cap = s->cd_cap ? s->cd_cap : 4096;
    while (cap < s->cd_len + extra) cap *= 2;
    uint8_t *p = realloc(s->cd, cap);
    if (!p) return mz_fail(MMZIP_ENOMEM, "%s: out of memory for the central directory", s->path);
    s->cd = p;
    s->cd_cap = cap;
    return MMZIP_OK;
}

int mz_entries_reserve(mz_store *s, uint32_t extra) {
    if ((uint64_t)s->n + extra <= s->cap) return MMZIP_OK;
    if ((uint64_t)s->n + extra >= UINT32_MAX / 2) return mz_fail(MMZIP_ETOOBIG, "%s: too many entries", s->path);
    uint32_t cap = s->cap ? s->cap : 64;
    while (cap < s->n + extra) cap *= 2;
    mz_entry *p = realloc(s->e, (size_t)cap * sizeof *p);
    if (!p) return mz_fail(MMZIP_ENOMEM, "%s: out of memory for the entry table", s->path);
    mz_prefer_huge_pages(p + s->cap, (size_t)(cap - s->cap) * sizeof *p);
    s->e = p;
    s->cap = cap;
    return MMZIP_OK;
}

static int grow_slots(mz_store *s, uint32_t want_entries) {
    uint64_t need = (uint64_t)want_entries * 2;
    uint64_t size = s->slots ? (uint64_t)s->slot_mask + 1 : 0;
    if (size >= need && size >= 16) return 0;
    uint64_t ns = 16;
    while (ns < need) ns *= 2;
    uint64_t *slots = calloc(ns, sizeof *slots);
    if (!slots) return mz_fail(MMZIP_ENOMEM, "%s: out of memory for the name index", s->path);
    mz_prefer_huge_pages(slots, ns * sizeof *slots);
    free(s->slots);
    s->slots = slots;
    s->slot_mask = (uint32_t)(ns - 1);
    return 1; /* caller must reinsert */
}

/* Inserts entry idx as the head of its name. A later entry of the same name replaces the earlier one in
 * the slot (the last duplicate wins, as in Python's zipfile and zarr-python). */
static void slot_put(mz_store *s, uint32_t idx) {
    mz_entry *e = &s->e[idx];
    const char *nm = mz_name(s, e);
    uint64_t v = (uint64_t)e->hash << 32 | (idx + 1u);
    e->shadows_older = 0;
    for (uint32_t i = e->hash & s->slot_mask;; i = (i + 1) & s->slot_mask) {
        uint64_t cur = s->slots[i];
        if (cur == 0) {
            s->slots[i] = v;
            return;
        }
        if ((uint32_t)(cur >> 32) == e->hash && name_eq(s, &s->e[(uint32_t)cur - 1], nm, e->name_len)) {
            e->shadows_older = e->state == MZ_COMMITTED && s->e[(uint32_t)cur - 1].state == MZ_COMMITTED;
            s->slots[i] = v;
            return;
        }
    }
}

int mz_table_rebuild(mz_store *s) {
    int g = grow_slots(s, s->n);
    if (g < 0) return g;
    if (g == 0) memset(s->slots, 0, ((size_t)s->slot_mask + 1) * sizeof *s->slots);
    /* Slots are hit at random: fetch a few entries ahead so the cache misses overlap. */
    for (uint32_t i = 0; i < s->n; i++) {
        if (i + 16 < s->n) __builtin_prefetch(&s->slots[s->e[i + 16].hash & s->slot_mask], 1);
        slot_put(s, i);
    }
    s->sorted_valid = 0;
    return MMZIP_OK;
}

int mz_table_insert(mz_store *s, uint32_t idx) {
    int g = grow_slots(s, s->n);
    if (g < 0) return g;
    if (g == 1) {
        for (uint32_t i = 0; i < s->n; i++) slot_put(s, i);
    } else {
        slot_put(s, idx);
    }
    s->sorted_valid = 0;
    return MMZIP_OK;
}

uint32_t mz_lookup_head(mz_store *s, const char *name, size_t len) {
    if (!s->slots) return MZ_NONE;
    uint32_t h = mz_hash(name, len);
    for (uint32_t i = h & s->slot_mask;; i = (i + 1) & s->slot_mask) {
        uint64_t v = s->slots[i];
        if (v == 0) return MZ_NONE;
        if ((uint32_t)(v >> 32) == h && name_eq(s, &s->e[(uint32_t)v - 1], name, len)) return (uint32_t)v - 1;
    }
}

/* An archive from another writer can hold a name more than once (zarr's ZipStore appends a chunk it
 * rewrites; the last record wins, in zipfile and here). Replacing or removing that name must drop the earlier
 * records too: left in the next directory, the newest of them would win there, and its old bytes would come
 * back to every reader of the archive. Entries are in file order, so the duplicates lie below e. */
void mz_shadow_committed(mz_store *s, mz_entry *e) {
    const char *nm = mz_name(s, e);
    for (uint32_t i = (uint32_t)(e - s->e) + 1; i-- > 0;) {
        mz_entry *o = &s->e[i];
        if (o != e && (o->hash != e->hash || !name_eq(s, o, nm, e->name_len))) continue;
        if (!(o->mark & MZ_MARK_SHADOWED)) {
            o->mark |= MZ_MARK_SHADOWED;
            s->n_shadowed++;
        }
        if (!o->shadows_older) return;
    }
}

int mz_visible(const mz_entry *e, int writer_view) {
    if (e->mark & (MZ_MARK_BAD | MZ_MARK_NONAME)) return 0; /* a torn tail entry, or one with no usable name */
    if (e->state == MZ_PENDING) return writer_view && !(e->mark & (MZ_MARK_DEAD | MZ_MARK_RESERVED));
    return writer_view ? !(e->mark & MZ_MARK_SHADOWED) : 1;
}

mz_entry *mz_lookup(mz_store *s, const char *name, size_t len, int writer_view) {
    return mz_visible_version(s, mz_lookup_head(s, name, len), writer_view);
}

mz_entry *mz_visible_version(mz_store *s, uint32_t i, int writer_view) {
    if (i == MZ_NONE) return NULL;
    mz_entry *e = &s->e[i];
    if (e->state == MZ_PENDING) {
        if (writer_view && mz_visible(e, 1)) return e;
        if (e->replaces == MZ_NONE) return NULL;
        e = &s->e[e->replaces];
    }
    return mz_visible(e, writer_view) ? e : NULL;
}

static int cmp_names_r(const void *a, const void *b, void *ctx) {
    const mz_store *s = ctx;
    const mz_entry *x = &s->e[*(const uint32_t *)a], *y = &s->e[*(const uint32_t *)b];
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(mz_name(s, x), mz_name(s, y), n);
    if (c) return c;
    return (int)x->name_len - (int)y->name_len;
}

/* Builds s->sorted for the given view: one index per visible name. Called with s->rw held exclusively or
 * under s->wmu by the writer; see read.c for the locking. */
int mz_sorted_index(mz_store *s, int writer_view) {
    if (s->sorted_valid == (writer_view ? 2 : 1)) return MMZIP_OK;
    uint32_t *idx = realloc(s->sorted, ((size_t)s->n + 1) * sizeof *idx);
    if (!idx) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    s->sorted = idx;
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        mz_entry *e = &s->e[i];
        if (!mz_visible(e, writer_view)) continue;
        /* Only the entry that lookup would return for this name (duplicates: the last wins). */
        if (mz_lookup(s, mz_name(s, e), e->name_len, writer_view) != e) continue;
        idx[k++] = i;
    }
    qsort_r(idx, k, sizeof *idx, cmp_names_r, s);
    s->n_sorted = k;
    s->sorted_valid = writer_view ? 2 : 1;
    return MMZIP_OK;
}

void mz_table_free(mz_store *s) {
    free(s->e);
    free(s->slots);
    free(s->cd);
    free(s->sorted);
    free(s->kept_holes);
    s->kept_holes = NULL;
    s->n_kept_holes = 0;
    s->kept_holes_valid = 0;
    s->e = NULL;
    s->slots = NULL;
    s->cd = NULL;
    s->sorted = NULL;
    s->n = s->cap = s->n_committed = 0;
}

mz_entry *mz_committed_at(mz_store *s, uint64_t lfh_off, uint8_t skip) {
    for (uint32_t i = 0; i < s->n_committed; i++)
        if (s->e[i].lfh_off == lfh_off && !(s->e[i].mark & skip)) return &s->e[i];
    return NULL;
}

uint64_t mz_first_lfh_off(const mz_store *s) {
    uint64_t first = UINT64_MAX;
    for (uint32_t i = 0; i < s->n_committed; i++)
        if (s->e[i].lfh_off < first) first = s->e[i].lfh_off;
    return first;
}

#define ENAME(e) (int)(e)->name_len, mz_name(s, (e))

/* Below every reader and writer (read.c, write.c, journal.c): the local header is read at the first use of an
 * entry, and its data offset kept. */
int mz_resolve_data(mz_store *s, mz_entry *e) {
    if (__atomic_load_n(&e->data_off, __ATOMIC_ACQUIRE)) return MMZIP_OK;
    if (e->lfh_off + MZ_LFH_FIXED > s->file_size)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': local header at %llu is past the end of the file",
                       s->path, ENAME(e), (unsigned long long)e->lfh_off);
    /* A writer with a new mapping reads it with pread: see copy.c (MZ_COPY_PREAD_BELOW). */
    uint8_t head[MZ_LFH_FIXED + 256];
    const uint8_t *h = s->map.base + e->lfh_off;
    if (s->writable && !s->map.warm && e->name_len <= sizeof head - MZ_LFH_FIXED &&
        mz_read_at(s, head, MZ_LFH_FIXED + e->name_len, e->lfh_off) == 0)
        h = head;
    uint32_t sig = mz_get32(h);
    uint16_t nlen = mz_get16(h + 26), xlen = mz_get16(h + 28), method = mz_get16(h + 8);
    /* A cleared signature marks a superseded first entry (commit.c: neutralize_dead_start); it is still
     * valid for a reader whose snapshot predates that commit, provided the name matches exactly. */
    if (sig != MZ_SIG_LFH && !(mz_lfh_sig_or_cleared(h) && nlen == e->name_len && nlen > 0 &&
                               memcmp(h + MZ_LFH_FIXED, mz_name(s, e), nlen) == 0))
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': no local header at offset %llu (torn or overwritten)",
                       s->path, ENAME(e), (unsigned long long)e->lfh_off);
    uint64_t data = e->lfh_off + MZ_LFH_FIXED + nlen + xlen;
    if (data > e->limit || e->csize > e->limit - data)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': its data (%llu bytes at %llu) overlaps what follows at "
                       "%llu", s->path, ENAME(e), (unsigned long long)e->csize, (unsigned long long)data,
                       (unsigned long long)e->limit);
    if (nlen != e->name_len || memcmp(h + MZ_LFH_FIXED, mz_name(s, e), nlen) != 0)
        return mz_fail(MMZIP_ECORRUPT, "%s: entry '%.*s': the local header names a different entry", s->path,
                       ENAME(e));
    /* A local header whose method disagrees with the directory: zipfile goes by the directory, and so does
     * mmzip, but never unchecked: a stored entry's first read checks its CRC-32 (decoding always does), so
     * bytes that are not the entry's are refused rather than returned. mmzip check reports the field. */
    if (method != e->method && e->method == 0) __atomic_fetch_or(&e->mark, MZ_MARK_VERIFY, __ATOMIC_RELEASE);
    /* So is one whose local header gives another CRC-32 or size than the directory (zipfile goes by the
     * directory): the bytes read must be those the directory's CRC-32 names. */
    uint16_t flags = mz_get16(h + 6);
    uint32_t lcs = mz_get32(h + 18), lus = mz_get32(h + 22);
    if (e->method == 0 && !(flags & MZ_FLAG_DATA_DESCRIPTOR) &&
        (mz_get32(h + 14) != e->crc || (lcs != 0xFFFFFFFFu && lcs != e->csize) ||
         (lus != 0xFFFFFFFFu && lus != e->usize)))
        __atomic_fetch_or(&e->mark, MZ_MARK_VERIFY, __ATOMIC_RELEASE);
    __atomic_store_n(&e->data_off, data, __ATOMIC_RELEASE);
    return MMZIP_OK;
}
