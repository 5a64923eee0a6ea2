/*
 * inplace.c - stored entries modified in place (mmzip_inplace, mmzip_inplace_end).
 *
 * Everything else in mmzip appends; this is the one exception, for arrays that an application updates where
 * they lie (AlignedBinaryFormat.jl's r+ mode). The bytes change under the committed directory, so the
 * entry's CRC-32 goes stale the moment the application writes. What keeps that from ever passing silently:
 *
 *   - Before a writable view is handed out, a marker entry ".mmzip/edit/<key>" is committed. It holds the
 *     local-header offset of the version being edited and the CRC it had.
 *   - Every commit while edits are open recomputes their CRCs and writes them into the local header (in
 *     place) and the new directory, so each commit publishes data and a CRC that agree.
 *   - mmzip_inplace_end (and close) make the view read-only, remove the marker and commit: the marker disappears
 *     in the same commit that publishes the last CRC.
 *   - A writer killed between a write and a commit leaves the changed bytes, the stale CRC and the marker.
 *     CRC checks (mmzip check, unzip -t, zipfile) report the member. The next writable open (mmzip_recover
 *     included) finds the marker, recomputes the CRC over the bytes as they are, commits it and drops the
 *     marker; mmzip_info().edits_recovered counts such entries.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define MZ_EDIT_MARKER_LEN 12u /* lfh offset (8), CRC before the edit (4) */

static char *marker_name(const char *key) {
    size_t n = strlen(key);
    char *m = malloc(MZ_EDIT_PREFIX_LEN + n + 1);
    if (!m) return NULL;
    memcpy(m, MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN);
    memcpy(m + MZ_EDIT_PREFIX_LEN, key, n + 1);
    return m;
}

/* The committed, visible entry whose local header is at lfh_off, or NULL (replaced or removed since). */
static mz_entry *committed_at(mz_store *s, uint64_t lfh_off) {
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        if (e->lfh_off == lfh_off && !(e->mark & MZ_MARK_SHADOWED)) return e;
    }
    return NULL;
}

static struct mz_inplace *find_edit(mz_store *s, const char *key) {
    for (uint32_t i = 0; i < s->n_inplaces; i++)
        if (strcmp(s->inplaces[i].key, key) == 0) return &s->inplaces[i];
    return NULL;
}

/* Writes crc as the entry's CRC-32: its local header in place (unless a data descriptor carries it) and
 * its record in the directory image, which the next commit writes out. */
static int set_crc(mz_store *s, mz_entry *e, uint32_t crc) {
    if (e->crc == crc) return MMZIP_OK;
    uint8_t le[4];
    mz_put32(le, crc);
    int st = mz_io_write(s, le, 4, e->lfh_off + 14, "inplace.local_crc");
    if (st) return st;
    pthread_rwlock_wrlock(&s->rw);
    mz_table_changed(s);
    mz_put32(s->cd + e->cd_rec + 16, crc);
    e->crc = crc;
    pthread_rwlock_unlock(&s->rw);
    s->cd_changed = 1;
    return MMZIP_OK;
}

int mz_inplace_refresh_locked(mz_store *s) {
    for (uint32_t i = 0; i < s->n_inplaces; i++) {
        struct mz_inplace *d = &s->inplaces[i];
        if (!d->open && !d->stale) continue;
        mz_entry *e = committed_at(s, d->lfh_off);
        if (e) {
            int st = set_crc(s, e, mz_crc32(0, d->view, (size_t)d->len));
            if (st) return st;
        }
        d->stale = 0;
    }
    return MMZIP_OK;
}

/* Makes the edit read-only and queues its final refresh; the caller removes the marker and commits. */
static void end_locked(struct mz_inplace *d) {
    mprotect(d->map, d->map_len, PROT_READ);
    d->open = 0;
    d->stale = 1;
}

