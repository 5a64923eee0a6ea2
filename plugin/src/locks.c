/*
 * locks.c - cross-process exclusion with open-file-description (OFD) locks on bytes far past any real data:
 * one for "a writer has this archive open", one for "a commit is rewriting the end of the file", one that
 * writers waiting for the first in turn pass through (shared appending, shared_writer.c), and one per
 * entry for "this entry is being edited in place" (taken exclusive by an edit, shared by a reader's hold).
 *
 * Whether anyone else has the file open at all is told by a write lease (mz_open_elsewhere): readers that
 * take no lock (third-party ones, and mmzip's own read-only handles) hold an open file description, nothing
 * more.
 *
 * OFD locks, unlike classic POSIX record locks, belong to the open file, not the process: closing some
 * other descriptor of the same file (netCDF sniffing the magic number, a second mmzip_check) does not drop
 * them, and two descriptors in one process conflict as they should. They are released by the kernel when
 * the process dies, so a killed writer never leaves the archive locked.
 */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#define MZ_WRITER_LOCK_BYTE ((off_t)1 << 62)
#define MZ_COMMIT_LOCK_BYTE (((off_t)1 << 62) + 1)
#define MZ_TURN_LOCK_BYTE (((off_t)1 << 62) + 2) /* the turnstile of writers waiting in turn */
#define MZ_ENTRY_LOCK_BASE ((off_t)1 << 61) /* + the entry's local-header offset */

#ifndef F_OFD_SETLK
#define F_OFD_GETLK 36
#define F_OFD_SETLK 37
#define F_OFD_SETLKW 38
#endif

static int ofd(int fd, int cmd, short type, off_t start) {
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = type;
    fl.l_whence = SEEK_SET;
    fl.l_start = start;
    fl.l_len = 1;
    for (;;) {
        int r = fcntl(fd, cmd, &fl);
        if (r == 0) return cmd == F_OFD_GETLK ? (fl.l_type == F_UNLCK ? 0 : 1) : 0;
        if (errno == EINTR) continue;
        return -errno;
    }
}

static int unsupported(int err) { return err == -EINVAL || err == -ENOLCK || err == -EOPNOTSUPP || err == -ENOSYS; }

int mz_lock_writer(int fd) {
    int r = ofd(fd, F_OFD_SETLK, F_WRLCK, MZ_WRITER_LOCK_BYTE);
    if (r == 0) return 0;
    if (r == -EAGAIN || r == -EACCES) return MMZIP_EBUSY;
    if (unsupported(r)) return 1;
    return MMZIP_EIO;
}

static uint64_t now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Takes the lock on `byte` exclusively, waiting until deadline (microseconds, CLOCK_MONOTONIC; UINT64_MAX:
 * no limit). 0, MMZIP_EBUSY at the deadline, 1 if the file system has no OFD locks, or -errno. The kernel
 * offers no timed wait on a record lock, so a bounded wait polls, with a sleep that starts at 20 us and
 * doubles up to 1 ms; an unbounded one blocks in the kernel. */
static int wait_for(int fd, off_t byte, uint64_t deadline) {
    int r = ofd(fd, F_OFD_SETLK, F_WRLCK, byte);
    if (r == 0) return 0;
    if (unsupported(r)) return 1;
    if (r != -EAGAIN && r != -EACCES) return r;
    if (deadline == UINT64_MAX) {
        r = ofd(fd, F_OFD_SETLKW, F_WRLCK, byte);
        return r == -EDEADLK ? MMZIP_EBUSY : r;
    }
    uint64_t nap = 20;
    for (;;) {
        uint64_t t = now_us();
        if (t >= deadline) return MMZIP_EBUSY;
        uint64_t left = deadline - t, d = nap < left ? nap : left;
        struct timespec ts = {(time_t)(d / 1000000u), (long)(d % 1000000u) * 1000};
        nanosleep(&ts, NULL);
        r = ofd(fd, F_OFD_SETLK, F_WRLCK, byte);
        if (r == 0) return 0;
        if (r != -EAGAIN && r != -EACCES) return r;
        if (nap < 1000) nap *= 2;
    }
}

