/*
 * pack.c - rewriting an archive without dead space.
 *
 * The live entries are copied, in directory order, into a new file: stored entries re-aligned, compressed
 * ones byte for byte, after the bytes that precede the archive (a self-extractor's stub), kept as they are.
 * The new file is fsynced and renamed over the old one (or written to out_path), so a crash leaves one or the
 * other, whole. The writer lock on the old file is held throughout, so no commit can slip in and be lost.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    int fd;
    uint64_t off;
    const char *name;
} out_file;

static int out_write(out_file *o, const void *p, size_t len) {
    const uint8_t *b = p;
    while (len) {
        ssize_t w = pwrite(o->fd, b, len, (off_t)o->off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return mz_fail_errno(MMZIP_EIO, errno, "%s: cannot write the packed archive", o->name);
        }
        b += w;
        len -= (size_t)w;
        o->off += (uint64_t)w;
    }
    return MMZIP_OK;
}

static int copy_entries(mmzip_t *h, out_file *o, uint32_t alignment, uint8_t **cd_out, uint64_t *cd_len,
                        uint64_t *count) {
    mz_store *s = h->s;
    uint64_t total = 0, done = 0;
    if (h->progress)
        for (uint32_t i = 0; i < s->n_committed; i++) total += s->e[i].csize;
    uint64_t cap = 4096, len = 0, n = 0;
    uint8_t *cd = malloc(cap);
    if (!cd) return mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
    int st = MMZIP_OK;
    for (uint32_t i = 0; i < s->n_committed; i++) {
        mz_entry *e = &s->e[i];
        /* Superseded duplicates go; an entry with no usable name is kept (other readers read it). */
        if (!(e->mark & (MZ_MARK_NONAME | MZ_MARK_BAD)) && mz_lookup(s, mz_name(s, e), e->name_len, 0) != e) continue;
        st = mz_resolve_data(s, e);
        if (st) break;
        if ((e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION)) && (e->gp_flags & MZ_FLAG_DATA_DESCRIPTOR)) {
            /* Traditional encryption checks the password against the high byte of the DOS time when the entry has
             * a data descriptor, of the CRC-32 otherwise: the header pack writes (no descriptor) would make every
             * password wrong. */
            st = mz_fail(MMZIP_EUNSUPPORTED, "%s: entry '%.*s' is encrypted and has a data descriptor: pack would "
                         "rewrite its header so that no password opens it; the archive was not changed (extract "
                         "and re-add it, or repack with 'zip')", s->path, (int)e->name_len, mz_name(s, e));
            break;
        }
        const uint8_t *rec = s->cd + e->cd_rec;
        mz_header_fields f;
        f.flags = (uint16_t)((e->gp_flags & ~MZ_FLAG_DATA_DESCRIPTOR) | MZ_FLAG_UTF8);
        if (!(e->gp_flags & MZ_FLAG_UTF8)) f.flags &= (uint16_t)~MZ_FLAG_UTF8; /* keep the name's encoding */
        f.method = e->method;
        mz_stamp stamp;
        mz_stamp_of_cdh(&stamp, rec);
        f.dos_time = stamp.dos_time;
        f.dos_date = stamp.dos_date;
        f.crc = e->crc;
        f.csize = e->csize;
        f.usize = e->usize;
        f.external_attr = stamp.external_attr;
        f.mtime = stamp.mtime;
        uint32_t a = e->method == 0 ? alignment : 1;
        uint32_t pad = mz_align_padding(o->off, e->name_len, a);
        size_t hlen = mz_our_lfh_size(e->name_len, pad);
        uint8_t *hdr = malloc(hlen);
        if (!hdr) {
            st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
            break;
        }
        uint64_t lfh_off = o->off;
        mz_write_lfh_ex(hdr, &f, mz_name(s, e), e->name_len, a, pad);
        st = out_write(o, hdr, hlen);
        free(hdr);
        /* A stored entry's bytes are checked as they are copied: the packed archive must not launder a
         * damaged entry into one that looks as trusted as the rest (its CRC would still be wrong, but the
         * original, which `mmzip check` names, is gone). Compressed entries are copied byte for byte, CRC
         * and all, unchecked: inflating every one would cost what pack is meant to avoid; their readers
         * check them. Entries kept only because mmzip drops nothing (torn, unnamed) are copied as they are. */
        /* Encrypted entries too: their CRC-32 is the plain text's (an outside review: pack called an intact
         * encrypted entry damaged). */
        int check = e->method == 0 && !(e->mark & (MZ_MARK_NONAME | MZ_MARK_BAD)) &&
                    !(e->gp_flags & (MZ_FLAG_ENCRYPTED | MZ_FLAG_STRONG_ENCRYPTION));
        uint32_t crc = 0;
        for (uint64_t k = 0; !st && k < e->csize;) {
            uint64_t l = e->csize - k < MZ_PROGRESS_STEP ? e->csize - k : MZ_PROGRESS_STEP;
            if (check) crc = mz_crc32(crc, s->map.base + e->data_off + k, (size_t)l);
            st = out_write(o, s->map.base + e->data_off + k, (size_t)l);
            k += l;
            done += l;
            if (h->progress) h->progress(done, total, h->progress_ctx);
        }
        if (!st && check && crc != e->crc)
            st = mz_fail(MMZIP_ECRC, "%s: entry '%.*s': CRC-32 mismatch (directory says %08x, data gives %08x): "
                         "pack copies no damaged entry; the archive was not changed ('mmzip check' lists "
                         "every damaged entry)", s->path, (int)e->name_len, mz_name(s, e), e->crc, crc);
        if (st) break;
        mz_crashpoint("pack.entry");
        /* The entry's comment (zipnote's) goes with it; it was dropped (an outside review). */
        uint16_t comment_len = mz_get16(rec + 32);
        const uint8_t *comment = rec + MZ_CDH_FIXED + e->name_len + mz_get16(rec + 30);
        if (MZ_CDH_FIXED + (uint64_t)e->name_len + mz_get16(rec + 30) + comment_len > e->cd_rec_len) comment_len = 0;
        size_t rl = mz_our_cdh_size(e->name_len);
        if (len + rl + comment_len > cap) {
            while (len + rl + comment_len > cap) cap *= 2;
            uint8_t *p = realloc(cd, cap);
            if (!p) {
                st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
                break;
            }
            cd = p;
        }
        mz_write_cdh_ex(cd + len, &f, mz_name(s, e), e->name_len, lfh_off);
        if (comment_len) {
            memcpy(cd + len + rl, comment, comment_len);
            mz_put16(cd + len + 32, comment_len);
        }
        len += rl + comment_len;
        n++;
    }
    if (st) {
        free(cd);
        return st;
    }
    if (h->progress) h->progress(total, total, h->progress_ctx); /* superseded entries were not copied */
    *cd_out = cd;
    *cd_len = len;
    *count = n;
    return MMZIP_OK;
}

