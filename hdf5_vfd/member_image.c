/*
 * member_image.c - an HDF5 file that is one member of an archive: its committed version, how a write session
 * changes it, and publishing the changes.
 *
 * HDF5 rewrites its metadata in place (superblock, object headers, B-trees, heaps) and gives no write
 * ordering, so the committed bytes cannot simply be overwritten: a crash would leave a half-updated file.
 * Two ways are used, the first whenever it can be:
 *
 *   In place (a journaled mmzip_edit_*, docs/protocol.md "In-place edits"). The first write of a session
 *   opens the committed entry for editing: the core copies each committed 4 KiB block to an undo journal beside the
 *   archive before its first change, writes HDF5's bytes where they belong, and grows the entry into the
 *   room after it (for the last entry, by moving the directory). A publish rewrites the entry's CRC and
 *   sizes with one commit. A session costs what HDF5 writes plus the pre-images of the blocks it changes,
 *   not the member's size. The edit lasts from the first write after an open or a flush to the next flush.
 *   Readers of the member hold it (mmzip_hold) while open, which makes an edit impossible while they read
 *   (the session then drafts) and their open impossible while an edit is under way ("being written", as
 *   HDF5's own file locking says); between flushes they open the last committed state.
 *
 *   A new version (the draft). When the member cannot be edited in place - a reader holds it, it is
 *   compressed or not written by mmzip, another member of the archive is being edited, or it must grow and
 *   another entry follows it - the session reserves a new entry for the member at the end of the archive
 *   (mmzip_reserve), copies the current bytes into it and writes there; a publish seals it (mmzip_patch)
 *   and commits. The draft is reserved with room to grow (geometric), grown in place while nothing follows
 *   it, and moved to a larger reservation when something does. The next session edits that new version in
 *   place: a member that must keep moving is moved O(log n) times over n sessions of growth.
 *
 * Bytes at or past the end of file are kept zero, so growing the file never exposes stale bytes.
 */
#include "h5mz_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Page-aligned member data: HDF5 addresses map onto pages of the mapping one to one. */
#define DRAFT_ALIGNMENT 4096u
#define DRAFT_MIN_CAPACITY (1ull << 20)
#define DRAFT_GRANULE (64ull << 10)
#define INPLACE_GRANULE (1ull << 20)

/* Room for half as much again: HDF5 files grow in many small steps, and a reservation that must grow
 * costs a directory relocation in the archive, so growth is geometric. */
static uint64_t capacity_for(uint64_t need) {
    uint64_t cap = need + need / 2;
    if (cap < DRAFT_MIN_CAPACITY) cap = DRAFT_MIN_CAPACITY;
    return (cap + DRAFT_GRANULE - 1) / DRAFT_GRANULE * DRAFT_GRANULE;
}

/* Faulting a shared file mapping in one page at a time costs more than copying the page; one madvise
 * populates the whole range (Linux >= 5.14; elsewhere the copy simply faults). */
static void prefault_for_writing(void *view, uint64_t len) {
#ifdef MADV_POPULATE_WRITE
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), lo = (uintptr_t)view / page * page;
    uintptr_t hi = (uintptr_t)view + len;
    (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
    (void)view;
    (void)len;
#endif
}

/* A member moved because it outgrew its place: double, so that moves are O(log n) over n sessions. */
static uint64_t room_capacity_for(uint64_t need) {
    uint64_t cap = 2 * need;
    if (cap < DRAFT_MIN_CAPACITY) cap = DRAFT_MIN_CAPACITY;
    return (cap + DRAFT_GRANULE - 1) / DRAFT_GRANULE * DRAFT_GRANULE;
}

static mmzip_t *handle_of(const h5mz_member *m) { return h5mz_archive_handle(m->archive); }
static const char *path_of(const h5mz_member *m) { return h5mz_archive_path(m->archive); }

typedef struct {
    const char *name;
    int found, alive;
} unfinished_probe;

static int probe_unfinished(const mmzip_unfinished_edit *u, void *ctx) {
    unfinished_probe *p = ctx;
    if (u->kind == MMZIP_UNFINISHED_INPLACE && strcmp(u->key, p->name) == 0) {
        p->found = 1;
        p->alive = u->writer_alive;
    }
    return 0;
}

