/*
 * recovery.c - repairing, at a writable open, what a killed writer left behind.
 *
 * Three things can be found (docs/protocol.md lists every crash state):
 *   1. Bytes after the last consistent trailer (a commit or relocation that was cut short, zeros from a
 *      file extended before a power loss). The trailer was found by scanning back; they are cut off.
 *   2. A directory that is not where it belongs (relocated, or forwarded, when the writer died): the next
 *      commit writes it back behind the last entry.
 *   3. A torn tail written by another implementation of the seed protocol (DataAxesFormats), which
 *      publishes the directory before the data: the trailing entries whose local header is missing or
 *      whose CRC does not match are rolled back, as that protocol prescribes.
 *   4. Beside the archive, the named temporary file of a pack or a creation killed between naming it and
 *      renaming it over the archive (<archive>.mmzip-pack-<pid>, <archive>.mmzip-new-<pid>). It is removed
 *      once its process is gone.
 * Recovery is itself crash-safe: it is made of the same steps as a commit.
 */
#include "internal.h"

#include <dirent.h>
#include <limits.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The physically last entry that is still live (not rolled back), or MZ_NONE. */
static uint32_t last_live(mz_store *s) {
    uint32_t last = MZ_NONE;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        if (s->e[i].mark & MZ_MARK_SHADOWED) continue;
        if (last == MZ_NONE || s->e[i].lfh_off > s->e[last].lfh_off) last = i;
    }
    return last;
}

static int entry_intact(mz_store *s, mz_entry *e) {
    if (mz_resolve_data(s, e) != MMZIP_OK) return 0;
    if (e->method != 0 || (e->gp_flags & MZ_FLAG_ENCRYPTED) || mz_written_by_mmzip(s, e)) return 1;
    return mz_crc32(0, s->map.base + e->data_off, (size_t)e->csize) == e->crc;
}

static uint32_t roll_back_torn_tail(mz_store *s) {
    uint32_t rolled = 0;
    uint64_t lowest = UINT64_MAX;
    for (;;) {
        uint32_t i = last_live(s);
        if (i == MZ_NONE) break;
        mz_entry *e = &s->e[i];
        if (entry_intact(s, e)) {
            e->mark &= (uint8_t)~MZ_MARK_VERIFY;
            break;
        }
        e->mark = (uint8_t)((e->mark | MZ_MARK_SHADOWED) & ~MZ_MARK_BAD);
        s->n_shadowed++;
        rolled++;
        lowest = e->lfh_off;
    }
    if (rolled) {
        uint32_t i = last_live(s);
        uint64_t end = lowest;
        if (i != MZ_NONE && mz_data_end_of(s, &s->e[i], &end) != MMZIP_OK) end = lowest;
        s->data_end = s->pending_end = end;
    }
    return rolled;
}

/* Foreign archives with bytes prepended: rewrite every record with absolute offsets, so that relocated
 * directories (which cannot rely on "the directory ends where the end records begin") stay correct. */
static int absolutize(mz_store *s) {
    uint8_t *img = NULL;
    uint64_t len = 0, cap = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        mz_entry *e = &s->e[i];
        size_t rl;
        uint8_t *rec = mz_reencode_cdh(s->cd + e->cd_rec, e->cd_rec_len, e->lfh_off, e->csize, e->usize, &rl);
        if (!rec) {
            free(img);
            return mz_fail(MMZIP_ENOMEM, "%s: cannot re-encode the directory record of '%.*s'", s->path,
                           (int)e->name_len, mz_name(s, e));
        }
        if (len + rl > cap) {
            cap = (len + rl) * 2;
            uint8_t *p = realloc(img, cap);
            if (!p) {
                free(rec);
                free(img);
                return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            }
            img = p;
        }
        memcpy(img + len, rec, rl);
        free(rec);
        e->cd_rec = len;
        e->cd_rec_len = (uint32_t)rl;
        len += rl;
    }
    free(s->cd);
    s->cd = img;
    s->cd_len = s->cd_committed_len = s->cd_cap = len;
    s->concat = 0;
    return mz_table_rebuild(s);
}