int mmzip_inplace(mmzip_t *h, const char *key, void **data, uint64_t *size) {
    if (!h || !key || !data) return mz_fail(MMZIP_EINVAL, "mmzip_inplace: NULL argument");
    mz_store *s = h->s;
    if (!h->writable) return mz_fail(MMZIP_EREADONLY, "%s: opened read-only; cannot edit '%s' in place", s->path, key);
    if (s->owner != mz_current_pid())
        return mz_fail(MMZIP_EBUSY, "%s: handle inherited across fork(); open the archive again", s->path);
    size_t klen = strlen(key);
    if (!mz_name_ok(key, klen) || klen + MZ_EDIT_PREFIX_LEN > 65535 ||
        strncmp(key, MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) == 0)
        return mz_fail(MMZIP_EINVAL, "%s: '%s' cannot be edited in place (invalid name, or a marker)", s->path, key);

    pthread_mutex_lock(&s->wmu);
    struct mz_inplace *d = find_edit(s, key);
    if (d && d->open && committed_at(s, d->lfh_off)) {
        *data = d->view;
        if (size) *size = d->len;
        pthread_mutex_unlock(&s->wmu);
        return MMZIP_OK;
    }
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = mz_lookup(s, key, klen, 1);
    int st = MMZIP_OK;
    const uint8_t *p = NULL;
    uint64_t n = 0;
    if (!e) st = mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    else if (e->state != MZ_COMMITTED)
        st = mz_fail(MMZIP_EBUSY, "%s: '%s' is pending; commit it before editing it in place", s->path, key);
    else if (e->method != 0)
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: '%s' is compressed (method %u); only stored entries can be edited "
                     "in place", s->path, key, e->method);
    else if (e->gp_flags & MZ_FLAG_DATA_DESCRIPTOR)
        st = mz_fail(MMZIP_EUNSUPPORTED, "%s: '%s' has a data descriptor (its CRC follows the data); mmzip "
                     "edits in place only entries whose local header holds the CRC", s->path, key);
    else st = mz_entry_bytes(s, e, &p, &n);
    uint64_t lfh_off = e ? e->lfh_off : 0, data_off = e ? e->data_off : 0;
    uint32_t crc = e ? e->crc : 0;
    pthread_rwlock_unlock(&s->rw);
    pthread_mutex_unlock(&s->wmu);
    if (st) return st;

    /* The marker first, committed: from here on a crash leaves something that says what happened. */
    char *mname = marker_name(key);
    if (!mname) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint8_t marker[MZ_EDIT_MARKER_LEN];
    mz_put64(marker, lfh_off);
    mz_put32(marker + 8, crc);
    st = mmzip_put(h, mname, marker, sizeof marker, 0);
    free(mname);
    if (!st) st = mmzip_commit(h);
    if (st) return st;

    pthread_mutex_lock(&s->wmu);
    uint64_t pg = mz_page_size, lo = data_off / pg * pg;
    size_t mlen = (size_t)((data_off + (n ? n : 1) + pg - 1) / pg * pg - lo);
    void *m = mmap(NULL, mlen, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, (off_t)lo);
    if (m == MAP_FAILED) {
        pthread_mutex_unlock(&s->wmu);
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot map '%s' writable", s->path, key);
    }
    /* A new record; an earlier one of this key (ended, or of a version since replaced) keeps its mapping,
     * read-only, since pointers into it may live, but loses its name. */
    struct mz_inplace *g = realloc(s->inplaces, (s->n_inplaces + 1) * sizeof *g);
    char *kc = strdup(key);
    if (g) s->inplaces = g;
    if (!g || !kc) {
        free(kc);
        munmap(m, mlen);
        pthread_mutex_unlock(&s->wmu);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    for (uint32_t i = 0; i < s->n_inplaces; i++)
        if (strcmp(s->inplaces[i].key, key) == 0) {
            if (s->inplaces[i].open) end_locked(&s->inplaces[i]);
            s->inplaces[i].key[0] = '\0';
        }
    d = &s->inplaces[s->n_inplaces++];
    memset(d, 0, sizeof *d);
    d->key = kc;
    d->lfh_off = lfh_off;
    d->len = n;
    d->map = m;
    d->map_len = mlen;
    d->view = (uint8_t *)m + (data_off - lo);
    d->open = 1;
    d->stale = 0;
    *data = d->view;
    if (size) *size = n;
    pthread_mutex_unlock(&s->wmu);
    return MMZIP_OK;
}

static int remove_marker(mmzip_t *h, const char *key) {
    char *mname = marker_name(key);
    if (!mname) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", h->s->path);
    int st = mmzip_exists(h, mname) ? mmzip_remove(h, mname) : MMZIP_OK;
    free(mname);
    return st;
}

int mmzip_inplace_end(mmzip_t *h, const char *key) {
    if (!h || !key) return mz_fail(MMZIP_EINVAL, "mmzip_inplace_end: NULL argument");
    mz_store *s = h->s;
    if (!h->writable) return mz_fail(MMZIP_EREADONLY, "%s: opened read-only", s->path);
    pthread_mutex_lock(&s->wmu);
    struct mz_inplace *d = find_edit(s, key);
    int open = d && d->open;
    if (open) end_locked(d);
    pthread_mutex_unlock(&s->wmu);
    if (!open) return mz_fail(MMZIP_EINVAL, "%s: '%s' is not being edited in place", s->path, key);
    int st = remove_marker(h, key);
    if (!st) st = mmzip_commit(h); /* the last CRC and the marker's removal: one commit */
    return st;
}

int mz_inplace_end_all(mmzip_t *h) {
    mz_store *s = h->s;
    int st = MMZIP_OK;
    for (uint32_t i = 0; i < s->n_inplaces; i++) {
        pthread_mutex_lock(&s->wmu);
        struct mz_inplace *d = &s->inplaces[i];
        int open = d->open;
        if (open) end_locked(d);
        pthread_mutex_unlock(&s->wmu);
        if (open) {
            int r = remove_marker(h, d->key);
            if (!st) st = r;
        }
    }
    return st;
}