/* A member modified in place through a writable view (MMZIP_EDIT_MAP) by a writer that was killed, or that is
 * at work now, holds bytes no commit vouches for (its CRC is stale): HDF5 would read a file that may be half
 * updated. Refused, saying what to do; a writable open of the archive has repaired it already. (A member with
 * an undo journal pending is refused by the core itself, at mmzip_get.) */
static int refuse_unfinished_inplace(mmzip_t *h, const char *path, const char *name) {
    unfinished_probe p = {name, 0, 0};
    int st = mmzip_unfinished_edits(h, probe_unfinished, &p);
    if (st < 0) return h5mz_fail_core(st, "%s: member '%s'", path, name);
    if (!p.found) return MMZIP_OK;
    if (p.alive)
        return h5mz_fail(MMZIP_EBUSY, "%s: member '%s' is being modified in place by a writer now; it can be "
                         "opened once that writer has committed and closed it", path, name);
    return h5mz_fail(MMZIP_EBUSY, "%s: member '%s' cannot be opened: it was being modified in place when its "
                     "writer was killed (its in-place marker says so), so its bytes may be half updated and its "
                     "CRC-32 is stale; run 'mmzip recover %s' (or open the archive writable), which keeps its "
                     "bytes as that writer left them and recomputes the CRC", path, name, path);
}

int h5mz_member_open(h5mz_member *m, h5mz_archive *archive, const char *name, unsigned how) {
    memset(m, 0, sizeof *m);
    mmzip_t *h = h5mz_archive_handle(archive);
    const char *path = h5mz_archive_path(archive);
    int writing = (how & H5MZ_OPEN_WRITE) != 0;
    if (writing && !h5mz_archive_writable(archive))
        return h5mz_fail(MMZIP_EREADONLY, "%s: member '%s': the archive is open read-only", path, name);
    mmzip_entry_info info;
    int st = mmzip_stat(h, name, &info);
    if (st && st != MMZIP_ENOTFOUND) return h5mz_fail_core(st, "%s: member '%s'", path, name);
    int exists = st == MMZIP_OK;
    if (!exists && !(how & H5MZ_OPEN_CREATE))
        return h5mz_fail(MMZIP_ENOTFOUND, "%s: the archive has no member '%s'", path, name);
    /* A name the archive cannot take fails its first write, long after the open succeeded, and h5py then
     * crashed closing the file (an outside review): refused here. */
    if (!exists && (st = mmzip_check_name(h, name)) != MMZIP_OK)
        return h5mz_fail_core(st, "%s: cannot create member '%s'", path, name);
    if (exists && (how & H5MZ_OPEN_EXCLUSIVE))
        return h5mz_fail(H5MZ_EEXIST, "%s: member '%s' already exists%s", path, name,
                         info.method != 0 ? " (it is compressed, which the mmzip driver opens read-only)" : "");
    int keep_bytes = exists && !(how & H5MZ_OPEN_TRUNCATE);
    if (keep_bytes && writing && info.method != 0)
        return h5mz_fail(MMZIP_EREADONLY, "%s: member '%s' is compressed (method %u); the mmzip driver reads "
                         "compressed members (decoded once into memory) but cannot write them: open it "
                         "read-only, or store it uncompressed (extract it, then `mmzip put %s %s FILE`)",
                         path, name, (unsigned)info.method, path, name);
    if (keep_bytes && !h5mz_archive_writable(archive)) {
        st = refuse_unfinished_inplace(h, path, name);
        if (st) return st;
    }
    m->archive = archive;
    m->how = how;
    if (!(m->name = strdup(name))) return h5mz_fail(MMZIP_ENOMEM, "%s: out of memory", path);
    if (keep_bytes && writing) {
        /* A write session's next version of the member is sealed with a CRC-32 of its own, computed over what it
         * holds then: damaged bytes taken into it (a draft copies them, a growth moves them) would pass every
         * check from then on. So the member is checked before anything is written. */
        st = mmzip_verify(h, name);
        if (st)
            return h5mz_fail_core(st, "%s: member '%s' cannot be opened for writing: its bytes do not match its "
                                  "CRC-32 (damaged), and a new version would carry the damage under a CRC-32 of its "
                                  "own; restore the member from a copy", path, name);
    }
    if (keep_bytes) {
        const void *data;
        uint64_t size;
        st = mmzip_get(h, name, &data, &size);
        if (st) {
            free(m->name);
            memset(m, 0, sizeof *m);
            return h5mz_fail_core(st, "%s: cannot read member '%s'", path, name);
        }
        /* Copied out rather than looked at: see same_as_committed. */
        uint8_t magic[4] = {0};
        if (size >= sizeof magic) mmzip_copy(h, magic, data, sizeof magic);
        const char *kind = h5mz_netcdf3_kind(magic, size >= sizeof magic ? sizeof magic : 0);
        if (kind) {
            free(m->name);
            memset(m, 0, sizeof *m);
            return h5mz_fail(MMZIP_EUNSUPPORTED, "%s: member '%s' is a %s file, not HDF5 (netCDF-4): the HDF5 "
                             "driver cannot serve it; extract it (`mmzip cat %s %s > FILE`) and open that file",
                             path, name, kind, path, name);
        }
        m->committed = data;
        m->committed_size = size;
        m->eof = size;
        m->deflated = info.method != 0;
    } else {
        /* A created or truncated member is a new version even if HDF5 writes nothing into it. */
        m->unpublished = writing;
    }
    if (keep_bytes && !writing) {
        st = mmzip_hold(h, name, &m->hold);
        if (st) {
            free(m->name);
            memset(m, 0, sizeof *m);
            return h5mz_fail_core(st, "%s: member '%s' cannot be opened for reading", path, name);
        }
    }
    if (writing) {
        h5mz_archive_claim_writer(archive);
        m->claimed = 1;
    }
    return MMZIP_OK;
}

