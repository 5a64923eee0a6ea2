/*
 * growth_probe - does this kernel and file system show a write past the end of a file as one size change?
 *
 * A third-party ZIP reader takes the file's size and then reads its tail. mmzip's writer relocates the
 * directory by one write past the end of the file (docs/protocol.md §3.2); if the kernel moves the file's
 * size page by page during that write, a reader in between finds a tail without end records. Linux's page
 * cache holds file data in folios of up to 2 MiB where the file system supports large folios, and a write
 * that fills one naturally aligned folio moves the size once. This probe writes blocks past the end of a
 * file in DIR, unaligned and aligned, while a second thread polls fstat(), and prints per size how many
 * writes showed a size other than the old or the new one. It judges nothing: the readers benchmark prints
 * it beside the failures it measures, so that a figure comes with what the machine can do.
 *
 * The third column writes aligned blocks from a buffer whose first half was never touched (fresh anonymous
 * memory, as calloc returns for a large block: zeros the kernel has not mapped yet), the rest written. Linux
 * (since 6.15 or so) no longer faults the source in before copying into the page cache: the first copy
 * faults, copies nothing, and ext4's write_end then sets the size to the write's *start* (pos + 0 copied
 * bytes), so that the file ends in the hole before the block until the retry copies it, in halves. So a
 * relocation writes from memory it has touched (commit.c).
 *
 *   growth_probe DIR [ROUNDS]
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fd;
static atomic_int stop;
static long long before, after; /* set before the poller of a write starts, read-only while it runs */
static atomic_long odd_sizes;

/* Polls the size from before the write starts until after it returned: every size it sees is the old one,
 * the new one, or one in between (the write seen torn). */
static void *poller(void *arg) {
    (void)arg;
    struct stat st;
    while (!atomic_load(&stop))
        if (fstat(fd, &st) == 0 && (long long)st.st_size != before && (long long)st.st_size != after)
            atomic_fetch_add(&odd_sizes, 1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: growth_probe DIR [ROUNDS]\n");
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 200;
    char path[4096];
    snprintf(path, sizeof path, "%s/growth_probe.%ld", argv[1], (long)getpid());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        perror(path);
        return 2;
    }
    unlink(path);
    char *buf = malloc(2u << 20);
    if (!buf) return 2;
    memset(buf, 'z', 2u << 20);
    static const size_t sizes[] = {4096, 16384, 65536, 262144, 1048576, 2097152};
    printf("growth_probe: writes past the end of a file, a second thread polling its size\n");
    printf("  %-10s %-28s %-28s %s\n", "bytes", "unaligned: writes seen torn", "aligned: writes seen torn",
           "aligned, half the source untouched: seen torn");
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t len = sizes[k];
        int torn[3] = {0, 0, 0};
        for (int aligned = 0; aligned < 3; aligned++) {
            long long size = 12345;
            if (ftruncate(fd, size) != 0) return 2;
            for (int r = 0; r < rounds; r++) {
                long long at = size + 65536;
                if (aligned) at = (at + (long long)len - 1) / (long long)len * (long long)len;
                else at += 1000; /* not a multiple of the page size */
                before = size;
                after = at + (long long)len;
                atomic_store(&odd_sizes, 0);
                atomic_store(&stop, 0);
                pthread_t t;
                pthread_create(&t, NULL, poller, NULL);
                sched_yield(); /* let the poller start: it only widens the overlap, it proves nothing */
                char *src = buf;
                if (aligned == 2) {
                    src = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                    if (src == MAP_FAILED) return 2;
                    memset(src + len / 2, 'z', len - len / 2);
                }
                if (pwrite(fd, src, len, at) != (ssize_t)len) return 2;
                if (aligned == 2) munmap(src, len);
                sched_yield();
                atomic_store(&stop, 1);
                pthread_join(t, NULL);
                if (atomic_load(&odd_sizes)) torn[aligned]++;
                size = at + (long long)len;
                if (size > (512ll << 20)) {
                    if (ftruncate(fd, 12345) != 0) return 2;
                    size = 12345;
                }
            }
        }
        printf("  %-10zu %4d of %-21d %4d of %-21d %4d of %d\n", len, torn[0], rounds, torn[1], rounds, torn[2],
               rounds);
    }
    close(fd);
    return 0;
}
