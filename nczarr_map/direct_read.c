/* direct_read.c - pread of large stored entries. */
#include "direct_read.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int mzn_direct_open(mmzip_t *archive, const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    /* The store's own file is still at path after the descriptor was opened: they are the same file. */
    if (!mmzip_writable(archive) && mmzip_refresh(archive) != MMZIP_OK) {
        close(fd);
        return -1;
    }
    return fd;
}

int mzn_direct_copy(int fd, mmzip_t *archive, const char *name, uint64_t start, uint64_t count, void *buf) {
    if (fd < 0 || count < MZN_DIRECT_READ_MIN) return 0;
    mmzip_entry_info info;
    if (mmzip_stat(archive, name, &info) != MMZIP_OK || info.method != 0 || info.pending || !info.data_offset ||
        start > info.size || count > info.size - start)
        return 0;
    unsigned char *p = buf;
    uint64_t off = info.data_offset + start, left = count;
    while (left) {
        ssize_t n = pread(fd, p, left, (off_t)off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n == 0 ? 0 : MMZIP_EIO;
        p += n;
        off += (uint64_t)n;
        left -= (uint64_t)n;
    }
    return 1;
}