void h5mz_member_read(const h5mz_member *m, uint64_t addr, size_t size, void *buf) {
    const uint8_t *src = m->draft ? m->draft : m->inplace ? m->inplace : m->committed;
    uint64_t valid = m->draft ? m->eof
                     : m->inplace ? (m->eof < m->inplace_room ? m->eof : m->inplace_room)
                                  : (m->eof < m->committed_size ? m->eof : m->committed_size);
    size_t n = 0;
    if (src && addr < valid) n = valid - addr < size ? (size_t)(valid - addr) : size;
    /* Not memcpy: HDF5 often reads a whole dataset into memory the application has just allocated, and the
     * core fills fresh memory faster (its pages made at once, large copies shared by threads). */
    if (n) mmzip_copy(h5mz_archive_handle(m->archive), buf, src + addr, n);
    if (n < size) memset((uint8_t *)buf + n, 0, size - n);
}

/* Reserves the draft, at least `need` bytes, and copies the committed bytes into it. */
static int begin_draft(h5mz_member *m, uint64_t need) {
    uint64_t keep = m->committed ? (m->eof < m->committed_size ? m->eof : m->committed_size) : 0;
    uint64_t cap = capacity_for(need > m->eof ? need : m->eof);
    void *view;
    int st = mmzip_reserve(handle_of(m), m->name, cap, DRAFT_ALIGNMENT, 0, &view);
    if (st)
        return h5mz_fail_core(st, "%s: member '%s': cannot reserve %llu bytes for its new version", path_of(m),
                              m->name, (unsigned long long)cap);
    if (keep) {
        prefault_for_writing(view, keep);
        memcpy(view, m->committed, (size_t)keep);
    }
    m->draft = view;
    m->draft_capacity = cap;
    m->draft_room = 0;
    m->eof = keep;
    return MMZIP_OK;
}

/* Moves the draft to a new, larger reservation at the end of the archive (see the file comment). */
static int move_draft(h5mz_member *m, uint64_t cap) {
    mmzip_t *h = handle_of(m);
    uint64_t keep = m->eof;
    uint8_t *aside = keep ? malloc((size_t)keep) : NULL;
    if (keep && !aside) return h5mz_fail(MMZIP_ENOMEM, "%s: member '%s': out of memory", path_of(m), m->name);
    if (keep) memcpy(aside, m->draft, (size_t)keep);
    int st = mmzip_unreserve(h, m->name);
    if (st) {
        free(aside);
        return h5mz_fail_core(st, "%s: member '%s': cannot move its new version", path_of(m), m->name);
    }
    m->draft = NULL;
    m->draft_capacity = 0;
    void *view;
    st = m->draft_room ? mmzip_reserve(h, m->name, cap, DRAFT_ALIGNMENT, MMZIP_RESERVE_ROOM, &view)
                       : mmzip_reserve(h, m->name, cap, DRAFT_ALIGNMENT, 0, &view);
    if (st) {
        free(aside);
        /* The draft is lost; the member reads as its last committed version again. */
        m->eof = m->committed ? m->committed_size : 0;
        return h5mz_fail_core(st, "%s: member '%s': cannot reserve %llu bytes for its new version (its changes "
                              "since the last flush are lost)", path_of(m), m->name, (unsigned long long)cap);
    }
    if (keep) {
        prefault_for_writing(view, keep);
        memcpy(view, aside, (size_t)keep);
    }
    free(aside);
    m->draft = view;
    m->draft_capacity = cap;
    return MMZIP_OK;
}

