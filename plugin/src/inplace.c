/*
 * inplace.c - stored entries modified in place (mmzip_inplace, mmzip_inplace_end).
 *
 * Everything else in mmzip appends; this is the one exception, for arrays that an application updates where
 * they lie (AlignedBinaryFormat.jl's r+ mode). The bytes change under the committed directory, so the
 * entry's CRC-32 goes stale the moment the application writes. What keeps that from ever passing silently:
 *
 *   - Before a writable view is handed out, the entry is named in the marker file <archive>.mmzip-inplace
 *     (format.md, section 9): the archive's device and inode, then per entry being edited the local-header
 *     offset of the version being edited, its CRC before the edit and its name. The file is replaced whole
 *     (written beside, renamed over; fsynced with MMZIP_DURABLE), so it is always one complete list.
 *   - Every commit while edits are open recomputes their CRCs and writes them into the local header (in
 *     place) and the new directory, so each commit publishes data and a CRC that agree.
 *   - mmzip_inplace_end (and close) make the view read-only and commit the last CRC; then the entry leaves the
 *     marker file (removed with its last entry).
 *   - A writer killed between a write and a commit leaves the changed bytes, the stale CRC and the marker file.
 *     CRC checks (mmzip check, unzip -t, zipfile) report the member. The next writable open (mmzip_recover
 *     included) finds the file, recomputes the CRCs over the bytes as they are, commits them and removes the
 *     file; mmzip_info().edits_recovered counts such entries.
 * The marker is a file of its own, not an entry of the archive, because every entry of the central directory
 * is a member to other readers: numpy.load(...).files, zipfile's namelist() and unzip would list it. Entries
 * ".mmzip/edit/<key>" are what older versions of mmzip committed as markers; recovery still honours them.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MZ_EDIT_MARKER_LEN 12u /* lfh offset (8), CRC before the edit (4) */

static char *marker_name(const char *key) {
    size_t n = strlen(key);
    char *m = malloc(MZ_EDIT_PREFIX_LEN + n + 1);
    if (!m) return NULL;
    memcpy(m, MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN);
    memcpy(m + MZ_EDIT_PREFIX_LEN, key, n + 1);
    return m;
}

/* The marker file: magic, device (8), inode (8), count (4); per entry: lfh offset (8), CRC before the edit (4),
 * name length (2), name. Little-endian. */
#define MZ_MARKS_SUFFIX ".mmzip-inplace"
#define MZ_MARKS_NEW_SUFFIX ".mmzip-inplace.new"
static const char marks_magic[8] = {'M', 'M', 'Z', 'I', 'P', 'I', 'P', '1'};
#define MZ_MARKS_HEAD 28u
#define MZ_MARKS_REC 14u
#define MZ_MARKS_MAX (1u << 24) /* a file larger than this is not ours */

static char *suffixed(const char *path, const char *suffix) {
    size_t n = strlen(path), m = strlen(suffix);
    char *p = malloc(n + m + 1);
    if (p) {
        memcpy(p, path, n);
        memcpy(p + n, suffix, m + 1);
    }
    return p;
}

/* Replaces the marker file with the list of the entries being edited now (d->open), plus (add_key, add_lfh,
 * add_crc) if add_key is not NULL; removes it if the list is empty. s->wmu held. */
static int write_marks(mz_store *s, const char *add_key, uint64_t add_lfh, uint32_t add_crc) {
    size_t len = MZ_MARKS_HEAD;
    uint32_t count = 0;
    for (uint32_t i = 0; i < s->n_inplaces; i++)
        if (s->inplaces[i].open && s->inplaces[i].key[0]) {
            len += MZ_MARKS_REC + strlen(s->inplaces[i].key);
            count++;
        }
    if (add_key) {
        len += MZ_MARKS_REC + strlen(add_key);
        count++;
    }
    char *path = suffixed(s->path, MZ_MARKS_SUFFIX), *tmp = suffixed(s->path, MZ_MARKS_NEW_SUFFIX);
    uint8_t *buf = malloc(len);
    int st = MMZIP_OK, durable = (s->opts.flags & MMZIP_DURABLE) != 0;
    if (!path || !tmp || !buf) {
        st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        goto out;
    }
    if (count == 0) {
        if (unlink(path) != 0 && errno != ENOENT)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot remove the in-place marker file %s", s->path, path);
        else if (durable && mz_fsync_dir_of(path) != 0)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, path);
        goto out;
    }
    memcpy(buf, marks_magic, 8);
    mz_put64(buf + 8, (uint64_t)s->dev);
    mz_put64(buf + 16, (uint64_t)s->ino);
    mz_put32(buf + 24, count);
    size_t at = MZ_MARKS_HEAD;
    for (uint32_t i = 0; i <= s->n_inplaces; i++) {
        const char *key;
        uint64_t lfh;
        uint32_t crc;
        if (i < s->n_inplaces) {
            struct mz_inplace *d = &s->inplaces[i];
            if (!d->open || !d->key[0]) continue;
            key = d->key, lfh = d->lfh_off, crc = d->crc_before;
        } else {
            if (!add_key) break;
            key = add_key, lfh = add_lfh, crc = add_crc;
        }
        size_t n = strlen(key);
        mz_put64(buf + at, lfh);
        mz_put32(buf + at + 8, crc);
        mz_put16(buf + at + 12, (uint16_t)n);
        memcpy(buf + at + MZ_MARKS_REC, key, n);
        at += MZ_MARKS_REC + n;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot create the in-place marker file %s", s->path, tmp);
        goto out;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += (size_t)w;
    }
    int err = done < len ? (errno ? errno : EIO) : 0;
    if (!err && durable && fsync(fd) != 0) err = errno;
    close(fd);
    if (!err && rename(tmp, path) != 0) err = errno;
    if (err) {
        unlink(tmp);
        st = mz_fail_errno(MMZIP_EIO, err, "%s: cannot write the in-place marker file %s", s->path, path);
    } else if (durable && mz_fsync_dir_of(path) != 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory of %s", s->path, path);
    }
