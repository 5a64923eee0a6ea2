/*
 * write_behind.c - writing the bytes of puts to the file on a background thread.
 *
 * A put of a few MiB spends most of its time in the kernel, allocating page-cache pages and copying into
 * them. The caller (netCDF-C producing its next chunk, say) need not wait for that. With
 * mmzip_options.threads >= 2, a put copies its header and data into a staging buffer that is reused from put
 * to put (so its pages are already there), queues it and returns; one background thread per writable store
 * writes the queue to the file in submission order. For a large entry the writer also computes the CRC-32
 * (filling it into the local header before the write, and into the entry table and the directory image at
 * the next drain), so the caller's thread pays one copy of the data and nothing else.
 *
 * What is committed does not change. Every path that needs the bytes in the file drains the queue first
 * (mz_flush_writes): a commit, before any directory names them; a read of a pending entry whose bytes are
 * still queued or whose CRC is not yet in the table (mz_unwritten_from tells readers which: mmzip_get,
 * mmzip_read and mmzip_stat settle such an entry first); the identical-rewrite check; a reservation. Jobs
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
    int late_crc;     /* the buffer is one entry, header first, whose CRC-32 the writer computes */
    int crc_done;     /* ... and has computed (a retried write does not compute it again) */
    size_t data_at;   /* where its data starts in buf */
    uint32_t entry;   /* its index in the entry table */
    uint32_t crc;
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
    for (size_t i = 0; i < wb->n_results; i++)
        if (wb->results[i].lfh_off < lo) lo = wb->results[i].lfh_off;
    __atomic_store_n(&wb->unwritten_from, lo, __ATOMIC_RELEASE);
}

/* Fills in the CRC-32 of a late-CRC job, in its local header too, before the job is written. Reading the
 * data here, on the writer's thread, takes it off the caller's. */
static void compute_late_crc(mz_wb_job *j) {
    if (!j->late_crc || j->crc_done) return;
    j->crc = mz_crc32(0, j->buf + j->data_at, j->len - j->data_at);
    mz_put32(j->buf + MZ_LFH_CRC_AT, j->crc);
    j->crc_done = 1;
}

/* Call with wb->mu held, after job j was written. Returns 0 if out of memory (the caller then keeps the job
 * as failed: its write is retried, and the retry records the result). */
static int record_result(mz_write_behind *wb, const mz_wb_job *j) {
    if (!j->late_crc) return 1;
    if (wb->n_results == wb->cap_results) {
        size_t cap = wb->cap_results ? 2 * wb->cap_results : 16;
        mz_wb_result *r = realloc(wb->results, cap * sizeof *r);
        if (!r) return 0;
        wb->results = r;
        wb->cap_results = cap;
    }
    wb->results[wb->n_results++] = (mz_wb_result){j->off, j->entry, j->crc};
    return 1;
}

/* Moves the CRCs the writer computed into the entry table and the directory image. Call with s->wmu and
 * wb->mu held, and not s->rw. */
static void apply_results(mz_store *s) {
    mz_write_behind *wb = &s->wb;
    if (!wb->n_results) return;
    pthread_rwlock_wrlock(&s->rw);
    for (size_t i = 0; i < wb->n_results; i++) {
        const mz_wb_result *r = &wb->results[i];
        /* The entry may never have been added (its put failed after the write was queued); then the index
         * is someone else's, and the local header offset tells. */
        if (r->entry >= s->n) continue;
        mz_entry *e = &s->e[r->entry];
        if (e->state != MZ_PENDING || e->lfh_off != r->lfh_off) continue;
        e->crc = r->crc;
        mz_put32(s->cd + e->cd_rec + MZ_CDH_CRC_AT, r->crc);
    }
    pthread_rwlock_unlock(&s->rw);
    wb->n_results = 0;
    update_unwritten_from(wb);
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
        compute_late_crc(j);
        int st = mz_io_write(s, j->buf, j->len, j->off, "put.entry");
        pthread_mutex_lock(&wb->mu);
        if (st || !record_result(wb, j)) {
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

int mz_wb_takes(mz_store *s, uint64_t total) {
    return s->opts.threads >= 2 && total > 0 && total <= MZ_WB_JOB_MAX;
}

int mz_wb_submit(mz_store *s, const mmzip_iovec *v, int n, uint64_t total, uint64_t off, const mz_late_crc *late) {
    mz_write_behind *wb = &s->wb;
    if (!mz_wb_takes(s, total) || (late && (n < 1 || v[0].len < MZ_LFH_FIXED))) return MZ_WB_DECLINED;
    pthread_mutex_lock(&wb->mu);
    apply_results(s);
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
    j->late_crc = late != NULL;
    j->crc_done = 0;
    j->data_at = late ? (size_t)v[0].len : 0;
    j->entry = late ? late->entry : 0;
    j->crc = 0;
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
        apply_results(s);
        pthread_mutex_unlock(&wb->mu);
        return MMZIP_OK;
    }
    /* The writer is idle while failed, so the queue is ours: write it here, in order, for the error. */
    int st = MMZIP_OK;
    while (wb->head) {
        mz_wb_job *j = wb->head;
        compute_late_crc(j);
        st = mz_io_write(s, j->buf, j->len, j->off, "put.entry");
        if (!st && !record_result(wb, j)) st = mz_fail(MMZIP_ENOMEM, "%s: out of memory", s->path);
        if (st) break;
        wb->head = j->next;
        if (!wb->head) wb->tail = NULL;
        wb->queued_bytes -= j->len;
        recycle(wb, j);
    }
    if (!st) wb->failed = 0;
    apply_results(s);
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
    wb->n_results = 0;
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
    free(wb->results);
    wb->results = NULL;
    wb->n_results = wb->cap_results = 0;
    pthread_cond_destroy(&wb->wake);
    pthread_cond_destroy(&wb->done);
    pthread_mutex_destroy(&wb->mu);
}