int mz_inplace_recover(mmzip_t *h) {
    mz_store *s = h->s;
    int st = MMZIP_OK, found = 0;
    pthread_mutex_lock(&s->wmu);
    for (uint32_t i = 0; i < s->n_committed && !st; i++) {
        mz_entry *me = &s->e[i];
        if (me->name_len <= MZ_EDIT_PREFIX_LEN || memcmp(mz_name(s, me), MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) != 0)
            continue;
        found = 1;
        const uint8_t *mk;
        uint64_t mn;
        if (mz_entry_bytes(s, me, &mk, &mn) != MMZIP_OK || mn != MZ_EDIT_MARKER_LEN) {
            mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0,
                             "%s: removed the in-place edit marker '%.*s', which names no entry (unreadable, or not "
                             "12 bytes)", s->path, (int)me->name_len, mz_name(s, me));
            continue;
        }
        mz_entry *e = committed_at(s, mz_get64(mk));
        if (!e || e->method != 0) {
            mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0,
                             "%s: removed the in-place edit marker '%.*s', whose entry was replaced or removed "
                             "since: nothing to refresh", s->path, (int)me->name_len, mz_name(s, me));
            continue;
        }
        const uint8_t *p;
        uint64_t n;
        /* The entry's CRC is stale by design here: resolve its bytes without mz_entry_bytes's tail check. */
        st = mz_resolve_data(s, e);
        if (st) break;
        p = s->map.base + e->data_off;
        n = e->usize;
        uint32_t crc = mz_crc32(0, p, (size_t)n), old = e->crc;
        if (crc != e->crc) {
            st = set_crc(s, e, crc);
            s->edits_recovered++;
            __atomic_fetch_and(&e->mark, (uint8_t)~(MZ_MARK_VERIFY | MZ_MARK_BAD), __ATOMIC_RELEASE);
        }
        if (crc != old)
            mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, mz_name(s, e), e->name_len, n, 1,
                             "%s: kept entry '%.*s' (%llu bytes) as the writer that was modifying it in place left "
                             "it when it died: its values may hold only part of that writer's changes; its CRC-32 "
                             "was recomputed over them (%08x, was %08x) and the marker '%.*s' removed", s->path,
                             (int)e->name_len, mz_name(s, e), (unsigned long long)n, crc, old, (int)me->name_len,
                             mz_name(s, me));
        else
            mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, mz_name(s, e), e->name_len, n, 0,
                             "%s: kept entry '%.*s' (%llu bytes) as it was: the writer that was modifying it in "
                             "place had committed its changes (its CRC-32 matches) before it died; the marker "
                             "'%.*s' was removed", s->path, (int)e->name_len, mz_name(s, e), (unsigned long long)n,
                             (int)me->name_len, mz_name(s, me));
    }
    pthread_mutex_unlock(&s->wmu);
    if (st || !found) return st;
    /* Drop the markers (names gathered first: removals change the table). */
    size_t cap = 0, cnt = 0;
    char **names = NULL;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *me = &s->e[i];
        if (me->name_len <= MZ_EDIT_PREFIX_LEN || memcmp(mz_name(s, me), MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) != 0 ||
            (me->mark & MZ_MARK_SHADOWED))
            continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 8;
            char **g = realloc(names, cap * sizeof *g);
            if (!g) break;
            names = g;
        }
        names[cnt] = strndup(mz_name(s, me), me->name_len);
        if (names[cnt]) cnt++;
    }
    for (size_t i = 0; i < cnt; i++) {
        if (!st) st = mmzip_remove(h, names[i]);
        free(names[i]);
    }
    free(names);
    if (!st) st = mmzip_commit(h);
    return st;
}

mz_entry *mz_inplace_target(mz_store *s, mz_entry *me) {
    if (me->name_len <= MZ_EDIT_PREFIX_LEN || memcmp(mz_name(s, me), MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) != 0 ||
        (me->mark & (MZ_MARK_SHADOWED | MZ_MARK_BAD)) || me->method != 0 || me->usize != MZ_EDIT_MARKER_LEN ||
        mz_resolve_data(s, me) != MMZIP_OK)
        return NULL;
    mz_entry *e = committed_at(s, mz_get64(s->map.base + me->data_off));
    return e && e->method == 0 ? e : NULL;
}

void mz_inplace_free(mz_store *s) {
    for (uint32_t i = 0; i < s->n_inplaces; i++) {
        if (s->inplaces[i].map) munmap(s->inplaces[i].map, s->inplaces[i].map_len);
        free(s->inplaces[i].key);
    }
    free(s->inplaces);
    s->inplaces = NULL;
    s->n_inplaces = 0;
}
