/*
 * plain_file.c - an HDF5 file outside any archive, reached through the mmzip driver.
 *
 * HDF5 opens the files that a file refers to - the source files of a virtual dataset (VDS), the targets of
 * external links - with the referring file's file access properties, so with this driver, under a name it
 * builds from the referring file's name: the directory of "/d/a.zip" (h5py's member=) gives "/d/src.h5",
 * that of "/d/a.zip#/m.h5" (`mmzip run`) gives "/d/a.zip#/src.h5". Neither is a member: a source file that
 * lies beside the archive, as it lay beside the file before the file was put into the archive, must still be
 * found. HDF5 swallows the failure of a VDS source open and reads fill values, so refusing would turn into
 * wrong numbers with no error. Such a file is therefore served as sec2 would serve it: pread and pwrite
 * on the file itself. Only an existing HDF5 file (the signature at 0, or at 512, 1024, ... in a file that is
 * not a ZIP archive) is taken; everything else keeps the archive's error.
 */
#include "h5mz_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int read_at(int fd, void *buf, size_t len, uint64_t off) {
    uint8_t *p = buf;
    while (len) {
        ssize_t n = pread(fd, p, len, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* 1 if the last 64 KiB + 22 bytes of the file hold an end-of-central-directory signature. */
static int has_end_record(int fd, uint64_t size) {
    uint64_t len = size < 65557 ? size : 65557;
    uint8_t *buf = malloc(len ? len : 1);
    int found = 0;
    if (buf && read_at(fd, buf, (size_t)len, size - len) == 0)
        for (uint64_t i = 0; !found && i + 4 <= len; i++)
            found = buf[i] == 'P' && buf[i + 1] == 'K' && buf[i + 2] == 5 && buf[i + 3] == 6;
    free(buf);
    return found || !buf;
}

int h5mz_plain_is_hdf5(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    uint8_t sig[8];
    int yes = 0, maybe_zip = 0;
    /* Every open through the driver asks (HDF5 opens each file twice): a file that starts like a ZIP
     * record is answered at once, with one read. An HDF5 file starts with its signature or a user block,
     * which would have to begin with "PK" by chance. */
    int zip_start = read_at(fd, sig, 4, 0) == 0 && sig[0] == 'P' && sig[1] == 'K' && sig[2] < 9 && sig[3] < 9;
    if (!zip_start && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        for (uint64_t off = 0; !yes && off + sizeof sig <= (uint64_t)st.st_size; off = off ? off * 2 : 512)
            yes = read_at(fd, sig, sizeof sig, off) == 0 && memcmp(sig, h5mz_hdf5_signature, sizeof sig) == 0;
        /* An archive holds members whose data starts at 512 or 4096, and one whose first entry is dead need
         * not start with "PK": the signature there is a member's (an old version's, even). What has an end
         * record and opens as an archive is an archive. */
        maybe_zip = yes && has_end_record(fd, (uint64_t)st.st_size);
    }
    close(fd);
    if (maybe_zip) {
        mmzip_t *h = NULL;
        if (mmzip_open(path, "r", NULL, &h) == MMZIP_OK) {
            mmzip_close(h);
            yes = 0;
        }
    }
    return yes;
}

char *h5mz_beside_archive(const char *archive, const char *member) {
    const char *slash = strrchr(archive, '/');
    size_t dir = slash ? (size_t)(slash - archive) + 1 : 0;
    size_t n = strlen(member);
    char *p = malloc(dir + n + 1);
    if (!p) return NULL;
    memcpy(p, archive, dir);
    memcpy(p + dir, member, n + 1);
    return p;
}

int h5mz_plain_open(h5mz_plain *p, const char *path, int writable) {
    memset(p, 0, sizeof *p);
    p->fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    struct stat st;
    if (p->fd < 0 || fstat(p->fd, &st) != 0) {
        int err = errno;
        if (p->fd >= 0) close(p->fd);
        p->fd = -1;
        return h5mz_fail(MMZIP_EIO, "%s: cannot open it: %s", path, strerror(err));
    }
    p->eof = (uint64_t)st.st_size;
    p->dev = st.st_dev;
    p->ino = st.st_ino;
    p->writable = writable;
    if (!(p->path = strdup(path))) {
        close(p->fd);
        p->fd = -1;
        return h5mz_fail(MMZIP_ENOMEM, "%s: out of memory", path);
    }
    return MMZIP_OK;
}

int h5mz_plain_read(const h5mz_plain *p, uint64_t addr, size_t size, void *buf) {
    size_t n = addr < p->eof ? (p->eof - addr < size ? (size_t)(p->eof - addr) : size) : 0;
    if (n && read_at(p->fd, buf, n, addr) != 0)
        return h5mz_fail(MMZIP_EIO, "%s: cannot read %zu bytes at %llu: %s", p->path, n, (unsigned long long)addr,
                         strerror(errno ? errno : EIO));
    if (n < size) memset((uint8_t *)buf + n, 0, size - n);
    return MMZIP_OK;
}

int h5mz_plain_write(h5mz_plain *p, uint64_t addr, size_t size, const void *buf) {
    if (!p->writable) return h5mz_fail(MMZIP_EREADONLY, "%s: opened read-only", p->path);
    const uint8_t *q = buf;
    for (size_t left = size; left;) {
        ssize_t n = pwrite(p->fd, q, left, (off_t)addr);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return h5mz_fail(MMZIP_EIO, "%s: cannot write %zu bytes at %llu: %s", p->path, left,
                             (unsigned long long)addr, strerror(n < 0 ? errno : EIO));
        q += n;
        left -= (size_t)n;
        addr += (uint64_t)n;
    }
    if (addr > p->eof) p->eof = addr;
    return MMZIP_OK;
}

int h5mz_plain_set_eof(h5mz_plain *p, uint64_t eof) {
    if (!p->writable || eof == p->eof) return MMZIP_OK;
    if (ftruncate(p->fd, (off_t)eof) != 0)
        return h5mz_fail(MMZIP_EIO, "%s: cannot set its size to %llu: %s", p->path, (unsigned long long)eof,
                         strerror(errno));
    p->eof = eof;
    return MMZIP_OK;
}

void h5mz_plain_close(h5mz_plain *p) {
    if (p->fd >= 0) close(p->fd);
    free(p->path);
    memset(p, 0, sizeof *p);
    p->fd = -1;
}