static int ensure_capacity(h5mz_member *m, uint64_t need) {
    if (need <= m->draft_capacity) return MMZIP_OK;
    uint64_t cap = m->draft_room ? room_capacity_for(need) : capacity_for(need);
    void *view;
    int st = mmzip_reserve_resize(handle_of(m), m->name, cap, &view);
    if (st == MMZIP_EBUSY) return move_draft(m, cap); /* another member's draft or a commit is in the way */
    if (st)
        return h5mz_fail_core(st, "%s: member '%s': cannot grow its new version to %llu bytes", path_of(m),
                              m->name, (unsigned long long)cap);
    if (view != m->draft)
        return h5mz_fail(MMZIP_ECORRUPT, "%s: member '%s': the reservation moved when it grew", path_of(m),
                         m->name);
    m->draft_capacity = cap;
    return MMZIP_OK;
}

/* Starts editing the committed member in place. MMZIP_OK if it is, 1 if the member must take the draft way
 * instead (the core says why not; nothing was changed), or an error. */
static int begin_inplace(h5mz_member *m) {
    if (!m->committed || m->deflated || m->sealed) return 1;
    void *view;
    uint64_t room;
    int st = mmzip_edit_begin(handle_of(m), m->name, 0, &m->edit);
    if (st == MMZIP_EBUSY || st == MMZIP_EUNSUPPORTED) return 1;
    if (!st && (st = mmzip_edit_map(m->edit, &view, NULL, &room)) != MMZIP_OK) {
        (void)mmzip_edit_end(m->edit);
        m->edit = NULL;
    }
    if (st) return h5mz_fail_core(st, "%s: member '%s': cannot open it for editing", path_of(m), m->name);
    m->inplace = view;
    m->inplace_room = room;
    return MMZIP_OK;
}

/* Leaves in-place editing for a draft: copies the member as HDF5 sees it now into a new version, then
 * lets the core put the committed entry back as it was. */
static int inplace_to_draft(h5mz_member *m, uint64_t need) {
    uint64_t keep = m->eof;
    /* Twice what it needs, the rest kept as room after it once published: the member grows in place into
     * that room in the sessions that follow, and moves again only when it has doubled. */
    uint64_t cap = room_capacity_for(need > keep ? need : keep);
    void *view;
    int st = mmzip_reserve(handle_of(m), m->name, cap, DRAFT_ALIGNMENT, MMZIP_RESERVE_ROOM, &view);
    if (st)
        return h5mz_fail_core(st, "%s: member '%s': cannot reserve %llu bytes for its new version", path_of(m),
                              m->name, (unsigned long long)cap);
    if (keep) {
        prefault_for_writing(view, keep);
        memcpy(view, m->inplace, (size_t)keep);
    }
    m->draft = view;
    m->draft_capacity = cap;
    m->draft_room = 1;
    m->inplace = NULL;
    m->inplace_room = 0;
    st = mmzip_edit_end(m->edit);
    m->edit = NULL;
    if (st)
        return h5mz_fail_core(st, "%s: member '%s': cannot restore its committed version after moving it",
                              path_of(m), m->name);
    return MMZIP_OK;
}

/* Makes the in-place member `need` bytes long at least; moves it to a draft if it cannot grow there. */
static int inplace_room(h5mz_member *m, uint64_t need) {
    if (need <= m->inplace_room) return MMZIP_OK;
    /* A little ahead of the need: growing the last entry moves the directory out of the way, and the core
     * already leaves a gap that grows with the session (so the moves are logarithmically few); asking for
     * half the member again would make every session extend the file by that much and cut it back. */
    uint64_t cap = (need + INPLACE_GRANULE - 1) / INPLACE_GRANULE * INPLACE_GRANULE;
    int st = mmzip_edit_grow(m->edit, cap);
    if (st == MMZIP_ETOOBIG) st = mmzip_edit_grow(m->edit, need), cap = need;
    if (st == MMZIP_ETOOBIG) return inplace_to_draft(m, need);
    if (st) return h5mz_fail_core(st, "%s: member '%s': cannot grow it to %llu bytes", path_of(m), m->name,
                                  (unsigned long long)need);
    m->inplace_room = cap;
    return MMZIP_OK;
}

