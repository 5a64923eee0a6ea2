/*
 * reader_grace.c - a write onto the directory that a relocation has just moved away from waits, briefly, for the
 * third-party readers that may still be reading it (docs/protocol.md §3.8).
 *
 * A relocation that cannot keep the old tail (kept_tail.c: its range would not fit in the kept-tail budget of
 * the at-rest allowance) leaves the old directory and end records as free space, and the put that made it
 * relocate writes its entry over them at once. A reader that takes no lock and read those end records just
 * before the relocation reads that directory next: libzip with ZIP_CHECKCONS reads the directory of every end
 * record it found in the file's last 64 KiB, each followed by every local header, several milliseconds on a
 * young archive; zipfile seeks back to it. Overwritten under it, it fails ("Zip archive inconsistent", "Not a
 * zip archive", "Bad magic number for central directory"): most failed polls of the session-per-put writers on
 * young archives in the readers benchmark (reliability.md §3). So the first write that would change a byte of
 * that range waits until MZ_READER_GRACE_NS have passed since the relocation, as long as another open file
 * description of the archive exists: a reader in flight has it open. Where nothing else has the file open, no
 * reader can be reading it, and the write goes ahead at once: a writer alone pays three fcntl calls per such
 * relocation.
 *
 * Whether another open exists: a write lease (mz_open_elsewhere, locks.c). Where the lease cannot be taken
 * for another reason (a file this user does not own, a file system without leases), the write waits, as if
 * readers were there.
 */
#include "internal.h"

#include <errno.h>
#include <time.h>

/* How long after a relocation its old directory is left as it was while other opens exist. Measured with
 * the readers benchmark (reliability.md §3, the C writer with a session per put from no file and from an empty
 * archive, one round each): libzip's failed polls at relocations that could not keep the tail, 30 with no wait,
 * 14 with 2 ms, 9 with 5 ms, 1 with 20 ms (its polls took 7-9 ms on those archives). */
#define MZ_READER_GRACE_NS (20ull * 1000 * 1000)

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void mz_grace_guard(mz_store *s, uint64_t from, uint64_t to) {
    s->grace_from = from;
    s->grace_to = to;
    s->grace_until_ns = from < to ? now_ns() + MZ_READER_GRACE_NS : 0;
}

int mz_grace_wait(mz_store *s, uint64_t off, uint64_t len, uint64_t *waited_us) {
    if (!s->grace_until_ns || len == 0 || off >= s->grace_to || off + len <= s->grace_from) return -1;
    uint64_t until = s->grace_until_ns, start = now_ns(), t = start;
    s->grace_until_ns = 0; /* one wait per relocation: after it, the range is free space like any other */
    int others = 0;
    while (t < until && (others = mz_open_elsewhere(s->fd))) {
        uint64_t step = until - t < 1000000 ? until - t : 1000000; /* look again every millisecond */
        struct timespec ts = {0, (long)step};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        t = now_ns();
    }
    *waited_us = (t - start) / 1000;
    return others;
}