/* The pid in a temporary name "<base><marker><pid>" beside the archive, or 0 if the name is not one. */
static pid_t temp_owner(const char *name, const char *base, size_t base_len, const char *marker) {
    size_t mlen = strlen(marker);
    if (strncmp(name, base, base_len) != 0 || strncmp(name + base_len, marker, mlen) != 0) return 0;
    const char *digits = name + base_len + mlen;
    if (!*digits) return 0;
    long pid = 0;
    for (const char *p = digits; *p; p++) {
        if (*p < '0' || *p > '9' || pid > 4194304) return 0;
        pid = pid * 10 + (*p - '0');
    }
    return (pid_t)pid;
}

/* Best effort: a leftover costs disk space, never correctness, so failures are ignored. A file whose pid
 * is alive (or reused) is left alone: it may be a pack or creation still at work. */
static void remove_stale_temps(const char *archive_path) {
    char dir[PATH_MAX];
    if (snprintf(dir, sizeof dir, "%s", archive_path) >= (int)sizeof dir) return;
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : archive_path;
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    size_t base_len = strlen(base);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        pid_t pid = temp_owner(de->d_name, base, base_len, ".mmzip-pack-");
        if (!pid) pid = temp_owner(de->d_name, base, base_len, ".mmzip-new-");
        if (!pid || pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH) continue;
        (void)unlinkat(dirfd(d), de->d_name, 0);
    }
    closedir(d);
}

int mz_recover_locked(mz_store *s) {
    remove_stale_temps(s->path);
    /* An entry edited in place by a writer that died is put back first: the rest sees committed bytes. */
    int st = mz_edit_recover(s);
    if (st) return st;
    uint64_t trailer_end = s->trailer_key[0];
    int torn = trailer_end < s->file_size;
    if (s->concat) {
        st = absolutize(s);
        if (st) return st;
        s->compact = 0;
    }
    uint32_t rolled = roll_back_torn_tail(s);
    s->rolled_back = rolled;
    /* A writer killed right after its commit point may not have neutralized a dead first header. */
    if (!rolled && !torn && s->compact) return mz_neutralize_dead_start(s);
    uint64_t before = s->file_size;
    if (!rolled && torn && s->cd_adjacent && s->cd_pos == s->data_end) {
        /* [entries][directory][trailer][debris]: cutting the debris off is the whole repair. */
        st = mz_io_truncate(s, trailer_end, "recover.truncate");
        if (st) return st;
        st = mz_io_barrier(s, 1, "recover.sync");
        if (st) return st;
        s->file_size = trailer_end;
        s->compact = 1;
        st = mz_neutralize_dead_start(s);
        if (st) return st;
    } else {
        st = mz_commit_locked(s, 1);
        if (st) return st;
    }
    s->recovered_bytes = before > s->file_size ? before - s->file_size : 0;
    if (rolled) {
        /* What was rolled back is gone for good; the rest stays as it was. */
        s->rolled_back = rolled;
    }
    return MMZIP_OK;
}

int mmzip_recover(const char *path, uint64_t *discarded) {
    mmzip_t *h;
    if (discarded) *discarded = 0;
    int st = mmzip_open(path, "r+", NULL, &h);
    if (st) return st;
    mz_store *s = h->s;
    pthread_mutex_lock(&s->wmu);
    uint64_t before = s->file_size + s->recovered_bytes;
    /* Beyond what every writable open repairs: move a relocated directory back behind the data. */
    st = mz_commit_locked(s, 1);
    uint64_t after = s->file_size;
    pthread_mutex_unlock(&s->wmu);
    int st2 = mmzip_close(h);
    if (discarded && before > after) *discarded = before - after;
    return st ? st : st2;
}
