/*
 * write_behind.c - writing the bytes of puts to the file on a background thread.
 *
 * A put of a few MiB spends most of its time in the kernel, allocating page-cache pages and copying into
 * them. The caller (netCDF-C producing its next chunk, say) need not wait for that. With
 * mmzip_options.threads >= 2, a put copies its header and data into a staging buffer that is reused from put
 * to put (so its pages are already there), queues it and returns; one background thread per writable store
 * writes the queue to the file in submission order.
 *
 * What is committed does not change. Every path that needs the bytes in the file drains the queue first
 * (mz_flush_writes): a commit, before any directory names them; a read of a pending entry whose bytes are
 * still queued (mz_wb_unwritten_from tells readers which); the identical-rewrite check; a reservation. Jobs
 * are written strictly in order, so a later version of an entry written over the space of an earlier one
 * still lands last, and every write of entry bytes goes through the queue or waits for it to drain. A write
 * that fails in the background stops the queue; the next drain retries it, and what follows it, in the
 * caller's thread, which then gets the usual error and message. A killed process loses what was queued, as
 * it would lose anything not yet committed.
 */
#include "internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A put larger than this is written in the caller's thread: staging it would double its memory. */
#define MZ_WB_JOB_MAX (16u << 20)
/* The caller waits while this much is queued: the queue smooths bursts, it must not grow without bound. */
#define MZ_WB_QUEUE_MAX (32u << 20)
/* Staging buffers kept for reuse. */
#define MZ_WB_SPARES 3

struct mz_wb_job {
    struct mz_wb_job *next;
    uint8_t *buf;
    size_t len, cap;
    uint64_t off;
};

void mz_wb_init(mz_write_behind *wb) {
    memset(wb, 0, sizeof *wb);
    pthread_mutex_init(&wb->mu, NULL);
    pthread_cond_init(&wb->wake, NULL);
    pthread_cond_init(&wb->done, NULL);
    wb->unwritten_from = UINT64_MAX;
}

/* Call with wb->mu held. */
static void update_unwritten_from(mz_write_behind *wb) {
    uint64_t lo = UINT64_MAX;
    for (mz_wb_job *j = wb->head; j; j = j->next)
        if (j->off < lo) lo = j->off;
    __atomic_store_n(&wb->unwritten_from, lo, __ATOMIC_RELEASE);
}

static void free_jobs(mz_wb_job *j) {
    while (j) {
        mz_wb_job *next = j->next;
        free(j->buf);
        free(j);
        j = next;
    }
}

/* Call with wb->mu held. */
static void recycle(mz_write_behind *wb, mz_wb_job *j) {
    if (wb->n_spare >= MZ_WB_SPARES) {
        free(j->buf);
        free(j);
        return;
    }
    j->next = wb->spare;
    wb->spare = j;
    wb->n_spare++;
}

static void *writer_main(void *arg) {
    mz_store *s = arg;
    mz_write_behind *wb = &s->wb;
    pthread_mutex_lock(&wb->mu);
    for (;;) {
        while (!wb->stop && (!wb->head || wb->failed)) pthread_cond_wait(&wb->wake, &wb->mu);
        if (wb->stop) break;
        mz_wb_job *j = wb->head;
        pthread_mutex_unlock(&wb->mu);
        /* The job stays at the head while it is written: readers and drains see it as unwritten. */
        int st = mz_io_write(s, j->buf, j->len, j->off, "put.entry");
        pthread_mutex_lock(&wb->mu);
        if (st) {
            wb->failed = 1; /* the next drain retries it in the caller's thread, for the error message */
        } else {
            wb->head = j->next;
            if (!wb->head) wb->tail = NULL;
            wb->queued_bytes -= j->len;
            recycle(wb, j);
            update_unwritten_from(wb);
        }
        pthread_cond_broadcast(&wb->done);
    }
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}