out:
    free(buf);
    free(path);
    free(tmp);
    return st;
}

int mz_inplace_marks_sync(mz_store *s) {
    pthread_mutex_lock(&s->wmu);
    int st = write_marks(s, NULL, 0, 0);
    pthread_mutex_unlock(&s->wmu);
    return st;
}

/* Reads the marker file of s into *buf (*len bytes), checked: MMZIP_ENOENT if there is none, MMZIP_ESTALE if
 * it belongs to another file than s's archive (one replaced since, by "w" or pack, or a copy), MMZIP_ECORRUPT
 * (with a message) if it is not a complete marker file. */
static int read_marks(mz_store *s, const char *path, uint8_t **buf, size_t *len) {
    *buf = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return MMZIP_ENOENT;
        return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot open the in-place marker file %s", s->path, path);
    }
    struct stat st;
    int r = MMZIP_OK;
    if (fstat(fd, &st) != 0) r = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot stat %s", s->path, path);
    else if (st.st_size < (off_t)MZ_MARKS_HEAD || st.st_size > (off_t)MZ_MARKS_MAX)
        r = mz_fail(MMZIP_ECORRUPT, "%s: %s is not an mmzip in-place marker file (%lld bytes)", s->path, path,
                    (long long)st.st_size);
    else if (!(*buf = malloc((size_t)st.st_size))) r = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    else if (mz_pread_full(fd, *buf, (size_t)st.st_size, 0) != 0)
        r = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot read %s", s->path, path);
    close(fd);
    if (r) goto fail;
    *len = (size_t)st.st_size;
    const uint8_t *b = *buf;
    uint32_t count = mz_get32(b + 24);
    size_t at = MZ_MARKS_HEAD;
    for (uint32_t i = 0; i < count && at + MZ_MARKS_REC <= *len; i++) at += MZ_MARKS_REC + mz_get16(b + at + 12);
    if (memcmp(b, marks_magic, 8) != 0 || at != *len || count == 0) {
        r = mz_fail(MMZIP_ECORRUPT, "%s: %s is not a complete mmzip in-place marker file; the entries it was to "
                    "name may have stale CRCs ('mmzip check' says which); remove the file to go on", s->path, path);
        goto fail;
    }
    if (mz_get64(b + 8) != (uint64_t)s->dev || mz_get64(b + 16) != (uint64_t)s->ino) return MMZIP_ESTALE;
    return MMZIP_OK;
fail:
    free(*buf);
    *buf = NULL;
    return r;
}

