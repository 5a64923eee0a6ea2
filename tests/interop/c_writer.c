/*
 * c_writer - the C writer of readers_during_append.py: appends entries to an archive through mmzip.h while
 * third-party readers poll it, and logs when it changed the file's size and how.
 *
 *   usage: c_writer MODE ARCHIVE STOP_FILE ENTRIES SEED MAX_SIZE LOG [PREFIX [CAP]]
 *
 *   MODE   commit-each  one handle, a commit after every put
 *          batch10      one handle, ten puts per commit (mmzip_begin / mmzip_commit)
 *          put-loop     one writing session per put (open, put, close), as `mmzip put` in a loop does
 *
 * Writes entries PREFIX/NNNNNNN.SIZE (PREFIX "k" by default; SIZE log-uniform from 1 byte to MAX_SIZE, drawn
 * from SEED) holding their own name followed by '|', repeated and cut to SIZE bytes, until it has put ENTRIES
 * of them, or STOP_FILE exists, or the archive has reached CAP bytes (if given; how the driver makes the
 * large archive a run starts from).
 * The archive is opened "w+" with MMZIP_PUBLISH_ON_COMMIT, as mmzip put and mmzip.Archive open it: a missing
 * archive appears, valid, at the first commit.
 *
 * LOG gets one line per operation the library made on the file that a reader can see change the file's tail,
 * from the test build's I/O trace (mmzip__set_io_trace; this program links the test build of the library,
 * which is the library plus that hook and the crash points the crash tests use):
 *     T_END T_PREV WHAT OFFSET LENGTH
 * T_END is when the operation returned (CLOCK_MONOTONIC seconds, the clock the pollers use), T_PREV when the
 * operation before it returned, so that the operation ran within [T_PREV, T_END]. WHAT is the library's
 * name of the step (relocate.directory_copy, commit.truncate, close.truncate, commit.switch, ...). Each
 * session adds "session.open" (when mmzip_open returned) and "session.close" lines. On stdout, at the end, one JSON line:
 * puts, commits, seconds, bytes, size_changes (commits that kept, shrank or grew the file).
 */
#include "mmzip.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef void (*io_trace_fn)(void *ctx, int op, uint64_t off, const void *data, uint64_t len, const char *what);
void mmzip__set_io_trace(io_trace_fn fn, void *ctx);

static FILE *logf_;
static double last_t;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void note(const char *what, uint64_t off, uint64_t len) {
    double t = now();
    fprintf(logf_, "%.6f %.6f %s %llu %llu\n", t, last_t, what, (unsigned long long)off, (unsigned long long)len);
    last_t = t;
}

/* Entry bytes are not interesting to the reader of the log (and there are many): only the steps that
 * move or rewrite the file's tail, and the writes that follow them, are logged. */
static void trace(void *ctx, int op, uint64_t off, const void *data, uint64_t len, const char *what) {
    (void)ctx;
    (void)data;
    if (strcmp(what, "put.entry") == 0) {
        last_t = now();
        return;
    }
    if (op == 10) { /* MZ_OP_SOURCE_NOT_RESIDENT, before the write: len pages of its source not in memory */
        char name[128];
        snprintf(name, sizeof name, "%s.source_not_resident", what);
        double t = now();
        fprintf(logf_, "%.6f %.6f %s %llu %llu\n", t, t, name, (unsigned long long)off, (unsigned long long)len);
        return;
    }
    note(what, off, len);
}

static uint64_t rng_state;
static double uniform(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) / (double)(1ull << 53);
}

static uint64_t file_size(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int fail(const char *what, int status) {
    fprintf(stderr, "c_writer: %s: %s (%s)\n", what, mmzip_last_error(), mmzip_strerror(status));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 8 || argc > 10) {
        fprintf(stderr, "usage: c_writer MODE ARCHIVE STOP_FILE ENTRIES SEED MAX_SIZE LOG [PREFIX [CAP]]\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2], *stop = argv[3];
    long entries = atol(argv[4]);
    rng_state = strtoull(argv[5], NULL, 10) * 0x9E3779B97F4A7C15ull + 1;
    uint64_t max_size = strtoull(argv[6], NULL, 10);
    const char *prefix = argc > 8 ? argv[8] : "k";
    uint64_t cap = argc > 9 ? strtoull(argv[9], NULL, 10) : UINT64_MAX;
    int per_commit = strcmp(mode, "batch10") == 0 ? 10 : 1;
    int session_per_put = strcmp(mode, "put-loop") == 0;
    if (!per_commit || (strcmp(mode, "commit-each") && strcmp(mode, "batch10") && !session_per_put)) {
        fprintf(stderr, "c_writer: unknown mode %s\n", mode);
        return 2;
    }
    logf_ = fopen(argv[7], "w");
    if (!logf_) {
        perror(argv[7]);
        return 1;
    }
    mmzip__set_io_trace(trace, NULL);
    mmzip_options o;
    mmzip_options_init(&o);
    o.flags |= MMZIP_PUBLISH_ON_COMMIT;
    o.commit_policy = MMZIP_COMMIT_MANUAL;
    unsigned char *buf = malloc(max_size ? max_size : 1);
    if (!buf) return 1;
    double t0 = now();
    last_t = t0;
    long puts = 0, commits = 0, kept = 0, shrunk = 0, grown = 0;
    uint64_t last = file_size(path);
    mmzip_t *h = NULL;
    int st;
    while (puts < entries && access(stop, F_OK) != 0 && last < cap) {
        if (!h) {
            if ((st = mmzip_open(path, "w+", &o, &h)) != MMZIP_OK) return fail("open", st);
            note("session.open", 0, 0);
        }
        if ((st = mmzip_begin(h)) != MMZIP_OK) return fail("begin", st);
        for (int k = 0; k < per_commit && puts < entries; k++) {
            uint64_t size = (uint64_t)pow(2.0, uniform() * log2((double)max_size));
            if (size > max_size) size = max_size;
            char name[96];
            snprintf(name, sizeof name, "%.40s/%07ld.%llu", prefix, puts, (unsigned long long)size);
            size_t plen = strlen(name) + 1;
            for (uint64_t i = 0; i < size; i++) {
                size_t j = (size_t)(i % plen);
                buf[i] = j + 1 == plen ? '|' : (unsigned char)name[j];
            }
            last_t = now(); /* the next step's time starts here, not with the making of its bytes */
            if ((st = mmzip_put(h, name, buf, size, 0)) != MMZIP_OK) return fail(name, st);
            puts++;
        }
        if ((st = mmzip_commit(h)) != MMZIP_OK) return fail("commit", st);
        commits++;
        if (session_per_put) {
            if ((st = mmzip_close(h)) != MMZIP_OK) return fail("close", st);
            h = NULL;
            note("session.close", 0, 0);
        }
        uint64_t size = file_size(path);
        if (size > last) grown++;
        else if (size < last) shrunk++;
        else kept++;
        last = size;
    }
    if (h) {
        if ((st = mmzip_close(h)) != MMZIP_OK) return fail("close", st);
        note("session.close", 0, 0);
    }
    fclose(logf_);
    free(buf);
    printf("{\"puts\": %ld, \"commits\": %ld, \"seconds\": %.3f, \"bytes\": %llu, \"size_changes\": {\"kept\": %ld, "
           "\"shrunk\": %ld, \"grown\": %ld}}\n",
           puts, commits, now() - t0, (unsigned long long)file_size(path), kept, shrunk, grown);
    return 0;
}