int mmzip_pack(const char *path, const char *out_path, const mmzip_options *opts) {
    mmzip_options o;
    if (opts) o = *opts;
    else mmzip_options_init(&o);
    o.flags &= ~(uint32_t)MMZIP_SHARED; /* a pack holds the writer lock throughout, never per transaction */
    mmzip_t *h;
    int st = mmzip_open(path, "r+", &o, &h);
    if (st) return st;
    mz_remove_stale_temps(path, NULL, NULL); /* a killed pack's, before this one names its own */
    mz_store *s = h->s;
    uint32_t alignment = s->opts.alignment;
    char tmp[PATH_MAX];
    const char *target = out_path ? out_path : path;
    out_file of = {-1, 0, target};
    int anonymous = 0;
    if (out_path) {
        struct stat a, b;
        if (stat(out_path, &b) == 0 && fstat(s->fd, &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            mmzip_close(h);
            return mz_fail(MMZIP_EINVAL, "%s: the output is the archive itself; omit it to pack in place",
                           out_path);
        }
    }
    /* Written unnamed (or under a temporary name) beside its target and named at the end, whether it
     * replaces the archive or goes to out_path: a pack that fails (a damaged entry, a full disk, a kill)
     * leaves the target as it was, an existing out_path included, and no partial archive under its name. */
#ifdef O_TMPFILE
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", target);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == dir) slash[1] = '\0';
    else *slash = '\0';
    of.fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0644);
    anonymous = of.fd >= 0;
#endif
    snprintf(tmp, sizeof tmp, "%s.mmzip-pack-%ld", target, (long)getpid());
    if (of.fd < 0) of.fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (of.fd < 0) {
        st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot create the packed archive", target);
        mmzip_close(h);
        return st;
    }
    uint8_t *cd = NULL;
    uint64_t cd_len = 0, count = 0;
    pthread_rwlock_rdlock(&s->rw);
    /* A self-extractor's stub (or whatever precedes the archive) is the user's, not dead space: it is copied
     * first, and the packed offsets count it, as `zip -A` adjusts them. */
    uint64_t stub = mz_stub_len(s);
    for (uint64_t k = 0; !st && k < stub;) {
        uint64_t l = stub - k < MZ_PROGRESS_STEP ? stub - k : MZ_PROGRESS_STEP;
        st = out_write(&of, s->map.base + k, (size_t)l);
        k += l;
    }
    if (!st) st = copy_entries(h, &of, alignment, &cd, &cd_len, &count);
    pthread_rwlock_unlock(&s->rw);
    if (!st) {
        uint8_t *tr = malloc(mz_trailer_len(s->comment_len));
        if (!tr) st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", path);
        else {
            uint64_t cd_off = of.off;
            st = out_write(&of, cd, cd_len);
            size_t tlen = mz_write_end(tr, count, cd_len, cd_off, s->comment, s->comment_len);
            if (!st) st = out_write(&of, tr, tlen);
            free(tr);
        }
    }
    free(cd);
    mz_crashpoint("pack.fsync");
    if (!st && fsync(of.fd) != 0) st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the packed archive", target);
    if (!st) {
        mz_crashpoint("pack.rename");
        if (anonymous) {
            char proc[64];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", of.fd);
            unlink(tmp);
            if (linkat(AT_FDCWD, proc, AT_FDCWD, tmp, AT_SYMLINK_FOLLOW) != 0)
                st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot name the packed archive", tmp);
        }
        mz_crashpoint("pack.named");
        if (!st && rename(tmp, target) != 0) st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot replace it", target);
        mz_crashpoint("pack.renamed");
        if (!st && mz_fsync_dir_of(target) != 0)
            st = mz_fail_errno(MMZIP_EIO, errno, "%s: cannot flush the directory", target);
    }
    if (st) unlink(tmp); /* named by linkat, or the fallback's; the unnamed file goes with its descriptor */
    close(of.fd);
    int st2 = mmzip_close(h);
    return st ? st : st2;
}