int mmzip_inplace_marked(mmzip_t *h, const char *key) {
    if (!h || !key) return mz_fail(MMZIP_EINVAL, "mmzip_inplace_marked: NULL argument");
    mz_store *s = h->s;
    char *path = suffixed(s->path, MZ_MARKS_SUFFIX);
    if (!path) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint8_t *buf;
    size_t len, klen = strlen(key);
    int r = read_marks(s, path, &buf, &len), found = 0;
    free(path);
    if (r == MMZIP_ENOENT || r == MMZIP_ESTALE) len = 0; /* no marker file of this archive */
    else if (r) return r;
    for (size_t at = MZ_MARKS_HEAD; at + MZ_MARKS_REC <= len;) {
        uint16_t n = mz_get16(buf + at + 12);
        if (n == klen && memcmp(buf + at + MZ_MARKS_REC, key, n) == 0) found = 1;
        at += MZ_MARKS_REC + n;
    }
    free(buf);
    if (!found) {
        /* An older mmzip's marker entry. */
        char *mname = marker_name(key);
        if (!mname) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        found = mmzip_exists(h, mname);
        free(mname);
    }
    return found;
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
    int refused = mz_shared_refuse(s, "mmzip_inplace");
    if (refused) return refused;
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
    /* The commit recomputes the CRC over the bytes as they then are, which would make damage that was there
     * before the edit look valid: the bytes must match their CRC before they can be edited. */
    if (st == MMZIP_OK) st = mz_verify_stored_once(s, e);
    uint64_t lfh_off = e ? e->lfh_off : 0, data_off = e ? e->data_off : 0;
    uint32_t crc = e ? e->crc : 0;
    pthread_rwlock_unlock(&s->rw);
    pthread_mutex_unlock(&s->wmu);
    if (st) return st;

    /* What is pending goes out first (the contract); then the marker, before the view exists: from here on a
     * crash leaves something that says what happened. */
    st = mmzip_commit(h);
    if (st) return st;

    pthread_mutex_lock(&s->wmu);
    st = write_marks(s, key, lfh_off, crc);
    if (st) {
        pthread_mutex_unlock(&s->wmu);
        return st;
    }
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
    d->crc_before = crc;
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
    int st = mmzip_commit(h); /* the last CRC; only then may the marker go */
    if (!st) st = mz_inplace_marks_sync(s);
    return st;
}

int mz_inplace_end_all(mmzip_t *h) {
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    for (uint32_t i = 0; i < s->n_inplaces; i++)
        if (s->inplaces[i].open) end_locked(&s->inplaces[i]);
    pthread_mutex_unlock(&s->wmu);
    return MMZIP_OK;
}

/* Refreshes the CRC of the committed entry at lfh_off, if it is still there under the name (name, nlen) (or
 * under any name if name is NULL), over its bytes as they are, and notes what it did (mmzip_recover_ex); marker
 * says which marker named it, for that note. s->wmu held. */
static int recover_one(mz_store *s, uint64_t lfh_off, const uint8_t *name, size_t nlen, const char *marker) {
    mz_entry *e = committed_at(s, lfh_off);
    if (!e || e->method != 0 || (name && (e->name_len != nlen || memcmp(mz_name(s, e), name, nlen) != 0))) {
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0, "%s: %s named %s%.*s%s at %llu, which was replaced "
                         "or removed since: nothing to refresh", s->path, marker, name ? "entry '" : "an entry",
                         name ? (int)nlen : 0, name ? (const char *)name : "", name ? "'" : "",
                         (unsigned long long)lfh_off);
        return MMZIP_OK;
    }
    /* The entry's CRC is stale by design here: resolve its bytes without mz_entry_bytes's tail check. */
    int st = mz_resolve_data(s, e);
    if (st) return st;
    uint32_t crc = mz_crc32(0, s->map.base + e->data_off, (size_t)e->usize), old = e->crc;
    if (crc != e->crc) {
        st = set_crc(s, e, crc);
        s->edits_recovered++;
        __atomic_fetch_and(&e->mark, (uint8_t)~(MZ_MARK_VERIFY | MZ_MARK_BAD), __ATOMIC_RELEASE);
    }
    if (st) return st;
    if (crc != old)
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, mz_name(s, e), e->name_len, e->usize, 1,
                         "%s: kept entry '%.*s' (%llu bytes) as the writer that was modifying it in place left it "
                         "when it died: its values may hold only part of that writer's changes; its CRC-32 was "
                         "recomputed over them (%08x, was %08x); %s", s->path, (int)e->name_len, mz_name(s, e),
                         (unsigned long long)e->usize, crc, old, marker);
    else
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, mz_name(s, e), e->name_len, e->usize, 0,
                         "%s: kept entry '%.*s' (%llu bytes) as it was: the writer that was modifying it in place had "
                         "committed its changes (its CRC-32 matches) before it died; %s", s->path, (int)e->name_len,
                         mz_name(s, e), (unsigned long long)e->usize, marker);
    return MMZIP_OK;
}

/* The marker file a dead writer left: the CRCs of the entries it names are refreshed and committed, then the
 * file goes. One that belongs to another file (the archive was replaced since) is removed untouched. */