static int inplace_write(h5mz_member *m, uint64_t addr, size_t size, const void *buf) {
    int st = mmzip_edit_write(m->edit, addr, buf, size);
    if (st) return h5mz_fail_core(st, "%s: member '%s': cannot write %zu bytes at %llu", path_of(m), m->name,
                                  size, (unsigned long long)addr);
    return MMZIP_OK;
}

/* 1 if the committed bytes at [addr, addr + size) equal buf. Copied out with mmzip_copy, which reads a
 * writer's small copies with pread: a session that only rewrites unchanged metadata touches no page of the
 * mapping, whose first touches in a new process cost more than the reads (see mmzip_copy in mmzip.h). */
static int same_as_committed(const h5mz_member *m, uint64_t addr, size_t size, const void *buf) {
    uint8_t piece[16384];
    for (size_t done = 0; done < size;) {
        size_t k = size - done < sizeof piece ? size - done : sizeof piece;
        mmzip_copy(handle_of(m), piece, m->committed + addr + done, k);
        if (memcmp(piece, (const uint8_t *)buf + done, k) != 0) return 0;
        done += k;
    }
    return 1;
}

int h5mz_member_write(h5mz_member *m, uint64_t addr, size_t size, const void *buf) {
    if (!m->claimed)
        return h5mz_fail(MMZIP_EREADONLY, "%s: member '%s' is open read-only", path_of(m), m->name);
    if (size == 0) return MMZIP_OK;
    if (addr > UINT64_MAX - size)
        return h5mz_fail(MMZIP_EINVAL, "%s: member '%s': write past the largest address", path_of(m), m->name);
    uint64_t end = addr + size;
    int st;
    if (!m->draft && !m->inplace) {
        /* HDF5 rewrites unchanged metadata (the superblock at close, for one): identical bytes need no new
         * version of the member. */
        if (m->committed && end <= m->eof && end <= m->committed_size && same_as_committed(m, addr, size, buf))
            return MMZIP_OK;
        st = begin_inplace(m);
        if (st < 0) return st;
        if (st > 0) {
            st = begin_draft(m, end);
            if (st) return st;
        }
    }
    if (m->inplace) {
        st = inplace_room(m, end);
        if (st) return st;
    }
    if (m->inplace) {
        st = inplace_write(m, addr, size, buf);
        if (st == MMZIP_ETOOBIG) {
            /* Its room was counted while it was the archive's last entry, and another member's new version
             * has been placed right after it since: it moves to a new version of its own (nothing of this
             * write was done). */
            st = inplace_to_draft(m, end);
            if (st) return st;
        } else {
            if (st) return st;
            if (end > m->eof) m->eof = end;
            m->unpublished = 1;
            return MMZIP_OK;
        }
    }
    st = ensure_capacity(m, end);
    if (st) return st;
    memcpy(m->draft + addr, buf, size);
    if (end > m->eof) m->eof = end;
    m->unpublished = 1;
    return MMZIP_OK;
}

int h5mz_member_set_eof(h5mz_member *m, uint64_t eof) {
    if (eof == m->eof) return MMZIP_OK;
    if (!m->claimed)
        return h5mz_fail(MMZIP_EREADONLY, "%s: member '%s' is open read-only", path_of(m), m->name);
    int st;
    if (!m->draft && !m->inplace) {
        /* Nothing was written: bytes past HDF5's end of allocation are harmless (HDF5 accepts trailing
         * bytes), and dropping them is not worth a new version of the member. */
        if (eof < m->eof) return MMZIP_OK;
        st = begin_inplace(m);
        if (st < 0) return st;
        if (st > 0) {
            st = begin_draft(m, eof);
            if (st) return st;
        }
    }
    if (m->inplace) {
        st = inplace_room(m, eof);
        if (st) return st;
    }
    if (m->inplace) {
        /* Bytes cut off are zeroed, so that growing again shows zeros as a fresh file would. */
        static const uint8_t zeros[65536];
        for (uint64_t at = eof; at < m->eof;) {
            size_t n = m->eof - at < sizeof zeros ? (size_t)(m->eof - at) : sizeof zeros;
            st = inplace_write(m, at, n, zeros);
            if (st) return st;
            at += n;
        }
        m->eof = eof;
        m->unpublished = 1;
        return MMZIP_OK;
    }
    st = ensure_capacity(m, eof);
    if (st) return st;
    if (eof < m->eof) memset(m->draft + eof, 0, (size_t)(m->eof - eof));
    m->eof = eof;
    m->unpublished = 1;
    return MMZIP_OK;
}

