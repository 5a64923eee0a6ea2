/*
 * hold.c - a reader's claim on one entry against in-place edits (mmzip_hold), and whether an entry is being
 * edited now.
 *
 * Readers of an entry being edited in place would see bytes change under their pointers. An edit therefore
 * takes the entry's lock exclusive (locks.c: an OFD lock on a byte far past the end of the file, derived from
 * the entry's local-header offset), and a hold takes it shared, on a descriptor of its own so that it also
 * excludes editors in this process. An edit fails with MMZIP_EBUSY while someone holds the entry, a hold
 * fails while it is being edited, or while a hot undo journal of a killed editor awaits recovery (journal.c).
 * Other entries are never written by an edit, so their readers need nothing.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

struct mmzip_hold {
    int fd;
};

int mz_edit_lock_held(mz_store *s, uint64_t lfh_off) {
    if (s->edit && s->edit_lfh_off == lfh_off) return 1;
    return mz_entry_lock_taken(s->fd, lfh_off);
}

int mmzip_hold(mmzip_t *h, const char *key, mmzip_hold_t **out) {
    if (!h || !key || !out) return mz_fail(MMZIP_EINVAL, "mmzip_hold: NULL argument");
    *out = NULL;
    mz_store *s = h->s;
    pthread_rwlock_rdlock(&s->rw);
    mz_entry *e = mz_lookup(s, key, strlen(key), 0);
    uint64_t lfh_off = e ? e->lfh_off : 0;
    mz_entry copy;
    if (e) copy = *e;
    pthread_rwlock_unlock(&s->rw);
    if (!e) return mz_fail(MMZIP_ENOTFOUND, "%s: no entry '%s'", s->path, key);
    int fd = open(s->path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot open it to hold '%s'", s->path, key);
    if (mz_lock_entry(fd, 0, lfh_off) == 1) {
        close(fd);
        return mz_fail(MMZIP_EBUSY, "%s: entry '%s' is being written in place by another process or handle; "
                       "it can be read again once that writer closes it (HDF5's own file locking refuses a "
                       "reader of a file open for writing the same way)", s->path, key);
    }
    char *jpath = mz_journal_path(s->path);
    int jfd = jpath ? open(jpath, O_RDONLY | O_CLOEXEC) : -1;
    free(jpath);
    if (jfd >= 0) {
        mz_journal_head jh;
        int hot = mz_journal_read_head(jfd, &jh) && jh.lfh_off == lfh_off && jh.size == copy.usize &&
                  jh.crc == copy.crc && mz_journal_has_record(jfd, &jh);
        close(jfd);
        if (hot) {
            close(fd);
            return mz_fail(MMZIP_EBUSY, "%s: entry '%s' was being written in place when its writer was killed; its "
                           "committed version is restored by `mmzip recover %s` (or any writable open)", s->path,
                           key, s->path);
        }
    }
    mmzip_hold_t *hd = malloc(sizeof *hd);
    if (!hd) {
        close(fd);
        return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    }
    hd->fd = fd;
    *out = hd;
    return MMZIP_OK;
}

void mmzip_release(mmzip_hold_t *hold) {
    if (!hold) return;
    close(hold->fd);
    free(hold);
}