static int recover_marks(mmzip_t *h) {
    mz_store *s = h->s;
    char *path = suffixed(s->path, MZ_MARKS_SUFFIX), *tmp = suffixed(s->path, MZ_MARKS_NEW_SUFFIX);
    if (!path || !tmp) {
        free(path);
        free(tmp);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    (void)unlink(tmp); /* a writer killed before its rename: that list never took effect */
    uint8_t *buf;
    size_t len;
    int st = read_marks(s, path, &buf, &len);
    char marker[PATH_MAX + 96];
    snprintf(marker, sizeof marker, "the in-place marker file %s, which named it, was removed", path);
    if (st == MMZIP_OK) {
        pthread_mutex_lock(&s->wmu);
        for (size_t at = MZ_MARKS_HEAD; !st && at + MZ_MARKS_REC <= len;) {
            uint16_t n = mz_get16(buf + at + 12);
            st = recover_one(s, mz_get64(buf + at), buf + at + MZ_MARKS_REC, n, marker);
            at += MZ_MARKS_REC + n;
        }
        pthread_mutex_unlock(&s->wmu);
        if (!st) st = mmzip_commit(h);
    } else if (st == MMZIP_ESTALE) {
        mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0, "%s: removed the in-place marker file %s, which "
                         "belongs to another file (the archive was replaced or copied since): nothing to refresh",
                         s->path, path);
    }
    free(buf);
    if (st == MMZIP_OK || st == MMZIP_ESTALE) {
        st = MMZIP_OK;
        if (unlink(path) != 0 && errno != ENOENT)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot remove the in-place marker file %s", s->path, path);
    } else if (st == MMZIP_ENOENT) {
        st = MMZIP_OK;
    }
    free(path);
    free(tmp);
    return st;
}

int mz_inplace_recover(mmzip_t *h) {
    mz_store *s = h->s;
    int st = recover_marks(h), found = 0;
    if (st) return st;
    /* Marker entries of an older mmzip. */
    pthread_mutex_lock(&s->wmu);
    for (uint32_t i = 0; i < s->n_committed && !st; i++) {
        mz_entry *me = &s->e[i];
        if (me->name_len <= MZ_EDIT_PREFIX_LEN || memcmp(mz_name(s, me), MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) != 0)
            continue;
        found = 1;
        const uint8_t *mk;
        uint64_t mn;
        char marker[400];
        snprintf(marker, sizeof marker, "the marker entry '%.*s' (of an older mmzip), which named it, was removed",
                 (int)(me->name_len > 300 ? 300 : me->name_len), mz_name(s, me));
        if (mz_entry_bytes(s, me, &mk, &mn) != MMZIP_OK || mn != MZ_EDIT_MARKER_LEN) {
            mz_recovery_note(s, MMZIP_RECOVERY_INPLACE, NULL, 0, 0, 0, "%s: removed the marker entry '%.*s' (of an "
                             "older mmzip), which names no entry (unreadable, or not 12 bytes)", s->path,
                             (int)(me->name_len > 300 ? 300 : me->name_len), mz_name(s, me));
            continue;
        }
        st = recover_one(s, mz_get64(mk), NULL, 0, marker);
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

int mz_inplace_each_marked(mz_store *s, mz_marked_fn fn, void *ctx) {
    int count = 0, r = 0;
    char *path = suffixed(s->path, MZ_MARKS_SUFFIX);
    if (!path) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    uint8_t *buf;
    size_t len;
    int st = read_marks(s, path, &buf, &len);
    if (st == MMZIP_ENOENT || st == MMZIP_ESTALE) st = MMZIP_OK, len = 0; /* none of this archive */
    char how[PATH_MAX + 64];
    snprintf(how, sizeof how, "named in the in-place marker file %s", path);
    free(path);
    if (st) return st;
    for (size_t at = MZ_MARKS_HEAD; at + MZ_MARKS_REC <= len && !r;) {
        uint16_t n = mz_get16(buf + at + 12);
        mz_entry *e = committed_at(s, mz_get64(buf + at));
        if (e && e->method == 0 && e->name_len == n && memcmp(mz_name(s, e), buf + at + MZ_MARKS_REC, n) == 0) {
            count++;
            if (fn) r = fn(s, e, how, ctx);
        }
        at += MZ_MARKS_REC + n;
    }
    free(buf);
    for (uint32_t i = 0; i < s->n_committed && !r; i++) {
        mz_entry *me = &s->e[i];
        if (me->name_len <= MZ_EDIT_PREFIX_LEN || memcmp(mz_name(s, me), MZ_EDIT_PREFIX, MZ_EDIT_PREFIX_LEN) != 0 ||
            (me->mark & (MZ_MARK_SHADOWED | MZ_MARK_BAD)) || me->method != 0 || me->usize != MZ_EDIT_MARKER_LEN ||
            mz_resolve_data(s, me) != MMZIP_OK)
            continue;
        mz_entry *e = committed_at(s, mz_get64(s->map.base + me->data_off));
        if (!e || e->method != 0) continue;
        char legacy[400];
        snprintf(legacy, sizeof legacy, "named by the marker entry '%.*s' (of an older mmzip)",
                 (int)(me->name_len > 300 ? 300 : me->name_len), mz_name(s, me));
        count++;
        if (fn) r = fn(s, e, legacy, ctx);
    }
    return r ? r : count;
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