int h5mz_member_publish(h5mz_member *m) {
    if (!m->unpublished) return MMZIP_OK;
    mmzip_t *h = handle_of(m);
    int st;
    if (m->inplace) {
        st = mmzip_edit_publish(m->edit, m->eof);
        if (st == MMZIP_ETOOBIG) {
            /* It grew past the room it has since another member's new version was placed after it (above). */
            st = inplace_to_draft(m, m->eof);
            if (st) return st;
            return h5mz_member_publish(m);
        }
        if (st)
            return h5mz_fail_core(st, "%s: member '%s': cannot commit its changes (the archive keeps the previous "
                                  "version)", path_of(m), m->name);
        m->committed = m->inplace;
        m->committed_size = m->eof;
        m->unpublished = 0;
        /* Between flushes the member is at a committed state: the edit lock is let go, so that a reader in
         * another process may open it now (the next write edits again, or drafts if a reader holds it). */
        m->inplace = NULL;
        m->inplace_room = 0;
        st = mmzip_edit_end(m->edit);
        m->edit = NULL;
        if (st) return h5mz_fail_core(st, "%s: member '%s': cannot end its in-place edit", path_of(m), m->name);
        return MMZIP_OK;
    }
    if (!m->draft && !m->sealed) {
        st = begin_inplace(m);
        if (st < 0) return st;
        if (st == 0) return h5mz_member_publish(m);
        st = begin_draft(m, m->eof);
        if (st) return st;
    }
    if (m->draft) {
        st = mmzip_patch(h, m->name, m->eof);
        if (st)
            return h5mz_fail_core(st, "%s: member '%s': cannot seal its new version", path_of(m), m->name);
        m->committed = m->draft;
        m->committed_size = m->eof;
        m->deflated = 0;
        m->draft = NULL;
        m->draft_capacity = 0;
        m->draft_room = 0;
        m->sealed = 1;
    }
    st = mmzip_commit(h);
    if (st)
        return h5mz_fail_core(st, "%s: member '%s': cannot commit its new version (the archive keeps the previous "
                              "one)", path_of(m), m->name);
    m->sealed = 0;
    m->unpublished = 0;
    /* Read on through the read-only mapping of the committed entry, like every other reader. */
    const void *data;
    uint64_t size;
    if (mmzip_get(h, m->name, &data, &size) == MMZIP_OK && size == m->committed_size) m->committed = data;
    return MMZIP_OK;
}

int h5mz_member_close(h5mz_member *m) {
    int st = MMZIP_OK;
    if (m->claimed && m->unpublished) {
        st = h5mz_member_publish(m);
        /* Whatever could not be published must not reach the archive when its handle closes (close commits
         * pending entries): drop it, leaving the member at its last commit. An open draft goes alone; a
         * sealed version whose commit failed can only go with everything pending, which would destroy the
         * drafts of other members open for writing, so then it stays (a later commit publishes it whole). */
        if (st && m->draft) mmzip_unreserve(handle_of(m), m->name);
        else if (st && !m->inplace && h5mz_archive_writers(m->archive) == 1) mmzip_rollback(handle_of(m));
    }
    if (m->inplace) {
        /* What was not published is undone: the member stays at its last commit. */
        int est = mmzip_edit_end(m->edit);
        m->edit = NULL;
        if (est && !st) st = h5mz_fail_core(est, "%s: member '%s': cannot end its in-place edit", path_of(m), m->name);
    }
    mmzip_release(m->hold);
    if (m->claimed) h5mz_archive_disclaim_writer(m->archive);
    free(m->name);
    memset(m, 0, sizeof *m);
    return st;
}