int mz_lock_writer_in_turn(int fd, uint32_t wait_ms) {
    uint64_t deadline = wait_ms == MMZIP_WAIT_FOREVER ? UINT64_MAX : now_us() + (uint64_t)wait_ms * 1000u;
    int r = wait_for(fd, MZ_TURN_LOCK_BYTE, deadline);
    if (r == 0) {
        r = wait_for(fd, MZ_WRITER_LOCK_BYTE, deadline);
        (void)ofd(fd, F_OFD_SETLK, F_UNLCK, MZ_TURN_LOCK_BYTE);
    }
    return r;
}

void mz_unlock_writer(int fd) { (void)ofd(fd, F_OFD_SETLK, F_UNLCK, MZ_WRITER_LOCK_BYTE); }

int mz_writer_lock_held(int fd) {
    int r = ofd(fd, F_OFD_GETLK, F_WRLCK, MZ_WRITER_LOCK_BYTE);
    return r < 0 ? -1 : r;
}

/* A write lease (F_SETLEASE) is granted only when no other file description of the file is open, in any
 * process (nor mapped), and is let go at once. A process that opens the file in the instant the lease is held
 * breaks it: the kernel then signals the holder, by default with SIGIO, whose default action ends the
 * process; the descriptor's lease signal is set to SIGURG, which is ignored by default, and the open waits
 * only until the lease is let go, microseconds later. */
int mz_open_elsewhere(int fd) {
#if defined(F_SETLEASE) && defined(F_SETSIG)
    if (fcntl(fd, F_SETSIG, SIGURG) != 0) return 1;
    if (fcntl(fd, F_SETLEASE, F_WRLCK) != 0) return 1;
    (void)fcntl(fd, F_SETLEASE, F_UNLCK);
    return 0;
#else
    (void)fd;
    return 1;
#endif
}

void mz_lock_commit(int fd, int exclusive) {
    (void)ofd(fd, F_OFD_SETLKW, exclusive ? F_WRLCK : F_RDLCK, MZ_COMMIT_LOCK_BYTE);
}

void mz_unlock_commit(int fd) { (void)ofd(fd, F_OFD_SETLK, F_UNLCK, MZ_COMMIT_LOCK_BYTE); }

int mz_lock_entry(int fd, int exclusive, uint64_t lfh_off) {
    int r = ofd(fd, F_OFD_SETLK, exclusive ? F_WRLCK : F_RDLCK, MZ_ENTRY_LOCK_BASE + (off_t)lfh_off);
    if (r == 0) return 0;
    if (r == -EAGAIN || r == -EACCES) return 1;
    return -1; /* unsupported: no exclusion (the archive's writer lock says so in mmzip_info) */
}

void mz_unlock_entry(int fd, uint64_t lfh_off) {
    (void)ofd(fd, F_OFD_SETLK, F_UNLCK, MZ_ENTRY_LOCK_BASE + (off_t)lfh_off);
}

int mz_entry_lock_taken(int fd, uint64_t lfh_off) {
    return ofd(fd, F_OFD_GETLK, F_WRLCK, MZ_ENTRY_LOCK_BASE + (off_t)lfh_off) == 1;
}

/* The process that owns a store or a lock: every write checks that the store was opened by this process
 * (fork safety), and getpid() is a system call. */
static pid_t cached_pid;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;
static void forget_pid(void) { __atomic_store_n(&cached_pid, 0, __ATOMIC_RELAXED); }
static void install_fork_handler(void) { pthread_atfork(NULL, NULL, forget_pid); }

pid_t mz_current_pid(void) {
    pthread_once(&pid_once, install_fork_handler);
    pid_t p = __atomic_load_n(&cached_pid, __ATOMIC_RELAXED);
    if (!p) {
        p = getpid();
        __atomic_store_n(&cached_pid, p, __ATOMIC_RELAXED);
    }
    return p;
}

int mz_refuse_inherited(const mz_store *s) {
    if (s->owner == mz_current_pid()) return MMZIP_OK;
    return mz_fail(MMZIP_EBUSY, "%s: this handle was opened by another process and inherited across fork(); "
                   "open the archive again in this process", s->path);
}