/* Call with wb->mu held. Starts the writer thread if it is not running; 0 if it cannot be had. */
static int ensure_writer(mz_store *s) {
    mz_write_behind *wb = &s->wb;
    if (wb->started) return 1;
    /* The writer starts with every signal blocked: signals are the program's business, not ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    wb->started = pthread_create(&wb->thread, NULL, writer_main, s) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (wb->started) wb->owner = mz_current_pid();
    return wb->started;
}

int mz_wb_submit(mz_store *s, const mmzip_iovec *v, int n, uint64_t total, uint64_t off) {
    mz_write_behind *wb = &s->wb;
    if (s->opts.threads < 2 || total > MZ_WB_JOB_MAX || total == 0) return MZ_WB_DECLINED;
    pthread_mutex_lock(&wb->mu);
    while (!wb->failed && wb->head && wb->queued_bytes + total > MZ_WB_QUEUE_MAX)
        pthread_cond_wait(&wb->done, &wb->mu);
    if (wb->failed || !ensure_writer(s)) {
        pthread_mutex_unlock(&wb->mu);
        return MZ_WB_DECLINED; /* the caller drains (reporting the failure) or writes itself */
    }
    mz_wb_job *j = wb->spare;
    if (j) {
        wb->spare = j->next;
        wb->n_spare--;
    }
    pthread_mutex_unlock(&wb->mu);
    if (!j && !(j = calloc(1, sizeof *j))) return MZ_WB_DECLINED;
    if (j->cap < total) {
        /* Round up, so that entries of slightly different sizes share buffers. */
        size_t cap = ((size_t)total + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
        uint8_t *b = malloc(cap);
        if (!b) {
            free(j->buf);
            free(j);
            return MZ_WB_DECLINED;
        }
        free(j->buf);
        j->buf = b;
        j->cap = cap;
    }
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(j->buf + at, v[i].base, (size_t)v[i].len);
        at += (size_t)v[i].len;
    }
    j->len = at;
    j->off = off;
    j->next = NULL;
    pthread_mutex_lock(&wb->mu);
    if (wb->tail) wb->tail->next = j;
    else wb->head = j;
    wb->tail = j;
    wb->queued_bytes += j->len;
    if (off < __atomic_load_n(&wb->unwritten_from, __ATOMIC_ACQUIRE))
        __atomic_store_n(&wb->unwritten_from, off, __ATOMIC_RELEASE);
    pthread_cond_signal(&wb->wake);
    pthread_mutex_unlock(&wb->mu);
    return MMZIP_OK;
}

int mz_wb_drain(mz_store *s) {
    mz_write_behind *wb = &s->wb;
    pthread_mutex_lock(&wb->mu);
    while (wb->head && !wb->failed) pthread_cond_wait(&wb->done, &wb->mu);
    if (!wb->failed) {
        pthread_mutex_unlock(&wb->mu);
        return MMZIP_OK;
    }
    /* The writer is idle while failed, so the queue is ours: write it here, in order, for the error. */
    int st = MMZIP_OK;
    while (wb->head) {
        mz_wb_job *j = wb->head;
        st = mz_io_write(s, j->buf, j->len, j->off, "put.entry");
        if (st) break;
        wb->head = j->next;
        if (!wb->head) wb->tail = NULL;
        wb->queued_bytes -= j->len;
        recycle(wb, j);
    }
    if (!st) wb->failed = 0;
    update_unwritten_from(wb);
    pthread_cond_broadcast(&wb->done);
    pthread_mutex_unlock(&wb->mu);
    return st;
}

void mz_wb_discard(mz_store *s) {
    mz_write_behind *wb = &s->wb;
    pthread_mutex_lock(&wb->mu);
    /* The job being written is finished first: nothing may land in the file after the discard returns. */
    if (wb->head && !wb->failed && wb->head->next) {
        mz_wb_job *rest = wb->head->next;
        wb->head->next = NULL;
        wb->tail = wb->head;
        for (mz_wb_job *j = rest; j; j = j->next) wb->queued_bytes -= j->len;
        free_jobs(rest);
    }
    while (wb->head && !wb->failed) pthread_cond_wait(&wb->done, &wb->mu);
    free_jobs(wb->head);
    wb->head = wb->tail = NULL;
    wb->queued_bytes = 0;
    wb->failed = 0;
    update_unwritten_from(wb);
    pthread_mutex_unlock(&wb->mu);
}

void mz_wb_stop(mz_store *s) {
    mz_write_behind *wb = &s->wb;
    /* In a forked child the writer thread does not exist: only the memory is let go of. */
    if (wb->started && wb->owner == mz_current_pid()) {
        mz_wb_discard(s);
        pthread_mutex_lock(&wb->mu);
        wb->stop = 1;
        pthread_cond_signal(&wb->wake);
        pthread_mutex_unlock(&wb->mu);
        pthread_join(wb->thread, NULL);
    }
    wb->started = 0;
    free_jobs(wb->head);
    free_jobs(wb->spare);
    wb->head = wb->tail = wb->spare = NULL;
    pthread_cond_destroy(&wb->wake);
    pthread_cond_destroy(&wb->done);
    pthread_mutex_destroy(&wb->mu);
}
